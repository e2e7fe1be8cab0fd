"""Tests of tilegemm.testing: the tolerance rule, comparisons, check, the hypothesis strategies, the pytest plugin."""
