"""A calculator's inputs in the address (calc/present/address.py): what is written, what a link gives back."""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import pytest

from calc.present import address
from calc.present import html as calc_html

ROOT = Path(__file__).resolve().parent.parent
LOG = (ROOT / "logs/public/04-v07-qwen25-32b-l40s-tp2.log").read_text(encoding="utf-8")


def test_only_what_differs_from_the_defaults_is_written_in_form_order() -> None:
    defaults = {"deployment": "a", "pin": "10e9 B", "drafter": ""}
    written = address.encode({"deployment": "a", "pin": "20e9", "drafter": "on"}, defaults, ["deployment", "pin", "drafter"])
    assert written == address.Address((("kv_cache_memory_bytes", "20e9"), ("drafter", "on")))  # vLLM's key, where it has one
    assert address.encode(defaults, defaults, list(defaults)).pairs == ()


def test_a_pasted_log_goes_compressed_and_comes_back_whole() -> None:
    written = address.encode({"log": LOG}, {"log": ""}, ["log"])
    (name, value), *_ = written.pairs
    assert name == "log" and value.startswith("~") and len(value) < len(LOG) / 2
    assert set(value[1:]) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")  # base64url: no escapes
    assert address.decode(written.pairs, ["log"]).values == {"log": LOG}


def test_short_text_goes_as_it_is_and_a_leading_tilde_is_packed() -> None:
    assert address.pack("20e9") == "20e9"
    assert address.pack("~20e9").startswith("~") and address.unpack(address.pack("~20e9")) == "~20e9"
    assert address.pack("a\nb") != "a\nb" and address.unpack(address.pack("a\nb")) == "a\nb"


def test_past_the_limit_the_longest_field_is_left_out_and_named() -> None:
    noise = "".join(f"line {i}: {i * 7919 % 104729:x} {i * 104723 % 7919:o}\n" for i in range(4000))
    values = {"log": noise, "pin": "20e9"}
    written = address.encode(values, {"log": "", "pin": "10e9"}, ["log", "pin"])
    assert written.left_out == ("log",) and written.pairs == (("kv_cache_memory_bytes", "20e9"),)
    assert len(address.pack(noise)) > address.ADDRESS_LIMIT
    note = address.note_html([("yourstart-log", "Startup log", noise)], [])
    assert 'data-clipboard-target="#yourstart-log"' in note and "Copy Startup log" in note and "6,000" in note


def test_an_old_or_broken_link_opens_with_what_it_can_and_says_what_it_dropped() -> None:
    bomb = "~" + base64.urlsafe_b64encode(zlib.compress(b"0" * (address.UNPACKED_LIMIT + 10))).decode().rstrip("=")
    cut = address.pack(LOG)[:-40]
    restored = address.decode(
        [("pin", "20e9"), ("seats", "8"), ("pin", "30e9"), ("log", "~not base64!"), ("config", bomb), ("overhead", cut)],
        ["pin", "log", "config", "overhead"],
    )
    assert restored.values == {"pin": "20e9"}
    assert len(restored.dropped) == 5
    said = "; ".join(restored.dropped)
    for part in (
        "'seats' (not a field of this calculator)",
        "'pin' given twice",
        "'log' (it is not compressed text",
        "'config' (it expands past",
        "'overhead' (it is cut short)",
    ):
        assert part in said, said
    chosen = address.decode(
        [("deployment", "bogus"), ("model_1", "example-27b-4bit")],
        ["deployment", "model_1"],
        {"deployment": ["dsv4-flash-pair"], "model_1": ["", "example-27b-4bit"]},
    )
    assert chosen.values == {"model_1": "example-27b-4bit"}  # a select keeps only one of its options
    assert chosen.dropped == ("'deployment' ('bogus' is not one of its choices)",)
    note = address.note_html([], ["'<b>' (not a field of this calculator)"])
    assert "&lt;b&gt;" in note and "<b>" not in note


@pytest.mark.parametrize("calculator", calc_html.CALCULATORS)
def test_every_calculators_defaults_round_trip_through_an_address(catalog, calculator: str) -> None:
    defaults = calc_html.defaults_of(catalog, calculator).values
    names = [f.name for f in calc_html.fields_of(catalog, calculator)]
    changed = {name: (value + " x" if value else "on") for name, value in defaults.items()}
    written = address.encode(changed, defaults, names)
    restored = address.decode(written.pairs, names)
    assert restored.dropped == ()
    assert restored.values == {n: changed[n] for n in names if n in changed}
    assert calc_html.run(catalog, calculator, {**defaults, **restored.values}).calculator == calculator


def test_every_calculator_has_a_page() -> None:
    for calculator in calc_html.CALCULATORS:
        page = ROOT / "docs" / "calculator" / f"{calc_html.PAGES[calculator]}.md"
        assert f'{{{{ calculator("{calculator}") }}}}' in page.read_text(encoding="utf-8"), page


@pytest.mark.parametrize("calculator", calc_html.CALCULATORS)
def test_the_address_speaks_vllms_keys_and_a_link_with_the_old_names_opens_the_same(catalog, calculator: str) -> None:
    """Each field whose input vLLM names is written under vLLM's key (no field under a former name
    of its own, where vLLM's differs); a link as the site wrote it before, under the fields' own
    names, gives the same inputs and the same result as the link written now."""
    from calc.present import inputs

    defaults = calc_html.defaults_of(catalog, calculator).values
    names = [f.name for f in calc_html.fields_of(catalog, calculator)]
    changed = {name: (value + " x" if value else "on") for name, value in defaults.items()}
    written = address.encode(changed, defaults, names)
    keys = [k for k, _ in written.pairs]
    renamed = address.address_keys(names)
    for name, key in zip([n for n in names if n in changed and changed[n] != defaults.get(n, "")], keys, strict=True):
        i = inputs.INPUTS.get(name)
        assert key == renamed.get(name, name)
        if i is not None and i.vllm and i.vllm not in names and name in renamed:
            assert key == i.vllm, (name, key)
    old = tuple((next((n for n, k in renamed.items() if k == key), key), value) for key, value in written.pairs)
    now, before = address.decode(written.pairs, names), address.decode(old, names)
    assert now == before and now.dropped == ()
    assert calc_html.run(catalog, calculator, {**defaults, **now.values}) == calc_html.run(catalog, calculator, {**defaults, **before.values})


def test_the_start_gates_link_carries_vllms_names() -> None:
    names = ["deployment", "pin", "drafter", "speculative_tokens", "prefill_budget", "seats", "max_model_len", "prefix_caching", "no_prefix_caching"]
    values = {"pin": "20e9", "drafter": "on", "speculative_tokens": "2", "prefill_budget": "4096", "seats": "16", "max_model_len": "8192",
              "prefix_caching": "on", "no_prefix_caching": "on"}  # fmt: skip
    written = address.encode(values, {}, names)
    assert written.pairs == (
        ("kv_cache_memory_bytes", "20e9"),
        ("drafter", "on"),
        ("num_speculative_tokens", "2"),
        ("max_num_batched_tokens", "4096"),
        ("max_num_seqs", "16"),
        ("max_model_len", "8192"),
        ("prefix_caching", "on"),  # on and off share vLLM's enable_prefix_caching: each keeps its own name
        ("no_prefix_caching", "on"),
    )
    old = [("pin", "20e9"), ("seats", "16"), ("prefill_budget", "4096"), ("speculative_tokens", "2")]
    assert address.decode(old, names).values == {"pin": "20e9", "seats": "16", "prefill_budget": "4096", "speculative_tokens": "2"}
