"""Control flow: axis_index, when, fori_loop carries, nd_loop and planar_snake index arithmetic."""
import itertools
import operator

import pytest

import tilegemm as tg

from .helpers import F16, F32, raises_at, spec, trace

BINOPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.floordiv,
          "rem": operator.mod, "min": min, "max": max, "lt": operator.lt, "le": operator.le, "gt": operator.gt,
          "ge": operator.ge, "eq": operator.eq, "ne": operator.ne, "and": operator.and_, "or": operator.or_}


def run_scalars(region, env, axes, visit):
    """Evaluates the scalar ops of `region` with Python ints (non-negative index arithmetic only).

    `axes` gives axis_index values; every `view` of a kernel parameter calls `visit(starts)`.
    """
    def value(x):
        return env[id(x)] if isinstance(x, tg.Value) else x

    for op in region.ops:
        args = [value(o) if not isinstance(o, tg.Value) or id(o) in env else None for o in op.operands]
        if op.kind == "axis_index":
            env[id(op.result)] = axes[op.attrs["axis"]]
        elif op.kind == "binop":
            env[id(op.result)] = BINOPS[op.attrs["op"]](*args)
        elif op.kind == "select":
            env[id(op.result)] = args[1] if args[0] else args[2]
        elif op.kind == "view" and op.operands[0].producer is None:
            visit(tuple(args[1:]))
        elif op.kind == "when" and args[0]:
            run_scalars(op.regions[0], env, axes, visit)
        elif op.kind == "fori_loop":
            body, carry = op.regions[0], args[2:]
            for i in range(args[0], args[1]):
                env.update({id(a): v for a, v in zip(body.args, [i, *carry])})
                carry = run_scalars(body, env, axes, visit)
            env.update({id(r): v for r, v in zip(op.results, carry)})
        elif op.kind == "yield":
            return args
    return None


def test_axis_index_of_an_unknown_axis_lists_the_known_ones():
    with raises_at("axis", "unknown axis 'warp'; this kernel's axes are ['m', 'n', 'wg']",
                   "a WarpMesh axis exists only inside its core_map"):
        trace(lambda x, out: tg.axis_index("warp"),  # @axis
              spec(128, 128), grid=(2, 2), grid_names=("m", "n"), num_threads=2, thread_name="wg")


def test_axis_size_is_static():
    sizes = []
    trace(lambda x, out: sizes.extend([tg.axis_size("m"), tg.axis_size("cx")]), spec(8, 8), grid=(3,),
          grid_names=("m",), cluster=(2,))
    assert sizes == [3, 2]


def test_when_with_a_python_bool_unrolls_at_trace_time():
    def body(x, out):
        for i in range(3):
            @tg.when(i == 1)
            def _():
                out[...] = x[...]

    ops = list(trace(body, spec(64, 64), out=spec(64, 64)).walk())
    assert [op.kind for op in ops] == ["load", "store"]


def test_when_with_a_traced_bool_records_a_region():
    def body(x, out):
        @tg.when(tg.axis_index("x") == 0)
        def _():
            out[...] = x[...]

    ops = trace(body, spec(64, 64), out=spec(64, 64), grid=(2,)).body.ops
    assert [op.kind for op in ops] == ["axis_index", "binop", "when"]
    assert [op.kind for op in ops[2].regions[0].ops] == ["load", "store"]


def test_when_needs_a_bool():
    with raises_at("int_cond", "tg.when needs a bool condition"):
        trace(lambda x, out: tg.when(tg.axis_index("x"))(lambda: None), spec(8, 8))  # @int_cond


def test_fori_loop_carries_keep_their_types():
    results = {}

    def body(x, out):
        def step(i, carry):
            count, flag, acc = carry
            return count + i, flag | (i == 2), acc + 1.0
        results["final"] = tg.fori_loop(0, 4, step, (0, False, tg.zeros((8, 8), F32)))

    graph = trace(body, spec(8, 8))
    count, flag, acc = results["final"]
    assert (str(count.type), str(flag.type), str(acc.type)) == ("i32", "bool", "array<8x8xf32>")
    loop = next(op for op in graph.walk() if op.kind == "fori_loop")
    assert [str(a.type) for a in loop.regions[0].args] == ["i32", "i32", "bool", "array<8x8xf32>"]
    assert loop.regions[0].ops[-1].kind == "yield"
    env = {}
    run_scalars(graph.body, env, {}, lambda starts: None)
    assert env[id(count)] == 0 + 1 + 2 + 3 and env[id(flag)] is True


def test_fori_loop_refuses_a_carry_that_changes_type():
    def body(x, out):
        tg.fori_loop(0, 4, lambda i, c: c.astype(F16), tg.zeros((8, 8), F32))  # @carry

    with raises_at("carry", "fori_loop carry changed type from array<8x8xf32> to array<8x8xf16>"):
        trace(body, spec(8, 8))


def visits_of_nd_loop(grid, blocks):
    """{block: [tile index, ...]} as an nd_loop over `grid` deals tiles to `blocks` blocks."""
    def body(x, out):
        @tg.nd_loop(grid, collective_axes="b")
        def _(info):
            out.at[info.index]

    graph = trace(body, spec(8, 8), out=spec(*grid), grid=(blocks,), grid_names=("b",))
    visits = {}
    for b in range(blocks):
        run_scalars(graph.body, {}, {"b": b}, visits.setdefault(b, []).append)
    return visits


@pytest.mark.parametrize("grid, blocks", [((3, 5), 4), ((2, 2), 4), ((7,), 3), ((2, 3, 2), 5), ((1, 1), 2)])
def test_nd_loop_deals_every_tile_once_round_robin(grid, blocks):
    visits = visits_of_nd_loop(grid, blocks)
    tiles = list(itertools.product(*map(range, grid)))
    assert sorted(t for v in visits.values() for t in v) == tiles
    for b, seen in visits.items():
        assert seen == tiles[b::blocks]


def snake(shape, minor_dim, tile_width):
    """planar_snake evaluated with Python ints for every linear index."""
    return [tg.planar_snake(lin, shape, minor_dim, tile_width) for lin in range(shape[0] * shape[1])]


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (3, 7), (8, 5), (16, 12)])
@pytest.mark.parametrize("minor_dim", [0, 1])
@pytest.mark.parametrize("tile_width", [1, 2, 3, 4, 8])
def test_planar_snake_visits_every_tile_once_moving_to_neighbours(shape, minor_dim, tile_width):
    order = snake(shape, minor_dim, tile_width)
    assert sorted(order) == list(itertools.product(range(shape[0]), range(shape[1])))
    for (m0, n0), (m1, n1) in zip(order, order[1:]):
        minor_step = (m1 - m0, n1 - n0)[minor_dim]
        major_step = (m1 - m0, n1 - n0)[1 - minor_dim]
        across_the_band = major_step == 0 and minor_step == 1  # also where one band hands over to the next
        next_row_of_the_band = abs(major_step) == 1 and -tile_width < minor_step <= 0
        assert across_the_band or next_row_of_the_band, (order, (m0, n0), (m1, n1))


def test_planar_snake_walks_alternate_bands_backwards():
    assert snake((4, 3), minor_dim=0, tile_width=2) == [
        (0, 0), (1, 0), (0, 1), (1, 1), (0, 2), (1, 2),
        (2, 2), (3, 2), (2, 1), (3, 1), (2, 0), (3, 0)]


def test_traced_planar_snake_computes_what_python_ints_do():
    shape, tile_width = (5, 3), 2

    def body(x, out):
        def step(lin, carry):
            m, n = tg.planar_snake(lin, shape, 1, tile_width)
            out.at[m, n]
        tg.fori_loop(0, shape[0] * shape[1], step, None)

    seen = []
    run_scalars(trace(body, spec(8, 8), out=spec(*shape)).body, {}, {}, seen.append)
    assert seen == snake(shape, 1, tile_width)
