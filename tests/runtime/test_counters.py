"""What a kernel carries from launch to launch (tg.count_arrival's counters and the workspace beside them): zeroed
arrays made once per array library, GPU, stream and specs, whose counters each CUDA graph capture zeroes before it
first uses them; fresh numpy zeros for host calls."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import counters, readers

WORKSPACE, COUNTERS = (tg.ShapeDtype((4, 8), tg.float32),), (tg.ShapeDtype((3,), tg.int32),)


class FakeGpuArray:
    """An array on GPU 0 read by FakeReader, which counts the zeros it makes and says which stream is current."""


class FakeReader(readers.Reader):
    library = "fake"
    current_stream = 11
    capture_now = None
    made = []

    @staticmethod
    def gpu(x):
        return 0

    @staticmethod
    def stream(ordinal):
        return lambda: FakeReader.current_stream

    @staticmethod
    def capture(stream):
        return FakeReader.capture_now

    @staticmethod
    def zeros(shape, dtype, ordinal, stream):
        FakeReader.made.append((shape, stream))
        return np.zeros(shape, dtype)

    @staticmethod
    def pointer(x):
        return x.ctypes.data


@pytest.fixture(autouse=True)
def fake_library(monkeypatch):
    monkeypatch.setitem(readers._BY_TYPE, FakeGpuArray, FakeReader)
    monkeypatch.setattr(counters, "_made", {})
    monkeypatch.setattr(counters, "_streams", {})
    monkeypatch.setattr(FakeReader, "made", [])
    monkeypatch.setattr(FakeReader, "current_stream", 11)
    monkeypatch.setattr(FakeReader, "capture_now", None)
    monkeypatch.setattr(counters, "_zeroed", set())
    monkeypatch.setattr(counters, "fill_bytes", lambda ptr, nbytes, byte, stream: memsets.append(
        (ptr, nbytes, byte, int(stream.handle))))
    memsets.clear()


memsets = []   # (pointer, bytes, byte, stream) of the memsets counters_for queued


def test_host_calls_get_fresh_zeros_which_the_launch_uploads():
    first, second = counters.counters_for((np.ones(2),), WORKSPACE, COUNTERS), counters.counters_for((np.ones(2),), WORKSPACE, COUNTERS)
    assert [(x.shape, x.dtype) for x in first] == [((4, 8), np.float32), ((3,), np.int32)]
    assert not any(x.any() for x in first) and first[1] is not second[1]


def test_a_stream_keeps_its_arrays_and_another_stream_gets_its_own():
    on_11 = counters.counters_for((FakeGpuArray(),), WORKSPACE, COUNTERS)
    assert counters.counters_for((FakeGpuArray(),), WORKSPACE, COUNTERS) is on_11
    FakeReader.current_stream = 12
    on_12 = counters.counters_for((FakeGpuArray(),), WORKSPACE, COUNTERS)
    assert on_12 is not on_11 and [stream for _, stream in FakeReader.made] == [11, 11, 12, 12]


def test_each_graph_capture_zeroes_the_counters_before_it_first_uses_them():
    arrays = counters.counters_for((FakeGpuArray(),), WORKSPACE, COUNTERS)
    assert memsets == []   # made zeroed, outside any capture
    for capture in (7, 8):   # two graphs captured on the same stream
        FakeReader.capture_now = capture
        for _ in range(2):
            assert counters.counters_for((FakeGpuArray(),), WORKSPACE, COUNTERS) is arrays
    FakeReader.capture_now = None
    counters.counters_for((FakeGpuArray(),), WORKSPACE, COUNTERS)
    assert memsets == [(arrays[1].ctypes.data, 3 * 4, 0, 11)] * 2, "the counters (not the workspace), once a graph"
    assert len(FakeReader.made) == 2
