"""A grouped GEMM for a mixture of experts: each M tile's expert is read at run time (Pallas "scalar prefetch").

In a mixture-of-experts layer every token is multiplied by the weight of the expert
it was routed to. The "contiguous" layout groups the tokens by expert: x [M, K] holds
expert 0's tokens, then expert 1's, ..., each group padded with zero rows to a
multiple of the M tile, so that every M tile belongs to one expert; x is sized for
the most tiles any routing needs, so one compiled kernel serves every routing. An
int32 array tile_expert [M // tile_m] gives each tile's expert (-1: a tile past the
last group, which is skipped and whose rows are not written), and the weights are
stacked: w [E, N, K] as PyTorch linear layers store them (y = x @ w[e].T), or
w [E, K, N] with `w_layout="kn"`.

A Pallas kernel passes tile_expert as a scalar-prefetch operand
(`PrefetchScalarGridSpec(num_scalar_prefetch=1)`) and uses it in a BlockSpec's index
map. Here it is an ordinary kernel input: `tile_expert[mi]` reads one element when
the op runs and gives a traced int32 scalar, which goes wherever a traced index does:

    expert = tile_expert[mi]
    @tg.when(expert >= 0)                                                    # a condition
    ...  tg.BlockSpec((None, tile_n, tile_k), lambda ki: (expert, ni, ki))   # a TMA coordinate into w [E, N, K]

TMA clips at the array's edges: an expert id >= E reads zeros (that tile's rows
come out zero), on the GPU and in the interpreter alike.

    python examples/grouped_gemm_moe.py     # traces, budgets, interprets a small case; on a GPU runs a large one
"""
import numpy as np

import tilegemm as tg

ARCH = "sm_90a"
SKIPPED = -1   # the tile_expert entry of a tile that holds only padding


def build(m, n, k, experts, dtype=tg.float16, *, w_layout="nk", tile_m=64, tile_n=128, tile_k=64, stages=2):
    """out [m, n] = x [m, k] @ (the weight of each M tile's expert), f32 accumulation; the kernel takes
    (x, w, tile_expert) with w [experts, n, k] (`w_layout="nk"`) or [experts, k, n] ("kn")."""
    mma_layout = lambda minor: tg.mma_transforms(minor, dtype)  # noqa: E731
    w_shape = (experts, n, k) if w_layout == "nk" else (experts, k, n)

    @tg.kernel(in_specs=[tg.ShapeDtype((m, k), dtype), tg.ShapeDtype(w_shape, dtype),
                         tg.ShapeDtype((tg.cdiv(m, tile_m),), tg.int32)],
               out_shape=tg.ShapeDtype((m, n), dtype),
               grid=(tg.cdiv(m, tile_m), tg.cdiv(n, tile_n)), grid_names=("m", "n"),
               scratch_shapes=dict(acc=tg.ACC((tile_m, tile_n)),
                                   out_smem=tg.SMEM((tile_m, tile_n), dtype, transforms=mma_layout(tile_n))),
               name="grouped_gemm_moe")
    def grouped_matmul(x, w, tile_expert, out, acc, out_smem):
        mi, ni = tg.axis_index("m"), tg.axis_index("n")
        expert = tile_expert[mi]      # read from GMEM when the kernel runs: a traced int32 scalar

        if w_layout == "nk":          # the weight tile as stored, [tile_n, tile_k], read K-major by the MMA
            w_spec = tg.BlockSpec((None, tile_n, tile_k), lambda ki: (expert, ni, ki), transforms=mma_layout(tile_k))
        else:
            w_spec = tg.BlockSpec((None, tile_k, tile_n), lambda ki: (expert, ki, ni), transforms=mma_layout(tile_n))

        def step(indices, x_block, w_block):
            tg.wgmma(acc, x_block, w_block.T if w_layout == "nk" else w_block)
            tg.wgmma_wait(0)

        @tg.when(expert != SKIPPED)
        def _multiply():
            tg.emit_pipeline(
                step, grid=(tg.cdiv(k, tile_k),), max_concurrent_steps=stages,
                in_specs=[tg.BlockSpec((tile_m, tile_k), lambda ki: (mi, ki), transforms=mma_layout(tile_k)), w_spec],
            )(x, w)
            out_smem[...] = acc[...].astype(dtype)
            tg.commit_smem()
            tg.copy_smem_to_gmem(out_smem, out.at[tg.ds(mi * tile_m, tile_m), tg.ds(ni * tile_n, tile_n)])
            tg.wait_smem_to_gmem(0)
    return grouped_matmul


def max_tiles(tokens, experts, tile_m):
    """The most M tiles any routing of `tokens` over `experts` needs (each group pads fewer than tile_m rows): x is
    sized for it, so one compiled kernel serves every routing."""
    return tg.cdiv(tokens, tile_m) + experts


def group_by_expert(token_expert, experts, tile_m):
    """The contiguous layout of tokens routed to `token_expert` [T]: (row [T], the row of each token in x, and
    tile_expert [max_tiles]); each expert's rows start at a multiple of tile_m, the tiles past the last group are
    SKIPPED."""
    counts = np.bincount(token_expert, minlength=experts)
    padded = -(-counts // tile_m) * tile_m
    starts = np.concatenate([[0], np.cumsum(padded)[:-1]])
    order = np.argsort(token_expert, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
    tile_expert = np.full(max_tiles(len(token_expert), experts, tile_m), SKIPPED, np.int32)
    used = np.repeat(np.arange(experts, dtype=np.int32), padded // tile_m)
    tile_expert[:len(used)] = used
    return starts[token_expert] + rank, tile_expert


def example_inputs(tokens, n, k, experts, dtype=tg.float16, *, w_layout="nk", tile_m=64, seed=0):
    """Seeded tokens routed at random, in the contiguous layout: (x [M, k], w, tile_expert, row of each token)."""
    rng = np.random.default_rng(seed)
    row, tile_expert = group_by_expert(rng.integers(0, experts, tokens), experts, tile_m)
    x = np.zeros((len(tile_expert) * tile_m, k), dtype)
    x[row] = rng.standard_normal((tokens, k)).astype(dtype)
    w_shape = (experts, n, k) if w_layout == "nk" else (experts, k, n)
    w = (rng.standard_normal(w_shape) / np.sqrt(k)).astype(dtype)
    return x, w, tile_expert, row


def reference(x, w, tile_expert, *, w_layout="nk", tile_m=64):
    """The float64 product of every tile with its expert's weight (NaN rows for skipped tiles: not written)."""
    weights = w.astype(np.float64) if w_layout == "kn" else np.swapaxes(w.astype(np.float64), 1, 2)
    out = np.full((x.shape[0], weights.shape[2]), np.nan)
    for t, e in enumerate(tile_expert):
        if e != SKIPPED:
            rows = slice(t * tile_m, (t + 1) * tile_m)
            out[rows] = x[rows].astype(np.float64) @ weights[e] if e < len(w) else 0.0
    return out


def relative_error(out, ref, rows):
    """|out - ref| / |ref| (Frobenius) over the token rows `rows`."""
    diff = out[rows].astype(np.float64) - ref[rows]
    return float(np.linalg.norm(diff) / np.linalg.norm(ref[rows]))


def main():
    from tilegemm.showcase import gpu_present
    tokens, n, k, experts = 300, 256, 136, 4
    x, w, tile_expert, row = example_inputs(tokens, n, k, experts)
    kernel = build(x.shape[0], n, k, experts)
    graph = kernel.trace(x, w, tile_expert)                       # traced and verified for sm_90a
    print(tg.model.budget(graph, device="h200").table())
    out = kernel(x, w, tile_expert, interpret=True)
    error = relative_error(out, reference(x, w, tile_expert), row)
    print(f"{tokens} tokens over {experts} experts ({x.shape[0]} rows), N={n} K={k}, interpreted: "
          f"relative error {error:.2e}")
    if gpu_present():
        tokens, n, k, experts = 16384, 2048, 1024, 8
        x, w, tile_expert, row = example_inputs(tokens, n, k, experts)
        out = build(x.shape[0], n, k, experts)(x, w, tile_expert)
        error = relative_error(out, reference(x, w, tile_expert), row)
        print(f"{tokens} tokens over {experts} experts, N={n} K={k}, GPU: relative error {error:.2e}")


if __name__ == "__main__":
    main()
