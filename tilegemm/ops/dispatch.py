"""`tg.matmul(a, b)`: the flagship Hopper kernel with its configuration chosen per shape by the model.

The first call for a (shape, dtype, device) ranks a small space of flagship
configurations with the performance model (no compiling) and keeps the best;
later calls reuse it. Inputs are numpy arrays (copied to the GPU and back) or
device arrays (torch/cupy/DeviceArray, zero-copy, launched on the caller's
stream); `interpret=True` runs the numpy interpreter instead. A repeated call
with device arrays of the same shapes, dtypes and strides goes straight to the
prepared launch of its kernel (a few microseconds of host time).
"""
import functools

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
from ..tune import tune
from . import epilogue as fused_epilogue
from . import hopper_matmul

# The configurations `matmul` chooses from (ping-pong at 128x256 is refused by the builder: its accumulators do
# not fit in registers). The N tile trades WGMMA width against the tail: at 8192^3, 128x192 tiles fill 99.3% of
# their last round against 97.0% for 128x256, and measured 1-2% faster (RESULTS.md, run 7). The schedule trades
# a hidden epilogue against one warpgroup issuing alone: ping-pong measured 0.1-1.8% faster at 128x192 (run 10)
# and 3-4% slower at 128x128 (run 11); the model sees both. Stages and the snake width stay at the flagship's
# measured best (4 stages; width 8): the model predicts 3 and 4 stages alike and ranks snake widths within its
# error, while on the H200 widths 4 and 16 measured 1-3% slower than 8 (runs 2 and 3).
SPACE = {"tile_n": [128, 192, 256], "schedule": list(hopper_matmul.SCHEDULES)}

_prepared = {}   # prepared_key(...) of a call -> the PreparedCall of the kernel chosen for it


def prepared_key(operands, barrier_timeout, fused_key=None):
    """The key of `_prepared`: the call signature of (a, b, *epilogue tensors) and the barrier timeout, and for a
    fused call (epilogue, tensor names, out_dtype)."""
    key = (readers.signature(operands), barrier_timeout)
    return key if fused_key is None else key + (fused_key,)


def space_for(m, n, num_sms):
    """SPACE for one problem: the 128-wide N tile only when 128x256 tiles are too few to give every SM one.

    Once every SM is busy, 128x128 tiles (a 64x128 WGMMA per warpgroup, re-reading
    A and B from SMEM more often per FLOP) measured ~8% slower on the H200 at
    8192x28672x4096, a cost the model does not see; below that they fill idle SMs.
    """
    tile_m, narrow, wide = hopper_matmul.CONFIG["tile_m"], min(SPACE["tile_n"]), max(SPACE["tile_n"])
    wide_tiles = -(-m // tile_m) * -(-n // wide)
    return SPACE if wide_tiles < num_sms else dict(SPACE, tile_n=[t for t in SPACE["tile_n"] if t != narrow])


_MISSING = object()


def matmul(a=_MISSING, b=_MISSING, *extra, out=None, interpret=False, debug=None, epilogue=None, out_dtype=None,
           **tensors):
    """c = a @ b for f16/bf16 a [M, K], b [K, N], accumulated in f32, returned in the input dtype.

    a is row-major [M, K] or the transpose of a row-major [K, M] array; b is row-major [K, N] or the transpose
    of a row-major [N, K] array (a linear layer's weight: tg.matmul(x, w.T)). Neither is copied: the kernel
    reads each as it is stored.

    `epilogue=fn` fuses fn into the kernel: c = fn(a @ b, **tensors), with fn(acc, **tiles) traced on each
    float32 accumulator tile and the matching float32 tiles of the tensors passed by keyword: [N] or [1, N]
    (per column, e.g. a bias), [M, 1] (per row) or [M, N] (e.g. a residual), as numpy broadcasting reads them:
    `tg.matmul(x, w.T, epilogue=lambda acc, bias: acc * tg.sigmoid(acc) + bias, bias=bias)`. Each new function
    object builds a new kernel: define it once. `out_dtype=` (float16, bfloat16, float32) is c's dtype.

    `out=` writes c into the caller's array (same checks as an input); `debug=True` poisons the output with NaN
    and bounds barrier waits (tilegemm.debug); `interpret=True` runs the numpy interpreter (host arrays).
    """
    if b is _MISSING or extra or (tensors and epilogue is None):
        _refuse_signature(a is not _MISSING, b is not _MISSING, extra, tensors)
    operands = (a, b, *tensors.values())
    fused_key = (epilogue, tuple(tensors), out_dtype) if epilogue is not None or tensors or out_dtype else None
    if not interpret:
        switches = debugging.resolve(debug)
        prepared = _prepared.get(prepared_key(operands, switches.barrier_timeout, fused_key))
        if prepared is not None:
            return prepared(operands, None if out is None else [out], switches.poison_outputs)[0]
    return _matmul(a, b, tensors, out, interpret, debug, epilogue, out_dtype, fused_key)


def _matmul(a, b, tensors, out, interpret, debug, epilogue, out_dtype, fused_key):
    """The general path: check the arguments, choose and build the kernel, run it, and prepare the fast path."""
    sa, sb = (_spec(x, name) for x, name in ((a, "a"), (b, "b")))
    m, n, k = check_operands(sa, sb)
    fused = None if fused_key is None else fused_epilogue.fused(
        epilogue, {name: ShapeDtype(*shape_and_dtype(t, f"tg.matmul's epilogue tensor {name}"))
                   for name, t in tensors.items()}, m, n, out_dtype, sa.dtype)
    a_layout, b_layout = operand_layouts(sa, sb, element_strides(a), element_strides(b))
    kernel = kernel_for(m, n, k, sa.dtype.name, interpret, a_layout, b_layout, fused)
    stored = (a if a_layout == "mk" else a.T, b if b_layout == "kn" else b.T)   # the arrays as they are stored
    c = kernel(*stored, *tensors.values(), out=out, interpret=interpret, debug=debug)
    if not interpret:
        timeout = debugging.resolve(debug).barrier_timeout
        prepared = kernel.prepared(readers.signature((*stored, *tensors.values())), timeout)
        if prepared is not None:   # the stored arrays start where a and b do: the same pointers
            _prepared[prepared_key((a, b, *tensors.values()), timeout, fused_key)] = prepared
    return c


def kernel_for(m, n, k, dtype_name, interpret=False, a_layout="mk", b_layout="kn", fused=None):
    """The kernel tg.matmul runs for this problem, these operand layouts and this fused epilogue (an
    ops.epilogue.Fused or None), on the current GPU, or budgeted for an H200 when interpreting. The configuration
    is the plain GEMM's: an epilogue's output slices keep their SMEM bytes."""
    device, num_sms = _target(interpret)
    return _kernel(m, n, k, dtype_name, choose_config(m, n, k, dtype_name, device, num_sms, a_layout, b_layout),
                   fused)


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
    strides are an ArgumentError saying what would do; so are stored rows TMA cannot copy."""
    shape, strides = tuple(shape), tuple(strides)
    stored = [layout for layout, order in zip(layouts, ((0, 1), (1, 0))) if _packed(shape, strides, order)]
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


def _refuse_signature(has_a, has_b, extra, keywords):
    if keywords:
        raise ArgumentError(f"tg.matmul got an unexpected keyword argument {next(iter(keywords))!r}; it takes a, b "
                            "and the keywords out=, interpret=, debug=, epilogue=, out_dtype=, and with epilogue=fn "
                            "the tensors fn takes, by name")
    count = has_a + has_b + len(extra)
    raise ArgumentError(f"tg.matmul takes two arrays, a and b; got {count}")


def _spec(x, name):
    if isinstance(x, ShapeDtype):
        raise ArgumentError(f"tg.matmul computes on arrays; {name} is a tg.ShapeDtype, which has no data (to "
                            "trace the kernel behind it, build it: tilegemm.ops.hopper_matmul.build(m, n, k))")
    shape, dtype = shape_and_dtype(x, f"tg.matmul's argument {name}")
    if not isinstance(dtype, np.dtype):
        raise ArgumentError(f"tg.matmul takes two float16 or two bfloat16 arrays; {name} has element type {dtype}")
    return ShapeDtype(shape, dtype)


def check_operands(sa, sb):
    """(M, N, K) of a [M, K] @ b [K, N], or an ArgumentError saying what tg.matmul takes."""
    if len(sa.shape) != 2 or len(sb.shape) != 2 or sa.shape[1] != sb.shape[0]:
        raise ArgumentError(f"tg.matmul needs a [M, K] and b [K, N]; got shapes {sa.shape} and {sb.shape}")
    if sa.dtype != sb.dtype or sa.dtype not in WGMMA.inputs:
        raise ArgumentError(f"tg.matmul takes two float16 or two bfloat16 arrays; got {dtypes.name(sa.dtype)} and "
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


@functools.lru_cache(maxsize=256)
def choose_config(m, n, k, dtype_name, device, num_sms, a_layout="mk", b_layout="kn"):
    """The flagship parameters (layouts included) the model predicts fastest for this problem, as a hashable
    tuple of items."""
    build = functools.partial(hopper_matmul.build, num_sms=num_sms, a_layout=a_layout, b_layout=b_layout)
    result = tune(build, (m, n, k), space_for(m, n, num_sms), dtype=dtypes.as_dtype(dtype_name), device=device,
                  progress=False, layouts=(a_layout, b_layout))
    params = dict(result.best.params, num_sms=num_sms, a_layout=a_layout, b_layout=b_layout)
    return tuple(sorted(params.items()))


@functools.lru_cache(maxsize=64)
def _kernel(m, n, k, dtype_name, params, fused=None):
    return hopper_matmul.build(m, n, k, dtype=dtypes.as_dtype(dtype_name), fused=fused, **dict(params))
