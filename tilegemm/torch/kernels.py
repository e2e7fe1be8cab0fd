"""A user's @tg.kernel as a torch custom operator: `register(kernel)` makes torch.ops.tilegemm.<name>.

The operator takes the kernel's inputs as tensors and returns its outputs. CUDA
tensors run the compiled kernel on torch's current stream, CPU tensors the
numpy interpreter. Its fake implementation traces the kernel at the inputs'
shapes (tg.Kernel.trace: no data, nothing runs) and reads the outputs' shapes
and dtypes off the graph, so torch.compile sees the operator's results and
the kernel's argument errors before anything runs.
"""
import torch

from ..errors import ArgumentError
from ..kernel import Kernel
from ..lang.trace import ShapeDtype
from .host import from_numpy, row_major, to_numpy, torch_dtype

NAMESPACE = "tilegemm"
RESERVED = ("matmul",)   # this namespace's own operators

_registered = {}   # operator name -> (kernel, operator)


def register(kernel, name=None, *, num_outputs=None):
    """Registers `kernel` as torch.ops.tilegemm.<name> (default: the kernel's name) and returns the operator
    (a torch.library.CustomOpDef: call it, or add autograd with its register_autograd). A kernel whose out_shape
    is a function of its inputs needs `num_outputs`; a fixed one states it in its out_shape. Registering the
    same kernel under the same name again returns the same operator."""
    if not isinstance(kernel, Kernel):
        raise ArgumentError(f"tilegemm.torch.register takes a @tg.kernel, got {type(kernel).__name__}")
    name = kernel.name if name is None else name
    if not isinstance(name, str) or not name.isidentifier() or name in RESERVED:
        raise ArgumentError(f"torch.ops.{NAMESPACE}.{name} is not a name register can use: pass name= a Python "
                            f"identifier other than {', '.join(RESERVED)}")
    if name in _registered:
        if _registered[name][0] is kernel:
            return _registered[name][1]
        raise ArgumentError(f"torch.ops.{NAMESPACE}.{name} is already another kernel's operator: pass another "
                            "name=")
    num_inputs, num_outputs = _counts(kernel, num_outputs)
    inputs = ", ".join(f"Tensor x{i}" for i in range(num_inputs))
    returns = "Tensor" if num_outputs == 1 else f"({', '.join(['Tensor'] * num_outputs)})"

    def run(*xs):
        return _returned(kernel(*map(row_major, xs)))

    def interpret(*xs):
        return _returned(kernel(*(to_numpy(row_major(x)) for x in xs), interpret=True), from_numpy)

    def fake(*xs):
        graph = kernel.trace(*map(ShapeDtype.of, xs))
        if len(graph.outputs) != num_outputs:
            raise ArgumentError(f"kernel `{kernel.name}` returns {len(graph.outputs)} arrays but was registered "
                                f"with num_outputs={num_outputs}")
        return _returned(tuple(xs[0].new_empty(p.shape, dtype=torch_dtype(p.dtype)) for p in graph.outputs))

    op = torch.library.custom_op(f"{NAMESPACE}::{name}", run, mutates_args=(), device_types="cuda",
                                 schema=f"({inputs}) -> {returns}")
    op.register_kernel("cpu", interpret)
    op.register_fake(fake)
    _registered[name] = (kernel, op)
    return op


def _counts(kernel, num_outputs):
    """(inputs, outputs) of the operator for `kernel`, or an ArgumentError saying what to declare."""
    if kernel.signature.num_inputs is None:
        raise ArgumentError(f"kernel `{kernel.name}` takes *args, so its inputs are not counted: declare them with "
                            "in_specs=[tg.ShapeDtype(...), ...] to register it")
    if kernel.signature.num_inputs == 0:
        raise ArgumentError(f"kernel `{kernel.name}` takes no input arrays; a torch operator needs at least one "
                            "tensor to place its outputs")
    if kernel.polymorphic:
        if not (isinstance(num_outputs, int) and num_outputs > 0):
            raise ArgumentError(f"kernel `{kernel.name}` makes its outputs with a function of its inputs: pass "
                                "num_outputs= (how many arrays it returns) to register it")
    elif num_outputs not in (None, len(kernel.out_specs)):
        raise ArgumentError(f"kernel `{kernel.name}` has {len(kernel.out_specs)} outputs, not num_outputs="
                            f"{num_outputs}")
    return kernel.signature.num_inputs, num_outputs or len(kernel.out_specs)


def _returned(outs, convert=None):
    """A kernel's result (an array or a tuple of them) as the operator returns it: a tensor, or a tuple of two or
    more; `convert` makes tensors of other arrays."""
    outs = tuple(outs) if isinstance(outs, tuple) else (outs,)
    if convert is not None:
        outs = tuple(map(convert, outs))
    return outs[0] if len(outs) == 1 else outs
