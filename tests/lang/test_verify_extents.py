"""Verifier: scratch extents and barrier counts the hardware can hold, kernel arrays int32 indices can reach."""
import pytest

import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, trace


def allocate(*buffers, **config):
    """Traces a kernel that only allocates `buffers`."""
    return trace(lambda x, out, *refs: None, spec(128, 128), scratch=list(buffers), **config)


@pytest.mark.parametrize("shape, extent, dim", [((-4, 64), -4, 0), ((64, 0), 0, 1)])
def test_smem_extents_are_at_least_one(shape, extent, dim):
    with raises_at("extent", f"has {extent} elements in dimension {dim}",
                   "every dimension of a scratch allocation must be at least 1"):
        allocate(tg.SMEM(shape, F16))  # @extent


def test_tmem_and_accumulator_extents_are_checked_too():
    with raises_at("tmem_extent", "tmem<128x0xf32> has 0 elements in dimension 1"):
        allocate(tg.TMEM((128, 0), F32))  # @tmem_extent
    with raises_at("acc_extent", "acc<-64x64xf32> has -64 elements in dimension 0"):
        allocate(tg.ACC((-64, 64)))  # @acc_extent


@pytest.mark.parametrize("arrivals", [0, 2 ** 20])
def test_barrier_arrivals_are_between_1_and_2_20_minus_1(arrivals):
    with raises_at("arrivals", f"num_arrivals={arrivals}", "after 1 to 1048575 (2^20 - 1) arrivals"):
        allocate(tg.Barrier(num_arrivals=arrivals))  # @arrivals
    allocate(tg.Barrier(num_arrivals=2 ** 20 - 1))


def test_a_barrier_array_holds_at_least_one_barrier():
    with raises_at("no_barriers", "num_barriers=0", "declare at least one barrier"):
        allocate(tg.ClusterBarrier(collective_axes="pair", num_barriers=0),  # @no_barriers
                 cluster=(2,), cluster_names=("pair",))


def test_a_kernel_array_dimension_holds_at_most_2_31_elements():
    def body(a, out):  # @kernel
        pass

    trace(body, spec(2 ** 31, 136), out=spec(8, 8))
    with raises_at("kernel", "kernel input 0 (gmem<2147483649x136xf16>) has 2147483649 elements in dimension 0",
                   "holds 1 to 2147483648 (2^31) elements", "int32"):
        trace(body, spec(2 ** 31 + 1, 136), out=spec(8, 8))
