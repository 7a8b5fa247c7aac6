"""Macros of the several-models page: residents' weights against a box, the parameters rule and
engines started one after another, each with its fraction."""

from __future__ import annotations

from fractions import Fraction

from calc import units
from calc.answers import report
from calc.catalog.entries import Plan
from calc.engine import budget, fraction
from hooks.figures import text
from hooks.pagemacros.build import Build, table
from hooks.pagemacros.every_page import fig, source_text


def residents(build: Build, plan: Plan) -> list[budget.Resident]:
    return [budget.Resident(build.catalog.models[r["model"]]["name"], build.catalog.models[r["model"]]["weights"].size) for r in plan["residents"]]


def plan_budget(build: Build, plan_id: str = "coder-and-70b") -> budget.Budget:
    plan = build.catalog.plans[plan_id]
    return budget.budget(build.catalog.boxes[plan["box"]]["total_memory"].size, residents(build, plan))


def plan_budget_table(build: Build, plan_id: str = "coder-and-70b") -> str:
    """Weights of each resident model against the box total, and what is left for KV and headroom."""
    plan = build.catalog.plans[plan_id]
    box = build.catalog.boxes[plan["box"]]
    rows = []
    for r in plan["residents"]:
        model = build.catalog.models[r["model"]]
        w = model["weights"]
        rows.append((text(model["name"]), fig(w, "GB", 0), fig(w), text(r.get("role", "")), f"{w.kind}: {source_text(w.source)}"))
    weights: list[int | float | Fraction] = [build.catalog.models[r["model"]]["weights"].size for r in plan["residents"]]
    together = {unit: units.printed_sum(weights, unit, digits) for unit, digits in (("GB", 0), ("GiB", 2))}
    rows.append(("**weights together**", f"**{fig(together['GB'], 'GB', 0)}**", f"**{fig(together['GiB'])}**", "", "the sum"))
    total = box["total_memory"]
    rows.append((f"{text(box['name'])}, total", fig(total, "GB"), fig(total), "", f"{total.kind}: {source_text(total.source)}"))
    left = {unit: units.shown(total.size, unit, 2) - together[unit] for unit in ("GB", "GiB")}
    rows.append(("**left for KV and headroom**", f"**{fig(left['GB'], 'GB')}**", f"**{fig(left['GiB'])}**", "", "total - weights"))
    return table(("Resident", "GB", "GiB", "Role", "Source"), rows)


def weights_rule_table(build: Build) -> str:
    """Parameters x bytes per parameter beside the weights the guide estimates."""
    rows = []
    for model in build.catalog.models.values():
        if not model.get("parameters") or "weights" not in model:
            continue
        rule = budget.weights_from_parameters(model["parameters"], model["bits_per_parameter"])
        rows.append(
            (
                text(model["name"]),
                fig(rule, "GB", 1),
                fig(model["weights"], "GB", 0),
                fig(model["weights"]),
                f"{model['weights'].kind}: {source_text(model['weights'].source)}",
            )
        )
    return table(("Model", "Parameters x bytes each", "Estimate", "GiB", "Source"), rows)


def fraction_plans_table(build: Build) -> str:
    """Engines started one after another, each asking its fraction of the box total."""
    rows = []
    for plan in build.catalog.fraction_plans.values():
        box = build.catalog.boxes[plan["box"]]
        together = " + ".join(fig(f, "fraction", 2) for f in plan["fractions"])
        engines = fraction.plan(box["total_memory"].size, box["idle_available"].size, plan["fractions"])
        for n, (e, free) in enumerate(zip(engines, report.free_as_printed(engines), strict=True), 1):
            rows.append((together, f"engine {n}", fig(e.fraction, "fraction", 2), fig(e.requested), fig(free), "starts" if e.passes else "**refused**"))
    return table(("Plan", "Engine", "Fraction", "Asks", "Free before it", "vLLM"), rows)


MACROS = (
    plan_budget,
    plan_budget_table,
    weights_rule_table,
    fraction_plans_table,
)
