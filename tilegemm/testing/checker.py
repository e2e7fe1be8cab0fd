"""`check`: runs a kernel on random inputs in the interpreter (under several schedules) and on the GPU, and compares
every output with a numpy reference under the tolerance rule; a failure names the case and how to rerun it."""
import functools
from dataclasses import dataclass

import numpy as np

from ..errors import LaunchError
from ..kernel import Kernel
from ..lang import dtypes as _dtypes
from ..lang.tensorcore import ANY_LAYOUT_DTYPES
from ..showcase import random_inputs
from . import defaults, gpu
from .compare import compare

MODES = ("interpret", "gpu")


@dataclass(frozen=True)
class Case:
    """One run of a kernel: problem shape (M, N, K), input dtype, mode ('interpret' or 'gpu') and, in the
    interpreter, the schedule seed (None: the deterministic schedule)."""
    shape: tuple
    dtype: np.dtype
    mode: str
    seed: int | None = None

    def __str__(self):
        where = "on the GPU" if self.mode == "gpu" else (
            "in the interpreter, deterministic schedule" if self.seed is None else
            f"in the interpreter, schedule seed {self.seed}")
        return f"(M, N, K) = {self.shape}, {_dtypes.name(self.dtype)}, {where}"


@dataclass(frozen=True)
class Run:
    """A case that passed, with the Comparison of each output."""
    case: Case
    comparisons: tuple


class CheckFailure(AssertionError):
    """A kernel gave a wrong or unwritten output, or raised, in one case; the message says where and how to rerun it.

    `case`: the Case; `comparisons`: the Comparison of each output (empty when the kernel raised, the exception
    being the __cause__); `reproduce`: a line of Python that reruns exactly this case."""

    def __init__(self, message, case, comparisons, reproduce):
        super().__init__(message)
        self.case = case
        self.comparisons = comparisons
        self.reproduce = reproduce


def check(kernel_or_builder, reference, *, shapes, dtypes=None, modes=None, seeds=None, inputs=random_inputs,
          input_seed=0, acc_dtype=_dtypes.float32):
    """Checks a kernel against `reference` at every (M, N, K) of `shapes` and dtype of `dtypes`; returns the Runs.

    `kernel_or_builder`: a builder, called as `builder(m, n, k, dtype=dtype)` for each shape and dtype and
    returning a tg.Kernel (or any callable taking the arrays and `interpret=`, `seed=`), or one tg.Kernel built for
    the shapes and dtypes given. `reference(*inputs)` computes the expected output(s) with numpy from float64
    copies of the inputs. `inputs(m, n, k, dtype, seed=input_seed)` makes them: by default a [M, K] and b [K, N],
    iid standard normal. `dtypes`: input dtypes (default f16 and bf16 for a builder; required for a Kernel).
    `modes`: 'interpret' and/or 'gpu' (default: the interpreter, and the GPU where a Hopper or Blackwell GPU is
    present and --tg-interpret-only is not set; asking for 'gpu' where it cannot run raises tg.LaunchError).
    `seeds`: the interpreter's schedule seeds (default: None, the deterministic schedule, then 1, 2: see
    --tg-seeds). `acc_dtype`: what the kernel accumulates in, for the tolerance (tilegemm.testing.tolerance).
    Raises CheckFailure at the first case whose output is unwritten or beyond tolerance, or whose run raises.
    """
    if dtypes is None:
        if isinstance(kernel_or_builder, Kernel):
            raise ValueError(f"check({kernel_or_builder!r}, ...): a tg.Kernel runs at the input dtype it was built "
                             "for; pass dtypes=[...] (or pass its builder)")
        dtypes = ANY_LAYOUT_DTYPES
    modes = _modes(modes)
    seeds = defaults.current().schedule_seeds() if seeds is None else tuple(seeds)
    rerun = functools.partial(_reproduce, kernel_or_builder, reference, inputs=inputs, input_seed=input_seed,
                              acc_dtype=acc_dtype)
    runs = []
    for shape in shapes:
        m, n, k = _shape(shape)
        for dtype in map(_dtypes.as_dtype, dtypes):
            arrays = tuple(inputs(m, n, k, dtype, seed=input_seed))
            expected = _outputs(reference(*(np.asarray(x, dtype=np.float64) for x in arrays)))
            kernel = ((lambda: kernel_or_builder) if isinstance(kernel_or_builder, Kernel) else   # built on first use
                      functools.cache(functools.partial(kernel_or_builder, m, n, k, dtype=dtype)))
            for mode in modes:
                for seed in seeds if mode == "interpret" else (None,):
                    case = Case((m, n, k), dtype, mode, seed)
                    runs.append(_run(kernel, arrays, expected, case, acc_dtype, rerun(case)))
    return runs


def _modes(modes):
    """The modes to run: checked when given, else the interpreter plus the GPU where it can run."""
    interpret_only, unavailable = defaults.current().interpret_only, gpu.unavailable_reason()
    if modes is None:
        return ("interpret",) if interpret_only or unavailable else MODES
    modes = tuple(modes)
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"check(modes={list(modes)}): unknown mode(s) {unknown}; modes are {list(MODES)}")
    if "gpu" in modes and (interpret_only or unavailable):
        why = "--tg-interpret-only is set" if interpret_only else unavailable
        raise LaunchError(f"check(modes={list(modes)}) cannot run on the GPU: {why}; mark the test "
                          "@pytest.mark.gpu (tilegemm's pytest plugin skips it then) or leave modes at the default")
    return modes


def _shape(shape):
    """(M, N, K) as three positive ints."""
    if len(shape) != 3 or not all(isinstance(d, (int, np.integer)) and d > 0 for d in shape):
        raise ValueError(f"check: shapes are (M, N, K) of positive ints, got {shape!r}")
    return tuple(int(d) for d in shape)


def _outputs(result):
    """A kernel's or reference's result as a tuple of arrays."""
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _run(kernel, arrays, expected, case, acc_dtype, reproduce):
    """Runs one case and compares its outputs; returns the Run or raises CheckFailure."""
    heading = f"check failed at {case}"
    try:
        got = _outputs(_execute(kernel(), arrays, case))
    except Exception as e:  # a deadlock, a race, an illegal kernel, a launch error: all are this case's failure
        detail = f"{type(e).__name__}: {e}".replace("\n", "\n    ")
        raise CheckFailure(f"{heading}: {detail}\n  reproduce: {reproduce}", case, (), reproduce) from e
    if len(got) != len(expected):
        raise CheckFailure(f"{heading}: the kernel returned {len(got)} output(s), the reference {len(expected)}\n"
                           f"  reproduce: {reproduce}", case, (), reproduce)
    comparisons = tuple(compare(g, e, k=case.shape[2], acc_dtype=acc_dtype) for g, e in zip(got, expected))
    failed = [(i, c) for i, c in enumerate(comparisons) if not c.ok]
    if failed:
        lines = [heading]
        for i, comparison in failed:
            prefix = f"output {i}: " if len(comparisons) > 1 else ""
            lines += [prefix + line for line in comparison.lines()]
        lines.append(f"reproduce: {reproduce}")
        raise CheckFailure("\n  ".join(lines), case, comparisons, reproduce)
    return Run(case, comparisons)


def _execute(kernel, arrays, case):
    """The kernel's outputs for one case: on the GPU with poisoned outputs, or interpreted under the case's seed."""
    if case.mode == "gpu":
        with gpu.poisoned_outputs():
            return kernel(*arrays)
    if case.seed is None:
        return kernel(*arrays, interpret=True)
    return kernel(*arrays, interpret=True, seed=case.seed)


def _reproduce(kernel_or_builder, reference, case, *, inputs, input_seed, acc_dtype):
    """A line of Python that reruns exactly `case`."""
    args = [_name(kernel_or_builder), _name(reference), f"shapes=[{case.shape}]",
            f"dtypes=[{_dtypes.name(case.dtype)!r}]", f"modes=[{case.mode!r}]"]
    if case.mode == "interpret":
        args.append(f"seeds=[{case.seed}]")
    if inputs is not random_inputs:
        args.append(f"inputs={_name(inputs)}")
    if input_seed != 0:
        args.append(f"input_seed={input_seed}")
    if _dtypes.as_dtype(acc_dtype) != _dtypes.float32:
        args.append(f"acc_dtype={_dtypes.name(acc_dtype)!r}")
    return f"tilegemm.testing.check({', '.join(args)})"


def _name(obj):
    """How a reproduce line names a function ('module.qualname'), a functools.partial of one, or a kernel."""
    if isinstance(obj, Kernel):
        return f"<the tg.kernel {obj.name}>"
    if isinstance(obj, functools.partial):
        args = [_name(obj.func), *map(_value, obj.args), *(f"{k}={_value(v)}" for k, v in obj.keywords.items())]
        return f"functools.partial({', '.join(args)})"
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if qualname is None:
        return repr(obj)
    return qualname if module in (None, "__main__") else f"{module}.{qualname}"


def _value(value):
    """An argument of a functools.partial as Python source: functions by name, dtypes as numpy.dtype(...)."""
    if isinstance(value, np.dtype):
        return f"numpy.dtype({value.name!r})"
    return _name(value) if callable(value) else repr(value)
