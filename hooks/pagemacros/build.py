"""The build's state, one object: the catalog, the macros environment (the page being
rendered), where a figure's problems are recorded and what a build computes once. A macro that
reads it takes it as its first argument, `build`; hooks/pagemacros/__init__.py binds it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from calc.catalog.model import Catalog
from calc.checks import accuracy
from hooks.figures import PROBLEMS, FigureError, line_of

if TYPE_CHECKING:
    from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent.parent

SERVING = "dsv4-flash-pair"  # the serving deployment, the one the pages speak of unless they name another


class MacrosEnv(Protocol):
    """What the macros use of mkdocs-macros' environment."""

    @property
    def page(self) -> Page | None: ...

    @property
    def variables(self) -> dict[str, object]: ...

    def macro(self, v: Callable[..., object], name: str = "") -> Callable[..., object]: ...

    def filter(self, v: Callable[..., object], name: str = "") -> Callable[..., object]: ...


@dataclass
class Build:
    """One build of the site, as its macros see it."""

    env: MacrosEnv
    catalog: Catalog
    root: Path = ROOT
    problems: dict[str, list[str]] = field(default_factory=lambda: PROBLEMS)  # a figure's problems, by page, read by hooks/site.py
    accuracy_rows: list[accuracy.Row] | None = None  # the config model's rows, computed once a build

    def page_uri(self) -> str:
        page = self.env.page
        return page.file.src_uri if page else "(page)"

    def page_path(self) -> str:
        page = self.env.page
        return f"docs/{page.file.src_uri}" if page else "(page)"

    def page_where(self, literal: str) -> str:
        """Where a literal is written: the page's path and line."""
        page = self.env.page
        source = page.file.content_string if page else ""
        return f"{self.page_path()}:{line_of(source, literal)}"

    def problem(self, message: str) -> None:
        """Record a problem of the page being rendered; the build fails with it once the page's
        macros are done."""
        self.problems.setdefault(self.page_uri(), []).append(message)

    def glossary_url(self) -> str:
        """The glossary's address relative to the page being rendered."""
        page = self.env.page
        depth = page.url.count("/") if page else 0
        return "../" * depth + "glossary/"


class Missing:
    """What a macro that failed gives the page, its failure recorded: shown as "?", and any
    attribute, item, call or arithmetic on it gives it again. The page renders to its end, so
    the build fails with every problem of the page named, never with a template traceback from
    the first use of the failed value (`{% set r = reading(...) %}{{ r.source }}`)."""

    def __str__(self) -> str:
        return "?"

    def __getattr__(self, name: str) -> Missing:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key: object) -> Missing:
        return self

    def __call__(self, *args: object, **kwargs: object) -> Missing:
        return self

    def __iter__(self) -> Iterator[object]:
        return iter(())

    def _same(self, *other: object) -> Missing:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _same
    __floordiv__ = __rfloordiv__ = __mod__ = __neg__ = __abs__ = _same

    def _unordered(self, other: object) -> bool:
        return False

    __lt__ = __le__ = __gt__ = __ge__ = _unordered


def guarded(build: Build, func: Callable[..., object]) -> Callable[..., object]:
    """What the catalog as it stands cannot give (a figure calc answers as unknown, such as a
    start outside the gate's calibration; a reading no longer there) fails the build with the
    page named, in the same list as a checked literal, never as a traceback."""

    @functools.wraps(func)
    def safe(*args: object, **kwargs: object) -> object:
        if any(isinstance(a, Missing) for a in (*args, *kwargs.values())):
            return Missing()  # what it was given failed, and that is reported already
        try:
            return func(*args, **kwargs)
        except (FigureError, ValueError, KeyError, IndexError, TypeError, ArithmeticError) as error:
            build.problem(f"{build.page_path()}: {func.__name__}: {error}")
            return Missing()

    return safe


def table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; a cell's "|" escaped unless it holds a figure's markup."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") if "<span" not in cell else cell for cell in r) + " |" for r in rows]
    return "\n".join(lines)
