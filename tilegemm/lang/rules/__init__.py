"""Verifier rules, one module per concern; importing registers them with lang.verify."""
from . import barriers, budgets, cluster, extents, indices, mma, registers, structure, swizzle, tma, tmem  # noqa: F401
