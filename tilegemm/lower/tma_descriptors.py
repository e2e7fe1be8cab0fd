"""TMA load descriptors that ask L2 to promote misses (tg.copy_gmem_to_smem(..., l2_promotion=N)).

CuTe DSL's `make_tiled_tma_atom` encodes each descriptor with a promotion of its own choosing and takes none.
A copy that asks for one gets a second descriptor: the atom's own box and mode order (read off its
`tma_gbasis`) over the same GMEM tensor, encoded with that promotion, passed to the kernel as a grid-constant
parameter whose address the kernel's copies name instead of the atom's (`cute.copy(..., tma_desc_ptr=)`).
A multicast atom's descriptor holds a smaller box than its basis: the one each block's TMA instructions load
(`multicast_box`).
"""
import re

import cutlass
import cutlass.cute as cute
from cutlass._mlir import ir
from cutlass._mlir.dialects import llvm
from cutlass.cutlass_dsl import dsl_user_op
from cutlass.experimental.cuda import (TensorMapL2Promotion, TensorMapSwizzle,
                                       create_tensor_map_tiled_from_view)
from cutlass.tensor_utils.tensormap import TensorMapManager, TensorMapUpdateMode

from ..lang.arch import L2_PROMOTION_BYTES, NO_SWIZZLE

PROMOTIONS = dict(zip(L2_PROMOTION_BYTES, (TensorMapL2Promotion.l2_64b, TensorMapL2Promotion.l2_128b,
                                          TensorMapL2Promotion.l2_256b)))
SWIZZLES = {NO_SWIZZLE: TensorMapSwizzle.none, 32: TensorMapSwizzle.s32b, 64: TensorMapSwizzle.s64b,
            128: TensorMapSwizzle.s128b}   # an SMEM buffer's swizzle in bytes -> the descriptor's
DESCRIPTOR_BYTES = 128
_GBASIS = re.compile(r'tma_gbasis = <"\(([0-9,]+)\):\(([0-9@,]+)\)">')


def atom_box(atom_type):
    """[(box extent, GMEM mode)] of a TMA atom's descriptor, innermost dimension first, read off its MLIR type
    (`tma_gbasis = <"(64,128):(1@1,1@0)">`: 64 along mode 1, then 128 along mode 0). Raises ValueError for a
    basis that is not one unit step along a distinct mode per dimension (a mode CuTe split or merged)."""
    found = _GBASIS.search(str(atom_type))
    if found is None:
        raise ValueError(f"no flat tma_gbasis in the TMA atom's type {atom_type}")
    extents = [int(e) for e in found.group(1).split(",")]
    steps = found.group(2).split(",")
    if len(steps) != len(extents) or any(not s.startswith("1@") for s in steps):
        raise ValueError(f"the TMA atom's basis {found.group(0)} is not one unit step per mode")
    modes = [int(s[2:]) for s in steps]
    if len(set(modes)) != len(modes):
        raise ValueError(f"the TMA atom's basis {found.group(0)} walks one mode twice")
    return list(zip(extents, modes))


def multicast_box(box, multicast: int):
    """The box a TMA instruction loads for an atom of basis `box` ([(extent, mode)], innermost first) shared by
    `multicast` blocks: CuTe divides the extents by the block count from the outermost dimension in, so a
    (64, 64) basis over 2 blocks loads 64 x 32 boxes (each block issues its share of them, multicast to all)."""
    box, left = list(box), multicast
    for dim in reversed(range(len(box))):
        if left == 1:
            break
        extent, mode = box[dim]
        if extent % left and left % extent:
            raise ValueError(f"a TMA box of extent {extent} does not divide among {left} blocks")
        box[dim], left = (-(-extent // left), mode), -(-left // extent)
    return box


def promoted_descriptor(atom, gmem, promotion: int, swizzle: int, multicast: int = 1):
    """Host code: the descriptor of `atom` (a TMA load over the GMEM tensor `gmem`, into SMEM swizzled
    `swizzle` bytes, shared by `multicast` blocks) with L2 promotion of `promotion` bytes."""
    box = multicast_box(atom_box(atom._trait.value.type), multicast)
    extents = [0] * len(box)
    for extent, mode in box:
        extents[mode] = extent
    return create_tensor_map_tiled_from_view(gmem, tuple(extents), stride_order=tuple(mode for _, mode in box),
                                             swizzle=SWIZZLES[swizzle], l2_promotion=PROMOTIONS[promotion])


def _address(descriptor, loc, ip):
    """The generic address (i64) of a grid-constant descriptor."""
    return llvm.ptrtoint(ir.IntegerType.get_signless(64), descriptor.get_ptr(loc=loc, ip=ip), loc=loc, ip=ip)


@dsl_user_op
def descriptor_pointer(descriptor, *, loc=None, ip=None):
    """Kernel code: a CuTe pointer to a grid-constant descriptor, as cute.copy's `tma_desc_ptr` takes it."""
    pointer = cute.make_ptr(cutlass.Int64, cutlass.Int64(_address(descriptor, loc, ip)), cute.AddressSpace.generic,
                            assumed_align=64, loc=loc, ip=ip)
    return TensorMapManager(TensorMapUpdateMode.GMEM, DESCRIPTOR_BYTES).get_tensormap_ptr(
        pointer, cute.AddressSpace.generic, loc=loc, ip=ip)


@dsl_user_op
def prefetch_descriptor(descriptor, *, loc=None, ip=None):
    """Kernel code: prefetch.tensormap of a grid-constant descriptor (cpasync.prefetch_descriptor's, for one
    that no atom holds)."""
    llvm.inline_asm(None, [_address(descriptor, loc, ip)], "prefetch.tensormap [$0];", "l,~{memory}",
                    has_side_effects=True, is_align_stack=False, asm_dialect=llvm.AsmDialect.AD_ATT, loc=loc, ip=ip)
