"""Launch-time failures that need no GPU: a missing GPU and a kernel compiled for another architecture."""
import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import Device, device_count
from tilegemm.runtime.launch import check_target


class CompiledFor:
    """A compiled kernel as far as check_target looks: its architecture."""

    def __init__(self, arch):
        self.arch = arch


@pytest.mark.skipif(device_count() > 0, reason="needs a machine without a CUDA GPU")
def test_without_a_gpu_calling_a_kernel_says_to_interpret(one_tile):
    a = np.ones((64, 64), np.float16)
    with pytest.raises(tg.LaunchError, match=r"no CUDA GPU: pass interpret=True to run in the numpy interpreter"):
        one_tile(a, a)


def test_kernel_compiled_for_another_arch_is_rejected():
    h200 = Device(0, "NVIDIA H200", (9, 0), 132, 227 * 1024, 60 << 20)
    with pytest.raises(tg.LaunchError, match=r"mm was compiled for sm_100a but cuda:0 \(NVIDIA H200, sm_90a\) "
                                             r"needs sm_90a; lower it with arch='sm_90a'"):
        check_target(CompiledFor("sm_100a"), h200, "mm")
    check_target(CompiledFor("sm_90a"), h200, "mm")
