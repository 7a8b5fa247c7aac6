"""Each calculator on a page of its own, in Chromium: readable at every width from a phone to a wide
desktop in both colour schemes, with JavaScript on and off; its inputs kept in the address, so a
link reopens the same result and back and forward step through earlier inputs; linked from the
pages that explain its figures. A screenshot of each calculator's result at each width is kept in
test-artifacts/calculators/."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from playwright.sync_api import Browser, Page

from calc.present import address
from calc.present import html as calc_html
from tests.serving import CHROMIUM
from tests.test_browser import BOOT_TIMEOUT_MS, figures_on, open_page, page_url

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts" / "calculators"
WIDTHS = (360, 768, 1024, 1280, 1920)
SCHEMES = ("light", "dark")
LOG = ROOT / "logs/public/04-v07-qwen25-32b-l40s-tp2.log"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"needs Debian's chromium at {CHROMIUM}")

# Text boxes of the page's results, tables and charts that are narrower than 24 px (a cell whose
# text runs one character a line); hidden and screen-reader-only text is left out.
NARROW = """() => [...document.querySelectorAll('.calc td, .calc th, .calc dd, .calc dt, .calc p, .calc li')]
  .filter(e => e.offsetParent && e.textContent.trim() && !e.closest('.calc-sr, [hidden]') && e.getBoundingClientRect().width < 24)
  .map(e => (e.closest('[id]') || {}).id + ': ' + e.tagName + ' ' + e.textContent.trim().slice(0, 30) + ' (' + Math.round(e.getBoundingClientRect().width) + ' px)')"""

# In every chart: two labels that overlap, or a note after a bar that crosses a line.
OVERLAPS = """() => {
  const out = [];
  const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  for (const svg of document.querySelectorAll('.calc svg.chart-svg')) {
    const texts = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim() && !t.classList.contains('on-bar'));
    const boxes = texts.map(t => t.getBoundingClientRect());
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++)
      if (hit(boxes[i], boxes[j])) out.push(texts[i].textContent + ' / ' + texts[j].textContent);
    for (const note of svg.querySelectorAll('text.row-note')) for (const line of svg.querySelectorAll('line.mark, line.rule')) {
      const l = line.getBoundingClientRect();
      if (hit(note.getBoundingClientRect(), {left: l.left - 1, right: l.right + 1, top: l.top, bottom: l.bottom})) out.push(note.textContent + ' crosses a line');
    }
  }
  return out;
}"""

# In every legend, each entry's swatch differs from the others in shape or colour.
LEGENDS = """() => [...document.querySelectorAll('.calc .chart-legend')].map(ul => [...ul.querySelectorAll('.swatch')]
  .map(s => s.className.replace(/tone-\\S+/, '') + ' ' + getComputedStyle(s).backgroundColor))"""


def context_for(browser: Browser, base_url: str, scheme: str, javascript: bool, width: int = WIDTHS[-1]) -> Page:
    """A fresh page in one colour scheme; Material's palette follows the system's preference."""
    page, _ = open_page(browser, base_url, viewport={"width": width, "height": 780}, color_scheme=scheme, java_script_enabled=javascript)
    return page


def check_widths(page: Page, calculator: str, label: str) -> list[str]:
    """Every width in turn: no sideways scroll of the page, no text box under 24 px, no chart label
    over another, legends that tell their series apart, and a screenshot of the result. From the
    widest down, as a window is narrowed (Material's header search, widened again from a phone's
    width, overhangs the page until it is reloaded: a theme matter, not the calculator's)."""
    problems = []
    for width in sorted(WIDTHS, reverse=True):
        page.set_viewport_size({"width": width, "height": 780})
        scroll = page.evaluate("document.documentElement.scrollWidth")
        if scroll > width:
            problems.append(f"{label} {width} px: the page scrolls sideways to {scroll} px")
        problems += [f"{label} {width} px: {n}" for n in page.evaluate(NARROW)]
        problems += [f"{label} {width} px: {n}" for n in page.evaluate(OVERLAPS)]
        for swatches in page.evaluate(LEGENDS):
            if len(set(swatches)) != len(swatches):
                problems.append(f"{label} {width} px: a legend shows one swatch for two series: {swatches}")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.locator(f"#{calculator}-calc").screenshot(path=str(ARTIFACTS / f"{calculator}-{label.replace(' ', '-')}-{width}.png"))
    return problems


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("calculator", calc_html.CALCULATORS)
def test_every_calculator_reads_at_every_width_with_javascript_off(browser, base_url, calculator: str, scheme: str) -> None:
    page = context_for(browser, base_url, scheme, javascript=False)
    page.goto(page_url(base_url, calculator))
    try:
        assert check_widths(page, calculator, f"{scheme} js-off") == []
    finally:
        page.context.close()


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("calculator", calc_html.CALCULATORS)
def test_every_calculator_reads_at_every_width_once_python_has_loaded(browser, base_url, calculator: str, scheme: str) -> None:
    page = context_for(browser, base_url, scheme, javascript=True)
    page.goto(page_url(base_url, calculator))
    try:
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        if calculator == "yourstart":  # with a log, its table of what the log says quotes long lines
            page.evaluate(
                "t => { const a = document.getElementById('yourstart-log'); a.value = t; a.dispatchEvent(new Event('input', { bubbles: true })); }",
                LOG.read_text(),
            )
            # its total, 44.42 GiB, fits four cards of 48 GB: the page asks which, and the reader picks the L40S it ran on
            page.wait_for_function("document.getElementById('yourstart-box-src').textContent.includes('choose the one it was taken on')")
            page.select_option("#yourstart-box", "l40s")
            page.wait_for_function("document.querySelector('#yourstart-result .calc-line') !== null")
            line = page.locator("#yourstart-result .calc-line").first
            assert line.get_attribute("role") == "region" and line.get_attribute("tabindex") == "0" and line.get_attribute("aria-label").startswith("Log line ")
        assert check_widths(page, calculator, f"{scheme} js-on") == []
    finally:
        page.context.close()


def test_on_a_phone_the_verdict_stays_in_view_and_small_and_nothing_covers_it(browser, base_url) -> None:
    page = context_for(browser, base_url, "light", javascript=True, width=360)
    page.goto(page_url(base_url, "start"))
    try:
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        page.wait_for_function("typeof window.document$ === 'object'", timeout=20_000)  # Material runs once Python has loaded
        page.fill("#start-pin", "20e9")  # a refused start: the longest verdict
        page.mouse.wheel(0, 3000)
        page.mouse.wheel(0, -400)  # scrolling up is when Material shows "Back to top"
        page.wait_for_function("!document.querySelector('.md-top').hidden", timeout=20_000)  # it has: the scrolling has settled
        verdict = page.locator("#start-verdict").bounding_box()
        assert verdict["height"] <= 780 / 5, verdict
        assert 0 <= verdict["y"] and verdict["y"] + verdict["height"] <= 780
        assert not page.locator(".md-top").is_visible()
    finally:
        page.context.close()


def query(page: Page) -> dict[str, str]:
    return dict(parse_qsl(urlsplit(page.url).query, keep_blank_values=True))


def test_a_link_reopens_the_same_inputs_and_result_and_history_steps_through_them(browser, base_url, catalog) -> None:
    page, _ = open_page(browser, base_url)
    try:
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        assert urlsplit(page.url).query == ""
        page.fill("#start-pin", "20e9")
        page.check("#start-drafter")
        page.dispatch_event("#start-drafter", "change")
        assert query(page) == {"kv_cache_memory_bytes": "20e9", "drafter": "on"}  # vLLM's names for its settings
        refused = figures_on(page, "start")
        assert refused["verdict"] == "refused"
        link = page.url
        page.fill("#start-pin", "12e9")
        page.dispatch_event("#start-pin", "change")
        assert query(page) == {"kv_cache_memory_bytes": "12e9", "drafter": "on"}
        page.go_back()
        page.wait_for_function("document.getElementById('start-pin').value === '20e9'")
        assert figures_on(page, "start") == refused
        page.go_forward()
        page.wait_for_function("document.getElementById('start-pin').value === '12e9'")
        expected = calc_html.run(catalog, "start", {**calc_html.defaults_of(catalog, "start").values, "pin": "12e9", "drafter": "on"}).figures
        assert figures_on(page, "start") == expected
    finally:
        page.context.close()
    fresh, _ = open_page(browser, base_url)  # a colleague's browser: nothing shared but the link
    try:
        fresh.goto(link + "&seats_old=8&deployment=bogus")
        fresh.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        fresh.wait_for_function("document.getElementById('start-result').dataset.state === 'valid'")
        assert fresh.input_value("#start-pin") == "20e9" and fresh.is_checked("#start-drafter")
        assert figures_on(fresh, "start") == refused
        note = fresh.text_content("#start-address")
        assert fresh.is_visible("#start-address") and "'seats_old' (not a field of this calculator)" in note
        assert "'deployment' ('bogus' is not one of its choices)" in note  # the default deployment kept, and said
    finally:
        fresh.context.close()
    older, _ = open_page(browser, base_url)  # a link as the site wrote it before, with the fields' own names
    try:
        older.goto(link.split("?")[0] + "?pin=20e9&drafter=on")
        older.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        older.wait_for_function("document.getElementById('start-result').dataset.state === 'valid'")
        assert older.input_value("#start-pin") == "20e9" and older.is_checked("#start-drafter")
        assert figures_on(older, "start") == refused and older.is_hidden("#start-address")  # nothing dropped
    finally:
        older.context.close()


def test_a_pasted_log_travels_compressed_and_one_too_long_is_offered_to_copy(browser, base_url, catalog) -> None:
    text = LOG.read_text()
    page, _ = open_page(browser, base_url, calculator="yourstart")
    try:
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        paste = "t => { const a = document.getElementById('yourstart-log'); a.value = t; a.dispatchEvent(new Event('input', { bubbles: true })); }"
        page.evaluate(paste, text)
        packed = query(page)["log"]
        assert packed.startswith("~") and address.unpack(packed) == text
        shown = figures_on(page, "yourstart")
        link = page.url
        noise = "".join(f"line {i}: {i * 7919 % 104729:x} {i * 104723 % 7919:o}\n" for i in range(4000))
        page.evaluate(paste, text + noise)
        assert "log" not in query(page)
        assert page.is_visible("#yourstart-address") and "leaves out" in page.text_content("#yourstart-address")
        assert page.get_attribute("#yourstart-address button", "data-clipboard-target") == "#yourstart-log"
    finally:
        page.context.close()
    fresh, _ = open_page(browser, base_url, calculator="yourstart")
    try:
        fresh.goto(link)
        fresh.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        fresh.wait_for_function("document.getElementById('yourstart-result').dataset.state !== 'pending'")
        assert fresh.input_value("#yourstart-log") == text
        assert figures_on(fresh, "yourstart") == shown
    finally:
        fresh.context.close()


def test_the_home_page_and_the_explaining_pages_link_to_the_calculators_with_their_numbers(browser, base_url) -> None:
    page, _ = open_page(browser, base_url, java_script_enabled=False)
    try:
        page.goto(base_url)
        page.click("text=Your start: paste your engine's log")
        assert urlsplit(page.url).path.endswith("/calculator/your-start/")
        page.goto(base_url + "memory-budget/")
        link = page.locator("a.calc-link", has_text="in the start-gate calculator")
        href = link.get_attribute("href")
        assert dict(parse_qsl(urlsplit(href).query)) == {"kv_cache_memory_bytes": "20e9", "drafter": "on"}
    finally:
        page.context.close()
    live, _ = open_page(browser, base_url)
    try:
        live.goto(base_url + "memory-budget/")
        live.click("a.calc-link >> text=in the start-gate calculator")
        live.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        live.wait_for_function("document.getElementById('start-result').dataset.state === 'valid'")
        assert live.input_value("#start-pin") == "20e9" and figures_on(live, "start")["verdict"] == "refused"
    finally:
        live.context.close()


def test_every_link_to_a_calculator_in_the_built_pages_is_taken_whole(site, catalog) -> None:
    """Each "with your numbers" link names only fields its calculator has, and they give a result."""
    import re

    found = 0
    for html_file in site.rglob("*.html"):
        for href in re.findall(r'class="calc-link" href="([^"]+)"', html_file.read_text(encoding="utf-8")):
            target = urlsplit(href.replace("&amp;", "&"))
            name = next(c for c, slug in calc_html.PAGES.items() if target.path.rstrip("/").endswith(f"calculator/{slug}"))
            names = [f.name for f in calc_html.fields_of(catalog, name)]
            restored = address.decode(parse_qsl(target.query, keep_blank_values=True), names)
            assert restored.dropped == (), href
            assert calc_html.run(catalog, name, {**calc_html.defaults_of(catalog, name).values, **restored.values}).valid, href
            found += 1
    assert found >= 6, found


def test_before_the_first_start_predicts_the_pool_on_a_discrete_card(browser, base_url, catalog) -> None:
    """In Chromium, under Pyodide: choosing an H100 clears the pin and the result becomes the pool
    predicted by calc/engine/predict/, term by term, with the catalog's accuracy band; the figures are
    the CPython run's of the same inputs, and a typed utilization out of range is refused beside
    its field."""
    page, _ = open_page(browser, base_url, calculator="before")
    try:
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        page.select_option("#before-box", "h100-sxm")
        page.dispatch_event("#before-box", "change")
        page.wait_for_function("document.getElementById('before-pin').value === ''")
        page.fill("#before-engine-version", "0.19.0")
        page.dispatch_event("#before-engine-version", "change")
        page.wait_for_function("document.querySelector('#before-calc [data-fig=\"band_median\"]') !== null")
        defaults = calc_html.defaults_of(catalog, "before").values
        moved = calc_html.changed(catalog, "before", "box", {**defaults, "box": "h100-sxm"})
        assert moved is not None
        raw = {
            **defaults,
            "box": "h100-sxm",
            **{k.removeprefix("before-").replace("-", "_"): v for k, v in moved["values"].items()},
            "engine_version": "0.19.0",
        }
        expected = calc_html.run(catalog, "before", raw)
        assert expected.valid and "pool" in expected.figures
        assert figures_on(page, "before") == expected.figures
        assert "Predicted on the NVIDIA H100 SXM" in page.text_content("#before-verdict")
        assert query(page)["box"] == "h100-sxm"
        page.fill("#before-utilization", "1.5")
        page.dispatch_event("#before-utilization", "change")
        page.wait_for_function("document.getElementById('before-result').dataset.state === 'invalid'")
        assert "gpu_memory_utilization: found '1.5'" in page.text_content("#before-calc")
    finally:
        page.context.close()


def test_pipeline_lora_and_offload_are_typed_shown_and_kept_in_the_link(browser, base_url, catalog) -> None:
    """Before the first start takes pipeline stages, LoRA slots and host memory, shows calc's
    figures for them and keeps them in its address; the start gate takes the offload flags."""
    typed = {"overhead": "4 GiB", "pipeline_parallel_size": "2", "enable_lora": "on", "max_loras": "2", "kv_offloading_size": "8"}
    expected = calc_html.run(catalog, "before", {**calc_html.defaults_of(catalog, "before").values, **typed}).figures
    assert {"stage0_weights", "stage1_kv", "lora", "kv_offloading", "term_host_buffers"} <= set(expected)
    page, _ = open_page(browser, base_url, calculator="before")
    try:
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        page.fill("#before-overhead", "4 GiB")
        page.fill("#before-pipeline-parallel-size", "2")
        page.check("#before-enable-lora")
        page.dispatch_event("#before-enable-lora", "change")
        page.fill("#before-max-loras", "2")
        page.fill("#before-kv-offloading-size", "8")
        page.dispatch_event("#before-kv-offloading-size", "change")
        page.wait_for_function("want => document.querySelector('#before-calc [data-fig=lora]')?.textContent === want", arg=expected["lora"])
        assert figures_on(page, "before") == expected
        assert query(page) == typed
        link = page.url
    finally:
        page.context.close()
    fresh, _ = open_page(browser, base_url, calculator="before")
    try:
        fresh.goto(link)
        fresh.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        fresh.wait_for_function("want => document.querySelector('#before-calc [data-fig=lora]')?.textContent === want", arg=expected["lora"])
        assert fresh.input_value("#before-pipeline-parallel-size") == "2" and fresh.is_checked("#before-enable-lora")
        assert figures_on(fresh, "before") == expected
    finally:
        fresh.context.close()
    gate = calc_html.run(catalog, "start", {**calc_html.defaults_of(catalog, "start").values, "kv_offloading_size": "8"}).figures
    page, _ = open_page(browser, base_url)
    try:
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        page.fill("#start-kv-offloading-size", "8")
        page.dispatch_event("#start-kv-offloading-size", "change")
        page.wait_for_function(
            "want => document.querySelector('#start-calc [data-fig=term_host_buffers]')?.textContent === want", arg=gate["term_host_buffers"]
        )
        assert figures_on(page, "start") == gate
        assert query(page) == {"kv_offloading_size": "8"}
    finally:
        page.context.close()
