"""What your log says: each figure with its line, and the log's own answer (the verdict, the phase
that failed, the least changes and the whole command)."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

from calc.logs.figures import PAGE_FIGURES, LogReading
from calc.present.calculators.form import Figures, dl, esc, table
from calc.present.calculators.yourstart.fields import LINE_TEXT, NAME
from calc.units import fmt

if TYPE_CHECKING:  # imported where it runs: the log's answer is read only when a log is pasted
    from calc.answers.logverdict import LogAnswer


LOG_FIGURES = PAGE_FIGURES  # the reading's figures, label and unit, as calc/logs/figures.py declares them


def log_section(reading: LogReading | None, fig: Figures) -> str:
    if reading is None:
        return ""
    rows = []
    for key, label, unit in LOG_FIGURES:
        found = getattr(reading, key, None)
        if found is None or found.value is None:
            continue
        value = found.value
        if isinstance(value, dict):
            text = ", ".join(f"{k} {v}" for k, v in value.items() if v is not None)
        elif unit == "B":
            text = fmt(value, "B a token", 0 if Fraction(value).denominator == 1 else 2)  # as the grid below divides by it
        elif unit and not isinstance(value, (str, bool)):
            text = fmt(value, unit, 2 if unit in ("GiB", "fraction", "x") else 0)
        else:
            text = str(value)
        if hasattr(found, "line_text"):
            where = fmt(found.line_no, "count")
            quoted = f'<div class="calc-line" role="region" tabindex="0" aria-label="Log line {where}"><code>{esc(" ".join(str(found.line_text).split())[:LINE_TEXT])}</code></div>'
        else:
            where, quoted = ", ".join(fmt(n, "count") for n in found.lines), esc(found.how)
        rows.append((esc(label), fig(f"log_{key}", text), where, quoted))
    missing = list(getattr(reading, "missing", []) or [])
    notes = list(getattr(reading, "notes", []) or [])
    extra = ""
    if missing:
        extra += f"<p>The log does not say: {esc(', '.join(missing))}.</p>"
    if notes:
        extra += "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>"
    return f'<section class="calc-section"><h3>What your log says</h3>{table(("Figure", "Read", "Line", "Text"), rows, "Each figure with the log line it was read from")}{extra}</section>'


VERDICT_WORDS = {
    "started": "it started",
    "refused": "the engine's own check refused it",
    "killed": "it was stopped by an error before it served",
    "unknown": "the log cannot tell",
}


def log_answer_section(answer: LogAnswer | None, fig: Figures) -> str:
    """The log's own answer (calc.answers.logverdict, as `python -m calc ingest` gives it): the verdict, the
    phase that failed and the engine source that prints it, the changes ranked, each checked
    against the log's figures, and the whole command with the changed flags marked."""
    if answer is None:
        return ""
    out = ['<section class="calc-section"><h3>What your log says happened</h3>']
    items = [("Verdict", f"{fig('log_verdict', answer.verdict)}: {esc(VERDICT_WORDS[answer.verdict])} ({esc(answer.verdict_how)})")]
    phase = answer.failure_phase
    if phase:
        items.append(("Failed in", f"{fig('log_phase', phase['phase'])}: {esc(phase['what'])}, line {fmt(phase['line'], 'count')}"))
        items.append(("Printed by", f"<code>{esc(phase['engine_source'])}</code>"))
    out.append(dl(items))
    if answer.fixes:
        rows = []
        for i, f in enumerate(answer.fixes):
            said = {True: "passes", False: "not enough alone", None: "not checked"}[f.passes]
            flag = f.flag + (f" {f.value}" if f.value is not None else "")
            rows.append((str(i + 1), f"<code>{esc(flag)}</code>", fig(f"log_fix_{i}", said), esc(f.why), esc(f.check)))
        out.append(
            table(
                ("Rank", "Change", "Check", "Why", "Against the log's figures"), rows, "The least changes, ranked, each checked against the log's own figures"
            )
        )
    if answer.command:
        fig("log_command", answer.command)
        changed = "".join(
            f"<li><code>{esc(c['flag'] + (' ' + c['value'] if c['value'] is not None else ''))}</code> "
            + (f"(was {esc(str(c['was']))})" if c.get("was") is not None else "(added)")
            + f": {esc(c['why'])}</li>"
            for c in answer.command_changes
        )
        intro = "<p>Every flag the log proves" + (f", with the change marked:</p><ul>{changed}</ul>" if changed else ".</p>")
        out.append(
            intro + f'<pre class="calc-flags" id="{NAME}-log-command"><code data-fig="log_command">{esc(answer.command)}</code></pre>'
            f'<button type="button" class="md-button calc-copy" data-clipboard-target="#{NAME}-log-command &gt; code">Copy the log&rsquo;s command</button>'
        )
    return "".join(out) + "</section>"
