"""The on-disk cache of measured times: where it lives, what it keeps, what it refuses."""
import json

import pytest

from tilegemm.model import get_device
from tilegemm.tune import ResultCache


def test_entries_survive_a_new_process(tmp_path):
    key = ResultCache.key(get_device("h200"), "0123abcd")
    ResultCache(tmp_path).put(key, {"seconds": 1.5e-3, "params": {"stages": 4}, "shape": [8, 8, 8]})
    assert ResultCache(tmp_path).get(key)["seconds"] == 1.5e-3
    assert ResultCache(tmp_path).get(ResultCache.key(get_device("h100"), "0123abcd")) is None


def test_the_default_place_follows_the_compile_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEGEMM_CACHE_DIR", str(tmp_path))
    assert ResultCache().path == str(tmp_path / ResultCache.FILE_NAME)


def test_a_corrupt_file_is_named_not_silently_replaced(tmp_path):
    (tmp_path / ResultCache.FILE_NAME).write_text("{not json")
    with pytest.raises(ValueError, match="tune.json"):
        ResultCache(tmp_path)
    assert (tmp_path / ResultCache.FILE_NAME).read_text() == "{not json"


def test_the_file_is_plain_json(tmp_path):
    ResultCache(tmp_path).put("H200|abc", {"seconds": 2.0})
    assert json.loads((tmp_path / ResultCache.FILE_NAME).read_text()) == {"H200|abc": {"seconds": 2.0}}
