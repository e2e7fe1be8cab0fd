"""tilegemm inside JAX: tg.matmul and user kernels as XLA custom calls, under jax.jit, with no host round trip.

    import tilegemm.jax as tgj

    c = jax.jit(tgj.matmul)(a, b)       # float16/bfloat16 a [M, K] @ b [K, N], accumulated in float32
    y = tgj.call(kernel, x)             # a user's @tg.kernel on jax arrays: its outputs as jax arrays

On a GPU the custom call launches the compiled kernel on XLA's stream with the
buffers' device pointers; on the CPU backend it runs tilegemm's numpy
interpreter on XLA's host buffers (exact, slow: for tests at small shapes).
Both are XLA FFI handlers written in Python (tilegemm.jax.calls). Importing
this module imports jax (`import tilegemm` does not); docs/frameworks.md is the guide.
"""
import functools

try:
    import jax
    import jax.numpy as jnp
except ImportError as e:
    raise ImportError("tilegemm.jax needs JAX: pip install 'tilegemm[jax]' (or a jax build of your own, with "
                      "CUDA for GPUs)") from e

from .. import debug as debugging
from ..errors import ArgumentError
from ..kernel import Kernel
from ..lang.arch import TMA_ALIGN as ALIGN
from ..runtime.dlpack import row_major_strides
from ..lang.trace import ShapeDtype
from ..ops import dispatch
from . import calls

__all__ = ["call", "matmul"]


def matmul(a, b, *, debug=None):
    """c = a @ b for float16/bfloat16 jax arrays a [M, K], b [K, N] with tilegemm's matmul (tg.matmul's kernel
    and configuration); `debug` as for tg.matmul. Differentiable: the gradients are two more such calls,
    grad_a = grad_c @ b.T and grad_b = a.T @ grad_c."""
    return _matmul(a, b, debugging.resolve(debug))


@functools.partial(jax.custom_vjp, nondiff_argnums=(2,))
def _matmul(a, b, switches):
    sa, sb = _spec(a, "tilegemm.jax.matmul's argument a"), _spec(b, "tilegemm.jax.matmul's argument b")
    m, n, k = dispatch.check_operands(sa, sb)
    dispatch.operand_layouts(sa, sb, row_major_strides(sa.shape), row_major_strides(sb.shape))  # jax: row-major

    def make(key):
        return calls.Site(key, "tg.matmul", (sa, sb), (ShapeDtype((m, n), sa.dtype),),
                          interpret=lambda x, y: dispatch.matmul(x, y, interpret=True),
                          kernel_for_gpu=lambda: dispatch.kernel_for(m, n, k, sa.dtype.name), switches=switches)
    (c,) = calls.custom_call(calls.site(("matmul", sa, sb, switches), make), (a, b))
    return c


def _matmul_forward(a, b, switches):
    return _matmul(a, b, switches), (a, b)


def _matmul_backward(switches, saved, grad_c):
    a, b = saved
    return _matmul(grad_c, b.T, switches), _matmul(*_padded_contraction(a.T, grad_c), switches)


_matmul.defvjp(_matmul_forward, _matmul_backward)


def _padded_contraction(x, y):
    """x [M, K] and y [K, N] with K zero-padded to whole 16-byte rows, as tg.matmul needs; zero terms leave x @ y
    unchanged. The backward's grad_b contracts over the forward's M, which may be any size."""
    pad = -x.shape[1] % (ALIGN // x.dtype.itemsize)
    if pad == 0:
        return x, y
    return jnp.pad(x, ((0, 0), (0, pad))), jnp.pad(y, ((0, pad), (0, 0)))


def call(kernel, *arrays, debug=None):
    """Runs `kernel` (a @tg.kernel) on jax arrays, inside jax.jit or not: its one output, or a tuple of several,
    as jax arrays. Each new set of input shapes traces the kernel anew (a fixed-shape kernel takes only its own)."""
    if not isinstance(kernel, Kernel):
        raise ArgumentError(f"tilegemm.jax.call runs a @tg.kernel, got {type(kernel).__name__}")
    specs = tuple(_spec(x, f"argument {i} of kernel `{kernel.name}`") for i, x in enumerate(arrays))
    graph = kernel.trace(*specs)
    switches = debugging.resolve(debug)

    def make(key):
        return calls.Site(key, kernel.name, specs, tuple(ShapeDtype(p.shape, p.dtype) for p in graph.outputs),
                          interpret=lambda *xs: kernel(*xs, interpret=True), kernel_for_gpu=lambda: kernel,
                          switches=switches)
    outs = calls.custom_call(calls.site((kernel, specs, switches), make), arrays)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _spec(x, what):
    """The ShapeDtype of a jax (or numpy) array or tracer, or an ArgumentError naming it."""
    if not (hasattr(x, "shape") and hasattr(x, "dtype")):
        raise ArgumentError(f"{what} is a {type(x).__name__}, not an array: pass a jax or numpy array")
    return ShapeDtype(x.shape, x.dtype)
