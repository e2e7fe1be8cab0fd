"""tilegemm.torch on the H200: torch.ops.tilegemm.matmul and a registered kernel on CUDA tensors (the suite poisons
outputs, so an unwritten element fails), on torch's current stream, with gradients and under opcheck."""
import os

import pytest

from tilegemm.runtime import device_count

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
pytest.importorskip("torch.library")
import torch  # noqa: E402

import tilegemm.testing as tt  # noqa: E402
import tilegemm.torch as tgt  # noqa: E402
from tilegemm.showcase import load_example  # noqa: E402
from tilegemm.torch.host import numpy_dtype  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
MATMUL = load_example(os.path.join(EXAMPLES, "hopper_v2_tma_wgmma.py"))   # build(m, n, k): one fixed shape
DTYPES = [torch.float16, torch.bfloat16]


def randn(*shape, dtype=torch.float16, seed=0):
    return torch.randn(*shape, device="cuda", generator=torch.Generator("cuda").manual_seed(seed)).to(dtype)


def assert_product(c, a, b):
    """c is a @ b (computed in float64) within tilegemm.testing's tolerance, every element written."""
    expected = (a.double() @ b.double()).cpu().numpy()
    tt.assert_close(c.double().cpu().numpy(), expected, k=a.shape[1], dtype=numpy_dtype(c.dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
@pytest.mark.parametrize("shape", [(1, 8, 8), (5, 24, 40), (256, 384, 192), (1000, 1016, 520)])
def test_the_operator_runs_tilegemms_kernel_on_cuda_tensors(shape, dtype):
    m, n, k = shape
    a, b = randn(m, k, dtype=dtype), randn(k, n, dtype=dtype, seed=1)
    for _ in range(2):   # the general path, then the prepared one
        c = tgt.matmul(a, b)
        assert (c.shape, c.dtype, c.device) == ((m, n), dtype, a.device)
        assert_product(c, a, b)


def test_the_operator_runs_on_torchs_current_stream():
    a, b = randn(512, 512), randn(512, 512, seed=1)
    tgt.matmul(a, b)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        a.mul_(2)        # queued on the side stream: the operator must see it, and run after it
        c = tgt.matmul(a, b)
    side.synchronize()
    assert_product(c, a, b)


def test_a_transposed_weight_is_multiplied_as_its_values():
    x, w = randn(256, 512), randn(384, 512, seed=1)   # w [N, K], as torch.nn.Linear stores it
    assert_product(tgt.matmul(x, w.T), x, w.T)


@pytest.mark.parametrize("m", [256, 5], ids=["M aligned", "M unaligned"])
def test_gradients_on_cuda_tensors_are_right(m):
    a = randn(m, 256).requires_grad_()
    b = randn(256, 128, seed=1).requires_grad_()
    grad_c = randn(m, 128, seed=2)
    tgt.matmul(a, b).backward(grad_c)
    assert_product(a.grad, grad_c, b.detach().T)
    assert_product(b.grad, a.detach().T, grad_c)


def test_opcheck_passes_on_cuda_tensors():
    a, b = randn(64, 128).requires_grad_(), randn(128, 64, seed=1).requires_grad_()
    assert set(torch.library.opcheck(tgt.matmul, (a, b)).values()) == {"SUCCESS"}


def test_a_registered_kernel_runs_on_cuda_tensors_and_passes_opcheck():
    op = tgt.register(MATMUL.build(256, 384, 128), name="v2_matmul_on_gpu")
    a, b = randn(256, 128), randn(128, 384, seed=1)
    assert_product(op(a, b), a, b)
    assert set(torch.library.opcheck(op, (a, b)).values()) == {"SUCCESS"}


def test_batch_invariant_calls_of_the_operator_keep_a_rows_bits_whatever_the_batch():
    x, w = randn(200, 14336), randn(1024, 14336, seed=1)   # one row against this weight splits K in five
    full = tgt.matmul(x, w.T, batch_invariant=True)
    for m in (1, 64, 128):
        assert torch.equal(tgt.matmul(x[:m], w.T, batch_invariant=True), full[:m])
    assert_product(full, x, w.T)
