"""tilegemm: write Hopper and Blackwell matrix-multiplication kernels in Python.

    import tilegemm as tg

Kernels are traced into a graph (`tg.kernel`), verified, and then run in the numpy
interpreter (`interpret=True`) or lowered to CuTe DSL and launched on the GPU.
"""
from .errors import (ArgumentError, CompileError, CompiledCodeWarning, DeadlockError, HangError, KernelError,
                     LaunchError, PerformanceWarning, RaceError, TileGemmError)
from .debug import Debug, get_debug, set_debug
from .kernel import Kernel, kernel
from .lang import *  # noqa: F401,F403  (the language is the public API)
from .lang import __all__ as _lang_all  # noqa: F401
from . import model, tune  # noqa: E402  (tg.model.budget, tg.tune.tune)
from .ops import matmul, tune_matmul  # noqa: E402
from . import interpret  # noqa: E402  (tg.interpret(kernel) runs a kernel in the numpy interpreter)
from . import testing  # noqa: E402  (tg.testing.check, tg.testing.assert_close: test kernels against numpy)

__version__ = "0.1.0"
