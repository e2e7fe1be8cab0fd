"""torch.ops.tilegemm.matmul on CPU tensors (tilegemm's numpy interpreter): its results, its fake implementation,
autograd through the operator itself, torch.library.opcheck; and `import tilegemm` imports no torch."""
import contextlib
import subprocess
import sys

import pytest

pytest.importorskip("torch.library")
import torch  # noqa: E402
from torch._dynamo.testing import CompileCounterWithBackend  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import tilegemm as tg  # noqa: E402
import tilegemm.testing as tt  # noqa: E402
import tilegemm.torch as tgt  # noqa: E402
from tilegemm.torch.host import numpy_dtype  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16]


def randn(*shape, dtype=torch.float16, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def assert_product(c, a, b):
    """c is a @ b (computed in float64) within tilegemm.testing's tolerance for c's dtype."""
    expected = a.double().numpy() @ b.double().numpy()
    tt.assert_close(c.double().numpy(), expected, k=a.shape[1], dtype=numpy_dtype(c.dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=["f16", "bf16"])
def test_the_operator_multiplies_cpu_tensors_in_the_interpreter(dtype):
    a, b = randn(5, 40, dtype=dtype), randn(40, 24, dtype=dtype, seed=1)
    c = tgt.matmul(a, b)
    assert (c.shape, c.dtype, c.device.type) == ((5, 24), dtype, "cpu")
    assert_product(c, a, b)
    assert torch.equal(torch.ops.tilegemm.matmul(a, b), c)


def test_transposed_and_strided_operands_are_multiplied_as_their_values():
    x, w = randn(16, 48), randn(32, 24, seed=1)     # w [N, K]: x[:, ::2] @ w.T as torch.nn.Linear does
    assert_product(tgt.matmul(x[:, ::2], w.T), x[:, ::2], w.T)


def test_a_transposed_weight_reaches_the_kernel_as_stored_and_only_other_strides_are_copied():
    from tilegemm.torch.ops import _operands
    x, w = randn(16, 48), randn(32, 24, seed=1)
    a, b = _operands(x[:, ::2], w.T)
    assert b.data_ptr() == w.data_ptr() and b.stride() == w.T.stride()      # x @ w.T: w as stored, no copy
    assert a.is_contiguous() and a.data_ptr() != x.data_ptr()               # a stepped slice: a row-major copy


def test_the_fake_implementation_gives_the_shape_and_dtype_without_running():
    with FakeTensorMode():
        c = tgt.matmul(torch.empty(1000, 64, dtype=torch.bfloat16), torch.empty(64, 4096, dtype=torch.bfloat16))
    assert (c.shape, c.dtype) == ((1000, 4096), torch.bfloat16)


@pytest.mark.parametrize("a_shape,b_shape,dtype,message", [
    ((8, 16), (24, 8), torch.float16, r"needs a \[M, K\] and b \[K, N\]; got shapes \(8, 16\) and \(24, 8\)"),
    ((8, 16), (16, 8), torch.float32, "takes arrays a and b both f16, .*; got f32 and f32"),
    ((8, 16), (16, 8), torch.float8_e4m3fn, "reads e4m3 operands K-major only"),
    ((8, 16), (16, 12), torch.float16, "N=12 f16 is 24 bytes; pad N to a multiple of 8"),
])
@pytest.mark.parametrize("tracing", [True, False], ids=["while tracing", "eagerly"])
def test_what_tg_matmul_cannot_take_is_an_argument_error(a_shape, b_shape, dtype, message, tracing):
    with FakeTensorMode() if tracing else contextlib.nullcontext(), pytest.raises(tg.ArgumentError, match=message):
        tgt.matmul(torch.zeros(a_shape).to(dtype), torch.zeros(b_shape).to(dtype))


def test_sizes_stay_symbolic_under_torch_compile():
    counter = CompileCounterWithBackend("aot_eager")
    f = torch.compile(lambda a, b: torch.relu(tgt.matmul(a, b)), backend=counter, dynamic=True, fullgraph=True)
    b = randn(16, 24)
    for m in (5, 6, 7):
        a = randn(m, 16, seed=m)
        assert torch.equal(f(a, b), torch.relu(tgt.matmul(a, b)))
    assert counter.frame_count == 1


class OperatorLog(TorchDispatchMode):
    """Records the name of every operator dispatched while it is active."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(str(func))
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("m", [16, 5], ids=["M aligned", "M unaligned"])
def test_gradients_are_two_more_calls_of_the_operator(m):
    a = randn(m, 32).requires_grad_()
    b = randn(32, 24, seed=1).requires_grad_()
    grad_c = randn(m, 24, seed=2)
    with OperatorLog() as log:
        tgt.matmul(a, b).backward(grad_c)
    assert log.names.count("tilegemm.matmul.default") == 3
    assert_product(a.grad, grad_c, b.detach().T)
    assert_product(b.grad, a.detach().T, grad_c)


def test_opcheck_passes_with_gradients():
    a, b = randn(8, 16).requires_grad_(), randn(16, 8, seed=1).requires_grad_()
    results = torch.library.opcheck(tgt.matmul, (a, b))
    assert set(results.values()) == {"SUCCESS"}


def test_importing_tilegemm_imports_no_torch():
    code = "import sys, tilegemm; assert 'torch' not in sys.modules, 'tilegemm imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_without_torch_tilegemm_torch_says_what_to_install():
    code = ("import sys; sys.modules['torch'] = None\n"
            "try:\n    import tilegemm.torch\nexcept ImportError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert "tilegemm.torch needs PyTorch" in out and "tilegemm[torch]" in out


def test_batch_invariant_rows_have_the_same_bits_whatever_the_batch():
    x, w = randn(130, 2048), randn(256, 2048, seed=1)   # one row against this weight splits K (tg.matmul's test)
    full = tgt.matmul(x, w.T, batch_invariant=True)
    for m in (1, 70):
        assert torch.equal(tgt.matmul(x[:m], w.T, batch_invariant=True), full[:m])
    assert_product(full, x, w.T)


def test_batch_invariant_calls_pass_opcheck_and_their_gradients_are_batch_invariant_calls():
    a, b = randn(8, 16).requires_grad_(), randn(16, 8, seed=1).requires_grad_()
    results = torch.library.opcheck(tgt.matmul, (a, b), {"batch_invariant": True})
    assert set(results.values()) == {"SUCCESS"}

    class FlagLog(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.flags = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if str(func) == "tilegemm.matmul.default":
                self.flags.append(bool(args[2] if len(args) > 2 else (kwargs or {}).get("batch_invariant", False)))
            return func(*args, **(kwargs or {}))
    with FlagLog() as log:
        tgt.matmul(a, b, batch_invariant=True).backward(randn(8, 8, seed=2))
    assert log.flags == [True, True, True]
