// Pyodide for the calculator page, with the calculators' files: the page starts it (once it has
// been painted) and PyScript's `interpreter` names this module, which hands PyScript the same
// instance with the files already in its file system. The files, listed by the page in
// #calc-python-files, download while Pyodide boots. Everything is loaded from this site
// (runtime/pyodide/, copied by the build).
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

// Each file's path is relative to Python's working directory, which is on sys.path, so
// `import calc` finds calc/. The phases of the start are marked on the page's timeline
// (performance marks "calc:..."; the glue adds its own), for scripts/bench.py to read.
export function start() {
  started ??= (async () => {
    performance.mark("calc:runtime-start");
    const list = document.getElementById("calc-python-files");
    const files = list ? JSON.parse(list.textContent) : [];
    const downloads = Promise.all(files.map(([url, path]) => fetched(new URL(url, location.href).href, path)));
    const watch = instantiationFailure();
    const pyodide = await Promise.race([load({ indexURL }), watch.failed]).finally(watch.restore);
    performance.mark("calc:pyodide-loaded");
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

// What PyScript calls: the instance on its way, with PyScript's output streams.
export async function loadPyodide(options = {}) {
  performance.mark("calc:pyscript-asks");
  const pyodide = await start();
  if (options.stdout) pyodide.setStdout({ batched: options.stdout });
  if (options.stderr) pyodide.setStderr({ batched: options.stderr });
  return pyodide;
}
