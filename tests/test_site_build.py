"""The site build: every page from the catalog, and a build that fails when a figure disagrees."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest

from calc.engine import derive
from calc.present import charts
from calc.present.chart import figure_html
from calc.units import fmt
from hooks import runtime
from hooks.calculator_page import hold_theme_script
from hooks.figures import bare_figures
from hooks.runtime import browser_calc_files
from tests.sitebuild import ROOT, build, copy_project, edit

HAND_PAGES = (
    "",
    "memory-budget",
    "gb10-unified-memory",
    "kv-pool",
    "start-up-memory",
    "several-models",
    "calculator",
    "calculator/start-gate",
    "command-line",
    "catalog",
)


@pytest.fixture
def project(tmp_path):
    (tmp_path / "project").mkdir()
    return copy_project(tmp_path / "project")


def test_build_is_clean(shipped):
    assert "WARNING" not in shipped.output
    assert "Traceback" not in shipped.output


def test_every_page_is_built(shipped):
    site = shipped.site
    for page in HAND_PAGES:
        assert (site / page / "index.html").exists(), page


def test_one_generated_page_per_model_and_box(shipped, catalog):
    site = shipped.site
    for model_id, model in catalog.models.items():
        html = (site / "catalog" / "models" / model_id / "index.html").read_text()
        assert model["name"] in html
    for box_id, box in catalog.boxes.items():
        html = (site / "catalog" / "boxes" / box_id / "index.html").read_text()
        assert box["name"] in html
    # every page's navigation links the models' and the boxes' index, which link every page, with
    # no script needed; the navigation does not list each model, so it does not grow with them
    home = (site / "index.html").read_text()
    assert 'href="catalog/models/"' in home and 'href="catalog/boxes/"' in home
    models = (site / "catalog" / "models" / "index.html").read_text()
    boxes = (site / "catalog" / "boxes" / "index.html").read_text()
    for model_id in catalog.models:
        assert f'href="{model_id}/"' in models
        assert f"catalog/models/{model_id}/" not in home
    for box_id in catalog.boxes:
        assert f'href="{box_id}/"' in boxes
    # and searchable
    index = json.loads((site / "search" / "search_index.json").read_text())
    located = {doc["location"].split("#")[0] for doc in index["docs"]}
    for model_id in catalog.models:
        assert f"catalog/models/{model_id}/" in located


def test_the_calculators_prose_is_searchable_and_their_forms_and_results_are_not(shipped):
    index = json.loads((shipped.site / "search" / "search_index.json").read_text())
    calculator = " ".join(doc["title"] + " " + doc["text"] for doc in index["docs"] if doc["location"].startswith("calculator/"))
    assert "Paste what your own engine printed at startup" in calculator  # the page's prose
    assert "Will this start fit?" in calculator  # its headings
    for where, label in (("kv-pool", "Bytes per token from"), ("prefetch", "MemAvailable when loading starts"), ("start-gate", "Copy the flags")):
        page = (shipped.site / "calculator" / where / "index.html").read_text()
        assert label in page and label not in calculator, label  # a form's label, a result's text


def test_nothing_is_fetched_from_outside_the_site(shipped):
    site = shipped.site
    external = re.compile(r"""(?:src|href)=["'](?:https?:)?//""")
    for path in site.rglob("*.html"):
        text = path.read_text()
        hits = [m.group(0) for m in external.finditer(text) if "<link" in text[max(0, m.start() - 200) : m.start()] or "src=" in m.group(0)]
        assert not hits, f"{path}: {hits}"
    outside = re.compile(r"""(?:url\(|@import)\s*["']?(?:https?:)?//""")
    for path in site.rglob("*.css"):
        assert not outside.search(path.read_text(errors="ignore")), f"{path} loads from outside the site"


def test_the_calculators_python_and_runtime_ship_with_the_site(shipped):
    site = shipped.site
    for name in ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"):
        assert (site / "runtime" / "pyodide" / name).stat().st_size > 0
    assert not (site / "runtime" / "pyscript").exists()  # the early start runs the glue on Pyodide itself
    shipped_calc = sorted(str(p.relative_to(site / "py" / "calc")) for p in (site / "py" / "calc").rglob("*.py"))
    assert shipped_calc == browser_calc_files()
    shipped = runtime.shipped_calc(ROOT)  # the code without docstrings and comments (tests/test_runtime.py runs it)
    for path in shipped_calc:
        assert (site / "py" / "calc" / path).read_text(encoding="utf-8") == shipped[path]


def test_the_calculator_pages_hold_materials_script_and_no_other_page_does(shipped):
    from calc.present import html as calc_html

    bundle = re.compile(r'<script src="[^"]*assets/javascripts/bundle\.[0-9a-f]+\.min\.js">')
    for slug in calc_html.PAGES.values():
        calculator = (shipped.site / "calculator" / slug / "index.html").read_text(encoding="utf-8")
        assert not bundle.search(calculator), slug
        held = re.search(r'var src = "([^"]+)"', calculator)
        assert held and (shipped.site / "calculator" / slug / held.group(1)).is_file(), slug
        assert calculator.index(held.group(0)) < calculator.index('id="calc-status"')  # before the first paint of the page's body
    for page in HAND_PAGES:  # the calculators' index among them: it runs no Python, so Material's script runs as usual
        if not page.startswith("calculator/"):
            assert len(bundle.findall((shipped.site / page / "index.html").read_text(encoding="utf-8"))) == 1, page


def test_a_theme_without_the_script_to_hold_fails_the_build_naming_the_page():
    with pytest.raises(ValueError, match=r"calculator\.md: expected one <script src=.*found 0 such scripts and a header"):
        hold_theme_script('<header class="md-header"></header><!-- calc-runtime -->', "calculator.md")
    script = '<script src="../assets/javascripts/bundle.0a1b.min.js"></script>\n'
    with pytest.raises(ValueError, match=r"found 1 such scripts and no header"):
        hold_theme_script("<header></header>" + script, "calculator.md")
    held = hold_theme_script('<header class="md-header" data-md-component="header"><p></p></header><header></header>' + script, "calculator.md")
    assert '"../assets/javascripts/bundle.0a1b.min.js"' in held and "<script src=" not in held
    assert held.index("</header>") < held.index("var src") < held.index("<header></header>")


def test_the_search_worker_ships_with_lunrs_token_set_key_mended(shipped):
    """lunr's TokenSet merged nodes by a key that digit labels make ambiguous (hooks/site.py
    mend_token_set): the shipped worker writes a separator after each child's id, and a worker that
    no longer holds the code the mend replaces fails the build rather than ship unmended."""
    import mkdocs.exceptions

    from hooks.site import mend_token_set

    (worker,) = (shipped.site / "assets" / "javascripts" / "workers").glob("search.*.min.js")
    text = worker.read_text(encoding="utf-8")
    assert text.count('e=e+s+o.id+";"}return e') == 1 and "e=e+s+o.id}return e" not in text
    with pytest.raises(mkdocs.exceptions.PluginError, match=r"search\.x\.min\.js: lunr's TokenSet.toString not found"):
        mend_token_set(text, "search.x.min.js")


def test_only_what_the_page_loads_is_shipped(shipped):
    site = shipped.site
    # calc: what the browser imports, not the command line
    assert {"present/html.py", "catalog/spec.py", "units.py", "answers/report.py"} <= set(browser_calc_files())
    assert not {"present/cli.py", "answers/watch.py", "answers/ingest.py", "__main__.py"} & set(browser_calc_files())
    assert not [f for f in browser_calc_files() if f.startswith("present/commands/")]
    # Pyodide: no packages in the lock; the standard library cut, with what calc imports
    lock = json.loads((site / "runtime" / "pyodide" / "pyodide-lock.json").read_text())
    assert lock["packages"] == {} and lock["info"]["python"]
    with (
        zipfile.ZipFile(site / "runtime" / "pyodide" / "python_stdlib.zip") as kept,
        zipfile.ZipFile(ROOT / "node_modules" / "pyodide" / "python_stdlib.zip") as full,
    ):
        names = set(kept.namelist())
        assert names < set(full.namelist())
        for module in ("fractions.py", "decimal.py", "dataclasses.py", "json/__init__.py", "re/__init__.py", "_pyodide/__init__.py", "encodings/utf_8.py"):
            assert module in names, module
        for module in ("unittest/__init__.py", "tkinter/__init__.py", "email/__init__.py", "pydoc.py"):
            assert module not in names, module
    # no source maps anywhere
    assert not list(site.rglob("*.map"))
    for path in [*site.rglob("*.js"), *site.rglob("*.css"), *site.rglob("*.mjs")]:
        assert "sourceMappingURL" not in path.read_text(encoding="utf-8", errors="ignore")[-300:], path


def test_memory_budget_page_shows_the_catalogs_figures(shipped, catalog):
    html = (shipped.site / "memory-budget" / "index.html").read_text()
    row = derive.gate_row(catalog, "dsv4-flash-pair")
    assert fmt(row.weights.bytes, "GiB") in html
    assert fmt(row.overhead.bytes, "GiB", 1) in html
    for figure in ("108.1 GiB", "113.2 GiB", "110.0 GiB", "115.1 GiB", "115.6 GiB", "119.3 GiB", "124.4 GiB"):
        assert figure in html  # the source document's pin matrix
    # 16e9 with the drafter: the terms as printed, 79.29 + 5.06 + 14.90 + 13.40 + 8.00 = 120.65 (the document's 120.7)
    assert "120.65 GiB" in html and "120.7 GiB" in html


@pytest.mark.parametrize(
    ("page", "chart"),
    [
        ("memory-budget", "rank_holds"),
        ("memory-budget", "pin_matrix"),
        ("start-up-memory", "startup_timeline"),
        ("start-up-memory", "guard_trace"),
        ("kv-pool", "bytes_per_token"),
        ("kv-pool", "length_fit"),
        ("several-models", "plan_budget"),
    ],
)
def test_each_chart_is_in_its_page_as_svg(shipped, catalog, page, chart):
    """In the HTML itself, so it shows with JavaScript off: the same drawing calc gives."""
    drawn = figure_html(getattr(charts, chart)(catalog))
    assert drawn in shipped.page(page)


def test_cli_example_output_is_produced_at_build_time(shipped):
    text = shipped.text("memory-budget")
    assert "$ python -m calc gate --kv-cache-memory-bytes 20e9 --drafter" in text
    assert "Start: no, refused" in text


def test_the_calculators_package_ships_and_the_browser_is_told_to_fetch_it(shipped):
    from hooks.calculator_page import python_files

    nested = [p for p in browser_calc_files() if "/" in p]
    assert {p.split("/")[-1] for p in nested} >= {"form.py", "start.py", "kv.py", "fit.py", "plan.py", "prefetch.py", "__init__.py"}
    # a calculator that is a package ships whole: Your start's parts, and the log's verdict it imports
    assert {"present/calculators/yourstart/__init__.py", "present/calculators/yourstart/sections.py", "answers/logverdict/fixes.py"} <= set(nested)
    for path, text in runtime.shipped_calc(ROOT).items():
        assert (shipped.site / "py" / "calc" / path).read_text(encoding="utf-8") == text
    assert ("../py/calc/present/calculators/yourstart/__init__.py", "calc/present/calculators/yourstart/__init__.py") in python_files("../")
    assert 'id="calc-python-files">' in shipped.page("calculator/start-gate")
    assert ("../../py/calc/present/calculators/yourstart/__init__.py", "calc/present/calculators/yourstart/__init__.py") in python_files(
        "../../"
    )  # a calculator's page, two deep


def test_measure_your_start_is_the_main_path(shipped, catalog):
    """In the nav right after Home, linked from the home page, its commands run at build time."""
    home = shipped.page("")
    nav = re.findall(r'href="([^"#]*)" class="md-nav__link', home)
    first = [n for n in nav if n not in ("./", ".")][:1]
    assert first == ["measure-your-start/"], nav[:5]
    assert 'href="measure-your-start/"' in home.split('class="md-content"', 1)[1]
    text = shipped.text("measure-your-start")
    assert "$ python -m calc ingest docs/samples/1cat-237-v100-tp4.log" in text
    assert "KV tokens               215,401" in text
    assert "free memory             19.77 GiB (21,227,875,860 B) line 1" in text
    assert "$ python -m calc watch --proc docs/samples/meminfo-0.txt" in text and "Trace written to start.trace" in text
    assert f"catalog: {len(catalog.boxes)} boxes" in text
    assert (shipped.site / "samples" / "1cat-237-v100-tp4.log").exists()  # the reader can fetch the samples


def test_a_box_with_only_its_specification_says_what_the_gate_still_needs(shipped):
    text = shipped.text("catalog/boxes/jetson-agx-thor")
    assert "What the specification does not give." in text and "MemAvailable on the idle box" in text
    assert "128 GB" in text.split("Specification", 1)[1][:40]  # as the vendor writes it, not turned into GiB
    h100 = shipped.text("catalog/boxes/h100-sxm")
    assert "Total the driver reports" in h100 and "79.65 GiB" in h100  # 81,559 MiB
    assert "Total the engine sees" in h100 and "79.20 GiB" in h100  # 85,045,477,376 B
    assert "the free memory on the card when the engine starts" in h100


# --- failure modes ---------------------------------------------------------------------------


def test_a_changed_catalog_figure_changes_every_page_or_fails_the_build(project):
    """79.29 GiB of weights becomes 80.29: every page shows the new figure, or the build fails
    naming the checked literal that no longer holds."""
    edit(project / "catalog" / "starts.yaml", "value: 79.29 GiB", "value: 80.29 GiB")
    result = build(project)
    if result.returncode == 0:
        pages = result.all_html()
        assert any("80.29 GiB" in html for html in pages.values())
        stale = [p for p, html in pages.items() if re.search(r'class="fig"[^>]*>79\.29 GiB<', html)]
        assert not stale, stale
    else:
        assert re.search(r"docs/[\w/-]+\.md:\d+: the page says '[^']+', the catalog gives '[^']+'", result.output), result.output
        assert "Traceback" not in result.output


def test_a_figure_only_rendered_changes_everywhere(project):
    """A figure no page checks by hand: the published GLM bytes per token."""
    edit(project / "catalog" / "models.yaml", "value: 6973", "value: 7001")
    result = build(project)
    assert result.returncode == 0, result.output
    pages = result.all_html()
    assert any(">7,001<" in html for html in pages.values())
    assert not [p for p, html in pages.items() if ">6,973<" in html]


def append_line(page, text: str) -> int:
    """Add a paragraph at the end of a page; the number of the line it is on."""
    page.write_text(page.read_text() + f"\n{text}\n")
    return page.read_text().count("\n")


def test_a_wrong_figure_typed_into_a_page_fails_naming_it(project):
    line = append_line(project / "docs" / "memory-budget.md", 'The refused start needed {{ checked("125.4 GiB", needs("20e9", drafter=True)) }}.')
    result = build(project)
    assert result.returncode != 0
    assert f"docs/memory-budget.md:{line}: the page says '125.4 GiB', the catalog gives '124.4 GiB'" in result.output
    assert "starts.yaml: deployments[0].starts[1].weights_loaded" in result.output  # the catalog entry
    assert "Traceback" not in result.output


def test_a_figure_the_catalog_no_longer_gives_fails_naming_the_page(project):
    # a prefill budget outside the gate's calibration: calc answers "outside calibration", so the
    # figures the pages render from the gate are unknown
    starts = project / "catalog" / "starts.yaml"
    text = starts.read_text(encoding="utf-8")
    starts.write_text(text.replace("prefill_budget: 8192", "prefill_budget: 8765", 1), encoding="utf-8")
    result = build(project)
    assert result.returncode != 0
    assert "docs/kv-pool.md: fig: cannot render None as a figure" in result.output
    assert "Traceback" not in result.output


def test_a_value_a_macro_could_not_give_fails_naming_the_page_wherever_it_is_used(project):
    # a reading the catalog does not hold, then used by attribute, as an argument, in arithmetic
    # and in a comparison: one problem, the first, and no template traceback from the uses
    append_line(
        project / "docs" / "glossary.md",
        '{% set r = reading("deepseek-v4-flash", "no such label") %}Cost: {{ fig(r.bytes_per_token, "count") }}, '
        "{{ r.source }}, {{ r.bytes_per_token * 2 }}{% if r.bytes_per_token > 3 %} more{% endif %}, "
        '{{ fig(kv.tokens_for_pool(10**10, r.bytes_per_token), "count") }} tokens.',  # and handed to calc from the page
    )
    result = build(project)
    assert result.returncode != 0
    assert "docs/glossary.md: reading: reading('deepseek-v4-flash', 'no such label', None): found 0 readings, expected one" in result.output
    assert "cannot render" not in result.output  # the uses of the failed value add nothing
    assert "Traceback" not in result.output and "UndefinedError" not in result.output


def test_a_calc_function_a_page_calls_fails_naming_the_page(project):
    append_line(project / "docs" / "glossary.md", '{{ fig(kv.tokens_for_pool(10**10, 0), "count") }} tokens.')
    result = build(project)
    assert result.returncode != 0
    assert "docs/glossary.md: tokens_for_pool: " in result.output
    assert "Traceback" not in result.output


def test_a_bare_figure_fails_the_build(project):
    line = append_line(project / "docs" / "kv-pool.md", "One token costs 55,011 B on this pair.")
    result = build(project)
    assert result.returncode != 0
    assert f"docs/kv-pool.md:{line}: bare figure '55,011 B'" in result.output


# Each kind of figure the contract covers, written by hand into a page or produced by a macro:
# the build fails on every one, naming it.
BARE_KINDS = {
    "seconds": ("Generation 235 took 357 s to start.", "357 s"),
    "a fraction": ("Serve at a fraction of 0.93 on this box.", "0.93"),
    "a count with its noun": ("The pair runs 8 seats.", "8 seats"),
    "a grouped count": ("A prefill budget of 16,384 hung both boxes.", "16,384"),
    "full contexts": ("The pool holds 12.7 full contexts.", "12.7 full contexts"),
    "a rate": ("It decodes 28.8 tok/s on one stream.", "28.8 tok/s"),
    "a power of ten": ("The pin is 9.4 x 10^9 bytes.", "9.4 x 10^9"),
    "a percentage in words": ("The drafter takes 50 percent of it.", "50 percent"),
    "a plain table cell": ("\n| Seats | Note |\n|---|---|\n| 16 | calibration |\n", "16"),
}
GENERATED_KINDS = {
    "text a macro produces": ('{{ "The pair has " ~ deployment().settings.seats ~ " seats." }}', "8 seats"),
    "a table cell a macro produces": ("{{ '\\n| Gen | Note |\\n|---|---|\\n| ' ~ gen(235).init_seconds.value ~ ' | x |' }}", "357"),
}


def test_every_kind_of_bare_figure_fails_the_build(project):
    """One build with one figure of every kind appended to a page, each by hand and by macro."""
    page = project / "docs" / "kv-pool.md"
    lines = {kind: append_line(page, text) for kind, (text, _) in BARE_KINDS.items()}
    for text, _ in GENERATED_KINDS.values():
        append_line(page, text)
    result = build(project)
    assert result.returncode != 0
    for kind, (_, figure) in BARE_KINDS.items():
        shown = [line for line in result.output.splitlines() if f"bare figure {figure!r}" in line]
        assert shown, f"{kind}: the build did not name {figure!r}\n{result.output[-3000:]}"
        if kind != "a plain table cell":
            assert any(f"docs/kv-pool.md:{lines[kind]}:" in line for line in shown), f"{kind}: not named at its line"
    for kind, (_, figure) in GENERATED_KINDS.items():
        assert any("as rendered" in line and f"bare figure {figure!r}" in line for line in result.output.splitlines()), f"{kind}: {figure!r} not named"
    assert "Traceback" not in result.output


def test_a_bad_catalog_entry_fails_the_build_with_its_message(project):
    edit(project / "catalog" / "starts.yaml", "value: 79.29 GiB", "value: 79.29 GiG")
    result = build(project)
    assert result.returncode != 0
    assert "starts.yaml: deployments[0].starts[1].weights_loaded.value: found '79.29 GiG'" in result.output
    assert "Traceback" not in result.output


def test_adding_a_model_adds_its_page_with_no_other_edit(project):
    models = project / "catalog" / "models.yaml"
    models.write_text(
        models.read_text()
        + """
  - id: new-model-9b
    name: New Model 9B
    weights:
      value: 5.5 GiB
      kind: shard headers
      source: safetensors shard headers
"""
    )
    result = build(project)
    assert result.returncode == 0, result.output
    html = (result.site / "catalog" / "models" / "new-model-9b" / "index.html").read_text()
    assert "New Model 9B" in html and "5.50 GiB" in html
    assert 'href="new-model-9b/"' in (result.site / "catalog" / "models" / "index.html").read_text()


def test_an_undefined_macro_name_fails_the_build(project):
    page = project / "docs" / "index.md"
    page.write_text(page.read_text() + "\n{{ no_such_macro }}\n")
    result = build(project)
    assert result.returncode != 0


# --- the bare-figure scanner ----------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "On 2026-10-24 the operator asked.",
        "vLLM 0.26.0 and nightly 2026-10-15, image v0.26.0-aarch64.",
        "Qwen3.8 27B dense on a GB10 box, RTX 5090, TP=2, SM 12.1.",
        "Set `--kv-cache-memory-bytes 10000000000` and `--max-num-seqs 8`.",
        "A figure {{ fig(x) }} and a check {{ checked('110.0 GiB', y) }}.",
        '<span class="fig" title="measured">79.29 GiB</span>',
        "```python exec=\"on\"\nprint('10 GiB')\n```",
        "Generation 235, gen 234/235/237, issue 51041, PR 37673, engine 2, section 3.2.",
        "Two DGX Sparks over 200 GbE; container 26.07-py3; SM 12.1; sm121-v11.",
        '<span class="src">MemAvailable 117.2 GiB before</span>',
    ],
)
def test_not_a_bare_figure(text):
    assert bare_figures(text) == []


@pytest.mark.parametrize(
    "text, figure",
    [
        ("holds 102.0 GiB", "102.0 GiB"),
        ("a 10e9 B pin", "10e9 B"),
        ("55,011 B per token", "55,011 B"),
        ("181,777 tokens", "181,777 tokens"),
        ("an 8,192-token prefill", "8,192-token"),
        ("1.39x", "1.39x"),
        ("saves 40 %", "40 %"),
        ("~114.5 GiB free", "~114.5 GiB"),
        ("```\nModel loading took 79.29 GiB\n```", "79.29 GiB"),
        ("1.67 M tokens", "1.67 M tokens"),
        ("took 357 s", "357 s"),
        ("3 polls in a row", "3 polls"),
        ("a fraction of 0.93", "0.93"),
        ("| 16 |", "16"),
    ],
)
def test_bare_figure(text, figure):
    assert [f for _, f in bare_figures(text)] == [figure]


def test_a_claim_that_no_longer_holds_fails_the_build(project):
    """'0.99 or 1.0 can never start' on the RTX 5090 node is checked against calc: with more free
    memory at start than the card's total asks at 0.99, the build fails naming the claim."""
    edit(project / "catalog" / "boxes.yaml", "value: 30.85 GiB", "value: 31.20 GiB")
    result = build(project)
    assert result.returncode != 0
    assert "docs/kv-pool.md:" in result.output
    assert "the page says 0.99 or 1.0 can never start on RTX 5090 node, but calc passes 0.99" in result.output


def test_serve_rebuilds_on_edits_to_the_catalog_calc_and_hooks():
    from mkdocs.config import load_config

    config = load_config(str(ROOT / "mkdocs.yml"))
    watched = {Path(p).resolve() for p in config["watch"]}
    assert {ROOT / "catalog", ROOT / "calc", ROOT / "hooks"} <= watched


def test_jargon_is_defined_once_and_linked_where_it_first_appears(shipped):
    glossary = shipped.page("glossary")
    terms = ("seat", "pin", "dspark", "mtp", "rank", "tp", "headroom", "drafter", "memavailable", "source-document", "several-models-guide")
    for anchor in terms:
        assert f'id="{anchor}"' in glossary, f"the glossary has no entry #{anchor}"
    linked = {anchor for page in HAND_PAGES if page for anchor in re.findall(r'href="(?:\.\./)+glossary/#([\w-]+)"', shipped.page(page))}
    assert {"seat", "pin", "dspark", "rank", "tp", "headroom", "source-document", "several-models-guide"} <= linked


def test_a_figures_source_is_reachable_without_a_mouse(shipped):
    """Every figure with a source can take focus (Tab, or a tap), and the stylesheet shows the source on focus."""
    page = shipped.page("memory-budget")
    spans = re.findall(r'<span class="fig"[^>]*>', page)
    assert spans and all('tabindex="0"' in s and "title=" in s for s in spans)
    css = (shipped.site / "stylesheets" / "site.css").read_text()
    assert ".fig[title]:focus::after" in css and "attr(title)" in css


def test_page_templates_are_kept_until_their_text_or_the_code_that_compiles_them_changes(tmp_path: Path):
    """The compiled page templates come from the build cache only while the page's text, and the
    hooks and calc that Jinja runs while compiling (a filter over a constant), are unchanged."""
    import jinja2

    from hooks.templates import CompiledTemplates

    (tmp_path / "hooks").mkdir()
    (tmp_path / "calc").mkdir()
    (tmp_path / "hooks" / "filters.py").write_text("SHOUT = '!'\n")

    def build_once(shout: str) -> tuple[str, int]:
        environment = jinja2.Environment()
        environment.filters["shout"] = lambda value: value + shout
        kept = CompiledTemplates(environment, tmp_path)
        fresh = []
        environment.compile = kept.compile
        kept.compile_anew = lambda *args: fresh.append(args) or jinja2.Environment.compile(environment, *args)
        page = environment.from_string("{{ 'fits' | shout }}").render()
        kept.save()
        return page, len(fresh)

    assert build_once("!") == ("fits!", 1)
    assert build_once("!") == ("fits!", 0)  # the same text and sources: read from the cache
    (tmp_path / "hooks" / "filters.py").write_text("SHOUT = '?'\n")  # the filter's code changed
    assert build_once("?") == ("fits?", 1)
    (tmp_path / "hooks" / "pagemacros").mkdir()  # the macros' modules, in a package under hooks/
    (tmp_path / "hooks" / "pagemacros" / "every_page.py").write_text("SHOUT = '?'\n")
    assert build_once("?") == ("fits?", 1)
    assert build_once("?") == ("fits?", 0)
    (tmp_path / "hooks" / "pagemacros" / "every_page.py").write_text("SHOUT = '!'\n")
    assert build_once("!") == ("fits!", 1)
