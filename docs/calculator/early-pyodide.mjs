// Pyodide for the calculator page, with the calculators' files, and the page's glue run on it:
// the page imports this module once it has been painted and calls run(). The files, listed by
// the page in #calc-python-files, and the glue (docs/calculator/main.py) download while Pyodide
// boots. Everything is loaded from this site (runtime/pyodide/, copied by the build).
import { loadPyodide as load, version } from "../runtime/pyodide/pyodide.mjs";

const indexURL = new URL("../runtime/pyodide/", import.meta.url).href;
let started;

async function fetched(url, path) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status} ${response.statusText}`);
  return [path, new Uint8Array(await response.arrayBuffer())];
}

// Pyodide only warns when its WebAssembly cannot be instantiated (a missing file, a host that
// serves it with the wrong type) and never settles: this hears the warning and fails instead, so
// the page says Python could not start rather than that it is starting, for good.
function instantiationFailure() {
  let restore;
  const failed = new Promise((_, reject) => {
    const warn = console.warn;
    let heard = false;
    console.warn = function (...args) {
      warn.apply(console, args);
      if (heard) reject(new Error(`the interpreter's WebAssembly did not load (${args[0]})`));
      heard ||= args[0] === "wasm instantiation failed!";
    };
    restore = () => { console.warn = warn; };
  });
  return { failed, restore };
}

// A fatal error (the browser's stack exhausted inside the interpreter, say) leaves Pyodide unusable
// and every result on the page as it was: the page hears of it here and withdraws them
// ("calc:fatal", handled by the page's loading script), so nothing stale reads as valid.
function whenFatal(pyodide) {
  const api = pyodide._api;
  if (!api) return;
  const before = api.on_fatal;
  api.on_fatal = (error) => {
    if (before) before(error);
    dispatchEvent(new CustomEvent("calc:fatal", { detail: String((error && error.message) || error) }));
  };
}

// What the start is doing, for the page's status line.
function progress(detail) {
  dispatchEvent(new CustomEvent("calc:progress", { detail }));
}

// Each file's path is relative to Python's working directory, which is on sys.path, so
// `import calc` finds calc/. The phases of the start are marked on the page's timeline
// (performance marks "calc:..."; the page's start script marks the first, the glue its own), for
// scripts/bench.py to read.

export function start() {
  started ??= (async () => {
    progress("loading Pyodide");
    const list = document.getElementById("calc-python-files");
    const files = list ? JSON.parse(list.textContent) : [];
    const downloads = Promise.all(files.map(([url, path]) => fetched(new URL(url, location.href).href, path)));
    const watch = instantiationFailure();
    const pyodide = await Promise.race([load({ indexURL }), watch.failed]).finally(watch.restore);
    performance.mark("calc:pyodide-loaded");
    progress("loading the calculators");
    whenFatal(pyodide);
    for (const [path, bytes] of await downloads) {
      const folder = path.split("/").slice(0, -1).join("/");
      if (folder) pyodide.FS.mkdirTree(folder);
      pyodide.FS.writeFile(path, bytes);
    }
    performance.mark("calc:files-written");
    return pyodide;
  })();
  return started;
}

export { version };

// The page's glue, fetched while Pyodide boots, run once the files are written: it wires the
// forms and says when Python is ready.
export async function run(glueURL) {
  const glue = fetched(new URL(glueURL, location.href).href, "main.py");
  const pyodide = await start();
  const [, bytes] = await glue;
  pyodide.runPython("import os, sys\nif os.getcwd() not in sys.path: sys.path.insert(0, os.getcwd())");  // calc/ is found there
  pyodide.runPython(new TextDecoder().decode(bytes), { filename: "main.py" });
  return pyodide;
}
