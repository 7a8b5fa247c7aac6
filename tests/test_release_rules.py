"""Rules that change at a vLLM release, each against the released source named beside it
(the wheels on PyPI), and against the real log lines that show the change."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from calc.engine import kvlayout
from calc.logs import logread
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
    assert "+ the CUDA-graph estimate 1,771,674,010 B, which this start did not take off the pool" in result
    assert "1.65 GiB, included" not in result


def test_unequal_attention_pages_are_padded_from_0_24_0_and_mla_pages_never() -> None:
    """unify_kv_cache_spec_page_size (vllm/v1/core/kv_cache_utils.py): 0.23.0 raises
    NotImplementedError for a page that does not divide the largest; 0.24.0 to 0.28.0 pad it
    (page_size_padded = the largest page, the block unchanged) when the attention backend reads
    pages by the block stride, 0.29.0 every non-MLA attention page; an MLA page never."""
    full = kvlayout.Spec("full", 16, 16 * 1000)  # 16,000 B a page
    sliding = kvlayout.Spec("sliding", 16, 16 * 1536, window=4096)  # 24,576 B: 16,000 does not divide it
    specs = [full, sliding, full, sliding]
    with pytest.raises(ValueError, match="vLLM 0.23.0 raises NotImplementedError"):
        kvlayout.layout(specs, kvlayout.version("0.23.0"))
    for release in ("0.24.0", "0.26.0", "0.29.0", None):
        lay = kvlayout.layout(specs, kvlayout.version(release))
        assert lay.page_bytes == 24576 and {(g.spec.kind, g.spec.block_size, g.spec.page_bytes) for g in lay.groups} == {
            ("full", 16, 24576),
            ("sliding", 16, 24576),
        }, release
    mla = kvlayout.Spec("mla", 64, 64 * 576)  # 36,864 B does not divide 16 x 2,560 = 40,960 B
    with pytest.raises(ValueError, match="NotImplementedError"):
        kvlayout.layout([mla, kvlayout.Spec("full", 16, 16 * 2560)], kvlayout.version(None))
    # a divisor still grows its block, as in every release
    grown = kvlayout.layout([kvlayout.Spec("full", 16, 16 * 768), sliding], kvlayout.version("0.23.0"))
    assert {(g.spec.kind, g.spec.block_size) for g in grown.groups} == {("full", 32), ("sliding", 16)}


def test_the_one_request_floor_is_the_request_and_one_block_from_0_29_0() -> None:
    """check_enough_kv_cache_memory takes `_pool_bytes_per_block(groups)` off the pool before the
    check from 0.29.0 (kv_cache_utils.py 0.29.0, kv_cache_planning.py 0.33.0; 0.28.0 checks the whole
    pool). Llama-3.1-8B, 131,072 tokens: 8,192 pages of 32 layers x 65,536 B; one block is 32 x 65,536 B."""
    from tests.test_configmodel import shape

    s = shape("llama-3.1-8b")
    request = 131072 * 131072
    for release, floor in (("0.28.0", request), ("0.29.0", request + 32 * 65536), (None, request + 32 * 65536)):
        req = kvlayout.request(s, kvlayout.Settings(), 131072, kvlayout.version(release))
        assert (req.bytes_per_request, req.floor_bytes) == (request, floor), release
    # a pin at the request alone starts 0.28.0 and not 0.29.0: the longest request it holds is one block short
    assert kvlayout.largest_max_model_len(s, kvlayout.Settings(), request, kvlayout.version("0.28.0")) == 131072
    assert kvlayout.largest_max_model_len(s, kvlayout.Settings(), request, kvlayout.version("0.29.0")) == 131072 - 16


def test_your_start_adds_the_null_block_for_a_build_that_holds_it_back(catalog, tmp_path) -> None:
    """logs/public/45 (0.18.1rc1): the floor is vLLM's per-request maximum, 59,828,894,433 / 10.85 up =
    5,514,183,819 B (5.52e9 B). The same log printed by 0.29.0: one block of the log's 1,056 tokens at
    81,991.53 B a token more, ceil(86,583,055.68) = 86,583,056 B: 5,600,766,875 B, 5.61e9 B."""
    from calc.present import html
    from tests.test_yourstart_verdicts import FREE_M, OWN

    text = (LOGS / "45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log").read_text(encoding="utf-8")

    def floor(log: str) -> tuple[str, str]:
        raw = dict(html.defaults_of(catalog, "yourstart").values)
        raw.update(dict.fromkeys(OWN, ""))
        raw.update(box="dgx-spark", before=FREE_M, log=log)
        out = html.run(catalog, "yourstart", raw)
        return out.figures["one_request_pin"], out.figures.get("one_request_block", "")

    assert floor(text) == ("5.52e9 B", "")
    assert 5_514_183_819 + 86_583_056 == 5_600_766_875
    assert floor(text.replace("0.18.1rc1.dev147+g290809456", "0.29.0")) == ("5.61e9 B", "86,583,056 B")


def test_lines_that_print_decimal_gb_give_no_figure() -> None:
    """logs/public/43 is 0.8.2: gpu_model_runner.py:1186 prints "Model loading took %.4f GB", /
    float(2**30), the last release to say GB (0.8.3 prints GiB). The prefetch offloader
    (prefetch.py, 0.18.1 on) and the KV offload mmap (shared_offload_region.py, 0.20.0 on) print
    10^9 bytes as "GB": the reader takes nothing from them."""
    text = (LOGS / "43-v082-gemma3-tp4-vllmworker-gb-and-seconds.log").read_text(encoding="utf-8")
    r = logread.read_log(text)
    assert r.model_loading_bytes is not None and r.model_loading_bytes.value == round(Fraction("13.1665") * 2**30)
    decimal = (
        "(EngineCore pid=7) INFO 05-28 08:00:20 [prefetch.py:381] [PrefetchOffloader] Initialized 48 modules. Total GPU memory saved: "
        "12.5000 GB, Static buffer pool: 1.2500 GB (group_size=8, num_in_group=1, prefetch_step=1, mode=cpu)\n"
        "(EngineCore pid=7) INFO 05-28 08:00:21 [shared_offload_region.py:177] Created mmap file /dev/shm/vllm_kv (64.00 GB)\n"
    )
    both = logread.read_log(decimal + text)
    assert both.to_json()["model_loading_bytes"] == r.to_json()["model_loading_bytes"] == round(Fraction("13.1665") * 2**30)
    assert {k: v for k, v in both.to_json().items() if k != "lines"} == {k: v for k, v in r.to_json().items() if k != "lines"}
    with pytest.raises(logread.InputError):
        logread.read_log(decimal)  # no startup figure in those lines


def test_the_gh200_note_gives_both_unified_memory_rules(catalog) -> None:
    """vllm/utils/mem_utils.py: 0.19.1 tests the compute capability ((8, 7), (11, 0), (12, 1));
    0.20.0 to 0.33.0 ask current_platform.is_integrated_gpu (vllm/platforms/cuda.py: torch's
    is_integrated, cudaDeviceProp.integrated), which CUDA's deviceQuery prints as "No" on the GH200:
    under both rules vLLM reads the card's free memory from CUDA, and the box is sized on its total."""
    note = " ".join(catalog.boxes["gh200"]["spec_memory"].note.split())
    assert "up to v0.19.1 only SM 8.7, 11.0 and 12.1 are treated as unified" in note
    assert "from v0.20.0 vLLM asks the device whether it is integrated" in note
    assert "deviceQuery's line 'Integrated GPU sharing Host Memory:' reads 'No' on a GH200 480GB" in note
    assert catalog.boxes["gh200"]["memory"] == "discrete" and "total_memory" in catalog.boxes["gh200"]


def test_an_auto_prefetch_disabled_line_means_a_local_filesystem(catalog) -> None:
    """weight_utils.py (safetensors_weights_iterator, 0.20.0 to 0.33.0, 0.26.0 the report's): "Auto-prefetch
    is disabled because the filesystem (%s) is not a recognized network FS (NFS/Lustre)" is printed
    only when the filesystem is not NFS, NFS4 or Lustre, with "and the checkpoint size (...) exceeds
    %d%% of available RAM" when the size rule fails as well. The kernel-init report quotes that line:
    its 75 GB checkpoint was on a local filesystem and would not have been prefetched on the idle box."""
    from calc.answers import prefetch

    quoted = "Auto-prefetch is disabled… checkpoint size exceeds 90% of available RAM"  # the report's quote
    assert prefetch.disabled_for_filesystem(quoted)
    assert not prefetch.disabled_for_filesystem("Network filesystem (NFS) detected but checkpoint total size ... Skipping auto-prefetch.")
    trace = catalog.traces["kernel-init-report"]
    share = catalog.policy["vllm"]["prefetch_fraction"].value
    idle, loading = trace["samples"][0]["available"], trace["samples"][-1]["available"]
    checkpoint = trace["checkpoint"].value
    assert prefetch.auto_prefetch(checkpoint, idle, share, "ext4")[0] is False  # idle, and still not prefetched
    assert prefetch.auto_prefetch(checkpoint, idle, share, "nfs") == (True, "prefetched")
    local = prefetch.auto_prefetch(checkpoint, loading, share, "ext4")[1]
    assert "whatever the memory" in local and "is not a recognized network FS (NFS/Lustre) and the checkpoint size" in local
    assert prefetch.log_line("ext4", True) == '"Auto-prefetch is disabled because the filesystem (EXT4) is not a recognized network FS (NFS/Lustre)."'
    page = (ROOT / "docs" / "start-up-memory.md").read_text(encoding="utf-8")
    assert "on the idle box, with\nnothing allocated yet, it would not have prefetched it either" in page
    assert '<span class="doc-said">' in page and "<s>disable itself</s>" in page
    assert "The report\ndoes not say which filesystem" not in page


def test_asynchronous_scheduling_is_on_by_default_from_0_14_0() -> None:
    """vllm/config/scheduler.py: async_scheduling defaults to False in 0.13.0 and to None from 0.14.0,
    which vllm/config/vllm.py turns on unless pipeline parallelism, an unsupported drafter or the
    executor rule it out (0.14.0, 0.18.1, 0.20.0, 0.26.0): not a 0.26.0 change."""
    page = " ".join((ROOT / "docs" / "kv-pool.md").read_text(encoding="utf-8").split())
    assert "two with asynchronous scheduling, which is on by default from v0.14.0" in page
    assert "which v0.26.0 turns on by default" not in page
    assert "which 0.26.0 turns on by default" not in " ".join((kvlayout.__doc__ or "").split())
    # the window's budget is what changed in 0.26.0: one prefill budget before, two batches after
    assert (kvlayout.version("0.25.1").in_flight_batches, kvlayout.version("0.26.0").in_flight_batches) == (1, 2)


def test_the_nccl_cumem_override_ends_where_the_page_says() -> None:
    """vllm/env_override.py sets NCCL_CUMEM_ENABLE=0 in 0.10.1.1 and no longer in 0.10.2: the pool
    prediction keeps cuMem from 0.10.2, and the page names the last release with the override, not
    the whole 0.10 line."""
    from calc.engine import predict

    assert (predict.nccl_cumem("0.10.1.1"), predict.nccl_cumem("0.10.2")) == (False, True)
    page = " ".join((ROOT / "docs" / "kv-pool.md").read_text(encoding="utf-8").split())
    assert "up to v0.10.1.1 vLLM turns NCCL's cuMem allocator off" in page
    assert "up to v0.10.x vLLM turns" not in page
