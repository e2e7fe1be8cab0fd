"""The second passes of split-K and stream-K: C = the sum of a workspace's K-slice partials, in a fixed order.

`hopper_matmul.build(..., split_k=S)` writes slice s's f32 partial product into rows
[s * rows, s * rows + m) of a workspace [S * rows, n]. One warpgroup per 64 x tile_n
tile of c reads the S partials in slice order into a WGMMA-layout accumulator, adds
them left to right and stores c in its dtype: every element is summed in the same
order whatever order the GEMM's blocks ran in (deterministic, batch-invariant). A
fused epilogue (tilegemm.ops.epilogue: scales, a bias, an activation) runs here, on
the whole sum, so that a split design computes fn(a @ b) and not a sum of fn's.

`hopper_matmul.build(..., stream_k=S)` leaves the tiles of its last round to this
pass too: `build_tail` sums each such tile's S partials, in slice order, into C,
which it updates in place (input_output_aliases), the GEMM's other tiles untouched.
"""
from .. import lang as tg
from ..kernel import kernel
from ..lang import dtypes
from ..runtime import readers
from . import epilogue as fused_epilogue
from .hopper_matmul import MMA_ROWS
from .partials import sum_slices

# Columns of c per block. The pass is memory-bound and c is small (split-K serves decode-sized problems), so what
# counts is blocks in flight: 64 x 16 tiles summed a 128 x 4096 c from two slices in 3.4 us where 64 x 128 tiles
# (64 blocks) took 7.0 us, and 5 slices of 40 x 1024 in 2.1 us against 8.9 (benchmarks/RESULTS.md, run 48).
TILE_N = 16


def build(split_k, m, n, slice_rows, dtype=tg.float16, tile_n=TILE_N, fused=None):
    """c [m, n] of `dtype` = sum over s < split_k of workspace[s * slice_rows:s * slice_rows + m, :] (f32); with
    `fused` (a tilegemm.ops.epilogue.Fused), c = fused.fn(that sum, **tensors) in fused.out_dtype, the kernel
    taking the epilogue's tensors after the workspace."""
    if slice_rows < m or slice_rows % MMA_ROWS:
        raise ValueError(f"slice_rows={slice_rows} must hold M={m} rows and be a multiple of {MMA_ROWS}, the "
                         "rows one block reduces (hopper_matmul.workspace_rows)")
    out_dtype = dtype if fused is None else dtypes.as_dtype(fused.out_dtype)

    @kernel(in_specs=[tg.ShapeDtype((split_k * slice_rows, n), tg.float32)]
                     + list(fused.specs if fused is not None else ()),
            out_shape=tg.ShapeDtype((m, n), out_dtype), grid=(tg.cdiv(m, MMA_ROWS), tg.cdiv(n, tile_n)),
            grid_names=("m", "n"), scratch_shapes=[tg.ACC((MMA_ROWS, tile_n), tg.float32)], name="splitk_reduce")
    def reduce(workspace, *operands):
        *tensors, c, acc = operands   # the epilogue's tensors (if any), the output, the scratch accumulator
        row0 = tg.axis_index("m") * MMA_ROWS
        rows, cols = tg.ds(row0, MMA_ROWS), tg.ds(tg.axis_index("n") * tile_n, tile_n)
        sum_slices(acc, workspace, lambda s: tg.ds(s * slice_rows + row0, MMA_ROWS), cols, split_k)
        if fused is None:
            c.at[rows, cols][...] = acc[...].astype(out_dtype)
        else:
            c.at[rows, cols][...] = fused_epilogue.apply(
                fused, acc[...], fused_epilogue.read_tiles(fused, tensors, rows, cols, m, n))

    return reduce


def build_tail(tail, m, n, tile_m, tile_n, grid_blocks, dtype=tg.float16, grid_minor_dim=0, grid_tile_width=8,
               cols=TILE_N):
    """The stream-K tail's pass: for each of the `tail.tail` tiles after the GEMM's `tail.full_rounds` whole rounds of
    `grid_blocks` tiles (in its `tg.planar_snake` order), c's tile = the sum of its `tail.split` partials in the
    workspace (`hopper_matmul.StreamKTail`), in slice order. Takes (workspace, c) and updates c in place."""
    tiles = (tg.cdiv(m, tile_m), tg.cdiv(n, tile_n))
    parts = tile_m // MMA_ROWS          # 64-row blocks of a tile
    whole = tail.full_rounds * grid_blocks

    @kernel(in_specs=[tg.ShapeDtype(tail.workspace_shape(tile_m, tile_n), tg.float32), tg.ShapeDtype((m, n), dtype)],
            out_shape=tg.ShapeDtype((m, n), dtype), input_output_aliases={1: 0},
            grid=(tail.tail * parts, tile_n // cols), grid_names=("r", "n"),
            scratch_shapes=[tg.ACC((MMA_ROWS, cols), tg.float32)], name="streamk_reduce")
    def reduce(workspace, c_in, c, acc):
        index, part = tg.axis_index("r") // parts, tg.axis_index("r") % parts
        m_idx, n_idx = tg.planar_snake(whole + index, tiles, grid_minor_dim, grid_tile_width)
        col0 = tg.axis_index("n") * cols
        sum_slices(acc, workspace, lambda s: tg.ds((s * tail.tail + index) * tile_m + part * MMA_ROWS, MMA_ROWS),
                   tg.ds(col0, cols), tail.split)
        c.at[tg.ds(m_idx * tile_m + part * MMA_ROWS, MMA_ROWS), tg.ds(n_idx * tile_n + col0, cols)][...] = \
            acc[...].astype(dtype)

    return reduce


def _as_list(results):
    """A kernel call's outputs as a list (a single output comes back bare)."""
    return list(results) if isinstance(results, (tuple, list)) else [results]


class TwoPass:
    """A design of two kernels as one call, as far as tg.matmul uses a tg.Kernel (__call__, prepared, trace_check,
    compile): the GEMM, then the pass summing its partial products. Subclasses say how the two connect. The call's
    arrays are the GEMM's `gemm_inputs` first (all of `specs` by default), then any the reduce pass takes after
    the GEMM's outputs (a fused epilogue's tensors)."""

    def __init__(self, gemm, reduce, specs, gemm_inputs=None):
        self.gemm, self.reduce, self.specs = gemm, reduce, specs
        self.gemm_inputs = len(specs) if gemm_inputs is None else gemm_inputs
        self._reduce_signature = None   # of the reduce inputs a device call had (the same for every such call)

    def gemm_out(self, out):
        """The GEMM's out= for the call's `out`."""
        raise NotImplementedError

    def reduce_inputs(self, gemm_outputs):
        """The reduce pass's inputs, from the GEMM's outputs (a list)."""
        raise NotImplementedError

    def reduce_out(self, out):
        """The reduce pass's out= for the call's `out`."""
        raise NotImplementedError

    def trace_check(self):
        """Traces both kernels (the verifier runs) for the operands they are built for."""
        self.reduce.trace(*self._reduce_specs())

    def compile(self, arch="sm_90a"):
        """Compiles both kernels for the operands they are built for (into the compile cache)."""
        self.gemm.lower(*self.specs[:self.gemm_inputs], arch=arch).compile()
        self.reduce.lower(*self._reduce_specs(), arch=arch).compile()

    def _reduce_specs(self):
        outputs = self.gemm.trace(*self.specs[:self.gemm_inputs]).outputs
        return self.reduce_inputs([tg.ShapeDtype(x.shape, x.dtype) for x in outputs]) + \
            tuple(self.specs[self.gemm_inputs:])

    def __call__(self, *arrays, out=None, interpret=False, debug=None, seed=None):
        partials = _as_list(self.gemm(*arrays[:self.gemm_inputs], out=self.gemm_out(out), interpret=interpret,
                                      debug=debug, seed=seed))
        inputs = self.reduce_inputs(partials) + tuple(arrays[self.gemm_inputs:])
        if not interpret:
            self._reduce_signature = readers.signature(inputs)
        c = self.reduce(*inputs, out=self.reduce_out(out), interpret=interpret, debug=debug, seed=seed)
        if out is not None and c is not out:   # a host array updated "in place" comes back as a new one
            out[...] = c
            return out
        return c

    def prepared(self, signature, barrier_timeout=None):
        """The two kernels' prepared launches chained, once a device call with this signature has run."""
        gemm = self.gemm.prepared(None if signature is None else signature[:self.gemm_inputs], barrier_timeout)
        reduce = self.reduce.prepared(self._reduce_signature, barrier_timeout)
        if gemm is None or reduce is None:
            return None
        split = self.gemm_inputs

        def launch(arrays, outs, poison):
            partials = gemm(arrays[:split], self.gemm_out(None if outs is None else outs[0]), poison)
            reduce_out = self.reduce_out(None if outs is None else outs[0])
            return reduce(self.reduce_inputs(partials) + tuple(arrays[split:]),
                          None if reduce_out is None else [reduce_out], poison)
        return launch


class SplitK(TwoPass):
    """A split-K design: the GEMM writes its partials into a fresh workspace, `build`'s pass sums them into c
    (`out=` if given)."""

    def gemm_out(self, out):
        return None

    def reduce_inputs(self, gemm_outputs):
        return tuple(gemm_outputs)

    def reduce_out(self, out):
        return out


class StreamK(TwoPass):
    """A stream-K tail design: the GEMM writes c's whole tiles (into `out=` if given) and the tail's partials into a
    fresh workspace; `build_tail`'s pass sums those into c in place."""

    def gemm_out(self, out):
        return None if out is None else (out, None)

    def reduce_inputs(self, gemm_outputs):
        c, workspace = gemm_outputs
        return workspace, c

    def reduce_out(self, out):
        return None
