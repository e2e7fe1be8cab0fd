"""Traced values with Python operator sugar: Scalar, Array and Ref.

Arithmetic on a Scalar records a `binop` op; on an Array an `ewise` op; indexing
a Ref records a `view`, reading it a `load` and assigning to it a `store`.
Integer division and remainder truncate toward zero (C and `lax.div`/`lax.rem`
semantics); tilegemm index arithmetic is meant for non-negative values.
"""
import numpy as np

from ..errors import KernelError
from . import dtypes
from .analysis import alloc_of
from .ir import Value, current_user_loc
from .tracer import VALUE_CLASSES, emit
from .types import ArrayType, MemorySpace, RefType, ScalarType

_COMPARISONS = {"lt", "le", "gt", "ge", "eq", "ne"}


def _scalar_dtype(x):
    if isinstance(x, Scalar):
        return x.type.dtype
    if isinstance(x, (bool, np.bool_)):
        return dtypes.bool_
    if isinstance(x, (int, np.integer)):
        return dtypes.int32
    raise KernelError(f"expected an int, a bool or a traced scalar, got {type(x).__name__} {x!r}",
                      loc=current_user_loc())


def scalar_binop(op, a, b):
    """Records `a <op> b` on scalars (at least one traced) and returns the result Scalar."""
    da, db = _scalar_dtype(a), _scalar_dtype(b)
    if op in ("and", "or", "xor"):
        rtype = dtypes.bool_ if da == db == dtypes.bool_ else dtypes.int32
    elif op in _COMPARISONS:
        rtype = dtypes.bool_
    else:
        rtype = dtypes.int32
    a = int(a) if isinstance(a, (np.integer, np.bool_)) else a
    b = int(b) if isinstance(b, (np.integer, np.bool_)) else b
    return emit("binop", dict(a=a, b=b), {"op": op}, (ScalarType(rtype),)).result


class Scalar(Value):
    """A traced int32 or bool scalar, uniform across the executing tilegemm thread."""

    def _bin(op, swap=False):
        def f(self, other):
            if isinstance(other, Array):
                return NotImplemented
            return scalar_binop(op, other, self) if swap else scalar_binop(op, self, other)
        return f

    __add__, __radd__ = _bin("add"), _bin("add", True)
    __sub__, __rsub__ = _bin("sub"), _bin("sub", True)
    __mul__, __rmul__ = _bin("mul"), _bin("mul", True)
    __floordiv__, __rfloordiv__ = _bin("div"), _bin("div", True)
    __mod__, __rmod__ = _bin("rem"), _bin("rem", True)
    __lt__, __le__, __gt__, __ge__ = _bin("lt"), _bin("le"), _bin("gt"), _bin("ge")
    __and__, __rand__ = _bin("and"), _bin("and", True)
    __or__, __ror__ = _bin("or"), _bin("or", True)
    __xor__, __rxor__ = _bin("xor"), _bin("xor", True)
    __eq__, __ne__ = _bin("eq"), _bin("ne")
    del _bin
    __hash__ = Value.__hash__

    def __neg__(self):
        return scalar_binop("sub", 0, self)

    def __invert__(self):
        if self.type.dtype != dtypes.bool_:
            raise KernelError("~ is only defined on bool scalars here", loc=current_user_loc())
        return scalar_binop("xor", self, True)

    def __index__(self):
        raise KernelError(
            "a traced scalar cannot be used where Python needs a concrete int (range(), list index, "
            "shape): use tg.fori_loop for a loop over a traced bound, tg.ds(start, size) for a slice",
            loc=current_user_loc())


def select(cond, on_true, on_false):
    """`on_true if cond else on_false` for scalars, evaluated at run time."""
    if isinstance(on_true, Array) or isinstance(on_false, Array):
        return where(cond, on_true, on_false)
    if not isinstance(cond, Scalar):
        return on_true if cond else on_false
    rtype = _scalar_dtype(on_true)
    return emit("select", dict(cond=cond, on_true=on_true, on_false=on_false), {}, (ScalarType(rtype),)).result


def minimum(a, b):
    """Elementwise minimum of scalars or arrays."""
    if isinstance(a, Array) or isinstance(b, Array):
        return _ewise("min", a, b)
    if not isinstance(a, Scalar) and not isinstance(b, Scalar):
        return min(a, b)
    return scalar_binop("min", a, b)


def maximum(a, b):
    """Elementwise maximum of scalars or arrays (`tg.maximum(x, 0.0)` is ReLU)."""
    if isinstance(a, Array) or isinstance(b, Array):
        return _ewise("max", a, b)
    if not isinstance(a, Scalar) and not isinstance(b, Scalar):
        return max(a, b)
    return scalar_binop("max", a, b)


def cdiv(a, b):
    """Ceiling division `(a + b - 1) // b` for non-negative ints or traced scalars."""
    return (a + b - 1) // b


def logical_and(a, b):
    return a & b


def logical_or(a, b):
    return a | b


# ----------------------------------------------------------------------------- arrays

def _broadcast_shapes(sa, sb, loc):
    n = max(len(sa), len(sb))
    sa, sb = (1,) * (n - len(sa)) + tuple(sa), (1,) * (n - len(sb)) + tuple(sb)
    out = []
    for x, y in zip(sa, sb):
        if x != y and 1 not in (x, y):
            raise KernelError(f"array shapes {sa} and {sb} do not broadcast", loc=loc)
        out.append(max(x, y))
    return tuple(out)


def _ewise(op, a, b):
    loc = current_user_loc()
    sa = a.type.shape if isinstance(a, Array) else ()
    sb = b.type.shape if isinstance(b, Array) else ()
    shape = _broadcast_shapes(sa, sb, loc)
    dts = [x.type.dtype for x in (a, b) if isinstance(x, Array)]
    if len(dts) == 2 and dts[0] != dts[1]:
        raise KernelError(f"elementwise {op} of {dtypes.name(dts[0])} and {dtypes.name(dts[1])} arrays: "
                          "convert one with .astype() first", loc=loc)
    dtype = dtypes.bool_ if op in _COMPARISONS else dts[0]
    if op == "pow" and dtype != dtypes.float32:
        raise KernelError(f"** computes on float32 arrays; this array is {dtypes.name(dtype)}: convert it with "
                          ".astype(tg.float32) first", loc=loc)
    for x in (a, b):
        if isinstance(x, Scalar) and x.type.dtype == dtypes.bool_ and op not in ("and", "or"):
            raise KernelError("a bool scalar cannot be combined with an array here", loc=loc)
    a = float(a) if isinstance(a, (int, float, np.number)) and not isinstance(a, bool) else a
    b = float(b) if isinstance(b, (int, float, np.number)) and not isinstance(b, bool) else b
    return emit("ewise", dict(a=a, b=b), {"op": op}, (ArrayType(shape, dtype),), loc=loc).result


def where(cond, on_true, on_false):
    """Elementwise select of arrays: `on_true` where `cond` holds, else `on_false`."""
    loc = current_user_loc()
    if not isinstance(on_true, Array) and not isinstance(on_false, Array):
        raise KernelError("tg.where selects between register arrays; for scalars use tg.select(cond, a, b)",
                          loc=loc)
    shapes = [x.type.shape for x in (cond, on_true, on_false) if isinstance(x, Array)]
    shape = ()
    for s in shapes:
        shape = _broadcast_shapes(shape, s, loc)
    dt = next(x.type.dtype for x in (on_true, on_false) if isinstance(x, Array))
    return emit("where", dict(cond=cond, on_true=on_true, on_false=on_false), {}, (ArrayType(shape, dt),), loc=loc).result


class _Shaped(Value):
    """Values with an array shape and element type (register arrays and refs)."""

    @property
    def shape(self):
        return self.type.shape

    @property
    def dtype(self):
        return self.type.dtype

    @property
    def ndim(self):
        return len(self.type.shape)


class Array(_Shaped):
    """A register array held by one warpgroup: the result of a load, a dot or arithmetic."""

    def astype(self, dtype):
        """Converts every element to `dtype` (round-to-nearest-even for float narrowing)."""
        dtype = dtypes.as_dtype(dtype)
        return emit("astype", dict(x=self), {"dtype": dtype}, (ArrayType(self.shape, dtype),)).result

    def _bin(op, swap=False):
        def f(self, other):
            return _ewise(op, other, self) if swap else _ewise(op, self, other)
        return f

    __add__, __radd__ = _bin("add"), _bin("add", True)
    __sub__, __rsub__ = _bin("sub"), _bin("sub", True)
    __mul__, __rmul__ = _bin("mul"), _bin("mul", True)
    __truediv__, __rtruediv__ = _bin("div"), _bin("div", True)
    __pow__, __rpow__ = _bin("pow"), _bin("pow", True)
    __lt__, __le__, __gt__, __ge__ = _bin("lt"), _bin("le"), _bin("gt"), _bin("ge")
    __eq__, __ne__ = _bin("eq"), _bin("ne")
    del _bin
    __hash__ = Value.__hash__

    def __neg__(self):
        return _ewise("sub", 0.0, self)

    def __abs__(self):
        from .elementwise import unary
        return unary("abs", self)

    @property
    def T(self):
        """The array with its dimensions reversed (`x.transpose()`)."""
        from .elementwise import transpose
        return transpose(self, None)

    def transpose(self, *axes):
        """The array with its dimensions permuted as numpy's `transpose(axes)` does."""
        from .elementwise import transpose
        return transpose(self, axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes)

    def reshape(self, *shape):
        """The same elements (row-major order) in a new shape, as numpy's `reshape`."""
        from .elementwise import reshape
        return reshape(self, shape)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        """The sum along `axis` (an int, a tuple, or None: every axis), as numpy's; `np.sum(x, axis)` calls it."""
        from .elementwise import reduce
        return reduce("sum", self, axis, keepdims, {"dtype": dtype, "out": out})

    def max(self, axis=None, out=None, keepdims=False):
        """The maximum along `axis` (e.g. a row maximum: `x.max(axis=1, keepdims=True)`); `np.max(x, axis)` calls it."""
        from .elementwise import reduce
        return reduce("max", self, axis, keepdims, {"out": out})

    def min(self, axis=None, out=None, keepdims=False):
        """The minimum along `axis`; `np.min(x, axis)` calls it."""
        from .elementwise import reduce
        return reduce("min", self, axis, keepdims, {"out": out})

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """numpy ufuncs on a register array record the tilegemm op they stand for (`np.exp(x)` is `tg.exp(x)`)."""
        from .elementwise import apply_ufunc
        return apply_ufunc(ufunc, method, inputs, kwargs)

    def __getitem__(self, idx):
        """Static slicing of a register array (e.g. an epilogue sub-tile of the accumulator); `None` inserts a
        dimension of size 1 (`bias[None, :]`, a row to broadcast over an accumulator)."""
        loc = current_user_loc()
        idx = idx if isinstance(idx, tuple) else (idx,)
        new_axes = _new_axes(idx, self.ndim)
        idx = tuple(i for i in idx if i is not None)
        sliced = self
        if not all(i is Ellipsis or _whole(i) for i in idx):
            starts, sizes = _static_slices(self.shape, idx, loc)
            sliced = emit("array_slice", dict(x=self), {"starts": starts, "sizes": sizes},
                          (ArrayType(sizes, self.dtype),), loc=loc).result
        if not new_axes:
            return sliced
        from .elementwise import expand_dims
        return expand_dims(sliced, new_axes, loc)


def _new_axes(idx, ndim):
    """The result positions of the `None` entries of index tuple `idx` into an array of `ndim` dimensions."""
    if any(i is Ellipsis for i in idx):
        k = next(k for k, i in enumerate(idx) if i is Ellipsis)
        covered = ndim - sum(1 for i in idx if i is not None and i is not Ellipsis)
        idx = idx[:k] + (slice(None),) * max(covered, 0) + idx[k + 1:]
    return tuple(k for k, i in enumerate(idx) if i is None)


def _whole(i):
    """True for the slice `:`."""
    return isinstance(i, slice) and i.start is None and i.stop is None and i.step is None


def _static_slices(shape, idx, loc):
    if not isinstance(idx, tuple):
        idx = (idx,)
    if any(i is Ellipsis for i in idx):
        k = idx.index(Ellipsis)
        idx = idx[:k] + (slice(None),) * (len(shape) - len(idx) + 1) + idx[k + 1:]
    idx = idx + (slice(None),) * (len(shape) - len(idx))
    starts, sizes = [], []
    for d, i in zip(shape, idx):
        if isinstance(i, slice) and all(isinstance(x, (int, type(None))) for x in (i.start, i.stop, i.step)):
            s, e, st = i.indices(d)
            if st != 1:
                raise KernelError("register array slices must have step 1", loc=loc)
            if e <= s:
                raise KernelError(f"the slice {i.start}:{i.stop} of a dimension of size {d} is empty", loc=loc)
            starts.append(s)
            sizes.append(e - s)
        elif isinstance(i, Ds) and isinstance(i.start, int):
            if not 0 <= i.start <= d - i.size:
                raise KernelError(f"{i!r} is out of bounds for a dimension of size {d}", loc=loc)
            starts.append(i.start)
            sizes.append(i.size)
        else:
            raise KernelError(f"register arrays take only static slices; got {i!r}", loc=loc)
    return tuple(starts), tuple(sizes)


def zeros(shape, dtype):
    """A register array of zeros (e.g. a fresh accumulator)."""
    return full(shape, 0.0, dtype)


def full(shape, value, dtype):
    """A register array with every element equal to the static `value`."""
    return emit("full", (), {"shape": tuple(shape), "value": float(value), "dtype": dtypes.as_dtype(dtype)},
                (ArrayType(tuple(shape), dtypes.as_dtype(dtype)),)).result


# ----------------------------------------------------------------------------- refs

class Ds:
    """A dynamic slice `start:start+size`; `start` may be traced, `size` is static."""

    def __init__(self, start, size):
        if not isinstance(size, (int, np.integer)) or size <= 0:
            raise KernelError(f"tg.ds size must be a positive static int, got {size!r}", loc=current_user_loc())
        self.start = start
        self.size = int(size)

    def __repr__(self):
        return f"ds({self.start!r}, {self.size})"


def ds(start, size):
    """Dynamic slice of `size` elements starting at `start` (Pallas `pl.ds`)."""
    return Ds(start, size)


class _At:
    def __init__(self, ref):
        self._ref = ref

    def __getitem__(self, idx):
        return self._ref._view(idx, current_user_loc())


class Ref(_Shaped):
    """A reference to GMEM, SMEM, TMEM, a register accumulator or barriers.

    `ref.at[idx]` is a view (no data moves); `ref[idx]` reads a register array;
    `ref[idx] = array` writes one. Indices are ints/traced scalars (dropping the
    dimension), static slices, or `tg.ds(start, size)`. One element of an int32
    GMEM or SMEM ref reads as a traced Scalar (`expert = ids[t]`, Pallas's scalar
    refs), read when the op runs and usable as an index, condition or loop bound.
    """

    @property
    def space(self):
        return self.type.space

    @property
    def at(self):
        return _At(self)

    def _view(self, idx, loc):
        if not isinstance(idx, tuple):
            idx = (idx,)
        shape = self.shape
        if any(i is Ellipsis for i in idx):
            k = idx.index(Ellipsis)
            idx = idx[:k] + (slice(None),) * (len(shape) - len(idx) + 1) + idx[k + 1:]
        if len(idx) > len(shape):
            raise KernelError(f"too many indices ({len(idx)}) for a ref of shape {shape}", loc=loc)
        idx = idx + (slice(None),) * (len(shape) - len(idx))
        starts, sizes = [], []
        for d, (dim, i) in enumerate(zip(shape, idx)):
            if isinstance(i, slice):
                if not all(isinstance(x, (int, np.integer, type(None))) for x in (i.start, i.stop, i.step)):
                    raise KernelError("slices of refs must be static; use tg.ds(start, size) for a traced start",
                                      loc=loc)
                s, e, st = i.indices(dim)
                if st != 1:
                    raise KernelError("ref slices must have step 1", loc=loc)
                if e <= s:
                    raise KernelError(f"the slice {i.start}:{i.stop} of dimension {d} (size {dim}) is empty", loc=loc)
                starts.append(s)
                sizes.append(e - s)
            elif isinstance(i, Ds):
                past_edge_ok = self.space == MemorySpace.GMEM  # GMEM views may leave the array (TMA semantics)
                if isinstance(i.start, (int, np.integer)) and (i.start < 0 or
                                                               not past_edge_ok and i.start > dim - i.size):
                    raise KernelError(f"tg.ds({i.start}, {i.size}) is out of bounds for dimension {d} of size {dim}",
                                      loc=loc)
                if i.size > dim and not past_edge_ok:
                    raise KernelError(f"tg.ds(..., {i.size}) is larger than dimension {d} of size {dim}", loc=loc)
                starts.append(i.start if isinstance(i.start, Scalar) else int(i.start))
                sizes.append(i.size)
            elif isinstance(i, (Scalar, int, np.integer)):
                if isinstance(i, (int, np.integer)) and not 0 <= i < dim:
                    self._index_error(int(i), d, dim, loc)
                starts.append(i if isinstance(i, Scalar) else int(i))
                sizes.append(None)
            else:
                raise KernelError(f"cannot index a ref with {i!r}", loc=loc)
        if all(isinstance(s, int) and s == 0 for s in starts) and tuple(sizes) == tuple(shape):
            return self
        new_shape = tuple(s for s in sizes if s is not None)
        t = self.type
        rtype = RefType(new_shape, t.dtype, t.space, t.transforms, t.collective, t.barrier,
                        _kept_permutation(t.permutation, sizes))
        return emit("view", dict(ref=self, starts=starts), {"sizes": tuple(sizes)}, (rtype,), loc=loc).result

    def _index_error(self, i, d, dim, loc):
        if self.space != MemorySpace.BARRIER:
            raise KernelError(f"index {i} is out of bounds for dimension {d} of size {dim}", loc=loc)
        alloc = alloc_of(self)
        fix = f"; declare num_barriers={i + 1} or use a smaller index" if i > 0 else ""
        raise KernelError(f"barrier index {i} is out of range: this barrier array has num_barriers={dim} "
                          f"(indices 0..{dim - 1}){fix}", loc=loc,
                          related=[("the barriers are declared at", alloc.loc)] if alloc is not None else ())

    def __getitem__(self, idx):
        loc = current_user_loc()
        ref = self._view(idx, loc)
        if ref.space == MemorySpace.BARRIER:
            raise KernelError("barriers cannot be read; use tg.barrier_wait", loc=loc)
        if reads_scalar(ref):
            return emit("load_scalar", dict(ref=ref), {}, (ScalarType(ref.dtype),), loc=loc).result
        return emit("load", dict(ref=ref), {}, (ArrayType(ref.shape, ref.dtype),), loc=loc).result

    def __setitem__(self, idx, value):
        loc = current_user_loc()
        ref = self._view(idx, loc)
        if isinstance(value, (int, float)):
            value = full(ref.shape, value, ref.dtype)
        if not isinstance(value, Array):
            raise KernelError(f"only register arrays can be stored into a ref, got {type(value).__name__}", loc=loc)
        if tuple(value.shape) != tuple(ref.shape):
            raise KernelError(f"storing an array of shape {value.shape} into a ref view of shape {ref.shape}",
                              loc=loc)
        if value.dtype != ref.dtype:
            raise KernelError(f"storing a {dtypes.name(value.dtype)} array into a {dtypes.name(ref.dtype)} ref: "
                              f"convert it with .astype(tg.{np.dtype(ref.dtype).name}) first", loc=loc)
        emit("store", dict(ref=ref, value=value), {}, (), loc=loc)

    def __iter__(self):
        raise KernelError("refs are not iterable; index them with .at[...]", loc=current_user_loc())

    @property
    def T(self):
        """`tg.transpose_ref(ref, (1, 0))` of a 2-D SMEM ref."""
        if self.ndim != 2:
            raise KernelError(f"ref.T transposes 2-D refs; this {self.type} has {self.ndim} dimensions: use "
                              f"tg.transpose_ref(ref, permutation)", loc=current_user_loc())
        return transpose_ref(self, (1, 0))


_CANNOT_TRANSPOSE = {
    MemorySpace.GMEM: "TMA copies GMEM tiles as they are stored (row-major): copy the tile as stored (e.g. "
                      "w.at[cols, ks] into an SMEM buffer of shape (tile_n, tile_k)) and transpose the SMEM "
                      "buffer for the MMA: tg.transpose_ref(w_smem, (1, 0))",
    MemorySpace.TMEM: "tensor memory is read in its (lanes, columns) layout; transpose the SMEM operand instead",
}


def transpose_ref(ref, permutation):
    """A view of an SMEM ref with its dimensions permuted (Pallas `plgpu.transpose_ref`); no data moves.

    Dimension i of the result is dimension `permutation[i]` of `ref` (numpy.transpose's
    axes). The buffer keeps its stored layout, which its transforms describe: a TMA
    copy fills the stored (untransposed) buffer and the MMA reads the transposed view,
    e.g. `tg.wgmma(acc, a_smem, tg.transpose_ref(w_smem, (1, 0)))` for a weight tile
    stored (tile_n, tile_k) with K contiguous (a K-major B). Views of the result
    (`.at[...]`) index its permuted dimensions.
    """
    loc = current_user_loc()
    if not isinstance(ref, Ref):
        raise KernelError(f"tg.transpose_ref takes an SMEM ref, got {type(ref).__name__}", loc=loc)
    if ref.space != MemorySpace.SMEM:
        why = _CANNOT_TRANSPOSE.get(ref.space, "only shared-memory views can be transposed")
        raise KernelError(f"tg.transpose_ref takes SMEM refs, got a {ref.space.upper()} ref ({ref.type}); {why}",
                          loc=loc)
    perm = tuple(permutation) if isinstance(permutation, (tuple, list)) else ()
    perm = tuple(int(p) for p in perm) if all(isinstance(p, (int, np.integer)) for p in perm) else ()
    if sorted(perm) != list(range(ref.ndim)):
        example = tuple(range(ref.ndim))[:-2] + (ref.ndim - 1, ref.ndim - 2) if ref.ndim >= 2 else (0,)
        raise KernelError(f"tg.transpose_ref permutation {permutation!r} is not a permutation of the {ref.ndim} "
                          f"dimensions of {ref.type}; e.g. {example} swaps the last two", loc=loc)
    if perm == tuple(range(ref.ndim)):
        return ref
    t = ref.type
    stored = t.permutation or tuple(range(ref.ndim))
    composed = tuple(stored[p] for p in perm)
    rtype = RefType(tuple(t.shape[p] for p in perm), t.dtype, t.space, t.transforms, t.collective, t.barrier,
                    None if composed == tuple(range(ref.ndim)) else composed)
    return emit("transpose_ref", dict(ref=ref), {"permutation": perm}, (rtype,), loc=loc).result


SCALAR_DTYPES = (dtypes.int32, dtypes.bool_)   # the verifier refuses bool reads with a fix (lang/rules/scalars.py)


def reads_scalar(ref):
    """Whether reading `ref` (`idx[i]`) gives a traced Scalar rather than a register array: one int32 element of
    GMEM or SMEM (Pallas's scalar refs), usable as an index, a condition or a loop bound."""
    return (ref.shape == () and ref.dtype in SCALAR_DTYPES
            and ref.space in (MemorySpace.GMEM, MemorySpace.SMEM))


def _kept_permutation(permutation, sizes):
    """The permutation of a view that keeps the dimensions whose size is not None (None: stored order)."""
    if permutation is None:
        return None
    kept = [p for p, size in zip(permutation, sizes) if size is not None]
    ranks = sorted(kept)
    renumbered = tuple(ranks.index(p) for p in kept)
    return None if renumbered == tuple(range(len(renumbered))) else renumbered


VALUE_CLASSES.update({ScalarType: Scalar, ArrayType: Array, RefType: Ref})
