"""The table from op kind to the function that executes it in a task."""

HANDLERS = {}  # kind -> (fn(task, op, env), runs_regions, is_sync_point)


def handler(kind, *, regions=False, sync=False):
    """Registers `fn` for `kind`. `regions`: fn is a generator that runs nested regions.

    `sync`: the op is a synchronisation point, where a seeded schedule may switch tasks.
    A non-region handler returns None, or a wait object (ready(), finish(),
    describe()) that the task blocks on.
    """
    def register(fn):
        HANDLERS[kind] = (fn, regions, sync)
        return fn
    return register
