"""Device selection and description: which GPU, its architecture and the figures kernels are sized by."""
import functools
from dataclasses import dataclass

from cuda.bindings import driver as cu

from ..errors import LaunchError
from .driver import call, init

SUPPORTED_ARCHS = ("sm_90a", "sm_100a")


@dataclass(frozen=True)
class Device:
    """One CUDA GPU: ordinal, name, compute capability and the resources a kernel is budgeted against."""
    ordinal: int
    name: str
    compute_capability: tuple
    sm_count: int
    smem_per_block_optin: int   # bytes of shared memory one block may opt in to
    l2_bytes: int

    @property
    def arch(self):
        """The compile target: 'sm_90a' (Hopper), 'sm_100a' (Blackwell); 'sm_80' style before Hopper."""
        major, minor = self.compute_capability
        return f"sm_{major}{minor}" + ("a" if major >= 9 else "")

    def activate(self):
        """Makes this GPU's primary context (the one torch and cupy use too) current for the calling thread."""
        call(cu.cuCtxSetCurrent, primary_context(self.ordinal))

    def __str__(self):
        return f"cuda:{self.ordinal} ({self.name}, {self.arch})"


@functools.cache
def primary_context(ordinal):
    """The retained primary context of GPU `ordinal` (kept for the life of the process)."""
    return call(cu.cuDevicePrimaryCtxRetain, call(cu.cuDeviceGet, ordinal))


@functools.cache
def get_device(ordinal=0):
    """Describes GPU `ordinal`; raises LaunchError if there is no such GPU."""
    init()
    count = call(cu.cuDeviceGetCount)
    if not 0 <= ordinal < count:
        raise LaunchError(f"there is no cuda:{ordinal}; this machine has {count} GPU(s)")
    handle = call(cu.cuDeviceGet, ordinal)

    def attribute(name):
        return call(cu.cuDeviceGetAttribute, getattr(cu.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name), handle)

    name = call(cu.cuDeviceGetName, 256, handle).split(b"\0")[0].decode()
    return Device(ordinal, name,
                  (attribute("COMPUTE_CAPABILITY_MAJOR"), attribute("COMPUTE_CAPABILITY_MINOR")),
                  attribute("MULTIPROCESSOR_COUNT"), attribute("MAX_SHARED_MEMORY_PER_BLOCK_OPTIN"),
                  attribute("L2_CACHE_SIZE"))


def current_device():
    """The GPU of the calling thread's current context; GPU 0, made current, when there is none."""
    init()
    if int(call(cu.cuCtxGetCurrent)) == 0:
        return set_device(0)
    return get_device(int(call(cu.cuCtxGetDevice)))


def set_device(ordinal):
    """Selects GPU `ordinal` for the calling thread (like torch.cuda.set_device) and returns its Device."""
    device = get_device(ordinal)
    device.activate()
    return device


def require_supported(device):
    """Raises LaunchError unless tilegemm kernels can run on `device` (Hopper sm_90a or Blackwell sm_100a)."""
    if device.arch not in SUPPORTED_ARCHS:
        raise LaunchError(f"tilegemm kernels need Hopper (sm_90) or Blackwell (sm_100); found {device.arch} "
                          f"({device.name}) on cuda:{device.ordinal}; pass interpret=True to run in the "
                          "numpy interpreter")
