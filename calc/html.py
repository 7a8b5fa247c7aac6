"""The calculator page's registry: each calculator is one module in calc/calculators/ with its
NAME, TITLE, fields(catalog), defaults(catalog) and run(catalog, raw), and optionally
changed(catalog, name, raw); this module runs them by name.

The build renders the default result through these functions (hooks/calculator_page.py), and the
browser glue (docs/calculator/main.py) calls the same functions under Pyodide on every edit, so the
page shows the same figures before and after Python loads. Standard library only, no browser
imports.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import ModuleType

from calc.calculators import before, fit, kv, plan, prefetch, start, yourstart
from calc.calculators.form import Defaults, Field, Output, block_html, dom_id
from calc.catalog import Catalog

MODULES: dict[str, ModuleType] = {m.NAME: m for m in (yourstart, start, kv, fit, plan, prefetch, before)}
CALCULATORS = tuple(MODULES)
TITLES = {name: m.TITLE for name, m in MODULES.items()}

# The names the tests and the page have always reached through calc.html.
PLAN_ROWS = plan.PLAN_ROWS
TYPED = kv.TYPED
gate_problem = start.gate_problem
start_field_names = start.field_names
start_defaults = start.defaults
parse_start = start.parse
kv_readings = kv.kv_readings
kv_defaults = kv.defaults
plan_defaults = plan.defaults
prefetch_defaults = prefetch.defaults
fit_defaults = fit.defaults
run_fit = fit.run

__all__ = [
    "CALCULATORS",
    "TITLES",
    "PLAN_ROWS",
    "TYPED",
    "Output",
    "dom_id",
    "gate_problem",
    "start_field_names",
    "start_defaults",
    "parse_start",
    "kv_readings",
    "kv_defaults",
    "plan_defaults",
    "prefetch_defaults",
    "fit_defaults",
    "run_fit",
    "fields_of",
    "defaults_of",
    "run",
    "changed",
    "calculator_html",
    "run_json",
]


def _module(calculator: str) -> ModuleType:
    if calculator not in MODULES:
        raise ValueError(f"calculator: found {calculator!r}, expected one of {', '.join(CALCULATORS)}")
    return MODULES[calculator]


def fields_of(catalog: Catalog, calculator: str) -> list[Field]:
    return _module(calculator).fields(catalog)


def defaults_of(catalog: Catalog, calculator: str) -> Defaults:
    return _module(calculator).defaults(catalog)


def run(catalog: Catalog, calculator: str, raw: Mapping[str, str]) -> Output:
    return _module(calculator).run(catalog, raw)


def changed(catalog: Catalog, calculator: str, name: str, raw: Mapping[str, str]) -> dict | None:
    """Field updates after an edit that moves other defaults: a new deployment, box or reading."""
    hook = getattr(MODULES.get(calculator), "changed", None)
    return hook(catalog, name, raw) if hook else None


def calculator_html(catalog: Catalog, calculator: str) -> str:
    """One calculator at its defaults, as the build renders it before Python loads."""
    d = defaults_of(catalog, calculator)
    return block_html(calculator, TITLES[calculator], fields_of(catalog, calculator), d, run(catalog, calculator, d.values))


def run_json(catalog: Catalog, text: str) -> str:
    """The page's single entry for machines: {"calculator": ..., "inputs": {...}} in, Output as JSON out."""
    try:
        request = json.loads(text)
        calculator = request.get("calculator", "start") if isinstance(request, dict) else None
        inputs = request.get("inputs", {}) if isinstance(request, dict) else None
        if calculator not in MODULES or not isinstance(inputs, dict):
            raise ValueError('expected {"calculator": "start", "inputs": {...}}')
        return json.dumps(run(catalog, calculator, {str(k): str(v) for k, v in inputs.items()}).to_json())
    except (ValueError, TypeError) as error:
        return json.dumps({"calculator": None, "valid": False, "errors": {"request": str(error)}, "fields": [], "sections": {}, "figures": {}})
