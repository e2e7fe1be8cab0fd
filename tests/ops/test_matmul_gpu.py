"""tg.matmul on the H200: every accepted shape is right (down to M = 1), repeated calls take the prepared fast
path on the caller's stream, out= and CUDA-graph capture work, and bad pointers are refused before launch."""
import numpy as np
import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.ops import dispatch
from tilegemm.runtime import device_count, readers

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
torch = pytest.importorskip("torch")

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}


def operands(m, n, k, dtype="float16", seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=DTYPES[dtype], generator=g)
    b = torch.randn(k, n, device="cuda", dtype=DTYPES[dtype], generator=g)
    return a, b


def assert_matches(c, a, b):
    """Every element written (no NaN from the poisoned output) and, tile by tile, within tilegemm.testing's
    tolerance of the float64 product."""
    ref = (a.detach().double() @ b.detach().double()).cpu().numpy()
    dtype = {torch.float16: tg.float16, torch.bfloat16: tg.bfloat16}[c.dtype]
    tt.assert_close(c.float().cpu().numpy(), ref, k=a.shape[1], dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(1, 8, 8), (1, 8, 16), (1, 3000, 3000), (1, 8192, 8192), (2, 8, 8),
                                   (3, 24, 40), (1, 136, 8), (129, 8, 4104)])
def test_tiny_and_single_row_problems_are_right(shape, dtype):
    a, b = operands(*shape, dtype)
    assert_matches(tg.matmul(a, b, debug=True), a, b)
    torch.cuda.synchronize()   # a fault would surface here, and end the process's CUDA context


def test_a_repeated_call_takes_the_prepared_path_and_stays_right():
    a, b = operands(256, 384, 192)
    first = tg.matmul(a, b)
    assert dispatch._prepared.get((readers.signature((a, b)), None)) is not None
    a2, b2 = operands(256, 384, 192, seed=1)
    assert_matches(tg.matmul(a2, b2, debug=True), a2, b2)
    assert_matches(first, a, b)


def test_calls_run_on_torchs_current_stream():
    a, b = operands(512, 512, 512)
    tg.matmul(a, b)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        a.mul_(2)        # queued on the side stream: the matmul must see it, and run after it
        c = tg.matmul(a, b)
    side.synchronize()
    assert_matches(c, a, b)


def test_out_writes_into_the_callers_tensor():
    a, b = operands(128, 256, 64)
    c = torch.full((128, 256), float("nan"), device="cuda", dtype=torch.float16)
    for _ in range(2):   # the general path, then the prepared one
        assert tg.matmul(a, b, out=c) is c
        assert_matches(c, a, b)
        c.fill_(float("nan"))


def test_out_of_the_wrong_shape_is_refused():
    a, b = operands(128, 256, 64)
    tg.matmul(a, b)
    with pytest.raises(tg.ArgumentError, match=r"has shape \(128, 128\) but the kernel was traced for \(128, 256\)"):
        tg.matmul(a, b, out=torch.empty(128, 128, device="cuda", dtype=torch.float16))


def test_calls_are_captured_by_a_cuda_graph_and_replay_on_new_data():
    a, b = operands(256, 256, 128)
    c = torch.empty(256, 256, device="cuda", dtype=torch.float16)
    tg.matmul(a, b, out=c)   # compile and prepare outside the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        tg.matmul(a, b, out=c)
    for seed in (3, 4):
        a2, b2 = operands(256, 256, 128, seed=seed)
        a.copy_(a2)
        b.copy_(b2)
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_matches(c, a, b)


LINKS = 12


@pytest.mark.parametrize("m,k", [(1, 4096), (64, 4096), (512, 1024)])
def test_back_to_back_calls_each_reading_the_last_ones_output_are_right(m, k):
    """tg.matmul's kernels are dependent launches: a call's blocks may start while the previous call finishes and
    wait for it before reading; at 512 x 1024 x 1024 (SM-bound) each call also lets the next launch once its loads
    are issued. A chain of calls, each multiplying the previous one's output, is right at every link, run in a stream
    and replayed from a CUDA graph (every output poisoned before the replay)."""
    g = torch.Generator(device="cuda").manual_seed(0)
    w = torch.randn(k, k, device="cuda", dtype=torch.float16, generator=g) / k ** 0.5
    xs = [torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g)]
    xs += [torch.empty(m, k, device="cuda", dtype=torch.float16) for _ in range(LINKS)]

    def chain():
        for x, y in zip(xs, xs[1:]):
            tg.matmul(x, w, out=y)

    def assert_every_link_matches():
        torch.cuda.synchronize()
        for x, y in zip(xs, xs[1:]):
            assert_matches(y, x, w)

    chain()
    assert_every_link_matches()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        chain()
    xs[0].copy_(torch.randn(m, k, device="cuda", dtype=torch.float16, generator=g))
    for y in xs[1:]:
        y.fill_(float("nan"))
    graph.replay()
    assert_every_link_matches()


@pytest.mark.parametrize("offset", [8, 2])   # bytes past a 16-byte boundary
def test_a_misaligned_view_is_refused_even_after_aligned_calls(offset):
    a, b = operands(64, 64, 64)
    tg.matmul(a, b)
    storage = torch.randn(64 * 64 + 8, device="cuda").to(torch.float16)
    view = storage[offset // 2:offset // 2 + 64 * 64].view(64, 64)
    assert readers.signature((view, b)) == readers.signature((a, b))
    with pytest.raises(tg.ArgumentError, match="not 16-byte aligned"):
        tg.matmul(view, b)


def test_numpy_in_numpy_out():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((200, 136)).astype(np.float16)
    b = rng.standard_normal((136, 264)).astype(np.float16)
    c = tg.matmul(a, b, debug=True)
    assert isinstance(c, np.ndarray) and not np.isnan(c.astype(np.float32)).any()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    assert np.abs(c - ref).max() / np.abs(ref).max() < 2e-2


def test_cupy_arrays_stay_on_the_gpu():
    cupy = pytest.importorskip("cupy")
    rng = cupy.random.default_rng(0)
    a = rng.standard_normal((128, 64), dtype=cupy.float32).astype(cupy.float16)
    b = rng.standard_normal((64, 128), dtype=cupy.float32).astype(cupy.float16)
    for _ in range(2):
        c = tg.matmul(a, b)
        got = cupy.asnumpy(cupy.from_dlpack(c)).astype(np.float64)
        ref = cupy.asnumpy(a).astype(np.float64) @ cupy.asnumpy(b).astype(np.float64)
        assert np.abs(got - ref).max() / np.abs(ref).max() < 2e-2


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(256, 384, 192), (200, 264, 136), (1, 4096, 1024)])
def test_a_weight_stored_n_by_k_is_multiplied_as_stored(shape, dtype):
    m, n, k = shape
    x, _ = operands(m, n, k, dtype)
    w = torch.randn(n, k, device="cuda").to(DTYPES[dtype])
    for _ in range(2):   # the general path, then the prepared one
        assert_matches(tg.matmul(x, w.T, debug=True), x, w.T)


def test_a_given_as_the_transpose_of_a_k_by_m_array():
    at = torch.randn(192, 256, device="cuda").to(torch.float16)   # stored [K, M]
    _, b = operands(256, 128, 192)
    for _ in range(2):
        assert_matches(tg.matmul(at.T, b, debug=True), at.T, b)


def test_parameters_that_require_gradients_are_multiplied():
    x, _ = operands(128, 256, 64)
    w = torch.nn.Parameter(torch.randn(256, 64, device="cuda").to(torch.float16))
    for _ in range(2):
        assert_matches(tg.matmul(x, w.T, debug=True), x, w.T.detach())


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("n", [4096, 1024], ids=["one-pass", "split-5"])
def test_batch_invariant_rows_have_the_same_bits_whatever_the_batch(n, dtype):
    # against a 4096 x 14336 weight one row's design sums K in one pass (the default splits K at M = 128); against
    # a 1024 x 14336 one it splits K in five, and so does every batch-invariant call, 128-row tiles included
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(300, 14336, device="cuda", dtype=dtype, generator=g)
    w = torch.randn(n, 14336, device="cuda", dtype=dtype, generator=g)
    full = tg.matmul(x, w.T, batch_invariant=True)
    for m in (1, 16, 64, 128, 200):   # swap-AB, 64-row and 128-row designs
        for _ in range(2):   # the general path, then the prepared one
            assert torch.equal(tg.matmul(x[:m], w.T, batch_invariant=True), full[:m])
    batched = tg.matmul(x[:240].reshape(2, 120, 14336), w.T, batch_invariant=True)
    assert torch.equal(batched.reshape(240, n), full[:240])
    tt.assert_close(full.float().cpu().numpy(), (x.double() @ w.double().T).cpu().numpy(), k=14336,
                    dtype={torch.float16: tg.float16, torch.bfloat16: tg.bfloat16}[dtype])
