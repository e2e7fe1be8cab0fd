"""The launch as the interpreter sees it: clusters of blocks, with named coordinates and labels."""
import itertools

from ..errors import KernelError
from .asyncops import TensorCoreEngine
from .tasks import TaskId


class Machine:
    """What every task of one interpreted launch shares: options, implicit phase counts, tcgen05 queues."""

    def __init__(self, graph, seeded):
        self.graph = graph
        self.seeded = seeded
        self.thread_name = graph.config["thread_name"]
        self.wait_counts = {}  # (TaskId, BarrierElement) -> barrier_waits done in implicit mode
        self.engines = {}      # TaskId -> TensorCoreEngine
        self.counters = {}     # (GMEM buffer id, element index) -> (RefView, the count_arrival op): counters counted
        self.arrived = {}      # the same key -> the clocks the arrivals at it so far released, joined

    def check_counters(self):
        """Raises KernelError for a count_arrival counter this launch did not leave at 0 (more or fewer arrivals
        than the op declares): the next launch would count from there and pick the wrong last arrival."""
        for counter, op in self.counters.values():
            left = int(counter.read())
            if left:
                raise KernelError(f"count_arrival: the launch left its counter at {left}, not 0: the warpgroups "
                                  f"that arrived are not a multiple of arrivals={op.attrs['arrivals']}, so the last "
                                  "ones were not counted as a whole and the next launch would count from here",
                                  loc=op.loc)

    def engine(self, task_id):
        """The tcgen05 queue of the thread `task_id` (it persists across core_map forks)."""
        engine = self.engines.get(task_id)
        if engine is None:
            engine = self.engines[task_id] = TensorCoreEngine(task_id.label)
        return engine


class Block:
    """One CTA: its grid and cluster coordinates, its scratch allocations (alloc op -> Buffer), and the
    asynchronous completions its threads must observe before it ends."""

    def __init__(self, cluster, coords, label, thread_name):
        self.cluster = cluster
        self.coords = coords
        self.label = label
        self.thread_name = thread_name
        self.scratch = {}
        self.awaited = {}  # clock key -> (epoch, asynchronous operation): the latest completion per key
        self._ids = {}

    def expect(self, key, epoch, operation):
        """Records that `operation` completes at the clock event (key, epoch), which this block's threads must
        observe before the block ends (epochs of one key only grow, so the latest covers the earlier ones)."""
        self.awaited[key] = (epoch, operation)

    def task_id(self, thread, warp):
        """The TaskId of (thread, warp) in this block, the same object every time."""
        key = (thread, warp)
        task_id = self._ids.get(key)
        if task_id is None:
            who = f"thread {self.thread_name}={thread}" if self.thread_name else f"thread {thread}"
            label = f"{self.label} {who}" + (f" [warp {warp}]" if warp is not None else "")
            task_id = self._ids[key] = TaskId(label)
        return task_id


class Cluster:
    """The blocks of one cluster of the grid; only they can share SMEM data and barriers."""

    def __init__(self, graph, grid_index):
        config = graph.config
        self.grid_coords = dict(zip(config["grid_names"], grid_index))
        self.names = tuple(config["cluster_names"])
        self.label = _label(self.grid_coords)
        self.blocks = []
        for index in itertools.product(*(range(n) for n in config["cluster"])):
            coords = dict(self.grid_coords, **dict(zip(self.names, index)))
            self.blocks.append(Block(self, coords, "block " + _label(coords), config["thread_name"]))
        self._peers = {}

    def peers(self, block, axes):
        """The blocks that differ from `block` only along cluster `axes`, in rank order (first axis major)."""
        key = (block, tuple(axes))
        group = self._peers.get(key)
        if group is None:
            fixed = [n for n in self.names if n not in axes]
            group = [b for b in self.blocks if all(b.coords[n] == block.coords[n] for n in fixed)]
            group.sort(key=lambda b: tuple(b.coords[a] for a in axes))
            self._peers[key] = group
        return group


def _label(coords):
    """'(m=0, n=1)' for named coordinates."""
    return "(" + ", ".join(f"{k}={v}" for k, v in coords.items()) + ")"
