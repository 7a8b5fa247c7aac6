"""Every limit the site prints rounds toward safety: typed back as printed, it still passes.

A reader copies a limit off a page or the command line and uses it. The largest pin, the
largest checkpoint still prefetched and the fraction ceiling must each pass when typed back as
printed; a count of full contexts is a capacity and never reads as one when it is below one.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from test_cli import ok

from calc.answers import prefetch, report
from calc.engine import derive, fraction, gate
from calc.units import parse_fraction, parse_size

DSV4 = "dsv4-flash-pair"


@pytest.mark.parametrize("available", ["114.5GiB", "117.2GiB", "110GiB", "123456789012"])
def test_largest_pins_printed_pass_the_gate(catalog, available) -> None:
    out = ok("gate", "--available", available)
    m = re.findall(r"  with(?:out)? the drafter: .* = [0-9.]+ GiB, so ([0-9.]+e9 B) \(([0-9.]+e9 B) from exact bytes\)", out)
    assert len(m) == 2, out
    row = derive.gate_row(catalog, DSV4)
    base = report.defaults(catalog, DSV4)
    for (worked, exact), drafter in zip(m, (False, True), strict=True):
        for text in (worked, exact):
            request = gate.Request(parse_size(text), drafter, base.prefill_budget, base.seats)
            assert gate.gate(row, request, (parse_size(available),)).passes, f"{text} printed as a limit is refused at {available}"
        # the one from exact bytes is the largest at its two decimals: one step up is refused
        step = gate.Request(parse_size(exact) + 10**7, drafter, base.prefill_budget, base.seats)
        assert not gate.gate(row, step, (parse_size(available),)).passes


@pytest.mark.parametrize("available", ["44674MiB", "118.08GiB", "66.9GiB", "50000000000"])
def test_prefetch_limit_printed_is_prefetched(catalog, available) -> None:
    out = ok("prefetch", "--checkpoint", "75GB", "--available", available)
    shown = re.search(r"Largest checkpoint within the size rule: ([0-9.]+ GB)", out)[1]
    share = catalog.policy["vllm"]["prefetch_fraction"].value
    assert prefetch.prefetch_enabled(parse_size(shown), parse_size(available), share), f"{shown} is printed as a limit but is not prefetched"


def test_prefetch_limit_of_the_trace_is_42_1_gb() -> None:
    """0.9 x 44,674 MiB = 42,159,847,833.6 B: 42.2 GB at half-up rounding, which vLLM refuses; 42.1 GB rounded down."""
    assert "Largest checkpoint within the size rule: 42.1 GB" in ok("prefetch", "--checkpoint", "75GB", "--available", "44674MiB")


@pytest.mark.parametrize("free", ["114.5GiB", "30.85GiB", "99.99GiB"])
def test_fraction_ceiling_printed_passes(catalog, free) -> None:
    out = ok("fraction", "--box", "dgx-spark", "--free", free)
    ceiling = parse_fraction(re.search(r"Ceiling: ([0-9.]+)", out)[1])
    total = catalog.boxes["dgx-spark"]["total_memory"].value
    assert fraction.passes(total, parse_size(free), ceiling)
    assert not fraction.passes(total, parse_size(free), ceiling + Fraction(1, 10**4))


def test_below_one_context_never_prints_as_one() -> None:
    """7.19e9 B at 55,011 B a token is 130,701 tokens, 0.9972 of a 131,072-token context: 0.99x, not 1.00x."""
    out = ok("kv", "--pin", "7.19e9")
    assert "holds 130,701 tokens" in out
    assert "Full 131,072-token contexts: 0.99x (below one request at max_model_len and the block vLLM 0.29.0 and later hold back: vLLM does not start)" in out


def test_site_limits_rounded_down(shipped, catalog) -> None:
    """The pages' limits: the largest-pin table and the prefetch column pass when typed back."""
    text = shipped.text("memory-budget")
    m = re.search(r"largest pin\s*([0-9.]+ GiB)\s*([0-9.]+ GiB)", text)
    assert m, "the largest-pin table is missing"
    assert "in bytes, rounded down" in text
    row = derive.gate_row(catalog, DSV4)
    base = report.defaults(catalog, DSV4)
    available = catalog.deployments[DSV4]["requests"][0]["available"].value
    for shown, drafter in ((m[1], False), (m[2], True)):
        request = gate.Request(parse_size(shown), drafter, base.prefill_budget, base.seats)
        assert gate.gate(row, request, (available,)).passes, f"the page's largest pin {shown} is refused"
    start = shipped.text("start-up-memory")
    assert "the largest checkpoint it will prefetch is\n42.1 GB" in start or "42.1 GB" in start
    assert "42.2 GB" not in start
