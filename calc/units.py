"""Units, the parser for what people type, and the one formatting function.

Bytes are integers everywhere inside; GiB = 2**30 B and GB = 10**9 B. Rounding happens only in
`fmt`, which pages, the calculator and the command line all call.
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from fractions import Fraction

KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40
KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12

SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": KB, "kB": KB, "MB": MB, "GB": GB, "TB": TB,
    "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB,
}  # fmt: skip
LARGEST_SIZE = 2**50  # 1 PiB: anything larger is a typing slip, not a memory size
LARGEST_COUNT = 10**12


class InputError(ValueError):
    """A value a person typed (or a catalog holds) that is not what was expected."""


Number = int | float | Fraction

_SIZE = re.compile(r"^\s*(?P<num>[0-9][0-9_,]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*(?P<unit>[A-Za-z]*)\s*$")


def _decimal(text: str, what: str) -> Decimal:
    try:
        value = Decimal(text.replace(",", "").replace("_", ""))
    except InvalidOperation:
        raise InputError(f"{what}: found {text!r}, expected a number") from None
    if not value.is_finite():
        raise InputError(f"{what}: found {text!r}, expected a finite number")
    return value


def parse_size(text: str | int, what: str = "size") -> int:
    """Bytes from what a person types: 10e9, 10000000000, 9.31 GiB, 10 GB, 8501810176 B."""
    if isinstance(text, bool):
        raise InputError(f"{what}: found {text!r}, expected a size such as 10e9, 9.31 GiB or 10 GB")
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        raise InputError(f"{what}: found {text!r}, expected a size such as 10e9, 9.31 GiB or 10 GB")
    match = _SIZE.match(text)
    if not match:
        stripped = text.strip()
        if not stripped:
            raise InputError(f"{what}: found nothing, expected a size such as 10e9, 9.31 GiB or 10 GB")
        if stripped.startswith("-"):
            raise InputError(f"{what}: found {stripped!r}, expected a size of zero or more bytes")
        raise InputError(f"{what}: found {stripped!r}, expected a size such as 10e9, 9.31 GiB or 10 GB")
    unit = match["unit"] or "B"
    if unit not in SIZE_UNITS:
        known = ", ".join(SIZE_UNITS)
        raise InputError(f"{what}: found unit {unit!r} in {text.strip()!r}, expected one of {known}")
    value = _decimal(match["num"], what) * SIZE_UNITS[unit]
    if value > LARGEST_SIZE:
        raise InputError(f"{what}: found {text.strip()!r}, expected a memory size below 1 PiB")
    return int(value.to_integral_value(ROUND_HALF_UP))


def parse_count(text: str | int, what: str = "count", minimum: int = 0) -> int:
    """A whole number of tokens, seats or the like: 131072, 131,072 or 131_072."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise InputError(f"{what}: found {text!r}, expected a whole number")
    raw = str(text).strip()
    if not raw:
        raise InputError(f"{what}: found nothing, expected a whole number")
    if not re.fullmatch(r"-?[0-9][0-9_,]*", raw):
        raise InputError(f"{what}: found {raw!r}, expected a whole number")
    value = int(raw.replace(",", "").replace("_", ""))
    if value < minimum:
        raise InputError(f"{what}: found {value}, expected at least {minimum}")
    if value > LARGEST_COUNT:
        raise InputError(f"{what}: found {raw!r}, expected a number below {LARGEST_COUNT:.0e}")
    return value


def parse_fraction(text: str | float, what: str = "fraction") -> Fraction:
    """A fraction such as gpu_memory_utilization: above 0, at most 1, kept exact."""
    raw = str(text).strip()
    if not raw:
        raise InputError(f"{what}: found nothing, expected a fraction above 0 and at most 1, such as 0.92")
    value = _decimal(raw, what)
    if not 0 < value <= 1:
        raise InputError(f"{what}: found {raw!r}, expected a fraction above 0 and at most 1, such as 0.92")
    return Fraction(value)


def _round(value: Fraction, digits: int, down: bool = False, up: bool = False) -> Decimal:
    """Exact rounding of a Fraction to `digits` decimals: half away from zero, or floor, or ceiling."""
    scaled = value * 10**digits
    if down:
        whole = math.floor(scaled)
    elif up:
        whole = math.ceil(scaled)
    else:
        whole = (1 if scaled >= 0 else -1) * math.floor(abs(scaled) + Fraction(1, 2))
    return Decimal(whole).scaleb(-digits)


def _grouped(value: Decimal, digits: int) -> str:
    return f"{value:,.{digits}f}"


def fmt(value: Number, unit: str, digits: int = 2, down: bool = False, up: bool = False) -> str:
    """The one place a figure becomes text.

    unit: GiB, GB, MiB (value in bytes); B (exact bytes, grouped); e9 (a pin, "10e9 B");
    B a token (bytes to `digits` decimals); tokens; count; x (a ratio); % (a ratio shown as a percentage); fraction; s; plain.
    Rounding is half away from zero; down takes the floor, for a limit that must not be
    exceeded (the largest pin); up the ceiling, for a minimum that must be met (the smallest pin).
    """
    exact = Fraction(value)

    def r(x: Fraction, d: int = digits) -> Decimal:
        return _round(x, d, down, up)

    if unit in ("GiB", "GB", "MiB", "MB", "KiB", "TiB"):
        return f"{_grouped(r(exact / SIZE_UNITS[unit]), digits)} {unit}"
    if unit == "B":
        return f"{_grouped(r(exact, 0), 0)} B"
    if unit == "e9":
        text = f"{r(exact / GB):f}"
        if "." in text:  # drop trailing decimal zeros only: 10e9, not 1e9
            text = text.rstrip("0").rstrip(".")
        return f"{text}e9 B"
    if unit == "B a token":  # a cost a token, to `digits` decimals: pools divided by it as printed
        return f"{_grouped(r(exact), digits)} B"
    if unit == "tokens":
        return f"{_grouped(r(exact, 0), 0)} tokens"
    if unit == "M tokens":
        return f"{r(exact / 10**6)} M tokens"
    if unit == "count":
        return _grouped(r(exact, 0), 0)
    if unit == "x":
        return f"{r(exact)}x"
    if unit == "%":
        return f"{r(exact * 100)} %"
    if unit in ("fraction", "plain"):
        return f"{r(exact)}"
    if unit == "s":
        return f"{_grouped(r(exact), digits)} s"
    raise ValueError(f"fmt: unknown unit {unit!r}")


def shown(value: Number, unit: str, digits: int = 2, down: bool = False, up: bool = False) -> Fraction:
    """The exact value of what `fmt` prints, in the unit's base (bytes, tokens, a ratio).

    The site's rule for printed arithmetic: a figure worked from figures printed beside it is
    worked from them as printed, so a reader who adds, subtracts or divides the printed operands
    gets the printed result. Decisions (does the start fit?) stay on the exact values.
    """
    exact = Fraction(value)
    if unit in ("GiB", "GB", "MiB", "MB", "KiB", "TiB"):
        return Fraction(_round(exact / SIZE_UNITS[unit], digits, down, up)) * SIZE_UNITS[unit]
    if unit in ("B", "tokens", "count"):
        return Fraction(_round(exact, 0, down, up))
    if unit == "e9":
        return Fraction(_round(exact / GB, digits, down, up)) * GB
    if unit == "%":
        return Fraction(_round(exact * 100, digits, down, up)) / 100
    return Fraction(_round(exact, digits, down, up))


def printed_sum(values: list[Number], unit: str, digits: int = 2) -> Fraction:
    """A total as the site prints it: the sum of its terms as printed (see `shown`)."""
    return sum((shown(v, unit, digits) for v in values), Fraction(0))


def to_gib(value: int) -> Fraction:
    return Fraction(value, GiB)
