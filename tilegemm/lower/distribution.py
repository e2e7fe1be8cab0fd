"""Which CUDA thread holds which element of each register array.

A tilegemm register array belongs to one warpgroup (128 CUDA threads). The
lowering gives every array a distribution, decided by where its values come from:

* `Wgmma(shape)`: the accumulator layout of a WGMMA (`acc[...]` and what is
  computed from it); rows in blocks of 64, columns in groups of 8.
* `Simt(shape)`: a (rows x cols) grid of threads, each holding a strided
  sub-tile; results of the CUDA-core `tg.dot`, and arrays loaded from GMEM or
  SMEM (or filled) that are computed with only among themselves.
* `Copy(shape)`: an array loaded only to be stored into SMEM (`smem[...] = ref[...]`),
  lowered as a copy (cp.async from GMEM) rather than through registers.
* `Uniform()`: a 0-d array (`x[0]`, one element of a ref): every thread holds the
  value, a scalar combined with arrays of any distribution.
* `TmemLoad(shape)`: read from Blackwell tensor memory by tcgen05.ld (32x32b):
  thread t of the warpgroup holds row t (TMEM lane t), all columns.
* `Broadcast(shape, target, dims)`: a smaller array combined with a larger one by numpy
  broadcasting (a bias row vector added to an accumulator): each thread holds the
  elements the larger array's distribution `target` gives it, repeated along the
  broadcast dimensions. Dimension i of the array runs along the target's dimension
  `dims[i]` (numpy's trailing alignment, or where `x[None, :]`, `x[:, None]`, `.T`,
  `.reshape` or a row reduction put it).

Arrays that must agree (operands and result of elementwise ops, loop carries)
share one distribution; a conflict is a CompileError. Loads of GMEM/SMEM views
take the distribution of what they are computed with; loads only stored into
SMEM are copies.
"""
from dataclasses import dataclass, field, replace

from ..lang.analysis import root_ref
from ..lang.tensorcore import WGMMA, instruction_of
from ..lang.types import ArrayType, MemorySpace
from .plan import unsupported
from ..lang.arch import WARPGROUP_THREADS as WARPGROUP


@dataclass(frozen=True)
class Wgmma:
    shape: tuple


@dataclass(frozen=True)
class Simt:
    """Threads form a (rows x cols) grid over the array; thread (r, c) holds elements
    (r + i*rows, c + j*cols) for i < values[0], j < values[1]. Arrays with fewer rows
    than the grid leave the extra thread rows idle (their elements are never stored).
    A 1-d array is one row."""
    shape: tuple

    @property
    def grid(self):
        """The array's (rows, columns)."""
        return self.shape if len(self.shape) == 2 else (1,) + tuple(self.shape)

    @property
    def threads(self):
        m, n = self.grid
        cols = 1
        while cols < 16 and n % (cols * 2) == 0 and WARPGROUP % (cols * 2) == 0:
            cols *= 2
        return WARPGROUP // cols, cols

    @property
    def values(self):
        (m, n), (tr, tc) = self.grid, self.threads
        return max(1, m // tr), n // tc


@dataclass(frozen=True)
class Copy:
    shape: tuple


@dataclass(frozen=True)
class TmemLoad:
    shape: tuple


@dataclass(frozen=True)
class Uniform:
    """A 0-d array: its one value, held by every thread."""
    shape: tuple = ()


@dataclass(frozen=True)
class Broadcast:
    """An array of `shape` read in the distribution `target` of the array it is broadcast into; its dimension i
    runs along the target's dimension `dims[i]`."""
    shape: tuple
    target: object
    dims: tuple

    @classmethod
    def trailing(cls, shape, target):
        """`shape` broadcast over `target` by numpy's rule: its dimensions align with the target's last ones."""
        offset = len(target.shape) - len(shape)
        return cls(tuple(shape), target, tuple(range(offset, offset + len(shape))))


def _arrays(values):
    return [v for v in values if hasattr(v, "type") and isinstance(v.type, ArrayType)]


class _Classes:
    """Union-find over array values (keyed by id)."""

    def __init__(self):
        self.parent = {}

    def find(self, v):
        k = id(v)
        self.parent.setdefault(k, k)
        while self.parent[k] != k:
            self.parent[k] = self.parent[self.parent[k]]
            k = self.parent[k]
        return k

    def union(self, a, b):
        self.parent[self.find(a)] = self.find(b)


@dataclass
class _Constraints:
    """What the graph's ops say about distributions, gathered in one walk."""
    classes: _Classes = field(default_factory=_Classes)
    anchors: list = field(default_factory=list)     # (value, distribution, op): fixed by where the value comes from
    derived: list = field(default_factory=list)     # (source, value, op): value's distribution follows source's
    uses: dict = field(default_factory=dict)        # id(array value) -> the ops using it


def array_distributions(graph):
    """Maps id(array value) to its distribution (Wgmma, Simt, Copy, TmemLoad, Uniform or Broadcast) for every
    array."""
    c = _Constraints()
    arrays = {}
    for op in graph.walk():
        for r in _arrays(op.results) + _arrays([a for reg in op.regions for a in reg.args]):
            arrays[id(r)] = r
            c.classes.find(r)
        for a in _arrays(op.operands):
            c.uses.setdefault(id(a), []).append(op)
        _link(op, c)
    classes, dist_of_class, anchor_op = c.classes, {}, {}

    def assign(value, dist, op):
        k = classes.find(value)
        have = dist_of_class.get(k)
        if have is not None and have != dist:
            raise unsupported(op, f"combining a register array laid out as {_describe(have)} (from "
                                  f"{anchor_op[k].loc}) with one laid out as {_describe(dist)}",
                              "keep arrays from WGMMA accumulators, from tg.dot and from loads in separate "
                              "computations")
        dist_of_class[k], anchor_op[k] = dist, anchor_op.get(k, op)

    for value, dist, op in c.anchors:
        assign(value, dist, op)
    members = {}
    for v in arrays.values():
        members.setdefault(classes.find(v), []).append(v)
    mma_buffers = {id(root_ref(op.arg(x))) for op in graph.walk() if instruction_of(op) for x in ("a", "b")}
    copies = {k for k, values in members.items() if all(_only_copied(v, c.uses, mma_buffers) for v in values)}

    def assign_default(k):
        """Arrays no anchor or derivation lays out: a 0-d one is Uniform, a copy a Copy, the rest Simt."""
        v = members[k][0]
        dist = Uniform() if v.type.shape == () else (Copy if k in copies else Simt)(v.type.shape)
        if isinstance(dist, Simt) and len(v.type.shape) not in (1, 2):
            raise unsupported(v.producer, f"a {len(v.type.shape)}-d register array ({v.type}) on the CUDA cores",
                              "compute with 1-d or 2-d arrays (index or slice the other dimensions of the ref)")
        assign(v, dist, v.producer)

    derived = {classes.find(value) for _, value, _ in c.derived}
    for k in members:
        if k not in dist_of_class and k not in derived:
            assign_default(k)
    pending = list(c.derived)
    while pending:
        ready = [d for d in pending if classes.find(d[0]) in dist_of_class]
        for source, value, op in ready:
            assign(value, _derived_distribution(op, value, dist_of_class[classes.find(source)]), op)
        if not ready:
            break
        pending = [d for d in pending if not any(d is r for r in ready)]   # `is`: arrays overload ==
    for source, value, op in pending:
        if op.kind == "reduce":
            raise unsupported(op, f"a reduction of a {source.type} that is not computed from an accumulator",
                              _REDUCTIONS)
        if op.kind in _RELAYOUTS:
            raise unsupported(op, f"{_RELAYOUTS[op.kind]} a {value.type} into a {op.result.type} that is not "
                                  "combined with an accumulator array", _RELAYOUT_SUPPORTED)
        raise unsupported(op, f"broadcasting a {value.type} over a {op.result.type} that is itself only laid "
                              "out by a broadcast", _BROADCAST_TARGETS)
    out = {}
    for k, v in arrays.items():
        if classes.find(v) not in dist_of_class:
            assign_default(classes.find(v))
        dist = dist_of_class[classes.find(v)]
        out[k] = dist if dist.shape == v.type.shape else replace(dist, shape=v.type.shape)
    return out


_BROADCAST_TARGETS = ("broadcast loaded views over arrays computed from a WGMMA accumulator (acc[...]), a TMEM load, "
                      "a tg.dot or other loaded views")
_RELAYOUTS = {"transpose": "transposing", "reshape": "reshaping"}
_RELAYOUT_SUPPORTED = ("transpose and reshape vectors broadcast over an accumulator array (e.g. "
                       "acc[...] + v.reshape(1, -1)); an array of the accumulator's shape keeps its layout")
_REDUCTIONS = ("reduce arrays computed from a WGMMA accumulator (acc[...]) or a TMEM load along their last axis "
               "(a row reduction: x.max(axis=1, keepdims=True))")


def _derived_distribution(op, value, source):
    """The distribution of `value` (a slice of `source`'s array, or an operand broadcast over it) given `source`'s."""
    if op.kind == "array_slice":
        if not isinstance(source, Wgmma):
            raise unsupported(op, f"slicing a register array laid out as {_describe(source)}",
                              "slice arrays loaded from a WGMMA accumulator (acc[...])")
        _check_wgmma_slice(op)
        return Wgmma(tuple(op.attrs["sizes"]))
    if op.kind == "reduce":        # `value` is the result; `source` the distribution of the reduced operand
        operand = op.arg("x")
        if not isinstance(source, (Wgmma, TmemLoad)) or op.attrs["axes"] != (1,) or len(operand.type.shape) != 2:
            raise unsupported(op, f"a reduction along axes {op.attrs['axes']} of a {operand.type} laid out as "
                                  f"{_describe(source)}", _REDUCTIONS)
        kept = (0, 1) if op.attrs["keepdims"] else (0,)
        return Broadcast(tuple(value.type.shape), source, kept)
    if op.kind in _RELAYOUTS:      # `value` is the operand; `source` the distribution of the result
        return _relaid(op, value, source)
    if op.kind == "expand_dims":   # `value` is the operand; `source` the distribution of the expanded result
        if not isinstance(source, (Broadcast, Wgmma, TmemLoad)):
            raise unsupported(op, f"broadcasting a {value.type} over {_describe(source)}", _EXPANDED)
        expanded = source if isinstance(source, Broadcast) else Broadcast.trailing(source.shape, source)
        kept = tuple(d for i, d in enumerate(expanded.dims) if i not in op.attrs["axes"])
        return Broadcast(tuple(value.type.shape), expanded.target, kept)
    if not isinstance(source, (Wgmma, TmemLoad, Simt)):
        raise unsupported(op, f"broadcasting a {value.type} over {_describe(source)}", _BROADCAST_TARGETS)
    return Broadcast.trailing(tuple(value.type.shape), source)


_EXPANDED = ("broadcast vectors indexed with None (x[None, :]) over arrays computed from a WGMMA accumulator "
             "(acc[...]) or a TMEM load")


def _relaid(op, value, source):
    """The Broadcast distribution of the operand `value` of a transpose or reshape whose result is `source`: the
    same elements, each dimension along the target dimension its image runs along."""
    if not isinstance(source, Broadcast):
        raise unsupported(op, f"{_RELAYOUTS[op.kind]} a {value.type} of an accumulator array's shape",
                          _RELAYOUT_SUPPORTED)
    shape, result_shape = tuple(value.type.shape), tuple(op.result.type.shape)
    if op.kind == "transpose":
        axes = op.attrs["axes"]
        return Broadcast(shape, source.target, tuple(source.dims[axes.index(i)] for i in range(len(shape))))
    sized = [d for d, n in enumerate(result_shape) if n != 1]
    if [n for n in shape if n != 1] != [result_shape[d] for d in sized]:
        raise unsupported(op, f"reshaping a {value.type} into a {op.result.type}",
                          "reshape vectors only by adding or removing dimensions of size 1")
    images = iter(sized)
    return Broadcast(shape, source.target, tuple(source.dims[next(images)] if n != 1 else source.dims[0]
                                                 for n in shape))


def _only_copied(value, uses, mma_buffers):
    """Whether `value` is loaded from GMEM only to be stored into plain SMEM buffers (unswizzled, not read by an
    MMA): a copy (cp.async), not register math."""
    op = value.producer
    return (op is not None and op.kind == "load" and op.arg("ref").space == MemorySpace.GMEM
            and bool(uses.get(id(value))) and all(_plain_smem_store(u, mma_buffers) for u in uses[id(value)]))


def _plain_smem_store(op, mma_buffers):
    if op.kind != "store" or op.arg("ref").space != MemorySpace.SMEM:
        return False
    buffer = root_ref(op.arg("ref"))
    return not buffer.type.transforms and id(buffer) not in mma_buffers


def _link(op, c):
    k = op.kind
    arrays = _arrays(op.operands)
    if k in ("astype", "ewise", "where", "unary", "broadcast_to"):
        for a in arrays:
            if tuple(a.type.shape) == tuple(op.result.type.shape):
                c.classes.union(a, op.result)
            elif a.type.shape != ():   # a 0-d array is Uniform, whatever it is combined with
                c.derived.append((op.result, a, op))
    elif k == "load":
        ref = op.arg("ref")
        if ref.space == MemorySpace.ACC:
            c.anchors.append((op.result, Wgmma(tuple(ref.shape)), op))
        elif ref.space == MemorySpace.TMEM:
            c.anchors.append((op.result, TmemLoad(tuple(ref.shape)), op))
        elif ref.space not in (MemorySpace.SMEM, MemorySpace.GMEM):
            raise unsupported(op, f"loading a {ref.space.upper()} ref into registers",
                              "load accumulators (acc[...]) and GMEM, SMEM or TMEM views")
    elif k == "store":
        ref, value = op.arg("ref"), op.arg("value")
        if ref.space == MemorySpace.ACC:
            c.anchors.append((value, Wgmma(tuple(ref.shape)), op))
    elif k == "async_load_tmem":
        c.anchors.append((op.result, TmemLoad(tuple(op.result.type.shape)), op))
    elif k == "dot":
        c.anchors.append((op.result, Simt(tuple(op.result.type.shape)), op))
        if op.arg("acc") is not None:
            c.classes.union(op.arg("acc"), op.result)
    elif k == "array_slice":
        c.derived.append((op.arg("x"), op.result, op))
    elif k in ("expand_dims", "transpose", "reshape"):
        c.derived.append((op.result, op.arg("x"), op))
    elif k == "reduce":
        c.derived.append((op.arg("x"), op.result, op))
    elif k == "fori_loop":
        body = op.regions[0]
        yields = body.ops[-1].arg("values")
        for init, arg, out, result in zip(op.arg("carries"), body.args[1:], yields, op.results):
            if isinstance(arg.type, ArrayType):
                for v in (init, out, result):
                    c.classes.union(arg, v)


def _check_wgmma_slice(op):
    """A slice of a WGMMA accumulator array is a sub-fragment: whole instruction row blocks and N steps."""
    starts, sizes = op.attrs["starts"], op.attrs["sizes"]
    rows, cols = WGMMA.m, WGMMA.n_step()
    if len(sizes) != 2 or starts[0] % rows or sizes[0] % rows or starts[1] % cols or sizes[1] % cols:
        raise unsupported(op, f"the accumulator slice [{starts[0]}:{starts[0] + sizes[0]}, "
                              f"{starts[1]}:{starts[1] + sizes[1]}]",
                          f"slice accumulator arrays in whole blocks of {rows} rows and groups of {cols} columns")


def _describe(dist):
    if isinstance(dist, Broadcast):
        return f"a vector broadcast over {_describe(dist.target)}"
    return {Wgmma: "a WGMMA accumulator", Simt: "a CUDA-core array (a tg.dot result or a loaded view)",
            Copy: "a copy", TmemLoad: "a TMEM load", Uniform: "a 0-d array"}[type(dist)]
