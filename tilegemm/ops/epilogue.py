"""Fused epilogues for tg.matmul: `tg.matmul(a, b, epilogue=fn, **tensors)` computes fn(a @ b, **tensors).

`fn(acc, **tiles)` is traced on each tile the flagship kernel stores: `acc` is the
float32 accumulator tile and each tile is the matching piece of one named tensor,
converted to float32. A tensor is, as numpy broadcasting reads it against the [M, N]
result: a per-column vector [N] or [1, N] (a bias), a per-row vector [M, 1] (a row
scale), one value [1, 1] (a tensor's scale) or a whole [M, N] array (a residual). fn returns an array of the tile's shape;
it is converted to the output dtype (`out_dtype=`, by default the inputs' dtype).
"""
from dataclasses import dataclass

from .. import lang as tg
from ..errors import ArgumentError, KernelError
from ..lang import dtypes
from ..lang.ir import SourceLoc, _short_path

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
    ([1, N]), 'per_row' ([M, 1]), 'full' ([M, N]), or None."""
    kinds = {(1, 1): "single", (n,): "column", (1, n): "row1", (m, 1): "per_row", (m, n): "full"}
    return kinds.get(tuple(shape))


def _tile_view(ref, rows, cols, m, n):
    """The view of an epilogue tensor that lines up with the output tile at (rows, cols)."""
    kind = _view_kind(ref.shape, m, n)
    one = tg.ds(0, 1)
    return {"single": lambda: ref.at[one, one], "column": lambda: ref.at[cols], "row1": lambda: ref.at[one, cols],
            "per_row": lambda: ref.at[rows, one], "full": lambda: ref.at[rows, cols]}[kind]()


def read_tiles(spec, refs, rows, cols, m, n):
    """The float32 tiles {name: array} of the epilogue tensors `refs` (GMEM refs, in spec.tensors order) that line
    up with the output tile at (rows, cols): read from GMEM where this is traced, so a kernel can read a slice's
    tiles ahead of the slice it stores."""
    tiles = {}
    for (name, _, _), ref in zip(spec.tensors, refs):
        tile = _tile_view(ref, rows, cols, m, n)[...]
        tiles[name] = tile if tile.dtype == dtypes.float32 else tile.astype(tg.float32)
    return tiles


def apply(spec, acc, tiles):
    """Traces spec.fn on the float32 accumulator tile `acc` with the epilogue tensors' `tiles` (read_tiles);
    returns the tile to store, in the output dtype."""
    result = spec.fn(acc, **tiles)
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

