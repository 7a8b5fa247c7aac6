"""Hybrids whose recurrent layers are not Mamba-2 alone, read by vLLM's own model code: Jamba
(JambaForCausalLM, jamba.py: Mamba-1 layers and attention by period and offset, experts every other
layer), Falcon-H1 (FalconH1ForCausalLM, falcon_h1.py: attention and a Mamba-2 mixer side by side in every
layer), LFM2 (Lfm2ForCausalLM, lfm2.py: short convolutions and attention) and LFM2-MoE
(Lfm2MoeForCausalLM, lfm2_moe.py: the same layers, experts after the first dense ones). The parameter counts
against the published totals, the state a request and the KV cache a token by hand, the split over the
ranks, the releases, refused input and the command line.

Jamba-v0.1's config is shipped (models/configs/SOURCES.yaml: the Hub's file), and so is an LFM2-8B-A1B
fine-tune's (augment-multi-ft2: the Hub's file). No whole config.json of a
Falcon-H1 or LFM2 checkpoint of their makers was found, so both classes are unchecked: Falcon-H1-0.5B is
read from the field dict a public Megatron Bridge test module quotes (code index file 54893243323,
repository not named) with mamba_d_ssm put in (the quote leaves it out; 24 heads x 64, the width
transformers' model_doc/falcon_h1.md gives the 0.5B), and LFM2 from the whole config.json of a fine-tune of
LFM2.5-1.2B-Thinking (tests/data/configs/lfm2.5-1.2b-distilled-claude-4.6)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import config_path, config_shape, parameters, run_calc

from calc.engine import hfconfig, kvlayout, weights
from calc.engine.weights import cdiv

JAMBA, LFM2, MOE = "jamba-v0.1", "lfm2.5-1.2b-distilled-claude-4.6", "augment-multi-ft2"
FALCON = {
    "architectures": ["FalconH1ForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "attention_in_multiplier": 1.0,
    "attention_out_multiplier": 0.9375, "attn_layer_indices": None, "embedding_multiplier": 5.656854249492381, "head_dim": 64,
    "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 2048, "key_multiplier": 0.39062499999999994,
    "lm_head_multiplier": 0.0390625, "mamba_chunk_size": 128, "mamba_conv_bias": True, "mamba_d_conv": 4, "mamba_d_head": 64,
    "mamba_d_state": 128, "mamba_expand": 2, "mamba_n_groups": 1, "mamba_n_heads": 24, "mamba_norm_before_gate": False,
    "mamba_proj_bias": False, "mamba_rms_norm": False, "mamba_use_mlp": True, "max_position_embeddings": 16384, "mlp_bias": False,
    "mlp_multipliers": [0.8838834764831844, 0.5859375], "model_type": "falcon_h1", "num_attention_heads": 8, "num_hidden_layers": 36,
    "num_key_value_heads": 2, "projectors_bias": False, "rms_norm_eps": 1e-5, "rope_scaling": None, "rope_theta": 100000000000.0,
    "ssm_in_multiplier": 1.25, "ssm_multipliers": [0.3535533905932738, 0.25, 0.3535533905932738, 0.5, 0.3535533905932738],
    "ssm_out_multiplier": 0.23570226039551587, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 32784,
    "mamba_d_ssm": 1536,
}  # fmt: skip
NEWEST = kvlayout.version(None)


def falcon(**changes: object) -> hfconfig.Shape:
    return hfconfig.shape({**FALCON, **changes}, "falcon-h1-0.5b")


def data(name: str) -> dict:
    loaded: dict = json.loads(config_path(name).read_text())
    return loaded


def request(s: hfconfig.Shape, tp: int = 1, length: int = 32768, v: kvlayout.Version = NEWEST, **settings: object) -> kvlayout.Request:
    return kvlayout.request(s, kvlayout.Settings(tp=tp, **settings), length, v)  # type: ignore[arg-type]


def block(state: int, token: int) -> int:
    """The attention block vLLM grows so that one page holds the state (platforms/interface.py)."""
    return 16 * cdiv(state, 16 * token)


# --- Jamba-v0.1: 52B, 12B active --------------------------------------------------------------


def jamba_count(tp: int = 1) -> int:
    """One rank's parameters by jamba.py: 28 Mamba-1 layers, 4 attention layers, 16 dense MLPs and 16
    layers of 16 experts, the head untied."""
    h, inner, state, rank, ffn = 4096, 8192 // tp, 16, 256, 14336 // tp
    mamba = 2 * inner * h + inner * 4 + inner + (rank + 2 * state) * inner + inner * rank + inner + inner * state + inner + h * inner + rank + 2 * state
    attention = 32 // tp * 128 * h + 2 * max(1, 8 // tp) * 128 * h + h * 32 // tp * 128
    return 2 * 65536 // tp * h + h + 28 * mamba + 4 * attention + 32 * 2 * h + 16 * 3 * ffn * h + 16 * (16 * h + 16 * 3 * ffn * h)


def test_jamba_meets_its_published_size() -> None:
    """51,570,323,328 parameters, 12.11B of them a token with 2 of 16 experts: "12B active parameters and
    an overall of 52B" (transformers' model_doc/jamba.md)."""
    s = config_shape(JAMBA)
    assert s.layers == tuple(hfconfig.FULL if i % 8 == 4 else hfconfig.MAMBA1 for i in range(32))
    assert [bool(m.experts) for m in s.mlps] == [i % 2 == 1 for i in range(32)]
    assert (s.head_dim, s.tie_embeddings, s.ropes, s.family) == (128, False, (), "hybrid")
    assert parameters(s) == jamba_count() == 51_570_323_328 and round(jamba_count() / 1e9) == 52
    assert round((jamba_count() - 16 * 14 * 3 * 14336 * 4096) / 1e9) == 12
    assert hfconfig.unchecked_note("JambaForCausalLM") is None


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_jamba_over_the_ranks(tp: int) -> None:
    """The Mamba-1 channels, heads, MLPs and experts are divided; A is float32 (mamba_mixer.py). A rank's
    state: conv 3 x 8,192 / TP and temporal 8,192 / TP x 16, in bfloat16; the attention block grows
    until a page holds it, and 28 Mamba layers make seven groups of four beside the attention's."""
    s = config_shape(JAMBA)
    assert parameters(s, tp) == jamba_count(tp)
    a_bytes = 28 * 8192 // tp * 16 * 2  # A's second two bytes a value
    assert weights.per_rank(s, tp).model == 2 * jamba_count(tp) + a_bytes
    token = 2 * max(1, 8 // tp) * 128 * 2
    state = 3 * 8192 // tp * 2 + 8192 // tp * 16 * 2
    v = kvlayout.version("0.26.0")
    r = request(s, tp, 262144, v, mamba_cache_mode=kvlayout.mamba_cache_mode(s, v))
    assert r.bytes_per_token == 4 * token
    assert (len(r.layout.groups), r.layout.group_size, r.layout.padding_layers) == (8, 4, 0)
    assert r.layout.page_bytes == block(state, token) * token and r.layout.min_block_size == block(state, token)
    assert r.pages_per_request == cdiv(262144, block(state, token)) + 7  # prefix caching off up to 0.27.1: one state page a group
    assert r.fixed_bytes == 7 * 4 * r.layout.page_bytes


def test_jamba_cache_modes_by_release() -> None:
    """Prefix caching on, 0.15.0 to 0.27.1 run Jamba in "all" mode (SupportsMambaPrefixCaching): a
    state page a block of context; from 0.28.0 "align", two pages and no prefill checkpoint (Mamba-1)."""
    s = config_shape(JAMBA)
    assert kvlayout.mamba_cache_mode(s, kvlayout.version("0.26.0"), prefix_caching=True) == "all"
    assert kvlayout.mamba_cache_mode(s, NEWEST) == "align"
    specs = kvlayout.layer_specs(s, kvlayout.Settings(), NEWEST)
    assert {sp.state_pages for sp in specs if sp.kind == hfconfig.MAMBA} == {2}


# --- Falcon-H1-0.5B: attention and Mamba-2 in every layer ----------------------------------------


def falcon_count(tp: int = 1) -> int:
    """One rank's parameters by falcon_h1.py: the padded vocabulary (32,832) twice, untied; a layer's
    q/k/v/o, a Mamba-2 mixer of 24 heads of 64 with one group (extended to one a rank), a conv bias and
    no gated norm, two norms and the gated MLP."""
    h, groups = 1024, tp
    attention = 8 // tp * 64 * h + 2 * max(1, 2 // tp) * 64 * h + h * 8 // tp * 64
    conv = (1536 + 2 * groups * 128) // tp
    mamba = (2 * 1536 + 2 * groups * 128 + 24) // tp * h + conv * 4 + conv + 3 * 24 // tp + h * 1536 // tp
    return 2 * 32832 // tp * h + h + 36 * (attention + mamba + 2 * h + 3 * 2048 // tp * h)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_falcon_h1_over_the_ranks(tp: int) -> None:
    """521,509,408 parameters on one rank (published: 0.5B). Every layer holds an attention cache (2 KV
    heads of 64, one a rank from TP 2) and a Mamba-2 state: conv 3 x (1,536 + 2 x groups x 128) / TP,
    temporal 24 / TP x 64 x 128; 36 layers of each spec, two groups."""
    s = falcon()
    assert s.layers == (hfconfig.PARALLEL,) * 36 and s.family == "hybrid"
    assert parameters(s, tp) == falcon_count(tp)
    token = 2 * max(1, 2 // tp) * 64 * 2
    state = 3 * (1536 + 2 * tp * 128) // tp * 2 + 24 // tp * 64 * 128 * 2
    r = request(s, tp, 16384)
    assert r.bytes_per_token == 36 * token
    assert [(g.spec.kind, g.layers) for g in r.layout.groups] == [(hfconfig.FULL, 36), (hfconfig.MAMBA, 36)]
    assert r.layout.min_block_size == block(state, token)
    assert r.pages_per_request == cdiv(16384, block(state, token)) + 3  # "align" and a prefill checkpoint (0.32.0 on)
    older = request(s, tp, 16384, kvlayout.version("0.31.0"), mamba_cache_mode="align")
    assert older.pages_per_request == cdiv(16384, block(state, token)) + 2


def test_falcon_h1_meets_its_published_size() -> None:
    """0.5B (the Falcon-H1 release's size); its rope cache (16,384 x 64, base 1e11) and the muP vectors,
    buffers vLLM builds, are not parameters."""
    s = falcon()
    assert falcon_count() == 521_509_408 and round(falcon_count() / 1e9, 1) == 0.5
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(16384, 64)]
    mup = [t for t in weights.tensors(s) if t.path.endswith("mup_vector")]
    assert len(mup) == 36 and all(t.buffer and t.rows == 2 * 1536 + 2 * 128 + 24 for t in mup)
    assert hfconfig.unchecked_note("FalconH1ForCausalLM")


def test_falcon_h1_mixer_options() -> None:
    """The gated norm only with mamba_rms_norm, projection biases with mamba_proj_bias, no conv bias
    without mamba_conv_bias; mamba_d_ssm null takes mamba_expand x hidden_size; a width other than the
    heads' is refused, as transformers' FalconH1Config refuses it; a tied head is one tensor."""
    base = parameters(falcon())
    assert parameters(falcon(mamba_rms_norm=True)) == base + 36 * 1536
    assert parameters(falcon(mamba_proj_bias=True)) == base + 36 * ((2 * 1536 + 2 * 128 + 24) + 1024)
    assert parameters(falcon(mamba_conv_bias=False)) == base - 36 * (1536 + 2 * 128)
    assert parameters(falcon(tie_word_embeddings=True)) == base - 32832 * 1024
    assert falcon(mamba_d_ssm=None, mamba_n_heads=32).part(hfconfig.Mamba2Mixer).heads == 32  # 2 x 1,024 = 32 x 64
    with pytest.raises(hfconfig.ConfigError, match=r"mamba_d_ssm: found 2048, expected mamba_n_heads x mamba_d_head \(1536\)"):
        falcon(mamba_d_ssm=2048)


# --- LFM2: short convolutions and attention ------------------------------------------------------


def lfm2_count(tp: int = 1) -> int:
    """One rank's parameters by lfm2.py: the tied embedding, 10 short convolutions (in_proj of 3 x
    2,048, 3 taps, out_proj), 6 attention layers (32 heads and 8 KV heads of 64, q and k normed a
    head), each with two norms and the gated MLP of 8,192 (12,288 x 2 / 3, a multiple of 256)."""
    h = 2048
    conv = 3 * h // tp * h + h // tp * 3 + h * h // tp
    attention = 32 // tp * 64 * h + 2 * max(1, 8 // tp) * 64 * h + h * 32 // tp * 64 + 2 * 64
    return 65536 // tp * h + h + 10 * conv + 6 * attention + 16 * (2 * h + 3 * 8192 // tp * h)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_lfm2_over_the_ranks(tp: int) -> None:
    """1,170,340,608 parameters (published for LFM2.5-1.2B: 1.17B). A conv state is 2 x 2,048 / TP
    values; a page of the 16-token block (6 attention layers, 2 x 8 / TP heads of 64) holds it, so 10
    conv layers make two groups of six, two layers of padding."""
    s = config_shape(LFM2)
    assert s.layers.count(hfconfig.SHORT_CONV) == 10 and s.layers.count(hfconfig.FULL) == 6
    assert (s.mlps[0].intermediate, s.head_dim, s.tie_embeddings) == (8192, 64, True)
    assert parameters(s, tp) == lfm2_count(tp)
    token = 2 * max(1, 8 // tp) * 64 * 2
    r = request(s, tp)
    assert r.bytes_per_token == 6 * token
    assert (len(r.layout.groups), r.layout.group_size, r.layout.padding_layers, r.layout.min_block_size) == (3, 6, 2, 16)
    assert r.pages_per_request == cdiv(32768, 16) + 2 * 2  # two state pages a conv group in "align" mode, no checkpoint
    assert kvlayout._state_bytes(s, kvlayout.Settings(tp=tp), NEWEST) == 2 * 2048 // tp * 2


def test_lfm2_meets_its_published_size_and_releases() -> None:
    """1.17B; vLLM ties the head whatever the config says; the state grows a row a speculative token
    from 0.29.0; 0.10.1.1 has no lfm2.py and is refused."""
    s = config_shape(LFM2)
    assert lfm2_count() == 1_170_340_608 and round(lfm2_count() / 1e9, 2) == 1.17
    assert hfconfig.shape({**data(LFM2), "tie_word_embeddings": False}, LFM2).tie_embeddings
    assert kvlayout._state_bytes(s, kvlayout.Settings(speculative_tokens=2), NEWEST) == 4 * 2048 * 2
    assert kvlayout._state_bytes(s, kvlayout.Settings(speculative_tokens=2), kvlayout.version("0.28.0")) == 2 * 2048 * 2
    assert kvlayout.mamba_cache_mode(s, kvlayout.version("0.26.0"), prefix_caching=True) == "align"  # not a SupportsMambaPrefixCaching class
    assert hfconfig.outside_own_code("Lfm2ForCausalLM", (0, 10, 2)) is None
    assert "0.10.1 does not register Lfm2ForCausalLM in the releases read (vllm/model_executor/models/registry.py lists it from 0.10.2)" in str(
        hfconfig.outside_own_code("Lfm2ForCausalLM", (0, 10, 1))
    )
    assert "0.10.1.1: vLLM 0.10.1 does not register" in run_calc("model", str(config_path(LFM2)), "--engine-version", "0.10.1.1").stderr
    assert hfconfig.unchecked_note("Lfm2ForCausalLM")


def test_lfm2_layer_kinds_and_widths() -> None:
    """layer_types, else full_attn_idxs, else every layer attention (as Lfm2Config fills them, and says
    so); block_ff_dim, where given, is the MLP's width; widths other than hidden_size are not modeled."""
    base = {k: v for k, v in data(LFM2).items() if k not in ("layer_types", "full_attn_idxs")}
    s = hfconfig.shape({**base, "full_attn_idxs": [2, 5, 8, 10, 12, 14]}, LFM2)
    assert s.layers == config_shape(LFM2).layers
    assert hfconfig.shape({**data(LFM2), "block_ff_dim": 10752, "block_auto_adjust_ff_dim": False}, LFM2).mlps[0].intermediate == 10752
    every = hfconfig.shape(base, LFM2)
    assert every.layers == (hfconfig.FULL,) * 16 and "full_attn_idxs [0, 1, 2" in every.defaults[0]
    with pytest.raises(hfconfig.ConfigError, match="full_attn_idxs: found 'all'"):
        hfconfig.shape({**base, "full_attn_idxs": "all"}, LFM2)
    with pytest.raises(hfconfig.ConfigError, match="conv_dim: found 1024, expected hidden_size"):
        hfconfig.shape({**data(LFM2), "conv_dim": 1024}, LFM2)


def test_a_mixer_read_as_another_kind_is_refused_by_name() -> None:
    """Each mixer's dimensions are a record of its kind (Shape.part): layers whose mixer was not read,
    or was read as another kind, fail with the record they need rather than count a width of 0."""
    lfm2, h1 = config_shape(LFM2), falcon()
    assert lfm2.part(hfconfig.ShortConvMixer) == hfconfig.ShortConvMixer(inner=2048, conv_kernel=3, conv_bias=False)
    with pytest.raises(ValueError, match="no ShortConvMixer was read"):
        weights.per_rank(replace(lfm2, mamba=None), 1)
    with pytest.raises(ValueError, match="falcon-h1-0.5b: FalconH1ForCausalLM: no Mamba2Mixer was read"):
        kvlayout._state_bytes(replace(h1, mamba=lfm2.mamba), kvlayout.Settings(), NEWEST)


# --- LFM2-MoE: LFM2's layers, experts from the third on ------------------------------------------


def lfm2_moe_count(tp: int = 1) -> int:
    """One rank's parameters by lfm2_moe.py: LFM2's 18 convolutions and 6 attention layers of 2,048,
    two dense MLPs of 7,168, then 22 layers of 32 experts of 1,792 with a router and its float32
    score-correction bias, the head tied."""
    h = 2048
    conv = 3 * h // tp * h + h // tp * 3 + h * h // tp
    attention = 32 // tp * 64 * h + 2 * max(1, 8 // tp) * 64 * h + h * 32 // tp * 64 + 2 * 64
    moe = 32 * h + 32 * 3 * 1792 // tp * h + 32
    return 65536 // tp * h + h + 18 * conv + 6 * attention + 24 * 2 * h + 2 * 3 * 7168 // tp * h + 22 * moe


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_lfm2_moe_over_the_ranks(tp: int) -> None:
    """8,339,930,560 parameters (published for LFM2-8B-A1B: 8.3B). The convolution is hidden_size wide
    (2 x 2,048 / TP values a state); 18 of them make three groups of six beside the attention's."""
    s = config_shape(MOE)
    assert parameters(s, tp) == lfm2_moe_count(tp)
    token = 2 * max(1, 8 // tp) * 64 * 2
    r = request(s, tp)
    assert r.bytes_per_token == 6 * token
    assert (len(r.layout.groups), r.layout.group_size, r.layout.padding_layers) == (4, 6, 0)
    assert kvlayout._state_bytes(s, kvlayout.Settings(tp=tp), NEWEST) == 2 * 2048 // tp * 2


def test_lfm2_moe_meets_its_published_size_and_releases() -> None:
    """8.3B in all and 1.56B a token with 4 of 32 experts (published: 1.5B active); the bias is float32;
    0.11.0 has no class, 0.11.1 to 0.12.x were not read; layer_types must be given (Lfm2MoeConfig
    fills none)."""
    s = config_shape(MOE)
    assert round(lfm2_moe_count() / 1e9, 1) == 8.3 and 1.5e9 < lfm2_moe_count() - 22 * 28 * 3 * 1792 * 2048 < 1.6e9
    bias = [t for t in weights.tensors(s) if t.path.endswith("e_score_correction_bias")]
    assert len(bias) == 22 and all(t.dtype_bytes == 4 for t in bias)
    assert hfconfig.unchecked_note("Lfm2MoeForCausalLM") is None
    assert hfconfig.outside_own_code("Lfm2MoeForCausalLM", (0, 12, 0)) is None
    assert "lists it from 0.12); expected --engine-version 0.12 or later" in str(hfconfig.outside_own_code("Lfm2MoeForCausalLM", (0, 11, 2)))
    with pytest.raises(hfconfig.ConfigError, match="layer_types: found None, expected a list of 24 layer types"):
        hfconfig.shape({k: v for k, v in data(MOE).items() if k != "layer_types"}, MOE)


# --- refused input and the command line ---------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({k: v for k, v in FALCON.items() if k != "mamba_n_heads"}, "mamba_n_heads"),
        ({k: v for k, v in FALCON.items() if k != "mamba_d_head"}, "mamba_d_head"),
        (JAMBA, "intermediate_size"),
        (LFM2, "block_dim"),
        (LFM2, "conv_dim"),
        (MOE, "moe_intermediate_size"),
    ],
)
def test_a_missing_field_is_named(config: dict | str, field: str) -> None:
    """One line naming the field; fields a transformers class fills in (Jamba's periods, LFM2's
    conv_L_cache) are taken as its defaults instead."""
    if isinstance(config, str):
        config = {k: v for k, v in data(config).items() if k != field}
    with pytest.raises(hfconfig.ConfigError, match=f"^config.json: {field}: found nothing, expected a whole number$"):
        hfconfig.shape(config, "config.json")


@pytest.mark.parametrize("name", [JAMBA, "falcon", LFM2, MOE])
def test_the_command_line_predicts_a_pool(name: str, tmp_path: Path) -> None:
    path = config_path(name)
    if name == "falcon":
        path = tmp_path / "config.json"
        path.write_text(json.dumps(FALCON))
    done = run_calc("model", str(path), "--gpu", "h200", "--tp", "2", "--max-model-len", "auto", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"] in ("JambaForCausalLM", "FalconH1ForCausalLM", "Lfm2ForCausalLM", "Lfm2MoeForCausalLM")
    assert out["verdict"] == "starts" and out["kv_bytes_per_token"] > 0
