"""The memory guard: MemAvailable polled every 2 s; N polls in a row under the floor kill the rank,
until the head serves (a loaded pair runs below the floor by design)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from calc.units import InputError, parse_number, parse_size, quoted


@dataclass(frozen=True)
class GuardResult:
    killed: bool
    at: float | None
    lowest: int
    lowest_at: float
    longest_run: int


def runs_under(samples: list[tuple[float, int]], floor: int) -> list[int]:
    """For each poll, how many polls in a row (this one included) have been under the floor."""
    out, run_length = [], 0
    for _, available in samples:
        run_length = run_length + 1 if available < floor else 0
        out.append(run_length)
    return out


def run(samples: list[tuple[float, int]], floor: int, polls_in_a_row: int, serving_at: float | None = None) -> GuardResult:
    """Replay the guard over (seconds, MemAvailable bytes) polls."""
    if not samples:
        raise InputError("guard: found no samples, expected at least one poll")
    watched = [s for s in samples if serving_at is None or s[0] < serving_at]
    runs = runs_under(watched, floor)
    longest = max(runs, default=0)
    killed_at = next((t for (t, _), n in zip(watched, runs, strict=True) if n >= polls_in_a_row), None)
    lowest_at, lowest = min(samples, key=lambda s: s[1])
    return GuardResult(killed_at is not None, killed_at, lowest, lowest_at, longest)


# A poll line, read in steps that each take one reading (a single pattern with its optional parts
# side by side, `\s*s?\s+...\s*`, tried every split of a run of spaces: 300 spaces took minutes).
_TIME = re.compile(r"\s*T?\+?~?(?P<t>[0-9]+(?:\.[0-9]+)?)")
_AVAILABLE = re.compile(r"available\s*=\s*")


def _poll(line: str) -> tuple[str, str] | None:
    """(seconds, size) of `<seconds> <size>`, `T+25s available=68501MiB` and the like, each with
    an optional `<- note` or `# comment` after it; None when the line is none of these."""
    head = _TIME.match(line)
    if head is None:
        return None
    rest = line[head.end() :]
    after = rest.lstrip()
    if after[:1] == "s" and after[1:2].isspace():  # "25s ..." or "25 s ..."
        rest = after[1:]
    if not rest[:1].isspace():
        return None
    body = rest.strip()
    label = _AVAILABLE.match(body)
    if label:
        body = body[label.end() :]
    cut = min((i for i in (body.find("<"), body.find("#")) if i >= 0), default=len(body))
    size, tail = body[:cut].strip(), body[cut:]
    if not size or (tail and not tail.startswith(("<-", "#"))):
        return None
    return head["t"], size


def parse_trace(text: str, name: str = "trace") -> list[tuple[float, int]]:
    """Polls written one a line as `<seconds> <MemAvailable with unit>`, such as `25 68501 MiB`
    or `T+25s available=68501MiB`; blank lines and # comments are skipped."""
    samples: list[tuple[float, int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _poll(line)
        if not match:
            raise InputError(f"{name}, line {number}: found {quoted(line.strip())}, expected '<seconds> <size>', such as '25 68501 MiB'")
        seconds, size = match
        if not re.search(r"[A-Za-z]\s*$", size):
            raise InputError(f"{name}, line {number}: found {quoted(size)} without a unit, expected a size such as 68501 MiB or 7.9 GiB")
        try:
            value = parse_size(size, f"{name}, line {number}")
        except InputError as error:
            raise InputError(str(error)) from None
        t = float(parse_number(seconds, f"{name}, line {number}: time", "seconds below 1e30", "seconds"))
        if samples and t < samples[-1][0]:
            raise InputError(f"{name}, line {number}: found time {t:g} s after {samples[-1][0]:g} s, expected times in order")
        samples.append((t, value))
    if not samples:
        raise InputError(f"{name}: found no polls, expected lines such as '25 68501 MiB'")
    return samples
