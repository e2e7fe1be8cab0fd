"""The tensor-parallel MLP block on one GPU and on several (strong scaling), its matmuls tilegemm's or torch.mm's.

    torchrun --nproc-per-node 2 benchmarks/bench_tensor_parallel.py --out out [--tokens 8192 --hidden 8192
        --ffn 28672] [--rounds 21 --iters 10]

The block of examples/tensor_parallel_mlp.py, y = gelu(x @ up.T) @ down.T in
bfloat16, its weights stored as torch.nn.Linear stores them ([out, in], read as
stored by both products), on the same weights and inputs with each operator:

- one GPU: the whole block on rank 0 while the other ranks wait;
- all GPUs, by hand: each rank's products on its shards, then one NCCL all-reduce;
- all GPUs, DTensor: the same split made by parallelize_module (the sharding rules
  of tilegemm.torch.distributed for tilegemm's operator);
- its parts on all GPUs: each rank's products alone, and the all-reduce of y alone.

Timing: after a barrier, each rank runs `--iters` blocks between CUDA events; a
multi-GPU figure is the slowest rank's. Contenders go in a random order each
round (the same on every rank); the medians of rounds are reported. Rank 0 checks
y first: all GPUs against one, tilegemm against torch.mm. Writes
OUT/tensor-parallel-<date>.json; its summary holds tp<N>_speedup (N GPUs over one,
with tilegemm) and tp<N>_vs_torch (the tilegemm block over the torch.mm block on N
GPUs, by hand).
"""
import argparse
import datetime
import json
import os
import random
import statistics
import sys
from dataclasses import dataclass
from typing import Callable

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402

import tilegemm.torch as tgt  # noqa: E402
from tilegemm.showcase import load_example  # noqa: E402

example = load_example(os.path.join(ROOT, "examples", "tensor_parallel_mlp.py"))

OPS = {"tilegemm": tgt.matmul, "torch.mm": torch.mm}
ONE_GPU, BY_HAND, DTENSOR, PRODUCTS, ALL_REDUCE = "one GPU", "by hand", "DTensor", "products alone", "all-reduce alone"


def name(program, op=None):
    """A contender's name: its program, and its operator if it has one."""
    return f"{program}, {op}" if op else program


@dataclass
class Contender:
    """One timed program: `run()` once, on `gpus` ranks (one: rank 0 alone), with operator `op` (None: the
    all-reduce alone, which has none)."""
    program: str
    op: str
    gpus: int
    run: Callable

    @property
    def name(self):
        return name(self.program, self.op)


def contenders(tokens, hidden, ffn, device, mesh):
    """Every Contender, on the same x and weights (each rank draws them from the same seeds)."""
    rank, world = dist.get_rank(), dist.get_world_size()
    x = torch.randn(tokens, hidden, generator=torch.Generator(device).manual_seed(1), device=device).to(torch.bfloat16)
    whole = example.MLP(hidden, ffn, device=device)
    up, down = whole.up.weight.detach(), whole.down.weight.detach()
    up_shard, down_shard = example.megatron_shards(up, down, rank, world)
    y = torch.empty(tokens, hidden, dtype=torch.bfloat16, device=device)
    found = [Contender(ALL_REDUCE, None, world, lambda: dist.all_reduce(y))]
    for op, matmul in OPS.items():
        sharded = example.parallelize(example.MLP(hidden, ffn, device=device, matmul=matmul), mesh)
        found += [
            Contender(ONE_GPU, op, 1, lambda m=matmul: example.partial_block(x, up, down, m)),
            Contender(BY_HAND, op, world, lambda m=matmul: example.megatron_block(x, up_shard, down_shard, m)),
            Contender(DTENSOR, op, world, lambda s=sharded: waited(s(x))),
            Contender(PRODUCTS, op, world, lambda m=matmul: example.partial_block(x, up_shard, down_shard, m)),
        ]
    return found


def waited(y):
    """y once the collective that makes it is ordered before later work on the current stream (DTensor returns
    the all-reduce's result before waiting for it)."""
    return y.wait() if hasattr(y, "wait") else y


def time_ms(contender, iters, device):
    """ms per run of `contender` (iters runs between CUDA events, after a barrier): the slowest rank's, on every
    rank."""
    torch.cuda.synchronize()
    dist.barrier()
    ms = 0.0
    if contender.gpus > 1 or dist.get_rank() == 0:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(iters):
            contender.run()
        end.record()
        end.synchronize()
        ms = start.elapsed_time(end) / iters
    slowest = torch.tensor([ms], device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return slowest.item()


def checks(outputs, world):
    """Relative Frobenius errors between the y's of rank 0's first runs (contender name -> y)."""
    def error(program, op, reference_program, reference_op):
        y, ref = outputs[name(program, op)].double(), outputs[name(reference_program, reference_op)].double()
        return float(torch.linalg.norm(y - ref) / torch.linalg.norm(ref))
    return {f"{world} GPUs vs one, tilegemm": error(BY_HAND, "tilegemm", ONE_GPU, "tilegemm"),
            f"{world} GPUs vs one, torch.mm": error(BY_HAND, "torch.mm", ONE_GPU, "torch.mm"),
            "tilegemm vs torch.mm, one GPU": error(ONE_GPU, "tilegemm", ONE_GPU, "torch.mm"),
            "DTensor vs by hand, tilegemm": error(DTENSOR, "tilegemm", BY_HAND, "tilegemm")}


def rows_of(found, samples, flops):
    """A row per contender of `found` from its samples (contender name -> ms per run, one a round): the median,
    TFLOP/s per GPU (the block's `flops` over its GPUs) and the spread of the rounds."""
    rows = []
    for c in found:
        ms = statistics.median(samples[c.name])
        rows.append(dict(contender=c.name, program=c.program, op=c.op, gpus=c.gpus, ms=ms,
                         tflops_per_gpu=None if c.op is None else flops / c.gpus / ms / 1e9,
                         spread_pct=100 * (max(samples[c.name]) - min(samples[c.name])) / ms))
    return rows


def summary(ms, world):
    """The figures of the medians `ms` (contender name -> ms): strong scaling, tilegemm over torch.mm, and the
    all-reduce's share of the block on `world` GPUs (alone, and as the block's time beyond its products)."""
    def t(program, op=None):
        return ms[name(program, op)]
    block = t(BY_HAND, "tilegemm")
    return {f"tp{world}_speedup": t(ONE_GPU, "tilegemm") / block,
            f"tp{world}_vs_torch": t(BY_HAND, "torch.mm") / block,
            f"tp{world}_speedup_torch_mm": t(ONE_GPU, "torch.mm") / t(BY_HAND, "torch.mm"),
            "one_gpu_vs_torch": t(ONE_GPU, "torch.mm") / t(ONE_GPU, "tilegemm"),
            f"tp{world}_dtensor_vs_torch": t(DTENSOR, "torch.mm") / t(DTENSOR, "tilegemm"),
            "dtensor_over_by_hand": t(DTENSOR, "tilegemm") / block,
            "all_reduce_share": t(ALL_REDUCE) / block,
            "exposed_communication_share": (block - t(PRODUCTS, "tilegemm")) / block}


def table(rows, figures, world):
    """The rows and figures as the lines the benchmark prints."""
    lines = [f"{'contender':34s} {'GPUs':>4s} {'ms':>9s} {'TFLOP/s/GPU':>12s} {'spread':>7s}"]
    for r in rows:
        rate = f"{r['tflops_per_gpu']:12.1f}" if r["tflops_per_gpu"] is not None else f"{'':12s}"
        lines.append(f"{r['contender']:34s} {r['gpus']:4d} {r['ms']:9.3f} {rate} {r['spread_pct']:6.1f}%")
    lines += ["",
              f"{world} GPUs over one (strong scaling): tilegemm {figures[f'tp{world}_speedup']:.3f}x, torch.mm "
              f"{figures[f'tp{world}_speedup_torch_mm']:.3f}x",
              f"tilegemm block over torch.mm block: one GPU {figures['one_gpu_vs_torch']:.3f}x, {world} GPUs by hand "
              f"{figures[f'tp{world}_vs_torch']:.3f}x, DTensor {figures[f'tp{world}_dtensor_vs_torch']:.3f}x",
              f"all-reduce on {world} GPUs (tilegemm block): alone {100 * figures['all_reduce_share']:.1f}% of the "
              f"block; block minus the products alone {100 * figures['exposed_communication_share']:.1f}%"]
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=8192)
    p.add_argument("--hidden", type=int, default=8192)
    p.add_argument("--ffn", type=int, default=28672)
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--out", default="out")
    args = p.parse_args()
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0)))
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", device_id=device)
    try:
        run(args, device)
    finally:
        dist.destroy_process_group()


def run(args, device):
    """Checks and times every contender on this rank's process group; rank 0 prints the table and writes the JSON."""
    rank, world = dist.get_rank(), dist.get_world_size()
    meta = dict(date=datetime.datetime.now().isoformat(timespec="seconds"), device=torch.cuda.get_device_name(),
                gpus=world, torch=torch.__version__, cuda=torch.version.cuda, nccl=str(torch.cuda.nccl.version()),
                tokens=args.tokens, hidden=args.hidden, ffn=args.ffn, dtype="bfloat16", rounds=args.rounds,
                iters=args.iters, inputs="iid normal",
                timing="iters runs between CUDA events after a barrier, the slowest rank's; contenders in a random "
                       "order per round; medians of rounds")
    with torch.no_grad():
        found = contenders(args.tokens, args.hidden, args.ffn, device, init_device_mesh("cuda", (world,)))
        outputs = {}
        for c in found:   # the first run of each: compiles tilegemm's kernels, and gives the y's to check
            if c.gpus > 1 or rank == 0:
                outputs[c.name] = waited(c.run())
        torch.cuda.synchronize()
        checked = checks(outputs, world) if rank == 0 else None
        samples = {c.name: [] for c in found}
        order = random.Random(0)   # the same order on every rank: their collectives must match
        for _ in range(args.rounds):
            for c in order.sample(found, len(found)):
                samples[c.name].append(time_ms(c, args.iters, device))
    if rank != 0:
        return
    rows = rows_of(found, samples, flops=4.0 * args.tokens * args.hidden * args.ffn)   # the block's two products
    figures = summary({r["contender"]: r["ms"] for r in rows}, world)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"tensor-parallel-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}.json")
    with open(path, "w") as f:
        json.dump(dict(meta=meta, rows=rows, summary=figures, checks=checked), f, indent=1)
    print(f"MLP block: tokens {args.tokens}, hidden {args.hidden}, ffn {args.ffn}, bfloat16, {meta['device']} x "
          f"{world}, {args.rounds} rounds of {args.iters} runs")
    print("\n".join(table(rows, figures, world)))
    print("checks (relative Frobenius error): " + ", ".join(f"{k} {v:.2e}" for k, v in checked.items()))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
