"""tg.matmul's scales (as torch._scaled_mm takes them): per-tensor and row-wise ones run as a fused epilogue
(tilegemm.ops.epilogue): the [1, 1], [M, 1] or [1, N] float32 arrays the kernel reads them as, and the function
multiplying them in; block scales (1x128 for A, 128x128 for B) run in the block-scaled kernel
(tilegemm.ops.blockscaling), which promotes each K block."""
import numpy as np

from ..errors import ArgumentError
from ..lang import dtypes
from ..lang.trace import ShapeDtype
from ..runtime.arrays import shape_and_dtype
from .blockscaling import blocks

_PER_TENSOR = ((), (1,), (1, 1))


def scaled(acc, scale_a, scale_b):
    """The epilogue of a scaled call: the f32 accumulator tile times A's and B's scales (tiles broadcasting)."""
    return acc * scale_a * scale_b


def specs(kinds, m, n):
    """The specs {"scale_a": ..., "scale_b": ...} the kernel takes for scales of `kinds` (each "tensor" or "row")
    on an [m, n] result, as `tensors` stores them: [1, 1], or [m, 1] / [1, n]."""
    rows = {"scale_a": (m, 1), "scale_b": (1, n)}
    return {name: ShapeDtype(rows[name] if kind == "row" else (1, 1), dtypes.float32)
            for name, kind in zip(rows, kinds)}


def checked_shape(scale, name):
    """The shape of scale `name`, or an ArgumentError unless it is float32."""
    shape, dtype = shape_and_dtype(scale, f"tg.matmul's argument {name}")
    if dtype != dtypes.float32:
        raise ArgumentError(f"tg.matmul's {name} is {dtypes.name(dtype) if isinstance(dtype, np.dtype) else dtype}; "
                            "scales are float32")
    return shape


def block_shapes(m, n, k):
    """The shapes of block scales for a [m, k] @ [k, n] product: scale_a [M, ceil(K/128)] (1x128 groups of A's
    rows), scale_b [ceil(K/128), ceil(N/128)] (128x128 blocks of B)."""
    return (m, blocks(k)), (blocks(k), blocks(n))


def block_scaled(scales, m, n, k):
    """True when the scales given are block scales (block_shapes) and not also per-tensor or row-wise ones (as
    they are when K and N are at most 128: then both read the same product and the epilogue runs)."""
    if len(scales) != 2 or any(s is None for s in scales):
        return False
    shapes = tuple(tuple(shape_and_dtype(s, f"tg.matmul's argument {name}")[0])
                   for s, name in zip(scales, ("scale_a", "scale_b")))
    epilogue = shapes[0] in _PER_TENSOR + ((m, 1),) and shapes[1] in _PER_TENSOR + ((1, n),)
    return shapes == block_shapes(m, n, k) and not epilogue


def tensors(scales, m, n, k):
    """The epilogue tensors {"scale_a": ..., "scale_b": ...} of the scales given (both) for an [m, n] result of
    inner extent k, a per-tensor scale as a [1, 1] view of the same memory; or an ArgumentError saying what
    tg.matmul takes."""
    if any(s is None for s in scales):
        raise ArgumentError("tg.matmul takes scale_a= and scale_b= together (pass 1.0 as a float32 array for an "
                            "operand without a scale)")
    blocks_legal = dict(zip(("scale_a", "scale_b"), block_shapes(m, n, k)))
    legal_blocks = (f"block scales: scale_a {blocks_legal['scale_a']} (one per row of a and 128 of K) and scale_b "
                    f"{blocks_legal['scale_b']} (one per 128 x 128 block of b)")
    found = {}
    for name, scale, per_row in (("scale_a", scales[0], (m, 1)), ("scale_b", scales[1], (1, n))):
        shape = checked_shape(scale, name)
        if tuple(shape) in _PER_TENSOR:
            found[name] = scale.reshape(1, 1)
        elif tuple(shape) == per_row:
            found[name] = scale
        elif tuple(shape) != blocks_legal[name]:
            what = "row of a" if name == "scale_a" else "column of b"
            raise ArgumentError(f"tg.matmul's {name} has shape {tuple(shape)}; a scale is one value for the tensor "
                                f"(shape (), (1,) or (1, 1)) or one per {what} {per_row}; or, both together, "
                                f"{legal_blocks}")
    if len(found) < 2:   # one is a block scale, the other a per-tensor or row-wise one
        block = next(name for name in blocks_legal if name not in found)
        raise ArgumentError(f"tg.matmul's {block} is a block scale {blocks_legal[block]} but the other scale is not: "
                            f"block scales come together, {legal_blocks}")
    return found
