"""`GpuTimer`: the `measure` function `tune` calls on a GPU — compile, then time with CUDA events.

Inputs are iid normal (never zeros or small integers: they run faster than real
data) and stay on the GPU across candidates; the compile happens before the
clock starts, and the time is the median of several event-timed batches.
"""
import statistics

import numpy as np

from ..lang import dtypes
from ..lang.trace import ShapeDtype
from ..runtime import DeviceArray, Stream, current_device, require_supported, time_kernel


class GpuTimer:
    """`measure(kernel, params) -> seconds` for C[m,n] = A[m,k] @ B[k,n] kernels on the current GPU."""

    def __init__(self, shape, dtype=dtypes.float16, *, batches=5, iters=20, warmup=5, seed=0):
        self.m, self.n, self.k = (int(d) for d in shape)
        self.dtype = dtypes.as_dtype(dtype)
        self.batches, self.iters, self.warmup = batches, iters, warmup
        self.device = current_device()
        require_supported(self.device)
        self.stream = Stream()
        rng = np.random.default_rng(seed)
        host = [rng.standard_normal(s, dtype=np.float32).astype(self.dtype) for s in ((self.m, self.k), (self.k, self.n))]
        self.a, self.b = (DeviceArray.from_numpy(x, self.device, self.stream) for x in host)
        self.c = DeviceArray.empty((self.m, self.n), self.dtype, self.device, self.stream)

    def __call__(self, kernel, params):
        specs = ShapeDtype((self.m, self.k), self.dtype), ShapeDtype((self.k, self.n), self.dtype)
        compiled = kernel.lower(*specs, arch=self.device.arch).compile()

        def launch():
            compiled(self.a.ptr, self.b.ptr, self.c.ptr, stream=self.stream.handle)
        batches = [time_kernel(launch, warmup=self.warmup if i == 0 else 0, iters=self.iters, stream=self.stream)
                   for i in range(self.batches)]
        return statistics.median(batches) / 1e3
