"""Peer GEMM implementations for the benchmarks; each module offers `contender(...) -> (launch, out) | None`
(None: the peer is not installed here): `contender(a, b)` for 16-bit GEMMs, deepgemm_fp8 the operands of a
block-scaled fp8 GEMM."""
