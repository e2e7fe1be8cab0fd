"""The prepared fast path's per-call work, with a stand-in array library and launcher (no GPU): read the
pointers, refuse misaligned ones, allocate (or check) the outputs, launch on the library's current stream."""
import importlib

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.lower.generated import Param
from tilegemm.runtime import Device
from tilegemm.runtime.launch import PreparedCall
from tilegemm.runtime import readers
from tilegemm.runtime.readers import Reader

launch = importlib.import_module("tilegemm.runtime.launch")   # the module (tilegemm.runtime.launch is also a function)
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


def test_an_out_array_unlike_a_fresh_output_gets_the_full_check(prepared):
    call, compiled = prepared
    with pytest.raises(tg.ArgumentError, match=r"argument out\[0\] is a Fake, not an array"):
        call([Fake((64, 32), 0x1000), Fake((32, 16), 0x2000)], out=[Fake((16, 64), 0x9000)])
    assert compiled.launches == []


def test_the_fast_path_is_prepared_for_device_arrays_of_one_library():
    prepared = launch.prepare(FakeCompiled(), [Fake((64, 32), 0x1000), Fake((32, 16), 0x2000)], H200, "mm")
    assert isinstance(prepared, PreparedCall) and prepared.kinds == [FakeLibrary, FakeLibrary]


@pytest.mark.parametrize("arrays", [[], [Fake((64, 32), 0x1000), np.zeros((32, 16), np.float16)]],
                         ids=["no arrays", "a host array"])
def test_the_fast_path_is_not_prepared_for_calls_it_cannot_read(arrays):
    assert launch.prepare(FakeCompiled(), arrays, H200, "mm") is None


class FakeDriver:
    """cuda-python's context calls as enter_context makes them: which context is current, and pushes."""

    def __init__(self, current):
        self.current, self.pushed = current, []

    def __call__(self, function, *args):
        if function is launch.cu.cuCtxGetCurrent:
            return self.current
        assert function is launch.cu.cuCtxPushCurrent
        self.pushed.extend(args)


@pytest.mark.parametrize("current, pushes", [(0xC0, False), (0xD0, True)], ids=["already current", "another"])
def test_a_launch_pushes_the_gpus_primary_context_only_when_another_is_current(monkeypatch, current, pushes):
    driver = FakeDriver(current)
    monkeypatch.setattr(launch, "call", driver)
    monkeypatch.setattr(launch, "primary_context", lambda ordinal: 0xC0)
    assert launch.enter_context(0) is pushes
    assert driver.pushed == ([0xC0] if pushes else [])


def test_a_poisoned_call_fills_the_outputs_then_launches_and_returns_them(prepared, monkeypatch):
    call, compiled = prepared
    events = []
    monkeypatch.setattr(launch, "enter_context", lambda ordinal: False)
    monkeypatch.setattr(launch, "poison_outputs", lambda params, pointers, stream: events.append(("poison", pointers)))
    monkeypatch.setattr(launch, "run_compiled", lambda compiled, pointers, stream, device, name:
                        events.append(("launch", pointers[-1], stream)))
    (c,) = call([Fake((64, 32), 0x1000), Fake((32, 16), 0x2000)], poison=True)
    assert events == [("poison", [c.address]), ("launch", c.address, 0x5EED)] and compiled.launches == []
