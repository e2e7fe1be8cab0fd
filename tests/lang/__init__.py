"""Tests of tilegemm.lang: tracing, the graph IR, the value sugar and the verifier."""
