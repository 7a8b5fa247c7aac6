"""inclusionAI's Ling, which vLLM builds with bailing_moe.py: Ling 1.x (BailingMoeForCausalLM, registered
from 0.10.1.1) and Ling / Ring 2.0 (BailingMoeV2ForCausalLM, a subclass that adds nothing, from 0.11.0):
the parameter counts against the published totals, the weights a rank holds, the KV cache a token, the
release window and the command line.

Configs (models/configs/SOURCES.yaml says where each was found and where a whole one was looked for):
- ling-lite-1.5: inclusionAI/Ling-lite-1.5's config.json as a public loader's tests quote it verbatim
  (code index file 58554451241, repository not named), a test fixture;
- ling-mini-2.0: the fields a public port's fixture transcribes from inclusionAI/Ling-mini-2.0's published
  config (code index file 70927169011, repository not named), written as JSON in their order; it leaves out
  use_rmsnorm and router_dtype, so q and k are normed by LayerNorms with a bias, as vLLM reads a config
  without use_rmsnorm, and the router keeps the model's dtype.
Both classes are unchecked.
"""

from __future__ import annotations

import json

import pytest
from conftest import cli_json, config_path, config_refusal, config_shape, config_text, parameters

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, weights
from calc.units import InputError

LITE, MINI = "ling-lite-1.5", "ling-mini-2.0"


def data(name: str) -> dict:
    loaded: dict = json.loads(config_text(name))
    return loaded


def attention(tp: int, qk_norms: int) -> int:
    """16 heads and 4 KV heads of 128 over 2,048 (query_key_value and dense, no bias), KV heads below the
    ranks one a rank; the q/k norm parameters whole on every rank."""
    kv = max(1, 4 // tp) * 128
    return 2048 // tp * 2048 + 2 * kv * 2048 + 2048 * 2048 // tp + qk_norms


def total(name: str, tp: int = 1) -> int:
    """The parameters one rank of `tp` holds: embedding and untied head (both vocabularies multiples of
    64, so unpadded) divided, the final norm, the layers (two RMSNorms of 2,048 each)."""
    if name == LITE:  # every layer: a router of 64, 64 experts of 1,408, a shared MLP of 2 x 1,408
        layer = attention(tp, 0) + 2 * 2048 + 64 * 2048 + 64 * 3 * 1408 // tp * 2048 + 3 * 2816 // tp * 2048
        return 2 * 126464 // tp * 2048 + 2048 + 28 * layer
    # q and k LayerNorms of 128 with biases; layer 0 a gated MLP of 5,120; the other 19 a router of 256,
    # its expert bias, 256 experts of 512 and a shared MLP of 512
    dense = attention(tp, 4 * 128) + 2 * 2048 + 3 * 5120 // tp * 2048
    moe = attention(tp, 4 * 128) + 2 * 2048 + 256 * 2048 + 256 + 256 * 3 * 512 // tp * 2048 + 3 * 512 // tp * 2048
    return 2 * 157184 // tp * 2048 + 2048 + dense + 19 * moe


def test_ling_lite_meets_its_published_size() -> None:
    """16,801,974,272 parameters, 2,753,153,024 of them active a token (6 of the 64 experts): "Ling-Lite
    has 16.8 billion parameters with 2.75 billion activated parameters" (inclusionAI/Ling d6491356,
    README.md, the model family's table: Ling-lite 16.8B and 2.75B)."""
    s = config_shape(LITE)
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.qk_norm) == ("BailingMoeForCausalLM", 16, 4, 128, False, "")
    assert (s.attention_bias, s.output_bias, s.router_fp32, s.routing_bias, s.drafter_layers) == (False, False, False, False, 0)
    assert set(s.mlps) == {hfconfig.Mlp(experts=64, expert_intermediate=1408, shared_intermediate=2816)}
    assert parameters(s) == total(LITE) == 16_801_974_272 and round(total(LITE) / 1e9, 1) == 16.8
    active = total(LITE) - 28 * 58 * 3 * 1408 * 2048
    assert active == 2_753_153_024 and round(active / 1e9, 2) == 2.75
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(32768, 128)]
    assert s.family == "moe" and hfconfig.unchecked_note("BailingMoeForCausalLM")


def test_ling_mini_2_meets_its_published_size() -> None:
    """16,255,648,512 parameters, 1,432,978,176 active a token (8 of 256 experts), 789,152,512 of them
    outside the embedding and the head: "16B total parameters, but only 1.4B are activated per input token
    (non-embedding 789M)" (inclusionAI/Ling-V2 b0dc6475, README.md). Half the head rotates
    (partial_rotary_factor 0.5); the expert bias is float32, the router the model's dtype."""
    s = config_shape(MINI)
    assert (s.architecture, s.head_dim, s.qk_norm, s.routing_bias, s.router_fp32) == ("BailingMoeV2ForCausalLM", 128, "head layernorm", True, False)
    assert s.mlps[0] == hfconfig.Mlp(intermediate=5120)
    assert set(s.mlps[1:]) == {hfconfig.Mlp(experts=256, expert_intermediate=512, shared_intermediate=512)}
    assert parameters(s) == total(MINI) == 16_255_648_512 and round(total(MINI) / 1e9) == 16
    active = total(MINI) - 19 * 248 * 3 * 512 * 2048
    assert active == 1_432_978_176 and round(active / 1e9, 1) == 1.4
    assert active - 2 * 157184 * 2048 == 789_152_512
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(32768, 64)]
    names = {t.path for t in weights.tensors(s)}
    assert {"model.layers.0.self_attn.q_norm.bias", "model.layers.1.mlp.gate.e_score_correction_bias"} <= names
    assert "model.layers.0.mlp.gate" not in names


def test_the_v2_fields_change_what_vllm_builds() -> None:
    """use_rmsnorm: q and k RMSNorms, no bias; router_dtype "fp32": a float32 router (GateLinear
    params_dtype); use_qkv_bias: q, k and v biased, dense not; moe_shared_expert_intermediate_size absent:
    the shared MLP moe_intermediate_size x num_shared_experts; num_shared_experts 0: none."""
    base = data(MINI)
    rms = hfconfig.shape({**base, "use_rmsnorm": True, "router_dtype": "fp32", "use_qkv_bias": True}, MINI)
    assert (rms.qk_norm, rms.router_fp32, rms.attention_bias, rms.output_bias) == ("head", True, True, False)
    assert parameters(rms) == total(MINI) - 20 * 2 * 128 + 20 * (2048 + 2 * 512)
    router = next(t for t in weights.tensors(rms) if t.path == "model.layers.1.mlp.gate")
    assert router.dtype_bytes == 4
    wider = {k: v for k, v in base.items() if k != "moe_shared_expert_intermediate_size"} | {"num_shared_experts": 2}
    assert hfconfig.shape(wider, MINI).mlps[1].shared_intermediate == 1024
    assert hfconfig.shape({**base, "num_shared_experts": 0}, MINI).mlps[1].shared_intermediate == 0


ROPES = {LITE: 32768 * 128, MINI: 32768 * 64}  # cos/sin caches, bf16, whole on every rank


@pytest.mark.parametrize("name", [LITE, MINI])
@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_weights_per_rank(name: str, tp: int) -> None:
    """Each rank: the vocabulary, the heads and every expert's and shared MLP's width divided; the 4 KV
    heads one a rank from TP 4; norms, routers, expert biases and the rope cache whole. The expert bias
    float32 (4 B), the rest bf16."""
    biases = 19 * 256 if name == MINI else 0
    expected = 2 * (total(name, tp) - biases + ROPES[name]) + 4 * biases
    assert weights.per_rank(config_shape(name), tp).model == expected
    r = modeled.model_report(modeled.ModelInputs(config_text(name), name, tp=tp, max_model_len=4096))
    assert r.weights_bytes_per_rank == expected


@pytest.mark.parametrize(("name", "tp", "per_token"), [
    (LITE, 1, 2 * 4 * 128 * 2 * 28), (LITE, 8, 2 * 1 * 128 * 2 * 28), (MINI, 2, 2 * 2 * 128 * 2 * 20), (MINI, 4, 2 * 1 * 128 * 2 * 20),
])  # fmt: skip
def test_kv_a_token(name: str, tp: int, per_token: int) -> None:
    """Full attention in every layer: 2 (K and V) x the KV heads a rank holds x 128 x 2 B x the layers,
    one group of 16-token pages, no state; fp8 halves it."""
    s = config_shape(name)
    r = kvlayout.request(s, kvlayout.Settings(tp=tp), 4096, kvlayout.version(None))
    assert (r.bytes_per_token, len(r.layout.groups), r.fixed_bytes) == (per_token, 1, 0)
    assert kvlayout.request(s, kvlayout.Settings(tp=tp, kv_cache_dtype="fp8"), 4096, kvlayout.version(None)).bytes_per_token == per_token // 2


def test_the_registry_window() -> None:
    """vllm/model_executor/models/registry.py: BailingMoeForCausalLM from 0.10.1.1 (not in 0.9.2),
    BailingMoeV2ForCausalLM from 0.11.0 (not in 0.10.2), both to 0.33.0, the newest read."""
    for arch, first, before in (("BailingMoeForCausalLM", "0.10.1.1", "0.9.2"), ("BailingMoeV2ForCausalLM", "0.11.0", "0.10.2")):
        assert (
            hfconfig.outside_own_code(arch, kvlayout.version(first).release) is None and hfconfig.outside_own_code(arch, kvlayout.version(None).release) is None
        )
        assert f"does not register {arch}" in str(hfconfig.outside_own_code(arch, kvlayout.version(before).release))
    with pytest.raises(InputError, match=r"0.10.2 does not register BailingMoeV2ForCausalLM .* expected --engine-version 0.11 or later"):
        modeled.model_report(modeled.ModelInputs(config_text(MINI), MINI, max_model_len=4096, engine_version="0.10.2"))


BAD = [
    (LITE, {"num_experts": None}, "num_experts: found nothing, expected a whole number"),
    (LITE, {"first_k_dense_replace": None}, "first_k_dense_replace: found nothing, expected a whole number"),
    (LITE, {"use_bias": True}, "use_bias: found True, expected false: Bailing's biased linears"),
    (MINI, {"moe_shared_expert_intermediate_size": 0}, "moe_shared_expert_intermediate_size: found 0"),
    (MINI, {"use_qk_norm": "yes"}, "use_qk_norm: found 'yes', expected true or false"),
]


@pytest.mark.parametrize(("name", "change", "message"), BAD, ids=[f"{n}-{next(iter(c))}" for n, c, _ in BAD])
def test_bad_input_is_one_line_naming_the_field(name: str, change: dict, message: str) -> None:
    assert message in config_refusal(name, change)


@pytest.mark.parametrize(
    ("name", "args"), [(LITE, ["--tp", "2", "--max-model-len", "auto"]), (MINI, ["--tp", "4", "--engine-version", "0.11.0", "--max-model-len", "32768"])]
)
def test_the_command_line_predicts_a_pool(name: str, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m calc model CONFIG` sizes either class on an H200 (0.11.0 takes no --max-model-len auto)."""
    out = cli_json(["model", str(config_path(name)), *args, "--gpu", "h200", "--json"], capsys)
    assert out["architecture"] == data(name)["architectures"][0]
    assert out["verdict"] and out["weights_bytes_per_rank"] > 0
