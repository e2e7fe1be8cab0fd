"""Lowering tg.debug_print to cute.printf: one line per warpgroup (per warp inside a core_map)."""
from . import cute_names as cn
from .rules import BOTH, lowering


class PrintOps:
    """The KernelEmitter's debug_print (mixed into both back ends)."""

    @lowering("debug_print", *BOTH)
    def op_debug_print(self, op):
        self.mark(op)
        fmt = op.attrs["fmt"].replace("%", "%%")   # cute.printf is C's printf underneath: a literal % is %%
        args = [f"cutlass.Float32({cn.literal(x)})" if isinstance(x, float) else self.typed_scalar(x, "cutlass.Int32")
                for x in op.operands]
        call = f"cute.printf({', '.join([repr(fmt)] + args)})"
        if self.core_map_depth:
            with self.w.block("with cute.arch.elect_one():"):
                self.w.line(call)
        else:
            with self.w.block("if thread_in_warpgroup == 0:"):
                self.w.line(call)
