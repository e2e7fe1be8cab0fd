"""Fused epilogues for tg.matmul: `tg.matmul(a, b, epilogue=fn, **tensors)` computes fn(a @ b, **tensors).

`fn(acc, **tiles)` is traced on each tile the flagship kernel stores: `acc` is the
float32 accumulator tile and each tile is the matching piece of one named tensor,
converted to float32. A tensor is, as numpy broadcasting reads it against the [M, N]
result: a per-column vector [N] or [1, N] (a bias), a per-row vector [M, 1] (a row
scale), one value [1, 1] (a tensor's scale) or a whole [M, N] array (a residual). fn returns an array of the tile's shape;
it is converted to the output dtype (`out_dtype=`, by default the inputs' dtype).

Where fn runs depends on the design: on C's tiles as the flagship stores them; in a
split-K design's reduction pass, on the sum of the K slices; in a swap-AB design, on
C^T's tiles with its tensors' tiles transposed, which only an elementwise fn without
[M, N] tensors allows (`transposable`, `apply`; tg.matmul then picks another design).
"""
from dataclasses import dataclass

from .. import lang as tg
from ..errors import ArgumentError, KernelError
from ..lang import dtypes
from ..lang.ir import SourceLoc, _short_path
from ..lang.tracer import current_region

TENSOR_DTYPES = (dtypes.float16, dtypes.bfloat16, dtypes.float32)
OUT_DTYPES = TENSOR_DTYPES


@dataclass(frozen=True)
class Fused:
    """What a fused call adds to the flagship kernel (hashable, so kernels are cached per epilogue): the function,
    its tensors' (name, shape, dtype name) in call order, and the output dtype's name."""
    fn: object
    tensors: tuple
    out_dtype: str

    @property
    def specs(self):
        return tuple(tg.ShapeDtype(shape, dtype) for _, shape, dtype in self.tensors)


def identity(acc):
    """The epilogue of a call that only changes the output dtype."""
    return acc


def fused(epilogue, tensors, m, n, out_dtype, inputs_dtype):
    """The Fused of a call with `epilogue` (None: only `out_dtype` is asked for) and its `tensors` (name ->
    ShapeDtype) on an [m, n] result, or an ArgumentError saying what tg.matmul takes."""
    if epilogue is None:
        epilogue = identity
    if not callable(epilogue):
        raise ArgumentError(f"tg.matmul's epilogue= must be a function fn(acc, **tiles), got "
                            f"{type(epilogue).__name__}")
    out = _out_dtype(out_dtype) if out_dtype is not None else inputs_dtype
    if out not in OUT_DTYPES:
        raise ArgumentError(f"tg.matmul's out_dtype= must be float16, bfloat16 or float32, got {out_dtype!r}")
    described = []
    for name, spec in tensors.items():
        if spec.dtype not in TENSOR_DTYPES:
            raise ArgumentError(f"tg.matmul's epilogue tensor {name} has element type {dtypes.name(spec.dtype)}; "
                                "epilogue tensors are float16, bfloat16 or float32")
        if _view_kind(spec.shape, m, n) is None:
            raise ArgumentError(f"tg.matmul's epilogue tensor {name} has shape {tuple(spec.shape)}; for an "
                                f"[M, N] = [{m}, {n}] result an epilogue tensor is [N] or [1, N] (per column, such "
                                "as a bias), [M, 1] (per row), [1, 1] (one value) or [M, N] (such as a residual)")
        described.append((name, tuple(spec.shape), dtypes.name(spec.dtype)))
    return Fused(epilogue, tuple(described), dtypes.name(out))


def _out_dtype(x):
    """The numpy dtype `x` names: a numpy dtype or type, a name ('float32', 'bf16') or a torch dtype."""
    for candidate in (x, str(x).replace("torch.", "")):
        try:
            return dtypes.as_dtype(candidate)
        except TypeError:
            pass
    return None


def _view_kind(shape, m, n):
    """How a tensor of `shape` broadcasts over an [m, n] result: 'single' ([1, 1]), 'column' ([N]), 'row1'
    ([1, N]), 'per_row' ([M, 1]), 'full' ([M, N]), or None; where an extent of 1 makes one shape read two ways,
    the one broadcasting more (at M = 1, a [1, N] tensor is a row of column values, not a whole [M, N] one)."""
    kinds = {(m, n): "full", (m, 1): "per_row", (1, n): "row1", (n,): "column", (1, 1): "single"}
    return kinds.get(tuple(shape))


# Whether each kind of epilogue tensor (_view_kind) varies along the output tile's (rows, columns).
_VARIES = {"single": (False, False), "column": (False, True), "row1": (False, True), "per_row": (True, False),
           "full": (True, True)}


def varies(shape, m, n):
    """(along rows, along columns): whether an epilogue tensor of `shape` varies along the [m, n] result's rows and
    its columns."""
    return _VARIES[_view_kind(shape, m, n)]


def _tile_view(ref, rows, cols, m, n):
    """The view of an epilogue tensor that lines up with the output tile at (rows, cols)."""
    along_rows, along_cols = varies(ref.shape, m, n)
    one = tg.ds(0, 1)
    index = (rows if along_rows else one, cols if along_cols else one)
    return ref.at[index[-len(ref.shape):]]   # a 1-D per-column vector takes the column index alone


def read_tiles(spec, refs, rows, cols, m, n):
    """The float32 tiles {name: array} of the epilogue tensors `refs` (GMEM refs, in spec.tensors order) that line
    up with the output tile at (rows, cols), read from GMEM where this is traced: once a call (a block storing one
    tile slice); `TileReads` reads each tile once for the slices of a tile that share it."""
    return {name: _read(ref, rows, cols, m, n) for (name, _, _), ref in zip(spec.tensors, refs)}


def _read(ref, rows, cols, m, n):
    """The float32 tile of epilogue tensor `ref` that lines up with the output tile at (rows, cols)."""
    tile = _tile_view(ref, rows, cols, m, n)[...]
    return tile if tile.dtype == dtypes.float32 else tile.astype(tg.float32)


class TileReads:
    """read_tiles for the store slices of one output tile, each tensor tile read once for slices of one shape (the
    register layout of a tile follows the slice it is combined with): a per-column tensor's once per column block,
    a per-row one's once per row block, a single value once. Read per slice, a row-wise scaled fp8 tile of 128x160
    ran 31% more instructions than a per-tensor one and kept the tensor pipe 88% busy against 94%
    (benchmarks/RESULTS.md run 177)."""

    def __init__(self, spec, refs, m, n):
        self.spec, self.refs, self.m, self.n = spec, refs, m, n
        self._read = {}   # (name, slice shape, row block or None, column block or None) -> its tile, as traced

    def tiles(self, rows, cols, row_block, col_block):
        """read_tiles' tiles at (rows, cols), the slice in row block `row_block` and column block `col_block`
        (static indices: slices of one block share the tensors that do not vary along the other)."""
        tiles = {}
        for (name, shape, _), ref in zip(self.spec.tensors, self.refs):
            along_rows, along_cols = varies(shape, self.m, self.n)
            key = (name, rows.size, cols.size, row_block if along_rows else None, col_block if along_cols else None)
            if key not in self._read:
                self._read[key] = _read(ref, rows, cols, self.m, self.n)
            tiles[name] = self._read[key]
        return tiles


def full_tensors(spec, m, n):
    """The names of the epilogue's [M, N] tensors (a residual's): tiles of C's own shape."""
    return [name for name, shape, _ in spec.tensors if _view_kind(shape, m, n) == "full"]


def transposable(spec, m, n):
    """True when the epilogue's tensors can be read as C^T's tiles (`transposed_tiles`): none is [M, N]."""
    return not full_tensors(spec, m, n)


def transposed_tiles(tiles):
    """The tiles of C's tile (read_tiles) as tiles of C^T's, for an epilogue run on C^T's accumulator: a per-row
    [rows, 1] tile becomes [1, rows], a per-column [1, cols] or [cols] one [cols, 1] (2-D, so that it broadcasts
    along C^T's rows and an fn indexing it as 1-D fails to trace rather than broadcasting the wrong way)."""
    return {name: tile.reshape(tile.shape[0], 1) if len(tile.shape) == 1 else tile.T for name, tile in tiles.items()}


# What an epilogue may do to run on C^T's tiles: compute elementwise (fn(X.T, t.T) is fn(X, t).T only then).
ELEMENTWISE_OPS = frozenset({"ewise", "unary", "astype", "where", "full"})


def apply(spec, acc, tiles, transposed=False):
    """Traces spec.fn on the float32 accumulator tile `acc` with the epilogue tensors' `tiles` (read_tiles);
    returns the tile to store, in the output dtype. `transposed`: `acc` is a tile of C^T and `tiles` are
    `transposed_tiles`, which gives C^T's tile of fn(C) only where fn computes elementwise (ELEMENTWISE_OPS);
    any other op fn records is a KernelError naming it."""
    region = current_region()
    recorded = len(region.ops)
    result = spec.fn(acc, **tiles)
    if transposed:
        other = next((op for op in region.ops[recorded:] if op.kind not in ELEMENTWISE_OPS), None)
        if other is not None:
            raise KernelError(f"the epilogue function {getattr(spec.fn, '__name__', spec.fn)!r} records "
                              f"{other.kind!r} (at {other.loc}); a swap-AB design runs an epilogue on C^T's tiles, "
                              "which gives C's only for elementwise math (arithmetic, tg.exp, tg.where, astype, ...): "
                              "build it without swap_ab", loc=_definition(spec.fn))
    if not isinstance(result, tg.Array) or tuple(result.shape) != tuple(acc.shape):
        got = f"an array of shape {tuple(result.shape)}" if isinstance(result, tg.Array) else type(result).__name__
        raise KernelError(f"the epilogue function {getattr(spec.fn, '__name__', spec.fn)!r} must return an array of "
                          f"the accumulator tile's shape {tuple(acc.shape)}, got {got}", loc=_definition(spec.fn))
    out = dtypes.as_dtype(spec.out_dtype)
    return result if result.dtype == out else result.astype(out)


def _definition(fn):
    """Where `fn` is defined, for errors about what it returns."""
    code = getattr(fn, "__code__", None)
    return SourceLoc(_short_path(code.co_filename), code.co_firstlineno, code.co_name) if code is not None else None

