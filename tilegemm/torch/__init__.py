"""tilegemm inside PyTorch: `tg.matmul` and user kernels as torch custom operators.

    import tilegemm.torch as tgt

    c = tgt.matmul(a, b)        # torch.ops.tilegemm.matmul: autograd, torch.compile(fullgraph=True), opcheck
    op = tgt.register(kernel)   # torch.ops.tilegemm.<kernel name>: a user's @tg.kernel as an operator

CUDA tensors run the compiled kernels on torch's current stream; CPU tensors run
tilegemm's numpy interpreter (exact, slow: for tests at small shapes). Importing
this module imports torch (`import tilegemm` does not); docs/frameworks.md is the guide.
"""
try:
    import torch  # noqa: F401
except ImportError as e:
    raise ImportError("tilegemm.torch needs PyTorch: pip install 'tilegemm[torch]' (or a torch build of your "
                      "own)") from e

from .kernels import register  # noqa: E402
from .ops import matmul  # noqa: E402

__all__ = ["matmul", "register"]
