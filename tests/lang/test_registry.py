"""The op registry: every op kind is declared once, and the interpreter and each architecture's lowering either
handle it or say why not; the verifier refuses, at the user's line, what the target architecture cannot lower."""
import numpy as np
import pytest

import tilegemm as tg
import tilegemm.interpret  # noqa: F401  (registers the interpreter handlers)
import tilegemm.lower  # noqa: F401  (registers the lowering rules)
from tilegemm.lang import registry
from tilegemm.lang.registry import ARCHS, ENGINES, OPS, define, opdef, reads

from .helpers import raises_at, spec


def test_every_op_kind_has_an_interpreter_handler():
    assert [kind for kind, d in OPS.items() if d.interpreter is None] == []


@pytest.mark.parametrize("arch", ARCHS)
def test_every_op_kind_lowers_on_each_architecture_or_declares_why_not(arch):
    """A declared reason is a sentence for the user; one that depends on the op (a callable) refuses only some ops
    of the kind, so the kind still needs a rule for the rest."""
    missing = [kind for kind, d in OPS.items()
               if arch not in d.lowerings and not isinstance(d.unsupported.get(arch), str)]
    assert missing == []
    for kind, d in OPS.items():
        if isinstance(d.unsupported.get(arch), str):
            assert arch not in d.lowerings, f"{kind} is both lowered and refused on {arch}"
            assert len(d.unsupported[arch]) > 20, f"{kind} on {arch}: the reason must say what to do instead"


def test_every_verifier_rule_is_registered_against_declared_kinds():
    assert sum(len(d.rules) for d in OPS.values()) > 0
    for d in OPS.values():
        assert all(callable(fn) for fn in d.rules)


def test_effects_name_the_operands_and_engines_of_their_op():
    for d in OPS.values():
        names = {o.name for o in d.operands} | set(d.attrs)
        assert all(e.operand in names and (e.engine is None or e.engine in ENGINES) for e in d.effects)
    assert opdef("copy_gmem_to_smem").effect("barrier").engine == "tma_load"
    assert opdef("wgmma").effect("acc").writes and not opdef("wgmma").effect("b").writes


def test_a_declaration_naming_an_unknown_operand_or_kind_twice_is_refused(monkeypatch):
    monkeypatch.setattr(registry, "OPS", dict(OPS))
    with pytest.raises(ValueError, match="effect on unknown operand 'dst'"):
        define("copy_like", "test", operands=("src",), effects=(reads("dst"),))
    with pytest.raises(ValueError, match="declared twice"):
        define("wgmma", "test")


def test_operands_are_read_by_name():
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16),
               scratch_shapes=[tg.SMEM((64, 64), tg.float16), tg.Barrier()])
    def load(a, c, smem, bar):
        tg.copy_gmem_to_smem(a, smem, bar.at[0])
        tg.barrier_wait(bar.at[0])

    graph = load.trace(spec(64, 64))
    (copy,) = [op for op in graph.walk() if op.kind == "copy_gmem_to_smem"]
    assert (copy.arg("src"), copy.arg("dst"), copy.arg("barrier")) == tuple(copy.operands)
    assert opdef(copy).arrival(copy) is copy.arg("barrier")


def test_the_target_is_the_architecture_the_kernel_ops_imply():
    def body(a, c, acc):
        c[...] = acc[...].astype(tg.float16)

    hopper = tg.kernel(body, out_shape=spec(64, 64), scratch_shapes=[tg.ACC((64, 64))]).trace(spec(64, 64))
    assert hopper.target == "sm_90a"

    def tmem_body(a, c, acc):
        loaded = tg.async_load_tmem(acc)
        tg.wait_load_tmem()
        c[...] = loaded.astype(tg.float16)

    blackwell = tg.kernel(tmem_body, out_shape=spec(128, 64),
                          scratch_shapes=[tg.TMEM((128, 64), tg.float32)]).trace(spec(128, 64))
    assert blackwell.target == "sm_100a"


def test_an_op_its_target_cannot_lower_is_refused_at_the_users_line_before_it_runs():
    accumulator = tg.ACC((64, 64))  # @acc

    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16), scratch_shapes=[accumulator], arch="sm_100a")
    def hopper_accumulator(a, c, acc):
        c[...] = acc[...].astype(tg.float16)

    with raises_at("acc", "alloc cannot run on sm_100a", "accumulate in TMEM with tg.TMEM"):
        hopper_accumulator(np.zeros((64, 64), np.float16), interpret=True)
