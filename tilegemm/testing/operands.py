"""Operands stored either way round, for testing kernels that take A as [M, K] or [K, M] and B as [K, N] or
[N, K] (tilegemm.model.layouts; a linear layer's weight is B stored [N, K]).

    inputs, reference = tt.stored_operands("mk", "nk")   # x [M, K] and a weight w [N, K]: x @ w.T
    tt.check(build_nk, reference, shapes=[(200, 264, 136)], inputs=inputs)
"""
from ..model.layouts import check_layouts
from ..showcase import random_inputs, stored_operands as _stored


def stored_operands(a_layout="mk", b_layout="kn"):
    """(inputs, reference) for tilegemm.testing.check: iid-normal A and B stored as the layouts say, and the
    float64 product they stand for, A @ B."""
    check_layouts(a_layout, b_layout)

    def inputs(m, n, k, dtype, seed=0):
        return _stored(*random_inputs(m, n, k, dtype, seed=seed), a_layout, b_layout)

    def reference(a, b):
        return (a.T if a_layout == "km" else a) @ (b.T if b_layout == "nk" else b)
    return inputs, reference

