"""What scripts/sanitize.sh runs under compute-sanitizer: tg.matmul, the fastest-predicted design of each family
tg.matmul chooses among (those a shape has), the designs tg.tune_matmul times beyond them (clusters, the swapped
128-row tile), and every Hopper example, at ragged shapes, in f16 and bf16; tg.matmul's fused epilogues (reading
per-column, per-row and [M, N] tensors) at the same shapes; and tg.matmul's fp8 calls (e4m3 with
per-tensor, row-wise and block scales, and per-tensor and row-wise ones promoted every K block; e4m3 by e5m2
row-wise) at ragged shapes whose rows TMA can read, and the block-scaled design that
pads its scales first where they need it. Each result is checked against
float64 with every element written (outputs poisoned).

    python3 scripts/sanitize_targets.py [--shapes 200x264x136 40x1016x520 1000x1016x520] [--only "tg.matmul"]
"""
import argparse
import functools
import glob
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402

import tilegemm as tg  # noqa: E402
from tilegemm.ops import blockscaling, designs, dispatch, tuned, tuning  # noqa: E402
from tilegemm.showcase import example_layouts, load_example, random_inputs, stored_operands  # noqa: E402
from tilegemm.testing import compare  # noqa: E402

SHAPES = [(200, 264, 136), (40, 1016, 520), (1000, 1016, 520),
          (1224, 2056, 264)]   # 170 128x128 tiles: a round and a tail of 38, which a stream-K design splits
FP8_SHAPES = [(200, 264, 400), (40, 1016, 528), (1000, 1016, 1040)]   # K of 16-byte rows, ragged K blocks
# tg.matmul's fp8 calls, A of e4m3: (scaling, promote=, W's type). Block scales always promote, the others where
# asked; a W of e5m2 stands for the gradients of fp8 training's weight-gradient product.
FP8_CALLS = (("tensor", False, "e4m3"), ("row", False, "e4m3"), ("block", False, "e4m3"),
             ("tensor", True, "e4m3"), ("row", True, "e4m3"), ("row", False, "e5m2"))
FP8_ERROR = 4e-3   # relative Frobenius error an fp8 result must stay under: its bf16 output's 2^-8 (the GPU tests')


def targets():
    """(name, run(a, b, m, n, k, dtype), reference(a, b, m, n)) for tg.matmul, its fused epilogues and every Hopper
    example (given A and B as the example stores them); run returns C, or None where the target has no kernel for
    the problem."""
    yield "tg.matmul", lambda a, b, m, n, k, dtype: tg.matmul(a, b), product
    for family in designs.FAMILIES:
        yield f"tg.matmul design ({family})", lambda a, b, m, n, k, dtype, family=family: run_family(
            family, a, b, m, n, k, dtype), product
    for base, cluster in TUNING_KINDS:
        yield f"tg.tune_matmul candidate ({tuning_kind_name(base, cluster)})", (
            lambda a, b, m, n, k, dtype, base=base, cluster=cluster: run_tuning_candidate(base, cluster, a, b,
                                                                                       m, n, k, dtype)), product
    for name, (fn, _, _) in EPILOGUES.items():
        yield f"tg.matmul epilogue ({name})", (lambda a, b, m, n, k, dtype, fn=fn, name=name: tg.matmul(
            a, b, epilogue=fn, **epilogue_tensors(name, m, n, a.dtype))), functools.partial(epilogue_reference, name)
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "hopper_*.py"))):
        module = load_example(path)
        layouts = example_layouts(module)
        yield module.__name__, lambda a, b, m, n, k, dtype, module=module, layouts=layouts: module.build(
            m, n, k, dtype=dtype)(*stored_operands(a, b, *layouts)), product


def silu_of_bias_times_row_scale(acc, bias, row_scale):
    """A fused epilogue reading a per-column and a per-row vector (swap-AB designs run it on C^T's tiles)."""
    x = acc + bias
    return x * tg.sigmoid(x) * row_scale


def silu_plus_residual(acc, residual):
    """A fused epilogue reading an [M, N] tensor (which swap-AB designs cannot: tg.matmul picks another)."""
    return acc * tg.sigmoid(acc) + residual


def _silu(x):
    return x / (1.0 + np.exp(-x))


# name: (the epilogue, its tensors' shapes for an [m, n] result, its float64 value from a @ b and the tensors)
EPILOGUES = {
    "bias + SiLU, row scale": (silu_of_bias_times_row_scale, lambda m, n: dict(bias=(n,), row_scale=(m, 1)),
                               lambda c, t: _silu(c + t["bias"]) * t["row_scale"]),
    "SiLU + residual": (silu_plus_residual, lambda m, n: dict(residual=(m, n)),
                        lambda c, t: _silu(c) + t["residual"]),
}


def epilogue_tensors(name, m, n, dtype, seed=5):
    """The tensors of epilogue `name` (EPILOGUES) for an [m, n] result, in `dtype`: normal, row scales uniform in
    [0.5, 2]."""
    rng = np.random.default_rng(seed)
    return {key: (rng.uniform(0.5, 2, shape) if key == "row_scale" else rng.standard_normal(shape)).astype(dtype)
            for key, shape in EPILOGUES[name][1](m, n).items()}


def epilogue_reference(name, a, b, m, n, seed=5):
    """The float64 value of a @ b through epilogue `name` with its `epilogue_tensors`."""
    tensors = epilogue_tensors(name, m, n, a.dtype, seed)
    return EPILOGUES[name][2](product(a, b), {key: t.astype(np.float64) for key, t in tensors.items()})


def product(a, b, *_):
    """The float64 product a @ b: the reference of a plain GEMM target."""
    return a.astype(np.float64) @ b.astype(np.float64)


def fp8_operands(m, n, k, scaling, seed=5, w_type="e4m3"):
    """e4m3 a [m, k] and w [n, k] (of fp8 `w_type`), `scaling`'s scales spread over two orders of magnitude (one
    for the tensor, per row of a and of w, or per 1 x 128 group of a [m, Kb] and 128 x 128 block of w [Kb, Nb]),
    and the float64 reference."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(tg.float8_e4m3fn)
    w = rng.standard_normal((n, k), dtype=np.float32).astype(tg.lang.dtypes.as_dtype(w_type))
    kb, nb = blockscaling.blocks(k), blockscaling.blocks(n)
    shapes = {"tensor": ((), ()), "row": ((m, 1), (1, n)), "block": ((m, kb), (kb, nb))}[scaling]
    sa, sb = (np.asarray(10.0 ** rng.uniform(-1, 1, shape), np.float32) for shape in shapes)
    if scaling == "block":   # the float64 product of the dequantized operands, as the block-scaled example has it
        ref = load_example(os.path.join(ROOT, "examples", "fp8_block_scaled_matmul.py")).reference(a, w, sa, sb)
    else:
        ref = (a.astype(np.float64) @ w.astype(np.float64).T) * sa * sb
    return a, w, sa, sb, ref


def fp8_call(m, n, k, scaling, seed=5, promote=False, w_type="e4m3"):
    """(tg.matmul's bf16 C of fp8_operands' a @ w.T with their scales, promoted every K block if `promote`, its
    float64 reference)."""
    a, w, sa, sb, ref = fp8_operands(m, n, k, scaling, seed, w_type)
    return tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=tg.bfloat16, promote=promote), ref


def fp8_padded_call(m, n, k):
    """(C, reference) of the fastest-predicted block-scaled design that pads its scales first
    (tilegemm.ops.scale_padding), whatever tg.matmul picks, on fp8_operands' row-major scales; None where they need
    no padding."""
    a, w, sa, sb, ref = fp8_operands(m, n, k, "block")
    scales = blockscaling.BlockScales("mk", "kn")
    ranked = designs.block_scaled_predictions(m, n, k, "float8_e4m3fn", *dispatch._target(False), scales)
    params = next((params for params, _ in ranked if params.get("pad_scales")), None)
    if params is None:
        return None
    design = designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(params.items())), block_scales=scales)
    return design(a, w, sa, sb), ref


def family_design(family, m, n, k, dtype_name, device, num_sms):
    """The build() parameters (items) of the fastest-predicted design of `family` for a [m, k] @ b [k, n] on
    `device`; None when the family has no design for this problem."""
    ranked = designs.predictions(m, n, k, dtype_name, device, num_sms)
    return next((tuple(sorted(params.items())) for params, _ in designs.family_firsts(ranked)
                 if designs.family(params) == family), None)


def run_family(family, a, b, m, n, k, dtype):
    """C from `family_design` run on this GPU as tg.matmul would run it; None when the family has none here."""
    name = tg.lang.dtypes.name(dtype)
    params = family_design(family, m, n, k, name, *dispatch._target(False))
    return None if params is None else designs.build(m, n, k, name, params)(a, b)


# The designs tg.tune_matmul times beyond tg.matmul's families: the model's pick in clusters, the swapped 128-row
# tile, and that tile in clusters (tilegemm.ops.tuning.candidates).
TUNING_KINDS = [("pick", c) for c in designs.CLUSTER_SIZES] + [("swapped", c) for c in (1, *designs.CLUSTER_SIZES)]


def tuning_kind_name(base, cluster):
    what = "the model's pick" if base == "pick" else f"swapped {designs.SWAPPED_TILE_M}-row tile"
    return what + (f" in clusters of {cluster}" if cluster > 1 else "")


def tuning_design(base, cluster, m, n, k, dtype_name, device, num_sms):
    """The build() parameters (items) of the candidate of tg.tune_matmul for a [m, k] @ b [k, n] that is the
    model's pick (`base` "pick") or the swapped 128-row tile ("swapped") in clusters of `cluster` (1: none); None
    when tuning times no such design for the problem."""
    problem = tuned.Problem(m, n, k, dtype_name, device, num_sms, "mk", "kn")
    params = tuning.pick(problem) if base == "pick" else tuning.swapped_tile(problem)
    if params is not None and cluster > 1:
        params = tuning.in_clusters(problem, params, cluster)
    run = None if params is None else tuning.as_run(problem, params)   # launched as tuning launches it
    items = None if run is None else tuple(sorted(run[0].items()))
    return items if items in _tuning_candidates(problem) else None


@functools.lru_cache(maxsize=None)
def _tuning_candidates(problem):
    return {tuple(sorted(params.items())) for params, _ in tuning.candidates(problem)}


def run_tuning_candidate(base, cluster, a, b, m, n, k, dtype):
    """C from `tuning_design` run on this GPU; None when tuning has no such design for the problem."""
    name = tg.lang.dtypes.name(dtype)
    params = tuning_design(base, cluster, m, n, k, name, *dispatch._target(False))
    return None if params is None else designs.build(m, n, k, name, params)(a, b)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="*", default=[f"{m}x{n}x{k}" for m, n, k in SHAPES])
    p.add_argument("--fp8-shapes", nargs="*", default=[f"{m}x{n}x{k}" for m, n, k in FP8_SHAPES])
    p.add_argument("--only", nargs="*", default=None, metavar="PREFIX",
                   help="run only the targets whose name starts with one of these (e.g. 'tg.matmul design')")
    args = p.parse_args()
    tg.set_debug(poison_outputs=True)
    failures = 0
    for name, run, reference in targets():
        if args.only is not None and not name.startswith(tuple(args.only)):
            continue
        for text in args.shapes:
            m, n, k = (int(x) for x in text.split("x"))
            for dtype in (tg.float16, tg.bfloat16):
                a, b = random_inputs(m, n, k, dtype, seed=5)
                c = run(a, b, m, n, k, dtype)
                if c is None:
                    continue
                result = compare(c, reference(a, b, m, n), k=k, dtype=dtype)
                failures += report(f"{name} {text} {tg.lang.dtypes.name(dtype)}", result.ok, result)
    for scaling, promote, w_type in FP8_CALLS:
        name = f"tg.matmul fp8 {scaling}" + (", promoted" if promote else "")
        if args.only is not None and not name.startswith(tuple(args.only)):
            continue
        types = "e4m3" if w_type == "e4m3" else f"e4m3 by {w_type}"
        for text in args.fp8_shapes:
            m, n, k = (int(x) for x in text.split("x"))
            failures += report(f"{name} {text} {types}",
                               *fp8_check(*fp8_call(m, n, k, scaling, promote=promote, w_type=w_type), k))
    name = "tg.matmul fp8 block, scales padded first"
    for text in args.fp8_shapes if args.only is None or name.startswith(tuple(args.only)) else ():
        m, n, k = (int(x) for x in text.split("x"))
        padded = fp8_padded_call(m, n, k)
        if padded is not None:
            failures += report(f"{name} {text} e4m3", *fp8_check(*padded, k))
    return 1 if failures else 0


def fp8_check(c, ref, k):
    """(ok, the Comparison) of an fp8 result: every element written and the relative error under FP8_ERROR.
    compare's per-element rule assumes f32 accumulation; fp8 WGMMAs sum with fewer bits (promotion or not)."""
    result = compare(c, ref, k=k, dtype=tg.bfloat16)
    return result.unwritten == 0 and result.frobenius < FP8_ERROR, result


def report(what, ok, result):
    """Prints one result's line (sanitize.sh counts the ' ok ' ones); 1 if it is wrong."""
    print(f"{what}: {'ok' if ok else 'WRONG'} (unwritten {result.unwritten}, relative error "
          f"{result.frobenius:.1e})", flush=True)
    return int(not ok)


if __name__ == "__main__":
    sys.exit(main())
