"""MiniMax-M1 and MiniMax-Text-01, which vLLM builds with minimax_text_01.py (MiniMaxText01ForCausalLM for
both names) from 0.10.1.1 to 0.23.0: lightning-attention layers that keep one state a request beside
softmax-attention layers that keep a KV cache, every layer 32 experts. The count against the published
total and the checkpoint's index, the weights a rank holds (a float32 head, routers and rope), the KV
layout of the two kinds, the release window and the command line.

Config: models/configs/minimax-m1, MiniMax's own repository's config.json (SOURCES.yaml). No whole
MiniMax-Text-01 config was found; its class reads the same layers.
"""

from __future__ import annotations

import json
import re

import pytest
from conftest import cli_json, config_path, config_refusal, config_shape, config_text, parameters

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, weights
from calc.units import InputError

M1, LAST = "minimax-m1", "0.23.0"  # the last release whose registry builds the class
H, VOCAB, HEADS, D = 6144, 200064, 64, 128  # 200,064 = 3,126 x 64: the vocabulary unpadded


def layer(tp: int, lightning: bool) -> int:
    """One layer on a rank of `tp`: lightning attention (qkv_proj, output_gate, out_proj and the norm
    of 64 x 128, divided) or softmax attention (64 heads and 8 KV heads of 128, KV heads below the ranks
    one a rank), two RMSNorms, a router of 32 and 32 experts of 9,216."""
    inner = HEADS * D // tp
    mixer = 5 * inner * H + inner if lightning else inner * H + 2 * max(1, 8 // tp) * D * H + H * inner
    return mixer + 2 * H + 32 * H + 32 * 3 * 9216 // tp * H


def total(tp: int = 1) -> int:
    return 2 * VOCAB // tp * H + H + 70 * layer(tp, True) + 10 * layer(tp, False)


def test_minimax_m1_meets_its_published_size_and_its_index() -> None:
    """456,089,655,296 parameters, 45,944,920,064 active a token outside the embedding and the head (2 of
    32 experts): "a total of 456 billion parameters with 45.9 billion parameters activated" (MiniMax-AI/
    MiniMax-M1 2abb4f45, README.md). The repository's model.safetensors.index.json gives total_size
    912,210,767,872: the count at 2 B, and 2 B more for each value of the 80 routers (32 x 6,144)."""
    s = config_shape(M1)
    assert (s.architecture, s.family, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("MiniMaxM1ForCausalLM", "hybrid", 64, 8, 128, False)
    assert s.layers == ((hfconfig.LIGHTNING,) * 7 + (hfconfig.FULL,)) * 10
    assert set(s.mlps) == {hfconfig.Mlp(experts=32, expert_intermediate=9216)}
    assert (s.router_fp32, s.lm_head_fp32, s.attention_bias, s.qk_norm) == (True, True, False, "")
    assert parameters(s) == total() == 456_089_655_296 and round(total() / 1e9) == 456
    active = total() - 80 * 30 * 3 * 9216 * H - 2 * VOCAB * H
    assert active == 45_944_920_064 and round(active / 1e9, 1) == 45.9
    assert 2 * total() + 2 * 80 * 32 * H == 912_210_767_872
    assert hfconfig.unchecked_note("MiniMaxM1ForCausalLM") is None


ROPE = (64, 4)  # rotary_dim 64, float32: a cache of min(max_position_embeddings, max_model_len) positions


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_weights_per_rank(tp: int) -> None:
    """Each rank: bf16 weights, the head (divided like the vocabulary) and the routers in float32, and the
    rope's cos/sin cache in float32 for max_model_len positions, not the config's 10,240,000."""
    s = config_shape(M1)
    fp32 = VOCAB // tp * H + 80 * 32 * H  # held at 4 B
    assert weights.per_rank(s, tp).model == 2 * (total(tp) - fp32) + 4 * fp32 + 10_240_000 * ROPE[0] * ROPE[1]
    r = modeled.model_report(modeled.ModelInputs(config_text(M1), M1, tp=tp, max_model_len=131072, engine_version=LAST))
    assert r.weights_bytes_per_rank == 2 * (total(tp) - fp32) + 4 * fp32 + 131072 * ROPE[0] * ROPE[1]


@pytest.mark.parametrize("tp", [1, 8])
def test_the_lightning_state_shares_the_pages(tp: int) -> None:
    """A lightning layer's state: 64 / TP heads x 128 x 128 at 2 B (linear_attention_state_shape). The
    attention block grows to 16 x cdiv(state, 16 x one token's page) = 512 tokens, where the page of a
    softmax layer (8 / TP KV heads, K and V of 128 at 2 B) equals the state. Ten softmax layers and 70
    lightning ones form 8 groups of 10; without prefix caching (the default for a hybrid up to 0.27.1)
    a request holds one state page in each lightning layer, and its tokens only in the softmax ones."""
    s = config_shape(M1)
    state = HEADS // tp * D * D * 2
    token = 2 * max(1, 8 // tp) * D * 2
    assert 512 * token == state
    r = kvlayout.request(s, kvlayout.Settings(tp=tp, mamba_cache_mode="none"), 131072, kvlayout.version(LAST))
    assert (r.bytes_per_token, r.fixed_bytes, r.layout.group_size, len(r.layout.groups)) == (10 * token, 70 * state, 10, 8)
    assert r.layout.groups[0].spec.block_size == 512 and r.pages_per_request == 131072 // 512 + 7
    assert kvlayout.mamba_cache_mode(s, kvlayout.version(LAST)) == "none"


def test_the_registry_window() -> None:
    """vllm/model_executor/models/registry.py: both names from 0.10.1.1 to 0.23.0 with model code for the
    V1 engine; 0.8.5 (Text-01) and 0.9.2 (both) build them for V0 only (SupportsV0Only); 0.24.0 to 0.33.0
    list them in _PREVIOUSLY_SUPPORTED_MODELS ("0.23.0")."""
    for arch in hfconfig.MINIMAX_TEXT:
        assert (
            hfconfig.outside_own_code(arch, kvlayout.version("0.10.1.1").release) is None
            and hfconfig.outside_own_code(arch, kvlayout.version(LAST).release) is None
        )
        assert "no longer register" in str(hfconfig.outside_own_code(arch, kvlayout.version(None).release))
        assert "V0 engine only" in str(hfconfig.outside_own_code(arch, kvlayout.version("0.9.2").release))
    assert "does not register MiniMaxM1ForCausalLM" in str(hfconfig.outside_own_code("MiniMaxM1ForCausalLM", kvlayout.version("0.8.5").release))
    with pytest.raises(InputError, match="0.24.0 and later no longer register MiniMaxM1ForCausalLM"):
        modeled.model_report(modeled.ModelInputs(config_text(M1), M1, max_model_len=4096))


BAD = [
    ({"attn_type_list": [0] * 79}, "attn_type_list: found .*, expected a list of 80 layer types"),
    ({"attn_type_list": None}, "attn_type_list: found nothing"),
    ({"num_local_experts": [32] * 80}, "num_local_experts: found .*, expected one whole number"),
    ({"shared_intermediate_size": 9216}, "shared_intermediate_size: found 9216, expected 0"),
    ({"sliding_window": 4096}, "sliding_window: found 4096, expected null"),
    ({"tie_word_embeddings": True}, "tie_word_embeddings: found True, expected false: vLLM's minimax_text_01.py"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[next(iter(c)) for c, _ in BAD])
def test_bad_input_is_one_line_naming_the_field(change: dict, message: str) -> None:
    assert re.search(message, config_refusal(M1, change))


def test_text_01_reads_the_same_layers() -> None:
    """MiniMaxText01ForCausalLM: the same reader and the same window (0.8.5 registers it for V0 only);
    unchecked, as no whole MiniMax-Text-01 config was found."""
    text01 = {**json.loads(config_text(M1)), "architectures": ["MiniMaxText01ForCausalLM"]}
    assert parameters(hfconfig.shape(text01, "minimax-text-01")) == total()
    assert hfconfig.unchecked_note("MiniMaxText01ForCausalLM")


def test_pipeline_parallel_is_refused() -> None:
    """MiniMaxText01ForCausalLM does not implement SupportsPP: vLLM refuses --pipeline-parallel-size above 1."""
    with pytest.raises(InputError, match="does not implement SupportsPP"):
        modeled.model_report(modeled.ModelInputs(config_text(M1), M1, tp=4, pp=2, max_model_len=4096, engine_version=LAST))


def test_the_command_line_predicts_a_pool(capsys: pytest.CaptureFixture[str]) -> None:
    out = cli_json(["model", str(config_path(M1)), "--tp", "8", "--max-model-len", "131072", "--engine-version", LAST, "--gpu", "h200", "--json"], capsys)
    assert out["architecture"] == "MiniMaxM1ForCausalLM"
    assert out["verdict"] and out["weights_bytes_per_rank"] > 0
