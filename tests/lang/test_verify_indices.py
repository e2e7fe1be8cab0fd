"""Verifier: an index that can leave its barrier array is explained by how it is computed."""
import pytest

import tilegemm as tg

from .helpers import spec, trace


@pytest.mark.parametrize("index, bound", [(lambda ki: tg.minimum(ki, 5), 5),
                                          (lambda ki: tg.minimum(tg.minimum(ki, 6), 4), 4)])
def test_an_index_bounded_without_a_modulo_is_not_said_to_be_taken_modulo(index, bound):
    def body(x, out, bars):
        tg.fori_loop(0, 8, lambda ki, c: tg.barrier_wait(bars.at[index(ki)]), None)

    with pytest.raises(tg.KernelError) as err:
        trace(body, spec(128, 128), scratch=[tg.Barrier(num_barriers=3)])
    message = str(err.value)
    assert f"this barrier index can be {bound}, but the barrier array has num_barriers=3" in message
    assert "taken %" not in message and "use %" not in message and f"declare num_barriers={bound + 1}" in message
