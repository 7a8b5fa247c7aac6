"""`gate`: the start gate, needs against MemAvailable, the largest pin and the flags."""

from __future__ import annotations

import argparse
import re
from fractions import Fraction

from calc.answers import report
from calc.catalog.model import Catalog
from calc.engine import derive, fraction
from calc.present import inputs
from calc.present.commands.common import _deployment, _flag, _frac, _host_memory, _int, meminfo_available
from calc.units import GiB, InputError, fmt, parse_count, parse_memory, shown

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
    values = tuple(here if part == "auto" else parse_memory(part, "--available") for part in parts)
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


def cmd_gate(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc.record import replace

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
    from calc.record import replace

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
        return parse_memory(args.head_extra, "--head-extra")
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
