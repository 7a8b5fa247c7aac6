import os
import sys

from calc.cli import main

try:
    status = main()
    sys.stdout.flush()
except BrokenPipeError:  # the reader stopped early (`| head`): nothing left to say, and no traceback
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    status = 1
sys.exit(status)
