"""A figure as a fix's check prints it, and the arithmetic worked from it as printed."""

from __future__ import annotations

import math
from fractions import Fraction

from calc.logs.logread import Found
from calc.units import fmt, shown


def ceil2(value: Fraction) -> Fraction:
    return Fraction(math.ceil(value * 100), 100)


def floor2(value: Fraction) -> Fraction:
    return Fraction(math.floor(value * 100), 100)


def ftext(value: Fraction) -> str:
    return f"{float(value):.2f}"


def gib(value: Fraction | int) -> str:
    return fmt(Fraction(value), "GiB")


def as_printed(value: Fraction | int) -> Fraction:
    """A size as gib prints it: arithmetic a message prints is worked from its operands as printed,
    so a reader with a calculator gets the printed result from the printed terms."""
    return shown(Fraction(value), "GiB")


def printed(found: Found) -> Fraction:
    """The figure as its line printed it, exactly (65.9651 GiB, not its whole bytes)."""
    return Fraction(found.exact if found.exact is not None else found.value)


def end(value: Fraction | int) -> str:
    """One end of a figure printed with two decimals (71.16 GiB is 71.155 to 71.165): three decimals."""
    return fmt(Fraction(value), "GiB", 3)
