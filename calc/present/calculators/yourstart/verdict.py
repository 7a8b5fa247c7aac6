"""Your start's verdict: one sentence over every check, its figures as the tables below print them."""

from __future__ import annotations

from fractions import Fraction

from calc.answers import yourstart
from calc.answers.report import fraction_text
from calc.answers.yourstart import YourStart
from calc.present.calculators.form import Figures, esc
from calc.units import fmt, printed_sum, shown


def source_html(*sources: str) -> str:
    return "; ".join(f'<span class="calc-from">{esc(s)}</span>' for s in sources if s)


def size_html(fig: Figures, name: str, value: int | Fraction) -> str:
    return fig(name, fmt(value, "GiB")) + f" ({fig(name + '_b', fmt(value, 'B'))})"


FAILURES = {
    "free_memory": "the free-memory check refused it",
    "no_kv_memory": "no memory was left for the KV cache",
    "max_model_len": "the pool could not hold one request of max_model_len",
}


def needs_printed(y: YourStart, a: yourstart.Answer, pin: int) -> Fraction:
    """The gate's needs as its table prints it: the sum of the printed terms."""
    over = a.overhead.value
    assert over is not None, "the gate is sized only with an overhead"
    terms: list[int | float | Fraction] = [int(yourstart.known(y.weights).number), pin, over, int(y.headroom.number)]
    return printed_sum(terms, "GiB")


def verdict_html(y: YourStart, a: yourstart.Answer, fig: Figures) -> str:
    """One sentence over every check: refused by the first that refuses, passes only when every
    check that can be sized passes; the fix offered and every note said."""
    g = a.gate
    notes = "".join(f" Note: {esc(n)}." for n in a.notes)
    fix = " The command below is the suggested fix, not the refused request." if a.fix else (" No fix is offered: see below." if a.passes is False else "")
    if a.passes is None:
        need = g.needs.how if g.needs.value is None else ("needs a pin" if not g.sized else "needs MemAvailable before the start")
        if g.largest_pin is not None and not g.sized:
            need = "has no pin to check; the largest that passes is below"
        return f"<strong>Start: {fig('verdict', 'not sized')}</strong>: the gate {esc(need)}.{notes}"
    before = g.available
    assert before is not None or a.refused_by not in (None, "gate"), "a start that passes, or the gate refuses, was sized against MemAvailable"
    if a.passes:
        pin = int(yourstart.known(y.pin).number)
        available = shown(before or 0, "GiB", 2)
        checked = [name for name, c in (("free-memory", a.fraction), ("one-request", a.one_request)) if c is not None]
        also = (
            f"; vLLM's {' and '.join(checked)} check{'s pass' if len(checked) > 1 else ' passes'} too"
            if checked
            else "; vLLM's own checks are not sized (see below)"
        )
        return (
            f"<strong>Start: {fig('verdict', 'passes')}</strong>: needs {fig('needs_short', fmt(needs_printed(y, a, pin), 'GiB'))} a rank against "
            f"{fig('available_short', fmt(available, 'GiB'))}, {fig('margin_short', fmt(available - needs_printed(y, a, pin), 'GiB'))} to spare{also}.{notes}"
        )
    by = a.refused_by
    if by == "gate":
        margin = shown(before or 0, "GiB", 2) - needs_printed(y, a, int(yourstart.known(y.pin).number))
        why = f"the gate: needs {fig('needs_short', fmt(needs_printed(y, a, int(yourstart.known(y.pin).number)), 'GiB', 2))} a rank against {fig('available_short', fmt(shown(before or 0, 'GiB', 2), 'GiB', 2))}, short by {fig('margin_short', fmt(-margin, 'GiB', 2))}"
    elif by == "fraction":
        f = a.fraction
        assert f is not None, "the free-memory check refused it, so it was sized"
        why = f"vLLM's free-memory check: gpu_memory_utilization {fig('verdict_fraction', fraction_text(f.fraction))} asks for more than the free memory; at most {fmt(f.ceiling, 'fraction', 4)} passes"
    elif by == "log":
        failure = yourstart.known(y.failure)
        why = f"{'SGLang' if y.engine == 'sglang' else 'vLLM'}, in your log: {esc(FAILURES.get(str(failure.value), str(failure.value)))} ({source_html(failure.source)})"
    else:
        o = a.one_request
        assert o is not None, "the one-request check refused it, so it was sized"
        why = f"vLLM's one-request check: the pin holds {fig('verdict_longest', fmt(o.estimated_max_model_len, 'tokens'))}, not one request of {fmt(o.max_model_len, 'tokens')}"
    return f"<strong>Start: {fig('verdict', 'refused')}</strong> by {why}.{fix}{notes}"
