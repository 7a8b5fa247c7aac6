"""Zhipu's ChatGLM2, ChatGLM3 and GLM-4-9B (ChatGLMModel and ChatGLMForConditionalGeneration), which vLLM's
registry builds with vllm/model_executor/models/chatglm.py ChatGLMForCausalLM (the same parameters in 0.13.0,
0.20.0 and 0.33.0) over its own ChatGLMConfig: the parameter count against the checkpoint's shards, the KV cache
a token, ChatGLM's own field names, the rope over seq_length, tensor and pipeline parallel, refusals, and the
command line.

THUDM/glm-4-9b-chat's config.json ships as its Hub blame page shows it (models/configs/glm-4-9b-chat). No whole
config.json naming ChatGLMForConditionalGeneration over these layers was found, so that name stays unchecked and
is read here as the same config under it."""

from __future__ import annotations

import json

import pytest
from conftest import config_text, parameters

from calc.engine import hfconfig, kvlayout, weights

NAME = "glm-4-9b-chat"
H, V, FFN = 4096, 151552, 13696
ROPE = 131072 * 64 * 2  # seq_length positions, half of each 128-wide head


def shape(**changes: object) -> hfconfig.Shape:
    return hfconfig.shape({**json.loads(config_text(NAME)), **changes}, NAME)


def layer(tp: int = 1, kv_heads: int = 2) -> int:
    """query_key_value (32 heads of 128 and the KV heads a rank holds, with its bias), dense, dense_h_to_4h
    (gate and up) and dense_4h_to_h divided; the two RMSNorms whole."""
    qkv = H // tp + 2 * kv_heads * 128
    return qkv * H + qkv + H * H // tp + 3 * FFN // tp * H + 2 * H


def test_glm_4_9b_chat_counts_as_chatglm_py_builds_it() -> None:
    """9,399,951,360 parameters: an embedding and an untied output_layer of padded_vocab_size (151,552) rows,
    40 layers of 32 query heads and 2 K and V heads (multi_query_group_num) of 128, q/k/v biased (add_qkv_bias),
    nothing else biased, RMSNorms, a gated MLP of 13,696; the rope turns 64 of each head over 131,072 positions."""
    s = shape()
    assert (s.architecture, s.vocab, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("ChatGLMModel", V, 32, 2, 128, False)
    assert (s.attention_bias, s.output_bias, s.norm_bias, s.mlps[0]) == (True, False, False, hfconfig.Mlp(intermediate=FFN))
    assert s.layers == (hfconfig.FULL,) * 40
    assert parameters(s) == 2 * V * H + H + 40 * layer() == 9_399_951_360
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(131072, 64)]
    assert hfconfig.unchecked_note("ChatGLMModel") is None and hfconfig.unchecked_note("ChatGLMForConditionalGeneration")


def test_glm_4_9b_chat_fills_its_shards() -> None:
    """The checkpoint's ten bfloat16 shards, 1.95, 1.82, 1.97, 1.93, 1.82, 1.97, 1.93, 1.82, 1.97 and 1.65 GB
    (huggingface.co/THUDM/glm-4-9b-chat/tree/731ca7fd937cff9f2ae5f01de85a0c8bf21df6fa), 18.83 GB, hold the
    count at 2 B (18.80 GB; each shard's size is rounded to 10 MB)."""
    shards = (1.95, 1.82, 1.97, 1.93, 1.82, 1.97, 1.93, 1.82, 1.97, 1.65)
    assert abs(2 * parameters(shape()) - sum(shards) * 1e9) < len(shards) * 0.005e9


@pytest.mark.parametrize(("tp", "kv_heads"), [(1, 2), (2, 1), (4, 1), (8, 1)])
def test_glm_4_9b_weights_and_kv_per_rank(tp: int, kv_heads: int) -> None:
    """40,960 B a token at TP 1 (40 layers x 2 x 2 KV heads x 128 x 2 B); from two ranks on each holds one KV head."""
    s = shape()
    assert weights.per_rank(s, tp).model == 2 * (2 * V // tp * H + H + 40 * layer(tp, kv_heads)) + ROPE
    assert kvlayout.request(s, kvlayout.Settings(tp=tp), 8192, kvlayout.version(None)).bytes_per_token == 40 * 2 * kv_heads * 128 * 2


def test_chatglm_reads_its_own_names() -> None:
    """ChatGLMForConditionalGeneration reads the same; without multi_query_attention every query head has its
    K and V (ChatGLM-6B's 32); add_bias_linear biases the output and the MLP too; rmsnorm false gives LayerNorms
    with a bias; seq_length sizes the rope and the derived context."""
    same = shape(architectures=["ChatGLMForConditionalGeneration"])
    assert parameters(same) == parameters(shape()) and same.architecture == "ChatGLMForConditionalGeneration"
    assert shape(multi_query_attention=False).kv_heads == 32
    biased = shape(add_bias_linear=True, add_qkv_bias=False)
    assert (biased.attention_bias, biased.output_bias, biased.mlps[0].bias) == (True, True, True)
    assert shape(rmsnorm=False).norm_bias
    assert [r.positions for r in shape(seq_length=32768).ropes] == [32768]
    assert hfconfig.derived_max_model_len(json.loads(config_text(NAME)), (0, 33)).tokens == 131072


@pytest.mark.parametrize(
    ("changes", "field"),
    [({"kv_channels": 96}, "kv_channels: found 96"), ({"post_layer_norm": False}, "post_layer_norm: found False"),
     ({"vision_config": {"hidden_size": 1792}}, "vision_config"), ({"multi_query_group_num": 3}, "multi_query_group_num: found 3"),
     ({"position_encoding_2d": True, "inner_hidden_size": 16384}, "position_encoding_2d: found True"),
     ({"seq_length": "x"}, "seq_length: found 'x', expected a whole number of positions")],
)  # fmt: skip
def test_chatglm_refuses_what_chatglm_py_does_not_build(changes: dict, field: str) -> None:
    with pytest.raises(hfconfig.ConfigError, match=field):
        shape(**changes)


def test_fields_left_out_are_vllms_chatglm_config_defaults() -> None:
    """vLLM's ChatGLMConfig (transformers_utils/configs/chatglm.py) fills what a config leaves out:
    post_layer_norm and rmsnorm true, 2,048 positions; the count is the full config's."""
    whole = json.loads(config_text(NAME))
    left = {k: v for k, v in whole.items() if k not in ("post_layer_norm", "rmsnorm", "seq_length")}
    assert whole["post_layer_norm"] is whole["rmsnorm"] is True
    bare = hfconfig.shape(left, NAME)
    assert weights.per_rank(bare, 1).model == weights.per_rank(shape(seq_length=2048), 1).model
    assert [r.positions for r in bare.ropes] == [2048]
