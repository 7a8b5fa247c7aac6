"""Four mixture-of-experts families vLLM builds with model code of its own: IBM's Granite 3.x MoE
(GraniteMoeForCausalLM, granitemoe.py), Microsoft's Phi-3.5-MoE (PhiMoEForCausalLM, phimoe.py), AI2's
OLMoE (OlmoeForCausalLM, olmoe.py), all three 0.10.1.1 to 0.33.0, and Tencent's Hunyuan
(HunYuanMoEV1ForCausalLM and HunYuanDenseV1ForCausalLM, hunyuan_v1.py, 0.10.1.1 to 0.28.0; from 0.29.0
the Transformers backend): the parameter counts against the published totals, the weights a rank
holds under tensor and expert parallel, the KV cache a token, the release window and the command line.

Configs (models/configs/SOURCES.yaml says where each was found or looked for):
- phi-3.5-moe-instruct and hunyuan-a13b: whole config.json files at citable addresses, shipped;
- granite-3.1-3b-a800m-instruct and olmoe-1b-7b-0125-instruct: the fields a public planner's fixtures
  quote of each checkpoint's config.json (code index file 71463455676, repository not named), written
  as JSON in tests/data/configs; both classes are unchecked;
- Hunyuan dense: no config was found; the class is unchecked and read here from a config of its
  fields, a few dimensions.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import config_path, config_refusal, config_shape, config_text, parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, offload, ranks, weights
from calc.engine.predict import terms

PHI, HUNYUAN, GRANITE, OLMOE = "phi-3.5-moe-instruct", "hunyuan-a13b", "granite-3.1-3b-a800m-instruct", "olmoe-1b-7b-0125-instruct"
LAST_OWN = "0.28.0"  # the last release whose hunyuan_v1.py builds the Hunyuan classes


def data(name: str) -> dict:
    loaded: dict = json.loads(config_text(name))
    return loaded


def report(name: str, **settings: object) -> modeled.ModelReport:
    version = LAST_OWN if name == HUNYUAN else None
    inputs = {"engine_version": version, "max_model_len": 4096, **settings}
    return modeled.model_report(modeled.ModelInputs(config_text(name), name, **inputs))  # type: ignore[arg-type]


# --- the counts, by hand from each config ---------------------------------------------------------
# A layer: attention (q/k/v/o, biases, q/k norms), its norms, the router and the experts (3 matrices of
# the expert width each), the shared expert where there is one. Whole model: embedding, head, final norm.


def phi_layer(tp: int = 1) -> int:
    """Phi-3.5-MoE: 32 heads and 8 KV heads of 128 with q/k/v and o_proj biases (o_proj's whole on every
    rank), two LayerNorms of 4,096 with biases, a router of 16 and 16 experts of 6,400."""
    kv = max(1, 8 // tp) * 128
    attention = 4096 // tp * 4096 + 2 * kv * 4096 + 4096 * 4096 // tp + 4096 // tp + 2 * kv + 4096
    return attention + 2 * 2 * 4096 + 16 * 4096 + 16 * 3 * 6400 // tp * 4096


def hunyuan_layer(tp: int = 1) -> int:
    """Hunyuan-A13B: 32 heads and 8 KV heads of 128 without biases, q and k normed a head (128 each),
    two RMSNorms, a router of 64, 64 experts of 3,072 and one shared expert of 3,072, no gate of its own."""
    kv = max(1, 8 // tp) * 128
    attention = 4096 // tp * 4096 + 2 * kv * 4096 + 4096 * 4096 // tp + 2 * 128
    return attention + 2 * 4096 + 64 * 4096 + 64 * 3 * 3072 // tp * 4096 + 3 * 3072 // tp * 4096


def granite_layer(tp: int = 1) -> int:
    """Granite 3.1 3B-A800M: 24 heads and 8 KV heads of 64 (1,536 / 24) without biases, two RMSNorms,
    a router of 40 and 40 experts of 512."""
    kv = max(1, 8 // tp) * 64
    return 1536 // tp * 1536 + 2 * kv * 1536 + 1536 * 1536 // tp + 2 * 1536 + 40 * 1536 + 40 * 3 * 512 // tp * 1536


def olmoe_layer(tp: int = 1) -> int:
    """OLMoE-1B-7B: 16 heads and 16 KV heads of 128 without biases, q_norm and k_norm over all heads
    (2,048 each, whole on every rank), two RMSNorms, a router of 64 and 64 experts of 1,024."""
    return 2048 // tp * 2048 * 4 + 2 * 2048 + 2 * 2048 + 64 * 2048 + 64 * 3 * 1024 // tp * 2048


def total(name: str, tp: int = 1) -> int:
    """The parameters one rank of `tp` holds, the vocabulary padded to a multiple of 64 and divided."""
    if name == PHI:  # untied, lm_head with a bias; the final norm a LayerNorm with a bias; 32,064 = 501 x 64
        return 2 * 32064 // tp * 4096 + 32064 // tp + 2 * 4096 + 32 * phi_layer(tp)
    if name == HUNYUAN:  # tied; 128,167 padded to 128,192
        return 128192 // tp * 4096 + 4096 + 32 * hunyuan_layer(tp)
    if name == GRANITE:  # tied; 49,155 padded to 49,216
        return 49216 // tp * 1536 + 1536 + 32 * granite_layer(tp)
    return 2 * 50304 // tp * 2048 + 2048 + 16 * olmoe_layer(tp)  # OLMoE: untied, 50,304 = 786 x 64


def test_phi_35_moe_meets_its_published_size() -> None:
    """41,873,153,344 parameters: 41.9B, as published ("Parameters: 41.9B total (6.6B active per token)",
    https://huface.ru/MikeKuykendall/phi-3.5-moe-cpu-offload-gguf, the checkpoint's GGUF card);
    6,640,999,744 a token with 2 of the 16 experts ("6.6B active parameters when using 2 experts",
    Azure/azureml-assets, assets/models/system/phi-3.5-moe-128k-instruct/description.md)."""
    s = config_shape(PHI)
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("PhiMoEForCausalLM", 32, 8, 128, False)
    assert (s.attention_bias, s.output_bias, s.norm_bias, s.lm_head_bias, s.qk_norm) == (True, True, True, True, "")
    assert set(s.mlps) == {hfconfig.Mlp(experts=16, expert_intermediate=6400)}
    assert (s.layers, s.sliding_window) == ((hfconfig.SLIDING,) * 32, 131072)  # the config's window: vLLM slides every layer
    assert parameters(s) == total(PHI) == 41_873_153_344
    assert round(total(PHI) / 1e9, 1) == 41.9
    active = total(PHI) - 32 * 14 * 3 * 6400 * 4096
    assert active == 6_640_999_744 and round(active / 1e9, 1) == 6.6
    names = {t.path for t in weights.tensors(s)}
    assert {"lm_head.bias", "model.norm.bias", "model.layers.0.input_layernorm.bias", "model.layers.0.self_attn.o_proj.bias"} <= names
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(4096 + 131072, 128)]  # LongRoPE: a short cache and a long one
    # --cpu-offload-gb meets a LayerNorm's bias as a parameter of its own, after its weight, the norms last in a layer
    norms = [name.removeprefix("model.layers.0.") for name, _ in offload.parameters(s, 2, range(1))][-4:]
    assert norms == ["input_layernorm", "input_layernorm.bias", "post_attention_layernorm", "post_attention_layernorm.bias"]
    assert hfconfig.unchecked_note("PhiMoEForCausalLM") is None


def test_hunyuan_a13b_meets_its_published_size() -> None:
    """80,393,183,232 parameters with the vocabulary unpadded: 80B, 12.75B of them active a token (8 of
    the 64 experts and the shared one): "a total of 80 billion parameters with 13 billion active" (the
    Hunyuan-A13B repository's README). vLLM pads the vocabulary by 25 rows."""
    s = config_shape(HUNYUAN)
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.qk_norm) == ("HunYuanMoEV1ForCausalLM", 32, 8, 128, True, "head")
    assert (s.attention_bias, s.output_bias, s.layers) == (False, False, (hfconfig.FULL,) * 32)
    assert set(s.mlps) == {hfconfig.Mlp(experts=64, expert_intermediate=3072, shared_intermediate=3072)}
    unpadded = total(HUNYUAN) - 25 * 4096
    assert parameters(s) == total(HUNYUAN) and unpadded == 80_393_183_232 and round(unpadded / 1e9) == 80
    active = unpadded - 32 * 56 * 3 * 3072 * 4096
    assert active == 12_747_448_320 and round(active / 1e9) == 13
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(32768, 128)]
    assert terms.experts_per_token(data(HUNYUAN)) == 8  # moe_topk, one a layer


def test_granite_and_olmoe_meet_their_published_sizes() -> None:
    """Granite 3.1 3B-A800M: 3,298,793,472 parameters with the vocabulary unpadded, 807,370,752 of the
    layers' active a token (8 of 40 experts): the 3B and the A800M of its name. OLMoE-1B-7B:
    6,919,161,856, 1,282,017,280 active a token (8 of 64): "6.9B total / 1.3B active per token"
    (https://labindex.ai/outputs/ai2/olmoe; arXiv 2409.02060). Both classes read unchecked fixtures."""
    g, o = config_shape(GRANITE), config_shape(OLMOE)
    assert (g.heads, g.kv_heads, g.head_dim, g.tie_embeddings, g.attention_bias, g.qk_norm) == (24, 8, 64, True, False, "")
    assert (o.heads, o.kv_heads, o.head_dim, o.tie_embeddings, o.attention_bias, o.qk_norm) == (16, 16, 128, False, False, "full")
    assert parameters(g) == total(GRANITE) and total(GRANITE) - 61 * 1536 == 3_298_793_472
    assert 32 * (granite_layer() - 32 * 3 * 512 * 1536) == 807_370_752
    assert parameters(o) == total(OLMOE) == 6_919_161_856 and round(total(OLMOE) / 1e9, 1) == 6.9
    assert total(OLMOE) - 16 * 56 * 3 * 1024 * 2048 == 1_282_017_280
    assert hfconfig.unchecked_note("GraniteMoeForCausalLM") and hfconfig.unchecked_note("OlmoeForCausalLM")


# --- a rank's weights, KV and expert parallel -------------------------------------------------------

ROPES = {PHI: (4096 + 131072) * 128, HUNYUAN: 32768 * 128, GRANITE: 131072 * 64, OLMOE: 4096 * 128}  # cos/sin caches, bf16


@pytest.mark.parametrize("name", [PHI, HUNYUAN, GRANITE, OLMOE])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_weights_per_rank(name: str, tp: int) -> None:
    """Each rank: the vocabulary, the heads, every expert's width and a shared expert's divided; KV
    heads below the ranks replicated (one a rank); norms, routers, q/k norms, o_proj's bias and the
    rope cache whole; every expert resident. bf16, 2 B a value."""
    expected = 2 * (total(name, tp) + ROPES[name])
    assert weights.per_rank(config_shape(name), tp).model == expected
    assert report(name, tp=tp).weights_bytes_per_rank == expected


@pytest.mark.parametrize(("name", "tp", "per_token"), [
    (HUNYUAN, 1, 2 * 8 * 128 * 2 * 32), (HUNYUAN, 8, 2 * 1 * 128 * 2 * 32),
    (GRANITE, 2, 2 * 4 * 64 * 2 * 32), (GRANITE, 8, 2 * 1 * 64 * 2 * 32),
    (OLMOE, 1, 2 * 16 * 128 * 2 * 16), (OLMOE, 4, 2 * 4 * 128 * 2 * 16),
])  # fmt: skip
def test_kv_a_token(name: str, tp: int, per_token: int) -> None:
    """Full attention in every layer: 2 (K and V) x the KV heads a rank holds x head_dim x 2 B x the
    layers, one group of 16-token pages; fp8 halves it."""
    s = config_shape(name)
    r = kvlayout.request(s, kvlayout.Settings(tp=tp), 4096, kvlayout.version(LAST_OWN))
    assert (r.bytes_per_token, len(r.layout.groups), r.fixed_bytes) == (per_token, 1, 0)
    assert kvlayout.request(s, kvlayout.Settings(tp=tp, kv_cache_dtype="fp8"), 4096, kvlayout.version(LAST_OWN)).bytes_per_token == per_token // 2


def test_phi_35_moe_kv_slides_over_its_window() -> None:
    """Every layer slides over the config's 131,072 tokens: a request holds pages for at most the
    window, none growing past it; at 131,072 tokens 8,193 pages a layer (the window's 8,192 and one
    more), at 8,192 tokens 513. A page at TP 2: 16 tokens x 2 x 4 KV heads x 128 x 2 B."""
    s = config_shape(PHI)
    for length, pages in ((131072, 8193), (8192, 513)):
        r = kvlayout.request(s, kvlayout.Settings(tp=2), length, kvlayout.version(None))
        assert (r.bytes_per_token, r.pages_per_request, len(r.layout.groups), r.layout.group_size) == (0, pages, 1, 32)
        assert r.fixed_bytes == pages * 32 * 16 * 2 * 4 * 128 * 2


def test_expert_parallel_deals_the_routed_experts_and_divides_the_shared_one() -> None:
    """TP 2 x DP 2 with --enable-expert-parallel: Hunyuan's 64 experts dealt 16 a rank, whole; its shared
    expert, built by the model as a dense MLP, stays divided over the TP ranks (hunyuan_v1.py passes it
    to SharedFusedMoE, no sequence-parallel replication, 0.28.0); Phi-3.5-MoE's 16 dealt 4 a rank."""
    rules = kvlayout.version(LAST_OWN)
    par = ranks.Parallel(tp=2, dp=2, ep=True)
    by_path = {t.path: t for t in ranks.rank_tensors(config_shape(HUNYUAN), par, rules, 0)}
    experts = by_path["model.layers.0.mlp.experts.gate_up_proj"]
    assert (experts.count, experts.rows, experts.cols) == (16, 2 * 3072, 4096)
    shared = by_path["model.layers.0.mlp.shared_expert.gate_up_proj"]
    assert (shared.rows, shared.cols) == (2 * 3072 // 2, 4096)
    assert ranks.expert_counts(16, 4, kvlayout.version(None)) == (4, 4, 4, 4)
    r = report(PHI, tp=2, dp=2, enable_expert_parallel=True)
    experts = r.ranks[0].experts
    assert experts is not None and {rank.local_experts for rank in experts.expert_ranks} == {4} and len(experts.expert_ranks) == 4


# --- the release window and bad input ---------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "0.29.0", "0.33.0"])
def test_hunyuan_from_0_29_is_the_transformers_backend(version: str | None) -> None:
    """vllm/model_executor/models/registry.py sends both Hunyuan classes to _TRANSFORMERS_SUPPORTED_MODELS
    from 0.29.0 (0.29.0 to 0.33.0 read), figured with 0.28's layers and said; 0.10.1.1 to 0.28.0 register
    hunyuan_v1.py, 0.9.2 the MoE class alone (hunyuan_v1_moe.py), 0.8.5 neither."""
    backend, own = report(HUNYUAN, engine_version=version), report(HUNYUAN)
    assert [n for n in backend.notes if "0.29.0 and later serve HunYuanMoEV1ForCausalLM with the Transformers backend" in n]
    assert backend.kv_bytes_per_token == own.kv_bytes_per_token and backend.weights_bytes_per_rank <= own.weights_bytes_per_rank
    for own in ("0.9.2", "0.10.1.1", LAST_OWN):
        assert hfconfig.outside_own_code("HunYuanMoEV1ForCausalLM", kvlayout.version(own).release) is None
    assert report(HUNYUAN, engine_version="0.10.1.1").weights_bytes_per_rank == report(HUNYUAN).weights_bytes_per_rank
    assert "0.9 does not register HunYuanDenseV1ForCausalLM" in str(hfconfig.outside_own_code("HunYuanDenseV1ForCausalLM", (0, 9)))
    assert "0.8 does not register HunYuanMoEV1ForCausalLM" in str(hfconfig.outside_own_code("HunYuanMoEV1ForCausalLM", (0, 8)))
    assert hfconfig.outside_own_code("PhiMoEForCausalLM", (0, 33)) is None


BAD = [
    (PHI, {"num_local_experts": None}, "num_local_experts: found nothing, expected a whole number"),
    (PHI, {"tie_word_embeddings": True}, "tie_word_embeddings: found True, expected false: vLLM's phimoe.py"),
    (GRANITE, {"num_local_experts": "40"}, "num_local_experts: found '40'"),
    (GRANITE, {"attention_bias": True}, "attention_bias: found True, expected false: vLLM's granitemoe.py"),
    (GRANITE, {"layer_types": ["sliding_attention"] * 32}, "layer_types: found"),
    (OLMOE, {"num_experts": 0}, "num_experts: found 0"),
    (OLMOE, {"tie_word_embeddings": True}, "vLLM's olmoe.py builds lm_head apart"),
    (HUNYUAN, {"num_shared_expert": [1] * 31}, "num_shared_expert: found .*, expected a whole number, or a list of 32"),
    (HUNYUAN, {"moe_intermediate_size": [3072, "3072"] + [3072] * 30}, "moe_intermediate_size: found"),
    (HUNYUAN, {"num_experts": [64] * 32}, "num_experts: found .*, expected one whole number"),
    (HUNYUAN, {"use_cla": True}, "use_cla: found True, expected false: Hunyuan's cross-layer attention"),
]


@pytest.mark.parametrize(("name", "change", "message"), BAD, ids=[f"{n}-{next(iter(c))}" for n, c, _ in BAD])
def test_bad_input_is_one_line_naming_the_field(name: str, change: dict, message: str) -> None:
    assert re.search(message, config_refusal(name, change))


def test_hunyuan_dense_reads_per_layer_widths_and_biases() -> None:
    """HunYuanDenseV1ForCausalLM (hunyuan_v1.py builds HunYuanMLP where num_experts is not above 1): a
    config of its fields, a few dimensions, with an intermediate_size a layer, mlp_bias, attention_bias
    (o_proj too) and use_qk_norm; head_dim from attention_head_dim. Unchecked: no config was found."""
    dense = {"architectures": ["HunYuanDenseV1ForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
             "num_key_value_heads": 2, "attention_head_dim": 64, "intermediate_size": [512, 768], "vocab_size": 1024, "num_experts": 1,
             "max_position_embeddings": 4096, "use_qk_norm": True, "attention_bias": True, "mlp_bias": True, "tie_word_embeddings": True}  # fmt: skip
    s = hfconfig.shape(dense, "hunyuan-dense-small")
    assert s.mlps == (hfconfig.Mlp(intermediate=512, bias=True), hfconfig.Mlp(intermediate=768, bias=True))
    assert (s.head_dim, s.attention_bias, s.output_bias, s.qk_norm, s.family) == (64, True, True, "head", "dense")
    attention = 256 * 256 + 2 * 128 * 256 + 256 * 256 + 256 + 2 * 128 + 256 + 2 * 64
    layers = 2 * (attention + 2 * 256) + 3 * 512 * 256 + 2 * 512 + 256 + 3 * 768 * 256 + 2 * 768 + 256
    assert parameters(s) == 1024 * 256 + 256 + layers
    r = modeled.model_report(modeled.ModelInputs(json.dumps(dense), "hunyuan-dense-small", max_model_len=2048, engine_version=LAST_OWN))
    assert any(n.startswith("HunYuanDenseV1ForCausalLM is read by vLLM's model code, but no real public config.json") for n in r.notes)


def test_a_hunyuan_alpha_rope_keeps_the_models_positions() -> None:
    """DynamicNTKAlphaRotaryEmbedding (rotary_embedding/dynamic_ntk_alpha_rope.py) builds a cache of
    max_position_embeddings whatever the rope's factor; a dynamic rope without an alpha stretches it."""
    rope = data(HUNYUAN)["rope_scaling"]
    assert hfconfig.shape({**data(HUNYUAN), "rope_scaling": {**rope, "factor": 2.0}}, HUNYUAN).ropes[0].positions == 32768
    plain = {k: v for k, v in rope.items() if k != "alpha"} | {"factor": 2.0}
    assert hfconfig.shape({**data(HUNYUAN), "rope_scaling": plain}, HUNYUAN).ropes[0].positions == 65536


# --- the command line --------------------------------------------------------------------------------

MATRIX = [
    (PHI, ["--tp", "2", "--pp", "2"]), (PHI, ["--tp", "4", "--kv-cache-dtype", "fp8", "--max-model-len", "131072"]),
    (HUNYUAN, ["--tp", "4", "--engine-version", LAST_OWN]), (HUNYUAN, ["--tp", "2", "--pp", "2", "--max-model-len", "32768", "--engine-version", "0.10.1.1"]),
    (GRANITE, ["--tp", "1"]), (GRANITE, ["--tp", "4", "--data-parallel-size", "2", "--enable-expert-parallel"]),
    (OLMOE, ["--tp", "2"]), (OLMOE, ["--tp", "1", "--pp", "2"]),
]  # fmt: skip


@pytest.mark.parametrize(("name", "args"), MATRIX, ids=[f"{n}-{'-'.join(a[1::2])}" for n, a in MATRIX])
def test_the_command_line_predicts_a_pool(name: str, args: list[str]) -> None:
    done = run_calc("model", str(config_path(name)), *args, *([] if "--max-model-len" in args else ["--max-model-len", "auto"]), "--gpu", "h200", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"] == data(name)["architectures"][0]
    assert out["verdict"] and out["weights_bytes_per_rank"] > 0


def test_the_command_line_says_hunyuan_is_the_transformers_backend_on_the_newest_release() -> None:
    done = run_calc("model", str(config_path(HUNYUAN)), "--tp", "4", "--max-model-len", "4096", "--json")
    assert done.returncode == 0 and [n for n in json.loads(done.stdout)["notes"] if "Transformers backend" in n]
