"""Shared pieces of the runtime tests: a one-tile TMA + WGMMA kernel (C = A @ B for one 64x64x64 tile)."""
import pytest

from tests.lower.kernels import one_wgmma

TILE = 64


@pytest.fixture
def one_tile():
    return one_wgmma(TILE)
