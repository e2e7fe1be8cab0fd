"""On the H200: a deadlocked kernel run with a barrier timeout ends with a tg.HangError naming the barrier and
the user's line, instead of freezing the process (it runs in a subprocess: the trap ends its CUDA context)."""
import os
import subprocess
import sys
import textwrap

import pytest

from tilegemm.runtime import device_count

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]

STUCK = textwrap.dedent('''
    import numpy as np
    import tilegemm as tg

    tile = tg.mma_transforms(64, tg.float16)

    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float32),
               scratch_shapes=[tg.SMEM((64, 64), tg.float16, transforms=tile),
                               tg.SMEM((64, 64), tg.float16, transforms=tile), tg.ACC((64, 64)),
                               tg.Barrier(num_arrivals=2)])
    def stuck(a, b, c, a_smem, b_smem, acc, loaded):
        tg.copy_gmem_to_smem(a, a_smem, loaded)
        tg.copy_gmem_to_smem(b, b_smem, loaded)
        tg.barrier_wait(loaded)
        tg.barrier_wait(loaded)   # a second phase that no copy completes
        tg.wgmma(acc, a_smem, b_smem)
        tg.wgmma_wait(0)
        c[...] = acc[...]

    x = np.ones((64, 64), np.float16)
    try:
        stuck(x, x, interpret=True)
    except tg.DeadlockError as e:
        print("INTERPRETER:", type(e).__name__)
    try:
        stuck(x, x, debug=tg.Debug(barrier_timeout=0.5))
    except tg.HangError as e:
        print("GPU:", e)
''')


def test_a_deadlocked_kernel_ends_with_a_hang_error_naming_the_barrier_and_line(tmp_path):
    script = tmp_path / "stuck.py"
    script.write_text(STUCK)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert "INTERPRETER: DeadlockError" in done.stdout, done.stdout + done.stderr
    gpu = [line for line in done.stdout.splitlines() if line.startswith("GPU:")]
    assert gpu, done.stdout + done.stderr
    assert "a barrier wait gave up after 0.5 s: barrier loaded[0] waited for at" in gpu[0]
    assert f"{script.name}:15: tg.barrier_wait(loaded)   # a second phase" in gpu[0]
    assert "restart the process" in gpu[0]
