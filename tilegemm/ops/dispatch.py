"""`tg.matmul(a, b)`: the flagship Hopper kernel with its design chosen per shape by the model.

The first call for a (shape, dtype, device) ranks the designs of tilegemm.ops.designs
(classic 128-row tiles, 64-row tiles, swap-AB, split-K) with the performance model
(no compiling) and keeps the best, unless `tg.tune_matmul` recorded a measured choice for the problem
(tilegemm.ops.tuned); later calls reuse it. Inputs are numpy arrays (copied to the GPU and back) or
device arrays (torch/cupy/DeviceArray, zero-copy, launched on the caller's
stream); `interpret=True` runs the numpy interpreter instead. A repeated call
with device arrays of the same shapes, dtypes and strides goes straight to the
prepared launch of its kernel (a few microseconds of host time).

fp8 operands (e4m3, e5m2) take scales as torch._scaled_mm does:
`tg.matmul(a8, b8, scale_a=sa, scale_b=sb, out_dtype=tg.bfloat16)` is
(a8 @ b8) * sa * sb, with each scale one float32 for the tensor or one per row
of a ([M, 1]) / column of b ([1, N]), applied to the f32 accumulator; or block scales as DeepGEMM and
torch._scaled_mm's blockwise scaling take them, scale_a [M, ceil(K/128)] and scale_b [ceil(K/128), ceil(N/128)],
which run the block-scaled kernel (tilegemm.ops.blockscaling: each 128-wide K block promoted into f32), as do
per-tensor and row-wise calls with promote=True.
"""
import functools
from dataclasses import dataclass, field, replace

import numpy as np

from .. import debug as debugging
from ..errors import ArgumentError
from ..lang import dtypes
from ..lang.arch import TMA_ALIGN
from ..lang.tensorcore import WGMMA
from ..lang.trace import ShapeDtype
from ..model import get_device
from ..model.devices import REFERENCE_PARTS, nearest_device, reference_device
from ..runtime import readers
from ..runtime.arrays import element_strides, shape_and_dtype
from . import batched, blockscaling, designs, hopper_matmul, scaling, tuned
from . import epilogue as fused_epilogue

_prepared = {}   # prepared_key(...) of a call -> the prepared launch of the design chosen for it


def forget_prepared():
    """Drops every prepared launch, so that the next call of each problem chooses its design again (after
    tg.tune_matmul recorded one)."""
    _prepared.clear()


def prepared_key(operands, barrier_timeout, fused_key=None, batch_invariant=False):
    """The key of `_prepared`: the call signature of (a, b, *scales or epilogue tensors) and the barrier timeout,
    for a fused call (epilogue, tensor names, out_dtype, whether scaled), and whether the call is batch-invariant."""
    key = (readers.signature(operands), barrier_timeout)
    key = key if fused_key is None else key + (fused_key,)
    return key + ("batch-invariant",) if batch_invariant else key


_MISSING = object()


def matmul(a=_MISSING, b=_MISSING, *extra, out=None, interpret=False, debug=None, epilogue=None, out_dtype=None,
           scale_a=None, scale_b=None, promote=False, batch_invariant=False, **tensors):
    """c = a @ b for f16, bf16 or fp8 (e4m3, e5m2) a [M, K], b [K, N], accumulated in f32, returned as `out_dtype`
    (default: the input dtype; bf16 for fp8 inputs). A 3-D a [B, M, K] (16-bit, unfused) takes b [K, N] shared
    by every batch entry, or b [B, K, N]: c is [B, M, N] (tilegemm.ops.batched).

    a is row-major [M, K] or the transpose of a row-major [K, M] array; b is row-major [K, N] or the transpose
    of a row-major [N, K] array (a linear layer's weight: tg.matmul(x, w.T)). Neither is copied: the kernel
    reads each as it is stored. fp8 operands are read K-major only: a row-major [M, K] and b the transpose of a
    row-major [N, K] (torch._scaled_mm's layouts). a and b are of one type, except that fp8 ones mix: e4m3 by
    e5m2 or the other way round (e5m2 gradients by e4m3 weights, as fp8 training multiplies them).

    `scale_a=`, `scale_b=` (float32, both or neither): c = (a @ b) * scale_a * scale_b, each scale one value for
    the tensor (shape (), [1] or [1, 1]) or one per row of a ([M, 1]) / column of b ([1, N]); fp8 products so
    scaled are summed over all of K by the tensor cores alone, as torch._scaled_mm(use_fast_accum=True) sums them
    (its error against float64 on the H200, above its default path's, which promotes: benchmarks/RESULTS.md run
    182). `promote=True` (fp8) sums them as that default path does, at the block-scaled kernel's speed: every
    128-wide K block's product summed by the tensor cores into a fresh f32 partial and added into the accumulator,
    the scales multiplied in after (tilegemm.ops.blockscaling.UnitScales).
    Block scales (fp8 only) are scale_a [M, ceil(K/128)], one per row of a and 128-wide group of K, and scale_b
    [ceil(K/128), ceil(N/128)], one per 128 x 128 block of b: c = sum over K blocks kb of (a[:, kb] @ b[kb, :]) *
    scale_a[:, kb] * scale_b[kb, :] (each broadcast over its block), every K block's product summed by the tensor
    cores alone and promoted into f32 (DeepGEMM's recipe). Each is read as stored, row-major or as the transpose
    of a row-major array (torch._scaled_mm's blockwise layouts: scale_a M-major, scale_b the transpose of a
    row-major [ceil(N/128), ceil(K/128)]): copied into SMEM by TMA where its rows, as stored, are whole 16-byte
    units (4 float32), else read from GMEM or, where the model predicts it faster, first copied by a short pass
    into an array of padded rows (tilegemm.ops.scale_padding; e.g. an M-major scale_a at M not a multiple of 4).

    `out=` writes c into the caller's array (same checks as an input); `debug=True` poisons the output with NaN
    and bounds barrier waits (tilegemm.debug); `interpret=True` runs the numpy interpreter (host arrays).

    `batch_invariant=True` sums K the same way for every M, so that each row of c has the same bits whatever the
    batch it came in (inference that gives a request the same result however it is batched): every call against
    the same b splits K into the slices tg.matmul chooses for a single row (`designs.invariant_split`; one pass
    where that row's design does not split, wherever an epilogue is fused, and for block scales and promote=True)
    and sums them in a fixed order; no stream-K tail. On the H200 every f16 design summing K in one pass gave the
    same bits (benchmarks/RESULTS.md run 78). It can be slower where tg.matmul would split K otherwise (a large M
    against a narrow weight; a few tokens against a block-scaled weight).

    `epilogue=fn` fuses fn into the kernel: c = fn(a @ b, **tensors), with fn(acc, **tiles) traced on each
    float32 accumulator tile and the matching float32 tiles of the tensors passed by keyword: [N] or [1, N]
    (per column, e.g. a bias), [M, 1] (per row), [1, 1] (one value) or [M, N] (e.g. a residual), as numpy
    broadcasting reads them:
    `tg.matmul(x, w.T, epilogue=lambda acc, bias: acc * tg.sigmoid(acc) + bias, bias=bias)`. Each new function
    object builds a new kernel: define it once. `out_dtype=` (float16, bfloat16, float32) is c's dtype. A fused
    call takes 2-D a and b; a design split over K runs fn on the sum of its slices, and a swap-AB design (decode's
    M) runs fn on C^T's tiles only where fn is elementwise and takes no [M, N] tensor (else tg.matmul picks another).
    """
    if b is _MISSING or extra or (tensors and epilogue is None):
        _refuse_signature(a is not _MISSING, b is not _MISSING, extra, tensors)
    scales = () if scale_a is None and scale_b is None else (scale_a, scale_b)
    operands = (a, b, *scales, *tensors.values())
    promote = bool(promote)
    fused_key = ((epilogue, tuple(tensors), out_dtype, bool(scales), promote)
                 if epilogue is not None or tensors or out_dtype or scales or promote else None)
    batch_invariant = bool(batch_invariant)
    if not interpret:
        switches = debugging.resolve(debug)
        prepared = _prepared.get(prepared_key(operands, switches.barrier_timeout, fused_key, batch_invariant))
        if prepared is not None:
            return prepared(operands, None if out is None else [out], switches.poison_outputs)[0]
    return _matmul(a, b, scales, tensors, out, interpret, debug, epilogue, out_dtype, fused_key, batch_invariant,
                   promote)


def _matmul(a, b, scales, tensors, out, interpret, debug, epilogue, out_dtype, fused_key, batch_invariant, promote):
    """The general path: check the arguments, choose and build the kernel, run it, and prepare the fast path."""
    sa, sb = (_spec(x, name) for x, name in ((a, "a"), (b, "b")))
    if promote and sa.dtype.itemsize != 1:
        raise ArgumentError(f"tg.matmul's promote=True sums fp8 products in f32 every 128-wide K block; "
                            f"{dtypes.name(sa.dtype)} products are summed in f32 by the tensor cores already: "
                            "leave promote out")
    if len(sa.shape) == 3 or len(sb.shape) == 3:
        if fused_key is not None or not WGMMA.reads_mn_major(sa.dtype):
            raise ArgumentError(f"tg.matmul's batched (3-D) form multiplies f16 or bf16 operands; epilogue= and "
                                f"out_dtype= take 2-D a and b, as do scale_a= and scale_b=; got "
                                f"{dtypes.name(sa.dtype)} a {sa.shape} and b {sb.shape}: fold a shared b's batch "
                                "into M (a.reshape(-1, K)) to fuse an epilogue, or call it per batch entry")
        return batched.matmul(a, b, sa, sb, out, interpret, debug, batch_invariant)
    call = resolve(a, b, sa, sb, scales, tensors, epilogue, out_dtype, promote, interpret)
    kernel = call.build(call.choose(batch_invariant))
    return run(kernel, (a, b, *scales, *tensors.values()), call.stored, out, interpret, debug, fused_key,
               batch_invariant)


@dataclass(frozen=True)
class Call:
    """A 2-D call as its design is chosen and built: its problem on the model's device (tuned.Problem, naming what
    the call adds), the epilogue it fuses (an epilogue.Fused: out_dtype's conversion, scale_a=/scale_b='s multiply,
    or the caller's fn) and the block scales its kernel promotes with (blockscaling.BlockScales, or UNIT for
    promote=True), None for neither; and its arrays as the kernel takes them (a and b as stored, then its scales or
    epilogue tensors)."""
    problem: tuned.Problem
    fused: object = None
    block_scales: object = None
    stored: tuple = field(default=(), compare=False, repr=False)
    b_dtype_name: str = None   # b's type where it is not a's (fp8: e4m3 by e5m2); the problem is a's

    def choose(self, batch_invariant=False):
        """The build() parameters (items) of the design tg.matmul runs: a tg.tune_matmul record for the problem,
        else the model's pick; batch-invariant: of the designs splitting K as every M against this b does."""
        p = self.problem
        if self.block_scales is not None:
            return choose_block_scaled_config(p.m, p.n, p.k, p.dtype_name, p.device, p.num_sms, self.block_scales,
                                              self.fused, one_pass=batch_invariant)
        split = None   # batch-invariant: one pass where an epilogue is fused, else the weight's own split
        if batch_invariant:
            split = 1 if self.fused is not None else designs.invariant_split(p.n, p.k, p.dtype_name, p.device,
                                                                             p.num_sms, p.b_layout)
        return choose_config(p.m, p.n, p.k, p.dtype_name, p.device, p.num_sms, p.a_layout, p.b_layout,
                             fused=self.fused, split=split)

    def build(self, params):
        """The callable running design `params` (items) for this call (designs.build), reading b as its own type
        where it is not a's. The design is chosen for a's type: the tensor cores run the fp8 types, mixed or not,
        at one rate from operands of one size."""
        p = self.problem
        if self.b_dtype_name is not None:
            params = tuple(sorted((*params, ("b_dtype", self.b_dtype_name))))
        return designs.build(p.m, p.n, p.k, p.dtype_name, params, self.fused, self.block_scales)


def resolve(a, b, sa, sb, scales=(), tensors=None, epilogue=None, out_dtype=None, promote=False, interpret=False):
    """The Call of tg.matmul(a, b) (2-D; sa and sb their checked specs) with these scales (both, or none), epilogue
    and tensors, out_dtype and promotion, on the current GPU (`interpret`: budgeted as an H200); an ArgumentError
    for arguments tg.matmul does not take."""
    tensors = tensors or {}
    m, n, k = check_operands(sa, sb)
    if scales and epilogue is not None:
        raise ArgumentError("tg.matmul takes scale_a=/scale_b= or epilogue=, not both: pass the scales to the "
                            "epilogue as its tensors and multiply the accumulator by them there")
    default_out = hopper_matmul.default_out_dtype(sa.dtype)
    if scales and scaling.block_scaled(scales, m, n, k):
        if sa.dtype.itemsize != 1:
            raise ArgumentError(f"tg.matmul takes block scales (scale_a [M, ceil(K/128)], scale_b [ceil(K/128), "
                                f"ceil(N/128)]) with fp8 operands only; got {dtypes.name(sa.dtype)}: pass per-tensor "
                                "or row-wise scales ([M, 1], [1, N])")
        a_layout, b_layout = operand_layouts(sa, sb, element_strides(a), element_strides(b))
        block_scales = blockscaling.BlockScales(*(_scale_layout(x, name, layouts) for x, name, layouts in
                                                  zip(scales, ("scale_a", "scale_b"), (("mk", "km"), ("kn", "nk")))))
        fused = fused_epilogue.fused(None, {}, m, n, out_dtype, default_out)
        named = {name: x if layout in ("mk", "kn") else x.T for x, name, layout in   # row-major as they are stored
                 zip(scales, ("scale_a", "scale_b"), (block_scales.a_layout, block_scales.b_layout))}
    else:
        named = scaling.tensors(scales, m, n, k) if scales else tensors   # the epilogue's tensors, as taken
        fuses = epilogue is not None or tensors or out_dtype or scales or promote or default_out != sa.dtype
        fused = fused_epilogue.fused(scaling.scaled if scales else epilogue,
                                     {name: ShapeDtype(*shape_and_dtype(t, f"tg.matmul's epilogue tensor {name}"))
                                      for name, t in named.items()}, m, n, out_dtype, default_out) if fuses else None
        a_layout, b_layout = operand_layouts(sa, sb, element_strides(a), element_strides(b))
        block_scales = blockscaling.UNIT if promote else None
    device, num_sms = _target(interpret)
    problem = tuned.Problem(m, n, k, sa.dtype.name, device, num_sms, a_layout, b_layout,
                            tuned.call_key(fused, block_scales))
    return Call(problem, fused, block_scales, (*stored_operands(a, b, a_layout, b_layout), *named.values()),
                None if sb.dtype == sa.dtype else sb.dtype.name)


def stored_operands(a, b, a_layout, b_layout):
    """a and b as they are stored, row-major (the transposes of those given in the layouts "km" and "nk"): what a
    design's kernel takes."""
    return a if a_layout == "mk" else a.T, b if b_layout == "kn" else b.T


def _scale_layout(x, name, layouts):
    """The layout (of `layouts`: row-major, then transposed) block scale `name` is stored in: float32, packed
    row-major or as the transpose of a row-major array; else an ArgumentError saying what would do."""
    shape = scaling.checked_shape(x, name)
    strides = tuple(element_strides(x))
    for layout, order in zip(layouts, ((0, 1), (1, 0))):
        if _packed(tuple(shape), strides, order):
            return layout
    raise ArgumentError(f"tg.matmul's block scale {name} has element strides {strides} for its shape "
                        f"{tuple(shape)}: it takes a row-major array or the transpose of one (as torch._scaled_mm "
                        f"takes blockwise scales); {name}.contiguous() makes a row-major copy")


def run(kernel, arrays, stored, out, interpret, debug, fused_key=None, batch_invariant=False):
    """Runs a design's kernel(s) on the operands (then a fused epilogue's tensors) as stored and, on a device,
    keeps its prepared launch for calls with the signature of `arrays` (the same, as given), `fused_key` and
    `batch_invariant`."""
    c = kernel(*stored, out=out, interpret=interpret, debug=debug)
    if not interpret:
        timeout = debugging.resolve(debug).barrier_timeout
        prepared = kernel.prepared(readers.signature(stored), timeout)
        if prepared is not None:   # the stored arrays start where the arguments do: the same pointers
            _prepared[prepared_key(arrays, timeout, fused_key, batch_invariant)] = prepared
    return c


def kernel_for(m, n, k, dtype_name, interpret=False, a_layout="mk", b_layout="kn", fused=None):
    """The one tg.Kernel tg.matmul would run for this problem, these operand layouts and this fused epilogue (an
    ops.epilogue.Fused or None), on the current GPU or budgeted for an H200 when interpreting, among the designs
    of a single kernel over the whole K: a caller compiling one kernel (tilegemm.jax, precompile) can run neither a
    second pass nor a split whose last slices need the counters tg.matmul keeps."""
    device, num_sms = _target(interpret)
    params = choose_config(m, n, k, dtype_name, device, num_sms, a_layout, b_layout, fused=fused, split=1)
    return designs.build(m, n, k, dtype_name, params, fused).kernel


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


def _refuse_signature(has_a, has_b, extra, keywords):
    if keywords:
        raise ArgumentError(f"tg.matmul got an unexpected keyword argument {next(iter(keywords))!r}; it takes a, b "
                            "and the keywords out=, interpret=, debug=, epilogue=, out_dtype=, scale_a=, scale_b=, "
                            "batch_invariant=, "
                            "and with epilogue=fn the tensors fn takes, by name")
    count = has_a + has_b + len(extra)
    raise ArgumentError(f"tg.matmul takes two arrays, a and b; got {count}")


def _spec(x, name):
    if isinstance(x, ShapeDtype):
        raise ArgumentError(f"tg.matmul computes on arrays; {name} is a tg.ShapeDtype, which has no data (to "
                            "trace the kernel behind it, build it: tilegemm.ops.hopper_matmul.build(m, n, k))")
    shape, dtype = shape_and_dtype(x, f"tg.matmul's argument {name}")
    if not isinstance(dtype, np.dtype):
        raise ArgumentError(f"tg.matmul takes {_TAKES}; {name} has element type {dtype}")
    return ShapeDtype(shape, dtype)


_TAKES = f"arrays a and b {WGMMA.pairs_in_words()}"


def check_operands(sa, sb):
    """(M, N, K) of a [M, K] @ b [K, N], or an ArgumentError saying what tg.matmul takes."""
    if len(sa.shape) != 2 or len(sb.shape) != 2 or sa.shape[1] != sb.shape[0]:
        raise ArgumentError(f"tg.matmul needs a [M, K] and b [K, N]; got shapes {sa.shape} and {sb.shape}")
    if not WGMMA.takes(sa.dtype, sb.dtype):
        raise ArgumentError(f"tg.matmul takes {_TAKES}; got {dtypes.name(sa.dtype)} and {dtypes.name(sb.dtype)}")
    m, k = sa.shape
    n = sb.shape[1]
    if 0 in (m, n, k):
        raise ArgumentError(f"tg.matmul needs non-empty matrices; got M={m}, N={n}, K={k}")
    return m, n, k


def _target(interpret):
    """The model's device and SM count: the GPU in use (`live_sheet`), else the Hopper reference part's sheet."""
    if not interpret:
        from ..runtime import current_device
        dev = current_device()
        return live_sheet(dev), dev.sm_count
    return REFERENCE_PARTS["sm_90a"], reference_device("sm_90a").sms


@functools.cache
def live_sheet(dev):
    """The device sheet the model budgets runtime GPU `dev` with: its model's (or, for a GPU the model has no sheet
    for, its architecture's reference part's), named for it and holding the clusters the driver says it holds at
    once: a sheet's own figure is one die's, and a grid of more clusters than fit runs its last ones after the
    others (half speed for a persistent kernel on an H100 whose sheet had none: benchmarks/RESULTS.md run 188)."""
    from ..runtime import occupancy
    try:
        sheet = get_device(dev.name)
    except ValueError:
        sheet = nearest_device(dev.arch)
    held = occupancy.resident_clusters(dev, tuple(sorted(designs.CLUSTER_SIZES)))
    return replace(sheet, name=dev.name, resident_clusters=held or sheet.resident_clusters)


def choose_config(m, n, k, dtype_name, device, num_sms, a_layout="mk", b_layout="kn", batch=None, fused=False,
                  split=None):
    """The parameters (layouts included) of the design the model predicts fastest for this problem
    (tilegemm.ops.designs), as a hashable tuple of items; `batch`: for that many GEMMs of the shape in one launch;
    `fused`: among designs that can fuse this epilogue (an ops.epilogue.Fused, or True: any), where
    designs.choose says; `split`: among designs split over K in exactly that many
    slices (1: one kernel, for a caller that cannot run a second pass; a batch-invariant call's split). A design
    `tg.tune_matmul` measured faster for the problem (tilegemm.ops.tuned) comes first where it suits the call:
    unbatched, fusing no epilogue or one of tilegemm's (tuned.call_key), and split as asked."""
    call = None if fused is True else tuned.call_key(fused or None)   # True (any epilogue): no record fits
    if batch is None:
        params = _recorded(tuned.Problem(m, n, k, dtype_name, device, num_sms, a_layout, b_layout, call), split)
        if params is not None:
            return params
    return designs.choose(m, n, k, dtype_name, device, num_sms, a_layout, b_layout, batch, fused, split)


def choose_block_scaled_config(m, n, k, dtype_name, device, num_sms, block_scales, fused=None, one_pass=False):
    """The build() parameters (items) of the block-scaled design (promote=True's: blockscaling.UNIT) for this
    problem fusing `fused` (out_dtype's conversion): `tg.tune_matmul`'s record for it, else the model's pick
    (designs.choose_block_scaled); `one_pass`: of the designs summing K in one pass (a batch-invariant call's)."""
    problem = tuned.Problem(m, n, k, dtype_name, device, num_sms, "mk", "nk", tuned.call_key(fused, block_scales))
    params = _recorded(problem, 1 if one_pass else None)
    if params is not None:
        return params
    return designs.choose_block_scaled(m, n, k, dtype_name, device, num_sms, block_scales, one_pass=one_pass)


def _recorded(problem, split):
    """`tg.tune_matmul`'s record for `problem` (build() parameters as items), or None where there is none or it
    does not split K into `split` slices as the call must (None: any split)."""
    params = tuned.lookup(problem)
    return params if params is not None and (split is None or _splits(dict(params)) == split) else None


def _splits(params):
    """The K slices of design `params`: its split_k, or None for a stream-K tail (split only for some tiles)."""
    return None if params.get("stream_k", 1) > 1 else params.get("split_k", 1)
