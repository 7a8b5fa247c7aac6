"""Timings of the calculator page in headless Chromium, against a bare Pyodide boot on the same
server: ratios to read, not a pass/fail test.

One run builds the site into a temporary directory, serves it on 127.0.0.1 under a sub-path and
prints, as medians over a few fresh browser contexts (empty caches):
  - navigation to the first figure (the build-time HTML, no Python);
  - navigation to Python ready and to the first recomputed figure (an edit applied);
  - a bare Pyodide boot on a blank page (loadPyodide from runtime/pyodide with the local indexURL);
  - ours / bare (goal: overhead under 10 %);
  - the median time of one recompute over 50 edits (goal: under 50 ms);
  - the site's size.
Run: .venv/bin/python scripts/bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from playwright.sync_api import Browser, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"]
SUB = "/sub/"
TIMEOUT_MS = 120_000

BARE_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>bare Pyodide boot</title>
<script type="module">
import { loadPyodide } from "../runtime/pyodide/pyodide.mjs";
const pyodide = await loadPyodide({ indexURL: new URL("../runtime/pyodide/", location.href).href });
pyodide.runPython("1 + 1");
window.__bench = { ready: performance.now() };
</script>
"""

# Installed before the page's own scripts: notes when the first figure enters the DOM, when the
# glue says Python is ready, and applies one edit at once to time the first recomputed figure.
MARKS = """(() => {
  const marks = (window.__bench = {});
  const seen = () => {
    if (!("figure" in marks) && document.querySelector('[data-fig="needs"]')) marks.figure = performance.now();
  };
  new MutationObserver(seen).observe(document, { childList: true, subtree: true });
  addEventListener("py:progress", (event) => {
    if (event.detail === "Loading Pyodide") marks.pyodideStart = performance.now();
    if (event.detail === "Loaded Pyodide") marks.pyodideDone = performance.now();
  });
  let ready;
  Object.defineProperty(window, "calcReady", {
    configurable: true,
    get: () => ready,
    set(value) {
      ready = value;
      marks.ready = performance.now();
      setTimeout(() => {
        const pin = document.getElementById("start-pin");
        const before = document.querySelector('#start-calc [data-fig="needs"]').textContent;
        pin.value = "20e9";
        pin.dispatchEvent(new Event("input", { bubbles: true }));
        const after = document.querySelector('#start-calc [data-fig="needs"]').textContent;
        if (after !== before) marks.recomputed = performance.now();
      }, 0);
    },
  });
})();"""

EDITS = """() => {
  const edits = [["start-pin", (i) => (8 + 0.25 * i).toFixed(2) + "e9"], ["start-seats", (i) => String(1 + (i % 16))],
                 ["start-available-1", (i) => (100 + i / 4).toFixed(2) + " GiB"], ["start-typical-context", (i) => String(4096 * (1 + (i % 8)))]];
  const times = [];
  for (let i = 0; i < 50; i++) {
    const [id, value] = edits[i % edits.length];
    const field = document.getElementById(id);
    field.value = value(i);
    const start = performance.now();
    field.dispatchEvent(new Event("input", { bubbles: true }));
    times.push(performance.now() - start);
  }
  return times;
}"""


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript"}

    def translate_path(self, path: str) -> str:
        return super().translate_path("/" + path[len(SUB) :] if path.startswith(SUB) else "/__outside__")

    def log_message(self, format: str, *args: object) -> None:
        pass


def build(target: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(target)], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"bench: mkdocs build failed:\n{done.stderr[-4000:]}")


def measure(browser: Browser, url: str, script: str | None, wait: str) -> dict:
    context = browser.new_context()
    outside: list[str] = []
    origin = url[: url.index(SUB)]

    def route(r: object) -> None:
        if r.request.url.startswith(origin + "/"):  # type: ignore[attr-defined]
            r.continue_()  # type: ignore[attr-defined]
        else:
            outside.append(r.request.url)  # type: ignore[attr-defined]
            r.abort()  # type: ignore[attr-defined]

    page = context.new_page()
    page.route("**/*", route)
    if script:
        page.add_init_script(script)
    page.goto(url)
    page.wait_for_function(wait, timeout=TIMEOUT_MS)
    marks = page.evaluate("window.__bench")
    paint = page.evaluate("(performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime")
    marks["fcp"] = paint
    marks["outside"] = outside
    marks["page"] = page
    return marks


def size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def megabytes(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh-context runs of each page (default 7)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-site-") as tmp:
        site = Path(tmp) / "site"
        build(site)
        (site / "bench").mkdir()
        (site / "bench" / "bare.html").write_text(BARE_PAGE, encoding="utf-8")
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}{SUB}"
        ours, bare, recomputes, outside = [], [], [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for run in range(args.runs):
                b = measure(browser, base + "bench/bare.html", None, "window.__bench && window.__bench.ready")
                b["page"].context.close()
                bare.append(b)
                o = measure(browser, base + "calculator/", MARKS, "window.__bench && window.__bench.recomputed")
                if run == 0:
                    recomputes = o["page"].evaluate(EDITS)
                o["page"].context.close()
                ours.append(o)
                outside += b["outside"] + o["outside"]
            browser.close()
        server.shutdown()
        server.server_close()

        def med(rows: list[dict], key: str) -> float:
            return statistics.median(r[key] for r in rows)

        figure, fcp, ready, recomputed, boot = med(ours, "figure"), med(ours, "fcp"), med(ours, "ready"), med(ours, "recomputed"), med(bare, "ready")
        print(f"Calculator page in headless Chromium, served on 127.0.0.1 under {SUB}: medians of {args.runs} fresh-context runs")
        print(f"  navigation -> first figure (build-time HTML, no Python) {figure:8.0f} ms   (first contentful paint {fcp:.0f} ms)")
        print(f"  navigation -> Python ready, calculators wired          {ready:8.0f} ms")
        print(f"  navigation -> first recomputed figure (edit applied)   {recomputed:8.0f} ms")
        start, done = med(ours, "pyodideStart"), med(ours, "pyodideDone")
        print(
            f"    of which: page and PyScript until it calls Pyodide {start:.0f} ms, Pyodide and the files {done - start:.0f} ms, "
            f"PyScript's bootstrap and our glue (import calc, load the catalog, recompute all) {ready - done:.0f} ms"
        )
        print(f"  bare Pyodide boot on a blank page, same server         {boot:8.0f} ms")
        ratios = sorted(o["recomputed"] / b["ready"] for o, b in zip(ours, bare, strict=True))
        print(
            f"  bare boots ranged {min(r['ready'] for r in bare):.0f} to {max(r['ready'] for r in bare):.0f} ms; ours {min(r['recomputed'] for r in ours):.0f} to {max(r['recomputed'] for r in ours):.0f} ms"
        )
        print(f"  ours / bare: {recomputed / boot:.3f} to the first recomputed figure (overhead {100 * (recomputed / boot - 1):+.1f} %; goal under 10 %)")
        print(f"               {ready / boot:.3f} to Python ready; run by run (each against the bare boot just before it) {ratios[0]:.2f} to {ratios[-1]:.2f}")
        ordered = sorted(recomputes)
        print(
            f"  one recompute (input event to DOM updated), {len(recomputes)} edits: median {statistics.median(recomputes):.1f} ms, "
            f"p90 {ordered[int(0.9 * (len(ordered) - 1))]:.1f} ms, max {ordered[-1]:.1f} ms (goal: median under 50 ms)"
        )
        runtime = site / "runtime"
        print(
            f"Site: {megabytes(size(site) - size(site / 'bench'))} in all; runtime/pyodide {megabytes(size(runtime / 'pyodide'))}, "
            f"runtime/pyscript {megabytes(size(runtime / 'pyscript'))}, py/ (calc and catalog) {size(site / 'py') / 1e3:.0f} kB, "
            f"calculator page {(site / 'calculator' / 'index.html').stat().st_size / 1e3:.0f} kB"
        )
        print(f"Requests that left the local server (aborted): {len(outside)}")


if __name__ == "__main__":
    main()
