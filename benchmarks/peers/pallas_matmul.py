"""JAX Pallas Mosaic GPU's Hopper matmul (jax.experimental.pallas.ops.gpu) as a benchmark peer.

JAX runs on its own stream and its calls cannot join a torch CUDA graph, so
`launch` blocks until the result is ready: its time includes dispatch (tens of
microseconds, small against millisecond-scale shapes). None when JAX's Mosaic
GPU matmul is not importable or rejects the shape.
"""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def contender(a, b):
    try:
        import jax
        import jax.dlpack
        from jax.experimental.pallas.ops.gpu import hopper_matmul_mgpu as hm
    except Exception:
        return None
    import torch
    ja, jb = jax.dlpack.from_dlpack(a), jax.dlpack.from_dlpack(b)
    config = hm.TuningConfig(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=4,
                             grid_minor_dim=hm.MatmulDimension.N, grid_tile_width=4,
                             wg_dimension=hm.MatmulDimension.N)
    fn = jax.jit(lambda x, y: hm.matmul(x, y, None, config))
    try:
        out = fn(ja, jb).block_until_ready()
    except Exception:
        return None
    holder = {"out": out}

    def launch():
        holder["out"] = fn(ja, jb).block_until_ready()
    launch.capturable = False  # JAX work cannot join a torch CUDA graph

    class Out:
        """Reads the latest result back as a torch tensor for the error check."""
        def double(self):
            return torch.from_dlpack(holder["out"]).double()

    return launch, Out()
