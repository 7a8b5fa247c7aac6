"""The accuracy table's rows (calc/accuracy.py): every observation with a known architecture,
modeled, beside what the engine printed."""

from __future__ import annotations

from fractions import Fraction

import pytest

from calc import accuracy
from calc.units import GiB, InputError
from hooks.macros import ROOT, model_accuracy


@pytest.fixture(scope="module")
def rows(catalog) -> list[accuracy.Row]:
    return model_accuracy(ROOT, catalog)


def test_full_attention_rows_are_exact_within_printed_precision(rows) -> None:
    dense = [r for r in rows if r.family == "dense"]
    assert len(dense) >= 5
    for r in dense:
        assert r.within_precision, r.observation.label
        assert abs(r.error) < Fraction(2, 1000), r.observation.label


def test_hybrid_rows_the_rules_cover_are_exact(rows) -> None:
    covered = [r for r in rows if r.family == "hybrid" and not r.observation.suspicion]
    assert len(covered) >= 3
    assert all(r.within_precision and r.error == 0 for r in covered)


def test_every_catalog_start_with_an_architecture_has_a_row(rows, catalog) -> None:
    labels = [r.observation.label for r in rows]
    assert sum("DeepSeek-V4-Flash" in label for label in labels) == 3  # generations 234, 235 and 237
    assert sum("Flash-Next" in label for label in labels) == 3  # 4, 3 and 2 speculative tokens
    unexplained = [r for r in rows if not r.within_precision]
    assert unexplained and all(r.observation.suspicion for r in unexplained)  # a row we cannot explain says what we suspect


def test_mean_absolute_error_by_family(rows) -> None:
    errors = accuracy.family_errors(rows)
    assert set(errors) == {"dense", "moe", "mla", "sliding window", "hybrid"}
    dense = [abs(r.error) for r in rows if r.family == "dense"]
    assert errors["dense"] == sum(dense, Fraction(0)) / len(dense)
    assert errors["moe"] is None  # no observation yet, said so rather than zero


def test_a_printed_pool_is_a_range() -> None:
    assert accuracy.printed_pool("2.89 GiB", "pool") == (int(Fraction("2.885") * GiB), int(Fraction("2.895") * GiB))
    assert accuracy.printed_pool("6.5 GiB", "pool") == (int(Fraction("6.45") * GiB), int(Fraction("6.55") * GiB))
    assert accuracy.printed_pool("16000000000 B", "pool") == (16 * 10**9, 16 * 10**9)
    with pytest.raises(InputError, match="observations\\[0\\].pool: found '2.89', expected a printed pool"):
        accuracy.printed_pool("2.89", "observations[0].pool")


def test_weights_against_the_loading_line(rows) -> None:
    # logs 01 and 02 (Llama 3.1 8B, TP 1, "Loading model weights took 14.9888 GB") and 04
    # (Qwen2.5 32B, TP 2, "30.7098 GB"): the count is a little under what loading took
    found = [(r.observation.label, accuracy.weights_error(r.observation)) for r in rows if accuracy.weights_error(r.observation)]
    assert len(found) == 3
    for label, (_modeled, error) in found:
        assert Fraction(-1, 100) < error < 0, label
