"""Hostile input, as a careless or hostile user types it: every try kept as a row of a table.

Command line: exit status 2, one line on stderr naming the flag, what was found and what was
expected; never a traceback, a silent default or a wrong answer shown as valid. Catalog: `check`
names file and key path, and the build fails with the same message and no traceback. The
browser calculator's parser (calc.present.html, run here in CPython): the field is named, no result.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import tracemalloc
from pathlib import Path

import pytest
import regex_shape
from conftest import CATALOG_DIR

from calc.catalog.loader import load_dir, load_json, parse_yaml
from calc.catalog.spec import CatalogError
from calc.present import cli
from calc.present import html as calc_html
from calc.present.commands import common
from calc.present.commands import ingest as ingest_command
from calc.present.commands import watch as watch_command
from calc.units import InputError

NINES = "9" * 5000
READINGS = ["--reading", "50000:398000", "--reading", "500000:2450000"]

# --- the command line -----------------------------------------------------------------------

# (argv, fragment of the one error line); {tmp} is a directory holding FILES below.
CLI_CASES: list[tuple[list[str], str]] = [
    # a comma is a thousands separator in groups of three, nothing else
    (["gate", "--pin", "10,5 GiB"], "--pin: found '10,5 GiB', expected a comma only between groups of three digits"),
    (["gate", "--seats", "1,0"], "--seats: found '1,0', expected a comma only between groups of three"),
    (["prefetch", "--checkpoint", "75,5 GB", "--available", "44674MiB"], "--checkpoint: found '75,5 GB', expected a comma only"),
    (["gate", "--max-model-len", "131,07"], "--max-model-len: found '131,07', expected a comma only"),
    (["kv", "--tokens", "1,00,000"], "--tokens: found '1,00,000', expected a comma only"),
    (["kv", "--pin", "10,00 GB"], "--pin: found '10,00 GB', expected a comma only"),
    (["fraction", "--fraction", "0,98"], "--fraction: found '0,98', expected a comma only"),
    (["fraction", "--total", ",5 GiB"], "--total: found ',5 GiB', expected a comma only"),
    (["gate", "--available", "10,5 GiB"], "--available: found '10,5 GiB', expected a comma only"),
    (["gate", "--available", "60e9,61e9"], "--available: found '60e9,61e9', expected a comma only"),
    (["fit", "--pool", "24,5 GiB", *READINGS], "--pool: found '24,5 GiB', expected a comma only"),
    (["fit", "--pool", "24 GiB", "--reading", "50,00:398000", "--reading", "500000:2450000"], "--reading max_model_len: found '50,00'"),
    (["plan", "--model", "example-27b-4bit:1,5 GiB"], "--model example-27b-4bit KV: found '1,5 GiB', expected a comma only"),
    (["guard", "kernel-init-report", "--floor", "8,5 GiB"], "--floor: found '8,5 GiB', expected a comma only"),
    (["guard", "kernel-init-report", "--polls", "3,0"], "--polls: found '3,0', expected a comma only"),
    # sizes out of any memory's range, or below one byte; bounded before any arithmetic
    (["gate", "--pin", "1e999999999"], "--pin: found '1e999999999', expected a memory size below 1 PiB"),
    (["kv", "--pin", "1e999999999"], "--pin: found '1e999999999', expected a memory size below 1 PiB"),
    (["fit", "--pool", "1e999999999", *READINGS], "--pool: found '1e999999999', expected a memory size below 1 PiB"),
    (["fraction", "--total", "1e999999999 GiB"], "--total: found '1e999999999 GiB', expected a memory size below 1 PiB"),
    (["fraction", "--free", "1e999999999"], "--free: found '1e999999999', expected a memory size below 1 PiB"),
    (["guard", "kernel-init-report", "--floor", "1e999999999"], "--floor: found '1e999999999', expected a memory size below 1 PiB"),
    (["plan", "--available", "1e999999999"], "--available: found '1e999999999', expected a memory size below 1 PiB"),
    (["prefetch", "--checkpoint", "1e999999999", "--available", "1 GB"], "--checkpoint: found '1e999999999', expected a memory size"),
    (["prefetch", "--checkpoint", "1 GB", "--available", "1e999999999"], "--available: found '1e999999999', expected a memory size"),
    # sizes typed without their unit are bytes: a 75 B checkpoint once passed the size rule as "prefetched"
    (
        ["prefetch", "--checkpoint", "75", "--available", "64 GiB"],
        "--checkpoint: found '75', 75 B, expected at least 1 MiB, such as '75 GiB' (a number without a unit is bytes)",
    ),
    (
        ["prefetch", "--checkpoint", "75 GB", "--available", "64"],
        "--available: found '64', 64 B, expected at least 1 MiB, such as '64 GiB' (a number without a unit is bytes)",
    ),
    # a release is read once (calc/engine/release.py): malformed, or older than the oldest whose rules are read
    (
        ["model", "models/configs/qwen3-8b/config.json", "--engine-version", "-0.11.0"],
        "--engine-version: found '-0.11.0', expected a vLLM version such as 0.10.1",
    ),
    (
        ["model", "models/configs/qwen3-8b/config.json", "--engine-version", "0.-1.0"],
        "--engine-version: found '0.-1.0', expected a vLLM version such as 0.10.1",
    ),
    (
        ["model", "models/configs/qwen3-8b/config.json", "--engine-version", "0.11.x"],
        "--engine-version: found '0.11.x', expected a vLLM version such as 0.10.1",
    ),
    (
        ["model", "models/configs/qwen3-8b/config.json", "--engine-version", "0.0.0"],
        "--engine-version: found '0.0.0', expected vLLM 0.6.0 or later, the oldest release",
    ),
    (
        ["model", "models/configs/qwen3-8b/config.json", "--gpu", "l4", "--engine-version", "0.1.0"],
        "--engine-version: found '0.1.0', expected vLLM 0.6.0 or later",
    ),
    (
        ["model", "models/configs/qwen3-8b/config.json", "--engine-version", "0.11.0.0.0"],
        "--engine-version: found '0.11.0.0.0', expected a vLLM version such as 0.10.1",
    ),
    (
        ["fraction", "--total", "100 GiB", "--free", "120 GiB"],
        "--free: found 120.00 GiB, more than the total of 100.00 GiB (--total, of the same card); expected",
    ),
    (
        ["fraction", "--box", "h100-sxm", "--free", "90 GiB"],
        "--free: found 90.00 GiB, more than the total of 79.20 GiB (the NVIDIA H100 SXM's, from the catalog",
    ),
    (["fraction", "--total", "80 GiB"], "--free: found nothing beside --total 80 GiB, expected the free memory read on that card"),
    # a total typed without --free: the free reading is the catalog's box's (the RTX 5090 node's), not taken for another card's
    (
        ["fraction", "--total", "16 GiB"],
        "--free: found nothing beside --total 16 GiB, expected the free memory read on that card (or auto on this machine): the catalog's reading is the RTX 5090 node's",
    ),
    (["fraction", "--total", "120", "--free", "100 GiB"], "--total: found '120', 120 B, expected at least 1 MiB, such as '120 GiB' (a number without a unit"),
    (["fraction", "--total", "120 GiB", "--free", "100"], "--free: found '100', 100 B, expected at least 1 MiB, such as '100 GiB' (a number without a unit"),
    (["kv", "--kv-cache-memory-bytes", "16"], "--kv-cache-memory-bytes: found '16', 16 B, expected at least 1 MiB, such as '16 GiB'"),
    (["plan", "--model", "example-27b-4bit:20"], "--model example-27b-4bit KV: found '20', 20 B, expected at least 1 MiB, such as '20 GiB'"),
    (["gate", "--pin", "1e-400"], "--pin: found '1e-400', expected a size of at least 1 B (or 0): this is below one byte"),
    (["gate", "--pin", "1e-20 GiB"], "--pin: found '1e-20 GiB', expected a size of at least 1 B (or 0): this is below one byte"),
    (["kv", "--pin", "0.4 B"], "--pin: found '0.4 B', expected a size of at least 1 B (or 0): this is below one byte"),
    (["gate", "--pin", "1" * 5000], "--pin: found '11111111111111111111...111111111111' (5000 characters), 5000 digits; expected at most 30"),
    (["gate", "--pin", "0." + "0" * 5000 + "1 GiB"], "5002 digits; expected at most 30"),
    (["gate", "--pin", "1e99999999999999999999"], "--pin: found '1e99999999999999999999', expected a memory size below 1 PiB"),
    (["gate", "--pin", "-5 GB"], "--pin: found '-5 GB', expected a size of zero or more bytes"),
    (["gate", "--pin", "nan"], "--pin: found 'nan', expected a size"),
    (["gate", "--pin", "inf GiB"], "--pin: found 'inf GiB', expected a size"),
    (["gate", "--pin", "10 XB"], "--pin: found unit 'XB' in '10 XB', expected one of B, KB"),
    (["gate", "--pin", "１０ GB"], "--pin: found '１０ GB', expected a size"),  # full-width digits
    # counts: bounded, whole, at least one where zero makes no sense
    (["gate", "--seats", NINES], "--seats: found '99999999999999999999...999999999999' (5000 characters), expected a number below 1e+12"),
    (["kv", "--tokens", NINES], "--tokens: found '99999999999999999999...999999999999' (5000 characters), expected a number below"),
    (["kv", "--max-model-len", NINES], "--max-model-len: found '99999999999999999999...999999999999' (5000 characters)"),
    (["fit", "--pool", "24 GiB", "--reading", f"{NINES}:5", "--reading", "500000:2450000"], "--reading max_model_len: found '99999"),
    (["fit", "--pool", "24 GiB", *READINGS, "--max-model-len", NINES], "--max-model-len: found '99999"),
    (["guard", "kernel-init-report", "--polls", NINES], "--polls: found '99999"),
    (["gate", "--seats", "0"], "--seats: found 0, expected at least 1"),
    (["gate", "--max-model-len", "0"], "--max-model-len: found 0, expected at least 1"),
    (["gate", "--prefill-budget", "-8192"], "--prefill-budget: found -8192, expected at least 1"),
    (["gate", "--seats", "1.5"], "--seats: found '1.5', expected a whole number"),
    (["guard", "kernel-init-report", "--polls", "0"], "--polls: found 0, expected at least 1"),
    (["kv", "--bytes-per-token", "0"], "--bytes-per-token: found 0, expected at least 1"),
    (["fit", "--pool", "24 GiB", "--reading", "50000:0", "--reading", "500000:2450000"], "--reading tokens: found 0, expected at least 1"),
    (["fit", "--pool", "0 GiB", *READINGS], "pool: found 0, expected the KV pool's size per rank"),
    # a pool typed without its unit is bytes: 24 B cannot hold 2,450,000 tokens (it read as 0 B a token)
    (["fit", "--pool", "24", *READINGS], "--pool: found '24', 24 B, expected at least 1 MiB, such as '24 GiB' (a number without a unit is bytes)"),
    (["fit", "--pool", "2000000", *READINGS], "pool: found 2,000,000 B, fewer bytes than the 2,450,000 tokens read at max_model_len 500,000"),
    (["fit", "--pool", "24 GiB", "--reading", "50000:398000"], "readings: found fewer than two different max_model_len"),
    (["fit", "--pool", "24 GiB", "--reading", "50000"], "--reading: found '50000', expected MAX_MODEL_LEN:TOKENS"),
    # fractions: exponents bounded before the exact arithmetic (1e-99999999 ran for minutes)
    (["fraction", "--fraction", "1e-99999999"], "--fraction: found '1e-99999999', expected a fraction above 0 and at most 1"),
    (["fraction", "--fraction", "1e-9999999"], "--fraction: found '1e-9999999', expected a fraction above 0 and at most 1"),
    (["fraction", "--fraction", "0." + "0" * 5000 + "1"], "5002 digits; expected at most 30"),
    (["gate", "--gpu-memory-utilization", "1e-31"], "--gpu-memory-utilization: found '1e-31', expected a fraction above 0"),
    (["gate", "--gpu-memory-utilization", "1.01"], "--gpu-memory-utilization: found '1.01', expected a fraction above 0 and at most 1"),
    (["plan", "--fractions", "0.5,"], "--fractions: found nothing, expected a fraction"),
    (["plan", "--fractions", "0,5"], "--fractions: found '0', expected a fraction above 0"),
    # names and shapes
    (["gate", "--deployment", "<img src=x>"], "--deployment: found '<img src=x>', expected one of dsv4-flash-pair"),
    (["fraction", "--box", "nowhere"], "--box: found 'nowhere', expected one of"),
    (["plan", "--model", "example-27b-4bit:"], "--model example-27b-4bit KV: found nothing, expected a size"),
    (["plan", "--model", "example-27b-4bit:1 GiB:"], "--model example-27b-4bit headroom: found nothing, expected a size"),
    (["plan", "--model", "example-27b-4bit:1 GiB:1 GiB:1 GiB"], "--model: found 'example-27b-4bit:1 GiB:1 GiB:1 GiB', expected MODEL[:KV[:HEADROOM]]"),
    (["plan", "--model", "nobody"], "--model: found 'nobody', expected one of"),
    (["guard", "kernel-init-report", "--serving-at", "1e999"], "--serving-at: found '1e999', expected seconds"),
    (["guard", "kernel-init-report", "--serving-at", "nan"], "--serving-at: found 'nan', expected seconds"),
    (["gate", "--available", "60 GiB, 61 GiB, 62 GiB"], "--available: found 3 figures, expected 1 or 2 (one per box)"),
    (["gate", "\r0\u2028x"], "unrecognized arguments: \\r0\\u2028x"),  # a line break typed into a value stays on the one line
    (["--catalog", "/nonexistent", "check"], "boxes.yaml: (file): found nothing, expected a file at /nonexistent/boxes.yaml"),
    # files that are not what they should be
    (["guard", "{tmp}/latin1.txt"], "{tmp}/latin1.txt: found byte 0xff at offset 13, expected UTF-8 text"),
    (["guard", "{tmp}/empty.txt"], "{tmp}/empty.txt: found no polls, expected lines such as '25 68501 MiB'"),
    (["guard", "{tmp}/long-time.txt"], "{tmp}/long-time.txt, line 1: time: found '99999"),
    (["guard", "{tmp}/unitless.txt"], "{tmp}/unitless.txt, line 1: found '68501' without a unit"),
    (["guard", "{tmp}/backwards.txt"], "{tmp}/backwards.txt, line 2: found time 5 s after 25 s, expected times in order"),
    (["guard", "{tmp}/comma.txt"], "{tmp}/comma.txt, line 1: found '68,50 MiB', expected a comma only"),
    (["guard", "{tmp}/huge.txt"], "{tmp}/huge.txt, line 1: found '1e999999999 MiB', expected a memory size below 1 PiB"),
    (["watch", "--proc", "{tmp}/latin1.txt", "--polls", "1"], "{tmp}/latin1.txt: found byte 0xff at offset 13, expected UTF-8 text"),
    (["guard", "{tmp}/missing.txt"], "trace {tmp}/missing.txt: cannot read it (No such file or directory)"),
    (["guard", "{tmp}"], "trace {tmp}: cannot read it (Is a directory)"),
    # a trace line the old pattern read every split of its spaces of (300 spaces: minutes)
    (["guard", "{tmp}/spaces.txt"], "{tmp}/spaces.txt, line 1: found '0                   ...          <x' (303 characters), expected '<seconds> <size>'"),
    # --out never replaces a file unless asked, and says what is wrong with a path in one line
    (
        ["watch", "--proc", "{tmp}/meminfo.txt", "--duration", "0", "--out", "{tmp}/comma.txt"],
        "--out {tmp}/comma.txt: found an existing file, expected a new file name; give --force",
    ),
    (["watch", "--proc", "{tmp}/meminfo.txt", "--duration", "0", "--out", "{tmp}/nowhere/trace.txt"], "--out {tmp}/nowhere/trace.txt: found no folder"),
    (["watch", "--proc", "{tmp}/meminfo.txt", "--duration", "0", "--out", "{tmp}"], "--out {tmp}: found a folder, expected a file name"),
    (
        ["watch", "--proc", "{tmp}/meminfo.txt", "--duration", "0", "--out", "/dev/null", "--force"],
        "--out /dev/null: found something that is not a regular file",
    ),
    # a watch's polls are bounded before the first (the poll times were once built up front: 800 MB)
    (["watch", "--proc", "{tmp}/meminfo.txt", "--interval", "1e-300", "--duration", "1"], "--interval: found '1e-300', expected seconds"),
    (["watch", "--proc", "{tmp}/meminfo.txt", "--duration", "1e300"], "--duration: found '1e300', expected seconds"),
    (["watch", "--proc", "{tmp}/meminfo.txt", "--interval", "0.000001", "--duration", "100"], "--interval: found 1e-06, expected at least 0.1 seconds"),
    (["watch", "--proc", "{tmp}/meminfo.txt", "--interval", "0.1", "--duration", "86400"], "found 864,000 polls, expected at most 100,000"),
    (["watch", "--proc", "{tmp}/meminfo.txt", "--duration", "86401"], "--duration: found 86401, expected seconds from 0 to 86,400"),
    # seconds are read as every other number: ASCII digits, grouped in threes
    (["watch", "--proc", "{tmp}/meminfo.txt", "--interval", "١٠"], "--interval: found '١٠', expected seconds"),
    (["watch", "--proc", "{tmp}/meminfo.txt", "--duration", "１０"], "--duration: found '１０', expected seconds"),
    (["watch", "--proc", "{tmp}/meminfo.txt", "--interval", "1_0"], "--interval: found '1_0', expected an underscore only between groups of three"),
    (["guard", "kernel-init-report", "--serving-at", "١٠"], "--serving-at: found '١٠', expected seconds"),
    (["guard", "kernel-init-report", "--serving-at", "1_0"], "--serving-at: found '1_0', expected an underscore only"),
    (["gate", "--seats", "1_0"], "--seats: found '1_0', expected an underscore only between groups of three"),
    # memory readings no kernel and no free prints, each named by its line
    (["watch", "--proc", "{tmp}/avail-400.txt", "--duration", "0"], "line 3: MemAvailable: found a figure of 400 digits, expected a memory size below 1 PiB"),
    (["watch", "--proc", "{tmp}/avail-over.txt", "--duration", "0"], "line 3: found MemAvailable 11,264 B above MemTotal 10,240 B (line 1)"),
    (["watch", "--proc", "{tmp}/free-over.txt", "--duration", "0"], "line 2: found MemFree 20,480 B above MemTotal 10,240 B (line 1)"),
    (
        ["watch", "--proc", "{tmp}/free-h-400.txt", "--duration", "0"],
        "line 2, column total: found '11111111111111111111...111111111111' (400 characters), 400 digits",
    ),
    (["watch", "--proc", "{tmp}/free-b-square.txt", "--duration", "0"], "line 3: found '1²' in column total, expected a whole number"),
    (
        ["watch", "--proc", "{tmp}/free-b-5000.txt", "--duration", "0"],
        "line 3: found a figure of 5000 digits in column total, expected a memory size below 1 PiB",
    ),
    (["watch", "--proc", "{tmp}/free-b-arabic.txt", "--duration", "0"], "line 3: found '١٠' in column total, expected a whole number"),
    # config.json: nesting, digits and keys bounded before anything is built
    (["ingest", "{tmp}/deep-line.log"], "deep-line.log: found none of the lines a vLLM or SGLang start prints in 1 lines"),  # once a RecursionError
    (["model", "{tmp}/tie-no.json", "--max-model-len", "4096"], "tie-no.json: tie_word_embeddings: found 'no', expected true or false"),
    (["model", "{tmp}/deep.json", "--max-model-len", "4096"], "deep.json: (the file): found arrays or objects nested 10000 deep, expected at most 64 levels"),
    (["model", "{tmp}/digits.json", "--max-model-len", "4096"], "digits.json: (the file): found a whole number of 5000 digits, expected at most 40 digits"),
    (
        ["model", "{tmp}/twice.json", "--max-model-len", "4096"],
        "twice.json: (the file): found the key 'num_hidden_layers' twice in one object, expected each key once",
    ),
]

_FREE_HEAD = b"               total        used        free      shared  buff/cache   available\n"
_MEMINFO_OK = b"MemTotal: 100000000 kB\nMemFree: 10000000 kB\nMemAvailable: 50000000 kB\n"
_DEEP = b'{"a":' * 10000 + b"1" + b"}" * 10000
_QWEN3_14B = (Path(__file__).resolve().parent.parent / "models" / "configs" / "qwen3-14b" / "config.json").read_bytes()
assert b'"tie_word_embeddings": false' in _QWEN3_14B

FILES: dict[str, bytes] = {
    "latin1.txt": b"25 68501 MiB\n\xff30 45826 MiB\n",
    "empty.txt": b"# nothing but a comment\n\n",
    "long-time.txt": NINES.encode() + b" 68501 MiB\n",
    "unitless.txt": b"25 68501\n",
    "backwards.txt": b"25 68501 MiB\n5 45826 MiB\n",
    "comma.txt": b"25 68,50 MiB\n",
    "huge.txt": b"25 1e999999999 MiB\n",
    "spaces.txt": b"0" + b" " * 300 + b"<x\n",
    "meminfo.txt": _MEMINFO_OK,
    "avail-400.txt": b"MemTotal: 10 kB\nMemFree: 1 kB\nMemAvailable: " + b"9" * 400 + b" kB\n",
    "avail-over.txt": b"MemTotal: 10 kB\nMemFree: 1 kB\nMemAvailable: 11 kB\n",
    "free-over.txt": b"MemTotal: 10 kB\nMemFree: 20 kB\nMemAvailable: 5 kB\n",
    "free-h-400.txt": _FREE_HEAD + b"Mem:  " + b"1" * 400 + b"Gi  1Gi  1Gi  1Gi  1Gi  1Gi\n",
    "free-b-square.txt": b"$ free -b\n" + _FREE_HEAD + "Mem: 1² 1 1 1 1 1\n".encode(),
    "free-b-5000.txt": b"$ free -b\n" + _FREE_HEAD + b"Mem: " + b"1" * 5000 + b" 1 1 1 1 1\n",
    "free-b-arabic.txt": b"$ free -b\n" + _FREE_HEAD + "Mem: ١٠ 1 1 1 1 1\n".encode(),
    "deep.json": _DEEP,
    "deep-line.log": b'{"message": ' + _DEEP + b"}\n",
    "digits.json": b'{"num_hidden_layers": ' + b"1" * 5000 + b"}",
    "tie-no.json": _QWEN3_14B.replace(b'"tie_word_embeddings": false', b'"tie_word_embeddings": "no"'),
    "twice.json": b'{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": 2, "num_hidden_layers": 32}',
}

# (argv, /proc/meminfo as the box would print it, fragment): --available auto and --free auto.
MEMINFO_CASES: list[tuple[list[str], bytes, str]] = [
    (
        ["gate", "--available", "auto"],
        b"MemTotal: 127601756 kB\nMemAvailable: 100000 MB\n",
        "line 2: found 'MemAvailable: 100000 MB', expected 'MemAvailable: <number> kB'",
    ),
    (["gate", "--available", "auto"], b"MemAvailable: 100000\n", "line 1: found 'MemAvailable: 100000', expected 'MemAvailable: <number> kB'"),
    (["gate", "--available", "auto"], b"MemAvailable:\n", "found 'MemAvailable:', expected 'MemAvailable: <number> kB'"),
    (["gate", "--available", "auto"], b"MemAvailable: 1 2 kB\n", "expected 'MemAvailable: <number> kB'"),
    (["gate", "--available", "auto"], b"MemAvailable: 12.5 kB\n", "line 1: MemAvailable: found '12.5', expected a whole number"),
    (["gate", "--available", "auto"], b"MemAvailable: " + NINES.encode() + b" kB\n", "MemAvailable: found '99999"),
    (["gate", "--available", "auto"], b"MemTotal: 127601756 kB\n", "--available auto: found no MemAvailable line in"),
    (["prefetch", "--checkpoint", "75 GB", "--available", "auto"], b"MemAvailable: \xff kB\n", "found byte 0xff at offset 14, expected UTF-8 text"),
    (["fraction", "--free", "auto"], b"MemAvailable: 100000 MB\n", "expected 'MemAvailable: <number> kB'"),
    (["gate", "--available", "auto"], b"MemTotal: 10 kB\nMemAvailable: 11 kB\n", "line 2: found MemAvailable 11,264 B above MemTotal 10,240 B (line 1)"),
    (["gate", "--available", "auto"], "MemAvailable: ١٠ kB\n".encode(), "line 1: MemAvailable: found '١٠', expected a whole number"),
]


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def _assert_one_error(status: int, out: str, err: str, fragment: str) -> None:
    assert status == 2, (status, out, err)
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("calc: error: "), lines[0]
    assert "Traceback" not in err
    assert re.search(re.escape(fragment).replace(re.escape("{n}"), "[0-9]+"), lines[0]), lines[0]  # {n}: a line number
    assert len(lines[0]) < 400, lines[0]


@pytest.fixture
def files(tmp_path: Path) -> Path:
    for name, data in FILES.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


@pytest.mark.parametrize(("argv", "fragment"), CLI_CASES, ids=[" ".join(a)[:60] for a, _ in CLI_CASES])
def test_cli_refuses(argv: list[str], fragment: str, files: Path, capsys) -> None:
    argv = [a.replace("{tmp}", str(files)) for a in argv]
    tracemalloc.start()
    try:
        _assert_one_error(*_run(argv, capsys), fragment.replace("{tmp}", str(files)))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # refused before any expansion: 1e-99999999 made exact is a 41 MB integer (15 s), watch's poll
    # times built up front 800 MB, a file read to its limit 64 MiB; a refusal sets aside 4 MB
    assert peak < 16 * 2**20, (argv, peak)
    assert (files / "comma.txt").read_bytes() == FILES["comma.txt"]  # no file is replaced on a refusal


def test_a_config_with_a_byte_order_mark_reads_as_without(files: Path, capsys) -> None:
    """A UTF-8 byte-order mark, as some editors write it, was reported as "not JSON"."""
    (files / "bom.json").write_bytes(b"\xef\xbb\xbf" + _QWEN3_14B)
    (files / "plain.json").write_bytes(_QWEN3_14B)
    answers = [_run(["model", str(files / name), "--max-model-len", "4096", "--json"], capsys) for name in ("bom.json", "plain.json")]
    assert answers[0][0] == 0 and answers[0][1].replace("bom.json", "plain.json") == answers[1][1]


def test_watch_out_never_writes_into_the_catalog(catalog_copy: Path, files: Path, monkeypatch, capsys) -> None:
    """`watch --out catalog/traces.yaml` once replaced the catalog file and broke every command."""
    before = (catalog_copy / "traces.yaml").read_bytes()
    argv = ["watch", "--proc", str(files / "meminfo.txt"), "--duration", "0"]
    for target in (catalog_copy / "traces.yaml", catalog_copy / "new.yaml", catalog_copy / "schema" / "x.json"):
        _assert_one_error(*_run(["--catalog", str(catalog_copy), *argv, "--out", str(target), "--force"], capsys), "found a path in the catalog")
    monkeypatch.setattr(watch_command, "CATALOG_DIR", catalog_copy)  # the project's own catalog, wherever it is
    _assert_one_error(*_run([*argv, "--out", str(catalog_copy / "traces.yaml"), "--force"], capsys), "found a path in the catalog")
    assert (catalog_copy / "traces.yaml").read_bytes() == before and not (catalog_copy / "new.yaml").exists()


def test_watch_out_replaces_a_file_only_with_force(files: Path, capsys) -> None:
    argv = ["watch", "--proc", str(files / "meminfo.txt"), "--duration", "0", "--out", str(files / "comma.txt")]
    assert _run([*argv, "--force"], capsys)[0] == 0
    assert (files / "comma.txt").read_text().splitlines()[1] == "0 51200000000 B # free 10240000000 B"
    assert _run([*argv[:-2], "--out", str(files / "new.txt")], capsys)[0] == 0
    assert (files / "new.txt").read_text().startswith("# python -m calc watch")


@pytest.mark.parametrize(("argv", "meminfo", "fragment"), MEMINFO_CASES, ids=[m.decode("latin-1")[:40] for _, m, _ in MEMINFO_CASES])
def test_cli_refuses_a_meminfo_it_cannot_read(argv: list[str], meminfo: bytes, fragment: str, tmp_path: Path, monkeypatch, capsys) -> None:
    path = tmp_path / "meminfo"
    path.write_bytes(meminfo)
    monkeypatch.setattr(common, "MEMINFO", str(path))
    _assert_one_error(*_run(argv, capsys), fragment)


def test_cli_reads_meminfo_in_kib(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "meminfo"
    path.write_text("MemTotal: 127601756 kB\nMemAvailable:   117440512 kB\n")
    monkeypatch.setattr(common, "MEMINFO", str(path))
    assert common.meminfo_available() == 117440512 * 1024 == 112 * 2**30


def _value_options() -> list[tuple[list[str], str]]:
    """Every flag and argument of every subcommand that takes a value, found on the parser."""
    parser = cli.build_parser()
    found = [([], a) for a in parser._actions if a.option_strings and a.nargs != 0 and a.dest != "help"]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        found += [([name], a) for a in p._actions if a.nargs != 0 and a.dest != "help"]
    return [(prefix, a.option_strings[0] if a.option_strings else a.dest) for prefix, a in found]


SAMPLE_LOG = str(Path(__file__).resolve().parent.parent / "docs" / "samples" / "1cat-237-v100-tp4.log")


VALUE_OPTIONS = _value_options()


def test_every_value_option_is_found() -> None:
    found = {(p[0] if p else "", o) for p, o in VALUE_OPTIONS}
    assert {("", "--catalog"), ("gate", "--pin"), ("kv", "--tokens"), ("fit", "--pool"), ("guard", "trace"), ("ingest", "file"), ("watch", "--proc")} <= found
    assert len(VALUE_OPTIONS) >= 50, VALUE_OPTIONS  # every subcommand's, read off the parser: more as commands are added


@pytest.mark.parametrize("blank", ["", "   "])
@pytest.mark.parametrize(("prefix", "option"), VALUE_OPTIONS, ids=[" ".join([*p, o]) for p, o in VALUE_OPTIONS])
def test_an_empty_value_is_an_error_not_the_default(prefix: list[str], option: str, blank: str, capsys) -> None:
    """`--pin ''` once meant the default pin: an empty value for any flag is refused."""
    required = {
        "fit": ["--pool", "24 GiB"],
        "prefetch": ["--checkpoint", "1 GB", "--available", "1 GB"],
        "guard": ["kernel-init-report"],
        "ingest": [SAMPLE_LOG],
    }
    command = prefix[0] if prefix else "check"
    if option.startswith("-"):
        argv = [*prefix, *required.get(command, []), option, blank] if prefix else [option, blank, "check"]
    else:  # the positional argument (guard's trace, ingest's file)
        argv = [command, blank]
    name = f"argument {option}"
    _assert_one_error(*_run(argv, capsys), f"{name}: found nothing, expected a value")


# --- the catalog ----------------------------------------------------------------------------


def _through_yaml(text: str, change) -> str:
    """A catalog file changed as data (dates stay text), for changes a text edit cannot make."""
    import yaml

    from calc.catalog.loader import _yaml_loader

    data = yaml.load(text, Loader=_yaml_loader())
    change(data)
    return yaml.safe_dump(data, sort_keys=False)


def _bomb() -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "\n".join(lines) + "\n"


# (id, file, old text, new text or a function of the file's text, fragment naming file and key path)
CATALOG_CASES: list[tuple[str, str, str, object, str]] = [
    (
        "name a number",
        "boxes.yaml",
        "    name: DGX Spark (GB10)\n",
        "    name: 12\n",
        "boxes.yaml: boxes[0].name: found 12, expected text (quote a number meant as text)",
    ),
    (
        "merge key",
        "boxes.yaml",
        "    name: DGX Spark (GB10)\n",
        "    name: DGX Spark (GB10)\n    <<: {memory: discrete}\n",
        "boxes.yaml: boxes[0].<<: found a YAML merge key '<<', expected each key written out in its mapping",
    ),
    (
        "right-to-left override",
        "boxes.yaml",
        "    name: DGX Spark (GB10)\n",
        '    name: "DGX \u202eSpark"\n',
        "boxes.yaml: boxes[0].name: found the control character U+202E in the text, expected text without control or direction characters",
    ),
    (
        "duplicate value",
        "boxes.yaml",
        "      value: 121.69 GiB\n",
        "      value: 121.69 GiB\n      value: 1 GiB\n",
        "boxes.yaml: boxes[0].total_memory.value: found the key 'value' twice (lines {n} and {n}), expected each key once in a mapping",
    ),
    (
        "duplicate list",
        "plans.yaml",
        None,
        lambda t: t + "fraction_plans:\n  - id: again\n    box: dgx-spark\n    fractions: [0.9]\n",
        "plans.yaml: fraction_plans: found the key 'fraction_plans' twice (lines {n} and {n})",
    ),
    (
        "duplicate id key",
        "models.yaml",
        "    name: DeepSeek-V4-Flash-0731 NVFP4\n",
        "    name: DeepSeek-V4-Flash-0731 NVFP4\n    name: another\n",
        "models.yaml: models[0].name: found the key 'name' twice",
    ),
    ("duplicate top-level", "policy.yaml", None, lambda t: t + "gate: {}\n", "policy.yaml: gate: found the key 'gate' twice"),
    (
        "date not on the calendar",
        "starts.yaml",
        "date: 2026-10-24",
        "date: 2026-02-30",
        "starts.yaml: deployments[0].starts[0].date: found '2026-02-30', expected a date written YYYY-MM-DD",
    ),
    (
        "month 13",
        "boxes.yaml",
        "date: 2026-10-11",
        "date: 2026-13",
        "boxes.yaml: boxes[1].total_memory.date: found '2026-13', expected a date written YYYY-MM-DD",
    ),
    (
        "explicit timestamp",
        "starts.yaml",
        "date: 2026-10-24",
        "date: !!timestamp 2026-02-30",
        "starts.yaml: deployments[0].starts[0].date: found 'tag:yaml.org,2002:timestamp', expected plain YAML data",
    ),
    (
        "python object tag",
        "boxes.yaml",
        "memory: unified",
        "memory: !!python/object:os.system echo",
        "boxes.yaml: boxes[0].memory: found 'tag:yaml.org,2002:python/object:os.system', expected plain YAML data",
    ),
    ("binary tag", "boxes.yaml", "memory: unified", "memory: !!binary aGk=", "boxes.yaml: boxes[0].memory: found 'tag:yaml.org,2002:binary'"),
    (
        "5000-digit count",
        "starts.yaml",
        "boxes: 2",
        "boxes: " + NINES,
        "starts.yaml: deployments[0].boxes: found '99999999999999999999999999999999999999999999999999999999999... (5002 characters), expected a whole number of at most 20",
    ),
    ("5000-digit figure", "policy.yaml", "value: 8192", "value: " + NINES, "policy.yaml: gate.calibration.prefill_budget.value: found '99999"),
    (
        "1e999999999 GiB",
        "boxes.yaml",
        "value: 121.69 GiB",
        "value: 1e999999999 GiB",
        "boxes.yaml: boxes[0].total_memory.value: found '1e999999999 GiB', expected a size with its unit, such as 79.29 GiB, 10e9 B or 128 GB: a memory size below 1 PiB",
    ),
    (
        "comma decimal",
        "boxes.yaml",
        "value: 121.69 GiB",
        "value: 121,69 GiB",
        "boxes.yaml: boxes[0].total_memory.value: found '121,69 GiB', expected a size with its unit, such as 79.29 GiB, 10e9 B or 128 GB: a comma only",
    ),
    ("below one byte", "boxes.yaml", "value: 30.85 GiB", "value: 1e-12 GiB", "boxes.yaml: boxes[1].free_at_start.value: found '1e-12 GiB'"),
    ("float 1e400", "models.yaml", "layers: 43", "layers: 1.0e+400", "models.yaml: models[0].architecture.layers: found inf, expected a whole number from 1"),
    ("non-UTF-8", "boxes.yaml", "name: DGX Spark (GB10)", "name: DGX Spark \udcff(GB10)", "boxes.yaml: line {n}: found byte 0xff, expected UTF-8 text"),
    ("control character", "boxes.yaml", "name: DGX Spark (GB10)", "name: DGX Spark \x07(GB10)", "boxes.yaml: (parse): found"),
    (
        "alias bomb",
        "policy.yaml",
        None,
        lambda t: _bomb() + t,
        "policy.yaml: line 2, column 10: found '*a0', expected the value written out (the catalog uses no YAML anchors or aliases)",
    ),
    (
        "alias",
        "boxes.yaml",
        "name: RTX 5090 node",
        "name: &n RTX 5090 node\n    note_again: *n",
        "boxes.yaml: line {n}, column 17: found '*n', expected the value written out",
    ),
    (
        "merge key",
        "policy.yaml",
        None,
        lambda t: t.replace("gate:\n", "base: &b {value: 1 GiB}\ngate:\n  other:\n    <<: *b\n", 1),
        "policy.yaml: line {n}, column 9: found '*b', expected the value written out",
    ),
    (
        "deep nesting",
        "boxes.yaml",
        "memory: unified",
        "memory: " + "[" * 100000 + "]" * 100000,
        "boxes.yaml: line {n}, column 42: found nesting 33 deep, expected at most 32 levels of nesting",
    ),
    (
        "huge file",
        "models.yaml",
        None,
        lambda t: t + ("# " + "x" * 1000 + "\n") * 5000,
        "models.yaml: (file): found more than 4,194,304 bytes, expected a catalog file of at most 4 MiB",
    ),
    ("boxes 0", "starts.yaml", "boxes: 2", "boxes: 0", "starts.yaml: deployments[0].boxes: found 0, expected a whole number from 1 to 1e+12"),
    (
        "tp 0",
        "starts.yaml",
        "tp: 2\n    engine: vLLM nightly",
        "tp: 0\n    engine: vLLM nightly",
        "starts.yaml: deployments[0].tp: found 0, expected a whole number from 1",
    ),
    (
        "tp -2",
        "starts.yaml",
        "tp: 2\n    engine: vLLM nightly",
        "tp: -2\n    engine: vLLM nightly",
        "starts.yaml: deployments[0].tp: found -2, expected a whole number from 1",
    ),
    ("boxes 2.5", "starts.yaml", "boxes: 2", "boxes: 2.5", "starts.yaml: deployments[0].boxes: found 2.5, expected a whole number from 1"),
    (
        "max_model_len 0",
        "starts.yaml",
        "max_model_len: 131072",
        "max_model_len: 0",
        "starts.yaml: deployments[0].settings.max_model_len: found 0, expected a whole number from 1",
    ),
    ("seats 0", "starts.yaml", "seats: 8", "seats: 0", "starts.yaml: deployments[0].settings.seats: found 0, expected a whole number from 1"),
    ("prefill 0", "starts.yaml", "prefill_budget: 8192", "prefill_budget: 0", "starts.yaml: deployments[0].settings.prefill_budget: found 0"),
    (
        "report tp 0",
        "models.yaml",
        "tp: 2\n        max_model_len: 121344",
        "tp: 0\n        max_model_len: 121344",
        "models.yaml: models[0].kv_reports[0].tp: found 0",
    ),
    ("report length 0", "models.yaml", "max_model_len: 121344", "max_model_len: 0", "models.yaml: models[0].kv_reports[0].max_model_len: found 0"),
    (
        "block 0",
        "models.yaml",
        "block_size: 256\n        pool:\n          value",
        "block_size: 0\n        pool:\n          value",
        "models.yaml: models[0].kv_reports[0].block_size: found 0",
    ),
    ("layers 0", "models.yaml", "layers: 43", "layers: 0", "models.yaml: models[0].architecture.layers: found 0, expected a whole number from 1"),
    ("drafter ranks 0", "models.yaml", "ranks: 2", "ranks: 0", "models.yaml: models[0].drafter.weights.ranks: found 0, expected a whole number from 1"),
    ("per rank at tp 0", "models.yaml", "per_rank_at_tp: 2", "per_rank_at_tp: 0", "models.yaml: models[0].weights.per_rank_at_tp: found 0"),
    ("report tokens 0", "models.yaml", "value: 150992", "value: 0", "models.yaml: models[0].kv_reports[0].tokens.value: found 0, expected above zero"),
    ("report pool 0", "models.yaml", "value: 7.71 GiB", "value: 0 GiB", "models.yaml: models[0].kv_reports[0].pool.value: found '0 GiB', expected above zero"),
    (
        "bytes per token 0",
        "models.yaml",
        "value: 13952",
        "value: 0",
        "models.yaml: models[0].kv_reports[1].bytes_per_token.value: found 0, expected above zero",
    ),
    ("length pool 0", "models.yaml", "min: 24 GiB", "min: 0 GiB", "models.yaml: models[0].length_reports[0].pool.min: found '0 GiB', expected above zero"),
    (
        "length reading 0",
        "models.yaml",
        "- max_model_len: 50000",
        "- max_model_len: 0",
        "models.yaml: models[0].length_reports[0].readings[0].max_model_len: found 0",
    ),
    (
        "one length reading",
        "models.yaml",
        "          - max_model_len: 500000\n",
        "          - max_model_len: 50000\n",
        "models.yaml: models[0].length_reports[0].readings: found 2 readings, all at max_model_len 50000, expected readings at two or more different max_model_len",
    ),
    ("kv tokens 0", "starts.yaml", "value: 290858", "value: 0", "starts.yaml: deployments[0].starts[0].kv_tokens.value: found 0, expected above zero"),
    ("total memory 0", "boxes.yaml", "value: 121.69 GiB", "value: 0 GiB", "boxes.yaml: boxes[0].total_memory.value: found '0 GiB', expected above zero"),
    ("calibration seats 0", "policy.yaml", "value: 16", "value: 0", "policy.yaml: gate.calibration.seats.value: found 0, expected above zero"),
    ("polls 0", "policy.yaml", "value: 3", "value: 0", "policy.yaml: guard.polls_in_a_row.value: found 0, expected above zero"),
    ("poll seconds 0", "policy.yaml", "value: 2\n", "value: 0\n", "policy.yaml: guard.poll_seconds.value: found 0, expected above zero"),
    (
        "no samples",
        "traces.yaml",
        None,
        lambda t: t.split("    samples:")[0] + "    samples: []\n    kernel_init:\n      from_t: 23\n      to_t: 25\n",
        "traces.yaml: traces[0].samples: found [], expected a list of at least 1",
    ),
    (
        "no fractions",
        "plans.yaml",
        "fractions: [0.5, 0.35]",
        "fractions: []",
        "plans.yaml: fraction_plans[0].fractions: found [], expected a list of at least 1",
    ),
    (
        "no starts",
        "starts.yaml",
        None,
        lambda t: _through_yaml(t, lambda d: d["deployments"][0].update(starts=[])),
        "starts.yaml: deployments[0].starts: found [], expected a list of at least 1",
    ),
    (
        "fraction 1.5",
        "boxes.yaml",
        "value: 0.98",
        "value: 1.5",
        "boxes.yaml: boxes[1].serving.gpu_memory_utilization.value: found 1.5, expected a fraction above 0",
    ),
    (
        "huge list for a mapping",
        "boxes.yaml",
        None,
        lambda t: _through_yaml(t, lambda d: d["boxes"][1].update(serving=["x" * 50] * 2000)),
        "boxes.yaml: boxes[1].serving: found ['xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', 'xxxx... (108000 characters), expected a mapping",
    ),
]


def _mutate(directory: Path, file: str, old: str | None, new: object) -> None:
    path = directory / file
    text = path.read_text(encoding="utf-8")
    if old is None:
        changed = new(text)  # type: ignore[operator]
    else:
        assert old in text, f"{file}: {old!r} not found"
        changed = text.replace(old, new, 1)  # type: ignore[arg-type]
    path.write_bytes(changed.encode("utf-8", "surrogateescape"))


@pytest.mark.parametrize(("name", "file", "old", "new", "fragment"), CATALOG_CASES, ids=[c[0] for c in CATALOG_CASES])
def test_catalog_refuses(name: str, file: str, old: str | None, new: object, fragment: str, catalog_copy: Path, capsys) -> None:
    _mutate(catalog_copy, file, old, new)
    tracemalloc.start()
    try:
        status, out, err = _run(["--catalog", str(catalog_copy), "check"], capsys)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, (name, peak)  # nothing expanded: an alias bomb is refused as read (a catalog check sets aside 4 to 9 MB)
    _assert_one_error(status, out, err, fragment)


def test_a_catalog_file_is_read_only_if_regular_and_to_its_limit(catalog_copy: Path, capsys) -> None:
    """A catalog file that links to /dev/zero was read before its size was checked (MemoryError)."""
    (catalog_copy / "boxes.yaml").unlink()
    (catalog_copy / "boxes.yaml").symlink_to("/dev/zero")
    _assert_one_error(*_run(["--catalog", str(catalog_copy), "check"], capsys), "boxes.yaml: (file): found a file it cannot read (not a regular file)")
    (catalog_copy / "boxes.yaml").unlink()
    (catalog_copy / "boxes.yaml").write_bytes(b"#" * (5 * 2**20))
    _assert_one_error(
        *_run(["--catalog", str(catalog_copy), "check"], capsys),
        "boxes.yaml: (file): found more than 4,194,304 bytes, expected a catalog file of at most 4 MiB",
    )


@pytest.mark.parametrize(
    "argv", [["ingest", "{f}"], ["model", "{f}", "--max-model-len", "4096"], ["guard", "{f}"], ["model", "{cfg}", "--max-model-len", "4096", "--index", "{f}"]]
)
@pytest.mark.parametrize(("path", "said"), [("/dev/zero", "not a regular file"), ("/proc/self/mem", "Input/output error")])
def test_a_file_that_is_no_regular_file_is_refused_not_read(argv: list[str], path: str, said: str, monkeypatch, capsys) -> None:
    """`model --index /dev/zero` hung; `ingest /proc/self/mem` ended in an OSError traceback."""
    import builtins
    import io
    import os
    import stat

    config = str(Path(__file__).resolve().parent.parent / "models" / "configs" / "qwen3-14b" / "config.json")
    real_open = io.open

    def only_regular(file, *args, **kwargs):  # refused before it is opened to be read: /dev/zero never ends
        mode = os.fstat(file).st_mode if isinstance(file, int) else os.stat(file).st_mode
        assert stat.S_ISREG(mode), f"{file} opened to be read"
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", only_regular)
    monkeypatch.setattr(builtins, "open", only_regular)
    _assert_one_error(*_run([a.replace("{f}", path).replace("{cfg}", config) for a in argv], capsys), f"{path}: cannot read it ({said})")


def test_the_shipped_catalog_uses_no_alias_and_no_duplicate() -> None:
    """The loader refuses what the catalog never needs; the catalog itself passes it."""
    load_dir(CATALOG_DIR)
    for path in CATALOG_DIR.glob("*.yaml"):
        parse_yaml(path.read_bytes(), path.name)


# A few of the hostile catalogs through the whole build: it fails with the check's message and
# no traceback (each build takes seconds, so only these).
BUILD_CASES = ["duplicate value", "date not on the calendar", "alias bomb", "boxes 0", "5000-digit count"]


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.sitebuild import copy_project

    target = tmp_path_factory.mktemp("hostile") / "project"
    target.mkdir()
    return copy_project(target)


@pytest.mark.parametrize("name", BUILD_CASES)
def test_the_build_fails_cleanly(name: str, project_copy: Path) -> None:
    from tests.sitebuild import build

    _, file, old, new, fragment = next(c for c in CATALOG_CASES if c[0] == name)
    catalog = project_copy / "catalog"
    shutil.rmtree(catalog)
    shutil.copytree(CATALOG_DIR, catalog)
    _mutate(catalog, file, old, new)
    result = build(project_copy, project_copy / "site")
    assert result.returncode != 0
    assert "Traceback" not in result.output, result.output[-3000:]
    assert re.search(re.escape(f"catalog/{fragment}").replace(re.escape("{n}"), "[0-9]+"), result.output), result.output[-3000:]


# --- the browser calculator's parser, in CPython ---------------------------------------------

# (calculator, field, typed text, fragment of the field's error)
BROWSER_CASES: list[tuple[str, str, str, str]] = [
    ("start", "pin", "10,5 GiB", "found '10,5 GiB', expected a comma only between groups of three"),
    ("start", "seats", "1,0", "found '1,0', expected a comma only"),
    ("start", "pin", "1e999999999", "expected a memory size below 1 PiB"),
    ("start", "pin", "1e-400", "this is below one byte"),
    ("start", "seats", NINES, "expected a number below 1e+12"),
    ("start", "max_model_len", "0", "found 0, expected at least 1"),
    ("start", "gpu_memory_utilization", "1e-9999999", "expected a fraction above 0 and at most 1"),
    ("start", "gpu_memory_utilization", "0,9", "expected a comma only"),
    ("start", "available_1", "1" * 5000, "5000 digits; expected at most 30"),
    ("start", "pin", "", "found nothing"),
    ("kv", "pin", "75,5 GB", "expected a comma only"),
    ("kv", "tokens", NINES, "expected a number below"),
    ("kv", "max_model_len", "131,07", "expected a comma only"),
    ("fit", "pool", "1e999999999", "expected a memory size below 1 PiB"),
    ("fit", "pool", "24", "found '24', 24 B, expected at least 1 MiB, such as '24 GiB'"),
    ("fit", "pool", "2000000", "found 2,000,000 B, fewer bytes than the 2,450,000 tokens read at max_model_len 500,000"),
    ("fit", "tokens_1", NINES, "expected a number below"),
    ("fit", "length_1", "50,00", "expected a comma only"),
    ("plan", "kv_1", "10,5 GiB", "expected a comma only"),
    ("plan", "fractions", "1e-99999999", "expected a fraction above 0"),
    ("plan", "available", "1e999999999", "expected a memory size below 1 PiB"),
    ("prefetch", "checkpoint", "75,5 GB", "found '75,5 GB', expected a comma only"),
    ("prefetch", "available", "1e-400", "this is below one byte"),
    ("prefetch", "checkpoint", "75", "found '75', 75 B, expected at least 1 MiB, such as '75 GiB' (a number without a unit is bytes)"),
    ("prefetch", "available", "64", "found '64', 64 B, expected at least 1 MiB, such as '64 GiB' (a number without a unit is bytes)"),
    ("prefetch", "checkpoint", "0." + "0" * 5000 + "1 GB", "digits; expected at most 30"),
    # every memory size is read the same way: above zero and below 1 MiB is a size typed without its unit
    ("start", "available_1", "119", "found '119', 119 B, expected at least 1 MiB, such as '119 GiB' (a number without a unit is bytes)"),
    ("start", "pin", "10", "found '10', 10 B, expected at least 1 MiB, such as '10 GiB'"),
    ("kv", "pin", "16", "found '16', 16 B, expected at least 1 MiB, such as '16 GiB'"),
    ("plan", "available", "119", "found '119', 119 B, expected at least 1 MiB, such as '119 GiB'"),
    ("plan", "kv_1", "20", "found '20', 20 B, expected at least 1 MiB, such as '20 GiB'"),
    ("plan", "headroom_1", "4", "found '4', 4 B, expected at least 1 MiB, such as '4 GiB'"),
    # the third row has no model: a size typed there was meant for one, never dropped silently
    ("plan", "kv_3", "abc", "Model 3: KV pool: found 'abc' beside no model, expected a model chosen in Model 3, or the field 0 GiB or empty"),
    ("plan", "headroom_3", "4 GiB", "Model 3: headroom: found '4 GiB' beside no model, expected a model chosen in Model 3"),
    ("yourstart", "total", "128", "found '128', 128 B, expected at least 1 MiB, such as '128 GiB'"),
    ("yourstart", "weights", "16.5", "found '16.5', 17 B, expected at least 1 MiB, such as '16.5 GiB'"),
    ("before", "in_use", "1.5", "found '1.5', 2 B, expected at least 1 MiB, such as '1.5 GiB'"),
    ("before", "engine_version", "0.11.x", "vLLM version: found '0.11.x', expected a vLLM version such as 0.10.1 or 0.26.0"),
    ("before", "engine_version", "0.5.4", "vLLM version: found '0.5.4', expected vLLM 0.6.0 or later, the oldest release whose rules are read here"),
    # Your start's bytes per token, read as every other number (Fraction() once expanded 1e-99999999 for 15 s)
    ("yourstart", "bytes_per_token", "1e999999", "found '1e999999', expected bytes per token, such as 55296 or 1715.2, below 1e30"),
    ("yourstart", "bytes_per_token", "1e-99999999", "found '1e-99999999', expected bytes per token, such as 55296 or 1715.2, at least 1e-30"),
    ("yourstart", "bytes_per_token", "1e999999", "found '1e999999', expected bytes per token, such as 55296 or 1715.2, below 1e30"),
    ("yourstart", "bytes_per_token", "5e-324", "found '5e-324', expected bytes per token"),
    ("yourstart", "bytes_per_token", "10,5", "found '10,5', expected a comma only between groups of three digits"),
    ("yourstart", "bytes_per_token", "55,0,1,1", "found '55,0,1,1', expected a comma only between groups of three digits"),
    ("yourstart", "bytes_per_token", "١٠", "found '١٠', expected a number"),
    ("yourstart", "bytes_per_token", "１０", "found '１０', expected a number"),
    ("yourstart", "total", "0", "Box or card total: found '0', expected a memory size above zero"),
    ("yourstart", "total", "0 GiB", "found '0 GiB', expected a memory size above zero"),
    # pasted readings: one pass over a long line, figures bounded, impossible readings named by line
    ("yourstart", "before", "MemTotal: 1" + " " * 20000 + "x", "found neither /proc/meminfo lines nor free's header"),
    ("yourstart", "before", "MemTotal: 10 kB\nMemFree: 1 kB\nMemAvailable: 11 kB", "line 3: found MemAvailable 11,264 B above MemTotal 10,240 B (line 1)"),
    ("yourstart", "serving", "MemTotal: 10 kB\nMemFree: 1 kB\nMemAvailable: " + "9" * 400 + " kB", "line 3: MemAvailable: found a figure of 400 digits"),
    (
        "yourstart",
        "before",
        _FREE_HEAD.decode() + "Mem:  " + "1" * 400 + "Gi 1Gi 1Gi 1Gi 1Gi 1Gi",
        "column total: found '11111111111111111111...111111111111' (400 characters), 400 digits",
    ),
    ("yourstart", "before", "$ free -b\n" + _FREE_HEAD.decode() + "Mem: 1² 1 1 1 1 1", "line 3: found '1²' in column total, expected a whole number"),
    ("yourstart", "before", "$ free -b\n" + _FREE_HEAD.decode() + "Mem: " + "1" * 5000 + " 1 1 1 1 1", "found a figure of 5000 digits in column total"),
    # a paste the page would hold for seconds is refused at once, at the size the field states
    ("yourstart", "log", "\n" * 1_000_000, "Startup log: found 1,000,000 characters in 1,000,001 lines, expected at most 1 MiB and 20,000 lines"),
    ("yourstart", "log", "\r" * 30_000, "found 30,000 characters in 30,001 lines, expected at most 1 MiB and 20,000 lines"),
    ("yourstart", "log", "x" * (2**20 + 1), "found 1,048,577 characters in 1 lines, expected at most 1 MiB"),
    (
        "yourstart",
        "before",
        "\n" * 1_000_000,
        "Before the start: found 1,000,000 characters in 1,000,001 lines, expected at most 1 MiB and 20,000 lines: paste one reading",
    ),
    ("yourstart", "log", '{"message": ' + _DEEP.decode() + "}", "found none of the lines a vLLM or SGLang start prints in 1 lines"),
    ("before", "config", " " * (8 * 2**20 + 1), "config.json: found 8,388,609 characters, expected at most 8 MiB of JSON"),
    ("before", "index", "{" + " " * (8 * 2**20), "found 8,388,609 characters, expected at most 8 MiB of JSON"),
    ("before", "config", _DEEP.decode(), "config.json: (the file): found arrays or objects nested 10000 deep, expected at most 64 levels"),
    ("before", "config", '{"num_hidden_layers": ' + "1" * 5000 + "}", "found a whole number of 5000 digits, expected at most 40 digits"),
]


@pytest.mark.parametrize(("calculator", "name", "text", "fragment"), BROWSER_CASES, ids=[f"{c}-{n}-{t[:20]}" for c, n, t, _ in BROWSER_CASES])
def test_browser_parser_refuses(calculator: str, name: str, text: str, fragment: str, catalog, monkeypatch) -> None:
    from calc.logs.reader import Reader
    from calc.present.calculators import yourstart

    raw = {**calc_html.defaults_of(catalog, calculator).values, name: text}
    fed = []
    real_feed = Reader.feed_one
    monkeypatch.setattr(Reader, "feed_one", lambda self, no, line: fed.append(no) or real_feed(self, no, line))
    tracemalloc.start()
    try:
        out = calc_html.run(catalog, calculator, raw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # at once, the page must never freeze: a paste above the field's limit is refused before a line
    # of it is read, and no figure is expanded (1e-9999999 made exact sets aside 18 MB)
    assert len(fed) <= yourstart.PASTE_LINES, (name, len(fed))
    assert len(fed) == 0 or len(text) <= yourstart.PASTE_CHARACTERS, (name, len(fed))
    assert peak < 3 * len(text.encode()) + 8 * 2**20, (name, peak)
    assert not out.valid, out.sections
    assert fragment in out.errors[name], out.errors
    assert len(out.errors[name]) < 300


def test_browser_request_that_is_not_json_is_named(catalog) -> None:
    import json

    for text in ("", "[]", '{"calculator": "<img src=x>"}', "{" * 100000, '{"inputs": {"pin": "' + NINES + '"}}'):
        reply = json.loads(calc_html.run_json(catalog, text))
        assert reply["valid"] is False


def test_the_browser_catalog_refuses_a_duplicate_key() -> None:
    with pytest.raises(CatalogError, match=r"^catalog\.json: boxes: found the key 'boxes' twice, expected each key once in an object$"):
        load_json('{"boxes": {"boxes": []}, "boxes": {}}')


def test_catalog_error_never_quotes_a_value_whole() -> None:
    error = CatalogError("boxes.yaml", "boxes", ["x" * 100] * 1000, "a list of mappings")
    assert len(str(error)) < 200


# --- catalog text on the pages --------------------------------------------------------------

HOSTILE_NAME = "<img src=x onerror=alert(1)> | {{ 7 * 7 }} *bold* `tick` [link](http://x) #1"


def test_catalog_text_is_shown_as_text_never_as_markup(project_copy: Path) -> None:
    """A model's name, a source and an event holding HTML, a table's |, a template and markdown
    show as typed on every page, in the navigation and in the tables, and break no table."""
    from tests.sitebuild import build

    catalog = project_copy / "catalog"
    shutil.rmtree(catalog)
    shutil.copytree(CATALOG_DIR, catalog)
    quoted = HOSTILE_NAME.replace('"', '\\"')
    _mutate(catalog, "models.yaml", "name: DeepSeek-V4-Flash-0731 NVFP4", f'name: "{quoted}"')
    _mutate(catalog, "starts.yaml", "name: DeepSeek-V4-Flash on two DGX Sparks", f'name: "{quoted}"')
    _mutate(catalog, "boxes.yaml", "source: total reported by the box and by vLLM", f'source: "{quoted}"')
    _mutate(catalog, "traces.yaml", "event: Starting to load model", f'event: "{quoted}"')
    _mutate(catalog, "policy.yaml", "source: the memory guard on each box", f'source: "{quoted}"')
    result = build(project_copy, project_copy / "site")
    assert result.returncode == 0, result.output[-3000:]
    pages = result.all_html()
    for path, page in pages.items():
        assert "<img src=x" not in page, path
        assert "<strong>bold</strong>" not in page and "<em>bold</em>" not in page, path
        assert 'href="http://x"' not in page, path
    for path in ("catalog/models/deepseek-v4-flash", "catalog/boxes/dgx-spark", "start-up-memory", "memory-budget", "catalog"):
        shown = result.text(path)
        assert HOSTILE_NAME in shown, path
        assert "| 49 |" not in shown and " 49 *bold*" not in shown, path
    # the navigation holds the name as text
    index = result.page("catalog")
    assert "&lt;img src=x onerror=alert(1)&gt;" in index or "&#60;img src=x onerror=alert(1)&#62;" in index
    # the catalog index table keeps three cells a row with a | in a name
    for row in re.findall(r"<tr>(.*?)</tr>", index, re.S):
        assert row.count("<td") in (0, 3), row


# --- figures no engine prints: reported with their line, never used ------------------------------

IMPOSSIBLE_LOG = "\n".join(
    [
        "INFO 08-18 14:15:00 [config.py:1] Initializing a V1 LLM engine (v0.10.1) with config: model='Qwen/Qwen3-8B', "
        "max_seq_len={maxlen}, tensor_parallel_size={tp}, gpu_memory_utilization={util}",
        "INFO 08-18 14:15:01 [gpu_model_runner.py:1] Model loading took {load} GiB and 2.3 seconds",
        "INFO 08-18 14:15:02 [gpu_worker.py:475] Available KV cache memory: {pool} GiB",
        "INFO 08-18 14:15:02 [kv_cache_utils.py:1733] GPU KV cache size: {tokens} tokens",
        "{extra}",
    ]
)
SANE = {"maxlen": "8192", "tp": "1", "util": "0.9", "load": "14.96", "pool": "5.35", "tokens": "215,401", "extra": ""}
THIRTY_TWO = "12345678901234567890123456789012"

# (what is changed, the JSON key left null, the line and the words of its note)
IMPOSSIBLE_CASES: list[tuple[dict[str, str], str, str]] = [
    ({"util": "7.5"}, "gpu_memory_utilization", "line 1: gpu_memory_utilization 7.5: expected a fraction above 0 and at most 1"),
    ({"util": "-0.5"}, "gpu_memory_utilization", "line 1: gpu_memory_utilization -0.5: expected a fraction above 0 and at most 1"),
    ({"util": "1e999999999"}, "gpu_memory_utilization", "line 1: gpu_memory_utilization '1e999999999': its figure could not be read"),  # once never returned
    ({"util": "١"}, "gpu_memory_utilization", "line 1: gpu_memory_utilization '١': its figure could not be read"),  # int() and Decimal() take any digits
    ({"maxlen": "١٠"}, "max_model_len", "line 1: max_seq_len '١٠': its figure could not be read"),
    (
        {"extra": "ValueError: Free memory on device (1.0/2.0 GiB) on startup. Desired GPU memory utilization is (0.9.9, 1.0 GiB)."},
        "requested_memory_bytes",
        "line 5: 'Free memory on device (1.0/2.0 GiB) on startup. Desired GPU memory utilization i': its figure could not be read",
    ),  # once a decimal.InvalidOperation traceback
    ({"load": "-14.96"}, "model_loading_bytes", "line 2: model loading -14.96 GiB: expected a size from 0 B to 1 PiB"),
    ({"pool": THIRTY_TWO}, "available_kv_bytes", f"line 3: KV pool {THIRTY_TWO} GiB: expected a size within 1 PiB"),
    ({"pool": "1e400"}, "available_kv_bytes", "line 3: 'Available KV cache memory: 1e400 GiB': its figure could not be read"),  # not "V1 before 0.9.1"
    ({"tokens": THIRTY_TWO}, "kv_tokens", f"line 4: KV tokens {THIRTY_TWO}: expected a count from 0 to 1e+12"),
    ({"maxlen": "-5"}, "max_model_len", "line 1: max_seq_len '-5': its figure could not be read"),
    ({"maxlen": "0"}, "max_model_len", "line 1: max_model_len 0: expected a whole number from 1 to 1e+12"),  # once a ZeroDivisionError
    ({"tp": "0"}, "tensor_parallel_size", "line 1: tensor_parallel_size 0: expected a whole number from 1 to 1e+12"),
    (
        {
            "extra": "ERROR 08-18 14:15:03 [gpu_worker.py:1] ValueError: Free memory on device (90.0/80.0 GiB) on startup is less than "
            "desired GPU memory utilization (0.9, 72.0 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes."
        },
        "total_memory_bytes",
        "line 5: free memory 90.0 GiB above the total 80.0 GiB",
    ),  # fmt: skip
]


@pytest.mark.parametrize(("change", "key", "note"), IMPOSSIBLE_CASES, ids=[next(iter(c.items()))[1][:24] for c, _, _ in IMPOSSIBLE_CASES])
def test_a_figure_no_engine_prints_is_named_and_never_used(change: dict[str, str], key: str, note: str, tmp_path: Path, catalog, capsys) -> None:
    log = tmp_path / "start.log"
    log.write_text(IMPOSSIBLE_LOG.format(**{**SANE, **change}) + "\n", encoding="utf-8")
    status, out, err = _run(["ingest", str(log)], capsys)
    assert status == 0 and "Traceback" not in err, err
    assert f"unreadable, {note}" in out and "before 0.9.1" not in out
    status, out, err = _run(["ingest", str(log), "--json"], capsys)
    data = json.loads(out)
    assert data.get(key) is None and any(u.startswith(note) for u in data["unreadable"]), data
    if key not in ("available_kv_bytes", "kv_tokens"):  # a catalog entry needs the pool
        status, out, err = _run(["ingest", str(log), "--yaml", "--box", "dgx-spark", "--model", "qwen3.8-27b"], capsys)
        if "Free memory on device (1.0/2.0 GiB)" in change.get("extra", ""):  # a 2 GiB card's total: no DGX Spark start
            assert status == 2 and "the log prints a total of 2.00 GiB" in err and "this log is not from this box" in err, err
        else:
            assert status == 0, err
            assert out.startswith(f"  # unreadable, {note}"), out
    raw = {**calc_html.defaults_of(catalog, "yourstart").values, "preset": "", "weights": "", "pin": "", "box": "dgx-spark", "log": log.read_text()}
    page = calc_html.run(catalog, "yourstart", raw)
    assert f"unreadable, {note}" in html.unescape("".join(page.sections.values())) or not page.valid, page.errors
    assert "887.72" not in "".join(page.figures.values())


def test_a_rank_prefix_of_thousands_of_digits_is_no_rank(tmp_path: Path, capsys) -> None:
    """'(Worker_TP' and 5,000 digits: int() refused it past 4,300 digits, a ValueError traceback."""
    log = tmp_path / "start.log"
    line = "(Worker_TP" + "1" * 5000 + " pid=1) INFO 08-18 14:15:03 [x.py:1] nothing"
    log.write_text(IMPOSSIBLE_LOG.format(**{**SANE, "extra": line}) + "\n", encoding="utf-8")
    status, out, err = _run(["ingest", str(log), "--json"], capsys)
    assert status == 0, err
    assert json.loads(out)["tensor_parallel_size"] == 1


def test_an_index_whose_size_no_checkpoint_has_is_refused(tmp_path: Path, capsys) -> None:
    """total_size 1 once gave weights of 0.00 GiB a rank."""
    index = tmp_path / "model.safetensors.index.json"
    index.write_text('{"metadata": {"total_size": 1}, "weight_map": {}}')
    config = str(Path(__file__).resolve().parent.parent / "models" / "configs" / "qwen3-14b" / "config.json")
    _assert_one_error(
        *_run(["model", config, "--max-model-len", "4096", "--index", str(index)], capsys), "index total_size: found 1 B, expected a checkpoint size within 8x"
    )


# --- large inputs ----------------------------------------------------------------------------------


def test_a_million_bare_carriage_returns_are_read_at_once(tmp_path: Path, monkeypatch, capsys) -> None:
    """1 MB of bare \\r is a million lines; each once cost a full pass of the line reader (5-16 s)."""
    log = tmp_path / "cr.log"
    from calc.logs import reader

    log.write_bytes(b"\r" * 1_000_000)
    peeled = []
    real_peel = reader.peel
    monkeypatch.setattr(reader, "peel", lambda no, raw: peeled.append(no) or real_peel(no, raw))
    _assert_one_error(*_run(["ingest", str(log)], capsys), "cr.log: found no text, expected a vLLM or SGLang startup log")
    assert peeled == []  # a blank line is passed in one step: none is taken apart as a message


def test_a_large_read_shows_its_progress_on_stderr_only(tmp_path: Path, monkeypatch, capsys) -> None:
    log = tmp_path / "big.log"
    sample = (Path(__file__).resolve().parent.parent / "logs" / "public" / "07-v0102-qwen3-14b-enginecore.log").read_text(encoding="utf-8")
    log.write_text(sample + "INFO 01-01 00:00:00 [x.py:1] nothing to read here\n" * 2000, encoding="utf-8")
    status, quiet, err = _run(["ingest", str(log), "--json"], capsys)
    assert status == 0 and err == ""  # a small read, not on a terminal: nothing on stderr
    monkeypatch.setattr(ingest_command, "LARGE_READ", 1000)
    monkeypatch.setattr(ingest_command, "PROGRESS_EVERY", 20_000)
    status, out, err = _run(["ingest", str(log), "--json"], capsys)
    assert status == 0 and out == quiet  # the answer unchanged
    lines = err.splitlines()
    assert len(lines) == log.stat().st_size // 20_000, err
    assert re.fullmatch(rf"calc: reading {re.escape(str(log))}: [0-9.]+ MB of [0-9.]+ MB, [0-9,]+ lines", lines[0]), lines[0]


# --- the page in Chromium --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def calculator_page(browser, base_url):
    from tests.serving import CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.skip(f"needs Debian's chromium at {CHROMIUM}")
    page = browser.new_page()
    yield page
    page.close()


def _at(page, base_url: str, calculator: str) -> None:
    page.goto(f"{base_url}calculator/{calc_html.PAGES[calculator]}/")
    page.wait_for_function("window.calcReady === true", timeout=90_000)


def test_the_page_answers_deep_json_and_never_freezes(calculator_page, base_url) -> None:
    """A config or a log line nested 10,000 deep killed Pyodide ("Maximum call stack size
    exceeded") and left the last figures shown as valid; 1e999999 in bytes per token froze the page."""
    page = calculator_page
    _at(page, base_url, "before")
    page.fill("#before-config", _DEEP.decode())
    page.wait_for_function("document.getElementById('before-result').dataset.state === 'invalid'")
    assert "nested 10000 deep, expected at most 64 levels" in page.text_content("#before-config-err")
    assert page.get_attribute("#calc-status", "data-state") == "ready"
    _at(page, base_url, "yourstart")
    page.select_option("#yourstart-preset", "")
    page.fill("#yourstart-log", '{"message": ' + _DEEP.decode() + "}")
    page.wait_for_function("document.getElementById('yourstart-result').dataset.state === 'invalid'")
    page.fill("#yourstart-bytes-per-token", "1e999999")  # refused before any expansion: see test_browser_parser_refuses
    page.wait_for_function("document.getElementById('yourstart-bytes-per-token-err').textContent.includes('below 1e30')")
    assert page.get_attribute("#calc-status", "data-state") == "ready"


def test_a_fatal_error_withdraws_every_figure_and_says_so(browser, base_url) -> None:
    """Whatever kills the interpreter (here a json.loads nested 10,000 deep run on the page's own
    Pyodide, as the calculators once did), no figure stays on the page as valid."""
    from tests.serving import CHROMIUM

    if not Path(CHROMIUM).exists():
        pytest.skip(f"needs Debian's chromium at {CHROMIUM}")
    page = browser.new_page()
    _at(page, base_url, "yourstart")
    assert page.get_attribute("#yourstart-result", "data-state") == "valid"
    said = page.evaluate(
        """async () => {
          const early = await import(new URL("../early-pyodide.mjs", location.href).href);
          const pyodide = await early.start();
          try { pyodide.runPython("import json\\njson.loads('[' * 100000 + ']' * 100000)"); } catch (error) { return String(error); }
          return "no error";
        }"""
    )
    assert "Maximum call stack size exceeded" in said, said
    page.fill("#yourstart-pin", "30 GiB")  # an edit after it changes nothing
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")  # nor in the frames after it
    for calculator in [c for c in calc_html.CALCULATORS if page.locator(f"#{c}-calc").count()]:  # the page's calculator
        assert page.get_attribute(f"#{calculator}-result", "data-state") == "failed", calculator
        assert page.inner_html(f"#{calculator}-result") == "", calculator
        assert page.text_content(f"#{calculator}-verdict").startswith("No result: Python stopped"), calculator
        assert page.locator(f"#{calculator}-calc [data-fig]").count() == 0
    assert page.get_attribute("#calc-status", "data-state") == "failed"
    assert "reload the page" in page.text_content("#calc-status")
    page.close()


# --- every pattern of calc, on the runs that make a pattern backtrack -------------------------------


def _patterns() -> list[tuple[str, re.Pattern[str], tuple[str, ...]]]:
    """Each compiled pattern of calc's modules (and of the log reader's rules), with the methods
    calc's modules call it with (a pattern run with match is never run from every position; a
    pattern may be defined in one module and called in another)."""
    import importlib
    import pkgutil

    import calc

    names = [m.name for m in pkgutil.walk_packages(calc.__path__, "calc.") if not m.ispkg and m.name != "calc.__main__"]
    source = "\n".join(Path(importlib.import_module(name).__file__ or "").read_text(encoding="utf-8") for name in names)
    found = []
    for name in names:
        module = importlib.import_module(name)
        for key, value in vars(module).items():
            patterns = [(key, value)] if isinstance(value, re.Pattern) else []
            if isinstance(value, (list, tuple)):
                patterns += [(f"{key}[{i}]", x.pattern) for i, x in enumerate(value) if isinstance(getattr(x, "pattern", None), re.Pattern)]
            for label, pattern in patterns:
                used = set(re.findall(rf"(?<![\w.]){re.escape(key)}\.(match|fullmatch|search|finditer|findall|split|sub)\(", source))
                methods = tuple(sorted({"search" if u in ("finditer", "findall", "split", "sub") else u for u in used})) or ("search",)
                found.append((f"{name}.{label}", pattern, methods))
    return found


PATTERNS = _patterns()


@pytest.mark.parametrize(("name", "pattern", "methods"), PATTERNS, ids=[p[0] for p in PATTERNS])
def test_no_pattern_backtracks_on_a_long_run(name: str, pattern: re.Pattern[str], methods: tuple[str, ...]) -> None:
    """A pattern whose optional parts trade characters with each other (`\\s*s?\\s+x`, `\\s*(kB)?\\s*$`)
    takes a time that grows with the square or cube of a run's length: a trace line of 300 spaces
    took minutes, a pasted meminfo line of 20,000 spaces 9 s; a repeat of a repeat, or of
    alternatives that match alike, grows exponentially. Each pattern's parse tree is read for
    those shapes (tests/regex_shape.py), the end of the text counted where its code fullmatches."""
    assert regex_shape.problems(pattern, whole="fullmatch" in methods) == [], name


KNOWN_BAD = [
    (r"\s*s?\s+x", "unbounded repeats at 0 and 2 can trade characters"),  # the trace line of 300 spaces
    (r"MemAvailable:\s*(\S+)\s*(\S*)\s*$", "unbounded repeats at 15 and 17 can trade characters"),  # the meminfo line
    (r"(a+)+b", "an unbounded repeat inside an unbounded repeat"),
    (r"(?:\d+,?)+x", "an unbounded repeat inside an unbounded repeat"),
    (r"(?:[a-z]+|[a-z0-9]+)+!", "a repeat of alternatives 0 and 1 that can match the same text"),
    (r"(a|aa)*b", "an optional part that can take what the body begins with"),
]


@pytest.mark.parametrize(("text", "said"), KNOWN_BAD, ids=[t for t, _ in KNOWN_BAD])
def test_the_check_refuses_a_pattern_known_to_backtrack(text: str, said: str) -> None:
    found = regex_shape.problems(re.compile(text))
    assert found and said in found[0]


@pytest.mark.parametrize(
    "text",
    [r"\s*+s?\s+x", r"MemAvailable:\s*(\S+)\s*+(\S*)\s*$", r"(?>a+)+b", r"(?:,\s*\w+)*x", r"(?:ab|cd)*e", r"\s*(kB)?\s*", r"(?:\w+=\w+|[A-Z]+\d+)+;"],
)
def test_the_check_passes_the_same_shapes_made_safe(text: str) -> None:
    # possessive or atomic, a separator each turn, alternatives that differ, nothing after to fail
    assert regex_shape.problems(re.compile(text)) == []


def test_meminfo_reads_memavailable_after_any_run_of_spaces(tmp_path: Path) -> None:
    # the fullmatch that once traded spaces between two optional parts (a square law on the run)
    proc = tmp_path / "meminfo"
    proc.write_text("MemTotal: 100 kB\nMemAvailable:" + " " * 20_000 + "64 kB\n")
    assert common.meminfo_available(str(proc)) == 64 * 1024
    proc.write_text("MemTotal: 100 kB\nMemAvailable: 1" + " " * 20_000 + "a b\n")
    with pytest.raises(InputError, match=r"line 2: found 'MemAvailable: 1 {60}.*expected 'MemAvailable: <number> kB'"):
        common.meminfo_available(str(proc))
