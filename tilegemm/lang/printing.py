"""`tg.debug_print(fmt, *args)`: print traced scalars while a kernel runs (Pallas `pl.debug_print`).

`fmt` is a Python format string with one `{}` per argument; each tilegemm thread
(warpgroup) that reaches the call prints one line, in the interpreter and on the GPU
(inside a core_map, each warp does).
"""
import string

from ..errors import KernelError
from .ir import current_user_loc
from .tracer import emit
from .values import Array, Scalar


def debug_print(fmt, *args):
    """Prints `fmt.format(*args)` when the kernel runs; `args` are traced scalars or Python numbers."""
    loc = current_user_loc()
    if not isinstance(fmt, str):
        raise KernelError(f"tg.debug_print takes a format string first, got {type(fmt).__name__}", loc=loc)
    try:
        fields = [(f, spec, conversion) for _, f, spec, conversion in string.Formatter().parse(fmt) if f is not None]
    except ValueError:
        fields = None
    if fields is None or any(f or spec or conversion for f, spec, conversion in fields):
        raise KernelError(f"tg.debug_print formats with plain {{}} placeholders, one per argument; got {fmt!r}",
                          loc=loc)
    if len(fields) != len(args):
        raise KernelError(f"tg.debug_print format {fmt!r} has {len(fields)} placeholder(s) for {len(args)} "
                          "argument(s)", loc=loc)
    for x in args:
        if isinstance(x, Array):
            raise KernelError("tg.debug_print prints traced scalars and Python numbers, not register arrays; to "
                              "look at an array, run the kernel with interpret=True and store it into an output",
                              loc=loc)
        if not isinstance(x, (Scalar, bool, int, float)):
            raise KernelError(f"tg.debug_print cannot print a {type(x).__name__}; it prints traced scalars and "
                              "Python numbers", loc=loc)
    emit("debug_print", args, {"fmt": fmt}, (), loc=loc)
