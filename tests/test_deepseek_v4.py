"""DeepSeek V4 (DeepseekV4ForCausalLM), read as vLLM's vllm/models/deepseek_v4/ builds it (nvidia/model.py,
attention.py, compressor.py, 0.33.0; registered from 0.20.0): the parameter count against the published
total, the checkpoint's bytes, the split over the ranks, and what is refused.

No config.json of the class was found at a citable address but a pruned derivative's, so the class is
unchecked and the tests read fixtures (models/configs/SOURCES.yaml says where was looked):
tests/data/configs/deepseek-v4-flash, deepseek-ai/DeepSeek-V4-Flash's file as a public audit note quotes it
whole and verbatim (code index file 59368543979, repository not named; fetched from the Hub, 1,749 bytes,
as this copy is), and tests/data/configs/deepseek-v4-flash-0731-reap160, the config of a REAP-pruned
DeepSeek-V4-Flash-0731 (160 experts a layer) as patrickbdevaney/deepseek-v4-flash-0731-cuda vendors it.
The audit note also gives the checkpoint index's total_size, 159,609,485,896 B, which the count below
meets exactly with the MTP module and the checkpoint's int64 hash tables added.

The KV cache (a sliding window on every layer; compressed entries, compressor states and the indexer's
keys on the compressed layers) is not modeled: vLLM's grouping of those specs was not read, so a start
is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_missing_field_refused, config_path, config_refusal, config_shape, config_text, parameters, run_calc

from calc.engine import hfconfig, kvlayout, ranks, weights
from calc.units import fmt

FLASH, REAP = "deepseek-v4-flash", "deepseek-v4-flash-0731-reap160"
H, V, HEADS, D, Q, OR, G, HC, W, IH, ID, K = 4096, 129280, 64, 512, 1024, 1024, 8, 4, 2048, 64, 128, 6
MIX = (2 + HC) * HC  # the hyper-connections' mixing rows
LAYERS, C4, C128, HASH = 43, 21, 20, 3  # compress_ratios: two sliding-window layers, then 4 and 128 in turn


def attention(tp: int) -> int:
    """fused_wqa_wkv, q_norm, kv_norm (whole); wq_b, wo_a, wo_b and the sink (divided)."""
    return (Q + D) * H + Q + D + HEADS // tp * D * Q + G * OR // tp * (HEADS * D // G) + H * (G * OR // tp) + HEADS // tp


def compressor(ratio: int, dim: int) -> int:
    coff = 2 if ratio == 4 else 1
    return ratio * coff * dim + 2 * coff * dim * H + dim  # ape, fused_wkv_wgate, norm


INDEXER = IH * ID * Q + IH * H + compressor(4, ID)  # wq_b, weights_proj, its own compressor
HYPER = 2 * (MIX * HC * H + MIX + 3)  # hc_attn_* and hc_ffn_*: fn, base, scale


def total(experts: int, tp: int = 1) -> int:
    moe = experts * H + experts * 3 * (W // tp) * H + 3 * (W // tp) * H  # gate, experts, one shared expert
    layer = attention(tp) + HYPER + 2 * H + moe
    ends = 2 * V // tp * H + H + HC * HC * H + HC + 1  # embedding, lm_head, norm, hc_head_fn/base/scale
    routing = HASH * V * K + (LAYERS - HASH) * experts  # tid2eid on the hash layers, a correction bias on the rest
    return ends + LAYERS * layer + C4 * (compressor(4, D) + INDEXER) + C128 * compressor(128, D) + routing


def test_deepseek_v4_flash_meets_its_published_size() -> None:
    """284,334,567,511 parameters: 284B, as the model card gives DeepSeek-V4-Flash (284B total, 13B activated).
    The MTP module is not among them: vLLM drops it at load (the weights mapper maps "mtp." to None)."""
    s = config_shape(FLASH)
    assert (s.architecture, s.family, s.heads, s.kv_heads, s.head_dim, s.sliding_window, s.drafter_layers) == (
        "DeepseekV4ForCausalLM",
        "mla",
        64,
        1,
        512,
        128,
        0,
    )
    assert s.compress_ratios == (0, 0) + (4, 128) * 20 + (4,)
    assert parameters(s) == total(256) == 284_334_567_511
    assert round(total(256) / 1e9) == 284
    names = {t.path for t in weights.tensors(s)}
    assert {"model.layers.2.ffn.gate.tid2eid", "model.layers.3.ffn.gate.e_score_correction_bias", "model.layers.2.attn.indexer.wq_b",
            "model.layers.3.attn.compressor.ape", "model.hc_head_fn"} <= names  # fmt: skip
    assert not {"model.layers.3.ffn.gate.tid2eid", "model.layers.3.attn.indexer.wq_b", "model.layers.1.attn.compressor.ape"} & names
    assert hfconfig.unchecked_note("DeepseekV4ForCausalLM")
    assert hfconfig.outside_own_code("DeepseekV4ForCausalLM", (0, 20)) is None
    assert "does not register" in (hfconfig.outside_own_code("DeepseekV4ForCausalLM", (0, 19)) or "")


def test_the_checkpoint_holds_the_count_the_mtp_module_and_int64_tables() -> None:
    """The checkpoint index's total_size, 159,609,485,896 B: the layers as vLLM loads them (fp8 linears with one
    e8m0 byte a 128 x 128 block, MXFP4 experts: half a byte a value and a byte a 32, float32 hyper-connections,
    bfloat16 ends), the three tid2eid tables stored as int64 (vLLM builds int32), and the MTP module vLLM does
    not load: one layer of ratio 0 with a correction bias, e_proj and h_proj (fp8, hidden x hidden), three
    norms and its own hc_head."""
    s = config_shape(FLASH)
    counted = weights.per_rank(s).model
    q = weights.quant_of(s)
    assert (q.method, q.scale_bytes) == ("fp8-block", 1)
    layer0 = sum(weights.tensor_bytes(t, q, 2) for t in weights.tensors(s) if t.path.startswith("model.layers.0.") and "tid2eid" not in t.path)
    mtp = layer0 + 256 * 4 + 2 * (H * H + (H // 128) ** 2) + 3 * H * 2 + (HC * HC * H + HC + 1) * 4
    assert counted == 156_006_389_980
    assert counted + HASH * V * K * 4 + mtp == 159_609_485_896


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_weights_divide_over_the_ranks(tp: int) -> None:
    """wq_b, wo_a, wo_b, the sink, the experts, the shared expert and the vocabulary divide; fused_wqa_wkv,
    the compressors, the indexers, the gates, the tables and the hyper-connections are whole on every rank."""
    s = config_shape(FLASH)
    assert parameters(s, tp) == total(256, tp)
    experts = next(t for t in weights.tensors(s, tp) if t.path == "model.layers.5.ffn.experts.gate_up_proj")
    assert (experts.rows, experts.cols, experts.count, experts.fp4) == (2 * W // tp, H, 256, True)
    assert weights.tensor_bytes(experts, weights.quant_of(s), 2) == 256 * (2 * W // tp * H // 2 + 2 * W // tp * H // 32)


def test_fp8_experts_and_the_shared_expert_in_whole_blocks() -> None:
    """expert_dtype fp8 (DeepSeek-V4-Flash-Base's kind): the experts fp8 like the rest, scales float32
    (is_scale_e8m0 only for fp4). The shared expert's width is rounded up to whole 128-blocks a rank
    (DeepseekV4MLP: cdiv(blocks, TP)): 10 blocks of 1,280 at TP 4 give each rank 3, 384 wide."""
    data = json.loads(config_text(FLASH))
    fp8 = hfconfig.shape({**data, "expert_dtype": "fp8"}, FLASH)
    q = weights.quant_of(fp8)
    assert q.scale_bytes == 4
    down = next(t for t in weights.tensors(fp8) if t.path == "model.layers.5.ffn.experts.down_proj")
    assert not down.fp4 and weights.tensor_bytes(down, q, 2) == 256 * (H * W + (H // 128) * (W // 128) * 4)
    narrow = hfconfig.shape({**data, "moe_intermediate_size": 1280}, FLASH)
    shared = next(t for t in weights.tensors(narrow, 4) if t.path == "model.layers.5.ffn.shared_experts.down_proj")
    assert (shared.rows, shared.cols) == (H, 384)


def test_a_pruned_checkpoint_of_the_class() -> None:
    """The REAP-pruned DeepSeek-V4-Flash-0731 (160 experts a layer): its compress_ratios hold 46 entries, of
    which the first 43 are the layers'; the count is the same formula's at 160 experts."""
    s = config_shape(REAP)
    assert len(json.loads(config_text(REAP))["compress_ratios"]) == 46
    assert s.compress_ratios == config_shape(FLASH).compress_ratios
    assert parameters(s) == total(160) == 180_433_133_911


def test_pipeline_stages_each_hold_the_hc_head() -> None:
    """DeepseekV4Model builds its hc_head on every stage; the embedding goes to the first, lm_head and the
    norm to the last, the layers where they fall."""
    s = config_shape(FLASH)
    one = weights.tensors(s)
    two = ranks.stage_weights(s, one, 2)
    head = (HC * HC * H + HC + 1) * 4
    assert sum(m for m, _ in two) == weights.per_rank(s).model + head
    assert ranks.stage_shape(s, 0, 22, False).compress_ratios == s.compress_ratios[:22]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"compress_ratios": [0, 2] * 22}, "compress_ratios: found [0, 2"),
        ({"compress_ratios": [0, 4]}, "a list of at least 43 ratios, each 0, 4 or 128"),
        ({"expert_dtype": "int4"}, "expert_dtype: found 'int4', expected fp4 or fp8"),
        ({"vision_n_layers": 24}, "vision_n_layers: found 24, expected absent or 0"),
        ({"tie_word_embeddings": True}, "tie_word_embeddings: found True"),
        ({"hidden_act": "gelu"}, "hidden_act: found 'gelu', expected silu"),
        ({"o_groups": None}, "o_groups: found nothing, expected a whole number"),
        ({"num_hash_layers": None}, "num_hash_layers: found nothing"),
    ],
)
def test_configs_vllm_does_not_build_are_refused(change: dict, message: str) -> None:
    assert message in config_refusal(FLASH, change)


def test_the_kv_cache_is_refused_in_one_line(tmp_path: Path) -> None:
    """A start needs the KV layout, which is not modeled: `calc model` says so in one line, with the weights
    a rank it does count; a config without a field the reader needs is refused first, naming it."""
    done = run_calc("model", str(config_path(FLASH)), "--max-model-len", "8192", "--tensor-parallel-size", "4", "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    at_tp4 = fmt(weights.per_rank(config_shape(FLASH), 4).model, "GiB")
    assert done.stderr.strip().splitlines() == [f"calc: error: {kvlayout.DSV4_KV_NOTE}; the weights alone, from the config: {at_tp4} a rank at TP 4"]
    assert at_tp4 == "37.24 GiB"
    with pytest.raises(ValueError, match="DeepSeek V4's KV cache"):
        kvlayout.layer_specs(config_shape(FLASH), kvlayout.Settings())
    assert_missing_field_refused(json.loads(config_text(FLASH)), "o_lora_rank", tmp_path)
