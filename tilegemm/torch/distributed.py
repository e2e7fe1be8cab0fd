"""torch.ops.tilegemm.matmul on DTensors: the operator's sharding rules, so tensor-parallel programs multiply shards.

    import tilegemm.torch.distributed   # registers the rules with DTensor (torch.distributed.tensor)

DTensor runs an operator on each rank's local shards only when it knows how the
output is placed for its operands' placements; without rules, a DTensor program
calling torch.ops.tilegemm.matmul fails. The rules are torch.mm's: a split by rows
gives c split by rows, b split by columns gives c split by columns, and a and b
both split along the contraction give each rank a partial sum of c (`Partial`: one
all-reduce adds them when the program asks for c whole). DTensor chooses among
them and redistributes operands that fit none. Each rank then runs tilegemm's
kernel on its shards, which tg.matmul must take as they are (K and N in whole
16-byte rows: split them evenly).
"""
import torch
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor.experimental import register_sharding

# (c's placement, (a's, b's)) along one mesh dimension, for c = a @ b with a [M, K] and b [K, N].
MATMUL_SHARDINGS = (
    (Replicate(), (Replicate(), Replicate())),
    (Shard(0), (Shard(0), Replicate())),        # rows of a: rows of c
    (Shard(1), (Replicate(), Shard(1))),        # columns of b: columns of c
    (Partial(), (Shard(1), Shard(0))),          # the contraction: partial sums of c
)


@register_sharding(torch.ops.tilegemm.matmul.default)
def matmul_shardings(a, b):
    """The placements DTensor may run torch.ops.tilegemm.matmul with, as register_sharding takes them: a list of
    ([c's placement], [a's, b's]) for one mesh dimension (DTensor combines them over the mesh's dimensions)."""
    return [([c], [pa, pb]) for c, (pa, pb) in MATMUL_SHARDINGS]
