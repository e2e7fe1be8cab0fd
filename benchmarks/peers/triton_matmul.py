"""A Triton matmul (blocked, grouped tile order, software-pipelined) as a benchmark peer.

`contender(a, b)` tries a few standard Hopper configurations on the given inputs,
keeps the fastest, and returns (launch, out); None when Triton is not installed.
"""
import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # Triton is optional
    triton = None

CONFIGS = [  # (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages)
    (128, 256, 64, 8, 8, 3),
    (128, 128, 64, 8, 4, 4),
    (256, 128, 64, 8, 8, 3),
]

if triton is not None:
    @triton.jit
    def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
        pid = tl.program_id(0)
        grid_m, grid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
        group = pid // (GROUP_M * grid_n)
        first_m = group * GROUP_M
        rows_in_group = min(grid_m - first_m, GROUP_M)
        pid_m = first_m + (pid % rows_in_group)
        pid_n = (pid % (GROUP_M * grid_n)) // rows_in_group
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kk in range(0, tl.cdiv(K, BLOCK_K)):
            k_left = K - kk * BLOCK_K
            a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K * stride_bk
        c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def _launcher(a, b, c, cfg):
    bm, bn, bk, gm, warps, stages = cfg
    m, k = a.shape
    n = b.shape[1]
    grid = (triton.cdiv(m, bm) * triton.cdiv(n, bn),)

    def launch():
        _matmul_kernel[grid](a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), BLOCK_M=bm, BLOCK_N=bn,
                             BLOCK_K=bk, GROUP_M=gm, num_warps=warps, num_stages=stages)
    return launch


def contender(a, b):
    if triton is None:
        return None
    c = torch.empty(a.shape[0], b.shape[1], device=a.device, dtype=a.dtype)
    best = None
    for cfg in CONFIGS:
        launch = _launcher(a, b, c, cfg)
        try:
            ms = triton.testing.do_bench(launch, warmup=5, rep=50, return_mode="median")
        except Exception:  # a configuration that does not fit (e.g. shared memory) is skipped
            continue
        if best is None or ms < best[0]:
            best = (ms, launch)
    return None if best is None else (best[1], c)
