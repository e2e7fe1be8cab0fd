"""Shared-memory buffers: their CuTe layouts, the SharedStorage struct, and CuTe mode order.

A stored SMEM shape (S0, ..., R, C) (C contiguous) is laid out in CuTe with the
tile modes first and the leading ("stage") modes last, as the CuTe Hopper
examples do: (R, C, S0, ...), except for MN-major MMA operand buffers (B stored
(K, N), or A stored (K, M) and read through a transpose), whose CuTe modes are
(MN, K): (C, R, S0, ...). Swizzled buffers are tiled from CuTe's WGMMA layout
atoms of the operand's major-ness, so TMA and the tensor cores agree on them.
"""
import math
from dataclasses import dataclass, field

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
    stage_layout_read: bool = field(default=False)   # one stage's layout is read (a TMA copy's box)

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
    def stage_layout_fn(self):
        return f"{self.name}_stage_layout"

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
            self._tile(w, self.cute_shape)
        if self.stage_layout_read:
            w.line("")
            w.line("")
            with w.block(f"def {self.stage_layout_fn}():"):
                modes = shape(self.cute_shape[:2])
                w.line(f'"""One stage of {self.name}, CuTe modes {modes}: tiled as such, not sliced out of the ring."""')
                self._tile(w, self.cute_shape[:2])

    def _tile(self, w, cute_shape):
        """Writes the body returning a layout of `cute_shape` tiled from the WGMMA atom of the buffer's major-ness:
        the atom's contiguous mode first, the stages last."""
        major = "MN" if self.transposed else "K"
        kind = f"{major}_SW{self.swizzle}" if self.swizzle > 16 else f"{major}_INTER"
        w.line(f"atom = warpgroup.make_smem_layout_atom(warpgroup.SmemLayoutAtomKind.{kind}, "
               f"{cutlass_type(self.ref_type.dtype)})")
        order = ((1, 0) if self.transposed else (0, 1)) + tuple(range(2, len(cute_shape)))
        w.line(f"return cute.tile_to_shape(atom, {shape(cute_shape)}, order={shape(order)})")

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
            # one whole stage: not sliced out of the ring (CuTe DSL's compiler aborts on that where the rows are an
            # odd number of atoms, e.g. 152 of a K-major B: 19 atoms of 8)
            self.stage_layout_read = True
            return f"{self.stage_layout_fn}()"
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
