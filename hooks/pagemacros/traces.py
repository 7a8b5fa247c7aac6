"""Macros of the memory-budget page's published traces: each MemAvailable trace in logs/traces/
replayed through the memory guard (calc.answers.guard) with the catalog's floor and count, and the
reports that give only a lowest reading, each with its source."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from calc.answers import guard
from calc.units import parse_size
from hooks.figures import Value, text
from hooks.pagemacros.build import Build, table
from hooks.pagemacros.every_page import fig

SOURCES = "logs/traces/SOURCES.yaml"
_REPORT = re.compile(r"https://github\.com/([^/\s]+)/([^/\s]+)/(issues|pull)/(\d+)")


@dataclass(frozen=True)
class Trace:
    """A published poll-by-poll trace: its file in logs/traces/, its report, when the run ended and
    when the head served (None: never, or not said); `phase_said` False when the report leaves the
    phase open and the entry records the one it is replayed as."""

    file: str
    url: str
    phase: str
    outcome: str
    ends_at: float | None
    serving_at: float | None
    phase_said: bool = True


@dataclass(frozen=True)
class Reading:
    """A report that gives a lowest MemAvailable (as published, or none) but no polls."""

    url: str
    phase: str
    result: str
    prefill_tokens: int | None
    prompt_note: bool
    lowest_available: str | None
    lowest_approximate: bool


@dataclass(frozen=True)
class Published:
    traces: tuple[Trace, ...]
    readings: tuple[Reading, ...]


def _field(entry: object, where: str, key: str, kinds: tuple[type, ...], expected: str) -> object:
    """entry[key] when it is one of `kinds` (None allowed when NoneType is among them); a clear
    error naming the file, the entry and the field otherwise."""
    value = entry.get(key) if isinstance(entry, dict) else entry
    if not isinstance(entry, dict) or isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise ValueError(f"{SOURCES}: {where}.{key}: found {value!r}, expected {expected}")
    if key == "url" and not _REPORT.fullmatch(str(value)):
        raise ValueError(f"{SOURCES}: {where}.url: found {value!r}, expected a GitHub issue or pull request address")
    return value


def published_traces(root: Path) -> Published:
    """logs/traces/SOURCES.yaml, checked field by field; parsed again only when its text changes
    (the two tables of one build parse it once, a rebuild under `mkdocs serve` after an edit anew)."""
    return _published((root / SOURCES).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=4)
def _published(source: str) -> Published:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load(source, Loader=loader)
    if not isinstance(data, dict):
        raise ValueError(f"{SOURCES}: found {type(data).__name__}, expected a mapping with traces and readings_without_polls")
    word, number, opt = (str,), (int, float, type(None)), "a number of seconds, or null"

    def trace(e: object, w: str) -> Trace:
        return Trace(
            str(_field(e, w, "file", word, "a file name in logs/traces/")),
            str(_field(e, w, "url", word, "a GitHub issue or pull request address")),
            str(_field(e, w, "phase", word, "start or serving")),
            str(_field(e, w, "outcome", word, "what happened, in words")),
            _seconds(_field(e, w, "ends_at", number, opt)),
            _seconds(_field(e, w, "serving_at", number, opt)),
            not isinstance(e, dict) or "phase_said" not in e or bool(_field(e, w, "phase_said", (bool,), "true or false")),
        )

    def reading(e: object, w: str) -> Reading:
        tokens = _field(e, w, "prefill_tokens", (int, type(None)), "a count of tokens, or null")
        low = _field(e, w, "lowest_available", (str, type(None)), "a size as published, such as 4.6 GiB, or null")
        return Reading(
            str(_field(e, w, "url", word, "a GitHub issue or pull request address")),
            str(_field(e, w, "phase", word, "start or serving")),
            str(_field(e, w, "result", word, "crashed, stopped or survived")),
            tokens if isinstance(tokens, int) else None,
            isinstance(e, dict) and bool(e.get("prompt_note")),
            low if isinstance(low, str) else None,
            isinstance(e, dict) and bool(e.get("lowest_approximate")),
        )

    lists = {key: data.get(key) for key in ("traces", "readings_without_polls")}
    for key, items in lists.items():
        if not isinstance(items, list):
            raise ValueError(f"{SOURCES}: {key}: found {items!r}, expected a list of entries")
    return Published(
        tuple(trace(e, f"traces[{i}]") for i, e in enumerate(lists["traces"] or [])),
        tuple(reading(e, f"readings_without_polls[{i}]") for i, e in enumerate(lists["readings_without_polls"] or [])),
    )


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _report(url: str) -> str:
    """A report's link, named as its repository names it: owner/name issue N, pull request N."""
    match = _REPORT.fullmatch(url)
    if match is None:
        raise ValueError(f"{SOURCES}: url: found {url!r}, expected a GitHub issue or pull request address")
    repo, name, kind, number = match.groups()
    noun = "pull request" if kind == "pull" else "issue"
    return f"[{text(repo)}/{text(name)} {noun} {number}]({url})"


def _at(t: float | None, quiet: str) -> str:
    return f"kills at {fig(t, 's', 0)}" if t is not None else quiet


def published_traces_table(build: Build) -> str:
    """Each published trace replayed: as the guard watches (until the head serves) and kept on."""
    policy = build.catalog.policy["guard"]
    floor, in_a_row = policy["floor"].size, policy["polls_in_a_row"].count
    rows = []
    for e in published_traces(build.root).traces:
        samples = guard.parse_trace((build.root / "logs" / "traces" / e.file).read_text(encoding="utf-8"), e.file)
        watched = guard.run(samples, floor, in_a_row, e.serving_at)
        kept_on = guard.run(samples, floor, in_a_row)
        ended = f"at {fig(e.ends_at, 's', 0)}" if e.ends_at is not None else "went on serving"
        during = "the start" if e.phase == "start" else "serving"
        rows.append(
            (
                _report(e.url),
                during if e.phase_said else f"not said; replayed as {during}",
                f"{e.outcome}, {ended}",
                f"{fig(len(samples), 'count')} ({fig(kept_on.longest_run, 'count')})",
                fig(kept_on.lowest, "GiB", 2, source=e.url),
                _at(watched.at, "stood down, serving" if e.serving_at == 0 else "quiet") + "; kept on: " + _at(kept_on.at, "quiet"),
            )
        )
    head = (
        "Report",
        "During",
        "Outcome, when",
        "Polls (longest run under the floor)",
        "Lowest MemAvailable",
        "The guard as it watches; kept on after serving",
    )
    return table(head, rows)


def readings_without_polls_table(build: Build) -> str:
    """The reports that give a lowest reading or none, and what each lacks for a replay."""
    rows = []
    for e in published_traces(build.root).readings:
        lowest = Value(parse_size(e.lowest_available), e.url, "", e.lowest_approximate) if e.lowest_available else None
        prompt = fig(e.prefill_tokens, "tokens") if e.prefill_tokens else "not given" if e.prompt_note else "no request"
        rows.append(
            (
                _report(e.url),
                "the start" if e.phase == "start" else "serving",
                prompt,
                e.result,
                fig(lowest, "GiB", 2) if lowest else "not given",
            )
        )
    return table(("Report", "During", "Prompt", "Outcome", "Lowest MemAvailable given"), rows)


MACROS = (published_traces_table, readings_without_polls_table)
