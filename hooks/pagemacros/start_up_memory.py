"""Macros of the start-up memory page: a MemAvailable trace, the prefetch rule and the memory
guard over it."""

from __future__ import annotations

from calc import units
from calc.answers import guard, prefetch
from hooks.figures import text
from hooks.pagemacros.build import Build, table
from hooks.pagemacros.every_page import fig


def trace_table(build: Build, trace_id: str = "kernel-init-report") -> str:
    trace = build.catalog.traces[trace_id]
    rows = []
    previous = None
    for s in trace["samples"]:
        drop = fig(units.shown(previous, "GiB") - units.shown(s["available"], "GiB"), "GiB") if previous is not None else "—"
        rows.append((fig(s["t"], "s", 0), fig(s["available"], "MiB", 0), fig(s["available"], "GiB"), drop, text(s.get("event", ""))))
        previous = s["available"]
    return table(("Time", "MemAvailable", "GiB", "Drop since the poll before", "In the log"), rows)


def prefetch_table(build: Build, trace_id: str = "kernel-init-report") -> str:
    """vLLM's auto-prefetch rule applied to a trace's checkpoint at each poll."""
    trace = build.catalog.traces[trace_id]
    share = build.catalog.policy["vllm"]["prefetch_fraction"]
    checkpoint = trace["checkpoint"]
    rows = []
    for s in trace["samples"]:
        largest = prefetch.largest_prefetched(s["available"], share.fraction)
        enabled = prefetch.prefetch_enabled(checkpoint.size, s["available"], share.fraction)
        rows.append(
            (
                fig(s["t"], "s", 0),
                fig(s["available"]),
                fig(largest, "GB", 1, down=True),
                "prefetched" if enabled else "**not prefetched**",
                text(s.get("event", "")),
            )
        )
    head = ("Time", "MemAvailable", f"{fig(share, '%', 0)} of it, rounded down", f"{fig(checkpoint, 'GB', 0)} checkpoint, size rule", "In the log")
    return table(head, rows)


def guard_replay_table(build: Build, trace_id: str = "kernel-init-report") -> str:
    """The memory guard's view of a trace, poll by poll."""
    trace = build.catalog.traces[trace_id]
    policy = build.catalog.policy["guard"]
    floor = policy["floor"].size
    samples = trace["samples"]
    runs = guard.runs_under([(s["t"], s["available"]) for s in samples], floor)
    rows = [(fig(s["t"], "s", 0), fig(s["available"]), fig(s["available"] - floor), fig(n, "count")) for s, n in zip(samples, runs, strict=True)]
    head = ("Time", "MemAvailable", f"Above the {fig(policy['floor'], 'GiB', 0)} floor", "Polls in a row under it")
    return table(head, rows)


def guard_result(build: Build, trace_id: str = "kernel-init-report") -> guard.GuardResult:
    trace = build.catalog.traces[trace_id]
    policy = build.catalog.policy["guard"]
    samples = [(s["t"], s["available"]) for s in trace["samples"]]
    return guard.run(samples, policy["floor"].size, policy["polls_in_a_row"].count)


MACROS = (
    trace_table,
    prefetch_table,
    guard_replay_table,
    guard_result,
)
