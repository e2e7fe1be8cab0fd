"""stmatrix: what one warp's 8x8 matrices can store.

stmatrix writes 8x8 matrices of 16-bit elements, each row 16 contiguous bytes of
shared memory, from registers laid out as a WGMMA accumulator fragment: so the
array is f16 or bf16, its rows come in the accumulator's 64-row blocks, its
columns in 8s, and the destination is a 2-d tile in its stored order or its
transposed view (tg.transpose_ref(tile, (1, 0)): the instruction's .trans form,
each matrix row then 8 of the accumulator's rows, as a swap-AB epilogue stores
C^T's accumulator into C's rows).
"""
from ...errors import KernelError
from .. import dtypes
from ..arch import STMATRIX_ELEMENT_BYTES, STMATRIX_ROWS
from ..tensorcore import WGMMA
from ..verify import rule


@rule("stmatrix")
def stmatrix_stores_whole_matrices(op, ctx):
    """The array is 16-bit, of whole 64-row blocks and 8-column matrices, stored into a tile or its transpose."""
    ref = op.arg("ref")
    if dtypes.itemsize(ref.dtype) != STMATRIX_ELEMENT_BYTES:
        raise KernelError(f"stmatrix stores {8 * STMATRIX_ELEMENT_BYTES}-bit elements (f16 or bf16), not "
                          f"{dtypes.name(ref.dtype)}: convert the array with .astype(tg.float16) and store it into "
                          "an f16 tile, or store it with ref[...] = array", loc=op.loc)
    if len(ref.shape) != 2 or ref.shape[0] % WGMMA.m or ref.shape[1] % STMATRIX_ROWS:
        raise KernelError(f"stmatrix of a {ref.type}: it stores 2-d arrays in the WGMMA accumulator layout, whose "
                          f"rows are a multiple of {WGMMA.m} and columns a multiple of {STMATRIX_ROWS}; store other "
                          "shapes with ref[...] = array", loc=op.loc)
    if ref.type.permutation not in (None, (1, 0)):
        raise KernelError(f"stmatrix into a view permuted {ref.type.permutation}: it stores a 2-d tile in its "
                          "stored order or transposed (tg.transpose_ref(tile, (1, 0)))", loc=op.loc)
