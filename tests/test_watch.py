"""Memory readings as pasted (/proc/meminfo, free -b / -m / -h) and `python -m calc watch`, fed
files and a sleep that does not wait; its trace replayed by `python -m calc guard`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calc.answers import meminfo, watch
from calc.present import cli
from calc.present.commands import watch as watch_command
from calc.units import GiB, InputError, KiB, MiB

# Pasted from a Linux box (24 GiB); the same moment in three forms would differ by a few pages,
# so each form carries its own figures, worked out by hand below.
MEMINFO = """MemTotal:       24684084 kB
MemFree:        20187892 kB
MemAvailable:   23013468 kB
Buffers:           67492 kB
Cached:          2601008 kB
SwapCached:            0 kB
"""
FREE_B = """$ free -b
               total        used        free      shared  buff/cache   available
Mem:     25276502016  1589690368 20760182784    34721792  3275702272 23686811648
Swap:              0           0           0
"""
FREE_M = """               total        used        free      shared  buff/cache   available
Mem:           24105        1631       19714          25        3083       22474
Swap:              0           0           0
"""
FREE_H = """user@box:~$ free -h
               total        used        free      shared  buff/cache   available
Mem:            23Gi       1.6Gi        19Gi        25Mi       3.0Gi        21Gi
Swap:             0B          0B          0B
"""


def test_meminfo_kb_is_kibibytes_and_keeps_its_lines() -> None:
    r = meminfo.parse(MEMINFO)
    assert r.source == "meminfo"
    assert r.total.value == 24684084 * 1024 == 25_276_502_016
    assert r.available.value == 23013468 * KiB == 23_565_791_232
    assert r.free.value == 20187892 * KiB
    assert r.cache is not None and r.cache.value == 2601008 * KiB
    assert (r.available.line_no, r.available.text) == (3, "MemAvailable:   23013468 kB")


def test_free_b_with_its_command_line() -> None:
    r = meminfo.parse(FREE_B)
    assert r.source == "free -b" and not r.approximate
    assert (r.total.value, r.free.value, r.available.value) == (25_276_502_016, 20_760_182_784, 23_686_811_648)
    assert r.cache is not None and r.cache.value == 3_275_702_272
    assert r.available.line_no == 3


def test_free_m_needs_its_unit_and_then_reads_mebibytes() -> None:
    with pytest.raises(InputError, match=r"free prints no unit, expected the command line with it \(such as 'free -b' or 'free -m'\)"):
        meminfo.parse(FREE_M)
    r = meminfo.parse(FREE_M, unit="m")
    assert (r.available.value, r.free.value) == (22474 * MiB, 19714 * MiB)
    assert meminfo.parse("$ free -m\n" + FREE_M).available.value == 22474 * MiB
    assert meminfo.parse("free\n" + FREE_M).available.value == 22474 * KiB  # no flag: kibibytes


def test_free_h_is_read_as_rounded() -> None:
    r = meminfo.parse(FREE_H)
    assert r.source == "free -h" and r.approximate
    assert r.available.value == 21 * GiB
    assert r.cache is not None and r.cache.value == round(3.0 * GiB)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "found nothing, expected /proc/meminfo or the output of free -b"),
        ("hello world", "found neither /proc/meminfo lines nor free's header and Mem: row"),
        ("MemTotal: 100 kB\nMemFree: 50 kB\n", "found no MemAvailable line, expected the whole of /proc/meminfo"),
        ("$ free -b\n total used free shared buff/cache available\nMem: 1 2 3\n", "line 3: found 3 figures under 6 column names"),
        ("$ free -b\n total used free shared buff/cache available\nMem: 1 2 x 4 5 6\n", "found 'x' in column free, expected a whole number"),
    ],
)
def test_bad_readings_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        meminfo.parse(text, "reading")


def meminfo_text(available_gib: float, free_gib: float, cached_gib: float) -> str:
    kb = lambda gib: int(gib * GiB // KiB)  # noqa: E731
    return f"MemTotal: {kb(121.69)} kB\nMemFree: {kb(free_gib)} kB\nMemAvailable: {kb(available_gib)} kB\nCached: {kb(cached_gib)} kB\n"


# A start as the guard sees it: MemAvailable dips under 8 GiB three polls in a row at T+6 s;
# at T+0 s most of what is available is page cache (MemFree under the floor).
POLLS = [(20, 2, 18), (7, 1, 6), (7.5, 1, 6.5), (6, 1, 5), (9, 8.5, 0.5)]


def test_watch_says_when_the_guard_kills_and_when_memory_is_available_but_not_free() -> None:
    slept: list[float] = []
    seen = list(watch.watch(lambda n: meminfo_text(*POLLS[n]), slept.append, 5, 2, 8 * GiB, 3))
    assert [p.t for p in seen] == [0, 2, 4, 6, 8]
    assert slept == [2, 2, 2, 2]  # between polls, never before the first
    assert [p.run_under_floor for p in seen] == [0, 1, 2, 3, 0]
    assert [p.guard_kills for p in seen] == [False, False, False, True, False]
    assert [p.available_not_free for p in seen] == [True, False, False, False, False]
    assert seen[0].available == 20 * GiB and seen[0].free == 2 * GiB and seen[0].cache == 18 * GiB
    text = watch.summary(seen, 8 * GiB, 3)
    assert "would kill the rank at T+6 s" in text
    assert "Lowest MemAvailable 6.00 GiB at T+6 s" in text
    assert "available but not free at 1 of 5 polls, first at T+0 s" in text


def test_watch_command_writes_a_trace_the_guard_replays(tmp_path: Path, monkeypatch, capsys) -> None:
    files = []
    for n, poll in enumerate(POLLS):
        path = tmp_path / f"meminfo.{n}"
        path.write_text(meminfo_text(*poll))
        files += ["--proc", str(path)]
    slept: list[float] = []
    monkeypatch.setattr(watch_command.time, "sleep", slept.append)
    trace = tmp_path / "trace.txt"
    assert cli.main(["watch", *files, "--out", str(trace)]) == 0
    out = capsys.readouterr().out
    assert slept == [2, 2, 2, 2]  # the catalog's poll interval, five files, one poll each
    assert "T+6 s: MemAvailable 6.00 GiB, MemFree 1.00 GiB, page cache 5.00 GiB; the guard would kill the rank now (3 polls in a row under the floor)" in out
    assert "T+0 s: MemAvailable 20.00 GiB, MemFree 2.00 GiB, page cache 18.00 GiB; available but not free" in out
    lines = trace.read_text().splitlines()
    assert lines[1] == f"0 {20 * GiB} B # free {2 * GiB} B, cache {18 * GiB} B <- available but not free"
    assert cli.main(["guard", str(trace), "--json"]) == 0
    replay = json.loads(capsys.readouterr().out)
    assert (replay["killed"], replay["at"], replay["lowest"], replay["samples"]) == (True, 6, 6 * GiB, 5)


def test_watch_bounded_by_duration_reads_the_last_file_again(tmp_path: Path, monkeypatch, capsys) -> None:
    path = tmp_path / "meminfo"
    path.write_text(MEMINFO)
    monkeypatch.setattr(watch_command.time, "sleep", lambda s: None)
    assert cli.main(["watch", "--proc", str(path), "--duration", "10", "--interval", "2.5", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["t"] for p in data["polls"]] == [0, 2.5, 5, 7.5, 10]
    assert {p["available"] for p in data["polls"]} == {23013468 * KiB}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--proc", "/nonexistent/meminfo"], "calc: error: --proc /nonexistent/meminfo: cannot read it (No such file or directory)"),
        (["--interval", "0"], "calc: error: --interval: found 0, expected seconds above zero"),
        (["--duration", "soon"], "calc: error: --duration: found 'soon', expected seconds"),
    ],
)
def test_watch_bad_arguments(args: list[str], message: str, monkeypatch, capsys) -> None:
    monkeypatch.setattr(watch_command.time, "sleep", lambda s: None)
    assert cli.main(["watch", *args]) == 2
    assert capsys.readouterr().err.startswith(message)
