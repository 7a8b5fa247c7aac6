"""`fit`: per-request KV cost from one pool read at two or more max_model_len."""

from __future__ import annotations

import argparse

from calc.answers import report
from calc.catalog.model import Catalog
from calc.present.commands.common import _flag, _int
from calc.units import InputError, fmt, parse_count


def cmd_fit(catalog: Catalog, args: argparse.Namespace) -> object:
    points = []
    for text in args.reading or []:
        length_text, sep, tokens_text = text.partition(":")
        if not sep:
            raise InputError(f"--reading: found {text!r}, expected MAX_MODEL_LEN:TOKENS, such as 131072:181777")
        points.append((parse_count(length_text, "--reading max_model_len", 1), parse_count(tokens_text, "--reading tokens", 1)))
    wanted = [parse_count(x, _flag(args, "max_model_len"), 1) for x in (args.max_model_len or [])]
    fit = report.fit_report(_int(args, "pool"), points, wanted)
    if args.json:
        return fit.to_json()
    lines = [
        f"Per-request bytes = {fmt(fit.per_token_bytes, 'count')} B x context + {fmt(fit.fixed_bytes, 'GB')} fixed, "
        f"from {len(points)} readings of {fmt(fit.pool_bytes, 'GiB')}",
        *(f"  at {fmt(r.max_model_len, 'count')}: pool / tokens = {fmt(r.pool_over_tokens, 'count')} B" for r in fit.readings),
        *(
            f"Predicted at {fmt(p.max_model_len, 'count')}: {fmt(p.tokens, 'tokens')}, {fmt(p.full_contexts, 'x', down=True)} full contexts"
            for p in fit.predicted
        ),
    ]
    return "\n".join(lines)
