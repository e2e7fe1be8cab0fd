"""Run-time memory: buffers (one per allocation) and rectangular windows ("views") of them.

SMEM, TMEM and ACC buffers hold data in the logical shape the kernel indexes:
tiling and swizzle transforms only change the physical placement on the GPU,
so the interpreter ignores them. GMEM views may reach past the array: reads
there give zeros and writes are dropped (TMA semantics, also used for plain
loads and stores).
"""
import numpy as np

from ..errors import KernelError
from ..lang import dtypes
from ..lang.types import MemorySpace


class Buffer:
    """One allocation, its data and the accesses the race checks still have to order later accesses after."""

    def __init__(self, data, space, alloc_op=None, owner="", tracked=None):
        self.data = data
        self.space = space
        self.alloc_op = alloc_op  # None for kernel parameters
        self.owner = owner        # 'block (m=0)' or a task label: whose copy of the allocation this is
        self.accesses = []
        # Race-checked: SMEM, TMEM and ACC always; GMEM where the caller says (kernels whose blocks hand each other
        # data through tg.count_arrival: other kernels' blocks meet in GMEM only through TMA stores at the end).
        self.tracked = space != MemorySpace.GMEM if tracked is None else tracked

    def describe(self):
        """"SMEM 'name' of block (...) (allocated at file:line)", for messages."""
        space = self.space.upper()
        if self.alloc_op is None:
            return f"{space} array"
        name = self.alloc_op.attrs.get("name")
        named = f" '{name}'" if name else ""
        return f"{space}{named} of {self.owner} (allocated at {self.alloc_op.loc})"


def uninitialised(shape, dtype):
    """Contents of fresh SMEM/TMEM (and of kernel outputs): NaN for floats, so reading unwritten memory shows."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" or dtype == dtypes.bfloat16:
        return np.full(shape, np.nan, dtype)
    return np.zeros(shape, dtype)


class RefView:
    """A window of a buffer: per buffer dimension a start and a size (None: an integer index, dimension dropped).

    `order` lists the buffer dimension each dimension of the view is, in the view's
    order: the kept dimensions ascending, or permuted by tg.transpose_ref. Reads and
    writes transpose between the two; `box` (what race checks compare) is in
    buffer coordinates, so a transposed view and its buffer are the same memory.
    """
    __slots__ = ("buffer", "starts", "sizes", "order", "shape", "index")

    def __init__(self, buffer, starts, sizes, order=None):
        self.buffer = buffer
        self.starts = starts
        self.sizes = sizes
        self.order = tuple(d for d, s in enumerate(sizes) if s is not None) if order is None else tuple(order)
        self.shape = tuple(sizes[d] for d in self.order)
        self.index = tuple(st if sz is None else slice(st, st + sz) for st, sz in zip(starts, sizes))

    @classmethod
    def whole(cls, buffer):
        """A view of the whole buffer."""
        shape = buffer.data.shape
        return cls(buffer, (0,) * len(shape), tuple(shape))

    @property
    def box(self):
        """Per buffer dimension the half-open range [lo, hi) this view covers."""
        return tuple((st, st + (1 if sz is None else sz)) for st, sz in zip(self.starts, self.sizes))

    @property
    def nbytes(self):
        """Bytes in the window (a TMA copy's transaction size)."""
        n = self.buffer.data.dtype.itemsize
        for d in self.shape:
            n *= d
        return n

    def view(self, starts, sizes, loc):
        """The sub-view at `starts` (one per dimension of this view) with `sizes` (None drops a dimension)."""
        new_starts, new_sizes = list(self.starts), list(self.sizes)
        for d, start, sub in zip(self.order, starts, sizes):
            size = self.sizes[d]
            if self.buffer.space != MemorySpace.GMEM and not (0 <= start and start + (sub or 1) <= size):
                extent = f"[{start}, {start + (sub or 1)})"
                raise KernelError(f"index out of bounds at run time: {extent} of a dimension of size {size} of "
                                  f"{self.buffer.describe()}; only GMEM views may reach past the edge", loc=loc)
            new_starts[d] = self.starts[d] + start
            new_sizes[d] = sub
        order = tuple(d for d in self.order if new_sizes[d] is not None)
        return RefView(self.buffer, tuple(new_starts), tuple(new_sizes), order)

    def transposed(self, permutation):
        """The same window with its dimensions permuted: dimension i is this view's `permutation[i]`."""
        return RefView(self.buffer, self.starts, self.sizes, tuple(self.order[p] for p in permutation))

    def narrow(self, dim, lo, hi):
        """This view restricted to [lo, hi) along its logical dimension `dim`."""
        starts = [0] * len(self.shape)
        sizes = list(self.shape)
        starts[dim], sizes[dim] = lo, hi - lo
        return self.view(starts, sizes, None)

    def rebase(self, buffer):
        """The same window of another block's copy of the allocation."""
        return RefView(buffer, self.starts, self.sizes, self.order)

    def read(self):
        """A copy of the window's contents (zeros where a GMEM window leaves the array)."""
        data = self.buffer.data
        if self.buffer.space != MemorySpace.GMEM or self.inside():
            return self._from_buffer_order(data[self.index]).copy()
        out = np.zeros(self._buffer_order_shape(), data.dtype)
        clipped = self._clipped()
        if clipped is not None:
            src, dst = clipped
            out[dst] = data[src]
        return self._from_buffer_order(out)

    def write(self, value):
        """Stores `value` (the window's shape) into the window; GMEM writes past the array are dropped."""
        data = self.buffer.data
        value = self._to_buffer_order(value)
        if self.buffer.space != MemorySpace.GMEM or self.inside():
            data[self.index] = value
            return
        clipped = self._clipped()
        if clipped is not None:
            src, dst = clipped
            data[src] = value[dst]

    def _buffer_order_shape(self):
        return tuple(s for s in self.sizes if s is not None)

    def _axes(self):
        """numpy.transpose axes taking the window in buffer order to this view's order, or None if they agree."""
        kept = sorted(self.order)
        axes = tuple(kept.index(d) for d in self.order)
        return None if axes == tuple(range(len(axes))) else axes

    def _from_buffer_order(self, window):
        axes = self._axes()
        return window if axes is None else np.transpose(window, axes)

    def _to_buffer_order(self, value):
        axes = self._axes()
        return value if axes is None else np.transpose(value, np.argsort(axes))

    def inside(self):
        """Whether the window lies entirely inside the buffer."""
        for st, sz, n in zip(self.starts, self.sizes, self.buffer.data.shape):
            if st < 0 or st + (1 if sz is None else sz) > n:
                return False
        return True

    def _clipped(self):
        """(buffer index, window index) of the part inside the array, or None if nothing is."""
        src, dst = [], []
        for st, sz, n in zip(self.starts, self.sizes, self.buffer.data.shape):
            if sz is None:
                if not 0 <= st < n:
                    return None
                src.append(st)
                continue
            lo, hi = max(st, 0), min(st + sz, n)
            if lo >= hi:
                return None
            src.append(slice(lo, hi))
            dst.append(slice(lo - st, hi - st))
        return tuple(src), tuple(dst)

    def element(self):
        """The single object a barrier view names (`bars.at[i]`, or an array of one barrier)."""
        picked = self.buffer.data[self.index]
        return picked if not self.shape else picked[0]
