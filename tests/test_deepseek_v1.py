"""DeepSeek-MoE 16B and the other model_type "deepseek" checkpoints (DeepseekForCausalLM), which vLLM's registry
sends to vllm/model_executor/models/deepseek_v2.py (DeepseekForCausalLM, a subclass of DeepseekV2ForCausalLM that
adds nothing, in 0.13.0, 0.20.0 and 0.33.0): plain attention (DeepseekAttention, use_mha for model_type deepseek),
a dense first layer and DeepseekV2MoE layers after it. The parameter count against the published total, the KV
cache a token, the layer kinds, tensor and pipeline parallel, refusals, and the command line.

deepseek-ai/deepseek-moe-16b-chat's config.json ships as its Hub page shows it (models/configs/SOURCES.yaml)."""

from __future__ import annotations

import json

import pytest
from conftest import config_text, parameters

from calc.engine import hfconfig, kvlayout, weights

NAME = "deepseek-moe-16b-chat"
H, V, FFN, MOE, EXPERTS = 2048, 102400, 10944, 1408, 64


def shape(**changes: object) -> hfconfig.Shape:
    return hfconfig.shape({**json.loads(config_text(NAME)), **changes}, NAME)


def attention(tp: int = 1) -> int:
    """q/k/v/o of 16 heads of 128 (16 K and V heads), divided, and the two RMSNorms."""
    return 4 * H * H // tp + 2 * H


def moe_layer(tp: int = 1) -> int:
    """A router of 64 (whole on every rank), 64 experts of 1,408 and two shared ones (2,816 wide), divided."""
    return attention(tp) + EXPERTS * H + EXPERTS * 3 * MOE // tp * H + 3 * 2 * MOE // tp * H


def test_deepseek_moe_16b_meets_its_published_size() -> None:
    """16,375,728,128 parameters: the "params": 16.376 (billion) the Open LLM Leaderboard's request records for
    deepseek-ai/deepseek-moe-16b-chat (huggingface.co/datasets/open-llm-leaderboard/requests,
    deepseek-ai/deepseek-moe-16b-chat_eval_request_False_bfloat16_Original.json), the "16.4B parameters" of
    DeepSeek-MoE's README. Layer 0 is dense (first_k_dense_replace 1), the 27 after it are MoE; lm_head untied."""
    s = shape()
    assert (s.architecture, s.family, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("DeepseekForCausalLM", "moe", 16, 16, 128, False)
    assert s.layers == (hfconfig.FULL,) * 28 and (s.attention_bias, s.output_bias) == (False, False)
    assert s.mlps[0] == hfconfig.Mlp(intermediate=FFN)
    assert set(s.mlps[1:]) == {hfconfig.Mlp(experts=EXPERTS, expert_intermediate=MOE, shared_intermediate=2 * MOE)}
    total = 2 * V * H + H + attention() + 3 * FFN * H + 27 * moe_layer()
    assert parameters(s) == total == 16_375_728_128 and round(total / 1e9, 3) == 16.376
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(4096, 128)]
    assert hfconfig.unchecked_note("DeepseekForCausalLM") is None


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_deepseek_moe_weights_and_kv_per_rank(tp: int) -> None:
    """229,376 B a token at TP 1: 28 layers x 2 x 16 KV heads x 128 x 2 B, the heads divided over the ranks."""
    s = shape()
    per_rank = 2 * V // tp * H + H + attention(tp) + 3 * FFN // tp * H + 27 * moe_layer(tp)
    assert weights.per_rank(s, tp).model == 2 * per_rank + 4096 * 128 * 2
    assert kvlayout.request(s, kvlayout.Settings(tp=tp), 4096, kvlayout.version(None)).bytes_per_token == 28 * 2 * 16 // tp * 128 * 2


def test_deepseek_v1_layer_kinds() -> None:
    """n_routed_experts null (DeepSeek-Prover-V1.5's config) makes every layer dense; moe_layer_freq 2 keeps the
    odd layers dense; num_key_value_heads 8 (GigaChat-20B-A3B's) gives grouped K and V heads; no shared experts
    where n_shared_experts is null."""
    assert set(shape(n_routed_experts=None, first_k_dense_replace=None, moe_layer_freq=None).mlps) == {hfconfig.Mlp(intermediate=FFN)}
    freq = shape(moe_layer_freq=2).mlps
    assert [m.experts for m in freq[:5]] == [0, 0, EXPERTS, 0, EXPERTS]
    assert shape(num_key_value_heads=8).kv_heads == 8
    assert shape(n_shared_experts=None).mlps[1].shared_intermediate == 0


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"tie_word_embeddings": True}, "tie_word_embeddings: found True"), ({"kv_lora_rank": 512}, "kv_lora_rank: found 512"),
     ({"head_dim": 64}, "head_dim: found 64"), ({"model_type": "deepseek_v2"}, "model_type: found 'deepseek_v2'")],
)  # fmt: skip
def test_deepseek_v1_refuses_what_deepseek_v2_py_does_not_build(changes: dict, field: str) -> None:
    with pytest.raises(hfconfig.ConfigError, match=field):
        shape(**changes)
