"""python -m calc: the calculators on the command line, over the same catalog and functions."""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import re
import sys
import time
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from calc import derive, fraction, kv, report
from calc.catalog import Catalog, CatalogError, load_dir, schemas
from calc.units import InputError, fmt, parse_count, parse_fraction, parse_number, parse_size, printed_sum, quoted, shown

if TYPE_CHECKING:  # the log reader and the others are imported by their commands only: the rest start faster
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import BinaryIO

    from calc import logread, logverdict
    from calc import lora as lora_module
    from calc import offload as offload_module
    from calc import predict as predict_module


def _catalog_dir() -> Path:
    """The checkout's catalog/, or the copy `pip install .` puts beside calc/ (calc/catalog_data/)."""
    here = Path(__file__).resolve().parent
    installed = here / "catalog_data"
    return installed if (installed / "boxes.yaml").is_file() else here.parent / "catalog"


CATALOG_DIR = _catalog_dir()
PROG = "vllm-settings" if Path(sys.argv[0]).name == "vllm-settings" else "python -m calc"
SCHEMA_DIR = CATALOG_DIR / "schema"


class UsageError(Exception):
    pass


def given(text: str) -> str:
    """Every flag's value: an empty one is a slip, never a request for the default."""
    if not text.strip():
        raise argparse.ArgumentTypeError("found nothing, expected a value (an empty value is not the default: leave the flag out)")
    return text


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one clear line, exit status 2
        raise UsageError(f"{self.prog}: {message}")

    def add_argument(self, *names: Any, **kwargs: Any) -> argparse.Action:
        if kwargs.get("action") in (None, "store", "append") and "type" not in kwargs:
            kwargs["type"] = given
        return super().add_argument(*names, **kwargs)


MEMINFO = "/proc/meminfo"
_MEMAVAILABLE = re.compile(r"MemAvailable:\s*(?P<count>\S+)\s*(?P<unit>\S*)\s*")


def meminfo_available(path: str | None = None) -> int:
    """MemAvailable of the box this runs on, in bytes. The kernel prints it in kB (KiB, in fact)."""
    path = path or MEMINFO
    try:
        text = read_text(path)
    except OSError as error:
        raise InputError(f"--available auto: cannot read {path} ({error.strerror})") from None
    total: tuple[int, int] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("MemTotal:") and total is None:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB" and parts[1].isascii() and parts[1].isdigit() and len(parts[1]) <= 20:
                total = (int(parts[1]) * 1024, number)
        if line.startswith("MemAvailable:"):
            match = _MEMAVAILABLE.fullmatch(line)
            if not match or match["unit"] != "kB":
                raise InputError(f"--available auto: {path}, line {number}: found {line[:80]!r}, expected 'MemAvailable: <number> kB'")
            available = parse_count(match["count"], f"--available auto: {path}, line {number}: MemAvailable") * 1024
            if total is not None and available > total[0]:
                raise InputError(
                    f"--available auto: {path}, line {number}: found MemAvailable {available:,} B above MemTotal {total[0]:,} B (line {total[1]}), "
                    "expected at most the total: no kernel prints this"
                )
            return available
    raise InputError(f"--available auto: found no MemAvailable line in {path}")


def read_text(path: str) -> str:
    """A text file as UTF-8 (regular, and at most files.READ_LIMIT bytes; OSError otherwise);
    other bytes get a message naming the file and where they are."""
    from calc import files

    if path == "-":
        data = sys.stdin.buffer.read(files.READ_LIMIT + 1)
        if len(data) > files.READ_LIMIT:
            raise InputError(f"-: found more than {files.READ_LIMIT:,} bytes on standard input, expected at most {files.READ_LIMIT // 2**20} MiB")
    else:
        data = files.read_bounded(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: found byte {data[error.start]:#04x} at offset {error.start}, expected UTF-8 text") from None


# A comma between per-box figures follows a unit or comes before a space: '60 GiB,61 GiB' and
# '60e9, 61e9' are two figures, '68,501 MiB' and '10,5 GiB' one (the second refused by parse_size).
_LIST_COMMA = re.compile(r"(?<=[A-Za-z]),|,(?=\s)")


def available_list(text: str, boxes: int) -> tuple[int, ...]:
    if text == "auto":
        return (meminfo_available(),) * boxes
    values = tuple(parse_size(part, "--available") for part in _LIST_COMMA.split(text))
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


def cmd_gate(catalog: Catalog, args: argparse.Namespace) -> object:
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
        host_bytes=_kv_offload_a_rank(args.kv_offloading_size, catalog.deployments[deployment_id]["tp"]),
        cpu_offload_gib=_gib_flag(args.cpu_offload_gb, "--cpu-offload-gb"),
        kv_offloading_gib=_gib_flag(args.kv_offloading_size, "--kv-offloading-size"),
    )  # fmt: skip
    problems = report.check(inputs) + [p for p in [report.floor_problem(catalog, inputs, "--pin")] if p]
    if problems:
        raise InputError(problems[0] if problems[0].startswith("--") else "--" + problems[0])
    result = report.start_report(catalog, inputs)
    if args.json:
        return report.to_json(result)
    return render_gate(result)


def _gib_flag(text: str | None, flag: str) -> Fraction:
    """A size in GiB as vLLM's offload flags take it: 0 or more."""
    if text is None:
        return Fraction(0)
    value = parse_number(text, flag)
    if value < 0:
        raise InputError(f"{flag}: found {text!r}, expected a size in GiB of 0 or more")
    return value


def _kv_offload_a_rank(text: str | None, tp: int) -> int:
    """--kv-offloading-size is the buffer over the tensor-parallel ranks (vllm/config/cache.py): a rank's share, rounded up."""
    size = _gib_flag(text, "--kv-offloading-size")
    return -(-int(size * 2**30) // tp)


def render_gate(r: dict[str, Any]) -> str:
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
    lines.append(f"  {'needs':<22}{fmt(report.needs_as_printed(r['terms']), 'GiB').removesuffix(' GiB'):>11}")
    for b in r["boxes"]:
        verdict = "passes" if b["passes"] else "refused"
        margin = report.margin_as_printed(b["available_bytes"], r["terms"])
        lines.append(f"  {b['box']}: available {fmt(b['available_bytes'], 'GiB')}, {verdict} by {fmt(abs(margin), 'GiB')}")
    lines.append(f"Start: {'yes' if r['passes'] else 'no, refused'}")
    lines.extend(f"  note: {note}" for note in r["notes"])
    lines.extend(_largest_pin_lines(r))
    pool = r["kv"]
    if pool["bytes_per_token"] is not None:
        tokens = fmt(pool["tokens"], "tokens") + (" (logged)" if pool["tokens_logged"] else "")
        lines.append(f"KV pool: {tokens} at {fmt(pool['bytes_per_token'], 'count')} B/token ({r['kv_source']}), "
                     f"{fmt(pool['full_contexts'], 'x', down=True)} full {fmt(i.max_model_len, 'count')}-token contexts")  # fmt: skip
        if not pool["holds_one_context"]:
            lines.append(
                f"  below the floor: one full context and the block vLLM holds back from 0.29.0 ({fmt(pool['block_size'], 'tokens')}, "
                f"{pool['block_source']}) need a pin of {fmt(pool['one_context_pin_bytes'], 'e9', 2, up=True)}"
            )
        if "tokens_needed" in pool:
            lines.append(f"  seats x typical context = {fmt(pool['tokens_needed'], 'tokens')}: {'fits' if pool['seats_fit'] else 'does not fit'}")
    f = r["fraction"]
    when = "" if f["reached"] else " (not reached: the gate refuses the start first; the fix passes it)"
    how = (
        "typed"
        if f["typed"]
        else f"the largest two-decimal fraction that leaves the {fmt(r['headroom_bytes'], 'GiB', 0)} start headroom free; the edge, {fmt(f['edge'], 'fraction')}, leaves {fmt(f['free_bytes'] - fraction.requested(f['total_bytes'], f['edge']), 'GiB')}"
    )
    lines.append(f"vLLM fraction check{when}: {report.fraction_text(f['fraction'])} x {fmt(f['total_bytes'], 'GiB')} "
                 f"{'<=' if f['passes'] else '>'} {fmt(f['free_bytes'], 'GiB')} free ({how}); ceiling {fmt(f['ceiling'], 'fraction', 4)}")  # fmt: skip
    if not r["passes"]:
        lines.append("What to change, largest movable term first: " + ", ".join(f"{t.name} {fmt(t.bytes, 'GiB')}" for t in r["changes"]))
    if r["flags_are_the_fix"]:
        lines.append("Flags of the suggested fix (not the refused request):")
    elif r["passes"] is False:
        lines.append("Flags of the refused request, for reference (it does not start):")
    else:
        lines.append("Flags:")
    lines.extend(f"  {flag}" for flag in r["flags"])
    return "\n".join(lines)


def _exact_pin(value: int) -> str:
    return fmt(value, "e9", 2, down=True) if value >= 0 else "short by " + fmt(-value, "GiB", up=True)


def _largest_pin_lines(r: dict[str, Any]) -> list[str]:
    """The largest pin, worked from its printed operands: the least MemAvailable rounded down less
    each cost (every term but the pin) rounded up, so the printed limit is never above the exact one;
    its bytes are the GiB as printed, rounded down, and the limit from exact bytes stands beside."""
    largest = r["largest_pin_bytes"]
    if largest["without_drafter"] is None:
        return ["Largest pin that passes: unknown"]
    available = min(b["available_bytes"] for b in r["boxes"])
    costs = [(t.name, t.bytes) for t in r["terms"] if t.name not in ("KV pin", "drafter") and t.bytes]
    # both limits are min(MemAvailable) less the same terms at a zero pin, the drafter's aside
    drafter = None if largest["with_drafter"] is None else largest["without_drafter"] - largest["with_drafter"]
    lines = ["Largest pin that passes (MemAvailable rounded down, less each cost rounded up, in GiB):"]
    for label, extra, exact in (("without the drafter", [], largest["without_drafter"]), ("with the drafter", [("drafter", drafter)], largest["with_drafter"])):
        if exact is None:
            continue
        terms = costs[:1] + extra + costs[1:]
        worked = shown(available, "GiB", 2, down=True) - sum(shown(b, "GiB", 2, up=True) for _, b in terms)
        said = " - ".join(
            [fmt(available, "GiB", 2, down=True).removesuffix(" GiB")] + [f"{fmt(b, 'GiB', 2, up=True).removesuffix(' GiB')} {n}" for n, b in terms]
        )
        result = f"{fmt(worked, 'GiB')}, so {fmt(worked, 'e9', 2, down=True)}" if worked >= 0 else f"{fmt(worked, 'GiB')}: no pin passes"
        lines.append(f"  {label}: {said} = {result} ({_exact_pin(exact)} from exact bytes)")
    return lines


# --- kv -------------------------------------------------------------------------------------


def cmd_kv(catalog: Catalog, args: argparse.Namespace) -> object:
    reading: derive.KvReading | None
    per_token: int | Fraction
    source: str | None
    tokens: int | Fraction
    block, block_source = kv.DEFAULT_BLOCK_SIZE, "vLLM's default block"
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
        block, block_source = reading.block_size, reading.block_source
        if (reading.speculative_tokens or 0) != spec:
            reading = None  # measured at another speculative-token count: derive, never quote its log
    max_len = parse_count(args.max_model_len, "--max-model-len", 1)
    out: dict[str, Any] = {"bytes_per_token": per_token, "source": source, "max_model_len": max_len}
    if args.tokens:
        tokens = parse_count(args.tokens, "--tokens", 1)
        out.update(tokens=tokens, pin_bytes=kv.pool_for_tokens(tokens, per_token))
    else:
        pin = parse_size(args.pin if args.pin is not None else "10e9", "--pin")
        tokens, logged = reading.tokens_at(pin) if reading else (kv.tokens_for_pool(pin, per_token), False)
        out.update(pin_bytes=pin, tokens=tokens, tokens_logged=logged)
    if args.block_size:
        block, block_source = parse_count(args.block_size, "--block-size", 1), "given"
    whole = int(out["tokens"])
    out.update(
        full_contexts=kv.full_contexts(whole, max_len),
        holds_one_context=kv.holds_one_context(whole, max_len, block),
        one_context_pin_bytes=kv.one_request_pin(max_len, per_token, block),
        block_size=block,
    )
    if args.seats and args.typical_context:
        seats, typical = parse_count(args.seats, "--seats", 1), parse_count(args.typical_context, "--typical-context", 1)
        low, high = kv.seats_pool_range(seats, typical, per_token, max_len)
        out.update(tokens_needed=kv.tokens_needed(seats, typical), pin_for_needed_bytes=low, pin_for_needed_at_most_bytes=high)
    if args.json:
        return report.to_json(out)
    if args.tokens:
        held = (f"{fmt(out['tokens'], 'tokens')} x {fmt(per_token, 'count')} B need a pin of {fmt(out['pin_bytes'], 'B')} "
                f"({fmt(out['pin_bytes'], 'e9', 2, up=True)} rounded up, {fmt(out['pin_bytes'], 'GiB', up=True)})")  # fmt: skip
    else:
        held = f"Pin {fmt(out['pin_bytes'], 'e9')} ({fmt(out['pin_bytes'], 'GiB')}) holds {fmt(out['tokens'], 'tokens')}" + (
            " (logged)" if out.get("tokens_logged") else ""
        )
    lines = [
        f"Bytes per token: {fmt(per_token, 'count')} at max_model_len {fmt(max_len, 'count')} ({source})",
        held,
        f"Full {fmt(max_len, 'count')}-token contexts: {fmt(out['full_contexts'], 'x', down=True)}"
        + ("" if out["holds_one_context"] else " (below one request at max_model_len and the block vLLM 0.29.0 and later hold back: vLLM does not start)"),
        f"One request of {fmt(max_len, 'count')} tokens starts from a pin of {fmt(out['one_context_pin_bytes'], 'e9', 2, up=True)}: "
        f"vLLM 0.29.0 and later hold one block of the pool back before the check ({fmt(block, 'tokens')}, {block_source}; "
        "--block-size to change it)",
    ]
    if "tokens_needed" in out:
        lines += [
            f"Seats x typical context: {fmt(out['tokens_needed'], 'tokens')}, a pin of {fmt(out['pin_for_needed_bytes'], 'e9', 2, up=True)} "
            "if no part of a request's cost is fixed",
            f"  every seat pays a request's fixed cost however short its context; the catalog does not split this cost, so up to "
            f"{fmt(out['pin_for_needed_at_most_bytes'], 'e9', 2, up=True)} (each seat charged one full context)",
        ]
    return "\n".join(lines)


# --- fit -----------------------------------------------------------------------------------


def cmd_fit(catalog: Catalog, args: argparse.Namespace) -> object:
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
        *(
            f"Predicted at {fmt(p['max_model_len'], 'count')}: {fmt(p['tokens'], 'tokens')}, {fmt(p['full_contexts'], 'x', down=True)} full contexts"
            for p in fit["predicted"]
        ),
    ]
    return "\n".join(lines)


# --- fraction -------------------------------------------------------------------------------


def cmd_fraction(catalog: Catalog, args: argparse.Namespace) -> object:
    box = catalog.boxes.get(args.box)
    if box is None:
        raise InputError(f"--box: found {args.box!r}, expected one of {', '.join(catalog.boxes)}")
    total = parse_size(args.total, "--total") if args.total else derive.box_total(box)[0].size
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


def cmd_guard(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc import guard

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
    serving = _seconds(args.serving_at, "--serving-at") if args.serving_at else None
    result = guard.run(samples, floor, polls, serving)
    if args.json:
        return report.to_json({**result.__dict__, "floor_bytes": floor, "polls_in_a_row": polls, "samples": len(samples)})
    verdict = f"kills the rank at {result.at:g} s" if result.killed else "lets the start through"
    return (
        f"Guard ({polls} polls in a row under {fmt(floor, 'GiB')}) over {len(samples)} polls: {verdict}\n"
        f"Lowest MemAvailable: {fmt(result.lowest, 'GiB')} at {result.lowest_at:g} s; longest run under the floor: {result.longest_run}"
    )


def _guard_settings(policy: dict[str, Any], args: argparse.Namespace) -> tuple[int, int]:
    """The guard's floor and polls in a row: the options where given, the catalog's policy otherwise."""
    floor = parse_size(args.floor, "--floor") if args.floor else policy["floor"].value
    polls = parse_count(args.polls, "--polls", 1) if args.polls else policy["polls_in_a_row"].value
    return floor, polls


# --- watch ----------------------------------------------------------------------------------


def cmd_watch(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc import watch

    policy = catalog.policy["guard"]
    paths = args.proc or ["/proc/meminfo"]
    interval = _seconds(args.interval, "--interval") if args.interval else float(policy["poll_seconds"].value)
    duration = _seconds(args.duration, "--duration") if args.duration else interval * (len(paths) - 1) if args.proc else 60.0
    floor, polls = _guard_settings(policy, args)
    count = watch.poll_count(duration, interval)

    def read(n: int) -> str:
        path = paths[min(n, len(paths) - 1)]
        try:
            return read_text(path)
        except OSError as error:
            raise InputError(f"--proc {path}: cannot read it ({error.strerror}); expected a meminfo file such as /proc/meminfo") from None

    out = _out_file(args.out, args.force, args.catalog) if args.out else None
    seen = []
    try:
        if out:
            out.write(f"# python -m calc watch: MemAvailable every {interval:g} s from {', '.join(paths)}; replay with python -m calc guard {args.out}\n")
        for poll in watch.watch(read, getattr(args, "sleep", time.sleep), count, interval, floor, polls, paths[0]):
            seen.append(poll)
            if out:
                out.write(watch.trace_line(poll) + "\n")
                out.flush()
            if not args.json:
                print(watch.poll_text(poll), flush=True)
    except OSError as error:
        raise InputError(f"--out {args.out}: cannot write it ({error.strerror})") from None
    finally:
        if out:
            out.close()
    if args.json:
        return dict(report.to_json({"floor_bytes": floor, "polls_in_a_row": polls, "interval_seconds": interval, "polls": seen}))
    return watch.summary(seen, floor, polls) + (f"\nTrace written to {args.out}; replay it with: python -m calc guard {args.out}" if args.out else "")


def _out_file(name: str, force: bool, catalog_dir: str) -> io.TextIOWrapper:
    """A file to write a trace to: new, or an existing regular file with --force; never in the
    catalog (a trace written over catalog/traces.yaml breaks every command after it)."""
    path = Path(name)
    target = path.resolve()
    for folder in {CATALOG_DIR.resolve(), Path(catalog_dir).resolve()}:
        if target == folder or folder in target.parents:
            raise InputError(f"--out {name}: found a path in the catalog ({folder}), expected a file outside it; the catalog is edited by hand")
    if not target.parent.is_dir():
        raise InputError(f"--out {name}: found no folder {str(path.parent)!r}, expected a file in an existing folder")
    if path.is_dir():
        raise InputError(f"--out {name}: found a folder, expected a file name")
    if path.exists() and not path.is_file():
        raise InputError(f"--out {name}: found something that is not a regular file, expected a file name")
    if path.exists() and not force:
        raise InputError(f"--out {name}: found an existing file, expected a new file name; give --force to replace it")
    try:
        return path.open("w" if force else "x", encoding="utf-8")
    except FileExistsError:
        raise InputError(f"--out {name}: found an existing file, expected a new file name; give --force to replace it") from None
    except OSError as error:
        raise InputError(f"--out {name}: cannot write it ({error.strerror})") from None


def _seconds(text: str, what: str) -> float:
    """Seconds as every number is read (calc.units.parse_number: ASCII digits, bounded)."""
    expected = "seconds, such as 357"
    try:
        return float(parse_number(text, what, expected, expected))
    except InputError as error:
        if str(error).endswith("expected a number"):  # not a number at all: say what is wanted
            raise InputError(f"{what}: found {quoted(text.strip())}, expected {expected}") from None
        raise


# --- plan -----------------------------------------------------------------------------------


def cmd_plan(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc import budget

    box = catalog.boxes.get(args.box)
    if box is None:
        raise InputError(f"--box: found {args.box!r}, expected one of {', '.join(catalog.boxes)}")
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
        kv_size, headroom = (parse_size(text, f"--model {name} {what}") for text, what in zip([*parts, "0", "0"][:2], ("KV", "headroom"), strict=True))
        residents.append(budget.Resident(catalog.models[name]["name"], catalog.models[name]["weights"].value, kv_size, headroom))
    result = budget.budget(total, residents)
    fractions = [parse_fraction(f, "--fractions") for f in args.fractions.split(",")] if args.fractions else []
    available = parse_size(args.available, "--available") if args.available else (derive.box_free(box) or derive.box_total(box)[0]).size
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


# --- prefetch -------------------------------------------------------------------------------


def cmd_prefetch(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc import prefetch

    share = catalog.policy["vllm"]["prefetch_fraction"].value
    checkpoint = parse_size(args.checkpoint, "--checkpoint")
    available = meminfo_available() if args.available == "auto" else parse_size(args.available, "--available")
    cgroup = parse_size(args.cgroup_available, "--cgroup-available") if args.cgroup_available else None
    room = prefetch.available_to_loader(available, cgroup)
    fits = prefetch.prefetch_enabled(checkpoint, room, share)
    largest = prefetch.largest_prefetched(room, share)
    filesystems = [args.filesystem] if args.filesystem else ["nfs", "ext4"]
    verdicts = {fs: prefetch.auto_prefetch(checkpoint, available, share, fs, cgroup) for fs in filesystems}
    if args.json:
        return report.to_json({"checkpoint_bytes": checkpoint, "available_bytes": available, "loader_available_bytes": room,
                               "fits": fits, "largest_prefetched_bytes": largest,
                               "enabled": {fs: v[0] for fs, v in verdicts.items()}})  # fmt: skip
    capped = f" (cgroup cap: {fmt(room, 'GiB')})" if cgroup is not None and room < available else ""
    lines = [f"Checkpoint {fmt(checkpoint, 'GB', 1)} against {fmt(share, '%', 0)} of {fmt(available, 'GiB')} available{capped}: "
             + ("within" if fits else "above") + " the size rule"]  # fmt: skip
    lines += [f"  on {fs}: {why}" for fs, (_, why) in verdicts.items()]
    lines.append(f"Largest checkpoint within the size rule: {fmt(largest, 'GB', 1, down=True)} (rounded down)")
    lines.append("Auto-prefetch needs both a network filesystem and the size rule (vLLM v0.20.0 and later); "
                 "--safetensors-load-strategy=prefetch forces it")  # fmt: skip
    return "\n".join(lines)


# --- model ----------------------------------------------------------------------------------


def _read_text(path: str, what: str) -> str:
    from calc import files

    try:
        return files.read_bounded(path).decode("utf-8")
    except OSError as error:
        raise InputError(f"{what} {path}: cannot read it ({error.strerror})") from None
    except UnicodeDecodeError:
        raise InputError(f"{what} {path}: not text, expected a JSON file") from None


def cmd_model(catalog: Catalog | None, args: argparse.Namespace) -> object:
    from calc import modeled, predict

    config_text = _read_text(args.config, "config")
    max_len = parse_count(args.max_model_len, "--max-model-len", 1)
    if args.max_num_batched_tokens is not None:
        if args.prefill_budget is not None:
            raise InputError("--max-num-batched-tokens: found beside --prefill-budget, expected one of them (they are the same setting)")
        args.prefill_budget = args.max_num_batched_tokens
    card = _card(catalog, args)
    lora_cfg = _lora(args)
    host_cfg = _offload(args)
    start = None
    if card is not None:
        start = predict.Start(
            tp=parse_count(args.tp, "--tp", 1), pp=parse_count(args.pp, "--pp", 1), pp_layer_partition=args.pp_layer_partition, lora=lora_cfg, max_model_len=max_len,
            cpu_offload_gib=host_cfg.cpu_offload_gib if host_cfg else Fraction(0),
            utilization=parse_fraction(args.gpu_memory_utilization, "--gpu-memory-utilization") if args.gpu_memory_utilization is not None else None,
            max_num_seqs=parse_count(args.max_num_seqs, "--max-num-seqs", 1) if args.max_num_seqs is not None else None,
            max_num_batched_tokens=parse_count(args.prefill_budget, _budget_flag(args), 1) if args.prefill_budget is not None else None,
            enforce_eager=args.enforce_eager, kv_cache_dtype=args.kv_cache_dtype, engine_version=args.engine_version, offline=args.offline,
        )  # fmt: skip
        predict.check_start(start)
        if args.pool is not None:
            raise InputError("--pool: found beside --gpu or --total-memory, expected one of them (the card predicts the pool)")
    elif args.gpu_memory_utilization is not None or args.max_num_seqs is not None or args.enforce_eager or args.offline:
        raise InputError(
            "--gpu-memory-utilization, --max-num-seqs, --enforce-eager, --offline: found without a card, expected --gpu NAME or --total-memory SIZE"
        )
    pp = parse_count(args.pp, "--pp", 1)
    if args.pp_layer_partition is not None and pp == 1:
        raise InputError("--pp-layer-partition: found with --pp 1, expected --pp N above 1 (it splits the layers over the pipeline stages)")
    budget = parse_count(args.prefill_budget, _budget_flag(args), 1) if args.prefill_budget is not None else None
    if budget is None and card is not None and start is not None:
        rel = predict.release(args.engine_version)
        budget = start.max_num_batched_tokens or predict.default_batch(rel, card.total_bytes, card.name, max_len, args.offline).max_num_batched_tokens
    inputs = modeled.ModelInputs(
        config_text=config_text,
        config_file=args.config,
        tp=parse_count(args.tp, "--tp", 1),
        kv_cache_dtype=args.kv_cache_dtype,
        max_model_len=max_len,
        pool=parse_size(args.pool, "--pool") if args.pool is not None else None,
        engine_version=args.engine_version,
        index_text=_read_text(args.index, "index") if args.index is not None else None,
        index_file=args.index or "model.safetensors.index.json",
        block_size=parse_count(args.block_size, "--block-size", 1) if args.block_size is not None else None,
        prefill_budget=budget or 8192,
        speculative_tokens=parse_count(args.speculative_tokens, "--speculative-tokens"),
        dcp=parse_count(args.dcp, "--dcp", 1),
        prefix_caching=False if args.no_prefix_caching else True if args.prefix_caching else None,
        pp=pp,
        pp_layer_partition=args.pp_layer_partition,
        lora=lora_cfg,
        offload=host_cfg,
    )
    r = modeled.model_report(inputs)
    if card is not None and start is not None:
        r = _with_prediction(r, config_text, args.config, card, start)
    if args.json:
        return report.to_json(r)
    lines = [
        f"{r['architecture']} ({r['family']}: {r['layers']}), TP={r['tp']}, KV {r['kv_cache_dtype']}; {r['engine_rules']}; all figures modeled",
        f"Weights per rank: {fmt(r['weights_bytes_per_rank'], 'GiB')} (from the {r['weights_source']})"
        + (f", drafter layers {fmt(r['drafter_bytes_per_rank'], 'GiB')} more with speculative decoding" if r["drafter_bytes_per_rank"] else ""),
        f"KV per request at {fmt(r['max_model_len'], 'count')} tokens: {fmt(r['kv_bytes_per_request'], 'GiB')} = "
        f"{fmt(r['kv_bytes_per_token'], 'count')} B a token + {fmt(r['kv_fixed_bytes_per_request'], 'GiB')} fixed",
        f"  {r['kv_groups']} KV group(s) of {r['layers_per_group']} layers, block {r['block_size']} tokens"
        + (f", {r['padding_layers']} padding layer(s)" if r["padding_layers"] else ""),
        f"Smallest pool that starts: {fmt(r['kv_floor_bytes'], 'B')} ({fmt(r['kv_floor_bytes'], 'e9', 2, up=True)} rounded up)"
        + (
            f", the request and the block of {fmt(r['null_block_bytes'], 'B')} vLLM 0.29.0 and later hold back before the one-request check"
            if r["null_block_bytes"]
            else ", one request (this build holds no block back before the check)"
        ),
    ]
    if r["kv_tokens"] is not None:
        lines += [
            f"Pool {fmt(r['pool_bytes'], 'GiB')}: GPU KV cache size {fmt(r['kv_tokens'], 'tokens')}, "
            f"maximum concurrency {fmt(r['max_concurrency'], 'x')} at {fmt(r['max_model_len'], 'count')}",
            f"Largest max_model_len one request fits: {fmt(r['largest_max_model_len'], 'count')}",
        ]
    if "verdict" in r:
        terms = r["terms"]
        lines.insert(2, f"On {r['card']} ({fmt(r['total_memory_bytes'], 'GiB')}) x utilization {r['gpu_memory_utilization']} = "
                        f"{fmt(r['requested_bytes'], 'GiB')} requested; max_num_seqs {r['max_num_seqs']}, max_num_batched_tokens {r['max_num_batched_tokens']}")  # fmt: skip
        lines.insert(3, "  less " + ", ".join(f"{name} {fmt(t['bytes'], 'GiB')}" for name, t in terms.items()))
        lines.insert(4, f"KV pool a rank (predicted): {fmt(r['available_kv_bytes'], 'GiB')}; vLLM's verdict: {r['verdict']} ({r['verdict_reason']})")
        for i, f in enumerate(r["fixes"]):
            lines.insert(5 + i, f"  passes with {f['change']} ({f['flags']}): pool {fmt(f['available_kv_bytes'], 'GiB')}")
    if r["lora"] is not None:
        lo = r["lora"]
        lines.insert(2, f"LoRA: {lo['max_loras']} slot(s) of rank {lo['max_lora_rank']} on each rank, {fmt(lo['device_bytes_per_rank'], 'GiB')} "
                        f"allocated at load beside the weights ({lo['modules']} modules); {lo['max_cpu_loras']} adapter(s) on the host, "
                        f"at most {fmt(lo['host_bytes'], 'GiB')} over every worker")  # fmt: skip
    if r["offload"] is not None:
        of = r["offload"]
        lines.insert(2, f"Host memory: {fmt(of['offloaded_bytes_per_rank'], 'GiB')} of weights a rank moved by --cpu-offload-gb "
                        f"({fmt(of['weights_on_device_bytes_per_rank'], 'GiB')} stay on the device), KV offloading {fmt(of['kv_offloading_bytes'], 'GiB')}, "
                        f"swap {fmt(of['swap_space_bytes'], 'GiB')}: {fmt(of['host_bytes'], 'GiB')} on the host in all")  # fmt: skip
    if r["pp"] > 1:
        lines.insert(2, f"Pipeline parallel {r['pp']}, one rank of each stage:")
        for n, st in enumerate(r["ranks"]):
            holds = f" + {', '.join(st['holds'])}" if st["holds"] else ""
            lines.insert(3 + n, f"  stage {st['rank']}: layers {st['first_layer']}-{st['end_layer'] - 1} ({st['layers']}{holds}): weights "
                                f"{fmt(st['weights_bytes'], 'GiB')}, KV {fmt(st['kv_bytes_per_token'], 'count')} B a token")  # fmt: skip
    lines += [f"Note: {note}" for note in r["notes"]]
    return "\n".join(lines)


def _lora(args: argparse.Namespace) -> lora_module.Lora | None:
    """--enable-lora and its sizes, as vLLM's LoRAConfig takes them (defaults 1 slot, rank 16)."""
    from calc import lora

    sizes = {"--max-loras": args.max_loras, "--max-lora-rank": args.max_lora_rank, "--max-cpu-loras": args.max_cpu_loras}
    if not args.enable_lora:
        given = [name for name, value in sizes.items() if value is not None]
        if given:
            raise InputError(f"{given[0]}: found without --enable-lora, expected --enable-lora beside it")
        return None
    cfg = lora.Lora(
        parse_count(args.max_loras, "--max-loras", 1) if args.max_loras is not None else 1,
        parse_count(args.max_lora_rank, "--max-lora-rank", 1) if args.max_lora_rank is not None else 16,
        parse_count(args.max_cpu_loras, "--max-cpu-loras", 1) if args.max_cpu_loras is not None else None,
    )
    lora.check(cfg)
    return cfg


def _offload(args: argparse.Namespace) -> offload_module.Offload | None:
    """--cpu-offload-gb, --kv-offloading-size (and its backend) and --swap-space, in GiB as vLLM takes them."""
    from calc import offload

    if args.kv_offloading_backend is not None and args.kv_offloading_size is None:
        raise InputError("--kv-offloading-backend: found without --kv-offloading-size, expected the size beside it (vLLM offloads nothing without it)")
    if args.cpu_offload_gb is None and args.kv_offloading_size is None and args.swap_space is None:
        return None

    def gib(text: str | None, flag: str) -> Fraction | None:
        return None if text is None else parse_number(text, flag)

    o = offload.Offload(
        gib(args.cpu_offload_gb, "--cpu-offload-gb") or Fraction(0),
        gib(args.kv_offloading_size, "--kv-offloading-size"),
        args.kv_offloading_backend or "native",
        gib(args.swap_space, "--swap-space"),
    )
    offload.check(o)
    return o


def _budget_flag(args: argparse.Namespace) -> str:
    return "--max-num-batched-tokens" if args.max_num_batched_tokens is not None else "--prefill-budget"


def _card(catalog: Catalog | None, args: argparse.Namespace) -> predict_module.Card | None:
    from calc import predict

    if args.gpu is not None and args.total_memory is not None:
        raise InputError("--gpu: found beside --total-memory, expected one of them")
    if args.total_memory is not None:
        return predict.card_from_total(args.total_memory)
    if args.gpu is None:
        return None
    if catalog is None:
        raise InputError("--gpu: found no catalog to look the card up in, expected --total-memory instead")
    return predict.card_of_box(predict.find_box(catalog.boxes, args.gpu))


def _with_prediction(r: dict[str, Any], config_text: str, config_file: str, card: predict_module.Card, start: predict_module.Start) -> dict[str, Any]:
    """The modeled report with the pool predicted on the card: each term with its source, vLLM's verdict."""
    from calc import hfconfig, predict

    data = hfconfig.load(config_text, config_file)
    shape = hfconfig.shape(data, config_file)
    own = tuple(st["weights_bytes"] for st in r["ranks"]) if start.pp > 1 else None
    p = predict.predict(
        shape, card, start, predict.experts_per_token(data), r["weights_bytes_per_rank"], f"calc/weights.py from the {r['weights_source']}", own
    )
    terms = {
        t.name: {"bytes": t.bytes, "source": t.source} for t in (p.weights, p.lora, p.activation, p.non_torch, p.cuda_graph) if t.name != "lora" or start.lora
    }
    pool = p.available_kv_bytes
    found = predict.fixes(
        shape, card, start, predict.experts_per_token(data), r["weights_bytes_per_rank"], f"calc/weights.py from the {r['weights_source']}", own
    )
    fixes = [{"change": f.change, "flags": f.flags, "available_kv_bytes": f.prediction.available_kv_bytes, "kv_tokens": f.prediction.kv_tokens} for f in found]
    return {
        **r,
        "card": card.name,
        "card_source": card.source,
        "total_memory_bytes": p.total_bytes,
        "gpu_memory_utilization": float(p.utilization),
        "requested_bytes": p.requested_bytes,
        "max_num_seqs": p.max_num_seqs,
        "max_num_batched_tokens": p.max_num_batched_tokens,
        "batch_source": p.batch_source,
        "activation_peak_bytes": p.activation.bytes,
        "forward_peak_bytes": p.forward.bytes,
        "sampler_warmup_bytes": p.sampler.bytes,
        "non_torch_bytes": p.non_torch.bytes,
        "cuda_graph_bytes": p.cuda_graph.bytes,
        "terms": terms,
        "available_kv_bytes": pool,
        "pool_bytes": pool if pool > 0 else None,
        "kv_tokens": p.kv_tokens,
        "max_concurrency": p.max_concurrency,
        "kv_blocks": None,
        "largest_max_model_len": p.largest_max_model_len,
        "verdict": p.verdict,
        "verdict_reason": p.reason,
        "fixes": fixes,
        "modeled": True,
        "tightest_rank": p.tightest_stage,
        "ranks": [{**st, **_stage_pool(sp)} for st, sp in zip(r["ranks"], p.stages or (None,) * len(r["ranks"]), strict=True)],
    }


def _stage_pool(sp: predict_module.StagePool | None) -> dict[str, Any]:
    """A pipeline stage's own pool terms, for its entry in `ranks`."""
    if sp is None:
        return {}
    return {
        "lora_bytes": sp.lora_bytes,
        "activation_peak_bytes": sp.activation_bytes,
        "cuda_graph_bytes": sp.cuda_graph_bytes,
        "available_kv_bytes": sp.available_kv_bytes,
        "kv_blocks": sp.kv_blocks,
    }


# --- ingest ---------------------------------------------------------------------------------


def read_log_file(name: str, watcher: logverdict.Watcher | None = None) -> logread.LogReading:
    """A log file (or - for standard input), streamed line by line; binary refused up front; a
    watcher, when given, sees each line on its way (calc.logverdict)."""
    from calc import files

    try:
        stream = sys.stdin.buffer if name == "-" else files.open_regular(name)
        size = None if name == "-" else os.fstat(stream.fileno()).st_size
        with stream:
            return _read_log_stream(name, stream, size, watcher)
    except OSError as error:  # opening it, or reading it (/proc/self/mem gives an I/O error)
        raise InputError(f"{name}: cannot read it ({error.strerror}); expected a startup log file or -") from None


def _read_log_stream(name: str, stream: BinaryIO, size: int | None, watcher: logverdict.Watcher | None = None) -> logread.LogReading:
    """A log's text, binary refused up front, read line by line with progress shown for a large one
    (and seen by the watcher, when given, on its way)."""
    from calc import logread, logverdict

    def watched(lines: Iterable[str]) -> Iterable[str]:
        return lines if watcher is None else logverdict.watch(lines, watcher)

    head = stream.peek(8192)[:8192] if hasattr(stream, "peek") else b""
    encoding = _utf16(head)
    if encoding:  # saved by a Windows shell or editor as UTF-16: text, not binary
        sample16 = head.decode(encoding, errors="replace")
        text16 = io.TextIOWrapper(stream, encoding=encoding, errors="replace", newline="")
        if sum(not (c.isprintable() or c in "\t\r\n\ufeff") for c in sample16) <= len(sample16) // 20:
            try:
                return logread.read_lines(watched(text16))
            except InputError as error:
                raise InputError(f"{name}: {error}") from None
    if b"\x00" in head:
        raise InputError(f"{name}: found binary data, expected the text of a vLLM or SGLang startup log")
    sample = head.decode("utf-8", errors="replace")
    if sample and sum(not (c.isprintable() or c in "\t\r\n\x1b") for c in sample) > len(sample) // 20:
        raise InputError(f"{name}: found binary data, expected the text of a vLLM or SGLang startup log")
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="")
    try:
        return logread.read_lines(watched(_progress(text, name, size)))
    except InputError as error:
        raise InputError(f"{name}: {error}") from None


# A large read shows how far it has got on stderr: on a terminal (one line, rewritten) or, for a
# file of LARGE_READ bytes or more, a line every PROGRESS_EVERY characters. Standard output stays
# the answer alone.
LARGE_READ = 32 * 2**20
PROGRESS_EVERY = 16 * 2**20


def _progress(lines: Iterable[str], name: str, size: int | None) -> Iterator[str]:
    terminal = sys.stderr.isatty()
    if not terminal and (size is None or size < LARGE_READ):
        yield from lines
        return
    done, mark, count = 0, PROGRESS_EVERY, 0
    of = f" of {size / 1e6:,.1f} MB" if size else ""
    for count, line in enumerate(lines, 1):  # noqa: B007 (count is read after the loop)
        done += len(line)
        if done >= mark:
            mark += PROGRESS_EVERY
            print(
                f"{chr(13) if terminal else ''}calc: reading {name}: {done / 1e6:,.1f} MB{of}, {count:,} lines",
                end="" if terminal else "\n",
                file=sys.stderr,
                flush=True,
            )
        yield line
    if terminal and done >= PROGRESS_EVERY:
        print(f"\rcalc: read {name}: {done / 1e6:,.1f} MB, {count:,} lines", file=sys.stderr, flush=True)


def _utf16(head: bytes) -> str | None:
    """UTF-16 text (a BOM, or a NUL after most ASCII characters), as PowerShell's '>' writes a log."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    if len(head) >= 64 and head[1::2].count(0) > len(head) * 2 // 5 and head[0::2].count(0) < len(head) // 20:
        return "utf-16-le"
    return None


def cmd_ingest(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc import ingest, logread, logverdict

    watcher = logverdict.Watcher()
    try:
        reading = read_log_file(args.file, watcher)
    except InputError as error:  # a paste of the failure alone is answered from the failure
        reading = logverdict.failure_only(watcher, str(error))
    if args.pin:
        reading = logread.with_pin(reading, parse_size(args.pin, "--pin"), f"--pin {args.pin}, given on the command line")
    said = logverdict.answer(reading, watcher)
    if args.json:
        return {**reading.to_json(), **said.to_json()}
    if args.yaml:
        model_id = args.model or ingest.catalog_model(catalog, reading)
        if model_id is None or model_id not in catalog.models:
            found = args.model or (reading.model.value if reading.model else "no model name")
            raise InputError(f"--yaml: found {found!r}, expected a model of the catalog; give --model (one of {', '.join(catalog.models)})")
        if args.id is not None and (not re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", args.id) or args.id in catalog.deployments):
            raise InputError(f"--id: found {args.id!r}, expected a new id of lower-case letters, digits, dots and dashes")
        if not args.box or args.box not in catalog.boxes:
            raise InputError(f"--box: found {args.box!r}, expected one of {', '.join(catalog.boxes)} (the box the log was taken on)")
        source = "standard input" if args.file == "-" else Path(args.file).name
        entry = ingest.start_entry(
            reading, model_id=model_id, box=args.box, boxes=parse_count(args.boxes, "--boxes", 1), source=f"startup log {source}",
            tp=parse_count(args.tp, "--tp", 1) if args.tp else None, deployment_id=args.id,
        )  # fmt: skip
        return entry.rstrip("\n")
    if args.model and args.model not in catalog.models:
        raise InputError(f"--model: found {args.model!r}, expected one of {', '.join(catalog.models)}")
    return render_ingest(catalog, reading, args.file, args.model) + "\n" + "\n".join(said.text())


def render_ingest(catalog: Catalog, r: logread.LogReading, name: str, model_id: str | None = None) -> str:
    from calc import ingest

    engine = str(r.engine.value) if r.engine else ""
    build = f"{engine} {r.engine_version.value}" if r.engine_version else engine
    era = f", {r.era.value.upper()} engine" if r.era and r.era.value in ("v0", "v1") else ""
    lines = [f"{name}: a {build} startup log{era}", "Read:"]
    shown = {
        "model": r.model, "date": r.date, "tensor_parallel_size": r.tensor_parallel_size, "max_model_len": r.max_model_len,
        "kv_cache_dtype": r.kv_cache_dtype, "block_size": r.block_size, "gpu_memory_utilization": r.gpu_memory_utilization,
        "mem_fraction_static": r.mem_fraction_static, "kv_cache_memory_bytes": r.kv_cache_memory_bytes,
        "model loading": r.model_loading_bytes, "KV pool": r.available_kv_bytes, "KV tokens": r.kv_tokens,
        "GPU blocks": r.gpu_blocks, "max concurrency": r.max_concurrency, "CUDA graph estimate": r.cuda_graph_bytes,
        "free memory": r.free_memory_bytes, "total memory": r.total_memory_bytes, "requested memory": r.requested_memory_bytes,
        "KV for one request": r.kv_needed_bytes,
        "estimated max_model_len": r.estimated_max_model_len, "speculative": r.speculative, "error": r.error,
        "CUDA graphs took": r.cuda_graph_taken_bytes, "non-torch memory": r.non_torch_bytes, "activation peak": r.activation_peak_bytes,
        "max_num_batched_tokens": r.max_num_batched_tokens, "max_num_seqs": r.max_num_seqs,
    }  # fmt: skip
    for label, found in shown.items():
        if found is not None:
            where = "worked out, not printed (see Notes)" if found.derived else f"line {found.line_no}"
            lines.append(f"  {label:<24}{_shown(found):<28} {where}")
    lines.append("Derived:")
    lines.extend(f"  {d.name}: {d.value}\n    {d.how}" for d in ingest.derived(r))
    compared = ingest.compare(catalog, r, model_id)
    if compared:
        lines.append("Catalog:")
        lines.extend(f"  {c}" for c in compared)
    elif r.model is not None:
        lines.append(f"Catalog: no model matching {r.model.value!r}")
    if r.missing:
        lines.append("Not in the log:")
        lines.extend(f"  {m}" for m in r.missing)
    if r.notes:
        lines.append("Notes:")
        lines.extend(f"  {n}" for n in r.notes)
    return "\n".join(lines)


def _shown(found: logread.Found) -> str:
    if isinstance(found.value, dict):
        return ", ".join(f"{k} {v}" for k, v in found.value.items() if v is not None)
    if isinstance(found.value, int) and found.printed and found.half and not isinstance(found.value, bool):
        return f"{found.printed} ({fmt(found.value, 'B')})"
    if found.printed:
        return found.printed
    if isinstance(found.value, int) and not isinstance(found.value, bool) and found.value > 10**6:
        return f"{fmt(found.value, 'B')}"
    return str(found.value)


# --- schema and catalog ---------------------------------------------------------------------


def cmd_schema(catalog: Catalog | None, args: argparse.Namespace) -> str:
    wanted = schemas()
    if args.check:  # the files hold the schemas the catalog's spec gives, as data (compared as JSON reads them)
        stale = [n for n, schema in wanted.items() if _json_file(SCHEMA_DIR / n) != json.loads(json.dumps(schema))]
        if stale:
            raise InputError(f"catalog/schema: {', '.join(stale)} out of date; run: python -m calc schema")
        return f"catalog/schema: {len(wanted)} files up to date"
    SCHEMA_DIR.mkdir(exist_ok=True)
    for name, schema in wanted.items():
        (SCHEMA_DIR / name).write_text(json.dumps(schema, indent=2) + "\n")
    return f"catalog/schema: wrote {len(wanted)} files"


def _json_file(path: Path) -> Any:
    """A JSON file's data; None when it is missing or is not JSON."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def cmd_check(catalog: Catalog, args: argparse.Namespace) -> str:
    return (
        f"catalog: {len(catalog.boxes)} boxes, {len(catalog.models)} models, {len(catalog.deployments)} deployments, "
        f"{len(catalog.incidents)} incidents, {len(catalog.traces)} traces: valid"
    )


def _gate_flags(p: Parser) -> None:
    p.add_argument("--deployment", help="deployment id from catalog/starts.yaml (default: the first)")
    p.add_argument("--pin", help="KV pin: 10e9, 9.31 GiB, 10 GB or 10000000000")
    p.add_argument("--drafter", action="store_true", help="the speculative drafter loads with the model")
    p.add_argument("--speculative-tokens", help="speculative tokens with the drafter")
    p.add_argument("--prefill-budget", help="--max-num-batched-tokens")
    p.add_argument("--seats", help="--max-num-seqs")
    p.add_argument("--max-model-len", help="--max-model-len")
    p.add_argument("--typical-context", help="tokens a seat typically holds")
    p.add_argument("--gpu-memory-utilization", help="the fraction to check (default: the largest that leaves the start headroom free)")
    p.add_argument("--available", help="MemAvailable per box: one size, one per box separated by ', ', or auto")
    p.add_argument("--kv-offloading-size", help="GiB of host memory for KV offloading over the TP ranks: on a unified box it comes out of MemAvailable")
    p.add_argument("--cpu-offload-gb", help="GiB of weights a rank moved to the host: on a unified box it frees nothing")
    p.set_defaults(run=cmd_gate)


def _kv_flags(p: Parser) -> None:
    p.add_argument("--deployment", help="take bytes per token measured on this deployment")
    p.add_argument("--speculative-tokens", help="the measured reading at this many speculative tokens")
    p.add_argument("--bytes-per-token", help="bytes per token per rank, instead of a deployment's")
    p.add_argument("--pin", help="pool size (default 10e9)")
    p.add_argument("--tokens", help="tokens wanted: prints the pin that holds them")
    p.add_argument("--max-model-len", default="131072")
    p.add_argument("--block-size", help="the pool's block in tokens, which vLLM 0.29.0 and later hold back (default: the deployment's, else 16)")
    p.add_argument("--seats")
    p.add_argument("--typical-context")
    p.set_defaults(run=cmd_kv)


def _fit_flags(p: Parser) -> None:
    p.add_argument("--pool", required=True, help="the pool's size per rank, such as 24 GiB")
    p.add_argument("--reading", action="append", help="MAX_MODEL_LEN:TOKENS from a startup line, repeatable")
    p.add_argument("--max-model-len", action="append", help="predict the token count at this max_model_len, repeatable")
    p.set_defaults(run=cmd_fit)


def _fraction_flags(p: Parser) -> None:
    p.add_argument("--box", default="rtx-5090-node")
    p.add_argument("--total", help="card or box total (default: the catalog's)")
    p.add_argument("--free", help="free memory at start, or auto (default: the catalog's reading)")
    p.add_argument("--fraction", help="gpu_memory_utilization (default: vLLM's)")
    p.set_defaults(run=cmd_fraction)


def _guard_flags(p: Parser) -> None:
    p.add_argument("trace", help="a trace file ('<seconds> <size>' a line), - for stdin, or a trace id from the catalog")
    p.add_argument("--floor")
    p.add_argument("--polls")
    p.add_argument("--serving-at", help="seconds at which the head serves; the guard stops there")
    p.set_defaults(run=cmd_guard)


def _watch_flags(p: Parser) -> None:
    p.add_argument("--proc", action="append", help="meminfo file to read (default /proc/meminfo); repeat it to read one file a poll, the last one after that")
    p.add_argument("--interval", help="seconds between polls (default: the guard's, 2)")
    p.add_argument("--duration", help="seconds to watch (default 60; with --proc files, one poll a file)")
    p.add_argument("--out", help="write the polls to this new trace file (never in the catalog), which python -m calc guard replays")
    p.add_argument("--force", action="store_true", help="--out may replace an existing file")
    p.add_argument("--floor", help="the guard's floor (default: the catalog's policy)")
    p.add_argument("--polls", help="polls in a row under the floor that kill (default: the catalog's policy)")
    p.set_defaults(run=cmd_watch)


def _plan_flags(p: Parser) -> None:
    p.add_argument("--box", default="dgx-spark")
    p.add_argument("--model", action="append", help="MODEL[:KV[:HEADROOM]], repeatable")
    p.add_argument("--fractions", help="engine fractions in start order, such as 0.5,0.35")
    p.add_argument("--available", help="MemAvailable before the first engine (default: the box's idle reading)")
    p.set_defaults(run=cmd_plan)


def _prefetch_flags(p: Parser) -> None:
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--available", required=True, help="MemAvailable when loading starts, or auto")
    p.add_argument("--filesystem", help="where the checkpoint is: nfs, nfs4, lustre, ext4, xfs...; both kinds when omitted")
    p.add_argument("--cgroup-available", help="the container's memory limit less its usage, when it runs under one")
    p.set_defaults(run=cmd_prefetch)


def _model_flags(p: Parser) -> None:
    p.add_argument("config", help="the model's config.json")
    p.add_argument("--tp", default="1", help="tensor parallel size")
    p.add_argument("--kv-cache-dtype", default="auto", help="auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla or nvfp4")
    p.add_argument("--max-model-len", required=True)
    p.add_argument("--pool", help="KV pool per rank, such as 10e9 or 9.31 GiB: prints the token count and concurrency")
    p.add_argument("--engine-version", help="vLLM version whose rules to follow (default: 0.32.0 and later, the newest read)")
    p.add_argument("--index", help="model.safetensors.index.json (its total_size) or safetensors headers: the checkpoint's size beats the parameter count")
    p.add_argument("--block-size", help="--block-size (default 16, 64 for MLA, grown for mamba states)")
    p.add_argument("--prefill-budget", help="--max-num-batched-tokens (default 8192; with a card, the release's default for it)")
    p.add_argument("--max-num-batched-tokens", help="the same as --prefill-budget, by vLLM's name")
    p.add_argument("--gpu", help="a card of the catalog (boxes.yaml: h100-sxm, l40s, rtx-3090...): predicts the KV pool vLLM sizes on it")
    p.add_argument("--total-memory", help="the card's total as torch and vLLM report it, such as 79.22 GiB: predicts the pool")
    p.add_argument("--gpu-memory-utilization", help="with a card: the fraction vLLM may use (default the release's: 0.92 from 0.20.0, 0.9 before)")
    p.add_argument("--max-num-seqs", help="with a card: the sequences the sampler warms up for (default the release's for the card)")
    p.add_argument("--pp", default="1", help="--pipeline-parallel-size: the layers split over stages as vLLM splits them, each stage's bytes")
    p.add_argument("--enable-lora", action="store_true", help="LoRA adapters: their slots are allocated on every rank at load")
    p.add_argument("--max-loras", help="with --enable-lora: adapters in one batch, the slots on each rank (default 1)")
    p.add_argument("--max-lora-rank", help="with --enable-lora: the largest adapter rank, the slots' size (default 16)")
    p.add_argument("--max-cpu-loras", help="with --enable-lora: adapters kept in host memory (default --max-loras)")
    p.add_argument("--cpu-offload-gb", help="GiB of weights a rank moved to the host (whole parameters, the decoder layers in order)")
    p.add_argument("--kv-offloading-size", help="GiB of host memory for KV offloading, over the tensor-parallel ranks")
    p.add_argument("--kv-offloading-backend", help="native (the default) or lmcache (sized by LMCache's own server)")
    p.add_argument("--swap-space", help="GiB of CPU swap a GPU: allocated by the V0 engine only")
    p.add_argument("--pp-layer-partition", help="VLLM_PP_LAYER_PARTITION: the layers of each stage, such as 15,16,15,15")
    p.add_argument("--enforce-eager", action="store_true", help="with a card: no CUDA graphs, no graph estimate")
    p.add_argument("--offline", action="store_true", help="with a card: the LLM class's defaults, not vllm serve's")
    p.add_argument("--speculative-tokens", default="0")
    p.add_argument("--dcp", default="1", help="--decode-context-parallel-size")
    caching = p.add_mutually_exclusive_group()
    caching.add_argument("--no-prefix-caching", action="store_true", help="--no-enable-prefix-caching: hybrids keep one mamba state a request")
    caching.add_argument(
        "--prefix-caching", action="store_true", help="--enable-prefix-caching, which hybrids before vLLM 0.28.0 are started without by default"
    )
    p.set_defaults(run=cmd_model)


def _ingest_flags(p: Parser) -> None:
    p.add_argument("file", help="the log file, or - for standard input")
    p.add_argument("--yaml", action="store_true", help="print a catalog deployment with this start, for catalog/starts.yaml")
    p.add_argument("--model", help="the catalog model id to compare with and to write (default: matched on the log's model name)")
    p.add_argument("--pin", help="the KV pin the start was given, where the log does not print it: 10e9, 9.31 GiB")
    p.add_argument("--box", help="--yaml: the catalog box id the log was taken on")
    p.add_argument("--boxes", default="1", help="--yaml: how many boxes the start spans")
    p.add_argument("--tp", help="--yaml: the tensor-parallel size, where the log does not print it")
    p.add_argument("--id", help="--yaml: the deployment's id (default: the model's name and -log)")
    p.set_defaults(run=cmd_ingest)


def _schema_flags(p: Parser) -> None:
    p.add_argument("--check", action="store_true")
    p.set_defaults(run=cmd_schema, json=False)


def _check_flags(p: Parser) -> None:
    p.set_defaults(run=cmd_check)


# Each command: its help, the function that declares its flags, and whether it prints JSON on --json.
COMMANDS: dict[str, tuple[str, Callable[[Parser], None], bool]] = {
    "gate": ("the start gate: needs vs MemAvailable, the largest pin, the flags", _gate_flags, True),
    "kv": ("the KV pool both ways: pin to tokens, tokens to pin", _kv_flags, True),
    "fit": ("per-request KV cost (per token x context + fixed) from one pool read at two or more max_model_len", _fit_flags, True),
    "fraction": ("vLLM's own start check: ceil(total x fraction) <= free", _fraction_flags, True),
    "guard": ("the memory guard replayed over a MemAvailable trace", _guard_flags, True),
    "watch": (
        "poll MemAvailable, MemFree and the page cache for a bounded time: when the guard would kill, when memory is available but not free",
        _watch_flags,
        True,
    ),
    "plan": ("several models on one box: resident budget and fractions planned together", _plan_flags, True),
    "prefetch": ("vLLM's auto-prefetch: a network filesystem and a checkpoint within its share of available memory", _prefetch_flags, True),
    "model": ("before the first start: weights and KV per rank from a config.json, by vLLM's layout (modeled)", _model_flags, True),
    "ingest": ("read a vLLM or SGLang startup log: its figures, what they give, the catalog's figures for the model", _ingest_flags, True),
    "schema": ("write (or --check) the catalog's JSON Schema files", _schema_flags, False),
    "check": ("validate the catalog", _check_flags, True),
}


def command_of(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is one and is not the value of
    --catalog (or of --cat, --c...: argparse takes a flag's unique prefix)."""
    for i, word in enumerate(argv):
        before = argv[i - 1] if i else ""
        if word in COMMANDS and not (len(before) > 2 and "--catalog".startswith(before)):
            return word
    return None


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The command line read with its command's flags alone; should that guess miss, read again
    with every command's, so the answer is the full parser's."""
    guess = command_of(argv)
    if guess is not None:
        try:
            args = build_parser(guess).parse_args(argv)
        except UsageError:
            args = None
        if args is not None and args.command == guess:
            return args
    return build_parser().parse_args(argv)


@functools.cache  # built once a process a command: the site build runs the command line for every example
def build_parser(command: str | None = None) -> Parser:
    """The command line's parser, declaring the flags of `command` only (of every command when
    None): a run needs its own, and declaring all of them is most of the parser's cost."""
    parser = Parser(prog=PROG, description="Memory calculators for vLLM starts, from the catalog.")
    parser.add_argument("--catalog", default=str(CATALOG_DIR), help="catalog directory (default: the project's)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, (helptext, flags, machine) in COMMANDS.items():
        p = sub.add_parser(name, help=helptext, description=helptext)
        if command in (None, name):
            if machine:
                p.add_argument("--json", action="store_true", help="print JSON for machines")
            flags(p)
    return parser


def one_line(message: str) -> str:
    """A message as one line: control characters and line breaks typed into a value are escaped."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", lambda m: repr(m.group())[1:-1], message)


def main(argv: list[str] | None = None, catalog: Catalog | None = None, sleep: Callable[[float], None] | None = None) -> int:
    """Run one command; `catalog`, when given, stands for the default catalog directory's contents
    (the site build passes the catalog it has already read); `sleep`, when given, is what `watch`
    waits between polls with (the build replays saved readings without waiting)."""
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
        if sleep is not None:
            args.sleep = sleep
        if args.run is cmd_schema or (args.run is cmd_model and args.gpu is None):  # `model` reads the catalog for a card only
            catalog = None
        elif catalog is None or args.catalog != str(CATALOG_DIR):
            catalog = load_dir(args.catalog)
        out = args.run(catalog, args)
    except (UsageError, InputError, CatalogError) as error:
        print(f"calc: error: {one_line(str(error))}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2) if isinstance(out, dict) else out)
    return 0
