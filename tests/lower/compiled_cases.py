"""The compiled kernels tests/lower reads facts from, and compiling one whose generated source carries a planted bug.

HOPPER_CASES and BLACKWELL_CASES: every example (the Blackwell ones also at a
ragged shape), the flagship with a cluster, at M = 1 and with its operands
stored either way round, the transposed-operands example with both operands
MN-major. DEBUG_CASES: debug builds whose barrier waits give up after a
timeout.
"""
import dataclasses
import functools
import hashlib

import tilegemm as tg
from tilegemm.lower import driver
from tilegemm.model.layouts import A_LAYOUTS, B_LAYOUTS, operand_specs
from tilegemm.showcase import example_layouts

from .examples import BLACKWELL, HOPPER, example, ragged_shape

FLAGSHIP_CLUSTER_SHAPE = (1024, 1024, 1024)   # the flagship with cluster_m=2: B multicast to both blocks
FLAGSHIP_LAYOUT_SHAPE = (2048, 2048, 2048)    # the flagship with A, B or both stored the other way round
SINGLE_ROW_SHAPE = (1, 64, 64)                # M = 1 (decoding): A's and C's extent-1 rows are a run-time constant
BARRIER_TIMEOUT = 0.5                         # seconds: a debug build whose every barrier wait gives up and traps


@dataclasses.dataclass(frozen=True)
class Case:
    """One compiled example: its name, shape and arch, the build options it overrides (`config`, (name, value)
    pairs such as the flagship's cluster_m and operand layouts) and a debug build's barrier timeout."""
    name: str
    shape: tuple
    arch: str
    config: tuple = ()
    barrier_timeout: float = None

    def __str__(self):
        extra = "".join(f"-{key}={value}" for key, value in self.config)
        debug = "" if self.barrier_timeout is None else f"-timeout{self.barrier_timeout}"
        return f"{self.name}-{'x'.join(map(str, self.shape))}{extra}{debug}"

    def lower(self):
        """The example built for this case, lowered with its inputs in the layouts it takes them in."""
        m, n, k = self.shape
        module, config = example(self.name), dict(self.config)
        specs = operand_specs(m, n, k, tg.float16, *example_layouts(module, **config))
        return module.build(m, n, k, **config).lower(*specs, arch=self.arch,
                                                     debug=tg.Debug(barrier_timeout=self.barrier_timeout))


def flagship(shape, **config):
    return Case("hopper_flagship", shape, "sm_90a", tuple(sorted(config.items())))


def verify_shape(name, which=0):
    return example(name).SHAPES["verify"][which]


HOPPER_CASES = [Case(name, verify_shape(name), "sm_90a") for name in HOPPER]
HOPPER_CASES += [flagship(FLAGSHIP_CLUSTER_SHAPE, cluster_m=2), flagship(SINGLE_ROW_SHAPE)]
HOPPER_CASES += [flagship(FLAGSHIP_LAYOUT_SHAPE, a_layout=a, b_layout=b, schedule="cooperative", tile_n=256)
                 for a in A_LAYOUTS for b in B_LAYOUTS if (a, b) != ("mk", "kn")]     # ("mk", "kn"): the default
HOPPER_CASES.append(Case("hopper_transposed_operands", verify_shape("hopper_transposed_operands", 1), "sm_90a",
                         (("a_layout", "km"), ("b_layout", "kn"))))
BLACKWELL_CASES = [Case(name, shape, "sm_100a") for name in BLACKWELL
                   for shape in (verify_shape(name), ragged_shape(name))]
DEBUG_CASES = [Case(name, verify_shape(name), arch, barrier_timeout=BARRIER_TIMEOUT)   # bounded barrier waits
               for name, arch in (("hopper_v4_tuned", "sm_90a"), ("blackwell_4_collective", "sm_100a"))]


@functools.lru_cache(maxsize=None)
def lowered(case):
    return case.lower()


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
    return driver.compile_generated(generated, driver.write_source(generated), key, "", low.barrier_timeout)
