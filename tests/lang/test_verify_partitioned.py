"""Verifier: a partitioned (2-CTA) copy whose source is twice its destination along a real dimension verifies."""
import pytest

import tilegemm as tg

from .helpers import F16, spec, trace


def partitioned(src, dst, axis):
    """Traces one copy of a.at[0:src[0], 0:src[1]] into an SMEM `dst`, split over a 2-block cluster along `axis`."""
    def body(a, out, smem, bar):
        tg.copy_gmem_to_smem(a.at[0:src[0], 0:src[1]], smem, bar.at[0], collective_axes="cx", partitioned_axis=axis)
    return trace(body, spec(256, 128), scratch=[tg.SMEM(dst, F16), tg.Barrier()], cluster=(2,))


@pytest.mark.parametrize("src, dst, axis", [((256, 64), (128, 64), 0), ((128, 128), (128, 64), 1)])
def test_a_source_twice_the_destination_along_the_partitioned_axis_verifies(src, dst, axis):
    (copy,) = [op for op in partitioned(src, dst, axis).walk() if op.kind == "copy_gmem_to_smem"]
    assert copy.attrs["partitioned_axis"] == axis


@pytest.mark.parametrize("axis", [-1, 2])
def test_a_partitioned_axis_outside_the_source_is_rejected(axis):
    with pytest.raises(tg.KernelError, match=rf"partitioned_axis={axis}: each block loads half of the source"):
        partitioned((256, 64), (128, 64), axis)
