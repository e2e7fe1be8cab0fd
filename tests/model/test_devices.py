"""Device specs: lookup by short and runtime names; datasheet and measured ceilings kept apart."""
import pytest

from tilegemm.model import DeviceSpec, devices, get_device


@pytest.mark.parametrize("name, short", [
    ("h200", "H200"), ("H100", "H100"), ("b200", "B200"), ("a100", "A100"),
    ("NVIDIA H200", "H200"), ("NVIDIA H100 80GB HBM3", "H100"), ("NVIDIA A100-SXM4-80GB", "A100"),
])
def test_devices_are_found_by_short_or_runtime_name(name, short):
    assert short in get_device(name).name


def test_a_device_spec_passes_through():
    spec = get_device("h100")
    assert isinstance(spec, DeviceSpec) and get_device(spec) is spec


def test_unknown_devices_are_refused_with_the_known_names():
    with pytest.raises(ValueError, match="a100, b200, h100, h200"):
        get_device("rtx 4090")


def test_h200_keeps_datasheet_and_measured_ceilings_apart():
    h200 = get_device("h200")
    assert h200.sms == 132
    assert h200.peak_flops("wgmma") == pytest.approx(989.4e12)
    assert h200.peak_flops("wgmma", measured=True) == pytest.approx(720e12)
    assert h200.bandwidth() == pytest.approx(4.8e12)
    assert h200.bandwidth(measured=True) == pytest.approx(4.3e12)
    assert h200.is_measured("wgmma") and not h200.is_measured("fma")


def test_devices_without_measurements_fall_back_to_the_datasheet():
    b200 = get_device("b200")   # never measured: no Blackwell GPU has been available
    assert b200.peak_flops("tcgen05", measured=True) == b200.peak_flops("tcgen05")
    assert b200.bandwidth(measured=True) == b200.dram_bw


def test_instruction_paths_follow_the_architecture():
    assert "wgmma" in get_device("h200").instructions and "tcgen05" not in get_device("h200").instructions
    assert "tcgen05" in get_device("b200").instructions and "wgmma" not in get_device("b200").instructions
    assert get_device("b200").limits.tmem_columns == 512 and get_device("h200").limits.tmem_columns == 0


def test_shared_memory_per_flop_of_the_sm():
    # A100 FP32: 128 B/clk against 64 FMA = 128 FLOP per clock -> 1 byte per FLOP.
    assert get_device("a100").smem_bytes_per_flop("fma") == pytest.approx(1.0, rel=0.01)
    # H100 tensor cores: 128 B/clk against 4096 FLOP per clock.
    assert get_device("h100").smem_bytes_per_flop("wgmma") == pytest.approx(128 / 4096, rel=0.01)


@pytest.mark.parametrize("dtype", ["e4m3", "e5m2"])
def test_fp8_runs_at_twice_the_16_bit_tensor_rate_measured_ceiling_included(dtype):
    from tilegemm.lang import dtypes
    h200, fp8 = get_device("h200"), dtypes.as_dtype(dtype)
    for measured in (False, True):
        assert h200.peak_flops("wgmma", measured, dtype=fp8) == 2 * h200.peak_flops("wgmma", measured)
    assert h200.peak_flops("wgmma", dtype=dtypes.bfloat16) == h200.peak_flops("wgmma")
    assert get_device("b200").peak_flops("tcgen05", dtype=fp8) == 2 * get_device("b200").tensor_flops
    assert h200.smem_bytes_per_flop("wgmma", fp8) == h200.smem_bytes_per_flop("wgmma") / 2


def test_a_cluster_grid_keeps_to_the_clusters_the_gpu_holds_at_once():
    h200 = get_device("h200")
    assert h200.cluster_grid_sms(2, 132) == 132      # 66 clusters of two: every SM
    assert h200.cluster_grid_sms(4, 132) == 120      # 30 clusters of four, not 33
    assert h200.cluster_grid_sms(4, 100) == 100      # a smaller grid is kept
    assert get_device("h100").cluster_grid_sms(4, 132) == 120   # the H100 the driver was asked on: as the H200
    assert get_device("b200").cluster_grid_sms(4, 148) == 148   # not measured: the grid as asked


@pytest.mark.parametrize("arch", ["sm_90a", "sm_100a"])
def test_each_tensor_core_architecture_has_a_reference_part_and_a_nearest_part_of_its_own(arch):
    assert devices.reference_device(arch).arch == arch and devices.nearest_device(arch).arch == arch


def test_hopper_budgets_the_h200_without_a_gpu_and_an_unknown_hopper_gpu_as_an_h100():
    assert devices.reference_device("sm_90a") is devices.H200 and devices.nearest_device("sm_90a") is devices.H100
