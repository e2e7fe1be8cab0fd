"""What a kernel carries from launch to launch (tg.count_arrival's counters and the workspace beside them): zeroed
arrays made once per array library, GPU, stream, graph capture and specs; fresh numpy zeros for host calls."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import counters, readers

SPECS = (tg.ShapeDtype((4, 8), tg.float32), tg.ShapeDtype((3,), tg.int32))


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


@pytest.fixture(autouse=True)
def fake_library(monkeypatch):
    monkeypatch.setitem(readers._BY_TYPE, FakeGpuArray, FakeReader)
    monkeypatch.setattr(counters, "_made", {})
    monkeypatch.setattr(counters, "_streams", {})
    monkeypatch.setattr(FakeReader, "made", [])
    monkeypatch.setattr(FakeReader, "current_stream", 11)
    monkeypatch.setattr(FakeReader, "capture_now", None)


def test_host_calls_get_fresh_zeros_which_the_launch_uploads():
    first, second = counters.counters_for((np.ones(2),), SPECS), counters.counters_for((np.ones(2),), SPECS)
    assert [(x.shape, x.dtype) for x in first] == [((4, 8), np.float32), ((3,), np.int32)]
    assert not any(x.any() for x in first) and first[1] is not second[1]


def test_a_stream_keeps_its_arrays_and_another_stream_gets_its_own():
    on_11 = counters.counters_for((FakeGpuArray(),), SPECS)
    assert counters.counters_for((FakeGpuArray(),), SPECS) is on_11
    FakeReader.current_stream = 12
    on_12 = counters.counters_for((FakeGpuArray(),), SPECS)
    assert on_12 is not on_11 and [stream for _, stream in FakeReader.made] == [11, 11, 12, 12]


def test_each_graph_capture_gets_arrays_of_its_own_which_its_replays_zero():
    uncaptured = counters.counters_for((FakeGpuArray(),), SPECS)
    FakeReader.capture_now = 7
    first_graph = counters.counters_for((FakeGpuArray(),), SPECS)
    assert first_graph is not uncaptured and counters.counters_for((FakeGpuArray(),), SPECS) is first_graph
    FakeReader.capture_now = 8   # a second graph captured on the same stream
    second_graph = counters.counters_for((FakeGpuArray(),), SPECS)
    assert second_graph is not first_graph and second_graph is not uncaptured
    FakeReader.capture_now = None
    assert counters.counters_for((FakeGpuArray(),), SPECS) is uncaptured
    assert [stream for _, stream in FakeReader.made] == [11] * 6
