"""What a back end hands to the compile driver: CuTe DSL source for one graph."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Param:
    """One kernel argument in call order: a GMEM array of static shape and dtype."""
    name: str
    shape: tuple
    dtype: object   # numpy dtype (ml_dtypes.bfloat16 for bf16)
    is_output: bool


@dataclass(frozen=True)
class LaunchDims:
    """The CUDA launch of a generated kernel: blocks, threads per block, cluster, dynamic shared memory."""
    grid: tuple
    block: tuple
    cluster: tuple = (1, 1, 1)
    smem_bytes: int = 0
    dependent: bool = False   # programmatic dependent launch (tg.kernel's dependent_launch)

    def describe(self):
        text = f"grid {self.grid} x block {self.block}"
        if self.cluster != (1, 1, 1):
            text += f", clusters of {self.cluster}"
        text += f", {self.smem_bytes} bytes of shared memory"
        return text + (", programmatic dependent launch" if self.dependent else "")


@dataclass(frozen=True)
class GeneratedKernel:
    """A Python module text defining one `@cute.jit` host function and its `@cute.kernel`.

    The host function `entry` takes one `cute.Pointer` per Param (in order), one
    `cute.Pointer` to the hang report when `hang_waits` is not None, one
    `cutlass.Int32` per entry of `constants` (name, value: always passed that
    value) and a `cuda.bindings.driver.CUstream`; shapes are static (baked into the
    source), except that a GMEM extent of 1 is read from the constant `one`: CuTe
    drops static extent-1 modes from TMA descriptors, which then no longer match
    their shared-memory tiles.
    `features` names the hardware paths used (e.g. "tma", "wgmma", "simt",
    "multicast", "setmaxnreg"), for tests and reports.
    """
    source: str
    entry: str
    params: tuple
    arch: str
    backend: str
    features: tuple = ()
    launch: LaunchDims = None
    constants: tuple = ()
    hang_waits: tuple = None   # compiled with bounded barrier waits: what wait code i + 1 waits for
