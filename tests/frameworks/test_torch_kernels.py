"""tilegemm.torch.register: a user's @tg.kernel as a torch custom operator on CPU tensors (the numpy interpreter),
with a fake implementation traced from the kernel, under opcheck and torch.compile."""
import os

import pytest

pytest.importorskip("torch.library")
import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

import tilegemm as tg  # noqa: E402
import tilegemm.testing as tt  # noqa: E402
import tilegemm.torch as tgt  # noqa: E402
from tilegemm.showcase import load_example  # noqa: E402

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "examples")
MATMUL = load_example(os.path.join(EXAMPLES, "hopper_v2_tma_wgmma.py"))   # build(m, n, k): one fixed shape


def scale_and_shift():
    """Two outputs shaped like the input, for any input: (2 x, x + 1)."""
    @tg.kernel(out_shape=lambda x: (tg.ShapeDtype(x.shape, x.dtype), tg.ShapeDtype(x.shape, x.dtype)))
    def scale_and_shift(x, doubled, shifted):
        doubled[...] = x[...] * 2.0
        shifted[...] = x[...] + 1.0
    return scale_and_shift


def randn(*shape, dtype=torch.float16, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


def test_a_fixed_shape_kernel_becomes_an_operator_that_runs_on_cpu_tensors():
    op = tgt.register(MATMUL.build(40, 24, 8), name="v2_matmul_40x24x8")
    a, b = randn(40, 8), randn(8, 24, seed=1)
    c = torch.ops.tilegemm.v2_matmul_40x24x8(a, b)
    assert (c.shape, c.dtype) == ((40, 24), torch.float16)
    tt.assert_close(c.double().numpy(), a.double().numpy() @ b.double().numpy(), k=8, dtype=tg.float16)
    assert torch.equal(op(a, b), c)


def test_the_fake_implementation_reads_the_outputs_off_the_traced_kernel():
    op = tgt.register(MATMUL.build(1000, 512, 64, dtype=tg.bfloat16), name="v2_matmul_1000x512x64")
    with FakeTensorMode():
        c = op(torch.empty(1000, 64, dtype=torch.bfloat16), torch.empty(64, 512, dtype=torch.bfloat16))
        assert (c.shape, c.dtype) == ((1000, 512), torch.bfloat16)
        with pytest.raises(tg.ArgumentError, match=r"argument 0 \(a\) of kernel `hopper_v2_tma_wgmma` is "
                                                   r"bf16\[1000, 32\] but the kernel was built for bf16\[1000, 64\]"):
            op(torch.empty(1000, 32, dtype=torch.bfloat16), torch.empty(32, 512, dtype=torch.bfloat16))


def test_a_kernel_whose_outputs_follow_its_inputs_serves_every_shape_and_returns_a_tuple():
    op = tgt.register(scale_and_shift(), name="scale_and_shift_every_shape", num_outputs=2)
    for shape in ((16, 16), (8, 32)):
        x = randn(*shape, dtype=torch.float32)
        doubled, shifted = op(x)
        assert torch.equal(doubled, 2 * x) and torch.equal(shifted, x + 1)


def test_opcheck_passes_for_a_registered_kernel():
    op = tgt.register(scale_and_shift(), name="scale_and_shift_opcheck", num_outputs=2)
    results = torch.library.opcheck(op, (randn(16, 16, dtype=torch.float32),))
    assert set(results.values()) == {"SUCCESS"}


def test_a_compiled_function_calls_a_registered_kernel_without_a_graph_break():
    op = tgt.register(scale_and_shift(), name="scale_and_shift_compiled", num_outputs=2)

    def f(x):
        doubled, shifted = op(torch.relu(x))
        return doubled * shifted

    x = randn(16, 16, dtype=torch.float32)
    assert torch.equal(torch.compile(f, fullgraph=True, backend="aot_eager")(x), f(x))


def test_registering_the_same_kernel_again_returns_its_operator():
    kernel = scale_and_shift()
    assert tgt.register(kernel, name="scale_and_shift_twice", num_outputs=2) is \
        tgt.register(kernel, name="scale_and_shift_twice", num_outputs=2)


@pytest.mark.parametrize("arguments,message", [
    (dict(kernel=scale_and_shift(), name="needs_count"), r"pass num_outputs= \(how many arrays it returns\)"),
    (dict(kernel=MATMUL.build(64, 64, 64), name="miscounted", num_outputs=2),
     "kernel `hopper_v2_tma_wgmma` has 1 outputs, not num_outputs=2"),
    (dict(kernel=MATMUL.build(64, 64, 64), name="matmul"), "is not a name register can use"),
    (dict(kernel=MATMUL.build(64, 64, 64), name="not a name"), "is not a name register can use"),
    (dict(kernel=lambda x: x, name="not_a_kernel"), "takes a @tg.kernel, got function"),
])
def test_what_register_cannot_use_is_an_argument_error(arguments, message):
    with pytest.raises(tg.ArgumentError, match=message):
        tgt.register(**arguments)


def test_a_name_taken_by_another_kernel_is_refused():
    tgt.register(scale_and_shift(), name="scale_and_shift_taken", num_outputs=2)
    with pytest.raises(tg.ArgumentError, match="already another kernel's operator: pass another name="):
        tgt.register(scale_and_shift(), name="scale_and_shift_taken", num_outputs=2)


def test_a_kernel_returning_a_different_count_than_registered_is_caught_while_tracing():
    op = tgt.register(scale_and_shift(), name="scale_and_shift_miscounted", num_outputs=1)
    with FakeTensorMode(), pytest.raises(tg.ArgumentError, match="returns 2 arrays but was registered with "
                                                                 "num_outputs=1"):
        op(torch.empty(16, 16))
