"""scripts/gpu_parts.py: the GPU test files split into parts that together run every GPU test once, each part
about as large, for scripts/gpu.sh --part I/N."""
import os
import sys
from collections import Counter

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "scripts"))
import gpu_parts  # noqa: E402


def test_the_parts_hold_every_file_once_and_differ_by_no_more_than_the_largest_file():
    counts = Counter({"a.py": 40, "b.py": 30, "c.py": 20, "d.py": 20, "e.py": 5, "f.py": 1})
    split = gpu_parts.parts(counts, 3)
    assert sorted(name for files in split for name in files) == sorted(counts)
    sizes = [sum(counts[name] for name in files) for files in split]
    assert max(sizes) - min(sizes) <= max(counts.values())
    assert split == gpu_parts.parts(counts, 3), "the same split every time"


def test_the_repositorys_gpu_tests_split_in_two_cover_every_file_that_has_one():
    counts = gpu_parts.gpu_tests_per_file()
    assert "tests/ops/test_matmul_gpu.py" in counts and all(name.startswith("tests/") for name in counts)
    first, second = gpu_parts.parts(counts, 2)
    assert not set(first) & set(second) and set(first) | set(second) == set(counts)


def test_a_part_outside_the_split_or_not_written_i_of_n_is_refused():
    with pytest.raises(SystemExit, match="part must be between 1 and 2, got 3"):
        gpu_parts.main(["3/2"])
    with pytest.raises(SystemExit, match="say which part as I/N, e.g. 1/2; got '2'"):
        gpu_parts.main(["2"])
