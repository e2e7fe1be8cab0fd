"""The examples, discovered by file name (`examples/hopper_*.py`, `examples/blackwell_*.py`: build(m, n, k, dtype)
and SHAPES)."""
import functools
import glob
import os

import tilegemm as tg
from tilegemm.model.layouts import operand_specs
from tilegemm.showcase import example_layouts, load_example

EXAMPLES_DIR = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "examples"))


def discover(pattern):
    return sorted(os.path.splitext(os.path.basename(p))[0] for p in glob.glob(os.path.join(EXAMPLES_DIR, pattern)))


HOPPER = discover("hopper_*.py")
BLACKWELL = discover("blackwell_*.py")


@functools.lru_cache(maxsize=None)
def example(name):
    """The example module `name`, imported by path."""
    return load_example(os.path.join(EXAMPLES_DIR, name + ".py"))


def specs(m, n, k, dtype=tg.float16):
    return tg.ShapeDtype((m, k), dtype), tg.ShapeDtype((k, n), dtype)


def lower(name, shape=None, dtype=tg.float16, **config):
    """example(name) built for `shape` (default: its first verify shape), its inputs in the example's layouts,
    and lowered for sm_90a."""
    m, n, k = shape or example(name).SHAPES["verify"][0]
    layouts = example_layouts(example(name), **config)
    return example(name).build(m, n, k, dtype=dtype, **config).lower(*operand_specs(m, n, k, dtype, *layouts),
                                                                     arch="sm_90a")


def ragged_shape(name):
    """The first interpreter shape of `name` that leaves partial tiles (TMA zero-fills the loads, clips the stores)."""
    return next(s for s in example(name).SHAPES["interpret"] if any(d % 64 for d in s))
