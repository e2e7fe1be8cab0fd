"""The runtime on a real GPU: device query, memory, streams and events, launches, torch/cupy/jax interop."""
import numpy as np
import pytest
from cuda.bindings import driver as cu

import tilegemm as tg
from tilegemm.lower.generated import Param
from tilegemm.runtime import (SUPPORTED_ARCHS, DeviceArray, DeviceBuffer, Event, Stream, adapt, current_device,
                              device_count, launch, time_kernel)
from tilegemm.runtime.driver import call

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]


class CopyKernel:
    """A stand-in compiled kernel (same contract as CompiledKernel): copies its input to its output."""

    def __init__(self, shape, dtype, arch):
        self.params = (Param("x", shape, dtype, False), Param("y", shape, dtype, True))
        self.arch = arch
        self.nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize

    def __call__(self, src, dst, *, stream):
        call(cu.cuMemcpyDtoDAsync, dst, src, self.nbytes, stream)


def test_current_device_describes_a_supported_gpu():
    gpu = current_device()
    assert gpu.arch in SUPPORTED_ARCHS
    assert gpu.sm_count > 0 and gpu.smem_per_block_optin >= 200 * 1024 and gpu.l2_bytes > 0


def test_buffer_round_trips_host_data():
    data = np.arange(1000, dtype=np.float32)
    buffer = DeviceBuffer(data.nbytes)
    buffer.upload(data)
    back = np.empty_like(data)
    buffer.download(back)
    assert np.array_equal(back, data)


def test_fill_sets_every_byte():
    buffer = DeviceBuffer(256)
    buffer.fill(0xFF)
    back = np.zeros(256, np.uint8)
    buffer.download(back)
    assert (back == 0xFF).all()


def test_device_array_round_trips_bfloat16():
    data = np.linspace(-2, 2, 64 * 8).astype(tg.bfloat16).reshape(64, 8)
    assert np.array_equal(DeviceArray.from_numpy(data).numpy(), data)


def test_events_time_gpu_work_on_a_stream():
    stream = Stream()
    buffer = DeviceBuffer(64 << 20)
    start = Event().record(stream)
    buffer.fill(0, stream)
    end = Event().record(stream)
    assert start.elapsed_ms(end) > 0
    assert time_kernel(lambda: buffer.fill(1), warmup=1, iters=5) > 0


def test_launch_copies_numpy_in_and_out():
    x = np.arange(64 * 32, dtype=np.float16).reshape(64, 32)
    (y,) = launch(CopyKernel(x.shape, x.dtype, current_device().arch), x)
    assert isinstance(y, np.ndarray) and np.array_equal(y, x)


def test_launch_on_device_arrays_returns_device_arrays():
    x = DeviceArray.from_numpy(np.arange(128, dtype=np.float32).reshape(8, 16))
    (y,) = launch(CopyKernel(x.shape, x.dtype, current_device().arch), x)
    assert isinstance(y, DeviceArray) and np.array_equal(y.numpy(), x.numpy())


def test_torch_tensors_go_zero_copy_and_come_back_as_torch():
    torch = pytest.importorskip("torch")
    x = torch.randn(64, 32, device="cuda").to(torch.bfloat16)
    assert adapt(x, 0, 1).ptr == x.data_ptr()
    (y,) = launch(CopyKernel(tuple(x.shape), tg.bfloat16, current_device().arch), x)
    assert isinstance(y, torch.Tensor) and y.device == x.device and torch.equal(y, x)


def test_cupy_arrays_go_zero_copy_and_come_back_as_device_arrays():
    cupy = pytest.importorskip("cupy")
    x = cupy.arange(256, dtype=cupy.float32).reshape(16, 16)
    assert adapt(x, 0, 1).ptr == x.data.ptr
    (y,) = launch(CopyKernel((16, 16), np.float32, current_device().arch), x)
    assert isinstance(y, DeviceArray) and np.array_equal(y.numpy(), cupy.asnumpy(x))


def test_jax_arrays_go_zero_copy():
    import os
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave the GPU's memory to the others
    jnp = pytest.importorskip("jax.numpy")
    x = jnp.arange(256, dtype=jnp.float32).reshape(16, 16)
    if "gpu" not in str(x.devices()).lower() and "cuda" not in str(x.devices()).lower():
        pytest.skip("jax has no GPU backend here")
    (y,) = launch(CopyKernel((16, 16), np.float32, current_device().arch), x)
    assert np.array_equal(y.numpy(), np.asarray(x))


def test_device_array_exports_to_torch_without_copying():
    torch = pytest.importorskip("torch")
    x = DeviceArray.from_numpy(np.arange(12, dtype=np.float32).reshape(3, 4))
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x.ptr and torch.equal(t.cpu(), torch.arange(12, dtype=torch.float32).reshape(3, 4))


def test_misaligned_torch_view_is_rejected_before_launch():
    torch = pytest.importorskip("torch")
    x = torch.zeros(64 * 32 + 1, dtype=torch.float16, device="cuda")[1:].view(64, 32)
    with pytest.raises(tg.LaunchError, match="not 16-byte aligned"):
        launch(CopyKernel((64, 32), tg.float16, current_device().arch), x)


def test_one_tile_kernel_matches_numpy(one_tile):
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    c = one_tile(a, b)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)


class HalfCopyKernel(CopyKernel):
    """A stand-in compiled kernel that writes only the first half of its output."""

    def __call__(self, src, dst, *, stream):
        call(cu.cuMemcpyDtoDAsync, dst, src, self.nbytes // 2, stream)


@pytest.mark.parametrize("dtype", [np.float16, tg.bfloat16, np.float32])
def test_poisoned_outputs_show_unwritten_elements_as_nan(dtype):
    x = np.arange(64, dtype=np.float32).reshape(8, 8).astype(dtype)
    (y,) = launch(HalfCopyKernel(x.shape, x.dtype, current_device().arch), x, poison=True)
    assert np.array_equal(y[:4], x[:4])
    assert np.isnan(y[4:].astype(np.float32)).all()


def test_a_kernel_call_reuses_its_prepared_launch_for_the_same_signature(one_tile):
    torch = pytest.importorskip("torch")
    from tilegemm.runtime import readers
    a, b = (torch.randn(64, 64, device="cuda").to(torch.float16) for _ in range(2))
    first = one_tile(a, b)
    assert one_tile.prepared(readers.signature((a, b))) is not None
    second = one_tile(b, a, debug=True)
    torch.testing.assert_close(first, (a.float() @ b.float()), rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(second, (b.float() @ a.float()), rtol=1e-2, atol=1e-2)


def test_a_kernel_call_into_out_writes_the_callers_tensor(one_tile):
    torch = pytest.importorskip("torch")
    a, b = (torch.randn(64, 64, device="cuda").to(torch.float16) for _ in range(2))
    out = torch.full((64, 64), float("nan"), device="cuda")
    for _ in range(2):
        assert one_tile(a, b, out=out) is out
        torch.testing.assert_close(out, a.float() @ b.float(), rtol=1e-2, atol=1e-2)


def test_an_aliased_output_is_updated_in_its_inputs_memory():
    torch = pytest.importorskip("torch")
    from tests.test_kernel import X, accumulate_top_half_kernel
    accumulate = accumulate_top_half_kernel()
    x = torch.from_numpy(X).cuda()
    total = torch.full((16, 16), 5.0, device="cuda")
    for calls, options in enumerate([{}, {}, {"debug": True}], start=1):   # general path, fast path, poisoned
        assert accumulate(x, total, **options) is total
        torch.testing.assert_close(total[:8], 5.0 + calls * x[:8])
        assert bool((total[8:] == 5.0).all()), "rows the kernel does not write keep what the input held"
    host_total = np.full((16, 16), 5.0, np.float32)
    back = accumulate(X, host_total)
    assert np.array_equal(back[:8], X[:8] + 5.0) and np.all(host_total == 5.0)


def test_out_may_leave_some_outputs_to_the_call_on_the_gpu():
    torch = pytest.importorskip("torch")
    from tests.test_kernel import X, double_and_triple_kernel
    kernel = double_and_triple_kernel()
    x = torch.from_numpy(X).cuda()
    for _ in range(2):   # the general path, then the prepared one
        target = torch.empty_like(x)
        doubled, tripled = kernel(x, out=(None, target))
        assert tripled is target
        torch.testing.assert_close(tripled, 3 * x)
        torch.testing.assert_close(doubled, 2 * x)
    target = np.empty_like(X)
    doubled, tripled = kernel(X, out=(None, target))
    assert tripled is target and np.array_equal(target, 3 * X) and np.array_equal(doubled, 2 * X)


def test_torch_zeros_a_kernel_carries_live_outside_torchs_memory_pools():
    # torch.compile's CUDA graphs refuse live tensors of their pool that are not their outputs
    torch = pytest.importorskip("torch")
    from tilegemm.runtime import readers
    before = torch.cuda.memory_allocated(0)
    counters = readers.TorchReader.zeros((3, 5), np.int32, 0, torch.cuda.current_stream(0).cuda_stream)
    assert isinstance(counters, torch.Tensor) and counters.dtype == torch.int32 and counters.shape == (3, 5)
    assert torch.cuda.memory_allocated(0) == before
    assert int(counters.abs().sum()) == 0


def test_a_torch_view_of_device_memory_held_until_the_interpreter_exits_exits_cleanly():
    # its DLPack deleter runs while the interpreter shuts down, after tilegemm's modules are cleared
    import subprocess
    import sys
    pytest.importorskip("torch")
    code = ("import builtins, numpy as np, torch; from tilegemm.runtime import DeviceArray; "
            "builtins.held = torch.from_dlpack(DeviceArray.empty((4,), np.float32))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and "Exception" not in run.stderr, run.stderr
