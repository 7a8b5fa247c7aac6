"""Macros of the memory budget page: what a rank holds, the pin matrix, the largest pin worked from
printed figures, the gate's terms then and now, and the terms an operator can move."""

from __future__ import annotations

from calc import units
from calc.answers import report
from calc.engine import derive, gate
from calc.units import parse_size
from hooks.figures import text
from hooks.pagemacros.build import SERVING, Build, table
from hooks.pagemacros.deployment import calibrated, gen, known, largest_pin, refused_request, row
from hooks.pagemacros.every_page import fig, source_text


def rank_holds_table(build: Build, generation: int = 235, deployment_id: str = SERVING) -> str:
    """What one rank holds, each figure with its source."""
    start = gen(build, generation, deployment_id)
    model = build.catalog.models[build.catalog.deployments[deployment_id]["model"]]
    current = row(build, deployment_id)
    held = derive.held(start)
    rows = [
        ("Weights", fig(start["weights_loaded"]), f"{text(start['weights_loaded'].provenance)}; shard headers said {fig(model['weights'])}"),
        ("Drafter", fig(known(current.drafter, "drafter")), source_text(known(current.drafter, "drafter").source) + "; not measured, the drafter has not loaded yet"),
        (
            f"KV pool, pin {fig(start['kv_pin'], 'e9')}",
            fig(start["kv_pin"]),
            f"the pin; backs {fig(start['kv_tokens'].value, 'tokens', source=start['kv_tokens'].provenance)}",
        ),
        ("Overhead", fig(known(current.overhead, "overhead"), digits=1), "remainder: held - weights - KV pool"),
        ("Held, no drafter", fig(held, digits=1), f"MemAvailable {fig(start['available_before'], digits=1)} before, {fig(start['available_after'], digits=1)} after"),
    ]  # fmt: skip
    return table(("Term", "GiB a rank", "Source"), rows)


def pin_matrix(build: Build, pins: tuple[str, ...] = ("8e9", "10e9", "16e9", "20e9"), deployment_id: str = SERVING) -> str:
    """Pins x drafter off/on against the free memory of the refused request."""
    request = refused_request(build, deployment_id)
    available = (request["available"].size,)
    current = row(build, deployment_id)
    rows = []
    for typed in pins:
        p = parse_size(typed)
        off = gate.gate(current, gate.Request(p, False, *calibrated(build, deployment_id)), available)
        on = gate.gate(current, gate.Request(p, True, *calibrated(build, deployment_id)), available)
        if off.passes is None or on.passes is None:
            raise ValueError(f"the gate cannot size this start: {off.outside_calibration or on.outside_calibration}")
        verdict = {(True, True): "both start", (True, False): "drafter refused", (False, False): "both refused"}[(off.passes, on.passes)]
        rows.append((fig(p, "e9"), fig(p), fig(report.needs_as_printed(off.terms), digits=1), fig(report.needs_as_printed(on.terms), digits=1), verdict))
    head = ("KV pin", "KV GiB", "needs, no drafter", "needs, drafter", f"vs {fig(request['available'], digits=1)} available")
    return table(head, rows)


def largest_pin_table(build: Build, deployment_id: str = SERVING) -> str:
    """MemAvailable less every fixed term, worked from the printed figures: MemAvailable
    rounded down and each cost rounded up, so the printed limit is never above the exact one."""
    current = row(build, deployment_id)
    available = refused_request(build, deployment_id)["available"]
    costs = [
        ("start headroom", current.headroom),
        ("weights", current.weights),
        ("overhead", known(current.overhead, "overhead")),
        ("drafter", known(current.drafter, "drafter")),
    ]
    rows: list[tuple[str, ...]] = [("MemAvailable, rounded down", *(fig(available, "GiB", 2, down=True),) * 2)]
    for name, a in costs:
        up = fig(a.bytes, "GiB", 2, up=True, source=a.source)
        rows.append((f"− {name}, rounded up", up if name != "drafter" else "—", up))
    limits = []
    for drafter in (False, True):
        terms = [a.bytes for name, a in costs if drafter or name != "drafter"]
        worked = units.shown(available.size, "GiB", 2, down=True) - sum(units.shown(t, "GiB", 2, up=True) for t in terms)
        limits.append(worked)
    rows.append(("**largest pin**", *(f"**{fig(x)}**" for x in limits)))
    # the bytes are the line above's, so a reader who multiplies the printed GiB gets them; the
    # exact limit (MemAvailable and costs unrounded) is printed beside, and is never below it
    rows.append(
        (
            "in bytes, rounded down (from exact bytes)",
            *(
                f"**{fig(x, 'e9', 2, down=True)}** ({fig(largest_pin(build, d, deployment_id), 'e9', 2, down=True)})"
                for x, d in zip(limits, (False, True), strict=True)
            ),
        )
    )
    return table(("Figure", "Without the drafter", "With the drafter"), rows)


def needs_breakdown(build: Build, pin_text: str, drafter: bool, deployment_id: str = SERVING) -> str:
    request = gate.Request(parse_size(pin_text), drafter, *calibrated(build, deployment_id))
    result = gate.gate(row(build, deployment_id), request, (refused_request(build, deployment_id)["available"].size,))
    rows = [(t.name, fig(t.bytes), source_text(t.source)) for t in result.terms]
    rows.append(("**needs**", f"**{fig(report.needs_as_printed(result.terms))}**", "the sum"))
    return table(("Term", "GiB a rank", "Source"), rows)


def gate_then_and_now_table(build: Build, generation: int = 234, deployment_id: str = SERVING) -> str:
    """A start's gate with the row it held when it ran, beside the same request under the measured row."""
    start = gen(build, generation, deployment_id)
    request = derive.request_of(build.catalog, build.catalog.deployments[deployment_id], start)
    available = (start["available_before"].size,)
    then = gate.gate(derive.gate_row_of_start(build.catalog, deployment_id, start), request, available)
    now = gate.gate(row(build, deployment_id), request, available)
    rows = [
        (a.name, fig(a.bytes), source_text(a.source), fig(b.bytes), source_text(b.source))
        for a, b in zip(then.terms, now.terms, strict=True)
        if a.bytes or b.bytes
    ]
    rows.append(("**needs**", f"**{fig(report.needs_as_printed(then.terms))}**", "the sum", f"**{fig(report.needs_as_printed(now.terms))}**", "the sum"))
    before = fig(start["available_before"], digits=0)
    rows.append(("MemAvailable at the gate", before, source_text(start["available_before"].source), before, "the same reading"))
    verdicts = ["passes" if r.passes else "refused" for r in (then, now)]
    rows.append(("**gate**", f"**{verdicts[0]}**", "", f"**{verdicts[1]}**", ""))
    head = ("Term", f"Row at gen {generation}", "Source", "Row measured since", "Source")
    return table(head, rows)


def movable_table(build: Build, pin_text: str = "20e9", drafter: bool = True, deployment_id: str = SERVING) -> str:
    """The terms an operator can change, largest first, with the flag that moves each."""
    flags = {
        "KV pin": "`--kv-cache-memory-bytes`",
        "drafter": "`--speculative-config` (drop it)",
        "prefill-budget term": "`--max-num-batched-tokens`",
        "seat term": "`--max-num-seqs`",
    }
    request = gate.Request(parse_size(pin_text), drafter, *calibrated(build, deployment_id))
    result = gate.gate(row(build, deployment_id), request, (refused_request(build, deployment_id)["available"].size,))
    moving = gate.movable_terms(result)
    idle = [t for t in result.terms if t.movable and not t.bytes]
    rows = [(t.name, fig(t.bytes), flags.get(t.name, ""), source_text(t.source)) for t in moving + idle]
    return table(("Term", "GiB a rank", "Flag", "Source"), rows)


MACROS = (
    rank_holds_table,
    pin_matrix,
    largest_pin_table,
    needs_breakdown,
    gate_then_and_now_table,
    movable_table,
)
