"""TMEM -> register loads: async_load_tmem reads at once, but keeps TMEM busy until wait_load_tmem."""
from ..asyncops import TmemLoad
from ..races import touch_operand
from ..registry import handler


@handler("async_load_tmem", sync=True)
def async_load_tmem(task, op, env):
    """Reads TMEM now; the read stays in flight (TMEM must not be overwritten) until wait_load_tmem."""
    (src,) = task.operands(op, env)
    task.tmem_loads.append(TmemLoad(src, touch_operand(task, op, "src", src)))
    env[op.results[0].id] = src.read()


@handler("wait_load_tmem", sync=True)
def wait_load_tmem(task, op, env):
    """Ends every TMEM read this thread started."""
    for load in task.tmem_loads:
        load.access.stamp = task.stamp()
    task.tmem_loads = []
