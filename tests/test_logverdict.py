"""One answer for a log (calc/answers/logverdict/): the verdict, the phase that failed, the least change
checked against the log's own figures, and the whole command; and the line shapes the reader
learnt for it, each on the real line. The logs are in logs/public/ and logs/public/phases/, each
with its public address in the SOURCES.yaml beside it."""

from __future__ import annotations

import json
import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, run_calc

from calc.answers import logverdict
from calc.answers.logverdict import PHASES, answer_text
from calc.logs.logread import read_log
from calc.units import InputError

PUBLIC = ROOT / "logs" / "public"
PHASE_LOGS = PUBLIC / "phases"
PHASE_SOURCES = yaml.safe_load((PHASE_LOGS / "SOURCES.yaml").read_text(encoding="utf-8"))
# the failed starts among the reader's own logs, by the phase each failed in
FAILED = {
    "kv_cache_allocation": ("03", "15", "16", "69", "70"),
    "max_model_len": ("01", "09", "17", "18", "19", "20", "29", "59", "66", "67"),
    "free_memory": ("14", "41", "42", "64", "65"),
    "sglang_not_enough_memory": ("40", "80"),
}


def _public(prefix: str) -> Path:
    (path,) = PUBLIC.glob(f"{prefix}-*.log")
    return path


def _answer(path: Path) -> tuple[object, logverdict.LogAnswer]:
    return answer_text(path.read_text(encoding="utf-8"))


def test_every_phase_log_has_its_source() -> None:
    assert {p.name for p in PHASE_LOGS.glob("*.log")} == {e["file"] for e in PHASE_SOURCES}
    for entry in PHASE_SOURCES:
        assert entry["url"].startswith("https://github.com/"), entry["file"]


@pytest.mark.parametrize("entry", PHASE_SOURCES, ids=[e["file"] for e in PHASE_SOURCES])
def test_phase_log(entry: dict) -> None:
    reading, a = _answer(PHASE_LOGS / entry["file"])
    want = entry["expected"]
    assert a.verdict == want["verdict"]
    assert a.failure_phase is not None and a.failure_phase["phase"] == want["failure_phase"]
    assert a.failure_phase["engine_source"] == PHASES[want["failure_phase"]][1]
    if "first_fix" in want:
        assert [a.fixes[0].flag, a.fixes[0].value] == want["first_fix"]
        assert a.fixes[0].passes is want["first_fix_passes"]
    if "model_loading_bytes" in want:
        assert reading.model_loading_bytes.value == want["model_loading_bytes"]  # type: ignore[attr-defined]


def test_at_least_three_real_logs_for_each_phase() -> None:
    found: dict[str, list[str]] = {}
    for entry in PHASE_SOURCES:
        found.setdefault(entry["expected"]["failure_phase"], []).append(entry["file"])
    for phase, prefixes in FAILED.items():
        for prefix in prefixes:
            _, a = _answer(_public(prefix))
            assert a.verdict == "refused" and a.failure_phase is not None, prefix
            assert a.failure_phase["phase"] == phase, prefix
            found.setdefault(phase, []).append(prefix)
    for phase in (
        "loading_weights",
        "profile_run",
        "sampler_warmup",
        "cuda_graph_capture",
        "kv_cache_allocation",
        "max_model_len",
        "free_memory",
        "sglang_not_enough_memory",
    ):
        assert len(found.get(phase, [])) >= 3, (phase, found.get(phase))


# --- the least change, checked against the log's own figures ------------------------------------


def test_refused_for_max_model_len_gets_the_engines_estimate_and_keeps_the_rest() -> None:
    # 17: gpt-oss-120b on an H100, 0.11: "the estimated maximum model length is 49170"
    _, a = _answer(_public("17"))
    first = a.fixes[0]
    assert (first.flag, first.value, first.passes) == ("--max-model-len", "49170", True)
    assert "--max-model-len 49170" in (a.command or "")
    assert a.command_changes[0]["was"] == "131072"


def test_refused_max_model_len_without_an_estimate_works_one_out_from_the_pool() -> None:
    # 20: 0.8's V1 one-request check prints no estimate; the pool and one request's need give it
    reading, a = _answer(_public("20"))
    first = a.fixes[0]
    pool, needed, length = reading.available_kv_bytes, reading.kv_needed_bytes, reading.max_model_len  # type: ignore[attr-defined]
    assert first.flag == "--max-model-len" and first.passes is True
    assert int(first.value) == 435286
    assert int(first.value) * needed.high <= pool.low * length.value  # the longest that fits at the printing's worst


def test_fp8_kv_is_offered_only_as_unchecked_when_the_log_hides_the_kv_dtype() -> None:
    _, a = _answer(_public("09"))  # the log does not print its KV dtype (the run used fp8)
    fp8 = [f for f in a.fixes if f.flag == "--kv-cache-dtype"]
    assert fp8 and fp8[0].passes is None and fp8[0].check.startswith("if the KV cache was 16-bit")


def test_free_memory_gets_the_largest_fraction_that_passes() -> None:
    reading, a = _answer(_public("14"))
    first = a.fixes[0]
    assert first.flag == "--gpu-memory-utilization" and first.passes is True
    free, total = reading.free_memory_bytes, reading.total_memory_bytes  # type: ignore[attr-defined]
    value = float(first.value)
    assert value * total.high <= free.low < (value + 0.01) * total.high


def test_sampler_fix_is_checked_by_the_torch_figures() -> None:
    _, a = _answer(PHASE_LOGS / "sampler-14452-v1-8x-rtx5080-32b.log")
    first = a.fixes[0]
    assert (first.flag, first.value, first.passes) == ("--max-num-seqs", "512", True)
    assert "1024" not in first.value and "0.87 GiB" in first.check and "0.93 GiB free" in first.check


# --- the whole command --------------------------------------------------------------------------


def test_command_keeps_every_flag_the_log_proves() -> None:
    _, a = _answer(_public("35"))  # 0.24's non-default args: parsers, served names, quantization, fp8 KV
    cmd = a.command or ""
    for part in (
        "vllm serve ~/.cache/huggingface/qwen3.6-35b-a3b-nvfp4", "--quantization modelopt", "--kv-cache-dtype fp8", "--trust-remote-code",
        "--reasoning-parser qwen3", "--tool-call-parser qwen3_coder", "--enable-auto-tool-choice", "--max-model-len 131072",
        "--max-num-seqs 1", "--limit-mm-per-prompt",
    ):  # fmt: skip
        assert part in cmd, part
    assert a.command_changes == ()
    # the dump's 'enable_prefix_caching': True and 'enable_chunked_prefill': True, given by the user
    assert "--enable-prefix-caching" in cmd and "--enable-chunked-prefill" in cmd and "--max-num-batched-tokens 8192" in cmd


def test_command_sets_off_what_the_argument_dump_sets_off_and_skips_the_config_lines_defaults() -> None:
    dump = (
        "(APIServer pid=1) INFO 05-01 10:00:00 [startup.py:120] non-default args: {'model_tag': 'Qwen/Qwen3-30B-A3B', "
        "'data_parallel_size': 2, 'enable_expert_parallel': True, 'enable_prefix_caching': False, 'enforce_eager': True, "
        "'cpu_offload_gb': 4, 'enable_lora': True, 'max_loras': 2, 'max_num_seqs': 64}\n"
        "(EngineCore_DP0 pid=2) INFO 05-01 10:00:09 [gpu_worker.py:316] Available KV cache memory: 20.00 GiB\n"
    )
    _, a = answer_text(dump)
    flags = {f: v for f, v, _ in a.command_flags}
    assert flags["--data-parallel-size"] == "2" and flags["--cpu-offload-gb"] == "4" and flags["--max-loras"] == "2"
    assert flags["--max-num-seqs"] == "64"
    for switch in ("--enable-expert-parallel", "--no-enable-prefix-caching", "--enforce-eager", "--enable-lora"):
        assert switch in flags and flags[switch] is None, switch
    # the engine's config line prints enable_prefix_caching whether set or not: not a flag the user gave
    _, b = _answer(_public("44"))
    assert "prefix-caching" not in (b.command or "")


def test_a_namespace_dump_prints_every_argument_so_its_defaults_are_not_flags() -> None:
    # V0's "args: Namespace(...)" holds every argument, enable_prefix_caching=False included when not given
    namespace = (
        "INFO 05-01 10:00:00 api_server.py:585] args: Namespace(host=None, port=8000, model='Qwen/Qwen2.5-7B', enable_prefix_caching=False, "
        "enable_chunked_prefill=None, max_model_len=8192, enforce_eager=False)\n"
        "INFO 05-01 10:00:09 worker.py:267] model weights take 14.0GiB; non_torch_memory takes 0.2GiB; PyTorch activation peak memory "
        "takes 1.0GiB; the rest of the memory reserved for KV Cache is 50.0GiB.\n"
    )
    _, a = answer_text(namespace)
    assert a.command == "vllm serve Qwen/Qwen2.5-7B \\\n  --max-model-len 8192"
    # a command line's --no-enable-prefix-caching is kept as given
    _, b = answer_text(
        "$ vllm serve Qwen/Qwen2.5-7B --no-enable-prefix-caching --max-model-len 8192\n"
        "(EngineCore_DP0 pid=2) INFO 05-01 10:00:09 [gpu_worker.py:316] Available KV cache memory: 20.00 GiB\n"
    )
    assert ("--no-enable-prefix-caching", None, False) in b.command_flags


def test_data_and_expert_parallel_on_real_logs() -> None:
    _, a = _answer(_public("50"))  # 0.10.1: EngineCore_0 .. EngineCore_3, one engine each DP rank
    assert ("--data-parallel-size", "4", False) in a.command_flags
    _, b = _answer(_public("51"))  # Worker_DP0_TPn_EPn: workers name an EP rank only with --enable-expert-parallel
    assert ("--enable-expert-parallel", None, False) in b.command_flags
    assert "--data-parallel-size" not in (b.command or "")  # only DP0 is in the paste: at least 2, not how many


def test_command_keeps_the_speculative_config_as_json() -> None:
    _, a = _answer(_public("26"))  # 0.25.1: SpeculativeConfig(method='mtp', model=..., num_spec_tokens=2)
    spec = next(v for f, v, _ in a.command_flags if f == "--speculative-config")
    assert json.loads(spec or "") == {"method": "mtp", "model": "unsloth/Qwen3.6-27B-NVFP4", "num_speculative_tokens": 2}
    assert "--trust-remote-code" in (a.command or "") and "--quantization compressed-tensors" in (a.command or "")


def test_sglang_log_gets_sglangs_launch_line() -> None:
    _, a = _answer(_public("80"))  # DP0 TP0 .. DP7 TP7: eight ranks
    assert (a.command or "").startswith("python -m sglang.launch_server") and "--tp-size 8" in (a.command or "")


# --- verdicts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("prefix", "verdict"), [("44", "started"), ("21", "killed"), ("10", "unknown"), ("14", "refused")])
def test_verdicts(prefix: str, verdict: str) -> None:
    _, a = _answer(_public(prefix))
    assert a.verdict == verdict


def test_killed_by_the_kernel_names_the_step_the_log_reached() -> None:
    _, a = _answer(_public("21"))  # V0 on a Jetson: blocks allocated, then "Killed"
    assert a.failure_phase is not None and a.failure_phase["phase"] == "cuda_graph_capture" and a.failure_phase["line"] == 7
    assert "the cause is not printed" in a.failure_phase["what"]


def test_a_paste_with_no_failure_and_no_start_line_is_still_refused() -> None:
    with pytest.raises(InputError, match="found none of the lines"):
        answer_text("hello\nworld\n")


# --- the reader's new shapes, each on its real line --------------------------------------------


def test_banner_version() -> None:
    # vLLM 0.23.0's logo (serve/utils/api_utils.py log_version_and_model), as a vLLM-Metal start prints it
    log = (
        "(APIServer pid=69600) INFO 06-15 16:52:16 [api_utils.py:339]        █     █     █▄   ▄█\n"
        "(APIServer pid=69600) INFO 06-15 16:52:16 [api_utils.py:339]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0.23.0\n"
        "(APIServer pid=69600) INFO 06-15 16:52:16 [api_utils.py:339]   █▄█▀ █     █     █     █  model   Qwen/Qwen3-0.6B\n"
        "(EngineCore pid=69652) INFO 06-15 16:52:29 [kv_cache_utils.py:1744] GPU KV cache size: 7,664 tokens\n"
    )
    r = read_log(log)
    assert r.engine_version.value == "0.23.0" and r.engine_version.line_no == 2  # type: ignore[union-attr]


def test_num_gpu_blocks_is() -> None:
    # the API server's line from v1/metrics/loggers.py log_engine_initialized
    r = read_log(
        "(APIServer pid=1624) INFO 09-24 20:54:37 [loggers.py:142] Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: 14834\n"
    )
    assert r.gpu_blocks.value == 14834 and r.era.value == "v1"  # type: ignore[union-attr]


def test_sglang_sliding_window_pool_reads_the_full_layers_tokens() -> None:
    # https://github.com/sgl-project/sglang/pull/18039 (MiMo-V2-Flash, TP4): max_total_num_tokens is the full layers',
    # over the smaller count the sliding-window pool's 'KV Cache is allocated' line prints
    log = (
        "[2026-01-31 13:50:39 TP2] Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288\n"
        "[2026-01-31 13:50:39 TP1] Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288\n"
        "[2026-01-31 13:50:39 TP1] KV Cache is allocated. #tokens: 300288, K size: 8.38 GB, V size: 5.59 GB\n"
    )
    assert read_log(log).kv_tokens.value == 375360  # type: ignore[union-attr]


@pytest.mark.parametrize(("prefix", "size"), [("78", 2), ("80", 8)])
def test_sglang_dp_tp_tags_give_the_tensor_parallel_size(prefix: str, size: int) -> None:
    r = read_log(_public(prefix).read_text(encoding="utf-8"))
    assert r.tensor_parallel_size.value == size  # type: ignore[union-attr]
    assert any(f"tensor_parallel_size {size}: the rank tags" in n for n in r.notes)


def test_partial_tp_tags_give_no_size() -> None:
    r = read_log(_public("79").read_text(encoding="utf-8"))  # TP4, TP5, TP10 ...: a few ranks of a larger group
    assert r.tensor_parallel_size is None


def test_speculative_entry_without_a_method_does_not_stop_the_reader() -> None:
    # 26's engine line (method 'mtp') with an argument dump whose speculative_config names no method
    engine = _public("26").read_text(encoding="utf-8").splitlines()[0]
    args = "(APIServer pid=7400) INFO 07-25 13:41:40 [utils.py:299] non-default args: {'model_tag': 'unsloth/Qwen3.6-27B-NVFP4', 'speculative_config': {'num_speculative_tokens': 2}}"
    r = read_log(args + "\n" + engine + "\n")
    assert r.speculative.value == {"method": "mtp", "num_speculative_tokens": 2}  # type: ignore[union-attr]


# --- the command line ----------------------------------------------------------------------------


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_calc("ingest", *args)


def test_cli_answers_a_failure_only_paste() -> None:
    path = PHASE_LOGS / "graphs-19186-v1-capture-end-cuda-error.log"
    done = run(str(path), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["verdict"] == "killed" and out["failure_phase"]["phase"] == "cuda_graph_capture"
    assert out["fixes"][0] == {
        "flag": "--enforce-eager",
        "value": None,
        "why": out["fixes"][0]["why"],
        "check": "the step that failed does not run",
        "passes": True,
    }
    text = run(str(path))
    assert text.returncode == 0 and "Verdict: killed" in text.stdout and "Failed in: cuda_graph_capture" in text.stdout


def test_sglang_launch_line_gives_the_whole_command() -> None:
    # https://github.com/sgl-project/sglang/pull/18039: the launch line as posted, then the start's own lines
    log = (
        "python3 -m sglang.launch_server --model-path XiaomiMiMo/MiMo-V2-Flash --tp-size 4 --trust-remote-code --mem-fraction-static 0.7 "
        '--model-loader-extra-config \'{"enable_multithread_load": "true","num_threads": 64}\' --page-size 64\n'
        "[2026-01-31 13:50:39 TP2] Use sliding window memory pool. full_layer_tokens=375360, swa_layer_tokens=300288\n"
        "[2026-01-31 13:50:39 TP1] KV Cache is allocated. #tokens: 300288, K size: 8.38 GB, V size: 5.59 GB\n"
    )
    _, a = answer_text(log)
    assert a.verdict == "unknown" and a.fixes == ()
    assert a.command == (
        "python -m sglang.launch_server \\\n  --model-path XiaomiMiMo/MiMo-V2-Flash \\\n  --tp-size 4 \\\n  --trust-remote-code \\\n  --mem-fraction-static 0.7"
    )


def test_a_command_continued_with_backslashes_is_read_whole() -> None:
    # the docker run form the reader takes ('vllm/vllm-openai:TAG \' then a flag a line), before the start's lines
    log = (
        "docker run --gpus all vllm/vllm-openai:v0.11.0 \\\n  --model Qwen/Qwen3-32B \\\n  --tensor-parallel-size 2 \\\n  --trust-remote-code\n"
        "(EngineCore_DP0 pid=1) INFO 10-01 10:00:00 [kv_cache_utils.py:1087] GPU KV cache size: 90,000 tokens\n"
    )
    _, a = answer_text(log)
    assert a.command == "vllm serve Qwen/Qwen3-32B \\\n  --tensor-parallel-size 2 \\\n  --trust-remote-code"


def test_sglang_sliding_window_pools_are_not_called_a_drafters() -> None:
    # https://github.com/sgl-project/sglang/pull/15464 (MiMo-V2-Flash): rank TP2's two pool lines and its SWAKVPool line
    log = (
        "[2025-12-19 07:42:57 TP2] KV Cache is allocated. #tokens: 1496958, K size: 41.76 GB, V size: 27.84 GB\n"
        "[2025-12-19 07:42:57 TP2] KV Cache is allocated. #tokens: 1496958, K size: 4.82 GB, V size: 3.21 GB\n"
        "[2025-12-19 07:42:57 TP2] SWAKVPool mem usage: 77.63 GB, swa size: 1496958, full size: 1496958\n"
    )
    r = read_log(log)
    assert r.available_kv_bytes.printed == "41.76 GB + 27.84 GB + 4.82 GB + 3.21 GB"  # type: ignore[union-attr]
    assert abs(r.available_kv_bytes.value - 77.63 * 2**30) < 2**20  # type: ignore[union-attr]  # SGLang's own sum, 77.63 GB
    said = [n for n in r.notes if n.startswith("SGLang allocated")]
    assert said and "sliding-window layers'" in said[0] and "drafter" not in said[0]


# --- what a careless user gives ------------------------------------------------------------------


def test_a_log_cut_while_the_weights_load_gets_a_verdict_and_how_far_it_got(tmp_path: Path) -> None:
    # log 21's first four lines, the fourth cut mid-word: "INFO 01-23 07:32:42 model_runner.py:1071] Loadi"
    lines = _public("21").read_text(encoding="utf-8").splitlines(keepends=True)[:4]
    path = tmp_path / "cut.log"
    path.write_text("".join(lines[:3]) + lines[3][:47], encoding="utf-8")
    done = run(str(path), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["verdict"] == "unknown" and out["failure_phase"] is None and out["fixes"] == []
    text = run(str(path)).stdout
    assert "Verdict: unknown (the log ends at line 4, while the weights load, before any figure" in text


def test_prose_that_names_the_steps_is_still_not_a_log() -> None:
    done = run(str(ROOT / "README.md"))  # 'vllm serve', 'load_model', a serve line and such, but no line a logger heads
    assert done.returncode == 2 and "none of the lines a" in done.stderr and "start prints" in done.stderr and "expected a startup log" in done.stderr


def test_a_config_given_for_a_log_is_named_as_such() -> None:
    done = run(str(ROOT / "models" / "configs" / "qwen3-8b" / "config.json"))
    assert done.returncode == 2 and "traceback" not in done.stderr.lower()
    assert "found a model's config.json (line 2: '\"architectures\": ['), not a startup log" in done.stderr
    assert "python -m calc model CONFIG" in done.stderr


def test_two_starts_in_one_file_are_refused_with_where_each_begins(tmp_path: Path) -> None:
    # log 01 refused at max_model_len 29,000, then log 02 started at 20,000: two starts, one file
    path = tmp_path / "two.log"
    path.write_text(_public("01").read_text(encoding="utf-8") + _public("02").read_text(encoding="utf-8"), encoding="utf-8")
    done = run(str(path))
    assert done.returncode == 2 and "found two starts in one log: max_model_len 29000 at line 4 and 20000 at line 9" in done.stderr


def test_a_yaml_file_that_quotes_log_lines_is_not_read_as_a_start() -> None:
    # catalog/boxes.yaml quotes 'total_gpu_memory (8.00GiB)' and others in its sources: no start of its own
    done = run(str(ROOT / "catalog" / "boxes.yaml"))
    assert done.returncode == 2 and "found a YAML file (" in done.stderr and "not a startup log" in done.stderr
    assert "total memory" not in done.stdout


def test_the_weights_dtype_is_not_the_kv_cache_dtype() -> None:
    # vllm#40291 (0.19.1): cache.py's "Using fp8 data type to store kv cache" (line 1) beside the engine config's
    # dtype=torch.bfloat16, the weights' dtype; the config line is cut before its kv_cache_dtype
    r, a = _answer(_public("86"))
    assert r.kv_cache_dtype is not None and (r.kv_cache_dtype.value, r.kv_cache_dtype.line_no) == ("fp8", 1)
    flags = {f: v for f, v, _ in a.command_flags}
    assert flags["--kv-cache-dtype"] == "fp8" and flags["--dtype"] == "bfloat16"
    assert "--kv-cache-dtype fp8" in (a.command or "") and "--kv-cache-dtype bfloat16" not in (a.command or "")
    # an engine config line that prints kv_cache_dtype=auto next to dtype=torch.bfloat16: auto, and no flag
    r, a = _answer(_public("56"))
    assert r.kv_cache_dtype is not None and r.kv_cache_dtype.value == "auto"
    assert "--kv-cache-dtype" not in (a.command or "")
    # a log that states nothing of the KV dtype, its loading line a weights dtype (SGLang's "Load weight end ... dtype="
    # is SGLang's; vLLM's is the engine config's): nothing is read as the KV dtype, and the note says auto
    text = (
        "(EngineCore_DP0 pid=2) INFO 05-01 10:00:00 [core.py:93] Initializing a V1 LLM engine (v0.11.0) with config: "
        "model='Qwen/Qwen2.5-7B', dtype=torch.bfloat16, max_seq_len=8192, tensor_parallel_size=1\n"
        "(EngineCore_DP0 pid=2) INFO 05-01 10:00:09 [gpu_worker.py:316] Available KV cache memory: 20.00 GiB\n"
    )
    r, a = answer_text(text)
    assert r.kv_cache_dtype is None
    assert "--kv-cache-dtype" not in (a.command or "") and "--dtype bfloat16" in (a.command or "")
    assert any("vLLM's default auto, which keeps the KV cache in the model's dtype" in n for n in r.notes)
    # a later setting that names the exact dtype wins over cache.py's fp8 family (up to 0.19 it prints "fp8" for any)
    r, _ = answer_text(
        "(APIServer pid=1) INFO 04-19 15:32:29 [cache.py:227] Using fp8 data type to store kv cache. It reduces the GPU memory footprint.\n"
        "(EngineCore pid=2) INFO 04-19 15:32:37 [core.py:105] Initializing a V1 LLM engine (v0.19.1) with config: "
        "model='m', dtype=torch.bfloat16, max_seq_len=8192, kv_cache_dtype=fp8_e5m2, device_config=cuda\n"
    )
    assert r.kv_cache_dtype is not None and (r.kv_cache_dtype.value, r.kv_cache_dtype.line_no) == ("fp8_e5m2", 2)


def _phase_log(name: str) -> tuple[object, logverdict.LogAnswer]:
    return _answer(PHASE_LOGS / name)


def test_a_length_verified_twice_is_one_start() -> None:
    # 0.13's NomicBertModelConfig prints 'Using max model len 8192' then 'Using max model len 2048' (lines 66, 67)
    reading, a = _phase_log("free-gb10-v0130-nomic-embed-reverified-max-len.log")
    assert reading.max_model_len.value == 2048  # type: ignore[attr-defined]
    assert reading.max_model_len.line_no == 67  # type: ignore[attr-defined]
    free, total = reading.free_memory_bytes, reading.total_memory_bytes  # type: ignore[attr-defined]
    assert (free.printed, total.printed) == ("4.04 GiB", "119.63 GiB")  # "Free memory on device (4.04/119.63 GiB)"
    assert reading.gpu_memory_utilization.value == Fraction("0.15")  # type: ignore[attr-defined]
    assert "the start stopped at the free-memory check (line 102), before the profile that sizes the pool" in " ".join(reading.missing)  # type: ignore[attr-defined]


def test_two_lengths_without_the_change_line_are_two_starts() -> None:
    # the same log less its line 68, "Changing max_model_len from 8192 to 2048": nothing says 8192 was replaced
    text = (PUBLIC / "phases" / "free-gb10-v0130-nomic-embed-reverified-max-len.log").read_text(encoding="utf-8").splitlines()
    assert "Changing max_model_len from 8192 to 2048" in text[67]
    with pytest.raises(InputError, match="found two starts in one log: max_model_len 8192 at line 66"):
        read_log("\n".join(text[:67] + text[68:]))


def test_a_pool_absent_from_a_release_that_prints_it() -> None:
    reading, _ = _phase_log("exception-llmd-v0190-qwen3-14b-tp5-root-cause-above.log")
    said = " ".join(reading.missing)  # type: ignore[attr-defined]
    assert "0.19.0 prints 'Available KV cache memory' after its memory profile" in said
    assert "before 0.9.1" not in said
    reading, _ = _phase_log("free-llmd-v0190-codellama-34b-tp2-one-rank.log")
    assert "the start stopped at the free-memory check" in " ".join(reading.missing)  # type: ignore[attr-defined]


def test_the_root_cause_not_the_exception_that_points_back_at_it() -> None:
    reading, a = _phase_log("exception-llmd-v0190-qwen3-14b-tp5-root-cause-above.log")
    assert a.failure_phase is not None and a.failure_phase["text"] == "AssertionError: 151936 is not divisible by 5"
    assert any("ends in 'AssertionError: 151936 is not divisible by 5'" in n for n in reading.notes)  # type: ignore[attr-defined]


def test_a_validation_error_says_its_reason() -> None:
    _, a = _phase_log("exception-llmd-v0190-phi-2-max-len-validation.log")
    assert a.failure_phase is not None
    assert a.failure_phase["text"].startswith(
        "ValidationError: 1 validation error for ModelConfig: Value error, User-specified max_model_len (8192) is greater than the derived max_model_len"
    )


def test_fp8_offered_only_where_some_dtype_could_pass() -> None:
    # 44.25 GiB for one request against 8.42 GiB: halved 22.13, quartered 11.06, each more than the pool
    _, a = _phase_log("maxlen-recipes-653-error-line-fp8-short.log")
    fp8 = [f for f in a.fixes if f.flag == "--kv-cache-dtype"]
    assert len(fp8) == 1 and fp8[0].passes is False


def test_a_pipe_closed_after_the_failure_is_not_its_cause() -> None:
    _, a = _phase_log("exception-llmd-v0190-llama31-8b-dp2-broken-pipe-after.log")
    assert a.failure_phase is not None and a.failure_phase["text"].startswith("AssertionError: DP adjusted local rank 1 is out of bounds.")


def test_eager_frees_the_graphs_estimate_only_where_it_was_taken_off() -> None:
    from calc.answers.logverdict.fixes import _no_pool_fixes
    from calc.answers.logverdict.watcher import Watcher

    def eager(prefix: str) -> list[object]:
        reading = read_log(_public(prefix).read_text(encoding="utf-8"))
        return [f.passes for f in _no_pool_fixes(reading, Watcher(), {}) if f.flag == "--enforce-eager"]

    # 45 (0.18): 'Estimated CUDA graph memory: 1.65 GiB', then 'To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1':
    # the pool was sized without taking the estimate off, so eager mode cannot enlarge it
    assert eager("45") == [False]
    # 31 (0.2x): 'CUDA graph memory profiling is enabled (default since v0.21.0)': the estimate was taken off
    assert eager("31") == [None]


def test_the_command_keeps_a_pooling_runner() -> None:
    # the argument dump (line 48): {..., 'runner': 'pooling', 'trust_remote_code': True, 'gpu_memory_utilization': 0.15}
    _, a = _phase_log("free-gb10-v0130-nomic-embed-reverified-max-len.log")
    assert "--runner pooling" in a.command


def test_the_command_keeps_short_parallel_flags() -> None:
    # "vllm serve ... --max-model-len -1 -pp 2": the length stays auto as given, the stages are kept
    _, a = _answer(_public("89"))
    assert "--pipeline-parallel-size 2" in a.command and "--max-model-len -1" in a.command


SHAPE_LINES = ROOT / "tests" / "data" / "logshapes"


def test_the_free_check_less_the_weights_another_process_holds() -> None:
    # 0.32 on (vllm/v1/worker/utils.py request_memory): free 30.12 of 79.19 GiB against the engine's
    # budget of 41.27 GiB, 0.9 x 79.19 = 71.27 GiB less 30.00 GiB held outside. At 0.75 the budget is
    # 0.75 x 79.19 - 30.00 = 29.39 GiB, within 30.12; at 0.76 it is 30.18 GiB, more.
    reading, a = _answer(SHAPE_LINES / "free_external_budget.log")
    assert a.verdict == "refused" and a.failure_phase is not None and a.failure_phase["phase"] == "free_memory"
    assert "less the weights another process holds" in a.failure_phase["what"]
    assert reading.engine_budget_bytes.printed == "41.27 GiB"  # type: ignore[attr-defined]
    first = a.fixes[0]
    assert (first.flag, first.value, first.passes) == ("--gpu-memory-utilization", "0.75", True)
    assert "30.00 GiB are the weights held outside the process" in a.fixes[1].check
    assert "--gpu-memory-utilization 0.75" in a.command


def test_weights_held_outside_above_the_fraction_ask_for_a_larger_one() -> None:
    # 75.5 GiB held outside of 79.19 GiB, above 0.9 x total (71.27 GiB): 0.95 x 79.19 = 75.23 GiB is
    # still below them, 0.96 x 79.19 = 76.02 GiB above; free memory is not printed, so it is not checked
    _, a = _answer(SHAPE_LINES / "external_exceeds.log")
    assert a.failure_phase is not None and a.failure_phase["phase"] == "free_memory"
    assert a.failure_phase["what"].startswith("the weights another process holds on the card are more than")
    first = a.fixes[0]
    assert (first.flag, first.value, first.passes) == ("--gpu-memory-utilization", "0.96", None)


def test_under_pipeline_parallel_the_pool_is_the_limiting_workers() -> None:
    # 89: stage 0 prints 36.20 GiB (line 2); the auto-fit line names 29.72 GiB (line 5), the worker
    # that limits the length: with two stages, stage 1. vLLM gives every worker the smallest count of blocks.
    reading, _ = _answer(_public("89"))
    pool = reading.available_kv_bytes  # type: ignore[attr-defined]
    assert (pool.printed, pool.line_no) == ("29.72 GiB", 5)
    said = " ".join(reading.notes)  # type: ignore[attr-defined]
    assert "less than the 36.20 GiB of line 2, stage 0's worker" in said and "(of 2 stages, stage 1)" in said


def test_stages_pools_are_named_by_stage() -> None:
    # 85: Worker_PP2 18.22 GiB (line 9), Worker_PP0 18.02 GiB (line 10), Worker_PP1 18.25 GiB (line 11)
    reading, _ = _answer(_public("85"))
    assert "18.22 GiB (line 9, stage 2), 18.02 GiB (line 10, stage 0), 18.25 GiB (line 11, stage 1)" in " ".join(reading.notes)  # type: ignore[attr-defined]


def test_a_pool_that_holds_no_token_at_auto_length_is_no_kv_memory() -> None:
    # 0.33.0 kv_cache_planning.py: "Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token."
    _, a = _answer(SHAPE_LINES / "cannot_auto_fit.log")
    assert a.verdict == "refused" and a.failure_phase is not None and a.failure_phase["phase"] == "kv_cache_allocation"
    assert a.failure_phase["what"].startswith("at --max-model-len auto")


def test_the_cards_total_from_the_cuda_graph_advice_holds_the_printed_total() -> None:
    # 0.19.0 on an H100: 'Estimated CUDA graph memory: 1.30 GiB total', 'increase --gpu-memory-utilization
    # from 0.9500 to 0.9665', 'total_memory=79.19GiB': 1.295 / 0.0166 = 78.01 to 1.305 / 0.0164 = 79.57 GiB
    reading, _ = _phase_log("sampler-llmd-v0190-gpt-oss-20b-h100-graph-advice.log")
    worked, printed_total = reading.total_from_graphs, reading.total_memory_bytes  # type: ignore[attr-defined]
    assert worked.low <= printed_total.value <= worked.high
    assert round(float(worked.low) / 2**30, 2) == 78.01 and round(float(worked.high) / 2**30, 2) == 79.57


def test_the_cuda_graph_advice_gives_the_total_of_a_box_that_prints_none() -> None:
    # 45 (0.18, a DGX Spark): 1.65 GiB / (0.8136 - 0.8000), 120.07 to 122.60 GiB, holds the GB10's 121.69 GiB (catalog/boxes.yaml)
    boxes = yaml.safe_load((ROOT / "catalog" / "boxes.yaml").read_text(encoding="utf-8"))
    gb10 = next(b for b in boxes["boxes"] if "GB10" in json.dumps(b))
    total = float(str(gb10["total_memory"]["value"]).split()[0]) * 2**30
    reading, _ = _answer(_public("45"))
    assert reading.total_memory_bytes is None  # type: ignore[attr-defined]
    worked = reading.total_from_graphs  # type: ignore[attr-defined]
    assert worked.low <= total <= worked.high
    assert "the card's total is not printed; vLLM's advice on CUDA graph memory gives it" in " ".join(reading.notes)  # type: ignore[attr-defined]


def test_a_pool_below_zero_is_sized_by_the_total_the_advice_gives() -> None:
    # the messages as 0.33.0 prints them (vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory,
    # vllm/v1/worker/gpu_worker.py determine_available_memory, vllm/v1/core/kv_cache_planning.py
    # _check_enough_kv_cache_memory), with figures chosen to agree: 1.20 GiB of graphs at 0.9 on a card of
    # about 31.5 GiB (d = 0.0381), a pool of -0.50 GiB. Total 1.195 / 0.03815 = 31.32 GiB at the low end;
    # 0.9 + (0.505 + 1) GiB / 31.32 GiB = 0.948..., so 0.95.
    log = "\n".join([
        "Estimated CUDA graph memory: 1.20 GiB total",
        "Available KV cache memory: -0.5 GiB",
        "CUDA graph memory profiling is enabled (default since v0.21.0). The current "
        "--gpu-memory-utilization=0.9000 is equivalent to --gpu-memory-utilization=0.8619 without CUDA graph memory profiling. To maintain "
        "the same effective KV cache size as before, increase --gpu-memory-utilization to 0.9381. To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.",
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.",
    ])  # fmt: skip
    reading, a = answer_text(log)
    assert reading.total_memory_bytes is None  # type: ignore[attr-defined]
    fix = next(f for f in a.fixes if f.flag == "--gpu-memory-utilization")
    assert (fix.value, fix.passes) == ("0.95", True)
    assert "the low end of the total worked out from vLLM's CUDA-graph advice" in fix.check


def test_a_pooling_models_warm_up_is_the_sampler_phase_with_its_own_words() -> None:
    # the message as 0.33.0 raises it (vllm/v1/worker/gpu_model_runner.py _dummy_pooler_run_task), the same
    # from 0.11.0: "CUDA out of memory occurred when warming up pooler ({task=}) with {num_reqs} dummy requests. ..."
    log = (
        "RuntimeError: CUDA out of memory occurred when warming up pooler (task='embed') with 1024 dummy requests. "
        "Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine."
    )
    _, a = answer_text(log)
    assert a.verdict == "killed" and a.failure_phase is not None and a.failure_phase["phase"] == "sampler_warmup"
    assert a.failure_phase["engine_source"] == "vllm/v1/worker/gpu_model_runner.py _dummy_pooler_run"
    assert (a.fixes[0].flag, a.fixes[0].value) == ("--max-num-seqs", "512")


def test_free_memory_that_grew_during_the_profile_is_not_the_fraction_check() -> None:
    # 0.33.0 vllm/v1/worker/gpu_worker.py determine_available_memory's assertion (the same words from 0.11.0)
    reading, a = _answer(SHAPE_LINES / "free_grew.log")
    assert a.verdict == "refused" and a.failure_phase is not None and a.failure_phase["phase"] == "free_memory"
    assert a.failure_phase["what"].startswith("free memory grew while vLLM profiled")
    assert [f.flag for f in a.fixes] == ["(keep the card steady)", "--kv-cache-memory-bytes"]
    assert "the profile's check that free memory did not grow" in " ".join(reading.missing)  # type: ignore[attr-defined]


def test_without_stages_the_auto_fit_figure_does_not_replace_the_pool() -> None:
    # 89 less its '-pp 2' and its worker prefix: one worker, whose auto-fit figure is its pool (less one block from 0.31)
    text = _public("89").read_text(encoding="utf-8").replace(" -pp 2", "").replace("(Worker_PP0 pid=3977958) ", "")
    reading = read_log(text)
    assert reading.available_kv_bytes.printed == "36.20 GiB"  # type: ignore[union-attr]
    assert any("with no pipeline stages every worker's pool is alike" in n for n in reading.notes)


def test_a_block_count_set_by_override_sizes_the_pool() -> None:
    # 0.33.0 kv_cache_planning.py: "Overriding num_gpu_blocks=10240 with num_gpu_blocks_override=512" after a
    # 20.0 GiB pool: 512 blocks of 20.0 GiB // 10240 are 1.00 GiB (19.995 x 512 / 10241 = 0.99966 to 20.005 x 512 / 10240 = 1.00025)
    override = (SHAPE_LINES / "blocks_override.log").read_text(encoding="utf-8")
    reading = read_log("Available KV cache memory: 20.0 GiB\n" + override)
    pool = reading.available_kv_bytes  # type: ignore[union-attr]
    assert pool is not None and pool.derived and 0.99965 * 2**30 < pool.low < pool.high < 1.00026 * 2**30
    # 0.18 to 0.31 print it with 0 profiled blocks for the CUDA-graph profile's minimal KV cache: not the pool
    reading = read_log("Available KV cache memory: 20.0 GiB\nOverriding num_gpu_blocks=0 with num_gpu_blocks_override=512")
    assert reading.available_kv_bytes.printed == "20.0 GiB"  # type: ignore[union-attr]
    # under pipeline parallel the auto-fit line's pool comes after the override (kv_cache_utils.py, 0.24.0 to 0.31.0):
    # log 89's limiting worker, 29.72 GiB, is read as it is, not overridden a second time
    staged = _public("89").read_text(encoding="utf-8")
    lines = staged.splitlines()
    at = next(i for i, line in enumerate(lines) if "Available KV cache memory" in line)
    lines.insert(at + 1, "Overriding num_gpu_blocks=1000 with num_gpu_blocks_override=500")
    assert read_log("\n".join(lines)).available_kv_bytes.printed == "29.72 GiB"  # type: ignore[union-attr]


def test_a_startup_plan_pins_the_pool_in_bytes() -> None:
    # 0.33.0 vllm/v1/worker/startup_plan.py, then gpu_worker.py's line for a pool given in bytes
    plan = (SHAPE_LINES / "startup_plan.log").read_text(encoding="utf-8")
    reserved = (
        "Initial free memory 78.7 GiB, reserved 52.68 GiB memory for KV Cache as specified by kv_cache_memory_bytes config and skipped "
        "memory profiling. This does not respect the gpu_memory_utilization config."
    )
    reading = read_log(plan + reserved)
    assert reading.kv_cache_memory_bytes.value == 56568494161  # type: ignore[union-attr]
    assert any("comes from a startup plan an earlier start saved (line 1" in n for n in reading.notes)
