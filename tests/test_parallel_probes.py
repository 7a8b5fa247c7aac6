"""Probes of the parallel, offload and host-memory inputs: each bad value named with its flag,
what was found and what is expected; what the text says, the JSON carries."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from test_cli import assert_one_error_line

from calc.present import cli
from calc.present.commands import common

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


def test_the_json_carries_the_host_memory_line(capsys: pytest.CaptureFixture[str]) -> None:
    """The text prints a host-memory line for --cpu-offload-gb; the JSON's host_memory carries its
    figures (Qwen3-8B: 36 layers of 0.36 GiB, 12.94 GiB of whole parameters moved at 100 GiB asked,
    the embedding and head kept), not null."""
    from conftest import cli_json

    argv = ["model", QWEN3_8B, "--max-model-len", "4096", "--cpu-offload-gb", "100", "--kv-offloading-size", "2"]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    assert "Host memory: 12.94 GiB of weights a rank moved by --cpu-offload-gb (2.33 GiB stay on the device)" in text
    assert "KV offloading 2.00 GiB, swap 0.00 GiB: 14.94 GiB on the host in all" in text
    r = cli_json([*argv, "--json"], capsys)
    h = r["host_memory"]
    assert h["offloaded_bytes_per_rank"] == r["offload"]["offloaded_bytes_per_rank"] == 13_892_143_104
    assert h["weights_on_device_bytes_per_rank"] == 2_489_327_616 + 40960 * 128 * 2  # and the rope cache, which stays
    assert h["kv_offloading_bytes"] == 2 * 2**30 and h["swap_space_bytes"] == 0  # V1 allocates no swap
    assert h["offload_host_bytes"] == 13_892_143_104 + 2 * 2**30
    assert h["shm_bytes"] is None and h["sleep"] is None  # /dev/shm and sleep not asked about
    plain = cli_json(["model", QWEN3_8B, "--max-model-len", "4096", "--json"], capsys)
    assert plain["host_memory"] is None  # nothing on the host: no line in the text either


def test_a_version_beyond_the_newest_read_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    """--engine-version 0.99.0 follows the rules of 0.34.0, the newest release read, and says so in
    the text's first line, a note, and the JSON; a release read (0.34.0, 0.20.0) says nothing of it."""
    from conftest import cli_json

    argv = ["model", QWEN3_8B, "--max-model-len", "4096", "--kv-cache-memory-bytes", "4GiB", "--engine-version", "0.99.0"]
    assert cli.main(argv) == 0
    text = capsys.readouterr().out
    first = text.splitlines()[0]
    assert "the rules of vLLM 0.34.0, the newest release read (V1, tokens printed from concurrency); 0.99.0 is beyond it" in first
    said = "--engine-version 0.99.0 is beyond vLLM 0.34.0, the newest release read: the rules used are those of 0.34.0"
    assert f"Note: {said}" in text
    r = cli_json([*argv, "--json"], capsys)
    assert r["engine_rules"].endswith("0.99.0 is beyond it") and said in r["notes"]
    same = cli_json([*argv[:-1], "0.34.0", "--json"], capsys)
    assert same["kv_tokens"] == r["kv_tokens"] and not any("beyond" in n for n in same["notes"])
    assert same["engine_rules"] == "vLLM 0.34.0 (V1, tokens printed from concurrency)"
    older = cli_json([*argv[:-1], "0.20.0", "--json"], capsys)
    assert not any("beyond" in n for n in older["notes"])


def test_each_stage_names_the_vision_tower_it_builds(capsys: pytest.CaptureFixture[str]) -> None:
    """The V1 model runner builds the tower on every pipeline stage (vllm/model_executor/models/
    interfaces.py, _mark_tower_model, 0.33.0: only Model Runner V2 skips it after the first): each
    stage's line and its `holds` name it; with no image and no video it is not built, nor named.
    The newest rules (v0.33.0, Model Runner V2) build it on the first stage alone."""
    from conftest import cli_json

    newest = cli_json(["model", "models/configs/qwen2.5-vl-3b/config.json", "--max-model-len", "8192", "--pp", "2", "--json"], capsys)
    assert [st["holds"] for st in newest["ranks"]] == [["embedding", "Qwen2.5-VL vision tower"], ["embedding", "head", "final norm"]]
    argv = ["model", "models/configs/qwen2.5-vl-3b/config.json", "--max-model-len", "8192", "--pp", "2", "--engine-version", "0.20.0"]
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].startswith("  stage 0: layers 0-17 (18 + embedding, Qwen2.5-VL vision tower): weights 4.53 GiB")
    assert lines[4].startswith("  stage 1: layers 18-35 (18 + embedding, head, final norm, Qwen2.5-VL vision tower): weights 4.53 GiB")
    r = cli_json([*argv, "--json"], capsys)
    assert [st["holds"] for st in r["ranks"]] == [["embedding", "Qwen2.5-VL vision tower"], ["embedding", "head", "final norm", "Qwen2.5-VL vision tower"]]
    off = cli_json([*argv, "--limit-mm-per-prompt", '{"image": 0, "video": 0}', "--json"], capsys)
    assert [st["holds"] for st in off["ranks"]] == [["embedding"], ["embedding", "head", "final norm"]]
    assert r["ranks"][0]["weights_bytes"] - off["ranks"][0]["weights_bytes"] == 668_684_288 * 2  # the tower, bf16


def _meminfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kib: int) -> None:
    path = tmp_path / "meminfo"
    path.write_text(f"MemTotal: 127601756 kB\nMemAvailable: {kib} kB\n")
    monkeypatch.setattr(common, "MEMINFO", str(path))


def test_auto_on_two_boxes_says_it_read_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """On the Spark pair, `--available auto` reads this machine alone: both boxes gated on it, and
    the verdict says the other box was not read and how to give each its own."""
    from conftest import cli_json

    _meminfo(tmp_path, monkeypatch, 117 * 2**20)  # 117 GiB
    r = cli_json(["gate", "--available", "auto", "--json"], capsys)
    assert [b["available_bytes"] for b in r["boxes"]] == [117 * 2**30, 117 * 2**30]
    said = "--available auto read this machine's MemAvailable, 117.00 GiB, and gated each of the 2 boxes on it: the other boxes were not read"
    assert any(n.startswith(said) and "'auto, 118 GiB'" in n for n in r["notes"])
    assert cli.main(["gate", "--available", "auto"]) == 0
    assert f"note: {said}" in capsys.readouterr().out


def test_auto_in_a_list_reads_this_box_and_the_others_as_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import cli_json

    _meminfo(tmp_path, monkeypatch, 117 * 2**20)
    r = cli_json(["gate", "--available", "auto, 118 GiB", "--json"], capsys)
    assert [b["available_bytes"] for b in r["boxes"]] == [117 * 2**30, 118 * 2**30]
    assert r["boxes"][0]["head_extra_bytes"] == 2**30  # one reading a box: the Ray head charged on the head
    assert not any("auto read this machine" in n for n in r["notes"])
    assert_one_error_line(calc("gate", "--available", "auto, auto"), "--available: found auto 2 times, expected it once at most")


def test_the_start_calculator_charges_the_head_box_as_the_gate_does(catalog, capsys: pytest.CaptureFixture[str]) -> None:
    """The two-box form's head box extra (--head-extra) is the command line's: the same readings
    and extra give the same boxes, margins and verdict; empty gates every box alike."""
    from conftest import cli_json

    from calc.present import html as calc_html

    d = dict(calc_html.defaults_of(catalog, "start").values)
    assert d["head_extra"] == "" and calc_html.defaults_of(catalog, "start").hidden["head_extra"] is False
    for head in ("116.5 GiB", "111 GiB"):
        raw = {**d, "available_1": head, "available_2": "118 GiB", "head_extra": "1.5 GiB"}
        out = calc_html.run(catalog, "start", raw)
        g = cli_json(["gate", "--available", f"{head}, 118 GiB", "--head-extra", "1.5 GiB", "--json"], capsys)
        assert out.valid and out.figures["verdict"] == ("passes" if g["passes"] else "refused")
        assert out.figures["box1_head_extra"] == "1.50 GiB" and "box2_head_extra" not in out.figures
        for n, box in enumerate(g["boxes"], 1):
            assert out.figures[f"box{n}_verdict"] == ("passes" if box["passes"] else "refused")
            assert out.figures[f"box{n}_margin"] == f"{abs(box['margin_bytes']) / 2**30:.2f} GiB"
    assert calc_html.run(catalog, "start", {**d, "available_1": "111 GiB", "available_2": "118 GiB", "head_extra": "1.5 GiB"}).figures["verdict"] == "refused"
    alike = calc_html.run(catalog, "start", {**d, "available_1": "111 GiB", "available_2": "118 GiB"})
    assert alike.figures["verdict"] == "passes" and "box1_head_extra" not in alike.figures
    bad = calc_html.run(catalog, "start", {**d, "head_extra": "-1"})
    assert bad.errors == {"head_extra": "Head box extra: found '-1', expected a size of zero or more bytes"}


def test_the_before_calculator_says_a_version_beyond_the_newest_read(catalog) -> None:
    from calc.present import html as calc_html

    d = dict(calc_html.defaults_of(catalog, "before").values)
    out = calc_html.run(catalog, "before", {**d, "engine_version": "0.99.0"})
    text = "".join(out.sections.values())
    assert out.valid and "the rules of vLLM 0.34.0, the newest release read" in text and "0.99.0 is beyond it" in text
    assert "beyond" not in "".join(calc_html.run(catalog, "before", {**d, "engine_version": "0.34.0"}).sections.values())


def test_the_verdict_rounds_once_without_a_head_extra(catalog) -> None:
    """Without a head box extra the verdict's MemAvailable is the reading rounded once (98.649 GiB
    is 98.6 GiB, not 98.65 then 98.7); with one, the box table's two printed figures less each other."""
    from calc.present import html as calc_html

    d = dict(calc_html.defaults_of(catalog, "start").values)
    out = calc_html.run(catalog, "start", {**d, "available_1": "98.649 GiB", "available_2": "98.649 GiB"})
    assert out.figures["available_short"] == "98.6 GiB"
    head = calc_html.run(catalog, "start", {**d, "available_1": "98.649 GiB", "available_2": "120 GiB", "head_extra": "1 GiB"})
    assert head.figures["available_short"] == "97.7 GiB"  # 98.65 - 1.00, as printed
