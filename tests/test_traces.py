"""Published MemAvailable traces from DGX Sparks (logs/traces/, each with its source in SOURCES.yaml)
replayed through the memory guard with the catalog's floor and polls in a row. A run that failed
and the guard did not flag, or a run that survived and the guard would have killed, must carry its
finding in SOURCES.yaml; the replay of each is pinned, so a change to the guard's rule shows here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT

from calc.answers import guard
from calc.present import cli
from calc.units import GiB, MiB, parse_size

TRACES = ROOT / "logs" / "traces"
SOURCES: dict[str, Any] = yaml.safe_load((TRACES / "SOURCES.yaml").read_text(encoding="utf-8"))
ENTRIES = {e["file"]: e for e in SOURCES["traces"]}


def _samples(name: str) -> list[tuple[float, int]]:
    return guard.parse_trace((TRACES / name).read_text(encoding="utf-8"), name)


def _settings(catalog: Any) -> tuple[int, int]:
    policy = catalog.policy["guard"]
    return policy["floor"].size, policy["polls_in_a_row"].count


def test_every_trace_file_has_its_source() -> None:
    files = {p.name for p in TRACES.glob("*.trace")}
    assert files == set(ENTRIES)
    for entry in SOURCES["traces"]:
        assert entry["url"].startswith("https://github.com/") and entry["comment"] and entry["deployment"]["model"]
        assert entry["outcome"] in ("crashed", "stopped", "survived") and entry["phase"] in ("start", "serving")
        assert entry["tuned_on"] is False  # nothing in the guard was fitted to any of them
        assert (entry["ends_at"] is None) == (entry["outcome"] == "survived")


def test_readings_kept_as_published() -> None:
    """The values are the reports' own: GiB to three decimals in the vLLM issue's table, MiB in the
    memwatch lines; the times are seconds from the first clock time, 3 s where the table skips one."""
    collapse = _samples("vllm-56824-start-collapse.trace")
    assert [t for t, _ in collapse] == [0, 2, 4, 6, 9, 11]
    assert collapse[0][1] == round(28.971 * GiB) and collapse[-1][1] == round(6.267 * GiB)
    served = _samples("qwen38-single-memwatch-survived.trace")
    assert [t for t, _ in served] == [0, 1, 2, 3, 4]
    assert [a // MiB for _, a in served] == [7071, 6969, 7055, 7023, 7039]
    stopped = _samples("qwen38-single-memwatch-stopped.trace")
    assert [t for t, _ in stopped] == [0, 5, 10, 15, 19]
    assert [a // MiB for _, a in stopped] == [7488, 7463, 7281, 6761, 6018]


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_guard_replay_matches_the_record(catalog: Any, name: str) -> None:
    entry = ENTRIES[name]
    floor, in_a_row = _settings(catalog)
    samples = _samples(name)
    as_the_guard_watches = guard.run(samples, floor, in_a_row, entry["serving_at"])
    throughout = guard.run(samples, floor, in_a_row)
    assert as_the_guard_watches.at == entry["guard"]["fires_at"]
    assert throughout.at == entry["guard"]["fires_at_watching_throughout"]
    fires = entry["guard"]["fires_at"]
    if entry["outcome"] != "survived":
        flagged_in_time = fires is not None and fires < entry["ends_at"]
        assert flagged_in_time or entry["guard"]["finding"], f"{name}: a failed run the guard missed needs its finding"
    elif throughout.killed or as_the_guard_watches.killed:
        assert entry["guard"]["finding"], f"{name}: a survived run the guard would kill needs its finding"


def test_fast_collapse_gives_one_poll_under_the_floor(catalog: Any) -> None:
    """vLLM issue 56824: 23.787, 10.605, 6.267 GiB in 5 s. Only the last poll is under 8 GiB, so
    three in a row never come before the stop at 11 s; the reporter's own guard stopped it there."""
    floor, in_a_row = _settings(catalog)
    result = guard.run(_samples("vllm-56824-start-collapse.trace"), floor, in_a_row)
    assert result.killed is False and result.longest_run == 1 and in_a_row == 3
    assert result.lowest_at == ENTRIES["vllm-56824-start-collapse.trace"]["ends_at"]


def test_serving_box_under_the_floor_survived(catalog: Any) -> None:
    """The memwatch report: a serving Spark held about 6.8 to 6.9 GiB for five polls and survived.
    The guard stands down at serving, so it is quiet; kept on, it would kill at the third poll,
    and at the guard's own 2 s interval (the polls at 0, 2 and 4 s) at the third of those."""
    floor, in_a_row = _settings(catalog)
    samples = _samples("qwen38-single-memwatch-survived.trace")
    assert all(a < floor for _, a in samples)
    assert guard.run(samples, floor, in_a_row, serving_at=0).killed is False
    assert guard.run(samples, floor, in_a_row).at == 2
    assert guard.run(samples[::2], floor, in_a_row).at == 4


def test_watchdog_stop_the_guard_would_have_come_first(catalog: Any) -> None:
    """The single-Spark kit's issue 3: every published poll is under 8 GiB, five seconds apart, so the
    guard kills at the third (t = 10), nine seconds before the reporter's watchdog stopped the
    container at its own 6 GiB floor (6018 MiB). The report does not say whether the head had served:
    the entry says so, and had it served before t = 10 the guard would have stood down."""
    floor, in_a_row = _settings(catalog)
    entry = ENTRIES["qwen38-single-memwatch-stopped.trace"]
    samples = _samples(entry["file"])
    assert all(a < floor for _, a in samples) and samples[-1][1] < 6 * GiB
    assert guard.run(samples, floor, in_a_row).at == 10 < entry["ends_at"] == samples[-1][0]
    assert guard.run(samples, floor, in_a_row, serving_at=10).killed is False
    assert entry["outcome"] == "stopped" and entry["serving_at"] is None and entry["phase_said"] is False


def test_survived_long_prefills_sat_under_the_floor(catalog: Any) -> None:
    """Where a survived long prefill's lowest MemAvailable is published, it is under the guard's
    floor: a floor held after serving would have killed them, which is why the guard stands down."""
    floor, _ = _settings(catalog)
    lowest = {
        "https://github.com/MiaAI-Lab/DeepSeek-v4.1-Flash-DGX-Sparks/issues/25": 4663 * 10**6,
        "https://github.com/NVIDIA/NemoClaw/issues/7127": round(3.22 * GiB),
        "https://github.com/MiaAI-Lab/DeepSeek-v4.1-Flash-EXL3-2x-DGX-Sparks/issues/19": round(4.6 * GiB),
    }
    survived = [e for e in SOURCES["readings_without_polls"] if e["result"] == "survived" and e["prefill_tokens"] and e["lowest_available"]]
    assert {e["url"] for e in survived} == set(lowest)
    for entry in survived:
        assert entry["missing"] and parse_size(entry["lowest_available"]) == lowest[entry["url"]] < floor
    for entry in SOURCES["readings_without_polls"]:
        assert entry["result"] in ("crashed", "stopped", "survived") and entry["url"].startswith("https://github.com/") and entry["missing"]


def test_cli_replays_a_trace_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(TRACES / "qwen38-single-memwatch-survived.trace")
    assert cli.main(["guard", path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["killed"] is True and out["at"] == 2 and out["samples"] == 5
    assert cli.main(["guard", path, "--serving-at", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["killed"] is False


def test_the_page_tables_replay_the_files(catalog: Any) -> None:
    """The memory-budget page's tables come from the files through calc's guard, figures marked up."""
    from types import SimpleNamespace

    from hooks.pagemacros import traces

    build: Any = SimpleNamespace(catalog=catalog, root=ROOT)
    replays = traces.published_traces_table(build).splitlines()
    collapse = next(r for r in replays if "vllm-project/vllm issue 56824" in r)
    assert "(https://github.com/vllm-project/vllm/issues/56824)" in collapse and "| stopped, at <span" in collapse
    assert ">6.27 GiB</span>" in collapse and collapse.endswith("| quiet; kept on: quiet |")
    served = next(r for r in replays if "pull request 54" in r)
    assert "| survived, went on serving |" in served and ">6.81 GiB</span>" in served
    assert "| stood down, serving; kept on: kills at <span" in served and ">2 s</span> |" in served
    stopped = next(r for r in replays if "Single-DGX-Spark issue 3" in r)
    assert "| not said; replayed as the start | stopped, at <span" in stopped and ">19 s</span>" in stopped
    assert ">5.88 GiB</span>" in stopped and stopped.count(">10 s</span>") == 2
    lowest = traces.readings_without_polls_table(build)
    assert ">~10.00 GiB</span>" in lowest and ">3.22 GiB</span>" in lowest and "| serving | not given | crashed |" in lowest
    one_spark = next(r for r in lowest.splitlines() if "glm-5.3-one-spark issue 3" in r)
    assert "| serving | not given | crashed |" in one_spark and ">2.05 GiB</span>" in one_spark  # 2.2 GB as published


def test_after_start_check_on_a_thread_deployment(capsys: pytest.CaptureFixture[str]) -> None:
    """eugr/spark-vllm-docker issue 321 (Qwen3.6-35B-A3B NVFP4, TP 2 over Ray; the head crashed with
    available memory near the floor and no request in flight): on this model the worst prefill takes
    nothing beyond the profile run at any length, so calc/engine/afterstart.py would not have warned;
    the crash is not a long prefill's."""
    entry = next(e for e in SOURCES["readings_without_polls"] if e.get("config"))
    config = ROOT / "models" / "configs" / entry["config"] / "config.json"
    for length in ("32768", "262144"):
        assert cli.main(["model", str(config), "--tensor-parallel-size", "2", "--max-model-len", length, "--json"]) == 0
        worst = json.loads(capsys.readouterr().out)["worst_prefill"]
        assert worst["bytes"] == 0 and worst["source"].startswith("plain attention")
    assert entry["result"] == "crashed" and entry["prefill_tokens"] is None


def test_a_malformed_sources_entry_is_named_not_a_traceback(tmp_path: Path) -> None:
    """A trace entry whose url is no report address, or whose ends_at is a word, stops the build
    with the file, the entry and the field, and what was expected."""
    from hooks.pagemacros import traces

    (tmp_path / "logs" / "traces").mkdir(parents=True)
    good = {"file": "t.trace", "url": "https://github.com/o/r/issues/1", "phase": "start", "outcome": "crashed", "ends_at": 11, "serving_at": None}
    cases = [
        (
            {**good, "url": "https://example.org/post"},
            "logs/traces/SOURCES.yaml: traces[0].url: found 'https://example.org/post', expected a GitHub issue or pull request address",
        ),
        ({**good, "ends_at": "soon"}, "logs/traces/SOURCES.yaml: traces[0].ends_at: found 'soon', expected a number of seconds, or null"),
        ({k: v for k, v in good.items() if k != "phase"}, "logs/traces/SOURCES.yaml: traces[0].phase: found None, expected start or serving"),
        ({**good, "phase_said": "maybe"}, "logs/traces/SOURCES.yaml: traces[0].phase_said: found 'maybe', expected true or false"),
    ]
    for entry, message in cases:
        (tmp_path / "logs" / "traces" / "SOURCES.yaml").write_text(yaml.safe_dump({"traces": [entry], "readings_without_polls": []}))
        with pytest.raises(ValueError) as raised:
            traces.published_traces(tmp_path)
        assert str(raised.value) == message
    (tmp_path / "logs" / "traces" / "SOURCES.yaml").write_text(yaml.safe_dump({"traces": [good], "readings_without_polls": []}))
    assert traces.published_traces(tmp_path).traces[0].ends_at == 11.0  # the edit is read, not the cached error
