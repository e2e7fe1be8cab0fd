"""Tests of the example ladders (examples/) and of the pipelining helpers they build on."""
