"""The accuracy table's rows (calc/checks/accuracy.py): every observation with a known architecture,
modeled, beside what the engine printed."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from calc.checks import accuracy
from calc.engine import hfconfig, kvlayout
from calc.logs import logread
from calc.units import GiB, InputError
from hooks.macros import ROOT, model_accuracy, public_observations


@pytest.fixture(scope="module")
def rows(catalog) -> list[accuracy.Row]:
    return model_accuracy(ROOT, catalog)


def test_full_attention_rows_are_exact_within_printed_precision(rows) -> None:
    dense = [r for r in rows if r.family == "dense"]
    assert len(dense) >= 5
    for r in dense:
        assert r.within_precision, r.observation.label
        assert abs(r.error) < Fraction(2, 1000), r.observation.label


def test_hybrid_rows_the_rules_cover_are_exact(rows) -> None:
    covered = [r for r in rows if r.family == "hybrid" and not r.observation.suspicion]
    assert len(covered) >= 3
    assert all(r.within_precision and r.error == 0 for r in covered)


def test_every_catalog_start_with_an_architecture_has_a_row(rows, catalog) -> None:
    labels = [r.observation.label for r in rows]
    assert sum("DeepSeek-V4-Flash" in label for label in labels) == 3  # generations 234, 235 and 237
    assert sum("Flash-Next" in label for label in labels) == 3  # 4, 3 and 2 speculative tokens
    unexplained = [r for r in rows if not r.within_precision]
    assert unexplained and all(r.observation.suspicion for r in unexplained)  # a row we cannot explain says what we suspect


def test_mean_absolute_error_by_family(rows) -> None:
    errors = accuracy.family_errors(rows)
    assert set(errors) == {"dense", "moe", "mla", "sliding window", "hybrid"}
    dense = [abs(r.error) for r in rows if r.family == "dense"]
    assert errors["dense"] == sum(dense, Fraction(0)) / len(dense)
    # log 17 alone: 5,139,136,512 B modeled against the 4,874,787,881 B of "4.54 GiB"
    assert errors["sliding window"] == Fraction(5139136512 - 4874787881, 4874787881)
    assert accuracy.family_errors(rows, covered_only=True)["sliding window"] is None  # no row the rules cover, said so
    # logs 47 (88,240 modeled, 88,176 printed), 10 (180,928 and 178,880) and 11 (367,223 and 367,404)
    assert errors["moe"] == (Fraction(64, 88176) + Fraction(2048, 178880) + Fraction(181, 367404)) / 3


def test_a_printed_pool_is_a_range() -> None:
    assert accuracy.printed_pool("2.89 GiB", "pool") == (int(Fraction("2.885") * GiB), int(Fraction("2.895") * GiB))
    assert accuracy.printed_pool("6.5 GiB", "pool") == (int(Fraction("6.45") * GiB), int(Fraction("6.55") * GiB))
    assert accuracy.printed_pool("16000000000 B", "pool") == (16 * 10**9, 16 * 10**9)
    with pytest.raises(InputError, match="observations\\[0\\].pool: found '2.89', expected a printed pool"):
        accuracy.printed_pool("2.89", "observations[0].pool")


def test_weights_against_the_loading_line(rows) -> None:
    # logs 01 and 02 (Llama 3.1 8B, TP 1, "Loading model weights took 14.9888 GB") and 04
    # (Qwen2.5 32B, TP 2, "30.7098 GB"): the count is a little under what loading took
    found = [(r.observation.label, accuracy.weights_error(r.observation)) for r in rows if accuracy.weights_error(r.observation)]
    assert len(found) == 3
    for label, (_modeled, error) in found:
        assert Fraction(-1, 100) < error < 0, label


def _row(rows, label: str) -> accuracy.Row:
    (found,) = [r for r in rows if r.observation.label.startswith(label)]
    return found


def test_moe_row_from_a_gb10_log(rows) -> None:
    # log 47: Qwen3-30B-A3B-FP8 on a GB10, vLLM 0.13.0, kv_cache_dtype fp8, "Available KV cache
    # memory: 4.04 GiB", "GPU KV cache size: 88,176 tokens". The config: 48 layers, 4 KV heads of
    # 128. A token: 48 x 4 x 128 x 2 (K and V) x 1 byte = 49,152 B; a 16-token block 786,432 B.
    r = _row(rows, "Qwen3 30B-A3B FP8")
    assert (r.family, r.observation.engine, r.observation.settings.kv_cache_dtype) == ("moe", "vllm", "fp8")
    assert r.predicted_per_token == 49152
    # 4.04 GiB: 4,337,916,968 B // 786,432 = 5,515 blocks, 88,240 tokens (0.13 prints blocks x 16);
    # 4.035 and 4.045 GiB give 5,509 and 5,522 blocks; the printed 88,176 is 5,511 blocks
    assert (r.predicted, r.low, r.high) == (88240, 88144, 88352)
    assert r.observation.printed == 5511 * 16 and r.within_precision
    assert r.observation.weights_loaded is None  # the shipped config is not the FP8 checkpoint's


def test_sglang_mla_row_kimi_k2(rows) -> None:
    # log 13: SGLang, Kimi K2 at TP 8, "KV Cache is allocated. #tokens: 8050, KV size: 0.53 GB".
    # MLATokenToKVPool: one latent of kv_lora_rank 512 + qk_rope_head_dim 64 a layer, 61 layers,
    # bf16, not divided by TP: 576 x 61 x 2 = 70,272 B a token.
    r = _row(rows, "Kimi K2 Instruct 0905")
    assert (r.family, r.observation.rules) == ("mla", "SGLang memory_pool.py")
    assert r.predicted_per_token == 70272
    # backwards, exact: 8,050 tokens + the padded slot = 8,051 x 70,272 = 565,759,872 B = 0.5269 GiB, "0.53"
    assert round(Fraction((8050 + 1) * 70272, GiB), 2) == Fraction(53, 100)
    # forwards: 0.53 GiB = 569,083,166 B // 70,272 = 8,098 cells, 8,097 tokens; 0.525 and 0.535 GiB
    # give 8,020 and 8,173: the printed 8,050 lies inside
    assert (r.predicted, r.low, r.high) == (8097, 8020, 8173)
    assert r.within_precision


def test_sglang_full_attention_cell(catalog) -> None:
    import json

    config = json.loads((ROOT / "models/configs/qwen3-30b-a3b/config.json").read_text())
    shape = hfconfig.shape(config, "qwen3-30b-a3b")
    # MHATokenToKVPool: K and V of num_kv_heads / TP heads x head_dim x layers x elem
    assert kvlayout.sglang_cell_bytes(shape, kvlayout.Settings(tp=1)) == 4 * 128 * 2 * 48 * 2 == 98304
    assert kvlayout.sglang_cell_bytes(shape, kvlayout.Settings(tp=4, kv_cache_dtype="fp8")) == 1 * 128 * 2 * 48 == 12288
    assert kvlayout.sglang_cell_bytes(shape, kvlayout.Settings(tp=8)) == 1 * 128 * 2 * 48 * 2  # never below one head
    # a pool of 10 GiB at TP 1: 10,737,418,240 // 98,304 = 109,226 cells, one of them the padded slot
    assert kvlayout.sglang_tokens(shape, kvlayout.Settings(), 10 * GiB) == 109225


def test_sglang_refuses_a_hybrid(rows) -> None:
    shape = _row(rows, "Qwen3.8 27B FP8").observation.shape
    with pytest.raises(ValueError, match="SGLang keeps a hybrid's recurrent state in a pool of its own"):
        kvlayout.sglang_cell_bytes(shape, kvlayout.Settings())


def test_nemotron_h_row_from_a_gb10_log(rows) -> None:
    # log 44: NVIDIA-Nemotron-3-Nano-4B-FP8, vLLM 0.13.0, fp8 KV, "Available KV cache memory:
    # 11.15 GiB", "GPU KV cache size: 208,320 tokens". The pattern: 21 mamba, 4 attention, 17 MLP.
    r = _row(rows, "NVIDIA Nemotron 3 Nano 4B")
    assert r.family == "hybrid" and r.observation.shape.layers.count("mamba") == 21 and r.observation.shape.layers.count("full") == 4
    # one mamba state: conv 3 x (96 x 80 + 2 x 8 x 128) x 2 B = 58,368 and the temporal state
    # 96 x 80 x 128 x 2 B (float16, as the log updates it) = 1,966,080: 2,024,448 B. An attention
    # token is 8 x 128 x 2 x 1 B = 2,048 B, so the block grows to 16 x cdiv(2,024,448, 32,768) =
    # 992 tokens ("Setting attention block size to 992 tokens"), a page of 2,031,616 B, and the
    # state is padded by 7,168 B, 0.35 % ("Padding mamba page size by 0.35%")
    lay = kvlayout.request(r.observation.shape, r.observation.settings, 8192, kvlayout.version("0.13.0")).layout
    assert (lay.min_block_size, lay.page_bytes, lay.group_size, lay.padding_layers) == (992, 2031616, 4, 3)
    assert len(lay.groups) == 7  # one attention group of 4, six mamba groups of 4 ("Add 3 padding layers")
    # 11.15 GiB = 11,972,221,337 B // 2,031,616 = 5,892 pages // 4 = 1,473 blocks; 0.13 prints
    # 1,473 // 7 groups = 210 x 992 = 208,320 tokens; 11.145 and 11.155 GiB give the same
    assert (r.predicted, r.low, r.high, r.observation.printed) == (208320, 208320, 208320, 208320)


def test_a_mamba_architecture_needs_its_whole_pattern(catalog) -> None:
    arch = {"layers": 3, "attention": "mamba", "hybrid_override_pattern": "M*", "kv_heads": 1, "head_dim": 8}
    with pytest.raises(InputError, match=r"hybrid_override_pattern: found 'M\*', expected 3 characters of M, \*, - and E"):
        hfconfig.from_architecture(arch, "x")


def test_qwen35_moe_hybrid_row_from_a_gb10_log(rows) -> None:
    # log 45: Qwen3.5-35B-A3B-FP8, vLLM 0.18.1, bf16 KV, max_model_len 262,144, "Available KV cache
    # memory: 55.72 GiB", "GPU KV cache size: 729,696 tokens". 10 full-attention layers, 30 gated-delta.
    r = _row(rows, "Qwen3.5 35B-A3B FP8")
    # an attention token: 2 x 256 x 2 x 2 B = 2,048 B; a state: conv 3 x (2 x 16 x 128 + 32 x 128) x 2 B
    # = 49,152 and 32 x 128 x 128 x 4 B (float32) = 2,097,152: 2,146,304 B, so the block is
    # 16 x cdiv(2,146,304, 32,768) = 1,056 tokens ("Setting attention block size to 1056 tokens"),
    # a page of 2,162,688 B, the state padded by 16,384 B, 0.76 % ("Padding mamba page size by 0.76%")
    lay = kvlayout.request(r.observation.shape, r.observation.settings, 262144, kvlayout.version("0.18.1")).layout
    assert (lay.min_block_size, lay.page_bytes, lay.group_size, len(lay.groups), lay.padding_layers) == (1056, 2162688, 10, 4, 0)
    # 55.72 GiB = 59,828,894,433 B // 2,162,688 = 27,664 pages // 10 = 2,766 blocks; printed as
    # 2,766 // 4 groups = 691 x 1,056 = 729,696 tokens (up to 0.20.0); 55.715 and 55.725 GiB agree
    assert (r.predicted, r.low, r.high, r.observation.printed) == (729696, 729696, 729696, 729696)


def test_qwen3_235b_vllm_and_sglang_on_the_same_box(rows) -> None:
    # vllm-project/vllm issue 21348 compares the two engines on 4x H100 at TP 4 with Qwen3-235B-A22B-FP8.
    # The config: 94 layers, 4 KV heads of 128, so one head a rank; bf16 cache.
    vllm, sglang = _row(rows, "Qwen3 235B-A22B FP8, 4x H100"), _row(rows, "Qwen3 235B-A22B FP8, SGLang")
    assert vllm.family == sglang.family == "moe"
    # vLLM (log 10): a token 94 x 1 x 128 x 2 x 2 B = 48,128 B, a block 770,048 B; "8.11 GiB" =
    # 8,708,046,193 B // 770,048 = 11,308 blocks, 180,928 tokens (8.105 and 8.115 GiB: 11,301 and
    # 11,315 blocks). The log prints 178,880 = 11,180 blocks: outside, and the row says so.
    assert vllm.predicted_per_token == 48128
    assert (vllm.predicted, vllm.low, vllm.high, vllm.observation.printed) == (180928, 180816, 181040, 11180 * 16)
    assert not vllm.within_precision and "LMCache" in vllm.observation.suspicion
    # SGLang (log 11): "#tokens: 367404, K size: 8.23 GB, V size: 8.23 GB". K is 94 layers x
    # (367,404 + 1) cells x 1 head x 128 x 2 B = 8,841,233,920 B = 8.234 GiB, printed "8.23"
    assert round(Fraction(94 * (367404 + 1) * 128 * 2, GiB), 2) == Fraction(823, 100)
    # forwards: K + V as printed, 16.46 GiB = 17,673,790,423 B // 48,128 = 367,224 cells, 367,223
    # tokens; the printed sizes' rounding (16.45 to 16.47 GiB) spans 367,000 to 367,446
    assert sglang.predicted_per_token == 48128
    assert (sglang.predicted, sglang.low, sglang.high) == (367223, 367000, 367446)
    assert sglang.within_precision


def test_gpt_oss_one_request_check(rows) -> None:
    # log 17: gpt-oss-120b on one H100, vLLM 0.11.0, max_model_len 131,072: "4.54 GiB KV cache is
    # needed". The config: 36 layers alternating sliding (window 128) and full, 8 KV heads of 64,
    # bf16: a token of one layer 2 x 8 x 64 x 2 B = 2,048 B, a 16-token page 32,768 B.
    r = _row(rows, "gpt-oss-120b, one H100")
    assert (r.family, r.observation.quantity) == ("sliding window", "needed")
    full = 18 * (131072 // 16) * 32768  # 8,192 pages a full layer: 4,831,838,208 B
    sliding = 18 * ((127 + 8192 + 15) // 16 + 1) * 32768  # cdiv(127 + 8,192, 16) + 1 = 521 pages a layer
    assert r.predicted == full + sliding == 5139136512  # 4.79 GiB
    # the printed 4.54 GiB (4,869,525,258 to 4,880,262,676 B): a budget of 1,024 (73 pages) would give
    # 4,874,895,360 B; at this row's 8,192 the row is 5.4 % over and says what we suspect
    assert full + 18 * ((127 + 1024 + 15) // 16 + 1) * 32768 == 4874895360
    assert r.observation.printed == 4874787881 and not r.within_precision
    assert r.error == Fraction(5139136512 - 4874787881, 4874787881)
    assert "prefill budget" in r.observation.suspicion


def test_dense_fp8_row_from_a_gb10_log(rows) -> None:
    # log 58: Qwen2.5-14B-Instruct-FP8-dynamic, vLLM 0.13.0, fp8 KV, "Available KV cache memory:
    # 30.46 GiB", "GPU KV cache size: 332,672 tokens". 48 layers x 8 KV heads x 128 x 2 x 1 B =
    # 98,304 B a token, 1,572,864 B a block: 30.46 GiB = 32,706,175,959 B // 1,572,864 = 20,794
    # blocks, 332,704 tokens; 30.455 and 30.465 GiB give 20,790 and 20,797; printed 20,792 blocks
    r = _row(rows, "Qwen2.5 14B FP8")
    assert r.predicted_per_token == 98304
    assert (r.predicted, r.low, r.high, r.observation.printed) == (332704, 332640, 332752, 20792 * 16)
    assert r.within_precision


# --- a hybrid's mamba cache mode: the log's own line, else its release's rule -------------------


def _observed(catalog, log: str, text: str | None = None) -> accuracy.Observation:
    entries, configs, logs = public_observations(ROOT)
    entry = next(e for e in entries if e.log == log)
    return accuracy.public_observations([entry], configs, catalog, {log: logs[log] if text is None else text})[0]


def _concurrency(o: accuracy.Observation) -> str:
    """What "Maximum concurrency" prints for the observation's pool, as vLLM formats it."""
    v = kvlayout.version(o.engine_version)
    return f"{float(kvlayout.pool(o.shape, o.settings, o.max_model_len, o.pool, v).concurrency):.2f}"


def test_a_hybrid_log_that_runs_without_prefix_caching_holds_one_state_page(catalog) -> None:
    """Log 44 (vLLM 0.13.0, Nemotron-H 4B): the engine config line says enable_prefix_caching=False,
    so each of the six mamba groups (21 mamba layers and 3 padding, in groups of the 4 attention
    layers) holds one state page: cdiv(8,192, 992) = 9 attention pages + 6 = 15 a request, and the
    1,473 blocks print 1473 / 15 = 98.20x, as the log does. In "align" mode (two pages) it would be
    9 + 12 = 21 pages and 70.14x."""
    o = _observed(catalog, "44-v013-gb10-nemotron-h-hybrid-padding-ok.log")
    assert o.settings.mamba_cache_mode == "none"
    v = kvlayout.version(o.engine_version)
    assert kvlayout.pool(o.shape, o.settings, o.max_model_len, o.pool, v).blocks == 1473
    assert kvlayout.request(o.shape, o.settings, o.max_model_len, v).pages_per_request == 9 + 6 == 15
    printed = logread.read_log((ROOT / "logs" / "public" / "44-v013-gb10-nemotron-h-hybrid-padding-ok.log").read_text()).max_concurrency
    assert printed is not None and _concurrency(o) == str(printed.value) == "98.20"
    assert _concurrency(replace(o, settings=replace(o.settings, mamba_cache_mode="align"))) == "70.14"


def test_a_hybrid_log_that_turns_prefix_caching_on_holds_two_state_pages(catalog) -> None:
    """Log 45 (vLLM 0.18.1, Qwen3.5 35B-A3B): prefix caching, off by default for a hybrid in that
    release, is turned on ('enable_prefix_caching': True; "Mamba cache mode is set to 'align'").
    10 attention and 30 gated-delta layers make one attention group and three linear ones:
    cdiv(262,144, 1,056) = 249 pages + 3 x 2 = 255 a request; 2,766 blocks print 2766 / 255 = 10.85x.
    The release's default alone (one page each, 252) would print 10.98x."""
    name = "45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log"
    o = _observed(catalog, name)
    assert o.settings.mamba_cache_mode == "align"
    assert kvlayout.request(o.shape, o.settings, o.max_model_len, kvlayout.version(o.engine_version)).pages_per_request == 249 + 6 == 255
    printed = logread.read_log((ROOT / "logs" / "public" / name).read_text()).max_concurrency
    assert printed is not None and _concurrency(o) == str(printed.value) == "10.85"
    assert _concurrency(replace(o, settings=replace(o.settings, mamba_cache_mode="none"))) == "10.98"


def test_without_the_logs_word_a_hybrid_takes_its_releases_default(catalog) -> None:
    """Log 35 (vLLM 0.24.0, Qwen3.6 35B-A3B) prints 567,978 tokens with prefix caching turned on
    in its argument dump: 299 blocks / (cdiv(131,072, 1,984) + 3 x 2 = 69 pages) x 131,072. The
    same log without that argument leaves the 0.24.0 default, off for a hybrid (vllm/engine/arg_utils.py
    `and not model_config.is_hybrid`): one state page, 66 pages, int(299 / 66 x 131,072) = 593,795."""
    name = "35-v024-qwen36-35b-a3b-nvfp4-5090-args.log"
    text = (ROOT / "logs" / "public" / name).read_text()
    o = _observed(catalog, name)
    assert (o.settings.mamba_cache_mode, accuracy.row(o).predicted, o.printed) == ("align", 567978, 567978)
    silent = text.replace("'enable_prefix_caching': True, ", "")  # the same arguments, that one left out
    assert accuracy.log_mamba_cache_mode(silent) == (None, None)
    o = _observed(catalog, name, silent)
    assert o.settings.mamba_cache_mode == "none"
    assert accuracy.row(o).predicted == int(Fraction(299, 66) * 131072) == 593795
    # and from 0.28.0 the default is on: "align" again
    assert kvlayout.mamba_cache_mode(o.shape, kvlayout.version("0.28.0")) == "align"


def test_how_a_log_states_prefix_caching() -> None:
    read = accuracy.log_mamba_cache_mode
    assert read("non-default args: {'model': 'x', 'enable_prefix_caching': False}") == (False, None)
    assert read("vllm serve x --no-enable-prefix-caching") == (False, None)
    assert read("vllm serve x --enable-prefix-caching --tp 2") == (True, None)
    # the engine config line is what vLLM resolved: it outranks what the arguments asked
    assert read("non-default args: {'enable_prefix_caching': True}\n... with config: ..., enable_prefix_caching=False, ...") == (False, None)
    assert read("WARNING [config.py:388] Mamba cache mode is set to 'all' for NemotronHForCausalLM by default when prefix caching is enabled") == (True, "all")
