"""What must be finished when a block ends: every asynchronous operation it started or that writes to it.

On the GPU a block's shared memory, tensor memory and barriers are released
when its last thread exits, and may be handed to the next block at once. So
when the blocks of a cluster have run to their end, the interpreter reports,
as a tg.RaceError at the line that started it:

- per thread, a WGMMA not retired by `wgmma_wait`, a TMA store not covered by
  `wait_smem_to_gmem`, a TMEM load not followed by `wait_load_tmem`;
- per block, a TMA load into its SMEM, a tcgen05 MMA writing its TMEM or a
  tcgen05 commit arriving on its barriers whose completion none of the
  block's threads observed (clocks.py): nothing then kept the block from
  exiting first, whatever the schedule. Operations still in flight when the
  last thread ends complete first, so the same one is reported under every
  schedule: the last of its tcgen05 queue, or of the TMA loads on its barrier.
"""
from ..errors import RaceError
from .clocks import join, sees


def check_block_ends(tasks):
    """Raises RaceError for the first operation of `tasks`' blocks (one cluster) that is unfinished at their end."""
    for task in tasks:
        for operation in task.unfinished():
            raise RaceError(operation.unfinished(task.block))
    clocks = {}
    for task in tasks:
        join(clocks.setdefault(task.block, {}), task.vc)
    for block, clock in clocks.items():
        for key, (epoch, operation) in block.awaited.items():
            if not sees(clock, (key, epoch)):
                raise RaceError(operation.unfinished(block))
