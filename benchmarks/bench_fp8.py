"""fp8 GEMM benchmark (issue 13): tg.matmul against torch._scaled_mm (cuBLAS), per-tensor, row-wise and block scaled.

iid-normal A [M, K] and a weight W [N, K] are quantized to e4m3 with amax scales
(per tensor, or per row of A and of W) and multiplied into bf16 as
`tg.matmul(a8, w8.T, scale_a=, scale_b=, out_dtype=bfloat16)` and
`torch._scaled_mm(a8, w8.t(), scale_a=, scale_b=, out_dtype=bfloat16)`, timed as
benchmarks/bench_hopper.py times (CUDA-graph replay, the two interleaved in a
random order per round, median of rounds). Each row also carries its error
against the float64 product of the same fp8 values and scales (`rel_error`) and
against the float64 product of the unquantized inputs (`rel_error_vs_inputs`,
quantization included).

Per-tensor and row-wise rows also time tg.matmul's call with promote=True ("tg.matmul promoted"), which
promotes every 128-wide K block into f32 as cuBLAS's default path does.

`--types e5m2,e4m3` (or `e4m3,e5m2`) quantizes A and W to those types instead, as fp8 training's gradient
products do (e5m2 gradients, e4m3 weights or activations): per-tensor and row-wise scaling only, every other option
as for e4m3 (designs are ranked and tuned for A's type, as tg.matmul chooses them, and built for W's), the rows
labelled "e5m2xe4m3 tensor" and so on, and no standing figure.

The block-scaled suite (DeepGEMM's recipe, `--scalings block`) quantizes A per 1 x 128
group and W per 128 x 128 block and runs tg.matmul's block-scaled kernel, which promotes
every K block into f32; its errors are against the float64 product of the dequantized
operands. Its "cuBLAS" contender is torch._scaled_mm with the same blockwise scales where
the installed torch exposes cuBLAS's blockwise path on this GPU; where that raises, the
rows say so (`cublas_blockwise`) and "cuBLAS" is the promoting row-wise torch._scaled_mm
of the same fp8 values, a speed reference only (its error is not computed). Usage (about 3
minutes on an H200, compiling included):

    python3 benchmarks/bench_fp8.py --out out [--scalings tensor row block] [--shapes MxNxK,... | --decode]
                                    [--all-designs [--per-family N]] [--design FIELDS ...] [--calls] [--tuned]
                                    [--types A,W]

`--all-designs` also times every design the model ranks for each call (its own kernel, predicted time beside);
`--design` (repeatable) tg.matmul's pick with fields replaced, e.g. `cluster_m=2,tile_n=192` (the same way);
`--calls` the calls a user writes, tg.matmul's and torch._scaled_mm's, in a plain Python loop (host time
included; "call:" rows, their ratio against torch's call); `--tuned` the design tg.tune_matmul measures fastest
for each call ("tg.matmul tuned", not recorded), its candidates compiled first.

The JSON's summary holds the standing figures benchmarks/standing.py --fp8 reads.
"""
import argparse
import concurrent.futures
import datetime
import multiprocessing
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402

from bench_hopper import gpu_target, measure  # noqa: E402
from decode_grid import TUNED, decode_shapes, parse_shapes  # noqa: E402
from design_contenders import annotate, parse_fields  # noqa: E402
from peers import deepgemm_fp8  # noqa: E402
from report import write_outputs  # noqa: E402
from rounds import interleaved, loop_iterations, loop_ms  # noqa: E402

SHAPES = [(8192, 8192, 8192), (4096, 7168, 16384), (4096, 8192, 4096)]
SCALINGS = ("tensor", "row", "block")
PROMOTED = "tg.matmul promoted"   # the contender of tg.matmul's per-tensor and row-wise calls with promote=True
FP8_TYPES = {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}
SAME = ("e4m3", "e4m3")   # the types of A and W of the figures
BLOCK = 128   # the 1 x 128 (A) and 128 x 128 (W) quantization blocks of the block-scaled suite
BLOCK_SCALES = ("km", "nk")   # how block_scaled_operands stores scale_a and scale_b (blockscaling.BlockScales)
STANDING = {"fp8_tensorwise_ratio_8192": ("tensor", (8192, 8192, 8192), "vs_cublas"),   # key -> (scaling, shape,
            "fp8_rowwise_ratio_8192": ("row", (8192, 8192, 8192), "vs_cublas"),      # field) of the tg.matmul row
            "fp8_blockscaled_tflops_4096x7168x16384": ("block", (4096, 7168, 16384), "tflops")}


def quantize(x, scaling, fp8="e4m3"):
    """(x quantized to fp8 type `fp8`, its float32 dequantization scale): amax over the type's largest value (448
    for e4m3) for the tensor or for each row."""
    dtype = FP8_TYPES[fp8]
    scale = amax_scale(x.abs().amax() if scaling == "tensor" else x.abs().amax(dim=1, keepdim=True), dtype)
    return (x / scale).to(dtype), scale


def amax_scale(amax, dtype):
    """The float32 dequantization scale that maps `amax` to fp8 `dtype`'s largest value."""
    return (amax.float() / torch.finfo(dtype).max).clamp(min=1e-12)


def dtype_label(scaling, types=SAME):
    """A row's dtype column: "e4m3 tensor" for the issue's types, "e5m2xe4m3 tensor" (A's x W's) for others."""
    return f"{types[0] if types[0] == types[1] else 'x'.join(types)} {scaling}"


def parse_types(text):
    """"A,W" (argparse): the fp8 types of A and W, a pair WGMMA takes."""
    types = tuple(text.split(","))
    if len(types) != 2 or not set(types) <= set(FP8_TYPES) or types == ("e5m2", "e5m2"):
        raise argparse.ArgumentTypeError(f"--types takes A's and W's fp8 types, e.g. e5m2,e4m3 (each of "
                                         f"{', '.join(FP8_TYPES)}; not both e5m2, which cuBLAS refuses), not {text!r}")
    return types


def quantize_blocks(x, rows):
    """(x [R, K] quantized to e4m3, its float32 scales [ceil(R/rows), ceil(K/128)]): amax / 448 per block of
    `rows` x 128 elements (a partial block at the edges takes the elements there are)."""
    r, k = x.shape
    rb, kb = -(-r // rows), -(-k // BLOCK)
    padded = torch.zeros(rb * rows, kb * BLOCK, device=x.device, dtype=x.dtype)
    padded[:r, :k] = x
    dtype = FP8_TYPES["e4m3"]
    scale = amax_scale(padded.abs().view(rb, rows, kb, BLOCK).amax(dim=(1, 3)), dtype)
    return (x / expand_scales(scale, rows, r, k)).to(dtype), scale


def expand_scales(scale, rows, r, k):
    """Block scales [ceil(R/rows), ceil(K/128)] broadcast over their blocks of an [R, K] array."""
    return scale.repeat_interleave(rows, dim=0).repeat_interleave(BLOCK, dim=1)[:r, :k]


def block_scaled_operands(m, n, k, seed=0):
    """a8 [M, K] with scale_a [M, K/128] (1 x 128 blocks, M-major as torch stores it), w8 [N, K] with scale_b
    [K/128, N/128] (128 x 128 blocks, the transpose of a row-major [N/128, K/128]), the float64 product of the
    dequantized operands and that of the unquantized inputs."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=gen)
    w = torch.randn(n, k, device="cuda", generator=gen)
    (a8, sa), (w8, sw) = quantize_blocks(a, 1), quantize_blocks(w, BLOCK)
    a_dequantized = a8.double() * expand_scales(sa.double(), 1, m, k)
    ref = a_dequantized @ (w8.double() * expand_scales(sw.double(), BLOCK, n, k)).t()
    return a8, w8, sa.t().contiguous().t(), sw.t(), ref, a.double() @ w.double().t()


def scaled_operands(m, n, k, scaling, seed=0, types=SAME):
    """a8 [M, K], w8 [N, K] (of fp8 `types`), scale_a ((), or [M, 1]), scale_b ((), or [1, N]) and the float64
    products: of the fp8 values with their scales, and of the unquantized inputs."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", generator=gen)
    w = torch.randn(n, k, device="cuda", generator=gen)
    (a8, sa), (w8, sw) = quantize(a, scaling, types[0]), quantize(w, scaling, types[1])
    sb = sw if scaling == "tensor" else sw.t().contiguous()
    ref = (a8.double() @ w8.double().t()) * sa.double() * sb.double()
    return a8, w8, sa, sb, ref, a.double() @ w.double().t()


def operands(m, n, k, scaling, types=SAME):
    """The operands and float64 products of this scaling's call: block_scaled_operands for "block" (e4m3 only),
    else scaled_operands."""
    return block_scaled_operands(m, n, k) if scaling == "block" else scaled_operands(m, n, k, scaling, types=types)


def design_of(m, n, k, scaling, target, types=SAME):
    """The design tg.matmul chooses for this scaled call on `target` (a tg.tune_matmul record for it, if any), A and
    W of fp8 `types` (tg.matmul chooses by A's type), and the kernel builder's arguments."""
    from tilegemm.ops.dispatch import choose_block_scaled_config, choose_config
    dtype, _, fused, *block = builder_args(m, n, k, scaling, None, types)
    if block:
        params = choose_block_scaled_config(m, n, k, dtype, *target, block[0], fused)
    else:
        params = choose_config(m, n, k, dtype, *target, "mk", "nk", fused=fused)
    return params, builder_args(m, n, k, scaling, params, types)


def type_names(types):
    """The numpy names of A's and W's fp8 `types` ("e4m3" -> "float8_e4m3fn"), as tg.matmul names them."""
    from tilegemm.lang import dtypes
    return tuple(dtypes.as_dtype(t).name for t in types)


def ranked_designs(m, n, k, scaling, target, per_family=None, types=SAME):
    """[(params, predicted seconds)] of the designs the model ranks for this scaled call, fastest first: the
    block-scaled designs, or those that can run the scales' fused epilogue (designs.fusable); with `per_family`,
    only the fastest-predicted that many of each family (designs.FAMILIES)."""
    from tilegemm.ops import blockscaling, designs
    if scaling == "block":
        ranked = designs.block_scaled_predictions(m, n, k, type_names(types)[0], *target,
                                                  blockscaling.BlockScales(*BLOCK_SCALES))
    else:
        ranked = [(params, budget) for params, budget in
                  designs.predictions(m, n, k, type_names(types)[0], *target, "mk", "nk")
                  if designs.fusable(params, transposable=True)]   # the scales' epilogue is elementwise
    if per_family is not None:
        ranked = list(designs.family_firsts(ranked, per_family))
    return [(tuple(sorted(params.items())), budget.predicted_s) for params, budget in ranked]


def tuning_candidates(m, n, k, scaling, target, types=SAME):
    """[(params, predicted seconds)] tg.tune_matmul times for this scaled call on `target`."""
    from tilegemm.ops import tuned, tuning
    dtype, _, fused, *block = builder_args(m, n, k, scaling, None, types)
    block_scales = block[0] if block else None
    problem = tuned.Problem(m, n, k, dtype, *target, "mk", "nk", tuned.call_key(fused, block_scales))
    return [(tuple(sorted(params.items())), seconds) for params, seconds in
            tuning.candidates(problem, fused=fused, block_scales=block_scales)]


def tuned_launchers(m, n, k, scaling, operands, types=SAME):
    """{TUNED: (launch, output)} and {TUNED: its design and predicted us}: the design tg.tune_matmul measures
    fastest for this call (not recorded: tg.matmul keeps the model's pick), run as its own kernel."""
    import tilegemm as tg
    a8, w8, sa, sb = operands
    tuning = tg.tune_matmul(a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, record=False)
    print("  " + repr(tuning).replace("\n", "\n  "))
    best = [(tuple(sorted(tuning.best.params.items())), tuning.best.predicted_s)]
    launchers, predicted = design_launchers(m, n, k, scaling, best, operands, types)
    return {TUNED: next(iter(launchers.values()))}, {TUNED: next(iter(predicted.values()))}


def given_designs(m, n, k, scaling, target, given, types=SAME):
    """[(params, predicted seconds)] of designs given by hand (design_contenders.parse_fields'): each is tg.matmul's
    pick for this call with the given fields replaced (`cluster_m` or `cluster_n`: in clusters, on the grid
    designs.in_clusters gives them). ValueError for a design the builder or verifier refuses."""
    from tilegemm.lang import dtypes
    from tilegemm.ops import blockscaling, designs
    from tilegemm.errors import KernelError
    pick = dict(design_of(m, n, k, scaling, target, types)[0])
    dtype = dtypes.as_dtype(types[0])
    chosen = []
    for design in given:
        mine = {key: v for key, v in pick.items() if key not in designs.CLUSTER_KEYS}
        params = designs.on_the_grid(dict(mine, num_sms=target[1], **design), *target)
        items = tuple(sorted(params.items()))
        budget = (designs.block_scaled_prediction(m, n, k, dtype, target[0], params,
                                                  blockscaling.BlockScales(*BLOCK_SCALES)) if scaling == "block" else
                  designs.design_prediction(m, n, k, dtype, target[0], params))
        refusal = "the model's trace fails" if budget is None else None
        try:
            designs.build(m, n, k, *builder_args(m, n, k, scaling, items, types)).trace_check()   # with the scales
        except (KernelError, ValueError) as e:
            refusal = str(e)
        if refusal:
            raise ValueError(f"the builder or verifier refuses design {params} for {m}x{n}x{k} {scaling}-scaled: "
                             f"{refusal}")
        chosen.append((items, budget.predicted_s))
    return chosen


def builder_args(m, n, k, scaling, params, types=SAME):
    """designs.build's arguments after the shape for design `params` of this scaled call, A and W of fp8 `types`
    (W's type joins the design's parameters where it is not A's, as tg.matmul builds it)."""
    from tilegemm.lang import dtypes
    from tilegemm.ops import blockscaling, epilogue, scaling as scales
    a_name, w_name = type_names(types)
    if params is not None and w_name != a_name:
        params = tuple(sorted((*params, ("b_dtype", w_name))))
    if scaling == "block":
        return (a_name, params, epilogue.fused(None, {}, m, n, None, dtypes.bfloat16),
                blockscaling.BlockScales(*BLOCK_SCALES))
    fused = epilogue.fused(scales.scaled, scales.specs((scaling, scaling), m, n), m, n, None, dtypes.bfloat16)
    return (a_name, params, fused)


def compile_scaled(m, n, k, scaling, target, params=None, types=SAME):
    """Compiles the kernel tg.matmul runs for this scaled call (or design `params`), A and W of fp8 `types`, into
    the compile cache (a worker process)."""
    from tilegemm.ops import designs
    start = time.perf_counter()
    args = (design_of(m, n, k, scaling, target, types)[1] if params is None else
            builder_args(m, n, k, scaling, params, types))
    designs.build(m, n, k, *args).compile()
    return f"{m}x{n}x{k} {scaling}{'' if params is None else ' ' + str(dict(params))}: " \
           f"{time.perf_counter() - start:.1f} s"


def precompile(jobs, workers, target, types=SAME):
    """Compiles each job's kernel, (m, n, k, scaling) for tg.matmul's or (m, n, k, scaling, params) for a design,
    A and W of fp8 `types`."""
    context = multiprocessing.get_context("spawn")   # CuTe DSL's compiler does not survive a fork
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for job, future in [(j, pool.submit(compile_scaled, *j[:4], target, *j[4:], types=types)) for j in jobs]:
            try:
                print(f"  compiled {future.result()}")
            except Exception as e:   # the timing run then reports the failure where it happens
                print(f"  compile failed for {job}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")


def cublas(a8, w8, sa, sb, fast_accum):
    """torch._scaled_mm(a8, w8.t()) into bf16 as a (launch, output) contender: with use_fast_accum=False cuBLAS
    promotes its partial sums out of the tensor core (as DeepGEMM does); with True it accumulates as the tensor core
    does, as tilegemm's kernel does."""
    c = torch.empty(a8.shape[0], w8.shape[0], device="cuda", dtype=torch.bfloat16)

    def launch():
        torch._scaled_mm(a8, w8.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, use_fast_accum=fast_accum,
                         out=c)
    return launch, c


def cublas_blockwise(a8, w8, sa, sb):
    """torch._scaled_mm with 1 x 128 / 128 x 128 blockwise scales into bf16 as a (launch, output) contender, and
    what the installed torch does with it: "exposed", or "not exposed: " and the error it raised."""
    launch, c = cublas(a8, w8, sa, sb, fast_accum=False)
    try:
        launch()
        torch.cuda.synchronize()
    except Exception as e:   # RuntimeError or NotImplementedError, by torch version
        return None, f"not exposed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
    return (launch, c), "exposed"


def row_wise_stand_in(sa, sb, n):
    """Row-wise scales of the block scales' shapes' first column / row: cuBLAS's promoting row-wise path on them
    is the speed reference of a block-scaled call where torch does not expose cuBLAS's blockwise path."""
    return sa[:, :1].contiguous(), sb[:1, :].repeat_interleave(BLOCK, dim=1)[:, :n].contiguous()


def block_launchers(a8, w8, sa, sb, c_ours):
    """The contenders of a block-scaled row: tg.matmul, cuBLAS's blockwise path or (where torch does not expose
    it) its promoting row-wise one on the same fp8 values, for speed only, and DeepGEMM where it is installed;
    and what cuBLAS's blockwise path did."""
    import tilegemm as tg
    blockwise, status = cublas_blockwise(a8, w8, sa, sb)
    if blockwise is None:
        blockwise = (cublas(a8, w8, *row_wise_stand_in(sa, sb, w8.shape[0]), fast_accum=False)[0], None)
    launchers = {"cuBLAS": blockwise,
                 "tg.matmul": ((lambda: tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                                  out=c_ours)), c_ours)}
    deepgemm = deepgemm_fp8.contender(a8, w8, sa, sb.t())   # sb is the transpose of W's row-major block scales
    print(f"  DeepGEMM: {'timed' if deepgemm else 'not installed'}")
    if deepgemm:
        launchers["DeepGEMM"] = deepgemm
    return launchers, status


def design_launchers(m, n, k, scaling, ranked, operands, types=SAME):
    """{contender: (launch, output)} of the designs in `ranked` ([(params, predicted seconds)]), each run as its
    own kernel on the operands as stored (a8, w8 [N, K], then the scales as the kernel takes them), and
    {contender: its design and predicted us} (design_contenders.annotate's)."""
    from tilegemm.ops import designs, scaling as scales
    names = ["design: " + designs.label(dict(params)) for params, _ in ranked]
    if len(set(names)) < len(names):   # labels leave out some fields (the store slices): such designs would merge
        raise ValueError(f"two designs share a name among {names}; time them in separate runs")
    a8, w8, sa, sb = operands
    stored = ((sa.T, sb.T) if scaling == "block" else   # blockwise scales are the transposes of row-major arrays
              tuple(scales.tensors((sa, sb), m, n, k).values()))
    launchers, predicted = {}, {}
    for name, (params, seconds) in zip(names, ranked):
        design = designs.build(m, n, k, *builder_args(m, n, k, scaling, params, types))   # its kernel(s), as one call
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        launchers[name] = ((lambda design=design, c=c: design(a8, w8, *stored, out=c)), c)
        predicted[name] = dict(design=designs.label(dict(params)), predicted_us=seconds * 1e6)
    return launchers, predicted


def call_rows(m, n, k, scaling, rounds, operands, blockwise_exposed, label):
    """The calls a user writes, a fresh output each, in a plain Python loop between events (host time included),
    interleaved in a random order per round: tg.matmul's against torch._scaled_mm's (default accumulation; for
    block scales its blockwise path, or its row-wise one where torch does not expose that)."""
    import tilegemm as tg
    a8, w8, sa, sb = operands
    ref_a, ref_b = (sa, sb) if scaling != "block" or blockwise_exposed else row_wise_stand_in(sa, sb, n)
    calls = {"call: tg.matmul": lambda: tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16),
             "call: torch._scaled_mm": lambda: torch._scaled_mm(a8, w8.t(), scale_a=ref_a, scale_b=ref_b,
                                                                out_dtype=torch.bfloat16)}
    iters = loop_iterations(calls["call: torch._scaled_mm"], budget_ms=100.0 / rounds)
    samples = interleaved(calls, rounds, lambda name, _: loop_ms(calls[name], iters), seed=1)
    reference = statistics.median(samples["call: torch._scaled_mm"])
    rows = []
    for name, got in samples.items():
        ms = statistics.median(got)
        rows.append(dict(contender=name, m=m, n=n, k=k, dtype=label, ms=ms,
                         tflops=2.0 * m * n * k / ms / 1e9, vs_cublas=reference / ms, rel_error=float("nan"),
                         rounds=rounds, iters_per_round=iters, graph_replay=False,
                         spread_pct=100 * (max(got) - min(got)) / ms))
        print(f"  {name:28s} {ms:9.4f} ms (plain loop)  {reference / ms:6.3f}x torch._scaled_mm's call")
    return rows


def bench(m, n, k, scaling, rounds, target, all_designs=False, calls=False, per_family=None, given=(), tuned=False,
          types=SAME):
    """tg.matmul and torch._scaled_mm (both accumulations; "cuBLAS" is the default, use_fast_accum=False) on one
    shape and scaling, A and W of fp8 `types`: measure()'s rows, each with its two errors (block scaling:
    block_launchers' contenders); with `all_designs`, every design the model ranks too, and the designs `given` by
    hand (given_designs), each row with its predicted time; with `calls`, the user's calls in a plain loop too
    (call_rows); with `tuned`, the design tg.tune_matmul measures fastest (tuned_launchers)."""
    import tilegemm as tg
    block = scaling == "block"
    a8, w8, sa, sb, ref, unquantized = operands(m, n, k, scaling, types)
    print(f"  tg.matmul chose {dict(design_of(m, n, k, scaling, target, types)[0])}")
    c_ours = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=c_ours)   # choose, compile, prepare
    if block:
        launchers, status = block_launchers(a8, w8, sa, sb, c_ours)
        print(f"  cuBLAS blockwise (torch._scaled_mm): {status}")
    else:
        c_promoted = torch.empty_like(c_ours)
        promoted = (lambda: tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, promote=True,
                                      out=c_promoted))
        promoted()   # choose, compile, prepare
        launchers = {"cuBLAS": cublas(a8, w8, sa, sb, fast_accum=False),
                     "cuBLAS fast accum": cublas(a8, w8, sa, sb, fast_accum=True),
                     "tg.matmul": ((lambda: tg.matmul(a8, w8.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                                      out=c_ours)), c_ours),
                     PROMOTED: (promoted, c_promoted)}
    ranked = ((ranked_designs(m, n, k, scaling, target, per_family, types) if all_designs else [])
              + given_designs(m, n, k, scaling, target, given, types))
    designed, predicted = design_launchers(m, n, k, scaling, ranked, (a8, w8, sa, sb), types)
    launchers.update(designed)
    if tuned:
        designed, tuned_design = tuned_launchers(m, n, k, scaling, (a8, w8, sa, sb), types)
        launchers.update(designed)
        predicted.update(tuned_design)
    label = dtype_label(scaling, types)
    rows = annotate(measure(launchers, ref, (m, n, k), label, rounds, target_ms=200.0), predicted)
    for row in rows:
        out = launchers[row["contender"]][1]
        row.update(scaling=scaling, rel_error_vs_inputs=float("nan") if out is None else float(
            torch.linalg.norm(out.double() - unquantized) / torch.linalg.norm(unquantized)))
        if block:
            row.update(cublas_blockwise=status)
    del ref, unquantized
    if calls:
        rows += [dict(row, scaling=scaling, rel_error_vs_inputs=float("nan"))
                 for row in call_rows(m, n, k, scaling, rounds, (a8, w8, sa, sb), block and status == "exposed",
                                      label)]
    return rows


def summary(rows):
    """The standing figures: tg.matmul's speed against torch._scaled_mm per scaling at 8192^3 (vs_cublas), and
    its block-scaled TFLOP/s at 4096x7168x16384."""
    figures = {}
    for key, (scaling, shape, field) in STANDING.items():
        for row in rows:
            if (row["contender"], row["dtype"], (row["m"], row["n"], row["k"])) == \
                    ("tg.matmul", dtype_label(scaling), shape):
                figures[key] = row[field]
    return figures


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--jobs", type=int, default=min(6, os.cpu_count()), help="processes compiling kernels first")
    p.add_argument("--out", default="out")
    p.add_argument("--scalings", nargs="+", choices=SCALINGS, default=list(SCALINGS))
    p.add_argument("--shapes", type=parse_shapes, default=SHAPES,
                   help="MxNxK,MxNxK,... instead of the issue's three shapes")
    p.add_argument("--decode", action="store_true",
                   help="the issue-12 decode grid (M 1-128 against three weights) instead of --shapes")
    p.add_argument("--all-designs", action="store_true",
                   help="also time every design the model ranks for each call, beside its predicted time")
    p.add_argument("--per-family", type=int, default=None,
                   help="--all-designs: only the fastest-predicted that many designs of each family")
    p.add_argument("--design", action="append", type=parse_fields, default=[],
                   help="also time tg.matmul's pick with these fields replaced (repeatable), e.g. "
                        "tile_n=256,schedule=cooperative,cluster_m=2, or cluster_m=2 alone")
    p.add_argument("--calls", action="store_true",
                   help="also time the calls a user writes (tg.matmul, torch._scaled_mm) in a plain Python loop")
    p.add_argument("--tuned", action="store_true",
                   help=f"also time {TUNED!r}: the design tg.tune_matmul measures fastest for each call")
    p.add_argument("--types", type=parse_types, default=SAME,
                   help="A's and W's fp8 types, e.g. e5m2,e4m3 (default e4m3,e4m3); others than that take "
                        "--scalings tensor row (block scales are e4m3's here)")
    args = p.parse_args()
    if args.types != SAME and "block" in args.scalings:
        p.error(f"--types {','.join(args.types)} takes --scalings tensor row: block scales are e4m3's here")
    target = gpu_target()
    shapes = decode_shapes() if args.decode else args.shapes
    jobs = [(*shape, scaling) for shape in shapes for scaling in args.scalings]
    design_jobs = [(*job, params) for job in jobs for params, _ in
                   (ranked_designs(*job, target, args.per_family, args.types) if args.all_designs else [])
                   + given_designs(*job, target, args.design, args.types)
                   + (tuning_candidates(*job, target, args.types) if args.tuned else [])]
    precompile(jobs + design_jobs, args.jobs, target, args.types)
    rows = []
    for job, (m, n, k, scaling) in enumerate(jobs):
        print(f"fp8 {dtype_label(scaling, args.types)}: {m}x{n}x{k}")
        rows += [dict(row, job=job) for row in bench(m, n, k, scaling, args.rounds, target, args.all_designs,
                                                      args.calls, args.per_family, args.design, args.tuned,
                                                      args.types)]
        for row in (r for r in rows if r["job"] == job):
            print(f"  {row['contender']:20s} err vs float64 {row['rel_error']:.2e} (of the fp8 values), "
                  f"{row['rel_error_vs_inputs']:.2e} (of the unquantized inputs)")
    meta = dict(date=datetime.datetime.now().isoformat(timespec="seconds"), device=torch.cuda.get_device_name(),
                torch=torch.__version__, cuda=torch.version.cuda, rounds=args.rounds,
                inputs=f"iid normal, A quantized to {args.types[0]} and W to {args.types[1]} with amax scales "
                       "(per tensor, row or 1x128 / 128x128 block)",
                summary=summary(rows),
                timing="CUDA graph replay between events, contenders interleaved in a random order per round, "
                       "median of rounds")
    print("standing figures: " + ", ".join(f"{key} {value:.4f}" for key, value in meta["summary"].items()))
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    print("\n" + write_outputs(os.path.join(args.out, f"fp8-{stamp}"), meta, rows))


if __name__ == "__main__":
    main()
