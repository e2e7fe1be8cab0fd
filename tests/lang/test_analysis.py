"""Static facts about values: view roots, provable divisibility and upper bounds of index arithmetic."""
import tilegemm as tg
from tilegemm.lang.analysis import (K_MAJOR, MN_MAJOR, alloc_of, known_multiple, operand_major, reads_initial_value,
                                     root_ref, upper_bound, view_chain)

from .helpers import F16, spec, trace


def traced(make, scratch=()):
    """Traces a kernel over a 4-block grid and a loop index, returning what `make(i, k, *refs)` built."""
    built = {}

    def body(x, out, *refs):
        def step(k, carry):
            built.update(make(tg.axis_index("x"), k, x, *refs))
        tg.fori_loop(0, 4, step, None)

    trace(body, spec(128, 128), scratch=scratch, grid=(4,))
    return built


def test_known_multiple_follows_products_sums_and_remainders():
    facts = traced(lambda i, k, x: dict(
        literal=48, zero=0, index=i, tile=k * 64, offset=i * 128 + k * 64, shifted=k * 64 + 8, back=i * 96 - 32,
        rem=(k * 64) % 48, slot=k % 4, scaled_slot=(k % 4) * 32, chosen=tg.select(k < 2, k * 16, 32),
        smaller=tg.minimum(k * 8, 24), quotient=(k * 64) // 2))
    assert {name: known_multiple(v) for name, v in facts.items()} == dict(
        literal=48, zero=0, index=1, tile=64, offset=64, shifted=8, back=32, rem=16, slot=1, scaled_slot=32,
        chosen=16, smaller=8, quotient=1)


def test_upper_bound_knows_remainders_minima_and_selects():
    facts = traced(lambda i, k, x: dict(
        literal=5, slot=k % 4, tighter=(k % 8) % 3, smaller=tg.minimum(k, 2), either=tg.select(i < 1, k % 2, 6),
        unknown=k * 2, index=i, open_select=tg.select(i < 1, k, 1)))
    assert {name: upper_bound(v) for name, v in facts.items()} == dict(
        literal=5, slot=3, tighter=2, smaller=2, either=6, unknown=None, index=None, open_select=None)


def test_views_lead_back_to_their_allocation():
    facts = traced(lambda i, k, x, stages: dict(
        x=x, tile=x.at[tg.ds(k * 64, 64)].at[:, 0:32], stages=stages, slot=stages.at[k % 2].at[0:8]),
        scratch=[tg.SMEM((2, 64, 64), F16)])
    assert root_ref(facts["tile"]) is facts["x"] and alloc_of(facts["tile"]) is None
    assert root_ref(facts["slot"]) is facts["stages"]
    assert alloc_of(facts["slot"]) is facts["stages"].producer and alloc_of(facts["slot"]).kind == "alloc"
    chain = view_chain(facts["slot"])
    assert [op.attrs["sizes"] for op in chain] == [(8, 64), (None, 64, 64)]
    assert view_chain(facts["stages"]) == []


def test_transposes_are_views_of_the_same_allocation_and_flip_an_operands_major_ness():
    facts = traced(lambda i, k, x, a_smem, w_smem: dict(
        a=a_smem, a_slice=a_smem.T.at[0:64], w=w_smem, w_t=w_smem.T),
        scratch=[tg.SMEM((64, 128), F16), tg.SMEM((128, 64), F16)])
    assert root_ref(facts["a_slice"]) is facts["a"] and alloc_of(facts["w_t"]) is facts["w"].producer
    assert [op.kind for op in view_chain(facts["a_slice"])] == ["view", "transpose_ref"]
    assert operand_major("A", facts["a_slice"]) == MN_MAJOR and operand_major("B", facts["w_t"]) == K_MAJOR
    assert operand_major("A", facts["w"]) == K_MAJOR and operand_major("B", facts["a"]) == MN_MAJOR


def initial_value_read(*steps, where=None):
    """reads_initial_value of the ACC of a kernel running `steps` (each `step(acc, c_smem)`) in order, in the
    kernel's body or, with `where`, inside the region `where(run)` records."""
    def run(acc, c_smem):
        for step in steps:
            step(acc, c_smem)

    def body(x, out, acc, c_smem):
        if where is None:
            run(acc, c_smem)
        else:
            where(lambda: run(acc, c_smem))

    graph = trace(body, spec(128, 128), scratch=[tg.ACC((64, 64)), tg.SMEM((64, 64), F16)])
    (acc,) = [op.result for op in graph.walk() if op.kind == "alloc" and op.result.type.space == "acc"]
    return reads_initial_value(graph, acc)


def zero(acc, c_smem):
    acc[...] = tg.zeros((64, 64), tg.float32)


def read(acc, c_smem):
    c_smem[...] = acc[...].astype(F16)


def in_a_loop(run):
    tg.fori_loop(0, 4, lambda k, carry: run(), None)


def test_an_accumulator_overwritten_before_every_read_does_not_need_its_initial_zeros():
    assert not initial_value_read(zero, read)


def test_an_accumulator_read_before_it_is_written_needs_its_initial_zeros():
    assert initial_value_read(read, zero)


def test_a_write_inside_a_branch_does_not_cover_a_read_after_it():
    def zero_in_block_0(acc, c_smem):
        tg.when(tg.axis_index("x") == 0)(lambda: zero(acc, c_smem))
    assert initial_value_read(zero_in_block_0, read)


def test_a_write_at_the_top_of_a_loop_body_covers_the_reads_after_it_in_the_body():
    assert not initial_value_read(zero, read, where=in_a_loop)
    assert initial_value_read(read, zero, where=in_a_loop)
