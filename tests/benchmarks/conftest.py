"""benchmarks/ on the import path, as when its scripts run alone (they import their sibling scripts by name)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "benchmarks"))
