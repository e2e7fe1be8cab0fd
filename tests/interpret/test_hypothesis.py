"""Random shapes and tile configurations of a TMA + wgmma pipeline, interpreted and checked against numpy."""
from hypothesis import given, settings, strategies as st

import tilegemm as tg
from tilegemm.model.layouts import A_LAYOUTS, B_LAYOUTS
from tilegemm.showcase import random_inputs, relative_error, stored_operands

from .kernels import pipelined_matmul


@st.composite
def problems(draw):
    """(m, n, k), a legal tiling and operand layouts: TMA rows of whole 16-byte units (n, k, and m for an A stored
    [K, M], multiples of 8), wgmma tiles."""
    # One warpgroup holds the accumulator: at most 128 x 128 f32 (128 registers per CUDA thread).
    tile_m, tile_n = draw(st.sampled_from([(64, 32), (64, 64), (64, 128), (64, 256), (128, 64), (128, 128)]))
    tile_k = draw(st.sampled_from([16, 32, 64]))
    config = dict(tile_m=tile_m, tile_n=tile_n, tile_k=tile_k, stages=draw(st.integers(1, 3)),
                  epilogue_n=draw(st.sampled_from([e for e in (32, 64, tile_n) if tile_n % e == 0])),
                  dtype=draw(st.sampled_from([tg.float16, tg.bfloat16])),
                  a_layout=draw(st.sampled_from(A_LAYOUTS)), b_layout=draw(st.sampled_from(B_LAYOUTS)))
    m = draw(st.integers(1, 2 * tile_m + 17)) if config["a_layout"] == "mk" else 8 * draw(
        st.integers(1, (2 * tile_m + 24) // 8))
    n = 8 * draw(st.integers(1, (2 * tile_n + 24) // 8))
    k = 8 * draw(st.integers(1, (4 * tile_k + 8) // 8))
    return (m, n, k), config


@settings(max_examples=15, deadline=None)
@given(problems())
def test_pipelined_matmul_matches_numpy_for_any_shape_tiling_and_layout(problem):
    (m, n, k), config = problem
    a, b = random_inputs(m, n, k, config["dtype"])
    c = pipelined_matmul(m, n, k, **config)(*stored_operands(a, b, config["a_layout"], config["b_layout"]),
                                            interpret=True)
    assert relative_error(c, a, b) < 1e-2
