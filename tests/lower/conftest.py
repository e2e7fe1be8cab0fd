"""Every lowering test compiles into a fresh cache directory (never the user's ~/.cache/tilegemm)."""
import pytest

from tilegemm.lower import memory_clear


@pytest.fixture(autouse=True, scope="session")
def private_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("TILEGEMM_CACHE_DIR", str(tmp_path_factory.mktemp("tilegemm-cache")))
    memory_clear()
    yield
    mp.undo()
    memory_clear()
