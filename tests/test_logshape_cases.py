"""One case a fixture: each real log line in tests/data/logshapes/ (or, where no public log prints
it, the message as the release's source formats it, the file and release cited) gives, read on its own, the
figures its .json says (worked out by hand), through the shape the .json names.
scripts/new_log_shape.py writes a fixture with its shape's entry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from calc.logs.reader import Reader
from calc.logs.shapes import SHAPES
from calc.units import InputError

FIXTURES = Path(__file__).resolve().parent / "data" / "logshapes"
CASES = sorted(FIXTURES.glob("*.log"))


def seen(text: str) -> dict[str, list[str]]:
    """What the reader kept from the lines, figure by figure, as text."""
    reader = Reader()
    for no, raw in enumerate(text.splitlines(), 1):
        reader.feed(no, raw)
    try:
        reader.finish()
    except InputError:  # a line alone may not make a log; what it gave is kept all the same
        pass
    return {name: [str(value) for value, _, _ in entries] for name, entries in reader.seen.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_fixture_line_gives_its_figures(case: Path) -> None:
    spec = json.loads(case.with_suffix(".json").read_text(encoding="utf-8"))
    assert spec["shape"] in {s.name for s in SHAPES}
    line = case.read_text(encoding="utf-8")
    if "source" in spec:  # no public log prints it: the message as the release's source formats it, its placeholders filled
        src = spec["source"]
        assert src["release"] and src["file"].startswith("vllm/") and src["lines"]
        parts = re.split(r"\{[^}]*\}|%(?:\.\d+)?[sdf]", src["format"])
        assert re.search(".+?".join(re.escape(p) for p in parts), line), f"{case.name}: not the format {src['file']} prints in {src['release']}"
    else:
        assert spec["url"].startswith("https://")
    assert any(s.trigger in line and s.pattern.search(line) for s in SHAPES if s.name == spec["shape"])
    got = seen(line)
    for field, values in spec["figures"].items():
        assert got.get(field) == values, f"{case.name}: {field}"


def test_every_fixture_has_its_figures() -> None:
    assert len(CASES) >= 3
    assert sorted(p.stem for p in FIXTURES.glob("*.json")) == [c.stem for c in CASES]
