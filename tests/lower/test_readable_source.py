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


def test_an_accumulator_overwritten_before_any_read_is_not_also_zeroed_where_it_is_allocated():
    # the kernel's own `acc[...] = tg.zeros(...)` is the only fill: the ACC's initial zeros would be dead
    assert scaled_rows(2).count("acc.fill(0.0)") == 1


def test_an_unread_assignment_that_is_a_blocks_only_line_stays():
    w = SourceWriter()
    with w.block("if c:"):
        w.line("dead = x + 1")
    w.line("alive = y")
    w.line("use(alive)")
    w.drop_unread({"dead", "alive"})
    assert w.lines == ["if c:", "    dead = x + 1", "alive = y", "use(alive)"]


def offset_rows(added, subtracted):
    """Copies 128 rows of `a` to `c` through SMEM from row `axis * 64 + added - subtracted`."""
    @tg.kernel(out_shape=tg.ShapeDtype((256, 64), tg.float16), grid=(1,), grid_names=("i",),
               scratch_shapes=[tg.SMEM((128, 64), tg.float16), tg.Barrier()])
    def copy_rows(a, c, smem, loaded):
        row0 = tg.axis_index("i") * 64 + added - subtracted
        tg.copy_gmem_to_smem(a.at[tg.ds(row0, 128), :], smem, loaded.at[0])
        tg.barrier_wait(loaded.at[0])
        tg.copy_smem_to_gmem(smem, c.at[tg.ds(row0, 128), :])
        tg.wait_smem_to_gmem(0)
    return copy_rows.lower(tg.ShapeDtype((256, 64), tg.float16), arch="sm_90a").source


def test_constants_added_and_subtracted_in_turn_are_folded_into_one():
    assert re.search(r"^\s+row0 = \(?i \* 64\)? \+ 64$", offset_rows(96, 32), re.M)
    assert re.search(r"^\s+row0 = \(?i \* 64\)? - 8$", offset_rows(8, 16), re.M)


def test_constants_that_cancel_leave_no_code():
    assert re.search(r"^\s+row0 = i \* 64$", offset_rows(32, 32), re.M)


def test_comments_do_not_keep_a_value_alive_and_the_comment_on_a_dropped_line_goes_with_it():
    w = SourceWriter()
    w.comment("kernel.py:3: ks = ki * 64")
    w.line("ks = i * 64")
    w.comment("kernel.py:4: copy(a.at[ks])")
    w.line("copy(a_tiles[None, i])", "ks // 64")
    w.drop_unread({"ks"})
    assert w.lines == ["# kernel.py:4: copy(a.at[ks])", "copy(a_tiles[None, i])  # ks // 64"]


def test_a_comment_followed_by_other_code_stays_when_the_line_after_it_is_dropped():
    w = SourceWriter()
    w.comment("kernel.py:3: t = i * 2; use(i)")
    w.line("t = i * 2")
    w.line("use(i)")
    w.drop_unread({"t"})
    assert w.lines == ["# kernel.py:3: t = i * 2; use(i)", "use(i)"]
