"""Generated kernels on a real Hopper GPU: every example matches numpy, and a cached kernel runs in a new process."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilegemm as tg
from tilegemm.runtime import device_count
from tilegemm.showcase import example_layouts, random_inputs, relative_error, stored_operands

from . import kernels
from .examples import HOPPER, example

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]

CASES = [(name, shape) for name in HOPPER
         for shape in example(name).SHAPES["interpret"] + example(name).SHAPES["verify"][:1]]


@pytest.mark.parametrize("name,shape", CASES, ids=[f"{n}-{'x'.join(map(str, s))}" for n, s in CASES])
def test_example_matches_numpy(name, shape):
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.float16)
    c = example(name).build(m, n, k)(*stored_operands(a, b, *example_layouts(example(name))))
    assert c.shape == (m, n) and c.dtype == np.float16
    assert relative_error(c, a, b) < 2e-3


@pytest.mark.parametrize("build", [kernels.multicast, kernels.warp_specialized], ids=["multicast", "core_map"])
@pytest.mark.parametrize("shape", [(256, 256, 192), (200, 264, 328)], ids=["256x256x192", "200x264x328"])
def test_cluster_and_core_map_kernels_match_numpy(build, shape):
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.float16)
    assert relative_error(build(m, n, k)(a, b), a, b) < 2e-3


@pytest.mark.parametrize("promotion", [64, 128, 256])
def test_loads_through_descriptors_asking_l2_to_promote_misses_match_numpy(promotion):
    a, b = random_inputs(64, 64, 128, tg.float16)
    assert relative_error(kernels.tma_wgmma(l2_promotion=promotion)(a, b), a, b) < 2e-3


@pytest.mark.parametrize("shape", [(256, 256, 192), (200, 264, 328)], ids=["256x256x192", "200x264x328"])
def test_multicast_loads_through_promoted_descriptors_match_numpy(shape):
    """Each block of the pair loads its slice of B's tile through a descriptor asking L2 for 256 bytes a miss and
    multicasts it: the descriptor's box must be the one each of its TMA instructions loads, or the barrier would
    receive more bytes than it expects."""
    m, n, k = shape
    a, b = random_inputs(m, n, k, tg.float16)
    assert relative_error(kernels.multicast(m, n, k, l2_promotion=256)(a, b), a, b) < 2e-3


def test_dependent_launches_chained_through_their_outputs_match_numpy():
    """A dependent-launch kernel run 16 times back to back, each call multiplying the last one's output: every block
    waits for the previous call (griddepcontrol.wait) before it reads, so every link matches numpy."""
    torch = pytest.importorskip("torch")
    n = 2 * kernels.TILE
    kernel = kernels.tma_wgmma(n=n, k=n, dependent_launch=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    b = (torch.randn(n, n, device="cuda", generator=g) / n ** 0.5).half()
    xs = [torch.randn(kernels.TILE, n, device="cuda", generator=g).half()]
    xs += [torch.full((kernels.TILE, n), float("nan"), device="cuda", dtype=torch.float16) for _ in range(16)]
    for x, y in zip(xs, xs[1:]):
        kernel(x, b, out=y)
    torch.cuda.synchronize()
    for x, y in zip(xs, xs[1:]):
        ref = x.double().cpu().numpy() @ b.double().cpu().numpy()
        np.testing.assert_allclose(y.double().cpu().numpy(), ref, rtol=2e-2, atol=2e-2)


SCRIPT = textwrap.dedent("""
    import sys, numpy as np, tilegemm as tg
    from tilegemm.showcase import load_example, random_inputs, relative_error
    module = load_example(sys.argv[1])
    m, n, k = 256, 512, 192
    kernel = module.build(m, n, k)
    compiled = kernel.lower(tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16)).compile()
    a, b = random_inputs(m, n, k, tg.float16)
    print(compiled.from_cache, relative_error(kernel(a, b), a, b))
""")


def test_second_process_launches_the_kernel_from_the_disk_cache(tmp_path):
    env = dict(os.environ, TILEGEMM_CACHE_DIR=str(tmp_path))
    path = os.path.join(os.path.dirname(example("hopper_v2_tma_wgmma").__file__), "hopper_v2_tma_wgmma.py")
    runs = [subprocess.run([sys.executable, "-c", SCRIPT, path], env=env, capture_output=True, text=True)
            for _ in range(2)]
    for run in runs:
        assert run.returncode == 0, run.stderr
    (first, err1), (second, err2) = (run.stdout.split()[-2:] for run in runs)
    assert (first, second) == ("None", "disk")
    assert float(err1) < 2e-3 and float(err2) < 2e-3
