"""tg.matmul's small-problem designs on the H200: swap-AB, 64-row tiles and split-K compute every element right
(outputs poisoned with NaN first), down to M = 1 and on ragged shapes; split-K's result does not depend on the order
blocks ran in, nor on whether a second pass or each tile's last slice sums the slices; a split design's repeated
call (prepared) and its CUDA-graph captures stay right, replayed in any order."""
import numpy as np
import pytest

import tilegemm as tg
import tilegemm.testing as tt
from tilegemm.ops import designs, dispatch, epilogue
from tilegemm.runtime import counters, device_count, readers

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
torch = pytest.importorskip("torch")

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
SWAP = dict(tile_m=64, schedule="pingpong", swap_ab=True, stages=8)
SWAP_WIDE = dict(tile_m=128, schedule="cooperative", swap_ab=True, stages=6)
ROWS_64 = dict(tile_m=64, tile_n=128, schedule="pingpong", stages=5)
ROWS_64_WIDE = dict(tile_m=64, tile_n=224, schedule="pingpong", epi_tile_n=32, stages=5)   # 32-column store slices
PAIRS_ALONG_N = dict(tile_m=128, tile_n=192, schedule="cooperative", cluster_n=2)   # sharing A's tile by multicast
PROMOTED = dict(tile_m=128, tile_n=192, schedule="pingpong", stages=4, l2_promotion=256)   # loads ask L2 for 256 B


def operands(m, n, k, dtype, seed=0):
    """x [M, K] and a weight w stored [N, K] (multiplied as x @ w.T)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(m, k, device="cuda", dtype=DTYPES[dtype], generator=g),
            torch.randn(n, k, device="cuda", dtype=DTYPES[dtype], generator=g))


def assert_matches(c, x, w):
    ref = (x.double() @ w.double().T).cpu().numpy()
    dtype = {torch.float16: tg.float16, torch.bfloat16: tg.bfloat16}[c.dtype]
    out = c.float().cpu().numpy()
    assert not np.isnan(out).any(), "an element of the poisoned output was never written"
    tt.assert_close(out, ref, k=x.shape[1], dtype=dtype)


def design(m, n, k, dtype, params, num_sms=132):
    items = designs.on_the_grid(dict(params, a_layout="mk", b_layout="nk"), "h200", num_sms)
    if params.get("swap_ab"):
        items.update(tile_n=min(t for t in designs.SWAP_TILE_N if t >= m))
        items.update(epi_tile_n=items["tile_n"])
    return designs.build(m, n, k, dtype, tuple(sorted(items.items())))


@pytest.mark.parametrize("shape,params,split_k,dtype", [   # each design in one dtype: compiles take GPU time
    ((1, 4096, 4096), SWAP, 1, "float16"), ((1, 4104, 4168), SWAP, 3, "bfloat16"),
    ((13, 1000, 2008), SWAP_WIDE, 2, "float16"), ((64, 4096, 1024), SWAP, 4, "bfloat16"),
    ((40, 1016, 520), SWAP_WIDE, 1, "bfloat16"), ((100, 4096, 4096), ROWS_64, 2, "float16"),
    ((129, 1000, 2000), ROWS_64, 1, "bfloat16"), ((130, 3000, 1032), ROWS_64_WIDE, 1, "float16"),
    ((1000, 904, 1000), PAIRS_ALONG_N, 1, "bfloat16"),   # 5 N tiles: a block wholly past N
    ((1000, 1032, 1040), PROMOTED, 1, "float16"), ((1, 4104, 4168), dict(SWAP, l2_promotion=256), 1, "bfloat16"),
], ids=["swap-m1", "swap-split3-m1-ragged", "swap128-split2-m13", "swap-split4-m64", "swap128-m40",
        "rows64-split2", "rows64-ragged", "rows64-224-ragged", "pairs-along-n-ragged", "promoted-l2-256-ragged",
        "swap-promoted-l2-256-m1"])
def test_each_design_writes_every_element_right(shape, params, split_k, dtype):
    x, w = operands(*shape, dtype)
    run = design(*shape, dtype, dict(params, split_k=split_k) if split_k > 1 else params)
    assert_matches(run(x, w, debug=True), x, w)
    torch.cuda.synchronize()   # a fault would surface here


@pytest.mark.parametrize("reduction", ["second_pass", "last_slice"])
def test_split_k_is_deterministic_whatever_order_the_blocks_run_in(reduction):
    x, w = operands(16, 4096, 8192, "bfloat16", seed=3)
    params = dict(SWAP, split_k=4, split_reduction=reduction)
    outs = [design(16, 4096, 8192, "bfloat16", params, num_sms=sms)(x, w) for sms in (132, 7, 132)]
    assert all(torch.equal(outs[0], out) for out in outs[1:])


@pytest.mark.parametrize("shape,params,split_k,dtype", [
    ((1, 4104, 4168), SWAP, 3, "bfloat16"), ((13, 1000, 2008), SWAP_WIDE, 2, "float16"),
    ((64, 4096, 14336), SWAP, 2, "float16"),
    ((128, 4096, 14336), dict(ROWS_64, stages=6), 2, "bfloat16"),
    ((130, 1000, 2000), dict(tile_m=128, tile_n=128, schedule="cooperative", stages=4), 3, "float16"),
], ids=["swap-split3-m1-ragged", "swap128-split2-m13", "swap-split2-m64", "rows64-split2-m128",
        "coop128-split3-ragged"])
def test_a_split_summed_by_its_last_slices_has_the_second_passs_bits(shape, params, split_k, dtype):
    # one kernel: each tile's last slice sums the partials in slice order, as the second pass does; its counters
    # are left at 0, so repeated calls (the general path, then the prepared one) stay right
    x, w = operands(*shape, dtype)
    second = design(*shape, dtype, dict(params, split_k=split_k))(x, w)
    last = design(*shape, dtype, dict(params, split_k=split_k, split_reduction="last_slice"))
    for _ in range(3):
        c = last(x, w, debug=True)
        assert_matches(c, x, w)
        assert torch.equal(c, second)


def test_counters_of_a_split_summed_by_its_last_slices_are_one_array_per_stream():
    x, w = operands(64, 4096, 4096, "float16")
    run = design(64, 4096, 4096, "float16", dict(SWAP, split_k=2, split_reduction="last_slice"))
    expected = run(x, w)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        outs = [run(x, w) for _ in range(2)]
    side.synchronize()
    assert all(torch.equal(out, expected) for out in outs)
    made = [arrays for key, arrays in counters._made.items() if key[3] + key[4] == run.carried]
    assert len(made) >= 2, "a workspace and counters for each stream"
    assert all(int(count.abs().sum()) == 0 for _, count in made), "each stream's counters, left at 0"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("m", [1, 64, 128])
def test_tg_matmul_decodes_right_against_a_weight_of_too_few_tiles(m, dtype):
    # (N, K) = (1024, 14336): 8-16 weight tiles, so tg.matmul's pick splits K
    x, w = operands(m, 1024, 14336, dtype)
    for _ in range(2):   # the general path, then the prepared one
        assert_matches(tg.matmul(x, w.T, debug=True), x, w)


@pytest.mark.parametrize("weight", [False, True], ids=["a@b", "x@w.T"])
def test_tg_matmul_fills_the_rounds_of_a_ragged_problem_with_swapped_tiles_right(weight):
    # 5000 x 1000 x 3000: tg.matmul picks swapped 256x152 tiles (C^T's), whose last ones run past M = 5000 and N
    x, w = operands(5000, 1000, 3000, "bfloat16" if weight else "float16", seed=4)
    b = w.T if weight else w.T.contiguous()
    layouts = ("mk", "nk" if weight else "kn")
    params = dict(dispatch.choose_config(5000, 1000, 3000, "float16", *dispatch._target(False), *layouts))
    assert designs.filling(params)
    for _ in range(2):   # the general path, then the prepared one
        assert_matches(tg.matmul(x, b, debug=True), x, w)


@pytest.mark.parametrize("shape,dtype,width", [
    ((4382, 2432, 2920), "float16", 176), ((4761, 2768, 1208), "bfloat16", 144),
    ((4094, 1208, 1752), "float16", 160), ((4919, 1176, 2480), "bfloat16", 192),
    ((4761, 2768, 1208), "float16", 136), ((4382, 2432, 2920), "bfloat16", 184),
], ids=["w176-slices-of-16", "w144-slices-of-32-last-16", "w160", "w192-3-stages", "w136-slices-of-32-last-8",
     "w184-slices-of-8"])
def test_every_filling_width_writes_every_element_right(shape, dtype, width):
    # shapes whose least-waste 256-row width is `width` (tg.matmul may run them otherwise, e.g. in clusters)
    x, w = operands(*shape, dtype, seed=6)
    (params,) = [dict(d, num_sms=132, a_layout="mk", b_layout="kn") for d in designs.filling_designs(
        *shape[:2], tg.lang.dtypes.as_dtype(dtype), 132, "mk", "kn") if d["tile_n"] == width]
    c = torch.full(shape[:2], float("nan"), device="cuda", dtype=DTYPES[dtype])
    designs.build(*shape, dtype, tuple(sorted(params.items())))(x, w.T.contiguous(), out=c)
    assert_matches(c, x, w)


def scale_and_bias(acc, scale, bias):
    return acc * scale + bias


@pytest.mark.parametrize("swap", [True, False], ids=["swapped", "tiles-of-c"])
def test_a_fused_epilogue_runs_right_on_a_last_store_slice_8_columns_wide(swap):
    m, n, k = 1000, 1032, 520    # 136-wide tiles stored in slices of 64, 64 and 8 columns
    x, w = operands(m, n, k, "float16", seed=7)
    g = torch.Generator(device="cuda").manual_seed(8)
    scale = torch.rand(m, 1, device="cuda", generator=g) + 0.5
    bias = torch.randn(n, device="cuda", generator=g)
    spec = epilogue.fused(scale_and_bias, {"scale": tg.ShapeDtype((m, 1), tg.float32),
                                           "bias": tg.ShapeDtype((n,), tg.float32)}, m, n, None, tg.float16)
    params = dict(tile_m=128, tile_n=136, schedule="cooperative", epi_tile_n=64, swap_ab=swap, stages=4, num_sms=132,
                  a_layout="mk", b_layout="kn")
    c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.float16)
    designs.build(m, n, k, "float16", tuple(sorted(params.items())), spec)(x, w.T.contiguous(), scale, bias, out=c)
    out = c.float().cpu().numpy()
    assert not np.isnan(out).any(), "an element of the poisoned output was never written"
    ref = ((x.double() @ w.double().T) * scale.double() + bias.double()).cpu().numpy()
    tt.assert_close(out, ref, k=k, dtype=tg.float16)


def test_a_split_design_takes_the_prepared_path_and_is_captured_by_a_cuda_graph():
    x, w = operands(16, 1024, 14336, "float16")
    params = dict(dispatch.choose_config(16, 1024, 14336, "float16", *dispatch._target(False), "mk", "nk"))
    assert params.get("split_k", 1) > 1
    c = torch.empty(16, 1024, device="cuda", dtype=torch.float16)
    tg.matmul(x, w.T, out=c)
    assert dispatch._prepared.get((readers.signature((x, w.T)), None)) is not None
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        tg.matmul(x, w.T, out=c)
    for seed in (1, 2):
        x2, w2 = operands(16, 1024, 14336, "float16", seed=seed)
        x.copy_(x2)
        w.copy_(w2)
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        assert_matches(c, x, w)


def test_graphs_captured_on_one_stream_replay_in_any_order():
    # each graph zeroes the counters before it first uses them: the graph captured second, replayed first, sums right
    # even where the counters hold what a stale launch could have left
    x, w = operands(16, 1024, 14336, "float16")
    outs = [torch.full((16, 1024), float("nan"), device="cuda", dtype=torch.float16) for _ in range(2)]
    tg.matmul(x, w.T, out=outs[0])   # compiled before the captures
    torch.cuda.synchronize()
    stream, graphs = torch.cuda.Stream(), [torch.cuda.CUDAGraph() for _ in outs]
    before = set(counters._made)
    for graph, c in zip(graphs, outs):
        with torch.cuda.graph(graph, stream=stream):
            tg.matmul(x, w.T, out=c)
    (made,) = [arrays for key, arrays in counters._made.items() if key not in before]   # the capture stream's
    for c in outs:
        c.fill_(float("nan"))
    for array in made:
        array.fill_(3)
    for graph, c in zip(reversed(graphs), reversed(outs)):
        graph.replay()
        torch.cuda.synchronize()
        assert_matches(c, x, w)


def test_a_process_that_ran_a_split_design_on_torch_tensors_exits_cleanly():
    # the stream's workspace and counters (torch views of tilegemm's memory) are freed as the process ends
    import subprocess
    import sys
    code = ("import torch, tilegemm as tg; x = torch.randn(16, 14336, device='cuda', dtype=torch.float16); "
            "w = torch.randn(1024, 14336, device='cuda', dtype=torch.float16); c = tg.matmul(x, w.T); "
            "torch.cuda.synchronize(); print(float((c.float() - x.float() @ w.float().T).abs().max()))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "Exception" not in run.stderr, run.stderr
    assert float(run.stdout.split()[-1]) < 1.0


@pytest.mark.parametrize("shared", [True, False], ids=["shared-b", "b-per-entry"])
@pytest.mark.parametrize("shape", [(4, 1, 4096, 1024), (3, 40, 1016, 520)], ids=["m1", "ragged"])
def test_batched_inputs_are_right(shape, shared):
    batch, m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(5)
    x = torch.randn(batch, m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn((n, k) if shared else (batch, n, k), device="cuda", dtype=torch.bfloat16, generator=g)
    for _ in range(2):   # the general path, then the prepared one
        c = tg.matmul(x, w.mT, debug=True)
        assert c.shape == (batch, m, n)
        for i in range(batch):
            assert_matches(c[i], x[i], w if shared else w[i])
