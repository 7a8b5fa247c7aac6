"""The command line at work on a page: markdown-exec runs the real CLI at build time."""

from __future__ import annotations

import contextlib
import io
import shlex

from calc.cli import main


def shell(argline: str) -> str:
    """`$ python -m calc ARGS` and what the command prints (stdout and stderr), as a console shows it.

    A block prints the result: markdown-exec captures the block's own print, not the CLI's.
    """
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = main(shlex.split(argline))
    text = f"$ python -m calc {argline}\n{out.getvalue().rstrip()}"
    return text + (f"\n$ echo $?\n{status}" if status else "")
