"""Probes of the parallel, offload and host-memory inputs: each bad value named with its flag,
what was found and what is expected; what the text says, the JSON carries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import assert_one_error_line

from calc.present import cli

ROOT = Path(__file__).resolve().parent.parent
QWEN3_8B = "models/configs/qwen3-8b/config.json"


def calc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "calc", *args], capture_output=True, text=True, cwd=ROOT, check=False)


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--cpu-offload-gb", "-3"), ("--swap-space", "-1"), ("--kv-offloading-size", "-0.5"), ("--cpu-offload-gb", "lots")],
)
def test_a_negative_or_wordy_offload_size_is_named(flag: str, value: str) -> None:
    done = calc("model", QWEN3_8B, "--max-model-len", "4096", flag, value)
    assert_one_error_line(done, f"{flag}: found '{value}', expected a size in GiB, 0 or more, such as 4 or 0.5")


def test_the_gate_reads_the_offload_sizes_alike() -> None:
    assert_one_error_line(calc("gate", "--cpu-offload-gb", "-2"), "--cpu-offload-gb: found '-2', expected a size in GiB, 0 or more")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["model", QWEN3_8B, "--max-model-len", "4096", "--total-memory", "-80GiB"], "--total-memory: found '-80GiB', expected a size of zero or more bytes"),
        (["gate", "--kv-cache-memory-bytes", "-5e9"], "--kv-cache-memory-bytes: found '-5e9', expected a size of zero or more bytes"),
        (["gate", "--available", "-1GiB"], "--available: found '-1GiB', expected a size of zero or more bytes"),
        (
            ["model", QWEN3_8B, "--max-model-len", "4096", "--pp", "2", "--pp-layer-partition", "-3,4"],
            "--pp-layer-partition: found '-3,4', expected whole numbers",
        ),
    ],
)
def test_a_value_that_starts_with_a_dash_reaches_its_own_reading(args: list[str], message: str) -> None:
    """argparse takes '-80GiB' for a flag ("expected one argument"); joined to its flag it is read
    as the flag's value and refused with the flag's own message."""
    done = calc(*args)
    assert "expected one argument" not in done.stderr
    assert_one_error_line(done, message)


def test_dashed_values_leave_flags_and_stdin_alone() -> None:
    argv = ["model", "c.json", "--total-memory", "-80GiB", "--enforce-eager", "--index", "-", "--max-model-len", "--json"]
    assert cli.dashed_values(argv, "model") == ["model", "c.json", "--total-memory=-80GiB", "--enforce-eager", "--index", "-", "--max-model-len", "--json"]
    assert cli.dashed_values(["ingest", "-", "--", "--pin", "-1"], "ingest") == ["ingest", "-", "--", "--pin", "-1"]
