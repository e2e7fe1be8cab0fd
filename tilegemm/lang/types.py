"""Static types of graph values: scalars, register arrays, refs and barriers."""
from dataclasses import dataclass

from . import dtypes


class MemorySpace:
    """Where a ref lives. ACC is the Hopper register accumulator of a warpgroup."""
    GMEM = "gmem"
    SMEM = "smem"
    TMEM = "tmem"
    ACC = "acc"
    BARRIER = "barrier"


@dataclass(frozen=True)
class ScalarType:
    """A uniform scalar (same value in every lane of the executing thread)."""
    dtype: object

    def __str__(self):
        return dtypes.name(self.dtype)


@dataclass(frozen=True)
class ArrayType:
    """A register array owned by one warpgroup (a tilegemm thread)."""
    shape: tuple
    dtype: object

    def __str__(self):
        return f"array<{'x'.join(map(str, self.shape))}x{dtypes.name(self.dtype)}>"


@dataclass(frozen=True)
class BarrierSpec:
    """Static description of an mbarrier array (see tg.Barrier / tg.ClusterBarrier)."""
    num_arrivals: int
    num_barriers: int
    orders_tensor_core: bool = False
    collective_axes: tuple = ()


@dataclass(frozen=True)
class RefType:
    """A reference to memory: shape, element type, memory space, layout transforms.

    `collective` marks TMEM allocated for a 2-CTA collective MMA; `barrier` is set
    for refs in the BARRIER space (shape is (num_barriers,) before indexing).
    `permutation` is set on transposed views of SMEM (tg.transpose_ref): dimension i
    of the ref is dimension `permutation[i]` of the same window in stored order
    (numpy.transpose's axes), so the stored last dimension, the contiguous one, is
    `permutation.index(ndim - 1)`; `transforms` always describe the stored layout.
    """
    shape: tuple
    dtype: object
    space: str
    transforms: tuple = ()
    collective: bool = False
    barrier: BarrierSpec = None
    permutation: tuple = None

    def __str__(self):
        if self.space == MemorySpace.BARRIER:
            b = self.barrier
            extra = ", tensor_core" if b.orders_tensor_core else ""
            extra += f", cluster={b.collective_axes}" if b.collective_axes else ""
            return f"barrier<{'x'.join(map(str, self.shape)) or 'scalar'}, arrivals={b.num_arrivals}{extra}>"
        t = "".join(f", {tr}" for tr in self.transforms)
        c = ", collective" if self.collective else ""
        p = f", transpose{self.permutation}" if self.permutation is not None else ""
        return f"{self.space}<{'x'.join(map(str, self.shape))}x{dtypes.name(self.dtype)}{t}{c}{p}>"

    @property
    def contiguous_dim(self):
        """The dimension whose elements are adjacent in memory: the last, or where a transpose moved it."""
        last = len(self.shape) - 1
        return last if self.permutation is None else self.permutation.index(last)

    @property
    def nbytes(self):
        n = dtypes.itemsize(self.dtype) if self.space != MemorySpace.BARRIER else 8
        for d in self.shape:
            n *= d
        return n
