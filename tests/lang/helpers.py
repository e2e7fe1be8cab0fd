"""Shared helpers for the language tests: trace small kernels and check where a KernelError points.

Scratch specs record the line they are written on, so tests build them in the
test file itself and pass them in. Offending lines are tagged with a trailing
`# @name` comment; `raises_at("name", ...)` checks that the error starts with
that file:line and contains every given fragment.
"""
import os
import re
import sys

import pytest

import tilegemm as tg

F16, BF16, F32 = tg.float16, tg.bfloat16, tg.float32


def spec(*shape, dtype=F16):
    return tg.ShapeDtype(shape, dtype)


def trace(body, *in_specs, out=None, scratch=(), **config):
    """Traces and verifies `body` as a kernel over `in_specs`, with one output (default f16 128x128)."""
    out = out if out is not None else spec(128, 128)
    return tg.kernel(body, out_shape=out, scratch_shapes=scratch, **config).trace(*in_specs)


def swizzled(swizzle, dtype=F16):
    """The transforms Pallas uses for a `swizzle`-byte swizzle: tile (8, swizzle/itemsize) + swizzle."""
    return (tg.TilingTransform((8, swizzle // dtype.itemsize)), tg.SwizzleTransform(swizzle))


def line_of(marker, path):
    """The 1-based line of `path` ending with the comment `# @marker` (exactly one must exist)."""
    pattern = re.compile(rf"#\s*@{re.escape(marker)}\s*$")
    with open(path) as f:
        hits = [n for n, text in enumerate(f, 1) if pattern.search(text)]
    assert len(hits) == 1, f"marker @{marker} found on lines {hits} of {path}"
    return hits[0]


def same_place(loc, marker, path):
    return loc is not None and os.path.samefile(loc.file, path) and loc.line == line_of(marker, path)


class raises_at:
    """Context manager: the block raises tg.KernelError at the `# @marker` line, with `fragments` in its text."""

    def __init__(self, marker, *fragments):
        self.marker, self.fragments = marker, fragments
        self.path = sys._getframe(1).f_code.co_filename
        self.error = None

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if error is None:
            pytest.fail(f"expected a KernelError at @{self.marker}, nothing was raised")
        if not isinstance(error, tg.KernelError):
            return False
        self.error = error
        text = str(error)
        where = re.match(r"(.+?):(\d+): ", text)
        assert where, f"the error does not start with file:line: {text}"
        assert os.path.samefile(where[1], self.path) and int(where[2]) == line_of(self.marker, self.path), text
        for fragment in self.fragments:
            assert fragment in text, f"{fragment!r} not in:\n{text}"
        return True

    def names(self, marker, label):
        """Asserts the error also names the `# @marker` line, after `label`, among its related locations."""
        hits = [(what, loc) for what, loc in self.error.related if same_place(loc, marker, self.path)]
        assert hits, str(self.error)
        assert any(label in what and f"{what}: {loc}" in str(self.error) for what, loc in hits), str(self.error)
