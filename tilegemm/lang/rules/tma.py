"""TMA copy legality: box rank and size limits, global strides, 16-byte alignment of GMEM views and of box rows,
and 128-byte alignment of the SMEM side.

The box is the SMEM side of a copy: at most 5 dimensions of at most 256
elements, with a contiguous dimension of whole 16-byte units, starting on a
128-byte boundary of shared memory (a 16-byte aligned slot of a ring of small
boxes faulted on the H200 with "misaligned address": benchmarks/RESULTS.md run 95). The GMEM array's
rows (every stride but the last) must be multiples of 16 bytes, and every
stride below 2^40 bytes. tilegemm also requires the start of a GMEM view's
contiguous dimension to be provably 16-byte aligned (see
`analysis.known_multiple`), so that the lowering may address a view through an
aligned base pointer as well as through TMA coordinates. (TMA's limit of 2^32
elements per dimension is implied by extents.py's 2^31.)
"""
import math

from ...errors import KernelError
from .. import dtypes
from ..analysis import known_multiple, root_ref, view_chain
from ..arch import TMA_ALIGN, TMA_MAX_BOX, TMA_MAX_RANK, TMA_MAX_STRIDE, TMA_SMEM_ALIGN
from ..verify import rule


def param_name(graph, ref):
    """'kernel input 0 (gmem<...>)' for a kernel parameter, for messages."""
    for kind, params in (("input", graph.inputs), ("output", graph.outputs)):
        for i, p in enumerate(params):
            if p is ref:
                return f"kernel {kind} {i} ({p.type})"
    return str(ref.type)


@rule("copy_gmem_to_smem", "copy_smem_to_gmem")
def tma_copy_limits(op, ctx):
    """TMA copies: box within 5 dims x 256 elements, 16-byte rows and aligned contiguous starts."""
    gmem, smem = (op.arg("src"), op.arg("dst")) if op.kind == "copy_gmem_to_smem" else (op.arg("dst"), op.arg("src"))
    check_box(op, smem)
    check_smem_alignment(op, smem)
    check_gmem_alignment(op, gmem, ctx.graph)


def check_box(op, smem):
    """The SMEM side is the box: 1 to 5 dims, each at most 256, contiguous dim a multiple of 16 bytes."""
    t = smem.type
    name = dtypes.name(t.dtype)
    if not 1 <= len(t.shape) <= TMA_MAX_RANK:
        raise KernelError(f"{op.kind}: a TMA box has 1 to {TMA_MAX_RANK} dimensions, the SMEM side {t} has "
                          f"{len(t.shape)}", loc=op.loc)
    for d, size in enumerate(t.shape):
        if size > TMA_MAX_BOX:
            raise KernelError(f"{op.kind}: a TMA box has at most {TMA_MAX_BOX} elements per dimension, but the SMEM "
                              f"side {t} has {size} in dimension {d}; split the copy into pieces of at most "
                              f"{TMA_MAX_BOX} or use a smaller tile", loc=op.loc)
    minor_bytes = t.shape[-1] * dtypes.itemsize(t.dtype)
    if minor_bytes % TMA_ALIGN:
        raise KernelError(f"{op.kind}: a TMA box's contiguous dimension must be a multiple of {TMA_ALIGN} bytes, but "
                          f"{t} has {t.shape[-1]} {name} = {minor_bytes} bytes; use a multiple of "
                          f"{TMA_ALIGN // dtypes.itemsize(t.dtype)} elements", loc=op.loc)


def smem_offset_multiple(ref):
    """An int g such that the byte offset of view `ref` within its buffer is provably a multiple of g (0: always 0),
    from the starts of the views it was taken through (buffers are row-major)."""
    root = root_ref(ref)
    size = dtypes.itemsize(root.dtype)
    strides = [math.prod(root.shape[d + 1:]) * size for d in range(len(root.shape))]
    multiple = 0
    for view in reversed(view_chain(ref)):   # from the buffer outward
        if view.kind == "transpose_ref":
            strides = [strides[p] for p in view.attrs["permutation"]]
            continue
        for start, stride in zip(view.arg("starts"), strides):
            multiple = math.gcd(multiple, known_multiple(start) * stride)
        strides = [stride for stride, kept in zip(strides, view.attrs["sizes"]) if kept is not None]
    return multiple


def check_smem_alignment(op, smem):
    """The SMEM side starts on a TMA_SMEM_ALIGN-byte boundary (every buffer does: arch.SMEM_ALIGN)."""
    multiple = smem_offset_multiple(smem)
    if multiple % TMA_SMEM_ALIGN:
        root = root_ref(smem)
        slot = math.prod(root.shape[1:]) * dtypes.itemsize(root.dtype)
        raise KernelError(f"{op.kind}: the SMEM side ({smem.type}) starts at a byte offset only known to be a "
                          f"multiple of {multiple} within its buffer ({root.type}, {slot} bytes per leading index); "
                          f"TMA's shared-memory side must start on a {TMA_SMEM_ALIGN}-byte boundary: make each "
                          f"slot a multiple of {TMA_SMEM_ALIGN} bytes (e.g. pad it with rows the copy also fills)",
                          loc=op.loc)


def check_gmem_alignment(op, gmem, graph):
    """The GMEM array: at most 5 dims, 16-byte rows, and a 16-byte aligned start of the contiguous dim."""
    array = root_ref(gmem)
    shape, dtype = array.shape, array.dtype
    name, size = dtypes.name(dtype), dtypes.itemsize(dtype)
    what = param_name(graph, array)
    if len(shape) > TMA_MAX_RANK:
        raise KernelError(f"{op.kind}: TMA addresses arrays of at most {TMA_MAX_RANK} dimensions; {what} has "
                          f"{len(shape)}", loc=op.loc)
    row_bytes = shape[-1] * size
    if len(shape) >= 2 and row_bytes % TMA_ALIGN:
        unit = TMA_ALIGN // size
        raise KernelError(f"TMA needs 16-byte aligned rows: {what} has rows of {shape[-1]} {name} = {row_bytes} "
                          f"bytes; pad its last dimension to a multiple of {unit} (e.g. "
                          f"{-(-shape[-1] // unit) * unit})", loc=op.loc)
    for d in range(len(shape) - 1):
        stride = math.prod(shape[d + 1:]) * size
        if stride >= TMA_MAX_STRIDE:
            raise KernelError(f"{op.kind}: {what} steps {stride} bytes along dimension {d}; a TMA tensor map's "
                              f"strides are below {TMA_MAX_STRIDE} bytes (2^40): split the array into smaller "
                              "ones", loc=op.loc)
    for view in view_chain(gmem):
        if view.attrs["sizes"][-1] is None:
            raise KernelError(f"{op.kind}: the view of {what} taken at {view.loc} indexes away the contiguous "
                              "(last) dimension; TMA boxes always include it: slice it with tg.ds instead",
                              loc=op.loc)
        start = view.arg("starts")[-1]
        multiple = known_multiple(start)
        unit = TMA_ALIGN // size
        if multiple % unit:
            related = [("the view is taken at", view.loc)] if view.loc != op.loc else []
            at = (f"element {start} ({start * size} bytes)" if isinstance(start, int) else
                  f"an offset only known to be a multiple of {multiple} {name} ({multiple * size} bytes)")
            raise KernelError(
                f"{op.kind}: the view of {what} starts its contiguous dimension at {at}; TMA views must start on "
                f"16-byte boundaries there: make the start a multiple of {unit} elements (e.g. tg.ds(k * 64, 64))",
                loc=op.loc, related=related)
