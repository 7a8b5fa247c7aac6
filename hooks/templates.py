"""The pages' templates compiled once and kept between builds, as Python keeps a module's bytecode.

The macros plugin compiles every page's markdown as a Jinja template on every build: about half
of its time. A page whose text is unchanged compiles to the same code, so the code is kept in the
build cache by a digest of the page's text, in one file per Jinja release and template settings
(a new filter, a new Jinja or another Python writes a new file), and by the hooks' and calc's
sources, whose filters Jinja may run while compiling. A build rewrites the file only
when a page was compiled anew, and it then holds the pages of that build alone.
"""

from __future__ import annotations

import hashlib
import marshal
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any

import jinja2

from hooks.buildcache import cache_dir, files_digest, keep_cached


def settings_digest(environment: jinja2.Environment) -> str:
    """What besides a page's text decides the code Jinja compiles it to."""
    settings = (
        jinja2.__version__,
        sys.version_info[:2],
        environment.block_start_string,
        environment.block_end_string,
        environment.variable_start_string,
        environment.variable_end_string,
        environment.comment_start_string,
        environment.comment_end_string,
        environment.line_statement_prefix,
        environment.line_comment_prefix,
        environment.trim_blocks,
        environment.lstrip_blocks,
        environment.newline_sequence,
        environment.keep_trailing_newline,
        environment.optimized,
        environment.is_async,
        repr(environment.autoescape) if not callable(environment.autoescape) else environment.autoescape.__qualname__,
        environment.finalize is not None,
        sorted(environment.extensions),
        sorted(environment.filters),
        sorted(environment.tests),
        type(environment.undefined).__qualname__ if not isinstance(environment.undefined, type) else environment.undefined.__qualname__,
    )
    return hashlib.sha256(repr(settings).encode()).hexdigest()[:24]


def code_digest(root: Path) -> str:
    """The hooks' and calc's sources: Jinja runs a filter, and the finalize function, over a
    constant at compile time (`{{ "a*b" | code }}`), so their output is part of the code kept."""
    return files_digest(root, sorted((root / "hooks").rglob("*.py")) + sorted((root / "calc").rglob("*.py")))


class CompiledTemplates:
    """Environment.compile for page text, answered from the build cache when the page is unchanged."""

    def __init__(self, environment: jinja2.Environment, root: Path) -> None:
        self.environment = environment
        self.compile_anew: Callable[..., Any] = environment.compile
        self.root = root
        self.kept: dict[str, CodeType] | None = None  # read on the first page: the settings are final by then
        self.used: dict[str, CodeType] = {}
        self.new = False
        self._path: Path | None = None

    def path(self) -> Path:
        if self._path is None:  # the sources as this build found them
            self._path = cache_dir(self.root) / f"templates-{settings_digest(self.environment)}-{code_digest(self.root)}.marshal"
        return self._path

    def compile(self, source: Any, name: str | None = None, filename: str | None = None, raw: bool = False, defer_init: bool = False) -> Any:
        if not isinstance(source, str) or name or filename or raw or defer_init:
            return self.compile_anew(source, name, filename, raw, defer_init)
        if self.kept is None:
            self.kept = self._read()
        key = hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()
        code = self.kept.get(key)
        if code is None:
            code = self.compile_anew(source)
            self.new = True
        self.used[key] = code
        return code

    def _read(self) -> dict[str, CodeType]:
        try:
            kept = marshal.loads(self.path().read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            return {}
        return kept if isinstance(kept, dict) and all(isinstance(c, CodeType) for c in kept.values()) else {}

    def save(self) -> None:
        """Keep this build's templates when any was compiled anew (or one went unused)."""
        if self.used and (self.new or len(self.used) != len(self.kept or {})):
            keep_cached(self.path(), marshal.dumps(self.used), "templates-*.marshal")
        self.used, self.kept, self.new, self._path = {}, None, False, None
