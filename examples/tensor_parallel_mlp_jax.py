"""The tensor-parallel MLP block of examples/tensor_parallel_mlp.py in JAX: jax.shard_map over two devices, the
matmuls tilegemm's XLA custom calls.

The block is y = gelu(x @ w_up) @ w_down, weights stored [in, out] as JAX
programs store them, split the Megatron way over the mesh axis "model": w_up by
its columns, w_down by its rows (the same ffn features). Under jax.shard_map each
device multiplies the whole x by its shards with tilegemm.jax.matmul (the custom
call runs on that device's buffers, on XLA's stream for it) and one psum, an
all-reduce (NCCL between GPUs), adds the devices' partial sums.

    python examples/tensor_parallel_mlp_jax.py
    python examples/tensor_parallel_mlp_jax.py --tokens 8192 --hidden 8192 --ffn 28672

Runs on the first two GPUs jax sees and compares y with the block on the first
alone. Without two GPUs it runs on two CPU devices (jax_num_cpu_devices) at tiny
sizes, through tilegemm's numpy interpreter.
"""
import argparse

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

import tilegemm.jax as tgj

AXIS = "model"
SPECS = (P(), P(None, AXIS), P(AXIS, None))   # x whole on every device; w_up by columns, w_down by rows


def mlp(x, w_up, w_down):
    """The block on whole (or on one device's) arrays: gelu(x @ w_up) @ w_down, both products tilegemm's."""
    return tgj.matmul(jax.nn.gelu(tgj.matmul(x, w_up)), w_down)


def tensor_parallel_mlp(mesh):
    """The block split over `mesh`'s axis AXIS, jitted: takes x, w_up, w_down placed by `shard` and returns y,
    whole on every device. Each device runs `mlp` on its shards; psum adds the partial sums."""
    def local(x, w_up, w_down):
        return jax.lax.psum(mlp(x, w_up, w_down), AXIS)
    return jax.jit(jax.shard_map(local, mesh=mesh, in_specs=SPECS, out_specs=P()))


def shard(mesh, x, w_up, w_down):
    """x, w_up and w_down placed on `mesh`'s devices as tensor_parallel_mlp takes them."""
    return tuple(jax.device_put(a, NamedSharding(mesh, spec)) for a, spec in zip((x, w_up, w_down), SPECS))


def inputs(tokens, hidden, ffn, dtype=jnp.bfloat16, seed=0):
    """x [tokens, hidden], w_up [hidden, ffn] and w_down [ffn, hidden] as numpy arrays, iid normal, the weights
    scaled by 1/sqrt(fan-in)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((tokens, hidden), np.float32)
    w_up = rng.standard_normal((hidden, ffn), np.float32) * hidden ** -0.5
    w_down = rng.standard_normal((ffn, hidden), np.float32) * ffn ** -0.5
    return tuple(a.astype(dtype) for a in (x, w_up, w_down))


def two_devices():
    """The first two GPUs jax sees, else two CPU devices (this must run before jax starts its CPU backend)."""
    jax.config.update("jax_num_cpu_devices", 2)
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    return gpus[:2] if len(gpus) >= 2 else jax.devices("cpu")[:2]


def relative_error(y, reference):
    """||y - reference||_F / ||reference||_F, in float64."""
    y, reference = np.asarray(y, np.float64), np.asarray(reference, np.float64)
    return float(np.linalg.norm(y - reference) / np.linalg.norm(reference))


def main():
    devices = two_devices()
    on_gpu = devices[0].platform == "gpu"
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", type=int, default=4096 if on_gpu else 16)
    p.add_argument("--hidden", type=int, default=4096 if on_gpu else 32)
    p.add_argument("--ffn", type=int, default=14336 if on_gpu else 64)
    args = p.parse_args()
    mesh = Mesh(np.array(devices), (AXIS,))
    arrays = inputs(args.tokens, args.hidden, args.ffn)
    y_two = tensor_parallel_mlp(mesh)(*shard(mesh, *arrays))
    y_one = jax.jit(mlp)(*jax.device_put(arrays, devices[0]))
    print(f"MLP block, tokens {args.tokens}, hidden {args.hidden}, ffn {args.ffn}, bfloat16, on {devices}"
          f"{'' if on_gpu else ' (no two GPUs: tilegemm numpy interpreter, tiny sizes)'}")
    print(f"  two devices vs one: relative error {relative_error(y_two, y_one):.2e}")


if __name__ == "__main__":
    main()
