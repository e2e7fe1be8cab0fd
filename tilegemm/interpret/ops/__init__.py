"""Op handlers, one module per family of ops; importing this package registers them all (registry.py)."""
from . import arrays, control, copies, elementwise, mma, printing, refs, scalars, sync, tmem  # noqa: F401
