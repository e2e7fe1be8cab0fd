"""Shared-memory buffers: their CuTe layouts, the SharedStorage struct, and CuTe mode order.

A stored SMEM shape (S0, ..., R, C) (C contiguous) is laid out in CuTe with the
tile modes first and the leading ("stage") modes last, as the CuTe Hopper
examples do: (R, C, S0, ...), except for MN-major MMA operand buffers (B stored
(K, N), or A stored (K, M) and read through a transpose), whose CuTe modes are
(MN, K): (C, R, S0, ...). Swizzled buffers are tiled from CuTe's WGMMA layout
atoms of the operand's major-ness, so TMA and the tensor cores agree on them.
"""
import math
from dataclasses import dataclass

from ..lang import dtypes
from ..lang.analysis import MN_MAJOR
from ..lang.arch import SMEM_ALIGN, shared_storage_bytes
from ..lang.scratch import swizzle_of
from .cute_names import cutlass_type, shape
from .plan import BufferRole, BufferUse

ALIGN = SMEM_ALIGN


@dataclass
class SmemBuffer:
    """One SMEM allocation as the generated code sees it."""
    name: str           # field in SharedStorage and tensor variable in the kernel
    ref_type: object    # the alloc's RefType
    use: BufferUse
    loc: object

    @property
    def role(self):
        return self.use.role

    @property
    def rank(self):
        return len(self.ref_type.shape)

    @property
    def swizzle(self):
        return swizzle_of(self.ref_type.transforms)

    @property
    def transposed(self):
        """True when CuTe's first mode is the stored last dimension (MN-major MMA operand buffers)."""
        return self.use.major == MN_MAJOR

    def cute_mode(self, dim):
        """The CuTe mode holding the buffer's (stored) dimension `dim`."""
        n = self.rank
        if n == 1:
            return 0
        if dim == n - 2:
            return 1 if self.transposed else 0
        if dim == n - 1:
            return 0 if self.transposed else 1
        return 2 + dim

    @property
    def cute_shape(self):
        order = sorted(range(self.rank), key=self.cute_mode)
        return tuple(self.ref_type.shape[d] for d in order)

    @property
    def layout_fn(self):
        return f"{self.name}_layout"

    @property
    def composed(self):
        """True when the layout is a ComposedLayout (swizzle o layout), i.e. built from WGMMA atoms."""
        return self.rank >= 2 and (self.swizzle > 16 or self.role != BufferRole.PLAIN)

    def layout_function(self, w):
        """Writes the module-level function returning this buffer's CuTe layout."""
        t = self.ref_type
        with w.block(f"def {self.layout_fn}():"):
            w.line(f'"""{self.name}: {t} ({self.loc}), CuTe modes {shape(self.cute_shape)}."""')
            n = self.rank
            if not self.composed:
                # Row-major in the stored order: C fastest, then R, then the stage dims, last one fastest.
                order = (1, 0) + tuple(range(n - 1, 1, -1)) if n >= 2 else (0,)
                w.line(f"return cute.make_ordered_layout({shape(self.cute_shape)}, order={shape(order)})")
                return
            w.line(f"atom = {self.atom_expr()}")
            w.line(f"return cute.tile_to_shape(atom, {shape(self.cute_shape)}, order={shape(self.tile_order(n))})")

    def atom_expr(self):
        """Source of the WGMMA SMEM layout atom a composed layout is tiled from."""
        major = "MN" if self.transposed else "K"
        kind = f"{major}_SW{self.swizzle}" if self.swizzle > 16 else f"{major}_INTER"
        dtype = cutlass_type(self.ref_type.dtype)
        return f"warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.{kind}, {dtype})"

    def tile_order(self, rank):
        """The order tile_to_shape tiles the first `rank` CuTe modes of a composed layout in: the atom's
        contiguous mode first, the stages last."""
        return ((1, 0) if self.transposed else (0, 1)) + tuple(range(2, rank))

    def field(self):
        """The SharedStorage field declaration."""
        count = math.prod(self.ref_type.shape)
        return (f"{self.name}: cute.struct.Align[cute.struct.MemRange[{cutlass_type(self.ref_type.dtype)}, "
                f"{count}], {ALIGN}]")

    def tensor_expr(self, storage):
        """Source of the kernel-side tensor over this buffer's SharedStorage field."""
        if self.composed:
            return (f"{storage}.{self.name}.get_tensor({self.layout_fn}().outer, "
                    f"swizzle={self.layout_fn}().inner)")
        return f"{storage}.{self.name}.get_tensor({self.layout_fn}())"

    def stage_layout_expr(self, index_dims):
        """Source of the layout of one selection of this buffer with `index_dims` (stored dims) fixed at 0."""
        if not index_dims:
            return f"{self.layout_fn}()"
        if self.composed and sorted(self.cute_mode(d) for d in index_dims) == list(range(2, self.rank)):
            # one stage, tiled as such: CuTe DSL's compiler aborts slicing a stage out of a ring whose rows are an
            # odd number of atoms (e.g. 152 of a K-major B: 19 atoms of 8)
            return (f"cute.tile_to_shape({self.atom_expr()}, {shape(self.cute_shape[:2])}, "
                    f"order={shape(self.tile_order(2))})")
        coord = ["None"] * self.rank
        for d in index_dims:
            coord[self.cute_mode(d)] = "0"
        return f"cute.slice_({self.layout_fn}(), ({', '.join(coord)}{',' if self.rank == 1 else ''}))"

    @property
    def nbytes(self):
        return math.prod(self.ref_type.shape) * dtypes.itemsize(self.ref_type.dtype)


def storage_bytes(buffers, barrier_counts):
    """Bytes of the SharedStorage struct: barriers (8 bytes each) first, then 1024-aligned buffers."""
    return shared_storage_bytes([b.nbytes for b in buffers], sum(barrier_counts))
