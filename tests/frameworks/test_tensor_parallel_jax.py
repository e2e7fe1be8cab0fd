"""tilegemm.jax under jax.shard_map: the Megatron MLP block of examples/tensor_parallel_mlp_jax.py on two devices (two
CPU devices through the numpy interpreter; two GPUs) against the block on one, its custom calls on each device's
shards and one all-reduce between them. Each case runs in a child process (this file, run as a script): jax fixes its
CPU device count when its backend starts."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("jax")
import jax  # noqa: E402
import ml_dtypes  # noqa: E402
from jax.sharding import Mesh  # noqa: E402

import tilegemm.testing as tt  # noqa: E402
from tilegemm.runtime import device_count  # noqa: E402
from tilegemm.showcase import load_example  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                       "tensor_parallel_mlp_jax.py")
SIZES = {"cpu": (16, 32, 64), "gpu": (256, 512, 2048)}   # (tokens, hidden, ffn) per platform
# As in test_tensor_parallel.py: splitting the block moves only the roundings of y's partial sums.
CLOSE = 3 * tt.unit_roundoff(ml_dtypes.bfloat16)
# The environment of the child process keeps NVLink multicast off (NCCL, PyTorch, NVSHMEM).
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
# a collective's opcode, where it is called (XLA's GPU back end splits one into a -start and a -done)
COLLECTIVE = re.compile(r"\b(all-reduce|all-gather|all-to-all|collective-permute|reduce-scatter)(?:-start)?\(")


@pytest.fixture(scope="module", params=["cpu", pytest.param("gpu", marks=[
    pytest.mark.gpu, pytest.mark.skipif(device_count() < 2, reason="needs two CUDA GPUs")])])
def two_devices(request, tmp_path_factory):
    """(y on two devices, y on one, the compiled two-device program's HLO text, (tokens, hidden, ffn)) from a
    child process."""
    out = tmp_path_factory.mktemp(f"two-{request.param}")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), XLA_PYTHON_CLIENT_PREALLOCATE="false",
               **MULTICAST_OFF)
    if request.param == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    child = subprocess.run([sys.executable, os.path.abspath(__file__), request.param, str(out)], env=env,
                           capture_output=True, text=True, timeout=600)
    assert child.returncode == 0, child.stdout + child.stderr
    ys = np.load(out / "ys.npz")
    return ys["two"], ys["one"], (out / "program.txt").read_text(), SIZES[request.param]


def _run(platform, out):
    """The child process: the example's block on two devices of `platform` and on the first alone; writes both y's
    (out/ys.npz) and the compiled two-device program (out/program.txt)."""
    example = load_example(EXAMPLE)
    devices = example.two_devices()
    assert [d.platform for d in devices] == [platform] * 2, devices
    mesh = Mesh(np.array(devices), (example.AXIS,))
    arrays = example.inputs(*SIZES[platform])
    program, placed = example.tensor_parallel_mlp(mesh), example.shard(mesh, *arrays)
    two = program(*placed)
    one = jax.jit(example.mlp)(*jax.device_put(arrays, devices[0]))
    np.savez(os.path.join(out, "ys.npz"), two=np.asarray(two, np.float32), one=np.asarray(one, np.float32))
    with open(os.path.join(out, "program.txt"), "w") as f:
        f.write(program.lower(*placed).compile().as_text())


def relative_error(y, reference):
    return float(np.linalg.norm(y.astype(np.float64) - reference) / np.linalg.norm(reference.astype(np.float64)))


def test_the_block_under_shard_map_on_two_devices_matches_the_block_on_one(two_devices):
    two, one, *_ = two_devices
    assert relative_error(two, one) <= CLOSE


def test_each_device_multiplies_its_own_shards_and_one_all_reduce_adds_their_sums(two_devices):
    *_, program, (tokens, hidden, ffn) = two_devices
    calls = [line for line in program.splitlines() if 'custom_call_target="tilegemm_call"' in line]
    # each line: the call's result shape, then its operands' (operand_layout_constraints)
    shapes = sorted(tuple(tuple(map(int, s.split(","))) for s in re.findall(r"bf16\[([\d,]+)\]", line)[:3])
                    for line in calls)
    half = ffn // 2
    assert shapes == sorted([((tokens, half), (tokens, hidden), (hidden, half)),
                             ((tokens, hidden), (tokens, half), (half, hidden))])
    assert COLLECTIVE.findall(program) == ["all-reduce"]


if __name__ == "__main__":
    _run(*sys.argv[1:])
