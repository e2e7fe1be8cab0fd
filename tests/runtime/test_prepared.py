"""The prepared fast path's per-call work, with a stand-in array library and launcher (no GPU): read the
pointers, refuse misaligned ones, allocate (or check) the outputs, launch on the library's current stream."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lower.generated import Param
from tilegemm.runtime import Device
from tilegemm.runtime.launch import PreparedCall
from tilegemm.runtime import readers
from tilegemm.runtime.readers import Reader

H200 = Device(0, "NVIDIA H200", (9, 0), 132, 227 * 1024, 60 << 20)


class Fake:
    """A device array of the stand-in library: a shape, a dtype and an address."""

    def __init__(self, shape, address, dtype=np.float16):
        self.shape, self.dtype, self.address = tuple(shape), np.dtype(dtype), address


class FakeLibrary(Reader):
    library = "fake"
    next_address = 1 << 20

    @staticmethod
    def signature(x):
        return x.shape, x.dtype

    @staticmethod
    def pointer(x):
        return x.address

    @staticmethod
    def gpu(x):
        return 0

    @staticmethod
    def stream(ordinal):
        return lambda: 0x5EED

    @staticmethod
    def is_current(ordinal):
        return lambda: True

    @staticmethod
    def outputs(params, device):
        def allocate(stream):
            arrays = []
            for p in params:
                FakeLibrary.next_address += 4096
                arrays.append(Fake(p.shape, FakeLibrary.next_address, p.dtype))
            return arrays, [a.address for a in arrays]
        return allocate


readers.register(Fake, FakeLibrary)


class FakeCompiled:
    """A compiled kernel as PreparedCall sees it: params, no bounded waits, a launcher that records its calls."""
    params = (Param("a", (64, 32), np.float16, False), Param("b", (32, 16), np.float16, False),
              Param("c", (64, 16), np.float16, True))
    hang_waits = None

    def __init__(self):
        self.launches = []

    def launcher(self):
        return lambda pointers, stream: self.launches.append((list(pointers), stream))


@pytest.fixture
def prepared():
    compiled = FakeCompiled()
    return PreparedCall(compiled, [FakeLibrary, FakeLibrary], H200, "mm"), compiled


def test_a_call_launches_with_the_input_and_fresh_output_pointers_on_the_librarys_stream(prepared):
    call, compiled = prepared
    (c,) = call([Fake((64, 32), 0x1000), Fake((32, 16), 0x2000)])
    assert c.shape == (64, 16) and compiled.launches == [([0x1000, 0x2000, c.address], 0x5EED)]


@pytest.mark.parametrize("offset", [2, 8])
def test_a_misaligned_input_is_refused_before_anything_launches(prepared, offset):
    call, compiled = prepared
    with pytest.raises(tg.ArgumentError, match=r"mm: argument 1 starts at device address 0x2008|0x2002"):
        call([Fake((64, 32), 0x1000), Fake((32, 16), 0x2000 + offset)])
    assert compiled.launches == []


def test_an_out_array_like_a_fresh_output_is_written_in_place(prepared):
    call, compiled = prepared
    out = Fake((64, 16), 0x9000)
    assert call([Fake((64, 32), 0x1000), Fake((32, 16), 0x2000)], out=[out]) == [out]
    assert compiled.launches[-1][0][-1] == 0x9000
