"""Block-scaled fp8 GEMM (DeepSeek-V3's and DeepGEMM's recipe) inside the flagship kernel: its scales and its
promotion step.

c = sum over K blocks kb of (A[:, kb] @ B[kb, :]) * scale_a[:, kb] * scale_b[kb, :] with

* scale_a [M, ceil(K/128)]: one float32 per row of A and 128-wide group along K (1 x 128 blocks);
* scale_b [ceil(K/128), ceil(N/128)]: one float32 per 128 x 128 block of B [K, N],

the logical shapes torch._scaled_mm takes for b = w.T (its blockwise 1x128 and 128x128 scaling). Each is read
as it is stored: scale_a row-major [M, Kb] ("mk") or as the transpose of a row-major [Kb, M] array ("km",
M-major, torch's and DeepGEMM's layout); scale_b row-major [Kb, Nb] ("kn") or as the transpose of a row-major
[Nb, Kb] array ("nk": one row of scales per 128 rows of the weight w [N, K], as torch and DeepGEMM store it).

Staging: where TMA can copy them (each scale array's rows whole 16-byte units, `BlockScales.staged_slots`), the
producer copies each K step's scales into SMEM rings beside the A and B stages, on the same barrier, and the
consumers read them there; elsewhere the consumers read them from GMEM, ahead of use, or tg.matmul copies them into
arrays of padded rows first (`BlockScales.padded`, tilegemm.ops.scale_padding) where the model predicts that faster.

Promotion: WGMMA accumulates fp8 products with fewer mantissa bits than f32, so for every 128-wide K block the
tensor cores sum into a fresh f32 `partial` accumulator, the consumer waits for those WGMMAs and adds
partial * scale_a * scale_b into the tile's f32 accumulator with CUDA-core FMAs. The kernel's K step is one
scale block (tile_k = BLOCK); an N tile lies within one 128-wide block of B (BLOCK % tile_n == 0), so B's
scale is one value per tile and K step. `UNIT` promotes the same way with no scales at all: tg.matmul's per-tensor
and row-wise calls with promote=True, whose scales the fused epilogue multiplies in.
"""
from dataclasses import dataclass, replace

from .. import lang as tg
from ..lang import dtypes
from ..lang.trace import ShapeDtype
from ..model.layouts import check_layouts, k_major, stored

BLOCK = 128        # elements of K per scale of A and B; rows of N per scale of B
BOX = 4            # float32 scales a staged copy reads along a scale array's contiguous dimension (TMA's 16 bytes)
B_SLOT_ROWS = 8    # rows of B's staged box: a stage's 8 x BOX float32 are the 128 bytes a TMA destination aligns to


def blocks(extent):
    """Scale blocks along an extent of K or N: ceil(extent / BLOCK)."""
    return -(-extent // BLOCK)


@dataclass(frozen=True)
class BlockScales:
    """How the kernel reads block scales: scale_a stored "mk" ([M, Kb]) or "km" ([Kb, M]), scale_b "kn"
    ([Kb, Nb]) or "nk" ([Nb, Kb]) (model.layouts' names for the dimensions' stored order). `padded`: the kernel
    takes each array with its rows, as stored, padded to whole BOX units (tilegemm.ops.scale_padding copies the
    user's into such arrays)."""
    a_layout: str = "km"
    b_layout: str = "nk"
    padded: bool = False
    staged: bool = True    # False: the consumers read the scales from GMEM even where TMA could stage them

    def __post_init__(self):
        check_layouts(self.a_layout, self.b_layout)

    def specs(self, m, n, k):
        """The ShapeDtype of the scale_a and scale_b arrays, as stored (rows padded if `padded`), for an m x n x k
        problem."""
        return tuple(ShapeDtype(shape, dtypes.float32) for shape in self._shapes(m, n, k, self.padded))

    def _shapes(self, m, n, k, padded):
        """The scale_a and scale_b shapes as stored, their rows rounded up to whole BOX units if `padded`."""
        shapes = (stored(self.a_layout, m, blocks(k)), stored(self.b_layout, blocks(n), blocks(k)))
        return tuple((rows, -(-row // BOX) * BOX if padded else row) for rows, row in shapes)

    def unpadded_rows(self, m, n, k):
        """For scale_a and scale_b: (rows, row length, padded row length) of the array as the user stores it where
        TMA cannot copy its rows (their length not whole BOX units), else None."""
        return tuple(None if row == whole else (rows, row, whole) for (rows, row), (_, whole)
                     in zip(self._shapes(m, n, k, False), self._shapes(m, n, k, True)))

    def with_padding(self):
        """These scales as the kernel reads them once padded (`padded`)."""
        return replace(self, padded=True)

    def read_from_gmem(self):
        """These scales read by the consumers from GMEM, never staged (`staged`)."""
        return replace(self, staged=False)

    def staged_slots(self, m, n, k, tile_m):
        """The shapes of one stage's staged scales, as stored, or None where they are not staged (`staged`) or TMA
        cannot copy them (the rows of scale_a and scale_b, as the kernel takes them, are not whole 16-byte units:
        unpadded, scale_a "km" needs M a multiple of BOX, "mk" and scale_b "nk" ceil(K/128), scale_b "kn"
        ceil(N/128)). A slot holds the tile's tile_m rows of scale_a and the boxes `_staged_dims` describes."""
        if not self.staged or any(spec.shape[1] % BOX for spec in self.specs(m, n, k)):
            return None
        a_k, b_n, b_k = (BOX if contiguous else rows for contiguous, rows in self._staged_dims())
        return stored(self.a_layout, tile_m, a_k), stored(self.b_layout, b_n, b_k)

    def _staged_dims(self):
        """(contiguous, rows) of a stage's boxes along scale_a's K and scale_b's N and K: along a contiguous
        dimension a box holds the BOX scales of one 16-byte unit (TMA's rows and starts are whole units), along
        the other `rows` of them (B_SLOT_ROWS for scale_b, whose slot then fills TMA's 128-byte alignment)."""
        return ((k_major(self.a_layout), 1), (not k_major(self.b_layout), B_SLOT_ROWS),
                (k_major(self.b_layout), B_SLOT_ROWS))

    def staged_views(self, scale_a, scale_b, rows, nb, kb):
        """The GMEM boxes a stage copies for K block `kb` (shaped as `staged_slots`): scale_a of the tile's rows `rows`
        (a tg.ds) and scale_b from B's block `nb` on."""
        a_k, b_n, b_k = (_box(index, *dim) for index, dim in zip((kb, nb, kb), self._staged_dims()))
        return scale_a.at[stored(self.a_layout, rows, a_k)], scale_b.at[stored(self.b_layout, b_n, b_k)]

    def staged_block_scale(self, b_slot, nb, kb):
        """B's scale of block (kb, nb) read from a stage's slot of scale_b (staged_views' box)."""
        _, (n_contiguous, _), (k_contiguous, _) = self._staged_dims()
        return self.block_scale(b_slot, _in_box(nb, n_contiguous), _in_box(kb, k_contiguous))

    def staged_row_scales(self, a_slot, rows, kb):
        """row_scales of K block `kb` read from a stage's slot of scale_a, `rows` counted within the tile."""
        (k_contiguous, _), _, _ = self._staged_dims()
        return self.row_scales(a_slot, rows, _in_box(kb, k_contiguous))

    def row_scales(self, scale_a, rows, kb):
        """The (len(rows), 1) array of A's scales for the rows `rows` (a tg.ds) in K block `kb`, read straight
        into the accumulator's row layout (rows past M read zero)."""
        return self._a_scales(scale_a, rows, kb, as_column=True)

    def column_scales(self, scale_a, rows, kb):
        """The (1, len(rows)) array of A's scales for the rows `rows` (a tg.ds) in K block `kb`, as the columns of
        a swapped (C^T) tile (rows past M read zero)."""
        return self._a_scales(scale_a, rows, kb, as_column=False)

    def _a_scales(self, scale_a, rows, kb, as_column):
        """A's scales of `rows` in K block `kb`, read as stored ((len, 1) "mk", (1, len) "km") and turned into a
        (len, 1) column (`as_column`) or a (1, len) row."""
        view = scale_a.at[stored(self.a_layout, rows, tg.ds(kb, 1))]
        return view[...] if (self.a_layout == "mk") == as_column else view[...].T

    def block_scale(self, scale_b, nb, kb):
        """B's scale of its 128 x 128 block (kb, nb): a 0-d array every thread holds."""
        return scale_b[stored(self.b_layout, nb, kb)]


def _box(index, contiguous, rows):
    """The slice of one dimension of a scale array a staged box takes to hold `index` (`_staged_dims`)."""
    return tg.ds(index // BOX * BOX, BOX) if contiguous else tg.ds(index, rows)


def _in_box(index, contiguous):
    """Where `index` lies within its staged box along one dimension."""
    return index % BOX if contiguous else 0


@dataclass(frozen=True)
class UnitScales:
    """Promotion without block scales: the block-scaled kernel's K loop, each 128-wide K block's product summed by
    the tensor cores into a fresh partial and added into the f32 accumulator, with no scale arrays to read (every
    scale one). tg.matmul's per-tensor and row-wise fp8 calls with promote=True run so, their scales multiplied in
    by the fused epilogue (tilegemm.ops.scaling). Read as BlockScales are, by the kernel and the designs."""

    def specs(self, m, n, k):
        """No scale arrays."""
        return ()

    def unpadded_rows(self, m, n, k):
        """No scale array to pad."""
        return None, None

    def with_padding(self):
        return self

    def read_from_gmem(self):
        return self

    def staged_slots(self, m, n, k, tile_m):
        """Nothing to stage."""
        return None

    def row_scales(self, scale_a, rows, kb):
        """None: no scale (promote's)."""
        return None

    column_scales = row_scales

    def block_scale(self, scale_b, nb, kb):
        """None: no scale (promote's)."""
        return None


UNIT = UnitScales()


def promote(acc, partial, a_scale, b_scale):
    """acc += partial * (a_scale * b_scale): a K block's f32 partial product, scaled, added into the tile's
    accumulator; acc += partial where there are no scales (UnitScales' None)."""
    summand = partial[...] if a_scale is None else partial[...] * (a_scale * b_scale)
    acc[...] = acc[...] + summand
