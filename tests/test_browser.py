"""The calculator pages in a real headless Chromium, served offline under a sub-path.

The site is built once (mkdocs build --strict) and served by a threaded http.server on 127.0.0.1
under /sub/; every request that leaves that server is aborted and counted. One browser page boots
Pyodide and is reused by every test that needs Python, moving to the calculator a selector names
(each calculator has a page of its own); the before-Python and JavaScript-off views boot none.
Expected figures are computed here, in CPython, with calc: never copied from the page.
"""

from __future__ import annotations

import functools
import json
import random
import re
from fractions import Fraction
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, Route

from calc.answers import report
from calc.present import html as calc_html
from calc.units import GiB, fmt, parse_count, parse_fraction, parse_size, shown
from tests.serving import CHROMIUM, SUB, SubPathHandler

ROOT = Path(__file__).resolve().parent.parent
BOOT_TIMEOUT_MS = 90_000
DEPLOYMENT = "dsv4-flash-pair"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"needs Debian's chromium at {CHROMIUM}")


class Guard:
    """Aborts and counts every request that is not for the local server."""

    def __init__(self, base_url: str, hold: tuple[str, ...] = ()) -> None:
        self.origin = base_url[: base_url.index(SUB)]
        self.hold = hold
        self.outside: list[str] = []
        self.held: list[Route] = []

    def __call__(self, route: Route) -> None:
        url = route.request.url
        if not url.startswith(self.origin + "/"):
            self.outside.append(url)
            route.abort()
        elif any(part in url for part in self.hold):
            self.held.append(route)  # left pending: Python stays "starting" until release()
        else:
            route.continue_()

    def release(self) -> None:
        """Fail the held requests, as a server that cannot deliver the runtime would."""
        for route in self.held:
            route.abort()

    def resume(self) -> None:
        """Let the held requests through, as a slow server would in the end."""
        self.hold = ()
        for route in self.held:
            route.continue_()


def open_page(
    browser: Browser,
    base_url: str,
    hold: tuple[str, ...] = (),
    answer: dict[str, tuple[int, str]] | None = None,
    calculator: str = "start",
    **context: object,
) -> tuple[Page, Guard]:
    """A calculator's page (the start gate's unless told) in a fresh context; `answer` serves a URL
    pattern as (status, content type) with a short body, as a host that lacks a file or mistypes it would."""
    guard = Guard(base_url, hold)
    browsing = browser.new_context(**context)
    browsing.route("**/*", guard)  # requests from workers too
    browsing.set_default_timeout(BOOT_TIMEOUT_MS)  # a bound on a wait, not its length: a busy machine takes its time
    page = browsing.new_page()
    page.route("**/*", guard)
    for pattern, (status, kind) in (answer or {}).items():
        page.route(pattern, functools.partial(Route.fulfill, status=status, content_type=kind, body=b"\0asm\1\0\0\0"))
    page.goto(page_url(base_url, calculator))
    return page, guard


def page_url(base_url: str, calculator: str) -> str:
    return f"{base_url}calculator/{calc_html.PAGES[calculator]}/"


# a selector that names a calculator's element: "#start-pin", "#yourstart-log-err"
_NAMES_A_CALCULATOR = re.compile(r"#(" + "|".join(sorted(calc_html.CALCULATORS, key=len, reverse=True)) + r")-")


class Live:
    """One browser page with Python loaded, moved to the page of the calculator a selector names
    (and waited on until Python has loaded there) before the call goes to Playwright's Page."""

    SELECTING = frozenset(
        "check uncheck set_checked fill select_option text_content get_attribute is_enabled is_disabled is_visible is_checked "
        "input_value eval_on_selector_all dispatch_event locator focus press click inner_html wait_for_selector".split()
    )

    def __init__(self, page: Page, base_url: str, guard: Guard, errors: list[str]) -> None:
        self.page, self.base_url, self.guard, self.errors = page, base_url, guard, errors

    def at(self, calculator: str) -> Page:
        url = page_url(self.base_url, calculator)
        if self.page.url.split("?")[0] != url:
            self.page.goto(url)
            self.page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        return self.page

    def __getattr__(self, name: str):
        attribute = getattr(self.page, name)
        if name not in self.SELECTING:
            return attribute

        def call(selector, *args, **kwargs):
            named = _NAMES_A_CALCULATOR.match(selector) if isinstance(selector, str) else None
            if named:
                self.at(named.group(1))
            return attribute(selector, *args, **kwargs)

        return call


@pytest.fixture(scope="module")
def live(browser: Browser, base_url: str):
    """A calculator's page with Python loaded; Pyodide's files come from the browser's cache on
    every page after the first."""
    page, guard = open_page(browser, base_url)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
    yield Live(page, base_url, guard, errors)
    page.context.close()


# --- what calc says, in CPython -------------------------------------------------------------


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def smallest_pin(value: int) -> str:
    return fmt(-(-value // 10**7) * 10**7, "e9", 2)


def expected_start(catalog, inputs: report.StartInputs) -> dict[str, str]:
    """The figures the start calculator must show, straight from calc.answers.report and calc.units.fmt."""
    r = report.start_report(catalog, inputs)
    e: dict[str, str] = {}
    if r.outside_calibration:
        e["verdict"] = "outside calibration"
    else:
        tightest = min(r.boxes, key=lambda b: b.margin_bytes)
        e["verdict"] = "passes" if r.passes else "refused"
        # printed arithmetic: the total is its terms as printed, a margin the printed figures' difference
        needs = report.needs_as_printed(r.terms)
        e["needs"] = fmt(needs, "GiB")
        e["needs_short"] = fmt(needs, "GiB", 1)
        e["available_short"] = fmt(tightest.available_bytes, "GiB", 1)
        e["margin_short"] = fmt(abs(shown(tightest.available_bytes, "GiB", 1) - shown(needs, "GiB", 1)), "GiB", 1)
        for t in r.terms:
            e[f"term_{slug(t.name)}"] = fmt(t.bytes, "GiB")
        for i, b in enumerate(r.boxes, 1):
            e[f"box{i}_available"] = fmt(b.available_bytes, "GiB")
            e[f"box{i}_verdict"] = "passes" if b.passes else "refused"
            e[f"box{i}_margin"] = fmt(abs(report.margin_as_printed(b.available_bytes, r.terms)), "GiB")
        for n, t in enumerate(r.changes if not r.passes else [], 1):
            e[f"change_{n}"] = fmt(t.bytes, "GiB")
        for key in ("without", "with"):
            value = getattr(r.largest_pin_bytes, f"{key}_drafter")
            if value is not None:
                e[f"largest_{key}"] = fmt(value, "e9", 2, down=True) if value >= 0 else f"none: short by {fmt(-value, 'GiB')} at a zero pin"
    pool = r.kv
    if pool is not None:
        e["kv_bpt"] = fmt(pool.bytes_per_token, "count")
        e["kv_tokens"] = fmt(pool.tokens, "tokens")
        e["kv_contexts"] = fmt(int(pool.tokens) // inputs.max_model_len, "count")
        e["kv_concurrency"] = fmt(Fraction(int(pool.tokens), inputs.max_model_len), "x", down=True)
        e["kv_one_context"] = "yes" if int(pool.tokens) >= inputs.max_model_len else "no"
        e["kv_one_context_pin"] = smallest_pin(pool.one_context_pin_bytes)
        if inputs.typical_context:
            e["kv_tokens_needed"] = fmt(inputs.seats * inputs.typical_context, "tokens")
            e["kv_seats_fit"] = "fit" if pool.seats is not None and pool.seats.seats_fit else "do not fit"
    f = r.fraction
    e["fraction"] = report.fraction_text(f.fraction)
    e["fraction_ceiling"] = fmt(f.ceiling, "fraction", 4)
    e["fraction_verdict"] = ("passes" if f.passes else "refused") if r.passes is not False else "not reached: the gate refuses the start first"
    if r.passes is not False or r.fix is not None:  # a refused start with no fix offers no flags
        e["flags"] = " \\\n".join(r.flags)
    return e


def inputs_of(catalog, raw: dict[str, str]) -> report.StartInputs:
    """The inputs a valid form stands for, parsed here with calc.units."""
    boxes = catalog.deployments[raw["deployment"]]["boxes"]
    return report.StartInputs(
        deployment=raw["deployment"],
        kv_pin=parse_size(raw["pin"]),
        drafter=raw.get("drafter") == "on",
        speculative_tokens=parse_count(raw["speculative_tokens"]),
        prefill_budget=parse_count(raw["prefill_budget"]),
        seats=parse_count(raw["seats"]),
        max_model_len=parse_count(raw["max_model_len"]),
        available=tuple(parse_size(raw[f"available_{i + 1}"]) for i in range(boxes)),
        typical_context=parse_count(raw["typical_context"]) if raw.get("typical_context") else None,
        gpu_memory_utilization=parse_fraction(raw["gpu_memory_utilization"]) if raw.get("gpu_memory_utilization") else None,
    )


def default_raw(catalog) -> dict[str, str]:
    return dict(calc_html.start_defaults(catalog, DEPLOYMENT).values)


def typed_size(rng: random.Random, value: float) -> str:
    """One size as a person might type it, in one of the notations the form accepts."""
    form = rng.randrange(5)
    if form == 0:
        return f"{value / 1e9:.2f}e9"
    if form == 1:
        return f"{value / GiB:.2f} GiB"
    if form == 2:
        return f"{value / 1e9:.1f} GB"
    if form == 3:
        return f"{int(value):,}"
    return f"{int(value)} B"


def random_start(rng: random.Random, catalog) -> dict[str, str]:
    raw = default_raw(catalog)
    raw["pin"] = typed_size(rng, rng.uniform(7.3e9, 32e9))
    raw["drafter"] = rng.choice(["on", ""])
    raw["speculative_tokens"] = str(rng.randint(1, 5))
    raw["prefill_budget"] = str(rng.choice([2048, 4096, 8192, 8192, 8192, 12288, 16384]))  # above 8,192: outside calibration
    raw["seats"] = str(rng.choice([1, 4, 8, 8, 16, 24, 64]))  # above 16: outside calibration
    raw["max_model_len"] = f"{rng.choice([32768, 65536, 131072, 131072, 262144]):,}"  # 262,144 refuses small pins
    first = rng.uniform(95, 125) * GiB
    raw["available_1"] = typed_size(rng, first)
    raw["available_2"] = typed_size(rng, first if rng.random() < 0.5 else rng.uniform(95, 125) * GiB)
    raw["typical_context"] = str(rng.choice(["", 4096, 16384, 40000]))
    raw["gpu_memory_utilization"] = rng.choice(["", "", "0.9", "0.94", "0.95", "0.5"])
    return raw


def figures_on(page: Page | Live, calculator: str) -> dict[str, str]:
    pairs = page.eval_on_selector_all(f"#{calculator}-calc [data-fig]", "els => els.map(e => [e.dataset.fig, e.textContent])")
    return dict(pairs)


# --- before Python, and with JavaScript off -------------------------------------------------


def test_build_time_figures_before_python_loads(browser, base_url, catalog):
    """Pyodide held back: the page still shows the default result, and says Python is starting."""
    page, guard = open_page(browser, base_url, hold=("/runtime/pyodide/",))
    try:
        defaults = report.defaults(catalog, DEPLOYMENT)
        r = report.start_report(catalog, defaults)
        shown = page.text_content("#start-calc")
        for figure in (
            fmt(r.needs_bytes, "GiB"),  # 110.00 GiB
            fmt(r.needs_bytes, "GiB", 1),  # 110.0 GiB
            fmt(r.largest_pin_bytes.without_drafter, "e9", 2, down=True),  # 14.83e9 B
            fmt(r.largest_pin_bytes.with_drafter, "e9", 2, down=True),  # 9.39e9 B
        ):
            assert figure in shown
        assert figures_on(page, "start").items() >= expected_start(catalog, defaults).items()
        assert page.evaluate("window.calcReady") is None
        assert page.is_visible("#calc-status") and "Python is starting" in page.text_content("#calc-status")
        for calculator in calc_html.CALCULATORS:  # every calculator, on its page, the same HTML the build rendered
            page.goto(page_url(base_url, calculator))
            assert figures_on(page, calculator) == calc_html.run(catalog, calculator, calc_html.defaults_of(catalog, calculator).values).figures
            assert [c for c in calc_html.CALCULATORS if page.locator(f"#{c}-form").count()] == [calculator]  # one a page
            assert "Python is starting" in page.text_content("#calc-status")
        page.goto(page_url(base_url, "start"))
        page.fill("#start-pin", "20e9")  # an edit before Python: the old figures must not pass for it
        assert page.get_attribute("#start-result", "data-state") == "pending"
        assert page.get_attribute("#start-verdict", "data-state") == "pending"  # the verdict dims too, and says why
        assert float(page.evaluate("getComputedStyle(document.getElementById('start-verdict')).opacity")) < 1
        assert "Not yet for the edited inputs" in page.evaluate("getComputedStyle(document.getElementById('start-verdict'), '::before').content")
        guard.release()
        page.wait_for_function("document.getElementById('calc-status').dataset.state === 'failed'", timeout=BOOT_TIMEOUT_MS)
        assert "Python could not start" in page.text_content("#calc-status")
        assert guard.outside == []
        assert guard.held, "the test meant to hold Pyodide back"
    finally:
        page.context.close()


def test_an_edit_made_while_python_starts_takes_effect_once_it_has_loaded(browser, base_url, catalog):
    """Python starts without recomputing the calculators nobody touched; an edited one recomputes."""
    page, guard = open_page(browser, base_url, hold=("/runtime/pyodide/",))
    try:
        page.fill("#start-pin", "20e9")
        assert page.get_attribute("#start-result", "data-state") == "pending"
        guard.resume()
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        values = {**calc_html.defaults_of(catalog, "start").values, "pin": "20e9"}
        assert figures_on(page, "start") == calc_html.run(catalog, "start", values).figures
        assert page.get_attribute("#start-result", "data-state") == "valid"
        page.goto(page_url(base_url, "kv"))  # another calculator, untouched: its build-time result stands
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        assert figures_on(page, "kv") == calc_html.run(catalog, "kv", calc_html.defaults_of(catalog, "kv").values).figures
        assert page.get_attribute("#kv-result", "data-state") == "valid"
        assert guard.outside == []
    finally:
        page.context.close()


def test_a_value_the_browser_restores_on_a_return_to_the_page_is_an_edit(browser, base_url, catalog):
    """Back on the page, the browser puts back what was ticked and fires no input event: its result
    is marked as waiting before Python has loaded, and recomputed once it has."""
    page, guard = open_page(browser, base_url)
    try:
        page.check("#start-drafter")  # a text field is not kept (autocomplete="off"); a checkbox is
        guard.hold = ("/runtime/pyodide/",)
        page.goto(base_url)
        page.go_back()
        assert page.is_checked("#start-drafter")
        assert page.get_attribute("#start-result", "data-state") == "pending"
        assert page.get_attribute("#start-verdict", "data-state") == "pending"
        assert [c for c in calc_html.CALCULATORS if page.locator(f'#{c}-result[data-state="pending"]').count()] == ["start"]
        guard.resume()
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        values = {**calc_html.defaults_of(catalog, "start").values, "drafter": "on"}
        assert (
            figures_on(page, "start")
            == calc_html.run(catalog, "start", values).figures
            != calc_html.run(catalog, "start", calc_html.defaults_of(catalog, "start").values).figures
        )
        assert page.get_attribute("#start-result", "data-state") == "valid"
        assert guard.outside == []
    finally:
        page.context.close()


MATERIAL_RAN = "typeof window.document$ === 'object'"  # Material's script publishes its streams
PALETTE = "[data-md-component=palette]"
# The page has been parsed and painted and its runtime start has run (the early start marks it):
# whatever the page does on its own before Python loads has been set going.
RUNTIME_STARTED = "performance.getEntriesByName('calc:runtime-start').length > 0"


def bundle_requests(page: Page) -> list[str]:
    return page.evaluate("performance.getEntriesByType('resource').map(e => e.name).filter(n => /assets\\/javascripts\\/bundle\\./.test(n))")


def test_material_waits_for_python_and_runs_once_it_has_loaded(browser, base_url):
    """Material's script is not even fetched while Python starts (nobody has touched the page), yet
    the page looks as it will: the search box shows, the palette toggle too, and on a short window
    the navigation scrolls within it. Once Python has loaded, the script runs with no help from
    the reader."""
    page, guard = open_page(browser, base_url, hold=("/runtime/pyodide/",), viewport={"width": 1280, "height": 420})
    nav = "(() => { const s = document.querySelector('.md-sidebar--primary .md-sidebar__scrollwrap'); return [s.getBoundingClientRect().bottom <= innerHeight, s.scrollHeight > s.clientHeight]; })()"
    try:
        page.wait_for_load_state("load")
        page.wait_for_function(RUNTIME_STARTED)
        assert bundle_requests(page) == [] and not page.evaluate(MATERIAL_RAN)
        assert page.evaluate("document.documentElement.classList.contains('js')")
        assert page.is_visible("input.md-search__input") and page.is_visible(f"{PALETTE} label:not([hidden])")
        assert page.evaluate(nav) == [True, True]  # all of it within reach
        guard.resume()
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        page.wait_for_function(MATERIAL_RAN, timeout=BOOT_TIMEOUT_MS)
        assert len(bundle_requests(page)) == 1
        page.wait_for_function("!document.documentElement.classList.contains('calc-theme-held')", timeout=BOOT_TIMEOUT_MS)
        page.wait_for_function(f"{nav}.every(Boolean)", timeout=BOOT_TIMEOUT_MS)  # Material's own fit, once it has laid the page out
        assert guard.outside == []
    finally:
        page.context.close()


def test_material_takes_over_while_another_script_says_it_is_the_current_one(browser, base_url):
    """A script that gives `document` a currentScript of its own while it runs, and leaves it
    there: Material's script, run meanwhile, still takes over (its setup runs and the page's
    stand-in withdraws), as it does once Python has loaded."""
    page, guard = open_page(browser, base_url, hold=("/runtime/pyodide/",))
    try:
        page.wait_for_function(RUNTIME_STARTED)
        page.evaluate("Object.defineProperty(document, 'currentScript', { configurable: true, get: () => document.getElementById('calc-python-files') })")
        page.keyboard.press("Shift")  # the reader reaches for the page: Material's script is fetched and run
        page.wait_for_function(MATERIAL_RAN)
        page.wait_for_function("!document.documentElement.classList.contains('calc-theme-held')")
        assert page.evaluate("document.currentScript.id") == "calc-python-files"  # the stand-in's test did not go by it
        assert guard.outside == []
    finally:
        page.context.close()


def test_material_runs_after_ten_seconds_of_a_python_that_neither_loads_nor_fails(browser, base_url):
    page, guard = open_page(browser, base_url, hold=("/runtime/pyodide/",))
    try:
        page.wait_for_function(MATERIAL_RAN, timeout=BOOT_TIMEOUT_MS)
        fetched = page.evaluate("performance.getEntriesByType('resource').filter(e => /assets\\/javascripts\\/bundle\\./.test(e.name)).map(e => e.startTime)")
        assert len(fetched) == 1 and fetched[0] >= 10_000, fetched  # not even fetched before: nobody touched the page
        assert "Python is starting" in page.text_content("#calc-status")
    finally:
        page.context.close()


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ({"**/pyodide.asm.wasm": (404, "text/plain")}, "the interpreter's WebAssembly did not load"),
        ({"**/pyodide.asm.wasm": (200, "application/octet-stream")}, "the interpreter's WebAssembly did not load"),  # a host that mistypes it
        ({"**/calculator/main.py": (404, "text/plain")}, "main.py: 404"),
        ({"**/py/catalog.json": (404, "text/plain")}, "catalog.json: 404"),
    ],
    ids=["wasm missing", "wasm mistyped", "glue missing", "catalog missing"],
)
def test_python_that_cannot_start_says_why_and_material_runs(browser, base_url, answer, said):
    """A runtime file the host lacks or serves wrong: the status line says Python could not start
    and why (Pyodide itself only warns about its WebAssembly, and would wait for good), the
    build-time figures stand, and Material's script runs."""
    page, guard = open_page(browser, base_url, answer=answer)
    try:
        page.wait_for_function("document.getElementById('calc-status').dataset.state === 'failed'", timeout=BOOT_TIMEOUT_MS)
        assert "Python could not start" in page.text_content("#calc-status") and said in page.text_content("#calc-status")
        page.wait_for_function(MATERIAL_RAN, timeout=BOOT_TIMEOUT_MS)
        page.evaluate("dispatchEvent(new CustomEvent('calc:progress', { detail: 'loading Pyodide' }))")
        assert "Python could not start" in page.text_content("#calc-status")  # a progress event after the failure leaves it as it is
        assert page.evaluate("window.calcReady") is None
        assert guard.outside == []
    finally:
        page.context.close()


def test_the_palette_is_right_before_material_runs_and_a_click_switches_it_at_once(browser, base_url):
    """A reader whose system prefers dark gets the dark palette from the first paint, as Material
    would give it. A click on the toggle while Python starts switches at once and is kept where
    Material reads it; two quick clicks switch and switch back; once Material has run, it switches."""
    page, guard = open_page(browser, base_url, hold=("/runtime/pyodide/",), color_scheme="dark")
    toggle = f"{PALETTE} label:not([hidden])"
    labels = f"document.querySelectorAll('{PALETTE} label')"
    try:
        assert page.get_attribute("body", "data-md-color-scheme") == "slate"
        assert page.evaluate(f"[...{labels}].map(l => l.hidden)") == [True, False]  # "Light theme"
        assert not page.evaluate(MATERIAL_RAN)
        page.evaluate(f"() => {{ const shown = () => [...{labels}].find(l => !l.hidden); shown().click(); shown().click(); }}")
        assert page.get_attribute("body", "data-md-color-scheme") == "slate"  # two clicks before Material could run
        assert page.evaluate("__md_get('__palette').index") == 1
        page.click(toggle)
        assert page.get_attribute("body", "data-md-color-scheme") == "default"
        assert page.evaluate("__md_get('__palette').index") == 0
        assert page.evaluate(f"[...{labels}].map(l => l.hidden)") == [False, True]
        page.wait_for_function(MATERIAL_RAN, timeout=BOOT_TIMEOUT_MS)  # the click started it
        assert page.get_attribute("body", "data-md-color-scheme") == "default"  # and it kept the choice
        page.click(toggle)
        page.wait_for_function("document.body.dataset.mdColorScheme === 'slate'", timeout=BOOT_TIMEOUT_MS)
        assert page.evaluate("__md_get('__palette').index") == 1
        assert guard.outside == []
    finally:
        page.context.close()


def test_materials_keys_and_the_phone_search_button_work_while_python_starts(browser, base_url):
    """Material's key for search focuses the box before its script has run, and Enter in the
    palette toggle switches it; on a phone, a tap on the search button opens search with the box
    focused (its keyboard shows)."""
    page, guard = open_page(browser, base_url, hold=("/runtime/pyodide/",))
    try:
        page.wait_for_function(RUNTIME_STARTED)
        assert not page.evaluate(MATERIAL_RAN)
        page.keyboard.press("/")
        assert page.evaluate("document.activeElement.matches('.md-search__input')")
        assert page.input_value(".md-search__input") == ""  # the key itself is not typed
        assert page.get_attribute("body", "data-md-color-scheme") == "default"
        page.focus(f"{PALETTE} input")  # Enter in the toggle: the next palette, and its input focused
        page.keyboard.press("Enter")
        assert page.get_attribute("body", "data-md-color-scheme") == "slate"
        assert page.evaluate("__md_get('__palette').index") == 1
        assert page.evaluate("document.activeElement.id") == "__palette_1"
    finally:
        page.context.close()
    page, guard = open_page(browser, base_url, hold=("/runtime/pyodide/",), viewport={"width": 390, "height": 800}, has_touch=True)
    try:
        page.wait_for_function(RUNTIME_STARTED)
        assert not page.evaluate(MATERIAL_RAN)
        page.tap("label.md-header__button[for=__search]")
        assert page.is_checked("#__search")
        assert page.evaluate("document.activeElement.matches('.md-search__input')")
        page.keyboard.type("prefetch", delay=10)
        page.wait_for_function("document.querySelectorAll('.md-search-result__item').length > 0", timeout=BOOT_TIMEOUT_MS)
        assert guard.outside == []
    finally:
        page.context.close()


def test_search_works_while_python_starts(browser, base_url):
    """The search box takes the focus before Material has run: that starts it, and the query finds
    the pages that write the flag."""
    page, guard = open_page(browser, base_url, hold=("/runtime/pyodide/",))
    try:
        page.wait_for_function(RUNTIME_STARTED)
        assert not page.evaluate(MATERIAL_RAN)
        page.click("input.md-search__input")
        page.keyboard.type("kv-cache-memory-bytes", delay=10)
        page.wait_for_function("document.querySelectorAll('.md-search-result__item').length > 0", timeout=BOOT_TIMEOUT_MS)
        assert page.evaluate("window.calcReady") is None
        assert guard.outside == []
    finally:
        page.context.close()


def test_the_start_marks_its_phases_on_the_pages_timeline(browser, base_url):
    """The runtime and the glue mark each phase of the start (scripts/bench.py prints them): in
    the order they run, the files written once Pyodide has loaded, Python ready last."""
    page, guard = open_page(browser, base_url)
    try:
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        marks = page.evaluate("performance.getEntriesByType('mark').filter(m => m.name.startsWith('calc:')).map(m => [m.name, m.startTime])")
        names = [name for name, _ in marks]
        assert names == [
            "calc:runtime-start", "calc:pyodide-loaded", "calc:files-written", "calc:glue-start", "calc:imported", "calc:catalog-loaded", "calc:wired",
        ]  # fmt: skip
        assert [t for _, t in marks] == sorted(t for _, t in marks)
        assert guard.outside == []
    finally:
        page.context.close()


def test_the_page_fetches_only_what_the_site_ships(browser, base_url):
    """Every request answered (no module the build left out), no PyScript (the early start runs the
    glue itself), no source map."""
    context = browser.new_context()
    page = context.new_page()
    responses: list[tuple[str, int]] = []
    page.on("response", lambda r: responses.append((r.url, r.status)))
    try:
        page.goto(page_url(base_url, "start"))
        page.wait_for_function("window.calcReady === true", timeout=BOOT_TIMEOUT_MS)
        page.wait_for_load_state("networkidle")
        assert [(url, status) for url, status in responses if status >= 400] == []
        assert [url for url, _ in responses if "pyscript" in url] == []
        assert any(url.endswith("/calculator/main.py") for url, _ in responses)
        assert not [url for url, _ in responses if url.endswith(".map")]
        assert any(url.endswith("/py/calc/present/html.py") for url, _ in responses) and not any(
            url.endswith("/py/calc/present/cli.py") or "/py/calc/present/commands/" in url for url, _ in responses
        )
    finally:
        context.close()


def test_javascript_off_shows_the_build_time_figures(browser, base_url, catalog):
    page, guard = open_page(browser, base_url, java_script_enabled=False)
    try:
        assert figures_on(page, "start").items() >= expected_start(catalog, report.defaults(catalog, DEPLOYMENT)).items()
        for calculator in ("yourstart", "kv", "fit", "plan", "prefetch", "before"):
            page.goto(page_url(base_url, calculator))
            expected = calc_html.run(catalog, calculator, calc_html.defaults_of(catalog, calculator).values).figures
            assert figures_on(page, calculator) == expected
            assert not page.is_visible("#calc-status")
            assert "JavaScript is off" in page.text_content(".calc-runtime")
        assert guard.outside == []
    finally:
        page.context.close()


def test_every_default_shows_its_source(browser, base_url, catalog):
    page, _ = open_page(browser, base_url, java_script_enabled=False)
    try:
        for name in calc_html.start_field_names(catalog):
            dom = calc_html.dom_id("start", name)
            assert page.text_content(f"#{dom}-src").strip(), f"no source beside {name}"
            assert page.locator(f'label[for="{dom}"]').count() == 1
            for described in page.get_attribute(f"#{dom}", "aria-describedby").split():
                assert page.locator(f"#{described}").count() == 1
        assert "measured" in page.text_content("#start-available-1-src")
        for deployment_id in catalog.deployments:  # a deployment the gate cannot size is listed, disabled, with the reason
            option = page.locator(f'#start-deployment option[value="{deployment_id}"]')
            problem = calc_html.gate_problem(catalog, deployment_id)
            assert option.is_disabled() == (problem is not None)
            assert problem is None or problem in option.text_content()
        assert page.get_attribute("#start-verdict", "aria-live") == "polite"
    finally:
        page.context.close()


# --- with Python loaded ---------------------------------------------------------------------


def test_python_loads_offline_under_a_sub_path(live):
    assert live.guard.outside == [], f"requests left the local server: {live.guard.outside}"
    assert SubPathHandler.missing == [], f"the page asked for files that are not there: {SubPathHandler.missing}"
    assert "every edit recomputes" in live.text_content("#calc-status")
    assert live.errors == []


def test_a_recomputed_result_has_the_size_the_build_gave_it(live):
    """The first recompute, of the inputs as built, moves nothing on the page: every result keeps
    its height and its tables are calc's own (Material's script wraps an unclassed table in two
    boxes of its own once it runs, which a recompute would take away)."""
    measure = """() => [...document.querySelectorAll('.calc-result')].map(r => [r.id, r.getBoundingClientRect().height, r.querySelectorAll('table').length, r.querySelectorAll('.md-typeset__scrollwrap, table:not([class])').length])"""
    seen = 0
    for calculator in calc_html.CALCULATORS:
        page = live.at(calculator)
        before = page.evaluate(measure)
        seen += sum(tables for _, _, tables, _ in before)
        page.evaluate("() => document.querySelectorAll('.calc form').forEach(f => f.dispatchEvent(new Event('input', { bubbles: true })))")
        after = page.evaluate(measure)
        assert after == before, calculator
        assert all(wrapped == 0 for *_, wrapped in after), calculator
    assert seen >= 10  # the test meant to see tables


def test_the_refused_request_of_2026_10_24(live, catalog):
    """The source document: 20e9 with the drafter needs 124.4 GiB against ~114.5 GiB, refused."""
    defaults = default_raw(catalog)
    live.fill("#start-pin", "20e9")
    live.check("#start-drafter")
    verdict = live.text_content("#start-verdict")
    assert "Start: refused" in verdict and "124.4 GiB" in verdict and "114.5 GiB" in verdict
    r = report.start_report(catalog, inputs_of(catalog, {**defaults, "pin": "20e9", "drafter": "on"}))
    assert fmt(r.needs_bytes, "GiB", 1) == "124.4 GiB"
    assert fmt(min(r.inputs.available), "GiB", 1) == "114.5 GiB"
    assert r.passes is False
    live.uncheck("#start-drafter")
    live.fill("#start-pin", defaults["pin"])
    assert figures_on(live, "start")["verdict"] == "passes"


def test_verdicts_cover_every_check(live, catalog):
    """A refused start offers the suggested fix's flags, labelled so, with the fraction check not
    reached; seats that do not fit and a margin inside the reading's precision are in the verdict;
    a typed three-decimal fraction is the flag shown; a pin of zero is refused beside the field."""
    defaults = default_raw(catalog)
    live.fill("#start-pin", "20e9")
    live.check("#start-drafter")
    assert "suggested fix" in live.text_content("#start-verdict")
    assert live.text_content("#start-flags").startswith("--kv-cache-memory-bytes 9290000000")
    assert "Copy the suggested fix" in live.text_content("#start-result")
    assert figures_on(live, "start")["fraction_verdict"] == "not reached: the gate refuses the start first"
    live.uncheck("#start-drafter")
    live.fill("#start-pin", defaults["pin"])
    live.fill("#start-typical-context", "65536")
    verdict = live.text_content("#start-verdict")
    assert "Start: passes" in verdict and "not the 524,288 tokens that 8 seats at 65,536 tokens need: at most 2 such seats fit" in verdict
    assert "but:" in live.text_content("#start-result")  # What to change says so too
    live.fill("#start-typical-context", "")
    live.fill("#start-pin", "14.83e9")
    assert "inside the precision of the MemAvailable reading" in live.text_content("#start-verdict")
    live.fill("#start-pin", defaults["pin"])
    live.fill("#start-gpu-memory-utilization", "0.937")
    assert "--gpu-memory-utilization 0.937" in live.text_content("#start-flags")
    live.fill("#start-gpu-memory-utilization", "")
    live.fill("#start-pin", "0")
    assert "expected a KV pin above zero" in live.text_content("#start-pin-err")
    live.fill("#start-pin", defaults["pin"])
    assert figures_on(live, "start")["verdict"] == "passes"


def test_parity_with_cpython_over_random_inputs(live, catalog):
    """A few hundred seeded input sets through the page's Python entry: every figure equals calc's."""
    rng = random.Random(20261024)
    sets = [random_start(rng, catalog) for _ in range(300)]
    answers = live.evaluate("requests => requests.map(r => window.calcRun(r))", [json.dumps({"calculator": "start", "inputs": raw}) for raw in sets])
    kinds = {"passes": 0, "refused": 0, "outside calibration": 0, "invalid": 0}
    for raw, answer in zip(sets, answers, strict=True):
        got = json.loads(answer)
        assert got == calc_html.run(catalog, "start", raw).to_json(), raw
        if not got["valid"]:
            kinds["invalid"] += 1
            continue
        kinds[got["figures"]["verdict"]] += 1
        assert got["figures"].items() >= expected_start(catalog, inputs_of(catalog, raw)).items(), raw
    assert all(kinds.values()), f"the random sets should cover every outcome: {kinds}"


def test_parity_of_the_other_calculators(live, catalog):
    rng = random.Random(235)
    readings = [f"r{n}" for n in range(len(calc_html.kv_readings(catalog)))]
    models = [m for m, e in catalog.models.items() if "weights" in e]
    requests = []
    for _ in range(40):
        requests.append(
            (
                "kv",
                {
                    "reading": rng.choice([*readings, calc_html.TYPED]),
                    "bpt": str(rng.randint(5000, 60000)),
                    "pin": typed_size(rng, rng.uniform(1e9, 40e9)),
                    "tokens": str(rng.randint(1000, 2_000_000)),
                    "max_model_len": str(rng.choice([32768, 131072, 262144])),
                    "seats": rng.choice(["", "8", "16"]),
                    "typical_context": rng.choice(["", "8192", "30000"]),
                },
            )
        )
        plan = {"box": rng.choice(list(catalog.boxes)), "fractions": ", ".join(str(rng.choice([0.3, 0.35, 0.5, 0.85, 0.9])) for _ in range(rng.randint(1, 3)))}
        for n in range(1, calc_html.PLAN_ROWS + 1):
            plan[f"model_{n}"] = rng.choice(["", *models])
            plan[f"kv_{n}"] = typed_size(rng, rng.uniform(0, 40e9))
            plan[f"headroom_{n}"] = rng.choice(["0", "4 GiB", "8 GiB"])
        plan["available"] = typed_size(rng, rng.uniform(60, 125) * GiB)
        requests.append(("plan", plan))
        requests.append(
            (
                "prefetch",
                {
                    "checkpoint": typed_size(rng, rng.uniform(10e9, 120e9)),
                    "available": typed_size(rng, rng.uniform(20, 125) * GiB),
                    "filesystem": rng.choice(["nfs", "lustre", "local"]),
                },
            )
        )
        short, long = sorted(rng.sample([8192, 32768, 50000, 131072, 262144, 500000], 2))
        requests.append(
            (
                "fit",
                {
                    "pool": typed_size(rng, rng.uniform(4, 40) * GiB),
                    "length_1": str(short),
                    "tokens_1": str(rng.randint(50_000, 800_000)),
                    "length_2": rng.choice([str(long), str(short)]),  # the same length twice cannot be fit
                    "tokens_2": str(rng.randint(100_000, 3_000_000)),
                    "predict": str(rng.choice([65536, 131072, 262144])),
                },
            )
        )
    answers = live.evaluate("requests => requests.map(r => window.calcRun(r))", [json.dumps({"calculator": c, "inputs": raw}) for c, raw in requests])
    for (calculator, raw), answer in zip(requests, answers, strict=True):
        assert json.loads(answer) == calc_html.run(catalog, calculator, raw).to_json(), (calculator, raw)


FORM_SETS = [
    {"pin": "16e9", "drafter": "on"},
    {"pin": "9.31 GiB", "seats": "24"},
    {"pin": "12 GB", "available_1": "120 GiB", "available_2": "100 GiB", "typical_context": "16384"},
    {"pin": "8501810176 B", "prefill_budget": "4096", "gpu_memory_utilization": "0.9", "max_model_len": "65,536"},
    {"pin": "30e9", "drafter": "on", "speculative_tokens": "3", "typical_context": "40000"},
]


@pytest.mark.parametrize("edits", FORM_SETS, ids=lambda e: e["pin"])
def test_the_form_fields_drive_the_result(live, catalog, edits):
    """Through the real fields, as a person types: the shown figures are calc's."""
    raw = {**default_raw(catalog), **edits}
    for name, value in raw.items():
        dom = "#" + calc_html.dom_id("start", name)
        if name == "deployment":
            live.select_option(dom, value)
        elif name == "drafter":
            live.set_checked(dom, value == "on")
        else:
            live.fill(dom, value)
    shown = figures_on(live, "start")
    assert shown == calc_html.run(catalog, "start", raw).figures
    assert shown.items() >= expected_start(catalog, inputs_of(catalog, raw)).items()
    assert live.get_attribute("#start-result", "data-state") == "valid"
    live.set_checked("#start-drafter", False)


BAD = [
    ("pin", ""),
    ("pin", "lots"),
    ("pin", "-5e9"),
    ("pin", "NaN"),
    ("pin", "1e400"),
    ("pin", "10 XB"),
    ("pin", "1e9"),  # below one full context
    ("available_1", "-1 GiB"),
    ("available_2", ""),
    ("seats", "eight"),
    ("seats", "-3"),
    ("seats", "1e400"),
    ("prefill_budget", "NaN"),
    ("max_model_len", ""),
    ("speculative_tokens", "0"),
    ("gpu_memory_utilization", "NaN"),
    ("gpu_memory_utilization", "1e400"),
    ("typical_context", "-1"),
]


@pytest.mark.parametrize(("name", "value"), BAD, ids=[f"{n}={v or 'empty'}" for n, v in BAD])
def test_a_bad_input_says_why_beside_the_field_and_leaves_no_result(live, catalog, name, value):
    raw = {**default_raw(catalog), name: value}
    inputs, errors = calc_html.parse_start(catalog, raw)
    assert inputs is None and set(errors) == {name}
    dom = "#" + calc_html.dom_id("start", name)
    live.fill(dom, value)
    assert live.text_content(f"{dom}-err") == errors[name]
    assert live.get_attribute(dom, "aria-invalid") == "true"
    assert live.get_attribute("#start-result", "data-state") == "invalid"
    assert figures_on(live, "start") == {}, "a stale result is still on the page"
    assert live.text_content("#start-verdict").startswith("No result")
    assert "Traceback" not in live.text_content("body")
    live.fill(dom, default_raw(catalog)[name])
    assert live.get_attribute(dom, "aria-invalid") == "false"
    assert live.text_content(f"{dom}-err") == ""
    assert figures_on(live, "start")["verdict"] == "passes"


def test_pin_below_one_full_context_names_the_floor(live, catalog):
    live.fill("#start-pin", "1e9")
    message = live.text_content("#start-pin-err")
    assert "below one request at max_model_len" in message and "vLLM does not start below it" in message and fmt(131072, "tokens") in message
    live.fill("#start-pin", default_raw(catalog)["pin"])


def test_the_head_box_extra_charges_the_head_as_the_gate_does(live, catalog):
    """The two-box form's head box extra, typed in the page: the head box refused by what its
    processes take, the worker passing, as `gate --available '111 GiB, 118 GiB' --head-extra 1.5 GiB`."""
    for name, value in default_raw(catalog).items():  # from the defaults, whatever an earlier test typed
        dom = "#" + calc_html.dom_id("start", name)
        if name == "deployment":
            live.select_option(dom, value)
        elif name == "drafter":
            live.set_checked(dom, value == "on")
        else:
            live.fill(dom, value)
    assert live.is_visible("#start-head-extra")
    live.fill("#start-available-1", "111 GiB")
    live.fill("#start-available-2", "118 GiB")
    assert figures_on(live, "start")["verdict"] == "passes"
    live.fill("#start-head-extra", "1.5 GiB")
    raw = {**default_raw(catalog), "available_1": "111 GiB", "available_2": "118 GiB", "head_extra": "1.5 GiB"}
    shown = figures_on(live, "start")
    assert shown == calc_html.run(catalog, "start", raw).figures
    assert (shown["verdict"], shown["box1_verdict"], shown["box2_verdict"], shown["box1_head_extra"]) == ("refused", "refused", "passes", "1.50 GiB")
    live.fill("#start-head-extra", "-1")
    assert live.text_content("#start-head-extra-err") == "Head box extra: found '-1', expected a size of zero or more bytes"
    for name in ("head_extra", "available_1", "available_2"):
        live.fill("#" + calc_html.dom_id("start", name), default_raw(catalog)[name])
    assert figures_on(live, "start")["verdict"] == "passes"


def test_kv_pool_both_ways_and_a_typed_bytes_per_token(live, catalog):
    live.select_option("#kv-reading", calc_html.TYPED)
    assert live.is_enabled("#kv-bpt")
    live.fill("#kv-bpt", "36860")
    live.fill("#kv-pin", "10e9")
    live.fill("#kv-tokens", "131072")
    shown = figures_on(live, "kv")
    assert shown["tokens_held"] == fmt(Fraction(10**10, 36860), "tokens")
    assert shown["pin_for_tokens_b"] == fmt(-(-131072 * 36860 // 1), "B")
    live.fill("#kv-bpt", "")
    assert live.text_content("#kv-bpt-err") and figures_on(live, "kv") == {}
    live.select_option("#kv-reading", calc_html.kv_defaults(catalog).values["reading"])
    assert not live.is_enabled("#kv-bpt") and figures_on(live, "kv")["bpt"] == fmt(report.pool_reading(catalog, DEPLOYMENT, 0).bytes_per_token, "count")


def test_planner_and_prefetch_react_to_edits(live, catalog):
    live.fill("#plan-fractions", "0.85, 0.85")
    shown = figures_on(live, "plan")
    assert shown["engine_1_verdict"] == "starts" and shown["engine_2_verdict"] == "refused"
    live.fill("#plan-fractions", calc_html.plan_defaults(catalog).values["fractions"])
    assert figures_on(live, "plan")["engine_2_verdict"] == "starts"
    live.fill("#prefetch-available", "100 GiB")
    assert figures_on(live, "prefetch")["enabled"] == "prefetched"
    live.fill("#prefetch-available", calc_html.prefetch_defaults(catalog).values["available"])
    assert figures_on(live, "prefetch")["enabled"] == "not prefetched"
    live.fill("#prefetch-available", "100 GiB")
    live.select_option("#prefetch-filesystem", "local")  # a local disk never auto-prefetches, whatever the size
    assert figures_on(live, "prefetch")["enabled"] == "not prefetched"
    assert "not a network filesystem vLLM recognises" in live.text_content("#prefetch-result")
    live.select_option("#prefetch-filesystem", "nfs")
    live.fill("#prefetch-available", calc_html.prefetch_defaults(catalog).values["available"])


def test_planner_says_fit_only_with_a_kv_pool_and_a_fraction_for_every_model(live, catalog):
    """The default lineup has no KV figure in the catalog: the planner says what is missing, not "fit"."""
    verdict = live.text_content("#plan-verdict")
    assert figures_on(live, "plan")["summary_fits"] == "incomplete" and "no KV pool given for" in verdict
    live.fill("#plan-kv-1", "40 GiB")
    live.fill("#plan-kv-2", "20 GiB")
    live.fill("#plan-fractions", "0.5")
    verdict = live.text_content("#plan-verdict")
    assert "2 resident models but 1 engine fractions" in verdict and figures_on(live, "plan")["summary_fits"] == "incomplete"
    live.fill("#plan-fractions", "0.5, 0.35")
    assert figures_on(live, "plan")["summary_fits"] == "fit"
    for name, value in calc_html.plan_defaults(catalog).values.items():
        if name.startswith("kv_") or name == "fractions":
            live.fill("#" + calc_html.dom_id("plan", name), value)


def test_a_figures_source_shows_on_focus(live, base_url):
    """Without a mouse: Tab (or a tap) to a figure on a page, and its source shows beside it."""
    page = live.context.new_page()
    try:
        page.goto(base_url + "memory-budget/")
        first = page.locator("span.fig[title]").first
        first.focus()
        title = first.get_attribute("title")
        shown = page.evaluate("el => getComputedStyle(el, '::after').content", first.element_handle())
        assert title and title in shown
    finally:
        page.close()


def test_no_request_ever_left_the_local_server(live):
    assert live.guard.outside == []
    assert live.errors == []


def test_fit_from_two_startup_lines(live, catalog):
    """The per-request fit in the page equals calc's, and readings that cannot be one pool say so beside the field."""
    d = calc_html.fit_defaults(catalog)
    assert figures_on(live, "fit") == calc_html.run_fit(catalog, d.values).figures
    live.fill("#fit-tokens-2", "100")
    live.wait_for_function("document.getElementById('fit-result').dataset.state === 'invalid'")
    assert "negative per-token or fixed cost" in live.text_content("#fit-length-2-err")
    assert live.get_attribute("#fit-length-2", "aria-invalid") == "true"
    assert figures_on(live, "fit") == {}
    live.fill("#fit-tokens-2", d.values["tokens_2"])
    live.wait_for_function("document.getElementById('fit-result').dataset.state === 'valid'")
    assert figures_on(live, "fit") == calc_html.run_fit(catalog, d.values).figures


def drawn_bars(page: Page, calculator: str) -> list[tuple[str, str, str]]:
    """The bars of a calculator's chart as drawn: (row, name, exact value)."""
    return page.eval_on_selector_all(f"#{calculator}-result figure.chart rect.seg", "els => els.map(e => [e.dataset.row, e.dataset.name, e.dataset.value])")


def test_the_charts_redraw_on_every_edit(live, catalog):
    """The start calculator's chart follows the pin and the drafter; the planner's follows a typed KV pool."""
    defaults = default_raw(catalog)
    before = drawn_bars(live, "start")
    assert ("KV pin", str(parse_size(defaults["pin"]))) in {(name, value) for _, name, value in before}
    live.fill("#start-pin", "20e9")
    live.check("#start-drafter")
    after = drawn_bars(live, "start")
    r = report.start_report(catalog, inputs_of(catalog, {**defaults, "pin": "20e9", "drafter": "on"}))
    expected = [(t.name, str(t.bytes)) for t in r.terms if t.bytes]
    rows = sorted({row for row, _, _ in after})
    assert len(rows) == len(r.boxes)
    for row in rows:
        assert [(name, value) for r_, name, value in after if r_ == row] == expected
    notes = live.eval_on_selector_all("#start-result figure.chart text", "els => els.map(e => e.textContent)")
    assert notes.count("refused") == len(r.boxes)
    live.uncheck("#start-drafter")
    live.fill("#start-pin", defaults["pin"])
    assert drawn_bars(live, "start") == before
    live.fill("#plan-kv-1", "20 GiB")
    assert (f"{catalog.models[calc_html.plan_defaults(catalog).values['model_1']]['name']}: KV", str(20 * GiB)) in {
        (n, v) for _, n, v in drawn_bars(live, "plan")
    }
    live.fill("#plan-kv-1", calc_html.plan_defaults(catalog).values["kv_1"])


CONFIGS = sorted((ROOT / "models" / "configs").glob("*/config.json"))


def test_before_the_first_start_from_a_pasted_config(live, catalog):
    """A config pasted into the page: the figures are calc's; a broken one is named beside the field."""
    d = calc_html.defaults_of(catalog, "before").values
    llama = (ROOT / "models" / "configs" / "llama-3.1-8b" / "config.json").read_text()
    live.fill("#before-config", llama)
    live.fill("#before-tp", "2")
    raw = {**d, "config": llama, "tp": "2"}
    live.wait_for_function("document.querySelector('#before-calc [data-fig=per_token]').textContent === '65,536'")
    assert figures_on(live, "before") == calc_html.run(catalog, "before", raw).figures
    live.fill("#before-config", llama.replace('"num_hidden_layers": 32', '"num_hidden_layers": "32"'))
    live.wait_for_function("document.getElementById('before-result').dataset.state === 'invalid'")
    assert "num_hidden_layers: found '32', expected a whole number" in live.text_content("#before-config-err")
    assert live.get_attribute("#before-config", "aria-invalid") == "true"
    assert figures_on(live, "before") == {}
    live.fill("#before-config", d["config"])
    live.fill("#before-tp", d["tp"])
    live.wait_for_function("document.getElementById('before-result').dataset.state === 'valid'")
    assert figures_on(live, "before") == calc_html.run(catalog, "before", d).figures


def test_parity_of_the_config_model(live, catalog):
    """Random configs, ranks, KV types, lengths and pins, and predicted pools on discrete cards with
    random switches: the page's answer is CPython's, byte for byte."""
    rng = random.Random(8)
    d = calc_html.defaults_of(catalog, "before").values
    requests = []
    for _ in range(30):
        raw = {
            **d,
            "config": rng.choice(CONFIGS).read_text(),
            "tp": str(rng.choice([1, 2, 4, 8])),
            "kv_cache_dtype": rng.choice(["auto", "fp8", "bfloat16", "nvfp4"]),
            "max_model_len": str(rng.choice([4096, 32768, 40960, 131072])),
            "pin": typed_size(rng, rng.uniform(1e9, 40e9)),
            "overhead": rng.choice(["", "3 GiB"]),
            "engine_version": rng.choice(["", "0.6.4", "0.10.2"]),
        }
        requests.append(raw)
    for _ in range(12):  # no pin on a discrete card: the pool predicted, with the scheduler's fields empty and the switches random
        switches = {
            name: rng.choice(["", "on"]) for name in ("enforce_eager", "offline", "no_flashinfer_sampler", "allow_long_max_model_len", "compile_cached")
        }
        raw = {**d, "config": rng.choice(CONFIGS).read_text(), "box": rng.choice(["h100-sxm", "rtx-4090", "l40s", "a100-80gb", "b200"]),
               "tp": str(rng.choice([1, 2, 4])), "max_model_len": str(rng.choice([4096, 32768])), "pin": "", "seats": "", "prefill_budget": "",
               "engine_version": rng.choice(["", "0.11.0", "0.21.0"]), "speculative_tokens": rng.choice(["0", "2"]), **switches}  # fmt: skip
        requests.append(raw)
    answers = live.evaluate("requests => requests.map(r => window.calcRun(r))", [json.dumps({"calculator": "before", "inputs": raw}) for raw in requests])
    for raw, answer in zip(requests, answers, strict=True):
        assert json.loads(answer) == calc_html.run(catalog, "before", raw).to_json(), raw


def test_your_start_from_a_pasted_log(live, catalog):
    """Paste a real startup log (1CatAI/1Cat-vLLM#237) into Your start: the page shows calc's figures,
    each with its log line; a paste that is not a log withdraws the result and says why."""
    text = (ROOT / "logs" / "public" / "excerpts" / "1cat-237-v100-tp4.log").read_text(encoding="utf-8")
    live.select_option("#yourstart-preset", "")
    assert live.input_value("#yourstart-weights") == "" and live.input_value("#yourstart-pin") == ""
    live.fill("#yourstart-log", text)
    live.select_option("#yourstart-box", "other")
    raw = dict(calc_html.defaults_of(catalog, "yourstart").values)
    raw.update(dict.fromkeys(("preset", "weights", "overhead", "bytes_per_token", "pin", "max_model_len", "tp", "before", "model"), ""))
    raw.update(log=text, box="other")
    live.wait_for_function("document.querySelector('#yourstart-calc [data-fig=\"grid_tokens_0\"]') !== null")
    shown = figures_on(live, "yourstart")
    assert shown == calc_html.run(catalog, "yourstart", raw).figures
    assert shown["grid_tokens_0"] == "215,401 tokens" and shown["bpt"] == "26,668.95 B" and shown["pool_b"] == "5,744,518,758 B"
    assert "Available KV cache memory: 5.35 GiB" in live.text_content("#yourstart-result")
    live.fill("#yourstart-log", "nothing here looks like a startup log")
    live.wait_for_function("document.getElementById('yourstart-result').dataset.state === 'invalid'")
    assert "found none of the lines a vLLM or SGLang start prints" in live.text_content("#yourstart-log-err")
    assert figures_on(live, "yourstart") == {}
    live.select_option("#yourstart-preset", DEPLOYMENT)
    live.fill("#yourstart-log", "")
    live.wait_for_function("document.getElementById('yourstart-result').dataset.state === 'valid'")
    assert figures_on(live, "yourstart") == calc_html.run(catalog, "yourstart", calc_html.defaults_of(catalog, "yourstart").values).figures


def _your_log(live, catalog, name: str, box: str = "other") -> tuple[dict, dict]:
    """Choose "none", paste one of logs/public/, pick the box: the page's figures and calc's."""
    text = (ROOT / "logs" / "public" / name).read_text(encoding="utf-8")
    live.select_option("#yourstart-preset", "")
    live.fill("#yourstart-log", text)
    live.select_option("#yourstart-box", box)
    raw = dict(calc_html.defaults_of(catalog, "yourstart").values)
    raw.update(dict.fromkeys(("preset", "weights", "overhead", "bytes_per_token", "pin", "max_model_len", "tp", "before", "model"), ""))
    raw.update(log=text, box=box)
    expected = calc_html.run(catalog, "yourstart", raw).figures
    live.wait_for_function("want => document.querySelector('#yourstart-calc [data-fig=\"command\"]')?.textContent === want", arg=expected["command"])
    return figures_on(live, "yourstart"), expected


def test_your_start_offers_the_fix_of_a_refused_start(live, catalog):
    """pytorch/pytorch#175666 as collected in logs/public/14: vLLM refused 0.9 (19.77 of 22.05 GiB
    free). The verdict says refused by the free-memory check, the one-request check is not shown
    as passing, and the command is the suggested fix's, labelled so, with the fraction it checked."""
    shown, expected = _your_log(live, catalog, "14-v1-free-memory-failure-tp2.log")
    assert shown == expected
    assert shown["verdict"] == "refused" and shown["fraction_verdict"] == "refused"
    assert "--gpu-memory-utilization 0.89" in shown["command"]  # 0.89 x 22.055 GiB = 19.63 GiB <= 19.765 - 0.1 GiB
    result = live.text_content("#yourstart-result")
    assert "vllm serve of the suggested fix" in result and "Not the refused request" in result
    assert live.text_content("#yourstart-result button.calc-copy") == "Copy the suggested fix\u2019s command"
    # a pin, a length and bytes a token typed: the one-request check after the refusal is not reached, not green
    for field, value in (("pin", "1 GiB"), ("max-model-len", "8192"), ("bytes-per-token", "65536")):
        live.fill(f"#yourstart-{field}", value)
    live.wait_for_function("document.querySelector('#yourstart-calc [data-fig=\"one_request_verdict\"]') !== null")
    assert figures_on(live, "yourstart")["one_request_verdict"] == "not reached: an earlier check refuses the start first"
    assert live.locator("#yourstart-result .calc-pass").count() == 0


def test_your_start_answers_an_sglang_log_with_sglang(live, catalog):
    """logs/public/11 is SGLang's: the launch line is SGLang's, never a vllm serve line, and
    vLLM's own checks are said not to apply rather than shown."""
    shown, expected = _your_log(live, catalog, "11-sglang-qwen3-235b-fp8-tp4.log")
    assert shown == expected
    assert shown["command"].startswith("python -m sglang.launch_server") and "vllm" not in shown["command"]
    assert "--max-total-tokens 367404" in shown["command"]  # the tokens SGLang logged for this pool
    assert "fraction_verdict" not in shown and "one_request_verdict" not in shown
    assert "SGLang has no byte pin" in live.text_content("#yourstart-result")


def test_before_follows_the_box_and_your_start_the_log(live, catalog):
    """Choosing an RTX 4090 moves MemAvailable to its total (no longer the DGX Spark's 120,919 MiB)
    and the figures are CPython's for it; a log from a 32 GB card pasted into "Your start" picks
    the RTX 5090 node instead of being gated on the default DGX Spark."""
    d = calc_html.defaults_of(catalog, "before").values
    live.select_option("#before-box", "rtx-4090")
    live.wait_for_function("document.getElementById('before-available').value === '23.68 GiB'")
    assert "no free-memory reading" in live.text_content("#before-available-src")
    assert live.input_value("#before-pin") == ""  # a discrete card's pool is predicted: the pin is cleared
    live.fill("#before-overhead", "2 GiB")
    live.fill("#before-pin", d["pin"])  # a pin typed: the gate runs, as on the box the page opened with
    raw = {**d, "box": "rtx-4090", "available": "23.68 GiB", "overhead": "2 GiB"}
    live.wait_for_function("document.querySelector('#before-calc [data-fig=needs]') !== null")
    assert figures_on(live, "before") == calc_html.run(catalog, "before", raw).figures
    assert "Gate: refused" in live.text_content("#before-verdict")
    live.fill("#before-overhead", "")
    live.select_option("#before-box", d["box"])
    live.wait_for_function(f"document.getElementById('before-available').value === {d['available']!r}")

    y = calc_html.defaults_of(catalog, "yourstart").values
    live.select_option("#yourstart-preset", "")
    live.fill("#yourstart-total", "")
    live.select_option("#yourstart-box", "dgx-spark")  # the default box, whatever an earlier test left
    log = (ROOT / "logs" / "public" / "36-v02x-qwen38-27b-tp2-5090-kv-memory-suggestion.log").read_text()
    live.fill("#yourstart-log", log)
    live.wait_for_function("document.getElementById('yourstart-box').value === 'rtx-5090-node'")
    assert "the catalog's one box of that size" in live.text_content("#yourstart-box-src")
    live.select_option("#yourstart-box", "dgx-spark")
    live.wait_for_function("document.getElementById('yourstart-result').dataset.state === 'invalid'")
    assert "this log is not from this box" in live.text_content("#yourstart-box-err")
    live.fill("#yourstart-log", "")
    live.select_option("#yourstart-preset", y["preset"])
    live.wait_for_function("document.getElementById('yourstart-result').dataset.state === 'valid'")
