"""Who runs an op, as the counting rules see it: conditions evaluated over the cluster, thread and warp axes."""
import pytest

import tilegemm as tg
from tilegemm.lang.rules.executors import ExecutorSpace, Unknown, evaluate, mentions_axes, with_enclosing

from .helpers import spec, trace

PAIR = dict(cluster=(2,), cluster_names=("pair",))


def test_evaluate_computes_what_the_given_axes_decide_and_nothing_else():
    facts = {}

    def body(x, out):
        i = tg.axis_index("pair")

        def step(k, _):
            facts.update(literal=3, index=i, leader=i == 0, mixed=(i == 1) & (k > 0), off=(i > 9) & (k > 0),
                         on=(i < 9) | (k > 0), chosen=tg.select(i < 2, 7, k), loop=k + 1, halves=i // 2)
        tg.fori_loop(0, 2, step, None)
    trace(body, spec(8, 8), **PAIR)
    assert {name: evaluate(v, {"pair": 1}) for name, v in facts.items()} == dict(
        literal=3, index=1, leader=False, mixed=None, off=False, on=True, chosen=7, loop=None, halves=None)
    assert mentions_axes(facts["mixed"], {"pair"}) and not mentions_axes(facts["loop"], {"pair"})


def executors_of_the_arrive(condition, arrivals=1, **config):
    """The executors ExecutorSpace finds for a barrier_arrive under `tg.when(condition(wg, k))` in a loop (on a
    barrier of `arrivals`, so that the kernel verifies)."""
    def body(x, out, done):
        wg = tg.axis_index("wg")
        tg.fori_loop(0, 2, lambda k, _: tg.when(condition(wg, k))(lambda: tg.barrier_arrive(done)), None)
    graph = trace(body, spec(8, 8), scratch=[tg.Barrier(num_arrivals=arrivals)], num_threads=3, thread_name="wg",
                  **config)
    (enclosing,) = [enc for op, enc in with_enclosing(graph.body.ops) if op.kind == "barrier_arrive"]
    return ExecutorSpace(graph).executors(enclosing)


def test_conditions_on_threads_select_executors_and_conditions_on_loops_do_not():
    assert [run["wg"] for run in executors_of_the_arrive(lambda wg, k: wg > 0, arrivals=2)] == [1, 2]
    assert [run["wg"] for run in executors_of_the_arrive(lambda wg, k: k > 0, arrivals=3)] == [0, 1, 2]
    runs = executors_of_the_arrive(lambda wg, k: wg == 1, **PAIR)
    assert [(run["pair"], run["wg"]) for run in runs] == [(0, 1), (1, 1)]


def test_a_condition_mixing_threads_and_loop_indices_cannot_be_followed():
    with pytest.raises(Unknown):
        executors_of_the_arrive(lambda wg, k: k % 3 == wg)
