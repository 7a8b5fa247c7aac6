"""Macros of the calculator page: the build-time result for its default inputs, rendered by the
same calc.html functions the browser runs, and the tags that start PyScript on the local Pyodide."""

from __future__ import annotations

import html
import json
from pathlib import Path

from calc import html as calc_html

ROOT = Path(__file__).resolve().parent.parent
GLUE = "calculator/main.py"  # docs/calculator/main.py, copied by MkDocs as a static file
EARLY = "calculator/early-pyodide.mjs"  # starts Pyodide while PyScript is still starting
# The runtime's large files, fetched while the page is still being parsed.
PRELOAD = ("pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
# PyScript plugins the calculators do not use, turned off (the error plugin too: the glue shows
# its own messages, never a traceback).
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
    """Interpreter against the page URL, files against the config URL: both relative to the page."""
    files = {f"{root}py/calc/{path.name}": f"./calc/{path.name}" for path in sorted((ROOT / "calc").glob("*.py"))}
    files[f"{root}py/catalog.json"] = "./catalog.json"
    return {
        "interpreter": f"{root}{EARLY}",
        "files": files,
        "plugins": [f"!{name}" for name in UNUSED_PLUGINS],
    }


def runtime_html(page_url: str) -> str:
    """The loading state, then PyScript: the py script (with its config) before core.js, which is
    async so that Pyodide starts while the rest of the page is still being parsed; the runtime's
    large files are preloaded for the same reason."""
    root = up(page_url)
    config = html.escape(json.dumps(pyscript_config(root), separators=(",", ":")), quote=True)
    pyodide = f"{root}runtime/pyodide/"
    return "\n".join(
        (
            "<!-- calc-runtime -->",
            '<div class="calc-runtime">',
            '<p class="calc-status" id="calc-status" role="status" hidden>Python is starting; the figures below are the build-time result for the default inputs.</p>',
            '<noscript><p class="calc-status">JavaScript is off: the figures below are the build-time result for the default inputs; edits need JavaScript.</p></noscript>',
            "</div>",
            LOADING_SCRIPT,
            f'<script>import("{root}{EARLY}").then((m) => m.start());</script>',
            f'<link rel="modulepreload" href="{pyodide}pyodide.mjs">',
            f'<link rel="modulepreload" href="{pyodide}pyodide.asm.mjs">',
            *(f'<link rel="preload" as="fetch" crossorigin="anonymous" href="{pyodide}{name}">' for name in PRELOAD),
            f'<link rel="stylesheet" href="{root}runtime/pyscript/core.css">',
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
