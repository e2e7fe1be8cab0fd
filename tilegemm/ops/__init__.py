"""Ready kernels: `tg.matmul` with per-shape configuration, and `tg.tune_matmul` to choose it by measuring."""
from .dispatch import matmul
from .tuning import tune_matmul

__all__ = ["matmul", "tune_matmul"]
