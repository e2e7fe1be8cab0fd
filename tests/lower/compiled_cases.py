"""Every example as tests/lower compiles it, and compiling a kernel whose generated source carries a planted bug."""
import dataclasses
import functools
import hashlib

from tilegemm.lower import driver
from tilegemm.ops import hopper_matmul

from .examples import BLACKWELL, HOPPER, example, ragged_shape, specs

FLAGSHIP_CLUSTER_SHAPE = (1024, 1024, 1024)   # the flagship with cluster_m=2: B multicast to both blocks


@dataclasses.dataclass(frozen=True)
class Case:
    """One compiled example: its name, shape and arch (`cluster_m` for the flagship's multicast option)."""
    name: str
    shape: tuple
    arch: str
    cluster_m: int = 1

    def __str__(self):
        extra = f"-cluster{self.cluster_m}" if self.cluster_m > 1 else ""
        return f"{self.name}-{'x'.join(map(str, self.shape))}{extra}"

    def build(self):
        if self.cluster_m > 1:
            return hopper_matmul.build(*self.shape, cluster_m=self.cluster_m)
        return example(self.name).build(*self.shape)


HOPPER_CASES = [Case(name, example(name).SHAPES["verify"][0], "sm_90a") for name in HOPPER]
HOPPER_CASES.append(Case("hopper_flagship", FLAGSHIP_CLUSTER_SHAPE, "sm_90a", cluster_m=2))
BLACKWELL_CASES = [Case(name, shape, "sm_100a") for name in BLACKWELL
                   for shape in (example(name).SHAPES["verify"][0], ragged_shape(name))]


@functools.lru_cache(maxsize=None)
def lowered(case):
    m, n, k = case.shape
    return case.build().lower(*specs(m, n, k), arch=case.arch)


def compiled(case):
    """(Lowered, CompiledKernel) of a case (the compile cache makes repeated calls cheap)."""
    low = lowered(case)
    return low, low.compile()


def compile_edited(low, *edits):
    """Compiles `low`'s generated source with each (old, new[, count]) edit made: a bug planted in the lowering's
    output (every occurrence of `old` replaced, or the first `count`).

    Every `old` must occur in the source, so a planted bug cannot silently stop being planted.
    """
    source = low.source
    for old, new, *count in edits:
        assert old in source, f"the generated source of {low.generated.entry} no longer contains {old!r}"
        source = source.replace(old, new, *count)
    generated = dataclasses.replace(low.generated, source=source)
    key = hashlib.sha256(source.encode()).hexdigest()[:32]
    return driver.compile_generated(generated, driver.write_source(generated), key, "")
