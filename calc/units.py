"""Units, the parser for what people type, and the one formatting function.

Bytes are integers everywhere inside; GiB = 2**30 B and GB = 10**9 B. Rounding happens only in
`fmt`, which pages, the calculator and the command line all call.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction

KiB, MiB, GiB, TiB = 2**10, 2**20, 2**30, 2**40
KB, MB, GB, TB = 10**3, 10**6, 10**9, 10**12

SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": KB, "kB": KB, "MB": MB, "GB": GB, "TB": TB,
    "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB,
}  # fmt: skip
# Typed sizes take the units in any case, and Ki, Mi, Gi, Ti as free -h and Kubernetes write GiB and the like;
# a bare K, M, G or T is refused: it is read as a power of ten or of two depending on the tool that printed it.
TYPED_UNITS: dict[str, str] = {
    **{unit.lower(): unit for unit in SIZE_UNITS if unit != "kB"},
    **{f"{p}i": f"{p.upper()}iB" for p in "kmgt"},
}
LARGEST_SIZE = 2**50  # 1 PiB: anything larger is a typing slip, not a memory size
LARGEST_COUNT = 10**12


class InputError(ValueError):
    """A value a person typed (or a catalog holds) that is not what was expected."""


Number = int | float | Fraction

# What a person may type as a number: ASCII digits, grouped by commas in threes (10,000,000) or by
# underscores in threes (10_000_000), an optional decimal point and exponent. A comma or underscore
# anywhere else is a slip (10,5 GiB means 10.5 to some and 105 to others; 1_0 is no grouping), so
# it is refused, never stripped. Every field and flag that takes a number reads it here.
_GROUPED = r"[0-9]{1,3}(?:,[0-9]{3})+"
_PLAIN = r"[0-9]{1,3}(?:_[0-9]{3})+|[0-9]+"
_NUMBER = rf"(?P<whole>{_GROUPED}|{_PLAIN})(?:\.(?P<decimals>[0-9]+))?(?:[eE](?P<exponent>[+-]?[0-9]+))?"
_NUMBER_RE = re.compile(_NUMBER)
# Matched whole against the stripped text: the space before a unit is tried only before letters
# (`\s*(unit)*\s*$` traded a run of spaces between its two halves: a square law in its length).
_SIZE = re.compile(rf"(?P<num>{_NUMBER})(?:\s*(?P<unit>[A-Za-z]+))?")

# Bounds checked on the text, before any exact arithmetic: a number is at most this many digits
# and its exponent at most this far from zero. Nothing in memory sizing comes near either.
MAX_DIGITS = 30
MAX_EXPONENT = 30


def _slip(text: str, what: str) -> InputError | None:
    """A clear message for a number written with a misplaced comma, underscore or point."""
    if "," in text:
        return InputError(
            f"{what}: found {_short(text)}, expected a comma only between groups of three digits (10,000,000); write a decimal with a point, such as 10.5"
        )
    if "_" in text:
        return InputError(f"{what}: found {_short(text)}, expected an underscore only between groups of three digits (10_000_000)")
    return None


def _exact(match: re.Match[str], text: str, what: str, large: str, small: str) -> Fraction:
    """The exact value of a matched number, its digits and exponent bounded first."""
    return Fraction(*_exact_ratio(match, text, what, large, small))


def _exact_ratio(match: re.Match[str], text: str, what: str, large: str, small: str) -> tuple[int, int]:
    """The exact value of a matched number as a numerator and a denominator (a power of ten, not
    reduced), its digits and exponent bounded first."""
    digits = match["whole"].replace(",", "").replace("_", "") + (match["decimals"] or "")
    if len(digits.lstrip("0")) > MAX_DIGITS or len(digits) > 2 * MAX_DIGITS:
        raise InputError(f"{what}: found {_short(text)}, {len(digits)} digits; expected at most {MAX_DIGITS}")
    exponent_text = (match["exponent"] or "0").lstrip("+")
    sign = -1 if exponent_text.startswith("-") else 1
    magnitude = exponent_text.lstrip("-").lstrip("0") or "0"
    if len(magnitude) > 3 or int(magnitude) > MAX_EXPONENT:
        raise InputError(f"{what}: found {_short(text)}, expected {large if sign > 0 else small}")
    shift = sign * int(magnitude) - len(match["decimals"] or "")
    return (int(digits) * 10**shift, 1) if shift >= 0 else (int(digits), 10**-shift)


def _short(text: str) -> str:
    """Text as a message quotes it: whole when short, its ends when it is long."""
    return repr(text) if len(text) <= 40 else repr(text[:20] + "..." + text[-12:]) + f" ({len(text)} characters)"


def quoted(text: str) -> str:
    """Text as a message quotes it: whole when short, its ends and its length when long."""
    return _short(text)


def parse_number(text: str, what: str = "number", large: str = "a smaller number", small: str = "a larger number") -> Fraction:
    """An exact number as a person types it: 0.92, 27e9, 10,000,000 (commas in threes only)."""
    raw = text.strip()
    match = _NUMBER_RE.fullmatch(raw)
    if not match:
        raise _slip(raw, what) or InputError(f"{what}: found {_short(raw)}, expected a number")
    return _exact(match, raw, what, large, small)


def parse_size(text: str | int, what: str = "size", canonical: bool = False) -> int:
    """Bytes from what a person types: 10e9, 10000000000, 9.31 GiB, 10 GB, 8501810176 B, 100 gib,
    115Gi (TYPED_UNITS); `canonical`, the units as SIZE_UNITS spells them alone (the catalog's)."""
    if isinstance(text, bool):
        raise InputError(f"{what}: found {text!r}, expected a size such as 10e9, 9.31 GiB or 10 GB")
    if isinstance(text, int):
        text = str(text)
    if not isinstance(text, str):
        raise InputError(f"{what}: found {text!r}, expected a size such as 10e9, 9.31 GiB or 10 GB")
    stripped = text.strip()
    match = _SIZE.fullmatch(stripped)
    if not match:
        if not stripped:
            raise InputError(f"{what}: found nothing, expected a size such as 10e9, 9.31 GiB or 10 GB")
        if stripped.startswith("-"):
            raise InputError(f"{what}: found {_short(stripped)}, expected a size of zero or more bytes")
        slip = _slip(stripped, what) if re.search(r"[0-9][,_]|[,_][0-9]", stripped) else None
        raise slip or InputError(f"{what}: found {_short(stripped)}, expected a size such as 10e9, 9.31 GiB or 10 GB")
    typed = match["unit"] or "B"
    unit = typed if typed in SIZE_UNITS else "" if canonical else TYPED_UNITS.get(typed.lower(), "")
    if not unit:
        bare = typed.upper() in ("K", "M", "G", "T") and not canonical
        known = f"{typed.upper()}iB or {typed.upper()}B: a bare {typed} is a power of two in one tool and of ten in another" if bare else ", ".join(SIZE_UNITS)
        raise InputError(f"{what}: found unit {typed!r} in {_short(stripped)}, expected {'' if bare else 'one of '}{known}")
    number = _NUMBER_RE.fullmatch(match["num"])
    assert number is not None
    # exact, in whole numbers: bytes = numerator / denominator, rounded half up (the size is never negative)
    numerator, denominator = _exact_ratio(number, stripped, what, "a memory size below 1 PiB", "a size of at least 1 B (or 0): this is below one byte")
    numerator *= SIZE_UNITS[unit]
    if numerator > LARGEST_SIZE * denominator:
        raise InputError(f"{what}: found {_short(stripped)}, expected a memory size below 1 PiB")
    whole = (2 * numerator + denominator) // (2 * denominator)
    if numerator and not whole:
        raise InputError(f"{what}: found {_short(stripped)}, expected a size of at least 1 B (or 0): this is below one byte")
    return whole


LEAST_MEMORY = 2**20  # a memory size above zero and below 1 MiB is a size typed without its unit


def parse_memory(text: str | int, what: str = "size") -> int:
    """A memory size a person types (a total, a free reading, a pool, a checkpoint): as parse_size,
    but a size above zero and below 1 MiB is refused. Typed without its unit it reads as bytes (75
    for 75 GiB), and every rule downstream would take 75 B at its word, most on the unsafe side."""
    size = parse_size(text, what)
    if 0 < size < LEAST_MEMORY:
        typed = str(text).strip()
        if (typed_as := _SIZE.fullmatch(typed)) is not None and typed_as["unit"]:  # a unit typed: a size too small, no unit left out (0.5 MiB)
            raise InputError(f"{what}: found {_short(typed)}, {size:,} B, expected at least 1 MiB, such as '24 GiB'")
        # 75 for 75 GiB; 120919 for nvidia-smi's 120919 MiB (above 2 TiB in GiB); 1e6 is neither
        plain = re.fullmatch(r"[0-9][0-9,_]*(\.[0-9]+)?", typed)
        example = f"{typed} {'GiB' if size <= 2048 else 'MiB'}" if plain else "24 GiB"
        raise InputError(f"{what}: found {_short(typed)}, {size:,} B, expected at least 1 MiB, such as '{example}' (a number without a unit is bytes)")
    return size


def parse_count(text: str | int, what: str = "count", minimum: int = 0) -> int:
    """A whole number of tokens, seats or the like: 131072, 131,072 or 131_072."""
    if isinstance(text, bool) or not isinstance(text, (str, int)):
        raise InputError(f"{what}: found {text!r}, expected a whole number")
    if isinstance(text, int):
        if not minimum <= text <= LARGEST_COUNT:
            raise InputError(f"{what}: found {text}, expected a whole number from {minimum} to {LARGEST_COUNT:.0e}")
        return text
    raw = text.strip()
    if not raw:
        raise InputError(f"{what}: found nothing, expected a whole number")
    sign = -1 if raw.startswith("-") else 1
    body = raw[1:] if sign < 0 else raw
    match = re.fullmatch(f"{_GROUPED}|{_PLAIN}", body)
    if not match:
        if re.fullmatch(r"[0-9][0-9_,]*", body):
            raise _slip(raw, what) or InputError(f"{what}: found {_short(raw)}, expected a whole number")
        raise InputError(f"{what}: found {_short(raw)}, expected a whole number")
    digits = body.replace(",", "").replace("_", "").lstrip("0") or "0"
    if len(digits) > len(str(LARGEST_COUNT)):
        raise InputError(f"{what}: found {_short(raw)}, expected a number below {LARGEST_COUNT:.0e}")
    value = sign * int(digits)
    if value < minimum:
        raise InputError(f"{what}: found {value}, expected at least {minimum}")
    if value > LARGEST_COUNT:
        raise InputError(f"{what}: found {_short(raw)}, expected a number below {LARGEST_COUNT:.0e}")
    return value


_DECIMAL_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_tokens(text: str | int, what: str = "tokens", minimum: int = 0) -> int:
    """A token count as vLLM's command line reads one (human_readable_int, from 0.8.5: in
    vllm/engine/arg_utils.py, later vllm/utils/argparse_utils.py): a whole number, or a number with a suffix, k m g t
    decimal (25.6k is 25,600), K M G T binary and whole (32K is 32,768)."""
    if not isinstance(text, str):
        return parse_count(text, what, minimum)
    raw = text.strip()
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([kKmMgGtT])", raw)
    if match is None:
        return parse_count(text, what, minimum)
    number, suffix = match.groups()
    if suffix in _BINARY_SUFFIX and "." in number:
        raise InputError(f"{what}: found {_short(raw)}, expected a whole number before {suffix} (binary), or {number}{suffix.lower()} (decimal)")
    # in float, as vLLM multiplies, so a decimal that float cannot hold rounds as it does there
    value = int(float(number) * _DECIMAL_SUFFIX[suffix]) if suffix in _DECIMAL_SUFFIX else int(number) * _BINARY_SUFFIX[suffix]
    if not minimum <= value <= LARGEST_COUNT:
        raise InputError(f"{what}: found {_short(raw)} ({value:,}), expected a whole number from {minimum} to {LARGEST_COUNT:.0e}")
    return value


def parse_fraction(text: str | float, what: str = "fraction") -> Fraction:
    """A fraction such as gpu_memory_utilization: above 0, at most 1, kept exact."""
    expected = "a fraction above 0 and at most 1, such as 0.92"
    if isinstance(text, bool) or not isinstance(text, (str, int, float, Fraction)):
        raise InputError(f"{what}: found {text!r}, expected {expected}")
    raw = str(text).strip()
    if not raw:
        raise InputError(f"{what}: found nothing, expected {expected}")
    if raw.startswith("-"):
        raise InputError(f"{what}: found {_short(raw)}, expected {expected}")
    value = parse_number(raw, what, expected, expected)
    if not 0 < value <= 1:
        raise InputError(f"{what}: found {_short(raw)}, expected {expected}")
    return value


def _round(value: Fraction, digits: int, down: bool = False, up: bool = False) -> Decimal:
    """Exact rounding of a Fraction to `digits` decimals: half away from zero, or floor, or ceiling."""
    # in whole numbers: value x 10^digits = n / d with d > 0 (a Fraction's own terms)
    n, d = value.numerator * 10**digits, value.denominator
    if down:
        whole = n // d
    elif up:
        whole = -(-n // d)
    else:  # floor(|n/d| + 1/2), signed
        whole = (1 if n >= 0 else -1) * ((2 * abs(n) + d) // (2 * d))
    return Decimal(whole).scaleb(-digits)


def _exact_figure(value: Number, digits: int, what: str) -> Fraction:
    """A figure to print, checked first: finite, and a number of decimals that can be printed."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InputError(f"{what}: found {value!r}, expected a finite number")
    if not 0 <= digits <= MAX_DIGITS:
        raise InputError(f"{what}: found {digits} digits, expected 0 to {MAX_DIGITS}")
    return value if isinstance(value, Fraction) else Fraction(value)


# Units counting tokens: floored, as a pool holds whole tokens (vLLM floors its own count).
WHOLE_TOKENS = ("tokens", "M tokens")


def _grouped(value: Decimal, digits: int) -> str:
    return f"{value:,.{digits}f}"


def fmt(value: Number, unit: str, digits: int = 2, down: bool = False, up: bool = False) -> str:
    """The one place a figure becomes text.

    unit: GiB, GB, MiB (value in bytes); B (exact bytes, grouped); e9 (a pin, "10e9 B");
    B a token (bytes to `digits` decimals); tokens; count; x (a ratio); % (a ratio shown as a percentage); fraction; s; plain.
    Rounding is half away from zero; down takes the floor, for a limit that must not be
    exceeded (the largest pin); up the ceiling, for a minimum that must be met (the smallest pin).
    Tokens are whole and floored unless `up` is asked for: a pool holds no part of a token.
    """
    exact = _exact_figure(value, digits, "fmt")
    down = down or (unit in WHOLE_TOKENS and not up)

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
        return f"{_grouped(r(exact), digits)}x"
    if unit == "%":
        return f"{r(exact * 100)} %"
    if unit in ("fraction", "plain"):
        return f"{r(exact)}"
    if unit == "s":
        return f"{_grouped(r(exact), digits)} s"
    raise InputError(f"fmt: found unit {unit!r}, expected one of GiB, GB, MiB, MB, KiB, TiB, B, e9, tokens, M tokens, count, x, %, fraction, plain, s")


def shown(value: Number, unit: str, digits: int = 2, down: bool = False, up: bool = False) -> Fraction:
    """The exact value of what `fmt` prints, in the unit's base (bytes, tokens, a ratio).

    The site's rule for printed arithmetic: a figure worked from figures printed beside it is
    worked from them as printed, so a reader who adds, subtracts or divides the printed operands
    gets the printed result. Decisions (does the start fit?) stay on the exact values.
    """
    exact = _exact_figure(value, digits, "shown")
    down = down or (unit in WHOLE_TOKENS and not up)
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
