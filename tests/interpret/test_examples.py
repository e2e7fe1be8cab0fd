"""Every example of both ladders, interpreted at its small and ragged shapes, matches numpy.

Examples follow one convention: `examples/<name>.py` defines
`build(m, n, k, dtype=tg.float16, **config) -> tg.Kernel` computing c = A @ B
(A [m, k], B [k, n], passed as stored in the layouts its CONFIG names: see
showcase.example_layouts) and `SHAPES["interpret"]`, a list of (m, n, k).
"""
import glob
import inspect
import os
import time

import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.showcase import example_layouts, load_example, random_inputs

EXAMPLES_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
LADDERS = ("hopper_*.py", "blackwell_*.py")   # other examples (torch_mlp.py) are not rungs of a ladder
MODULES = {os.path.splitext(os.path.basename(path))[0]: load_example(path)
           for path in sorted(p for ladder in LADDERS for p in glob.glob(os.path.join(EXAMPLES_DIR, ladder)))}
CASES = [(name, tuple(shape)) for name, module in MODULES.items() for shape in module.SHAPES["interpret"]]


@pytest.mark.parametrize("dtype", [tg.float16, tg.bfloat16], ids=["f16", "bf16"])
@pytest.mark.parametrize("name, shape", CASES, ids=[f"{name}-{'x'.join(map(str, s))}" for name, s in CASES])
def test_example_interpreted_matches_numpy(name, shape, dtype):
    inputs, reference = tt.stored_operands(*example_layouts(MODULES[name]))
    tt.check(MODULES[name].build, reference, shapes=[shape], dtypes=[dtype], modes=["interpret"], seeds=[None],
             inputs=inputs)


PERSISTENT = [name for name, module in MODULES.items()
              if "num_clusters" in inspect.signature(module.build).parameters]


@pytest.mark.parametrize("name", PERSISTENT)
def test_persistent_example_walking_several_tiles_per_block_matches_numpy(name):
    m, n, k = max(MODULES[name].SHAPES["interpret"], key=lambda s: s[0] * s[1])
    a, b = random_inputs(m, n, k, tg.float16)
    c = MODULES[name].build(m, n, k, num_clusters=1)(a, b, interpret=True)  # one cluster walks every tile
    tt.assert_close(c, a.astype("float64") @ b.astype("float64"), k=k)


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", PERSISTENT)
def test_persistent_example_running_ahead_across_tiles_is_schedule_independent(name, seed):
    m, n, k = max(MODULES[name].SHAPES["interpret"], key=lambda s: s[0] * s[1])
    a, b = random_inputs(m, n, k, tg.float16)
    kernel = MODULES[name].build(m, n, k, num_clusters=1)   # loads of a tile overtake the last tile's MMAs
    assert (kernel(a, b, interpret=True, seed=seed) == kernel(a, b, interpret=True)).all()


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("name", [n for n in MODULES if n.startswith(("hopper_v4", "blackwell_4", "blackwell_7"))])
def test_example_gives_the_same_result_under_shuffled_schedules(name, seed):
    m, n, k = MODULES[name].SHAPES["interpret"][0]
    a, b = random_inputs(m, n, k, tg.float16)
    kernel = MODULES[name].build(m, n, k)
    assert (kernel(a, b, interpret=True, seed=seed) == kernel(a, b, interpret=True)).all()


def test_the_v4_hopper_example_at_256_cubed_interprets_in_under_30_seconds():
    a, b = random_inputs(256, 256, 256, tg.float16)
    kernel = MODULES["hopper_v4_tuned"].build(256, 256, 256)
    start = time.perf_counter()
    c = kernel(a, b, interpret=True)
    assert time.perf_counter() - start < 30
    tt.assert_close(c, a.astype("float64") @ b.astype("float64"), k=256)


def test_tg_interpret_turns_a_kernel_into_its_interpreted_form():
    a, b = random_inputs(200, 136, 72, tg.float16)
    kernel = MODULES["hopper_v2_tma_wgmma"].build(200, 136, 72)
    assert (tg.interpret(kernel)(a, b) == kernel(a, b, interpret=True)).all()
