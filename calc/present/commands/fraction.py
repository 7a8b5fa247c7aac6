"""`fraction`: vLLM's own start check, ceil(total x fraction) <= free."""

from __future__ import annotations

import argparse

from calc.answers import report
from calc.catalog.model import Catalog, box_choices
from calc.engine import derive, fraction
from calc.present.commands.common import _frac, _int, meminfo_available
from calc.units import InputError, fmt


def cmd_fraction(catalog: Catalog, args: argparse.Namespace) -> object:
    box = catalog.boxes.get(args.box)
    if box is None:
        raise InputError(f"--box: found {args.box!r}, expected one of {box_choices(catalog.boxes, args.box)}")
    total = _int(args, "total") if args.total else derive.box_total(box)[0].size
    if total <= 0:
        raise InputError(f"--total: found {args.total!r}, expected a size above zero")
    if args.free:
        free = meminfo_available() if args.free == "auto" else _int(args, "free")
    elif args.total:  # a total typed is another card's than the box whose reading the catalog holds: its free memory is not known
        raise InputError(f"--free: found nothing beside --total {args.total}, expected the free memory read on that card (or auto on this machine): "
                         f"the catalog's reading is the {box['name']}'s")  # fmt: skip
    elif "free_at_start" in box:
        free = box["free_at_start"].size
    else:
        raise InputError(f"--free: box {args.box} has no free-at-start reading in the catalog; give --free")
    if free > total:  # a reading of another box, or two values swapped: the check would pass on memory that is not there
        where = "--free auto (this machine's MemAvailable)" if args.free == "auto" else "--free"
        whose = "--total, of the same card" if args.total else f"the {box['name']}'s, from the catalog: give --box or --total of the card it was read on"
        raise InputError(f"{where}: found {fmt(free, 'GiB')}, more than the total of {fmt(total, 'GiB')} ({whose}); expected free memory at most the total")
    chosen = _frac(args, "gpu_memory_utilization") if args.gpu_memory_utilization else catalog.policy["vllm"]["default_gpu_memory_utilization"].fraction
    requested, passes, ceiling = fraction.requested(total, chosen), fraction.passes(total, free, chosen), fraction.ceiling(total, free)
    if args.json:
        out = {"total_bytes": total, "free_bytes": free, "fraction": chosen, "requested_bytes": requested, "passes": passes, "ceiling": ceiling}
        return report.to_json(out)
    verdict = "starts" if passes else "refused: free memory is less than the fraction asks"
    return (
        f"{fmt(chosen, 'fraction')} x {fmt(total, 'GiB')} = {fmt(requested, 'GiB')} against {fmt(free, 'GiB')} free: {verdict}\n"
        f"Ceiling: {fmt(ceiling, 'fraction', 4)}"
    )
