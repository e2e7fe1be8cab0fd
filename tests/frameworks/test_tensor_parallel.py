"""tilegemm.torch in tensor-parallel programs: the Megatron MLP block of examples/tensor_parallel_mlp.py on two ranks
(torch.distributed; gloo on the CPU through the numpy interpreter, NCCL on two GPUs), by hand and as a DTensor
program, against the block on one device; and each sharding rule tilegemm.torch.distributed gives DTensor."""
import os

import pytest

pytest.importorskip("torch.distributed.tensor")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard  # noqa: E402
from torch.distributed.tensor.debug import CommDebugMode  # noqa: E402

import tilegemm.testing as tt  # noqa: E402
import tilegemm.torch as tgt  # noqa: E402
import tilegemm.torch.distributed as tgd  # noqa: E402
from tilegemm.runtime import device_count  # noqa: E402
from tilegemm.showcase import load_example  # noqa: E402
from tilegemm.torch.host import numpy_dtype  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "tensor_parallel_mlp.py")
RANKS = 2
SIZES = {"cpu": (16, 32, 64), "cuda": (256, 512, 2048)}   # (tokens, hidden, ffn) per device type
DTYPE = torch.bfloat16
# Splitting the block changes only where y's partial sums are rounded (each rank's, then their sum): a few roundings
# of y's size, a relative error of about one unit roundoff; a wrong split is off by the size of y.
CLOSE = 3 * tt.unit_roundoff(numpy_dtype(DTYPE))


@pytest.fixture(scope="module", params=["cpu", pytest.param("cuda", marks=[
    pytest.mark.gpu, pytest.mark.skipif(device_count() < RANKS, reason="needs two CUDA GPUs")])])
def ranks(request, tmp_path_factory):
    """What each of two ranks computed (spawned processes, one a device): a list of dicts of CPU tensors."""
    out = tmp_path_factory.mktemp(f"ranks-{request.param}")
    mp.spawn(_rank, args=(request.param, str(out)), nprocs=RANKS)
    return [torch.load(out / f"rank{rank}.pt") for rank in range(RANKS)]


def _rank(rank, device_type, out):
    """Rank `rank` of two: the example's block by hand and as a DTensor program, a DTensor training step (its
    collectives and gradients) and, on rank 0, the same on its device alone; saved to out/rank<rank>.pt."""
    example = load_example(EXAMPLE)
    on_gpu = device_type == "cuda"
    device = torch.device("cuda", rank) if on_gpu else torch.device("cpu")
    if on_gpu:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if on_gpu else "gloo", init_method=f"file://{out}/rendezvous", rank=rank,
                            world_size=RANKS, device_id=device if on_gpu else None)
    try:
        mesh = init_device_mesh(device_type, (RANKS,))
        tokens, hidden, ffn = SIZES[device_type]
        saved = example.run(tokens, hidden, ffn, device, mesh, dtype=DTYPE)
        x = torch.randn(tokens, hidden, generator=torch.Generator(device).manual_seed(2), device=device).to(DTYPE)
        model = example.parallelize(example.MLP(hidden, ffn, dtype=DTYPE, device=device), mesh)
        saved["forward collectives"], grads = _training_step(model, x)
        saved["grads"] = {name: g.full_tensor() if isinstance(g, DTensor) else g for name, g in grads.items()}
        if rank == 0:
            saved["one device grads"] = _training_step(example.MLP(hidden, ffn, dtype=DTYPE, device=device), x)[1]
        torch.save({k: _on_cpu(v) for k, v in saved.items()}, os.path.join(out, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def _training_step(model, x):
    """The collectives of y = model(x) (name -> count), and the gradients of sum(y^2) for x and the weights."""
    x = x.detach().requires_grad_()
    with CommDebugMode() as forward:
        y = model(x)
    y.float().square().sum().backward()
    return ({str(op): count for op, count in forward.get_comm_counts().items()},
            {"x": x.grad, "up": model.up.weight.grad, "down": model.down.weight.grad})


def _on_cpu(value):
    if isinstance(value, dict):
        return {k: _on_cpu(v) for k, v in value.items()}
    return value.detach().cpu().clone() if isinstance(value, torch.Tensor) else value


def relative_error(y, reference):
    return float(torch.linalg.norm(y.double() - reference.double()) / torch.linalg.norm(reference.double()))


def test_the_block_split_over_two_ranks_by_hand_matches_the_block_on_one_device(ranks):
    for rank in ranks:
        assert relative_error(rank["by hand"], ranks[0]["one device"]) <= CLOSE
    assert torch.equal(ranks[0]["by hand"], ranks[1]["by hand"])   # the all-reduce gives every rank the same y


def test_a_dtensor_program_computes_exactly_what_the_block_by_hand_does(ranks):
    for rank in ranks:
        assert torch.equal(rank["DTensor"], rank["by hand"])


def test_the_dtensor_forward_multiplies_shards_with_one_all_reduce_and_gathers_nothing(ranks):
    for rank in ranks:
        assert rank["forward collectives"] == {"c10d_functional.all_reduce": 1}


def test_dtensor_gradients_match_the_block_on_one_device(ranks):
    for rank in ranks:
        for name, grad in rank["grads"].items():
            assert relative_error(grad, ranks[0]["one device grads"][name]) <= CLOSE, name


def _shards(x, placement):
    """The local tensors of `x` on each rank when it is placed as `placement` (Replicate or Shard)."""
    if isinstance(placement, Replicate):
        return [x] * RANKS
    assert isinstance(placement, Shard), placement
    return [s.contiguous() for s in x.chunk(RANKS, dim=placement.dim)]


def _assembled(ys, placement):
    """The whole tensor the ranks' local `ys` make when placed as `placement`."""
    if isinstance(placement, Partial):
        return sum(ys[1:], ys[0])
    if isinstance(placement, Shard):
        return torch.cat(ys, dim=placement.dim)
    assert all(torch.equal(y, ys[0]) for y in ys)
    return ys[0]


def test_each_sharding_rule_gives_the_product_from_the_operands_shards():
    generator = torch.Generator().manual_seed(0)
    # small integers: every product and sum is exact in bfloat16, so a rule is right exactly when c matches
    a, b = (torch.randint(-2, 3, shape, generator=generator).to(DTYPE) for shape in ((16, 32), (32, 16)))
    rules = tgd.matmul_shardings(a, b)
    for split in (([Shard(0)], [Shard(0), Replicate()]), ([Shard(1)], [Replicate(), Shard(1)]),
                  ([Partial()], [Shard(1), Shard(0)])):   # by rows, by columns, along the contraction
        assert split in rules
    for [c], [pa, pb] in rules:
        local = [tgt.matmul(sa, sb) for sa, sb in zip(_shards(a, pa), _shards(b, pb))]
        assert torch.equal(_assembled(local, c), tgt.matmul(a, b)), (c, pa, pb)
