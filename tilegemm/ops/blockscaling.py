"""Block-scaled fp8 GEMM (DeepSeek-V3's and DeepGEMM's recipe) inside the flagship kernel: its scales and its
promotion step.

c = sum over K blocks kb of (A[:, kb] @ B[kb, :]) * scale_a[:, kb] * scale_b[kb, :] with

* scale_a [M, ceil(K/128)]: one float32 per row of A and 128-wide group along K (1 x 128 blocks);
* scale_b [ceil(K/128), ceil(N/128)]: one float32 per 128 x 128 block of B [K, N],

the logical shapes torch._scaled_mm takes for b = w.T (its blockwise 1x128 and 128x128 scaling). Each is read
as it is stored: scale_a row-major [M, Kb] ("mk") or as the transpose of a row-major [Kb, M] array ("km",
M-major, torch's and DeepGEMM's layout); scale_b row-major [Kb, Nb] ("kn") or as the transpose of a row-major
[Nb, Kb] array ("nk": one row of scales per 128 rows of the weight w [N, K], as torch and DeepGEMM store it).

Promotion: WGMMA accumulates fp8 products with fewer mantissa bits than f32, so for every 128-wide K block the
tensor cores sum into a fresh f32 `partial` accumulator, the consumer waits for those WGMMAs and adds
partial * scale_a * scale_b into the tile's f32 accumulator with CUDA-core FMAs. The kernel's K step is one
scale block (tile_k = BLOCK); an N tile lies within one 128-wide block of B (BLOCK % tile_n == 0), so B's
scale is one value per tile and K step.
"""
from dataclasses import dataclass

from .. import lang as tg
from ..lang import dtypes
from ..lang.trace import ShapeDtype
from ..model.layouts import check_layouts, stored

BLOCK = 128        # elements of K per scale of A and B; rows of N per scale of B


def blocks(extent):
    """Scale blocks along an extent of K or N: ceil(extent / BLOCK)."""
    return -(-extent // BLOCK)


@dataclass(frozen=True)
class BlockScales:
    """How the kernel reads block scales: scale_a stored "mk" ([M, Kb]) or "km" ([Kb, M]), scale_b "kn"
    ([Kb, Nb]) or "nk" ([Nb, Kb]) (model.layouts' names for the dimensions' stored order)."""
    a_layout: str = "km"
    b_layout: str = "nk"

    def __post_init__(self):
        check_layouts(self.a_layout, self.b_layout)

    def specs(self, m, n, k):
        """The ShapeDtype of the scale_a and scale_b arrays, as stored, for an m x n x k problem."""
        return (ShapeDtype(stored(self.a_layout, m, blocks(k)), dtypes.float32),
                ShapeDtype(stored(self.b_layout, blocks(n), blocks(k)), dtypes.float32))

    def row_scales(self, scale_a, rows, kb):
        """The (len(rows), 1) array of A's scales for the rows `rows` (a tg.ds) in K block `kb`, read straight
        into the accumulator's row layout (rows past M read zero)."""
        view = scale_a.at[stored(self.a_layout, rows, tg.ds(kb, 1))]
        return view[...] if self.a_layout == "mk" else view[...].T

    def block_scale(self, scale_b, nb, kb):
        """B's scale of its 128 x 128 block (kb, nb): a 0-d array every thread holds."""
        return scale_b[stored(self.b_layout, nb, kb)]


def promote(acc, partial, scale):
    """acc += partial * scale: a K block's f32 partial product, scaled, added into the tile's accumulator."""
    acc[...] = acc[...] + partial[...] * scale
