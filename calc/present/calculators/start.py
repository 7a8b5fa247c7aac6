"""The start calculator: will a deployment's start pass the gate, its largest pin, its KV pool, vLLM's
fraction check and the flags to copy.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fractions import Fraction

from calc.answers import report
from calc.answers.report import StartInputs
from calc.catalog.entries import Deployment
from calc.catalog.model import Catalog
from calc.catalog.spec import Figure
from calc.engine import derive, fraction, offload
from calc.jsontext import JsonObject
from calc.present import charts
from calc.present.calculators.form import (
    Defaults,
    Field,
    Figures,
    Output,
    badge,
    default_note,
    dl,
    esc,
    flag,
    form_fields,
    form_labels,
    form_uses,
    invalid,
    pin_up,
    read,
    short,
    size_text,
    table,
    take,
)
from calc.present.chart import figure_html
from calc.present.inputs import gib_at_least_zero
from calc.units import fmt, shown

NAME = "start"
TITLE = "Will this start fit?"


def gate_problem(catalog: Catalog, deployment_id: str) -> str | None:
    """Why the gate cannot run for a deployment, or None when it can."""
    try:
        derive.gate_row(catalog, deployment_id)
        report.last_available(catalog.deployments[deployment_id])
    except (ValueError, KeyError) as error:
        return str(error)
    return None


def gated(catalog: Catalog) -> list[str]:
    return [d for d in catalog.deployments if gate_problem(catalog, d) is None]


def max_boxes(catalog: Catalog) -> int:
    return int(max(catalog.deployments[d]["boxes"] for d in gated(catalog)))


def field_labels(catalog: Catalog) -> dict[str, str]:
    labels = form_labels(NAME, max_boxes(catalog))
    labels["available_1"] += " (head)"
    return labels


def field_names(catalog: Catalog) -> tuple[str, ...]:
    return tuple(name for name, _, _ in form_uses(NAME, max_boxes(catalog)))


def fields(catalog: Catalog) -> list[Field]:
    options = []
    for d_id, d in catalog.deployments.items():
        problem = gate_problem(catalog, d_id)
        text = f"{d['name']}: TP={fmt(d['tp'], 'count')} on {fmt(d['boxes'], 'count')}x {catalog.boxes[d['box']]['name']}"
        options.append((d_id, text + (f" (the gate cannot size it: {problem})" if problem else ""), problem is not None))
    return form_fields(NAME, {"deployment": tuple(options)}, max_boxes(catalog), field_labels(catalog))


def _available_figure(deployment: Deployment) -> Figure | None:
    """The figure report.last_available takes its value from."""
    figures = [r["available"] for r in deployment.get("requests", [])]
    figures += [s["available_before"] for s in deployment["starts"] if "available_before" in s]
    return figures[0] if figures else None


def defaults(catalog: Catalog, deployment_id: str | None = None) -> Defaults:
    deployment_id = deployment_id or gated(catalog)[0]
    deployment = catalog.deployments[deployment_id]
    model = catalog.models[deployment["model"]]
    base = report.defaults(catalog, deployment_id)
    serving = [s for s in deployment["starts"] if s["outcome"] == "serving"]
    start = serving[-1] if serving else deployment["starts"][-1]
    settings = derive.settings(deployment, start)
    policy = catalog.policy["gate"]["calibration"]
    values = {
        "deployment": deployment_id,
        "drafter": "on" if base.drafter else "",
        "speculative_tokens": fmt(base.speculative_tokens, "count"),
        "pin": size_text(base.kv_pin, "e9"),
        "prefill_budget": fmt(base.prefill_budget, "count"),
        "seats": fmt(base.seats, "count"),
        "max_model_len": fmt(base.max_model_len, "count"),
        "gpu_memory_utilization": "",
        "typical_context": "",
        "kv_offloading_size": "",
        "cpu_offload_gb": "",
        "head_extra": "",
    }
    where = ", ".join(p for p in (f"gen {start['generation']}" if start.get("generation") else "", start.get("date", "")) if p)
    drafter = model.get("drafter")
    box = catalog.boxes[deployment["box"]]

    def setting(key: str, fallback: str) -> str:
        if key in settings:
            return f"Default {esc(values[key])}: the deployment's setting (catalog/starts.yaml)"
        return f"Default {esc(values[key])}: {esc(fallback)}"

    sources = {
        "deployment": esc(
            f"Fixes the model ({model['name']}), the boxes ({fmt(deployment['boxes'], 'count')}x {box['name']}) and TP={fmt(deployment['tp'], 'count')}; "
            f"engine {deployment.get('engine', 'not recorded')}"
        ),
        "drafter": (
            f"Default off: the serving start runs without it. The drafter is {esc(drafter['name'])}, {esc(fmt(drafter['weights'].size, 'GiB'))}"
            + (f" for {esc(fmt(drafter['weights'].extra['ranks'], 'count'))} ranks together" if drafter["weights"].extra.get("ranks", 1) > 1 else "")
            + f" ({esc(drafter['weights'].provenance)})"
            if drafter
            else "The catalog has no drafter for this model"
        ),
        "speculative_tokens": setting("speculative_tokens", "the calculator's choice; the deployment runs no drafter")
        if settings.get("speculative_tokens")
        else f"Default {esc(values['speculative_tokens'])}: the calculator's choice; the deployment runs no drafter",
        "pin": f"Default {esc(values['pin'])}: the pin of the serving start" + (f" ({esc(where)})" if where else ""),
        "prefill_budget": setting("prefill_budget", f"the calibration, {fmt(policy['prefill_budget'].count, 'count')} tokens"),
        "seats": setting("seats", f"the calibration, {fmt(policy['seats'].count, 'count')} seats"),
        "max_model_len": setting("max_model_len", "the deployment's setting"),
        "gpu_memory_utilization": "Default empty: the calculator offers the largest two-decimal fraction that leaves the start headroom free "
        "at vLLM's check; with a pin the fraction sizes nothing, so it need not run to the edge",
        "typical_context": "Default empty: the seats are not sized",
        "kv_offloading_size": "Default empty: no KV offloading",
        "cpu_offload_gb": "Default empty: no weights offloaded",
        "head_extra": _head_extra_note(catalog),
    }
    figure = _available_figure(deployment)
    hidden, disabled = {"head_extra": deployment["boxes"] < 2}, {"drafter": drafter is None}  # one box runs no Ray head
    for i in range(max_boxes(catalog)):
        name = f"available_{i + 1}"
        hidden[name] = i >= deployment["boxes"]
        values[name] = size_text(base.available[min(i, len(base.available) - 1)], "GiB")
        how = "" if i == 0 else ", the head box's reading"
        sources[name] = default_note(figure, values[name], how)
    return Defaults(values, sources, hidden, disabled)


def parse(catalog: Catalog, raw: Mapping[str, str]) -> tuple[StartInputs | None, dict[str, str]]:
    """The start calculator's inputs from the form's raw strings, or a message per bad field."""
    labels = field_labels(catalog)
    errors: dict[str, str] = {}
    deployment_id = str(raw.get("deployment", "")).strip()
    if deployment_id not in gated(catalog):
        errors["deployment"] = f"{labels['deployment']}: found {deployment_id or 'nothing'!r}, expected one of {', '.join(gated(catalog))}"
        return None, errors
    deployment = catalog.deployments[deployment_id]
    model = catalog.models[deployment["model"]]
    drafter = flag(raw, "drafter")
    if drafter and not model.get("drafter"):
        errors["drafter"] = f"{short(labels['drafter'])}: the catalog has no drafter for {model['name']}"
    spec = read(NAME, raw, errors, "speculative_tokens", labels)
    pin = read(NAME, raw, errors, "pin", labels)
    available = [read(NAME, raw, errors, f"available_{i + 1}", labels) for i in range(deployment["boxes"])]
    prefill = read(NAME, raw, errors, "prefill_budget", labels)
    seats = read(NAME, raw, errors, "seats", labels)
    max_len = read(NAME, raw, errors, "max_model_len", labels)
    utilization = read(NAME, raw, errors, "gpu_memory_utilization", labels, optional=True)
    typical = read(NAME, raw, errors, "typical_context", labels, optional=True)
    host = {name: _gib(raw, errors, name, labels) for name in ("kv_offloading_size", "cpu_offload_gb")}
    head_extra = read(NAME, raw, errors, "head_extra", labels, optional=True) if deployment["boxes"] > 1 else None  # hidden on one box
    if errors:
        return None, errors
    inputs = StartInputs(
        deployment=deployment_id,
        kv_pin=pin,
        drafter=drafter,
        speculative_tokens=spec,
        prefill_budget=prefill,
        seats=seats,
        max_model_len=max_len,
        available=tuple(available),
        typical_context=typical,
        gpu_memory_utilization=utilization,
        host_bytes=offload.kv_offloading_a_rank(host["kv_offloading_size"], deployment["tp"]),
        cpu_offload_gib=host["cpu_offload_gb"],
        kv_offloading_gib=host["kv_offloading_size"],
        head_extra_bytes=head_extra or 0,
    )
    for problem in report.check(inputs):
        key = {"available": "available_1"}.get(problem.split(":", 1)[0], problem.split(":", 1)[0].replace(" ", "_"))
        errors[key if key in labels else "deployment"] = problem
    if not errors and (floor := report.floor_problem(catalog, inputs, short(labels["pin"]))):
        errors["pin"] = floor
    return (None, errors) if errors else (inputs, {})


def _head_extra_note(catalog: Catalog) -> str:
    """The head box extra's default, and the catalog's figure for Ray's head beside it."""
    head = catalog.policy["gate"].get("head_box")
    if not head:
        return "Default empty: none, every box gated alike"
    ray = head["ray_head"]
    return (
        "Default empty: none, every box gated alike, as one MemAvailable for every box is on the command line; "
        f"Ray's head takes about {esc(fmt(ray.size, 'GiB', 0))} ({esc(ray.provenance)}), which "
        "<code>gate --available</code> with one reading a box charges the head box"
    )


def _gib(raw: Mapping[str, str], errors: dict[str, str], name: str, labels: Mapping[str, str]) -> Fraction:
    """A size in GiB as vLLM's offload flags take it, 0 or more; empty is 0, vLLM's default."""
    text = str(raw.get(name, "")).strip()

    def parse() -> Fraction:
        return gib_at_least_zero(text, short(labels[name])) if text else Fraction(0)

    value: Fraction = take(errors, name, parse) or Fraction(0)
    return value


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = field_names(catalog)
    inputs, errors = parse(catalog, raw)
    if inputs is None:
        return invalid("start", errors, field_labels(catalog), names)
    r = report.start_report(catalog, inputs)
    fig = Figures()
    verdict = start_verdict(r, fig)
    result = "".join(
        (
            start_needs(r, fig),
            start_largest(r, fig),
            start_pool(r, fig),
            start_fraction(r, fig),
            start_flags(r, fig),
            start_changes(r, fig),
        )
    )
    return Output("start", True, {}, {"start-verdict": verdict, "start-result": result}, fig.shown, names)


def start_verdict(r: report.StartReport, fig: Figures) -> str:
    """The one sentence a screen reader announces after each edit: passes or refused, and every
    note the other checks add (the reading's precision, seats that do not fit, the fix offered)."""
    if r.outside_calibration:
        return f"<strong>Start: {fig('verdict', 'outside calibration')}</strong>. {esc(r.outside_calibration)}."
    tightest = min(r.boxes, key=lambda b: b.margin_bytes or 0)  # every box has one once the gate sizes the start
    verdict = fig("verdict", "passes" if r.passes else "refused")
    needs_shown = shown(report.needs_as_printed(r.terms), "GiB", 1)
    available_shown = shown(tightest.available_bytes, "GiB", 1)
    if tightest.head_extra_bytes:  # the head box's processes come off its MemAvailable, both as the box table prints them
        available_shown = shown(shown(tightest.available_bytes, "GiB", 2) - shown(tightest.head_extra_bytes, "GiB", 2), "GiB", 1)
    needs = fig("needs_short", fmt(needs_shown, "GiB", 1))
    available = fig("available_short", fmt(available_shown, "GiB", 1))
    after = " left beside the head's processes" if tightest.head_extra_bytes else ""
    margin = fig("margin_short", fmt(abs(available_shown - needs_shown), "GiB", 1))
    notes = "".join(f" Note: {esc(n)}." for n in r.notes)
    if r.passes:
        where = "every box" if len(r.boxes) > 1 else tightest.box
        return (
            f"<strong>Start: {verdict}</strong> on {esc(where)}: needs {needs} a rank against {available} MemAvailable{after}, "
            f"{margin} to spare on the tightest box.{notes}"
        )
    refused = ", ".join(b.box for b in r.boxes if not b.passes)
    return (
        f"<strong>Start: {verdict}</strong> on {esc(refused)}: needs {needs} a rank against {available} MemAvailable{after}, "
        f"short by {margin} on the tightest box.{notes}"
    )


def start_needs(r: report.StartReport, fig: Figures) -> str:
    """The needs formula term by term with each term's source, then every box against it."""
    if r.outside_calibration:
        return (
            '<section class="calc-section"><h3>Needs against MemAvailable</h3>'
            f'<p class="calc-unknown-note">The gate does not know: {esc(r.outside_calibration)}. '
            "Inside the calibration the prefill-budget and seat terms are zero; outside it each needs a per-model constant in the catalog.</p></section>"
        )
    rows = [(esc(t.name), fig(f"term_{_slug(t.name)}", fmt(t.bytes, "GiB")), esc(t.source)) for t in r.terms]
    total = ("needs", fig("needs", fmt(report.needs_as_printed(r.terms), "GiB")), "the sum of the terms as printed, on every box")
    terms = table(
        ("Term", "GiB a rank", "Source"), rows, "The start gate: needs = weights + drafter + KV pin + overhead + prefill term + seat term + headroom", total
    )
    box_rows = []
    for i, b in enumerate(r.boxes, 1):
        margin = fig(f"box{i}_margin", fmt(abs(report.margin_as_printed(b.available_bytes, r.terms, b.head_extra_bytes)), "GiB"))
        box_rows.append(
            (
                esc(b.box) + (f" (less {fig(f'box{i}_head_extra', fmt(b.head_extra_bytes, 'GiB'))} for the head's processes)" if b.head_extra_bytes else ""),
                fig(f"box{i}_available", fmt(b.available_bytes, "GiB")),
                badge(b.passes) + fig(f"box{i}_verdict", "passes" if b.passes else "refused").replace('class="fig"', 'class="fig calc-sr"'),
                f"{margin} {'to spare' if b.passes else 'short'}",
            )
        )
    boxes = table(("Box", "MemAvailable", "Start", "By"), box_rows, "Start if needs &le; MemAvailable on every box")
    drawn = figure_html(charts.needs_vs_boxes(r.terms, r.needs_bytes or 0, [(b.box, b.available_bytes) for b in r.boxes]))
    return f'<section class="calc-section"><h3>Needs against MemAvailable</h3>{drawn}{terms}{boxes}</section>'


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def pin_text(value: int | None) -> str:
    if value is None:
        return "unknown"
    if value < 0:
        return f"none: short by {fmt(-value, 'GiB')} at a zero pin"
    return fmt(value, "e9", 2, down=True)


def start_largest(r: report.StartReport, fig: Figures) -> str:
    largest = r.largest_pin_bytes
    rows = []
    for key, label, value in (("without_drafter", "Without the drafter", largest.without_drafter), ("with_drafter", "With the drafter", largest.with_drafter)):
        if key == "with_drafter" and value is None and not r.outside_calibration:
            rows.append((label, "no drafter in the catalog for this model"))
            continue
        name = "largest_" + key.split("_")[0]
        shown = fig(name, pin_text(value))
        if value is not None and value >= 0:
            shown += " (" + fig(name + "_gib", fmt(value, "GiB", 2, down=True)) + ")"
        rows.append((label, shown))
    return (
        '<section class="calc-section"><h3>Largest pin that passes</h3>'
        "<p>The rest of the request unchanged, against the tightest box; rounded down.</p>" + dl(rows) + "</section>"
    )


def start_pool(r: report.StartReport, fig: Figures) -> str:
    pool = r.kv
    i = r.inputs
    if pool is None:
        return '<section class="calc-section"><h3>The KV pool</h3><p>No measured bytes per token for this model in the catalog.</p></section>'
    logged = "logged by vLLM at this pin" if pool.tokens_logged else "the pin over the bytes per token"
    max_len = fig("kv_max_len", fmt(i.max_model_len, "tokens"))
    one = pool.holds_one_context
    rows = [
        ("Bytes per token per rank", f"{fig('kv_bpt', fmt(pool.bytes_per_token, 'count'))} B ({esc(r.kv_source)})"),
        ("Tokens in the pool", f"{fig('kv_tokens', fmt(pool.tokens, 'tokens'))} ({logged})"),
        (f"Full contexts of {max_len}", fig("kv_contexts", fmt(pool.full_contexts, "count", 0, down=True)) + " at once"),
        (
            "Maximum concurrency, rounded down (vLLM's startup line rounds it to two decimals)",
            fig("kv_concurrency", fmt(pool.full_contexts, "x", down=True)),
        ),
        (
            "One full context fits",
            fig("kv_one_context", "yes" if one else "no")
            + f"; a pin of {fig('kv_one_context_pin', pin_up(pool.one_context_pin_bytes))} holds one and the block of "
            + f"{fig('kv_null_block', fmt(pool.block_size, 'tokens'))} vLLM holds back from 0.29.0 ({esc(pool.block_source)})"
            + ("" if one else " (below one request at max_model_len and the block vLLM 0.29.0 and later hold back: vLLM does not start)"),
        ),
    ]
    if pool.seats is not None:
        seats = fmt(i.seats, "count")
        rows.append(
            (
                f"{seats} seats &times; {fmt(i.typical_context or 0, 'tokens')}",
                f"{fig('kv_tokens_needed', fmt(pool.seats.tokens_needed, 'tokens'))}: "
                + fig("kv_seats_fit", "fit" if pool.seats.seats_fit else "do not fit")
                + f"; a pin of at least {fig('kv_seats_pin', pin_up(pool.seats.pin_for_seats_bytes))} holds them, more by each seat's fixed part",
            )
        )
    else:
        rows.append(("Seats &times; typical context", "Type a typical context per seat to size the pool for the seats."))
    return '<section class="calc-section"><h3>The KV pool</h3>' + dl(rows) + "</section>"


def start_fraction(r: report.StartReport, fig: Figures) -> str:
    f = r.fraction
    edge_left = f.free_bytes - fraction.requested(f.total_bytes, f.edge)
    how = (
        "typed"
        if f.typed
        else f"the largest two-decimal fraction that leaves the {fmt(r.headroom_bytes, 'GiB', 0)} start headroom free; "
        f"the edge, {fmt(f.edge, 'fraction')}, would leave {fmt(edge_left, 'GiB')}"
    )
    chosen = fig("fraction", report.fraction_text(f.fraction))
    requested = fig("fraction_requested", fmt(f.requested_bytes, "GiB")) if f.requested_bytes is not None else "nothing"
    return (
        '<section class="calc-section"><h3>vLLM&rsquo;s fraction check</h3>'
        "<p>vLLM starts only if ceil(gpu_memory_utilization &times; total) &le; free memory, even with a pinned pool; "
        "on unified memory the total is the box&rsquo;s and free is MemAvailable.</p>"
        + dl(
            [
                ("gpu_memory_utilization", f"{chosen} ({how})"),
                (
                    "Asks for",
                    f"{requested} of {fig('fraction_total', fmt(f.total_bytes, 'GiB'))}, against {fig('fraction_free', fmt(f.free_bytes, 'GiB'))} free on the tightest box",
                ),
                (
                    "Check",
                    (
                        badge(f.passes) + fig("fraction_verdict", "passes" if f.passes else "refused").replace('class="fig"', 'class="fig calc-sr"')
                        if f.reached
                        else '<span class="calc-badge calc-unknown">not reached</span> '
                        + fig("fraction_verdict", "not reached: the gate refuses the start first")
                    ),
                ),
                ("The fraction to pass it", "at most " + fig("fraction_ceiling", fmt(f.ceiling, "fraction", 4))),
            ]
        )
        + "</section>"
    )


def start_flags(r: report.StartReport, fig: Figures) -> str:
    """The flags to launch with: the request's when it passes, the suggested fix's when it is
    refused (labelled so), never a refused request's as if it would start."""
    if r.passes is False and not r.flags_are_the_fix:
        return '<section class="calc-section"><h3>vLLM flags</h3><p>None: no pin passes with the rest of the request unchanged.</p></section>'
    text = " \\\n".join(r.flags)
    fig("flags", text)
    if r.flags_are_the_fix:
        head, note, button = (
            "vLLM flags of the suggested fix",
            "<p>Not the refused request: the same request at the largest pin that passes with the reading&rsquo;s precision to spare"
            + (", the drafter off" if r.inputs.drafter and r.fix is not None and not r.fix.drafter else "")
            + ".</p>",
            "Copy the suggested fix&rsquo;s flags",
        )
    else:
        head, note, button = "vLLM flags", "", "Copy the flags"
    return (
        f'<section class="calc-section"><h3>{head}</h3>{note}'
        f'<pre class="calc-flags" id="start-flags"><code data-fig="flags">{esc(text)}</code></pre>'
        f'<button type="button" class="md-button calc-copy" data-clipboard-target="#start-flags &gt; code">{button}</button></section>'
    )


def start_changes(r: report.StartReport, fig: Figures) -> str:
    head = '<section class="calc-section"><h3>What to change</h3>'
    if r.outside_calibration:
        return head + _calibration_note() + "</section>"
    if r.passes:
        tightest = min(report.margin_as_printed(b.available_bytes, r.terms, b.head_extra_bytes) for b in r.boxes)
        if not r.notes:
            return head + f"<p>Nothing: the start fits with {fig('spare', fmt(tightest, 'GiB'))} to spare on the tightest box.</p></section>"
        items = "".join(f"<li>{esc(n[0].upper() + n[1:])}.</li>" for n in r.notes)
        return head + f"<p>The gate passes with {fig('spare', fmt(tightest, 'GiB'))} to spare on the tightest box, but:</p><ul>{items}</ul></section>"
    short = -min(r.margins)
    changes = []
    for n, t in enumerate(r.changes, 1):
        alone = "covers the shortfall alone" if t.bytes >= short else "not enough alone"
        changes.append(f"<li>{esc(t.name)}: {fig(f'change_{n}', fmt(t.bytes, 'GiB'))} ({alone}); {_how(t.name, r)}</li>")
    listing = f"<ol>{''.join(changes)}</ol>" if changes else "<p>No term here can move: only more MemAvailable helps.</p>"
    return head + f"<p>Short by {fig('short', fmt(short, 'GiB'))} on the tightest box. The terms you can move, largest first:</p>{listing}</section>"


def _how(term: str, r: report.StartReport) -> str:
    largest = r.largest_pin_bytes
    inputs = r.inputs
    if term == "KV pin":
        return f"lower it to at most {esc(pin_text(largest.with_drafter if inputs.drafter else largest.without_drafter))}"
    if term == "drafter":
        return f"turn it off (the largest pin then is {esc(pin_text(largest.without_drafter))})"
    if term == "prefill-budget term":
        return "lower the prefill budget toward the calibration"
    if term == "seat term":
        return "lower the seats toward the calibration"
    return "change it"


def _calibration_note() -> str:
    return (
        "<p>The gate cannot size this request. Bring the prefill budget and the seats inside the calibration, "
        "or add the missing per-token or per-seat constant to the model&rsquo;s gate row in catalog/models.yaml; "
        "the calculator does not guess a term the catalog cannot size.</p>"
    )


def changed(catalog: Catalog, name: str, raw: Mapping[str, str]) -> JsonObject | None:
    """A new deployment moves every default."""
    if name == "deployment" and str(raw.get("deployment", "")) in gated(catalog):
        return defaults(catalog, str(raw["deployment"])).to_json(NAME)
    return None
