"""tilegemm.jax on the H200: tg.matmul and a user's kernel as XLA custom calls under jax.jit on GPU arrays, launched
on XLA's stream with XLA's device buffers (no transfer, no host callback); the suite poisons outputs, so an
unwritten element fails."""
import os
import re

import numpy as np
import pytest

from tilegemm.runtime import device_count

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
pytest.importorskip("jax.numpy")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

import tilegemm.jax as tgj  # noqa: E402
import tilegemm.testing as tt  # noqa: E402
from tilegemm.showcase import load_example  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
MATMUL = load_example(os.path.join(EXAMPLES, "hopper_v2_tma_wgmma.py"))   # build(m, n, k): one fixed shape
DTYPES = [jnp.float16, jnp.bfloat16]


@pytest.fixture(scope="module")
def gpu():
    """jax's first GPU (the test is skipped where jax has none: a CPU-only jaxlib)."""
    try:
        return jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("jax sees no GPU (a CPU-only jaxlib)")


def randn(gpu, *shape, dtype=jnp.float16, seed=0):
    """An iid-normal jax array on `gpu`."""
    return jax.device_put(np.random.default_rng(seed).standard_normal(shape, np.float32).astype(dtype), gpu)


def assert_product(c, a, b):
    """c is a @ b (computed in float64) within tilegemm.testing's tolerance, every element written."""
    expected = np.asarray(a, np.float64) @ np.asarray(b, np.float64)
    tt.assert_close(np.asarray(c, np.float64), expected, k=a.shape[1], dtype=c.dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
@pytest.mark.parametrize("shape", [(1, 8, 8), (5, 24, 40), (256, 384, 192), (1000, 1016, 520)])
def test_matmul_under_jit_runs_tilegemms_kernel_on_gpu_arrays(gpu, shape, dtype):
    m, n, k = shape
    a, b = randn(gpu, m, k, dtype=dtype), randn(gpu, k, n, dtype=dtype, seed=1)
    f = jax.jit(tgj.matmul)
    for _ in range(2):   # compiled on the first execution, launched directly on the second
        c = f(a, b)
        assert (c.shape, c.dtype, c.devices()) == ((m, n), dtype, {gpu})
        assert_product(c, a, b)


def test_no_array_leaves_the_gpu(gpu):
    a, b = randn(gpu, 512, 256), randn(gpu, 256, 384, seed=1)
    f = jax.jit(lambda a, b: tgj.matmul(a, b) * 2)
    text = f.lower(a, b).compile().as_text()
    assert re.findall(r'custom_call_target="(\w+)"', text) == ["tilegemm_call"]   # no host callback
    with jax.transfer_guard("disallow"):
        c = jax.block_until_ready(f(a, b))
    assert_product(c / 2, a, b)


def test_the_kernel_is_ordered_with_xlas_work_on_its_stream(gpu):
    a, b = randn(gpu, 4096, 4096), randn(gpu, 4096, 4096, seed=1)
    scaled = jax.jit(lambda a, b: tgj.matmul(a * 2, b) * 0.5)   # XLA's work before and after the call; exact
    c = scaled(a, b)
    assert_product(c, a, b)
    assert np.array_equal(np.asarray(c), np.asarray(jax.jit(tgj.matmul)(a, b)))


@pytest.mark.parametrize("m", [256, 5], ids=["M aligned", "M unaligned"])
def test_gradients_on_gpu_arrays_are_right(gpu, m):
    a, b, grad_c = randn(gpu, m, 256), randn(gpu, 256, 128, seed=1), randn(gpu, m, 128, seed=2)
    _, vjp = jax.vjp(jax.jit(tgj.matmul), a, b)
    grad_a, grad_b = vjp(grad_c)
    assert_product(grad_a, grad_c, b.T)
    assert_product(grad_b, a.T, grad_c)


def test_a_users_kernel_runs_under_jit_on_gpu_arrays(gpu):
    kernel = MATMUL.build(256, 384, 128)
    a, b = randn(gpu, 256, 128), randn(gpu, 128, 384, seed=1)
    assert_product(jax.jit(lambda a, b: tgj.call(kernel, a, b))(a, b), a, b)
