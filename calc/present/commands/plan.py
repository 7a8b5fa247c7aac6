"""`plan`: several models on one box, resident budget and fractions planned together."""

from __future__ import annotations

import argparse

from calc.answers import report
from calc.catalog.model import Catalog, box_choices
from calc.engine import derive, fraction
from calc.present.commands.common import _int
from calc.units import InputError, fmt, parse_fraction, parse_memory, printed_sum, shown


def cmd_plan(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc.engine import budget

    box = catalog.boxes.get(args.box)
    if box is None:
        raise InputError(f"--box: found {args.box!r}, expected one of {box_choices(catalog.boxes, args.box)}")
    total = derive.box_total(box)[0].size
    residents = []
    for spec in args.model or []:
        name, _, rest = spec.partition(":")
        if name not in catalog.models or "weights" not in catalog.models[name]:
            known = ", ".join(m for m, e in catalog.models.items() if "weights" in e)
            raise InputError(f"--model: found {name!r}, expected one of {known} (optionally :KV:HEADROOM)")
        parts = spec.split(":")[1:]
        if len(parts) > 2:
            raise InputError(f"--model: found {spec!r}, expected MODEL[:KV[:HEADROOM]]")
        kv_size, headroom = (parse_memory(text, f"--model {name} {what}") for text, what in zip([*parts, "0", "0"][:2], ("KV", "headroom"), strict=True))
        residents.append(budget.Resident(catalog.models[name]["name"], catalog.models[name]["weights"].size, kv_size, headroom))
    result = budget.budget(total, residents)
    fractions = [parse_fraction(f, "--fractions") for f in args.fractions.split(",")] if args.fractions else []
    available = _int(args, "available") if args.available else (derive.box_free(box) or derive.box_total(box)[0]).size
    engines = fraction.plan(total, available, fractions)
    if args.json:
        word, notes = report.plan_verdict(total, residents, fractions, engines)
        return report.to_json({"total_bytes": total, "used_bytes": result.used, "left_bytes": result.left, "fits": result.fits,
                               "verdict": word, "notes": notes,
                               "residents": residents, "engines": engines})  # fmt: skip
    lines = [f"{box['name']}: {fmt(total, 'GiB')} in all"]
    for r in residents:
        lines.append(f"  {r.name}: weights {fmt(r.weights, 'GiB')}, KV {fmt(r.kv, 'GiB')}, headroom {fmt(r.headroom, 'GiB')}")
    if residents:
        left = shown(total, "GiB") - printed_sum([x for r in residents for x in (r.weights, r.kv, r.headroom)], "GiB")
        lines.append(f"  left: {fmt(left, 'GiB')}" + ("" if result.fits else " (over the box: drop a model or add a node)"))
    for n, (e, free) in enumerate(zip(engines, report.free_as_printed(engines), strict=True), 1):
        verdict = "starts" if e.passes else "refused: free memory is less than the fraction asks"
        lines.append(f"  engine {n} at {fmt(e.fraction, 'fraction')}: asks {fmt(e.requested, 'GiB')} of {fmt(free, 'GiB')} free: {verdict}")
    if residents:
        word, notes = report.plan_verdict(total, residents, fractions, engines)
        lines.append(f"Plan: {word}")
        lines.extend(f"  note: {note}" for note in notes)
    return "\n".join(lines)
