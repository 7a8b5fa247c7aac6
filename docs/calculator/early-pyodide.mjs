// Pyodide, started as soon as the calculator page is parsed rather than when PyScript has
// finished starting: PyScript's `interpreter` names this module, which hands it the same
// instance. Everything is loaded from this site (runtime/pyodide/, copied from npm by the build).
import { loadPyodide as load, version } from "../runtime/pyodide/pyodide.mjs";

const indexURL = new URL("../runtime/pyodide/", import.meta.url).href;
let started;

export function start() {
  started ??= load({ indexURL });
  return started;
}

export { version };

// What PyScript calls: the instance already on its way, with PyScript's output streams.
export async function loadPyodide(options = {}) {
  const pyodide = await start();
  if (options.stdout) pyodide.setStdout({ batched: options.stdout });
  if (options.stderr) pyodide.setStderr({ batched: options.stderr });
  return pyodide;
}
