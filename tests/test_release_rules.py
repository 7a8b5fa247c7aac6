"""Rules that change at a vLLM release, each against the released source named beside it
(the wheels on PyPI), and against the real log lines that show the change."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from calc import kvlayout, logread
from tests.test_configmodel import pool

ROOT = Path(__file__).resolve().parent.parent
LOGS = ROOT / "logs" / "public"


def test_the_token_count_is_the_concurrency_times_max_model_len_from_0_20_1() -> None:
    """vllm/v1/core/kv_cache_utils.py: 0.20.0 prints num_blocks // groups x block size, 0.20.1
    `int(max_concurrency * max_model_len)`. gpt-oss-120b (a window on every other layer) at
    10 GiB and 131,072 tokens: 18,204 blocks, 2 groups of 16-token blocks, 18,204 / 8,713 requests."""
    for release, tokens in (("0.19.1", 145632), ("0.20.0", 145632), ("0.20.1", 273847), ("0.20.2", 273847), ("0.21.0", 273847)):
        p = pool("gpt-oss-120b", 10 * 2**30, 131072, release)
        assert (p.blocks, p.tokens) == (18204, tokens), release
    assert 18204 // 2 * 16 == 145632 and 18204 * 131072 // 8713 == 273847
    assert kvlayout.version("v0.20.1").prints == kvlayout.version("0.20.1.dev3+g1a2b").prints == "concurrency"
    assert kvlayout.version("0.20.0").prints == "blocks"


def _log58(version: str) -> logread.LogReading:
    """logs/public/58 (a dense model: blocks x block size equals concurrency x max_model_len) with its
    printed version replaced."""
    text = (LOGS / "58-v013-gb10-qwen25-14b-fp8-dense-kv-usage-lines.log").read_text(encoding="utf-8")
    return logread.read_log(text.replace("0.13.0+faa43dbf.nv26.01", version))


def test_the_log_reader_places_the_token_count_boundary_at_0_20_1() -> None:
    assert "as 0.20.0 prints it (builds up to 0.20.0)" in _log58("0.20.0").bytes_per_token.how  # type: ignore[union-attr]
    for release in ("0.20.1", "0.20.2", "0.21.0"):
        how = _log58(release).bytes_per_token.how  # type: ignore[union-attr]
        assert "(as builds from 0.20.1 print it)" in how and "up to 0.20.0" not in how, release


def test_the_cuda_graph_estimate_is_taken_off_the_pool_by_default_from_0_20_0() -> None:
    """vllm/envs.py: VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to "0" in 0.19.1 and "1" in
    0.20.0 (gpu_worker.py subtracts the estimate only when it is set). logs/public/45 (0.18.1rc1)
    prints "In v0.19, CUDA graph memory profiling will be enabled by default ... To try it now":
    its estimate was not taken off; logs/public/31 prints "CUDA graph memory profiling is enabled"."""
    off = logread.read_log((LOGS / "45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log").read_text(encoding="utf-8"))
    on = logread.read_log((LOGS / "31-v02x-qwen3-8b-cudagraph-estimate-enginecore.log").read_text(encoding="utf-8"))
    assert off.cuda_graph_off is not None and off.cuda_graph_off.line_no == 47
    assert on.cuda_graph_off is None and on.cuda_graph_bytes is not None
    disabled = "(EngineCore pid=9) WARNING 05-28 08:00:26 [gpu_worker.py:477] CUDA graph memory profiling is disabled (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0). Without it, CUDA graph memory is not accounted for during KV cache allocation, which may require lowering --gpu-memory-utilization to avoid OOM. Consider re-enabling it (the default as of v0.21.0) and increasing --gpu-memory-utilization from 0.9000 to 0.9200."
    r = logread.read_log(disabled + "\n(EngineCore pid=9) INFO 05-28 08:00:27 [kv_cache_utils.py:1710] GPU KV cache size: 20,992 tokens\n")
    assert r.cuda_graph_off is not None and r.gpu_memory_utilization is not None and r.gpu_memory_utilization.value == Fraction("0.9")


def test_the_overhead_says_whether_the_cuda_graph_estimate_is_in_it(catalog) -> None:
    from tests.test_yourstart_verdicts import FREE_M, run

    _, _, result = run(catalog, "45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log", box="dgx-spark", before=FREE_M)
    assert "(the CUDA-graph estimate, 1.65 GiB, not included: this start did not take it off the pool" in result
    assert "1.65 GiB, included" not in result
