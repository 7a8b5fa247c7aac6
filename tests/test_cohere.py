"""Cohere's Command R family (CohereForCausalLM) and Command R7B / A (Cohere2ForCausalLM), read by vLLM's
vllm/model_executor/models/commandr.py (0.10.1.1 to 0.33.0): the parameter count against the published
total, the KV cache a token and a request, the groups by release, and the command line.

No whole config.json of either class was found at a citable address (models/configs/SOURCES.yaml says
where was looked), so both classes are unchecked. The tests read Command R (c4ai-command-r-v01) from a
fixture (tests/data/configs/c4ai-command-r-v01): the field dict public test modules parse as its
config.json (code index files 66573096413 and 66474685180, repository not named), written as JSON. It
holds no model_max_length, which the Hub file carries: its longest context here is max_position_embeddings,
8,192. Cohere2's rules (layer kinds, groups, the window by release, its head_dim) are tested on that
fixture renamed to Cohere2ForCausalLM: a test of the reading, not of any Cohere2 model, whose published
sizes (Command R7B 8.03B, Command A 111B) are not checked here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, ranks, weights

FIXTURES = Path(__file__).resolve().parent / "data" / "configs"
NAME = "c4ai-command-r-v01"
H, V, FFN, LAYERS = 8192, 256000, 22528, 40


def data() -> dict:
    loaded: dict = json.loads((FIXTURES / NAME / "config.json").read_text())
    return loaded


def cohere2() -> dict:
    """The same sizes read as Cohere2ForCausalLM: Cohere2Config's sliding_window 4,096 and pattern 4."""
    return {**data(), "architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2"}


def shape(config: dict | None = None) -> hfconfig.Shape:
    return hfconfig.shape(config or data(), NAME)


count = parameters


# A layer: one input norm (a parallel block: no post-attention norm), q/k/v/o of 64 heads of 128 without
# biases, the gated MLP without biases
LAYER = H + 4 * H * H + 3 * FFN * H
TOTAL = V * H + H + LAYERS * LAYER  # the embedding is the head (logits from embed_tokens), the final norm


def test_command_r_meets_its_published_size() -> None:
    """34,980,831,232 parameters: 35B, Command R's published size."""
    s = shape()
    assert (s.architecture, s.layers, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.parallel_block) == (
        "CohereForCausalLM", (hfconfig.FULL,) * 40, 64, 64, 128, True, True)  # fmt: skip
    assert count(s) == TOTAL == 34_980_831_232 and round(TOTAL / 1e9) == 35
    names = {t.path for t in weights.tensors(s)}
    assert "model.layers.0.input_layernorm" in names and "model.layers.0.post_attention_layernorm" not in names
    assert "lm_head" not in names and not any(".bias" in n for n in names)
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(8192, 128)]
    assert hfconfig.unchecked_note("CohereForCausalLM") and hfconfig.unchecked_note("Cohere2ForCausalLM")


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_command_r_weights_and_kv_per_rank(tp: int) -> None:
    """64 heads and 64 KV heads divide over 1 to 8 ranks: q/k/v/o, the MLP and the vocabulary divided, the
    norms whole, the rope cache (8,192 x 128 x 2 B) on every rank. KV: 2 x 64 / TP x 128 x 2 B x 40."""
    s = shape()
    per_rank = 2 * (V // tp * H + H + LAYERS * (H + 4 * H * H // tp + 3 * FFN // tp * H)) + 8192 * 128 * 2
    assert weights.per_rank(s, tp).model == per_rank
    r = kvlayout.request(s, kvlayout.Settings(tp=tp), 8192, kvlayout.version(None))
    assert r.bytes_per_token == 2 * 64 // tp * 128 * 2 * 40
    assert (len(r.layout.groups), r.layout.group_size, r.pages_per_request) == (1, 40, 512)
    assert r.bytes_per_request == 512 * 40 * 16 * 2 * 64 // tp * 128 * 2


def test_command_r_qk_norm_is_divided_over_the_ranks() -> None:
    """use_qk_norm (Command R+): q_norm of the heads a rank holds x head_dim, k_norm of its KV heads."""
    s = shape({**data(), "use_qk_norm": True})
    by = {t.path: t for t in weights.tensors(s, 4)}
    assert (by["model.layers.0.self_attn.q_norm"].rows, by["model.layers.0.self_attn.k_norm"].rows) == (16 * 128, 16 * 128)


def test_cohere_refuses_what_commandr_does_not_build() -> None:
    with pytest.raises(hfconfig.ConfigError, match="attention_bias: found True"):
        shape({**data(), "attention_bias": True})
    with pytest.raises(hfconfig.ConfigError, match="tie_word_embeddings: found False"):
        shape({**data(), "tie_word_embeddings": False})


def test_cohere2_layers_groups_and_window_by_release() -> None:
    """Three layers in four slide (30 of 40), the fourth global; head_dim hidden_size / heads. Groups of
    10: three of sliding layers, one of global ones. The window is 4,096 up to 0.28.0 and 4,097 from 0.29.0
    (sliding_window + 1). At 131,072 tokens a request holds 8,192 pages of the global group and, with two
    in-flight batches of 8,192 (0.26.0 on), cdiv(min(4,096 + 16,384, 131,072), 16) + 1 = 1,281 of each
    sliding group; the global layers alone grow with the context."""
    s = shape(cohere2())
    assert s.layers == (hfconfig.SLIDING, hfconfig.SLIDING, hfconfig.SLIDING, hfconfig.FULL) * 10
    assert (s.head_dim, s.sliding_window, s.family) == (128, 4096, "sliding window")
    assert count(s) == TOTAL  # the same tensors: Cohere2 differs in its cache and rope, not its weights
    for version, window in (("0.10.1.1", 4096), ("0.28.0", 4096), ("0.29.0", 4097), (None, 4097)):
        specs = kvlayout.layer_specs(s, kvlayout.Settings(tp=8), kvlayout.version(version))
        assert {sp.window for sp in specs if sp.kind == hfconfig.SLIDING} == {window}
    r = kvlayout.request(s, kvlayout.Settings(tp=8), 131072, kvlayout.version(None))
    assert (len(r.layout.groups), r.layout.group_size, r.layout.padding_layers) == (4, 10, 0)
    page = 16 * 2 * 8 * 128 * 2  # 8 KV heads a rank at TP 8
    assert r.pages_per_request == 8192 + 3 * 1281
    assert r.bytes_per_token == 10 * 2 * 8 * 128 * 2
    assert r.bytes_per_request == (8192 + 3 * 1281) * 10 * page
    assert r.fixed_bytes == 3 * 1281 * 10 * page


def test_pipeline_stages() -> None:
    """PP 2 splits the 40 layers 20 / 20: a rank's token at TP 4 is 20 x 2 x 16 x 128 x 2 B."""
    assert ranks.partition(40, 2) == (20, 20)
    r = modeled.model_report(modeled.ModelInputs(json.dumps(data()), tp=4, pp=2, max_model_len=8192))
    assert r.kv_bytes_per_token == 20 * 2 * 16 * 128 * 2


MATRIX = [
    (cls, [*tp, *kv, *rest, "--gpu", "h200"])
    for cls in ("CohereForCausalLM", "Cohere2ForCausalLM")
    for tp, kv, rest in (
        (["--tp", "1"], [], ["--max-model-len", "auto"]),
        (["--tp", "2"], [], ["--max-model-len", "auto"]),
        (["--tp", "4"], ["--kv-cache-dtype", "fp8"], ["--max-model-len", "auto"]),
        (["--tp", "8"], [], ["--max-model-len", "8192"]),
        (["--tp", "2", "--pp", "2"], [], ["--max-model-len", "auto"]),
        (["--tp", "4", "--pp", "2"], ["--kv-cache-dtype", "fp8"], ["--max-model-len", "8192", "--engine-version", "0.10.1.1"]),
    )
]


@pytest.mark.parametrize(("cls", "args"), MATRIX, ids=[f"{c}-{'-'.join(a[1::2])}" for c, a in MATRIX])
def test_the_command_line_predicts_a_pool(cls: str, args: list[str], tmp_path: Path) -> None:
    """TP 1 to 8, fp8, PP 2 and auto: a verdict each, the derived length 8,192."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(data() if cls == "CohereForCausalLM" else cohere2()))
    done = run_calc("model", str(config), *args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"] == cls and out["verdict"] and out["kv_bytes_per_token"] > 0
    assert out["max_model_len"] == 8192
