"""tilegemm's GPU runtime on cuda-python: devices, memory, streams, events, and kernel launch.

Knows nothing of tilegemm.lang: a kernel reaches it as an object with `lower(...)`
and `name`, and compiled kernels as objects with `params`, `arch` and `__call__`.
"""
from .arrays import ArrayArg, adapt, check_arguments
from .device import SUPPORTED_ARCHS, Device, current_device, get_device, require_supported, set_device
from .driver import CudaError, device_count
from .launch import PreparedCall, launch, launch_compiling, prepare
from .memory import DeviceArray, DeviceBuffer
from .stream import Event, Stream, time_kernel

__all__ = ["ArrayArg", "CudaError", "Device", "DeviceArray", "DeviceBuffer", "Event", "SUPPORTED_ARCHS", "Stream",
           "PreparedCall", "adapt", "check_arguments", "current_device", "device_count", "get_device", "launch",
           "launch_compiling", "prepare", "require_supported", "set_device", "time_kernel"]
