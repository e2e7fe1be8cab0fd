"""Which CUDA thread holds which element of each register array.

A tilegemm register array belongs to one warpgroup (128 CUDA threads). The
lowering gives every array a distribution, decided by where its values come from:

* `Wgmma(shape)`: the accumulator layout of a WGMMA (`acc[...]` and what is
  computed from it); rows in blocks of 64, columns in groups of 8.
* `Simt(shape)`: a (rows x cols) grid of threads, each holding a strided
  sub-tile; results of the CUDA-core `tg.dot`.
* `Copy(shape)`: an array loaded only to be stored into SMEM (`smem[...] = ref[...]`),
  lowered as a copy (cp.async from GMEM) rather than through registers.
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
take the distribution of what they are computed with, and are copies otherwise.
"""
from dataclasses import dataclass, field, replace

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
    than the grid leave the extra thread rows idle (their elements are never stored)."""
    shape: tuple

    @property
    def threads(self):
        m, n = self.shape
        cols = 1
        while cols < 16 and n % (cols * 2) == 0 and WARPGROUP % (cols * 2) == 0:
            cols *= 2
        return WARPGROUP // cols, cols

    @property
    def values(self):
        (m, n), (tr, tc) = self.shape, self.threads
        return max(1, m // tr), n // tc


@dataclass(frozen=True)
class Copy:
    shape: tuple


@dataclass(frozen=True)
class TmemLoad:
    shape: tuple


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
    loads: list = field(default_factory=list)       # results of GMEM/SMEM loads: copies unless computed with


def array_distributions(graph):
    """Maps id(array value) to its distribution (Wgmma, Simt, Copy, TmemLoad or Broadcast) for every array."""
    c = _Constraints()
    arrays = {}
    for op in graph.walk():
        for r in _arrays(op.results) + _arrays([a for reg in op.regions for a in reg.args]):
            arrays[id(r)] = r
            c.classes.find(r)
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
        if op.kind != "array_slice":
            raise unsupported(op, f"broadcasting a {value.type} over a {op.result.type} that is not computed from "
                                  f"an accumulator", _BROADCAST_TARGETS)
    loaded = {classes.find(v) for v in c.loads}
    out = {}
    for k, v in arrays.items():
        dist = dist_of_class.get(classes.find(v))
        if dist is None:
            dist = (Copy if classes.find(v) in loaded else Simt)(v.type.shape)
            assign(v, dist, v.producer)
        out[k] = dist if dist.shape == v.type.shape else replace(dist, shape=v.type.shape)
    return out


_BROADCAST_TARGETS = "broadcast vectors over arrays computed from a WGMMA accumulator (acc[...]) or a TMEM load"
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
        operand = op.operands[0]
        if not isinstance(source, (Wgmma, TmemLoad)) or op.attrs["axes"] != (1,) or len(operand.type.shape) != 2:
            raise unsupported(op, f"a reduction along axes {op.attrs['axes']} of a {operand.type} laid out as "
                                  f"{_describe(source)}", _REDUCTIONS)
        kept = (0, 1) if op.attrs["keepdims"] else (0,)
        return Broadcast(tuple(value.type.shape), source, kept)
    if op.kind in _RELAYOUTS:      # `value` is the operand; `source` the distribution of the result
        return _relaid(op, value, source)
    if op.kind == "expand_dims":   # `value` is the operand; `source` the distribution of the expanded result
        expanded = source if isinstance(source, Broadcast) else Broadcast.trailing(source.shape, source)
        kept = tuple(d for i, d in enumerate(expanded.dims) if i not in op.attrs["axes"])
        return Broadcast(tuple(value.type.shape), expanded.target, kept)
    if not isinstance(source, (Wgmma, TmemLoad)):
        raise unsupported(op, f"broadcasting a {value.type} over {_describe(source)}", _BROADCAST_TARGETS)
    return Broadcast.trailing(tuple(value.type.shape), source)


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


def _link(op, c):
    k = op.kind
    arrays = _arrays(op.operands)
    if k in ("astype", "ewise", "where", "unary", "broadcast_to"):
        for a in arrays:
            if tuple(a.type.shape) == tuple(op.result.type.shape):
                c.classes.union(a, op.result)
            else:
                c.derived.append((op.result, a, op))
    elif k == "load":
        ref = op.operands[0]
        if ref.space == MemorySpace.ACC:
            c.anchors.append((op.result, Wgmma(tuple(ref.shape)), op))
        elif ref.space in (MemorySpace.SMEM, MemorySpace.GMEM):
            c.loads.append(op.result)
        elif ref.space == MemorySpace.TMEM:
            c.anchors.append((op.result, TmemLoad(tuple(ref.shape)), op))
        else:
            raise unsupported(op, f"loading a {ref.space.upper()} ref into registers",
                              "load WGMMA accumulators (acc[...]) or copy GMEM/SMEM views into SMEM")
    elif k == "store":
        ref, value = op.operands
        if ref.space == MemorySpace.ACC:
            c.anchors.append((value, Wgmma(tuple(ref.shape)), op))
    elif k == "async_load_tmem":
        c.anchors.append((op.result, TmemLoad(tuple(op.result.type.shape)), op))
    elif k == "dot":
        c.anchors.append((op.result, Simt(tuple(op.result.type.shape)), op))
        if len(op.operands) == 3:
            c.classes.union(op.operands[2], op.result)
    elif k == "array_slice":
        c.derived.append((op.operands[0], op.result, op))
    elif k in ("expand_dims", "transpose", "reshape"):
        c.derived.append((op.result, op.operands[0], op))
    elif k == "reduce":
        c.derived.append((op.operands[0], op.result, op))
    elif k == "fori_loop":
        body = op.regions[0]
        yields = body.ops[-1].operands
        for init, arg, out, result in zip(op.operands[2:], body.args[1:], yields, op.results):
            if isinstance(arg.type, ArrayType):
                for v in (init, out, result):
                    c.classes.union(arg, v)


def _check_wgmma_slice(op):
    starts, sizes = op.attrs["starts"], op.attrs["sizes"]
    if len(sizes) != 2 or starts[0] % 64 or sizes[0] % 64 or starts[1] % 8 or sizes[1] % 8:
        raise unsupported(op, f"the accumulator slice [{starts[0]}:{starts[0] + sizes[0]}, "
                              f"{starts[1]}:{starts[1] + sizes[1]}]",
                          "slice accumulator arrays in whole blocks of 64 rows and groups of 8 columns")


def _describe(dist):
    if isinstance(dist, Broadcast):
        return f"a vector broadcast over {_describe(dist.target)}"
    return {Wgmma: "a WGMMA accumulator", Simt: "a tg.dot result", Copy: "a copy",
            TmemLoad: "a TMEM load"}[type(dist)]
