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

from calc.answers import report
from calc.catalog.entries import GuardPolicy
from calc.catalog.loader import load_dir
from calc.catalog.model import Catalog
from calc.catalog.spec import CatalogError
from calc.engine import derive, fraction, kv
from calc.present import inputs
from calc.units import GiB, InputError, fmt, parse_count, parse_fraction, parse_size, printed_sum, shown

if TYPE_CHECKING:  # the log reader and the others are imported by their commands only: the rest start faster
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import BinaryIO

    from calc.answers import logverdict
    from calc.checks import modeled as modeled_module
    from calc.engine import lora as lora_module
    from calc.engine import multimodal as multimodal_module
    from calc.engine import offload as offload_module
    from calc.engine import predict as predict_module
    from calc.logs import logread


def _catalog_dir() -> Path:
    """The checkout's catalog/, or the copy `pip install .` puts beside calc/ (calc/catalog_data/)."""
    calc = Path(__file__).resolve().parents[1]
    installed = calc / "catalog_data"
    return installed if (installed / "boxes.yaml").is_file() else calc.parent / "catalog"


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

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse's, at the width it would take from shutil.get_terminal_size, read the same way
        without importing shutil (and the compression modules it imports) for every flag declared."""
        try:
            columns = int(os.environ["COLUMNS"])
        except (KeyError, ValueError):
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
            except (AttributeError, ValueError, OSError):
                columns = 0
        factory: Callable[..., argparse.HelpFormatter] = self.formatter_class
        return factory(prog=self.prog, width=(columns or 80) - 2)


MEMINFO = "/proc/meminfo"
_MEMAVAILABLE = re.compile(r"MemAvailable:\s*(?P<count>\S+)\s*+(?P<unit>\S*)\s*")  # possessive: the spaces never go back to the unit


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


def available_list(text: str, boxes: int) -> tuple[tuple[int, ...], str | None]:
    """MemAvailable of each box from --available, and what the report must say of how it was read.
    `auto` reads this machine's /proc/meminfo: one box's reading. Alone on a start over several
    boxes it stands for every box, which the note says; in a list ('auto, 118 GiB') it is the box
    whose place it takes, the others typed."""
    parts = [part.strip() for part in _LIST_COMMA.split(text)]
    if text.strip() == "auto":
        here = meminfo_available()
        if boxes == 1:
            return (here,), None
        return (here,) * boxes, (
            f"--available auto read this machine's MemAvailable, {fmt(here, 'GiB', down=True)}, and gated each of the {boxes} boxes on it: "
            "the other boxes were not read; give one reading a box, the head's first, such as 'auto, 118 GiB' on the head"
        )
    if parts.count("auto") > 1:
        raise InputError(f"--available: found auto {parts.count('auto')} times, expected it once at most (it reads this machine's MemAvailable, one box's)")
    here = meminfo_available() if "auto" in parts else 0
    values = tuple(here if part == "auto" else parse_size(part, "--available") for part in parts)
    for part, size in zip(parts, values, strict=True):
        if part != "auto" and size < GiB:  # no box serves a model in less: a unit left out (100 for 100 GiB)
            raise InputError(
                f"--available: found {part.strip()!r}, {fmt(size, 'B')}, expected at least 1 GiB free, such as '119.5 GiB' (a number without a unit is bytes)"
            )
    if len(values) == 1:
        return values * boxes, None
    if len(values) != boxes:
        raise InputError(f"--available: found {len(values)} figures, expected 1 or {boxes} (one per box)")
    return values, None


def _deployment(catalog: Catalog, name: str | None) -> str:
    if name is None:
        return next(iter(catalog.deployments))
    if name not in catalog.deployments:
        raise InputError(f"--deployment: found {name!r}, expected one of {', '.join(catalog.deployments)}")
    return name


# --- gate -----------------------------------------------------------------------------------


def cmd_gate(catalog: Catalog, args: argparse.Namespace) -> object:
    from dataclasses import replace

    deployment_id = _deployment(catalog, args.deployment)
    dp = parse_count(args.data_parallel_size, "--data-parallel-size", 1)
    if dp > MAX_REPLICAS:
        raise InputError(f"--data-parallel-size: found {dp}, expected at most {MAX_REPLICAS} replicas")
    boxes = catalog.deployments[deployment_id]["boxes"] * dp  # each replica on boxes of its own
    readings, auto_said = (
        available_list(args.available, boxes) if args.available else ((report.last_available(catalog.deployments[deployment_id]),) * boxes, None)
    )
    base = report.defaults(catalog, deployment_id, readings)
    inputs = report.StartInputs(
        deployment=deployment_id,
        kv_pin=_int(args, "pin") if args.pin else base.kv_pin,
        drafter=args.drafter,
        speculative_tokens=_int(args, "speculative_tokens", 1) if args.speculative_tokens else base.speculative_tokens,
        prefill_budget=_int(args, "prefill_budget") if args.prefill_budget else base.prefill_budget,
        seats=_int(args, "seats") if args.seats else base.seats,
        max_model_len=_int(args, "max_model_len") if args.max_model_len else base.max_model_len,
        available=base.available,
        typical_context=_int(args, "typical_context") if args.typical_context else None,
        gpu_memory_utilization=_frac(args, "gpu_memory_utilization") if args.gpu_memory_utilization else None,
        host_bytes=_kv_offloading_a_rank(args, catalog.deployments[deployment_id]["tp"]),
        cpu_offload_gib=_gib_flag(args.cpu_offload_gb, _flag(args, "cpu_offload_gb")),
        kv_offloading_gib=_gib_flag(args.kv_offloading_size, _flag(args, "kv_offloading_size")),
        head_extra_bytes=_head_extra(catalog, args, boxes),
        data_parallel=dp,
    )  # fmt: skip
    inputs = _gate_host(catalog, deployment_id, inputs, args)
    if auto_said:  # said on the verdict, first
        inputs = replace(inputs, host_notes=(auto_said, *inputs.host_notes))
    problems = report.check(inputs) + [p for p in [report.floor_problem(catalog, inputs, _flag(args, "pin"))] if p]
    if problems:
        raise InputError(problems[0] if problems[0].startswith("--") else "--" + problems[0])
    result = report.start_report(catalog, inputs)
    if args.json:
        return result.to_json()
    return render_gate(result)


def _gate_host(catalog: Catalog, deployment_id: str, inputs: report.StartInputs, args: argparse.Namespace) -> report.StartInputs:
    """/dev/shm and sleep mode on the gate: the queues a term against MemAvailable, sleep's backup said."""
    from dataclasses import replace

    d = catalog.deployments[deployment_id]
    box = catalog.boxes[d["box"]]
    where = "this unified-memory box" if box.get("memory") == "unified" else "a unified-memory box (GB10)"
    one_box = d["boxes"] == 1
    weights_a_rank = derive.gate_row(catalog, deployment_id).weights.bytes
    host = _host_memory(args, d["tp"] if one_box else 1, 1, weights_a_rank, inputs.kv_pin, where)
    if host is None:
        return inputs
    said = list(host.notes)
    if not one_box:
        said.insert(
            0, f"/dev/shm: a start over {d['boxes']} boxes (Ray) makes none of the one-box message queues; Ray's own object store in /dev/shm is not counted"
        )
    return replace(inputs, shm_bytes=(host.shm_bytes or 0) if one_box else 0, host_notes=tuple(said), sleep_mode=args.enable_sleep_mode)


MAX_REPLICAS = 64


def _head_extra(catalog: Catalog, args: argparse.Namespace, boxes: int) -> int:
    """What the head box of a start over several boxes runs beyond its rank: --head-extra as typed,
    else the catalog's Ray head figure when --available gives each box its own reading, the head's
    first. One figure for every box (or the catalog's reading) gates every box alike, as the
    calculator page does."""
    if args.head_extra is not None:
        if boxes < 2:
            raise InputError(f"--head-extra: found on a deployment of {boxes} box, expected a start over two boxes or more (one box runs no Ray head)")
        return parse_size(args.head_extra, "--head-extra")
    if boxes < 2 or not args.available or len(_LIST_COMMA.split(args.available)) < 2:
        return 0
    head = catalog.policy["gate"].get("head_box")
    return int(head["ray_head"].size) if head else 0


def _kv_offloading_a_rank(args: argparse.Namespace, tp: int) -> int:
    """--kv-offloading-size a rank; the offload model is imported only when the flag is given."""
    if args.kv_offloading_size is None:
        return 0
    from calc.engine import offload

    return offload.kv_offloading_a_rank(_gib_flag(args.kv_offloading_size, _flag(args, "kv_offloading_size")), tp)


def _gib_flag(text: str | None, flag: str) -> Fraction:
    """A size in GiB as vLLM's offload flags take it: 0 or more; none given is 0."""
    return Fraction(0) if text is None else inputs.gib_at_least_zero(text, flag)


def render_gate(r: report.StartReport) -> str:
    i = r.inputs
    replicas = f", data parallel {r.data_parallel}: {r.boxes_count} boxes a replica" if r.data_parallel > 1 else ""
    lines = [f"Start gate: {r.model}, TP={r.tp} on {r.boxes_count * r.data_parallel}x {r.box}{replicas}"]
    lines.append(f"  pin {fmt(i.kv_pin, 'e9')} ({fmt(i.kv_pin, 'GiB')}), drafter {'on' if i.drafter else 'off'}, "
                 f"prefill budget {fmt(i.prefill_budget, 'count')}, seats {i.seats}")  # fmt: skip
    if r.outside_calibration:
        lines.append(f"  outside calibration: {r.outside_calibration}")
        return "\n".join(lines)
    lines.append(f"  {'term':<22}{'GiB a rank':>11}  source")
    for t in r.terms:
        lines.append(f"  {t.name:<22}{fmt(t.bytes, 'GiB').removesuffix(' GiB'):>11}  {t.source}")
    lines.append(f"  {'needs':<22}{fmt(report.needs_as_printed(r.terms), 'GiB').removesuffix(' GiB'):>11}")
    for b in r.boxes:
        verdict = "passes" if b.passes else "refused"
        margin = report.margin_as_printed(b.available_bytes, r.terms, b.head_extra_bytes)
        extra = f", less {fmt(b.head_extra_bytes, 'GiB')} for the Ray head (GCS, dashboard)" if b.head_extra_bytes else ""
        lines.append(f"  {b.box}: available {fmt(b.available_bytes, 'GiB')}{extra}, {verdict} by {fmt(abs(margin), 'GiB')}")
    if len(r.boxes) > 1 and r.tightest_box is not None:
        lines.append(f"  tighter box: {r.tightest_box}")
    lines.append(f"Start: {'yes' if r.passes else 'no, refused'}")
    lines.extend(f"  note: {note}" for note in r.notes)
    lines.extend(_largest_pin_lines(r))
    pool = r.kv
    if pool is not None:
        tokens = fmt(pool.tokens, "tokens") + (" (logged)" if pool.tokens_logged else "")
        lines.append(f"KV pool: {tokens} at {fmt(pool.bytes_per_token, 'count')} B/token ({r.kv_source}), "
                     f"{fmt(pool.full_contexts, 'x', down=True)} full {fmt(i.max_model_len, 'count')}-token contexts")  # fmt: skip
        if not pool.holds_one_context:
            lines.append(
                f"  below the floor: one full context and the block vLLM holds back from 0.29.0 ({fmt(pool.block_size, 'tokens')}, "
                f"{pool.block_source}) need a pin of {fmt(pool.one_context_pin_bytes, 'e9', 2, up=True)}"
            )
        if pool.seats is not None:
            lines.append(f"  seats x typical context = {fmt(pool.seats.tokens_needed, 'tokens')}: {'fits' if pool.seats.seats_fit else 'does not fit'}")
    f = r.fraction
    when = "" if f.reached else " (not reached: the gate refuses the start first; the fix passes it)"
    how = (
        "typed"
        if f.typed
        else f"the largest two-decimal fraction that leaves the {fmt(r.headroom_bytes, 'GiB', 0)} start headroom free; the edge, {fmt(f.edge, 'fraction')}, leaves {fmt(f.free_bytes - fraction.requested(f.total_bytes, f.edge), 'GiB')}"
    )
    lines.append(f"vLLM fraction check{when}: {report.fraction_text(f.fraction)} x {fmt(f.total_bytes, 'GiB')} "
                 f"{'<=' if f.passes else '>'} {fmt(f.free_bytes, 'GiB')} free ({how}); ceiling {fmt(f.ceiling, 'fraction', 4)}")  # fmt: skip
    if not r.passes:
        lines.append("What to change, largest movable term first: " + ", ".join(f"{t.name} {fmt(t.bytes, 'GiB')}" for t in r.changes))
    if r.flags_are_the_fix:
        lines.append("Flags of the suggested fix (not the refused request):")
    elif r.passes is False:
        lines.append("Flags of the refused request, for reference (it does not start):")
    else:
        lines.append("Flags:")
    lines.extend(f"  {flag}" for flag in r.flags)
    return "\n".join(lines)


def _exact_pin(value: int) -> str:
    return fmt(value, "e9", 2, down=True) if value >= 0 else "short by " + fmt(-value, "GiB", up=True)


def _largest_pin_lines(r: report.StartReport) -> list[str]:
    """The largest pin, worked from its printed operands: the tightest box's MemAvailable rounded
    down less each cost (every term but the pin, and the Ray head on a head box) rounded up, so the
    printed limit is never above the exact one; its bytes are the GiB as printed, rounded down, and
    the limit from exact bytes stands beside."""
    largest = r.largest_pin_bytes
    if largest.without_drafter is None:
        return ["Largest pin that passes: unknown"]
    box = min(r.boxes, key=lambda b: b.available_bytes - b.head_extra_bytes)
    costs = [(t.name, t.bytes) for t in r.terms if t.name not in ("KV pin", "drafter") and t.bytes]
    if box.head_extra_bytes:
        costs.append(("Ray head", box.head_extra_bytes))
    # both limits are the tightest box's MemAvailable less the same terms at a zero pin, the drafter's aside
    drafter = None if largest.with_drafter is None else largest.without_drafter - largest.with_drafter
    lines = ["Largest pin that passes (MemAvailable rounded down, less each cost rounded up, in GiB):"]
    with_drafter: list[tuple[str, int]] = [] if drafter is None else [("drafter", drafter)]
    for label, extra, exact in (("without the drafter", [], largest.without_drafter), ("with the drafter", with_drafter, largest.with_drafter)):
        if exact is None:
            continue
        terms = costs[:1] + extra + costs[1:]
        worked = shown(box.available_bytes, "GiB", 2, down=True) - sum(shown(b, "GiB", 2, up=True) for _, b in terms)
        said = " - ".join(
            [fmt(box.available_bytes, "GiB", 2, down=True).removesuffix(" GiB")] + [f"{fmt(b, 'GiB', 2, up=True).removesuffix(' GiB')} {n}" for n, b in terms]
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
        per_token = Fraction(_int(args, "bytes_per_token"))
        source, reading = "given", None
    else:
        deployment_id = _deployment(catalog, args.deployment)
        spec = _int(args, "speculative_tokens") if args.speculative_tokens else 0
        reading = report.pool_reading(catalog, deployment_id, spec)
        if reading is None:
            raise InputError(f"--deployment {deployment_id}: no measured bytes per token; give --bytes-per-token")
        per_token, source = reading.bytes_per_token, report.kv_source(reading, spec)
        block, block_source = reading.block_size, reading.block_source
        if (reading.speculative_tokens or 0) != spec:
            reading = None  # measured at another speculative-token count: derive, never quote its log
    max_len = _int(args, "max_model_len")
    out: dict[str, Any] = {"bytes_per_token": per_token, "source": source, "max_model_len": max_len}
    if args.tokens:
        tokens = _int(args, "tokens")
        out.update(tokens=tokens, pin_bytes=kv.pool_for_tokens(tokens, per_token))
    else:
        pin = parse_size(args.pin if args.pin is not None else "10e9", _flag(args, "pin"))
        tokens, logged = reading.tokens_at(pin) if reading else (kv.tokens_for_pool(pin, per_token), False)
        out.update(pin_bytes=pin, tokens=tokens, tokens_logged=logged)
    if args.block_size:
        block, block_source = _int(args, "block_size"), "given"
    whole = int(out["tokens"])
    out.update(
        full_contexts=kv.full_contexts(whole, max_len),
        holds_one_context=kv.holds_one_context(whole, max_len, block),
        one_context_pin_bytes=kv.one_request_pin(max_len, per_token, block),
        block_size=block,
    )
    if args.seats and args.typical_context:
        seats, typical = _int(args, "seats"), _int(args, "typical_context")
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
        f"One request of {fmt(max_len, 'count')} tokens starts from a pin of {fmt(out['one_context_pin_bytes'], 'B')} "
        f"({fmt(out['one_context_pin_bytes'], 'e9', 2, up=True)} rounded up): "
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


# --- fraction -------------------------------------------------------------------------------


def cmd_fraction(catalog: Catalog, args: argparse.Namespace) -> object:
    box = catalog.boxes.get(args.box)
    if box is None:
        raise InputError(f"--box: found {args.box!r}, expected one of {', '.join(catalog.boxes)}")
    total = _int(args, "total") if args.total else derive.box_total(box)[0].size
    if total <= 0:
        raise InputError(f"--total: found {args.total!r}, expected a size above zero")
    if args.free:
        free = meminfo_available() if args.free == "auto" else _int(args, "free")
    elif "free_at_start" in box:
        free = box["free_at_start"].size
    else:
        raise InputError(f"--free: box {args.box} has no free-at-start reading in the catalog; give --free")
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


# --- guard ----------------------------------------------------------------------------------


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


def _guard_settings(policy: GuardPolicy, args: argparse.Namespace) -> tuple[int, int]:
    """The guard's floor and polls in a row: the options where given, the catalog's policy otherwise."""
    floor = _int(args, "floor") if args.floor else policy["floor"].size
    polls = _int(args, "polls") if args.polls else policy["polls_in_a_row"].count
    return floor, polls


# --- watch ----------------------------------------------------------------------------------


def cmd_watch(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc.answers import watch

    policy = catalog.policy["guard"]
    paths = args.proc or ["/proc/meminfo"]
    interval = _secs(args, "interval") if args.interval else float(policy["poll_seconds"].number)
    duration = _secs(args, "duration") if args.duration else interval * (len(paths) - 1) if args.proc else 60.0
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
        return report.to_json_object({"floor_bytes": floor, "polls_in_a_row": polls, "interval_seconds": interval, "polls": seen})
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


# --- plan -----------------------------------------------------------------------------------


def cmd_plan(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc.engine import budget

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


# --- prefetch -------------------------------------------------------------------------------


def cmd_prefetch(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc.answers import prefetch

    share = catalog.policy["vllm"]["prefetch_fraction"].fraction
    checkpoint = _int(args, "checkpoint")
    available = meminfo_available() if args.available == "auto" else _int(args, "available")
    cgroup = _int(args, "cgroup_available") if args.cgroup_available else None
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
    from dataclasses import replace

    from calc.checks import modeled
    from calc.engine import predict

    config_text = _read_text(args.config, "config")
    max_len = _int(args, "max_model_len")
    card = _card(catalog, args)
    lora_cfg = _lora(args)
    host_cfg = _offload(args)
    mm_cfg = _multimodal(args)
    start = None
    if card is not None:
        start = predict.Start(
            tp=_int(args, "tp"), pp=_int(args, "pp"), pp_layer_partition=args.pp_layer_partition, lora=lora_cfg, max_model_len=max_len,
            cpu_offload_gib=host_cfg.cpu_offload_gib if host_cfg else Fraction(0),
            utilization=_frac(args, "gpu_memory_utilization") if args.gpu_memory_utilization is not None else None,
            max_num_seqs=_int(args, "seats") if args.seats is not None else None,
            max_num_batched_tokens=_int(args, "prefill_budget") if args.prefill_budget is not None else None,
            enforce_eager=args.enforce_eager, kv_cache_dtype=args.kv_cache_dtype, engine_version=args.engine_version, offline=args.offline,
            prefix_caching=False if args.no_prefix_caching else True if args.prefix_caching else None,
            multimodal=mm_cfg,
        )  # fmt: skip
        predict.check_start(start)
        if args.pin is not None:
            raise InputError(f"{_flag(args, 'pin')}: found beside --gpu or --total-memory, expected one of them (the card predicts the pool)")
    elif args.gpu_memory_utilization is not None or args.seats is not None or args.enforce_eager or args.offline:
        raise InputError(
            "--gpu-memory-utilization, --max-num-seqs, --enforce-eager, --offline: found without a card, expected --gpu NAME or --total-memory SIZE"
        )
    pp = _int(args, "pp")
    if args.pp_layer_partition is not None and pp == 1:
        raise InputError("--pp-layer-partition: found with --pp 1, expected --pp N above 1 (it splits the layers over the pipeline stages)")
    budget = _int(args, "prefill_budget") if args.prefill_budget is not None else None
    if budget is None and card is not None and start is not None:
        rel = predict.release(args.engine_version)
        budget = start.max_num_batched_tokens or predict.default_batch(rel, card.total_bytes, card.name, max_len, args.offline).max_num_batched_tokens
    inputs = modeled.ModelInputs(
        config_text=config_text,
        config_file=args.config,
        tp=_int(args, "tp"),
        kv_cache_dtype=args.kv_cache_dtype,
        max_model_len=max_len,
        pool=_int(args, "pin") if args.pin is not None else None,
        engine_version=args.engine_version,
        index_text=_read_text(args.index, "index") if args.index is not None else None,
        index_file=args.index or "model.safetensors.index.json",
        block_size=_int(args, "block_size") if args.block_size is not None else None,
        prefill_budget=budget or 8192,
        speculative_tokens=_int(args, "speculative_tokens"),
        dcp=_int(args, "dcp"),
        prefix_caching=False if args.no_prefix_caching else True if args.prefix_caching else None,
        pp=pp,
        pp_layer_partition=args.pp_layer_partition,
        lora=lora_cfg,
        offload=host_cfg,
        multimodal=mm_cfg,
        dp=parse_count(args.data_parallel_size, "--data-parallel-size", 1),
        enable_expert_parallel=args.enable_expert_parallel,
        enable_eplb=args.enable_eplb,
        eplb_config=args.eplb_config,
        num_redundant_experts=_int(args, "num_redundant_experts", 0) if args.num_redundant_experts is not None else None,
    )
    r = modeled.model_report(inputs)
    if card is not None and start is not None:
        r = _with_prediction(r, config_text, args.config, card, start)
    worst = _worst_prefill(args, config_text, r, budget or 8192)
    host = _host_memory(args, r.tp, r.pp, r.weights_bytes_per_rank, r.pool_bytes, offload=r.offload)
    said = r.notes + ((worst.note,) if worst.note else ()) + (host.notes if host is not None else ())
    r = replace(r, worst_prefill=worst, host_memory=host, after_start=True, notes=said)
    if args.json:
        return r.to_json()
    lines = [
        f"{r.architecture} ({r.family}: {r.layers}), TP={r.tp}, KV {r.kv_cache_dtype}; {r.engine_rules}; all figures modeled",
        f"Weights per rank: {fmt(r.weights_bytes_per_rank, 'GiB')} (from the {r.weights_source})"
        + (f", drafter layers {fmt(r.drafter_bytes_per_rank, 'GiB')} more with speculative decoding" if r.drafter_bytes_per_rank else ""),
        f"KV per request at {fmt(r.max_model_len, 'count')} tokens: {fmt(r.kv_bytes_per_request, 'GiB')} = "
        f"{fmt(r.kv_bytes_per_token, 'count')} B a token + {fmt(r.kv_fixed_bytes_per_request, 'GiB')} fixed",
        f"  {r.kv_groups} KV group(s) of {r.layers_per_group} layers, block {r.block_size} tokens"
        + (f", {r.padding_layers} padding layer(s)" if r.padding_layers else ""),
        f"Smallest pool that starts: {fmt(r.kv_floor_bytes, 'B')} ({fmt(r.kv_floor_bytes, 'e9', 2, up=True)} rounded up)"
        + (
            f", the request and the block of {fmt(r.null_block_bytes, 'B')} vLLM 0.29.0 and later hold back before the one-request check"
            if r.null_block_bytes
            else ", one request (this build holds no block back before the check)"
        ),
    ]
    if r.kv_tokens is not None:
        assert r.pool_bytes is not None and r.max_concurrency is not None and r.largest_max_model_len is not None, "a pool that holds tokens is sized"
        lines += [
            f"Pool {fmt(r.pool_bytes, 'GiB')}: GPU KV cache size {fmt(r.kv_tokens, 'tokens')}, "
            f"maximum concurrency {fmt(r.max_concurrency, 'x')} at {fmt(r.max_model_len, 'count')}",
            f"Largest max_model_len one request fits: {fmt(r.largest_max_model_len, 'count')}",
        ]
        if r.one_request_fits is False and r.prediction is None:  # with a card, vLLM's verdict says it
            lines.insert(
                len(lines) - 2,
                f"vLLM refuses this start: one request at max_model_len {fmt(r.max_model_len, 'count')} does not fit this pool "
                "(its check raises before vLLM prints the pool's size and concurrency below)",
            )
    if r.prediction is not None:
        c = r.prediction
        terms = c.terms
        lines.insert(2, f"On {c.card} ({fmt(c.total_memory_bytes, 'GiB')}) x utilization {c.gpu_memory_utilization} = "
                        f"{fmt(c.requested_bytes, 'GiB')} requested; max_num_seqs {c.max_num_seqs}, max_num_batched_tokens {c.max_num_batched_tokens}")  # fmt: skip
        lines.insert(3, "  less " + ", ".join(f"{name} {fmt(t.bytes, 'GiB')}" for name, t in terms.items()))
        pool = fmt(c.available_kv_bytes, "GiB") if c.available_kv_bytes > 0 else f"none, {fmt(-c.available_kv_bytes, 'GiB')} short"
        lines.insert(4, f"KV pool a rank (predicted): {pool}; vLLM's verdict: {c.verdict} ({c.verdict_reason})")
        for i, f in enumerate(c.fixes):
            lines.insert(5 + i, f"  passes with {f.change} ({f.flags}): pool {fmt(f.available_kv_bytes, 'GiB')}")
    if r.lora is not None:
        lo = r.lora
        lines.insert(2, f"LoRA: {lo.max_loras} slot(s) of rank {lo.max_lora_rank} on each rank, {fmt(lo.device_bytes_per_rank, 'GiB')} "
                        f"allocated at load beside the weights ({lo.modules} modules); {lo.max_cpu_loras} adapter(s) on the host, "
                        f"at most {fmt(lo.host_bytes, 'GiB')} over every worker")  # fmt: skip
    if r.offload is not None:
        of = r.offload
        lines.insert(2, f"Host memory: {fmt(of.offloaded_bytes_per_rank, 'GiB')} of weights a rank moved by --cpu-offload-gb "
                        f"({fmt(of.weights_on_device_bytes_per_rank, 'GiB')} stay on the device), KV offloading {fmt(of.kv_offloading_bytes, 'GiB')}, "
                        f"swap {fmt(of.swap_space_bytes, 'GiB')}: {fmt(of.host_bytes, 'GiB')} on the host in all")  # fmt: skip
    if r.dp > 1 or r.ep_size > 1:
        lines[1:1] = _parallel_lines(r)
    if r.pp > 1:
        lines.insert(2, f"Pipeline parallel {r.pp}, one rank of each stage:")
        for n, st in enumerate(r.ranks):
            holds = f" + {', '.join(st.holds)}" if st.holds else ""
            lines.insert(3 + n, f"  stage {st.rank}: layers {st.first_layer}-{st.end_layer - 1} ({st.layers}{holds}): weights "
                                f"{fmt(st.weights_bytes, 'GiB')}, KV {fmt(st.kv_bytes_per_token, 'count')} B a token")  # fmt: skip
    lines += [f"Note: {note}" for note in r.notes]
    return "\n".join(lines)


def _parallel_lines(r: modeled_module.ModelReport) -> list[str]:
    """Data and expert parallel: the ranks of each replica, their experts and weights, grouped."""
    out = [f"Ranks: {r.world_size} = TP {r.tp} x PP {r.pp} x DP {r.dp}" + (f"; expert parallel over {r.ep_size} ranks" if r.ep_size > 1 else "")]
    for st in r.ranks:
        kinds: dict[tuple[int, int], list[int]] = {}
        for e in st.experts.expert_ranks if st.experts else ():
            kinds.setdefault((e.local_experts, e.weights_bytes), []).append(e.ep_rank)
        where = f"stage {st.rank}: " if r.pp > 1 else ""
        for (local, held), members in kinds.items():
            shown_ranks = (
                f"rank {members[0]}"
                if len(members) == 1
                else f"ranks {members[0]}-{members[-1]}"
                if members == list(range(members[0], members[-1] + 1))
                else "ranks " + ", ".join(map(str, members))
            )
            out.append(f"  {where}{shown_ranks}: {local} routed experts a layer, weights {fmt(held, 'GiB')}")
    if r.kv_tokens is not None and r.kv_tokens_all_replicas is not None and r.dp > 1:
        out.append(f"  {r.dp} replicas x {fmt(r.kv_tokens, 'tokens')} = {fmt(r.kv_tokens_all_replicas, 'tokens')} over the replicas")
    return out


def _lora(args: argparse.Namespace) -> lora_module.Lora | None:
    """--enable-lora and its sizes, as vLLM's LoRAConfig takes them (defaults 1 slot, rank 16)."""
    from calc.engine import lora

    sizes = {"--max-loras": args.max_loras, "--max-lora-rank": args.max_lora_rank, "--max-cpu-loras": args.max_cpu_loras}
    if not args.enable_lora:
        given = [name for name, value in sizes.items() if value is not None]
        if given:
            raise InputError(f"{given[0]}: found without --enable-lora, expected --enable-lora beside it")
        return None
    cfg = lora.Lora(
        _int(args, "max_loras") if args.max_loras is not None else 1,
        _int(args, "max_lora_rank") if args.max_lora_rank is not None else 16,
        _int(args, "max_cpu_loras") if args.max_cpu_loras is not None else None,
    )
    lora.check(cfg)
    return cfg


def _offload(args: argparse.Namespace) -> offload_module.Offload | None:
    """--cpu-offload-gb, --kv-offloading-size (and its backend) and --swap-space, in GiB as vLLM takes them."""
    from calc.engine import offload

    if args.kv_offloading_backend is not None and args.kv_offloading_size is None:
        raise InputError("--kv-offloading-backend: found without --kv-offloading-size, expected the size beside it (vLLM offloads nothing without it)")
    if args.cpu_offload_gb is None and args.kv_offloading_size is None and args.swap_space is None:
        return None

    def gib(text: str | None, flag: str) -> Fraction | None:
        return None if text is None else inputs.gib_at_least_zero(text, flag)

    o = offload.Offload(
        gib(args.cpu_offload_gb, "--cpu-offload-gb") or Fraction(0),
        gib(args.kv_offloading_size, "--kv-offloading-size"),
        args.kv_offloading_backend or "native",
        gib(args.swap_space, "--swap-space"),
    )
    offload.check(o)
    return o


def _multimodal(args: argparse.Namespace) -> multimodal_module.Settings | None:
    """--mm-encoder-tp-mode and --limit-mm-per-prompt, as vLLM spells them."""
    from calc.engine import multimodal

    if args.mm_encoder_tp_mode is None and args.limit_mm_per_prompt is None:
        return None
    cfg = multimodal.Settings(
        args.mm_encoder_tp_mode if args.mm_encoder_tp_mode is not None else "weights",
        multimodal.parse_limits(args.limit_mm_per_prompt) if args.limit_mm_per_prompt is not None else None,
    )
    multimodal.check(cfg)
    return cfg


def _worst_prefill(args: argparse.Namespace, config_text: str, r: modeled_module.ModelReport, chunk: int) -> modeled_module.WorstPrefill:
    """What a prefill at max_model_len takes beyond the profile run (calc/engine/afterstart.py), and
    against --left-after-start whether it fits."""
    from calc.checks import modeled
    from calc.engine import afterstart, hfconfig

    shape = hfconfig.shape(hfconfig.load(config_text, args.config), args.config)
    seqs = (r.prediction.max_num_seqs if r.prediction else None) or (_int(args, "seats") if args.seats is not None else 256)
    if hfconfig.MLA in shape.layers:
        extra = afterstart.mla_context(shape, r.tp, r.max_model_len, seqs, r.block_size, chunk)
    else:
        extra = afterstart.Extra(0, (), "plain attention: the kernels tile the scores, the last chunk's activations are the profile run's")
    left = parse_size(args.left_after_start, "--left-after-start") if args.left_after_start is not None else None
    fits, said = afterstart.verdict(left, extra) if left is not None else (None, "")
    return modeled.WorstPrefill(
        extra.bytes, tuple(modeled.PrefillPart(n, b) for n, b in extra.parts), extra.source, extra.after_profile_bytes, left, fits, said
    )


def _host_memory(
    args: argparse.Namespace,
    tp: int,
    pp: int,
    weights_bytes: int,
    kv_bytes: int | None,
    where: str = "a unified-memory box (GB10)",
    offload: modeled_module.OffloadReport | None = None,
) -> modeled_module.HostMemory | None:
    """--shm-size against the /dev/shm queues of the start, and what sleep mode frees (calc/engine/hostmem.py);
    `offload`, the bytes --cpu-offload-gb, --kv-offloading-size and --swap-space move to the host."""
    if args.sleep_level is not None and not args.enable_sleep_mode:
        raise InputError("--sleep-level: found without --enable-sleep-mode, expected --enable-sleep-mode beside it")
    moved = (
        {
            "offloaded_bytes_per_rank": offload.offloaded_bytes_per_rank,
            "weights_on_device_bytes_per_rank": offload.weights_on_device_bytes_per_rank,
            "kv_offloading_bytes": offload.kv_offloading_bytes,
            "swap_space_bytes": offload.swap_space_bytes,
            "offload_host_bytes": offload.host_bytes,
        }
        if offload is not None
        else {}
    )
    if not (args.enable_sleep_mode or args.shm_size is not None or args.mq_max_chunk_mb is not None):
        if offload is None:
            return None
        from calc.checks import modeled  # only now: the gate without these flags starts without the model's modules

        # the host-memory line of the text, and nothing asked of /dev/shm or sleep
        return modeled.HostMemory((), None, None, False, None, (), **moved)
    from calc.checks import modeled
    from calc.engine import hostmem, predict

    rel = predict.release(getattr(args, "engine_version", None))
    chunk = parse_count(args.mq_max_chunk_mb, "--mq-max-chunk-mb", 1) if args.mq_max_chunk_mb is not None else None
    queues = hostmem.shm_queues(tp, pp, rel, chunk)
    need = hostmem.shm_bytes(queues)
    shm_size = hostmem.docker_size(args.shm_size) if args.shm_size is not None else None
    notes = []
    refusal = hostmem.shm_refusal(need, shm_size, rel)
    if refusal:
        notes.append(refusal)
    if need:
        notes.append(
            f"/dev/shm: {fmt(need, 'MiB', 0, up=True)} of message queues for {tp * pp} ranks on one box (shm_broadcast.py); on {where} they come out of MemAvailable"
        )
    sleep: modeled.SleepReport | None = None
    if args.enable_sleep_mode:
        level = parse_count(args.sleep_level, "--sleep-level", 1) if args.sleep_level is not None else 1
        s = hostmem.sleep(level, weights_bytes, kv_bytes or 0)
        sleep = modeled.SleepReport(s.level, s.host_backup_bytes, s.device_freed_bytes, s.unified_freed_bytes, kv_bytes is not None)
        notes.append(hostmem.sleep_note(s, where) + ("" if kv_bytes is not None else " (the KV pool is not known here: give --pool or a card)"))
    return modeled.HostMemory(
        shm_queues=tuple(modeled.ShmQueue(q.name, q.count, q.bytes, q.source) for q in queues),
        shm_bytes=need,
        shm_size_bytes=shm_size,
        shm_refused=refusal is not None,
        sleep=sleep,
        notes=tuple(notes),
        **moved,
    )


def _card(catalog: Catalog | None, args: argparse.Namespace) -> predict_module.Card | None:
    from calc.engine import predict

    if args.gpu is not None and args.total_memory is not None:
        raise InputError("--gpu: found beside --total-memory, expected one of them")
    if args.total_memory is not None:
        return predict.card_from_total(args.total_memory)
    if args.gpu is None:
        return None
    if catalog is None:
        raise InputError("--gpu: found no catalog to look the card up in, expected --total-memory instead")
    return predict.card_of_box(predict.find_box(catalog.boxes, args.gpu))


def _with_prediction(
    r: modeled_module.ModelReport, config_text: str, config_file: str, card: predict_module.Card, start: predict_module.Start
) -> modeled_module.ModelReport:
    """The modeled report with the pool predicted on the card: each term with its source, vLLM's verdict."""
    from dataclasses import replace

    from calc.checks import modeled
    from calc.engine import hfconfig, predict, ranks

    data = hfconfig.load(config_text, config_file)
    shape = hfconfig.shape(data, config_file)
    own = tuple(st.weights_bytes for st in r.ranks) if start.pp > 1 else None
    p = predict.predict(
        shape, card, start, predict.experts_per_token(data), r.weights_bytes_per_rank, f"calc/engine/weights.py from the {r.weights_source}", own
    )
    terms = {
        t.name: modeled.PredictedTerm(t.bytes, t.source) for t in (p.weights, p.lora, p.activation, p.non_torch, p.cuda_graph) if t.name != "lora" or start.lora
    }
    pool = p.available_kv_bytes
    found = predict.fixes(
        shape, card, start, predict.experts_per_token(data), r.weights_bytes_per_rank, f"calc/engine/weights.py from the {r.weights_source}", own
    )
    notes = list(r.notes)
    if (r.dp > 1 or r.ep_size > 1) and ranks.moe_experts(shape):  # a larger TP or more stages would be figured without the expert split: not offered
        found = [f for f in found if f.start.tp == start.tp and f.start.pp == start.pp]
        notes.append(
            "on the card, the pool is the rank with the most experts'; the buffers the MoE's all-to-all exchange allocates across the "
            "TP x DP ranks are not counted, and a larger TP or more stages are not offered as fixes (they would change the expert split)"
        )
        if start.lora is not None and r.lora is not None and p.lora.bytes != r.lora.device_bytes_per_rank:
            notes.append(
                f"the card's pool takes LoRA's slots as TP splits the experts, {fmt(p.lora.bytes, 'GiB')}; the rank's own experts take "
                f"{fmt(r.lora.device_bytes_per_rank, 'GiB')} (the lora figures above)"
            )
    prediction = modeled.CardPrediction(
        card=card.name,
        card_source=card.source,
        total_memory_bytes=p.total_bytes,
        gpu_memory_utilization=float(p.utilization),
        requested_bytes=p.requested_bytes,
        max_num_seqs=p.max_num_seqs,
        max_num_batched_tokens=p.max_num_batched_tokens,
        batch_source=p.batch_source,
        activation_peak_bytes=p.activation.bytes,
        forward_peak_bytes=p.forward.bytes,
        sampler_warmup_bytes=p.sampler.bytes,
        non_torch_bytes=p.non_torch.bytes,
        cuda_graph_bytes=p.cuda_graph.bytes,
        terms=terms,
        available_kv_bytes=pool,
        verdict=p.verdict,
        verdict_reason=p.reason,
        fixes=tuple(modeled.PredictedFix(f.change, f.flags, f.prediction.available_kv_bytes, f.prediction.kv_tokens) for f in found),
        tightest_rank=p.tightest_stage,
    )
    return replace(
        r,
        prediction=prediction,
        pool_bytes=pool if pool > 0 else None,
        kv_tokens=p.kv_tokens,
        max_concurrency=p.max_concurrency,
        kv_blocks=None,
        largest_max_model_len=p.largest_max_model_len,
        one_request_fits=p.largest_max_model_len is not None and p.largest_max_model_len >= r.max_model_len,
        notes=tuple(notes),
        ranks=tuple(replace(st, pool=_stage_pool(sp)) for st, sp in zip(r.ranks, p.stages or (None,) * len(r.ranks), strict=True)),
    )


def _stage_pool(sp: predict_module.StagePool | None) -> modeled_module.StagePoolTerms | None:
    """A pipeline stage's own pool terms, for its entry in `ranks`."""
    from calc.checks import modeled

    if sp is None:
        return None
    return modeled.StagePoolTerms(
        lora_bytes=sp.lora_bytes,
        activation_peak_bytes=sp.activation_bytes,
        cuda_graph_bytes=sp.cuda_graph_bytes,
        available_kv_bytes=sp.available_kv_bytes,
        kv_blocks=sp.kv_blocks,
    )


# --- ingest ---------------------------------------------------------------------------------


def read_log_file(name: str, watcher: logverdict.Watcher | None = None) -> logread.LogReading:
    """A log file (or - for standard input), streamed line by line; binary refused up front; a
    watcher, when given, sees each line on its way (calc.answers.logverdict)."""
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
    from calc.answers import logverdict
    from calc.logs import logread

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
    from calc.answers import ingest, logverdict
    from calc.logs import logread

    watcher = logverdict.Watcher()
    try:
        reading = read_log_file(args.file, watcher)
    except InputError as error:  # a paste of the failure alone is answered from the failure
        reading = logverdict.failure_only(watcher, str(error))
    if args.pin:
        reading = logread.with_pin(reading, _int(args, "pin"), f"{_flag(args, 'pin')} {args.pin}, given on the command line")
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
        from calc.present.calculators import yourstart

        wrong = yourstart.box_mismatch(catalog, args.box, reading)  # a box whose total is not the log's: no entry written
        if wrong is not None:
            detail = wrong.split(": ", 1)[1].split("; choose its box")[0]
            raise InputError(f"--box: found {args.box!r}, expected the box the log was taken on: {detail}")
        source = "standard input" if args.file == "-" else Path(args.file).name
        entry = ingest.start_entry(
            reading, model_id=model_id, box=args.box, boxes=_int(args, "boxes"), source=f"startup log {source}",
            tp=_int(args, "tp") if args.tp else None, deployment_id=args.id,
        )  # fmt: skip
        return entry.rstrip("\n")
    if args.model and args.model not in catalog.models:
        raise InputError(f"--model: found {args.model!r}, expected one of {', '.join(catalog.models)}")
    return render_ingest(catalog, reading, args.file, args.model) + "\n" + "\n".join(said.text())


def render_ingest(catalog: Catalog, r: logread.LogReading, name: str, model_id: str | None = None) -> str:
    from calc.answers import ingest
    from calc.logs.figures import INGEST_ROWS

    engine = str(r.engine.value) if r.engine else ""
    build = f"{engine} {r.engine_version.value}" if r.engine_version else engine
    era = f", {r.era.value.upper()} engine" if r.era and r.era.value in ("v0", "v1") else ""
    lines = [f"{name}: a {build} startup log{era}", "Read:"]
    shown = {label: getattr(r, name) for name, label in INGEST_ROWS}
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
    from calc.catalog.schema import schemas

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


# Each command: its help, the function that runs it, and whether it prints JSON on --json. Its
# flags are the inputs calc/present/inputs.py lists for it (COMMAND_FLAGS), declared from that table.
COMMANDS: dict[str, tuple[str, Callable[[Any, argparse.Namespace], object], bool]] = {
    "gate": ("the start gate: needs vs MemAvailable, the largest pin, the flags", cmd_gate, True),
    "kv": ("the KV pool both ways: pin to tokens, tokens to pin", cmd_kv, True),
    "fit": ("per-request KV cost (per token x context + fixed) from one pool read at two or more max_model_len", cmd_fit, True),
    "fraction": ("vLLM's own start check: ceil(total x fraction) <= free", cmd_fraction, True),
    "guard": ("the memory guard replayed over a MemAvailable trace", cmd_guard, True),
    "watch": (
        "poll MemAvailable, MemFree and the page cache for a bounded time: when the guard would kill, when memory is available but not free",
        cmd_watch,
        True,
    ),
    "plan": ("several models on one box: resident budget and fractions planned together", cmd_plan, True),
    "prefetch": ("vLLM's auto-prefetch: a network filesystem and a checkpoint within its share of available memory", cmd_prefetch, True),
    "model": ("before the first start: weights and KV per rank from a config.json, by vLLM's layout (modeled)", cmd_model, True),
    "ingest": ("read a vLLM or SGLang startup log: its figures, what they give, the catalog's figures for the model", cmd_ingest, True),
    "schema": ("write (or --check) the catalog's JSON Schema files", cmd_schema, False),
    "check": ("validate the catalog", cmd_check, True),
}


class _Typed(argparse.Action):
    """Stores a flag's value under its input's key and records the spelling typed, so a message
    names the flag as the user wrote it; one setting given under two spellings is refused."""

    def __call__(self, parser: argparse.ArgumentParser, ns: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        typed: dict[str, str] = ns.__dict__.setdefault("typed", {})
        before = typed.get(self.dest)
        if option_string and before and before != option_string:
            raise InputError(f"{option_string}: found beside {before}, expected one of them (they are the same setting)")
        if option_string:
            typed[self.dest] = option_string
        if self.const is not None:  # a switch
            setattr(ns, self.dest, True)
        elif self.default == []:  # repeated: each value kept
            setattr(ns, self.dest, [*(getattr(ns, self.dest) or []), values])
        else:
            setattr(ns, self.dest, values)


def declare(p: Parser, command: str) -> None:
    """A command's flags, each from its input's entry in calc/present/inputs.py: the flag as vLLM spells
    it, listed with its help; each former spelling read too, unlisted."""
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for u in inputs.COMMAND_FLAGS[command]:
        i = u.input
        flag, aliases = inputs.flag_names(u)
        if not flag.startswith("-"):
            p.add_argument(flag, help=inputs.cli_help(u))
            continue
        if u.group and u.group not in groups:
            groups[u.group] = p.add_mutually_exclusive_group()
        target: Any = groups[u.group] if u.group else p
        kwargs: dict[str, Any] = {"dest": i.key, "action": _Typed}
        if i.kind == "switch":
            kwargs.update(nargs=0, const=True, default=False)
        else:
            kwargs.update(type=given, default=[] if u.repeat else u.default, metavar=flag.lstrip("-").upper().replace("-", "_"))
            if u.required:
                kwargs["required"] = True
        target.add_argument(flag, help=inputs.cli_help(u), **kwargs)
        for alias in aliases:
            target.add_argument(alias, **{**kwargs, "required": False} if "required" in kwargs else kwargs, help=argparse.SUPPRESS)
    p.set_defaults(run=COMMANDS[command][1])
    if command == "schema":
        p.set_defaults(json=False)


def _flag(args: argparse.Namespace, key: str) -> str:
    """The flag of an input as the command line gave it (a former spelling, if that was typed)."""
    flag = inputs.INPUTS[key].flag
    return str(getattr(args, "typed", {}).get(key) or flag)


def _val(args: argparse.Namespace, key: str, minimum: int | None = None) -> object:
    """A flag's value read as its input's kind (calc/present/inputs.py), named in a message as typed."""
    return inputs.INPUTS[key].parse(getattr(args, key), _flag(args, key), minimum)


def _int(args: argparse.Namespace, key: str, minimum: int | None = None) -> int:
    """A count or a size in bytes."""
    value = _val(args, key, minimum)
    assert isinstance(value, int)
    return value


def _frac(args: argparse.Namespace, key: str) -> Fraction:
    value = _val(args, key)
    assert isinstance(value, Fraction)
    return value


def _secs(args: argparse.Namespace, key: str) -> float:
    value = _val(args, key)
    assert isinstance(value, float)
    return value


def _as_typed(message: str, args: argparse.Namespace | None) -> str:
    """A message that opens with another spelling of a flag the user typed names it as typed."""
    if args is None:
        return message
    for key, typed in dict(getattr(args, "typed", {})).items():
        i = inputs.INPUTS[key]
        spellings = {i.flag or "", *i.aliases, *(a for u in inputs.COMMAND_FLAGS[args.command] if u.key == key for a in (u.aliases or ()))}
        for spelling in sorted(spellings - {"", typed}, key=len, reverse=True):
            if message.startswith(spelling + ":") or message.startswith(spelling + " "):
                return str(typed) + message[len(spelling) :]
    return message


def command_of(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is one and is not the value of
    --catalog (or of --cat, --c...: argparse takes a flag's unique prefix)."""
    for i, word in enumerate(argv):
        before = argv[i - 1] if i else ""
        if word in COMMANDS and not (len(before) > 2 and "--catalog".startswith(before)):
            return word
    return None


def _value_flags(command: str | None) -> frozenset[str]:
    """The spellings of every flag that takes a value, of `command` (of every command when None)."""
    names: set[str] = set()
    for name, uses in inputs.COMMAND_FLAGS.items():
        if command in (None, name):
            for u in uses:
                if u.input.kind != "switch" and u.input.flag and u.input.flag.startswith("-"):
                    flag, aliases = inputs.flag_names(u)
                    names.update((flag, *aliases))
    return frozenset(names | {"--catalog"})


def dashed_values(argv: Sequence[str], command: str | None) -> list[str]:
    """A value that starts with one '-' (`--total-memory -80GiB`, `--cpu-offload-gb -3`) joined to
    its flag (`--total-memory=-80GiB`), so it reaches the flag's own reading and its message rather
    than argparse's "expected one argument"; '-' alone (standard input) and a following flag are
    left as they are."""
    takes = _value_flags(command)
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return out + list(argv[i:])
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if word in takes and following.startswith("-") and not following.startswith("--") and following != "-":
            out.append(f"{word}={following}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The command line read with its command's flags alone; should that guess miss, read again
    with every command's, so the answer is the full parser's."""
    guess = command_of(argv)
    argv = dashed_values(argv, guess)
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
    """The command line's parser, holding `command` alone with its flags (every command when None):
    a run needs its own, and declaring all of them is most of the parser's cost."""
    parser = Parser(prog=PROG, description="Memory calculators for vLLM starts, from the catalog.")
    parser.add_argument("--catalog", default=str(CATALOG_DIR), help=inputs.INPUTS["catalog"].help)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, (helptext, _, machine) in COMMANDS.items():
        if command not in (None, name):
            continue  # a run's parser holds its own command alone; any other reading falls back to the whole parser
        p = sub.add_parser(name, help=helptext, description=helptext)
        if machine:
            p.add_argument("--json", action="store_true", help=inputs.INPUTS["json"].help)
        declare(p, name)
    return parser


def one_line(message: str) -> str:
    """A message as one line: control characters and line breaks typed into a value are escaped."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", lambda m: repr(m.group())[1:-1], message)


def main(argv: list[str] | None = None, catalog: Catalog | None = None, sleep: Callable[[float], None] | None = None) -> int:
    """Run one command; `catalog`, when given, stands for the default catalog directory's contents
    (the site build passes the catalog it has already read); `sleep`, when given, is what `watch`
    waits between polls with (the build replays saved readings without waiting)."""
    args = None
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
        print(f"calc: error: {one_line(_as_typed(str(error), args))}", file=sys.stderr)
        return 2
    print(json.dumps(out, indent=2) if isinstance(out, dict) else out)
    return 0
