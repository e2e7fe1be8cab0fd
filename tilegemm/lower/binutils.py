"""cuobjdump on a cubin: SASS text and per-kernel resource usage (registers, shared memory, spills)."""
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from ..errors import CompileError


def find_tool(name):
    """Path of a CUDA binary tool (`cuobjdump`, `nvdisasm`): PATH first, then NVIDIA's PyPI wheels."""
    found = shutil.which(name)
    if found:
        return found
    try:
        import nvidia
    except ImportError:
        return None
    for root in nvidia.__path__:
        for sub in sorted(os.listdir(root)):
            candidate = os.path.join(root, sub, "bin", name)
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def _cuobjdump(cubin, *flags):
    tool = find_tool("cuobjdump")
    if tool is None:
        raise CompileError("cuobjdump was not found: install the `nvidia-cuda-cuobjdump` wheel (and "
                           "`nvidia-cuda-nvdisasm` for SASS) or put the CUDA toolkit's bin/ on PATH")
    env = dict(os.environ)
    disasm = find_tool("nvdisasm")
    if disasm is not None:
        env["PATH"] = os.path.dirname(disasm) + os.pathsep + env.get("PATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "kernel.cubin")
        with open(path, "wb") as f:
            f.write(cubin)
        run = subprocess.run([tool, *flags, path], capture_output=True, text=True, env=env)
    if run.returncode != 0:
        raise CompileError(f"cuobjdump {' '.join(flags)} failed: {run.stderr.strip()}")
    return run.stdout


def sass(cubin):
    """The SASS of every kernel in `cubin` (needs nvdisasm, from the `nvidia-cuda-nvdisasm` wheel)."""
    if find_tool("nvdisasm") is None:
        raise CompileError("SASS needs nvdisasm: install the `nvidia-cuda-nvdisasm` wheel or put the CUDA "
                           "toolkit's bin/ on PATH")
    return _cuobjdump(cubin, "--dump-sass")


_GMMA = re.compile(r"\b[HQIB]GMMA\.[^;]*;")   # the SASS of WGMMA: f16/bf16/tf32, fp8, int8, binary


def serialized_wgmma(ptx, sass_text):
    """True when ptxas serialized the kernel's WGMMAs: more of their SASS instructions end a group (`gsb0`) than
    the PTX commits.

    A pipelined group of WGMMAs becomes HGMMAs (QGMMAs for fp8) of which only
    the last carries `gsb0` (the group's scoreboard); when ptxas cannot keep
    them in flight (advisory C7514, e.g. other instructions touch the
    accumulators between them) every one carries it and waits for the previous.
    """
    groups = ptx.count("wgmma.commit_group")
    ends = sum("gsb0" in gmma for gmma in _GMMA.findall(sass_text))
    return ends > groups


@dataclass(frozen=True)
class Resources:
    """What one kernel uses per thread and per block, as ptxas allocated it.

    `registers` per thread; `static_smem` bytes declared in the kernel (0 for
    tilegemm kernels, which use dynamic shared memory) and `dynamic_smem` the
    SharedStorage bytes requested at launch; `local_bytes` per thread of local
    memory (register spills and stack arrays), `stack_bytes` of call stack;
    `spills` is True when any local memory is used.
    """
    registers: int
    static_smem: int
    dynamic_smem: int
    local_bytes: int
    stack_bytes: int

    @property
    def shared_memory(self):
        return self.static_smem + self.dynamic_smem

    @property
    def spills(self):
        return self.local_bytes > 0


_USAGE = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


def resources(cubin, dynamic_smem):
    """Resources of the (single) kernel in `cubin`; `dynamic_smem` is what the launch requests."""
    text = _cuobjdump(cubin, "--dump-resource-usage")
    m = _USAGE.search(text)
    if m is None:
        raise CompileError(f"cuobjdump printed no resource usage for the kernel:\n{text}")
    reg, stack, shared, local = (int(x) for x in m.groups())
    return Resources(registers=reg, static_smem=shared, dynamic_smem=dynamic_smem, local_bytes=local,
                     stack_bytes=stack)
