"""Macros of the calculator page: the build-time result for its default inputs, rendered by the
same calc.html functions the browser runs, and the tags that start PyScript on the local Pyodide."""

from __future__ import annotations

import html
import json
from pathlib import Path

from calc import html as calc_html
from hooks.runtime import browser_calc_files

ROOT = Path(__file__).resolve().parent.parent
GLUE = "calculator/main.py"  # docs/calculator/main.py, copied by MkDocs as a static file
EARLY = "calculator/early-pyodide.mjs"  # starts Pyodide while PyScript is still starting
# The runtime's large files, fetched while the page is still being parsed.
PRELOAD = ("pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
# PyScript plugins the calculators do not use, turned off (the error plugin too: the glue shows
# its own messages, never a traceback). PyScript reads a config for MicroPython as well and, with
# none, loads every plugin: the page gives it one too, with the same plugins off.
UNUSED_PLUGINS = ("codemirror", "deprecations-manager", "donkey", "error", "py-editor", "py-game", "py-terminal")

# Shown while Python starts (hidden with JavaScript off), and says so if it cannot start; marks a
# result as waiting when a field is edited before Python has loaded, so a build-time figure never
# passes for the new inputs.
LOADING_SCRIPT = """<script>(function () {
  var status = document.getElementById("calc-status");
  status.hidden = false;
  addEventListener("py:progress", function (event) {
    if (!window.calcReady) status.textContent = "Python is starting (" + event.detail + "); the figures below are the build-time result for the default inputs.";
  });
  addEventListener("unhandledrejection", function (event) {
    if (window.calcReady) return;
    var reason = event.reason && (event.reason.message || event.reason);
    status.textContent = "Python could not start (" + reason + "); the figures below are the build-time result for the default inputs.";
    status.dataset.state = "failed";
  });
  document.addEventListener("input", function (event) {
    var calc = !window.calcReady && event.target.closest && event.target.closest(".calc");
    if (calc) calc.querySelector(".calc-result").dataset.state = "pending";
  });
})();</script>"""


def up(page_url: str) -> str:
    """The relative path from a page to the site root: "calculator/" is one level deep."""
    depth = page_url.count("/")
    return "../" * depth if depth else "./"


def pyscript_config(root: str) -> dict:
    """The interpreter, resolved against the page URL: the early start below, which also writes
    the calculators' files, so PyScript has none to fetch."""
    return {"interpreter": f"{root}{EARLY}", "plugins": [f"!{name}" for name in UNUSED_PLUGINS]}


def python_files(root: str) -> list[tuple[str, str]]:
    """(URL relative to the page, path in Python's working directory): the calc modules the
    browser imports and the catalog."""
    return [(f"{root}py/calc/{path}", f"calc/{path}") for path in browser_calc_files()] + [(f"{root}py/catalog.json", "catalog.json")]


def runtime_html(page_url: str) -> str:
    """The loading state, then the runtime: Pyodide starts, and the calculators' files download,
    while the rest of the page is parsed (the runtime's large files are preloaded for the same
    reason); PyScript's core.js is an async module. Nothing here blocks parsing or painting."""
    root = up(page_url)
    config = html.escape(json.dumps(pyscript_config(root), separators=(",", ":")), quote=True)
    micropython = html.escape(json.dumps({"plugins": [f"!{name}" for name in UNUSED_PLUGINS]}, separators=(",", ":")), quote=False)
    files = json.dumps(python_files(root), separators=(",", ":"))
    pyodide = f"{root}runtime/pyodide/"
    return "\n".join(
        (
            "<!-- calc-runtime -->",
            '<div class="calc-runtime">',
            '<p class="calc-status" id="calc-status" role="status" hidden>Python is starting; the figures below are the build-time result for the default inputs.</p>',
            '<noscript><p class="calc-status">JavaScript is off: the figures below are the build-time result for the default inputs; edits need JavaScript.</p></noscript>',
            "</div>",
            LOADING_SCRIPT,
            f'<script>import("{root}{EARLY}").then((m) => m.start({files}));</script>',
            f'<link rel="modulepreload" href="{pyodide}pyodide.mjs">',
            f'<link rel="modulepreload" href="{pyodide}pyodide.asm.mjs">',
            *(f'<link rel="preload" as="fetch" crossorigin="anonymous" href="{pyodide}{name}">' for name in PRELOAD),
            f"<mpy-config hidden>{micropython}</mpy-config>",
            f'<script type="py" src="{root}{GLUE}" config="{config}"></script>',
            f'<script type="module" async src="{root}runtime/pyscript/core.js"></script>',
            "<!-- /calc-runtime -->",
        )
    )


def register(env, catalog) -> None:
    """Add the calculator page's macros to the macros environment."""

    @env.macro
    def calculator(name: str) -> str:
        """One calculator with its defaults and their build-time result."""
        return calc_html.calculator_html(catalog, name)

    @env.macro
    def calculator_runtime() -> str:
        """The loading state and the PyScript tags, with paths relative to this page."""
        return runtime_html(env.page.url if env.page else "")
