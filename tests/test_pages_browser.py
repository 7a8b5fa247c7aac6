"""Every built page in a real Chromium: no page scrolls sideways on a 360 px phone, axe-core finds
nothing in our own content in either colour scheme, each chart draws (a screenshot, decoded here,
holds the chart's own colours) and stays legible at 360 px, and the search finds a flag or a
model's name as the pages write it.

The calculator's Python is covered by test_browser.py; here its runtime is refused, so each load
shows the build-time result without booting Pyodide again.
"""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import pytest

from tests.serving import CHROMIUM

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
PHONE = {"width": 360, "height": 740}
SCHEMES = ("default", "slate")

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"needs Debian's chromium at {CHROMIUM}")

# Violations in Material for MkDocs 9.8.1 itself, not in our pages: rule -> the one selector it flags.
THEME = {
    # the search overlay is a role="dialog" without a name
    "aria-dialog-name": re.compile(r"^\.md-search$"),
    # navigation.indexes: a section's <nav> is labelled by a <label> that holds only an icon, so
    # two such sections' landmarks have the same (empty) name
    "landmark-unique": re.compile(r'^nav\[aria-labelledby="__nav_\d+_label"\]$'),
}


def pages(site: Path) -> list[str]:
    return sorted("" if p.parent == site else f"{p.parent.relative_to(site).as_posix()}/" for p in site.rglob("index.html"))


# Counts the messages Material's search sends its worker and the results the worker sends back:
# `asked`, what Material posted (site.js may hold a setup message back), `sent`, what reached the
# worker, by type (0 setup, 2 query), and `results`. site.js wraps Worker.prototype.postMessage
# when it runs: it gets the function that counts what reaches the worker, and Material, which
# posts later, the one that counts what it asked for and calls site.js's.
SEARCH_MESSAGES = """(() => {
  const counts = (window.__searchMessages = { asked: [0, 0, 0], sent: [0, 0, 0], results: 0 });
  const native = Worker.prototype.postMessage;
  let current = native;
  const count = (which, message) => { if (message && message.type in which) which[message.type] += 1; };
  function reach(message, ...rest) { count(counts.sent, message); return native.call(this, message, ...rest); }
  function asked(message, ...rest) { count(counts.asked, message); return current.call(this, message, ...rest); }
  Object.defineProperty(Worker.prototype, "postMessage", {
    configurable: true,
    get: () => (current === native ? reach : asked),
    set: (wrapper) => { current = wrapper; },
  });
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => { if (event.data && event.data.type === 3) counts.results += 1; });
    }
  };
})();"""
MATERIAL_RAN = "typeof window.document$ === 'object'"  # Material's script publishes its streams
# Material has run and wrapped each plain table in the element that scrolls it sideways.
TABLES_WRAPPED = f"{MATERIAL_RAN} && Array.from(document.querySelectorAll('.md-typeset table:not([class])')).every(t => t.closest('.md-typeset__scrollwrap'))"
NEXT_FRAME = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"  # laid out and painted


def open_page(browser, base_url: str, path: str, scheme: str = "default", viewport: dict = PHONE):
    """A page in its own context, in one colour scheme, with the calculator's runtime refused."""
    context = browser.new_context(viewport=viewport, color_scheme="dark" if scheme == "slate" else "light")
    origin = base_url.split("/sub/")[0]
    context.route("**/*", lambda route: route.abort() if not route.request.url.startswith(origin) or "/runtime/" in route.request.url else route.continue_())
    context.add_init_script(SEARCH_MESSAGES)
    page = context.new_page()
    page.goto(base_url + path)
    page.evaluate("scheme => document.body.setAttribute('data-md-color-scheme', scheme)", scheme)
    page.wait_for_function(TABLES_WRAPPED, timeout=20_000)  # on a calculator's page, once Python has failed to start
    page.evaluate(NEXT_FRAME)
    return page


def test_no_page_scrolls_sideways_at_360_px(browser, base_url, site) -> None:
    wide = {}
    for path in pages(site):
        page = open_page(browser, base_url, path)
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            wide[path or "/"] = width
        page.context.close()
    assert len(pages(site)) > 10
    assert wide == {}, f"pages wider than {PHONE['width']} px: {wide}"


def test_no_table_scrolls_in_its_frame_at_1920_px(browser, base_url, site) -> None:
    """On a desktop screen the grid grows past Material's 61rem and a table of nine columns or more
    wraps its headers, so every table (the public starts' among them) fits beside the sidebars."""
    framed = {}
    for path in pages(site):
        page = open_page(browser, base_url, path, viewport={"width": 1920, "height": 1080})
        over = page.evaluate(
            "() => Array.from(document.querySelectorAll('.md-typeset__scrollwrap')).filter(w => w.scrollWidth > w.clientWidth + 1)"
            ".map(w => [(w.querySelector('th') || w).innerText.slice(0, 30), w.scrollWidth, w.clientWidth])"
        )
        if over:
            framed[path or "/"] = over
        page.context.close()
    assert framed == {}, f"tables that scroll inside their frame at 1920 px: {framed}"


@pytest.mark.parametrize("scheme", SCHEMES)
def test_axe_finds_no_violation_in_our_content(browser, base_url, site, scheme) -> None:
    found, theme_seen = [], set()
    for path in pages(site):
        page = open_page(browser, base_url, path, scheme)
        assert page.evaluate("document.body.getAttribute('data-md-color-scheme')") == scheme
        page.add_script_tag(path=str(AXE))
        violations = page.evaluate(
            "axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(v => [v.id, v.nodes.map(n => n.target.join(' '))]))"
        )
        for rule, targets in violations:
            for target in targets:
                if rule in THEME and THEME[rule].match(target):
                    theme_seen.add(rule)
                else:
                    found.append(f"{path or '/'}: {rule}: {target}")
        page.context.close()
    assert found == [], "axe-core violations:\n" + "\n".join(found)
    assert theme_seen == set(THEME), f"a theme exclusion no longer matches anything, drop it: {set(THEME) - theme_seen}"


# --- charts ---------------------------------------------------------------------------------


def png_pixels(data: bytes) -> set[tuple[int, int, int]]:
    """The distinct colours of an 8-bit RGB or RGBA PNG (what Chromium writes), decoded here."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, *_ = header
    assert depth == 8 and colour in (2, 6), f"PNG of depth {depth}, colour type {colour}"
    bpp = 3 if colour == 2 else 4
    raw, stride = zlib.decompress(b"".join(chunks)), width * bpp
    previous, colours = bytearray(stride), set()
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        colours.update(tuple(line[x : x + 3]) for x in range(0, stride, bpp))
        previous = line
    return colours


def rgb(css: str) -> tuple[int, int, int]:
    return tuple(int(n) for n in re.findall(r"\d+", css)[:3])


def test_every_chart_draws_in_both_schemes_and_is_legible_at_360_px(browser, base_url, site, tmp_path_factory) -> None:
    shots = tmp_path_factory.mktemp("charts")
    charted = [p for p in pages(site) if 'class="chart"' in (site / p / "index.html").read_text(encoding="utf-8")]
    assert {"memory-budget/", "start-up-memory/", "kv-pool/", "several-models/", "calculator/start-gate/", "calculator/your-start/"} <= set(charted)
    fills: dict[str, dict[str, tuple]] = {}
    count = 0
    for scheme in SCHEMES:
        for path in charted:
            page = open_page(browser, base_url, path, scheme)
            for figure in page.locator("figure.chart").all():
                chart_id = figure.get_attribute("data-chart")
                svg = figure.locator("svg")
                svg.scroll_into_view_if_needed()
                data = svg.screenshot(path=str(shots / f"{chart_id}-{scheme}.png"))
                colours = png_pixels(data)
                # the first bar or point's fill, as the scheme's stylesheet computes it, is on the screenshot
                fill = rgb(svg.locator(".seg, .dot").first.evaluate("e => getComputedStyle(e).fill"))
                assert fill in colours, f"{chart_id} ({scheme}): its colour {fill} is not on the screenshot"
                assert len(colours) >= 6, f"{chart_id} ({scheme}): {len(colours)} colours, a blank picture?"
                fills.setdefault(chart_id, {})[scheme] = fill
                box = svg.bounding_box()
                assert box["width"] <= PHONE["width"]
                smallest = svg.evaluate("s => Math.min(...Array.from(s.querySelectorAll('text'), t => t.getBoundingClientRect().height).filter(h => h > 0))")
                assert smallest >= 9, f"{chart_id}: text {smallest:.1f} px high at {PHONE['width']} px"
                count += 1
            page.context.close()
    assert count >= 2 * 9
    assert all(f["default"] != f["slate"] for f in fills.values()), "a chart keeps its light colours in the dark scheme"


# --- search ---------------------------------------------------------------------------------


def search(page, query: str) -> list[str]:
    """The pages Material's search lists for a query typed into the search box."""
    page.fill("input.md-search__input", "")
    page.type("input.md-search__input", query, delay=10)
    page.wait_for_function(  # the worker has answered every query sent, the last one for the whole query
        "q => document.querySelector('.md-search-result__meta').textContent.match(/matching|No matching/) && document.querySelector('input.md-search__input').value === q"
        " && window.__searchMessages.sent[2] > 0 && window.__searchMessages.results === window.__searchMessages.sent[2]",
        arg=query,
    )
    page.evaluate(NEXT_FRAME)  # and Material has listed its answer
    hrefs = page.eval_on_selector_all(".md-search-result__item > a", "els => els.map(e => e.getAttribute('href'))")
    return list(dict.fromkeys(re.sub(r"^.*?/sub/|[?#].*$", "", h) for h in hrefs))


def test_the_search_index_is_fetched_and_built_when_the_reader_goes_to_search(browser, base_url) -> None:
    """Material's request for the index, and its worker's build of it, wait until the search box
    takes the focus: a page view that never searches fetches no index and builds none."""
    for path in ("calculator/start-gate/", "memory-budget/"):  # Material's script held until Python has loaded, and run at once
        page = open_page(browser, base_url, path, viewport={"width": 1200, "height": 900})
        fetched = "performance.getEntriesByType('resource').filter(e => e.name.endsWith('/search/search_index.json')).length"
        meta = "document.querySelector('.md-search-result__meta').textContent.trim()"
        page.wait_for_function(MATERIAL_RAN, timeout=30_000)
        page.wait_for_load_state("networkidle")
        assert page.evaluate(fetched) == 0, path  # not fetched
        assert page.evaluate("window.__searchMessages.sent[0]") == 0 and page.evaluate(meta) == "Initializing search"
        page.click("input.md-search__input")
        page.wait_for_function(f"() => {meta} === 'Type to start searching'", timeout=20_000)
        assert page.evaluate(fetched) == 1
        assert search(page, "--max-model-len")
        page.context.close()
    page = open_page(browser, base_url, "kv-pool/?q=prefetch", viewport={"width": 1200, "height": 900})
    page.wait_for_function("() => document.querySelectorAll('.md-search-result__item').length > 0", timeout=20_000)  # a link that searches at once
    page.context.close()


def test_search_finds_flags_and_model_names_as_the_pages_write_them(browser, base_url, site, catalog) -> None:
    page = open_page(browser, base_url, "memory-budget/", viewport={"width": 1200, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.wait_for_function("() => document.querySelector('.md-search-result__meta') !== null")
    page.click("input.md-search__input")
    for flag in ("--kv-cache-memory-bytes", "--gpu-memory-utilization"):
        setting = flag.lstrip("-").replace("-", "_")  # the same setting as vLLM's Python API writes it
        writing = {p for p in pages(site) if re.search(f"{flag}|{setting}", (site / p / "index.html").read_text(encoding="utf-8"))}
        found = search(page, flag)
        assert found and found[0] in writing, f"{flag}: first result {found[:1]}, expected one of the pages that write it: {sorted(writing)}"
        assert {"memory-budget/", "kv-pool/"} <= set(found), f"{flag}: {found}"
    for model in catalog.models.values():
        found = search(page, model["name"])
        assert f"catalog/models/{model['id']}/" in found[:3], f"{model['name']!r}: {found}"
    assert problems == [], problems
    page.context.close()


def test_the_calculator_stacks_on_a_phone_and_keeps_its_verdict_in_view(browser, base_url) -> None:
    page = open_page(browser, base_url, "calculator/start-gate/")
    form, result = page.locator("#start-form").bounding_box(), page.locator("#start-result").bounding_box()
    assert form["width"] <= PHONE["width"] and result["width"] <= PHONE["width"]
    assert result["y"] >= form["y"] + form["height"] - 1, "the result sits beside the form, not under it"
    last = page.locator("#start-form input, #start-form select").last
    last.scroll_into_view_if_needed()
    verdict = page.locator("#start-verdict").bounding_box()
    header = page.locator("header.md-header").bounding_box()
    assert header["y"] + header["height"] - 1 <= verdict["y"] and verdict["y"] + verdict["height"] <= PHONE["height"], verdict
    page.context.close()


def test_a_table_that_comes_to_scroll_sideways_gets_a_name_and_a_tab_stop(browser, base_url) -> None:
    page = open_page(browser, base_url, "kv-pool/", viewport={"width": 1400, "height": 900})
    named = "() => Array.from(document.querySelectorAll('[role=region][aria-label]'), e => [e.getAttribute('aria-label'), e.tabIndex])"
    wide = page.evaluate(named)
    page.set_viewport_size(PHONE)
    page.wait_for_function(f"n => ({named})().length > n", arg=len(wide))
    narrow = page.evaluate(named)
    assert all(label.startswith("Table, scrolls sideways: ") or label.endswith("the figures drawn") for label, _ in narrow), narrow
    assert all(tab == 0 for _, tab in narrow) and len({label for label, _ in narrow}) == len(narrow)  # each reachable, each named apart
    unlabelled = page.evaluate(
        "() => Array.from(document.querySelectorAll('.md-typeset__scrollwrap')).filter(w => w.scrollWidth > w.clientWidth + 1 && !w.hasAttribute('tabindex')).length"
    )
    assert unlabelled == 0
    page.context.close()
