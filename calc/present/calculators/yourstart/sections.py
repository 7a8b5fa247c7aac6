"""The result's sections: what one rank holds, the start gate, tokens and full contexts, vLLM's own
checks and the launch command."""

from __future__ import annotations

from typing import Any

from calc.answers import yourstart
from calc.answers.report import fraction_text
from calc.answers.yourstart import YourStart
from calc.engine import gate
from calc.logs.figures import LogReading
from calc.present import charts
from calc.present.calculators.form import Figures, badge, dl, esc, pin_up, table
from calc.present.calculators.yourstart.fields import NAME
from calc.present.calculators.yourstart.log import quoted_line
from calc.present.calculators.yourstart.verdict import FAILURES, needs_printed, size_html, source_html
from calc.present.chart import figure_html
from calc.units import fmt, shown


def holds_section(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    rows = []
    if y.weights is not None:
        rows.append(("Weights", size_html(fig, "weights", int(y.weights.value)), source_html(y.weights.source)))
    else:
        rows.append(("Weights", "unknown", "paste a log with its &ldquo;Model loading took&rdquo; line, or type them"))
    if y.pool is not None:
        rows.append(("KV pool of the measured start", size_html(fig, "pool", int(y.pool.value)), source_html(y.pool.source)))
    h, over = a.held, a.overhead
    if h.value is not None:
        rows.append(("Held: MemAvailable before - serving", size_html(fig, "held", h.value), source_html(*h.sources)))
    if over.value is not None:
        rows.append((f"Overhead ({esc(over.how)})", size_html(fig, "overhead", over.value), source_html(*over.sources)))
    else:
        rows.append(("Overhead", fig("overhead", "unknown"), esc(over.how) + "; or type it"))
    return (
        '<section class="calc-section"><h3>What one rank holds</h3>'
        + table(("Part", "Bytes a rank", "From"), rows, "Weights, KV pool and the overhead beyond them")
        + "</section>"
    )


def _not_reached(name: str, fig: Figures) -> str:
    return '<span class="calc-badge calc-unknown">not reached</span> ' + fig(name, "not reached: an earlier check refuses the start first")


def _check(name: str, passes: bool, fig: Figures) -> str:
    return badge(passes) + fig(name, "passes" if passes else "refused").replace('class="fig"', 'class="fig calc-sr"')


def gate_section(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    g = a.gate
    head = '<section class="calc-section"><h3>The start gate</h3>'
    if g.needs.value is None:
        return head + f'<p class="calc-unknown-note">The gate cannot size this start: it {esc(g.needs.how)}.</p></section>'
    over = a.overhead
    over_bytes = over.value
    assert over_bytes is not None, "needs are sized only with an overhead"
    pin = int(y.pin.value) if y.pin is not None else 0
    rows = [
        ("weights", size_html(fig, "term_weights", int(yourstart.known(y.weights).number)), source_html(yourstart.known(y.weights).source)),
        ("KV pin", size_html(fig, "term_pin", pin), source_html(y.pin.source) if y.pin is not None else "no pin: the log gives none; type one to check it"),
        ("overhead", size_html(fig, "term_overhead", over_bytes), source_html(*over.sources)),
        ("start headroom", size_html(fig, "term_headroom", int(y.headroom.value)), source_html(y.headroom.source)),
    ]
    needs = needs_printed(y, a, pin)
    total = ("needs", fig("needs", fmt(needs, "GiB")), "the sum of the terms as printed; the check runs on exact bytes")
    terms = table(("Term", "A rank", "From"), rows, "needs = weights + KV pin + overhead + headroom", total)
    if g.available is None:
        return head + terms + "<p>Paste or type MemAvailable before the start to see whether it passes and the largest pin.</p></section>"
    largest = g.largest_pin
    assert largest is not None, "needs and MemAvailable give the largest pin"
    available = ("MemAvailable before the start", size_html(fig, "available", g.available) + " " + source_html(yourstart.known(y.before).source))
    margin = shown(g.available, "GiB", 2) - needs
    items = [available]
    if g.passes is not None:
        items.append(("Gate", f"{_check('gate_verdict', g.passes, fig)} by {fig('margin', fmt(abs(margin), 'GiB'))} {'to spare' if g.passes else 'short'}"))
    items.append(
        (
            "Largest pin that passes",
            fig("largest_pin", fmt(largest, "e9", 2, down=True)) + f" ({fig('largest_pin_gib', fmt(largest, 'GiB', 2, down=True))}), rounded down"
            if largest > 0
            else fig("largest_pin", f"none: short by {fmt(-largest, 'GiB', up=True)} at a zero pin"),
        )
    )
    parts = [("weights", int(yourstart.known(y.weights).number)), ("KV pin", pin), ("overhead", over_bytes), ("start headroom", int(y.headroom.number))]
    drawn = figure_html(
        charts.needs_vs_boxes(
            [gate.Term(name, value, "", True) for name, value in parts],  # type: ignore[arg-type]  # a typed overhead may be a fraction of a byte, drawn as it is
            g.needs.value,
            [("your box", g.available)],
            "What your start needs",
            "yourstart-needs",
        )
    )
    return head + drawn + terms + dl(items) + "</section>"


def grid_section(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    head = '<section class="calc-section"><h3>Tokens and full contexts</h3>'
    bpt = a.bytes_per_token_printed
    if not bpt:
        return head + "<p>No bytes per token: paste a log with its KV cache lines, or type it.</p></section>"
    if not a.grid:
        return head + "<p>No pin to size: type one, or give the readings that size the largest that passes.</p></section>"
    src = source_html(yourstart.known(y.bytes_per_token).source)
    lengths = a.lengths
    pin = int(y.pin.value) if y.pin is not None else None
    rows = []
    for i, cell in enumerate(a.grid):
        p = cell.pin
        name = "the pin" if p == pin else "largest that passes" if p == a.gate.largest_pin else "typed"
        logged = f" (logged by {'SGLang' if y.engine == 'sglang' else 'vLLM'})" if cell.logged else ""
        row = [f"{fig(f'grid_pin_{i}', fmt(p, 'B'))} ({esc(name)})", fig(f"grid_tokens_{i}", fmt(cell.tokens, "tokens")) + logged]
        row += [fig(f"grid_contexts_{i}_{n}", fmt(cell.contexts[n], "count")) for n in lengths]
        rows.append(tuple(row))
    head_row = ("KV pin", "Tokens", *(f"Full {fmt(n, 'count')}-token contexts" for n in lengths))
    note = (
        f"<p>Tokens = the pin / {fig('bpt', fmt(bpt, 'B a token', 0 if bpt.denominator == 1 else 2))} a token a rank, rounded down"
        + (" (the count vLLM logged at its own pool)" if any(c.logged for c in a.grid) else "")
        + "; full contexts = tokens / the length, rounded down "
        + ("(at the log&rsquo;s own pool and max_model_len, the maximum concurrency the engine printed, rounded down) " if y.concurrency is not None else "")
        + f"(bytes a token: {src}). Where part of a request's footprint is fixed "
        "(sliding-window or hybrid layers, a drafter), pool over tokens moves with max_model_len: "
        '<a href="../kv-pool/#why-pool-over-tokens-is-not-a-per-token-cost">why</a>.</p>'
    )
    if not lengths:
        note += "<p>Type max_model_len, or paste a log that states it, for full contexts.</p>"
    return head + table(head_row, rows, "Tokens a pin holds, and how many full contexts of each length at once") + note + "</section>"


def checks_section(y: YourStart, a: yourstart.Answer, reading: LogReading | None, fig: Figures) -> str:
    out = ['<section class="calc-section"><h3>vLLM&rsquo;s own checks</h3>']
    if y.engine == "sglang":
        out.append(
            "<p>This is an SGLang log: SGLang sizes its pool by mem_fraction_static after the weights load and runs neither of vLLM&rsquo;s checks "
            "(gpu_memory_utilization against free memory, one request of max_model_len in the pool), so neither is worked here.</p>"
        )
    f = a.fraction
    if f is None and y.engine != "sglang":
        out.append("<p>The fraction check needs the box total and the free memory before the start (MemAvailable on unified memory).</p>")
    elif f is not None:
        how = "" if f.typed else f"the largest two decimals whose ask leaves the {fmt(int(y.headroom.value), 'GiB', 0)} start headroom free"
        asks = fig("fraction_requested", fmt(f.requested, "GiB")) if f.requested is not None else "nothing"
        out.append(
            "<p>The fraction check: vLLM starts only if ceil(gpu_memory_utilization &times; total) &le; free memory, even with a pin.</p>"
            + dl(
                [
                    (
                        "gpu_memory_utilization",
                        f"{fig('fraction', fraction_text(f.fraction))} ({source_html(yourstart.known(y.gpu_memory_utilization).source) if f.typed else how})",
                    ),
                    ("Asks for", f"{asks} of {fig('fraction_total', fmt(f.total, 'GiB'))} ({source_html(yourstart.known(y.total).source)})"),
                    ("Against free", fig("fraction_free", fmt(f.free, "GiB")) + f" ({source_html(yourstart.known(y.before).source)})"),
                    ("Check", _check("fraction_verdict", f.passes, fig) if f.reached else _not_reached("fraction_verdict", fig)),
                    (
                        "The fraction to pass it",
                        "at most "
                        + fig("fraction_ceiling", fmt(f.ceiling, "fraction", 4, down=True))
                        + (" (the low end of free over the high end of total, as the log rounded them)" if f.rounded else ""),
                    ),
                ]
            )
        )
    one = a.one_request
    if one is None and y.engine != "sglang":
        out.append("<p>The one-request check needs a pin, bytes per token and max_model_len.</p>")
    elif one is not None:
        out.append(
            "<p>The one-request check: the pool must hold one request of max_model_len, or vLLM stops and estimates the longest it could serve.</p>"
            + dl(
                [
                    (
                        f"One {fig('one_request_len', fmt(one.max_model_len, 'tokens'))} request",
                        f"needs a pin of at least {fig('one_request_pin', pin_up(one.pin_needed))} "
                        + (
                            f"(vLLM&rsquo;s own per-request maximum: {source_html(one.floor_source)}"
                            if one.floor_source
                            else "(max_model_len &times; the bytes a token printed above, rounded up; vLLM&rsquo;s own floor is its per-request maximum, larger by any fixed part"
                        )
                        + (f"; and {esc(one.block_how)}, {fig('one_request_block', fmt(one.block_bytes, 'B'))})" if one.block_bytes else ")"),
                    ),
                    ("Check", _check("one_request_verdict", one.passes, fig) if one.reached else _not_reached("one_request_verdict", fig)),
                    (
                        "Tokens the pin holds",
                        fig("one_request_longest", fmt(one.estimated_max_model_len, "tokens"))
                        + " at the bytes a token printed above (vLLM&rsquo;s own estimate of the longest context differs for hybrid and sliding-window models)",
                    ),
                ]
            )
        )
    error = getattr(reading, "error", None) if reading is not None else None
    if error is not None and error.value:
        what = FAILURES.get(str(error.value), str(error.value))
        estimate = getattr(reading, "estimated_max_model_len", None)
        tail = f"; vLLM estimated a max_model_len of {fig('log_estimate', fmt(estimate.value, 'count'))}" if estimate is not None and estimate.value else ""
        out.append(f"<p><strong>Your start failed:</strong> {esc(what)} ({source_html(quoted_line('log', error.line_no, error.line_text))}){tail}.</p>")
    return "".join(out) + "</section>"


def command_section(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    """The launch line for the log's engine: the request's when nothing refuses it, the suggested
    fix's (labelled, each change said) when something does, none when nothing here starts it."""
    sglang = y.engine == "sglang"
    head = "SGLang launch command" if sglang else "vllm serve"
    if a.passes is False and a.fix is None:
        why = (
            "None offered: what is given does not size a fix (it needs the start&rsquo;s total, weights and overhead); pick the box, type them, or paste the readings."
            if a.refused_by == "log"
            else "None: no pin and no fraction here lets this request start; only more free memory, a shorter max_model_len or a smaller model does."
        )
        return f'<section class="calc-section"><h3>{head}</h3><p>{why}</p></section>'
    text = a.command
    fig("command", text)
    note, button = "", "Copy the command"
    if a.fix is not None:
        head += " of the suggested fix"
        changes = "".join(f"<li>{esc(_change(k, v))}: {esc(why)}</li>" for k, v, why in a.fix.changes)
        note = f"<p>Not the refused request: the same request with</p><ul>{changes}</ul>"
        button = "Copy the suggested fix&rsquo;s command"
    if y.model is None:
        note += "<p>MODEL stands for your model: type it above, or paste a log that names it.</p>"
    if a.command_note:
        note += f"<p><strong>Note:</strong> {esc(a.command_note)}.</p>"
    if sglang:
        note += (
            "<p>SGLang has no byte pin: mem_fraction_static (the log&rsquo;s, when it printed one) sizes its pool, and "
            "--max-total-tokens caps the pool at the tokens the pin holds at this log&rsquo;s bytes a token "
            "(flags of python/sglang/srt/server_args.py).</p>"
        )
    return (
        f'<section class="calc-section"><h3>{head}</h3>{note}'
        f'<pre class="calc-flags" id="{NAME}-command"><code data-fig="command">{esc(text)}</code></pre>'
        f'<button type="button" class="md-button calc-copy" data-clipboard-target="#{NAME}-command &gt; code">{button}</button></section>'
    )


def _change(key: str, value: Any) -> str:
    if key == "pin":
        return f"--kv-cache-memory-bytes {value} ({fmt(value, 'e9')})"
    if key == "max_model_len":
        return f"--max-model-len {value}"
    return f"--gpu-memory-utilization {fraction_text(value)}"
