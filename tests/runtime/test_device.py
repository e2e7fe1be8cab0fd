"""Device description and the GPU requirements of tilegemm kernels."""
import pytest

import tilegemm as tg
from tilegemm.runtime import Device, current_device, device_count, require_supported


def device(compute_capability, name):
    """A Device description as the driver would report it, for a GPU this machine need not have."""
    return Device(0, name, compute_capability, sm_count=100, smem_per_block_optin=227 * 1024, l2_bytes=50 << 20)


@pytest.mark.parametrize("capability, arch", [((9, 0), "sm_90a"), ((10, 0), "sm_100a")])
def test_hopper_and_blackwell_are_supported(capability, arch):
    gpu = device(capability, "GPU")
    assert gpu.arch == arch
    require_supported(gpu)


def test_older_gpu_is_rejected_naming_what_was_found():
    with pytest.raises(tg.LaunchError, match=r"tilegemm kernels need Hopper \(sm_90\) or Blackwell \(sm_100\); "
                                             r"found sm_80 \(NVIDIA A100-SXM4-80GB\)"):
        require_supported(device((8, 0), "NVIDIA A100-SXM4-80GB"))


def test_consumer_blackwell_is_rejected():
    with pytest.raises(tg.LaunchError, match=r"found sm_120a"):
        require_supported(device((12, 0), "NVIDIA GeForce RTX 5090"))


@pytest.mark.skipif(device_count() > 0, reason="needs a machine without a CUDA GPU")
def test_without_a_gpu_asking_for_the_device_says_to_interpret():
    with pytest.raises(tg.LaunchError, match=r"no CUDA GPU: pass interpret=True to run in the numpy interpreter"):
        current_device()
