"""Comparing a kernel's result with its float64 reference: per element under the tolerance rule, with the figures
that locate a failure (unwritten elements, the worst element, the worst tile, the relative Frobenius error).

Outputs start poisoned with NaN (in the interpreter always, on the GPU by the runtime), so an element a kernel
never wrote is NaN where the reference is finite: it is counted as unwritten, never averaged away.
"""
from dataclasses import dataclass

import numpy as np

from ..lang import dtypes
from .tolerance import LAMBDA, tolerance, unit_roundoff


@dataclass(frozen=True)
class Element:
    """One element of a result: where it is, what the kernel gave, what the reference gave, and the limit."""
    index: tuple
    got: float
    expected: float
    tolerance: float

    @property
    def error(self):
        return abs(self.got - self.expected)

    def __str__(self):
        ratio = self.error / self.tolerance if self.tolerance else float("inf")
        return (f"{list(self.index)}: got {self.got:.6g}, expected {self.expected:.6g}, |error| {self.error:.3g} "
                f"{'>' if ratio > 1 else '<='} tolerance {self.tolerance:.3g} ({ratio:.3g}x)")


@dataclass(frozen=True)
class Comparison:
    """The figures of one result against its reference; `ok` when nothing is unwritten and every element is
    within tolerance. `tile_error` is the worst tile's max |error| over the rms of its reference values."""
    shape: tuple
    dtype: np.dtype              # the dtype the result was rounded to
    k: int
    acc_dtype: np.dtype
    unwritten: int               # NaN where the reference is finite
    unwritten_box: tuple         # per dimension the (start, stop) of the unwritten elements; () when none
    beyond: int                  # written elements beyond the tolerance
    worst: Element               # the written element furthest beyond (or closest to) its tolerance; None if none
    tile: tuple                  # (rows, cols) of the tiles the result is cut into, 2-D view
    worst_tile: tuple            # its ((row start, stop), (col start, stop)) in the 2-D view
    tile_error: float
    frobenius: float             # ||got - expected||_F / ||expected||_F, NaN counted as 0

    @property
    def ok(self):
        return self.unwritten == 0 and self.beyond == 0

    def lines(self):
        """The figures, one a line, as failure messages print them."""
        size = int(np.prod(self.shape))
        lines = []
        if self.unwritten:
            box = ", ".join(f"{start}:{stop}" for start, stop in self.unwritten_box)
            lines.append(f"{self.unwritten} of {size} elements are NaN where the reference is finite (unwritten? "
                         f"outputs start as NaN), within [{box}]")
        if self.worst is not None:
            lines.append(f"{self.beyond} of {size} elements beyond tolerance; worst element {self.worst}")
        (r0, r1), (c0, c1) = self.worst_tile
        lines.append(f"worst {self.tile[0]}x{self.tile[1]} tile [{r0}:{r1}, {c0}:{c1}]: max |error| = "
                     f"{self.tile_error:.3g} x the rms of its reference values")
        lines.append(f"relative Frobenius error {self.frobenius:.3g} (NaN counted as 0)")
        lines.append(f"tolerance: |got - expected| <= u_out*|expected| + {LAMBDA}*u_acc*K*rms(expected) with "
                     f"u_out = {unit_roundoff(self.dtype):.3g} ({dtypes.name(self.dtype)}), u_acc = "
                     f"{unit_roundoff(self.acc_dtype):.3g} ({dtypes.name(self.acc_dtype)}), K = {self.k} "
                     "(help(tilegemm.testing.tolerance))")
        return lines


def compare(got, expected, *, k, dtype=None, acc_dtype=dtypes.float32, tile=(64, 64)):
    """Compares `got` (a kernel's result) with `expected` (its reference, computed in float64 from the same inputs)
    for `k` accumulated products; `dtype`: what `got` was rounded to (default: got's dtype). Returns a Comparison."""
    got = np.asarray(got)
    expected = np.asarray(expected, dtype=np.float64)
    if got.shape != expected.shape:
        raise AssertionError(f"result has shape {got.shape}, its reference {expected.shape}")
    out_dtype = dtypes.as_dtype(dtype) if dtype is not None else got.dtype
    values = got.astype(np.float64)
    limit = tolerance(expected, k=k, dtype=out_dtype, acc_dtype=acc_dtype)
    unwritten = np.isnan(values) & ~np.isnan(expected)
    with np.errstate(invalid="ignore"):
        error = np.abs(values - expected)
    error[(values == expected) | (np.isnan(values) & np.isnan(expected))] = 0.0   # equal infinities, NaN for NaN
    error[np.isnan(error)] = np.inf                                               # a number where NaN is expected
    error[unwritten] = 0.0                                                        # counted apart
    ratio = error / limit
    worst = None
    if not unwritten.all():
        at = np.unravel_index(int(np.argmax(np.where(unwritten, -1.0, ratio))), got.shape)
        worst = Element(tuple(int(i) for i in at), float(values[at]), float(expected[at]), float(limit[at]))
    worst_tile, tile_error = _worst_tile(error, expected, tile)
    return Comparison(shape=got.shape, dtype=out_dtype, k=k, acc_dtype=dtypes.as_dtype(acc_dtype),
                      unwritten=int(unwritten.sum()), unwritten_box=_box(unwritten), beyond=int((ratio > 1).sum()),
                      worst=worst, tile=tuple(tile), worst_tile=worst_tile, tile_error=tile_error,
                      frobenius=_frobenius(values, expected))


def assert_close(got, expected, *, k, dtype=None, acc_dtype=dtypes.float32, tile=(64, 64)):
    """Raises AssertionError, with the figures that locate the difference, unless `got` is within the tolerance
    of tilegemm.testing.tolerance of `expected` everywhere and has no unwritten (NaN) element; returns the
    Comparison. Arguments as `compare`."""
    comparison = compare(got, expected, k=k, dtype=dtype, acc_dtype=acc_dtype, tile=tile)
    if not comparison.ok:
        raise AssertionError("\n  ".join(["result differs from its reference:"] + comparison.lines()))
    return comparison


def _as_matrix(x):
    """`x` viewed as 2-D: leading dimensions folded into rows."""
    return x.reshape(-1, x.shape[-1]) if x.ndim >= 1 else x.reshape(1, 1)


def _worst_tile(error, expected, tile):
    """The tile (of the 2-D view) with the largest max |error| over the rms of its finite reference values."""
    error, expected = _as_matrix(error), _as_matrix(expected)
    tr, tc = tile
    rows, cols = -(-error.shape[0] // tr), -(-error.shape[1] // tc)

    def tiled(x):
        padded = np.zeros((rows * tr, cols * tc))
        padded[:x.shape[0], :x.shape[1]] = x
        return padded.reshape(rows, tr, cols, tc)
    finite = np.isfinite(expected)
    squares = tiled(np.where(finite, expected, 0.0) ** 2).sum(axis=(1, 3))
    rms = np.sqrt(squares / np.maximum(tiled(finite).sum(axis=(1, 3)), 1))
    max_error = tiled(error).max(axis=(1, 3))
    with np.errstate(divide="ignore", invalid="ignore"):
        figure = np.where(max_error == 0, 0.0, max_error / rms)
    r, c = np.unravel_index(int(np.argmax(figure)), figure.shape)
    box = ((int(r * tr), int(min((r + 1) * tr, error.shape[0]))), (int(c * tc), int(min((c + 1) * tc, error.shape[1]))))
    return box, float(figure[r, c])


def _box(mask):
    """Per dimension the (start, stop) range holding every True element of `mask`; () when there is none."""
    if not mask.any():
        return ()
    return tuple((int(ix.min()), int(ix.max()) + 1) for ix in np.nonzero(mask))


def _frobenius(values, expected):
    """||values - expected||_F / ||expected||_F over the finite reference values, NaN results counted as 0."""
    finite = np.isfinite(expected)
    diff = np.linalg.norm(np.where(np.isnan(values), 0.0, values)[finite] - expected[finite])
    norm = np.linalg.norm(expected[finite])
    if norm == 0:
        return 0.0 if diff == 0 else float("inf")
    return float(diff / norm)
