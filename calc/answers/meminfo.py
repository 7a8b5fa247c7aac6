"""Memory readings as people paste them: /proc/meminfo, or the Mem: row of `free`.

`free` does not print its unit, so its output is read only when the unit is known: from the
command line pasted with it (`free -b`, `free -m`, ...), from `unit`, or from the suffixes of
`free -h` (rounded by free itself, so marked approximate). A magnitude is never guessed.
Each figure keeps the line it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from calc.units import LARGEST_SIZE, InputError, KiB, parse_number, quoted

# free's unit flags (procps): bytes, kibibytes (the default), mebibytes, gibibytes.
FREE_UNITS = {"b": 1, "k": KiB, "m": KiB**2, "g": KiB**3}
_FREE_FLAGS = {"-b": "b", "--bytes": "b", "-k": "k", "--kibi": "k", "-m": "m", "--mebi": "m", "-g": "g", "--gibi": "g"}
_HUMAN = {"B": 1, "Ki": KiB, "Mi": KiB**2, "Gi": KiB**3, "Ti": KiB**4, "K": KiB, "M": KiB**2, "G": KiB**3, "T": KiB**4}
_COMMAND = re.compile(r"(?:^|[\s$#>])free((?:\s+-{1,2}[a-z]+)*)\s*$")
# Matched against a stripped line, from its start only: each part can be read one way, so a long
# line is read in one pass (an optional space-and-unit after the figure cannot trade spaces with it).
_MEMINFO = re.compile(r"(?P<key>[A-Za-z_()0-9]+):\s+(?P<num>[0-9]+)(?:\s+(?P<unit>kB))?")
_HUMAN_FIGURE = re.compile(r"(?P<num>[0-9]+(?:[.,][0-9]+)?)(?P<unit>[A-Za-z]+)")
MAX_FIGURE_DIGITS = 20  # free -b of a 1 PiB box prints 16 digits


def _bytes(digits: str, scale: int, what: str, column: str = "") -> int:
    """A figure as the kernel or free prints it (ASCII digits, whole), times its unit, as bytes;
    bounded on its digits before int() and on its bytes after: no box holds a petabyte."""
    where = f" in column {column}" if column else ""
    if not re.fullmatch(r"[0-9]+", digits):
        raise InputError(f"{what}: found {quoted(digits)}{where}, expected a whole number")
    if len(digits.lstrip("0")) > MAX_FIGURE_DIGITS:
        raise InputError(f"{what}: found a figure of {len(digits)} digits{where}, expected a memory size below 1 PiB")
    value = int(digits) * scale
    if value > LARGEST_SIZE:
        raise InputError(f"{what}: found {digits}{where}, expected a memory size below 1 PiB")
    return value


def _match(line: str) -> re.Match[str] | None:
    return _MEMINFO.fullmatch(line.strip())


@dataclass(frozen=True)
class Line:
    """One figure and the line it was read from (1-based, as pasted)."""

    value: int
    line_no: int
    text: str


@dataclass(frozen=True)
class MemoryReading:
    """What one paste says, in bytes: MemTotal, MemFree, MemAvailable and the page cache."""

    source: str  # "meminfo" or "free -b" / "free -m" / "free -h" ...
    total: Line
    free: Line
    available: Line
    cache: Line | None
    approximate: bool = False


def parse(text: str, what: str = "memory reading", unit: str | None = None) -> MemoryReading:
    """A MemoryReading from pasted /proc/meminfo or `free` output; InputError says what is missing."""
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"{what}: found nothing, expected /proc/meminfo or the output of free -b")
    lines = text.splitlines()
    if any(line.lstrip().startswith(("MemTotal", "MemAvailable", "MemFree")) and _match(line) for line in lines):
        return _meminfo(lines, what)
    return _free(lines, what, unit)


def _meminfo(lines: list[str], what: str) -> MemoryReading:
    found: dict[str, Line] = {}
    for number, line in enumerate(lines, 1):
        match = _match(line)
        if match and match["key"] not in found:
            scale = KiB if match["unit"] else 1  # the kernel's "kB" is 1024 bytes
            found[match["key"]] = Line(_bytes(match["num"], scale, f"{what}, line {number}: {match['key']}"), number, line.strip())
    missing = [k for k in ("MemTotal", "MemFree", "MemAvailable") if k not in found]
    if missing:
        raise InputError(f"{what}: found no {', '.join(missing)} line, expected the whole of /proc/meminfo")
    return _possible(MemoryReading("meminfo", found["MemTotal"], found["MemFree"], found["MemAvailable"], found.get("Cached")), what)


def _possible(reading: MemoryReading, what: str) -> MemoryReading:
    """A reading no kernel prints (more free or available than there is) is refused, by its line."""
    for name, part in (("MemAvailable", reading.available), ("MemFree", reading.free)):
        if part.value > reading.total.value:
            raise InputError(
                f"{what}, line {part.line_no}: found {name} {part.value:,} B above MemTotal {reading.total.value:,} B (line {reading.total.line_no}), "
                "expected at most the total: no kernel prints this"
            )
    return reading


def _free(lines: list[str], what: str, unit: str | None) -> MemoryReading:
    header = next((n for n, line in enumerate(lines) if "available" in line.split() and "total" in line.split()), None)
    row = next((n for n, line in enumerate(lines) if line.strip().startswith("Mem:")), None)
    if header is None or row is None:
        raise InputError(f"{what}: found neither /proc/meminfo lines nor free's header and Mem: row, expected one of them")
    names = lines[header].split()
    values = lines[row].split()[1:]
    if len(values) != len(names):
        raise InputError(f"{what}, line {row + 1}: found {len(values)} figures under {len(names)} column names, expected one under each")
    flags = _command_unit(lines[:row])
    unit = unit or flags
    human = all(_HUMAN_FIGURE.fullmatch(v) for v in values)
    if not human and unit is None:
        raise InputError(
            f"{what}: free prints no unit, expected the command line with it (such as 'free -b' or 'free -m') pasted above its output, or a unit chosen"
        )
    if not human and unit not in FREE_UNITS:
        raise InputError(f"{what}: found unit {unit!r}, expected one of {', '.join(FREE_UNITS)} (free -b, -k, -m, -g)")
    text = lines[row].strip()
    column = dict(zip(names, values, strict=True))

    def figure(name: str) -> Line:
        raw = column[name]
        if human:
            match = _HUMAN_FIGURE.fullmatch(raw)
            if not match or match["unit"] not in _HUMAN:
                raise InputError(f"{what}, line {row + 1}: found {raw[:40]!r} in column {name}, expected a figure such as 119Gi")
            number = parse_number(match["num"].replace(",", "."), f"{what}, line {row + 1}, column {name}", "a memory size below 1 PiB")
            value = round(number * _HUMAN[match["unit"]])
            if value > LARGEST_SIZE:
                raise InputError(f"{what}, line {row + 1}: found {raw[:40]!r} in column {name}, expected a memory size below 1 PiB")
            return Line(value, row + 1, text)
        assert unit is not None  # refused above when free printed no unit
        return Line(_bytes(raw, FREE_UNITS[unit], f"{what}, line {row + 1}", name), row + 1, text)

    for name in ("total", "free", "available"):
        if name not in column:
            raise InputError(f"{what}, line {header + 1}: found no {name!r} column, expected free's header")
    cache = "buff/cache" if "buff/cache" in column else "cache" if "cache" in column else None
    source = "free -h" if human else f"free -{unit}"
    reading = MemoryReading(source, figure("total"), figure("free"), figure("available"), figure(cache) if cache else None, approximate=human)
    return _possible(reading, what)


def _command_unit(lines: list[str]) -> str | None:
    """The unit flag of a `free` command line pasted above its output, if there is one."""
    for line in reversed(lines):
        match = _COMMAND.search(line)
        if match:
            flags = match[1].split()
            units = [_FREE_FLAGS[f] for f in flags if f in _FREE_FLAGS]
            if units:
                return units[-1]
            return None if {"-h", "--human"} & set(flags) else "k"  # with no unit flag free prints kibibytes
    return None
