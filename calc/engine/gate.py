"""The start gate: what a start needs on each box, whether it may start, the largest pin."""

from __future__ import annotations

from calc.record import record
from calc.units import fmt


@record
class Amount:
    """A number of bytes and where it came from."""

    bytes: int
    source: str
    entry: str = ""


@record
class GateRow:
    """The load balancer's row for one model: every constant of the gate formula."""

    weights: Amount
    overhead: Amount | None  # None until a start has been measured
    headroom: Amount
    calibration_prefill: int
    calibration_seats: int
    drafter: Amount | None = None
    prefill_bytes_per_token: Amount | None = None
    seat_bytes: Amount | None = None


@record
class Request:
    """What the operator asks for."""

    kv_pin: int
    drafter: bool = False
    prefill_budget: int = 8192
    seats: int = 8
    host_bytes: int = 0  # host buffers a rank (KV offloading): on a unified box they come out of MemAvailable
    shm_bytes: int = 0  # /dev/shm message queues on the box (calc/engine/hostmem.py): tmpfs pages, out of MemAvailable


@record
class Term:
    name: str
    bytes: int
    source: str
    movable: bool


@record
class GateResult:
    terms: tuple[Term, ...]
    needs: int | None
    available: tuple[int, ...]
    passes: bool | None
    outside_calibration: str | None = None

    @property
    def margins(self) -> tuple[int, ...]:
        """Available minus needs, per box: negative where the start is refused."""
        if self.needs is None:
            return ()
        return tuple(a - self.needs for a in self.available)


def _above(value: int, limit: int, per_unit: Amount | None, what: str, unit: str) -> tuple[int, str | None]:
    over = value - limit
    if over <= 0:
        return 0, None
    if per_unit is None:
        return 0, (
            f"{what} {fmt(value, 'count')} is above the calibrated {fmt(limit, 'count')} {unit}, and the catalog row has no "
            f"per-{unit[:-1]} constant for this model: the gate cannot size the term"
        )
    return over * per_unit.bytes, None


def terms(row: GateRow, request: Request) -> tuple[tuple[Term, ...], str | None]:
    """The needs formula term by term; the second value says why it is unknown, if it is."""
    if row.overhead is None:
        return (), "no start of this model has been measured, so its overhead (held - weights - KV pool) is unknown"
    if request.drafter and row.drafter is None:
        return (), "the catalog row has no drafter for this model"
    prefill, prefill_unknown = _above(request.prefill_budget, row.calibration_prefill, row.prefill_bytes_per_token, "prefill budget", "tokens")
    seats, seats_unknown = _above(request.seats, row.calibration_seats, row.seat_bytes, "seat count", "seats")
    unknown = prefill_unknown or seats_unknown
    out = [
        Term("weights", row.weights.bytes, row.weights.source, False),
        Term("drafter", row.drafter.bytes if request.drafter and row.drafter else 0,
             row.drafter.source if row.drafter else "no drafter", True),
        Term("KV pin", request.kv_pin, "the pin asked for", True),
        Term("overhead", row.overhead.bytes, row.overhead.source, False),
        Term("prefill-budget term", prefill, row.prefill_bytes_per_token.source if prefill and row.prefill_bytes_per_token else "zero inside the calibration", True),
        Term("seat term", seats, row.seat_bytes.source if seats and row.seat_bytes else "zero inside the calibration", True),
    ]  # fmt: skip
    if request.host_bytes:
        out.append(Term("host buffers", request.host_bytes,
                        "--kv-offloading-size a rank: host memory, which on a unified box is the same MemAvailable", True))  # fmt: skip
    if request.shm_bytes:
        out.append(Term("/dev/shm queues", request.shm_bytes,
                        "vLLM's message queues in /dev/shm (shm_broadcast.py): shared memory, which MemAvailable does not count as available", False))  # fmt: skip
    out.append(Term("start headroom", row.headroom.bytes, row.headroom.source, False))
    return tuple(out), unknown


def gate(row: GateRow, request: Request, available: tuple[int, ...]) -> GateResult:
    """Start if needs <= MemAvailable on every box."""
    found, unknown = terms(row, request)
    if unknown:
        return GateResult((), None, available, None, unknown)
    needs = sum(t.bytes for t in found)
    return GateResult(found, needs, available, all(needs <= a for a in available))


def largest_pin(row: GateRow, request: Request, available: tuple[int, ...]) -> int | None:
    """The largest KV pin that passes with the rest of the request unchanged.

    None when the gate cannot size the request; negative when no pin passes at all.
    """
    result = gate(row, Request(0, request.drafter, request.prefill_budget, request.seats, request.host_bytes, request.shm_bytes), available)
    if result.needs is None:
        return None
    return min(available) - result.needs


def movable_terms(result: GateResult) -> list[Term]:
    """What the operator can change, largest first."""
    return sorted((t for t in result.terms if t.movable and t.bytes > 0), key=lambda t: -t.bytes)
