"""vLLM's auto-prefetch (model_loader/weight_utils.py): the checkpoint is read ahead into page
cache only when it is at most 90 % of available RAM, read when loading starts, which on GB10
is after the kernel-init allocations."""

from __future__ import annotations

from fractions import Fraction


def prefetch_enabled(checkpoint: int, available: int, fraction: Fraction) -> bool:
    return checkpoint <= available * Fraction(fraction)


def largest_prefetched(available: int, fraction: Fraction) -> int:
    """The largest checkpoint that is still prefetched at this available memory."""
    return int(available * Fraction(fraction))


def least_available(checkpoint: int, fraction: Fraction) -> int:
    """The least MemAvailable (whole bytes) at which a checkpoint of this size is still prefetched."""
    return -(-checkpoint // Fraction(fraction))
