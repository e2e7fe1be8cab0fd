"""Ready kernels: `tg.matmul` with per-shape configuration."""
from .dispatch import matmul

__all__ = ["matmul"]
