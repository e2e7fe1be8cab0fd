"""`tg.matmul(a, b)`: the flagship Hopper kernel with its design chosen per shape by the model.

The first call for a (shape, dtype, device) ranks the designs of tilegemm.ops.designs
(classic 128-row tiles, 64-row tiles, swap-AB, split-K) with the performance model
(no compiling) and keeps the best; later calls reuse it. Inputs are numpy arrays (copied to the GPU and back) or
device arrays (torch/cupy/DeviceArray, zero-copy, launched on the caller's
stream); `interpret=True` runs the numpy interpreter instead. A repeated call
with device arrays of the same shapes, dtypes and strides goes straight to the
prepared launch of its kernel (a few microseconds of host time).

fp8 operands (e4m3, e5m2) take scales as torch._scaled_mm does:
`tg.matmul(a8, b8, scale_a=sa, scale_b=sb, out_dtype=tg.bfloat16)` is
(a8 @ b8) * sa * sb, with each scale one float32 for the tensor or one per row
of a ([M, 1]) / column of b ([1, N]), applied to the f32 accumulator.
"""
import numpy as np

from .. import debug as debugging
from ..errors import ArgumentError
from ..lang import dtypes
from ..lang.arch import TMA_ALIGN
from ..lang.tensorcore import WGMMA
from ..lang.trace import ShapeDtype
from ..model import get_device
from ..runtime import readers
from ..runtime.arrays import element_strides, shape_and_dtype
from . import batched, designs, scaling

_prepared = {}   # (call signature of (a, b), barrier timeout) -> the prepared launch of the design chosen for it


_MISSING = object()


def matmul(a=_MISSING, b=_MISSING, *extra, out=None, interpret=False, debug=None, scale_a=None, scale_b=None,
           out_dtype=None, **unknown):
    """c = a @ b for f16, bf16 or fp8 (e4m3, e5m2) a [M, K], b [K, N], accumulated in f32, returned as `out_dtype`
    (default: the input dtype; bf16 for fp8 inputs). A 3-D a [B, M, K] (16-bit, unscaled) takes b [K, N] shared
    by every batch entry, or b [B, K, N]: c is [B, M, N] (tilegemm.ops.batched).

    a is row-major [M, K] or the transpose of a row-major [K, M] array; b is row-major [K, N] or the transpose
    of a row-major [N, K] array (a linear layer's weight: tg.matmul(x, w.T)). Neither is copied: the kernel
    reads each as it is stored. fp8 operands are read K-major only: a row-major [M, K] and b the transpose of a
    row-major [N, K] (torch._scaled_mm's layouts).

    `scale_a=`, `scale_b=` (float32, both or neither): c = (a @ b) * scale_a * scale_b, each scale one value for
    the tensor (shape (), [1] or [1, 1]) or one per row of a ([M, 1]) / column of b ([1, N]).

    `out=` writes c into the caller's array (same checks as an input); `debug=True` poisons the output with NaN
    and bounds barrier waits (tilegemm.debug); `interpret=True` runs the numpy interpreter (host arrays).
    """
    if b is _MISSING or extra or unknown:
        _refuse_signature(a is not _MISSING, b is not _MISSING, extra, unknown)
    operands = (a, b) if scale_a is None and scale_b is None else (a, b, scale_a, scale_b)
    if not interpret:
        switches = debugging.resolve(debug)
        prepared = _prepared.get((readers.signature(operands), switches.barrier_timeout, str(out_dtype)))
        if prepared is not None:
            return prepared(operands, None if out is None else [out], switches.poison_outputs)[0]
    return _matmul(operands, out, out_dtype, interpret, debug)


def _matmul(operands, out, out_dtype, interpret, debug):
    """The general path: check the arguments, choose and build the kernel, run it, and prepare the fast path."""
    a, b, *scales = operands
    sa, sb = (_spec(x, name) for x, name in ((a, "a"), (b, "b")))
    if len(sa.shape) == 3 or len(sb.shape) == 3:
        if scales or out_dtype is not None or not WGMMA.reads_mn_major(sa.dtype):
            raise ArgumentError(f"tg.matmul's batched (3-D) form multiplies f16 or bf16 operands without scale_a=, "
                                f"scale_b= or out_dtype= (got {dtypes.name(sa.dtype)}"
                                f"{', scales' if scales else ''}"
                                f"{', out_dtype' if out_dtype is not None else ''}): call it per batch entry")
        return batched.matmul(a, b, sa, sb, out, interpret, debug)
    m, n, k = check_operands(sa, sb)
    scale_kinds = scaling.kinds(scales, m, n)
    out_type = scaling.out_dtype(out_dtype, sa.dtype)
    a_layout, b_layout = operand_layouts(sa, sb, element_strides(a), element_strides(b))
    device, num_sms = _target(interpret)
    plain = scale_kinds is not None or out_type != sa.dtype   # the scales and output type need the plain epilogue
    params = choose_config(m, n, k, sa.dtype.name, device, num_sms, a_layout, b_layout, plain_epilogue=plain)
    kernel = designs.build(m, n, k, sa.dtype.name, params, *((out_type.name, scale_kinds) if plain else ()))
    stored = (a if a_layout == "mk" else a.T, b if b_layout == "kn" else b.T)   # the arrays as they are stored
    return run(kernel, operands, stored + scaling.as_stored(scales), out, interpret, debug, str(out_dtype))


def run(kernel, arrays, stored, out, interpret, debug, out_dtype="None"):
    """Runs a design's kernel(s) on the operands as stored and, on a device, keeps its prepared launch for calls
    with the signature of `arrays` (the operands as given) and `out_dtype` (as given)."""
    c = kernel(*stored, out=out, interpret=interpret, debug=debug)
    if not interpret:
        timeout = debugging.resolve(debug).barrier_timeout
        prepared = kernel.prepared(readers.signature(stored), timeout)
        if prepared is not None:   # the stored arrays start where the arguments do: the same pointers
            _prepared[(readers.signature(arrays), timeout, out_dtype)] = prepared
    return c


def kernel_for(m, n, k, dtype_name, interpret=False, a_layout="mk", b_layout="kn"):
    """The one tg.Kernel tg.matmul would run for this problem and these operand layouts (on the current GPU, or
    budgeted for an H200 when interpreting), among the designs of a single kernel: a caller compiling one kernel
    (tilegemm.jax, precompile) cannot run split-K's second pass."""
    device, num_sms = _target(interpret)
    params = choose_config(m, n, k, dtype_name, device, num_sms, a_layout, b_layout, single_kernel=True)
    return designs.build(m, n, k, dtype_name, params).kernel


def operand_layouts(sa, sb, a_strides, b_strides):
    """(a_layout, b_layout) of checked operands with these element strides (tilegemm.model.layouts), or an
    ArgumentError saying what would do."""
    (m, k), n = sa.shape, sb.shape[1]
    rows = {"mk": ("K", k), "km": ("M", m), "kn": ("N", n), "nk": ("K", k)}
    return (_layout(sa.shape, a_strides, "a", ("mk", "km"), rows, sa.dtype),
            _layout(sb.shape, b_strides, "b", ("kn", "nk"), rows, sb.dtype))


def _layout(shape, strides, name, layouts, rows, dtype):
    """The layout of operand `name` among `layouts` (row-major, then transposed): how its strides say it is
    stored. An array with an extent of 1 reads both ways; it takes the one whose stored rows suit TMA. Any other
    strides are an ArgumentError saying what would do; so are stored rows TMA cannot copy, and an operand the
    tensor cores cannot read as stored (fp8 is read K-major only)."""
    shape, strides = tuple(shape), tuple(strides)
    stored = [layout for layout, order in zip(layouts, ((0, 1), (1, 0))) if _packed(shape, strides, order)]
    if not WGMMA.reads_mn_major(dtype):
        k_major = [layout for layout in stored if rows[layout][0] == "K"]
        if stored and not k_major:
            fix = ("a row-major [M, K] array" if name == "a" else
                   "the transpose of a row-major [N, K] array (w.T, as torch._scaled_mm takes b)")
            raise ArgumentError(f"tg.matmul reads {dtypes.name(dtype)} operands K-major only (the tensor cores "
                                f"read 8-bit types no other way): {name} must be {fix}; its element strides are "
                                f"{strides} for its shape {shape}")
        stored = k_major
    if not stored:
        natural, flipped = (f"[{layout[0].upper()}, {layout[1].upper()}]" for layout in layouts)
        raise ArgumentError(f"tg.matmul's argument {name} has element strides {strides} for its shape {shape}: it "
                            f"takes {name} as a row-major {natural} array, or the transpose of a row-major {flipped} "
                            f"one (such as w.T); {name}.contiguous() (np.ascontiguousarray({name})) makes a row-major "
                            "copy")
    aligned = [layout for layout in stored if rows[layout][1] * dtype.itemsize % TMA_ALIGN == 0]
    if not aligned:
        what, elems = rows[stored[0]]
        raise ArgumentError(f"tg.matmul needs {TMA_ALIGN}-byte aligned rows for TMA: {what}={elems} "
                            f"{dtypes.name(dtype)} is {elems * dtype.itemsize} bytes; pad {what} to a "
                            f"multiple of {TMA_ALIGN // dtype.itemsize}")
    return aligned[0]


def _packed(shape, strides, order):
    """True when an array of `shape` and element `strides` is packed with its dimensions in `order`, slowest
    first ((0, 1) is row-major); extents of 1 may have any stride."""
    step = 1
    for d in reversed(order):
        if shape[d] != 1 and strides[d] != step:
            return False
        step *= shape[d]
    return True


def _refuse_signature(has_a, has_b, extra, unknown):
    if unknown:
        raise ArgumentError(f"tg.matmul got an unexpected keyword argument {next(iter(unknown))!r}; it takes "
                            "a, b and the keywords out=, interpret=, debug=, scale_a=, scale_b=, out_dtype=")
    count = has_a + has_b + len(extra)
    raise ArgumentError(f"tg.matmul takes two arrays, a and b; got {count}")


def _spec(x, name):
    if isinstance(x, ShapeDtype):
        raise ArgumentError(f"tg.matmul computes on arrays; {name} is a tg.ShapeDtype, which has no data (to "
                            "trace the kernel behind it, build it: tilegemm.ops.hopper_matmul.build(m, n, k))")
    shape, dtype = shape_and_dtype(x, f"tg.matmul's argument {name}")
    if not isinstance(dtype, np.dtype):
        raise ArgumentError(f"tg.matmul takes two arrays of {_TAKES}; {name} has element type {dtype}")
    return ShapeDtype(shape, dtype)


_TAKES = "one type: " + ", ".join(np.dtype(d).name for d in WGMMA.inputs)


def check_operands(sa, sb):
    """(M, N, K) of a [M, K] @ b [K, N], or an ArgumentError saying what tg.matmul takes."""
    if len(sa.shape) != 2 or len(sb.shape) != 2 or sa.shape[1] != sb.shape[0]:
        raise ArgumentError(f"tg.matmul needs a [M, K] and b [K, N]; got shapes {sa.shape} and {sb.shape}")
    if sa.dtype != sb.dtype or sa.dtype not in WGMMA.inputs:
        raise ArgumentError(f"tg.matmul takes two arrays of {_TAKES}; got {dtypes.name(sa.dtype)} and "
                            f"{dtypes.name(sb.dtype)}")
    m, k = sa.shape
    n = sb.shape[1]
    if 0 in (m, n, k):
        raise ArgumentError(f"tg.matmul needs non-empty matrices; got M={m}, N={n}, K={k}")
    return m, n, k


def _target(interpret):
    """The model's device name and SM count: the GPU in use, else an H200."""
    if not interpret:
        from ..runtime import current_device
        dev = current_device()
        try:
            get_device(dev.name)
            return dev.name, dev.sm_count
        except ValueError:  # a GPU the model has no sheet for: budget it as its architecture's reference part
            return ("b200" if dev.arch == "sm_100a" else "h100"), dev.sm_count
    return "h200", 132


def choose_config(m, n, k, dtype_name, device, num_sms, a_layout="mk", b_layout="kn", single_kernel=False,
                  batch=None, plain_epilogue=False):
    """The parameters (layouts included) of the design the model predicts fastest for this problem
    (tilegemm.ops.designs), as a hashable tuple of items; `single_kernel`: among designs of one kernel; `batch`:
    for that many GEMMs of the shape in one launch; `plain_epilogue`: among designs storing the accumulator tile
    as computed (no swap-AB or split-K), whose epilogue applies scales and the output type."""
    return designs.choose(m, n, k, dtype_name, device, num_sms, a_layout, b_layout, single_kernel, batch,
                          plain_epilogue)
