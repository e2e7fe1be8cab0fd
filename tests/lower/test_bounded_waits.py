"""Debug builds with a barrier timeout: every barrier wait becomes one that gives up, reports which wait (and the
user's line) to the host, and traps; it is a separate binary, cached apart from the normal one."""
import re

import pytest

import tilegemm as tg

from . import kernels


@pytest.fixture(scope="module")
def bounded():
    return kernels.tma_wgmma().lower(*kernels.two_row_specs(), arch="sm_90a", debug=tg.Debug(barrier_timeout=0.5))


def test_every_barrier_wait_is_bounded_and_reports_its_line(bounded):
    assert "cute.arch.mbarrier_wait(" not in bounded.source
    assert "tgd.mbarrier_wait_bounded(loaded, loaded_phase & 1, hang_report, 1, 500000000)" in bounded.source
    compiled = bounded.compile()
    (wait,) = compiled.hang_waits
    assert re.fullmatch(r"barrier loaded\[0\] waited for at tests/lower/kernels\.py:\d+: "
                        r"tg\.barrier_wait\(loaded\.at\[0\]\)", wait)


def test_the_bounded_wait_reads_the_global_timer_and_traps(bounded):
    ptx = bounded.compile().ptx
    assert "%globaltimer" in ptx and "trap;" in ptx and "mbarrier.try_wait.parity" in ptx


def test_the_debug_build_is_cached_apart_from_the_normal_one(bounded):
    normal = kernels.tma_wgmma().lower(*kernels.two_row_specs(), arch="sm_90a")
    assert normal.cache_key() != bounded.cache_key()
    assert normal.compile().hang_waits is None and "trap;" not in normal.compile().ptx


def test_the_host_function_takes_the_hang_report_after_the_arrays(bounded):
    assert re.search(r"def one_row_of_tiles\(a_ptr: cute\.Pointer, b_ptr: cute\.Pointer, c_ptr: cute\.Pointer, "
                     r"hang_report_ptr: cute\.Pointer, stream: cuda\.CUstream\)", bounded.source)
