"""The site's charts, described from the catalog through calc and drawn by calc.present.chart.

Each function returns a chart (plain data); `calc.present.chart.figure_html` draws it. The pages call
them at build time through a macro, and the calculator calls the ones it shows on every edit,
so a changed catalog value or a changed field redraws the same picture. Every label is `fmt`
of the figure the bar or point is drawn from.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from calc.answers import guard, prefetch, report
from calc.catalog.entries import Deployment, Start
from calc.catalog.model import Catalog
from calc.engine import derive, gate, kv
from calc.engine.budget import Resident
from calc.present.chart import Axis, Band, Bars, Event, Mark, Plot, Row, Rule, Segment, Series, nice_high
from calc.units import GiB, InputError, fmt, shown

TERM_TONES = {
    "weights": "weights",
    "drafter": "drafter",
    "KV pin": "kv",
    "overhead": "overhead",
    "prefill-budget term": "prefill",
    "seat term": "seats",
    "start headroom": "headroom",
}


def gib(value: int | Fraction, digits: int = 1) -> str:
    return fmt(value, "GiB", digits)


def need(value: int | Fraction, digits: int = 1) -> str:
    """A least figure that must be met (the MemAvailable a checkpoint needs), rounded up."""
    return fmt(value, "GiB", digits, up=True)


def limit(value: int | Fraction, digits: int = 1) -> str:
    """A most figure that must not be passed (the largest checkpoint prefetched), rounded down."""
    return fmt(value, "GiB", digits, down=True)


def _gib_axis(largest: int | Fraction, title: str = "GiB a rank") -> Axis:
    return Axis("GiB", 0, nice_high(largest, 10 * GiB), title)


def _segments(terms: Sequence[gate.Term]) -> tuple[Segment, ...]:
    return tuple(Segment(t.name, t.bytes, TERM_TONES.get(t.name, "other"), gib(t.bytes)) for t in terms if t.bytes)


def _calibrated(catalog: Catalog, deployment_id: str) -> tuple[int, int]:
    s = derive.start_settings(catalog, catalog.deployments[deployment_id])
    return s["prefill_budget"], s["seats"]


# --- what one rank holds, against MemAvailable ----------------------------------------------


def rank_holds(catalog: Catalog, deployment_id: str = "dsv4-flash-pair", killed: int = 234, serving: int = 235) -> Bars:
    """A start the gate passed on a pre-measurement row (and the guard killed), beside the
    measured start: what each held against MemAvailable at start, with the start headroom and
    the guard's floor marked on each."""
    deployment = catalog.deployments[deployment_id]
    floor = catalog.policy["guard"]["floor"].size
    first = _start_with(deployment, killed, ("available_before", "lowest_available", "gate_row"))
    second = _start_with(deployment, serving, ("available_before", "available_after", "weights_loaded"))
    before_1, before_2 = first["available_before"].size, second["available_before"].size

    then = gate.gate(derive.gate_row_of_start(catalog, deployment_id, first), derive.request_of(catalog, deployment, first), (before_1,))
    lowest = first["lowest_available"].size
    held_1 = before_1 - lowest
    now = derive.gate_row(catalog, deployment_id)
    assert now.overhead is not None  # a measured start, so its overhead is known
    overhead = now.overhead
    held_2 = derive.held(second).bytes

    def marks(before: int) -> tuple[Mark, ...]:
        return (Mark(before, "MemAvailable at start", "available"), Mark(before - floor, f"guard floor: {gib(floor, 0)} left", "floor"))

    verdict_then = "gate passed" if then.passes else "gate refused"
    needs_then = report.needs_as_printed(then.terms)  # a total is the sum of its terms as printed
    rows = (
        Row(
            f"gen {killed}, the gate's row: needs {gib(needs_then)}",
            _segments(then.terms),
            (Mark(before_1, "MemAvailable at start", "available"),),
            verdict_then,
        ),
        Row(
            f"gen {killed}, held at its lowest (warmup)",
            (Segment("held, measured", held_1, "held", gib(held_1)),),
            marks(before_1),
            "killed" if first.get("outcome") == "killed" else first.get("outcome", ""),
        ),
        Row(
            f"gen {serving}, held once serving",
            (
                Segment("weights", now.weights.bytes, "weights", gib(now.weights.bytes)),
                Segment("KV pin", second["kv_pin"], "kv", gib(second["kv_pin"])),
                Segment("overhead", overhead.bytes, "overhead", gib(overhead.bytes)),
            ),
            marks(before_2),
            second.get("outcome", ""),
        ),
    )
    figures = [(f"gen {killed}, gate's row: {t.name}", f"{gib(t.bytes, 2)} ({t.source})") for t in then.terms if t.bytes]
    figures += [
        (f"gen {killed}, needs", gib(needs_then)),
        (f"gen {killed}, MemAvailable at start", gib(before_1)),
        (f"gen {killed}, MemAvailable at its lowest", gib(lowest)),
        (f"gen {killed}, held at its lowest", gib(held_1)),
        (f"gen {serving}, weights", gib(now.weights.bytes, 2)),
        (f"gen {serving}, KV pin", gib(second["kv_pin"], 2)),
        (f"gen {serving}, overhead", gib(overhead.bytes)),
        (f"gen {serving}, held", gib(held_2)),
        (f"gen {serving}, MemAvailable at start", gib(before_2)),
        ("guard floor", gib(floor, 0)),
    ]
    summary = (
        f"Gen {killed}'s gate row asked for {gib(needs_then)} against {gib(before_1)} available and passed; in warmup the rank held "
        f"{gib(held_1)}, leaving {gib(lowest)}, under the {gib(floor, 0)} floor, and the guard killed it. "
        f"Gen {serving} holds {gib(held_2)} of {gib(before_2)}, leaving {gib(before_2 - held_2)}."
    )
    largest = max(then.needs or 0, before_1, before_2)
    return Bars(f"rank-holds-{killed}-{serving}", "What one rank holds against MemAvailable at start", summary, _gib_axis(largest), rows, (), tuple(figures))


def _start_with(deployment: Deployment, generation: int, keys: tuple[str, ...]) -> Start:
    try:
        start = derive.start_by_generation(deployment, generation)
    except KeyError:
        raise InputError(f"starts.yaml: {deployment['id']}: found no start with generation {generation}, expected one to draw") from None
    missing = [k for k in keys if k not in start]
    if missing:
        raise InputError(f"starts.yaml: {deployment['id']}: generation {generation}: found no {', '.join(missing)}, expected them to draw what the rank held")
    return start


# --- the pin matrix ------------------------------------------------------------------------


def needs_row(label: str, result: gate.GateResult, note: str = "") -> Row:
    return Row(label, _segments(result.terms), (), note or ("starts" if result.passes else "refused"))


def pin_matrix(catalog: Catalog, deployment_id: str = "dsv4-flash-pair", pins: Sequence[int] = (8 * 10**9, 10 * 10**9, 16 * 10**9, 20 * 10**9)) -> Bars:
    """What each pin needs with and without the drafter, against the free memory of the refused
    request, with the largest pin that passes either way."""
    request = catalog.deployments[deployment_id]["requests"][0]
    available = request["available"].size
    row = derive.gate_row(catalog, deployment_id)
    prefill, seats = _calibrated(catalog, deployment_id)
    rows, figures = [], []
    for drafter in (False, True):
        with_what = "drafter" if drafter else "no drafter"
        for p in pins:
            result = gate.gate(row, gate.Request(p, drafter, prefill, seats), (available,))
            needs = gib(report.needs_as_printed(result.terms))
            rows.append(needs_row(f"pin {fmt(p, 'e9')}, {with_what}: needs {needs}", result))
            figures.append((f"pin {fmt(p, 'e9')}, {with_what}", f"needs {needs}: {'starts' if result.passes else 'refused'}"))
        top = gate.largest_pin(row, gate.Request(0, drafter, prefill, seats), (available,))
        if top is not None and top >= 0:
            result = gate.gate(row, gate.Request(top, drafter, prefill, seats), (available,))
            rows.append(needs_row(f"largest pin, {with_what}: {fmt(top, 'e9', 1, down=True)}", result, "largest"))
            figures.append((f"largest pin, {with_what}", f"{fmt(top, 'e9', 1, down=True)} ({gib(top, 2)})"))
    figures.append(("MemAvailable at the request", gib(available)))
    tops = [r for r in rows if r.note == "largest"]
    summary = (
        f"Needs for pins of {', '.join(fmt(p, 'e9') for p in pins)}, without and with the drafter, against the {gib(available)} "
        f"available when the request was refused; the largest pin that passes is "
        + " without the drafter and ".join(t.label.split(": ")[-1] for t in tops)
        + (" with it." if len(tops) == 2 else ".")
    )
    largest = max([available] + [sum(s.value for s in r.segments) for r in rows])
    rules = (Rule(available, f"available {gib(available)}", "available"),)
    return Bars(f"pin-matrix-{deployment_id}", "KV pins against the memory available", summary, _gib_axis(largest), tuple(rows), rules, tuple(figures))


def needs_vs_boxes(
    terms: Sequence[gate.Term],
    needs: int | Fraction,
    boxes: Sequence[tuple[str, int]],
    title: str = "What the start needs on each box",
    chart_id: str = "start-needs",
) -> Bars:
    """The calculator's start: the needs stacked, once per box, with that box's MemAvailable marked."""
    rows = []
    for name, available in boxes:
        marks = (Mark(available, "MemAvailable", "available"),)
        rows.append(Row(f"{name}: {gib(available)} available", _segments(terms), marks, "starts" if needs <= available else "refused"))
    printed = gib(report.needs_as_printed(tuple(terms)))
    figures = [(t.name, gib(t.bytes, 2)) for t in terms if t.bytes] + [("needs", printed)]
    figures += [(f"MemAvailable on {n}", gib(a)) for n, a in boxes]
    verdict = "fits on every box" if all(needs <= a for _, a in boxes) else "does not fit on every box"
    summary = f"The start needs {printed} a rank and {verdict}: " + ", ".join(f"{gib(a)} available on {n}" for n, a in boxes) + "."
    largest = max([needs, *(a for _, a in boxes)])
    return Bars(chart_id, title, summary, _gib_axis(largest), tuple(rows), (), tuple(figures))


# --- the start-up timeline and the guard ---------------------------------------------------


def _trace_axes(samples: list[tuple[float, int]], floor: int, threshold: int | None = None) -> tuple[Axis, Axis]:
    last = max(t for t, _ in samples)
    x = Axis("s", 0, nice_high(Fraction(last).limit_denominator(1000)), "seconds since start")
    y = Axis("GiB", 0, nice_high(max([a for _, a in samples] + [floor] + ([threshold] if threshold else [])), 10 * GiB), "MemAvailable")
    return x, y


def startup_timeline(catalog: Catalog, trace_id: str = "kernel-init-report") -> Plot:
    """MemAvailable through a start: the log's events on it, the guard's floor, and the line
    below which vLLM stops prefetching the checkpoint."""
    trace = catalog.traces[trace_id]
    floor = catalog.policy["guard"]["floor"].size
    share = catalog.policy["vllm"]["prefetch_fraction"].fraction
    checkpoint = trace["checkpoint"].size
    samples = [(s["t"], s["available"]) for s in trace["samples"]]
    threshold = prefetch.least_available(checkpoint, share)
    x, y = _trace_axes(samples, floor, threshold)
    events = tuple(
        Event(s["t"], s["available"], str(n), f"{fmt(s['t'], 's', 0)}: {s['event']}") for n, s in enumerate((s for s in trace["samples"] if s.get("event")), 1)
    )
    bands: tuple[Band, ...] = ()
    if "kernel_init" in trace:
        k = trace["kernel_init"]
        bands = (Band(k["from_t"], k["to_t"], "kernel init"),)
    rules = (
        Rule(threshold, f"prefetch size rule: {need(threshold)}", "prefetch"),
        Rule(floor, f"guard floor {gib(floor, 0)}", "floor"),
    )
    figures = [(f"{fmt(t, 's', 0)}", f"{fmt(a, 'MiB', 0)} ({gib(a, 2)})") for t, a in samples]
    figures += [
        ("guard floor", gib(floor, 0)),
        (f"prefetch threshold for the {fmt(checkpoint, 'GB', 0)} checkpoint (checkpoint / {fmt(share, '%', 0)}, rounded up)", need(threshold, 2)),
    ]
    first, last = samples[0], samples[-1]
    during = ""
    if bands:
        at = dict(samples)
        k = trace["kernel_init"]
        during = f", {gib(at[k['from_t']] - at[k['to_t']])} of it in the kernel init from {fmt(k['from_t'], 's', 0)} to {fmt(k['to_t'], 's', 0)}"
    summary = (
        f"MemAvailable falls from {gib(first[1])} at {fmt(first[0], 's', 0)} to {gib(last[1])} at {fmt(last[0], 's', 0)}, "
        f"{gib(first[1] - last[1])} in all{during}; it ends above the {gib(floor, 0)} floor "
        f"and {'below' if last[1] < threshold else 'above'} the {need(threshold)} at which a {fmt(checkpoint, 'GB', 0)} checkpoint is within vLLM's prefetch size rule."
    )
    series = (Series("MemAvailable", tuple(samples), "trace"),)
    return Plot(f"startup-{trace_id}", "MemAvailable through the start", summary, x, y, series, rules, events, bands, tuple(figures))


def guard_trace(catalog: Catalog, trace_id: str = "kernel-init-report") -> Plot:
    """The memory guard over a trace: each poll, the floor, and the kill where there is one."""
    trace = catalog.traces[trace_id]
    policy = catalog.policy["guard"]
    floor, in_a_row = policy["floor"].size, policy["polls_in_a_row"].count
    samples = [(s["t"], s["available"]) for s in trace["samples"]]
    return guard_plot(f"guard-{trace_id}", samples, floor, in_a_row)


def guard_plot(chart_id: str, samples: list[tuple[float, int]], floor: int, in_a_row: int, serving_at: float | None = None) -> Plot:
    result = guard.run(samples, floor, in_a_row, serving_at)
    points = tuple((Fraction(t), a) for t, a in samples)  # exact, as the chart draws them
    runs = guard.runs_under([s for s in samples if serving_at is None or s[0] < serving_at], floor)
    over = tuple((t, a) for t, a in points if a >= floor)
    under = tuple((t, a) for t, a in points if a < floor)
    series = [Series("MemAvailable", points, "trace", dots=False), Series("poll above the floor", over, "trace", line=False)]
    if under:
        series.append(Series("poll under the floor", under, "under", line=False))
    events: tuple[Event, ...] = ()
    if result.killed:
        kill = next(s for s in points if s[0] == result.at)
        events = (Event(kill[0], kill[1], "✕", f"killed at {fmt(kill[0], 's', 0)}: {fmt(in_a_row, 'count')} polls in a row under the floor"),)
    x, y = _trace_axes(samples, floor)
    figures = [
        (fmt(t, "s", 0), f"{gib(a, 2)}; {fmt(n, 'count')} in a row under the floor")
        for (t, a), n in zip(samples, runs + [0] * (len(samples) - len(runs)), strict=True)
    ]
    figures.append(("guard floor", gib(floor, 0)))
    if result.killed:
        summary = f"{fmt(in_a_row, 'count')} polls in a row under the {gib(floor, 0)} floor: the guard kills the rank at {fmt(result.at or 0, 's', 0)}."
    else:
        summary = (
            f"No kill: the lowest poll, {gib(result.lowest)} at {fmt(result.lowest_at, 's', 0)}, "
            + ("stays above" if result.lowest >= floor else "dips under")
            + f" the {gib(floor, 0)} floor, and no {fmt(in_a_row, 'count')} polls in a row are under it."
        )
    rules = (Rule(floor, f"guard floor {gib(floor, 0)}", "floor"),)
    return Plot(chart_id, "The memory guard over the trace", summary, x, y, tuple(series), rules, events, (), tuple(figures))


def prefetch_bar(checkpoint: int, available: int, share: Fraction) -> Bars:
    """The checkpoint against vLLM's prefetch size rule: at most `share` of MemAvailable. (The
    loader also prefetches only from a network filesystem; the calculator says which.)"""
    largest = prefetch.largest_prefetched(available, share)
    within = prefetch.prefetch_enabled(checkpoint, available, share)
    in_gb = fmt(checkpoint, "GB", 1)
    verdict = "within the size rule" if within else "above the size rule"
    row = Row(f"checkpoint {in_gb}", (Segment("checkpoint", checkpoint, "weights", gib(checkpoint)),), (), verdict)
    rules = (
        Rule(available, f"available {gib(available)}", "available"),
        Rule(largest, f"{fmt(share, '%', 0)} of it: {limit(largest)}", "prefetch"),
    )
    figures = (
        ("checkpoint", f"{in_gb} ({gib(checkpoint, 2)})"),
        ("MemAvailable", gib(available, 2)),
        (f"{fmt(share, '%', 0)} of it, rounded down", limit(largest, 2)),
    )
    summary = f"A {in_gb} checkpoint against {limit(largest)}, {fmt(share, '%', 0)} of the {gib(available)} available: {verdict} for auto-prefetch."
    return Bars("prefetch", "The checkpoint against vLLM's prefetch size rule", summary, _gib_axis(max(checkpoint, available)), (row,), rules, figures)


# --- tokens against max_model_len ----------------------------------------------------------


def length_fit(catalog: Catalog, model_id: str = "deepseek-v4-flash") -> Plot:
    """Tokens vLLM logs for one pool at several max_model_len, and the per-request fit through
    them (one curve per end of the pool's range)."""
    fits = [f for f in derive.length_fits(catalog) if f.model == model_id]
    if not fits:
        raise InputError(f"models.yaml: {model_id}: found no length_reports, expected one pool read at two or more max_model_len to draw")
    return length_plot(f"length-fit-{model_id}", [(f.pool, f.per_token, f.fixed) for f in fits], list(fits[0].readings))


def length_plot(
    chart_id: str, fits: Sequence[tuple[int, Fraction, Fraction]], readings: Sequence[tuple[int, int]], predicted: Sequence[tuple[int, int | Fraction]] = ()
) -> Plot:
    lengths = [length for length, _ in readings] + [length for length, _ in predicted]
    x_high = nice_high(max(lengths))
    steps = 24
    series = []
    top: int | Fraction = max(t for _, t in readings)
    for n, (pool, per_token, fixed) in enumerate(fits):
        xs = [Fraction(x_high * i, steps) for i in range(1, steps + 1)]
        curve = tuple((x, kv.tokens_at_length(pool, per_token, fixed, x)) for x in xs)
        top = max([top] + [y for _, y in curve])
        series.append(Series(f"fit, pool {gib(pool)}", curve, f"fit{n + 1}", dots=False))
    series.append(Series("tokens logged", tuple(readings), "trace", line=False))
    if predicted:
        top = max([top] + [t for _, t in predicted])
        series.append(Series("predicted by the fit", tuple(predicted), "prefetch", line=False))
    x = Axis("count", 0, x_high, "max_model_len")
    y = Axis("count", 0, nice_high(top), "tokens")
    figures = [(f"logged at max_model_len {fmt(length, 'count')}", fmt(tokens, "tokens")) for length, tokens in readings]
    for pool, per_token, fixed in fits:
        figures.append((f"fit for a {gib(pool)} pool", f"{fmt(per_token, 'B')} a token + {fmt(fixed, 'GB')} a request"))
    figures += [(f"predicted at max_model_len {fmt(length, 'count')}", fmt(tokens, "tokens")) for length, tokens in predicted]
    summary = (
        "Logged "
        + ", ".join(f"{fmt(t, 'tokens')} at {fmt(length, 'count')}" for length, t in readings)
        + "; the per-request fit (per token x context + fixed) passes through them"
        + "".join(f" and levels off towards {fmt(Fraction(pool) / per_token, 'tokens')}, the pool over the per-token cost" for pool, per_token, _ in fits[:1])
        + "."
    )
    return Plot(chart_id, "Tokens against max_model_len", summary, x, y, tuple(series), (), (), (), tuple(figures))


# --- bytes per token by model --------------------------------------------------------------


def bytes_per_token(catalog: Catalog) -> Bars:
    """Every bytes-per-token figure, measured beside modeled and published."""
    rows, figures = [], []
    modeled_done: set[tuple[Any, ...]] = set()
    for r in derive.kv_readings(catalog):
        model = catalog.models[r.model]
        name = ", ".join(p for p in (model["name"], r.kv_dtype, r.label) if p)
        text = fmt(r.bytes_per_token, "B")
        rows.append(Row(f"{name} ({r.kind})", (Segment(r.kind, r.bytes_per_token, _kind_tone(r.kind), text),), (), text))
        figures.append((f"{name}, {r.engine}" if r.engine else name, f"{text} a token a rank ({r.provenance})"))
        key = (r.model, r.kv_dtype, r.tp)
        if r.kind == "measured" and key not in modeled_done and r.tp:
            modeled_done.add(key)
            latent = derive.modeled_from_architecture(model, r.kv_dtype, r.tp)
            if latent:
                text = fmt(latent, "B")
                rows.append(Row(f"{model['name']}, {r.kv_dtype} (modeled by calc)", (Segment("modeled", latent, "modeled", text),), (), text))
                figures.append((f"{model['name']}, {r.kv_dtype}, modeled from the architecture", f"{text} a token a rank"))
    largest = max(sum(s.value for s in r.segments) for r in rows)
    axis = Axis("count", 0, nice_high(largest), "bytes a token a rank")
    low, high = min(rows, key=lambda r: r.segments[0].value), max(rows, key=lambda r: r.segments[0].value)
    summary = (
        f"{fmt(len(rows), 'count')} figures of bytes a token a rank, measured, modeled and published, from {low.note} "
        f"({low.label}) to {high.note} ({high.label}); the table below lists each with its source."
    )
    return Bars("bytes-per-token", "Bytes per token by model", summary, axis, tuple(rows), (), tuple(figures))


def _kind_tone(kind: str) -> str:
    return {"measured": "measured", "modeled": "modeled", "published": "published"}.get(kind, "estimated")


# --- several models on one box -------------------------------------------------------------


def residents_chart(
    chart_id: str, residents: Sequence[Resident], total: int, title: str = "Resident models against the box", stated: tuple[int, str] | None = None
) -> Bars:
    """Each resident model's weights, KV and headroom stacked against the box."""
    segments = []
    for n, r in enumerate(residents):
        tone = f"model{n % 4 + 1}"
        segments.append(Segment(f"{r.name}: weights", r.weights, tone, gib(r.weights)))
        if r.kv:
            segments.append(Segment(f"{r.name}: KV", r.kv, "kv", gib(r.kv)))
        if r.headroom:
            segments.append(Segment(f"{r.name}: headroom", r.headroom, "headroom", gib(r.headroom)))
    used = sum(r.total for r in residents)
    rules = [Rule(total, f"box total {gib(total)}", "available")]
    if stated:
        rules.append(Rule(stated[0], stated[1], "floor"))
    left = total - used
    row = Row(f"together: {gib(used)}", tuple(segments), (), f"{gib(abs(left))} {'left' if left >= 0 else 'over'}")
    figures = [(s.name, gib(s.value, 2)) for s in segments] + [
        ("together", gib(used, 2)),
        ("box total", gib(total, 2)),
        ("left" if left >= 0 else "over", gib(abs(left), 2)),
    ]
    if stated:
        figures.append((stated[1], gib(stated[0], 2)))
    together = " + ".join(r.name for r in residents)
    summary = f"{together[:1].upper()}{together[1:]} take {gib(used)} of the box's {gib(total)}, " + (
        f"leaving {gib(left)}." if left >= 0 else f"{gib(-left)} more than it has."
    )
    largest = max(used, total, stated[0] if stated else 0)
    return Bars(chart_id, title, summary, _gib_axis(largest, "GiB on the box"), (row,), tuple(rules), tuple(figures))


def plan_budget(catalog: Catalog, plan_id: str = "coder-and-70b") -> Bars:
    plan = catalog.plans[plan_id]
    box = catalog.boxes[plan["box"]]
    residents = [Resident(catalog.models[r["model"]]["name"], catalog.models[r["model"]]["weights"].size) for r in plan["residents"]]
    stated = plan.get("budget_stated")
    return residents_chart(
        f"plan-{plan_id}",
        residents,
        box["total_memory"].size,
        f"Resident models' weights on one {box['name']}",
        (stated.size, f"addressable, as stated: {gib(stated.size)}") if stated else None,
    )


# --- the pool predicted on a card ------------------------------------------------------------


def predicted_pool(
    card_name: str, total: int, requested: int, terms: Sequence[tuple[str, int]], pool: int, chart_id: str = "before-pool", measured: bool = False
) -> Bars:
    """Before the first start on a discrete card: what vLLM's profile takes off the memory it
    requests (calc/engine/predict's terms), and the pool that is left, stacked against the card's total
    and the requested share (`measured`: the budget measured after warmup, v0.34.0's extensible KV
    cache, in its place). A pool at or below zero is drawn as none and said."""
    base = "budget" if measured else "requested"
    tones = {"weights": "weights", "activation_peak": "prefill", "non_torch": "overhead", "cuda_graph": "seats", "lora": "drafter"}
    segments = [Segment(name.replace("_", " "), value, tones.get(name, "held"), gib(value)) for name, value in terms if value > 0]
    if pool > 0:
        segments.append(Segment("KV pool", pool, "kv", gib(pool)))
    verdict = f"pool {gib(pool)}" if pool > 0 else "no pool left"
    row = Row(f"{card_name}, one rank", tuple(segments), (), verdict)
    rules = (Rule(total, f"total {gib(total)}", "available"), Rule(requested, f"{base} {gib(requested)}", "limit"))
    figures = tuple((name.replace("_", " "), gib(value, 2)) for name, value in terms) + (
        ("KV pool", gib(pool, 2)),
        (base, gib(requested, 2)),
        ("card total", gib(total, 2)),
    )
    taken = sum(value for _, value in terms)
    # with a pool left, what the terms take is said as the requested less the pool, both as printed, so the sentence adds up
    said_taken = gib(shown(requested, "GiB", 1) - shown(pool, "GiB", 1)) if pool > 0 else gib(taken)
    of = f"{gib(requested)} budget vLLM measures after warmup" if measured else f"{gib(requested)} vLLM requests"
    summary = f"Of the {of} on the {card_name} ({gib(total)} in all), the profile's terms take {said_taken} and " + (
        f"leave a KV pool of {gib(pool)}." if pool > 0 else "leave no KV pool: vLLM refuses the start."
    )
    return Bars(chart_id, "The pool vLLM leaves, predicted", summary, _gib_axis(max(total, taken)), (row,), rules, figures)
