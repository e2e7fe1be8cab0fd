"""tg.matmul with block scales on the H200: the block-scaled product of e4m3/e5m2 operands against float64 on ragged
and tiny shapes (M = 1 included) into outputs poisoned before the call, both stored layouts of the scales, and the
accuracy promotion buys: at large K it is at least as accurate as the unpromoted per-tensor product of the same
values."""
import pytest

import tilegemm as tg
from tilegemm.ops import blockscaling
from tilegemm.runtime import device_count

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
torch = pytest.importorskip("torch")
from tilegemm.lang.dtypes import as_dtype  # noqa: E402
from tilegemm.torch.host import torch_dtype  # noqa: E402

FP8 = ("e4m3", "e5m2")   # tilegemm's short names of the fp8 types
SHAPES = [(1, 64, 256), (40, 1016, 528), (200, 136, 304), (130, 8, 160), (1000, 1032, 1040), (2048, 2048, 4096)]
BLOCK_SUM_ERROR = 3e-4   # an f32 output's error: the tensor core's fp8 sum within one K block keeps fewer bits than
                         # f32 (1.3e-4 relative measured on the H200 at K = 4096 and 16384)


def block_scaled_operands(m, n, k, dtype, seed=0):
    """a [M, K], w [N, K] in `dtype`, scale_a [M, Kb] (M-major, as torch stores it) and scale_b [Kb, Nb] (the
    transpose of a row-major [Nb, Kb]), scales spread over two orders of magnitude."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    kb, nb = blockscaling.blocks(k), blockscaling.blocks(n)
    a = torch.randn(m, k, device="cuda", generator=g).to(torch_dtype(as_dtype(dtype)))
    w = torch.randn(n, k, device="cuda", generator=g).to(torch_dtype(as_dtype(dtype)))
    sa = 10.0 ** (2 * torch.rand(kb, m, device="cuda", generator=g) - 1)
    sb = 10.0 ** (2 * torch.rand(nb, kb, device="cuda", generator=g) - 1)
    return a, w, sa.t(), sb.t()


def reference(a, w, sa, sb):
    """The float64 product of the dequantized operands: each scale broadcast over its block."""
    m, k = a.shape
    n = w.shape[0]
    block = blockscaling.BLOCK
    a_scales = sa.double().repeat_interleave(block, dim=1)[:, :k]
    w_scales = sb.double().t().repeat_interleave(block, dim=0).repeat_interleave(block, dim=1)[:n, :k]
    return (a.double() * a_scales) @ (w.double() * w_scales).t()


def relative_error(c, ref):
    return float(torch.linalg.norm(c.double() - ref) / torch.linalg.norm(ref))


def poisoned(m, n, dtype=torch.bfloat16):
    return torch.full((m, n), float("nan"), device="cuda", dtype=dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=["x".join(map(str, s)) for s in SHAPES])
@pytest.mark.parametrize("name", FP8)
def test_the_block_scaled_product_matches_float64_on_the_gpu(shape, name):
    m, n, k = shape
    a, w, sa, sb = block_scaled_operands(m, n, k, name)
    c = poisoned(m, n)
    tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16, out=c)
    assert not torch.isnan(c).any()
    assert relative_error(c, reference(a, w, sa, sb)) < 4e-3   # bf16 output; promotion keeps the sums f32


def test_row_major_scales_give_the_same_product_as_torchs_layout():
    a, w, sa, sb = block_scaled_operands(200, 136, 304, "e4m3")
    torch_layout = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out=poisoned(200, 136))
    row_major = tg.matmul(a, w.T, scale_a=sa.contiguous(), scale_b=sb.contiguous(), out=poisoned(200, 136))
    assert torch.equal(torch_layout, row_major)


@pytest.mark.parametrize("row_major_a,row_major_b", [(a, b) for a in (False, True) for b in (False, True)])
def test_scales_staged_in_smem_give_the_float64_product_in_every_layout(row_major_a, row_major_b):
    # M, ceil(K/128) and ceil(N/128) multiples of 4: TMA stages either layout of each scale (RESULTS.md run 96)
    m, n, k = 200, 496, 1536 - 48
    a, w, sa, sb = block_scaled_operands(m, n, k, "e4m3", seed=5)
    assert blockscaling.BlockScales("mk" if row_major_a else "km",
                                    "kn" if row_major_b else "nk").staged_slots(m, n, k, 128) is not None
    c = poisoned(m, n, torch.float32)
    tg.matmul(a, w.T, scale_a=sa.contiguous() if row_major_a else sa, scale_b=sb.contiguous() if row_major_b else sb,
              out_dtype=torch.float32, out=c)
    assert relative_error(c, reference(a, w, sa, sb)) < BLOCK_SUM_ERROR


def test_a_float32_output_is_the_promoted_f32_sum():
    a, w, sa, sb = block_scaled_operands(256, 512, 4096, "e4m3")
    c = poisoned(256, 512, torch.float32)
    tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.float32, out=c)
    assert relative_error(c, reference(a, w, sa, sb)) < BLOCK_SUM_ERROR


def test_promotion_is_at_least_as_accurate_as_the_unpromoted_per_tensor_product_at_large_k():
    m, n, k = 256, 512, 16384
    a, w, _, _ = block_scaled_operands(m, n, k, "e4m3")
    ones_a = torch.ones(k // blockscaling.BLOCK, m, device="cuda").t()
    ones_b = torch.ones(n // blockscaling.BLOCK, k // blockscaling.BLOCK, device="cuda").t()
    one = torch.ones((), device="cuda")
    ref = reference(a, w, ones_a, ones_b)    # every scale 1: both calls compute the same product
    f32 = dict(out_dtype=torch.float32)
    promoted = tg.matmul(a, w.T, scale_a=ones_a, scale_b=ones_b, out=poisoned(m, n, torch.float32), **f32)
    unpromoted = tg.matmul(a, w.T, scale_a=one, scale_b=one, out=poisoned(m, n, torch.float32), **f32)
    assert relative_error(promoted, ref) <= relative_error(unpromoted, ref)
    assert relative_error(promoted, ref) < BLOCK_SUM_ERROR


def test_the_prepared_fast_path_runs_the_block_scaled_kernel_again():
    a, w, sa, sb = block_scaled_operands(1000, 1032, 1040, "e4m3")
    first = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out=poisoned(1000, 1032))
    again = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out=poisoned(1000, 1032))
    assert torch.equal(first, again)


def picked(m, n, k):
    """The block-scaled design tg.matmul picks on this GPU for torch's scale layouts."""
    from tilegemm.ops import designs
    from tilegemm.ops.dispatch import _target
    return dict(designs.choose_block_scaled(m, n, k, "float8_e4m3fn", *_target(False),
                                            blockscaling.BlockScales("km", "nk")))


def assert_float64_product_twice(m, n, k, seed):
    """An f32 block-scaled call into a poisoned output is the float64 product to BLOCK_SUM_ERROR, and a second
    call (the prepared fast path) gives the same bits."""
    a, w, sa, sb = block_scaled_operands(m, n, k, "e4m3", seed=seed)
    first = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.float32, out=poisoned(m, n, torch.float32))
    assert not torch.isnan(first).any()
    assert relative_error(first, reference(a, w, sa, sb)) < BLOCK_SUM_ERROR
    again = tg.matmul(a, w.T, scale_a=sa, scale_b=sb, out_dtype=torch.float32, out=poisoned(m, n, torch.float32))
    assert torch.equal(first, again)


@pytest.mark.parametrize("shape", [(1023, 2048, 4096), (4095, 1024, 4096)], ids=["1023-tokens", "4095-tokens"])
def test_scales_padded_first_give_the_float64_product_and_the_same_one_again_on_the_fast_path(shape):
    # M not a multiple of 4: torch's M-major scale_a has rows TMA cannot copy; the model pads it at these shapes
    assert picked(*shape).get("pad_scales")
    assert_float64_product_twice(*shape, seed=8)


@pytest.mark.parametrize("shape", [(1, 4096, 7168), (16, 1000, 4096)], ids=["one-token", "16-tokens"])
def test_a_decode_sized_call_split_over_k_gives_the_float64_product_and_the_same_one_again(shape):
    """At decode's M the model swaps A and B (C^T's tiles: the weight's 128 rows, one of its scale blocks, on
    WGMMA's row side) and splits K (each slice promotes its own blocks; each tile's last slice sums them, in the
    same kernel); the consumers read the scales from GMEM."""
    params = picked(*shape)
    assert params["swap_ab"] and params.get("split_k", 1) > 1 and params["split_reduction"] == "last_slice"
    assert params.get("gmem_scales")
    assert_float64_product_twice(*shape, seed=10)


@pytest.mark.parametrize("shape,cluster_n,l2_promotion", [
    ((300, 200, 1008), 1, None), ((1000, 1032, 1040), 1, None), ((130, 256, 1024), 1, None),
    ((1000, 1024, 1040), 2, None), ((130, 512, 1024), 2, None), ((1000, 1032, 1040), 1, 256),
    ((1000, 1024, 1040), 2, 256)],
    ids=["staged-ragged", "staged-1000", "gmem-M-not-4", "pairs-along-n", "pairs-along-n-gmem", "staged-1000-l2-256",
         "pairs-along-n-l2-256"])
def test_256_row_tiles_sharing_one_partial_give_the_promoted_f32_sum(shape, cluster_n, l2_promotion):
    """256x128 tiles: each consumer's two 64-row blocks summed into one partial and promoted in turn (staged scales,
    or read from GMEM where M is not a multiple of 4), alone or in pairs along N sharing A's tile by multicast
    (DeepGEMM's), or loading A and B through descriptors asking L2 for 256 bytes a miss, into a poisoned f32
    output."""
    from tilegemm.ops import designs, epilogue
    m, n, k = shape
    a, w, sa, sb = block_scaled_operands(m, n, k, "e4m3", seed=7)
    params = designs.on_the_grid(dict(tile_m=256, tile_n=128, epi_tile_n=32, tile_k=128, schedule="cooperative",
                                      a_layout="mk", b_layout="nk", stages=4, cluster_n=cluster_n,
                                      **({"l2_promotion": l2_promotion} if l2_promotion else {})), "h200", 132)
    run = designs.build(m, n, k, "float8_e4m3fn", tuple(sorted(params.items())),
                        epilogue.fused(None, {}, m, n, tg.float32, tg.bfloat16), blockscaling.BlockScales())
    c = poisoned(m, n, torch.float32)
    run(a, w, sa.t(), sb.t(), out=c)   # scale_a [Kb, M] and scale_b [Nb, Kb], row-major: torch's layouts
    assert relative_error(c, reference(a, w, sa, sb)) < BLOCK_SUM_ERROR
