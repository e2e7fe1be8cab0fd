"""`python -m tilegemm [COMMAND] ...`: the `tilegemm` command (tilegemm/cli.py); without a command, the main job."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
