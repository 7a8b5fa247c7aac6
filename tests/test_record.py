"""calc/record.py: a record behaves as the frozen dataclass of the same fields would, and is one
to dataclasses' own functions, which the rest of calc/ and the tests still call on it."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest

from calc import record as rec
from calc.answers import report
from calc.catalog.loader import load_dir, raw_as_json, read_yaml_dir
from calc.catalog.spec import Figure

ROOT = Path(__file__).resolve().parent.parent


@rec.record
class Pair:
    """Two fields, one with a default, one made for each record."""

    name: str
    size: int | Fraction = 0
    tags: dict[str, int] = rec.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class PairDC:
    name: str
    size: int | Fraction = 0
    tags: dict[str, int] = dataclasses.field(default_factory=dict)


@rec.record
class Checked:
    count: int

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError(f"count: found {self.count}, expected 0 or more")


def test_a_record_is_built_compared_hashed_and_shown_as_the_frozen_dataclass() -> None:
    a, b = Pair("x", 3), Pair(name="x", size=3)
    assert a == b and a != Pair("x", 4) and a != PairDC("x", 3)  # another class is never equal, as with dataclasses
    assert repr(a) == "Pair(name='x', size=3, tags={})" == repr(PairDC("x", 3)).replace("PairDC", "Pair")
    assert (a.name, a.size, a.tags) == ("x", 3, {})
    assert Pair("y").size == 0 and Pair("y").tags is not Pair("y").tags  # the factory's default is each record's own
    assert "tags" not in vars(Pair) and Pair.size == 0  # as dataclasses leaves the class
    assert Pair.__match_args__ == ("name", "size", "tags")
    frozen = Pair("z", Fraction(1, 2))
    with pytest.raises(AttributeError, match="cannot assign to field 'size'"):
        frozen.size = 4  # type: ignore[misc]
    with pytest.raises(AttributeError, match="cannot delete field 'name'"):
        del frozen.name
    with pytest.raises(TypeError):
        Pair()  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="count: found -1"):
        Checked(-1)


def test_the_hash_is_the_frozen_dataclass_hash() -> None:
    """The hash of the fields' tuple: a set or a dict of records holds them as it held dataclasses."""
    assert hash(Pair("z", Fraction(1, 2), ())) == hash(PairDC("z", Fraction(1, 2), ())) == hash(("z", Fraction(1, 2), ()))  # type: ignore[arg-type]
    assert len({Pair("z", 1, ()), Pair("z", 1, ()), Pair("z", 2, ())}) == 2  # type: ignore[arg-type]
    for unhashable in (Pair("z"), PairDC("z"), Figure(10, "B", "measured", "e")):  # a dict field: neither hashes
        with pytest.raises(TypeError, match="unhashable type: 'dict'"):
            hash(unhashable)


def test_dataclasses_own_functions_take_a_record() -> None:
    a = Pair("x", 3, {"tp": 2})
    assert dataclasses.is_dataclass(a) and dataclasses.is_dataclass(Pair)
    assert [f.name for f in dataclasses.fields(a)] == ["name", "size", "tags"] == list(rec.field_names(a))
    assert dataclasses.asdict(a) == {"name": "x", "size": 3, "tags": {"tp": 2}}
    assert dataclasses.replace(a, size=5) == rec.replace(a, size=5) == Pair("x", 5, {"tp": 2})
    assert dataclasses.replace(Pair("y"), name="z").tags == {}
    figure = Figure(10, "B", "measured", "e")  # a field named `value`, as any field may be named
    assert rec.replace(figure, value=11) == dataclasses.replace(figure, value=11) == Figure(11, "B", "measured", "e")
    assert rec.is_record(a) and not rec.is_record(Pair) and not rec.is_record(PairDC("x"))


def test_a_field_without_a_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="found field 'b' without a default after one with a default"):

        @rec.record
        class Wrong:
            a: int = 1
            b: int  # type: ignore[misc]


def test_a_record_based_on_another_is_refused() -> None:
    with pytest.raises(TypeError, match="found it based on Pair, expected a record of its own fields"):

        @rec.record
        class More(Pair):
            extra: int = 0


def test_the_start_report_as_json_is_the_dataclass_walk() -> None:
    """`gate --json` walks the report's records in field order, as it walked dataclasses."""
    catalog = load_dir(ROOT / "catalog")
    deployment = next(iter(catalog.deployments))
    r = report.start_report(catalog, report.defaults(catalog, deployment, (int(report.last_available(catalog.deployments[deployment])),)))
    assert report.to_json(r) == report.to_json(dataclasses.asdict(r))
    assert list(report.to_json_object(r)) == [f.name for f in dataclasses.fields(r)]


PYODIDE = ROOT / "node_modules" / "pyodide"
SCRIPT = """
import { loadPyodide } from "%(pyodide)s/pyodide.mjs";
import fs from "node:fs";
import path from "node:path";
const py = await loadPyodide({ indexURL: "%(pyodide)s/" });
const copy = (from, to) => {
  py.FS.mkdirTree(to);
  for (const n of fs.readdirSync(from)) {
    const f = path.join(from, n);
    if (fs.statSync(f).isDirectory()) { if (n !== "__pycache__") copy(f, to + "/" + n); }
    else if (n.endsWith(".py")) py.FS.writeFile(to + "/" + n, fs.readFileSync(f, "utf8"));
  }
};
copy("%(root)s/calc", "/home/pyodide/calc");
py.FS.writeFile("/home/pyodide/catalog.json", fs.readFileSync("%(catalog)s", "utf8"));
console.log(py.runPython(`
import dataclasses, json, sys
sys.path.insert(0, "/home/pyodide")
from calc.answers import report
from calc.catalog.loader import load_json
from calc.catalog.spec import Figure
from calc.record import replace
catalog = load_json(open("/home/pyodide/catalog.json", encoding="utf-8").read())
deployment = next(iter(catalog.deployments))
r = report.start_report(catalog, report.defaults(catalog, deployment, (int(report.last_available(catalog.deployments[deployment])),)))
f = Figure(10, "B", "measured", "e")
checks = [dataclasses.replace(f, value=11) == replace(f, value=11), [x.name for x in dataclasses.fields(r)] == list(report.to_json_object(r)),
          dataclasses.asdict(f)["extra"] == {}, repr(f).startswith("Figure(value=10, unit='B'")]
json.dumps({"version": sys.version.split()[0], "checks": checks, "report": report.to_json(r)})
`));
"""


@pytest.mark.slow  # boots Pyodide: make test, not make test-fast
@pytest.mark.skipif(shutil.which("node") is None or not PYODIDE.exists(), reason="needs node and node_modules/pyodide (make deps)")
def test_records_in_pyodide_make_the_report_cpython_makes(tmp_path: Path) -> None:
    """The browser's Python (3.14, annotations deferred) makes the same records and the same start
    report from the catalog as JSON, and dataclasses' functions take them there too."""
    catalog = tmp_path / "catalog.json"
    catalog.write_text(raw_as_json(read_yaml_dir(ROOT / "catalog")), encoding="utf-8")
    script = tmp_path / "records.mjs"
    script.write_text(SCRIPT % {"pyodide": PYODIDE, "root": ROOT, "catalog": catalog})
    done = subprocess.run(["node", str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    browser = json.loads(done.stdout.strip().splitlines()[-1])
    assert browser["version"].startswith("3.14") and browser["checks"] == [True] * 4
    here = load_dir(ROOT / "catalog")
    deployment = next(iter(here.deployments))
    r = report.start_report(here, report.defaults(here, deployment, (int(report.last_available(here.deployments[deployment])),)))
    assert browser["report"] == report.to_json(r)
