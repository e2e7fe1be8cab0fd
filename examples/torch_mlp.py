"""A PyTorch MLP whose layers multiply with tilegemm: torch.ops.tilegemm.matmul, eager and torch.compile'd.

Each Linear layer computes x @ w + bias with `tilegemm.torch.matmul`, a torch
custom operator: autograd runs its backward as two more tilegemm matmuls, and
torch.compile(fullgraph=True) compiles the whole model with the operator in
its graph (no graph break; the operator's fake implementation gives the
compiler its output shapes). The weight is stored [in, out], row-major, the
layout tg.matmul reads, so no transposed copy is made in the forward pass.

    python examples/torch_mlp.py

On a CUDA GPU this trains the model a few steps with tilegemm's compiled
kernels, eagerly and compiled, and prints both losses; without one it runs a
tiny model on the CPU through tilegemm's numpy interpreter.
"""
import torch

import tilegemm.torch as tgt


class Linear(torch.nn.Module):
    """y = x @ weight + bias, with weight [d_in, d_out] and the product on tilegemm."""

    def __init__(self, d_in, d_out, *, dtype, device, generator):
        super().__init__()
        scale = d_in ** -0.5
        self.weight = torch.nn.Parameter(
            (torch.randn(d_in, d_out, generator=generator) * scale).to(device=device, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.zeros(d_out, device=device, dtype=dtype))

    def forward(self, x):
        return tgt.matmul(x, self.weight) + self.bias


class MLP(torch.nn.Module):
    """Linear layers of the given widths with ReLU between them."""

    def __init__(self, widths, *, dtype=torch.float16, device="cpu", seed=0):
        super().__init__()
        generator = torch.Generator().manual_seed(seed)
        self.layers = torch.nn.ModuleList(Linear(d_in, d_out, dtype=dtype, device=device, generator=generator)
                                          for d_in, d_out in zip(widths[:-1], widths[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


def train(model, x, y, steps, lr=0.05):
    """`steps` steps of plain SGD on the mean squared error (in float32); returns the losses."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = (model(x).float() - y.float()).square().mean()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def main():
    on_gpu = torch.cuda.is_available()
    device = "cuda" if on_gpu else "cpu"
    batch, widths, steps = (4096, [1024, 4096, 4096, 1024], 20) if on_gpu else (16, [16, 32, 16], 3)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(batch, widths[0], generator=generator).to(device=device, dtype=torch.float16)
    y = torch.randn(batch, widths[-1], generator=generator).to(device=device, dtype=torch.float16)
    print(f"MLP {widths}, batch {batch}, float16, on {device}"
          f"{'' if on_gpu else ' (no CUDA GPU: tilegemm numpy interpreter, tiny sizes)'}")
    eager = train(MLP(widths, device=device), x, y, steps)
    compiled = train(torch.compile(MLP(widths, device=device), fullgraph=True), x, y, steps)
    for step, (e, c) in enumerate(zip(eager, compiled)):
        print(f"step {step:3d}  loss eager {e:.5f}  compiled {c:.5f}")


if __name__ == "__main__":
    main()
