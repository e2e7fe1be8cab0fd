"""tilegemm.torch.host: CPU tensors as numpy arrays and back, sharing memory, for every element type tilegemm
takes (numpy has no bfloat16 or fp8: ml_dtypes types their bits)."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")
from tilegemm.torch.host import from_numpy, numpy_dtype, to_numpy  # noqa: E402

DTYPES = [torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2, torch.float32]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_tensor_reads_as_a_numpy_array_of_the_same_values_and_memory(dtype):
    x = torch.randn(3, 5).to(dtype)
    array = to_numpy(x)
    assert array.dtype == numpy_dtype(dtype)
    np.testing.assert_array_equal(array.astype(np.float32), x.float().numpy())
    x[0, 0] = 2.0
    assert array[0, 0] == 2.0   # a view, not a copy


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_a_numpy_array_reads_as_a_tensor_of_the_same_bits(dtype):
    array = np.random.default_rng(0).standard_normal((4, 2)).astype(numpy_dtype(dtype))
    x = from_numpy(array)
    assert x.dtype == dtype
    assert torch.equal(x.float(), torch.from_numpy(array.astype(np.float32)))
    assert to_numpy(x).tobytes() == array.tobytes()
