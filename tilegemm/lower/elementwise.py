"""Lowering elementwise math, broadcasting and row reductions of register arrays (tilegemm.lang.elementwise).

Every thread computes on its own fragment of an array, so math is `cute.math` on the
fragment's TensorSSA. A broadcast operand is already held as a fragment of the array it
is broadcast over (distribution.Broadcast), so `x[None, :]` and `tg.broadcast_to` move no
data: they name the same fragment (so do `.T` and `.reshape` of such vectors). A row
reduction leaves every element of the fragment holding its row's result (the Broadcast
layout of a per-row vector), combining within a thread, then across the four threads
that share a row of a WGMMA accumulator.
"""
import math

from . import cute_names as cn
from .distribution import Wgmma
from .plan import unsupported
from .rules import BOTH, lowering

_UNARY = {
    "exp": "cute.math.exp({x})", "exp2": "cute.math.exp2({x})", "log": "cute.math.log({x})",
    "tanh": "cute.math.tanh({x})", "erf": "cute.math.erf({x})", "sqrt": "cute.math.sqrt({x})",
    "rsqrt": "cute.math.rsqrt({x})", "abs": "cute.math.absf({x})",
    "sigmoid": "1.0 / (1.0 + cute.math.exp(0.0 - {x}))",
}
_MULTIPLIED_POWERS = (1, 2, 3, 4)   # x ** n for these n is n - 1 multiplications


class ElementwiseOps:
    """The KernelEmitter's ops for unary math, powers and broadcasting (mixed into both back ends)."""

    @lowering("unary", *BOTH)
    def op_unary(self, op):
        self.mark(op)
        fn = op.attrs["fn"]
        self.bind_array(op.result, _UNARY[fn].format(x=self.array(op.operands[0])), hint=fn)

    def power(self, op, base, exponent):
        """Source of base ** exponent (an `ewise` pow) for array operands or Python numbers."""
        sa, sb = self.array(base), self.array(exponent)
        if isinstance(exponent, float) and exponent in _MULTIPLIED_POWERS:
            return " * ".join([sa] * int(exponent))
        if isinstance(base, float):
            if base <= 0:
                raise unsupported(op, f"{base} ** x", "raise positive numbers to an array's power")
            return f"cute.math.exp2({sb} * {cn.literal(math.log2(base))})"
        return f"cute.math.pow({sa}, {sb})"

    @lowering("reduce", *BOTH)
    def op_reduce(self, op):
        self.mark(op)
        (x,) = op.operands
        kind = repr(op.attrs["kind"])
        if isinstance(self.dists[id(x)], Wgmma):
            text = f"tgd.accumulator_row_reduce({self.array(x)}, {x.type.shape[1]}, {kind})"
        else:   # a TMEM load: each thread holds whole rows
            text = f"tgd.thread_row_reduce({self.array(x)}, {kind})"
        self.bind_array(op.result, text, hint=f"row_{op.attrs['kind']}")

    @lowering("expand_dims", *BOTH)
    def op_expand_dims(self, op):
        self.alias_broadcast(op)

    @lowering("broadcast_to", *BOTH)
    def op_broadcast_to(self, op):
        self.alias_broadcast(op)

    @lowering("transpose", *BOTH)
    def op_transpose(self, op):
        self.alias_broadcast(op)

    @lowering("reshape", *BOTH)
    def op_reshape(self, op):
        self.alias_broadcast(op)

    def alias_broadcast(self, op):
        """x[None, :], tg.broadcast_to(x, shape), x.T and x.reshape(...) of a vector: the operand is distributed
        as a Broadcast over the array it is combined with (distribution.py), so its fragment already holds the
        result's elements where the result's layout wants them."""
        self.expr[id(op.result)] = self.array(op.operands[0])
