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


# Element types numpy has no type of its own for, which travel as their bits typed by ml_dtypes: torch's, numpy's,
# and the integers of their width, in each library.
BITS_TYPED = (torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2)
_NUMPY_BITS_TYPED = tuple(numpy_dtype(t) for t in BITS_TYPED)
_BITS = {1: (torch.int8, np.int8), 2: (torch.int16, np.int16)}


def to_numpy(x):
    """A numpy view of the CPU tensor `x` (bfloat16 and fp8 as ml_dtypes' types)."""
    x = x.detach()
    if x.dtype in BITS_TYPED:
        return x.view(_BITS[x.element_size()][0]).numpy().view(numpy_dtype(x.dtype))
    return x.numpy()


def from_numpy(x):
    """A CPU tensor sharing the memory of the numpy array `x` (ml_dtypes' bfloat16 and fp8 as torch's)."""
    if x.dtype in _NUMPY_BITS_TYPED:
        return torch.from_numpy(x.view(_BITS[x.dtype.itemsize][1])).view(torch_dtype(x.dtype))
    return torch.from_numpy(x)
