"""Block scales TMA cannot copy as given, padded so that it can: a pass before the block-scaled GEMM.

TMA copies rows that are whole 16-byte units, so the GEMM stages a scale array's
K steps in SMEM only where its rows, as stored, hold a multiple of
blockscaling.BOX float32 (`BlockScales.staged_slots`); torch's and DeepGEMM's
M-major scale_a, for one, does not at any M that is not a multiple of 4. Where
the model predicts it faster than reading those scales from GMEM in the
consumers (tilegemm.ops.designs), tg.matmul copies each such array into one
with its rows padded to whole units (`build_pad`, a kernel written in tilegemm)
and runs the staged GEMM on the copies (`PaddedScales`). The padding itself is
never read as a scale: it lies past M, ceil(K/128) or ceil(N/128).
"""
from .. import lang as tg
from ..kernel import kernel
from ..runtime import readers
from .hopper_matmul import MMA_ROWS

TILE_COLS = 16   # columns of the padded array per block: a memory-bound copy of a small array wants many blocks


def build_pad(rows, cols, padded_cols):
    """A kernel taking x [rows, cols] float32 and returning it as [rows, padded_cols] (padded_cols >= cols): x's
    elements where x has them, zeros after."""
    if padded_cols < cols:
        raise ValueError(f"padded_cols={padded_cols} must hold the {cols} columns of the array it pads")

    @kernel(in_specs=[tg.ShapeDtype((rows, cols), tg.float32)],
            out_shape=tg.ShapeDtype((rows, padded_cols), tg.float32),
            grid=(tg.cdiv(rows, MMA_ROWS), tg.cdiv(padded_cols, TILE_COLS)), grid_names=("r", "c"),
            scratch_shapes=[tg.ACC((MMA_ROWS, TILE_COLS), tg.float32)], name="pad_scales")
    def pad(x, out, tile):
        window = (tg.ds(tg.axis_index("r") * MMA_ROWS, MMA_ROWS), tg.ds(tg.axis_index("c") * TILE_COLS, TILE_COLS))
        tile[...] = x.at[window][...]      # columns past x's read zero
        out.at[window][...] = tile[...]

    return pad


class PaddedScales:
    """A block-scaled design whose scale arrays are padded first: `pads` holds, for scale_a and scale_b, the kernel
    padding it (`build_pad`) or None where the GEMM takes it as given; `gemm` (the staged block-scaled kernel)
    takes a, b, the scales as padded, then any epilogue tensors (`gemm_specs`). Called as tg.matmul calls a
    tg.Kernel, with the arrays as given (`specs`)."""

    def __init__(self, gemm, pads, specs, gemm_specs):
        self.gemm, self.pads, self.specs, self.gemm_specs = gemm, pads, specs, gemm_specs
        self._gemm_signature = None   # of the GEMM's inputs a device call had (the same for every such call)

    def _padded(self):
        """(pad kernel, the scale's spec as given) of each scale that is padded."""
        return [(pad, spec) for pad, spec in zip(self.pads, self.specs[2:4]) if pad is not None]

    def trace_check(self):
        """Traces the pad kernels and the GEMM (the verifier runs) for the arrays they are built for."""
        for pad, spec in self._padded():
            pad.trace(spec)
        self.gemm.trace(*self.gemm_specs)

    def compile(self, arch="sm_90a"):
        """Compiles every kernel of the design (into the compile cache)."""
        for pad, spec in self._padded():
            pad.lower(spec, arch=arch).compile()
        self.gemm.lower(*self.gemm_specs, arch=arch).compile()

    def __call__(self, a, b, scale_a, scale_b, *tensors, out=None, interpret=False, debug=None, seed=None):
        options = dict(interpret=interpret, debug=debug, seed=seed)
        scales = [x if pad is None else pad(x, **options) for pad, x in zip(self.pads, (scale_a, scale_b))]
        arrays = (a, b, *scales, *tensors)
        if not interpret:
            self._gemm_signature = readers.signature(arrays)
        return self.gemm(*arrays, out=out, **options)

    def prepared(self, signature, barrier_timeout=None):
        """The pad kernels' and the GEMM's prepared launches chained, once a device call with this signature (of
        the arrays as given) has run."""
        if signature is None:
            return None
        pads = [None if pad is None else pad.prepared(signature[i:i + 1], barrier_timeout)
                for i, pad in enumerate(self.pads, 2)]
        gemm = self.gemm.prepared(self._gemm_signature, barrier_timeout)
        if gemm is None or any(run is None and pad is not None for run, pad in zip(pads, self.pads)):
            return None

        def launch(arrays, outs, poison):
            scales = [x if run is None else run([x], None, poison)[0] for run, x in zip(pads, arrays[2:4])]
            return gemm([*arrays[:2], *scales, *arrays[4:]], outs, poison)
        return launch
