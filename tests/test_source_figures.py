"""The source documents' figures, reproduced from the catalog through calc (tests/source_figures.py),
and proof that they come from the catalog: change a catalog figure and the derived figures move."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from conftest import edit
from source_figures import (
    DSV4,
    FIGURES,
    MATRIX_PINS,
    TEN_GB,
    SourceFigure,
    after_kernel_init,
    derive,
    ds_measured,
    flash_next,
    free_at_gate,
    gen,
    largest_pin,
    needs,
    passes,
    prefetch_verdict,
    sample,
)

from calc.catalog.loader import load_dir
from calc.units import GiB, parse_size


@pytest.mark.parametrize("row", FIGURES, ids=[r.id for r in FIGURES])
def test_document_figure(row: SourceFigure, catalog) -> None:
    got = row.compute(catalog)
    if row.disagrees:
        assert row.reason, f"{row.id}: a disagreement row needs its reason"
        assert got == row.catalog_gives, f"{row.doc}, {row.where}: the catalog now gives {got!r}"
        assert row.catalog_gives != row.document_says, f"{row.id}: the document and the catalog agree now; make it a plain row"
    else:
        assert got == row.document_says, f"{row.doc}, {row.where}: the document says {row.document_says!r}, the catalog gives {got!r}"


def test_table_ids_unique_and_documents_known() -> None:
    ids = [r.id for r in FIGURES]
    assert len(ids) == len(set(ids))
    assert {r.doc for r in FIGURES} == {"000", "001", "003", "004"}


REQUIRED = {
    "000": [
        "79.29", "76.68", "5.06", "10.12", "9.31", "181,777", "13.4", "102.0", "117.2", "15.2", "8.0", "4.3", "3.1x",
        "7.45", "14.90", "18.63", "108.1", "110.0", "115.6", "119.3", "113.2", "115.1", "120.7", "124.4",
        "both start", "drafter refused", "both refused", "114.5", "13.81", "14.8e9", "8.75", "9.4e9",
        "103.9", "117", "passed", "0.8", "4.2", "9.1", "16,384", "7.9",
    ],
    "001": [
        "55,011", "36,860", "21,502", "16,392", "6,973", "~5,987",
        "181,777", "271,297", "465,073", "610,054", "1,434,103", "~1,670,000",
        "1.39x", "1.39", "290,858", "2.22", "0.9837", "0.98", "7.92", "8,501,810,176",
        "1,708,119", "1,752,822", "1,791,558", "6.52x", "1.67", "12.7", "13,952", "1.15", "enough", "3.9x",
    ],
    "003": ["~50", "120919", "119280", "68501", "~118", "~75", "~90", "disabled"],
    "004": ["15", "37", "52", "65-70 GB", "0.5", "0.35", "0.85", "both start", "the second refused", "70", "121.6"],
}  # fmt: skip


@pytest.mark.parametrize("doc", sorted(REQUIRED))
def test_table_holds_the_figures_the_documents_are_read_for(doc: str) -> None:
    present = {r.document_says for r in FIGURES if r.doc == doc}
    assert not [f for f in REQUIRED[doc] if f not in present]


def test_pin_matrix_is_complete() -> None:
    for pin in MATRIX_PINS:
        rows = [r for r in FIGURES if r.where.startswith(f"pin matrix, {pin},")]
        assert len(rows) == 4, pin


def test_known_disagreements_are_the_ones_recorded() -> None:
    disagreements = {(r.doc, r.document_says, r.catalog_gives) for r in FIGURES if r.disagrees}
    assert ("000", "120.7", "120.6") in disagreements
    assert ("000", "9.4e9", "9.39e9") in disagreements
    assert ("004", "65-70 GB", "73.26 GiB") in disagreements


# --- what the disagreements rest on ---------------------------------------------------------


def test_needs_with_drafter_at_16e9_is_below_the_documents_rounding(catalog) -> None:
    exact = Fraction(needs(catalog, "16e9", True), GiB)
    assert Fraction("120.6") < exact < Fraction("120.65")


def test_document_pin_with_drafter_is_refused_and_the_sites_passes(catalog) -> None:
    largest = largest_pin(catalog, True)
    assert parse_size("9.39e9") <= largest < parse_size("9.4e9")
    assert not passes(catalog, "9.4e9", True)
    assert passes(catalog, "9.39e9", True)


def test_document_pin_without_drafter_passes(catalog) -> None:
    assert passes(catalog, "14.8e9", False)
    assert not passes(catalog, "14.9e9", False)


def test_largest_pin_equals_free_minus_the_fixed_terms(catalog) -> None:
    """114.5 - 8 - 79.29 - 13.4 = 13.81 GiB, as the document writes the sum."""
    row = derive.gate_row(catalog, DSV4)
    expected = free_at_gate(catalog) - row.headroom.bytes - row.weights.bytes - row.overhead.bytes
    assert largest_pin(catalog, False) == expected
    assert largest_pin(catalog, True) == expected - row.drafter.bytes


def test_several_models_left_is_the_box_total_minus_the_weights(catalog) -> None:
    box = catalog.boxes["dgx-spark"]["total_memory"].value
    weights = catalog.models["example-27b-4bit"]["weights"].value + catalog.models["example-70b-4bit"]["weights"].value
    left = Fraction(box - weights, GiB)
    assert Fraction("73.25") < left < Fraction("73.27")
    assert left > 70, "the document's 65-70 GB is below what the catalog leaves"


def test_quotient_and_logged_tokens_differ_by_the_pooling(catalog) -> None:
    reading = ds_measured(catalog)
    tokens, logged = reading.tokens_at(parse_size("10e9"))
    assert logged and tokens == 181777
    assert len(reading.readings) == 3  # generations 234, 235, 237 pooled


# --- what the documents assert in words -----------------------------------------------------


def test_headroom_sits_between_the_hung_and_the_served_figures(catalog) -> None:
    incident = catalog.incidents["2026-09-30-prefill"]
    headroom = catalog.policy["gate"]["headroom"].value
    assert incident["available"].maximum < headroom < incident["served_for_weeks_available"].value
    assert incident["available"].maximum == parse_size("4.2 GiB")


def test_guard_floor_is_the_gate_headroom(catalog) -> None:
    assert catalog.policy["guard"]["floor"].value == catalog.policy["gate"]["headroom"].value == 8 * GiB


def test_generation_234_fell_under_the_floor(catalog) -> None:
    assert gen(catalog, 234)["lowest_available"].value < catalog.policy["guard"]["floor"].value


def test_only_the_deepseek_row_was_run_at_10e9(catalog) -> None:
    logged = [r for r in derive.kv_readings(catalog) if r.tokens_at(TEN_GB)[1]]
    assert [(r.model, r.kind) for r in logged] == [("deepseek-v4-flash", "measured")]


def test_the_drafters_kv_comes_out_of_the_same_pool(catalog) -> None:
    pin = parse_size("28e9")
    tokens = [flash_next(catalog, spec).tokens_at(pin)[0] for spec in (2, 3, 4)]
    assert tokens[0] > tokens[1] > tokens[2]


def test_logged_concurrency_matches_tokens_over_context(catalog) -> None:
    start = gen(catalog, 235)
    assert round(Fraction(start["kv_tokens"].value, 131072), 2) == start["concurrency"].value
    first = catalog.deployments["flash-next-pair"]["starts"][0]
    assert round(Fraction(first["kv_tokens"].value, 262144), 2) == first["concurrency"].value


def test_prefetch_is_off_after_kernel_init_and_would_be_on_at_idle(catalog) -> None:
    assert prefetch_verdict(catalog, after_kernel_init(catalog)) == "disabled"
    assert prefetch_verdict(catalog, sample(catalog, 0)) == "enabled"


def test_held_is_before_minus_after(catalog) -> None:
    start = gen(catalog, 235)
    held = derive.held(start).bytes
    assert held == start["available_before"].value - start["available_after"].value
    assert derive.overhead(start).bytes == held - start["weights_loaded"].value - start["kv_pin"]


# --- the figures come from the catalog ------------------------------------------------------


def _row(where: str) -> SourceFigure:
    (row,) = [r for r in FIGURES if r.where == where]
    return row


def test_weights_change_moves_weights_and_overhead_not_needs(catalog, catalog_copy: Path) -> None:
    """Overhead is a remainder (held - weights - KV), so a heavier weights reading moves the weights
    term up and the overhead term down by the same 1 GiB: needs, from held memory, stays."""
    edit(catalog_copy, "starts.yaml", "value: 79.29 GiB", "value: 80.29 GiB")
    changed = load_dir(catalog_copy)
    before, after = derive.gate_row(catalog, DSV4), derive.gate_row(changed, DSV4)
    assert after.weights.bytes - before.weights.bytes == GiB
    assert before.overhead.bytes - after.overhead.bytes == GiB
    assert needs(changed, "10e9", False) == needs(catalog, "10e9", False)
    assert _row("what one rank holds, Weights (GiB)").compute(changed) == "80.29"
    assert _row("what one rank holds, Overhead (GiB)").compute(changed) == "12.4"


def test_available_before_change_moves_needs_by_one_gib(catalog, catalog_copy: Path) -> None:
    edit(catalog_copy, "starts.yaml", "value: 117.2 GiB", "value: 118.2 GiB")
    changed = load_dir(catalog_copy)
    for pin in MATRIX_PINS:
        for drafter in (False, True):
            assert needs(changed, pin, drafter) - needs(catalog, pin, drafter) == GiB
    assert _row("what one rank holds, Held, no drafter (GiB)").compute(changed) == "103.0"
    assert _row("pin matrix, 10e9, needs without the drafter (GiB)").compute(changed) == "111.0"


def test_headroom_change_moves_every_needs_row(catalog, catalog_copy: Path) -> None:
    edit(
        catalog_copy,
        "policy.yaml",
        "value: 8 GiB\n    kind: setting\n    source: the load balancer",
        "value: 9 GiB\n    kind: setting\n    source: the load balancer",
    )
    changed = load_dir(catalog_copy)
    assert needs(changed, "10e9", False) - needs(catalog, "10e9", False) == GiB
    assert largest_pin(catalog, False) - largest_pin(changed, False) == GiB
    moved = {r.where for r in FIGURES if r.compute(changed) != r.compute(catalog)}
    needs_rows = {r.where for r in FIGURES if "needs" in r.where or "needed" in r.where}
    assert needs_rows and needs_rows <= moved
    assert "what one rank holds, Start headroom (GiB)" in moved


def test_logged_tokens_come_from_the_catalog(catalog_copy: Path) -> None:
    edit(catalog_copy, "starts.yaml", "value: 1708119", "value: 1700000")
    changed = load_dir(catalog_copy)
    assert _row("Flash-Next, 4 speculative tokens (tokens)").compute(changed) == "1,700,000"
    assert _row("bytes per token, Qwen3.8 Flash-Next, vLLM, bf16, B per token").compute(changed) == "16,471"


def test_trace_figures_come_from_the_catalog(catalog_copy: Path) -> None:
    edit(catalog_copy, "traces.yaml", "{t: 25, available: 68501 MiB", "{t: 25, available: 98501 MiB")
    changed = load_dir(catalog_copy)
    assert _row("the drop in the kernel-init window (free -h GiB)").compute(changed) == "~20"
    assert prefetch_verdict(changed, after_kernel_init(changed)) == "enabled"
