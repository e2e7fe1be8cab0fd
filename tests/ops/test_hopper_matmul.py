"""The flagship kernel's non-default options: a 2-block cluster multicasting B, and a wider epilogue."""
import pytest

import tilegemm as tg
from tilegemm.ops import hopper_matmul
from tilegemm.showcase import random_inputs, relative_error


@pytest.mark.parametrize("shape", [(520, 600, 200), (256, 512, 128)], ids=["odd-m-tiles", "even-m-tiles"])
def test_a_cluster_of_two_blocks_sharing_b_matches_numpy(shape):
    # 520 rows are 5 tiles: the second block of the last cluster lies wholly past M and must write nothing
    a, b = random_inputs(*shape, tg.float16)
    c = hopper_matmul.build(*shape, cluster_m=2, num_sms=4)(a, b, interpret=True)
    assert relative_error(c, a, b) < 1e-2


def test_the_cluster_option_lowers_to_multicast_copies_and_a_cluster_launch():
    m = n = k = 1024
    lowered = hopper_matmul.build(m, n, k, cluster_m=2).lower(tg.ShapeDtype((m, k), tg.float16),
                                                              tg.ShapeDtype((k, n), tg.float16), arch="sm_90a")
    assert "multicast" in lowered.features and lowered.generated.launch.cluster == (2, 1, 1)


def test_a_128_wide_epilogue_with_3_stages_matches_numpy():
    a, b = random_inputs(264, 520, 200, tg.float16)
    c = hopper_matmul.build(264, 520, 200, stages=3, epi_tile_n=128, num_sms=3)(a, b, interpret=True)
    assert relative_error(c, a, b) < 1e-2
