"""debug_print: one line per tilegemm thread that reaches it."""
from ..registry import handler


@handler("debug_print")
def debug_print(task, op, env):
    """Prints the op's format string filled with its scalar operands."""
    print(op.attrs["fmt"].format(*(int(x) if not isinstance(x, float) else x for x in task.operands(op, env))))
