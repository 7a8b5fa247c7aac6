"""The charts as drawn: each bar's length, each point's place and each label follow the catalog
figure they are drawn from; a changed catalog figure redraws them. Expected figures are worked
out here from the catalog's own values (and by hand where the comment says so), never read back
from the chart."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from decimal import Decimal
from fractions import Fraction

import pytest
from conftest import edit

from calc.answers import report
from calc.catalog.loader import load_dir
from calc.engine import kv
from calc.engine.budget import Resident
from calc.present import chart, charts
from calc.present import html as calc_html
from calc.units import GB, GiB, InputError, MiB, fmt, parse_count, parse_size

DSV4 = "dsv4-flash-pair"


def drawn(c: chart.Chart) -> ET.Element:
    """The chart's HTML, parsed: it must be well-formed XML as well as HTML."""
    return ET.fromstring(chart.figure_html(c))


def svg_of(root: ET.Element) -> ET.Element:
    return root.find("svg")


def bar(root: ET.Element, row_start: str, name: str) -> ET.Element:
    found = [r for r in svg_of(root).iter("rect") if r.get("data-name") == name and r.get("data-row", "").startswith(row_start)]
    assert len(found) == 1, f"{len(found)} bars named {name!r} in a row starting {row_start!r}"
    return found[0]


def x_length(root: ET.Element, value: int | Fraction) -> float:
    """What a bar of this value must measure in SVG units, by the axis the SVG states."""
    svg = svg_of(root)
    x0, x1 = float(svg.get("data-x0")), float(svg.get("data-x1"))
    low, high = Fraction(svg.get("data-low")), Fraction(svg.get("data-high"))
    return float(Fraction(value) / (high - low)) * (x1 - x0)


def x_at(root: ET.Element, value: int | Fraction) -> float:
    svg = svg_of(root)
    return float(svg.get("data-x0")) + x_length(root, Fraction(value) - Fraction(svg.get("data-low")))


def labels(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in svg_of(root).iter("text")]


def figures_table(root: ET.Element) -> dict[str, str]:
    rows = root.find("details").find("div").find("table").find("tbody")
    return {r.find("th").text: r.find("td").text or "" for r in rows}


# --- what one rank holds --------------------------------------------------------------------


def test_rank_holds_draws_gen_235_from_its_log_line(catalog) -> None:
    root = drawn(charts.rank_holds(catalog))
    weights = bar(root, "gen 235", "weights")
    # "Model loading took 79.29 GiB" (gen 235)
    assert Fraction(weights.get("data-value")) == parse_size("79.29 GiB")
    assert float(weights.get("width")) == pytest.approx(x_length(root, parse_size("79.29 GiB")), abs=0.02)
    assert "79.3 GiB" in labels(root)
    kv_pin = bar(root, "gen 235", "KV pin")
    assert int(kv_pin.get("data-value")) == 10 * GB
    # held = 117.2 - 15.2 = 102.0 GiB; overhead = held - weights - pin
    overhead = bar(root, "gen 235", "overhead")
    assert Fraction(overhead.get("data-value")) == parse_size("102.0 GiB") - parse_size("79.29 GiB") - 10 * GB
    end = float(overhead.get("x")) + float(overhead.get("width"))
    assert end == pytest.approx(x_at(root, 102 * GiB), abs=0.05)


def test_rank_holds_shows_gen_234_passing_the_gate_and_crossing_the_floor(catalog) -> None:
    c = charts.rank_holds(catalog)
    root = drawn(c)
    # by hand: 76.68 GiB + 16e9 B + 4.3 GiB + 8 GiB = 103.88 GiB, under the 117 GiB available
    needs = parse_size("76.68 GiB") + 16 * GB + parse_size("4.3 GiB") + 8 * GiB
    gate_row = [r for r in c.rows if r.label.startswith("gen 234, the gate's row")][0]
    assert sum(s.value for s in gate_row.segments) == needs
    assert gate_row.label.endswith(fmt(needs, "GiB", 1)) and fmt(needs, "GiB", 1) == "103.9 GiB"
    assert gate_row.note == "gate passed"
    held = bar(root, "gen 234, held", "held, measured")
    assert Fraction(held.get("data-value")) == parse_size("109.1 GiB")  # 117 - 7.9
    floor_marks = [m for m in svg_of(root).iter("line") if "tone-floor" in m.get("class", "")]
    # the floor marks sit at MemAvailable - 8 GiB: 109 GiB for gen 234, 109.2 GiB for gen 235
    assert sorted(float(m.get("x1")) for m in floor_marks) == pytest.approx([x_at(root, 109 * GiB), x_at(root, parse_size("109.2 GiB"))], abs=0.02)
    held_end = float(held.get("x")) + float(held.get("width"))
    assert held_end > min(float(m.get("x1")) for m in floor_marks)  # gen 234 crossed its floor
    assert "leaving 7.9 GiB, under the 8 GiB floor" in c.summary


def test_a_changed_catalog_figure_redraws_the_chart(catalog_copy) -> None:
    edit(catalog_copy, "starts.yaml", "value: 79.29 GiB", "value: 70.00 GiB")
    root = drawn(charts.rank_holds(load_dir(catalog_copy)))
    weights = bar(root, "gen 235", "weights")
    assert float(weights.get("width")) == pytest.approx(x_length(root, 70 * GiB), abs=0.02)
    assert "70.0 GiB" in labels(root) and "79.3 GiB" not in labels(root)


def test_a_start_without_its_readings_is_named(catalog_copy) -> None:
    edit(catalog_copy, "starts.yaml", "        lowest_available:\n", "        lowest_seen:\n")
    with pytest.raises(Exception) as error:
        charts.rank_holds(load_dir(catalog_copy))
    assert "lowest_seen" in str(error.value) or "lowest_available" in str(error.value)


# --- the pin matrix ------------------------------------------------------------------------


def test_pin_matrix_needs_and_largest_pins(catalog) -> None:
    c = charts.pin_matrix(catalog)
    root = drawn(c)
    totals = {r.label.split(": needs")[0]: sum(s.value for s in r.segments) for r in c.rows}
    # the refused request: 20e9 with the drafter needs 124.4 GiB (README's checked literal)
    assert fmt(totals["pin 20e9 B, drafter"], "GiB", 1) == "124.4 GiB"
    # a total is printed as the sum of its terms as printed: 16e9 with the drafter is 120.6 GiB
    # exactly but 120.7 GiB from its printed terms, as the page's table says
    label = [r.label for r in c.rows if r.label.startswith("pin 16e9 B, drafter")][0]
    assert fmt(totals["pin 16e9 B, drafter"], "GiB", 1) == "120.6 GiB" and label.endswith("needs 120.7 GiB")
    available = catalog.deployments[DSV4]["requests"][0]["available"].value
    rule = [r for r in svg_of(root).iter("line") if r.get("class") == "rule tone-available"][0]
    assert float(rule.get("x1")) == pytest.approx(x_at(root, available), abs=0.02)
    # the largest pins fill the available memory exactly, and are labelled rounded down
    largest = [r for r in c.rows if r.note == "largest"]
    assert [sum(s.value for s in r.segments) for r in largest] == [available, available]
    assert [r.label.split(": ")[-1] for r in largest] == ["14.8e9 B", "9.3e9 B"]
    for r in c.rows:
        assert r.note == ("largest" if r in largest else "starts" if sum(s.value for s in r.segments) <= available else "refused")
    drafter = bar(root, "pin 20e9 B, drafter", "drafter")
    assert float(drafter.get("width")) == pytest.approx(x_length(root, catalog.models["deepseek-v4-flash"]["drafter"]["weights"].value // 2), abs=0.02)


# --- the start-up timeline and the guard ---------------------------------------------------


def dots(root: ET.Element, name: str) -> list[ET.Element]:
    return [c for c in svg_of(root).iter("circle") if c.get("data-name") == name]


def test_startup_timeline_places_each_poll_and_the_prefetch_line(catalog) -> None:
    c = charts.startup_timeline(catalog)
    root = drawn(c)
    polls = dots(root, "MemAvailable")
    assert [(float(p.get("data-x")), int(p.get("data-y"))) for p in polls] == [
        (0, 120919 * MiB),
        (23, 119280 * MiB),
        (25, 68501 * MiB),
        (30, 45826 * MiB),
        (40, 44674 * MiB),
    ]
    svg = svg_of(root)
    y0, y1 = float(svg.get("data-y0")), float(svg.get("data-y1"))
    high = c.y.high
    for p in polls:
        assert float(p.get("cy")) == pytest.approx(y0 + float(Fraction(int(p.get("data-y")), high)) * (y1 - y0), abs=0.02)
    # 75 GB is prefetched while 75e9 <= 0.9 x available: at least 83,333,333,334 B (77.61 GiB)
    rules = {r.get("class"): int(r.get("data-value")) for r in svg.iter("line") if r.get("class", "").startswith("rule")}
    assert rules["rule tone-prefetch"] == 83_333_333_334
    assert rules["rule tone-floor"] == 8 * GiB
    # 83,333,333,334 B is 77.6102 GiB: a least MemAvailable, rounded up so that the printed figure suffices
    assert "prefetch size rule: 77.7 GiB" in labels(root)
    assert "77.62 GiB" in dict(c.figures).values()
    assert [e.get("data-x") for e in svg.iter("g") if e.get("class") == "event"] == ["23", "25", "40"]
    # 119280 - 68501 MiB in the kernel-init window, by hand 49.59 GiB
    assert "49.6 GiB of it in the kernel init" in c.summary
    assert figures_table(root)["40 s"] == "44,674 MiB (43.63 GiB)"


def test_guard_trace_without_a_kill_says_so(catalog) -> None:
    c = charts.guard_trace(catalog)
    assert "No kill" in c.summary and "43.6 GiB at 40 s" in c.summary
    assert not c.events


def test_guard_plot_marks_the_kill_at_the_third_poll_under_the_floor() -> None:
    samples = [(0, 10 * GiB), (2, 7 * GiB), (4, 7 * GiB), (6, 7 * GiB), (8, 9 * GiB)]
    c = charts.guard_plot("guard-test", samples, 8 * GiB, 3)
    root = drawn(c)
    kills = [e for e in svg_of(root).iter("g") if e.get("class") == "event"]
    assert [(k.get("data-x"), k.get("data-y")) for k in kills] == [("6", str(7 * GiB))]
    assert [int(d.get("data-y")) for d in dots(root, "poll under the floor")] == [7 * GiB] * 3
    assert c.summary == "3 polls in a row under the 8 GiB floor: the guard kills the rank at 6 s."


# --- tokens against max_model_len ----------------------------------------------------------


def test_length_fit_curves_pass_through_the_readings(catalog) -> None:
    c = charts.length_fit(catalog)
    root = drawn(c)
    readings = [(int(d.get("data-x")), int(d.get("data-y"))) for d in dots(root, "tokens logged")]
    assert readings == [(50000, 398000), (500000, 2450000)]
    lines = [p for p in svg_of(root).iter("polyline")]
    assert len(lines) == 2  # one fit a pool end: 24 GiB and 25 GiB
    last = dots(root, "tokens logged")[-1]
    for line in lines:  # the fit is exact through two readings: the curve ends on the 500,000 reading
        x, y = line.get("points").split()[-1].split(",")
        assert (float(x), float(y)) == pytest.approx((float(last.get("cx")), float(last.get("cy"))), abs=0.02)
    fit = [f for f in charts.derive.length_fits(catalog) if f.pool == 24 * GiB][0]
    assert kv.tokens_at_length(fit.pool, fit.per_token, fit.fixed, 50000) == 398000
    assert figures_table(root)["logged at max_model_len 500,000"] == "2,450,000 tokens"


def test_length_fit_of_a_model_without_length_reports_is_named(catalog) -> None:
    with pytest.raises(InputError, match="models.yaml: glm-5.3-flash: found no length_reports"):
        charts.length_fit(catalog, "glm-5.3-flash")


# --- bytes per token, several models --------------------------------------------------------


def test_bytes_per_token_bars_follow_each_reading(catalog) -> None:
    c = charts.bytes_per_token(catalog)
    root = drawn(c)
    # the DeepSeek pair, pooled over gens 234/235/237: 36e9 B / 654,412 tokens = 55,011.2 B, kept
    # as printed, in whole bytes
    measured = [r for r in c.rows if r.label == "DeepSeek-V4-Flash-0731 NVFP4, fp8_ds_mla (measured)"][0]
    assert measured.segments[0].value == 55011 == round(Fraction(36 * GB, 290858 + 2 * 181777))
    assert measured.note == "55,011 B"
    rect = bar(root, "DeepSeek-V4-Flash-0731 NVFP4, fp8_ds_mla (measured)", "measured")
    assert float(rect.get("width")) == pytest.approx(x_length(root, 55011), abs=0.02)
    glm = bar(root, "GLM-5.3-Flash NVFP4, fp8 (published)", "published")
    assert int(glm.get("data-value")) == 6973
    kinds = {r.segments[0].name for r in c.rows}
    assert {"measured", "modeled", "published"} <= kinds


def test_plan_budget_stacks_the_residents_against_the_box(catalog) -> None:
    c = charts.plan_budget(catalog)
    root = drawn(c)
    total = catalog.boxes["dgx-spark"]["total_memory"].value
    rule = [r for r in svg_of(root).iter("line") if r.get("class") == "rule tone-available"][0]
    assert float(rule.get("x1")) == pytest.approx(x_at(root, total), abs=0.02)
    weights = [catalog.models[m]["weights"].value for m in ("example-27b-4bit", "example-70b-4bit")]
    drawn_weights = [int(r.get("data-value")) for r in svg_of(root).iter("rect")]
    assert drawn_weights == weights
    assert c.rows[0].note == f"{fmt(total - sum(weights), 'GiB', 1)} left"


def test_residents_over_the_box_say_by_how_much() -> None:
    c = charts.residents_chart("over", [Resident("a", 80 * GiB, 10 * GiB, 8 * GiB), Resident("b", 40 * GiB)], 128 * GiB)
    assert c.rows[0].note == "10.0 GiB over"
    assert c.summary.endswith("10.0 GiB more than it has.")


# --- the drawing itself ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["rank_holds", "pin_matrix", "startup_timeline", "guard_trace", "length_fit", "bytes_per_token", "plan_budget"])
def test_every_chart_is_labelled_for_every_reader(catalog, name) -> None:
    c = getattr(charts, name)(catalog)
    root = drawn(c)
    svg = svg_of(root)
    assert svg.get("role") == "img"
    ids = svg.get("aria-labelledby").split()
    named = {e.get("id"): "".join(e.itertext()) for e in root.iter() if e.get("id")}
    assert [named[i] for i in ids] == [c.title, c.summary]
    assert svg.get("viewBox").startswith(f"0 0 {chart.WIDTH} ")
    table = figures_table(root)
    assert table and all(table)  # every row names what it states
    region = root.find("details").find("div")
    assert (region.get("role"), region.get("tabindex")) == ("region", "0") and region.get("aria-label")


def test_ticks_are_round_and_inside_the_axis() -> None:
    assert chart.ticks(0, 150 * GiB, GiB) == [0, 50 * GiB, 100 * GiB, 150 * GiB]
    assert chart.nice_high(parse_size("120.9 GiB"), 10 * GiB) == 150 * GiB
    assert chart.nice_high(500000) == 500000
    assert chart.nice_high(2450000) == 2500000


# --- the calculators draw the same charts ---------------------------------------------------


def chart_in(html_text: str) -> ET.Element:
    found = re.search(r'<figure class="chart".*?</figure>', html_text)
    assert found, "no chart in the calculator's result"
    return ET.fromstring(found.group(0))


def test_the_start_calculator_draws_its_needs_against_each_box(catalog) -> None:
    raw = dict(calc_html.start_defaults(catalog, DSV4).values)
    raw.update({"pin": "20e9", "drafter": "on"})
    out = calc_html.run(catalog, "start", raw)
    root = chart_in(out.sections["start-result"])
    r = report.start_report(catalog, calc_html.parse_start(catalog, raw)[0])
    for n, b in enumerate(r.boxes):
        row = f"{b.box}: "
        assert [(e.get("data-name"), int(e.get("data-value"))) for e in svg_of(root).iter("rect") if e.get("data-row").startswith(row)] == [
            (t.name, t.bytes) for t in r.terms if t.bytes
        ]
        mark = [m for m in svg_of(root).iter("line") if m.get("class") == "mark tone-available"][n]
        assert float(mark.get("x1")) == pytest.approx(x_at(root, b.available_bytes), abs=0.02)
    assert fmt(r.needs_bytes, "GiB", 1) == "124.4 GiB" and "needs 124.4 GiB" in "".join(root.find("figcaption").itertext())


def test_the_planner_draws_what_is_typed(catalog) -> None:
    raw = dict(calc_html.plan_defaults(catalog).values)
    raw["kv_1"] = "20 GiB"
    root = chart_in(calc_html.run(catalog, "plan", raw).sections["plan-result"])
    name = catalog.models[raw["model_1"]]["name"]
    kv_bar = [e for e in svg_of(root).iter("rect") if e.get("data-name") == f"{name}: KV"]
    assert [int(e.get("data-value")) for e in kv_bar] == [20 * GiB]
    assert float(kv_bar[0].get("width")) == pytest.approx(x_length(root, 20 * GiB), abs=0.02)


def test_the_fit_calculator_draws_its_readings_and_prediction(catalog) -> None:
    d = calc_html.fit_defaults(catalog)
    root = chart_in(calc_html.run_fit(catalog, d.values).sections["fit-result"])
    logged = [(int(c.get("data-x")), int(c.get("data-y"))) for c in dots(root, "tokens logged")]
    assert logged == [
        (parse_count(d.values["length_1"]), parse_count(d.values["tokens_1"])),
        (parse_count(d.values["length_2"]), parse_count(d.values["tokens_2"])),
    ]
    predicted = dots(root, "predicted by the fit")
    assert [int(c.get("data-x")) for c in predicted] == [parse_count(d.values["predict"])]


def test_your_start_draws_its_needs_against_your_box(catalog) -> None:
    d = calc_html.defaults_of(catalog, "yourstart")
    out = calc_html.run(catalog, "yourstart", d.values)
    root = chart_in(out.sections["yourstart-result"])
    assert root.get("id") == "chart-yourstart-needs"
    bars = [(e.get("data-name"), int(e.get("data-value"))) for e in svg_of(root).iter("rect")]
    shown = out.figures
    assert [name for name, _ in bars] == ["weights", "KV pin", "overhead", "start headroom"]
    assert fmt(sum(v for _, v in bars), "GiB") == shown["needs"]
    assert [fmt(v, "GiB") for _, v in bars] == [shown["term_weights"], shown["term_pin"], shown["term_overhead"], shown["term_headroom"]]


def test_the_prefetch_calculator_draws_the_checkpoint_against_the_limit(catalog) -> None:
    raw = {**calc_html.prefetch_defaults(catalog).values, "checkpoint": "75GB", "available": "44674MiB"}
    root = chart_in(calc_html.run(catalog, "prefetch", raw).sections["prefetch-result"])
    rules = {r.get("class"): int(r.get("data-value")) for r in svg_of(root).iter("line") if r.get("class", "").startswith("rule")}
    # by hand: 44,674 MiB = 46,844,084,224 B, and 90 % of it, to the byte below, 42,159,675,801 B
    assert rules == {"rule tone-available": 46_844_084_224, "rule tone-prefetch": 42_159_675_801}
    drawn_bar = bar(root, "checkpoint", "checkpoint")
    assert int(drawn_bar.get("data-value")) == 75 * GB
    assert float(drawn_bar.get("width")) == pytest.approx(x_length(root, 75 * GB), abs=0.02)
    assert any(text.endswith("above the size rule") for text in labels(root))  # after the bar, or on its label line


@pytest.mark.parametrize("name", ["rank_holds", "pin_matrix", "bytes_per_token"])
def test_a_rows_note_never_crosses_a_line_or_the_edge(catalog, name: str) -> None:
    """A note after a bar (a verdict, a total) stays clear of the marks and rules; one that would
    cross them is written on the row's label line, so every note is drawn once and readable."""
    from calc.present import chart, charts

    described = getattr(charts, name)(catalog)
    root = ET.fromstring(chart.svg(described))
    xs = [float(line.get("x1")) for line in root.iter("line") if "mark" in line.get("class", "") or "rule" in line.get("class", "")]
    texts = {"".join(t.itertext()): t for t in root.iter("text")}
    for row in described.rows:
        if not row.note:
            continue
        placed = [t for text, t in texts.items() if text == row.note and "row-note" in t.get("class", "")]
        on_label = all(line in texts for line in chart.wrap(chart.label_with_note(row), chart.WIDTH - 2 * chart.PAD))
        assert bool(placed) != on_label, row
        for t in placed:
            x0 = float(t.get("x"))
            x1 = x0 + chart.text_width(row.note, chart.SMALL)
            assert x1 <= chart.WIDTH and not any(x0 - 3 <= x <= x1 + 3 for x in xs), (row.note, x0, x1, xs)


def test_the_predicted_pool_stacks_the_terms_against_the_card(catalog) -> None:
    """Before the first start on an H100: each of calc/engine/predict's terms a bar as long as its
    bytes, the pool after them, the card's total and the requested share as lines; a start that
    leaves no pool draws none and says so."""
    import json
    from pathlib import Path

    from calc.engine import hfconfig, predict

    config = json.loads((Path(__file__).resolve().parent.parent / "models/configs/llama-3.1-8b/config.json").read_text())
    card = predict.card_of_box(catalog.boxes["h100-sxm"])
    p = predict.predict(hfconfig.shape(config, "llama"), card, predict.Start(max_model_len=16384, engine_version="0.21.0"))
    terms = [(t.name, t.bytes) for t in (p.weights, p.activation, p.non_torch, p.cuda_graph)]
    c = charts.predicted_pool(card.name, card.total_bytes, p.requested_bytes, terms, p.available_kv_bytes)
    root = drawn(c)
    for name, value in terms:
        assert float(bar(root, card.name, name.replace("_", " ")).get("width")) == pytest.approx(x_length(root, value), abs=0.05)
    assert float(bar(root, card.name, "KV pool").get("width")) == pytest.approx(x_length(root, p.available_kv_bytes), abs=0.05)
    table = figures_table(root)
    assert table["KV pool"] == fmt(p.available_kv_bytes, "GiB", 2) and table["card total"] == fmt(card.total_bytes, "GiB", 2)
    assert f"requested {fmt(p.requested_bytes, 'GiB', 1)}" in labels(root)
    # the sentence adds up as printed: requested less what the terms take is the pool (72.9 - 58.0 read 14.8)
    said = re.search(r"Of the ([0-9.]+) GiB .* take ([0-9.]+) GiB and leave a KV pool of ([0-9.]+) GiB", c.summary)
    assert said and Decimal(said[1]) - Decimal(said[2]) == Decimal(said[3])
    odd = charts.predicted_pool(
        "H100", 85_045_477_376, 78_241_839_186, [("weights", 57 * GiB + 10**9), ("activation_peak", 10**8)], 78_241_839_186 - 57 * GiB - 10**9 - 10**8
    )
    assert "take 58.1 GiB and leave a KV pool of 14.8 GiB" in odd.summary  # 58.03 taken, 14.84 left, 72.87 asked
    none = charts.predicted_pool("a small card", 8 * GiB, 7 * GiB, [("weights", 9 * GiB)], -2 * GiB)
    assert "leave no KV pool: vLLM refuses the start" in none.summary
    assert all(s.name != "KV pool" for s in none.rows[0].segments)


def test_svg_text_is_escaped_as_html_escape_does() -> None:
    import html

    from calc.present import chart

    for text in ("a & b", "<b>", "\"quoted\" 'single'", "plain", "9.31 GiB < 10 GB"):
        assert chart.esc(text) == html.escape(text, quote=True)
