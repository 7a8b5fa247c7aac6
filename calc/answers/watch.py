"""Watching memory through a start: MemAvailable, MemFree and the page cache polled every few
seconds for a bounded time, with what the memory guard would do (calc.answers.guard decides) and the polls
where memory is available but not free.

Reading and sleeping are passed in, so the command line polls /proc/meminfo in real time and the
tests feed it files without waiting.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from calc.answers import guard, meminfo
from calc.units import InputError, fmt


@dataclass(frozen=True)
class Poll:
    """One poll: seconds since the first, the three readings in bytes, and what they mean."""

    t: float
    available: int
    free: int
    cache: int | None
    run_under_floor: int  # polls in a row under the floor, this one included (capped at the guard's count)
    guard_kills: bool  # the guard would kill the rank at this poll
    available_not_free: bool  # MemAvailable clears the floor but MemFree does not: the rest is page cache


# A watch is a person's, through one start: polls no closer than the kernel's figures move, for
# no longer than a day, and never more polls than a trace file should hold.
SHORTEST_INTERVAL = 0.1
LONGEST_DURATION = 86_400
MOST_POLLS = 100_000


def polls(count: int, interval: float) -> Iterator[float]:
    """The poll times for a bounded watch, one at a time: 0, interval, 2 x interval, ..."""
    return (n * interval for n in range(count))


def poll_count(duration: float, interval: float) -> int:
    if not interval > 0:
        raise InputError(f"--interval: found {interval:g}, expected seconds above zero, such as 2")
    if interval < SHORTEST_INTERVAL:
        raise InputError(f"--interval: found {interval:g}, expected at least {SHORTEST_INTERVAL:g} seconds, such as 2")
    if not 0 <= duration <= LONGEST_DURATION:
        raise InputError(f"--duration: found {duration:g}, expected seconds from 0 to {LONGEST_DURATION:,} (a day), such as 120")
    count = int(duration // interval) + 1
    if count > MOST_POLLS:
        raise InputError(f"--duration / --interval: found {count:,} polls, expected at most {MOST_POLLS:,}: a longer interval or a shorter duration")
    return count


def watch(
    read: Callable[[int], str],
    sleep: Callable[[float], None],
    count: int,
    interval: float,
    floor: int,
    polls_in_a_row: int,
    what: str = "/proc/meminfo",
) -> Iterator[Poll]:
    """Poll `count` times, `interval` seconds apart; `read(n)` returns the n-th meminfo text."""
    samples: list[tuple[float, int]] = []
    killed = False
    for n, t in enumerate(polls(count, interval)):
        if n:
            sleep(interval)
        reading = meminfo.parse(read(n), f"{what}, poll {n + 1}")
        samples.append((t, reading.available.value))
        run = guard.runs_under(samples[-polls_in_a_row:], floor)[-1]
        kills = not killed and run >= polls_in_a_row
        killed = killed or kills
        cache = reading.cache.value if reading.cache else None
        yield Poll(t, reading.available.value, reading.free.value, cache, run, kills, reading.available.value >= floor > reading.free.value)


def trace_line(p: Poll) -> str:
    """One poll as `python -m calc guard` reads it back: seconds, MemAvailable in exact bytes, a comment."""
    cache = f", cache {p.cache} B" if p.cache is not None else ""
    notes = (" <- the guard kills here" if p.guard_kills else "") + (" <- available but not free" if p.available_not_free else "")
    return f"{p.t:g} {p.available} B # free {p.free} B{cache}{notes}"


def poll_text(p: Poll) -> str:
    """One poll for a person watching: the three readings rounded, and what they mean."""
    cache = f", page cache {fmt(p.cache, 'GiB')}" if p.cache is not None else ""
    line = f"T+{fmt(p.t, 's', 0)}: MemAvailable {fmt(p.available, 'GiB')}, MemFree {fmt(p.free, 'GiB')}{cache}"
    if p.guard_kills:
        line += f"; the guard would kill the rank now ({p.run_under_floor} polls in a row under the floor)"
    elif p.run_under_floor:
        line += f"; under the floor, {p.run_under_floor} in a row"
    if p.available_not_free:
        line += "; available but not free: the rest is page cache the kernel must reclaim before the driver can use it"
    return line


def summary(seen: list[Poll], floor: int, polls_in_a_row: int) -> str:
    """What the guard would have done over the whole watch (calc.answers.guard.run), and the page-cache polls."""
    result = guard.run([(p.t, p.available) for p in seen], floor, polls_in_a_row)
    verdict = f"would kill the rank at T+{fmt(result.at, 's', 0)}" if result.at is not None else "would let the start through"
    cached = [p for p in seen if p.available_not_free]
    tail = (
        f"; available but not free at {fmt(len(cached), 'count')} of {fmt(len(seen), 'count')} polls, first at T+{fmt(cached[0].t, 's', 0)}"
        if cached
        else "; free memory cleared the floor whenever MemAvailable did"
    )
    return (
        f"Guard ({polls_in_a_row} polls in a row under {fmt(floor, 'GiB')}) over {fmt(len(seen), 'count')} polls: {verdict}. "
        f"Lowest MemAvailable {fmt(result.lowest, 'GiB')} at T+{fmt(result.lowest_at, 's', 0)}{tail}."
    )
