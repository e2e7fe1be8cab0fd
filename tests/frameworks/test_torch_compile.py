"""torch.compile(fullgraph=True) of examples/torch_mlp.py's MLP: one graph, no graph break, with
torch.ops.tilegemm.matmul in it, and the outputs and gradients of eager execution; on CPU tensors (the numpy
interpreter) and, on a GPU, on CUDA tensors, also replayed as a CUDA graph."""
import os

import pytest

pytest.importorskip("torch.library")
import torch  # noqa: E402
from torch._dynamo.testing import CompileCounterWithBackend  # noqa: E402

from tilegemm.runtime import device_count  # noqa: E402
from tilegemm.showcase import load_example  # noqa: E402

EXAMPLE = load_example(os.path.join(os.path.dirname(__file__), "..", "..", "examples", "torch_mlp.py"))
ON_GPU = [pytest.mark.gpu, pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")]
SIZES = {"cpu": (8, [16, 32, 16]), "cuda": (384, [512, 1024, 256])}   # batch, widths: the interpreter is slow


def inputs(device, seed=2):
    batch, widths = SIZES[device]
    return torch.randn(batch, widths[0], generator=torch.Generator().manual_seed(seed)).half().to(device)


def forward_and_backward(model, x):
    """The model's output and its parameters' gradients for the loss sum(output^2)."""
    model.zero_grad()
    out = model(x)
    out.float().square().sum().backward()
    return out.detach(), [p.grad for p in model.parameters()]


@pytest.mark.parametrize("device", [pytest.param("cpu", marks=pytest.mark.slow),
                                    pytest.param("cuda", marks=ON_GPU)])
def test_a_compiled_mlp_is_one_graph_holding_the_operator_and_matches_eager(device):
    widths = SIZES[device][1]
    eager_model, compiled_model = EXAMPLE.MLP(widths, device=device), EXAMPLE.MLP(widths, device=device)
    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(compiled_model, fullgraph=True, backend=counter)   # a graph break would raise here
    out, grads = forward_and_backward(compiled, inputs(device))
    expected_out, expected_grads = forward_and_backward(eager_model, inputs(device))
    assert counter.frame_count == 1
    calls = [n for n in counter.graphs[0].graph.nodes if "tilegemm.matmul" in str(n.target)]
    assert len(calls) == len(widths) - 1
    torch.testing.assert_close(out, expected_out)
    for grad, expected in zip(grads, expected_grads):
        torch.testing.assert_close(grad, expected)


@pytest.mark.gpu
@pytest.mark.skipif(device_count() == 0, reason="no CUDA GPU")
def test_a_compiled_mlp_replays_as_a_cuda_graph_on_new_inputs():
    widths = SIZES["cuda"][1]
    model = EXAMPLE.MLP(widths, device="cuda")
    compiled = torch.compile(model, fullgraph=True, mode="reduce-overhead")
    with torch.no_grad():
        for seed in range(4):   # warm-up, recording, then replays
            x = inputs("cuda", seed)
            torch.testing.assert_close(compiled(x).clone(), model(x))
