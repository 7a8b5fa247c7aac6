"""`guard`: the memory guard replayed over a MemAvailable trace."""

from __future__ import annotations

import argparse

from calc.answers import report
from calc.catalog.model import Catalog
from calc.present.commands.common import _guard_settings, _secs, read_text
from calc.units import InputError, fmt


def cmd_guard(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc.answers import guard

    policy = catalog.policy["guard"]
    if args.trace in catalog.traces:
        trace = catalog.traces[args.trace]
        samples = [(s["t"], s["available"]) for s in trace["samples"]]
    else:
        try:
            text = read_text(args.trace)
        except OSError as error:
            raise InputError(f"trace {args.trace}: cannot read it ({error.strerror}); expected a file or one of {', '.join(catalog.traces)}") from None
        samples = guard.parse_trace(text, args.trace)
    floor, polls = _guard_settings(policy, args)
    serving = _secs(args, "serving_at") if args.serving_at else None
    result = guard.run(samples, floor, polls, serving)
    if args.json:
        return report.to_json({**result.__dict__, "floor_bytes": floor, "polls_in_a_row": polls, "samples": len(samples)})
    unwatched = sum(1 for t, _ in samples if serving is not None and t >= serving)
    if result.killed:
        verdict = f"kills the rank at {result.at:g} s"
    elif unwatched:
        verdict = f"kills nothing; it stood down at {serving:g} s, when the head served ({unwatched} later polls not watched)"
    else:
        verdict = "kills nothing over the whole trace"
    return (
        f"Guard ({polls} polls in a row under {fmt(floor, 'GiB')}) over {len(samples)} polls: {verdict}\n"
        f"Lowest MemAvailable: {fmt(result.lowest, 'GiB')} at {result.lowest_at:g} s; longest run under the floor: {result.longest_run}"
    )
