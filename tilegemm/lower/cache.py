"""The compile cache: compiled kernels in memory and on disk, keyed by what determines the binary.

The key hashes the graph fingerprint, the target arch, the compile options, the
installed nvidia-cutlass-dsl version and a digest of tilegemm's lowering code and
the lang helpers it reads (so a changed lowering never reuses stale binaries). On disk an entry is a
directory `<cache>/kernels/<key>/` holding the generated source, PTX, cubin, the
compiled host+device module (MLIR bytecode, to launch without recompiling) and
`meta.json`; it is written to a temporary directory and renamed into place, so
concurrent processes never see half an entry.
"""
import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections import OrderedDict
from importlib import metadata
from pathlib import Path

FILES = ("source.py", "kernel.ptx", "kernel.cubin", "module.mlirbc", "meta.json")

MEMORY_ENTRIES = 64  # compiled kernels kept per process (each holds a loaded module); older ones reload from disk
_MEMORY = OrderedDict()   # key -> CompiledKernel, least recently used first


def cache_dir():
    """$TILEGEMM_CACHE_DIR, else ~/.cache/tilegemm."""
    return Path(os.environ.get("TILEGEMM_CACHE_DIR") or Path.home() / ".cache" / "tilegemm")


@functools.lru_cache(maxsize=None)
def cutlass_dsl_version():
    try:
        return metadata.version("nvidia-cutlass-dsl")
    except metadata.PackageNotFoundError:
        return "unknown"


@functools.lru_cache(maxsize=None)
def lowering_digest():
    """A hash of the code that turns a graph into a binary — tilegemm.lower and the tilegemm.lang helpers it
    reads (analysis, transforms, limits) — so a changed lowering never reuses a stale binary or timing."""
    h = hashlib.sha256()
    package = Path(__file__).parent.parent
    for path in sorted([*package.glob("lower/*.py"), *package.glob("lang/*.py"), *package.glob("lang/rules/*.py")]):
        h.update(str(path.relative_to(package)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def cache_key(fingerprint, arch, options):
    parts = (fingerprint, arch, options, cutlass_dsl_version(), lowering_digest())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def entry_dir(key):
    return cache_dir() / "kernels" / key


def memory_get(key):
    compiled = _MEMORY.get(key)
    if compiled is not None:
        _MEMORY.move_to_end(key)
    return compiled


def memory_put(key, compiled):
    _MEMORY[key] = compiled
    _MEMORY.move_to_end(key)
    while len(_MEMORY) > MEMORY_ENTRIES:
        _MEMORY.popitem(last=False)


def memory_clear():
    """Forgets every kernel compiled or loaded by this process (the disk cache is untouched)."""
    _MEMORY.clear()


def disk_get(key):
    """The files of a complete disk entry as {name: bytes}, or None."""
    d = entry_dir(key)
    try:
        return {name: (d / name).read_bytes() for name in FILES}
    except OSError:
        return None


def disk_put(key, files):
    """Writes an entry atomically; an entry another process wrote first is kept."""
    final = entry_dir(key)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=final.parent))
    try:
        for name, data in files.items():
            (tmp / name).write_bytes(data)
        os.rename(tmp, final)
    except OSError:
        if not final.exists():
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def encode_meta(meta):
    return json.dumps(meta, indent=1, sort_keys=True).encode()


def decode_meta(data):
    return json.loads(data.decode())
