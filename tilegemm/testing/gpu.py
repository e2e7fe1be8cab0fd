"""The GPU side of tilegemm.testing: whether kernels can run here, and launches with poisoned outputs."""
import contextlib
import functools


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
    """Launches inside fill their outputs with NaN first (tilegemm.debug's poison_outputs switch), so elements a
    kernel never writes show up as NaN."""
    from .. import debug
    before = debug.set_debug(poison_outputs=True)
    try:
        yield
    finally:
        debug.set_debug(poison_outputs=before.poison_outputs)
