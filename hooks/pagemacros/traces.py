"""Macros of the memory-budget page's published traces: each MemAvailable trace in logs/traces/
replayed through the memory guard (calc.answers.guard) with the catalog's floor and count, and the
reports that give only a lowest reading, each with its source."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calc.answers import guard
from calc.units import parse_size
from hooks.figures import Value, text
from hooks.pagemacros.build import Build, table
from hooks.pagemacros.every_page import fig


def published_traces(root: Path) -> dict[str, Any]:
    """logs/traces/SOURCES.yaml as read."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    sources: dict[str, Any] = yaml.load((root / "logs" / "traces" / "SOURCES.yaml").read_text(encoding="utf-8"), Loader=loader)
    return sources


def _report(url: str) -> str:
    """A report's link, named as its repository names it: owner/name issue N, pull request N."""
    repo, _, rest = url.removeprefix("https://github.com/").partition("/")
    name, kind, number = rest.split("/")
    noun = "pull request" if kind == "pull" else "issue"
    return f"[{text(repo)}/{text(name)} {noun} {number}]({url})"


def _at(t: float | None, quiet: str) -> str:
    return f"kills at {fig(t, 's', 0)}" if t is not None else quiet


def published_traces_table(build: Build) -> str:
    """Each published trace replayed: as the guard watches (until the head serves) and kept on."""
    policy = build.catalog.policy["guard"]
    floor, in_a_row = policy["floor"].size, policy["polls_in_a_row"].count
    rows = []
    for e in published_traces(build.root)["traces"]:
        samples = guard.parse_trace((build.root / "logs" / "traces" / e["file"]).read_text(encoding="utf-8"), e["file"])
        watched = guard.run(samples, floor, in_a_row, e["serving_at"])
        kept_on = guard.run(samples, floor, in_a_row)
        ended = fig(e["ends_at"], "s", 0) if e["ends_at"] is not None else "went on serving"
        rows.append(
            (
                _report(e["url"]),
                "the start" if e["phase"] == "start" else "serving",
                e["outcome"],
                ended,
                fig(len(samples), "count"),
                fig(kept_on.lowest, "GiB", 2, source=e["url"]),
                fig(kept_on.longest_run, "count"),
                _at(watched.at, "stood down, serving" if e["serving_at"] == 0 else "quiet"),
                _at(kept_on.at, "quiet"),
            )
        )
    head = (
        "Report",
        "During",
        "Outcome",
        "Ended at",
        "Polls",
        "Lowest MemAvailable",
        "Longest run under the floor",
        "The guard, as it watches",
        "The guard, kept on after serving",
    )
    return table(head, rows)


def readings_without_polls_table(build: Build) -> str:
    """The reports that give a lowest reading or none, and what each lacks for a replay."""
    rows = []
    for e in published_traces(build.root)["readings_without_polls"]:
        low = e["lowest_available"]
        lowest = Value(parse_size(low), e["url"], "", bool(e.get("lowest_approximate"))) if low else None
        prompt = fig(e["prefill_tokens"], "tokens") if e["prefill_tokens"] else "not given" if e.get("prompt_note") else "no request"
        rows.append(
            (
                _report(e["url"]),
                "the start" if e["phase"] == "start" else "serving",
                prompt,
                e["result"],
                fig(lowest, "GiB", 2) if lowest else "not given",
            )
        )
    return table(("Report", "During", "Prompt", "Outcome", "Lowest MemAvailable given"), rows)


MACROS = (published_traces_table, readings_without_polls_table)
