"""tg.matmul on 3-D inputs: a [B, M, K] times b [K, N] shared by every batch entry, or times b [B, K, N].

A shared b is folded into M: a row-major a [B, M, K] is a [B * M, K] matrix, so the product is one
GEMM of B * M rows (any design tg.matmul has, split-K and swap-AB included) whose [B * M, N] result is
c [B, M, N]. A b per batch entry runs one kernel with a batch dimension (`hopper_matmul.build(batch=B)`):
its work units are (tile, batch entry) pairs, read and written with 3-D TMA boxes one entry deep; a batch
is not split over K. Each batch entry is stored either way round, as in the 2-D case (the last two strides);
entries follow each other packed.
"""
from ..errors import ArgumentError
from ..lang.trace import ShapeDtype
from ..runtime.arrays import element_strides
from . import designs, dispatch


def matmul(a, b, sa, sb, out, interpret, debug, batch_invariant=False):
    """c [B, M, N] for a [B, M, K] and b [K, N] or [B, K, N] (specs sa, sb); an ArgumentError for other ranks.
    `batch_invariant`: a shared b's folded GEMM sums K in one pass (a batch of GEMMs always does)."""
    if len(sa.shape) != 3 or len(sb.shape) not in (2, 3) or (len(sb.shape) == 3 and sb.shape[0] != sa.shape[0]):
        raise ArgumentError(f"tg.matmul multiplies a [M, K] by b [K, N], or a [B, M, K] by b [K, N] or [B, K, N]; got "
                            f"shapes {sa.shape} and {sb.shape}")
    if len(sb.shape) == 2:
        return _shared(a, b, sa, out, interpret, debug, batch_invariant)
    return _per_entry(a, b, sa, sb, out, interpret, debug)


def _shared(a, b, sa, out, interpret, debug, batch_invariant):
    """One GEMM of B * M rows: a [B, M, K] read as [B * M, K], c [B * M, N] returned as [B, M, N]."""
    batch, m, k = sa.shape
    rows = _packed_view(a, "a", (batch * m, k))
    if out is None:
        c = dispatch.matmul(rows, b, interpret=interpret, debug=debug, batch_invariant=batch_invariant)
        return c.reshape(batch, m, c.shape[1])
    dispatch.matmul(rows, b, out=_packed_view(out, "out", (batch * m, out.shape[-1])), interpret=interpret,
                    debug=debug, batch_invariant=batch_invariant)
    return out


def _per_entry(a, b, sa, sb, out, interpret, debug):
    """One kernel with a batch dimension: c[i] = a[i] @ b[i]."""
    batch, m, k = sa.shape
    entry_a, entry_b = (ShapeDtype(s.shape[1:], s.dtype) for s in (sa, sb))
    m, n, k = dispatch.check_operands(entry_a, entry_b)
    a_strides, b_strides = element_strides(a), element_strides(b)
    a_layout, b_layout = dispatch.operand_layouts(entry_a, entry_b, a_strides[1:], b_strides[1:])
    for name, shape, strides in (("a", sa.shape, a_strides), ("b", sb.shape, b_strides)):
        if batch > 1 and strides[0] != shape[1] * shape[2]:
            raise ArgumentError(f"tg.matmul reads the batch entries of {name} packed one after another: its batch "
                                f"stride is {strides[0]} elements, not {shape[1] * shape[2]}; {name}.contiguous() "
                                f"(np.ascontiguousarray({name})) makes a packed copy")
    device, num_sms = dispatch._target(interpret)
    params = dispatch.choose_config(m, n, k, sa.dtype.name, device, num_sms, a_layout, b_layout, batch=batch)
    kernel = designs.build(m, n, k, sa.dtype.name, params)
    stored = (a if a_layout == "mk" else _entries_transposed(a, "a"), b if b_layout == "kn" else
              _entries_transposed(b, "b"))
    return dispatch.run(kernel, (a, b), stored, out, interpret, debug)


def _packed_view(x, name, shape):
    """`x` reshaped to `shape` without a copy: it must be row-major (packed)."""
    strides, step = element_strides(x), 1
    for size, stride in reversed(list(zip(x.shape, strides))):
        if size != 1 and stride != step:
            raise ArgumentError(f"tg.matmul folds the batch of {name} {tuple(x.shape)} into its rows, which needs "
                                f"{name} row-major; its element strides are {tuple(strides)}: {name}.contiguous() "
                                f"(np.ascontiguousarray({name})) makes a row-major copy")
        step *= size
    return x.reshape(shape)


def _entries_transposed(x, name):
    """`x` [B, R, C] as the [B, C, R] array it is a transposed view of (x.mT)."""
    if not hasattr(x, "mT"):
        raise ArgumentError(f"tg.matmul reads {name} as batch entries stored transposed, and needs {name}.mT for "
                            f"that; {type(x).__name__} has none: pass a row-major {name} (or a numpy or torch array)")
    return x.mT
