"""LG's EXAONE 3.0, 3.5 and EXAONE Deep (ExaoneForCausalLM), read by vLLM's vllm/model_executor/models/exaone.py
(the same parameters in 0.13.0, 0.20.0 and 0.33.0): the parameter count against the published total, the KV
cache a token, EXAONE's own field names, tensor and pipeline parallel, and the command line.

Two EXAONE 3.5 configs ship as the Hub's pages show them (models/configs/SOURCES.yaml): the 32B's, from an
abliterated copy of the same shapes, and the 2.4B's, from a fine-tune that leaves tie_word_embeddings out
(tied, PretrainedConfig's default). EXAONE 3.0 7.8B reads a fixture (tests/data/configs/exaone-3.0-7.8b-instruct):
transformers' printed ExaoneConfig of LGAI-EXAONE/EXAONE-3.0-7.8B-Instruct, quoted whole in a model note beside
the model's printed module tree (code index file 46001266965, repository not named)."""

from __future__ import annotations

import json

import pytest
from conftest import config_shape, config_text, parameters

from calc.engine import hfconfig, kvlayout, weights

NAME = "exaone-3.0-7.8b-instruct"
H, V, FFN, KV = 4096, 102400, 14336, 8


def shape(**changes: object) -> hfconfig.Shape:
    return hfconfig.shape({**json.loads(config_text(NAME)), **changes}, NAME)


def layer(tp: int = 1, kv_heads: int = KV) -> int:
    """q_proj of 32 heads of 128, k_proj and v_proj of the KV heads a rank holds, out_proj, the gated MLP
    (c_fc_0, c_fc_1, c_proj) divided; ln_1 and ln_2 whole."""
    return H * H // tp + 2 * kv_heads * 128 * H + H * H // tp + 3 * FFN // tp * H + 2 * H


def test_exaone_3_7_8b_meets_its_published_size() -> None:
    """7,818,448,896 parameters, EXAONE 3.0's 7.8B: the printed module tree beside the config shows the same
    tensors (wte of 102,400 x 4,096; k_proj and v_proj of 1,024; c_fc_0 and c_fc_1 of 14,336; an untied lm_head;
    no bias). num_layers is the layer count (ExaoneConfig's attribute_map)."""
    s = shape()
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("ExaoneForCausalLM", 32, 8, 128, False)
    assert s.layers == (hfconfig.FULL,) * 32 and (s.attention_bias, s.output_bias, s.mlps[0].bias, s.mlps[0].gated) == (False, False, False, True)
    assert parameters(s) == 2 * V * H + H + 32 * layer() == 7_818_448_896
    assert round(parameters(s) / 1e9, 1) == 7.8
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(4096, 128)]
    assert hfconfig.unchecked_note("ExaoneForCausalLM") is None


def exaone(h: int, heads: int, head_dim: int, ffn: int, n: int, tied: bool) -> int:
    """An EXAONE model's parameters: the embedding (and an untied head), n layers of q/k/v/o, 8 KV heads, the
    gated MLP and two RMSNorms, ln_f."""
    layer = 2 * h * heads * head_dim + 2 * h * 8 * head_dim + 3 * ffn * h + 2 * h
    return (1 if tied else 2) * V * h + h + n * layer


def test_exaone_3_5_32b_meets_its_published_size() -> None:
    """32,003,200,000 parameters (EXAONE 3.5 32B: 32B): 64 layers of 40 heads of 128 on 5,120, 8 KV heads,
    27,392 wide, untied; the llama3 rope keeps max_position_embeddings' 32,768 positions in its cache."""
    s = config_shape("exaone-3.5-32b-instruct-abliterated")
    assert (s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, len(s.layers)) == (40, 8, 128, False, 64)
    assert parameters(s) == exaone(5120, 40, 128, 27392, 64, tied=False) == 32_003_200_000
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(32768, 128)]


def test_exaone_3_5_2_4b_meets_its_published_size_and_its_shards() -> None:
    """2,405,327,360 parameters (EXAONE 3.5 2.4B: 2.4B) with the head tied, as the config that leaves
    tie_word_embeddings out reads (an untied head would make 2.67B); head_dim 80 from the config, not 2,560 / 32.
    The base checkpoint's two float32 shards, 4.98 GB and 4.65 GB (LGAI-EXAONE/EXAONE-3.5-2.4B-Instruct), hold
    that count at 4 B (9.62 GB, the shards' sizes rounded to 10 MB)."""
    s = config_shape("exaone-3.5-2.4b-it-text2sql")
    assert (s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, len(s.layers)) == (32, 8, 80, True, 30)
    total = parameters(s)
    assert total == exaone(2560, 32, 80, 7168, 30, tied=True) == 2_405_327_360
    assert abs(4 * total - (4.98e9 + 4.65e9)) < 0.01e9
    assert kvlayout.request(s, kvlayout.Settings(), 8192, kvlayout.version(None)).bytes_per_token == 30 * 2 * 8 * 80 * 2


@pytest.mark.parametrize(("tp", "kv_heads"), [(1, 8), (2, 4), (4, 2), (8, 1), (16, 1)])
def test_exaone_weights_and_kv_per_rank(tp: int, kv_heads: int) -> None:
    """Heads, MLP and vocabulary divided, the norms and the rope cache whole; 131,072 B a token at TP 1
    (32 layers x 2 x 8 KV heads x 128 x 2 B), the KV heads replicated past eight ranks."""
    s = shape()
    assert weights.per_rank(s, tp).model == 2 * (2 * V // tp * H + H + 32 * layer(tp, kv_heads)) + 4096 * 128 * 2
    r = kvlayout.request(s, kvlayout.Settings(tp=tp), 4096, kvlayout.version(None))
    assert r.bytes_per_token == 32 * 2 * kv_heads * 128 * 2


def test_exaone_reads_its_own_names() -> None:
    """num_layers, not num_hidden_layers; biases where attention_bias or bias says (q/k/v and out_proj) and
    where mlp_bias says; a config without tie_word_embeddings ties (PretrainedConfig's default); EXAONE 3.5
    2.4B's dimensions (30 layers of 2,560, 32 heads of 80, 8 KV heads, tied) read as given."""
    assert shape(num_layers=30).layers == (hfconfig.FULL,) * 30
    for field in ("attention_bias", "bias"):
        b = shape(**{field: True})
        assert (b.attention_bias, b.output_bias, b.mlps[0].bias) == (True, True, False)
    assert shape(mlp_bias=True).mlps[0].bias
    untold = {k: v for k, v in json.loads(config_text(NAME)).items() if k != "tie_word_embeddings"}
    assert hfconfig.shape(untold, NAME).tie_embeddings
    small = shape(hidden_size=2560, num_layers=30, intermediate_size=7168, head_dim=80, tie_word_embeddings=True)
    assert (small.head_dim, small.kv_heads, small.tie_embeddings) == (80, 8, True)
    with pytest.raises(hfconfig.ConfigError, match="num_layers: found"):
        hfconfig.shape({k: v for k, v in json.loads(config_text(NAME)).items() if k != "num_layers"}, NAME)
