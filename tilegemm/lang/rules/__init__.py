"""Verifier rules, one module per concern; importing registers them with lang.verify."""
from . import (arrivals, barriers, budgets, cluster, extents, indices, mma, registers, structure,  # noqa: F401
               swizzle, tma, tmem)
