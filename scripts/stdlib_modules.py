"""Write hooks/stdlib-modules.txt: the standard-library modules the calculator page imports in the
browser, which the build keeps in the Pyodide standard library it ships (hooks/runtime.py).

Builds the site, puts the npm package's whole python_stdlib.zip back in it, opens each calculator's
page in headless Chromium, runs every calculator on its defaults and on a bad input and changes
each form's selects (as a reader would), then lists the modules Python imported from the zip.
Run it after upgrading Pyodide or PyScript: .venv/bin/python scripts/stdlib_modules.py
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from calc.present.html import PAGES  # noqa: E402
from hooks.runtime import STDLIB_SEEN  # noqa: E402

EXERCISE = """async (logs) => {
  for (const area of document.querySelectorAll("form textarea")) {
    const before = area.value;
    for (const text of [...logs, "nonsense"]) { area.value = text; area.dispatchEvent(new Event("input", { bubbles: true })); }
    area.value = before;
    area.dispatchEvent(new Event("input", { bubbles: true }));
  }
  for (const form of document.querySelectorAll("form")) {
    for (const field of form.querySelectorAll("select, input")) {
      const before = field.value;
      if (field.tagName === "SELECT") for (const option of field.options) { field.value = option.value; field.dispatchEvent(new Event("input", { bubbles: true })); }
      else { field.value = "nonsense"; field.dispatchEvent(new Event("input", { bubbles: true })); }
      field.value = before;
      field.dispatchEvent(new Event("input", { bubbles: true }));
    }
  }
  for (const calculator of [...document.querySelectorAll("form[id$='-form']")].map((form) => form.id.slice(0, -5))) {
    window.calcRun(JSON.stringify({ calculator, inputs: {} }));
    window.calcRun(JSON.stringify({ calculator, inputs: { pin: "1e999999999", pool: "x" } }));
  }
  window.calcRun("not json");
  const early = await import(new URL("../early-pyodide.mjs", location.href).href);
  const pyodide = await early.start();
  return pyodide.runPython(`
import json, sys
json.dumps(sorted(name for name, module in list(sys.modules.items()) if ".zip/" in (getattr(module, "__file__", None) or "")))
`);
}"""


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="stdlib-") as tmp:
        site = Path(tmp) / "site"
        subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        )
        shutil.copy2(ROOT / "node_modules" / "pyodide" / "python_stdlib.zip", site / "runtime" / "pyodide" / "python_stdlib.zip")
        handler = functools.partial(Quiet, directory=str(site))
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
            page = browser.new_page()
            logs = [path.read_text(encoding="utf-8", errors="replace") for path in sorted((ROOT / "logs" / "public").glob("*.log"))]
            seen: set[str] = set()
            for slug in PAGES.values():  # each calculator's page, with the modules its Python imported
                page.goto(f"http://127.0.0.1:{server.server_address[1]}/calculator/{slug}/")
                page.wait_for_function("window.calcReady", timeout=180_000)
                seen.update(json.loads(page.evaluate(EXERCISE, logs)))
            modules = sorted(seen)
            browser.close()
        server.shutdown()
    header = "# Standard-library modules the calculator page imports in the browser; written by scripts/stdlib_modules.py.\n"
    STDLIB_SEEN.write_text(header + "\n".join(modules) + "\n", encoding="utf-8")
    print(f"{STDLIB_SEEN.relative_to(ROOT)}: {len(modules)} modules")


if __name__ == "__main__":
    main()
