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

Arrays that must agree (operands and result of elementwise ops, loop carries)
share one distribution; a conflict is a CompileError.
"""
from dataclasses import dataclass

from ..lang.types import ArrayType, MemorySpace
from .plan import unsupported

WARPGROUP = 128


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


def array_distributions(graph):
    """Maps id(array value) to its distribution (Wgmma, Simt or Copy) for every array in `graph`."""
    classes = _Classes()
    anchors = []        # (value, distribution, op)
    slices = []         # array_slice ops
    arrays = {}
    for op in graph.walk():
        for r in _arrays(op.results) + _arrays([a for reg in op.regions for a in reg.args]):
            arrays[id(r)] = r
            classes.find(r)
        _link(op, classes, anchors, slices)
    dist_of_class, anchor_op = {}, {}

    def assign(value, dist, op):
        c = classes.find(value)
        have = dist_of_class.get(c)
        if have is not None and have != dist:
            raise unsupported(op, f"combining a register array laid out as {_describe(have)} (from "
                                  f"{anchor_op[c].loc}) with one laid out as {_describe(dist)}",
                              "keep arrays from WGMMA accumulators, from tg.dot and from loads in separate "
                              "computations")
        dist_of_class[c], anchor_op[c] = dist, anchor_op.get(c, op)

    for value, dist, op in anchors:
        assign(value, dist, op)
    pending = list(slices)
    while pending:
        progress = False
        for op in list(pending):
            src = dist_of_class.get(classes.find(op.operands[0]))
            if src is None:
                continue
            if not isinstance(src, Wgmma):
                raise unsupported(op, f"slicing a register array laid out as {_describe(src)}",
                                  "slice arrays loaded from a WGMMA accumulator (acc[...])")
            _check_wgmma_slice(op)
            assign(op.result, Wgmma(tuple(op.attrs["sizes"])), op)
            pending.remove(op)
            progress = True
        if not progress:
            break
    out = {}
    for k, v in arrays.items():
        dist = dist_of_class.get(classes.find(v))
        if dist is None:
            dist = Simt(v.type.shape)
            assign(v, dist, v.producer)
        out[k] = dist if dist.shape == v.type.shape else type(dist)(v.type.shape)
    return out


def _link(op, classes, anchors, slices):
    k = op.kind
    arrays = _arrays(op.operands)
    if k in ("astype", "ewise", "where"):
        for a in arrays:
            if tuple(a.type.shape) != tuple(op.result.type.shape):
                raise unsupported(op, f"broadcasting a {a.type} to {op.result.type}",
                                  "combine arrays of equal shapes, or an array with a Python scalar")
            classes.union(a, op.result)
    elif k == "load":
        ref = op.operands[0]
        if ref.space == MemorySpace.ACC:
            anchors.append((op.result, Wgmma(tuple(ref.shape)), op))
        elif ref.space in (MemorySpace.SMEM, MemorySpace.GMEM):
            anchors.append((op.result, Copy(tuple(ref.shape)), op))
        elif ref.space == MemorySpace.TMEM:
            anchors.append((op.result, TmemLoad(tuple(ref.shape)), op))
        else:
            raise unsupported(op, f"loading a {ref.space.upper()} ref into registers",
                              "load WGMMA accumulators (acc[...]) or copy GMEM/SMEM views into SMEM")
    elif k == "store":
        ref, value = op.operands
        if ref.space == MemorySpace.ACC:
            anchors.append((value, Wgmma(tuple(ref.shape)), op))
    elif k == "async_load_tmem":
        anchors.append((op.result, TmemLoad(tuple(op.result.type.shape)), op))
    elif k == "dot":
        anchors.append((op.result, Simt(tuple(op.result.type.shape)), op))
        if len(op.operands) == 3:
            classes.union(op.operands[2], op.result)
    elif k == "array_slice":
        slices.append(op)
    elif k == "fori_loop":
        body = op.regions[0]
        yields = body.ops[-1].operands
        for init, arg, out, result in zip(op.operands[2:], body.args[1:], yields, op.results):
            if isinstance(arg.type, ArrayType):
                for v in (init, out, result):
                    classes.union(arg, v)


def _check_wgmma_slice(op):
    starts, sizes = op.attrs["starts"], op.attrs["sizes"]
    if len(sizes) != 2 or starts[0] % 64 or sizes[0] % 64 or starts[1] % 8 or sizes[1] % 8:
        raise unsupported(op, f"the accumulator slice [{starts[0]}:{starts[0] + sizes[0]}, "
                              f"{starts[1]}:{starts[1] + sizes[1]}]",
                          "slice accumulator arrays in whole blocks of 64 rows and groups of 8 columns")


def _describe(dist):
    return {Wgmma: "a WGMMA accumulator", Simt: "a tg.dot result", Copy: "a copy",
            TmemLoad: "a TMEM load"}[type(dist)]
