"""tg.debug_print in the interpreter: one line per tilegemm thread that reaches it, with the scalars' values."""
import numpy as np

import tilegemm as tg


def printing_kernel():
    """Every warpgroup of a (2,)-grid, 2-warpgroup kernel prints its indices; warp 0 of each also inside a core_map;
    the output is left all zeros."""
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float32), grid=(2,), grid_names=("b",), num_threads=2,
               thread_name="wg")
    def printing(x, out):
        b, wg = tg.axis_index("b"), tg.axis_index("wg")
        tg.debug_print("block {} warpgroup {}: {} and {} 100%", b, wg, b * 10 + wg, 7)

        @tg.when((b == 0) & (wg == 0))
        def _():
            out[...] = tg.zeros((64, 64), tg.float32)

            @tg.core_map(tg.WarpMesh("warp"))
            def _():
                tg.debug_print("warp {}", tg.axis_index("warp"))
    return printing


def test_each_warpgroup_prints_its_line_and_each_warp_inside_a_core_map(capsys):
    out = printing_kernel()(np.ones((64, 64), np.float32), interpret=True)
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == sorted([f"block {b} warpgroup {w}: {b * 10 + w} and 7 100%" for b in (0, 1) for w in (0, 1)]
                                   + [f"warp {w}" for w in range(4)])
    assert (out == 0).all()
