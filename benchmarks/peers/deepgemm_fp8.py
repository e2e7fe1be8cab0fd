"""DeepGEMM's block-scaled fp8 GEMM (`deep_gemm.gemm_fp8_fp8_bf16_nt`, 1 x 128 scales for A and 128 x 128 for the
weight, bf16 out) as a benchmark peer: the kernel issue 13's block-scaled target names.

DeepGEMM is not a dependency: `contender` returns None where `deep_gemm` cannot be imported. Its first call
compiles the kernel for the shape (nvcc, about a minute), so `contender` makes that call before it returns.
"""
import torch

try:
    import deep_gemm
except ImportError:   # DeepGEMM is optional (it needs nvcc and CUTLASS's headers at run time)
    deep_gemm = None


def contender(a8, w8, scale_a, scale_w):
    """(launch, out) computing a8 [M, K] @ w8 [N, K].T into bf16 with scale_a [M, K/128] (1 x 128 blocks, stored
    M-major as DeepGEMM takes it) and scale_w [N/128, K/128] (128 x 128 blocks of w8, row-major); None without
    DeepGEMM."""
    if deep_gemm is None:
        return None
    out = torch.empty(a8.shape[0], w8.shape[0], device=a8.device, dtype=torch.bfloat16)

    def launch():
        deep_gemm.gemm_fp8_fp8_bf16_nt((a8, scale_a), (w8, scale_w), out)
    launch()   # compiles for this shape before anything is timed or captured
    torch.cuda.synchronize()
    return launch, out
