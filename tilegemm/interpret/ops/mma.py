"""Matrix products: wgmma (Hopper, async, retired by wgmma_wait), tcgen05_mma (Blackwell) and dot (synchronous).

MMA operands are rounded to their dtype (they are stored as f16, bf16 or fp8) and
multiplied with f32 accumulation, rounded to the accumulator's dtype after every
instruction (asyncops.accumulated). A 2-CTA tcgen05_mma (collective_axis) is
issued by the leader block; block r of the pair computes
acc_r (+)= a_r @ [b_0 b_1] from its own A rows and both blocks' B columns,
and its completion arrives on the barrier in both blocks.
"""
from ...errors import KernelError
from ..asyncops import Tcgen05Mma, WgmmaGroup, product
from ..memory import RefView
from ..races import touch_operand
from ..registry import handler
from .refs import allocation, same_barrier


@handler("wgmma", sync=True)
def wgmma(task, op, env):
    """Issues one WGMMA group: operands are read and acc written until wgmma_wait retires it."""
    acc, a, b = task.operands(op, env)
    engine = task.wgmma
    accesses = [touch_operand(task, op, name, ref, engine) for name, ref in (("b", b), ("a", a), ("acc", acc))]
    engine.append(WgmmaGroup(op, task.label, acc, a, b, accesses))


@handler("tcgen05_mma", sync=True)
def tcgen05_mma(task, op, env):
    """Queues a tcgen05 MMA (2-CTA if collective_axis) on this thread's tensor-core queue."""
    acc, a, b, accumulate, *barrier = task.operands(op, env)
    axis = op.attrs["collective_axis"]
    blocks = task.block.cluster.peers(task.block, (axis,)) if axis else [task.block]
    if blocks[0] is not task.block:
        raise KernelError(f"a tcgen05_mma with collective_axis={axis!r} is issued by the leader block of the pair "
                          f"only ({blocks[0].label}); guard it with tg.when(tg.axis_index({axis!r}) == 0)",
                          loc=op.loc)
    engine = task.machine.engine(task.id)
    per_block = [tuple(ref.rebase(allocation(block, ref.buffer.alloc_op)) for ref in (acc, a, b))
                 for block in blocks]
    n = sum(b_r.shape[1] for _, _, b_r in per_block)
    accesses = []
    for acc_r, a_r, b_r in per_block:
        if a_r.shape[1] != b_r.shape[0] or acc_r.shape != (a_r.shape[0], n):
            raise KernelError(f"tcgen05_mma shapes do not multiply: acc {acc_r.shape} (+)= a {a_r.shape} @ b of "
                              f"{len(blocks)} block(s) side by side ({b_r.shape[0]} x {n})", loc=op.loc)
        accesses += [touch_operand(task, op, "a", a_r, engine), touch_operand(task, op, "b", b_r, engine),
                     touch_operand(task, op, "acc", acc_r, engine)]
    arrivals = [same_barrier(block, barrier[0].element()) for block in blocks] if barrier else []
    task.scheduler.issue(Tcgen05Mma(op, engine, [(acc_r, a_r) for acc_r, a_r, _ in per_block],
                                    [b_r for _, _, b_r in per_block], bool(accumulate), arrivals, task.release(),
                                    accesses, blocks))


@handler("dot")
def dot(task, op, env):
    """acc + a @ b, synchronously, from refs or register arrays."""
    a, b, *acc = task.operands(op, env)
    a, b = (_read(task, op, name, x) for name, x in (("a", a), ("b", b)))
    result = product(a, b)
    if acc:
        result = result + acc[0]
    env[op.results[0].id] = result.astype(op.results[0].type.dtype, copy=False)


def _read(task, op, name, x):
    """The value of dot operand `name`: a register array as is, a ref read now (and race-checked)."""
    if not isinstance(x, RefView):
        return x
    touch_operand(task, op, name, x)
    return x.read()
