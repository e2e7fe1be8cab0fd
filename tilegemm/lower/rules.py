"""Lowering rules, registered per op kind and architecture against the op registry (lang/registry.py).

    @lowering("wgmma", SM90)
    def op_wgmma(self, op): ...      # `self` is the architecture's emitter (emit.py)

An architecture without a rule for an op kind declares why in the op's
declaration (lang/opdefs.py); the verifier refuses such ops at the user's
line, and tests/lang/test_registry.py checks that one or the other exists.
"""
from ..lang.registry import opdef

SM90, SM100 = "sm_90a", "sm_100a"
BOTH = (SM90, SM100)


def lowering(kind, *archs):
    """Registers the decorated emitter method as the lowering of op kind `kind` on each of `archs`."""
    def register(fn):
        declared = opdef(kind)
        for arch in archs:
            if arch in declared.lowerings:
                raise ValueError(f"the {arch} lowering of {kind} is registered twice")
            declared.lowerings[arch] = fn
        return fn
    return register
