"""How many clusters of a compiled kernel a GPU holds at once: the grid a persistent kernel should launch.

Persistent kernels (the Blackwell rungs 5-7, the Hopper flagship) are built for
a shape before any GPU is known, so their grid comes from a default SM count.
With clusters, the SM count overstates what can run at once: a cluster's
blocks must sit on SMs of one GPC, and the GPCs' SM counts need not divide by
the cluster size. The driver knows (cuOccupancyMaxActiveClusters); rebuild the
kernel with its answer:

    compiled = kernel.lower(*specs, arch=device.arch).compile()
    kernel = build(m, n, k, num_clusters=max_active_clusters(compiled))

Before any kernel is compiled, `resident_clusters(device, sizes)` asks the same of an empty
probe kernel holding a whole SM's shared memory (one block per SM, as tg.matmul's
designs are): what the model's device sheet reads to size a cluster design's grid.
"""
import functools

from cuda.bindings import driver as cu

from ..lower.generated import LaunchDims
from .device import current_device
from .driver import call

PROBE = "tilegemm_cluster_probe"
PTX_VERSIONS = {"sm_90a": "8.0", "sm_100a": "8.6"}   # the first PTX ISA with each target


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


@functools.cache
def resident_clusters(device, sizes):
    """((size, clusters), ...): for each cluster size of `sizes`, the most clusters of one-SM blocks (each holding
    all the shared memory a block may opt in to) that `device` (a runtime Device, made current) holds at once. A
    GPU's SMs sit in GPCs of uneven size, and a cluster's blocks in one GPC, so this can be well under sm_count /
    size (the H200 of tilegemm's benchmarks: 30 clusters of four on 132 SMs); it differs between dies of one GPU
    model.
    Empty for an architecture tilegemm does not compile for."""
    if device.arch not in PTX_VERSIONS:
        return ()
    device.activate()
    ptx = (f".version {PTX_VERSIONS[device.arch]}\n.target {device.arch}\n.address_size 64\n"
           f".visible .entry {PROBE}()\n{{\n  ret;\n}}\n")
    module = call(cu.cuModuleLoadData, ptx.encode() + b"\0")
    try:
        function = call(cu.cuModuleGetFunction, module, PROBE.encode())
        call(cu.cuFuncSetAttribute, function,
             cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, device.smem_per_block_optin)
        return tuple((size, call(cu.cuOccupancyMaxActiveClusters, function, launch_config(
            LaunchDims(grid=(size, 1, 1), block=(128, 1, 1), cluster=(size, 1, 1),
                       smem_bytes=device.smem_per_block_optin))))
                     for size in sizes)
    finally:
        call(cu.cuModuleUnload, module)
