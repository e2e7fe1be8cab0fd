"""A kernel whose blocks hand partial results to the last of them to arrive at a counter (tg.count_arrival), for the
language, lowering and GPU tests."""
import numpy as np

import tilegemm as tg

F32 = tg.float32
I32 = tg.int32
BLOCKS = 4


def last_block_sums_kernel(arrivals=BLOCKS, write_after_arrival=False):
    """out = x[0] + x[1] + ... in row order, summed by whichever block arrives last: each block b writes 2 * x[b]
    into its row of the workspace, counts its arrival, and the last sums the workspace's rows (`write_after_arrival`:
    a block writes its row after arriving, a race)."""
    @tg.kernel(out_shape=(tg.ShapeDtype((8, 64), F32), tg.ShapeDtype((BLOCKS, 8, 64), F32),
                          tg.ShapeDtype((1,), I32)),
               grid=(BLOCKS,), grid_names=("b",), input_output_aliases={1: 2})
    def last_block_sums(x, counters, out, workspace, counters_out):
        b = tg.axis_index("b")
        if not write_after_arrival:
            workspace.at[b][...] = x.at[b][...] * 2.0
        last = tg.count_arrival(counters_out.at[0], arrivals)
        if write_after_arrival:
            workspace.at[b][...] = x.at[b][...] * 2.0

        @tg.when(last)
        def _():
            total = workspace.at[0][...]
            for i in range(1, BLOCKS):
                total = total + workspace.at[i][...]
            out[...] = total
    return last_block_sums


X = np.random.default_rng(0).standard_normal((BLOCKS, 8, 64)).astype(np.float32)
