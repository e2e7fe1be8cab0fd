"""The door to the CUDA driver (cuda.bindings.driver): one-time initialisation and return-code checking."""
from cuda.bindings import driver as cu

from ..errors import LaunchError, TileGemmError

NO_GPU_HINT = "pass interpret=True to run in the numpy interpreter"


class CudaError(TileGemmError):
    """A CUDA driver call failed; `.name` is the CUDA error name (e.g. CUDA_ERROR_ILLEGAL_ADDRESS)."""

    def __init__(self, function, result):
        self.function = function
        self.name = result.name
        super().__init__(f"{function} failed with {result.name}")


def call(function, *args):
    """Calls a cuda.bindings.driver function; raises CudaError unless it succeeded, else returns its result."""
    result, *values = function(*args)
    if result != cu.CUresult.CUDA_SUCCESS:
        raise CudaError(function.__name__, result)
    return values[0] if values else None


def capture_id(stream):
    """The id (unique in the process) of the CUDA graph capture recording the work of `stream` (a handle); None
    where the stream is not being captured."""
    result, status, ident, *_ = cu.cuStreamGetCaptureInfo(cu.CUstream(stream))
    if result != cu.CUresult.CUDA_SUCCESS:
        raise CudaError("cuStreamGetCaptureInfo", result)
    return int(ident) if status == cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE else None


_initialised = False


def init():
    """Initialises the driver once; raises LaunchError, with the interpreter hint, where no GPU can be used."""
    global _initialised
    if _initialised:
        return
    try:
        (result,) = cu.cuInit(0)
    except RuntimeError as e:   # cuda.pathfinder could not load libcuda: no NVIDIA driver here
        raise LaunchError(f"no CUDA GPU: {NO_GPU_HINT} (the NVIDIA driver library is not installed)") from e
    if result == cu.CUresult.CUDA_ERROR_NO_DEVICE:
        raise LaunchError(f"no CUDA GPU: {NO_GPU_HINT} (the driver sees no device)")
    if result != cu.CUresult.CUDA_SUCCESS:
        raise LaunchError(f"no usable CUDA GPU: {NO_GPU_HINT} (cuInit failed with {result.name})")
    _initialised = True


def device_count():
    """The number of CUDA GPUs; 0 where there is no driver or no device."""
    try:
        init()
    except LaunchError:
        return 0
    return call(cu.cuDeviceGetCount)
