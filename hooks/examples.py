"""The command line at work on a page: markdown-exec runs the real CLI at build time."""

from __future__ import annotations

import contextlib
import html
import io
import shlex
from pathlib import Path

from calc.present.cli import main
from hooks.figures import site_catalog

ROOT = Path(__file__).resolve().parent.parent


def _no_wait(seconds: float) -> None:
    """`watch` over saved readings: its polls' times are counted, not clocked, so the output is the
    same without waiting them out."""


def shell(argline: str, shown: dict[str, str] | None = None) -> str:
    """`$ python -m calc ARGS` and what the command prints (stdout and stderr), as a console shows
    it, in HTML: a block prints it and markdown-exec inserts it as it is (html="1").

    The command runs in this process over the catalog the build already holds (read once a build),
    and `watch` replays its saved readings without sleeping between them. `shown` replaces text
    in the transcript, such as a build's temporary path by the name a user would type.
    """
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = main(shlex.split(argline), site_catalog(ROOT), sleep=_no_wait)
    text = f"$ python -m calc {argline}\n{out.getvalue().rstrip()}" + (f"\n$ echo $?\n{status}" if status else "")
    for old, new in (shown or {}).items():
        text = text.replace(old, new)
    return console_html(text)


def console_html(transcript: str) -> str:
    """A console transcript as the site's highlighted code blocks are written: prompts and output
    marked with Pygments' classes (gp, go), so the theme styles them as any console block."""
    lines = []
    for line in transcript.split("\n"):
        if line.startswith("$ "):
            lines.append(f'<span class="gp">$ </span>{html.escape(line[2:], quote=False)}')
        else:
            lines.append(f'<span class="go">{html.escape(line, quote=False)}</span>' if line else "")
    return '<div class="language-console highlight"><pre><span></span><code>' + "\n".join(lines) + "\n</code></pre></div>"
