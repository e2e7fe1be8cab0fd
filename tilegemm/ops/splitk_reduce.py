"""The second pass of split-K: c[m, n] = the sum of a workspace's K-slice partials, in a fixed order.

`hopper_matmul.build(..., split_k=S)` writes slice s's f32 partial product into rows
[s * rows, s * rows + m) of a workspace [S * rows, n]. One warpgroup per 64 x tile_n
tile of c reads the S partials in slice order into a WGMMA-layout accumulator, adds
them left to right and stores c in its dtype: every element is summed in the same
order whatever order the GEMM's blocks ran in (deterministic, batch-invariant).
"""
from .. import lang as tg
from ..kernel import kernel
from ..runtime import readers
from .hopper_matmul import MMA_ROWS

# Columns of c per block. The pass is memory-bound and c is small (split-K serves decode-sized problems), so what
# counts is blocks in flight: 64 x 16 tiles summed a 128 x 4096 c from two slices in 3.4 us where 64 x 128 tiles
# (64 blocks) took 7.0 us, and 5 slices of 40 x 1024 in 2.1 us against 8.9 (benchmarks/RESULTS.md, run 48).
TILE_N = 16


def build(split_k, m, n, slice_rows, dtype=tg.float16, tile_n=TILE_N):
    """c [m, n] of `dtype` = sum over s < split_k of workspace[s * slice_rows:s * slice_rows + m, :] (f32)."""
    if slice_rows < m or slice_rows % MMA_ROWS:
        raise ValueError(f"slice_rows={slice_rows} must hold M={m} rows and be a multiple of {MMA_ROWS}, the "
                         "rows one block reduces (hopper_matmul.workspace_rows)")

    @kernel(in_specs=[tg.ShapeDtype((split_k * slice_rows, n), tg.float32)],
            out_shape=tg.ShapeDtype((m, n), dtype), grid=(tg.cdiv(m, MMA_ROWS), tg.cdiv(n, tile_n)),
            grid_names=("m", "n"), scratch_shapes=[tg.ACC((MMA_ROWS, tile_n), tg.float32)], name="splitk_reduce")
    def reduce(workspace, c, acc):
        row0 = tg.axis_index("m") * MMA_ROWS
        cols = tg.ds(tg.axis_index("n") * tile_n, tile_n)
        acc[...] = workspace.at[tg.ds(row0, MMA_ROWS), cols][...]
        for s in range(1, split_k):          # static: the order of the sum is fixed at trace time
            acc[...] = acc[...] + workspace.at[tg.ds(s * slice_rows + row0, MMA_ROWS), cols][...]
        c.at[tg.ds(row0, MMA_ROWS), cols][...] = acc[...].astype(dtype)

    return reduce


class SplitK:
    """A split-K design as one call: the GEMM writes its partials into a fresh workspace, `reduce` sums them into
    c (`out=` if given). Calls like a tg.Kernel, as far as tg.matmul uses one: __call__, prepared, trace_check."""

    def __init__(self, gemm, reduce, specs):
        self.gemm, self.reduce, self.specs = gemm, reduce, specs
        self._workspace_signature = None   # of the workspace a device call allocated (same for every such call)

    def trace_check(self):
        """Traces both kernels (the verifier runs) for the operands they are built for."""
        self.reduce.trace(self._workspace_spec())

    def compile(self, arch="sm_90a"):
        """Compiles both kernels for the operands they are built for (into the compile cache)."""
        self.gemm.lower(*self.specs, arch=arch).compile()
        self.reduce.lower(self._workspace_spec(), arch=arch).compile()

    def _workspace_spec(self):
        (workspace,) = self.gemm.trace(*self.specs).outputs
        return tg.ShapeDtype(workspace.shape, workspace.dtype)

    def __call__(self, a, b, *, out=None, interpret=False, debug=None, seed=None):
        workspace = self.gemm(a, b, interpret=interpret, debug=debug, seed=seed)
        if not interpret:
            self._workspace_signature = readers.signature((workspace,))
        return self.reduce(workspace, out=out, interpret=interpret, debug=debug, seed=seed)

    def prepared(self, signature, barrier_timeout=None):
        """The two kernels' prepared launches chained, once a device call with this signature has run."""
        gemm = self.gemm.prepared(signature, barrier_timeout)
        reduce = self.reduce.prepared(self._workspace_signature, barrier_timeout)
        if gemm is None or reduce is None:
            return None

        def launch(arrays, outs, poison):
            return reduce(gemm(arrays, None, poison), outs, poison)
        return launch
