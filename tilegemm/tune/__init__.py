"""The model-driven autotuner: rank a parameter space by the budget table, measure only the top."""
from .cache import ResultCache
from .measure import GpuTimer
from .result import Candidate, TuneResult
from .tuner import tune

__all__ = ["Candidate", "GpuTimer", "ResultCache", "TuneResult", "tune"]
