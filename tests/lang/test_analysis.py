"""Static facts about values: view roots, provable divisibility and upper bounds of index arithmetic."""
import tilegemm as tg
from tilegemm.lang.analysis import alloc_of, known_multiple, root_ref, upper_bound, view_chain

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
