"""The command line at work on a page: markdown-exec runs the real CLI at build time."""

from __future__ import annotations

import contextlib
import io
import shlex
from pathlib import Path

from calc.cli import main
from hooks.figures import site_catalog

ROOT = Path(__file__).resolve().parent.parent


def _no_wait(seconds: float) -> None:
    """`watch` over saved readings: its polls' times are counted, not clocked, so the output is the
    same without waiting them out."""


def shell(argline: str) -> str:
    """`$ python -m calc ARGS` and what the command prints (stdout and stderr), as a console shows it.

    A block prints the result: markdown-exec captures the block's own print, not the CLI's. The
    command runs in this process over the catalog the build already holds (read once a build),
    and `watch` replays its saved readings without sleeping between them.
    """
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = main(shlex.split(argline), site_catalog(ROOT), sleep=_no_wait)
    text = f"$ python -m calc {argline}\n{out.getvalue().rstrip()}"
    return text + (f"\n$ echo $?\n{status}" if status else "")
