"""Memory readings as people paste them: /proc/meminfo, or the Mem: row of `free`.

`free` does not print its unit, so its output is read only when the unit is known: from the
command line pasted with it (`free -b`, `free -m`, ...), from `unit`, or from the suffixes of
`free -h` (rounded by free itself, so marked approximate). A magnitude is never guessed.
Each figure keeps the line it came from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from calc.units import InputError, KiB

# free's unit flags (procps): bytes, kibibytes (the default), mebibytes, gibibytes.
FREE_UNITS = {"b": 1, "k": KiB, "m": KiB**2, "g": KiB**3}
_FREE_FLAGS = {"-b": "b", "--bytes": "b", "-k": "k", "--kibi": "k", "-m": "m", "--mebi": "m", "-g": "g", "--gibi": "g"}
_HUMAN = {"B": 1, "Ki": KiB, "Mi": KiB**2, "Gi": KiB**3, "Ti": KiB**4, "K": KiB, "M": KiB**2, "G": KiB**3, "T": KiB**4}
_COMMAND = re.compile(r"(?:^|[\s$#>])free((?:\s+-{1,2}[a-z]+)*)\s*$")
_MEMINFO = re.compile(r"^\s*(?P<key>[A-Za-z_()0-9]+):\s+(?P<num>[0-9]+)\s*(?P<unit>kB)?\s*$")


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
    if any(_MEMINFO.match(line) and line.strip().startswith(("MemTotal", "MemAvailable", "MemFree")) for line in lines):
        return _meminfo(lines, what)
    return _free(lines, what, unit)


def _meminfo(lines: list[str], what: str) -> MemoryReading:
    found: dict[str, Line] = {}
    for number, line in enumerate(lines, 1):
        match = _MEMINFO.match(line)
        if match and match["key"] not in found:
            scale = KiB if match["unit"] else 1  # the kernel's "kB" is 1024 bytes
            found[match["key"]] = Line(int(match["num"]) * scale, number, line.strip())
    missing = [k for k in ("MemTotal", "MemFree", "MemAvailable") if k not in found]
    if missing:
        raise InputError(f"{what}: found no {', '.join(missing)} line, expected the whole of /proc/meminfo")
    return MemoryReading("meminfo", found["MemTotal"], found["MemFree"], found["MemAvailable"], found.get("Cached"))


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
    human = all(re.fullmatch(r"[0-9.,]+[A-Za-z]+", v) for v in values)
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
            match = re.fullmatch(r"(?P<num>[0-9]+(?:[.,][0-9]+)?)(?P<unit>[A-Za-z]+)", raw)
            if not match or match["unit"] not in _HUMAN:
                raise InputError(f"{what}, line {row + 1}: found {raw!r} in column {name}, expected a figure such as 119Gi")
            return Line(round(float(match["num"].replace(",", ".")) * _HUMAN[match["unit"]]), row + 1, text)
        if not raw.isdigit():
            raise InputError(f"{what}, line {row + 1}: found {raw!r} in column {name}, expected a whole number")
        return Line(int(raw) * FREE_UNITS[unit], row + 1, text)

    for name in ("total", "free", "available"):
        if name not in column:
            raise InputError(f"{what}, line {header + 1}: found no {name!r} column, expected free's header")
    cache = "buff/cache" if "buff/cache" in column else "cache" if "cache" in column else None
    source = "free -h" if human else f"free -{unit}"
    return MemoryReading(source, figure("total"), figure("free"), figure("available"), figure(cache) if cache else None, approximate=human)


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
