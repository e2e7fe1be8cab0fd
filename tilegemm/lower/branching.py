"""Lowering tg.while_loop and tg.cond to CuTe DSL's dynamic `while` and `if`/`else`, carrying scalars in variables
declared before them (as the DSL requires of values that a loop or branch assigns)."""
from . import cute_names as cn
from .rules import BOTH, lowering


class BranchingOps:
    """The KernelEmitter's while_loop and cond (mixed into both back ends)."""

    @lowering("while_loop", *BOTH)
    def op_while_loop(self, op):
        self.mark(op)
        cond_region, body_region = op.regions
        carries = [self.loop_carry(init, arg) for init, arg in zip(op.operands, body_region.args)]
        for arg, (_, name, _) in zip(cond_region.args, carries):
            self.expr[id(arg)] = name
        go = self.names.fresh("go")
        self.w.line(f"{go} = cutlass.Boolean({self.yielded(cond_region)[0]})")
        with self.w.block(f"while {go}:"):
            self.emit_region(body_region)
            self.assign_carries(carries, body_region.ops[-1].operands)
            self.w.line(f"{go} = cutlass.Boolean({self.yielded(cond_region)[0]})")
        self.forget_loc()
        for (_, name, _), result in zip(carries, op.results):
            self.expr[id(result)] = name

    @lowering("cond", *BOTH)
    def op_cond(self, op):
        self.mark(op)
        pred, *operands = op.operands
        results = []
        for result in op.results:
            typ = cn.cutlass_type(result.type.dtype)
            name = self.names.fresh("branch")
            self.w.line(f"{name} = {typ}(0)")
            results.append((name, typ))
        for region, header in zip(op.regions, (f"if {self.scalar(pred)}:", "else:")):
            with self.w.block(header):
                for arg, value in zip(region.args, operands):
                    self.expr[id(arg)] = self.scalar(value)
                values = self.yielded(region, [typ for _, typ in results])
                for (name, _), value in zip(results, values):
                    self.w.line(f"{name} = {value}")
                if not results:
                    self.w.line("pass")
        self.forget_loc()
        for (name, _), result in zip(results, op.results):
            self.expr[id(result)] = name

    def yielded(self, region, types=None):
        """Emits a region that ends with a yield; returns the sources of the yielded values (typed if `types`)."""
        self.emit_region(region)
        values = region.ops[-1].operands
        if types is None:
            return [self.scalar(v) for v in values]
        return [self.typed_scalar(v, typ) for v, typ in zip(values, types)]
