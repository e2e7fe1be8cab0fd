"""Torch tensors for tilegemm's two ways of running: dtypes, the operand layout kernels read, and numpy views of
CPU tensors for the numpy interpreter (numpy has no bfloat16: it travels as its bits, typed by ml_dtypes)."""
import ml_dtypes
import numpy as np
import torch

from ..lang import dtypes


def numpy_dtype(dtype):
    """The numpy dtype of a torch dtype (torch.bfloat16 -> ml_dtypes.bfloat16, the float8 types likewise)."""
    name = str(dtype).removeprefix("torch.")
    return dtypes.as_dtype(getattr(ml_dtypes, name, name))


def torch_dtype(dtype):
    """The torch dtype of a numpy dtype tilegemm kernels use."""
    return getattr(torch, np.dtype(dtype).name)


def row_major(x):
    """`x` in the layout tilegemm kernels read: row-major (a no-op for a contiguous tensor, a copy otherwise)."""
    return x.contiguous()


def to_numpy(x):
    """A numpy view of the CPU tensor `x`."""
    x = x.detach()
    if x.dtype == torch.bfloat16:
        return x.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return x.numpy()


def from_numpy(x):
    """A CPU tensor sharing the memory of the numpy array `x`."""
    if x.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(x)
