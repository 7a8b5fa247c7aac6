"""vLLM's free-memory check at start and what other processes hold on the card (--in-use), against
the public logs that print them (calc/engine/predict/startup.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from calc.catalog.loader import load_dir
from calc.engine.predict import startup
from calc.present import cli
from calc.present.cli import CATALOG_DIR
from calc.units import GiB as GIB

ROOT = Path(__file__).resolve().parent.parent
# what vLLM holds on an idle RTX 4090 at its start snapshot, as the catalog has it (boxes.yaml in_use_at_start)
RTX_4090_CONTEXT = int(load_dir(CATALOG_DIR).boxes["rtx-4090"]["in_use_at_start"].size)
CONFIG = "models/configs/qwen3-1.7b/config.json"


def _json(argv: list[str], capsys) -> dict:
    assert cli.main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _refusal(log: str) -> tuple[float, float, float]:
    """free, total and the utilization of a log's 'Free memory on device' refusal, as it prints them."""
    text = (ROOT / "logs" / "public" / log).read_text(encoding="utf-8")
    m = re.search(r"Free memory on device(?: \S+)? \(([0-9.]+)/([0-9.]+) GiB\) on startup is less than desired GPU memory utilization \(([0-9.]+),", text)
    assert m is not None
    return float(m[1]), float(m[2]), float(m[3])


@pytest.mark.parametrize("log", ["64-v02x-free-memory-traceback-only.log", "65-v091-free-memory-bare-fileline.log"])
def test_a_refused_start_is_refused_and_the_highest_utilization_passes(log: str, capsys) -> None:
    """Each log's card, its utilization and what others held (its total less its free memory, less
    vLLM's own CUDA context): calc refuses the start as vLLM did and offers the highest utilization,
    two decimals, that the printed free memory holds."""
    free, total, util = _refusal(log)
    in_use = str(int((total - free) * GIB) - startup.CUDA_CONTEXT)  # rounded down: the free memory at least the printed
    argv = ["model", CONFIG, "--total-memory", f"{total} GiB", "--in-use", in_use, "--gpu-memory-utilization", str(util), "--max-model-len", "2048"]
    r = _json(argv, capsys)
    assert r["verdict"] == "free memory"
    assert abs(r["free_at_start_bytes"] - free * GIB) < 2
    highest = int(free / total * 100) / 100
    assert r["fixes"][0]["flags"] == f"--gpu-memory-utilization {highest:.2f}"
    assert r["settings_that_fit"]["gpu_memory_utilization_at_most"] == highest
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"vLLM's verdict: free memory (vLLM refuses at start: free memory on device ({free:.2f} GiB/{total:.2f} GiB) is less than " in out
    assert "  free at vLLM's start check: " in out


def test_nccl_before_the_snapshot_under_tp_on_an_nvswitch_board(capsys) -> None:
    """From 0.11.0 the snapshot follows NCCL's set-up: on the H100 board of the v0.19.0 logs the
    snapshot of a rank at TP 2 reads 77.66 GiB free of 79.19 (logs/starts/89-...); the context
    and NCCL's buffers give it within three hundredths (a card known by its total is taken with NVSwitch, the safe side)."""
    snapshot = re.search(r"free_memory=([0-9.]+)GiB, total_memory=([0-9.]+)GiB",
                         (ROOT / "logs/starts/89-v0190-llama31-8b-tp2-h100-llmd-planner.log").read_text(encoding="utf-8"))  # fmt: skip
    assert snapshot is not None
    argv = ["model", "models/configs/llama-3.1-8b/config.json", "--total-memory", f"{snapshot[2]} GiB", "--tp", "2", "--max-model-len", "8192", "--in-use", "0"]
    r = _json([*argv, "--engine-version", "0.19.0"], capsys)
    assert r["free_at_start_bytes"] == pytest.approx(float(snapshot[1]) * GIB, abs=0.03 * GIB)
    before = _json([*argv, "--engine-version", "0.10.0"], capsys)  # the snapshot before NCCL's set-up
    assert before["free_at_start_bytes"] - r["free_at_start_bytes"] == startup.NCCL_AT_SNAPSHOT


def test_what_others_hold_comes_off_the_pool_up_to_0_9_0(capsys) -> None:
    """V1 up to 0.9.0 counts every byte the card holds beyond its torch allocation as its own (vllm/v1/
    worker/gpu_worker.py, 0.8.5): 3 GiB held by another process is 3 GiB less pool and no check at
    start; from 0.9.1 the pool stays and the free memory is checked; V0 from 0.6.5 counts neither."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "8192"]
    for version in ("0.8.5", "0.9.0"):
        idle, held = (_json([*argv, "--engine-version", version, *more], capsys) for more in ([], ["--in-use", "3 GiB"]))
        assert idle["available_kv_bytes"] - held["available_kv_bytes"] == 3 * GIB
        assert held["non_torch_bytes"] - idle["non_torch_bytes"] == 3 * GIB and held["free_at_start_bytes"] is None
    checked = _json([*argv, "--engine-version", "0.9.1", "--in-use", "3 GiB"], capsys)
    assert checked["available_kv_bytes"] == _json([*argv, "--engine-version", "0.9.1"], capsys)["available_kv_bytes"]
    assert checked["verdict"] == "free memory"  # 0.9 x 23.68 GiB asks 21.31, 20.17 are free
    v0 = _json([*argv, "--engine-version", "0.7.3", "--in-use", "3 GiB"], capsys)
    assert v0["available_kv_bytes"] == _json([*argv, "--engine-version", "0.7.3"], capsys)["available_kv_bytes"]
    assert "are not counted: V0 from 0.6.5" in v0["terms"]["non_torch"]["source"]


def test_an_idle_card_refuses_a_utilization_its_context_leaves_no_room_for(capsys) -> None:
    """On an idle RTX 4090 (23.68 GiB), vLLM's own context (0.39 GiB, as a public 4090 start printed it:
    boxes.yaml in_use_at_start) leaves 23.29 GiB: 0.98 passes, 0.99 asks 23.45 GiB and is refused
    before anything loads. A card the catalog has no reading for takes the largest, 0.51 GiB."""
    argv = ["model", CONFIG, "--gpu", "rtx-4090", "--max-model-len", "4096"]
    assert _json([*argv, "--gpu-memory-utilization", "0.98"], capsys)["verdict"] == "starts"
    refused = _json([*argv, "--gpu-memory-utilization", "0.99"], capsys)
    assert refused["verdict"] == "free memory" and refused["available_kv_bytes"] > 0
    assert [f["flags"] for f in refused["fixes"]] == ["--gpu-memory-utilization 0.98"]
    assert refused["free_at_start_bytes"] == refused["total_memory_bytes"] - RTX_4090_CONTEXT
    unknown = _json(["model", CONFIG, "--total-memory", "23.68 GiB", "--max-model-len", "4096", "--gpu-memory-utilization", "0.98"], capsys)
    assert unknown["verdict"] == "free memory" and unknown["free_at_start_bytes"] == unknown["total_memory_bytes"] - startup.CUDA_CONTEXT


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--gpu", "rtx-4090", "--in-use", "30 GiB"], "--in-use: found 30.00 GiB, expected less than 23.29 GiB, the NVIDIA GeForce RTX 4090's total"),
        # so much held that vLLM's own CUDA context (0.51 GiB) has no room: no free memory of zero or less is printed
        (["--gpu", "rtx-4090", "--in-use", "23.5 GiB"], "--in-use: found 23.50 GiB, expected less than 23.29 GiB"),
        # a number typed without its unit is bytes: 1.2 is no reading of a card
        (["--gpu", "rtx-4090", "--in-use", "1.2"], "--in-use: found '1.2', 1 B, expected at least 1 MiB, such as '1.2 GiB' (a number without a unit is bytes)"),
        (["--gpu", "rtx-4090", "--in-use", "-1"], "--in-use: found"),
        (["--in-use", "1 GiB"], "--in-use: found without a card, expected --gpu NAME or --total-memory SIZE"),
        (["--gpu", "dgx-spark", "--in-use", "1 GiB"], "--in-use: found on the DGX Spark (GB10), a unified-memory box, expected it left out"),
        (["--gpu", "dgx-spark", "--kv-cache-memory-bytes", "10e9", "--in-use", "1 GiB"], "--in-use: found on the DGX Spark (GB10), a unified-memory box"),
    ],
)
def test_bad_in_use(extra: list[str], said: str, capsys) -> None:
    assert cli.main(["model", CONFIG, "--max-model-len", "4096", *extra]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err and err.count("\n") == 1


def test_where_the_highest_utilization_leaves_no_pool_the_changes_from_there_are_offered(capsys) -> None:
    """Qwen3-8B (15.27 GiB of weights) on an RTX 4090 whose other processes hold 8 GiB: the free memory
    at start holds 0.64 at most, whose share the weights overfill; from there the weights in fp8 as
    they load, or two cards, start, each offered beside that utilization, and each starts as offered."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--in-use", "8 GiB", "--max-model-len", "8192"]
    refused = _json(argv, capsys)
    assert refused["verdict"] == "free memory" and refused["settings_that_fit"]["gpu_memory_utilization_at_most"] == 0.64
    offered = [f["flags"] for f in refused["fixes"]]
    assert offered == ["--gpu-memory-utilization 0.64 --quantization fp8", "--gpu-memory-utilization 0.64 --tensor-parallel-size 2"]
    for flags in offered:
        assert _json([*argv, *flags.split()], capsys)["verdict"] == "starts", flags


def test_a_pin_on_a_card_still_meets_the_free_memory_check(capsys) -> None:
    """With --kv-cache-memory-bytes the utilization sizes nothing, but vLLM's worker still refuses a
    start whose total x utilization the free memory does not hold (gpu_worker.py init_device, 0.11.0):
    0.99 on an idle RTX 4090, and the default 0.92 beside 3 GiB other processes hold."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "8192", "--kv-cache-memory-bytes", "4e9"]
    for extra, top in ((["--gpu-memory-utilization", "0.99"], 0.98), (["--in-use", "3 GiB"], 0.85)):
        pin = _json([*argv, *extra], capsys)["card_pin"]
        assert pin["requested_bytes"] > pin["free_at_start_bytes"] and pin["utilization_at_most"] == top, extra
        assert cli.main([*argv, *extra]) == 0
        assert "but vLLM refuses at start: free memory on device" in capsys.readouterr().out
    pin = _json([*argv, "--in-use", "3 GiB", "--gpu-memory-utilization", "0.85"], capsys)["card_pin"]
    assert pin["requested_bytes"] <= pin["free_at_start_bytes"] and pin["held_bytes"] == 3 * GIB + RTX_4090_CONTEXT


def test_a_pool_no_larger_than_the_held_back_block_is_no_kv_memory(capsys) -> None:
    """From 0.29.0 vLLM checks the pool less the null block: a pool above zero but no larger than that
    block leaves nothing, and vLLM says 'No available memory for the cache blocks' (kv_cache_utils.py
    check_enough_kv_cache_memory, 0.31.0), not that the length is too long. The total here is set so
    the pool predicted is one MiB, the block of Qwen3-1.7B at 16 tokens 1.75 MiB."""
    argv = ["model", CONFIG, "--max-model-len", "4096", "--json"]
    base = _json([*argv, "--total-memory", "24 GiB", "--gpu-memory-utilization", "0.5"], capsys)
    block = base["null_block_bytes"]
    assert block == 28 * 16 * 2 * 8 * 128 * 2  # 28 layers, 16 tokens, K and V, 8 KV heads of 128, 2 bytes
    total = base["total_memory_bytes"] - 2 * (base["available_kv_bytes"] - 2**20)  # at 0.5, a pool of about 1 MiB
    tiny = _json([*argv, "--total-memory", str(total), "--gpu-memory-utilization", "0.5"], capsys)
    assert 0 < tiny["available_kv_bytes"] <= block and tiny["verdict"] == "no KV memory"
    assert "hold no more than the" in tiny["verdict_reason"]
