"""A transformer's MLP block split over several GPUs, its matmuls tilegemm's: torch.distributed, NCCL, torchrun.

The block is y = gelu(x @ up.T) @ down.T, with its weights stored as
torch.nn.Linear stores them ([out features, in features]; no biases). Tensor
parallelism splits it the Megatron way over the ranks of a process group: `up`
by its output features (column-parallel), `down` by its input features
(row-parallel). Each rank multiplies the whole x by its rows of `up`, applies gelu
to its slice of the hidden activations and multiplies that by its columns of
`down`, which gives it a partial sum of y; one all-reduce adds the ranks' sums.
Every product is torch.ops.tilegemm.matmul on the rank's own GPU and stream (the
weights are read as stored: x @ w.T copies nothing); NCCL does the all-reduce.
tilegemm brings no launcher and no collectives of its own.

The same block runs two ways:

- by hand: each rank holds its shards as plain tensors and calls dist.all_reduce
  (`megatron_shards`, `megatron_block`);
- as a DTensor program: `parallelize_module` with ColwiseParallel / RowwiseParallel
  shards an ordinary MLP module (`parallelize`), and DTensor calls the operator on
  each rank's shards because tilegemm.torch.distributed gives it the operator's
  sharding rules: one all-reduce, nothing gathered.

    torchrun --nproc-per-node 2 examples/tensor_parallel_mlp.py
    torchrun --nproc-per-node 2 examples/tensor_parallel_mlp.py --tokens 8192 --hidden 8192 --ffn 28672

Rank 0 compares both with the block on its GPU alone. Without CUDA GPUs the
ranks run on the CPU (the gloo backend) at tiny sizes, through tilegemm's numpy
interpreter. Several hosts: the same script under `torchrun --nnodes`.
"""
import argparse
import os

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module

import tilegemm.torch as tgt
import tilegemm.torch.distributed  # noqa: F401  (torch.ops.tilegemm.matmul's sharding rules, for DTensor)


class Linear(torch.nn.Linear):
    """torch.nn.Linear without bias whose product is `matmul` (tilegemm's by default): x @ weight.T, the weight
    read as stored."""

    def __init__(self, d_in, d_out, *, matmul=tgt.matmul, **kwargs):
        super().__init__(d_in, d_out, bias=False, **kwargs)
        self.matmul = matmul

    def forward(self, x):
        return self.matmul(x, self.weight.T)


class MLP(torch.nn.Module):
    """The block whole: y = down(gelu(up(x))), hidden -> ffn -> hidden, its weights drawn from `seed` (so every rank
    draws the same)."""

    def __init__(self, hidden, ffn, *, dtype=torch.bfloat16, device="cpu", seed=0, matmul=tgt.matmul):
        super().__init__()
        self.up = Linear(hidden, ffn, matmul=matmul, dtype=dtype, device=device)
        self.down = Linear(ffn, hidden, matmul=matmul, dtype=dtype, device=device)
        generator = torch.Generator(device).manual_seed(seed)
        with torch.no_grad():
            for layer in (self.up, self.down):
                d_out, d_in = layer.weight.shape
                layer.weight.copy_(torch.randn(d_out, d_in, generator=generator, device=device) * d_in ** -0.5)

    def forward(self, x):
        return self.down(activation(self.up(x)))


def activation(h):
    """The block's nonlinearity: GELU, tanh approximation (jax.nn.gelu's default, as in the JAX example)."""
    return F.gelu(h, approximate="tanh")


def megatron_shards(up, down, rank, world):
    """This rank's slices of the weights `up` [ffn, hidden] and `down` [hidden, ffn]: its rows of up and its
    columns of down (the same ffn features), each stored as its own [out, in] row-major tensor."""
    return up.detach().chunk(world, dim=0)[rank].contiguous(), down.detach().chunk(world, dim=1)[rank].contiguous()


def partial_block(x, up_shard, down_shard, matmul=tgt.matmul):
    """This rank's partial sum of y: gelu(x @ up_shard.T) @ down_shard.T."""
    return matmul(activation(matmul(x, up_shard.T)), down_shard.T)


def megatron_block(x, up_shard, down_shard, matmul=tgt.matmul, group=None):
    """y on every rank of `group`: this rank's partial sum, then one all-reduce (in place) adds the ranks'."""
    y = partial_block(x, up_shard, down_shard, matmul)
    dist.all_reduce(y, group=group)
    return y


def parallelize(mlp, mesh):
    """`mlp` (an MLP) with its weights made DTensors sharded over the 1-D `mesh` the same way, in place: its forward
    then takes x and returns y as plain tensors, replicated on every rank."""
    return parallelize_module(mlp, mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})


def run(tokens, hidden, ffn, device, mesh, dtype=torch.bfloat16):
    """The block on this rank's process group, by hand and as a DTensor program, and on rank 0 alone: a dict of
    y's ("by hand", "DTensor", and on rank 0 "one device")."""
    rank, world = dist.get_rank(), dist.get_world_size()
    x = torch.randn(tokens, hidden, generator=torch.Generator(device).manual_seed(1), device=device).to(dtype)
    whole = MLP(hidden, ffn, dtype=dtype, device=device)
    with torch.no_grad():
        ys = {"by hand": megatron_block(x, *megatron_shards(whole.up.weight, whole.down.weight, rank, world)),
              "DTensor": parallelize(MLP(hidden, ffn, dtype=dtype, device=device), mesh)(x)}
        if rank == 0:
            ys["one device"] = whole(x)
    return ys


def relative_error(y, reference):
    """||y - reference||_F / ||reference||_F, in float64."""
    y, reference = y.double(), reference.double()
    return float(torch.linalg.norm(y - reference) / torch.linalg.norm(reference))


def main():
    on_gpu = torch.cuda.is_available()
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=4096 if on_gpu else 16)
    p.add_argument("--hidden", type=int, default=4096 if on_gpu else 32)
    p.add_argument("--ffn", type=int, default=14336 if on_gpu else 64)
    args = p.parse_args()
    if on_gpu:
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
        torch.cuda.set_device(device)
        dist.init_process_group("nccl", device_id=device)
    else:
        device = torch.device("cpu")
        dist.init_process_group("gloo")
    try:
        mesh = init_device_mesh(device.type, (dist.get_world_size(),))
        ys = run(args.tokens, args.hidden, args.ffn, device, mesh)
        dtensor_error = relative_error(ys["DTensor"], ys["by hand"])   # on every rank: each holds y
        if dist.get_rank() == 0:
            print(f"MLP block, tokens {args.tokens}, hidden {args.hidden}, ffn {args.ffn}, bfloat16, "
                  f"{dist.get_world_size()} ranks on {device.type}"
                  f"{'' if on_gpu else ' (no CUDA GPU: gloo, tilegemm numpy interpreter, tiny sizes)'}")
            print(f"  by hand vs one device: relative error {relative_error(ys['by hand'], ys['one device']):.2e}")
            print(f"  DTensor vs by hand:    relative error {dtensor_error:.2e}")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
