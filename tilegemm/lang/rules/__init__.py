"""Verifier rules, one module per concern; importing registers them with lang.verify."""
from . import barriers, budgets, cluster, indices, mma, structure, swizzle, tma  # noqa: F401
