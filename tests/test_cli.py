"""python -m calc, run as a user runs it: every subcommand, human and --json output, and bad
arguments (one line on stderr starting "calc: error:", exit status 2, no traceback)."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import ROOT, edit, run_calc

from calc.answers import report
from calc.catalog.spec import FILES
from calc.engine import derive, fraction, kv
from calc.present import cli
from calc.units import GiB, MiB, fmt, parse_size

DSV4 = "dsv4-flash-pair"


def calc(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return run_calc(*args, stdin=stdin)


def ok(*args: str, stdin: str | None = None) -> str:
    done = calc(*args, stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return done.stdout


def as_json(*args: str) -> dict:
    return json.loads(ok(*args, "--json"))


# --- gate -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def expected(catalog) -> dict:
    """The serving start's figures computed in-process from the catalog."""
    inputs = report.defaults(catalog, DSV4)
    row = derive.gate_row(catalog, DSV4)
    needs = row.weights.bytes + inputs.kv_pin + row.overhead.bytes + row.headroom.bytes
    free = inputs.available[0]
    return {
        "row": row,
        "needs": needs,
        "free": free,
        "largest": free - (needs - inputs.kv_pin),
        "largest_drafter": free - (needs - inputs.kv_pin) - row.drafter.bytes,
        # the default leaves the 8 GiB start headroom free at vLLM's check: 0.87 x 121.69 = 105.87 GiB
        # <= 114.50 - 8 = 106.50 GiB, while 0.88 asks 107.09 GiB; the edge, 0.94, would leave 0.11 GiB
        "utilization": Fraction(87, 100),
    }


def test_gate_human(expected) -> None:
    out = ok("gate")
    assert "Start gate: DeepSeek-V4-Flash-0731 NVFP4, TP=2 on 2x DGX Spark (GB10)" in out
    assert "110.00" in out  # the memory-budget document's 110.0 GiB at 10e9
    needs_line = next(line for line in out.splitlines() if line.strip().startswith("needs"))
    assert needs_line.split()[-1] == fmt(expected["needs"], "GiB").removesuffix(" GiB") == "110.00"
    for name, value in (("weights", "79.29"), ("KV pin", "9.31"), ("overhead", "13.40"), ("start headroom", "8.00")):
        line = next(line for line in out.splitlines() if line.strip().startswith(name))
        assert line.split()[len(name.split())] == value, line
    assert f"available {fmt(expected['free'], 'GiB')}, passes by {fmt(expected['free'] - expected['needs'], 'GiB')}" in out
    assert "Start: yes" in out
    assert f"({fmt(expected['largest'], 'e9', 2, down=True)} from exact bytes)" in out.split("  with the drafter:")[0]
    assert f"({fmt(expected['largest_drafter'], 'e9', 2, down=True)} from exact bytes)" in out.split("  with the drafter:")[1]
    # the largest pin worked from its printed operands: MemAvailable rounded down, each cost rounded up
    # (weights 79.29 GiB in the table, 79.30 here); 13.80 GiB is 14,817,637,171 B, 14.81e9 B rounded down
    assert (
        "  without the drafter: 114.50 - 79.30 weights - 13.40 overhead - 8.00 start headroom = 13.80 GiB, so 14.81e9 B (14.83e9 B from exact bytes)"
    ) in out
    assert (
        "  with the drafter: 114.50 - 79.30 weights - 5.06 drafter - 13.40 overhead - 8.00 start headroom = 8.74 GiB, so 9.38e9 B (9.39e9 B from exact bytes)"
        in out
    )
    assert "KV pool: 181,777 tokens (logged)" in out
    assert "1.38x full 131,072-token contexts" in out


@pytest.mark.parametrize("argv", [[], ["--drafter"], ["--available", "117.2GiB"], ["--available", "90GiB"], ["--available", "123456789012", "--seats", "9"]])
def test_gate_largest_pin_is_worked_from_its_printed_operands(argv: list[str]) -> None:
    """A reader with a calculator gets the printed largest pin from the printed terms, and it is never
    above the one from exact bytes."""
    out = ok("gate", *argv)
    lines = [line for line in out.splitlines() if line.startswith(("  without the drafter: ", "  with the drafter: "))]
    assert len(lines) == 2, out
    for line in lines:
        m = re.fullmatch(
            r"  [^:]+: ([0-9.]+) ((?:- [0-9.]+ [a-z -]+? )+)= (-?[0-9.]+) GiB(?:, so ([0-9.]+)e9 B|: no pin passes) \((.+) from exact bytes\)", line
        )
        assert m, line
        terms = [Fraction(t) for t in re.findall(r"- ([0-9.]+) ", m[2])]
        worked = Fraction(m[1]) - sum(terms)
        assert Fraction(m[3]) == worked, line
        exact = m[5]
        if m[4] is None:
            assert worked < 0
            continue
        assert Fraction(m[4]) == Fraction(math.floor(worked * 2**30 / 10**7), 100), line
        assert exact.endswith("e9 B") and Fraction(m[4]) <= Fraction(exact.removesuffix("e9 B")), line


def test_gate_json(catalog, expected) -> None:
    out = as_json("gate")
    assert out["deployment"] == DSV4
    assert out["needs_bytes"] == expected["needs"]
    assert out["passes"] is True
    assert sum(t["bytes"] for t in out["terms"]) == out["needs_bytes"]
    assert [b["available_bytes"] for b in out["boxes"]] == [expected["free"]] * catalog.deployments[DSV4]["boxes"]
    for box in out["boxes"]:
        assert box["needs_bytes"] == expected["needs"]
        assert box["passes"] is True
        assert box["margin_bytes"] == expected["free"] - expected["needs"]
        assert box["largest_pin_bytes"] == expected["largest"]
    assert out["largest_pin_bytes"] == {"without_drafter": expected["largest"], "with_drafter": expected["largest_drafter"]}
    assert out["kv"]["tokens"] == 181777 and out["kv"]["tokens_logged"] is True
    assert out["fraction"]["ceiling"] == pytest.approx(float(fraction.ceiling(catalog.boxes["dgx-spark"]["total_memory"].value, expected["free"], 4)))


def test_gate_20e9_with_drafter_is_refused(expected) -> None:
    out = ok("gate", "--pin", "20e9", "--drafter")
    assert "Start: no, refused" in out
    # the terms as printed: 79.29 + 5.06 + 18.63 + 13.40 + 0 + 0 + 8.00 = 124.38; 124.38 - 114.50 = 9.88
    assert "needs                      124.38" in out and "refused by 9.88 GiB" in out
    assert "What to change, largest movable term first: KV pin 18.63 GiB, drafter 5.06 GiB" in out
    data = as_json("gate", "--pin", "20e9", "--drafter")
    row = expected["row"]
    assert data["needs_bytes"] == row.weights.bytes + row.drafter.bytes + 20 * 10**9 + row.overhead.bytes + row.headroom.bytes
    assert data["passes"] is False
    assert all(b["passes"] is False and b["margin_bytes"] < 0 for b in data["boxes"])


def test_gate_flags(expected) -> None:
    out = ok("gate")
    flags = out.split("Flags:\n", 1)[1].splitlines()
    assert [f.strip() for f in flags] == [
        "--kv-cache-memory-bytes 10000000000",
        f"--gpu-memory-utilization {fmt(expected['utilization'], 'fraction')}",
        "-tp 2",
        "--max-model-len 131072",
        "--max-num-seqs 8",
        "--max-num-batched-tokens 8192",
    ]


def test_gate_flags_follow_the_arguments() -> None:
    args = (
        "gate",
        "--pin",
        "8 GiB",
        "--seats",
        "4",
        "--max-model-len",
        "65,536",
        "--prefill-budget",
        "4096",
        "--gpu-memory-utilization",
        "0.9",
        "--drafter",
        "--speculative-tokens",
        "3",
    )
    flags = as_json(*args)["flags"]
    assert flags[:6] == [
        f"--kv-cache-memory-bytes {8 * GiB}",
        "--gpu-memory-utilization 0.90",
        "-tp 2",
        "--max-model-len 65536",
        "--max-num-seqs 4",
        "--max-num-batched-tokens 4096",
    ]
    # the method is the catalog drafter's (models.yaml: drafter.speculative_config.method), the count the one asked for
    assert flags[6] == '--speculative-config \'{"method": "dspark", "num_speculative_tokens": 3}\''


def test_gate_available_per_box(expected) -> None:
    out = as_json("gate", "--available", "100 GiB,120 GiB")
    assert [b["available_bytes"] for b in out["boxes"]] == [100 * GiB, 120 * GiB]
    assert [b["passes"] for b in out["boxes"]] == [False, True]
    assert out["passes"] is False
    # the first box is the head: the Ray head's processes (catalog/policy.yaml gate.head_box) come off its reading
    assert out["boxes"][0]["head_extra_bytes"] == GiB
    assert out["largest_pin_bytes"]["without_drafter"] == 100 * GiB - GiB - (expected["needs"] - 10**10)


def test_gate_outside_calibration() -> None:
    for args in (("--seats", "32"), ("--prefill-budget", "16384")):
        out = ok("gate", *args)
        assert "outside calibration:" in out and "calibrat" in out.split("outside calibration:")[1]
        data = as_json("gate", *args)
        assert data["needs_bytes"] is None and data["passes"] is None
        assert "calibrat" in data["outside_calibration"]


def test_gate_available_auto() -> None:
    meminfo = Path("/proc/meminfo")
    if not meminfo.exists():
        pytest.skip("no /proc/meminfo here")
    total_kib = next(int(line.split()[1]) for line in meminfo.read_text().splitlines() if line.startswith("MemTotal:"))
    out = as_json("gate", "--available", "auto")
    available = [b["available_bytes"] for b in out["boxes"]]
    assert len(set(available)) == 1 and 0 < available[0] <= total_kib * 1024
    assert available[0] % 1024 == 0  # /proc/meminfo counts kB (KiB)


# --- kv -------------------------------------------------------------------------------------


def test_kv_default_is_the_logged_serving_pin(catalog) -> None:
    out = ok("kv")
    assert "Bytes per token: 55,011 at max_model_len 131,072 (measured, gen 234/235/237, 2026-10-24)" in out
    assert "Pin 10e9 B (9.31 GiB) holds 181,777 tokens (logged)" in out
    assert "Full 131,072-token contexts: 1.38x" in out  # 181,777 / 131,072 = 1.3868, a capacity: rounded down


def test_kv_arithmetic_both_ways(catalog) -> None:
    per_token = report.pool_reading(catalog, DSV4, 0).bytes_per_token
    out = as_json("kv", "--pin", "12e9")
    assert out["tokens"] == kv.tokens_for_pool(12 * 10**9, per_token) == int(12 * 10**9 // per_token)
    assert out["tokens_logged"] is False
    back = as_json("kv", "--tokens", "1048576")
    assert back["pin_bytes"] == kv.pool_for_tokens(1048576, per_token)
    assert back["full_contexts"] == 8.0


def test_kv_given_bytes_per_token() -> None:
    """The KV-pool document's plan: 13,952 B/token at 16e9 is ~1.15 M tokens, all 8 seats at full length."""
    out = ok("kv", "--bytes-per-token", "13952", "--pin", "16e9")
    assert "Bytes per token: 13,952 at max_model_len 131,072 (given)" in out
    assert "holds 1,146,788 tokens" in out  # 16e9 / 13,952 = 1,146,788.99: whole tokens, floored
    data = as_json("kv", "--bytes-per-token", "13,952", "--pin", "16e9", "--seats", "8", "--typical-context", "131072")
    assert data["tokens"] >= data["tokens_needed"] == 8 * 131072


def test_kv_tokens_a_pool_holds_are_whole_and_floored() -> None:
    """3,000,000,002 B at 3 B a token is 1,000,000,000.67 tokens: the pool holds 1,000,000,000,
    printed so and given to machines as an integer; a ratio of a million is grouped like any figure."""
    out = ok("kv", "--bytes-per-token", "3", "--pin", "3000000002 B", "--max-model-len", "1000")
    assert "holds 1,000,000,000 tokens" in out
    assert "Full 1,000-token contexts: 1,000,000.00x" in out
    data = as_json("kv", "--bytes-per-token", "3", "--pin", "3000000002 B", "--max-model-len", "1000")
    assert data["tokens"] == 1_000_000_000 and isinstance(data["tokens"], int)
    gate = as_json("gate", "--pin", "12e9")
    assert isinstance(gate["kv"]["tokens"], int)
    fit = as_json("fit", "--pool", "24GiB", "--reading", "50000:398000", "--reading", "500000:2450000", "--max-model-len", "250000")
    assert all(isinstance(p["tokens"], int) for p in fit["predicted"])


def test_kv_other_deployment_and_below_the_floor() -> None:
    out = ok("kv", "--deployment", "flash-next-pair", "--speculative-tokens", "3", "--pin", "28e9", "--max-model-len", "262144")
    assert "holds 1,752,822 tokens (logged)" in out
    small = ok("kv", "--pin", "5e9")
    assert "below one request at max_model_len and the block vLLM 0.29.0 and later hold back: vLLM does not start" in small


# --- fraction -------------------------------------------------------------------------------


def test_fraction_default_and_ceiling(catalog) -> None:
    box = catalog.boxes["rtx-5090-node"]
    total, free = box["total_memory"].value, box["free_at_start"].value
    out = ok("fraction")
    assert out.splitlines() == [
        f"0.92 x {fmt(total, 'GiB')} = {fmt(math.ceil(total * Fraction('0.92')), 'GiB')} against {fmt(free, 'GiB')} free: starts",
        "Ceiling: 0.9837",
    ]


@pytest.mark.parametrize(("value", "passes"), [("0.98", True), ("0.9837", True), ("0.9838", False), ("0.99", False), ("1.0", False)])
def test_fraction_check(catalog, value: str, passes: bool) -> None:
    data = as_json("fraction", "--fraction", value)
    box = catalog.boxes["rtx-5090-node"]
    assert data["passes"] is passes
    assert data["requested_bytes"] == math.ceil(box["total_memory"].value * Fraction(value))
    assert data["ceiling"] == 0.9837


def test_fraction_other_box_and_auto() -> None:
    data = as_json("fraction", "--box", "dgx-spark", "--free", "114.5 GiB", "--fraction", "0.94")
    assert data["passes"] is True
    assert as_json("fraction", "--box", "dgx-spark", "--free", "auto")["free_bytes"] > 0


# --- guard ----------------------------------------------------------------------------------


def test_guard_catalog_trace(catalog) -> None:
    trace = catalog.traces["kernel-init-report"]
    lowest = min(trace["samples"], key=lambda s: s["available"])
    out = ok("guard", "kernel-init-report")
    assert out.splitlines() == [
        f"Guard (3 polls in a row under 8.00 GiB) over {len(trace['samples'])} polls: kills nothing over the whole trace",
        f"Lowest MemAvailable: {fmt(lowest['available'], 'GiB')} at {lowest['t']:g} s; longest run under the floor: 0",
    ]
    data = as_json("guard", "kernel-init-report", "--floor", "70 GiB")
    assert data["killed"] is True and data["at"] == 40


def test_guard_trace_file(tmp_path: Path) -> None:
    log = tmp_path / "start.log"
    log.write_text("# gen 234 warmup\n0 20 GiB\n2 7.9 GiB\n4 7.8 GiB\nT+6s available=7.9GiB\n8 30 GiB\n")
    out = ok("guard", str(log))
    assert "over 5 polls: kills the rank at 6 s" in out
    assert "Lowest MemAvailable: 7.80 GiB at 4 s; longest run under the floor: 3" in out
    data = as_json("guard", str(log), "--serving-at", "5")
    assert data["killed"] is False and data["longest_run"] == 2
    assert data["floor_bytes"] == 8 * GiB and data["polls_in_a_row"] == 3 and data["samples"] == 5
    assert as_json("guard", str(log), "--polls", "2")["at"] == 4


def test_guard_reads_stdin() -> None:
    out = ok("guard", "-", stdin="0 7 GiB\n2 7 GiB\n4 7 GiB\n")
    assert "kills the rank at 4 s" in out


# --- plan -----------------------------------------------------------------------------------


def test_plan_several_models(catalog) -> None:
    total = catalog.boxes["dgx-spark"]["total_memory"].value
    weights = [catalog.models[m]["weights"].value for m in ("example-27b-4bit", "example-70b-4bit")]
    out = ok("plan", "--model", "example-27b-4bit", "--model", "example-70b-4bit")
    assert f"left: {fmt(total - sum(weights), 'GiB')}" in out
    assert "left: 73.26 GiB" in out
    data = as_json("plan", "--model", "example-27b-4bit:20GiB:2GiB", "--model", "example-70b-4bit")
    assert data["used_bytes"] == sum(weights) + 22 * GiB and data["fits"] is True
    assert data["left_bytes"] == total - data["used_bytes"]


def test_plan_fractions(catalog) -> None:
    box = catalog.boxes["dgx-spark"]
    together = as_json("plan", "--fractions", "0.5,0.35")["engines"]
    assert [e["passes"] for e in together] == [True, True]
    assert together[0]["free_before"] == box["idle_available"].value
    alone = ok("plan", "--fractions", "0.85,0.85").splitlines()
    assert alone[1].endswith(": starts")
    assert alone[2].endswith("refused: free memory is less than the fraction asks")
    assert as_json("plan", "--model", "example-70b-fp8", "--model", "example-27b-4bit")["fits"] is True
    two = ok("plan", "--model", "example-70b-fp8", "--model", "example-70b-fp8")
    assert "(over the box: drop a model or add a node)" in two


# --- prefetch -------------------------------------------------------------------------------


def test_prefetch(catalog) -> None:
    trace = catalog.traces["kernel-init-report"]
    after_init = {s["t"]: s["available"] for s in trace["samples"]}[trace["kernel_init"]["to_t"]]
    out = ok("prefetch", "--checkpoint", "75 GB", "--available", f"{after_init // MiB} MiB")
    assert "Checkpoint 75.0 GB against 90 % of 66.90 GiB available: above the size rule" in out
    # 0.9 x 68,501 MiB = 0.9 x 71,828,504,576 B = 64,645,654,118 B: 64.6 GB, rounded down
    assert "Largest checkpoint within the size rule: 64.6 GB (rounded down)" in out
    assert "on nfs: not prefetched: the checkpoint is more than its share" in out
    assert "on ext4: not prefetched: ext4 filesystem is not a network filesystem" in out
    idle = as_json("prefetch", "--checkpoint", "75 GB", "--available", "120919 MiB")
    assert idle["fits"] is True and idle["enabled"] == {"nfs": True, "ext4": False}  # local disks never auto-prefetch
    assert idle["largest_prefetched_bytes"] == 120919 * MiB * 9 // 10
    lustre = as_json("prefetch", "--checkpoint", "75 GB", "--available", "120919 MiB", "--filesystem", "lustre", "--cgroup-available", "64 GiB")
    assert lustre["loader_available_bytes"] == 64 * GiB and lustre["enabled"] == {"lustre": False}  # the cgroup cap: 75e9 > 0.9 x 64 GiB
    assert "enabled" in as_json("prefetch", "--checkpoint", "1 GB", "--available", "auto")


# --- check, schema, --catalog ---------------------------------------------------------------


def test_check(catalog) -> None:
    assert ok("check").strip() == (
        f"catalog: {len(catalog.boxes)} boxes, {len(catalog.models)} models, {len(catalog.deployments)} deployments, "
        f"{len(catalog.incidents)} incidents, {len(catalog.traces)} traces: valid"
    )


def test_schema_check() -> None:
    assert ok("schema", "--check").strip() == f"catalog/schema: {len(FILES)} files up to date"


def test_schema_check_names_a_file_that_no_longer_matches(tmp_path, monkeypatch, capsys) -> None:
    from calc.present import cli
    from calc.present.commands import catalog

    monkeypatch.setattr(catalog, "SCHEMA_DIR", tmp_path)
    assert cli.main(["schema"]) == 0
    assert cli.main(["schema", "--check"]) == 0
    first = sorted(tmp_path.glob("*.json"))[0]
    data = json.loads(first.read_text())
    first.write_text(json.dumps({**data, "required": [*data.get("required", []), "colour"]}))
    (tmp_path / sorted(p.name for p in tmp_path.glob("*.json"))[1]).write_text("{ not json")
    capsys.readouterr()
    assert cli.main(["schema", "--check"]) == 2
    error = capsys.readouterr().err
    assert "out of date" in error and first.name in error and "Traceback" not in error


def test_catalog_option_reads_another_catalog(catalog_copy: Path) -> None:
    edit(
        catalog_copy,
        "policy.yaml",
        "value: 8 GiB\n    kind: setting\n    source: the load balancer",
        "value: 9 GiB\n    kind: setting\n    source: the load balancer",
    )
    base = as_json("gate")["needs_bytes"]
    assert as_json("--catalog", str(catalog_copy), "gate")["needs_bytes"] == base + GiB


# --- bad arguments --------------------------------------------------------------------------


def _broken_catalog(tmp_path: Path) -> Path:
    import shutil

    target = tmp_path / "broken"
    shutil.copytree(ROOT / "catalog", target)
    edit(target, "starts.yaml", "value: 79.29 GiB", "value: 79.29 GiG")
    return target


BAD = [
    ("unknown-flag", ["gate", "--bogus"], "unrecognized arguments: --bogus"),
    ("unknown-command", ["bogus"], "invalid choice: 'bogus'"),
    ("no-command", [], "the following arguments are required"),
    ("pin-abc", ["gate", "--pin", "abc"], "--pin: found 'abc', expected a size"),
    ("pin-negative", ["gate", "--pin=-5GB"], "--pin: found '-5GB', expected a size of zero or more bytes"),
    ("pin-negative-as-flag", ["gate", "--pin", "-5GB"], "--pin: found '-5GB', expected a size of zero or more bytes"),
    ("pin-unknown-unit", ["gate", "--pin", "10 XB"], "--pin: found unit 'XB'"),
    ("available-count", ["gate", "--available", "100GiB,100GiB,100GiB"], "--available: found 3 figures, expected 1 or 2 (one per box)"),
    ("available-abc", ["gate", "--available", "lots"], "--available: found 'lots'"),
    ("deployment", ["gate", "--deployment", "nope"], "--deployment: found 'nope', expected one of dsv4-flash-pair"),
    ("no-gate-row", ["gate", "--deployment", "flash-next-pair", "--available", "100 GiB"], "flash-next-pair: no measured start and no weights"),
    ("no-available", ["gate", "--deployment", "flash-next-pair"], "no MemAvailable reading in the catalog; give --available"),
    ("seats-zero", ["gate", "--seats", "0"], "--seats: found 0, expected at least 1"),
    ("utilization", ["gate", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization: found '1.5'"),
    ("kv-bytes-per-token", ["kv", "--bytes-per-token", "abc"], "--bytes-per-token: found 'abc', expected a whole number"),
    ("fraction-box", ["fraction", "--box", "nope"], "--box: found 'nope'"),
    ("fraction-total-zero", ["fraction", "--total", "0"], "--total: found '0', expected a size above zero"),
    ("fraction-no-free", ["fraction", "--box", "dgx-spark"], "--free: box dgx-spark has no free-at-start reading"),
    ("guard-serving-at", ["guard", "kernel-init-report", "--serving-at", "abc"], "--serving-at: found 'abc', expected seconds"),
    ("guard-polls", ["guard", "kernel-init-report", "--polls", "0"], "--polls: found 0, expected at least 1"),
    ("plan-model", ["plan", "--model", "nope"], "--model: found 'nope'"),
    ("plan-fractions", ["plan", "--fractions", "0.85,1.5"], "--fractions: found '1.5'"),
    ("prefetch-missing", ["prefetch", "--checkpoint", "75GB"], "the following arguments are required: --available"),
    ("prefetch-checkpoint", ["prefetch", "--checkpoint", "big", "--available", "10GiB"], "--checkpoint: found 'big'"),
]


def assert_one_error_line(done: subprocess.CompletedProcess, message: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("calc: error: "), lines[0]
    assert message in lines[0], lines[0]


@pytest.mark.parametrize(("args", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_arguments(args: list[str], message: str) -> None:
    assert_one_error_line(calc(*args), message)


def test_missing_trace_file(tmp_path: Path) -> None:
    missing = tmp_path / "no-such.log"
    assert_one_error_line(calc("guard", str(missing)), f"trace {missing}: cannot read it (No such file or directory)")


def test_broken_trace_file(tmp_path: Path) -> None:
    log = tmp_path / "broken.log"
    log.write_text("0 20 GiB\n2 7.9 GiB\n4 7.8\n")
    assert_one_error_line(calc("guard", str(log)), f"{log}, line 3: found '7.8' without a unit")
    log.write_text("0 20 GiB\nwhat is this\n")
    assert_one_error_line(calc("guard", str(log)), f"{log}, line 2: found 'what is this'")
    log.write_text("")
    assert_one_error_line(calc("guard", str(log)), f"{log}: found no polls")


def test_broken_catalog(tmp_path: Path) -> None:
    broken = _broken_catalog(tmp_path)
    done = calc("--catalog", str(broken), "check")
    assert_one_error_line(done, "starts.yaml: deployments[0].starts[1].weights_loaded.value: found '79.29 GiG', expected a size with its unit")


def test_a_reader_that_stops_early_gets_no_traceback() -> None:
    """`python -m calc gate | head -1`: the pipe closes before the report is written."""
    proc = subprocess.Popen([sys.executable, "-m", "calc", "gate"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # before Python has even started: the report's write meets a closed pipe
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 1
    assert err == ""


def test_help_exits_zero() -> None:
    done = calc("gate", "--help")
    assert done.returncode == 0
    assert "--kv-cache" not in done.stderr
    assert "--pin" in done.stdout


def test_a_run_reads_its_command_wherever_the_catalog_flag_and_arguments_are(tmp_path: Path) -> None:
    """Only the command's own flags are declared for a run: the command is found past --catalog,
    whose value may be named like a command, and before arguments that may be."""
    catalog = tmp_path / "gate"
    catalog.symlink_to(ROOT / "catalog", target_is_directory=True)
    assert cli.command_of(["--catalog", str(catalog), "check"]) == "check"
    assert cli.command_of(["--catalog", "gate", "kv", "--pin", "gate"]) == "kv"
    assert cli.command_of(["--cat", "gate", "check"]) == cli.command_of(["--c", "plan", "check"]) == "check"  # argparse's prefixes
    assert cli.command_of(["gat"]) is None
    assert "valid" in ok("--cat", str(catalog), "check")
    assert "valid" in ok("--catalog", str(catalog), "check")
    assert ok("--catalog=" + str(ROOT / "catalog"), "kv", "--pin", "12e9") == ok("kv", "--pin", "12e9")
    done = calc("kv", "--drafter")  # another command's flag is still refused, in one line
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--drafter" in done.stderr
    declared = {a.dest for a in cli.build_parser()._subparsers._group_actions[0].choices["gate"]._actions}
    assert {"pin", "drafter", "json"} <= declared  # with no command, every command's flags


def test_parse_size_of_pins_in_flags_round_trips() -> None:
    flag = as_json("gate", "--pin", "9.39e9")["flags"][0]
    assert parse_size(flag.split()[1]) == parse_size("9.39e9")


def test_gate_with_the_drafter_does_not_pass_off_a_reading_without_it(catalog) -> None:
    """Every start of this deployment ran without the drafter: the pool's tokens are derived, not
    'logged', and the source says the drafter's KV will come out of the same pool."""
    out = as_json("gate", "--drafter")
    reading = report.pool_reading(catalog, "dsv4-flash-pair", 0)
    assert out["kv"]["tokens_logged"] is False
    assert out["kv"]["tokens"] == pytest.approx(float(kv.tokens_for_pool(10**10, reading.bytes_per_token)))
    assert "measured with the drafter off" in out["kv_source"]
    assert as_json("gate")["kv"]["tokens_logged"] is True


def test_fit_reproduces_the_catalogs_fit_and_predicts(catalog) -> None:
    report_ = catalog.models["deepseek-v4-flash"]["length_reports"][0]
    pool = report_["pool"].minimum
    readings = [f"--reading={r['max_model_len']}:{r['tokens'].value}" for r in report_["readings"]]
    out = as_json("fit", f"--pool={pool} B", *readings, "--max-model-len=250000")
    fit = next(f for f in derive.length_fits(catalog) if f.pool == pool)
    assert out["per_token_bytes"] == pytest.approx(float(fit.per_token))
    assert out["fixed_bytes"] == pytest.approx(float(fit.fixed))
    assert out["predicted_tokens"]["250000"] == pytest.approx(float(kv.tokens_at_length(pool, fit.per_token, fit.fixed, 250_000)))
    text = ok("fit", f"--pool={pool} B", *readings)
    assert f"{fmt(fit.per_token, 'count')} B x context + {fmt(fit.fixed, 'GB')} fixed" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--pool", "24GiB", "--reading", "50000:398000"], "fewer than two different max_model_len"),
        (["--pool", "24GiB", "--reading", "50000-398000", "--reading", "500000:2450000"], "expected MAX_MODEL_LEN:TOKENS"),
        (["--pool", "24GiB", "--reading", "50000:398000", "--reading", "500000:100"], "negative per-token or fixed cost"),
        (["--pool", "0 B", "--reading", "50000:398000", "--reading", "500000:2450000"], "pool: found 0"),
    ],
)
def test_fit_bad_arguments(args, message) -> None:
    result = calc("fit", *args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("calc: error:")
    assert message in result.stderr


def test_kv_at_a_speculative_count_no_start_ran_says_so_and_quotes_no_log(catalog) -> None:
    out = as_json("kv", "--deployment", "flash-next-pair", "--speculative-tokens", "9", "--pin", "28e9", "--max-model-len", "262144")
    assert out["tokens_logged"] is False
    assert "measured with 4 speculative tokens" in out["source"] and "expect fewer tokens" in out["source"]
    fewer = as_json("kv", "--deployment", "flash-next-pair", "--speculative-tokens", "1", "--pin", "28e9", "--max-model-len", "262144")
    assert "measured with 2 speculative tokens" in fewer["source"]  # the nearest count measured
    assert "expect more tokens" in fewer["source"]


def test_drafter_flag_comes_from_the_catalogs_drafter(catalog_copy) -> None:
    """The --speculative-config method and default count are the drafter entry's, not a constant:
    change them in models.yaml and the flag follows."""
    default = as_json("gate", "--drafter")["flags"][-1]
    assert default == '--speculative-config \'{"method": "dspark", "num_speculative_tokens": 5}\''
    edit(catalog_copy, "models.yaml", "method: dspark", "method: eagle3")
    edit(catalog_copy, "models.yaml", "num_speculative_tokens: 5", "num_speculative_tokens: 4")
    flags = as_json("--catalog", str(catalog_copy), "gate", "--drafter")["flags"]
    assert flags[-1] == '--speculative-config \'{"method": "eagle3", "num_speculative_tokens": 4}\''
    edit(catalog_copy, "models.yaml", "        method: eagle3\n", "")
    done = calc("--catalog", str(catalog_copy), "gate")
    assert done.returncode == 2 and "speculative_config" in done.stderr and "method" in done.stderr


# --- verdicts that cover every check ---------------------------------------------------------


def test_refused_start_offers_the_fix_flags_labelled_so() -> None:
    out = ok("gate", "--pin", "20e9", "--drafter")
    assert "Start: no, refused" in out
    # the largest pin with the drafter is 9.39e9 B (margin under 1 MB); less the 0.1 GiB reading precision,
    # rounded down: 9.29e9 B, which keeps the drafter
    assert "note: the flags below are the suggested fix, not the refused request: a pin of 9.29e9 B" in out
    flags = out.split("Flags of the suggested fix (not the refused request):\n", 1)[1].splitlines()
    assert flags[0].strip() == "--kv-cache-memory-bytes 9290000000"
    assert "--kv-cache-memory-bytes 20000000000" not in out
    assert "vLLM fraction check (not reached: the gate refuses the start first" in out
    fixed = as_json("gate", "--pin", "9.29e9", "--drafter")
    assert fixed["passes"] is True and fixed["boxes"][0]["margin_bytes"] >= parse_size("0.1 GiB")


def test_seats_that_do_not_fit_are_in_the_verdict() -> None:
    """8 seats at 65,536 tokens need 524,288 tokens; the 10e9 B pool holds 181,777: 181,777 // 65,536 = 2 seats."""
    out = ok("gate", "--typical-context", "65536")
    assert "Start: yes" in out
    assert "note: the pool holds 181,777 tokens, not the 524,288 tokens that 8 seats at 65,536 tokens need: at most 2 such seats fit" in out
    # 524,288 x 55,011 = 28,841,667,168 B: 28.85e9 B rounded up
    assert "a pin of at least 28.85e9 B holds them all, more by each seat's fixed part" in out


def test_a_margin_inside_the_reading_precision_is_said() -> None:
    """At 114.5 GiB the largest pin without the drafter is 14.83e9 B: it passes by under 0.1 GiB."""
    out = ok("gate", "--pin", "14.83e9")
    assert "Start: yes" in out
    assert "is inside the precision of the MemAvailable reading (0.1 GiB)" in out
    assert "inside the precision" not in ok("gate")  # 4.50 GiB to spare


def test_typed_fraction_is_the_flag_shown() -> None:
    out = ok("gate", "--gpu-memory-utilization", "0.937")
    assert "--gpu-memory-utilization 0.937" in out and "0.94" not in out.split("Flags:")[1]
    assert as_json("gate", "--gpu-memory-utilization", "0.937")["flags"][1] == "--gpu-memory-utilization 0.937"


def test_pin_zero_and_below_one_request_are_refused_as_input() -> None:
    for pin, words in (("0", "--pin: found 0 B, expected a KV pin above zero"), ("5e9", "--pin: 5e9 B holds 90,890 tokens, below one request")):
        done = calc("gate", "--pin", pin)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.startswith("calc: error: " + words), done.stderr


def test_plan_says_fit_only_with_a_kv_pool_and_a_fraction_for_every_model() -> None:
    out = ok("plan", "--model", "example-27b-4bit", "--model", "example-70b-4bit", "--fractions", "0.5")
    assert "Plan: incomplete" in out and "Plan: fit" not in out
    assert "no KV pool given for a 27B coding model at 4-bit, a 70B model at 4-bit" in out
    assert "2 resident models but 1 engine fractions: 1 engine has no fraction to start with" in out
    # 13.97 + 40 + 4 + 34.46 + 20 + 4 = 116.43 GiB of 121.69: 5.26 GiB left; 0.50 then 0.35 both start
    out = ok("plan", "--model", "example-27b-4bit:40GiB:4GiB", "--model", "example-70b-4bit:20GiB:4GiB", "--fractions", "0.5,0.35")
    assert "left: 5.26 GiB" in out and "Plan: fit" in out and "note:" not in out
    data = as_json("plan", "--model", "example-27b-4bit", "--fractions", "0.85,0.85")
    assert data["verdict"] == "incomplete" and any("engine 2 refused" in n for n in data["notes"])


def test_the_one_request_floor_holds_the_null_block_back() -> None:
    """From vLLM 0.29.0 the one-request check runs on the pool less one block. The DeepSeek pair:
    131,072 x 55,011 = 7,210,401,792 B is the request; with its 256-token block (the catalog's
    0.26.0 report) (131,072 + 256) x 55,011 = 7,224,484,608 B, printed up as 7.23e9 B. A pin typed at
    the request alone, 7.22e9 B, is refused as input."""
    out = ok("kv", "--deployment", "dsv4-flash-pair", "--tokens", "131072")
    assert "need a pin of 7,210,401,792 B (7.22e9 B rounded up" in out
    assert "One request of 131,072 tokens starts from a pin of 7,224,484,608 B (7.23e9 B rounded up)" in out and "(256 tokens, the block size of" in out
    # a small need keeps its bytes: 131,088 x 3 B is 393,264 B, not only "0.01e9 B"
    assert "starts from a pin of 393,264 B (0.01e9 B rounded up)" in ok("kv", "--bytes-per-token", "3", "--pin", "1e9")
    assert as_json("kv", "--deployment", "dsv4-flash-pair", "--tokens", "131072")["one_context_pin_bytes"] == 7_224_484_608
    assert "block_size" in as_json("kv", "--bytes-per-token", "3", "--pin", "1e9", "--block-size", "64")
    assert as_json("kv", "--bytes-per-token", "3", "--pin", "1e9", "--block-size", "64")["one_context_pin_bytes"] == (131072 + 64) * 3
    refused = calc("gate", "--pin", "7.22e9")
    assert refused.returncode == 2 and "the block of 256 tokens vLLM holds back from 0.29.0" in refused.stderr
    assert "expected a pin of at least 7.23e9 B" in refused.stderr
    assert ok("gate", "--pin", "7.23e9")


def test_model_prints_the_smallest_pool_that_starts() -> None:
    """Llama-3.1-8B at 131,072 tokens: the request is 131,072 x 131,072 B = 17,179,869,184 B; from
    vLLM 0.29.0 one block, 32 layers x 65,536 B = 2,097,152 B, more: 17,181,966,336 B."""
    config = str(ROOT / "models" / "configs" / "llama-3.1-8b" / "config.json")
    assert "Smallest pool that starts: 17,181,966,336 B (17.19e9 B rounded up), the request and the block of 2,097,152 B" in ok(
        "model", config, "--max-model-len", "131072"
    )
    assert "Smallest pool that starts: 17,179,869,184 B (17.18e9 B rounded up), one request" in ok(
        "model", config, "--max-model-len", "131072", "--engine-version", "0.28.0"
    )
    assert as_json("model", config, "--max-model-len", "131072")["kv_floor_bytes"] == 17_181_966_336


def test_model_says_vllm_refuses_a_pool_below_one_request() -> None:
    """Qwen3-8B at 32,768 tokens on 0.29.0: one request is 36 layers x 2,048 pages x 65,536 B =
    4,831,838,208 B, and the block held back 36 x 65,536 B = 2,359,296 B more: 4,834,197,504 B.
    One byte less and vLLM's check raises: the report says so, not just "1.00x"."""
    config = str(ROOT / "models" / "configs" / "qwen3-8b" / "config.json")
    at = ("model", config, "--max-model-len", "32768", "--engine-version", "0.29.0", "--pool")
    assert as_json(*at, "4834197504B")["one_request_fits"] is True
    assert "vLLM refuses" not in ok(*at, "4834197504B")
    below = ok(*at, "4834197503B")
    assert "vLLM refuses this start: one request at max_model_len 32,768 does not fit this pool" in below
    assert "maximum concurrency 1.00x at 32,768" in below and "Largest max_model_len one request fits: 32,752" in below
    assert as_json(*at, "4834197503B")["one_request_fits"] is False
    # 4.2 GiB: 30,576 tokens, 0.93x, as the calculator showed it, now with the refusal beside it
    small = ok(*at, "4.2GiB")
    assert "maximum concurrency 0.93x" in small and "vLLM refuses this start" in small
    # with a card the predicted pool carries vLLM's verdict, and the fit beside it
    card = ok("model", config, "--max-model-len", "32768", "--gpu", "rtx-4090")
    assert "vLLM's verdict: starts" in card and "vLLM refuses" not in card
    assert as_json("model", config, "--max-model-len", "32768", "--gpu", "rtx-4090")["one_request_fits"] is True


def test_ingest_yaml_refuses_a_box_the_log_cannot_be_from() -> None:
    """Log 36 prints "Free memory on device (30.27/31.4 GiB)": a 32 GB card's total. Written into the
    catalog as a DGX Spark start (121.69 GiB) it would combine one box's gate with another's log."""
    log = str(ROOT / "logs" / "public" / "36-v02x-qwen38-27b-tp2-5090-kv-memory-suggestion.log")
    done = calc("ingest", log, "--yaml", "--box", "dgx-spark", "--model", "qwen3.8-27b")
    assert_one_error_line(
        done,
        "--box: found 'dgx-spark', expected the box the log was taken on: the log prints a total of 31.40 GiB (log line 1), "
        "the DGX Spark (GB10) has 121.69 GiB: this log is not from this box (it looks like RTX 5090 node)",
    )
    assert "box: rtx-5090-node" in ok("ingest", log, "--yaml", "--box", "rtx-5090-node", "--model", "qwen3.8-27b")


def test_gate_available_without_its_unit_is_refused() -> None:
    """--available 100 is 100 bytes, 100000000 is 95 MiB: each refused in one line, not gated as a box
    with 0.00 GiB free (below 1 MiB as any memory size is read, below 1 GiB by the gate)."""
    done = calc("gate", "--available", "100")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == "calc: error: --available: found '100', 100 B, expected at least 1 MiB, such as '100 GiB' (a number without a unit is bytes)"
    done = calc("gate", "--available", "100000000")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == (
        "calc: error: --available: found '100000000', 100,000,000 B, expected at least 1 GiB free, such as '119.5 GiB' (a number without a unit is bytes)"
    )
    assert calc("gate", "--available", "120 GiB, 100").stderr.strip().startswith("calc: error: --available: found '100', 100 B")


def test_a_dense_models_replicas_get_no_expert_note(capsys) -> None:
    """Data parallel on a dense model: no routed experts, so the card's prediction says nothing of
    the rank with the most experts, and keeps the larger-TP fixes."""
    from conftest import cli_json

    dense = cli_json(["model", "models/configs/qwen3-8b/config.json", "--pp", "2", "--data-parallel-size", "2", "--gpu", "h100-sxm",
                      "--max-model-len", "8192", "--json"], capsys)  # fmt: skip
    assert dense["verdict"] and not any("most experts" in n for n in dense["notes"])
    moe = cli_json(["model", "models/configs/qwen3-30b-a3b/config.json", "--tp", "2", "--data-parallel-size", "2", "--enable-expert-parallel",
                    "--total-memory", "21 GiB", "--max-model-len", "32768", "--json"], capsys)  # fmt: skip
    assert any("most experts" in n for n in moe["notes"])


def test_shm_queues_print_rounded_up_as_the_refusal_does() -> None:
    """696,254,546 B of /dev/shm queues are 664.0005 MiB: the note says 665, as the refusal does."""
    out = ok("model", "models/configs/qwen3-30b-a3b/config.json", "--tp", "2", "--max-model-len", "8192", "--shm-size", "1g")
    assert "/dev/shm: 665 MiB of message queues for 2 ranks on one box" in out


def imported_by(*args: str) -> set[str]:
    """The modules `python -m calc ARGS` imports, as `-X importtime` lists them (a fresh process)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "calc", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-400:]
    return {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time:") and "|" in line}


# What `gate` needs: the catalog, the start's terms and its report; what it must not import: the
# log reader, the model checks, the card prediction, the config and layout models (the default
# deployment's block is in its model's KV report), the schema writer, the calculators and charts.
# Each of these once came in at `gate`'s start.
GATE_NEVER = (
    "calc.logs",
    "calc.present.commands.kv",
    "calc.present.commands.fit",
    "calc.present.commands.fraction",
    "calc.present.commands.guard",
    "calc.present.commands.watch",
    "calc.present.commands.plan",
    "calc.present.commands.prefetch",
    "calc.present.commands.model",
    "calc.present.commands.ingest",
    "calc.present.commands.catalog",
    "calc.checks",
    "calc.answers.ingest",
    "calc.answers.logverdict",
    "calc.answers.guard",
    "calc.answers.watch",
    "calc.answers.prefetch",
    "calc.engine.predict",
    "calc.engine.hfconfig",
    "calc.engine.kvlayout",
    "calc.engine.weights",
    "calc.engine.ranks",
    "calc.engine.lora",
    "calc.engine.multimodal",
    "calc.engine.offload",
    "calc.engine.hostmem",
    "calc.engine.afterstart",
    "calc.engine.budget",
    "calc.catalog.schema",
    "calc.present.calculators",
    "calc.present.charts",
    "calc.present.chart",
    "calc.present.html",
    "shutil",  # argparse's help width, read without it (and the compression modules it brings)
    "dataclasses",  # the gate's types are records (calc/record.py): dataclasses compiled six methods a class
    "inspect",  # and imported inspect (ast, dis, tokenize) for them
    "pathlib",  # the catalog's folder and files by os.path (pathlib imports urllib.parse and ipaddress)
    "datetime",  # a catalog date checked on the calendar without it
    "calc.jsontext",  # the browser's catalog reader and the report's JSON types, not the gate's
    "bz2",
    "lzma",
)


@pytest.mark.parametrize("argv", [["gate"], ["gate", "--json"], ["gate", "--help"], ["gate", "--kv-cache-memory-bytes", "20e9", "--drafter"]])
def test_gate_imports_only_what_it_runs(argv: list[str]) -> None:
    """`python -m calc gate` starts fast because each command imports what it runs: the others'
    modules (the log reader, the model report...) stay unimported."""
    seen = imported_by(*argv)
    assert {"calc.present.cli", "calc.catalog.loader"} <= seen  # the listing is read as it should be
    if "--help" not in argv:  # its module and what it runs on, imported when it runs (its help needs neither)
        assert {"calc.present.commands.gate", "calc.answers.report"} <= seen
    unwanted = sorted(m for m in seen if m in GATE_NEVER or m.startswith(tuple(n + "." for n in GATE_NEVER)))
    assert unwanted == []
    assert ("json" in seen) == ("--json" in argv)  # JSON is imported to print it, only


def test_gate_imports_the_host_models_for_their_flags() -> None:
    """The modules left out of the plain gate are still there when a flag needs them."""
    seen = imported_by("gate", "--kv-offloading-size", "4", "--shm-size", "64m", "--enable-sleep-mode")
    assert {"calc.engine.offload", "calc.engine.hostmem", "calc.checks.modeled"} <= seen


def test_guard_that_stood_down_says_so_not_that_the_start_passed() -> None:
    """The surviving server's 1 s polls (MiaAI-Lab pull request 54) sat under the floor for five
    polls: replayed with the head serving from 0 s, the guard watched none of them."""
    out = ok("guard", "logs/traces/qwen38-single-memwatch-survived.trace", "--serving-at", "0")
    assert out.splitlines()[0] == (
        "Guard (3 polls in a row under 8.00 GiB) over 5 polls: kills nothing; it stood down at 0 s, when the head served (5 later polls not watched)"
    )


@pytest.mark.parametrize("args", [("gate", "--json"), ("gate", "--pin", "7.22e9"), ("kv", "--pin", "abc"), ("ingest", "-", "--json")])
def test_the_command_run_in_process_says_what_the_command_says(args: tuple[str, ...]) -> None:
    # the tests call the command line in their own process (conftest.run_calc): status, stdout and stderr as `python -m calc` gives them
    stdin = (ROOT / "logs" / "public" / "excerpts" / "1cat-237-v100-tp4.log").read_text(encoding="utf-8")
    inside = run_calc(*args, stdin=stdin)
    spawned = subprocess.run([sys.executable, "-m", "calc", *args], cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=60)
    assert (inside.returncode, inside.stdout, inside.stderr) == (spawned.returncode, spawned.stdout, spawned.stderr)
    assert inside.stdout or inside.stderr


def test_quantization_fp8_quantizes_an_unquantized_checkpoint_as_it_loads() -> None:
    """--quantization fp8 on Llama 3.1 8B's bf16 config: each linear layer one byte a weight and a
    float32 scale, the embedding and the head kept in bfloat16 (vllm/model_executor/layers/quantization/fp8.py):
    8.49 GiB, the weights the v0.19.0 H100 start with --quantization fp8 printed ('weights memory: 8.49GiB',
    logs/starts/83-...); a method the checkpoint was not saved with is refused as vLLM refuses it."""
    path = "models/configs/llama-3.1-8b/config.json"
    plain = json.loads(run_calc("model", path, "--json").stdout)
    fp8 = json.loads(run_calc("model", path, "--quantization", "fp8", "--json").stdout)
    linear = 32 * (4096 * (4096 + 2 * 1024) + 4096 * 4096 + 3 * 4096 * 14336)  # q, k, v; o; gate, up and down
    assert plain["weights_bytes_per_rank"] - fp8["weights_bytes_per_rank"] == linear * 2 - (linear + 4 * 32 * 7)  # a scale a tensor, 7 a layer
    assert round(fp8["weights_bytes_per_rank"] / 2**30, 2) == 8.49
    done = run_calc("model", path, "--quantization", "awq")
    assert done.returncode == 2
    assert "--quantization: found 'awq' for an unquantized checkpoint" in done.stderr and "expected 'fp8'" in done.stderr
    gptq = "models/configs/qwen3.5-27b-derestricted-gptq-int8/config.json"
    assert run_calc("model", gptq, "--quantization", "gptq_marlin", "--json").returncode == 0
    # auto_gptq.py (0.22.0 on) takes its own name too, as auto_awq.py (0.24.0 on) does for AWQ checkpoints
    assert run_calc("model", gptq, "--quantization", "auto_gptq", "--json").returncode == 0
    refused = run_calc("model", gptq, "--quantization", "fp8")
    assert refused.returncode == 2 and "expected 'gptq' or 'gptq_marlin' or 'auto_gptq' or 'marlin'" in refused.stderr


def test_model_reads_a_config_piped_in() -> None:
    """`calc model -` reads the config from standard input, as the trace commands read theirs: the
    same report as from the file, with no hf_quant_config.json looked for beside it."""
    path = "models/configs/qwen3-8b/config.json"
    argv = ("--gpu", "rtx-4090", "--max-model-len", "8192", "--json")
    piped = json.loads(ok("model", "-", *argv, stdin=(ROOT / path).read_text(encoding="utf-8")))
    from_file = json.loads(ok("model", path, *argv))
    assert piped["available_kv_bytes"] == from_file["available_kv_bytes"] > 0
    assert piped["weights_bytes_per_rank"] == from_file["weights_bytes_per_rank"]
    # read once: --max-model-len auto runs the report again at the fitted length, on the same text
    auto = json.loads(ok("model", "-", "--gpu", "rtx-4090", "--max-model-len", "auto", "--json", stdin=(ROOT / path).read_text(encoding="utf-8")))
    assert auto["max_model_len"] == json.loads(ok("model", path, "--gpu", "rtx-4090", "--max-model-len", "auto", "--json"))["max_model_len"] == 33_824
    done = calc("model", "-", stdin="not json")
    assert done.returncode == 2 and done.stderr.startswith("calc: error: ") and "Traceback" not in done.stderr
    for nothing in ("", " \n"):  # nothing piped in: said so, not 'text that is not JSON at line 1 column 1'
        done = calc("model", "-", "--gpu", "rtx-4090", stdin=nothing)
        assert done.returncode == 2 and done.stderr.strip() == (
            "calc: error: config -: found nothing on standard input, expected the model's config.json piped in (calc model - < config.json)"
        )
