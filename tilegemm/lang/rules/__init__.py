"""Verifier rules, one module per concern; importing registers them with lang.verify."""
from . import barriers, budgets, cluster, indices, layouts, mma, structure, swizzle, tma  # noqa: F401
