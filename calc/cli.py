"""python -m calc: the calculators on the command line, over the same catalog and functions."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from fractions import Fraction
from pathlib import Path

from calc import fraction, kv, report
from calc.catalog import Catalog, CatalogError, load_dir, schemas
from calc.units import InputError, fmt, parse_count, parse_fraction, parse_size

CATALOG_DIR = Path(__file__).resolve().parent.parent / "catalog"
SCHEMA_DIR = CATALOG_DIR / "schema"


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one clear line, exit status 2
        raise UsageError(f"{self.prog}: {message}")


def meminfo_available(path: str = "/proc/meminfo") -> int:
    """MemAvailable of the box this runs on, in bytes."""
    try:
        text = Path(path).read_text()
    except OSError as error:
        raise InputError(f"--available auto: cannot read {path} ({error.strerror})") from None
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return parse_count(line.split()[1], "MemAvailable") * 1024
    raise InputError(f"--available auto: found no MemAvailable line in {path}")


def available_list(text: str, boxes: int) -> tuple[int, ...]:
    if text == "auto":
        return (meminfo_available(),) * boxes
    values = tuple(parse_size(part, "--available") for part in text.split(","))
    if len(values) == 1:
        return values * boxes
    if len(values) != boxes:
        raise InputError(f"--available: found {len(values)} figures, expected 1 or {boxes} (one per box)")
    return values


def _deployment(catalog: Catalog, name: str | None) -> str:
    if name is None:
        return next(iter(catalog.deployments))
    if name not in catalog.deployments:
        raise InputError(f"--deployment: found {name!r}, expected one of {', '.join(catalog.deployments)}")
    return name


# --- gate -----------------------------------------------------------------------------------


def cmd_gate(catalog: Catalog, args: argparse.Namespace) -> str | dict:
    deployment_id = _deployment(catalog, args.deployment)
    boxes = catalog.deployments[deployment_id]["boxes"]
    base = report.defaults(catalog, deployment_id, available_list(args.available, boxes) if args.available else None)
    inputs = report.StartInputs(
        deployment=deployment_id,
        kv_pin=parse_size(args.pin, "--pin") if args.pin else base.kv_pin,
        drafter=args.drafter,
        speculative_tokens=parse_count(args.speculative_tokens, "--speculative-tokens", 1) if args.speculative_tokens else base.speculative_tokens,
        prefill_budget=parse_count(args.prefill_budget, "--prefill-budget", 1) if args.prefill_budget else base.prefill_budget,
        seats=parse_count(args.seats, "--seats", 1) if args.seats else base.seats,
        max_model_len=parse_count(args.max_model_len, "--max-model-len", 1) if args.max_model_len else base.max_model_len,
        available=base.available,
        typical_context=parse_count(args.typical_context, "--typical-context", 1) if args.typical_context else None,
        gpu_memory_utilization=parse_fraction(args.gpu_memory_utilization, "--gpu-memory-utilization") if args.gpu_memory_utilization else None,
    )  # fmt: skip
    result = report.start_report(catalog, inputs)
    if args.json:
        return report.to_json(result)
    return render_gate(result)


def render_gate(r: dict) -> str:
    i: report.StartInputs = r["inputs"]
    lines = [f"Start gate: {r['model']}, TP={r['tp']} on {r['boxes_count']}x {r['box']}"]
    lines.append(f"  pin {fmt(i.kv_pin, 'e9')} ({fmt(i.kv_pin, 'GiB')}), drafter {'on' if i.drafter else 'off'}, "
                 f"prefill budget {fmt(i.prefill_budget, 'count')}, seats {i.seats}")  # fmt: skip
    if r["outside_calibration"]:
        lines.append(f"  outside calibration: {r['outside_calibration']}")
        return "\n".join(lines)
    lines.append(f"  {'term':<22}{'GiB a rank':>11}  source")
    for t in r["terms"]:
        lines.append(f"  {t.name:<22}{fmt(t.bytes, 'GiB').removesuffix(' GiB'):>11}  {t.source}")
    lines.append(f"  {'needs':<22}{fmt(r['needs_bytes'], 'GiB').removesuffix(' GiB'):>11}")
    for b in r["boxes"]:
        verdict = "passes" if b["passes"] else "refused"
        lines.append(f"  {b['box']}: available {fmt(b['available_bytes'], 'GiB')}, {verdict} by {fmt(abs(b['margin_bytes']), 'GiB')}")
    lines.append(f"Start: {'yes' if r['passes'] else 'no, refused'}")
    largest = r["largest_pin_bytes"]
    lines.append("Largest pin that passes: " + _pin(largest["without_drafter"]) + " without the drafter"
                 + (f", {_pin(largest['with_drafter'])} with it" if largest["with_drafter"] is not None else ""))  # fmt: skip
    pool = r["kv"]
    if pool["bytes_per_token"] is not None:
        tokens = fmt(pool["tokens"], "tokens") + (" (logged)" if pool["tokens_logged"] else "")
        lines.append(f"KV pool: {tokens} at {fmt(pool['bytes_per_token'], 'count')} B/token ({r['kv_source']}), "
                     f"{fmt(pool['full_contexts'], 'x')} full {fmt(i.max_model_len, 'count')}-token contexts")  # fmt: skip
        if not pool["holds_one_context"]:
            lines.append(f"  below the floor: one full context needs a pin of {fmt(pool['one_context_pin_bytes'], 'e9', 2, up=True)}")
        if "tokens_needed" in pool:
            lines.append(f"  seats x typical context = {fmt(pool['tokens_needed'], 'tokens')}: {'fits' if pool['seats_fit'] else 'does not fit'}")
    f = r["fraction"]
    lines.append(f"vLLM fraction check: {fmt(f['fraction'], 'fraction')} x {fmt(f['total_bytes'], 'GiB')} "
                 f"{'<=' if f['passes'] else '>'} {fmt(f['free_bytes'], 'GiB')} free; ceiling {fmt(f['ceiling'], 'fraction', 4)}")  # fmt: skip
    if not r["passes"]:
        lines.append("What to change, largest movable term first: " + ", ".join(f"{t.name} {fmt(t.bytes, 'GiB')}" for t in r["changes"]))
    lines.append("Flags:")
    lines.extend(f"  {flag}" for flag in r["flags"])
    return "\n".join(lines)


def _pin(value: int | None) -> str:
    if value is None:
        return "unknown"
    if value < 0:
        return "none (short by " + fmt(-value, "GiB") + ")"
    return fmt(value, "e9", 2, down=True)


# --- kv -------------------------------------------------------------------------------------


def cmd_kv(catalog: Catalog, args: argparse.Namespace) -> str | dict:
    if args.bytes_per_token:
        per_token = Fraction(parse_count(args.bytes_per_token, "--bytes-per-token", 1))
        source, reading = "given", None
    else:
        deployment_id = _deployment(catalog, args.deployment)
        spec = parse_count(args.speculative_tokens, "--speculative-tokens") if args.speculative_tokens else 0
        reading = report.pool_reading(catalog, deployment_id, spec)
        if reading is None:
            raise InputError(f"--deployment {deployment_id}: no measured bytes per token; give --bytes-per-token")
        per_token, source = reading.bytes_per_token, report.kv_source(reading, spec)
        if (reading.speculative_tokens or 0) != spec:
            reading = None  # measured at another speculative-token count: derive, never quote its log
    max_len = parse_count(args.max_model_len, "--max-model-len", 1)
    out: dict = {"bytes_per_token": per_token, "source": source, "max_model_len": max_len}
    if args.tokens:
        tokens = parse_count(args.tokens, "--tokens", 1)
        out.update(tokens=tokens, pin_bytes=kv.pool_for_tokens(tokens, per_token))
    else:
        pin = parse_size(args.pin or "10e9", "--pin")
        tokens, logged = reading.tokens_at(pin) if reading else (kv.tokens_for_pool(pin, per_token), False)
        out.update(pin_bytes=pin, tokens=tokens, tokens_logged=logged)
    whole = int(out["tokens"])
    out.update(
        full_contexts=kv.full_contexts(whole, max_len),
        holds_one_context=kv.holds_one_context(whole, max_len),
    )
    if args.seats and args.typical_context:
        needed = kv.tokens_needed(parse_count(args.seats, "--seats", 1), parse_count(args.typical_context, "--typical-context", 1))
        out.update(tokens_needed=needed, pin_for_needed_bytes=kv.pool_for_tokens(needed, per_token))
    if args.json:
        return report.to_json(out)
    lines = [
        f"Bytes per token: {fmt(per_token, 'count')} ({source})",
        f"Pin {fmt(out['pin_bytes'], 'e9', 2, up=bool(args.tokens))} ({fmt(out['pin_bytes'], 'GiB')}) holds {fmt(out['tokens'], 'tokens')}"
        + (" (logged)" if out.get("tokens_logged") else ""),
        f"Full {fmt(max_len, 'count')}-token contexts: {fmt(out['full_contexts'], 'x')}"
        + ("" if out["holds_one_context"] else " (below one full context: a max-length request cannot be admitted)"),
    ]
    if "tokens_needed" in out:
        lines.append(f"Seats x typical context: {fmt(out['tokens_needed'], 'tokens')}, a pin of {fmt(out['pin_for_needed_bytes'], 'e9', 2, up=True)}")
    return "\n".join(lines)


# --- fit -----------------------------------------------------------------------------------


def cmd_fit(catalog: Catalog, args: argparse.Namespace) -> str | dict:
    points = []
    for text in args.reading or []:
        length_text, sep, tokens_text = text.partition(":")
        if not sep:
            raise InputError(f"--reading: found {text!r}, expected MAX_MODEL_LEN:TOKENS, such as 131072:181777")
        points.append((parse_count(length_text, "--reading max_model_len", 1), parse_count(tokens_text, "--reading tokens", 1)))
    wanted = [parse_count(x, "--max-model-len", 1) for x in (args.max_model_len or [])]
    fit = report.fit_report(parse_size(args.pool, "--pool"), points, wanted)
    if args.json:
        return report.to_json({**fit, "predicted_tokens": {str(p["max_model_len"]): p["tokens"] for p in fit["predicted"]}})
    lines = [
        f"Per-request bytes = {fmt(fit['per_token_bytes'], 'count')} B x context + {fmt(fit['fixed_bytes'], 'GB')} fixed, "
        f"from {len(points)} readings of {fmt(fit['pool_bytes'], 'GiB')}",
        *(f"  at {fmt(r['max_model_len'], 'count')}: pool / tokens = {fmt(r['pool_over_tokens'], 'count')} B" for r in fit["readings"]),
        *(f"Predicted at {fmt(p['max_model_len'], 'count')}: {fmt(p['tokens'], 'tokens')}, {fmt(p['full_contexts'], 'x')}" for p in fit["predicted"]),
    ]
    return "\n".join(lines)


# --- fraction -------------------------------------------------------------------------------


def cmd_fraction(catalog: Catalog, args: argparse.Namespace) -> str | dict:
    box = catalog.boxes.get(args.box)
    if box is None:
        raise InputError(f"--box: found {args.box!r}, expected one of {', '.join(catalog.boxes)}")
    total = parse_size(args.total, "--total") if args.total else box["total_memory"].value
    if total <= 0:
        raise InputError(f"--total: found {args.total!r}, expected a size above zero")
    if args.free:
        free = meminfo_available() if args.free == "auto" else parse_size(args.free, "--free")
    elif "free_at_start" in box:
        free = box["free_at_start"].value
    else:
        raise InputError(f"--free: box {args.box} has no free-at-start reading in the catalog; give --free")
    chosen = parse_fraction(args.fraction, "--fraction") if args.fraction else catalog.policy["vllm"]["default_gpu_memory_utilization"].value
    out = {
        "total_bytes": total,
        "free_bytes": free,
        "fraction": chosen,
        "requested_bytes": fraction.requested(total, chosen),
        "passes": fraction.passes(total, free, chosen),
        "ceiling": fraction.ceiling(total, free),
    }
    if args.json:
        return report.to_json(out)
    verdict = "starts" if out["passes"] else "refused: free memory is less than the fraction asks"
    return (
        f"{fmt(chosen, 'fraction')} x {fmt(total, 'GiB')} = {fmt(out['requested_bytes'], 'GiB')} against {fmt(free, 'GiB')} free: {verdict}\n"
        f"Ceiling: {fmt(out['ceiling'], 'fraction', 4)}"
    )


# --- guard ----------------------------------------------------------------------------------


def cmd_guard(catalog: Catalog, args: argparse.Namespace) -> str | dict:
    from calc import guard  # imported by its command only: the others start faster

    policy = catalog.policy["guard"]
    if args.trace in catalog.traces:
        trace = catalog.traces[args.trace]
        samples = [(s["t"], s["available"]) for s in trace["samples"]]
    else:
        path = Path(args.trace)
        try:
            text = sys.stdin.read() if args.trace == "-" else path.read_text()
        except OSError as error:
            raise InputError(f"trace {args.trace}: cannot read it ({error.strerror}); expected a file or one of {', '.join(catalog.traces)}") from None
        samples = guard.parse_trace(text, args.trace)
    floor = parse_size(args.floor, "--floor") if args.floor else policy["floor"].value
    polls = parse_count(args.polls, "--polls", 1) if args.polls else policy["polls_in_a_row"].value
    serving = _seconds(args.serving_at, "--serving-at") if args.serving_at else None
    result = guard.run(samples, floor, polls, serving)
    if args.json:
        return report.to_json({**result.__dict__, "floor_bytes": floor, "polls_in_a_row": polls, "samples": len(samples)})
    verdict = f"kills the rank at {result.at:g} s" if result.killed else "lets the start through"
    return (
        f"Guard ({polls} polls in a row under {fmt(floor, 'GiB')}) over {len(samples)} polls: {verdict}\n"
        f"Lowest MemAvailable: {fmt(result.lowest, 'GiB')} at {result.lowest_at:g} s; longest run under the floor: {result.longest_run}"
    )


def _seconds(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 <= value < float("inf"):
        raise InputError(f"{what}: found {text!r}, expected seconds, such as 357")
    return value


# --- plan -----------------------------------------------------------------------------------


def cmd_plan(catalog: Catalog, args: argparse.Namespace) -> str | dict:
    from calc import budget  # imported by its command only: the others start faster

    box = catalog.boxes.get(args.box)
    if box is None:
        raise InputError(f"--box: found {args.box!r}, expected one of {', '.join(catalog.boxes)}")
    total = box["total_memory"].value
    residents = []
    for spec in args.model or []:
        name, _, rest = spec.partition(":")
        if name not in catalog.models or "weights" not in catalog.models[name]:
            known = ", ".join(m for m, e in catalog.models.items() if "weights" in e)
            raise InputError(f"--model: found {name!r}, expected one of {known} (optionally :KV:HEADROOM)")
        kv_text, _, headroom_text = rest.partition(":")
        residents.append(budget.Resident(
            catalog.models[name]["name"], catalog.models[name]["weights"].value,
            parse_size(kv_text, f"--model {name} KV") if kv_text else 0,
            parse_size(headroom_text, f"--model {name} headroom") if headroom_text else 0,
        ))  # fmt: skip
    result = budget.budget(total, residents)
    fractions = [parse_fraction(f, "--fractions") for f in args.fractions.split(",")] if args.fractions else []
    available = parse_size(args.available, "--available") if args.available else box.get("idle_available", box["total_memory"]).value
    engines = fraction.plan(total, available, fractions)
    if args.json:
        return report.to_json({"total_bytes": total, "used_bytes": result.used, "left_bytes": result.left, "fits": result.fits,
                               "residents": residents, "engines": engines})  # fmt: skip
    lines = [f"{box['name']}: {fmt(total, 'GiB')} in all"]
    for r in residents:
        lines.append(f"  {r.name}: weights {fmt(r.weights, 'GiB')}, KV {fmt(r.kv, 'GiB')}, headroom {fmt(r.headroom, 'GiB')}")
    if residents:
        lines.append(f"  left: {fmt(result.left, 'GiB')}" + ("" if result.fits else " (over the box: drop a model or add a node)"))
    for n, e in enumerate(engines, 1):
        verdict = "starts" if e.passes else "refused: free memory is less than the fraction asks"
        lines.append(f"  engine {n} at {fmt(e.fraction, 'fraction')}: asks {fmt(e.requested, 'GiB')} of {fmt(e.free_before, 'GiB')} free: {verdict}")
    return "\n".join(lines)


# --- prefetch -------------------------------------------------------------------------------


def cmd_prefetch(catalog: Catalog, args: argparse.Namespace) -> str | dict:
    from calc import prefetch  # imported by its command only: the others start faster

    share = catalog.policy["vllm"]["prefetch_fraction"].value
    checkpoint = parse_size(args.checkpoint, "--checkpoint")
    available = meminfo_available() if args.available == "auto" else parse_size(args.available, "--available")
    enabled = prefetch.prefetch_enabled(checkpoint, available, share)
    largest = prefetch.largest_prefetched(available, share)
    if args.json:
        return report.to_json({"checkpoint_bytes": checkpoint, "available_bytes": available, "enabled": enabled, "largest_prefetched_bytes": largest})
    verdict = "prefetched" if enabled else "not prefetched (auto-prefetch disabled: the slow read path)"
    return (
        f"Checkpoint {fmt(checkpoint, 'GB', 1)} against {fmt(share, '%', 0)} of {fmt(available, 'GiB')} available: {verdict}\n"
        f"Largest checkpoint still prefetched: {fmt(largest, 'GB', 1)}"
    )


# --- schema and catalog ---------------------------------------------------------------------


def cmd_schema(catalog: Catalog | None, args: argparse.Namespace) -> str:
    wanted = {name: json.dumps(s, indent=2) + "\n" for name, s in schemas().items()}
    stale = [n for n, text in wanted.items() if not (SCHEMA_DIR / n).exists() or (SCHEMA_DIR / n).read_text() != text]
    if args.check:
        if stale:
            raise InputError(f"catalog/schema: {', '.join(stale)} out of date; run: python -m calc schema")
        return f"catalog/schema: {len(wanted)} files up to date"
    SCHEMA_DIR.mkdir(exist_ok=True)
    for name, text in wanted.items():
        (SCHEMA_DIR / name).write_text(text)
    return f"catalog/schema: wrote {len(wanted)} files"


def cmd_check(catalog: Catalog, args: argparse.Namespace) -> str:
    return (
        f"catalog: {len(catalog.boxes)} boxes, {len(catalog.models)} models, {len(catalog.deployments)} deployments, "
        f"{len(catalog.incidents)} incidents, {len(catalog.traces)} traces: valid"
    )


@functools.cache  # built once a process: the site build runs the command line for every example
def build_parser() -> Parser:
    parser = Parser(prog="python -m calc", description="Memory calculators for vLLM starts, from the catalog.")
    parser.add_argument("--catalog", default=str(CATALOG_DIR), help="catalog directory (default: the project's)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def add(name: str, helptext: str) -> Parser:
        p = sub.add_parser(name, help=helptext, description=helptext)
        p.add_argument("--json", action="store_true", help="print JSON for machines")
        return p

    p = add("gate", "the start gate: needs vs MemAvailable, the largest pin, the flags")
    p.add_argument("--deployment", help="deployment id from catalog/starts.yaml (default: the first)")
    p.add_argument("--pin", help="KV pin: 10e9, 9.31 GiB, 10 GB or 10000000000")
    p.add_argument("--drafter", action="store_true", help="the speculative drafter loads with the model")
    p.add_argument("--speculative-tokens", help="speculative tokens with the drafter")
    p.add_argument("--prefill-budget", help="--max-num-batched-tokens")
    p.add_argument("--seats", help="--max-num-seqs")
    p.add_argument("--max-model-len", help="--max-model-len")
    p.add_argument("--typical-context", help="tokens a seat typically holds")
    p.add_argument("--gpu-memory-utilization", help="the fraction to check (default: the largest that passes)")
    p.add_argument("--available", help="MemAvailable per box: one size, one per box separated by commas, or auto")
    p.set_defaults(run=cmd_gate)

    p = add("kv", "the KV pool both ways: pin to tokens, tokens to pin")
    p.add_argument("--deployment", help="take bytes per token measured on this deployment")
    p.add_argument("--speculative-tokens", help="the measured reading at this many speculative tokens")
    p.add_argument("--bytes-per-token", help="bytes per token per rank, instead of a deployment's")
    p.add_argument("--pin", help="pool size (default 10e9)")
    p.add_argument("--tokens", help="tokens wanted: prints the pin that holds them")
    p.add_argument("--max-model-len", default="131072")
    p.add_argument("--seats")
    p.add_argument("--typical-context")
    p.set_defaults(run=cmd_kv)

    p = add("fit", "per-request KV cost (per token x context + fixed) from one pool read at two or more max_model_len")
    p.add_argument("--pool", required=True, help="the pool's size per rank, such as 24 GiB")
    p.add_argument("--reading", action="append", help="MAX_MODEL_LEN:TOKENS from a startup line, repeatable")
    p.add_argument("--max-model-len", action="append", help="predict the token count at this max_model_len, repeatable")
    p.set_defaults(run=cmd_fit)

    p = add("fraction", "vLLM's own start check: ceil(total x fraction) <= free")
    p.add_argument("--box", default="rtx-5090-node")
    p.add_argument("--total", help="card or box total (default: the catalog's)")
    p.add_argument("--free", help="free memory at start, or auto (default: the catalog's reading)")
    p.add_argument("--fraction", help="gpu_memory_utilization (default: vLLM's)")
    p.set_defaults(run=cmd_fraction)

    p = add("guard", "the memory guard replayed over a MemAvailable trace")
    p.add_argument("trace", help="a trace file ('<seconds> <size>' a line), - for stdin, or a trace id from the catalog")
    p.add_argument("--floor")
    p.add_argument("--polls")
    p.add_argument("--serving-at", help="seconds at which the head serves; the guard stops there")
    p.set_defaults(run=cmd_guard)

    p = add("plan", "several models on one box: resident budget and fractions planned together")
    p.add_argument("--box", default="dgx-spark")
    p.add_argument("--model", action="append", help="MODEL[:KV[:HEADROOM]], repeatable")
    p.add_argument("--fractions", help="engine fractions in start order, such as 0.5,0.35")
    p.add_argument("--available", help="MemAvailable before the first engine (default: the box's idle reading)")
    p.set_defaults(run=cmd_plan)

    p = add("prefetch", "vLLM's auto-prefetch rule: checkpoint <= 90 %% of available")
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--available", required=True, help="MemAvailable when loading starts, or auto")
    p.set_defaults(run=cmd_prefetch)

    p = sub.add_parser("schema", help="write (or --check) the catalog's JSON Schema files")
    p.add_argument("--check", action="store_true")
    p.set_defaults(run=cmd_schema, json=False)

    p = add("check", "validate the catalog")
    p.set_defaults(run=cmd_check)
    return parser


def main(argv: list[str] | None = None, catalog: Catalog | None = None) -> int:
    """Run one command; `catalog`, when given, stands for the default catalog directory's contents
    (the site build passes the catalog it has already read)."""
    try:
        args = build_parser().parse_args(argv)
        if args.run is cmd_schema:
            catalog = None
        elif catalog is None or args.catalog != str(CATALOG_DIR):
            catalog = load_dir(args.catalog)
        out = args.run(catalog, args)
    except (UsageError, InputError, CatalogError) as error:
        print(f"calc: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2) if isinstance(out, dict) else out)
    return 0
