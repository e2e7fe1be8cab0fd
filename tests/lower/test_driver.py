"""kernel.lower(...): readable source in a real file, compile without a GPU, artifacts, resources, the cache."""
import os
import re
import subprocess
import sys
import textwrap

import pytest

import tilegemm as tg
from tilegemm.lower import Lowered, memory_clear
from tilegemm.lower.compiled import import_source

from . import kernels

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture(scope="module")
def lowered():
    return kernels.tma_wgmma().lower(*kernels.two_row_specs(), arch="sm_90a")


@pytest.fixture(scope="module")
def compiled(lowered):
    return lowered.compile()


# ----------------------------------------------------------------------------- source

def test_source_is_one_host_function_and_one_kernel_in_a_real_file(lowered):
    assert isinstance(lowered, Lowered)
    assert lowered.source.count("@cute.jit") == 1 and lowered.source.count("@cute.kernel") == 1
    with open(lowered.source_path) as f:
        assert f.read() == lowered.source
    assert str(lowered.source_path).startswith(os.environ["TILEGEMM_CACHE_DIR"])


def test_source_names_the_user_line_of_every_operation_with_an_effect(lowered):
    effects = {"copy_gmem_to_smem", "copy_smem_to_gmem", "barrier_wait", "wgmma", "wgmma_wait", "store",
               "commit_smem", "wait_smem_to_gmem", "fori_loop"}
    for op in lowered.graph.walk():
        if op.kind in effects:
            assert f"# {op.loc}: " in lowered.source, f"{op.kind} at {op.loc}"
    assert "tg.wgmma(acc, a_smem, b_smem)" in lowered.source, "comments quote the user's source line"


def test_source_uses_the_kernel_parameter_names(lowered):
    assert "def one_row_of_tiles(a_ptr: cute.Pointer, b_ptr: cute.Pointer, c_ptr: cute.Pointer" in lowered.source
    for name in ("a_smem", "b_smem", "c_smem", "acc", "loaded"):
        assert re.search(rf"\b{name}\b = ", lowered.source), name


def test_params_are_inputs_then_outputs_with_static_shapes(lowered, compiled):
    names = [(p.name, p.shape, str(p.dtype), p.is_output) for p in compiled.params]
    assert names == [("a", (64, 128), "float16", False), ("b", (128, 64), "float16", False),
                     ("c", (64, 64), "float16", True)]
    assert compiled.params == lowered.params and compiled.arch == "sm_90a"


# ----------------------------------------------------------------------------- artifacts

def test_compiles_without_a_gpu_to_ptx_cubin_and_resources(lowered, compiled):
    assert ".target sm_90a" in compiled.ptx and "wgmma.mma_async" in compiled.ptx
    assert compiled.cubin[:4] == b"\x7fELF"
    assert lowered.ptx == compiled.ptx and lowered.cubin == compiled.cubin
    r = compiled.resources
    assert 0 < r.registers <= 255 and not r.spills and r.local_bytes == 0
    module = import_source(lowered.source_path)
    assert r.dynamic_smem == module.SharedStorage.size_in_bytes() == compiled.launch.smem_bytes > 0
    assert r.shared_memory >= r.dynamic_smem
    assert compiled.launch.block == (128, 1, 1) and compiled.launch.grid == (1, 1, 1)


def test_features_name_the_hardware_paths(lowered):
    assert {"tma", "wgmma"} <= set(lowered.features)


def test_cluster_multicast_compiles_to_multicast_copies_and_cluster_barriers():
    m, n, k = 256, 256, 128
    lowered = kernels.multicast(m, n, k).lower(tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16))
    assert {"multicast", "cluster"} <= set(lowered.features)
    compiled = lowered.compile()
    assert compiled.launch.cluster == (2, 1, 1) and compiled.launch.grid == (4, 2, 1)
    for ins in (".multicast::cluster", "barrier.cluster.arrive", "mapa.shared::cluster"):
        assert ins in compiled.ptx, ins


def test_a_cluster_barrier_counts_the_arrivals_of_every_block_of_its_group():
    m, n, k = 256, 256, 128
    lowered = kernels.multicast(m, n, k).lower(tg.ShapeDtype((m, k), tg.float16), tg.ShapeDtype((k, n), tg.float16))
    # num_arrivals=1 per block, 2 blocks in the group, each of the warpgroup's 4 warps arrives: 8 (as interpreted)
    assert "cute.arch.mbarrier_init(consumed + index, 8)" in lowered.source


# ----------------------------------------------------------------------------- cache

def test_second_compile_in_a_process_is_a_memory_hit(lowered, compiled):
    again = kernels.tma_wgmma().lower(*kernels.two_row_specs())
    assert again.compile() is compiled and again.cache_hit == "memory"


def test_a_fresh_memory_cache_loads_the_same_artifacts_from_disk(lowered, compiled):
    memory_clear()
    again = kernels.tma_wgmma().lower(*kernels.two_row_specs())
    loaded = again.compile()
    assert again.cache_hit == "disk" and loaded.from_cache == "disk" and loaded is not compiled
    assert (loaded.ptx, loaded.cubin, loaded.module_bytecode) == (compiled.ptx, compiled.cubin,
                                                                  compiled.module_bytecode)
    assert loaded.params == compiled.params and loaded.launch == compiled.launch


def test_options_and_arch_are_part_of_the_key(lowered):
    assert lowered.cache_key("") != lowered.cache_key("--opt-level 2")
    assert len({lowered.cache_key(""), lowered.cache_key("")}) == 1


PROCESS = textwrap.dedent("""
    import hashlib, sys, time
    sys.path.insert(0, sys.argv[1])
    from tests.lower import kernels
    lowered = kernels.tma_wgmma().lower(*kernels.two_row_specs())
    start = time.perf_counter()
    compiled = lowered.compile()
    seconds = time.perf_counter() - start
    digest = hashlib.sha256(compiled.ptx.encode() + compiled.cubin + compiled.module_bytecode).hexdigest()
    print(lowered.cache_hit, seconds, digest, compiled.resources.registers)
""")


def test_a_second_process_reuses_the_disk_cache_without_compiling(tmp_path):
    root = os.path.dirname(os.path.dirname(HERE))
    env = dict(os.environ, TILEGEMM_CACHE_DIR=str(tmp_path))
    runs = []
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", PROCESS, root], env=env, capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        hit, seconds, digest, registers = run.stdout.split()[-4:]
        runs.append((hit, float(seconds), digest, registers))
    (hit1, t1, d1, r1), (hit2, t2, d2, r2) = runs
    assert (hit1, hit2) == ("None", "disk")
    assert t2 < t1 / 5, f"loading took {t2:.3f}s, compiling {t1:.3f}s"
    assert (d1, r1) == (d2, r2), "identical artifacts"


# ----------------------------------------------------------------------------- errors

def lowering_error(kernel, *specs, arch="sm_90a"):
    """The message of the KernelError verifying `kernel` for `arch` raises: what the lowering cannot express is
    refused when the kernel is traced, before the interpreter or the compiler sees it."""
    with pytest.raises(tg.KernelError) as info:
        kernel.lower(*specs, arch=arch)
    return str(info.value)


def test_register_operands_are_refused_at_the_line():
    msg = lowering_error(kernels.register_a_operand(), *[tg.ShapeDtype((64, 64), tg.float16)] * 2)
    assert re.search(r"kernels\.py:\d+: wgmma A operand is a register array", msg) and "SMEM" in msg


def test_dot_of_register_arrays_is_refused_at_the_line():
    msg = lowering_error(kernels.dot_of_arrays(), *[tg.ShapeDtype((32, 32), tg.float16)] * 2)
    assert re.search(r"kernels\.py:\d+: .*tg\.dot with a register-array A operand is not supported", msg)


def test_other_archs_are_refused():
    msg = lowering_error(kernels.tma_wgmma(), *kernels.two_row_specs(), arch="sm_120a")
    assert "sm_120a" in msg and "sm_90a" in msg and "sm_100a" in msg


def test_accumulator_slices_must_be_whole_row_blocks():
    @tg.kernel(out_shape=tg.ShapeDtype((32, 64), tg.float32), scratch_shapes=[tg.ACC((64, 64))])
    def half_rows(a, c, acc):
        c[...] = acc[...][:32, :]

    msg = lowering_error(half_rows, tg.ShapeDtype((8, 8), tg.float16))
    assert "test_driver.py" in msg and "64 rows" in msg


# ----------------------------------------------------------------------------- cache keys and entries

def test_a_graph_compiled_for_sm90a_and_then_for_sm100a_gets_a_binary_for_each():
    from .examples import example, specs
    kernel = example("hopper_v0_naive").build(64, 64, 64)   # CUDA-core FMAs: lowers for both archs
    hopper = kernel.lower(*specs(64, 64, 64), arch="sm_90a")
    blackwell = kernel.lower(*specs(64, 64, 64), arch="sm_100a")
    assert hopper.cache_key() != blackwell.cache_key()
    for lowered in (hopper, blackwell):
        compiled = lowered.compile()
        assert compiled.arch == lowered.arch and f".target {lowered.arch}\n" in compiled.ptx
    memory_clear()
    again = kernel.lower(*specs(64, 64, 64), arch="sm_100a")
    assert again.compile().arch == "sm_100a" and again.cache_hit == "disk"


def test_the_key_changes_with_each_thing_that_determines_the_binary(monkeypatch):
    from tilegemm.lower import cache
    base = ("fingerprint", "sm_90a", "")
    keys = {cache.cache_key(*base), cache.cache_key("other graph", "sm_90a", ""),
            cache.cache_key("fingerprint", "sm_100a", ""), cache.cache_key("fingerprint", "sm_90a", "--opt-level 2")}
    monkeypatch.setattr(cache, "cutlass_dsl_version", lambda: "another release")
    keys.add(cache.cache_key(*base))
    monkeypatch.setattr(cache, "lowering_digest", lambda: "changed lowering")
    keys.add(cache.cache_key(*base))
    assert len(keys) == 6 and all(re.fullmatch(r"[0-9a-f]{32}", k) for k in keys)
    monkeypatch.undo()
    assert cache.cache_key(*base) == cache.cache_key(*base)


def test_the_lowering_digest_covers_the_lowering_and_the_lang_helpers_it_reads(monkeypatch, tmp_path):
    from tilegemm.lower import cache
    package = tmp_path / "tilegemm"
    for part in ("lower", "lang", "lang/rules"):
        (package / part).mkdir(parents=True)
        (package / part / "x.py").write_text("A = 1\n")
    monkeypatch.setattr(cache, "__file__", str(package / "lower" / "cache.py"))
    digests = set()
    for part in ("lower", "lang", "lang/rules"):
        cache.lowering_digest.cache_clear()
        digests.add(cache.lowering_digest())
        (package / part / "x.py").write_text("A = 2\n")
    cache.lowering_digest.cache_clear()
    digests.add(cache.lowering_digest())
    monkeypatch.undo()
    cache.lowering_digest.cache_clear()
    assert len(digests) == 4


def test_the_memory_cache_keeps_the_most_recently_used_kernels(monkeypatch):
    from tilegemm.lower import cache
    monkeypatch.setattr(cache, "_MEMORY", type(cache._MEMORY)())
    for i in range(cache.MEMORY_ENTRIES):
        cache.memory_put(f"k{i}", i)
    assert cache.memory_get("k0") == 0                       # k0 is now the most recently used
    cache.memory_put("new", -1)                              # one too many: k1, the least recently used, goes
    assert cache.memory_get("k1") is None and cache.memory_get("k0") == 0 and cache.memory_get("new") == -1
    assert len(cache._MEMORY) == cache.MEMORY_ENTRIES


def test_a_disk_entry_is_complete_or_absent_and_the_first_writer_wins():
    from tilegemm.lower import cache
    files = {name: name.encode() for name in cache.FILES}
    assert cache.disk_get("never-written") is None
    assert cache.disk_put("first-wins", files) == cache.entry_dir("first-wins")
    assert cache.disk_put("first-wins", {name: b"later" for name in cache.FILES}) == cache.entry_dir("first-wins")
    assert cache.disk_get("first-wins") == files
    assert [p.name for p in cache.entry_dir("first-wins").parent.iterdir() if p.name.startswith(".")] == []
    (cache.entry_dir("first-wins") / "kernel.cubin").unlink()
    assert cache.disk_get("first-wins") is None
    assert cache.decode_meta(cache.encode_meta({"b": 1, "a": [2]})) == {"a": [2], "b": 1}


def test_the_cache_lives_in_tilegemm_cache_dir_or_else_under_the_home_directory(monkeypatch, tmp_path):
    from pathlib import Path

    from tilegemm.lower import cache
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    assert cache.cache_dir() == tmp_path and cache.entry_dir("k") == tmp_path / "kernels" / "k"
    monkeypatch.delenv("TILEGEMM_CACHE_DIR")
    assert cache.cache_dir() == Path.home() / ".cache" / "tilegemm"


def test_without_nvidia_cutlass_dsl_installed_the_key_names_its_version_unknown(monkeypatch):
    from importlib import metadata

    from tilegemm.lower import cache

    def missing(name):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(metadata, "version", missing)
    cache.cutlass_dsl_version.cache_clear()
    try:
        assert cache.cutlass_dsl_version() == "unknown"
    finally:
        monkeypatch.undo()
        cache.cutlass_dsl_version.cache_clear()


def test_a_partitioned_copy_is_refused_on_sm90a_naming_the_line():
    @tg.kernel(out_shape=tg.ShapeDtype((128, 64), tg.float16), cluster=(2,), cluster_names=("cx",),
               scratch_shapes=[tg.SMEM((64, 64), tg.float16), tg.Barrier()])
    def pair_load(a, c, smem, bar):
        tg.copy_gmem_to_smem(a.at[0:128, 0:64], smem, bar.at[0], collective_axes="cx", partitioned_axis=0)
        tg.barrier_wait(bar.at[0])

    msg = lowering_error(pair_load, tg.ShapeDtype((128, 64), tg.float16))
    assert re.search(r"test_driver\.py:\d+: copy_gmem_to_smem cannot run on sm_90a: a partitioned \(2-CTA\) TMA "
                     r"copy exists on Blackwell: lower for sm_100a", msg), msg


@pytest.mark.parametrize("direction", ["load", "store"])
def test_a_tma_copy_of_part_of_a_buffers_tile_is_refused_naming_the_line(direction):
    @tg.kernel(out_shape=tg.ShapeDtype((64, 64), tg.float16),
               scratch_shapes=[tg.SMEM((64, 64), tg.float16), tg.Barrier()])
    def half_tile(a, c, smem, bar):
        if direction == "load":
            tg.copy_gmem_to_smem(a.at[0:32, :], smem.at[0:32, :], bar.at[0])
            tg.barrier_wait(bar.at[0])
        else:
            tg.copy_smem_to_gmem(smem.at[0:32, :], c.at[0:32, :])
            tg.wait_smem_to_gmem(0)

    msg = lowering_error(half_tile, tg.ShapeDtype((64, 64), tg.float16))
    what = "TMA destination" if direction == "load" else "TMA store source"
    assert re.search(rf"test_driver\.py:\d+: this kernel cannot be lowered for sm_90a: a {what} that is part of a "
                     r"buffer.s tile", msg), msg
    assert "copy whole buffers or whole leading-index selections" in msg
