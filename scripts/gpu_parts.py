"""The GPU test files split into parts of about as many tests each, so that every GPU test runs within calls that
each have a time limit (the device tool's: 10 minutes; all of them take longer, RESULTS.md run 172).

    python3 scripts/gpu_parts.py 1/2    # the test files of part 1 of 2, one a line
"""
import os
import subprocess
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def gpu_tests_per_file():
    """{test file: how many tests marked gpu it holds}, from pytest's collection."""
    listing = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              "-m", "gpu", "tests"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return Counter(line.split("::")[0] for line in listing.splitlines() if "::" in line)


def parts(counts, n):
    """`n` lists of files: the largest file first into the part with the fewest tests so far (ties: the first)."""
    split, sizes = [[] for _ in range(n)], [0] * n
    for name, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        i = sizes.index(min(sizes))
        split[i].append(name)
        sizes[i] += count
    return [sorted(files) for files in split]


def main(argv):
    try:
        part, n = (int(x) for x in argv[0].split("/"))
    except (IndexError, ValueError):
        raise SystemExit(f"say which part as I/N, e.g. 1/2; got {' '.join(argv)!r}") from None
    if not 1 <= part <= n:
        raise SystemExit(f"part must be between 1 and {n}, got {part}")
    print("\n".join(parts(gpu_tests_per_file(), n)[part - 1]))


if __name__ == "__main__":
    main(sys.argv[1:])
