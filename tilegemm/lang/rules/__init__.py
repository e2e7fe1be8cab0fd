"""Verifier rules, one module per concern; importing registers them with lang.verify."""
from . import structure  # noqa: F401
