"""On-disk cache of measured tuning results: one JSON file, keyed by device and graph fingerprint.

Equal fingerprints mean identical generated code (docs/graph-ir.md), so a
measurement made for one build of a configuration is valid for any other
build that traces to the same graph on the same device.
"""
import json
import os
import tempfile

from ..lower import cache_dir as default_cache_dir
from ..lower.cache import cutlass_dsl_version, lowering_digest


class ResultCache:
    """Measured seconds per (device, graph fingerprint), read once and rewritten atomically on every put.

    The file lives beside the compile cache ($TILEGEMM_CACHE_DIR, else ~/.cache/tilegemm)
    unless `cache_dir` says otherwise.
    """

    FILE_NAME = "tune.json"

    def __init__(self, cache_dir=None):
        self.path = os.path.join(str(cache_dir or default_cache_dir()), self.FILE_NAME)
        self._entries = self._read()

    @staticmethod
    def key(device, fingerprint):
        """Device, graph, and the code that compiled it: a new lowering or CuTe DSL version re-measures."""
        return f"{device.name}|{fingerprint}|{cutlass_dsl_version()}|{lowering_digest()}"

    def get(self, key):
        """The stored record (a dict with 'seconds', 'params', 'shape') or None."""
        return self._entries.get(key)

    def put(self, key, record):
        self._entries[key] = record
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(self.path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump(self._entries, f, indent=1, sort_keys=True)
        os.replace(tmp, self.path)

    def _read(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            return {}
        except json.JSONDecodeError as e:
            raise ValueError(f"the tuning cache {self.path} is not valid JSON ({e}); delete it to start afresh") from e
