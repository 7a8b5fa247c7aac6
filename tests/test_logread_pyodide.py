"""The log reader in Pyodide (the browser's Python) gives what it gives on CPython, on every
public log: the same module, run by node over the Pyodide the site ships."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from conftest import ROOT

from calc.logs.logread import read_log
from calc.units import InputError

pytestmark = pytest.mark.slow  # builds the site or boots Pyodide: make test, not make test-fast

PYODIDE = ROOT / "node_modules" / "pyodide"
SCRIPT = """
import { loadPyodide } from "%(pyodide)s/pyodide.mjs";
import fs from "node:fs";
const py = await loadPyodide({ indexURL: "%(pyodide)s/" });
py.FS.mkdirTree("/home/pyodide/calc");
py.FS.mkdirTree("/home/pyodide/logs");
py.FS.mkdirTree("/home/pyodide/calc/logs");
for (const f of ["units.py", "jsontext.py"]) py.FS.writeFile("/home/pyodide/calc/" + f, fs.readFileSync("%(root)s/calc/" + f, "utf8"));
// the package's modules and its subpackages' (calc/logs/conclude/)
for (const f of fs.readdirSync("%(root)s/calc/logs", { recursive: true }).filter((n) => n.endsWith(".py") && !n.includes("__pycache__"))) {
  py.FS.mkdirTree("/home/pyodide/calc/logs/" + f.split("/").slice(0, -1).join("/"));
  py.FS.writeFile("/home/pyodide/calc/logs/" + f, fs.readFileSync("%(root)s/calc/logs/" + f, "utf8"));
}
py.FS.writeFile("/home/pyodide/calc/__init__.py", "");
const names = fs.readdirSync("%(root)s/logs/public").filter((n) => n.endsWith(".log"));
for (const n of names) py.FS.writeFile("/home/pyodide/logs/" + n, fs.readFileSync("%(root)s/logs/public/" + n, "utf8"));
console.log(py.runPython(`
import json, os, sys
sys.path.insert(0, "/home/pyodide")
from calc.logs.logread import read_log
from calc.units import InputError
out = {"version": sys.version.split()[0]}
for name in sorted(os.listdir("/home/pyodide/logs")):
    try:
        out[name] = read_log(open("/home/pyodide/logs/" + name, encoding="utf-8").read()).to_json()
    except InputError as error:
        out[name] = "error: " + str(error)
json.dumps(out)
`));
"""


@pytest.mark.skipif(shutil.which("node") is None or not PYODIDE.exists(), reason="needs node and node_modules/pyodide (make deps)")
def test_pyodide_reads_every_public_log_as_cpython_does(tmp_path) -> None:
    script = tmp_path / "read.mjs"
    script.write_text(SCRIPT % {"pyodide": PYODIDE, "root": ROOT})
    done = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    browser = json.loads(done.stdout.strip().splitlines()[-1])
    assert browser.pop("version").startswith("3.")
    here = {}
    for path in sorted((ROOT / "logs" / "public").glob("*.log")):
        try:
            here[path.name] = read_log(path.read_text(encoding="utf-8")).to_json()
        except InputError as error:
            here[path.name] = "error: " + str(error)
    assert browser == here
    assert len(here) >= 15
