"""The `tilegemm` command (also `python -m tilegemm`): run, bench, tune and precompile kernels.

    tilegemm [run] [FILE] [--shape M N K] ...   the main job on a kernel file (default: the flagship)
    tilegemm bench {hopper,calls} [ARGS]        the GPU benchmarks of the source tree's benchmarks/
    tilegemm tune [FILE] --param NAME=V1,V2     rank a space with the model; measure the best on a GPU
    tilegemm tune-matmul --shapes MxNxK         choose tg.matmul's designs for these shapes by timing on the GPU
    tilegemm precompile [FILE] --shapes MxNxK   fill the compile cache, in parallel processes

`run` is the default command, so `python -m tilegemm` and `python -m tilegemm
examples/x.py --shape ...` run the main job. What a kernel file defines is
tilegemm.showcase.CONTRACT.
"""
import argparse
import ast
import concurrent.futures
import multiprocessing
import os
import subprocess
import sys
import time

from .ops.tuned import TunedDesigns
from .showcase import CONTRACT, KernelFileError, add_arguments, gpu_present, load_kernel_file, model_device
from .showcase import run as run_stages
from .tune.cache import ResultCache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILE = os.path.join(ROOT, "examples", "hopper_flagship.py")
BENCHMARKS = {"hopper": "bench_hopper.py", "calls": "bench_calls.py"}
DTYPES = ("float16", "bfloat16")
FP8_DTYPES = ("float8_e4m3fn", "float8_e5m2")
SCALES = ("tensor", "row", "block")   # tune-matmul --scales: how fp8 operands are scaled (tg.matmul's scale_a=/b=)

CACHE_HELP = ("Compiled kernels are cached on disk in $TILEGEMM_CACHE_DIR (default ~/.cache/tilegemm): the generated "
              f"source, PTX, cubin and the compiled module per kernel, the tuner's measured times "
              f"({ResultCache.FILE_NAME}) and the designs tune-matmul chose for tg.matmul ({TunedDesigns.FILE_NAME}).")


def main(argv=None):
    """Runs one command; returns the process's exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not argv or argv[0] not in COMMANDS and argv[0] not in ("-h", "--help"):
        argv = ["run", *argv]   # `tilegemm [FILE] [options]`: the main job
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command](args) or 0
    except KernelFileError as e:
        print(f"tilegemm {args.command}: {e}", file=sys.stderr)
        return 2


def run(args):
    """The main job: every stage of tilegemm on one kernel file."""
    return run_stages(load_kernel_file(args.file), args)


def bench(args):
    """One of the GPU benchmarks of the source tree, with its own arguments."""
    script = os.path.join(ROOT, "benchmarks", BENCHMARKS[args.benchmark])
    if not os.path.isfile(script):
        print(f"tilegemm bench: {script} is not here; the benchmarks live in the source repository's benchmarks/ "
              "directory, next to the tilegemm package", file=sys.stderr)
        return 2
    if not gpu_present():
        print("tilegemm bench times kernels on an NVIDIA Hopper GPU, and cuda-python finds no CUDA device on this "
              "machine. Without a GPU, `tilegemm tune` ranks configurations with the performance model and "
              "`tilegemm run FILE` checks a kernel in the numpy interpreter.", file=sys.stderr)
        return 1
    return subprocess.run([sys.executable, script, *args.args]).returncode


def tune(args):
    """Ranks a parameter space with the model; on a GPU of the file's architecture, measures the best."""
    from . import tune as tuning
    from .lang import dtypes
    module = load_kernel_file(args.file)
    space = dict(args.param)
    if not space:
        raise KernelFileError(f"name the values to try, e.g. --param tile_n=128,192,256 --param stages=3,4 "
                              f"(keyword arguments of {args.file}'s build)")
    shape = tuple(args.shape or module.SHAPES["benchmark"])
    dtype = dtypes.as_dtype(args.dtype)
    device = model_device(module.ARCH, args.device)
    measure = None
    if not args.no_measure and gpu_present():
        from .runtime import current_device
        if current_device().arch == module.ARCH:
            measure = tuning.GpuTimer(shape, dtype)
    if measure is None:
        print(f"no {module.ARCH} GPU to measure on (or --no-measure): the ranking is the performance model's "
              "prediction", file=sys.stderr)
    result = tuning.tune(module.build, shape, space, dtype=dtype, device=device, top_k=args.top_k, measure=measure)
    print(result.table())


def tune_matmul(args):
    """tg.tune_matmul on iid-normal operands of every shape and dtype: tg.matmul's later calls of those problems on
    this GPU (in any process using this cache) run the designs it records."""
    fp8 = [name for name in args.dtype if name in FP8_DTYPES]
    if (args.scales or args.promote) and len(fp8) < len(args.dtype):
        raise KernelFileError(f"--scales and --promote tune fp8 calls: --dtype {' '.join(FP8_DTYPES)}")
    if fp8 and not args.scales:
        raise KernelFileError(f"fp8 calls are scaled: --scales {'|'.join(SCALES)}")
    if not gpu_present():
        print("tilegemm tune-matmul times tg.matmul's designs on a GPU, and cuda-python finds no CUDA device on this "
              "machine; without one, tg.matmul chooses with the performance model", file=sys.stderr)
        return 1
    from .ops import tuning
    for shape in args.shapes:
        for dtype_name in args.dtype:
            a, b, scales = _tuning_operands(shape, dtype_name, args.weight or dtype_name in fp8, args.scales)
            print(repr(tuning.tune_matmul(a, b, **scales, promote=args.promote)), flush=True)


def _tuning_operands(shape, dtype_name, weight, scales=None):
    """iid-normal a [M, K] and b [K, N] on the GPU, b the transpose of a weight stored [N, K] with `weight`, and
    the keywords {scale_a, scale_b} of `scales` (SCALES; None: none): torch tensors where torch is installed, else
    tg.runtime.DeviceArrays (row-major, unscaled only)."""
    import numpy as np
    from .lang import dtypes
    m, n, k = shape
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s, dtype=np.float32).astype(dtypes.as_dtype(dtype_name))
            for s in ((m, k), (n, k) if weight else (k, n)))
    try:
        from .torch.host import from_numpy
    except ImportError:
        if weight or scales:
            raise KernelFileError("--weight and fp8 need torch (a transposed view of the weight); without it, tune "
                                  "f16 or bf16 a @ b with b stored [K, N]") from None
        from .runtime import DeviceArray
        return DeviceArray.from_numpy(a), DeviceArray.from_numpy(b), {}
    a, b = (from_numpy(x).cuda() for x in (a, b))
    return a, (b.T if weight else b), _scales(rng, m, n, k, scales)


def _scales(rng, m, n, k, kind):
    """{scale_a, scale_b}: float32 torch tensors on the GPU of `kind` (SCALES; None: {}), uniform in [0.5, 2]; block
    scales stored as torch._scaled_mm takes them (scale_a M-major, scale_b the transpose of a row-major array)."""
    if kind is None:
        return {}
    from .ops.blockscaling import blocks
    from .torch.host import from_numpy
    kb, nb = blocks(k), blocks(n)
    shapes = {"tensor": ((), ()), "row": ((m, 1), (1, n)), "block": ((kb, m), (nb, kb))}[kind]
    sa, sb = (from_numpy(rng.uniform(0.5, 2, shape).astype("float32")).cuda() for shape in shapes)
    return {"scale_a": sa.T if kind == "block" else sa, "scale_b": sb.T if kind == "block" else sb}


def precompile(args):
    """Compiles a kernel for every shape and dtype into the disk cache, one process per job."""
    from .lower import cache_dir
    if args.file is not None:
        load_kernel_file(args.file)   # its errors, once, before any process starts
    jobs = [(args.file, shape, dtype) for shape in args.shapes for dtype in args.dtype]
    print(f"compiling {len(jobs)} kernel(s) into {cache_dir()} with {args.jobs} process(es)")
    failed = 0
    context = multiprocessing.get_context("spawn")   # CuTe DSL's compiler does not survive a fork
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs, mp_context=context) as pool:
        for job, future in [(job, pool.submit(compile_job, *job)) for job in jobs]:
            try:
                print(future.result())
            except Exception as e:   # a job's failure is reported with its shape; the others go on
                failed += 1
                print(f"FAILED {_describe_job(*job)}: {type(e).__name__}: {e}")
    return 1 if failed else 0


def compile_job(path, shape, dtype_name):
    """Compiles one job's kernel and says where it came from; runs in a worker process of `precompile`."""
    start = time.perf_counter()
    kernel, specs, arch = job_kernel(path, shape, dtype_name)
    lowered = kernel.lower(*specs, arch=arch)
    lowered.compile()
    where = {"disk": "already in the cache", "memory": "already compiled"}.get(lowered.cache_hit, "compiled")
    return f"{_describe_job(path, shape, dtype_name)}: {where} ({time.perf_counter() - start:.1f} s)"


def job_kernel(path, shape, dtype_name):
    """(kernel, input specs, arch) of a precompile job: a kernel file's kernel, or when `path` is None the one
    tg.matmul picks for the shape on this machine's GPU (an H200 where there is none)."""
    from .lang import dtypes
    from .model.layouts import operand_specs
    from .showcase import example_layouts, load_example
    m, n, k = shape
    dtype = dtypes.as_dtype(dtype_name)
    if path is None:
        from .ops import dispatch
        kernel = dispatch.kernel_for(m, n, k, dtype_name, interpret=not gpu_present())
        return kernel, operand_specs(m, n, k, dtype), "sm_90a"
    module = load_example(path)
    return module.build(m, n, k, dtype=dtype), operand_specs(m, n, k, dtype, *example_layouts(module)), module.ARCH


def _describe_job(path, shape, dtype_name):
    what = os.path.basename(path) if path else "tg.matmul"
    return f"{what} {'x'.join(map(str, shape))} {dtype_name}"


# ----------------------------------------------------------------------------- arguments

COMMANDS = {"run": run, "bench": bench, "tune": tune, "tune-matmul": tune_matmul, "precompile": precompile}


def _parser():
    parser = argparse.ArgumentParser(
        prog="tilegemm", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write, check, model, compile and run matrix-multiplication kernels for NVIDIA Hopper and "
                    "Blackwell GPUs. Without a command, runs `tilegemm run` (the main job) with the arguments "
                    "given: `tilegemm examples/hopper_v2_tma_wgmma.py --shape 1024 1024 1024`.",
        epilog=f"{CONTRACT}\n\n{CACHE_HELP}\n\n`tilegemm COMMAND --help` describes each command.")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    text = dict(formatter_class=argparse.RawDescriptionHelpFormatter, epilog=f"{CONTRACT}\n\n{CACHE_HELP}")

    p = commands.add_parser("run", help="the main job: trace, verify, budget, compile, interpret and (on a GPU) "
                                        "run one kernel file", description=(
        "Runs a kernel file through every stage: trace + verify, the budget table, lower + compile for its ARCH, "
        "the numpy interpreter against numpy at SHAPES['interpret'], and on a Hopper GPU a run against numpy and "
        "a timing beside cuBLAS."), **text)
    _file_argument(p, "the main job runs")
    add_arguments(p)

    p = commands.add_parser("bench", help="a GPU benchmark from benchmarks/ (bench_hopper.py or bench_calls.py)",
                            description="Runs benchmarks/bench_hopper.py (the ladder and the flagship beside "
                                        "cuBLAS) or benchmarks/bench_calls.py (tg.matmul calls beside torch.mm) "
                                        "with the arguments that follow, e.g. `tilegemm bench hopper --quick "
                                        "--out out`. Needs a Hopper GPU and torch.")
    p.add_argument("benchmark", choices=sorted(BENCHMARKS))
    p.add_argument("args", nargs=argparse.REMAINDER, help="arguments of the benchmark script (see its --help)")

    p = commands.add_parser("tune", help="rank a kernel's parameter space with the model; measure the best on "
                                         "a GPU", description=(
        "Builds and traces every combination of --param values, drops those the verifier or the model rejects, "
        "ranks the rest by the budget table's predicted time and, on a GPU of the file's ARCH, measures the "
        "--top-k best (measured times are cached beside the compile cache)."), **text)
    _file_argument(p, "tune builds")
    p.add_argument("--param", action="append", type=_param, default=[], metavar="NAME=V1,V2",
                   help="a keyword of the file's build and the values to try (repeat for more parameters)")
    p.add_argument("--shape", type=int, nargs=3, default=None, metavar=("M", "N", "K"),
                   help="the problem (default: SHAPES['benchmark'])")
    p.add_argument("--dtype", default="float16", choices=DTYPES)
    p.add_argument("--device", default=None, help="device the model assumes (default: the GPU, else h200 for "
                                                  "sm_90a and b200 for sm_100a)")
    p.add_argument("--top-k", type=int, default=5, help="how many of the best predicted to measure on a GPU")
    p.add_argument("--no-measure", action="store_true", help="rank with the model only, even on a GPU")

    p = commands.add_parser("tune-matmul", help="choose tg.matmul's designs for a list of shapes by timing them on "
                                                "the GPU", description=(
        "Runs tg.tune_matmul for every shape and dtype on iid-normal operands on this GPU: the model's best "
        "designs, a swapped 128-row tile and clusters of blocks sharing a tile, each checked and timed; the "
        "fastest, where it beats the model's pick by 2%, is recorded beside the compile cache, and tg.matmul's "
        "later calls of that problem on this GPU run it. Needs a Hopper GPU."), **text)
    p.add_argument("--shapes", nargs="+", type=_shape, required=True, metavar="MxNxK",
                   help="problem shapes, e.g. 777x3000x1400 3000x5000x2000")
    p.add_argument("--dtype", nargs="+", default=["float16"], choices=DTYPES + FP8_DTYPES)
    p.add_argument("--weight", action="store_true",
                   help="b is a weight stored [N, K], as tg.matmul(x, w.T) takes it (a linear layer's; always so "
                        "for fp8)")
    p.add_argument("--scales", choices=SCALES, default=None,
                   help="fp8: tune calls with these scales: per tensor, per row of a and column of b, or block "
                        "scales (scale_a M-major and scale_b the transpose of a row-major array, as "
                        "torch._scaled_mm takes them; a record serves calls whose scales are stored so)")
    p.add_argument("--promote", action="store_true",
                   help="fp8: tune calls with promote=True (every 128-wide K block summed into f32)")

    p = commands.add_parser("precompile", help="compile kernels for a list of shapes into the disk cache, in "
                                               "parallel processes", description=(
        "Compiles, for every shape and dtype, the kernel tg.matmul picks for it (or FILE's kernel) and stores it "
        "in the compile cache, so that the first call in a program does not wait for the compiler. Needs no "
        "GPU; on a GPU machine tg.matmul's pick is made for that GPU."), **text)
    p.add_argument("file", nargs="?", default=None, metavar="FILE",
                   help="a kernel file (default: the kernels tg.matmul picks for these shapes)")
    p.add_argument("--shapes", nargs="+", type=_shape, required=True, metavar="MxNxK",
                   help="problem shapes, e.g. 4096x4096x4096 8192x8192x8192")
    p.add_argument("--dtype", nargs="+", default=["float16"], choices=DTYPES)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes compiling at once "
                                                                         "(default: one per CPU)")
    return parser


def _file_argument(parser, what):
    parser.add_argument("file", nargs="?", default=DEFAULT_FILE, metavar="FILE",
                        help=f"the kernel file {what} (default: examples/hopper_flagship.py, the flagship Hopper "
                             "kernel behind tg.matmul); what it defines is below")


def _shape(text):
    """'4096x4096x4096' -> (4096, 4096, 4096)."""
    try:
        shape = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        shape = ()
    if len(shape) != 3 or min(shape) < 1:
        raise argparse.ArgumentTypeError(f"a shape is MxNxK, e.g. 4096x4096x4096; got {text!r}")
    return shape


def _param(text):
    """'tile_n=128,192' -> ('tile_n', [128, 192]); values are Python literals (numbers, 'strings')."""
    name, _, values = text.partition("=")
    if not name.isidentifier() or not values:
        raise argparse.ArgumentTypeError(f"a parameter is NAME=V1,V2,..., e.g. tile_n=128,192; got {text!r}")
    return name, [_literal(v) for v in values.split(",")]


def _literal(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text   # a bare word, e.g. schedule=pingpong
