"""The graph IR: a readable listing with the user's file:line on every op, and a stable fingerprint."""
import os
import re
import subprocess
import sys

import tilegemm as tg

from .helpers import F16, line_of, spec, swizzled

HERE = os.path.abspath(__file__)


def matmul(tile_n=128, blank_lines_before_wgmma=False):
    """A one-block Hopper matmul over K=128 in two steps; `tile_n` changes the generated code."""
    def body(a, b, out, a_smem, b_smem, acc, bar):
        def step(k, carry):
            tg.copy_gmem_to_smem(a.at[:, tg.ds(k * 64, 64)], a_smem, bar.at[0])  # @copy_a
            tg.copy_gmem_to_smem(b.at[tg.ds(k * 64, 64), :], b_smem, bar.at[0])
            tg.barrier_wait(bar.at[0])
            tg.wgmma(acc, a_smem, b_smem)  # @wgmma
            tg.wgmma_wait(0)
        tg.fori_loop(0, 2, step, None)  # @loop
        out[...] = acc[...].astype(F16)  # @epilogue

    kernel = tg.kernel(body, out_shape=spec(128, tile_n),
                       scratch_shapes=[tg.SMEM((128, 64), F16, transforms=swizzled(128)),  # @a_smem
                                       tg.SMEM((64, tile_n), F16, transforms=swizzled(128)),
                                       tg.ACC((128, tile_n)), tg.Barrier(num_arrivals=2)])
    return kernel.trace(spec(128, 128), spec(128, tile_n))


def printed_locs(graph):
    """(op kind, file, line) for every op line of str(graph)."""
    out = []
    for text in str(graph).splitlines():
        m = re.match(r"\s*(?:%[\d, %]+ = )?(\w+)\(.*  # (.+):(\d+)$", text)
        if m:
            out.append((m[1], m[2], int(m[3])))
    return out


def test_every_printed_op_names_its_line_in_this_file():
    graph = matmul()
    locs = printed_locs(graph)
    assert [kind for kind, _, _ in locs] == [op.kind for op in graph.walk()]
    assert all(os.path.samefile(path, HERE) for _, path, _ in locs)

    def lines(kind):
        return [line for k, _, line in locs if k == kind]
    assert lines("alloc")[0] == line_of("a_smem", HERE)
    assert lines("copy_gmem_to_smem")[0] == line_of("copy_a", HERE)
    assert lines("wgmma") == [line_of("wgmma", HERE)]
    assert lines("fori_loop") == [line_of("loop", HERE)]
    assert lines("astype") == [line_of("epilogue", HERE)]


def test_the_listing_shows_config_params_types_and_nested_regions():
    text = str(matmul())
    assert text.splitlines()[0] == "kernel @body grid=(1,)['x'] threads=1"
    assert "  in %0 (a): gmem<128x128xf16>" in text and "  out %2 (out): gmem<128x128xf16>" in text
    assert re.search(r"alloc\(\) \{name='\w+'\} : smem<128x64xf16, tile\(8, 64\), swizzle128>", text)
    assert re.search(r"alloc\(\) \{name='\w+'\} : barrier<1, arrivals=2>", text)
    loop = text[text.index("fori_loop(0, 2)"):]
    assert loop.splitlines()[1].strip().startswith("^(%") and ": i32)" in loop.splitlines()[1]
    assert re.search(r"\n    wgmma\(%\d+, %\d+, %\d+\)", loop), "loop body ops are indented one level deeper"
    assert "\n    yield()" in loop and "\n  }\n" in loop


def test_fingerprint_is_stable_across_traces_and_changes_with_the_tile():
    assert matmul().fingerprint() == matmul().fingerprint()
    assert matmul(tile_n=128).fingerprint() != matmul(tile_n=64).fingerprint()


def same_matmul_written_lower_in_the_file():
    """matmul()'s kernel with every op on a different source line."""
    def body(a, b, out, a_smem, b_smem, acc, bar):

        def step(k, carry):

            tg.copy_gmem_to_smem(a.at[:, tg.ds(k * 64, 64)], a_smem, bar.at[0])
            tg.copy_gmem_to_smem(b.at[tg.ds(k * 64, 64), :], b_smem, bar.at[0])

            tg.barrier_wait(bar.at[0])
            tg.wgmma(acc, a_smem, b_smem)
            tg.wgmma_wait(0)

        tg.fori_loop(0, 2, step, None)
        out[...] = acc[...].astype(F16)

    kernel = tg.kernel(body, out_shape=spec(128, 128),
                       scratch_shapes=[tg.SMEM((128, 64), F16, transforms=swizzled(128)),
                                       tg.SMEM((64, 128), F16, transforms=swizzled(128)),
                                       tg.ACC((128, 128)),
                                       tg.Barrier(num_arrivals=2)])
    return kernel.trace(spec(128, 128), spec(128, 128))


def test_fingerprint_ignores_source_lines():
    ours, theirs = matmul(), same_matmul_written_lower_in_the_file()
    assert str(ours) != str(theirs)
    assert ours.fingerprint() == theirs.fingerprint()


def test_fingerprint_is_the_same_in_a_fresh_process():
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from lang.test_graph import matmul; "
            "print(matmul().fingerprint())")
    tests_dir = os.path.dirname(os.path.dirname(HERE))
    fresh = subprocess.run([sys.executable, "-c", code, tests_dir], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"})
    assert fresh.stdout.strip() == matmul().fingerprint()


def test_walk_visits_nested_ops_in_program_order():
    kinds = [op.kind for op in matmul().walk()]
    loop = kinds.index("fori_loop")
    assert kinds[loop + 1:loop + 4] == ["binop", "view", "view"]
    assert kinds.index("wgmma") > loop and kinds.index("yield") > kinds.index("wgmma_wait")
    assert kinds[-1] == "store"
