"""Several models resident on one box: weights + KV + headroom each, against the box total."""

from __future__ import annotations

import math
from dataclasses import dataclass

from calc.units import InputError


@dataclass(frozen=True)
class Resident:
    name: str
    weights: int
    kv: int = 0
    headroom: int = 0

    @property
    def total(self) -> int:
        return self.weights + self.kv + self.headroom


@dataclass(frozen=True)
class Budget:
    total: int
    used: int

    @property
    def left(self) -> int:
        return self.total - self.used

    @property
    def fits(self) -> bool:
        return self.used <= self.total


def budget(total: int, residents: list[Resident]) -> Budget:
    return Budget(total, sum(r.total for r in residents))


def weights_from_parameters(parameters: float, bits_per_parameter: float) -> int:
    """The rule of thumb: parameters x bytes per parameter (scales and embeddings not counted)."""
    product = parameters * bits_per_parameter / 8
    if not math.isfinite(product):
        raise InputError(f"parameters x bits: found {parameters!r} x {bits_per_parameter!r}, expected finite numbers")
    return int(product)
