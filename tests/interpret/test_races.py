"""Race checks remember every earlier access a later one may conflict with, not only the latest one."""
import numpy as np
import pytest

import tilegemm as tg

from .kernels import at_line


@pytest.mark.parametrize("rewrite", [False, True])
def test_a_write_partly_reaccessed_by_its_writer_still_races_with_an_unordered_reader_of_the_rest(rewrite):
    @tg.kernel(out_shape=tg.ShapeDtype((64, 8), tg.float32), num_threads=2, thread_name="wg",
               scratch_shapes=[tg.SMEM((64, 8), tg.float32)])
    def kernel(x, y, smem):
        @tg.when(tg.axis_index("wg") == 0)
        def _():
            smem[...] = x[...]  # line: whole write
            if rewrite:
                smem[0:32, :] = x[0:32, :] * 2.0
            else:
                y[0:32, :] = smem[0:32, :]

        @tg.when(tg.axis_index("wg") == 1)
        def _():
            y[32:64, :] = smem[32:64, :]  # line: unordered read

    with pytest.raises(tg.RaceError) as err:
        kernel(np.ones((64, 8), np.float32), interpret=True)
    message = str(err.value)
    assert message.startswith(f"{at_line('unordered read', __file__)}: load (block (x=0) thread wg=1) reads SMEM")
    assert f"the store at {at_line('whole write', __file__)} (block (x=0) thread wg=0)" in message
