"""The stream-K tail on the H200: every element right (outputs poisoned with NaN first) at ragged shapes in both
schedules, the same bits call after call, through the prepared path, into out=, from host arrays, and captured by
a CUDA graph."""
import numpy as np
import pytest

from tilegemm.runtime import device_count, readers
from tests.ops.test_designs_gpu import DTYPES, assert_matches
from tests.ops.test_stream_k import stream_k_design

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
torch = pytest.importorskip("torch")


def operands(m, n, k, dtype, seed=0):
    """a [M, K] and b [K, N], with w = b.T for assert_matches (which multiplies x @ w.T)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(m, k, device="cuda", dtype=DTYPES[dtype], generator=g),
            torch.randn(k, n, device="cuda", dtype=DTYPES[dtype], generator=g))


@pytest.mark.parametrize("shape,dtype,params", [
    ((1234, 4104, 2048), "float16", dict(tile_n=128, schedule="cooperative", stream_k=2)),   # 66 tiles after 2 rounds
    ((1234, 4104, 2056), "bfloat16", dict(tile_n=192, schedule="pingpong", stream_k=3)),     # K ends mid-step
    ((1000, 3000, 1000), "float16", dict(tile_n=128, schedule="cooperative", stream_k=4)),
], ids=["coop-x2", "pingpong-x3-ragged-k", "coop-x4"])
def test_every_element_of_a_stream_k_design_is_right(shape, dtype, params):
    a, b = operands(*shape, dtype)
    run = stream_k_design(*shape, 132, dtype=dtype, **params)
    first = run(a, b, debug=True)
    assert_matches(first, a, b.T)
    assert torch.equal(run(a, b), first), "the tail's partials are summed in a fixed order"
    torch.cuda.synchronize()


def test_the_prepared_path_out_and_a_cuda_graph():
    shape = (1234, 4104, 2048)
    a, b = operands(*shape, "float16", seed=1)
    run = stream_k_design(*shape, 132, tile_n=128, schedule="cooperative", stream_k=2)
    c = torch.full(shape[:2], float("nan"), device="cuda", dtype=torch.float16)
    assert run(a, b, out=c) is c
    launch = run.prepared(readers.signature((a, b)))
    assert launch is not None
    c.fill_(float("nan"))
    assert launch([a, b], [c], False)[0] is c
    assert_matches(c, a, b.T)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch([a, b], [c], False)
    a2, b2 = operands(*shape, "float16", seed=2)
    a.copy_(a2)
    b.copy_(b2)
    c.fill_(float("nan"))
    graph.replay()
    torch.cuda.synchronize()
    assert_matches(c, a, b.T)


def test_host_arrays_come_back_right_and_fill_out():
    shape = (1000, 3000, 1000)
    a, b = (x.cpu().numpy() for x in operands(*shape, "float16", seed=3))
    run = stream_k_design(*shape, 132, tile_n=128, schedule="cooperative", stream_k=2)
    out = np.full(shape[:2], np.nan, np.float16)
    assert run(a, b, out=out) is out
    assert_matches(torch.from_numpy(out).cuda(), torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda().T)
