"""The GPU side of tilegemm.testing: whether kernels can run here, and launches with poisoned outputs."""
import contextlib
import functools
import os


@functools.cache
def unavailable_reason():
    """None where a Hopper or Blackwell GPU can run tilegemm kernels; else why not, in a few words."""
    from ..runtime import SUPPORTED_ARCHS, device_count, get_device
    if device_count() == 0:
        return "no CUDA GPU"
    device = get_device(0)
    if device.arch not in SUPPORTED_ARCHS:
        return f"{device} is not a Hopper or Blackwell GPU"
    return None


@contextlib.contextmanager
def poisoned_outputs():
    """Launches inside fill their outputs with NaN first (the runtime's TILEGEMM_POISON switch), so elements a
    kernel never writes show up as NaN."""
    before = os.environ.get("TILEGEMM_POISON")
    os.environ["TILEGEMM_POISON"] = "1"
    try:
        yield
    finally:
        if before is None:
            del os.environ["TILEGEMM_POISON"]
        else:
            os.environ["TILEGEMM_POISON"] = before
