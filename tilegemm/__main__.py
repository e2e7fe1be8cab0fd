"""`python -m tilegemm [EXAMPLE.py] [options]`: the main job, the flagship Hopper kernel through every stage."""
import os
import sys

from .showcase import load_example, main

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
DEFAULT_EXAMPLE = os.path.join(EXAMPLES, "hopper_flagship.py")

if __name__ == "__main__":
    argv = sys.argv[1:]
    path = argv.pop(0) if argv and argv[0].endswith(".py") else DEFAULT_EXAMPLE
    sys.exit(main(load_example(path), argv))
