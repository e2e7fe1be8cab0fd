"""Exceptions raised by tilegemm, shared by every layer."""


class TileGemmError(Exception):
    """Base class of every error tilegemm raises on purpose."""

    def _render_traceback_(self):
        """IPython shows a tilegemm error that reaches a notebook cell without tilegemm's own frames."""
        from .notebook import render_traceback
        return render_traceback(self)


class KernelError(TileGemmError):
    """An illegal kernel: raised at trace or verify time, naming the user's file:line."""

    def __init__(self, message, loc=None, related=()):
        self.loc = loc
        self.related = tuple(related)
        text = f"{loc}: {message}" if loc is not None else message
        for what, where in self.related:
            text += f"\n  {what}: {where}"
        super().__init__(text)


class DeadlockError(TileGemmError):
    """The interpreter found every task blocked; the message lists each task's wait."""


class RaceError(TileGemmError):
    """The interpreter saw memory touched while an asynchronous operation could still use it."""


class LaunchError(TileGemmError):
    """Arguments, device or compiled kernel do not fit together; nothing reached the GPU."""


class ArgumentError(LaunchError, TypeError):
    """A call's arguments are not what the kernel (or tg.matmul) accepts: count, keywords, types, shapes,
    dtypes, layouts or devices. Raised before anything runs; the message names the argument."""


class HangError(TileGemmError):
    """In debug mode a barrier wait on the GPU gave up: the message names the barrier, the block and the
    user's line. The kernel trapped, so the process's CUDA context can no longer be used."""


class CompileError(TileGemmError):
    """Lowering or compiling the generated CuTe DSL source failed."""


class PerformanceWarning(UserWarning):
    """The compiled kernel is correct but will run slower than written (e.g. ptxas serialized its WGMMAs)."""


class CompiledCodeWarning(UserWarning):
    """The compiled code disagrees with the kernel's graph (facts read off its PTX): a tilegemm lowering bug."""
