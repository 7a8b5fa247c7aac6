"""Shared fixtures (the project's catalog, loaded once, and a writable copy of it) and the two
test tiers: `make test-fast` runs what needs neither a site build, Chromium nor a Pyodide boot;
`make test` runs everything. A test is in the slow tier when it uses a fixture that builds or
browses (SLOW_FIXTURES) or carries `@pytest.mark.slow`; the fast tier refuses to build the site,
so a test that builds without saying so fails there instead of slowing every edit down."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# The property tests draw the same inputs on every run (a seed derived from each test), so the
# suite cannot turn red on a lucky draw; `make test-random` draws afresh (HYPOTHESIS_PROFILE=random),
# and a draw that fails there becomes an explicit @example.
settings.register_profile("fixed", derandomize=True, database=None)
settings.register_profile("random", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "fixed"))

ROOT = Path(__file__).resolve().parent.parent
CATALOG_DIR = ROOT / "catalog"
if str(ROOT) not in sys.path:  # `pytest` run from elsewhere than the repository root
    sys.path.insert(0, str(ROOT))

from calc.catalog.loader import load_dir  # noqa: E402
from calc.catalog.model import Catalog  # noqa: E402


def run_calc(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m calc ARGS` run in this process, from the repository's root: its status, stdout and
    stderr as a finished process gives them (the fast tier spawns no interpreter for the command line)."""
    from calc.present import cli

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO((stdin or "").encode("utf-8")), encoding="utf-8")
    try:
        with contextlib.chdir(ROOT), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.main(list(args))
            except SystemExit as done:  # argparse's usage errors and --help
                code = done.code if isinstance(done.code, int) else 0 if done.code is None else 1
    finally:
        sys.stdin = saved
    return subprocess.CompletedProcess(["python", "-m", "calc", *args], code, out.getvalue(), err.getvalue())


SLOW_FIXTURES = frozenset({"shipped", "site", "base_url", "browser", "project", "project_copy"})


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: builds the site, runs Chromium or boots Pyodide (make test, not make test-fast)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SLOW_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """The shipped catalog, validated once for the whole session."""
    return load_dir(CATALOG_DIR)


@pytest.fixture
def catalog_copy(tmp_path: Path) -> Path:
    """A copy of catalog/ (YAML and schema) that a test may break or change."""
    target = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, target)
    return target


def edit(directory: Path, file: str, old: str, new: str, count: int = 1) -> None:
    """Replace `old` by `new` in one catalog file; fail if `old` is not there `count` times."""
    path = directory / file
    text = path.read_text(encoding="utf-8")
    found = text.count(old)
    assert found == count, f"{file}: expected {count} occurrence(s) of {old!r}, found {found}"
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture(scope="session")
def shipped(tmp_path_factory: pytest.TempPathFactory):
    """The shipped project's site, built once per test session (mkdocs build --strict)."""
    from tests.sitebuild import build

    result = build(ROOT, tmp_path_factory.mktemp("site") / "site")
    assert result.returncode == 0, result.output
    return result


# --- the site in Chromium, for the browser tests ---------------------------------------------


@pytest.fixture(scope="session")
def site(shipped) -> Path:
    """The site the build tests built (shipped), served below."""
    return shipped.site


@pytest.fixture(scope="session")
def base_url(site: Path):
    from tests.serving import serve

    server, url = serve(site)
    yield url
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    from tests.serving import ARGS, CHROMIUM

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


# --- helpers the model tests share ---------------------------------------------------------------


def config_path(name: str) -> Path:
    """models/configs/<name>/config.json, a shipped config; else tests/data/configs/<name>/config.json,
    a test fixture (a config quoted in part, or without a citable address)."""
    shipped = ROOT / "models" / "configs" / name / "config.json"
    return shipped if shipped.exists() else ROOT / "tests" / "data" / "configs" / name / "config.json"


def config_text(name: str) -> str:
    return config_path(name).read_text(encoding="utf-8")


def predicted_on_h100(name: str, architecture: str, args: list[str], max_model_len: int = 4096) -> dict:
    """`calc model` on a shipped config or fixture with a card (an H100 SXM): it exits 0, reads the
    config as `architecture`, and predicts a pool that holds tokens; its JSON for further checks."""
    import json

    done = run_calc("model", str(config_path(name)), *args, "--max-model-len", str(max_model_len), "--gpu", "h100-sxm", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"] == architecture and out["verdict"] and out["kv_bytes_per_token"] > 0 and out["available_kv_bytes"] > 0
    return out


def config_shape(name: str):
    """The config model's reading of a shipped config or a test fixture (config_path)."""
    import json

    from calc.engine import hfconfig

    return hfconfig.shape(json.loads(config_text(name)), name)


def config_refusal(name: str, change: dict) -> str:
    """The one-line ConfigError a config (shipped or a fixture) gets with `change` applied to its top
    level, a key set to None left out."""
    import json

    from calc.engine import hfconfig

    config = {k: v for k, v in {**json.loads(config_text(name)), **change}.items() if v is not None}
    with pytest.raises(hfconfig.ConfigError) as caught:
        hfconfig.shape(config, name)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def parameters(s, tp: int = 1, tower: bool | None = None, drafter: bool | None = None) -> int:
    """The parameters a rank holds as calc/engine/weights.py lists its tensors (buffers left out), of
    the tower or the rest where `tower` says, of the drafter or the rest where `drafter` says."""
    from calc.engine import weights

    return sum(
        t.rows * t.cols * t.count
        for t in weights.tensors(s, tp)
        if not t.buffer and (tower is None or t.tower == tower) and (drafter is None or t.drafter == drafter)
    )


def cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    """`python -m calc ARGV --json`, run in-process, as a dict."""
    import json

    from calc.present import cli

    assert cli.main(argv) == 0
    out: dict = json.loads(capsys.readouterr().out)
    return out


def assert_missing_field_refused(config: dict, field: str, tmp_path: Path, *args: str) -> None:
    """`python -m calc model` on CONFIG without FIELD (and ARGS) stops in one line naming the field."""
    import json

    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in config.items() if k != field}))
    done = run_calc("model", str(path), "--gpu", "h200", *args, "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and f"{field}: found nothing" in done.stderr
