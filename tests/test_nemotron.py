"""NVIDIA's Nemotron-4, Minitron and Nemotron-Mini (NemotronForCausalLM), read by vLLM's
vllm/model_executor/models/nemotron.py (the same parameters in 0.13.0, 0.20.0 and 0.33.0): the parameter count
against the checkpoints' sizes, the KV cache a token, the MLP without a gate and the LayerNorms with biases,
head_dim from head_dim or kv_channels, tensor and pipeline parallel, and the command line.

nvidia/Nemotron-Mini-4B-Instruct's and nvidia/Minitron-8B-Base's config.json ship byte for byte as their Hub
blame pages show them (models/configs/SOURCES.yaml)."""

from __future__ import annotations

import json

import pytest
from conftest import config_shape, config_text, parameters

from calc.engine import hfconfig, kvlayout, weights

NAME = "nemotron-mini-4b-instruct"
H, V, FFN = 3072, 256000, 9216


def shape(**changes: object) -> hfconfig.Shape:
    return hfconfig.shape({**json.loads(config_text(NAME)), **changes}, NAME)


def layer(tp: int = 1, kv_heads: int = 8) -> int:
    """qkv_proj (24 heads of 128, the KV heads a rank holds) and o_proj, up_proj and down_proj divided;
    input_layernorm and post_attention_layernorm, a weight and a bias each, whole."""
    return H * H // tp + 2 * kv_heads * 128 * H + H * H // tp + 2 * FFN // tp * H + 2 * 2 * H


def test_nemotron_mini_4b_meets_its_checkpoint() -> None:
    """4,190,509,056 parameters: an untied head of 256,000, a plain MLP (up_proj, down_proj: no gate), LayerNorm1P
    with a bias, no linear bias; the rope turns half of each head. The checkpoint's pytorch_model.bin of bfloat16
    tensors is 8.38 GB (huggingface.co/nvidia/Nemotron-Mini-4B-Instruct/tree/main): that count at 2 B."""
    s = shape()
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.norm_bias) == ("NemotronForCausalLM", 24, 8, 128, False, True)
    assert set(s.mlps) == {hfconfig.Mlp(intermediate=FFN, gated=False)} and (s.attention_bias, s.output_bias) == (False, False)
    assert parameters(s) == 2 * V * H + 2 * H + 32 * layer() == 4_190_509_056
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(4096, 64)]
    names = {t.path for t in weights.tensors(s)}
    assert {"model.layers.0.mlp.up_proj", "model.layers.0.mlp.down_proj"} <= names and "model.layers.0.mlp.gate_proj" not in names
    assert abs(2 * parameters(s) - 8.38e9) < 0.005e9
    assert hfconfig.unchecked_note("NemotronForCausalLM") is None


def test_minitron_8b_meets_its_checkpoint() -> None:
    """8,271,699,968 parameters: 48 heads of head_dim 128 (6,144 wide on a hidden size of 4,096, which 48 does not
    divide), 8 KV heads, 16,384 wide; the checkpoint's bfloat16 pytorch_model.bin is 16.5 GB
    (huggingface.co/nvidia/Minitron-8B-Base/tree/6d7f9b30e179f736bee69d92674b58def30b3284): that count at 2 B."""
    s = config_shape("minitron-8b-base")
    assert (s.heads, s.kv_heads, s.head_dim) == (48, 8, 128)
    layer = 2 * 4096 * 6144 + 2 * 4096 * 1024 + 2 * 16384 * 4096 + 4 * 4096
    assert parameters(s) == 2 * V * 4096 + 2 * 4096 + 32 * layer == 8_271_699_968
    assert abs(2 * parameters(s) - 16.5e9) < 0.05e9
    assert kvlayout.request(s, kvlayout.Settings(), 4096, kvlayout.version(None)).bytes_per_token == 32 * 2 * 8 * 128 * 2


@pytest.mark.parametrize(("tp", "kv_heads"), [(1, 8), (2, 4), (4, 2), (8, 1)])
def test_nemotron_weights_and_kv_per_rank(tp: int, kv_heads: int) -> None:
    """131,072 B a token at TP 1: 32 layers x 2 x 8 KV heads x 128 x 2 B, divided over the ranks."""
    s = shape()
    assert weights.per_rank(s, tp).model == 2 * (2 * V // tp * H + 2 * H + 32 * layer(tp, kv_heads)) + 4096 * 64 * 2
    assert kvlayout.request(s, kvlayout.Settings(tp=tp), 4096, kvlayout.version(None)).bytes_per_token == 32 * 2 * kv_heads * 128 * 2


def test_nemotron_head_dim_and_biases() -> None:
    """head_dim wins over kv_channels, kv_channels over hidden_size / heads (Minitron-8B's 4,096 over 48 heads
    is not whole: its kv_channels of 128 is read); attention_bias or bias biases q/k/v and o_proj, mlp_bias the
    MLP; a missing partial_rotary_factor is NemotronConfig's half."""
    assert shape(head_dim=96).head_dim == 96
    assert shape(hidden_size=4096, num_attention_heads=48).head_dim == 128
    no_kv = {k: v for k, v in json.loads(config_text(NAME)).items() if k != "kv_channels"}
    assert hfconfig.shape({**no_kv, "num_attention_heads": 32}, NAME).head_dim == 96
    for field in ("attention_bias", "bias"):
        assert (shape(**{field: True}).attention_bias, shape(**{field: True}).output_bias) == (True, True)
    assert shape(mlp_bias=True).mlps[0].bias
    no_rope = {k: v for k, v in json.loads(config_text(NAME)).items() if k != "partial_rotary_factor"}
    assert [r.rotary_dim for r in hfconfig.shape(no_rope, NAME).ropes] == [64]
