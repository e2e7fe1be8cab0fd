"""How many clusters of a compiled kernel a GPU holds at once: the grid a persistent kernel should launch.

Persistent kernels (the Blackwell rungs 5-7, the Hopper flagship) are built for
a shape before any GPU is known, so their grid comes from a default SM count.
With clusters, the SM count overstates what can run at once: a cluster's
blocks must sit on SMs of one GPC, and the GPCs' SM counts need not divide by
the cluster size. The driver knows (cuOccupancyMaxActiveClusters); rebuild the
kernel with its answer:

    compiled = kernel.lower(*specs, arch=device.arch).compile()
    kernel = build(m, n, k, num_clusters=max_active_clusters(compiled))
"""
from cuda.bindings import driver as cu

from .device import current_device
from .driver import call


def max_active_clusters(compiled):
    """The most clusters of `compiled` (a tilegemm CompiledKernel) resident on the current GPU at once, for the
    launch configuration it was compiled with (cluster shape, block size, dynamic shared memory); for a kernel
    without clusters, the most resident blocks. Raises CudaError if the driver refuses the query."""
    current_device()   # a current context: the kernel's function is resolved in it
    function = kernel_function(compiled)
    call(cu.cuFuncSetAttribute, function, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
         compiled.launch.smem_bytes)   # what its launch sets too: occupancy is computed for this much
    return call(cu.cuOccupancyMaxActiveClusters, function, launch_config(compiled.launch))


def kernel_function(compiled):
    """The CUfunction of `compiled` in the current context, from the CUDA library CuTe DSL loaded it into."""
    library = cu.CUlibrary(int(compiled.executable().library))
    return call(cu.cuKernelGetFunction, call(cu.cuLibraryGetKernel, library, compiled.kernel_name.encode()))


def launch_config(launch):
    """The CUlaunchConfig of a LaunchDims: its grid (in blocks), block, dynamic shared memory and cluster shape."""
    config = cu.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = launch.grid
    config.blockDimX, config.blockDimY, config.blockDimZ = launch.block
    config.sharedMemBytes = launch.smem_bytes
    cluster = cu.CUlaunchAttribute()
    cluster.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    cluster.value.clusterDim.x, cluster.value.clusterDim.y, cluster.value.clusterDim.z = launch.cluster
    config.attrs = [cluster]
    config.numAttrs = 1
    return config
