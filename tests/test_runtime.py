"""What the calculator page ships: lists derived from imports, a lock without packages, a cut
standard library that still holds what calc imports."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from hooks import runtime

ROOT = Path(__file__).resolve().parent.parent
STDLIB = ROOT / "node_modules" / "pyodide" / "python_stdlib.zip"


def test_module_imports_at_module_level_and_everywhere():
    source = """
import os, json.decoder
from . import sibling
from .. import uncle
from .sub import thing
try:
    import tomllib
except ImportError:
    pass
class A:
    import string
def f():
    import decimal
"""
    level = runtime.module_imports(source, "pkg.inner.mod")
    assert level == {"os", "json.decoder", "pkg.inner", "pkg.inner.sibling", "pkg", "pkg.uncle", "pkg.inner.sub", "pkg.inner.sub.thing", "tomllib", "string"}
    assert runtime.module_imports(source, "pkg.inner.mod", everywhere=True) == level | {"decimal"}
    assert runtime.module_imports("from . import x", "pkg", is_package=True) == {"pkg", "pkg.x"}


def copy_calc(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "calc", tmp_path / "calc", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / runtime.GLUE).parent.mkdir(parents=True)
    shutil.copy2(ROOT / runtime.GLUE, tmp_path / runtime.GLUE)
    return tmp_path


def test_the_browser_gets_the_calc_modules_the_glue_imports_and_nothing_else():
    files = runtime.browser_calc_files()
    assert "present/html.py" in files and "catalog/spec.py" in files and "catalog/loader.py" in files and "units.py" in files
    assert "present/cli.py" not in files and not any(f.startswith("present/commands/") for f in files)
    assert "answers/watch.py" not in files and "answers/ingest.py" not in files and "__main__.py" not in files


def test_a_new_calculator_module_is_picked_up_from_the_imports(tmp_path):
    root = copy_calc(tmp_path)
    (root / "calc" / "later").mkdir()
    (root / "calc" / "later" / "__init__.py").write_text("")
    (root / "calc" / "later" / "extra.py").write_text("from calc.answers import watch\n")
    assert "answers/watch.py" not in runtime.browser_calc_files(root)
    html = root / "calc" / "present" / "html.py"
    html.write_text(html.read_text() + "\n\ndef _late():\n    from calc.later import extra\n")
    files = runtime.browser_calc_files(root)
    assert {"later/__init__.py", "later/extra.py", "answers/watch.py"} <= set(files)
    assert "present/cli.py" not in files


def test_the_lock_keeps_its_info_and_no_package():
    lock = {"info": {"python": "3.14.2", "arch": "wasm32"}, "packages": {"numpy": {"name": "numpy"}, "micropip": {}}}
    assert json.loads(runtime.trimmed_lock(json.dumps(lock))) == {"info": {"python": "3.14.2", "arch": "wasm32"}, "packages": {}}


def test_the_standard_library_keeps_what_ran_and_what_calc_imports(tmp_path):
    with zipfile.ZipFile(STDLIB) as stdlib:
        keep = runtime.stdlib_modules(stdlib)
        assert {"fractions.py", "decimal.py", "json/__init__.py", "json/decoder.py", "re/_parser.py", "_pyodide/_base.py", "encodings/utf_8.py"} <= keep
        assert "statistics.py" not in keep and "unittest/__init__.py" not in keep
        # a module calc starts to import, which no run has seen yet, comes with its own imports
        root = copy_calc(tmp_path)
        units = root / "calc" / "units.py"
        units.write_text("import statistics\n" + units.read_text())
        more = runtime.stdlib_modules(stdlib, root)
        assert more - keep >= {"statistics.py"}
        assert all(entry in more for entry in ("numbers.py", "bisect.py", "random.py"))


def test_the_browser_source_drops_docstrings_and_comments_and_keeps_the_code():
    source = '''"""The module's docstring."""

from __future__ import annotations

X = 1  # a comment


class A:
    """A class's docstring."""


def f(x: int) -> str:
    """A function's docstring."""
    # a comment
    return f"{x!r:>4}" + "not a docstring"
'''
    shipped = runtime.browser_source(source, "m.py")
    assert "docstring" not in shipped.replace("not a docstring", "") and "#" not in shipped
    assert shipped.startswith("from __future__ import annotations")  # still first
    space: dict[str, object] = {}
    exec(compile(shipped, "m.py", "exec"), space)  # noqa: S102
    assert space["f"](7) == "   7not a docstring" and space["X"] == 1  # type: ignore[operator]


def test_the_shipped_calc_gives_every_calculators_result_as_calc_does(tmp_path):
    """calc as the site ships it (without docstrings), imported from a folder of its own: each
    calculator's build-time result and one gate are the source's, figure for figure."""
    import subprocess
    import sys

    for path, text in runtime.shipped_calc(ROOT).items():
        target = tmp_path / "calc" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        assert len(text) < len((ROOT / "calc" / path).read_text(encoding="utf-8")) or "__init__" in path
    script = """
import json, sys
from calc.catalog.loader import load_json
from calc.present import html
catalog = load_json(open(sys.argv[1], encoding="utf-8").read())
print(json.dumps({c: html.run(catalog, c, html.defaults_of(catalog, c).values).to_json() for c in html.CALCULATORS}, sort_keys=True))
print(html.run_json(catalog, json.dumps({"calculator": "start", "inputs": {"pin": "20e9", "drafter": "on"}})))
"""
    from calc.catalog.loader import raw_as_json
    from calc.present.calculators import before
    from hooks.figures import site_catalog_raw

    config = Path("models", "configs", before.DEFAULT_CONFIG, "config.json")  # the default the build reads beside calc/
    (tmp_path / config).parent.mkdir(parents=True)
    shutil.copy2(ROOT / config, tmp_path / config)

    catalog = tmp_path / "catalog.json"
    catalog.write_text(raw_as_json(site_catalog_raw(ROOT)), encoding="utf-8")
    runs = [
        subprocess.run([sys.executable, "-c", script, str(catalog)], cwd=where, capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(where)})
        for where in (tmp_path, ROOT)
    ]
    assert runs[0].returncode == 0, runs[0].stderr[-600:]
    assert runs[0].stdout == runs[1].stdout and '"verdict"' in runs[0].stdout


def test_the_shipped_standard_library_drops_docstrings_but_not_pyodides():
    """The standard library's sources go without docstrings and comments (as `python -OO` runs
    them); Pyodide's own packages, which read docstrings as they boot, and a module in syntax this
    Python does not parse go as they are; every entry of the cut zip is there, in order."""
    import io

    shipped = zipfile.ZipFile(io.BytesIO(runtime.trimmed_stdlib(STDLIB)))
    with zipfile.ZipFile(STDLIB) as full:
        names = [i.filename for i in shipped.infolist()]
        assert names == [i.filename for i in full.infolist() if i.filename in set(names)]
        fractions = shipped.read("fractions.py").decode()
        assert '"""' not in fractions[:200] and "class Fraction" in fractions and len(fractions) < len(full.read("fractions.py")) * 0.8
        compile(fractions, "fractions.py", "exec")
        for name in ("_pyodide/_core_docs.py", "pyodide/webloop.py"):
            assert shipped.read(name) == full.read(name)
    assert runtime.stdlib_source("x.py", b"def f(:\n") == b"def f(:\n"  # not this Python's syntax: as it is
    assert runtime.stdlib_source("data.txt", b'"""x"""') == b'"""x"""'
