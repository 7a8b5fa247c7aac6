"""Macros for a deployment's figures, which most pages quote: the deployment, one of its starts by
generation, its gate row, its refused request, the gate's needs for a pin and the largest pin."""

from __future__ import annotations

from calc.answers import report
from calc.catalog.entries import Deployment, GateRequest, Start
from calc.engine import derive, gate
from calc.engine.gate import Amount
from calc.units import parse_size
from hooks.figures import Value
from hooks.pagemacros.build import SERVING, Build


def deployment(build: Build, deployment_id: str = SERVING) -> Deployment:
    return build.catalog.deployments[deployment_id]


def gen(build: Build, generation: int, deployment_id: str = SERVING) -> Start:
    return derive.start_by_generation(build.catalog.deployments[deployment_id], generation)


def row(build: Build, deployment_id: str = SERVING) -> gate.GateRow:
    return derive.gate_row(build.catalog, deployment_id)


def refused_request(build: Build, deployment_id: str = SERVING) -> GateRequest:
    return build.catalog.deployments[deployment_id]["requests"][0]


def calibrated(build: Build, deployment_id: str) -> tuple[int, int]:
    s = derive.start_settings(build.catalog, build.catalog.deployments[deployment_id])
    return s["prefill_budget"], s["seats"]


def needs(build: Build, pin_text: str, drafter: bool = False, deployment_id: str = SERVING, as_printed: bool = True) -> Value:
    """The start gate's needs for a pin, with the catalog entries its terms come from: by
    default the sum of its terms as a table prints them; as_printed=False gives the exact bytes
    the gate decides on (for a margin too thin to print)."""
    current = row(build, deployment_id)
    request = gate.Request(parse_size(pin_text), drafter, *calibrated(build, deployment_id))
    used = [current.weights, known(current.overhead, "overhead"), current.headroom] + ([known(current.drafter, "drafter")] if drafter else [])
    entries = "; ".join(dict.fromkeys(a.entry for a in used if a.entry))
    result = gate.gate(current, request, (1,))
    names = " + ".join(t.name for t in result.terms if t.bytes)
    if as_printed:
        return Value(report.needs_as_printed(result.terms), "start gate, the sum of its terms as printed: " + names, entries)
    return Value(sized(result.needs, result), "start gate, exact: " + names, entries)


def largest_pin(build: Build, drafter: bool = False, deployment_id: str = SERVING) -> int | None:
    """None when the gate cannot size the start: the page's figure of it then fails the build."""
    available = (refused_request(build, deployment_id)["available"].size,)
    return gate.largest_pin(row(build, deployment_id), gate.Request(0, drafter, *calibrated(build, deployment_id)), available)


def known(amount: Amount | None, what: str) -> Amount:
    """A term of the gate's row the page needs: the deployment's row may not have it yet."""
    if amount is None:
        raise ValueError(f"the gate's row has no {what} for this deployment")
    return amount


def sized(figure: int | None, result: gate.GateResult) -> int:
    """A figure the gate gives only when it can size the start; else why it cannot."""
    if figure is None:
        raise ValueError(f"the gate cannot size this start: {result.outside_calibration}")
    return figure


MACROS = (
    deployment,
    gen,
    row,
    refused_request,
    needs,
    largest_pin,
)
