"""Your start: paste what your engine printed (the startup log, one rank's or all of them), pick
your box or type its total, paste `free -b` / `free -m` / /proc/meminfo (or type MemAvailable)
before the start and once it serves; out come what one rank holds, the gate and its largest pin,
tokens and full contexts at other pins and lengths, vLLM's own checks and the `vllm serve` line.

A typed field wins over the log, the log over nothing; the catalog's deployments are presets that
fill the typed fields. Every figure says where it came from. The figures are calc.answers.yourstart's.

The parts, each a module of this package: `fields` (names, labels, limits), `preset` (the
catalog's deployments as presets, the box a log names), `log` (a pasted log read and answered),
`read` (the fields read into a YourStart), `verdict`, `log_sections` and `sections` (the result).
"""

from __future__ import annotations

from collections.abc import Mapping

from calc.answers import yourstart
from calc.catalog.model import Catalog
from calc.present.calculators.form import Figures, Output, invalid
from calc.present.calculators.yourstart.fields import LABELS, NAME, PASTE_CHARACTERS, PASTE_LINES, TITLE, fields
from calc.present.calculators.yourstart.log_sections import LOG_FIGURES, log_answer_section, log_section
from calc.present.calculators.yourstart.preset import box_mismatch, boxes_of_total, changed, defaults, preset
from calc.present.calculators.yourstart.read import parse
from calc.present.calculators.yourstart.sections import checks_section, command_section, gate_section, grid_section, holds_section
from calc.present.calculators.yourstart.verdict import verdict_html

__all__ = [
    "LABELS", "LOG_FIGURES", "NAME", "PASTE_CHARACTERS", "PASTE_LINES", "TITLE", "box_mismatch", "boxes_of_total", "changed", "defaults",
    "fields", "parse", "preset", "run",
]  # fmt: skip


def run(catalog: Catalog, raw: Mapping[str, str]) -> Output:
    names = tuple(LABELS)
    y, said, errors = parse(catalog, raw)
    if y is None:
        return invalid(NAME, errors, LABELS, names)
    a = yourstart.answer(y)
    fig = Figures()
    sections = [
        log_section(said.get("reading"), fig),
        holds_section(y, a, fig),
        gate_section(y, a, fig),
        grid_section(y, a, fig),
        checks_section(y, a, said.get("reading"), fig),
        command_section(y, a, fig),
        log_answer_section(said.get("answer"), fig),
    ]
    return Output(NAME, True, {}, {f"{NAME}-verdict": verdict_html(y, a, fig), f"{NAME}-result": "".join(s for s in sections if s)}, fig.shown, names)
