"""Tests of the numpy interpreter (tilegemm.interpret)."""
