"""Macros of the calculator page: the build-time result for its default inputs, rendered by the
same calc.present.html functions the browser runs, the status line above them, and the tags that start
the local Pyodide and run the page's glue on it, placed after the calculators."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from calc.catalog.model import Catalog
from calc.present import address
from calc.present import html as calc_html
from hooks.runtime import browser_calc_files

if TYPE_CHECKING:
    from hooks.pagemacros.build import MacrosEnv

ROOT = Path(__file__).resolve().parent.parent
GLUE = "calculator/main.py"  # docs/calculator/main.py, copied by MkDocs as a static file
EARLY = "calculator/early-pyodide.mjs"  # boots Pyodide and writes the calculators' files
# The runtime's large files, fetched while the page is still being parsed.
PRELOAD = ("pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")

# Updates the status line while Python starts, and says so if it cannot start; marks a result as
# waiting (data-state="pending") when its form differs from the page as built before Python has
# loaded, or when the address holds a link's inputs, so a build-time figure never passes for the
# new inputs; the glue recomputes those once it has; withdraws every result, and says so, if the
# interpreter dies of a fatal error. A form can differ before this script runs: typed while the
# page was still arriving, or
# restored by the browser on a reload or a return to the page (which fires no input event).
LOADING_SCRIPT = """<script>(function () {
  var status = document.getElementById("calc-status");
  function pending(calc) {
    calc.querySelector(".calc-result").dataset.state = "pending";
    calc.querySelector(".calc-verdict").dataset.state = "pending";
  }
  function edited(form) {
    return Array.prototype.some.call(form.elements, function (field) {
      if (!field.name) return false;
      if (field.type === "checkbox") return field.checked !== field.defaultChecked;
      if (field.tagName === "SELECT") {  // its default: the option marked selected, else the first
        var first = Array.prototype.find.call(field.options, function (o) { return o.defaultSelected; }) || field.options[0];
        return Boolean(first) && !first.selected;
      }
      return field.value !== field.defaultValue;
    });
  }
  function check() {
    if (window.calcReady) return;
    document.querySelectorAll(".calc form").forEach(function (form) { if (edited(form) || location.search) pending(form.closest(".calc")); });
  }
  check();
  addEventListener("pageshow", check);
  addEventListener("calc:progress", function (event) {
    if (!window.calcReady && status.dataset.state !== "failed") status.textContent = "Python is starting (" + event.detail + "); the figures below are the build-time result for the default inputs.";
  });
  function failed(reason) {
    if (window.calcReady) return;
    status.textContent = "Python could not start (" + reason + "); the figures below are the build-time result for the default inputs.";
    status.dataset.state = "failed";
  }
  addEventListener("unhandledrejection", function (event) { failed(event.reason && (event.reason.message || event.reason)); });
  addEventListener("calc:failed", function (event) { failed(event.detail); });
  function stopped(reason) {
    window.calcStopped = true;
    status.textContent = "Python stopped (" + reason + "); the calculators no longer compute: reload the page.";
    status.dataset.state = "failed";
    document.querySelectorAll(".calc").forEach(function (calc) {
      var result = calc.querySelector(".calc-result"), verdict = calc.querySelector(".calc-verdict");
      result.innerHTML = "";
      result.dataset.state = "failed";
      verdict.textContent = "No result: Python stopped (" + reason + "); reload the page to calculate again.";
      verdict.dataset.state = "failed";
    });
  }
  addEventListener("calc:fatal", function (event) { stopped(event.detail); });
  addEventListener("error", function (event) {  // an uncaught fatal error, should the interpreter's own hook not run
    if (event.error && event.error.pyodide_fatal_error) stopped(event.error.message || String(event.error));
  });
  document.addEventListener("input", function (event) {
    var calc = !window.calcReady && !window.calcStopped && event.target.closest && event.target.closest(".calc");
    if (calc) pending(calc);
  });
})();</script>"""


def up(page_url: str) -> str:
    """The relative path from a page to the site root: "calculator/" is one level deep."""
    depth = page_url.count("/")
    return "../" * depth if depth else "./"


def python_files(root: str) -> list[tuple[str, str]]:
    """(URL relative to the page, path in Python's working directory): the calc modules the
    browser imports and the catalog."""
    return [(f"{root}py/calc/{path}", f"calc/{path}") for path in browser_calc_files()] + [(f"{root}py/catalog.json", "catalog.json")]


# Starts the runtime once the parsed page has been painted: preloads Pyodide's large files and
# imports the early start, which boots Pyodide, writes the files and runs the glue on it (no
# PyScript: its own bootstrap, Python and JavaScript, came before the glue and gave it nothing it
# uses). Fetching and booting earlier would compete with the page for the network and the main
# thread and paint the build-time figures later.
START_SCRIPT = """<script>(function () {
  var runtime = RUNTIME;
  function go() {
    performance.mark("calc:runtime-start");  // the phases of the start, on the page's timeline (scripts/bench.py reads them)
    runtime.modules.forEach(function (href) { var link = document.createElement("link"); link.rel = "modulepreload"; link.href = href; document.head.append(link); });
    runtime.fetches.forEach(function (href) { var link = document.createElement("link"); link.rel = "preload"; link.as = "fetch"; link.crossOrigin = "anonymous"; link.href = href; document.head.append(link); });
    import(runtime.early).then(function (m) { return m.run(runtime.glue); }, function () {
      dispatchEvent(new CustomEvent("calc:failed", { detail: runtime.early + " did not load" }));
    });
  }
  function afterPaint() { requestAnimationFrame(function () { setTimeout(go, 0); }); }
  if (document.readyState === "loading") addEventListener("DOMContentLoaded", afterPaint, { once: true });
  else afterPaint();
})();</script>"""


# Above the calculators, with no script: a script there pauses the parser before the first
# calculator is read, and the first paint may come without it. The line shows with scripting on
# (calculator.css hides it with scripting off, where the noscript line speaks instead).
STATUS_HTML = """<div class="calc-runtime">
<p class="calc-status" id="calc-status" role="status">Python is starting; the figures below are the build-time result for the default inputs.</p>
<noscript><p class="calc-status">JavaScript is off: the figures below are the build-time result for the default inputs; edits need JavaScript.</p></noscript>
</div>"""


RUNTIME_BEGIN = "<!-- calc-runtime -->"  # the runtime's block; a page with it holds Material's script


def runtime_html(page_url: str) -> str:
    """The lists the runtime reads, the script that keeps the status line, and the one that
    starts the runtime after the page's first paint. Nothing here blocks parsing or painting."""
    root = up(page_url)
    files = json.dumps(python_files(root), separators=(",", ":"))
    pyodide = f"{root}runtime/pyodide/"
    runtime = {
        "modules": [f"{pyodide}pyodide.mjs", f"{pyodide}pyodide.asm.mjs"],
        "fetches": [f"{pyodide}{name}" for name in PRELOAD],
        "early": f"{root}{EARLY}",
        "glue": f"{root}{GLUE}",
    }
    return "\n".join(
        (
            RUNTIME_BEGIN,
            LOADING_SCRIPT,
            f'<script type="application/json" id="calc-python-files">{files}</script>',
            START_SCRIPT.replace("RUNTIME", json.dumps(runtime, separators=(",", ":"))),
            "<!-- /calc-runtime -->",
        )
    )


# Material's script on the calculator page, held while Python starts: see the script's comment.
THEME_HOLD = Path(__file__).with_name("theme-hold.js")
_THEME_SCRIPT = re.compile(r'<script src="([^"]*assets/javascripts/bundle\.[0-9a-f]+\.min\.js)"></script>\n?')
_HEADER = re.compile(r'<header class="md-header[^"]*"[^>]*>.*?</header>\n?', re.S)


def hold_theme_script(output: str, page: str) -> str:
    """The calculator page as Material wrote it, with its script held (hooks/theme-hold.js) and
    that script's stand-in placed right after Material's header, before the page is painted."""
    scripts = _THEME_SCRIPT.findall(output)
    output = _THEME_SCRIPT.sub("", output)
    header = _HEADER.search(output)
    if len(scripts) != 1 or not header:
        raise ValueError(
            f'{page}: expected one <script src=".../assets/javascripts/bundle.<hash>.min.js"> and Material\'s <header class="md-header"> '
            f"to hold its script until Python has loaded; found {len(scripts)} such scripts and {'a' if header else 'no'} header"
        )
    held = "<script>" + THEME_HOLD.read_text(encoding="utf-8").replace("BUNDLE_SRC", json.dumps(scripts[0])) + "</script>\n"
    return output[: header.end()] + held + output[header.end() :]


_WORDS = ("No", "One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten", "Eleven", "Twelve")


def count_in_words(n: int) -> str:
    """A small count as a capitalised word (Seven), in digits past twelve."""
    return _WORDS[n] if 0 <= n < len(_WORDS) else str(n)


def calculator_href(catalog: Catalog, page_url: str, calculator: str, inputs: dict[str, str]) -> str:
    """The address of a calculator's page, relative to `page_url`, with `inputs` in its query as
    the page writes them; a build error when the calculator would not take them as they are."""
    defaults = calc_html.defaults_of(catalog, calculator).values
    names = [f.name for f in calc_html.fields_of(catalog, calculator)]
    unknown = sorted(set(inputs) - set(names))
    out = calc_html.run(catalog, calculator, {**defaults, **inputs})
    if unknown or not out.valid:
        said = f"unknown fields {', '.join(unknown)}" if unknown else "; ".join(f"{k}: {v}" for k, v in out.errors.items())
        raise ValueError(f"link to the {calculator} calculator: expected inputs it takes, found {inputs!r} ({said})")
    written = address.encode({**defaults, **inputs}, defaults, names)
    query = urlencode(written.pairs)
    return f"{up(page_url)}calculator/{calc_html.PAGES[calculator]}/" + (f"?{query}" if query else "")


def register(env: MacrosEnv, catalog: Catalog) -> None:
    """Add the calculator page's macros to the macros environment."""

    @env.macro
    def calculator(name: str) -> str:
        """One calculator with its defaults and their build-time result."""
        return calc_html.calculator_html(catalog, name)

    @env.macro
    def calculators_in_words() -> str:
        """How many calculators the page holds, as a word opening a sentence: the registry's count."""
        return count_in_words(len(calc_html.CALCULATORS))

    @env.macro
    def calculator_status() -> str:
        """The line that says whether Python has loaded, above the calculators."""
        return STATUS_HTML

    @env.macro
    def with_your_numbers(calculator: str, text: str = "with your numbers", **inputs: object) -> str:
        """A link to a calculator's page filled with this page's figures (`inputs`, by field)."""
        href = calculator_href(catalog, env.page.url if env.page else "", calculator, {k: str(v) for k, v in inputs.items()})
        return f'<a class="calc-link" href="{html.escape(href)}">{html.escape(text)}</a>'

    @env.macro
    def calculator_runtime() -> str:
        """The runtime's tags, with paths relative to this page, after the calculators."""
        return runtime_html(env.page.url if env.page else "")
