"""tilegemm in Jupyter: graphs, budget tables, tuning results and lowered kernels display as HTML and markdown;
locations name the notebook cell; tracebacks of tilegemm's errors hold the user's frames only. A notebook is
executed headless (nbclient) and its rendered outputs are checked."""
import os
import re
import sys

import pytest

import tilegemm as tg
from tilegemm.lang.ir import _internal, user_traceback
from tilegemm.showcase import load_example

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
V2 = load_example(os.path.join(ROOT, "examples", "hopper_v2_tma_wgmma.py"))
SHAPE = (200, 264, 136)
SPECS = (tg.ShapeDtype((200, 136), tg.float16), tg.ShapeDtype((136, 264), tg.float16))


def wrong_accumulator(m, n, k):
    """A kernel whose WGMMA writes a 64x64 accumulator from a 64x128 B tile: the tracer rejects the line."""

    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(1,), grid_names=("m",),
               scratch_shapes=[tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),
                               tg.SMEM((64, 128), tg.float16, transforms=tg.mma_transforms(128, tg.float16)),
                               tg.ACC((64, 64))])
    def body(a, b, c, a_smem, b_smem, acc):
        tg.wgmma(acc, a_smem, b_smem)
    return body


# ----------------------------------------------------------------------------- reprs, in this process

def test_a_graph_shows_its_launch_parameters_and_ops_with_their_lines():
    graph = V2.build(*SHAPE).trace(*SPECS)
    html, md = graph._repr_html_(), graph._repr_markdown_()
    assert "<code>@hopper_v2_tma_wgmma</code> grid (4, 3)" in html and "<details><summary>26 ops" in html
    assert "<td style='text-align:left'>%0 a</td>" in html and "gmem&lt;200x136xf16&gt;" in html
    assert "| in | %0 a | gmem<200x136xf16> |" in md and "examples/hopper_v2_tma_wgmma.py:" in md
    assert repr(graph) == "<tilegemm Graph @hopper_v2_tma_wgmma: 26 ops, grid (4, 3)>"


def test_a_budget_shows_its_rows_its_problems_and_what_it_does_not_model():
    with pytest.warns(UserWarning, match="A100"):                       # an A100 has no WGMMA
        b = tg.model.budget(V2.build(*SHAPE).trace(*SPECS), device="a100")
    html, md = b._repr_html_(), b._repr_markdown_()
    assert "on NVIDIA A100 SXM" in html and f"{b.predicted_s * 1e3:.3f} ms predicted" in html
    for row in b.rows:
        assert f"| {row.name} | {row.value} | " in md
    assert "<b style='color:#b00'>ILLEGAL</b>" in html and "| **ILLEGAL** |  | NVIDIA A100 SXM (sm_80) has no wgmma" in md
    assert repr(b).startswith("<tg.model.Budget 200x264x136 on NVIDIA A100 SXM: ") and repr(b).endswith("ILLEGAL>")


def test_a_tune_result_shows_the_ranking_with_the_best_in_bold():
    result = tg.tune.tune(V2.build, (1024, 1024, 1024), {"tile_n": [64, 128, 256]}, progress=False)
    md = result._repr_markdown_()
    best = result.best.describe()
    assert f"best {best}" in md and "PREDICTED by the model" in md
    assert f"| **1** | **{result.best.predicted_s * 1e3:.3f} ms** |" in md
    assert md.count("| ranked |") == 2 and f"<b>{best}</b>" in result._repr_html_()


def test_a_lowered_kernel_shows_its_launch_features_and_highlighted_source_without_compiling(tmp_path,
                                                                                             monkeypatch):
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    lowered = V2.build(*SHAPE).lower(*SPECS, arch="sm_90a")
    html, md = lowered._repr_html_(), lowered._repr_markdown_()
    assert "| launch | grid (4, 3, 1) x block (128, 1, 1)" in md and "| features | tma, wgmma |" in md
    assert "| resources | known after .compile() |" in md and "```python\n" in md
    assert 'bold">import</span>' in html                          # Pygments colours


# ----------------------------------------------------------------------------- tracebacks and progress

def test_a_trimmed_traceback_keeps_the_users_frames_and_leaves_the_error_whole():
    with pytest.raises(tg.KernelError) as info:
        wrong_accumulator(64, 128, 64).trace(tg.ShapeDtype((64, 64), tg.float16),
                                             tg.ShapeDtype((64, 128), tg.float16))
    full, trimmed = _codes(info.value.__traceback__), _codes(user_traceback(info.value.__traceback__))
    assert any(_internal(code) for code in full)
    assert trimmed == [code for code in full if not _internal(code)] and trimmed[-1].co_name == "body"


def _codes(tb):
    codes = []
    while tb is not None:
        codes.append(tb.tb_frame.f_code)
        tb = tb.tb_next
    return codes


def test_the_tuner_draws_a_progress_bar_where_tqdm_is_installed(capsys):
    pytest.importorskip("tqdm")
    tg.tune.tune(V2.build, (1024, 1024, 1024), {"tile_n": [64, 128, 256]})
    err = capsys.readouterr().err
    assert re.search(r"tune: model: 100%\|[^|]*\| 3/3", err), err
    assert "[tune] 3 legal of 3; best predicted: tile_n=" in err


def test_without_tqdm_the_tuner_reports_a_line_per_candidate(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)   # import tqdm.auto raises ImportError
    tg.tune.tune(V2.build, (1024, 1024, 1024), {"tile_n": [64, 128]})
    err = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in err[:2]] == ["[tune 1/2] tile_n=64", "[tune 2/2] tile_n=128"]


# ----------------------------------------------------------------------------- a notebook, executed headless

CELLS = [
    "import tilegemm as tg\nfrom tilegemm.showcase import load_example\n"
    "v2 = load_example('examples/hopper_v2_tma_wgmma.py')\n"
    f"specs = (tg.ShapeDtype({SPECS[0].shape}, tg.float16), tg.ShapeDtype({SPECS[1].shape}, tg.float16))",
    f"kernel = v2.build{SHAPE}\ngraph = kernel.trace(*specs)\ngraph",
    "tg.model.budget(graph)",
    "tg.tune.tune(v2.build, (1024, 1024, 1024), {'tile_n': [64, 128, 256]})",
    "lowered = kernel.lower(*specs, arch='sm_90a')\nlowered.compile()\nlowered",
    "def wrong(m, n, k):\n"
    "    @tg.kernel(out_shape=tg.ShapeDtype((m, n), tg.float16), grid=(1,), grid_names=('m',),\n"
    "               scratch_shapes=[tg.SMEM((64, 64), tg.float16, transforms=tg.mma_transforms(64, tg.float16)),\n"
    "                               tg.SMEM((64, 128), tg.float16, transforms=tg.mma_transforms(128, tg.float16)),\n"
    "                               tg.ACC((64, 64))])\n"
    "    def body(a, b, c, a_smem, b_smem, acc):\n"
    "        tg.wgmma(acc, a_smem, b_smem)\n"
    "    return body\n"
    "wrong(64, 128, 64).trace(tg.ShapeDtype((64, 64), tg.float16), tg.ShapeDtype((64, 128), tg.float16))",
]


@pytest.fixture(scope="module")
def notebook(tmp_path_factory):
    """The cells above, executed by a Jupyter kernel running this checkout (outputs kept per cell)."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    with pytest.MonkeyPatch.context() as env:   # the kernel process inherits the environment
        env.setenv("PYTHONPATH", os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
        env.setenv("TILEGEMM_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
        nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": ROOT}}).execute()
    return nb


def _output(notebook, cell, kind="execute_result"):
    outputs = [o for o in notebook.cells[cell].outputs if o.output_type == kind]
    assert outputs, f"cell {cell} has no {kind}: {notebook.cells[cell].outputs}"
    return outputs[-1]


def test_in_a_notebook_a_graph_renders_as_html_with_the_cells_lines(notebook):
    html = _output(notebook, 1).data["text/html"]
    assert "<code>@hopper_v2_tma_wgmma</code>" in html and "examples/hopper_v2_tma_wgmma.py:" in html
    assert "text/markdown" in _output(notebook, 1).data


def test_in_a_notebook_a_budget_renders_as_an_html_table(notebook):
    html = _output(notebook, 2).data["text/html"]
    assert "<b>budget</b> 200x264x136 f16 -&gt; f16 on NVIDIA H200 SXM" in html
    assert "<td style='text-align:left'>predicted time</td>" in html


def test_in_a_notebook_the_tuner_shows_a_progress_bar_and_its_result_renders(notebook):
    assert "<b>tune</b> 1024x1024x1024 on NVIDIA H200 SXM" in _output(notebook, 3).data["text/html"]
    err = "".join(o.text for o in notebook.cells[3].outputs if o.output_type == "stream" and o.name == "stderr")
    assert "tune: model: 100%" in err and "3/3" in err


def test_in_a_notebook_a_compiled_kernel_renders_its_registers_and_source(notebook):
    html = _output(notebook, 4).data["text/html"]
    assert re.search(r"\d+ registers/thread, [\d,]+ B shared memory/block, no spills", html)
    assert "<span style=" in html and "hopper_v2_tma_wgmma" in html


def test_in_a_notebook_an_error_names_the_cell_and_hides_tilegemms_frames(notebook):
    error = _output(notebook, 5, "error")
    assert error.ename == "KernelError" and error.evalue.startswith("Cell In[6]:7: ")
    frames = [line for line in error.traceback if "line " in line and ("Cell" in line or ".py" in line)]
    assert frames and all("tilegemm" + os.sep not in line for line in frames), frames
    assert "frame(s) inside tilegemm hidden" in error.traceback[-1]
