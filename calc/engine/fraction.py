"""vLLM's own start check on gpu_memory_utilization, which runs even when the KV pool is pinned.

vllm/v1/worker/utils.py: requested = ceil(total x fraction); the start fails if free < requested.
On unified memory (GB10) free is MemAvailable and total is the box's.
"""

from __future__ import annotations

import math
from fractions import Fraction

from calc.record import record
from calc.units import InputError


def requested(total: int, fraction: Fraction) -> int:
    return math.ceil(total * Fraction(fraction))


def passes(total: int, free: int, fraction: Fraction) -> bool:
    return requested(total, fraction) <= free


def ceiling(total: int, free: int, digits: int = 4) -> Fraction:
    """The largest fraction, to `digits` decimals, that passes the check."""
    if total <= 0:
        raise InputError(f"total: found {total} B, expected a memory size above zero")
    if not 0 <= digits <= 12:
        raise InputError(f"digits: found {digits}, expected 0 to 12")
    scale = 10**digits
    top = min(scale, free * scale // total)
    while top > 0 and not passes(total, free, Fraction(top, scale)):
        top -= 1
    return Fraction(top, scale)


@record
class EngineStart:
    fraction: Fraction
    requested: int
    free_before: int
    passes: bool


def plan(total: int, available: int, fractions: list[Fraction]) -> list[EngineStart]:
    """Engines started one after another on one box, each claiming its fraction of the total."""
    out = []
    free = available
    for f in fractions:
        need = requested(total, f)
        ok = need <= free
        out.append(EngineStart(Fraction(f), need, free, ok))
        if ok:
            free -= need
    return out


def safe(total: int, free: int, headroom: int) -> Fraction:
    """The fraction the calculators offer when none is typed: the largest two decimals whose ask
    leaves `headroom` free at vLLM's check. With a pin the fraction sizes nothing, it only has to
    pass, so there is no reason to run it to the edge, where MemAvailable falling by a fraction
    of a GiB between the gate and vLLM's check stops the start. The edge itself when not even
    that leaves room."""
    room = ceiling(total, free - headroom, 2) if free > headroom else Fraction(0)
    return room if room > 0 else ceiling(total, free, 2)
