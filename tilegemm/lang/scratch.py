"""Scratch memory specs (SMEM, TMEM, ACC, barriers) and shared-memory layout transforms.

A spec is a static description; the kernel allocates it on entry (from
`scratch_shapes`) or inside `tg.run_scoped`, producing a Ref.
"""
from dataclasses import dataclass

from ..errors import KernelError
from . import dtypes
from .arch import DEFAULT_LIMITS, NO_SWIZZLE, swizzle_for, swizzle_tiling
from .ir import current_user_loc
from .storage import layout
from .tracer import emit
from .types import BarrierSpec, MemorySpace, RefType


@dataclass(frozen=True)
class TilingTransform:
    """Tiles the trailing dims of an SMEM ref by `tiling` (e.g. (8, 64) for a 128-byte swizzle of f16).

    Same as Pallas `plgpu.TilingTransform`: the logical shape the kernel indexes
    is unchanged; only the physical placement in shared memory changes.
    """
    tiling: tuple

    def __str__(self):
        return f"tile{tuple(self.tiling)}"


@dataclass(frozen=True)
class SwizzleTransform:
    """XOR-swizzles rows of `swizzle` bytes (32, 64 or 128): the layout WGMMA/tcgen05 and TMA share."""
    swizzle: int

    def __str__(self):
        return f"swizzle{self.swizzle}"


def find_swizzle(minor_dim_bits, what=""):
    """The largest swizzle in bytes (128, 64, 32, or 16: none) whose rows divide a minor dimension of
    `minor_dim_bits` (arch.swizzle_for)."""
    swizzle = swizzle_for(minor_dim_bits // 8) if minor_dim_bits % 8 == 0 else None
    if swizzle is None:
        what = f" for {what}" if what else ""
        raise KernelError(f"no swizzle fits{what}: the minor dimension has {minor_dim_bits} bits, "
                          "which is not a multiple of 128 bits (16 bytes)", loc=current_user_loc())
    return swizzle


def mma_transforms(minor_elems, dtype):
    """The transforms of an SMEM tile whose contiguous dimension holds `minor_elems` elements: always a layout
    the verifier accepts, and the one WGMMA/tcgen05 operands and TMA copies agree on.

    The largest swizzle whose rows divide the dimension (find_swizzle) with its 8-row
    tiling; no transforms when only 16-byte chunks divide it (an unswizzled layout).
    tilegemm-only helper.
    """
    itemsize = dtypes.itemsize(dtypes.as_dtype(dtype))
    swizzle = find_swizzle(minor_elems * itemsize * 8)
    if swizzle == NO_SWIZZLE:
        return ()
    return (TilingTransform(swizzle_tiling(swizzle, itemsize)), SwizzleTransform(swizzle))


def swizzle_of(transforms):
    """The swizzle in bytes a transform list declares (NO_SWIZZLE without a SwizzleTransform)."""
    for t in transforms:
        if isinstance(t, SwizzleTransform):
            return t.swizzle
    return NO_SWIZZLE


def tiling_of(transforms):
    for t in transforms:
        if isinstance(t, TilingTransform):
            return tuple(t.tiling)
    return None


class _Spec:
    """A scratch allocation; `alloc()` records it into the current trace."""
    loc = None

    def __post_init__(self):
        object.__setattr__(self, "loc", current_user_loc())

    def alloc(self, name=None):
        return emit("alloc", (), {"name": name}, (self.ref_type(),), loc=self.loc).result


@dataclass(frozen=True, eq=False)
class SMEM(_Spec):
    """Shared memory of `shape` and `dtype`, laid out by `transforms` (tiling, swizzle)."""
    shape: tuple
    dtype: object
    transforms: tuple = ()

    def ref_type(self):
        return RefType(tuple(self.shape), dtypes.as_dtype(self.dtype), MemorySpace.SMEM, tuple(self.transforms))


@dataclass(frozen=True, eq=False)
class TMEM(_Spec):
    """Blackwell tensor memory: (rows, columns) of 32-bit cells; `collective` for 2-CTA MMAs."""
    shape: tuple
    dtype: object
    collective: bool = False

    def ref_type(self):
        return RefType(tuple(self.shape), dtypes.as_dtype(self.dtype), MemorySpace.TMEM, (), self.collective)


@dataclass(frozen=True, eq=False)
class ACC(_Spec):
    """A Hopper WGMMA accumulator held in the registers of one warpgroup; starts as zeros."""
    shape: tuple
    dtype: object = dtypes.float32

    def ref_type(self):
        return RefType(tuple(self.shape), dtypes.as_dtype(self.dtype), MemorySpace.ACC)


@dataclass(frozen=True, eq=False)
class Barrier(_Spec):
    """`num_barriers` mbarriers, each completing a phase after `num_arrivals` arrivals.

    Every `copy_gmem_to_smem` naming a barrier counts as one arrival (plus its
    bytes). `orders_tensor_core=True` is required for barriers that tcgen05
    operations arrive on or that order TMEM accesses.
    """
    num_arrivals: int = 1
    num_barriers: int = 1
    orders_tensor_core: bool = False

    def ref_type(self):
        spec = BarrierSpec(self.num_arrivals, self.num_barriers, self.orders_tensor_core)
        return RefType((self.num_barriers,), dtypes.int32, MemorySpace.BARRIER, barrier=spec)


@dataclass(frozen=True, eq=False, kw_only=True)
class ClusterBarrier(_Spec):
    """Barriers that count arrivals from every block along `collective_axes` of the cluster.

    Keyword-only with Pallas's fields: `num_arrivals` arrivals from each block complete a phase.
    """
    collective_axes: tuple
    num_barriers: int = 1
    num_arrivals: int = 1
    orders_tensor_core: bool = False

    def ref_type(self):
        axes = (self.collective_axes,) if isinstance(self.collective_axes, str) else tuple(self.collective_axes)
        spec = BarrierSpec(self.num_arrivals, self.num_barriers, self.orders_tensor_core, axes)
        return RefType((self.num_barriers,), dtypes.int32, MemorySpace.BARRIER, barrier=spec)


SCRATCH_SPECS = (SMEM, TMEM, ACC, Barrier, ClusterBarrier)


def shared_storage_of(specs):
    """Bytes of shared memory one block holding the scratch `specs` (a dict or a list) takes, laid out as the
    verifier budgets it and the lowering allocates it (lang/storage.py)."""
    specs = list(specs.values()) if isinstance(specs, dict) else list(specs)
    return layout([(spec, spec.ref_type()) for spec in specs]).total


def max_stages(scratch_for, limits=None):
    """The most pipeline stages `s` whose scratch specs `scratch_for(s)` (a dict or a list) fit in one block's
    shared memory, as the verifier counts it: the depth of a ring of SMEM stages that only gains from being
    deeper. `limits` defaults to the Hopper limits (arch.LIMITS; 227 KiB a block, as on Blackwell).

        stages = tg.max_stages(lambda s: dict(a=tg.SMEM((s, 128, 64), tg.float16), ...,
                                              ready=tg.Barrier(num_barriers=s)))
    """
    loc = current_user_loc()
    limits = limits or DEFAULT_LIMITS
    limit = limits.smem_per_block
    stages, size = 0, 0
    while True:
        grown = shared_storage_of(scratch_for(stages + 1))
        if grown > limit:
            break
        if grown <= size:
            raise KernelError(f"max_stages: scratch_for({stages + 1}) takes no more shared memory than "
                              f"scratch_for({stages}); it must allocate the ring of `stages` SMEM stages", loc=loc)
        stages, size = stages + 1, grown
    if not stages:
        raise KernelError(f"max_stages: even one stage needs {grown} bytes of shared memory, over the {limit} a "
                          f"block may use on {limits.devices}; use smaller tiles", loc=loc)
    return stages
