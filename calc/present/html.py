"""The calculator page's registry: each calculator is one module in calc/present/calculators/ with its
NAME, TITLE, fields(catalog), defaults(catalog) and run(catalog, raw), and optionally
changed(catalog, name, raw); this module runs them by name.

The build renders the default result through these functions (hooks/calculator_page.py), and the
browser glue (docs/calculator/main.py) calls the same functions under Pyodide on every edit, so the
page shows the same figures before and after Python loads. Standard library only, no browser
imports.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from calc import jsontext
from calc.catalog.model import Catalog
from calc.jsontext import JsonObject
from calc.present.calculators.form import Defaults, Field, Output, block_html, dom_id, invalid
from calc.units import InputError

# The calculators in page order, each the module (or package) calc/present/calculators/<name>. One is imported
# the first time it is run: a page that wires its forms need not import them all first (in the
# browser, importing every calculator costs more than the rest of getting ready).
CALCULATORS = ("yourstart", "start", "kv", "fit", "plan", "prefetch", "before")
PACKAGE = "calc.present.calculators"
# Each calculator's page, docs/calculator/<page>.md, served at calculator/<page>/.
PAGES = {
    "yourstart": "your-start",
    "start": "start-gate",
    "kv": "kv-pool",
    "fit": "per-request-cost",
    "plan": "several-models",
    "prefetch": "prefetch",
    "before": "before-the-first-start",
}

# The names the tests and the page have always reached through calc.present.html: (calculator, name).
_ALIASES = {
    "PLAN_ROWS": ("plan", "PLAN_ROWS"),
    "TYPED": ("kv", "TYPED"),
    "gate_problem": ("start", "gate_problem"),
    "start_field_names": ("start", "field_names"),
    "start_defaults": ("start", "defaults"),
    "parse_start": ("start", "parse"),
    "kv_readings": ("kv", "kv_readings"),
    "kv_defaults": ("kv", "defaults"),
    "plan_defaults": ("plan", "defaults"),
    "prefetch_defaults": ("prefetch", "defaults"),
    "fit_defaults": ("fit", "defaults"),
    "run_fit": ("fit", "run"),
}

__all__ = [
    "CALCULATORS",
    "PAGES",
    "Output",
    "dom_id",
    *_ALIASES,
    "module",
    "title",
    "fields_of",
    "defaults_of",
    "run",
    "changed",
    "calculator_html",
    "run_json",
]


def __getattr__(name: str) -> Any:
    if name in _ALIASES:
        calculator, attribute = _ALIASES[name]
        return getattr(module(calculator), attribute)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def module(calculator: str) -> ModuleType:
    """A calculator's module, imported on first use."""
    if calculator not in CALCULATORS:
        raise ValueError(f"calculator: found {calculator!r}, expected one of {', '.join(CALCULATORS)}")
    return importlib.import_module(f"{PACKAGE}.{calculator}")


def title(calculator: str) -> str:
    text: str = module(calculator).TITLE
    return text


def fields_of(catalog: Catalog, calculator: str) -> list[Field]:
    fields: list[Field] = module(calculator).fields(catalog)
    return fields


def defaults_of(catalog: Catalog, calculator: str) -> Defaults:
    defaults: Defaults = module(calculator).defaults(catalog)
    return defaults


def run(catalog: Catalog, calculator: str, raw: Mapping[str, str]) -> Output:
    """A calculator's answer; a value its fields let through that the figures then refuse (an
    InputError from calc) is the inputs' problem, said as such: never an exception on the page."""
    try:
        output: Output = module(calculator).run(catalog, raw)
    except InputError as error:
        names = tuple(f.name for f in fields_of(catalog, calculator))
        return invalid(calculator, {"inputs": str(error)}, {"inputs": "The inputs together"}, names)
    return output


def changed(catalog: Catalog, calculator: str, name: str, raw: Mapping[str, str]) -> JsonObject | None:
    """Field updates after an edit that moves other defaults: a new deployment, box or reading."""
    hook = getattr(module(calculator), "changed", None) if calculator in CALCULATORS else None
    return hook(catalog, name, raw) if hook else None


def calculator_html(catalog: Catalog, calculator: str) -> str:
    """One calculator at its defaults, as the build renders it before Python loads."""
    d = defaults_of(catalog, calculator)
    return block_html(calculator, title(calculator), fields_of(catalog, calculator), d, run(catalog, calculator, d.values))


def run_json(catalog: Catalog, text: str) -> str:
    """The page's single entry for machines: {"calculator": ..., "inputs": {...}} in, Output as JSON out."""
    try:
        request = jsontext.loads(text)
        calculator = request.get("calculator", "start") if isinstance(request, dict) else None
        inputs = request.get("inputs", {}) if isinstance(request, dict) else None
        if calculator not in CALCULATORS or not isinstance(inputs, dict):
            raise ValueError('expected {"calculator": "start", "inputs": {...}}')
        return json.dumps(run(catalog, calculator, {str(k): str(v) for k, v in inputs.items()}).to_json())
    except (ValueError, TypeError) as error:
        return json.dumps({"calculator": None, "valid": False, "errors": {"request": str(error)}, "fields": [], "sections": {}, "figures": {}})
