"""The command lines README.md shows run as shown: each `python -m calc` example of its list, but
those that read a log the reader has at hand (vllm.log), poll this machine (watch, --available auto)
or stdin, exits 0 on the shipped catalog."""

from __future__ import annotations

import shlex

import pytest
from conftest import ROOT

from calc.present import cli

AT_HAND = ("vllm.log", "watch ", "--available auto", "ingest - ")


def _examples() -> list[str]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    shown = [line.split("  #")[0].strip() for line in lines if line.startswith("python -m calc ")]
    return [line.removeprefix("python -m calc ") for line in shown if not any(a in line for a in AT_HAND)]


EXAMPLES = _examples()


def test_the_readme_shows_examples_of_every_kind() -> None:
    kinds = {line.split()[0] for line in EXAMPLES}
    assert {"gate", "kv", "fit", "fraction", "guard", "plan", "prefetch", "model", "schema"} <= kinds and len(EXAMPLES) >= 15


@pytest.mark.parametrize("argline", EXAMPLES)
def test_a_readme_example_runs(argline: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    status = cli.main(shlex.split(argline))
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.strip()
