"""The log reader on real public logs (logs/public, each with its source address and figures
worked out by hand in SOURCES.yaml), on the same log wrapped in every prefix style, folded,
repeated and shuffled, and on logs that are broken or not logs at all."""

from __future__ import annotations

import json
import random
import subprocess
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_calc

from calc.answers import logverdict
from calc.answers.logverdict import answer_text
from calc.logs.logread import ANCHORS, JSON_KEYS, RULES, human_readable_int, read_log
from calc.units import GiB, InputError

PUBLIC = ROOT / "logs" / "public"
SOURCES = yaml.safe_load((PUBLIC / "SOURCES.yaml").read_text(encoding="utf-8"))

# Where the reader and the collected expectation differ on what a figure is (never on arithmetic):
# the expectation is replaced here, with the reason.
CORRECTIONS: dict[str, dict[str, tuple[object, str]]] = {
    "08": {"kv_cache_dtype": (None, "fp8 is in the post's text, not in the log")},
    "09": {"kv_cache_dtype": (None, "fp8 is in the post's text, not in the log")},
    "17": {"gpu_memory_utilization": (None, "0.95 is in the comment's command, not in the log")},
    "11": {"available_kv_bytes": (round(Fraction("16.46") * GiB), "K 8.23 GB + V 8.23 GB, added before rounding to whole bytes (a byte apart)")},
    "27": {
        "available_kv_bytes": (
            round(Fraction("9.08") * GiB),
            "the rank's KV memory is both pools, target (3.46 + 3.46 GB) and drafter (1.08 + 1.08 GB), as vLLM's pool holds a drafter's layers",
        )
    },
    "39": {"pool_bytes_tp0_derived": (round(Fraction("14.48") * GiB), "(36.51 - 22.03) x 2^30 = 15,547,781,611.52, rounded to the nearest byte")},
    "45": {"kv_cache_dtype": ("auto", "the engine config line prints kv_cache_dtype=auto")},
    "46": {
        "gpu_memory_utilization": (None, "0.85 is in the post's command, not in the log"),
        "kv_cache_memory_bytes": (round(Fraction("0.73") * GiB), "the flag's 750M is in the post; the log prints the pin as 'reserved 0.73 GiB'"),
        "available_kv_bytes": (round(Fraction("0.73") * GiB), "on a pinned start the pool is the pin: 'reserved 0.73 GiB ... for KV Cache'"),
    },
    "49": {"kv_cache_dtype": ("torch.bfloat16", "as printed: 'Using KV cache dtype: torch.bfloat16'")},
    "53": {"max_model_len": (None, "max_model_len=1024 is in the post's code, not in the log")},
    "54": {"block_size": (None, "--block-size 128 is in the post's table, not in the log")},
    "55": {
        "gpu_memory_utilization": (None, "0.8 is in the post's script, not in the log"),
        "block_size": (None, "not printed: 415,104 / 3,243.00x = 128 is worked out"),
        "gpu_blocks": (None, "not printed: worked out from the tokens and the block size"),
    },
    "59": {"gpu_memory_utilization": (None, "0.8 is in the post's text, not in the log")},
    "60": {"gpu_memory_utilization": (None, "0.04 is in the README's prose, not in the log")},
    "56": {"kv_cache_dtype": ("auto", "the engine config line prints kv_cache_dtype=auto")},
    "36": {
        "available_kv_bytes": (
            round(Fraction("12.24") * GiB),
            "'Current kv cache memory in use is 12.26 GiB' (TP0) and '12.24 GiB' (TP1) are the pool; the smaller is read",
        )
    },
}
EXTRA = {  # expected keys beyond the JSON's, and the reading's attribute that holds each
    "free_memory_bytes": "free_memory_bytes",
    "total_memory_bytes": "total_memory_bytes",
    "requested_memory_bytes": "requested_memory_bytes",
    "needed_kv_bytes": "kv_needed_bytes",
    "cudagraph_estimate_bytes": "cuda_graph_bytes",
    "padding_layers": "padding_layers",
    "pool_bytes_tp0_derived": "available_kv_bytes",
    "pipeline_parallel_size": "pipeline_parallel_size",
}


def _ids() -> list[str]:
    return [entry["file"] for entry in SOURCES]


def test_every_public_log_has_its_source() -> None:
    files = {p.name for p in PUBLIC.glob("*.log")}
    assert files == {e["file"] for e in SOURCES}
    assert len(files) >= 15
    for entry in SOURCES:
        assert entry["url"].startswith("https://github.com/"), entry["file"]


@pytest.mark.parametrize("entry", SOURCES, ids=_ids())
def test_public_log(entry: dict) -> None:
    reading = read_log((PUBLIC / entry["file"]).read_text(encoding="utf-8"))
    got = reading.to_json()
    assert set(got) == {*JSON_KEYS, "lines", "unreadable"}
    assert got["unreadable"] == []  # a real log holds no figure an engine cannot print
    expected = dict(entry["expected"])
    for key, (value, _why) in CORRECTIONS.get(entry["file"][:2], {}).items():
        expected[key] = value
    checked = 0
    for key, value in expected.items():
        if key in JSON_KEYS:
            assert got[key] == value, f"{entry['file']}: {key}"
            checked += 1
        elif key in EXTRA:
            found = getattr(reading, EXTRA[key])
            assert (found.value if found else None) == value, f"{entry['file']}: {key}"
            checked += 1
    assert checked >= 10
    assert got["engine"] == entry["engine"]
    for key, line in got["lines"].items():  # each figure names a line of the file that holds it
        assert 1 <= line <= len((PUBLIC / entry["file"]).read_text(encoding="utf-8").splitlines()), key


# --- figures worked out by hand --------------------------------------------------------------


def public(prefix: str):
    (entry,) = [e for e in SOURCES if e["file"].startswith(prefix)]
    return read_log((PUBLIC / entry["file"]).read_text(encoding="utf-8"))


def test_bytes_per_token_carries_the_printing_interval() -> None:
    r = public("07")  # Available KV cache memory: 6.51 GiB; GPU KV cache size: 42,656 tokens
    pool = r.available_kv_bytes
    assert pool.value == 6_990_059_274  # 6.51 x 2^30 = 6,990,059,274.24
    assert (pool.low, pool.high) == (Fraction("6.505") * GiB, Fraction("6.515") * GiB)
    per_token = r.bytes_per_token
    assert round(per_token.value) == 163_870  # 6,990,059,274 / 42,656 = 163,870.3
    assert round(per_token.low) == 163_745 and round(per_token.high) == 163_996  # (6.505 .. 6.515 GiB) / 42,656
    assert per_token.lines == (1, 2)


def test_v0_block_size_follows_from_the_concurrency() -> None:
    r = public("02")  # 1,952 blocks, 1.56x at 20,000 tokens: 1.555..1.565 x 20,000 / 1,952 = 15.93..16.03
    assert r.block_size.value == 16 and r.block_size.derived
    assert r.to_json()["block_size"] is None  # worked out, not printed
    assert round(r.bytes_per_token.value) == 130_986  # 3.81 GiB / (1,952 x 16) = 4,090,956,349 / 31,232


def test_one_request_check_gives_bytes_per_token() -> None:
    r = public("09")  # 10.12 GiB needed for 221,000 tokens; the engine estimates 122,080
    assert r.error.value == "max_model_len" and r.estimated_max_model_len.value == 122_080
    assert round(r.bytes_per_token.value) == 49_169  # 10.12 x 2^30 / 221,000 = 49,168.6
    assert r.available_kv_bytes.value // round(r.bytes_per_token.value) == 122_073  # 5.59 GiB / 49,169, near the engine's 122,080


def test_units_as_each_version_meant_them() -> None:
    assert public("06").model_loading_bytes.value == 15_453_134_835  # 14,737.2578 MB read as MiB: x 2^20
    assert public("01").model_loading_bytes.value == 16_094_101_452  # "14.9888 GB" is GiB: x 2^30
    assert public("11").available_kv_bytes.value == round(Fraction("16.46") * GiB)  # SGLang's K + V "GB" are GiB
    assert human_readable_int("750M") == 750 * 2**20
    assert human_readable_int("750m") == 750 * 10**6
    assert human_readable_int("12884901888") == 12 * GiB
    r = read_log("INFO 09-18 17:01:23 [gpu_worker.py:381] Available KV cache memory: 12.0 GiB\nGPU KV cache size: 11,520 tokens\n")
    assert r.available_kv_bytes.half == Fraction(GiB, 200)  # format_gib dropped a zero: still two decimals of precision


def test_pinned_start_uses_the_exact_pin() -> None:
    log = (
        "(APIServer pid=1) INFO 09-18 17:00:01 [api_utils.py:273] non-default args: {'model': 'Qwen/Qwen3.5-4B', 'max_model_len': 5120, "
        "'kv_cache_memory_bytes': '500M'}\n"
        "(EngineCore pid=1548) INFO 09-18 17:01:23 [gpu_worker.py:381] Initial free memory 10.06 GiB, reserved 0.49 GiB memory for KV Cache "
        "as specified by kv_cache_memory_bytes config and skipped memory profiling.\n"
        "(EngineCore pid=1548) INFO 09-18 17:01:23 [kv_cache_utils.py:1710] GPU KV cache size: 11,520 tokens\n"
    )
    r = read_log(log)
    assert r.kv_cache_memory_bytes.value == 524_288_000  # 500M = 500 x 2^20
    assert r.bytes_per_token.value == Fraction(524_288_000, 11_520) and r.bytes_per_token.low == r.bytes_per_token.high
    assert r.free_memory_bytes.value == round(Fraction("10.06") * GiB)


def test_v0_34_reads_the_pool_measured_after_warmup() -> None:
    """vLLM 0.34.0's extensible KV cache prints 'Available KV cache memory' for the address range it
    reserves, then sizes the pool after warmup and prints it in one line (measure_kv_cache_blocks,
    vllm/v1/worker/extensible_kv_cache.py: its format string, filled as a start fills it); the reader
    takes that pool, and the tokens printed after it, and says which figure is which."""
    log = (
        "(EngineCore pid=2211) INFO 12-01 10:00:01 [gpu_worker.py:796] Available KV cache memory: 6.54 GiB\n"
        "(EngineCore pid=2211) INFO 12-01 10:00:09 [extensible_kv_cache.py:693] Memory after warmup: 6.91 GiB free, 0.01 GiB committed to the "
        "KV cache, 1.57 GiB kept for transient activations (1.57 GiB allocated at peak, 0.00 GiB of torch reservation growth); 509 KV cache "
        "blocks (4.47 GiB) fit within the requested 23.68 GiB. Torch may reserve up to 17.50 GiB.\n"
        "(EngineCore pid=2211) INFO 12-01 10:00:09 [kv_cache_utils.py:1160] GPU KV cache size: 32,576 tokens\n"
    )
    r = read_log(log)
    assert r.available_kv_bytes.value == round(Fraction("4.47") * GiB) and r.available_kv_bytes.line_no == 2
    assert r.bytes_per_token.value == Fraction(round(Fraction("4.47") * GiB), 32_576)
    (said,) = [n for n in r.notes if n.startswith("vLLM sized the pool after warmup")]
    assert said.endswith("4.47 GiB (line 2); 'Available KV cache memory' 6.54 GiB (line 1) is the range it reserved")
    # before 0.34.0, or with it off, the profiled figure stays the pool
    assert read_log(log.split("\n")[0] + "\n" + log.split("\n")[2] + "\n").available_kv_bytes.value == round(Fraction("6.54") * GiB)


def test_ranks_that_disagree_give_the_smallest_pool() -> None:
    log = (
        "(Worker_TP0 pid=1) INFO 05-09 10:37:04 [gpu_worker.py:460] Available KV cache memory: 11.06 GiB\n"
        "(Worker_TP1 pid=2) INFO 05-09 10:37:04 [gpu_worker.py:460] Available KV cache memory: 11.02 GiB\n"
        "(EngineCore pid=3) INFO 05-09 10:37:05 [kv_cache_utils.py:2146] GPU KV cache size: 623,873 tokens\n"
    )
    r = read_log(log)
    assert r.available_kv_bytes.value == round(Fraction("11.02") * GiB) and r.available_kv_bytes.line_no == 2
    assert any("11.06 GiB (line 1), 11.02 GiB (line 2)" in n for n in r.notes)


def test_data_parallel_ranks_each_have_their_own_pool() -> None:
    r = public("50")  # EngineCore_0 .. EngineCore_3 (0.10.1): four engines, four pools
    assert r.available_kv_bytes.value == round(Fraction("28.47") * GiB) and r.available_kv_bytes.line_no == 1
    assert r.kv_tokens.value == 982_928 and r.kv_tokens.line_no == 5  # DP0's, not the smallest (978,000 on DP2)
    assert r.data_parallel_size.value == 4
    assert not any("different figures" in n for n in r.notes)
    (pool,) = [n for n in r.notes if n.startswith("available KV cache memory")]
    assert "DP0 28.47 GiB (line 1), DP1 28.33 GiB (line 4), DP2 28.33 GiB (line 3), DP3 28.47 GiB (line 2); reading DP0's" in pool
    # 0.11 on: "EngineCore_DP1" and "Worker_DP1_TP0" name the rank the same way
    text = "\n".join(
        f"(Worker_DP{d}_TP{t} pid={d}{t}) INFO 05-01 10:00:0{d} [gpu_worker.py:316] Available KV cache memory: {gib} GiB"
        for d, gib in ((0, "20.00"), (1, "19.50"))
        for t in (0, 1)
    )
    r = read_log(text)
    assert r.available_kv_bytes.value == 20 * GiB and r.data_parallel_size.value == 2


def test_tensor_parallel_ranks_of_one_engine_still_give_the_smallest() -> None:
    r = public("51")  # Worker_DP0_TPn_EPn: one engine's eight ranks, 6.43 and 6.44 GiB
    assert r.available_kv_bytes.value == round(Fraction("6.43") * GiB)
    assert any("different figures" in n for n in r.notes)
    assert r.data_parallel_size is None and any("data_parallel_size is at least 2" in n for n in r.notes)
    assert r.expert_parallel is not None and r.expert_parallel.line_no == 1


def test_expert_parallel_line_gives_the_group_and_the_experts() -> None:
    # as vLLM prints it (fused_moe/expert_map_manager.py, 0.26; fused_moe/layer.py before): 256 experts over 3 ranks
    line = (
        "(Worker_TP{t}_EP{t} pid=1) INFO 08-20 16:42:29 [expert_map_manager.py:245] [EP Rank {t}/3] Expert parallelism is enabled. "
        "Expert placement strategy: linear. Local/global number of experts: {n}/256. Experts local to global index map: 0->0, 1->1.\n"
        "(Worker_TP{t}_EP{t} pid=1) INFO 08-20 17:20:27 [gpu_model_runner.py:5347] Model loading took 30.00 GiB memory and 20.5 seconds\n"
    )
    r = read_log("".join(line.format(t=t, n=n) for t, n in ((0, 86), (1, 85), (2, 85))))
    assert r.expert_parallel.value == (3, 86, 256)
    assert any("expert parallel over 3 ranks: 86 of the 256 experts" in n for n in r.notes)
    _, a = answer_text(line.format(t=0, n=86))
    assert ("--enable-expert-parallel", None, False) in a.command_flags


def test_v019_debug_profile_terms_and_not_the_start_snapshots_context() -> None:
    # "worker init memory snapshot: ... total_memory=79.19GiB, ..., non_torch_memory=0.51GiB" (gpu_worker.py:284) is
    # the CUDA context before loading; the profile's terms are in "Memory profiling takes ..." (gpu_worker.py:435)
    text = (ROOT / "logs" / "starts" / "81-v0190-llama31-8b-h100-16k-llmd-planner.log").read_text(encoding="utf-8")
    r = read_log(text)
    assert r.non_torch_bytes.value == round(Fraction("0.25") * GiB) and r.non_torch_bytes.line_no == 15
    assert r.activation_peak_bytes.value == round(Fraction("1.89") * GiB) and r.activation_peak_bytes.line_no == 15
    assert r.total_memory_bytes.value == round(Fraction("79.19") * GiB) and r.total_memory_bytes.line_no == 6
    # a start whose excerpt has no "Model loading took": the profile's weights stand in
    r = read_log((ROOT / "logs" / "starts" / "84-v0190-gemma2-2b-h100-llmd-planner.log").read_text(encoding="utf-8"))
    assert r.model_loading_bytes.value == round(Fraction("4.9") * GiB) and r.non_torch_bytes.value == round(Fraction("0.24") * GiB)


def test_sglang_target_and_drafter_pools_add_up() -> None:
    r = public("27")
    assert r.kv_tokens.value == 454_112 and r.kv_cache_dtype.value == "torch.float8_e4m3fn"
    assert any("target's and the drafter's" in n for n in r.notes)
    assert round(r.bytes_per_token.value) == 21_470  # (3.46 + 3.46 + 1.08 + 1.08) GiB / 454,112


def test_speculative_decoding_and_the_drafter_in_the_weights() -> None:
    log = (
        "INFO 10-01 10:00:00 [core.py:74] Initializing a V1 LLM engine (v0.10.1) with config: model='Qwen/Qwen3-8B', "
        "speculative_config=SpeculativeConfig(method='eagle3', model='AngelSlim/Qwen3-8B_eagle3', num_spec_tokens=3), "
        "tokenizer='Qwen/Qwen3-8B', dtype=torch.bfloat16, max_seq_len=32768, tensor_parallel_size=1, kv_cache_dtype=auto\n"
        "INFO 10-01 10:00:09 [gpu_model_runner.py:1892] Loading drafter model...\n"
        "INFO 10-01 10:00:10 [gpu_model_runner.py:1920] Model loading took 16.2134 GiB and 9.1 seconds\n"
        "INFO 10-01 10:00:20 [gpu_worker.py:276] Available KV cache memory: 50.00 GiB\n"
        "INFO 10-01 10:00:20 [kv_cache_utils.py:849] GPU KV cache size: 364,080 tokens\n"
    )
    r = read_log(log)
    assert r.model.value == "Qwen/Qwen3-8B"  # not the drafter's model
    assert r.speculative.value == {"method": "eagle3", "num_speculative_tokens": 3}
    assert r.engine_version.value == "0.10.1" and r.era.value == "v1"
    assert r.max_model_len.value == 32768 and r.tensor_parallel_size.value == 1
    assert any("includes the drafter" in n for n in r.notes)


# --- prefixes, folding, repeats, order --------------------------------------------------------

BASE = [
    "Initializing a V1 LLM engine (v0.10.2) with config: model='Qwen/Qwen3-8B', speculative_config=None, tokenizer='Qwen/Qwen3-8B', "
    "dtype=torch.bfloat16, max_seq_len=16384, tensor_parallel_size=2, kv_cache_dtype=fp8, served_model_name=Qwen/Qwen3-8B",
    "Model loading took 8.8001 GiB and 12.345678 seconds",
    "Available KV cache memory: 6.37 GiB",
    "GPU KV cache size: 46,368 tokens",
    "Maximum concurrency for 16,384 tokens per request: 2.83x",
]
STYLES = {
    "bare": lambda m, i: m,
    "vllm header": lambda m, i: f"INFO 05-28 08:00:2{i} [gpu_worker.py:462] {m}",
    "EngineCore_DP0": lambda m, i: f"(EngineCore_DP0 pid=4108) INFO 05-28 08:00:2{i} [kv_cache_utils.py:1710] {m}",
    "VllmWorker rank": lambda m, i: f"(VllmWorker rank=1 pid=106) INFO 04-29 01:07:4{i} [gpu_model_runner.py:1347] {m}",
    "Worker_TP": lambda m, i: f"(Worker_TP0 pid=147) INFO 05-14 00:04:1{i} [gpu_worker.py:460] {m}",
    "APIServer": lambda m, i: f"(APIServer pid=1) INFO 07-06 22:52:0{i} [api_server.py:1] {m}",
    "Ray nested, repeated": lambda m, i: (
        f"(raylet) (RayWorkerWrapper pid=12134, ip=10.42.4.30) INFO 02-23 02:25:5{i} worker.py:241] {m} [repeated 3x across cluster]"
    ),
    "docker compose": lambda m, i: f"vllm-1  | INFO 05-28 08:00:2{i} [gpu_worker.py:462] {m}",
    "docker -t timestamps": lambda m, i: f"2026-05-28T08:00:2{i}.123456789Z INFO 05-28 08:00:2{i} [gpu_worker.py:462] {m}",
    "logfmt": lambda m, i: 'time="2026-05-28T08:00:2{}Z" level=info msg="{}"'.format(i, m.replace('"', '\\"')),
    "json lines": lambda m, i: json.dumps({"asctime": f"2026-05-28 08:00:2{i}", "levelname": "INFO", "message": m}),
    "ANSI colour": lambda m, i: f"\x1b[32mINFO\x1b[0m 05-28 08:00:2{i} \x1b[2m[gpu_worker.py:462]\x1b[0m {m}",
    "markdown quote": lambda m, i: f"> INFO 05-28 08:00:2{i} [gpu_worker.py:462] {m}",
    "torch rank": lambda m, i: f"[rank0]: INFO 05-28 08:00:2{i} [gpu_worker.py:462] {m}",
    "VllmWorker TP": lambda m, i: f"(VllmWorker TP1 pid=2211) INFO 07-02 11:00:0{i} [gpu_worker.py:227] {m}",
    "Worker_DP_TP_EP": lambda m, i: f"(Worker_DP0_TP7_EP7 pid=88) INFO 11-02 10:00:0{i} [gpu_worker.py:298] {m}",
    "journald": lambda m, i: f"Nov 30 12:00:0{i} spark-head vllm[4242]: INFO 11-30 12:00:0{i} [gpu_worker.py:298] {m}",
    "kubectl --prefix": lambda m, i: f"[pod/vllm-0/vllm] INFO 11-30 12:00:0{i} [gpu_worker.py:298] {m}",
    "no timestamp": lambda m, i: f"(EngineCore pid=258) INFO gpu_worker.py:440 {m}",
    "CRLF": lambda m, i: f"INFO 05-28 08:00:2{i} [gpu_worker.py:462] {m}\r",
    "progress bar redrawn": lambda m, i: f"Loading shards:  50%|##   | 1/2\rLoading shards: 100%|#####| 2/2\rINFO 05-28 08:00:2{i} [a.py:1] {m}",
}


def _figures(text: str) -> dict:
    out = read_log(text).to_json()
    out.pop("lines")
    assert out.pop("unreadable") == []
    return out


EXPECTED_BASE = {
    "engine": "vllm", "engine_version": "0.10.2", "tensor_parallel_size": 2, "max_model_len": 16384, "kv_cache_dtype": "fp8",
    "block_size": None, "gpu_memory_utilization": None, "mem_fraction_static": None, "kv_cache_memory_bytes": None,
    "model_loading_bytes": round(Fraction("8.8001") * GiB), "available_kv_bytes": round(Fraction("6.37") * GiB),
    "kv_tokens": 46368, "gpu_blocks": None, "max_concurrency": 2.83, "bytes_per_token": 147_510,
    "error": None, "estimated_max_model_len": None,
}  # fmt: skip


@pytest.mark.parametrize("style", STYLES)
def test_every_prefix_style_gives_the_same_figures(style: str) -> None:
    text = "\n".join(STYLES[style](m, i) for i, m in enumerate(BASE)) + "\n"
    assert _figures(text) == EXPECTED_BASE
    reading = read_log(text)
    assert reading.model.value == "Qwen/Qwen3-8B"
    assert reading.to_json()["lines"] == {"engine": 1, "engine_version": 1, "tensor_parallel_size": 1, "max_model_len": 1, "kv_cache_dtype": 1,
                                          "model_loading_bytes": 2, "available_kv_bytes": 3, "kv_tokens": 4, "max_concurrency": 5,
                                          "bytes_per_token": 3}  # fmt: skip
    assert reading.kv_tokens.line_text == "GPU KV cache size: 46,368 tokens"  # the message, its prefix peeled


def test_ranks_in_the_prefixes() -> None:
    lines = [f"(Worker_DP0_TP{n}_EP{n} pid=8{n}) INFO 11-02 10:00:00 [gpu_worker.py:298] Available KV cache memory: 6.37 GiB" for n in range(4)]
    r = read_log("\n".join(lines))
    assert r.tensor_parallel_size is None  # not printed: a note says at least 4
    assert any("tensor_parallel_size is at least 4" in n for n in r.notes)


def test_ranks_interleaved_and_lines_repeated_give_one_figure() -> None:
    lines = []
    for i, m in enumerate(BASE):
        for rank in (0, 1, 0, 1):
            lines.append(f"(Worker_TP{rank} pid=10{rank}) INFO 05-14 00:04:1{i} [gpu_worker.py:460] {m}")
    text = "\n".join(lines) + "\n"
    assert _figures(text) == EXPECTED_BASE
    assert read_log(text).notes == [n for n in read_log(text).notes if "different figures" not in n]


def test_lines_out_of_time_order() -> None:
    lines = [STYLES["EngineCore_DP0"](m, i) for i, m in enumerate(BASE)]
    random.Random(7).shuffle(lines)
    assert _figures("\n".join(lines)) == EXPECTED_BASE


@pytest.mark.parametrize("width", [80, 100, 120])
def test_lines_folded_by_a_terminal(width: int) -> None:
    folded = []
    for i, m in enumerate(BASE):
        line = STYLES["EngineCore_DP0"](m, i)
        folded.extend(line[k : k + width] for k in range(0, len(line), width))
    assert _figures("\n".join(folded)) == EXPECTED_BASE


def test_lines_rewrapped_in_a_quote() -> None:
    import textwrap

    wrapped = []
    for i, m in enumerate(BASE):
        wrapped.extend("> " + part for part in textwrap.wrap(STYLES["vllm header"](m, i), 60, break_long_words=False, break_on_hyphens=False))
    assert _figures("\n".join(wrapped)) == EXPECTED_BASE


# --- broken logs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "found no text"),
        ("\n\n   \n", "found no text"),
        ("GPU KV\x00\x00\x01 cache", "binary"),
        ("The quick brown fox jumps over the lazy dog.\nIt was a bright cold day in April.\n", "found none of the lines"),
    ],
)
def test_not_a_log(text: str, said: str) -> None:
    with pytest.raises(InputError, match=said) as error:
        read_log(text)
    assert "\n" not in str(error.value)


def test_truncated_mid_line_says_so() -> None:
    text = "\n".join(STYLES["vllm header"](m, i) for i, m in enumerate(BASE[:3])) + "\nINFO 05-28 08:00:23 [kv_cache_utils.py:1710] GPU KV cache size: 46,3"
    r = read_log(text)
    assert r.kv_tokens is None and r.available_kv_bytes.value == round(Fraction("6.37") * GiB)
    assert any("line 4 ends mid-line" in n for n in r.notes)


def test_two_models_interleaved_is_refused() -> None:
    other = [m.replace("Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct").replace("16,384", "8,192").replace("16384", "8192") for m in BASE]
    lines = [x for pair in zip(BASE, other, strict=True) for x in pair]
    with pytest.raises(InputError, match="two starts in one log: model 'Qwen/Qwen3-8B' at line 1 and 'meta-llama/Llama-3.1-8B-Instruct' at line 2"):
        read_log("\n".join(lines))


def test_every_trigger_holds_an_anchor() -> None:
    """The cheap first test may skip a line only if no rule could read it."""
    assert [r.trigger for r in RULES if not any(a in r.trigger for a in ANCHORS)] == []


def test_fifty_megabytes_streams() -> None:
    """Size, not time: a long serving log after the start lines is read to its end, once."""
    filler = "(APIServer pid=1) INFO 05-28 08:01:00 [loggers.py:123] Engine 000: Avg prompt throughput: 12.5 tokens/s, GPU KV cache usage: 1.2%\n"
    text = "\n".join(BASE) + "\n" + filler * 20_000
    assert _figures(text) == EXPECTED_BASE


# --- the command line ------------------------------------------------------------------------


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return run_calc("ingest", *args, stdin=stdin)


@pytest.mark.parametrize("entry", SOURCES[:3] + SOURCES[-3:], ids=_ids()[:3] + _ids()[-3:])
def test_cli_json_keys_always_present(entry: dict) -> None:
    done = run(str(PUBLIC / entry["file"]), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert list(out) == [*JSON_KEYS, "lines", "unreadable", *logverdict.JSON_KEYS]


def test_cli_reads_standard_input_and_prints_lines() -> None:
    done = run("-", stdin="\n".join(BASE) + "\n")
    assert done.returncode == 0, done.stderr
    assert "KV tokens               46,368" in done.stdout and "line 4" in done.stdout
    assert "bytes per token per rank: 147,510 B (147,394 to 147,626)" in done.stdout
    assert "full 16,384-token contexts: 2.83x" in done.stdout


@pytest.mark.parametrize("content", [b"", b"\x7fELF\x02\x01\x01\x00\x00\x00" * 50, b"Dear reader,\nthis is a letter, not a log.\n"])
def test_cli_refuses_what_is_not_a_log(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "not.log"
    path.write_bytes(content)
    done = run(str(path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith("calc: error: ") and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_cli_yaml_is_accepted_by_check(catalog_copy: Path) -> None:
    log = (
        "INFO 10-24 09:00:00 [core.py:74] Initializing a V1 LLM engine (v0.11.0) with config: model='nvidia/DeepSeek-V4-Flash-0731-NVFP4', "
        "max_seq_len=131072, tensor_parallel_size=2, kv_cache_dtype=fp8_ds_mla\n"
        "2026-10-24T09:05:00Z (EngineCore_DP0 pid=1) INFO 10-24 09:05:00 [gpu_model_runner.py:2653] Model loading took 79.29 GiB memory and 300.1 seconds\n"
        "(EngineCore_DP0 pid=1) INFO 10-24 09:06:00 [gpu_worker.py:298] Available KV cache memory: 9.31 GiB\n"
        "(EngineCore_DP0 pid=1) INFO 10-24 09:06:00 [kv_cache_utils.py:864] GPU KV cache size: 181,777 tokens\n"
        "(EngineCore_DP0 pid=1) INFO 10-24 09:06:00 [kv_cache_utils.py:868] Maximum concurrency for 131,072 tokens per request: 1.39x\n"
    )
    path = catalog_copy / "start.log"
    path.write_text(log)
    done = run(str(path), "--yaml", "--box", "dgx-spark", "--boxes", "2")
    assert done.returncode == 0, done.stderr
    entry = done.stdout
    assert "model: deepseek-v4-flash" in entry and "kv_pin: 9.31 GiB" in entry and "line: 4" in entry and "date: 2026-10-24" in entry
    starts = catalog_copy / "starts.yaml"
    starts.write_text(starts.read_text() + entry)
    check = run_calc("--catalog", str(catalog_copy), "check")
    assert check.returncode == 0, check.stderr
    assert "3 deployments" in check.stdout
    # and the catalog reads the start back as measured, with its line
    from calc.catalog.loader import load_dir

    added = load_dir(catalog_copy).deployments["deepseek-v4-flash-0731-nvfp4-log"]
    start = added["starts"][0]
    assert start["kv_pin"] == round(Fraction("9.31") * GiB)
    assert start["kv_tokens"].value == 181_777 and start["kv_tokens"].line == 4 and start["kv_tokens"].kind == "measured"
    assert start["weights_loaded"].value == round(Fraction("79.29") * GiB) and start["weights_loaded"].date == "2026-10-24"
    assert added["engine"] == "vLLM 0.11.0" and added["tp"] == 2 and added["settings"]["max_model_len"] == 131072


def test_cli_yaml_needs_a_box() -> None:
    done = run("-", "--yaml", stdin="\n".join(BASE) + "\n")
    assert done.returncode == 2 and "calc: error:" in done.stderr


# --- the catalog's own deployment -------------------------------------------------------------


def test_sample_of_generation_235_agrees_with_the_catalog(catalog) -> None:
    from calc.engine.derive import start_by_generation
    from calc.logs.logread import with_pin

    reading = read_log((ROOT / "logs" / "samples" / "dsv4-flash-gen235.log").read_text(encoding="utf-8"))
    start = start_by_generation(catalog.deployments["dsv4-flash-pair"], 235)
    assert reading.model_loading_bytes.value == start["weights_loaded"].value
    assert reading.kv_tokens.value == start["kv_tokens"].value
    assert float(reading.max_concurrency.value) == float(start["concurrency"].value)
    assert reading.bytes_per_token is None  # the quoted lines hold no pool
    pinned = with_pin(reading, start["kv_pin"], "the catalog's pin")
    assert pinned.bytes_per_token.value == Fraction(10**10, 181_777)  # 55,012.5 B, exact: the pin is exact
    assert pinned.bytes_per_token.low == pinned.bytes_per_token.high


def test_cli_pin_and_model_for_a_log_that_names_neither() -> None:
    sample = str(ROOT / "logs" / "samples" / "dsv4-flash-gen235.log")
    done = run(sample, "--model", "deepseek-v4-flash", "--pin", "10e9")
    assert done.returncode == 0, done.stderr
    assert "bytes per token per rank: 55,012 B" in done.stdout
    assert "deepseek-v4-flash: 55,011 B/token (fp8_ds_mla, TP=2, measured" in done.stdout
    refused = run(sample, "--model", "no-such-model")
    assert refused.returncode == 2 and "expected one of deepseek-v4-flash" in refused.stderr


def test_sglang_server_args_and_mla_pool() -> None:
    log = (
        "[2025-03-07 09:24:01] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3', tokenizer_path='deepseek-ai/DeepSeek-V3', "
        "tokenizer_mode='auto', load_format='auto', trust_remote_code=True, dtype='auto', kv_cache_dtype='auto', quantization=None, "
        "context_length=None, device='cuda', served_model_name='deepseek-ai/DeepSeek-V3', mem_fraction_static=0.88, "
        "max_running_requests=None, max_total_tokens=None, chunked_prefill_size=8192, tp_size=8, page_size=1, speculative_algorithm=None)\n"
        "[2025-03-07 09:25:11 TP0] Load weight end. type=DeepseekV3ForCausalLM, dtype=torch.bfloat16, avail mem=36.51 GB, mem usage=83.11 GB.\n"
        "[2025-03-07 09:25:12 TP0] KV Cache is allocated. #tokens: 226480, KV size: 14.25 GB\n"
        "[2025-03-07 09:25:12 TP1] KV Cache is allocated. #tokens: 226480, KV size: 14.25 GB\n"
        "[2025-03-07 09:25:20 TP0] max_total_num_tokens=226480, chunked_prefill_size=8192, max_prefill_tokens=16384, "
        "max_running_requests=2048, context_len=163840, available_gpu_mem=21.87 GB\n"
    )
    r = read_log(log)
    got = r.to_json()
    assert got["engine"] == "sglang" and got["mem_fraction_static"] == 0.88 and got["tensor_parallel_size"] == 8
    assert got["kv_cache_dtype"] == "auto" and got["max_model_len"] == 163_840 and got["kv_tokens"] == 226_480
    assert got["block_size"] == 1  # SGLang's page_size
    assert got["model_loading_bytes"] == round(Fraction("83.11") * GiB)  # "mem usage" in GiB (get_available_gpu_memory)
    assert got["available_kv_bytes"] == round(Fraction("14.25") * GiB)  # one MLA pool a rank, alike on both ranks
    assert r.model.value == "deepseek-ai/DeepSeek-V3" and r.date.value == "2025-03-07"
    assert round(r.bytes_per_token.value) == 67_559  # 14.25 x 2^30 / 226,480 = 67,559.3


def test_decode_context_parallel_multiplies_the_printed_tokens() -> None:
    log = (
        "INFO 10-01 10:00:20 [gpu_worker.py:298] Available KV cache memory: 20.00 GiB\n"
        "INFO 10-01 10:00:20 [kv_cache_utils.py:1087] Multiplying the GPU KV cache size by the dcp_world_size 4.\n"
        "INFO 10-01 10:00:20 [kv_cache_utils.py:1090] GPU KV cache size: 1,200,000 tokens\n"
    )
    r = read_log(log)
    assert r.dcp_size.value == 4 and r.kv_tokens.value == 1_200_000
    assert r.bytes_per_token.value == Fraction(20 * GiB * 4, 1_200_000)  # per rank: the printed count is 4 ranks' worth


def test_serve_command_in_the_log() -> None:
    log = (
        "$ vllm serve Qwen/Qwen2.5-Coder-3B --max-model-len 16384 --kv-cache-memory-bytes 750M --tensor-parallel-size 1 --kv-cache-dtype fp8\n"
        "(EngineCore pid=2122) INFO 09-19 12:40:21 [gpu_worker.py:381] Initial free memory 10.18 GiB, reserved 0.73 GiB memory for KV Cache "
        "as specified by kv_cache_memory_bytes config and skipped memory profiling.\n"
        "(EngineCore pid=2122) INFO 09-19 12:40:21 [kv_cache_utils.py:1710] GPU KV cache size: 21,328 tokens\n"
    )
    r = read_log(log)
    assert r.kv_cache_memory_bytes.value == 786_432_000 and r.kv_cache_memory_bytes.line_no == 1  # 750M = 750 x 2^20, exact
    assert r.bytes_per_token.value == Fraction(786_432_000, 21_328)
    assert r.max_model_len.value == 16384 and r.kv_cache_dtype.value == "fp8" and r.model.value == "Qwen/Qwen2.5-Coder-3B"


def test_decode_context_parallel_on_a_real_log() -> None:
    """vllm-project/recipes, moonshotai/Kimi-K2-Think.md (https://github.com/vllm-project/recipes/blob/main/moonshotai/Kimi-K2-Think.md),
    "DCP Gain Analysis": the same pool at TP8, without and with DCP8."""
    tp8 = (
        "(Worker_TP0 pid=591236) INFO 11-06 12:08:54 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\n"
        "(EngineCore_DP0 pid=591074) INFO 11-06 12:08:55 [kv_cache_utils.py:1229] GPU KV cache size: 715,072 tokens\n"
    )
    dcp8 = (
        "(Worker_TP0 pid=666845) INFO 11-06 15:34:58 [gpu_worker.py:349] Available KV cache memory: 46.80 GiB\n"
        "(EngineCore_DP0 pid=666657) INFO 11-06 15:34:59 [kv_cache_utils.py:1224] Multiplying the GPU KV cache size by the dcp_world_size 8.\n"
        "(EngineCore_DP0 pid=666657) INFO 11-06 15:34:59 [kv_cache_utils.py:1229] GPU KV cache size: 5,721,088 tokens\n"
    )
    plain, split = read_log(tp8), read_log(dcp8)
    assert round(plain.bytes_per_token.value) == 70_274  # 46.80 x 2^30 = 50,251,117,363; / 715,072 = 70,274.2
    assert round(split.bytes_per_token.value) == 70_268  # / (5,721,088 / 8 = 715,136): the same rank, the same cost
    newer = dcp8.replace("by the dcp_world_size 8.", "by the cp_world_size 8 (pcp_world_size 2 * dcp_world_size 4).")
    assert read_log(newer).dcp_size.value == 8  # the multiplier is pcp x dcp


def test_a_log_whose_line_breaks_were_lost() -> None:
    """As issue bodies are sometimes scraped or pasted: every message on one line."""
    flat = " ".join(STYLES["EngineCore_DP0"](m, i) for i, m in enumerate(BASE)) + " Capturing CUDA graph shapes: 100%|####| 67/67"
    assert _figures(flat) == EXPECTED_BASE


@pytest.mark.parametrize("entry", SOURCES, ids=_ids())
def test_cli_text_and_json_on_every_public_log(entry: dict, capsys) -> None:
    from calc.present.cli import main

    path = str(PUBLIC / entry["file"])
    assert main(["ingest", path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == [*JSON_KEYS, "lines", "unreadable", *logverdict.JSON_KEYS] and out["unreadable"] == []
    assert out["verdict"] in logverdict.VERDICTS  # every log gets a verdict
    assert (out["failure_phase"] is not None) == (out["verdict"] in ("refused", "killed")), entry["file"]
    assert main(["ingest", path]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{path}: a {entry['engine']}") and "Read:" in text and "Derived:" in text
    assert f"Verdict: {out['verdict']} (" in text


def test_sglang_drafter_weights_add_to_the_targets() -> None:
    log = (
        "[2026-01-05 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tp_size=2, mem_fraction_static=0.85, "
        "speculative_algorithm='EAGLE3', speculative_draft_model_path='Tengyunw/qwen3_8b_eagle3', speculative_num_steps=3, speculative_num_draft_tokens=4)\n"
        "[2026-01-05 10:00:10 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=60.12 GB, mem usage=7.72 GB.\n"
        "[2026-01-05 10:00:10 TP1] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=60.10 GB, mem usage=7.72 GB.\n"
        "[2026-01-05 10:00:12 TP0] Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, avail mem=59.31 GB, mem usage=0.81 GB.\n"
        "[2026-01-05 10:00:12 TP1] Load weight end. type=LlamaForCausalLMEagle3, dtype=torch.bfloat16, avail mem=59.29 GB, mem usage=0.81 GB.\n"
    )
    from calc.answers.ingest import drafter_verdict

    r = read_log(log)
    assert r.model_loading_bytes.value == round(Fraction("8.53") * GiB)  # 7.72 + 0.81 GiB on each rank
    assert r.speculative.value == {"method": "EAGLE3", "num_speculative_tokens": 3}  # speculative_num_steps
    assert drafter_verdict(r)[0] == "yes"


def test_one_model_named_by_its_path_and_by_its_id() -> None:
    log = (
        "(APIServer pid=1) INFO 10-01 10:00:00 [api_utils.py:273] non-default args: {'model': '/models/Qwen3-8B', 'max_model_len': 16384}\n"
        "(EngineCore_DP0 pid=2) INFO 10-01 10:00:05 [core.py:74] Initializing a V1 LLM engine (v0.11.0) with config: model='/models/Qwen3-8B/', "
        "speculative_config=None, max_seq_len=16384\n"
        "(EngineCore_DP0 pid=2) INFO 10-01 10:01:00 [kv_cache_utils.py:864] GPU KV cache size: 46,368 tokens\n"
    )
    assert read_log(log).kv_tokens.value == 46_368


def test_overhead_figures_of_the_memory_profile_and_the_graphs() -> None:
    r = public("03")  # "non_torch_memory takes 0.03GiB; PyTorch activation peak memory takes 1.42GiB"
    assert r.non_torch_bytes.value == round(Fraction("0.03") * GiB) and r.activation_peak_bytes.value == round(Fraction("1.42") * GiB)
    r = public("45")  # "Graph capturing finished in 14 secs, took 0.04 GiB"; "... 1.65 GiB (estimated)"
    assert r.cuda_graph_taken_bytes.value == round(Fraction("0.04") * GiB) and r.cuda_graph_taken_bytes.line_no == 54
    assert r.cuda_graph_bytes.value == round(Fraction("1.65") * GiB)
    r = public("35")  # non-default args: 'max_num_batched_tokens': 8192, 'max_num_seqs': 1
    assert r.max_num_batched_tokens.value == 8192 and r.max_num_seqs.value == 1


def test_a_command_line_alone_is_not_a_log() -> None:
    with pytest.raises(InputError, match="found a command line or an argument list in 2 lines but none of the lines a start prints"):
        read_log("To serve it:\nvllm serve Qwen/Qwen3-8B --max-model-len 16384 --kv-cache-memory-bytes 10e9\n")


# --- logs the reader had not seen when it was written (61-80), and careless pastes -------------


def _text(prefix: str) -> str:
    (entry,) = [e for e in SOURCES if e["file"].startswith(prefix)]
    return (PUBLIC / entry["file"]).read_text(encoding="utf-8")


def test_text_form_shows_counts_without_their_punctuation_and_marks_what_was_worked_out(catalog) -> None:
    from calc.present.commands.ingest import render_ingest

    shown = render_ingest(catalog, public("62"), "62.log")
    assert "  GPU blocks              6001                         line 3" in shown
    assert "  requested memory        71.29 GiB (76,547,054,633 B) line 1" in shown  # 'can use ... = 71.29GiB'
    shown = render_ingest(catalog, public("71"), "71.log")
    assert "  block_size              16                           worked out, not printed (see Notes)" in shown
    assert "block size 16: 997.08x x 2,048 / 127,626 blocks = 16.00" in shown


def test_the_suggestion_line_splits_the_memory() -> None:
    r = public("63")  # vllm-ascend: "Actual usage: 1.14 GiB for weights, 0.22 GiB for peak activation, 0.13 GiB for non-torch memory"
    assert r.model_loading_bytes.value == round(Fraction("1.14") * GiB)
    assert r.activation_peak_bytes.value == round(Fraction("0.22") * GiB)
    assert r.non_torch_bytes.value == round(Fraction("0.13") * GiB)
    assert r.requested_memory_bytes.value == round(Fraction("55.14") * GiB) and r.error is None


def test_a_traceback_without_its_exception_says_the_start_failed() -> None:
    r = public("68")
    assert r.error is None
    assert any("a traceback begins at line 3, but the paste holds no exception line after it" in n for n in r.notes)
    r = read_log(_text("68") + "  | [2025-03-10T15:07:20Z] ERROR 03-10 08:07:20 [core.py:302] RuntimeError: CUDA error: an illegal memory access\n")
    assert r.error is None
    assert any("ends in 'RuntimeError: CUDA error: an illegal memory access' (line 10)" in n for n in r.notes)
    assert not any("traceback" in n for n in public("04").notes + public("64").notes)  # a known failure says what it was


def test_sglang_profile_of_no_tokens_is_a_failure() -> None:
    r = public("80")
    assert r.error.value == "no_kv_memory" and r.error.line_no == 3
    assert r.kv_tokens is None
    assert any("left -561981 tokens for the KV cache (line 3)" in n for n in r.notes)


def test_a_vllm_log_and_an_sglang_log_in_one_paste_are_refused() -> None:
    with pytest.raises(InputError, match="two starts in one log: a vLLM line at line 1 and an SGLang line at line 4"):
        read_log(_text("76") + _text("78"))  # 76 is three vLLM lines


def test_a_log_pasted_twice_reads_as_once() -> None:
    once, twice = public("72").to_json(), read_log(_text("72") + _text("72")).to_json()
    assert {k: v for k, v in twice.items() if k != "lines"} == {k: v for k, v in once.items() if k != "lines"}


def test_line_breaks_pasted_as_backslash_n() -> None:
    text = _text("22")
    joined = read_log(text.replace("\n", "\\n")).to_json()
    assert {k: v for k, v in joined.items() if k != "lines"} == {k: v for k, v in public("22").to_json().items() if k != "lines"}
    assert joined["gpu_memory_utilization"] == 0.98


def test_a_figure_no_engine_prints_is_skipped_with_a_note() -> None:
    text = "INFO 01-01 00:00:00 [a.py:1] Model loading took " + "9" * 5000 + " GiB\nINFO 01-01 00:00:00 [a.py:1] GPU KV cache size: 5 tokens\n"
    r = read_log(text)
    assert r.model_loading_bytes is None and r.kv_tokens.value == 5
    assert any("line 1 holds a figure of more than 32 digits" in n for n in r.notes)
    with pytest.raises(InputError, match="found only figures of more than 32 digits"):
        read_log("GPU KV cache size: " + "1" * 100000 + " tokens")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-8-sig", "cp1252"])
def test_cli_reads_a_log_saved_by_windows(tmp_path: Path, encoding: str) -> None:
    path = tmp_path / "start.log"
    text = _text("22").replace("\n", "\r\n")
    path.write_bytes((("\u201cpasted\u201d\r\n" if encoding == "cp1252" else "") + text).encode(encoding))
    done, plain = run(str(path), "--json"), run(str(PUBLIC / [e for e in SOURCES if e["file"].startswith("22")][0]["file"]), "--json")
    assert done.returncode == 0, done.stderr
    got, want = json.loads(done.stdout), json.loads(plain.stdout)
    assert {k: v for k, v in got.items() if k != "lines"} == {k: v for k, v in want.items() if k != "lines"}


@pytest.mark.parametrize(
    "hostile",
    [
        "(Worker " + "a=1" * 40 + " GPU KV cache size: 10 tokens",  # a pattern that can split "a=1a=1..." two ways takes 2^40 steps
        "(Worker " + "A1" * 200_000 + ") GPU KV cache size: 10 tokens",
        "(" * 5000 + " GPU KV cache size: 10 tokens",
        "a=1" * 350_000 + "\nGPU KV cache size: 10 tokens",  # a 1 MB line
        "x" + " " * 200_000 + "x [repeated 2x across cluster]\nGPU KV cache size: 10 tokens",
        "args: a" + " " * 200_000 + ")\nGPU KV cache size: 10 tokens",
    ],
    ids=["process-a=1", "process-tags", "parens", "megabyte", "ray-repeated", "settings-spaces"],
)
def test_hostile_lines_are_read_in_linear_time(hostile: str) -> None:
    """Every pattern reads a line in one pass: none can split the same characters two ways."""
    assert read_log(hostile).kv_tokens.value == 10


def test_sglang_not_enough_memory_alone_is_an_sglang_log() -> None:
    """gpustack/gpustack#3831 (https://github.com/gpustack/gpustack/issues/3831): the one line the report quotes, SGLang 0.5.6.post1."""
    line = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. Current value: self.server_args.mem_fraction_static=0.2\n"
    r = read_log(line)
    assert r.engine.value == "sglang" and r.error.value == "no_kv_memory"
    assert r.mem_fraction_static.value == Fraction("0.2") and r.mem_fraction_static.line_no == 1
    assert read_log(line.replace("self.server_args.", "")).mem_fraction_static.value == Fraction("0.2")


def test_docker_desktop_timestamp_and_bar_are_peeled() -> None:
    """Docker Desktop's log view prints "YYYY-MM-DD hh:mm:ss.mmm | " before each line (a public gemma-4 NVFP4 write-up,
    vLLM 0.19.2rc1; the rank line is vLLM 0.10.2's, from a public Qwen3-235B 8xL40S write-up, behind the same prefix)."""
    log = (
        "2026-04-24 00:40:09.899 | (EngineCore pid=176) INFO 04-23 22:40:09 [gpu_worker.py:436] Available KV cache memory: 7.15 GiB\n"
        "2026-04-24 00:40:10.001 | (Worker_TP3_EP3 pid=2081) INFO 09-24 20:53:41 [gpu_worker.py:298] Available KV cache memory: 10.65 GiB\n"
        "2026-04-24 00:40:36.996 | (APIServer pid=1) INFO 04-23 22:40:36 [api_server.py:602] Starting vLLM server on http://0.0.0.0:8000\n"
    )
    r = read_log(log)
    assert r.available_kv_bytes.line_text == "Available KV cache memory: 7.15 GiB" and r.date.value == "2026-04-24"
    assert not any("ends mid-line" in n for n in r.notes) and not any("cut off" in m for m in r.missing)
    assert any("tensor_parallel_size is at least 4" in n for n in r.notes)


def test_long_lines_keep_their_rank_prefix() -> None:
    """vLLM 0.10.2's free-memory line runs past 300 characters (a public Qwen3-235B-FP8 8xL40S write-up, EP ranks):
    the prefix and the header after it are one message, not two."""
    line = (
        "INFO 09-24 20:54:35 [gpu_worker.py:391] Free memory on device (43.93/44.42 GiB) on startup. Desired GPU memory utilization is "
        "(0.9, 39.98 GiB). Actual usage is 27.72 GiB for weight, 1.4 GiB for peak activation, 0.21 GiB for non-torch memory, and 3.45 GiB "
        "for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=7564378828` to fit into requested memory, or "
        "`--kv-cache-memory=11809093120` to fully utilize gpu memory. Current kv cache memory in use is 11423138508 bytes."
    )
    log = f"(Worker_TP2_EP2 pid=2080) {line}\n(Worker_TP3_EP3 pid=2081) {line}\n"
    r = read_log(log)
    assert r.free_memory_bytes.line_text.startswith("Free memory on device (43.93/44.42 GiB)")
    assert any("rank prefixes show 2 tensor-parallel rank(s) (TP2, TP3)" in n for n in r.notes)
    plain = "(Worker_TP2_EP2 pid=2080) INFO 09-24 20:54:35 [default_loader.py:384] Loading weights took 26.99 seconds\n"
    r = read_log(plain + "(Worker_TP3_EP3 pid=2081) INFO 09-24 20:53:41 [gpu_worker.py:298] Available KV cache memory: 10.65 GiB\n")
    assert any("(TP2, TP3)" in n for n in r.notes)  # a line no rule reads still counts its rank


def test_older_cuda_graph_advice_gives_the_fraction() -> None:
    """vLLM 0.18 (vllm-project/vllm#39559, https://github.com/vllm-project/vllm/pull/39559): the advice names the fraction in use."""
    log = (
        "(EngineCore pid=1259857) INFO 04-13 19:51:24 [gpu_worker.py:470] In v0.19, CUDA graph memory profiling will be enabled by default "
        "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1), which more accurately accounts for CUDA graph memory during KV cache allocation. "
        "To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 and increase --gpu-memory-utilization from 0.9000 to 0.9690 "
        "to maintain the same effective KV cache size.\n"
    )
    r = read_log(log)
    assert r.gpu_memory_utilization.value == Fraction("0.9") and r.gpu_memory_utilization.line_no == 1


def test_sglang_pool_printed_as_zero_is_below_the_printing() -> None:
    """A public SGLang write-up's bench_one_batch run of gpt-oss (SGLang 0.5.x): 4,096 tokens print as 0.00 GB each for K and V."""
    log = (
        "[2025-09-28 17:07:10 TP0] Load weight end. type=GptOssForCausalLM, dtype=torch.bfloat16, avail mem=91.91 GB, mem usage=2.72 GB.\n"
        "[2025-09-28 17:07:10 TP0] KV Cache is allocated. #tokens: 4096, K size: 0.00 GB, V size: 0.00 GB\n"
        "[2025-09-28 17:07:10 TP0] Memory pool end. avail mem=89.83 GB\n"
    )
    r = read_log(log)
    assert r.kv_tokens.value == 4096 and r.available_kv_bytes is None and r.bytes_per_token is None
    assert r.to_json()["available_kv_bytes"] is None
    assert any("0.00 GB + 0.00 GB (line 2)" in n and "at most 10,737,419 B / 4,096 tokens = 2,622 B" in n for n in r.notes)


def test_cut_lines_are_told_from_whole_ones() -> None:
    """Three pastes cut at the last line: after a decimal point (vLLM 0.19.2rc1, the gemma-4 NVFP4 write-up); after a complete
    error sentence (lemonade-sdk/vllm-rocm#5, https://github.com/lemonade-sdk/vllm-rocm/issues/5); inside the word after
    a whole max_model_len (gensyn-ai/rl-swarm#92, https://github.com/gensyn-ai/rl-swarm/issues/92, vLLM 0.7)."""
    kv = "(EngineCore pid=176) INFO 04-23 22:40:09 [kv_cache_utils.py:1319] GPU KV cache size: 62,496 tokens\n"
    r = read_log(kv + "(EngineCore pid=176) INFO 04-23 22:40:09 [kv_cache_utils.py:1324] Maximum concurrency for 256,000 tokens per request: 1.")
    assert r.max_concurrency is None and r.max_model_len.value == 256_000
    assert any("line 2 ends mid-line" in n for n in r.notes)
    error = (
        "2026-06-09 14:01:52.982 [Error] (Process) (EngineCore pid=42521) ERROR 06-09 14:01:52 [core.py:1136] ValueError: To serve at least "
        "one request with the models's max seq len (131072), (4.11 GiB KV cache is needed, which is larger than the available KV cache memory "
        "(4.0 GiB). Based on the available memory, the estimated maximum model length is 127776. Try increasing `gpu_memory_utilization` or "
        "decreasing `max_model_len` when ini"
    )
    r = read_log(error)
    assert r.error.value == "max_model_len" and r.estimated_max_model_len.value == 127_776
    assert not any("cut off" in m for m in r.missing) and not any("ends mid-line" in n for n in r.notes)
    assert any("line 1 ends mid-line" in n for n in public("63").notes)  # cut before the pool in use that ends the advice
    r = read_log(
        "- INFO 04-06 03:23:49 executor_base.py:108] # CUDA blocks: 19609, # CPU blocks: 21845\n"
        "- INFO 04-06 03:23:49 executor_base.py:113] Maximum concurrency for 32768 toke"
    )
    assert r.max_model_len.value == 32768 and r.max_concurrency is None
    assert any("line 2 ends mid-line" in n for n in r.notes)


def test_hybrid_token_count_without_the_concurrency_line_gives_no_request_cost() -> None:
    """The gemma-4 NVFP4 start (vLLM 0.19.2rc1, a hybrid model) without its concurrency line: 62,496 tokens per KV group
    from a 7.15 GiB pool would make one 256,000-token request 29 GiB, which a start that printed its token count cannot have."""
    from calc.answers.ingest import derived

    log = (
        "2026-04-24 00:37:47.169 | (APIServer pid=1) INFO 04-23 22:37:47 [model.py:1685] Using max model len 256000\n"
        "2026-04-24 00:40:09.899 | (EngineCore pid=176) INFO 04-23 22:40:09 [gpu_worker.py:436] Available KV cache memory: 7.15 GiB\n"
        "2026-04-24 00:40:09.899 | (EngineCore pid=176) INFO 04-23 22:40:09 [kv_cache_utils.py:1319] GPU KV cache size: 62,496 tokens\n"
    )
    r = read_log(log)
    assert r.bytes_per_token is None and r.kv_tokens.value == 62_496
    assert any("the figures are inconsistent" in n and "more than the 7.15 GiB pool" in n for n in r.notes)
    assert not any(d.name.startswith("one request") for d in derived(r))


def test_pool_in_use_in_bytes_and_the_graphs_of_the_free_memory_line() -> None:
    """vLLM 0.10.2 prints the pool in whole bytes at the end of the free-memory line (a public LLaVA-Mistral-7B H100 log);
    a later build prints it in GiB, and both name what the CUDA graphs took (a public Qwen3-235B-FP8 TP4 tutorial)."""
    log = (
        "(EngineCore_DP0 pid=3021) INFO 09-23 18:12:33 [gpu_worker.py:298] Available KV cache memory: 55.15 GiB\n"
        "(EngineCore_DP0 pid=3021) INFO 09-23 18:12:34 [kv_cache_utils.py:864] GPU KV cache size: 451,744 tokens\n"
        "(EngineCore_DP0 pid=3021) INFO 09-23 18:12:39 [gpu_worker.py:391] Free memory on device (78.66/79.19 GiB) on startup. Desired GPU "
        "memory utilization is (0.9, 71.27 GiB). Actual usage is 14.08 GiB for weight, 1.97 GiB for peak activation, 0.07 GiB for non-torch "
        "memory, and 0.67 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=58333988249` to fit into "
        "requested memory, or `--kv-cache-memory=66273897472` to fully utilize gpu memory. Current kv cache memory in use is 59212694937 bytes.\n"
    )
    r = read_log(log)
    assert r.available_kv_bytes.value == 59_212_694_937 and r.available_kv_bytes.half == 0 and r.available_kv_bytes.line_no == 3
    assert r.cuda_graph_taken_bytes.value == round(Fraction("0.67") * GiB)
    tp4 = (
        "(Worker_TP1 pid=771) INFO 08-21 18:22:06 [gpu_worker.py:789] Free memory on device (94.05/95.01 GiB) on startup. Desired GPU memory "
        "utilization is (0.9, 85.51 GiB). Actual usage is 56.89 GiB for consumed memory (weights + non-torch), 0.76 GiB for peak activation, "
        "and 0.32 GiB for CUDAGraph memory. Replace gpu_memory_utilization config with `--kv-cache-memory=29407858586` (27.39 GiB) to fit into "
        "requested memory, or `--kv-cache-memory=38581581312` (35.93 GiB) to fully utilize gpu memory. Current kv cache memory in use is 27.85 GiB.\n"
    )
    r = read_log(tp4)
    assert r.cuda_graph_taken_bytes.value == round(Fraction("0.32") * GiB) and r.available_kv_bytes.value == round(Fraction("27.85") * GiB)


def test_docker_run_command_gives_the_settings() -> None:
    """The same tutorial starts vLLM with docker run, one argument a line."""
    command = (
        "root@utho-gpu-rtxpro6000-8-62383:~# docker run -d --name vllm-tp4 \\\n"
        "  --gpus '\"device=1,4,5,6\"' \\\n"
        "  --ipc=host \\\n"
        "  -p 8000:8000 \\\n"
        "  -v /root/.cache/huggingface:/root/.cache/huggingface \\\n"
        "  -e HF_HUB_OFFLINE=1 \\\n"
        "  -e HF_HOME=/root/.cache/huggingface \\\n"
        "  -e VLLM_USE_DEEP_GEMM=0 \\\n"
        "  vllm/vllm-openai:latest \\\n"
        "    Qwen/Qwen3-235B-A22B-Instruct-2507-FP8 \\\n"
        "    --served-model-name qwen3-235b \\\n"
        "    --tensor-parallel-size 4 \\\n"
        "    --gpu-memory-utilization 0.90 \\\n"
        "    --max-model-len 32768 \\\n"
        "    --max-num-seqs 32 \\\n"
        "    --port 8000\n"
        "(EngineCore pid=558) INFO 08-21 18:21:55 [kv_cache_utils.py:2235] GPU KV cache size: 621,392 tokens\n"
    )
    for text in (command, "".join(f"vllm-1  | {line}\n" for line in command.splitlines())):  # and with every line prefixed
        r = read_log(text)
        assert r.tensor_parallel_size.value == 4 and r.tensor_parallel_size.line_no == 9
        assert r.gpu_memory_utilization.value == Fraction("0.9") and r.max_model_len.value == 32768 and r.max_num_seqs.value == 32


def test_two_starts_that_differ_only_in_utilization_are_refused() -> None:
    # the first start refused by the free-memory check at 0.9, the second started at 0.85: one paste, two starts
    first = (
        "(APIServer pid=1) INFO 05-01 10:00:00 [utils.py:326] non-default args: {'model_tag': 'Qwen/Qwen3-8B', 'gpu_memory_utilization': 0.9}\n"
        "(EngineCore_DP0 pid=2) ERROR 05-01 10:00:09 [core.py:708] ValueError: Free memory on device (70.0/79.19 GiB) on startup is less "
        "than desired GPU memory utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n"
    )
    second = (
        "(APIServer pid=3) INFO 05-01 10:05:00 [utils.py:326] non-default args: {'model_tag': 'Qwen/Qwen3-8B', 'gpu_memory_utilization': 0.85}\n"
        "(EngineCore_DP0 pid=4) INFO 05-01 10:05:30 [gpu_worker.py:276] Available KV cache memory: 48.00 GiB\n"
    )
    with pytest.raises(InputError, match=r"found two starts in one log: gpu_memory_utilization 0\.9 at line 1 and 0\.85 at line 3"):
        read_log(first + second)
    assert read_log(first + first).error.value == "free_memory"  # the same start pasted twice is one start


def test_the_argument_dump_gives_data_and_expert_parallel() -> None:
    # non-default args as entrypoints/common/startup.py prints them (0.33.0; entrypoints/utils.py before)
    r = read_log(
        "(APIServer pid=1) INFO 05-01 10:00:00 [startup.py:96] non-default args: {'model_tag': 'Qwen/Qwen3-30B-A3B', "
        "'data_parallel_size': 4, 'enable_expert_parallel': True}\n"
        "(EngineCore_DP0 pid=2) INFO 05-01 10:00:09 [gpu_worker.py:316] Available KV cache memory: 20.00 GiB\n"
    )
    assert r.data_parallel_size.value == 4 and r.data_parallel_size.line_no == 1
    assert r.expert_parallel is not None and r.expert_parallel.line_no == 1


def test_a_forks_per_group_kv_lines_give_the_pool_blocks_and_the_cost_of_one_request() -> None:
    # log 87: the fork's pool line "usable block ids: 566 (num_blocks=567 incl. the null block; 406 ids per
    # 1,000,000-token request => 1.40x)" and seven group lines whose blocks per request add up to 406
    text = (PUBLIC / "87-glm53-fork-kv-capacity-log-per-group-blocks.log").read_text(encoding="utf-8")
    r = read_log(text)
    assert (r.gpu_blocks.value, r.gpu_blocks.line_no) == (567, 23)
    assert any("their blocks per request add up to the 406 the pool line prints" in n for n in r.notes)
    assert any("is int(567 / 406 x 1,000,000): the concurrency x max_model_len" in n for n in r.notes)
    assert any(n.startswith("maximum concurrency 1.40x (line 15) = 567 blocks / 406 blocks per request (line 23) = 1.3966") for n in r.notes)
    assert r.max_concurrency is not None and r.max_concurrency.exact == Fraction(567, 406)
    # without the stock concurrency line, and the pool line cut before its "=> 1.40x": 567 / 406 = 1.3966, shown 1.40x
    lines = text.splitlines()
    cut = [line.split(" => ")[0] if "usable block ids" in line else line for line in lines if "Maximum concurrency" not in line]
    r = read_log("\n".join(cut))
    assert r.max_concurrency is not None and r.max_concurrency.derived
    assert (r.max_concurrency.value, r.max_concurrency.exact, r.max_concurrency.line_no) == (Decimal("1.40"), Fraction(567, 406), 22)
    # without "Setting attention block size", the block size is the MLA group's, from its group line
    without = "\n".join(line for line in lines if "Setting attention block size" not in line)
    r = read_log(without)
    assert r.block_size is not None and (r.block_size.value, r.block_size.line_no) == (3584, 15)
    assert any("block size 3584 is the full-attention group's (group 0, MLAAttentionSpec" in n for n in r.notes)
    # a source build's "0.1.devN" is no release: its token count is not said to be the pool's blocks, as builds to 0.20.0 print it
    assert "builds up to 0.20.0" not in read_log(text).bytes_per_token.how


def test_no_drafter_only_where_the_settings_are_printed() -> None:
    from calc.answers.ingest import drafter_verdict

    # 01: the poster kept the profile, blocks and error lines, none of the settings lines
    assert drafter_verdict(public("01"))[0] == "unknown"
    # the argument dump (line 48, "non-default args: {...}") lists every setting that is not a default
    log = ROOT / "logs" / "public" / "phases" / "free-gb10-v0130-nomic-embed-reverified-max-len.log"
    said = drafter_verdict(read_log(log.read_text(encoding="utf-8")))
    assert said == ("no", "the settings the log prints (line 48) name no speculative decoding")


def test_a_traceback_after_the_start_is_not_the_starts() -> None:
    r = public("88")  # 'init engine ... took 40.98 seconds' (line 79), a request's ValueError at line 151
    (said,) = [n for n in r.notes if "traceback" in n]
    assert "comes after the start completed (line 79)" in said and "the start failed" not in said


def test_a_figure_cut_with_the_paste_is_said_as_cut_not_as_unprintable() -> None:
    # guardkit's DGX Spark log (public 88) pasted only up to "Available KV cache memory: 30.4"
    text = (PUBLIC / "88-v0130-gb10-qwen25-14b-fp8-request-error-after-start.log").read_text(encoding="utf-8")
    cut = text[: text.index("Available KV cache memory: 30.46") + len("Available KV cache memory: 30.4")]
    r = read_log(cut)
    assert r.available_kv_bytes is None
    assert "the KV pool in bytes: line 70, the log's last, is cut off before its figure ends" in r.missing
    assert "the figure of line 70, cut off" in r.missing
    assert not any("not one an engine prints" in n for n in r.notes)
