"""The build is deterministic: the same sources give the same bytes, on any day, in any process.

Two builds differ in the clock (SOURCE_DATE_EPOCH, which MkDocs reads as the build date) and in
Python's hash seed (set and dict order of strings); every file of the two sites must be equal.
The sitemap's date is the catalog's newest date, not the clock's.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from calc.catalog.loader import read_yaml_dir
from hooks.site import catalog_date

pytestmark = pytest.mark.slow  # builds the site or boots Pyodide: make test, not make test-fast


def _build(site: Path, day: int, seed: int) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "SOURCE_DATE_EPOCH": str(day * 86400), "PYTHONHASHSEED": str(seed)}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr


def _files(site: Path) -> dict[str, bytes]:
    return {str(p.relative_to(site)): p.read_bytes() for p in sorted(site.rglob("*")) if p.is_file()}


def test_two_builds_are_byte_identical(tmp_path: Path) -> None:
    _build(tmp_path / "a", day=20000, seed=1)
    _build(tmp_path / "b", day=20777, seed=2)
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert sorted(a) == sorted(b)
    differ = [name for name in a if a[name] != b[name]]
    assert differ == []
    assert len(a) > 20


def test_the_sitemap_date_is_the_catalogs(shipped) -> None:
    newest = catalog_date(read_yaml_dir(ROOT / "catalog"))
    assert newest == "2026-10-24"  # the latest start and request in catalog/starts.yaml
    raw = (shipped.site / "sitemap.xml.gz").read_bytes()
    assert int.from_bytes(raw[4:8], "little") == 1792800000  # 2026-10-24 00:00 UTC, gzip's mtime field
    assert gzip.decompress(raw) == (shipped.site / "sitemap.xml").read_bytes()
