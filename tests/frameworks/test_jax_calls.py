"""tilegemm.jax on jax's CPU backend: tg.matmul and user kernels as XLA custom calls under jax.jit, run by the
FFI handler in the numpy interpreter; gradients through the same call; errors at trace time and from the handler;
and `import tilegemm` imports no jax."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax.numpy")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import tilegemm as tg  # noqa: E402
import tilegemm.jax as tgj  # noqa: E402
import tilegemm.testing as tt  # noqa: E402
from tilegemm.jax import calls  # noqa: E402
from tilegemm.showcase import load_example  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
MATMUL = load_example(os.path.join(EXAMPLES, "hopper_v2_tma_wgmma.py"))   # build(m, n, k): one fixed shape
DTYPES = [jnp.float16, jnp.bfloat16]


def randn(*shape, dtype=jnp.float16, seed=0):
    """An iid-normal jax array (drawn by numpy: jax.random compiles a program per shape)."""
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape, np.float32).astype(dtype))


def assert_product(c, a, b):
    """c is a @ b (computed in float64) within tilegemm.testing's tolerance for c's dtype."""
    expected = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    tt.assert_close(np.asarray(c, np.float64), expected, k=a.shape[1], dtype=c.dtype)


def custom_calls(f, *args):
    """The targets of the custom calls in the program jax.jit(f) lowers to for `args`."""
    text = jax.jit(f).lower(*args).as_text()
    return re.findall(r"custom_call @(\w+)", text)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
def test_matmul_under_jit_is_one_custom_call_run_by_the_interpreter(dtype):
    a, b = randn(5, 40, dtype=dtype), randn(40, 24, dtype=dtype, seed=1)
    c = jax.jit(tgj.matmul)(a, b)
    assert (c.shape, c.dtype) == ((5, 24), dtype)
    assert_product(c, a, b)
    assert custom_calls(tgj.matmul, a, b) == ["tilegemm_call"]   # no host callback: XLA hands over its buffers


def test_matmul_composes_with_the_rest_of_a_jitted_function():
    a, b = randn(16, 32), randn(32, 16, seed=1)
    c = jax.jit(lambda a, b: jnp.tanh(tgj.matmul(a * 2, b)) + 1)(a, b)
    expected = np.tanh(np.asarray(a * 2, np.float64) @ np.asarray(b, np.float64)) + 1
    np.testing.assert_allclose(np.asarray(c, np.float64), expected, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("m", [16, 5], ids=["M aligned", "M unaligned"])
def test_gradients_are_two_more_custom_calls(m):
    a, b = randn(m, 32), randn(32, 24, seed=1)
    grad_c = randn(m, 24, seed=2)

    def loss(a, b):
        return jnp.sum(tgj.matmul(a, b).astype(jnp.float32) * grad_c.astype(jnp.float32))
    value_and_grad = jax.value_and_grad(loss, argnums=(0, 1))
    _, (grad_a, grad_b) = jax.jit(value_and_grad)(a, b)
    assert_product(grad_a, grad_c, b.T)
    assert_product(grad_b, a.T, grad_c)
    assert custom_calls(value_and_grad, a, b) == ["tilegemm_call"] * 3


@pytest.mark.parametrize("a_shape,b_shape,dtype,message", [
    ((8, 16), (24, 8), jnp.float16, r"needs a \[M, K\] and b \[K, N\]; got shapes \(8, 16\) and \(24, 8\)"),
    ((8, 16), (16, 8), jnp.float32, "takes arrays a and b both f16, .*; got f32 and f32"),
    ((8, 16), (16, 12), jnp.float16, "N=12 f16 is 24 bytes; pad N to a multiple of 8"),
])
def test_argument_errors_are_raised_while_tracing(a_shape, b_shape, dtype, message):
    with pytest.raises(tg.ArgumentError, match=message):
        jax.eval_shape(tgj.matmul, jax.ShapeDtypeStruct(a_shape, dtype), jax.ShapeDtypeStruct(b_shape, dtype))


def test_a_users_kernel_runs_under_jit():
    a, b = randn(40, 8), randn(8, 24, seed=1)
    kernel = MATMUL.build(40, 24, 8)
    c = jax.jit(lambda a, b: tgj.call(kernel, a, b))(a, b)
    assert_product(c, a, b)
    with pytest.raises(tg.ArgumentError, match=r"argument 0 \(a\) of kernel `hopper_v2_tma_wgmma` is f16\[40, 16\] "
                                               r"but the kernel was built for f16\[40, 8\]"):
        jax.eval_shape(lambda a: tgj.call(kernel, a, b), jax.ShapeDtypeStruct((40, 16), jnp.float16))


def scale_and_shift():
    """Two outputs shaped like the input, for any input: (2 x, x + 1)."""
    @tg.kernel(out_shape=lambda x: (tg.ShapeDtype(x.shape, x.dtype), tg.ShapeDtype(x.shape, x.dtype)))
    def scale_and_shift(x, doubled, shifted):
        doubled[...] = x[...] * 2.0
        shifted[...] = x[...] + 1.0
    return scale_and_shift


def test_a_kernel_with_several_outputs_returns_a_tuple_at_every_shape_and_under_vmap():
    kernel = scale_and_shift()
    for shape in ((16, 16), (8, 32)):
        x = randn(*shape, dtype=jnp.float32)
        doubled, shifted = jax.jit(lambda x: tgj.call(kernel, x))(x)
        assert np.array_equal(doubled, 2 * x) and np.array_equal(shifted, x + 1)
    batch = randn(3, 16, 16, dtype=jnp.float32)
    doubled, _ = jax.vmap(lambda x: tgj.call(kernel, x))(batch)   # one call per element of the batch
    assert np.array_equal(doubled, 2 * batch)


def test_an_error_inside_the_handler_reaches_the_caller_with_its_message():
    @tg.kernel(out_shape=tg.ShapeDtype((16, 16), tg.float32), scratch_shapes=[tg.Barrier(num_arrivals=1)])
    def stuck(x, out, arrived):
        tg.barrier_wait(arrived)   # nothing arrives
        out[...] = x[...]
    with pytest.raises(Exception, match=r"DeadlockError: deadlock: every task of the cluster at \(x=0\) is "
                                        "blocked") as caught:
        jax.block_until_ready(jax.jit(lambda x: tgj.call(stuck, x))(jnp.ones((16, 16), jnp.float32)))
    assert isinstance(caught.value, jax.errors.JaxRuntimeError)


def test_a_call_site_of_another_process_is_an_error_never_another_kernel():
    x = randn(16, 16, dtype=jnp.float32)
    tgj.call(scale_and_shift(), x)   # a site of this process: site numbers 0, 1, ... are taken
    stray = jax.ffi.ffi_call(calls.TARGET, jax.ShapeDtypeStruct(x.shape, x.dtype))
    with pytest.raises(jax.errors.JaxRuntimeError, match="call site 0x1 was not made by this process"):
        jax.block_until_ready(jax.jit(lambda x: stray(x, site=np.int64(1)))(x))


def test_what_call_cannot_run_is_an_argument_error():
    with pytest.raises(tg.ArgumentError, match="runs a @tg.kernel, got function"):
        tgj.call(lambda x: x, jnp.ones(4))
    with pytest.raises(tg.ArgumentError, match=r"argument 0 of kernel `scale_and_shift` is a list, not an array"):
        tgj.call(scale_and_shift(), [1.0, 2.0])


def test_importing_tilegemm_imports_no_jax():
    code = "import sys, tilegemm; assert 'jax' not in sys.modules, 'tilegemm imported jax'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_jax_tilegemm_jax_says_what_to_install():
    code = ("import sys; sys.modules['jax'] = None\n"
            "try:\n    import tilegemm.jax\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert "tilegemm.jax needs JAX" in out and "tilegemm[jax]" in out
