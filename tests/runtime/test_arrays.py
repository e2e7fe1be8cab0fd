"""Argument reading and checking: everything a launch verifies before the GPU sees anything (no GPU needed)."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lower.generated import Param
from tilegemm.runtime import adapt, check_arguments, dlpack
from tilegemm.runtime.arrays import check_output, host_array, shape_and_dtype

PARAMS = (Param("a", (64, 32), tg.float16, False), Param("b", (32, 16), tg.float16, False),
          Param("c", (64, 16), tg.float32, True))
LEGACY_STREAM = 1


class FakeCudaArray:
    """A numpy array that claims, through DLPack, to live on CUDA GPU `ordinal` (it is never dereferenced)."""

    def __init__(self, array, ordinal=0):
        self.array, self.ordinal, self.streams = array, ordinal, []

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return (dlpack.CUDA, self.ordinal)


class FakeHostArray(FakeCudaArray):
    """A host array that only speaks DLPack (like a torch CPU tensor)."""

    def __dlpack_device__(self):
        return (dlpack.CPU, 0)


def aligned(shape, dtype, offset=0):
    """A zeroed array starting `offset` bytes past a 64-byte boundary."""
    nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(nbytes + 128, np.uint8)
    start = -raw.ctypes.data % 64 + offset
    return raw[start:start + nbytes].view(dtype).reshape(shape)


def check(*arrays, device=0):
    """Reads `arrays` as launch arguments and checks them against PARAMS on GPU `device`."""
    check_arguments(PARAMS, [adapt(x, i, LEGACY_STREAM) for i, x in enumerate(arrays)], device, "mm")


def test_numpy_arrays_matching_the_parameters_pass():
    check(np.zeros((64, 32), np.float16), np.zeros((32, 16), np.float16))


def test_device_arrays_matching_the_parameters_pass():
    check(FakeCudaArray(aligned((64, 32), np.float16)), FakeCudaArray(aligned((32, 16), np.float16)))


def test_wrong_argument_count_names_the_parameters():
    with pytest.raises(tg.LaunchError, match=r"mm takes 2 array\(s\) \(a, b\), got 1"):
        check(np.zeros((64, 32), np.float16))


def test_wrong_dtype_names_the_argument_and_the_traced_dtype():
    with pytest.raises(tg.LaunchError, match=r"argument 1 \(b\) is float32 but the kernel was traced for float16"):
        check(np.zeros((64, 32), np.float16), np.zeros((32, 16), np.float32))


def test_bfloat16_is_not_float16():
    with pytest.raises(tg.LaunchError, match=r"argument 0 \(a\) is bfloat16 but the kernel was traced for float16"):
        check(np.zeros((64, 32), tg.bfloat16), np.zeros((32, 16), np.float16))


def test_wrong_shape_names_both_shapes():
    with pytest.raises(tg.LaunchError, match=r"argument 1 \(b\) has shape \(16, 32\) but the kernel was traced "
                                             r"for \(32, 16\)"):
        check(np.zeros((64, 32), np.float16), np.zeros((16, 32), np.float16))


def test_transposed_numpy_array_is_rejected_with_the_fix():
    b = np.zeros((16, 32), np.float16).T
    with pytest.raises(tg.LaunchError, match=r"argument 1 \(b\) is not a contiguous row-major array.*"
                                             r"np\.ascontiguousarray / \.contiguous\(\)"):
        check(np.zeros((64, 32), np.float16), b)


def test_transposed_device_array_is_rejected():
    with pytest.raises(tg.LaunchError, match=r"argument 0 \(a\) is not a contiguous row-major array"):
        check(FakeCudaArray(aligned((32, 64), np.float16).T), FakeCudaArray(aligned((32, 16), np.float16)))


def test_strides_of_extent_one_dimensions_do_not_matter():
    column_as_row = np.zeros((32, 1), np.float16).T          # shape (1, 32), element strides (1, 1)
    params = (Param("x", (1, 32), tg.float16, False),)
    check_arguments(params, [adapt(column_as_row, 0, LEGACY_STREAM)], 0, "row")


@pytest.mark.parametrize("offset", [2, 4, 8, 12])   # TMA needs 16 bytes: 8 is not enough either
def test_misaligned_device_pointer_is_rejected(offset):
    a = FakeCudaArray(aligned((64, 32), np.float16, offset=offset))
    with pytest.raises(tg.LaunchError, match=r"argument 0 \(a\) starts at device address 0x[0-9a-f]+, which is "
                                             r"not 16-byte aligned"):
        check(a, FakeCudaArray(aligned((32, 16), np.float16)))


def test_a_device_pointer_on_a_16_byte_boundary_is_accepted():
    check(FakeCudaArray(aligned((64, 32), np.float16, offset=16)), FakeCudaArray(aligned((32, 16), np.float16)))


def test_misaligned_host_array_is_accepted_because_it_is_copied_to_fresh_device_memory():
    check(aligned((64, 32), np.float16, offset=2), np.zeros((32, 16), np.float16))


def test_device_array_on_another_gpu_is_rejected():
    with pytest.raises(tg.LaunchError, match=r"argument 1 \(b\) is on cuda:1 but the kernel runs on cuda:0"):
        check(FakeCudaArray(aligned((64, 32), np.float16)), FakeCudaArray(aligned((32, 16), np.float16), 1))


def test_device_arrays_are_read_zero_copy_for_the_launch_stream():
    source = aligned((64, 32), np.float16)
    fake = FakeCudaArray(source)
    arg = adapt(fake, 0, LEGACY_STREAM)
    assert (arg.ptr, arg.device, arg.host, arg.shape, arg.dtype) == (source.ctypes.data, 0, None, (64, 32),
                                                                      np.float16)
    assert fake.streams == [LEGACY_STREAM]


def test_host_arrays_that_only_speak_dlpack_are_read_as_host_memory():
    source = np.arange(6, dtype=np.float32).reshape(2, 3)
    arg = adapt(FakeHostArray(source), 0, LEGACY_STREAM)
    assert arg.device is None and np.array_equal(arg.host, source)


def test_unknown_element_type_is_rejected():
    with pytest.raises(tg.LaunchError, match=r"argument 0 \(FakeCudaArray\) has a DLPack element type \(code 5, "
                                             r"64 bits.*does not know"):
        adapt(FakeCudaArray(np.zeros(4, np.complex64)), 0, LEGACY_STREAM)


def test_something_that_is_not_an_array_is_rejected():
    with pytest.raises(tg.LaunchError, match=r"argument 0 is a list, not an array: pass a numpy array"):
        adapt([[1.0, 2.0]], 0, LEGACY_STREAM)


def test_an_array_whose_device_dlpack_cannot_name_is_refused():
    class Meta:
        """Like a torch meta tensor: DLPack cannot say where its (absent) data lives."""
        def __dlpack__(self, stream=None):
            raise AssertionError("never exported")

        def __dlpack_device__(self):
            raise ValueError("Unknown device type meta for Dlpack")
    with pytest.raises(tg.ArgumentError, match=r"argument out\[0\] \(Meta\) has no memory tilegemm can read "
                                               r"through DLPack: Unknown device type meta"):
        adapt(Meta(), "out[0]", LEGACY_STREAM)


def test_torch_tensors_that_require_gradients_are_read_directly():
    torch = pytest.importorskip("torch.nn")
    import torch
    w = torch.nn.Parameter(torch.arange(32, dtype=torch.float32).reshape(4, 8))
    arg = adapt(w, 0, LEGACY_STREAM)   # DLPack would refuse it ("use tensor.detach()")
    assert arg.host is not None and np.array_equal(arg.host, w.detach().numpy()) and arg.library == "torch"


def test_something_with_dlpack_but_no_dlpack_device_is_not_an_array():
    class ExportOnly:
        def __dlpack__(self, stream=None):
            raise AssertionError("never exported")

    with pytest.raises(tg.ArgumentError, match=r"argument 0 is a ExportOnly, not an array"):
        adapt(ExportOnly(), 0, LEGACY_STREAM)


def test_a_torch_meta_tensor_is_refused_as_having_no_data():
    torch = pytest.importorskip("torch")
    with pytest.raises(tg.ArgumentError, match=r"argument 1 \(Tensor\) is a torch meta tensor"):
        adapt(torch.empty(64, 32, device="meta"), 1, LEGACY_STREAM)


def test_an_out_array_on_the_gpu_is_refused_for_a_call_on_host_arrays():
    out = adapt(FakeCudaArray(aligned((64, 16), np.float32)), "out[0]", LEGACY_STREAM)
    with pytest.raises(tg.ArgumentError, match=r"mm: the out= array for c must be in host memory \(numpy\)"):
        check_output(PARAMS[2], out, 0, "mm", host_call=True)


def test_a_host_out_array_is_refused_for_a_call_on_device_arrays():
    out = adapt(aligned((64, 16), np.float32), "out[0]", LEGACY_STREAM)
    with pytest.raises(tg.ArgumentError, match=r"the out= array for c must be on cuda:0"):
        check_output(PARAMS[2], out, 0, "mm", host_call=False)


class DescribedArray(FakeCudaArray):
    """A DLPack array that also states its shape and dtype, as torch, cupy and jax arrays do."""

    def __init__(self, array, dtype=None):
        super().__init__(array)
        self.shape, self.dtype = array.shape, array.dtype if dtype is None else dtype


def test_shape_and_dtype_reads_a_device_array_without_touching_its_data():
    assert shape_and_dtype(DescribedArray(np.zeros((3, 4), np.float16)), "a") == ((3, 4), np.dtype(np.float16))


def test_shape_and_dtype_names_an_element_type_numpy_does_not_know():
    class QUInt8:
        def __str__(self):
            return "torch.quint8"

    shape, dtype = shape_and_dtype(DescribedArray(np.zeros(2, np.float16), QUInt8()), "a")
    assert shape == (2,) and isinstance(dtype, str) and dtype == "quint8"


def test_shape_and_dtype_refuses_a_torch_meta_tensor_and_names_the_tracing_alternative():
    torch = pytest.importorskip("torch")
    with pytest.raises(tg.ArgumentError, match=r"a is a torch meta tensor.*tg\.ShapeDtype"):
        shape_and_dtype(torch.empty(2, 2, device="meta"), "a")


@pytest.mark.parametrize("value, described", [(42, "an int"), ({}, "a dict")])
def test_shape_and_dtype_refuses_a_non_array_by_its_type(value, described):
    with pytest.raises(tg.ArgumentError, match=rf"a is {described}, not an array"):
        shape_and_dtype(value, "a")


def test_host_array_refuses_device_memory_and_says_why_host_memory_is_needed():
    with pytest.raises(tg.ArgumentError, match=r"b lives on a GPU, but the interpreter runs on the CPU: pass a "
                                               r"numpy array"):
        host_array(FakeCudaArray(np.zeros(4, np.float16)), "b", "the interpreter runs on the CPU")


def test_host_array_reads_a_host_dlpack_array_in_place():
    class DescribedHostArray(DescribedArray, FakeHostArray):
        pass

    data = np.arange(4, dtype=np.float16)
    read = host_array(DescribedHostArray(data), "b", "unused")
    assert read.ctypes.data == data.ctypes.data and (read == data).all()
