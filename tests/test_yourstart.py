"""Your start: the calculator run on real public log excerpts (logs/public/excerpts/SOURCES.yaml),
typed figures and pasted memory readings; every figure worked out by hand below."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from html import unescape
from pathlib import Path

import pytest

from calc.answers import report
from calc.engine import derive
from calc.present import html
from calc.present.calculators import yourstart as page
from calc.record import replace
from calc.units import GiB, KiB, MiB

DATA = Path(__file__).resolve().parent.parent / "logs" / "public" / "excerpts"
OWN = ("preset", "weights", "overhead", "bytes_per_token", "pin", "max_model_len", "tp", "before", "model")


def log(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def own(catalog, **fields: str) -> dict[str, str]:
    """The form with the preset cleared, as choosing "none" leaves it, and these fields typed."""
    raw = dict(html.defaults_of(catalog, "yourstart").values)
    raw.update(dict.fromkeys(OWN, ""))
    raw.update(fields)
    return raw


def test_the_preset_answers_as_the_start_calculator_does(catalog) -> None:
    """Same deployment, same gate: the catalog's row through both calculators."""
    d = html.defaults_of(catalog, "yourstart")
    mine = html.run(catalog, "yourstart", d.values)
    theirs = html.run(catalog, "start", html.defaults_of(catalog, "start").values)
    assert mine.valid and theirs.valid
    row = derive.gate_row(catalog, "dsv4-flash-pair")
    base = report.defaults(catalog, "dsv4-flash-pair")
    terms = (row.weights.bytes, base.kv_pin, row.overhead.bytes, row.headroom.bytes)
    # the total row is the sum of the terms as printed, as the start calculator prints it
    assert mine.figures["needs"] == theirs.figures["needs"] == "110.00 GiB"
    printed = [mine.figures[f"term_{t}"] for t in ("weights", "pin", "overhead", "headroom")]
    assert sum(Fraction(p.removesuffix(" GiB")) for p in printed) == 110
    assert sum(terms) <= base.available[0]  # the verdict is decided on the exact bytes
    assert mine.figures["verdict"] == theirs.figures["verdict"] == "passes"
    # largest pin = MemAvailable - (needs - pin), the same rounding down as the start calculator's
    assert mine.figures["largest_pin"] == theirs.figures["largest_without"]
    # the preset's exact bytes per token, not its two-decimal text: the tokens vLLM logged at the pin
    reading = report.pool_reading(catalog, "dsv4-flash-pair", 0)
    assert mine.figures["grid_tokens_0"] == f"{int(base.kv_pin / reading.bytes_per_token):,} tokens"
    assert "Preset 79.29 GiB" in d.sources["weights"]


def test_a_pasted_log_gives_the_pool_tokens_and_contexts(catalog) -> None:
    """1CatAI/1Cat-vLLM#237: Available KV cache memory 5.35 GiB, 215,401 tokens, 26.29x at 8,192."""
    out = html.run(catalog, "yourstart", own(catalog, log=log("1cat-237-v100-tp4.log"), box="other"))
    assert out.valid, out.errors
    pool = round(Fraction("5.35") * GiB)  # 5,744,518,758 B
    assert out.figures["pool_b"] == f"{pool:,} B" == "5,744,518,758 B"
    assert out.figures["bpt"] == "26,668.95 B"  # 5,744,518,758 / 215,401 = 26,668.953...
    assert out.figures["grid_pin_0"] == "5,744,518,758 B"
    assert out.figures["grid_tokens_0"] == "215,401 tokens"  # as logged; 5,744,518,758 / 26,668.95 = 215,401.0
    assert out.figures["grid_contexts_0_8192"] == "26"  # 215,401 / 8,192 = 26.29, whole contexts
    assert out.figures["one_request_pin"] == "0.22e9 B"  # 8,192 x 26,668.95 = 218,471,998 B, rounded up
    assert out.figures["verdict"] == "not sized"  # no weights line: the gate says what it needs
    assert "needs the weights" in out.sections["yourstart-verdict"]
    assert "log line 1: " in out.sections["yourstart-result"] and "Available KV cache memory: 5.35 GiB" in out.sections["yourstart-result"]
    assert "--kv-cache-memory-bytes 5744518758" in out.figures["command"]
    assert "--max-model-len 8192" in out.figures["command"]


def test_readings_before_and_serving_measure_the_overhead(catalog) -> None:
    before = "$ free -b\n               total        used        free      shared  buff/cache   available\nMem:     130655232000  1589690368 20760182784    34721792  3275702272 123686811648\n"
    serving = "MemTotal: 127593000 kB\nMemFree: 2000000 kB\nMemAvailable: 100000000 kB\nCached: 5000000 kB\n"
    raw = own(catalog, log=log("1cat-237-v100-tp4.log"), box="dgx-spark", weights="10 GiB", before=before, serving=serving)
    out = html.run(catalog, "yourstart", raw)
    assert out.valid, out.errors
    held = 123_686_811_648 - 100_000_000 * KiB
    overhead = held - 10 * GiB - 5_744_518_758
    assert out.figures["held_b"] == f"{held:,} B"
    assert out.figures["overhead_b"] == f"{overhead:,} B"
    needs = 10 * GiB + 5_744_518_758 + overhead + 8 * GiB
    assert out.figures["term_overhead_b"] == f"{overhead:,} B"
    assert out.figures["verdict"] == ("passes" if needs <= 123_686_811_648 else "refused")
    assert "pasted free -b line 3" in out.sections["yourstart-result"]
    assert "pasted meminfo line 3: MemAvailable: 100000000 kB" in out.sections["yourstart-result"]


def test_the_engines_own_free_memory_line_drives_the_fraction_check(catalog) -> None:
    """pytorch/pytorch#175666: Free memory on device cuda:1 (19.77/22.05 GiB) ... (0.9, 19.84 GiB)."""
    # a 22.05 GiB card is none of the catalog's boxes: on the RTX 4090 (23.68 GiB) it is refused
    # as another box's log, and taken as "another box" (its total from the log)
    wrong = html.run(catalog, "yourstart", own(catalog, log=log("pytorch-175666-free-memory.log"), box="rtx-4090", pin="10 GiB"))
    assert "the log prints a total of 22.05 GiB (log line 1)" in wrong.errors["box"]
    out = html.run(catalog, "yourstart", own(catalog, log=log("pytorch-175666-free-memory.log"), box="other", pin="10 GiB"))
    assert out.valid, out.errors
    assert out.figures["log_error"] == "free_memory"
    assert out.figures["fraction_total"] == "22.05 GiB" and out.figures["fraction_free"] == "19.77 GiB"
    assert out.figures["fraction"] == "0.90"
    assert out.figures["fraction_verdict"] == "refused"  # as vLLM refused it
    # 0.9 x 22.05 GiB = 19.845 GiB from the printed total; vLLM, with the unrounded total, printed 19.84
    assert out.figures["fraction_requested"] == "19.85 GiB"
    # 19.765 / 22.055 GiB, the printed figures' safe ends (19.77 / 22.05 would give 0.8965): as ingest says
    assert out.figures["fraction_ceiling"] == "0.8961"


def test_typed_figures_without_a_log(catalog) -> None:
    raw = own(
        catalog,
        box="rtx-pro-6000-blackwell",
        weights="60 GiB",
        overhead="6 GiB",
        bytes_per_token="131072",
        pin="20 GiB",
        max_model_len="32768",
        before="94 GiB",
        lengths="8192, 131072",
        pins="10 GiB",
    )
    out = html.run(catalog, "yourstart", raw)
    assert out.valid, out.errors
    assert out.figures["needs"] == "94.00 GiB"  # 60 + 20 + 6 + 8
    assert out.figures["verdict"] == "passes" and out.figures["margin"] == "0.00 GiB"
    assert out.figures["largest_pin"] == "21.47e9 B"  # exactly 20 GiB = 21,474,836,480 B, rounded down
    assert out.figures["grid_tokens_0"] == "163,840 tokens"  # 20 GiB / 131,072 B
    assert [out.figures[f"grid_contexts_0_{n}"] for n in (32768, 8192, 131072)] == ["5", "20", "1"]
    assert out.figures["grid_tokens_1"] == "81,920 tokens"  # the typed 10 GiB pin
    # the box's total as the engine sees it: CUDA's 94.97 GiB (catalog/boxes.yaml), not the 96 GB specification
    assert out.figures["fraction_total"] == "94.97 GiB"
    assert "the specification's capacity" not in unescape(out.sections["yourstart-result"])
    # the GH200: CUDA's 94.50 GiB, not nvidia-smi's 97,871 MiB (CUDA reports the card not integrated: vLLM reads it)
    raw.update(box="gh200", before="90 GiB")
    out = html.run(catalog, "yourstart", raw)
    assert out.valid, out.errors
    assert out.figures["fraction_total"] == "94.50 GiB"
    assert "the driver's total" not in unescape(out.sections["yourstart-result"])
    # a box with nothing but the driver's total (the GH200 with its CUDA total taken out) uses it, and says so
    driver_only = {k: v for k, v in catalog.boxes["gh200"].items() if k != "total_memory"}
    out = html.run(replace(catalog, boxes={**catalog.boxes, "gh200": driver_only}), "yourstart", raw)
    assert out.valid, out.errors
    assert out.figures["fraction_total"] == "95.58 GiB"  # 97,871 MiB
    assert "the driver's total" in unescape(out.sections["yourstart-result"])


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"log": "hello, this is prose and not a log at all."}, "log", "Startup log: found none of the lines a vLLM or SGLang start prints"),
        ({"log": "\x00\x01\x02binary"}, "log", "Startup log: "),
        ({}, "pin", "KV pin to plan: found nothing, expected a size such as 20 GiB, or a log with its KV cache line"),
        ({"pin": "lots"}, "pin", "KV pin to plan: found 'lots', expected a size"),
        ({"pin": "1 GiB", "before": "Mem: 1 2 3 4 5 6\n"}, "before", "found neither /proc/meminfo lines nor free's header"),
        (
            {
                "pin": "1 GiB",
                "before": "               total        used        free      shared  buff/cache   available\nMem: 24105 1631 19714 25 3083 22474\n",
            },
            "before",
            "free prints no unit",
        ),
        ({"pin": "1 GiB", "bytes_per_token": "-5"}, "bytes_per_token", "Bytes per token a rank: found '-5', expected bytes per token above zero"),
        ({"pin": "1 GiB", "model": "my model"}, "model", "expected a model name or path without spaces"),
        ({"pin": "1 GiB", "preset": "nope"}, "preset", "Preset from the catalog: found 'nope', expected none or one of dsv4-flash-pair"),
        ({"pin": "1 GiB", "box": "h999"}, "box", "Box: found 'h999', expected one of dgx-spark"),
        ({"pin": "1 GiB", "lengths": "8192, many"}, "lengths", "found 'many'"),
    ],
)
def test_bad_fields_say_what_is_wrong_and_withdraw_the_result(catalog, fields: dict, field: str, message: str) -> None:
    out = html.run(catalog, "yourstart", own(catalog, **fields))
    assert not out.valid
    assert message in out.errors[field], out.errors
    assert out.figures == {}


def test_choosing_none_or_pasting_a_log_clears_the_preset(catalog) -> None:
    raw = html.defaults_of(catalog, "yourstart").values
    cleared = html.changed(catalog, "yourstart", "log", {**raw, "log": "INFO GPU KV cache size: 1 tokens"})
    assert cleared is not None and cleared["values"]["yourstart-weights"] == "" and cleared["values"]["yourstart-preset"] == ""
    # without a preset, a log that prints no total keeps every typed field and asks for its box
    asked = html.changed(catalog, "yourstart", "log", {**raw, "preset": "", "log": "x"})
    assert asked is not None and asked["values"] == {}
    assert asked["sources"] == {"yourstart-box-src": "The log prints no total: choose the box it was taken on, or another box with its total typed below"}
    filled = html.changed(catalog, "yourstart", "preset", {**raw, "preset": "dsv4-flash-pair"})
    assert filled["values"]["yourstart-weights"] == raw["weights"]


def test_free_m_reading_with_its_unit_chosen(catalog) -> None:
    free_m = "               total        used        free      shared  buff/cache   available\nMem:           24105        1631       19714          25        3083       22474\n"
    out = html.run(catalog, "yourstart", own(catalog, pin="1 GiB", box="rtx-4090", before=free_m, free_unit="m"))
    assert out.valid, out.errors
    assert page.parse(catalog, own(catalog, pin="1 GiB", box="rtx-4090", before=free_m, free_unit="m"))[0].before.value == 22474 * MiB


PUBLIC = Path(__file__).resolve().parent.parent / "logs" / "public"


def test_a_log_from_another_card_is_not_gated_on_the_default_box(catalog) -> None:
    """logs/public/36, two RTX 5090s (31.4 GiB each, as its free-memory line prints): on the
    default DGX Spark the box is refused by name; pasting the log picks the RTX 5090 node."""
    text = (PUBLIC / "36-v02x-qwen38-27b-tp2-5090-kv-memory-suggestion.log").read_text()
    raw = own(catalog, log=text, pin="12 GiB")
    out = html.run(catalog, "yourstart", raw)
    assert not out.valid
    assert out.errors["box"].startswith("Box: the log prints a total of 31.40 GiB (log line 1), the DGX Spark (GB10) has 121.69 GiB")
    assert "it looks like RTX 5090 node" in out.errors["box"]
    picked = html.changed(catalog, "yourstart", "log", {**html.defaults_of(catalog, "yourstart").values, "log": text})
    assert picked["values"]["yourstart-box"] == "rtx-5090-node"
    assert picked["sources"]["yourstart-box-src"].startswith("The log&#x27;s total, 31.40 GiB (log line 1), is the RTX 5090 node&#x27;s")
    assert html.run(catalog, "yourstart", {**raw, "box": "rtx-5090-node"}).valid


def test_a_printed_total_fits_the_boxes_within_their_reading(catalog) -> None:
    """A box whose total torch and vLLM print matches a log within 1%: the RTX 5090 node's 31.36 GiB
    takes a 31.40 GiB log and the V100 32GB's 31.74 GiB does not; the 48 GB cards with ECC on print
    44.40 to 44.43 GiB and all fit one another's log, with the L20's 44.53 GiB; a driver's or specification's total keeps 5%."""
    from calc.present.calculators.yourstart import boxes_of_total

    gib = lambda text: round(Decimal(text) * 2**30)  # noqa: E731
    assert boxes_of_total(catalog, gib("31.40")) == ["rtx-5090-node"]
    assert set(boxes_of_total(catalog, gib("44.42"))) == {"l40s", "nvidia-a40", "rtx-6000-ada", "nvidia-l40", "nvidia-l20"}
    assert set(boxes_of_total(catalog, gib("15.57"))) == {"rtx-4080-super", "rtx-4070-ti-super", "rtx-5080", "rtx-5070-ti", "rtx-4060-ti-16gb",
                                                           "rtx-a4000"}  # fmt: skip
    # the GH200's 94.50 GiB, the RTX PRO 6000 Blackwell's 94.97 GiB and the H20's 95.22 GiB lie within 1% of one another
    assert set(boxes_of_total(catalog, gib("94.50"))) == {"gh200", "rtx-pro-6000-blackwell", "nvidia-h20"}
    driver_only = {k: v for k, v in catalog.boxes["gh200"].items() if k != "total_memory"}
    assert boxes_of_total(replace(catalog, boxes={**catalog.boxes, "gh200": driver_only}), gib("91.00")) == ["gh200"]  # 97,871 MiB, within 5%


def test_a_total_several_boxes_share_is_asked_for(catalog) -> None:
    """logs/public/32 prints 79.22 GiB: an H100 SXM, an H100 PCIe, an A100-80GB or an A800-80GB; none is chosen for the reader."""
    text = (PUBLIC / "32-v07-llama32-11b-vision-h100-two-sentence.log").read_text()
    asked = html.changed(catalog, "yourstart", "log", {**own(catalog), "log": text})
    assert "yourstart-box" not in asked["values"]
    assert asked["sources"]["yourstart-box-src"] == (
        "The log&#x27;s total, 79.22 GiB (log line 1), fits NVIDIA H100 SXM, NVIDIA H100 PCIe, NVIDIA A100-80GB, NVIDIA A800-80GB: "
        "choose the one it was taken on"
    )


def test_hints_follow_the_preset(catalog) -> None:
    """Choosing none drops "the overhead comes from the preset"; choosing a preset again restores it."""
    raw = html.defaults_of(catalog, "yourstart")
    assert raw.sources["serving"] == "Empty: the overhead comes from the preset"
    none = html.changed(catalog, "yourstart", "preset", {**raw.values, "preset": ""})
    assert "preset" not in none["sources"]["yourstart-serving-src"] and "preset" not in none["sources"]["yourstart-log-src"]
    again = html.changed(catalog, "yourstart", "preset", {**raw.values, "preset": raw.values["preset"]})
    assert again["sources"]["yourstart-serving-src"] == "Empty: the overhead comes from the preset"


def test_each_excerpt_has_its_source_and_the_sites_samples_are_excerpts() -> None:
    import yaml

    sources = yaml.safe_load((DATA / "SOURCES.yaml").read_text(encoding="utf-8"))
    assert (
        {p.name for p in DATA.glob("*.log")}
        == {e["file"] for e in sources}
        == {"1cat-237-v100-tp4.log", "pr12569-llama70b-w8a8.log", "pytorch-175666-free-memory.log"}
    )
    assert all(e["url"].startswith("https://github.com/") and e["what"] for e in sources)
    samples = sorted((DATA.parent.parent.parent / "docs" / "samples").glob("*.log"))
    assert [p.name for p in samples] == ["1cat-237-v100-tp4.log", "pytorch-175666-free-memory.log"]
    for sample in samples:  # what the pages run `ingest` on is the store's excerpt, byte for byte
        assert sample.read_bytes() == (DATA / sample.name).read_bytes()
