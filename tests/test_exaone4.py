"""LG's EXAONE 4.0 (Exaone4ForCausalLM), read by vLLM's vllm/model_executor/models/exaone4.py (the same from
0.10.1.1 to 0.33.0): the parameter count against the published total, the KV cache a token and a request,
the groups of its hybrid sliding/global layers, and the command line.

No whole config.json of EXAONE 4.0 was found, so the class is unchecked and the tests read a fixture
(tests/data/configs/exaone-4.0-32b): the dict NVIDIA/TensorRT-LLM keeps as EXAONE-4.0-32B's config in
tests/unittest/_torch/modeling/test_modeling_exaone4.py (commit 7eb710fa, EXAONE4_SINGLE_LAYER_CONFIG),
written as JSON, with the two values its own comments say were cut for testing put back ("we use 4
instead of 64(all layers)", "we use 4 instead of 4096") and its attn_implementation, which vLLM does not
read, left out. EXAONE-4.0-1.2B (no sliding layers) is not checked: no config of it was found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, ranks, weights

FIXTURES = Path(__file__).resolve().parent / "data" / "configs"
NAME = "exaone-4.0-32b"
H, V, FFN = 5120, 102400, 27392


def data() -> dict:
    loaded: dict = json.loads((FIXTURES / NAME / "config.json").read_text())
    return loaded


def shape(config: dict | None = None) -> hfconfig.Shape:
    return hfconfig.shape(config or data(), NAME)


# A layer: q/k/v/o of 40 and 8 heads of 128 without biases, q_norm and k_norm of head_dim, the norms after
# attention and after the MLP (no input norm), the gated MLP
LAYER = H * 5120 + 2 * 1024 * H + 5120 * H + 2 * 128 + 2 * H + 3 * FFN * H
TOTAL = 2 * V * H + H + 64 * LAYER  # embedding and lm_head untied, the final norm
ROPE = 131072 * 128 * 2  # llama3 scaling keeps max_position_embeddings' positions in the cache


def test_exaone_32b_meets_its_published_size() -> None:
    """32,003,216,384 parameters: 32.0B, as published."""
    s = shape()
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.sliding_window) == ("Exaone4ForCausalLM", 40, 8, 128, False, 4096)
    assert s.layers == (hfconfig.SLIDING, hfconfig.SLIDING, hfconfig.SLIDING, hfconfig.FULL) * 16
    assert sum(t.rows * t.cols * t.count for t in weights.tensors(s) if not t.buffer) == TOTAL == 32_003_216_384
    assert round(TOTAL / 1e9, 1) == 32.0
    names = {t.path for t in weights.tensors(s)}
    assert {"model.layers.0.post_attention_layernorm", "model.layers.0.post_feedforward_layernorm", "model.layers.0.self_attn.q_norm"} <= names
    assert "model.layers.0.input_layernorm" not in names
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(131072, 128)]
    assert hfconfig.unchecked_note("Exaone4ForCausalLM")


@pytest.mark.parametrize(("tp", "kv_heads"), [(1, 8), (2, 4), (4, 2), (8, 1)])
def test_exaone_32b_weights_and_kv_per_rank(tp: int, kv_heads: int) -> None:
    """Weights: heads, MLP and vocabulary divided, q/k norms and layer norms whole. KV: 48 sliding layers
    and 16 global ones, each 2 x KV heads a rank x 128 x 2 B a token; groups of 16 (three sliding, one
    global); at 131,072 tokens the global group holds 8,192 pages, each sliding one
    cdiv(min(4,095 + 2 x 8,192, 131,072), 16) + 1 = 1,281 (two batches in flight, 0.26.0 on)."""
    s = shape()
    layer = H // tp * H + 2 * kv_heads * 128 * H + H * H // tp + 2 * 128 + 2 * H + 3 * FFN // tp * H
    assert weights.per_rank(s, tp).model == 2 * (2 * V // tp * H + H + 64 * layer) + ROPE
    token = 2 * kv_heads * 128 * 2
    r = kvlayout.request(s, kvlayout.Settings(tp=tp), 131072, kvlayout.version(None))
    assert (len(r.layout.groups), r.layout.group_size, r.layout.padding_layers) == (4, 16, 0)
    assert r.bytes_per_token == 16 * token
    assert r.pages_per_request == 8192 + 3 * 1281
    assert r.bytes_per_request == (8192 + 3 * 1281) * 16 * 16 * token
    assert r.fixed_bytes == 3 * 1281 * 16 * 16 * token
    old = kvlayout.request(s, kvlayout.Settings(tp=tp), 131072, kvlayout.version("0.10.1.1"))  # one batch's budget
    assert old.pages_per_request == 8192 + 3 * ((4095 + 8192 + 15) // 16 + 1)
    fp8 = kvlayout.request(s, kvlayout.Settings(tp=tp, kv_cache_dtype="fp8"), 131072, kvlayout.version(None))
    assert fp8.bytes_per_token == 16 * token // 2


def test_exaone_layer_kinds_from_the_config() -> None:
    """layer_types, where given, decide; else the integer pattern; a string pattern ("LLLG", which
    Exaone4Config cannot take) and a missing window without layer_types are refused."""
    listed = {**data(), "layer_types": ["full_attention"] * 64}
    assert shape(listed).layers == (hfconfig.FULL,) * 64 and shape(listed).sliding_window is None
    assert shape({**data(), "sliding_window_pattern": 2}).layers[:4] == (hfconfig.SLIDING, hfconfig.FULL) * 2
    with pytest.raises(hfconfig.ConfigError, match="sliding_window_pattern: found 'LLLG'"):
        shape({**data(), "sliding_window_pattern": "LLLG"})
    with pytest.raises(hfconfig.ConfigError, match="sliding_window: found None"):
        shape({**data(), "sliding_window": None})
    biased = shape({**data(), "attention_bias": True, "mlp_bias": True})
    assert (biased.attention_bias, biased.output_bias, biased.mlps[0].bias) == (True, True, True)


def test_pipeline_stages() -> None:
    """PP 2 splits the 64 layers 32 / 32, 8 global layers each: a rank's growing token at TP 4 is
    8 x 2 x 2 x 128 x 2 B."""
    assert ranks.partition(64, 2) == (32, 32)
    r = modeled.model_report(modeled.ModelInputs(json.dumps(data()), tp=4, pp=2, max_model_len=32768))
    assert r.kv_bytes_per_token == 8 * 2 * 2 * 128 * 2


MATRIX = [
    [*tp, *kv, *rest, "--gpu", "h200"]
    for tp, kv, rest in (
        (["--tp", "1"], [], ["--max-model-len", "auto"]),
        (["--tp", "2"], [], ["--max-model-len", "auto"]),
        (["--tp", "4"], ["--kv-cache-dtype", "fp8"], ["--max-model-len", "auto"]),
        (["--tp", "8"], [], ["--max-model-len", "131072"]),
        (["--tp", "2", "--pp", "2"], [], ["--max-model-len", "auto"]),
        (["--tp", "4", "--pp", "2"], ["--kv-cache-dtype", "fp8"], ["--max-model-len", "65536", "--engine-version", "0.10.1.1"]),
    )
]


@pytest.mark.parametrize("args", MATRIX, ids=["-".join(a[1::2]) for a in MATRIX])
def test_the_command_line_predicts_a_pool(args: list[str]) -> None:
    """TP 1 to 8, fp8, PP 2 and auto: a verdict each."""
    done = run_calc("model", str(FIXTURES / NAME / "config.json"), *args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"] == "Exaone4ForCausalLM" and out["verdict"] and out["kv_bytes_per_token"] > 0
    assert out["kv_groups"] == 4
