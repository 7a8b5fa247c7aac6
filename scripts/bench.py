"""What the site costs, as ratios against a reference measured in the same run: read them, do not
assert them (no timed tests).

Every row pairs our figure with its reference, run interleaved (A B, then B A, ...), and prints
the median of the pairs' ratios with the medians of each side, and the ratios' middle half (first
to third quartile): on a shared machine one run's median moves, and the spread says by how much.

Build (issue 10 and issue 12):
  - `mkdocs build --strict` of the project against a *plain* mkdocs-material build of the same
    pages. Plain means: the very markdown our build hands to Python-Markdown once the macros have
    run (every macro replaced by the text it rendered, the generated catalog pages included), with
    each markdown-exec block replaced by what it printed (HTML for an html="1" block, as markdown-exec
    inserts it; a console block holding the output otherwise), the same
    nav (the generated pages included), theme, features, markdown extensions, stylesheets and the
    search plugin; and without our hooks, the macros plugin, markdown-exec, the catalog load and
    checks, and the calculator's runtime copy. So the ratio is what our work costs over MkDocs
    rendering the same pages.
  - the same at synthetic catalogs with more models (default: the shipped count, 10x and 100x;
    --models 57,107,207 for other counts): models.yaml of a temporary copy of the project gets
    copies of the shipped models under new ids, each with its readings, fits and architecture,
    so every model page does the work a real one does. Per model page: the slope between the
    smallest and the largest catalog, and between each pair of neighbours (linear growth means
    the slopes agree).
  - CPU time (user + system) beside wall time, the steadier of the two on a shared machine, and
    peak memory (max RSS) of each build's process, from os.wait4's resource usage.
Calculator page, in headless Chromium (/usr/bin/chromium), the site served on 127.0.0.1 under a
sub-path, each visit in a fresh browser context (empty caches):
  - Python ready (calculators wired) on each calculator's page against a bare page in the start
    gate's directory that preloads the runtime as a calculator page does, boots the same Pyodide,
    fetches the calc/ files and catalog.json the page lists (in parallel with the boot), writes
    them into Pyodide's file system, imports calc and answers one start-gate request: the floor
    of any page running our Python. Then a second calculator's page in the same visit (the
    runtime from the browser's cache) against that page as a first visit.
  - the first calculator figure painted (the frame after the start gate's figure entered the
    DOM: the first requestAnimationFrame callback after it, which runs only once nothing blocks
    rendering, just before that frame paints) against the same page with the runtime tags
    removed (the block between <!-- calc-runtime --> and <!-- /calc-runtime -->).
  - a cold visit's bytes, every response of the visit until Python is ready and the network is
    idle, counted by the server as it sends them: raw, and gzipped (level 6, as a host would).
  - one recompute (input event to DOM updated), median of 50 edits.
Command line: `python -m calc gate` against `python -c pass` (the same interpreter), interleaved.
Every child runs with bytecode caching on, as Python does by default.
Site: its size on disk, with the runtime's share.

Run: .venv/bin/python scripts/bench.py [--pairs N] [--models 7,70,700] [--skip build,calculator,cli]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import html
import http.server
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from calc.present import html as calc_html  # noqa: E402
from tests.sitebuild import copy_project  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"]
SUB = "/sub/"
TIMEOUT_MS = 180_000
# Python as it runs by default, writing and reusing bytecode: an environment that turns that off
# (PYTHONDONTWRITEBYTECODE) would have every run compile calc/ and the hooks again.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "NO_MKDOCS_2_WARNING": "1"}

# --- the build ------------------------------------------------------------------------------

# A hook added to a copy of the project for one build: writes the markdown each page hands to
# Python-Markdown (after the macros, exec blocks replaced by their printed output) and the nav,
# which the plain build then renders with mkdocs-material alone.
DUMP_HOOK = """
import contextlib, io, json, re
from pathlib import Path
from mkdocs.plugins import event_priority

OUT = Path(__file__).resolve().parent / "plain"
FENCE = re.compile(r'^```python exec="on"([^\\n]*)\\n(.*?)^```[ \\t]*$', re.S | re.M)
SESSION = re.compile(r'session="([^"]*)"')
HTML = re.compile(r'\\bhtml="(?:1|on|true)"')


def _output(match, sessions):
    # blocks of one session on a page share their globals, as markdown-exec runs them
    session = SESSION.search(match.group(1))
    scope = sessions.setdefault(session.group(1), {}) if session else {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(match.group(2), scope)
    if HTML.search(match.group(1)):  # printed HTML, inserted as it is
        return out.getvalue().rstrip()
    return "```console\\n" + out.getvalue().rstrip() + "\\n```"


@event_priority(-200)
def on_config(config, **_):
    OUT.mkdir(exist_ok=True)
    (OUT / "nav.json").write_text(json.dumps(config["nav"]))


@event_priority(-200)
def on_page_markdown(markdown, page, **_):
    path = OUT / "docs" / page.file.src_uri
    path.parent.mkdir(parents=True, exist_ok=True)
    sessions = {}
    path.write_text(FENCE.sub(lambda match: _output(match, sessions), markdown), encoding="utf-8")
    return markdown
"""


def project_with_models(target: Path, count: int) -> Path:
    """A copy of the project whose catalog holds `count` models: the shipped ones, then copies."""
    target.mkdir(parents=True)
    copy_project(target)
    path = target / "catalog" / "models.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    shipped = list(data["models"])
    for i in range(count - len(shipped)):
        model = json.loads(json.dumps(shipped[i % len(shipped)], default=str))
        model["id"] = f"{model['id']}-copy-{i}"
        model["name"] = f"{model['name']} (copy {i})"
        data["models"].append(model)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return target


def plain_project(project: Path) -> Path:
    """The plain twin of a project copy: its pages as our build rendered them, mkdocs-material only."""
    config = yaml.safe_load((project / "mkdocs.yml").read_text(encoding="utf-8"))
    (project / "bench_dump.py").write_text(DUMP_HOOK, encoding="utf-8")
    dump = {**config, "hooks": [*config.get("hooks", []), "bench_dump.py"]}
    (project / "mkdocs-dump.yml").write_text(yaml.safe_dump(dump, sort_keys=False), encoding="utf-8")
    run_build(project, project / "site-dump", "mkdocs-dump.yml")
    plain = project / "plain"
    for css in config.get("extra_css", []):
        (plain / "docs" / css).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(project / "docs" / css, plain / "docs" / css)
    twin = {key: value for key, value in config.items() if key not in ("hooks", "plugins", "watch")}
    twin["plugins"] = ["search"]
    twin["nav"] = json.loads((plain / "nav.json").read_text(encoding="utf-8"))
    (plain / "mkdocs.yml").write_text(yaml.safe_dump(twin, sort_keys=False), encoding="utf-8")
    return plain


def run_build(cwd: Path, site: Path, config: str = "mkdocs.yml") -> tuple[float, int, float]:
    """Seconds, peak RSS (bytes) and CPU seconds (user + system) of one `mkdocs build --strict`
    in its own process. CPU time is the steadier figure on a shared machine."""
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", config, "-d", str(site)],
        cwd=cwd,
        env=ENV,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    output = child.stdout.read() if child.stdout else b""
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        sys.exit(f"bench: mkdocs build in {cwd} failed:\n{output.decode(errors='replace')[-4000:]}")
    shutil.rmtree(site, ignore_errors=True)
    return seconds, usage.ru_maxrss * 1024, usage.ru_utime + usage.ru_stime


def paired(pairs: int, a, b) -> tuple[list, list]:
    """Run a() and b() `pairs` times, alternating which goes first."""
    first, second = [], []
    for i in range(pairs):
        if i % 2:
            second.append(b())
            first.append(a())
        else:
            first.append(a())
            second.append(b())
    return first, second


def ratio_median(ours: list[float], ref: list[float]) -> float:
    return statistics.median(o / r for o, r in zip(ours, ref, strict=True))


def ratio_spread(ours: list[float], ref: list[float], places: int = 2) -> str:
    """The pairs' ratios as their median and middle half (first to third quartile): on a shared
    machine one run's median moves, and the spread says by how much."""
    ratios = [o / r for o, r in zip(ours, ref, strict=True)]
    median = f"{statistics.median(ratios):.{places}f}x"
    if len(ratios) < 4:
        return median
    low, _, high = statistics.quantiles(ratios, n=4)
    return f"{median} (middle half {low:.{places}f}-{high:.{places}f}x)"


def bench_build(counts: list[int], pairs: int, big_pairs: int) -> None:
    print(f"Build: mkdocs build --strict against a plain mkdocs-material build of the same pages ({pairs} pairs at the shipped size, {big_pairs} above)")
    print(f"  {'models':>6} {'pages':>6} {'ours':>9} {'plain':>9} {'ours/plain':>10} {'CPU ours/plain':>15} {'peak RSS ours':>14} {'plain':>9}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        for count in counts:
            project = project_with_models(Path(tmp) / f"p{count}", count)
            plain = plain_project(project)
            pages = sum(1 for _ in (plain / "docs").rglob("*.md"))
            n = pairs if count == counts[0] else big_pairs
            ours, ref = paired(n, lambda: run_build(project, project / "site"), lambda: run_build(plain, plain / "site"))  # noqa: B023
            t_ours, t_ref = statistics.median(o[0] for o in ours), statistics.median(r[0] for r in ref)
            rss_ours, rss_ref = max(o[1] for o in ours), max(r[1] for r in ref)
            ratio = ratio_median([o[0] for o in ours], [r[0] for r in ref])
            cpu = ratio_median([o[2] for o in ours], [r[2] for r in ref])
            rows.append((count, t_ours, t_ref))
            print(
                f"  {count:>6} {pages:>6} {t_ours:>8.2f}s {t_ref:>8.2f}s {ratio:>9.2f}x {cpu:>14.2f}x {rss_ours / 2**20:>10.0f} MiB {rss_ref / 2**20:>5.0f} MiB"
            )
            if n >= 4:
                print(
                    f"  {'':>13} wall {ratio_spread([o[0] for o in ours], [r[0] for r in ref])}, CPU {ratio_spread([o[2] for o in ours], [r[2] for r in ref])}"
                )
            shutil.rmtree(project)
    if len(rows) > 1:
        (n0, o0, r0), (n1, o1, r1) = rows[0], rows[-1]
        print(f"  per model page, {n0} -> {n1} models: ours {1000 * (o1 - o0) / (n1 - n0):.1f} ms, plain {1000 * (r1 - r0) / (n1 - n0):.1f} ms")
        steps = ", ".join(f"{a[0]}->{b[0]}: {1000 * (b[1] - a[1]) / (b[0] - a[0]):.1f} ms" for a, b in zip(rows, rows[1:], strict=False))
        print(f"  per model page between neighbours (ours; linear when they agree): {steps}")
        print(f"  ours over plain, the work only: {o0 - r0:.2f} s at {n0} models, {o1 - r1:.2f} s at {n1}")


# --- the calculator page --------------------------------------------------------------------

SENT: list[tuple[str, int]] = []


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript"}

    def translate_path(self, path: str) -> str:
        return super().translate_path("/" + path[len(SUB) :] if path.startswith(SUB) else "/__outside__")

    def do_GET(self) -> None:
        body = self.send_head()
        if body:
            try:
                SENT.append((body.name, os.fstat(body.fileno()).st_size))
                self.copyfile(body, self.wfile)
            except (BrokenPipeError, ConnectionResetError):  # a context closed mid-transfer
                pass
            finally:
                body.close()

    def log_message(self, format: str, *args: object) -> None:
        pass


BARE_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>bare Pyodide boot with calc</title>
<link rel="modulepreload" href="../../runtime/pyodide/pyodide.mjs">
<link rel="modulepreload" href="../../runtime/pyodide/pyodide.asm.mjs">
<link rel="preload" as="fetch" crossorigin="anonymous" href="../../runtime/pyodide/pyodide.asm.wasm">
<link rel="preload" as="fetch" crossorigin="anonymous" href="../../runtime/pyodide/python_stdlib.zip">
<link rel="preload" as="fetch" crossorigin="anonymous" href="../../runtime/pyodide/pyodide-lock.json">
<script type="module">
import { loadPyodide } from "../../runtime/pyodide/pyodide.mjs";
performance.mark("calc:runtime-start");
const files = FILES;
const fetched = Promise.all(files.map(async ([url, path]) => [path, new Uint8Array(await (await fetch(url)).arrayBuffer())]));
const pyodide = await loadPyodide({ indexURL: new URL("../../runtime/pyodide/", location.href).href });
performance.mark("calc:pyodide-loaded");
for (const [path, bytes] of await fetched) {
  pyodide.FS.mkdirTree(path.split("/").slice(0, -1).join("/") || ".");
  pyodide.FS.writeFile(path, bytes);
}
performance.mark("calc:files-written");
const answer = pyodide.runPython(`
import sys, os, js
sys.path.insert(0, os.getcwd())
from calc.present import html
from calc.catalog.loader import load_json
js.performance.mark("calc:imported")
catalog = load_json(open("catalog.json", encoding="utf-8").read())
js.performance.mark("calc:catalog-loaded")
html.run_json(catalog, '{"calculator": "start", "inputs": {}}')
`);
window.__bench = { ready: performance.now(), answer };
</script>
"""

# Installed before the page's own scripts: notes when the first figure enters the DOM and the
# frame after it, when the glue says Python is ready, and applies one edit at once to time the
# first recomputed figure.
MARKS = """(() => {
  const marks = (window.__bench = {});
  const seen = () => {
    if (!("figure" in marks) && document.querySelector('[data-fig="needs"]')) {
      marks.figure = performance.now();
      requestAnimationFrame(() => { marks.painted = performance.now(); });  // the frame that paints it
    }
  };
  new MutationObserver(seen).observe(document, { childList: true, subtree: true });
  let ready;
  Object.defineProperty(window, "calcReady", {
    configurable: true,
    get: () => ready,
    set(value) {
      ready = value;
      marks.ready = performance.now();
      setTimeout(() => {
        const pin = document.getElementById("start-pin");
        if (!pin) return;  // another calculator's page: its Python ready is what is timed
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


# The start's phases as the page marks them on its timeline (docs/calculator/early-pyodide.mjs
# and main.py; the bare page marks the same where it has them), and its first paint.
PHASES = """[...performance.getEntriesByType('mark').filter(m => m.name.startsWith('calc:')).map(m => [m.name.slice(5), m.startTime]),
             ...performance.getEntriesByType('paint').filter(p => p.name === 'first-paint').map(p => ['first-paint', p.startTime]),
             ...performance.getEntriesByType('navigation').map(n => ['dom-content-loaded', n.domContentLoadedEventEnd])]"""
PHASE_ORDER = (
    "dom-content-loaded",
    "first-paint",
    "runtime-start",
    "pyodide-loaded",
    "files-written",
    "glue-start",
    "imported",
    "catalog-loaded",
    "wired",
)


def phases_line(rows: list[dict]) -> str:
    """Median time of each phase mark over the visits (ms from navigation), in the start's order."""
    names = [n for n in PHASE_ORDER if any(n in r.get("phases", {}) for r in rows)]
    return ", ".join(f"{n} {statistics.median(r['phases'][n] for r in rows if n in r['phases']):.0f}" for n in names)


def visit(browser, url: str, wait: str, script: str | None = MARKS, keep: bool = False):
    context = browser.new_context()
    outside: list[str] = []
    origin = url[: url.index(SUB)]

    def route(r) -> None:
        if r.request.url.startswith(origin + "/"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    page = context.new_page()
    page.route("**/*", route)
    if script:
        page.add_init_script(script)
    page.goto(url)
    page.wait_for_function(wait, timeout=TIMEOUT_MS)
    marks = page.evaluate("window.__bench")
    marks["phases"] = dict(page.evaluate(PHASES))
    marks["outside"] = outside
    if keep:
        marks["page"] = page
    else:
        context.close()
    return marks


def python_files(page_html: str) -> list[list[str]]:
    """The [URL, path] pairs of the files the calculator page's Python gets: what it hands the early
    Pyodide start (or, on a page built before it, its PyScript config's `files`)."""
    started = re.search(r'<script type="application/json" id="calc-python-files">(.*?)</script>', page_html)
    if started:
        return json.loads(started.group(1))
    found = re.search(r'<script type="py"[^>]*\bconfig="([^"]*)"', page_html)
    if not found:
        sys.exit("bench: the calculator page names no Python files")
    return [list(pair) for pair in json.loads(html.unescape(found.group(1)))["files"].items()]


def without_runtime(page_html: str) -> str:
    stripped, n = re.subn(r"<!-- calc-runtime -->.*?<!-- /calc-runtime -->", "", page_html, flags=re.S)
    if n != 1:
        sys.exit("bench: the calculator page has no <!-- calc-runtime --> block")
    return stripped


def gzipped(path: str, cache: dict[str, int] = {}) -> int:  # noqa: B006
    if path not in cache:
        cache[path] = len(gzip.compress(Path(path).read_bytes(), compresslevel=6))
    return cache[path]


def bench_calculator(pairs: int) -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="bench-site-") as tmp:
        site = Path(tmp) / "site"
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT, env=ENV, check=True)
        calculator = site / "calculator" / calc_html.PAGES["start"]  # the start gate's page; the bare pages beside it
        page_html = (calculator / "index.html").read_text(encoding="utf-8")
        files = python_files(page_html)
        (calculator / "bench-bare.html").write_text(BARE_PAGE.replace("FILES", json.dumps(files)), encoding="utf-8")
        (calculator / "bench-static.html").write_text(without_runtime(page_html), encoding="utf-8")
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(site)))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        root = f"http://127.0.0.1:{server.server_address[1]}{SUB}calculator/"
        base = f"{root}{calc_html.PAGES['start']}/"
        others = [c for c in calc_html.CALCULATORS if c != "start"]
        few = max(3, pairs // 3)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            ready_wait = "window.__bench && window.__bench.recomputed"
            ours, bare = paired(
                pairs,
                lambda: visit(browser, base, ready_wait),
                lambda: visit(browser, base + "bench-bare.html", "window.__bench && window.__bench.ready", None),
            )
            with_rt, static = paired(
                pairs,
                lambda: visit(browser, base, "window.__bench && window.__bench.painted"),
                lambda: visit(browser, base + "bench-static.html", "window.__bench && window.__bench.painted"),
            )
            # every other calculator's page against the same bare boot, fresh context each time
            each = {
                c: paired(
                    few,
                    lambda c=c: visit(browser, f"{root}{calc_html.PAGES[c]}/", "window.__bench && window.__bench.ready"),
                    lambda: visit(browser, base + "bench-bare.html", "window.__bench && window.__bench.ready", None),
                )
                for c in others
            }
            # a second calculator in the same visit: the runtime comes from the browser's cache
            second = []
            for _ in range(few):
                first = visit(browser, base, ready_wait, keep=True)
                page = first["page"]
                page.goto(f"{root}{calc_html.PAGES['kv']}/")
                page.wait_for_function("window.__bench && window.__bench.ready", timeout=TIMEOUT_MS)
                second.append(page.evaluate("window.__bench.ready"))
                page.context.close()
            SENT.clear()
            cold = visit(browser, base, ready_wait, keep=True)
            cold["page"].wait_for_load_state("networkidle")
            recomputes = cold["page"].evaluate(EDITS)
            cold["page"].context.close()
            sent = list(SENT)
            browser.close()
        server.shutdown()
        server.server_close()

        def med(rows: list[dict], key: str) -> float:
            return statistics.median(r[key] for r in rows)

        print(f"Calculator page in headless Chromium, served on 127.0.0.1 under {SUB}: medians of {pairs} interleaved pairs of fresh-context visits")
        ready, boot = med(ours, "ready"), med(bare, "ready")
        print(
            f"  Python ready: ours {ready:.0f} ms, bare Pyodide + calc/ + one gate {boot:.0f} ms: "
            f"{ratio_spread([o['ready'] for o in ours], [b['ready'] for b in bare], 3)} (goal under 1.10x)"
        )
        print(f"    phases (median ms): ours {phases_line(ours)}")
        print(f"    {'':18}bare {phases_line(bare)}")
        for c, (theirs, bares) in each.items():
            print(
                f"  Python ready on {calc_html.PAGES[c]}/: {med(theirs, 'ready'):.0f} ms against {med(bares, 'ready'):.0f} ms bare: "
                f"{ratio_spread([o['ready'] for o in theirs], [b['ready'] for b in bares], 3)} (goal under 1.10x, {few} pairs)"
            )
            print(f"    phases (median ms): {phases_line(theirs)}")
        first_kv = statistics.median(r["ready"] for r in each["kv"][0])
        print(
            f"  a second calculator in the same visit ({calc_html.PAGES['kv']}/ after {calc_html.PAGES['start']}/): Python ready in "
            f"{statistics.median(second):.0f} ms against {first_kv:.0f} ms as a first visit: {statistics.median(second) / first_kv:.2f}x (goal under 1x)"
        )
        print(f"  first recomputed figure (an edit applied once ready) {med(ours, 'recomputed'):.0f} ms")
        print(
            f"  first calculator figure painted: {med(with_rt, 'painted'):.0f} ms against {med(static, 'painted'):.0f} ms without the runtime tags: "
            f"{ratio_spread([o['painted'] for o in with_rt], [s['painted'] for s in static])} (goal: no later)"
        )
        raw = sum(size for _, size in sent)
        packed = sum(gzipped(path) for path, _ in sent)
        print(f"  a cold visit: {len(sent)} responses, {raw / 1e6:.2f} MB raw, {packed / 1e6:.2f} MB gzipped (goal under 5 MB gzipped)")
        biggest = sorted(sent, key=lambda s: -s[1])[:6]
        print("    largest: " + ", ".join(f"{Path(path).relative_to(site)} {size / 1e6:.2f} MB" for path, size in biggest))
        ordered = sorted(recomputes)
        print(
            f"  one recompute (input event to DOM updated), {len(recomputes)} edits: median {statistics.median(recomputes):.1f} ms, "
            f"p90 {ordered[int(0.9 * (len(ordered) - 1))]:.1f} ms, max {ordered[-1]:.1f} ms"
        )
        outside = sum(len(r["outside"]) for r in ours + bare + with_rt + static)
        print(f"  requests that left the local server (aborted): {outside}")
        for name in ("bench-bare.html", "bench-static.html"):
            (calculator / name).unlink()

        def size(path: Path) -> int:
            return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())

        runtime = site / "runtime"
        print(
            f"Site: {size(site) / 1e6:.1f} MB in all; runtime/pyodide {size(runtime / 'pyodide') / 1e6:.1f} MB, "
            f"py/ (calc and catalog) {size(site / 'py') / 1e3:.0f} kB, "
            f"assets {size(site / 'assets') / 1e6:.1f} MB"
        )


# --- the command line -----------------------------------------------------------------------


def bench_cli(runs: int) -> None:
    def timed(argv: list[str]):
        def run() -> float:
            start = time.perf_counter()
            subprocess.run(argv, cwd=ROOT, env=ENV, check=True, stdout=subprocess.DEVNULL)
            return time.perf_counter() - start

        return run

    timed([sys.executable, "-m", "calc", "gate"])()  # warm the bytecode cache
    ours, bare = paired(runs, timed([sys.executable, "-m", "calc", "gate"]), timed([sys.executable, "-c", "pass"]))
    print(
        f"Command line: `python -m calc gate` {1000 * statistics.median(ours):.0f} ms against `python -c pass` {1000 * statistics.median(bare):.0f} ms, "
        f"{runs} interleaved pairs: {ratio_spread(ours, bare, 1)} (goal under 6x)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=11, help="interleaved pairs for the shipped build and the browser (default 11)")
    parser.add_argument("--big-pairs", type=int, default=2, help="interleaved pairs for the larger synthetic catalogs (default 2)")
    parser.add_argument("--models", help="model counts to build, such as 7,57,107,207 (default: the shipped count, 10x, 100x)")
    parser.add_argument("--skip", default="", help="comma-separated: build, calculator, cli")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    shipped = len(yaml.safe_load((ROOT / "catalog" / "models.yaml").read_text(encoding="utf-8"))["models"])
    counts = [int(n) for n in args.models.split(",")] if args.models else [shipped, 10 * shipped, 100 * shipped]
    if "cli" not in skip:
        bench_cli(4 * args.pairs)
    if "build" not in skip:
        bench_build(counts, args.pairs, args.big_pairs)
    if "calculator" not in skip:
        bench_calculator(args.pairs)


if __name__ == "__main__":
    main()
