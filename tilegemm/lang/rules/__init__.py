"""Verifier rules, one module per concern; importing registers them with lang.verify (in this order)."""
from . import extents  # noqa: F401  (first: the other rules may assume positive extents)
from . import (arrivals, barriers, budgets, cluster, counters, indices, layouts, mma, registers, stmatrix,  # noqa: F401
               scalars, structure, swizzle, tma, tmem)
