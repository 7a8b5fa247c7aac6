"""Granite 4.0-H (GraniteMoeHybridForCausalLM) and Llama 4 (Llama4ForConditionalGeneration), read
by vLLM's model code: the parameter counts against the published totals, the KV cache a token and a
request, the groups, and the layout by release. Llama 4's configs are shipped (models/configs/SOURCES.yaml);
no whole config.json of a Granite 4.0-H model was found at a citable address, so none is shipped, and
the tests read Granite-4.0-H-Tiny from a fixture (tests/data/configs/): its fields as a public test module
quotes them, a Python dict (code index file 65865534003, repository not named), the layer_types
written there as a sum of runs expanded to 40 entries, with "architectures" added as
["GraniteMoeHybridForCausalLM"] (the one class of model_type granitemoehybrid in transformers and in
vLLM's registry); fields the quote leaves out are transformers' GraniteMoeHybridConfig defaults."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from conftest import config_path, config_shape, config_text, parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, weights
from calc.engine.weights import cdiv

GRANITE, SCOUT, MAVERICK = "granite-4.0-h-tiny", "llama-4-scout-17b-16e-instruct", "llama-4-maverick-17b-128e-instruct"


path, text, shape = config_path, config_text, config_shape


count = parameters


# --- Granite 4.0-H-Tiny: 36 Mamba2 layers, 4 attention, 64 experts (6 a token) and a shared MLP ---

H = 1536
G_MAMBA = (2 * 3072 + 2 * 128 + 48) * H + 3328 * 4 + 3328 + 3 * 48 + 3072 + H * 3072  # in_proj, conv1d and bias, dt/A/D, norm, out_proj
G_ATTENTION = (1536 + 2 * 512) * H + H * 1536  # 12 heads of 128 (hidden / heads), 4 KV heads; no bias
G_EXPERT = 3 * 512 * H  # gate_up and down of 512
G_MLP = 2 * H + 64 * H + 64 * G_EXPERT + 3 * 1024 * H  # two norms, the router, the experts, the shared MLP of 1,024
G_TOTAL = 100352 * H + H + 36 * G_MAMBA + 4 * G_ATTENTION + 40 * G_MLP  # the embedding tied to the head


def test_granite_tiny_meets_its_published_size() -> None:
    """Granite-4.0-H-Tiny: 7B parameters, 1B active (the model card). Counted as granitemoehybrid.py
    builds it: 6,939,037,248 in all; a token runs 6 of the 64 experts of each layer, 1.47B with the
    tied embedding and 1.31B without it."""
    s = shape(GRANITE)
    assert (s.layers.count(hfconfig.MAMBA), s.layers.count(hfconfig.FULL), s.head_dim) == (36, 4, 128)
    assert count(s) == G_TOTAL == 6_939_037_248
    assert round(G_TOTAL / 1e9) == 7
    active = G_TOTAL - 40 * (64 - 6) * G_EXPERT
    assert (round(active / 1e9, 2), round((active - 100352 * H) / 1e9, 2)) == (1.47, 1.31)
    assert s.ropes == ()  # no rope unless position_embedding_type is "rope"


# Granite-4.0-H-Small: no copy of its config.json was found whole. Its sizing fields are taken from two
# public quotes of it (code index files, repositories not named): a design note's "relevant fields only"
# (57624389648: hidden_size, num_hidden_layers, heads, KV heads, num_local_experts, num_experts_per_tok,
# shared_intermediate_size, intermediate_size, mamba_d_state, mamba_d_conv, mamba_expand,
# tie_word_embeddings, vocab_size, torch_dtype; layer_types 36 mamba and 4 attention) and a Transformers
# audit's table of the same file (56673281434: mamba heads / head / state 128 / 64 / 128, conv_dim
# 8,192 + 2 x 1 x 128, so one group, attention at layers 5, 15, 25 and 35, position_embedding_type
# "nope", max_position_embeddings 131,072).
SMALL = {
    "architectures": ["GraniteMoeHybridForCausalLM"], "model_type": "granitemoehybrid", "hidden_size": 4096, "num_hidden_layers": 40,
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_local_experts": 72, "num_experts_per_tok": 10, "shared_intermediate_size": 1536,
    "intermediate_size": 768, "mamba_d_state": 128, "mamba_d_conv": 4, "mamba_expand": 2, "tie_word_embeddings": True, "vocab_size": 100352,
    "torch_dtype": "bfloat16", "mamba_n_heads": 128, "mamba_d_head": 64, "mamba_n_groups": 1, "max_position_embeddings": 131072,
    "position_embedding_type": "nope", "layer_types": ["attention" if i in (5, 15, 25, 35) else "mamba" for i in range(40)],
}  # fmt: skip


def test_granite_small_meets_its_published_size() -> None:
    """Granite-4.0-H-Small: 32B parameters, 9B active (the model card). Counted: 32,207,337,984 in all;
    10 of 72 experts a token leave 8.80B active with the tied embedding."""
    s = hfconfig.shape(SMALL, "granite-4.0-h-small")
    h = 4096
    mamba = (2 * 8192 + 2 * 128 + 128) * h + 8448 * 4 + 8448 + 3 * 128 + 8192 + h * 8192
    attention = (4096 + 2 * 1024) * h + h * 4096
    expert = 3 * 768 * h
    mlp = 2 * h + 72 * h + 72 * expert + 3 * 1536 * h
    total = 100352 * h + h + 36 * mamba + 4 * attention + 40 * mlp
    assert count(s) == total == 32_207_337_984 and round(total / 1e9) == 32
    assert round((total - 40 * 62 * expert) / 1e9, 1) == 8.8
    r = kvlayout.request(s, kvlayout.Settings(tp=4), 131072, kvlayout.version(None))
    assert r.bytes_per_token == 4 * 2 * 2 * 128 * 2  # 4 attention layers, 2 KV heads a rank at TP 4


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_granite_tiny_splits_over_the_ranks(tp: int) -> None:
    """Every projection is divided; norms, the router and the mixer's n_groups of 1 (extended to one a
    rank) are not: a rank's mamba in_proj is (2 x 3,072 + 2 x tp x 128 + 48) / tp rows."""
    s = shape(GRANITE)
    in_proj = next(t for t in weights.tensors(s, tp) if t.path == "model.layers.0.mixer.in_proj")
    assert in_proj.rows == (2 * 3072 + 2 * tp * 128 + 48) // tp


def test_granite_tiny_kv_and_state_by_release() -> None:
    """4 attention layers of 4 KV heads of 128: 8,192 B a token at TP 1. A mamba layer's state in the
    model's dtype (mamba2_state_dtype, no float32 override as Nemotron-H's): conv 3 x (3,072 + 2 x 128)
    x 2 B = 19,968 and temporal 48 x 64 x 128 x 2 B = 786,432; the attention block grows to
    16 x cdiv(806,400, 16 x 2,048) = 400 tokens. Newest rules: prefix caching on, "align", three
    state pages (a prefill checkpoint from 0.32.0); 0.26.0: prefix caching off for a hybrid, one."""
    s = shape(GRANITE)
    newest = kvlayout.request(s, kvlayout.Settings(), 32768, kvlayout.version(None))
    assert newest.bytes_per_token == 4 * 2 * 4 * 128 * 2 == 8192
    assert newest.layout.min_block_size == 400
    page = 400 * 2048
    assert newest.layout.page_bytes == page
    groups = newest.layout.groups
    assert {g.spec.kind for g in groups} == {hfconfig.FULL, hfconfig.MAMBA}
    mamba = [g for g in groups if g.spec.kind == hfconfig.MAMBA]
    assert all(g.spec.state_pages == 3 for g in mamba)
    off = kvlayout.request(s, kvlayout.Settings(mamba_cache_mode="none"), 32768, kvlayout.version("0.26.0"))
    assert off.pages_per_request == cdiv(32768, 400) * (len(groups) - len(mamba)) + len(mamba)
    # prefix caching asked for on 0.15.0 to 0.27.1: "all" mode, as kvlayout.MAMBA_PREFIX_CACHING lists the class
    assert kvlayout.mamba_cache_mode(s, kvlayout.version("0.26.0"), prefix_caching=True) == "all"
    assert kvlayout.mamba_cache_mode(s, kvlayout.version("0.26.0")) == "none"


# --- Llama 4 Scout and Maverick ---

L = 5120
ATTENTION = (5120 + 2 * 1024) * L + L * 5120  # 40 heads and 8 KV heads of 128, no bias, the q/k norm without weight
EXPERT = 3 * 8192 * L
TOWER = (
    1408 * 3 * 14 * 14 + 1408 + 577 * 1408 + 4 * 1408  # patch embedding, class embedding, positions, the two LayerNorms
    + 34 * (4 * 1408 + 4 * 1408 * 1408 + 4 * 1408 + 2 * 1408 * 5632 + 5632 + 1408)  # LayerNorms, attention and MLP with biases
    + 4096 * 5632 + 4096 * 4096  # the pixel-shuffle adapter's fc1 and fc2
    + 5120 * 4096  # multi_modal_projector.linear_1
)  # fmt: skip


def llama4_text(experts: int, moe_layers: int) -> int:
    moe = 2 * L + experts * L + experts * EXPERT + EXPERT  # norms, router, experts, the shared expert
    dense = 2 * L + 3 * 16384 * L
    return 2 * 202048 * L + L + 48 * ATTENTION + moe_layers * moe + (48 - moe_layers) * dense


def test_llama4_scout_meets_its_published_size() -> None:
    """Scout: 109B parameters in all, 17B active (the model card). Every layer MoE (16 experts, one a
    token, and a shared one): 107,769,861,120 in the language model, 871,932,416 in the vision tower
    and projector, 108,641,793,536 together; 17.17B active in the language model."""
    s = shape(SCOUT)
    assert (s.layers.count(hfconfig.CHUNKED), s.layers.count(hfconfig.FULL), s.attention_chunk_size) == (36, 12, 8192)
    assert s.layers[3] == s.layers[47] == hfconfig.FULL and s.layers[0] == hfconfig.CHUNKED  # the fourth of each run is NoPE
    lm = llama4_text(16, 48)
    assert count(s, tower=False) == lm == 107_769_861_120
    assert count(s, tower=True) == TOWER == 871_932_416
    assert lm + TOWER == 108_641_793_536 and round((lm + TOWER) / 1e9) == 109
    active = lm - 48 * 15 * EXPERT
    assert round(active / 1e9, 2) == 17.17
    assert any("no_rope_layer_interval 4" in d for d in s.defaults)
    # the RoPE layers' cos/sin cache, 10,485,760 positions (llama3 scaling keeps max_position_embeddings) x 128
    assert [(r.kind, r.positions, r.rotary_dim) for r in s.ropes] == [(hfconfig.CHUNKED, 10485760, 128)]


def test_llama4_maverick_meets_its_published_size() -> None:
    """Maverick: 400B in all, 17B active. MoE on every second layer (128 experts), dense MLPs of
    16,384 between: 401,583,781,376 counted, 17.18B active in the language model."""
    s = shape(MAVERICK)
    lm = llama4_text(128, 24)
    assert count(s) == lm + TOWER == 401_583_781_376
    assert round((lm + TOWER) / 1e11) == 4
    assert round((lm - 24 * 127 * EXPERT) / 1e9, 2) == 17.18
    assert [t.count for t in weights.tensors(s) if t.path.startswith("model.layers.0.mlp.")] == [1, 1, 1]  # layer 0 dense
    assert s.ropes[0].positions == 1048576


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_llama4_tower_and_projector_split(tp: int) -> None:
    """The tower's projections divide over the ranks (16 heads); linear_1 always does, even with
    --mm-encoder-tp-mode data, which builds the rest whole (mllama4.py: ColumnParallelLinear without
    disable_tp)."""
    s = shape(SCOUT)
    assert s.tower is not None
    by = {t.path: t for t in weights.tower_tensors(s.tower, tp)}
    assert by["multi_modal_projector.linear_1"].rows == 5120 // tp
    assert by["vision_model.model.layers.0.attn.qkv"].rows == 3 * 1408 // tp
    dp = {t.path: t for t in weights.tower_tensors(replace(s.tower, data_parallel=True), tp)}
    assert (dp["multi_modal_projector.linear_1"].rows, dp["vision_model.model.layers.0.attn.qkv"].rows) == (5120 // tp, 3 * 1408)


def test_llama4_chunked_local_kv_by_release() -> None:
    """A token of one layer at TP 8: one KV head of 128, K and V, 2 B = 512 B. From 0.19.0 the 36
    chunked layers keep their own spec (VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE defaults to
    1): four groups of 12 layers, the 12 NoPE layers growing with the context (6,144 B a token) and
    each chunked group holding cdiv(min(8,192 + budget, max_model_len), 16) pages: the budget one
    batch of 8,192 up to 0.25.x, two in flight from 0.26.0. Up to 0.13.0 the variable defaults to 0,
    the hybrid manager is off and every layer is full attention: one group of 48."""
    s = shape(SCOUT)
    st = kvlayout.Settings(tp=8)
    page = 16 * 512 * 12  # a block of one group's 12 layers
    for version, budget in (("0.19.0", 8192), ("0.26.0", 16384), (None, 16384)):
        r = kvlayout.request(s, st, 131072, kvlayout.version(version))
        assert [g.spec.kind for g in r.layout.groups].count(hfconfig.CHUNKED) == 3 and r.layout.group_size == 12
        assert r.bytes_per_token == 12 * 512
        assert r.fixed_bytes == 3 * cdiv(8192 + budget, 16) * page
        assert r.pages_per_request == cdiv(131072, 16) + 3 * cdiv(8192 + budget, 16)
    short = kvlayout.request(s, st, 4096, kvlayout.version(None))
    assert short.pages_per_request == 4 * 256  # the chunk and the budget capped at max_model_len
    old = kvlayout.request(s, st, 131072, kvlayout.version("0.13.0"))
    assert (len(old.layout.groups), old.layout.group_size, old.bytes_per_token) == (1, 48, 48 * 512)
    with pytest.raises(ValueError, match=r"--engine-version: found 0\.16\.0, expected 0\.10\.x to 0\.13\.x or 0\.19\.0 and later: .* was not read"):
        kvlayout.request(s, st, 131072, kvlayout.version("0.16.0"))


def test_llama4_fp8_kv_halves_the_token() -> None:
    r = modeled.model_report(modeled.ModelInputs(text(SCOUT), tp=4, max_model_len=65536, kv_cache_dtype="fp8"))
    assert r.kv_bytes_per_token == 12 * 2 * 2 * 128 * 1  # the 12 NoPE layers, 2 KV heads a rank


@pytest.mark.parametrize(
    ("name", "args"),
    [
        (SCOUT, ["--tp", "8", "--max-model-len", "auto", "--gpu", "h100-sxm"]),
        (SCOUT, ["--tp", "4", "--pp", "2", "--kv-cache-dtype", "fp8", "--max-model-len", "65536", "--gpu", "h100-sxm"]),
        (MAVERICK, ["--tp", "8", "--max-model-len", "auto", "--kv-cache-dtype", "fp8", "--gpu", "h200"]),
        (GRANITE, ["--tp", "4", "--pp", "2", "--max-model-len", "auto", "--kv-cache-dtype", "fp8", "--gpu", "l4"]),
        (GRANITE, ["--tp", "2", "--max-model-len", "131072", "--gpu", "l4", "--engine-version", "0.26.0"]),
    ],
)
def test_the_command_line_predicts_a_pool(name: str, args: list[str]) -> None:
    done = run_calc("model", str(path(name)), *args, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["architecture"] in ("Llama4ForConditionalGeneration", "GraniteMoeHybridForCausalLM")
    assert data["pool_bytes"] > 0 and data["verdict"]


def test_granite_tiny_at_tp8_is_refused_as_vllm_refuses_it() -> None:
    """12 attention heads do not divide over 8 ranks (granitemoehybrid.py asserts it)."""
    with pytest.raises(hfconfig.ConfigError, match="num_attention_heads"):
        weights.per_rank(shape(GRANITE), 8)
