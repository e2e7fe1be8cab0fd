"""The fast path's readers: which arrays it reads, and the signature that keys a prepared launch."""
import numpy as np
import pytest

from tilegemm.runtime import DeviceArray, readers


def test_numpy_arrays_are_not_read_by_the_fast_path():
    x = np.zeros((4, 4), np.float16)
    assert readers.reader_for(x) is None and readers.signature((x,)) is None


def test_torch_tensors_are_read_with_shape_dtype_strides_and_device():
    torch = pytest.importorskip("torch")
    x = torch.zeros(4, 8, dtype=torch.float16)
    kind = readers.reader_for(x)
    assert kind is readers.TorchReader and kind.gpu(x) is None
    assert readers.signature((x,)) == ((torch.Size([4, 8]), torch.float16, (8, 1), -1),)
    assert readers.signature((x.T,)) != readers.signature((x.T.contiguous(),)), "a transposed view differs"
    assert kind.pointer(x[1:]) == x.data_ptr() + 16


def test_subclasses_of_torch_tensor_read_like_tensors():
    torch = pytest.importorskip("torch")
    w = torch.nn.Parameter(torch.zeros(4, 4))
    assert readers.reader_for(w) is readers.TorchReader


def test_a_device_array_signature_names_its_gpu():
    assert readers.reader_for(DeviceArray.__new__(DeviceArray)) is readers.DeviceArrayReader
