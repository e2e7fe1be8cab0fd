"""benchmarks/ncu_table.py: the ncu table is printed from the raw CSV ncu wrote (header, units row, kernels)."""

import pytest

ncu_table = pytest.importorskip("ncu_table")

RAW = '''"ID","Kernel Name","gpu__time_duration.sum","sm__cycles_elapsed.avg.per_second","sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active","sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed","dram__bytes_read.sum","lts__t_bytes.sum","launch__grid_size"
"","","nsecond","cycle/second","%","%","byte","byte",""
"0","kernel_a","1,390,000","1,520,000,000","98.3","91.0","1,380,000,000","9,100,000,000","132"
"1","nvjet_sm90_hsh","1,420,000","1,560,000,000","96.8","","","",""
'''


def test_a_profile_is_summarised_one_row_per_kernel_in_readable_units(tmp_path):
    path = tmp_path / "profile.csv"
    path.write_text(RAW)
    table = ncu_table.summarize(str(path)).splitlines()
    assert table[0].startswith("| kernel | duration (us) | SM clock (GHz) | tensor pipe active (%) | "
                               "tensor pipe of elapsed (%) | DRAM read (GB) | L2 traffic (GB) | grid (blocks) |")
    assert table[2] == "| kernel_a | 1390 | 1.52 | 98.3 | 91 | 1.38 | 9.1 | 132 |"
    assert table[3] == "| nvjet_sm90_hsh | 1420 | 1.56 | 96.8 | — | — | — | — |"
    assert len(table) == 4
