"""The generated CuTe DSL reads like the kernel: temporaries take the names of the user's variables, `* 1` and
`+ 0` are folded away, and values nothing reads are not computed."""
import re

import tilegemm as tg
from tilegemm.lower.source import SourceWriter


def scaled_rows(scale):
    """One warpgroup copies tile `i` of `a` to `c`, its row offset computed through user variables."""
    @tg.kernel(out_shape=tg.ShapeDtype((256, 64), tg.float16), grid=(2,), grid_names=("i",),
               scratch_shapes=[tg.SMEM((128, 64), tg.float16), tg.ACC((64, 64)), tg.Barrier()])
    def copy_tile(a, c, smem, acc, loaded):
        row0 = tg.axis_index("i") * 128 * scale + 0
        acc[...] = tg.zeros((64, 64), tg.float32)
        tg.copy_gmem_to_smem(a.at[tg.ds(row0, 128), :], smem, loaded.at[0])
        tg.barrier_wait(loaded.at[0])
        tg.commit_smem()
        tg.copy_smem_to_gmem(smem, c.at[tg.ds(row0, 128), :])
        tg.wait_smem_to_gmem(0)
    return copy_tile.lower(tg.ShapeDtype((256, 64), tg.float16), arch="sm_90a").source


def test_a_temporary_takes_the_name_of_the_user_variable_it_was_assigned_to():
    assert re.search(r"^\s+row0 = ", scaled_rows(2), re.M)


def test_multiplying_by_one_and_adding_zero_leave_no_code():
    assert re.search(r"^\s+row0 = i \* 128$", scaled_rows(1), re.M)


def test_a_value_nothing_reads_is_not_computed():
    source = scaled_rows(2)
    assert "cute.full(" not in source and "acc.fill(0.0)" in source


def test_an_unread_assignment_that_is_a_blocks_only_line_stays():
    w = SourceWriter()
    with w.block("if c:"):
        w.line("dead = x + 1")
    w.line("alive = y")
    w.line("use(alive)")
    w.drop_unread({"dead", "alive"})
    assert w.lines == ["if c:", "    dead = x + 1", "alive = y", "use(alive)"]
