"""Runs one kernel file through every stage tilegemm has, printing what each stage saw.

Stages: trace + verify (and print the graph size), budget table (performance
model), lower + compile for the file's arch (resources and the key
instructions found in PTX/SASS), numpy interpreter against a numpy reference
at small and ragged shapes, and, where a Hopper GPU is present, a run against
numpy and a timing beside cuBLAS (torch.mm). Used by every example's __main__
and by `tilegemm run` (`python -m tilegemm`). What a kernel file defines is
`CONTRACT`; `load_kernel_file` checks it.
"""
import argparse
import importlib.util
import os
import time

import numpy as np

from .errors import CompileError
from .lang import dtypes as _dtypes
from .lower.emit import EMITTERS
from .model.devices import REFERENCE_PARTS
from .model.layouts import MMA_ORDER, check_layouts, operand_specs

CONTRACT = """\
A kernel file is a Python file that defines
  build(m, n, k, dtype=tg.float16, **config) -> tg.Kernel
      the kernel computing c [M, N] = a [M, K] @ b [K, N] for one problem shape
  ARCH = "sm_90a"             the architecture it is compiled for: "sm_90a" (Hopper) or "sm_100a" (Blackwell)
  SHAPES = {"interpret": [(200, 136, 72), (40, 24, 8)],   # (M, N, K) run in the numpy interpreter
            "benchmark": (4096, 4096, 4096)}              # (M, N, K) traced, budgeted, compiled and timed
and may define
  CONFIG = dict(tile_m=128, tile_n=128)    build's defaults; a_layout="km" and b_layout="nk" there say the
                                           kernel takes A stored [K, M] and B stored [N, K]
Every file in tilegemm's examples/ is one; examples/hopper_v2_tma_wgmma.py is a short one."""


class KernelFileError(ValueError):
    """A kernel file is missing, or does not define what CONTRACT asks for."""

# Instructions each back-end feature must leave in the PTX, for the report.
PTX_MARKERS = {
    "wgmma": "wgmma.mma_async",
    "tma load": "cp.async.bulk.tensor",
    "tma store": "cp.async.bulk.tensor.2d.global.shared",
    "setmaxnreg": "setmaxnreg",
    "multicast": ".multicast::cluster",
    "cp.async": "cp.async.ca.shared",
    "fma": "fma.rn.f32",
    "tcgen05.mma": "tcgen05.mma",
}


def load_example(path):
    """Imports an example script by path and returns the module."""
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_kernel_file(path):
    """Imports a kernel file and checks it against CONTRACT; a KernelFileError names every part that is missing
    or malformed."""
    if not os.path.isfile(path):
        raise KernelFileError(f"no such file: {path}\n\n{CONTRACT}")
    module = load_example(path)
    problems = contract_problems(module)
    if problems:
        raise KernelFileError(f"{path} is not a tilegemm kernel file:\n" + "\n".join(f"  - {p}" for p in problems)
                              + f"\n\n{CONTRACT}")
    return module


def contract_problems(module):
    """What `module` lacks of CONTRACT, one line each (empty when it is a kernel file)."""
    problems = []
    if not callable(getattr(module, "build", None)):
        problems.append("no build(m, n, k, dtype=...) function returning the tg.Kernel")
    arch = getattr(module, "ARCH", None)
    if arch not in EMITTERS:
        problems.append(f"ARCH is {'not defined' if arch is None else repr(arch)}; it names the architecture to "
                        f"compile for: {' or '.join(map(repr, EMITTERS))}")
    shapes = getattr(module, "SHAPES", None)
    if not isinstance(shapes, dict):
        problems.append("SHAPES is not defined: a dict with 'interpret' (a list of (M, N, K)) and 'benchmark' "
                        "(one (M, N, K))")
    else:
        if not (isinstance(shapes.get("interpret"), (list, tuple)) and shapes["interpret"]
                and all(_is_shape(s) for s in shapes["interpret"])):
            problems.append(f"SHAPES['interpret'] is {shapes.get('interpret')!r}; it lists the (M, N, K) shapes "
                            "to run in the numpy interpreter, e.g. [(200, 136, 72)]")
        if not _is_shape(shapes.get("benchmark")):
            problems.append(f"SHAPES['benchmark'] is {shapes.get('benchmark')!r}; it is one (M, N, K), e.g. "
                            "(4096, 4096, 4096)")
    if not isinstance(getattr(module, "CONFIG", {}), dict):
        problems.append(f"CONFIG is {module.CONFIG!r}; when defined it is a dict of build's defaults")
    return problems


def _is_shape(shape):
    return isinstance(shape, (list, tuple)) and len(shape) == 3 and all(isinstance(d, int) and d > 0 for d in shape)


def random_inputs(m, n, k, dtype, seed=0):
    """iid-normal A [m,k] and B [k,n] in `dtype` (never zeros or integers: they hide bugs and run faster)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=np.float32).astype(dtype)
    b = rng.standard_normal((k, n), dtype=np.float32).astype(dtype)
    return a, b


def example_layouts(module, **config):
    """(a_layout, b_layout) an example's kernel takes its inputs in (tilegemm.model.layouts): those of its CONFIG,
    `config` overriding them; A [m,k] and B [k,n] where it names none."""
    chosen = dict(getattr(module, "CONFIG", {}), **config)
    return chosen.get("a_layout", "mk"), chosen.get("b_layout", "kn")


def stored_operands(a, b, a_layout="mk", b_layout="kn"):
    """A [m,k] and B [k,n] as a kernel taking its inputs in these layouts (tilegemm.model.layouts) is called with:
    "km" passes A.T [k,m] and "nk" B.T [n,k], each a row-major copy, as such arrays are stored."""
    check_layouts(a_layout, b_layout)
    return tuple(x if layout == MMA_ORDER[which] else np.ascontiguousarray(x.T)
                 for x, layout, which in ((a, a_layout, "A"), (b, b_layout, "B")))


def relative_error(out, a, b):
    """||out - a@b||_F / ||a@b||_F with the reference in float64 on the rounded inputs."""
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return float(np.linalg.norm(out.astype(np.float64) - ref) / np.linalg.norm(ref))


def _section(title):
    print(f"\n== {title}")


def stage_trace(module, shape, dtype):
    kernel = module.build(*shape, dtype=dtype)
    a, b = operand_specs(*shape, dtype, *example_layouts(module))
    t0 = time.perf_counter()
    graph = kernel.trace(a, b)
    ops = sum(1 for _ in graph.walk())
    print(f"traced and verified {graph.name} at {shape} {_dtypes.name(dtype)}: {ops} ops, "
          f"grid {graph.config['grid']}, {graph.config['num_threads']} warpgroup(s)/block "
          f"({time.perf_counter() - t0:.2f} s)")
    print("\n".join(str(graph).splitlines()[:6]) + "\n  ...")
    return kernel, (a, b)


def stage_budget(kernel, specs, device):
    from . import model
    print(model.budget(kernel.trace(*specs), device=device).table())


def stage_compile(kernel, specs, arch):
    t0 = time.perf_counter()
    lowered = kernel.lower(*specs, arch=arch)
    compiled = lowered.compile()
    print(f"lowered to CuTe DSL ({len(lowered.source.splitlines())} lines, {lowered.source_path}) and compiled "
          f"for {arch} in {time.perf_counter() - t0:.1f} s")
    print(f"resources: {lowered.resources}")
    found = [name for name, marker in PTX_MARKERS.items() if marker in lowered.ptx]
    print(f"instructions in PTX: {', '.join(found) or 'none of ' + ', '.join(PTX_MARKERS)}")
    serialized = compiled.meta.get("wgmma_serialized")
    if serialized is not None:
        print("WGMMAs: " + ("SERIALIZED by ptxas (see the PerformanceWarning)" if serialized
                            else "kept in flight (no HGMMA waits for the previous one)"))
    return compiled


def stage_interpret(module, dtype, shapes):
    for shape in shapes:
        a, b = random_inputs(*shape, dtype)
        t0 = time.perf_counter()
        out = module.build(*shape, dtype=dtype)(*stored_operands(a, b, *example_layouts(module)), interpret=True)
        err = relative_error(out, a, b)
        verdict = "ok" if err < 1e-2 else "WRONG"
        print(f"interpreted {shape}: relative error {err:.2e} ({verdict}, {time.perf_counter() - t0:.1f} s)")
        if err >= 1e-2:
            raise SystemExit(f"interpreter result differs from numpy at {shape}")


def stage_gpu(module, dtype, shape, check_shape):
    from .runtime import Stream, current_device, time_kernel
    device = current_device()
    print(f"GPU: {device.name} ({device.arch}, {device.sm_count} SMs)")
    layouts = example_layouts(module)
    a, b = random_inputs(*check_shape, dtype, seed=1)
    out = module.build(*check_shape, dtype=dtype)(*stored_operands(a, b, *layouts))
    err = relative_error(out, a, b)
    print(f"ran at {check_shape}: relative error vs numpy {err:.2e} ({'ok' if err < 1e-2 else 'WRONG'})")
    try:
        import torch
    except ImportError:
        print("torch is not installed: no cuBLAS comparison")
        return
    m, n, k = shape
    tdtype = {np.dtype(np.float16): torch.float16}.get(np.dtype(dtype), torch.bfloat16)
    specs = operand_specs(m, n, k, dtype, *layouts)
    at, bt = (torch.randn(*spec.shape, device="cuda", dtype=tdtype) for spec in specs)   # as the kernel takes them
    ct = torch.empty(m, n, device="cuda", dtype=tdtype)
    a_mat, b_mat = (x if layout == MMA_ORDER[which] else x.T for x, layout, which in zip((at, bt), layouts, "AB"))
    compiled = module.build(m, n, k, dtype=dtype).lower(*specs, arch=device.arch).compile()
    stream = Stream(torch.cuda.current_stream().cuda_stream)   # the compiled kernel itself, no per-call checks
    ours = time_kernel(lambda: compiled(at.data_ptr(), bt.data_ptr(), ct.data_ptr(), stream=stream.handle),
                       warmup=10, iters=50, stream=stream)
    cublas = time_kernel(lambda: torch.mm(a_mat, b_mat, out=ct), warmup=10, iters=50, stream=stream)
    tflops = lambda ms: 2 * m * n * k / ms / 1e9
    print(f"{shape}: tilegemm {ours:.3f} ms ({tflops(ours):.0f} TFLOP/s), cuBLAS {cublas:.3f} ms "
          f"({tflops(cublas):.0f} TFLOP/s), ratio {cublas / ours:.3f}x (mean of 50 launches each; "
          "benchmarks/bench_hopper.py interleaves them for numbers worth quoting)")


def gpu_present():
    """True when cuda-python finds a CUDA device."""
    from .runtime import device_count
    return device_count() > 0


def model_device(arch, requested=None):
    """The device the performance model budgets an `arch` kernel for: `requested` (a --device name), else the GPU in
    use where it is of that architecture (its sheet, with the clusters the driver says it holds: ops.dispatch's
    live_sheet), else the architecture's reference part (model.devices.REFERENCE_PARTS' name)."""
    if requested:
        return requested
    if gpu_present():
        from .ops.dispatch import live_sheet
        from .runtime import current_device
        if current_device().arch == arch:
            return live_sheet(current_device())
    return REFERENCE_PARTS[arch]


def add_arguments(parser):
    """The options of the main job (`tilegemm run` and every example script)."""
    parser.add_argument("--shape", type=int, nargs=3, default=None, metavar=("M", "N", "K"),
                        help="the problem traced, budgeted, compiled and timed (default: SHAPES['benchmark'])")
    parser.add_argument("--dtype", default="float16", choices=["float16", "bfloat16"])
    parser.add_argument("--device", default=None,
                        help="device the performance model assumes (default: the GPU in use where it is of the "
                             "kernel's architecture, else h200 for sm_90a, b200 for sm_100a)")
    parser.add_argument("--skip", nargs="*", default=[], choices=["budget", "compile", "interpret", "gpu"],
                        help="stages to leave out")


def main(module, argv=None):
    """Runs every stage for a kernel file's module, with options from `argv` (see add_arguments)."""
    doc = (module.__doc__ or "").strip()
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    add_arguments(parser)
    return run(module, parser.parse_args(argv))


def run(module, args):
    """Runs every stage for a kernel file's module (see the module docstring of tilegemm.showcase)."""
    dtype = _dtypes.as_dtype(args.dtype)
    device = model_device(module.ARCH, args.device)
    shape = tuple(args.shape or module.SHAPES["benchmark"])
    print(f"tilegemm example {module.__name__} ({module.ARCH})")
    _section("trace + verify")
    kernel, specs = stage_trace(module, shape, dtype)
    if "budget" not in args.skip:
        _section(f"budget table (performance model, {device})")
        stage_budget(kernel, specs, device)
    if "compile" not in args.skip:
        _section(f"lower + compile for {module.ARCH}")
        try:
            stage_compile(kernel, specs, module.ARCH)
        except CompileError as e:  # e.g. an arch without a back end: say so and carry on with the other stages
            print(f"not compiled: {e}")
    if "interpret" not in args.skip:
        _section("numpy interpreter vs numpy")
        stage_interpret(module, dtype, module.SHAPES["interpret"][:2])
    if "gpu" not in args.skip:
        _section("GPU")
        if module.ARCH != "sm_90a":
            print("Blackwell (sm_100a) hardware is not available to tilegemm's developers or here: no GPU run; "
                  "this kernel is checked in the interpreter (and by the stages above)")
        elif not gpu_present():
            print("no CUDA GPU on this machine: skipped the GPU run and the cuBLAS comparison")
        else:
            stage_gpu(module, dtype, shape, check_shape=(1000, 1016, 520))
    return 0
