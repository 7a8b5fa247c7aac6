"""`pip install .` gives a `vllm-settings` command that works outside the checkout, with the
catalog as package data: the same answers as `python -m calc` in the checkout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

pytestmark = pytest.mark.slow  # makes a virtualenv and installs into it


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with the project installed from a copy of its sources."""
    base = tmp_path_factory.mktemp("install")
    source = base / "source"
    source.mkdir()
    shutil.copy2(ROOT / "pyproject.toml", source)
    for name in ("calc", "catalog"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    done = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--quiet", str(source)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return venv / "bin/vllm-settings"


def run(command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def test_the_installed_command_gives_the_checkouts_answers_anywhere(installed: Path, tmp_path: Path) -> None:
    for args in (
        ["gate", "--json"],
        ["kv", "--pin", "28e9", "--json"],
        ["plan", "--model", "example-27b-4bit", "--model", "example-70b-4bit", "--fractions", "0.5,0.35", "--json"],
    ):
        there = run([str(installed), *args], cwd=tmp_path)
        here = run([sys.executable, "-m", "calc", *args], cwd=ROOT)
        assert there.returncode == here.returncode == 0, there.stderr
        assert json.loads(there.stdout) == json.loads(here.stdout)


def test_the_installed_command_reads_a_log_and_a_config_and_names_itself(installed: Path, tmp_path: Path) -> None:
    log = next((ROOT / "logs/public").glob("*.log"))
    there = run([str(installed), "ingest", str(log), "--json"], cwd=tmp_path)
    assert there.returncode == 0, there.stderr
    assert json.loads(there.stdout) == json.loads(run([sys.executable, "-m", "calc", "ingest", str(log), "--json"], cwd=ROOT).stdout)
    config = ROOT / "models/configs/qwen3-14b/config.json"
    model = run([str(installed), "model", str(config), "--tp", "1", "--max-model-len", "32768", "--json"], cwd=tmp_path)
    assert model.returncode == 0 and json.loads(model.stdout)
    usage = run([str(installed), "--help"], cwd=tmp_path)
    assert usage.stdout.startswith("usage: vllm-settings ")
    bad = run([str(installed), "gate", "--pin", "10,5 GiB"], cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr
