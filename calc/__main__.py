"""`python -m calc`, and the `vllm-settings` command that `pip install .` gives."""

import os
import sys

from calc.present.cli import main


def run() -> None:
    """Run the command line and exit with its status."""
    try:
        status = main()
        sys.stdout.flush()
    except BrokenPipeError:  # the reader stopped early (`| head`): nothing left to say, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        status = 1
    sys.exit(status)


if __name__ == "__main__":
    run()
