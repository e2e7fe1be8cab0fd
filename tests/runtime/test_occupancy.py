"""max_active_clusters: the driver's count of co-resident clusters of a compiled kernel, and the launch
configuration it is asked for. The GPU tests use the Hopper flagship: no Blackwell GPU is available."""
import pytest

import tilegemm as tg
from tilegemm.lower.generated import LaunchDims
from tilegemm.model.layouts import operand_specs
from tilegemm.ops import hopper_matmul
from tilegemm.runtime import current_device, device_count
from tilegemm.runtime.occupancy import launch_config, max_active_clusters
from tilegemm.showcase import random_inputs, relative_error


def test_the_launch_configuration_is_the_compiled_kernels_grid_block_shared_memory_and_cluster():
    config = launch_config(LaunchDims(grid=(148, 1, 1), block=(256, 1, 1), cluster=(2, 1, 1), smem_bytes=230400))
    assert (config.gridDimX, config.gridDimY, config.gridDimZ) == (148, 1, 1)
    assert (config.blockDimX, config.blockDimY, config.blockDimZ) == (256, 1, 1)
    assert config.sharedMemBytes == 230400 and config.numAttrs == 1
    (cluster,) = config.attrs
    assert cluster.id == cluster.id.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    assert (cluster.value.clusterDim.x, cluster.value.clusterDim.y, cluster.value.clusterDim.z) == (2, 1, 1)


on_a_gpu = pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")


def compiled_flagship(m, n, k, device, **config):
    kernel = hopper_matmul.build(m, n, k, num_sms=device.sm_count, **config)
    return kernel.lower(*operand_specs(m, n, k, tg.float16), arch=device.arch).compile()


@pytest.mark.gpu
@on_a_gpu
def test_the_flagship_holds_one_block_per_sm_and_at_most_one_cluster_per_sm_pair():
    gpu = current_device()
    m = n = k = 4096
    blocks = max_active_clusters(compiled_flagship(m, n, k, gpu))                  # 193 KiB of SMEM each
    pairs = max_active_clusters(compiled_flagship(m, n, k, gpu, cluster_m=2))
    assert blocks == gpu.sm_count
    assert 0 < pairs <= gpu.sm_count // 2


@pytest.mark.gpu
@on_a_gpu
def test_a_persistent_kernel_rebuilt_with_the_drivers_cluster_count_is_correct():
    gpu = current_device()
    m, n, k = 4096, 4096, 512                                          # 352 pair tiles
    pairs = max_active_clusters(compiled_flagship(m, n, k, gpu, cluster_m=2))
    kernel = hopper_matmul.build(m, n, k, cluster_m=2, num_sms=2 * pairs)     # the grid: `pairs` clusters
    assert kernel.trace(*operand_specs(m, n, k, tg.float16)).config["grid"] == (pairs,)
    a, b = random_inputs(m, n, k, tg.float16)
    assert relative_error(kernel(a, b), a, b) < 2e-3


def test_no_cluster_probe_runs_for_an_architecture_tilegemm_does_not_compile_for():
    from tilegemm.runtime.device import Device
    from tilegemm.runtime.occupancy import resident_clusters
    assert resident_clusters(Device(0, "NVIDIA A100-SXM4-80GB", (8, 0), 108, 166912, 40 * 2**20), (2, 4)) == ()


@pytest.mark.gpu
@on_a_gpu
def test_the_cluster_probe_holds_as_many_clusters_as_the_flagship_in_clusters():
    # what tg.matmul's designs are sized by before any of them is compiled (ops.dispatch.live_sheet)
    from tilegemm.runtime.occupancy import resident_clusters
    gpu = current_device()
    held = dict(resident_clusters(gpu, (2, 4)))
    for size in (2, 4):
        assert 0 < held[size] <= gpu.sm_count // size
        assert held[size] == max_active_clusters(compiled_flagship(4096, 4096, 4096, gpu, cluster_m=size))
