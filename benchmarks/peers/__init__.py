"""Peer GEMM implementations for the benchmarks; each module offers `contender(a, b) -> (launch, out) | None`."""
