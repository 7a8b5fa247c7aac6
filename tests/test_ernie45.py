"""Baidu's ERNIE 4.5, dense (Ernie4_5ForCausalLM) and MoE (Ernie4_5_MoeForCausalLM), read by vLLM's
model code (ernie45.py and ernie45_moe.py, 0.10.1.1 to 0.33.0): the parameter counts against the
published totals, the KV cache a token and a request, the groups, and the command line.

No whole config.json naming either class was found at a citable address (models/configs/SOURCES.yaml
says where was looked), so both classes are unchecked and the tests read fixtures
(tests/data/configs/):
- ernie-4.5-0.3b-paddle: ERNIE-4.5-0.3B-Paddle's config.json as the code index holds it whole (file
  28060091361, repository not named), byte for byte. It names Ernie4_5_ForCausalLM, the remote-code
  class, which vLLM's registry does not hold: refused as is; the tests read it under the name the -PT
  checkpoints give, Ernie4_5ForCausalLM (vLLM's own examples registry pairs that class with
  baidu/ERNIE-4.5-0.3B-PT).
- ernie-4.5-21b-a3b: the field dict a public test module gives as ERNIE-4.5-21B-A3B's (code index file
  70957858900, repository not named), written as JSON; the fields it leaves out (use_bias,
  max_position_embeddings) are transformers' Ernie4_5_MoeConfig defaults. The Hub's record of
  ERNIE-4.5-21B-A3B-Thinking (the same layers) gives the checkpoint's total, which the count meets.
ERNIE-4.5-300B-A47B is not checked: only a five-layer cut of its config was found.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, ranks, weights
from calc.engine.predict import terms

FIXTURES = Path(__file__).resolve().parent / "data" / "configs"
DENSE, MOE = "ernie-4.5-0.3b-paddle", "ernie-4.5-21b-a3b"


def data(name: str) -> dict:
    loaded: dict = json.loads((FIXTURES / name / "config.json").read_text())
    if name == DENSE:
        loaded["architectures"] = ["Ernie4_5ForCausalLM"]  # the -PT checkpoint's name for the same model
    return loaded


def shape(name: str) -> hfconfig.Shape:
    return hfconfig.shape(data(name), name)


count = parameters


# --- ERNIE-4.5-21B-A3B: 28 layers, layer 0 dense, 27 MoE layers of 64 experts and 2 shared ---

H, V = 2560, 103424
ATTENTION = 2 * H + (2560 + 2 * 512) * H + H * 2560  # two norms, q/k/v of 20 and 4 heads of 128 (no bias), o_proj
EXPERT = 3 * 1536 * H
ROUTER = 64 * H + 64  # gate and e_score_correction_bias, float32
MOE_LAYER = ROUTER + 64 * EXPERT + 3 * (2 * 1536) * H  # the shared experts fused into one MLP of 3,072
TOTAL = V * H + H + 28 * ATTENTION + 3 * 12288 * H + 27 * MOE_LAYER  # tied embedding, final norm, layer 0's dense MLP
ROPE = 131072 * 128 * 2  # the cos/sin cache, built at load: max_position_embeddings x head_dim in bf16


def test_ernie_21b_meets_the_checkpoints_total() -> None:
    """21,825,437,888 parameters, 4,425,408 of them the float32 routers and biases: the safetensors
    total and float32 count the Hub gives ERNIE-4.5-21B-A3B-Thinking (F32 4,425,408, BF16
    21,821,012,480). Published as 21B total, 3B active: 3,087,384,768 a token without the embedding
    (6 of 64 experts, the shared ones, attention, layer 0)."""
    s = shape(MOE)
    assert (s.architecture, s.layers, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("Ernie4_5_MoeForCausalLM", (hfconfig.FULL,) * 28, 20, 4, 128, True)
    assert s.mlps[0] == hfconfig.Mlp(intermediate=12288)
    assert set(s.mlps[1:]) == {hfconfig.Mlp(experts=64, expert_intermediate=1536, shared_intermediate=3072)}
    assert (s.router_fp32, s.routing_bias, s.attention_bias, s.output_bias) == (True, True, False, False)
    assert count(s) == TOTAL == 21_825_437_888
    assert 27 * ROUTER == 4_425_408 and TOTAL - 27 * ROUTER == 21_821_012_480
    active = TOTAL - V * H - 27 * 58 * EXPERT
    assert active == 3_087_384_768 and round(active / 1e9) == 3 and int(TOTAL / 1e9) == 21
    assert hfconfig.unchecked_note("Ernie4_5_MoeForCausalLM")
    assert s.defaults and "use_bias false" in s.defaults[0]


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_ernie_21b_weights_per_rank(tp: int) -> None:
    """Each rank: the vocabulary (a multiple of 64 already) and the heads divided, 4 KV heads over up
    to 4 ranks, every expert resident with its widths divided; norms, routers (float32) and the rope
    cache whole. bf16, 2 B a value."""
    kv = max(1, 4 // tp)
    attention = 2 * H + (2560 // tp + 2 * kv * 128) * H + H * 2560 // tp
    moe = 4 * ROUTER // 2 + 64 * 3 * 1536 // tp * H + 3 * 3072 // tp * H  # in bf16 units: the float32 router counts double
    per_rank = 2 * (V // tp * H + H + 28 * attention + 3 * 12288 // tp * H + 27 * moe) + ROPE
    assert weights.per_rank(shape(MOE), tp).model == per_rank
    if tp == 1:
        assert per_rank == 2 * (TOTAL - 27 * ROUTER) + 4 * 27 * ROUTER + ROPE == 43_693_281_024
    r = modeled.model_report(modeled.ModelInputs(json.dumps(data(MOE)), tp=tp, max_model_len=32768))
    assert r.weights_bytes_per_rank == per_rank


@pytest.mark.parametrize(("tp", "kv_heads"), [(1, 4), (2, 2), (4, 1)])
def test_ernie_21b_kv_a_token_and_a_request(tp: int, kv_heads: int) -> None:
    """28 full-attention layers of 4 KV heads of 128: 2 x 4 x 128 x 2 B x 28 = 57,344 B a token at TP 1;
    one group of 28 layers, 16-token pages; a request of 131,072 tokens holds 8,192 pages of the group.
    fp8 halves it. The same from 0.10.1.1 on."""
    s = shape(MOE)
    for version in (None, "0.10.1.1", "0.13.0", "0.26.0"):
        r = kvlayout.request(s, kvlayout.Settings(tp=tp), 131072, kvlayout.version(version))
        assert r.bytes_per_token == 2 * kv_heads * 128 * 2 * 28
        assert (len(r.layout.groups), r.layout.group_size, r.layout.min_block_size, r.layout.page_bytes) == (1, 28, 16, 16 * 2 * kv_heads * 128 * 2)
        assert (r.pages_per_request, r.fixed_bytes) == (8192, 0)
        assert r.bytes_per_request == 8192 * 28 * 16 * 2 * kv_heads * 128 * 2
    fp8 = kvlayout.request(s, kvlayout.Settings(tp=tp, kv_cache_dtype="fp8"), 131072, kvlayout.version(None))
    assert fp8.bytes_per_token == 2 * kv_heads * 128 * 1 * 28


def test_ernie_21b_pool_and_pipeline_stages() -> None:
    """A pool of exactly 1,000 blocks of the group at TP 2 (28 layers x 16 tokens x 1,024 B a token):
    16,000 tokens. PP 2 splits the 28 layers 14 / 14: a rank's token at TP 2 is 14 x 1,024 B."""
    s = shape(MOE)
    p = kvlayout.pool(s, kvlayout.Settings(tp=2), 32768, 1000 * 28 * 16 * 1024, kvlayout.version("0.20.0"))
    assert (p.blocks, p.tokens) == (1000, 16000)
    assert ranks.partition(28, 2) == (14, 14)
    r = modeled.model_report(modeled.ModelInputs(json.dumps(data(MOE)), tp=2, pp=2, max_model_len=32768))
    assert r.kv_bytes_per_token == 14 * 2 * 2 * 128 * 2


def test_ernie_moe_top_k_and_layer_choice() -> None:
    """moe_k is the top-k vLLM passes (6); moe_layer_end_index -1 (the class default) is the last layer;
    moe_layer_interval 2 puts experts in the odd layers from the start index; use_moe false leaves every
    layer dense; a null end index, which vLLM cannot compare, is refused."""
    assert terms.experts_per_token(data(MOE)) == 6
    d = data(MOE)
    del d["moe_layer_end_index"]
    assert shape(MOE).mlps == hfconfig.shape(d, MOE).mlps
    d["moe_layer_interval"] = 2
    mlps = hfconfig.shape(d, MOE).mlps
    assert [i for i, m in enumerate(mlps) if m.experts] == list(range(1, 28, 2))
    d["use_moe"] = False
    assert all(not m.experts and m.intermediate == 12288 for m in hfconfig.shape(d, MOE).mlps)
    with pytest.raises(hfconfig.ConfigError, match="moe_num_experts: found 0"):
        hfconfig.shape({**data(MOE), "moe_num_experts": 0, "use_moe": True}, MOE)
    d = {**data(MOE), "moe_layer_end_index": None}
    with pytest.raises(hfconfig.ConfigError, match="moe_layer_end_index: found None"):
        hfconfig.shape(d, MOE)


def test_ernie_21b_at_tp8_is_refused_as_vllm_refuses_it() -> None:
    """20 attention heads do not divide over 8 ranks (ernie45_moe.py asserts it)."""
    with pytest.raises(hfconfig.ConfigError, match="num_attention_heads"):
        weights.per_rank(shape(MOE), 8)
    done = run_calc("model", str(FIXTURES / MOE / "config.json"), "--tp", "8", "--max-model-len", "auto", "--gpu", "h200", "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "20 attention heads" in done.stderr


# --- ERNIE-4.5-0.3B: Llama's 18 layers, 16 heads and 2 KV heads of 128 ---

D = 1024
D_LAYER = 2 * D + (2048 + 2 * 256) * D + D * 2048 + 3 * 3072 * D  # norms, q/k/v (no bias), o_proj (no bias), the MLP


def test_ernie_03b_count() -> None:
    """360,748,032 parameters: 0.36B, published as 0.3B; the embedding tied."""
    s = shape(DENSE)
    assert (s.architecture, len(s.layers), s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("Ernie4_5ForCausalLM", 18, 16, 2, 128, True)
    assert (s.attention_bias, s.output_bias) == (False, False)
    assert count(s) == V * D + D + 18 * D_LAYER == 360_748_032
    assert hfconfig.unchecked_note("Ernie4_5ForCausalLM")


def test_ernie_03b_as_the_paddle_checkpoint_names_it_is_refused() -> None:
    """Ernie4_5_ForCausalLM is in no vLLM registry from 0.10.1.1 to 0.33.0: refused with the reason, by
    the config model and on the command line."""
    raw = json.loads((FIXTURES / DENSE / "config.json").read_text())
    with pytest.raises(hfconfig.ConfigError, match="Ernie4_5_ForCausalLM.*in no vLLM registry"):
        hfconfig.shape(raw, DENSE)
    done = run_calc("model", str(FIXTURES / DENSE / "config.json"), "--tp", "1", "--max-model-len", "4096", "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "Ernie4_5ForCausalLM" in done.stderr


def test_ernie_03b_use_bias_is_refused() -> None:
    """vLLM builds Llama's layers, which read no use_bias: a config asking for biases is refused."""
    with pytest.raises(hfconfig.ConfigError, match="use_bias: found True"):
        hfconfig.shape({**data(DENSE), "use_bias": True}, DENSE)


@pytest.mark.parametrize(("tp", "kv_heads"), [(1, 2), (2, 1), (4, 1), (8, 1)])
def test_ernie_03b_kv(tp: int, kv_heads: int) -> None:
    """2 KV heads, one a rank from TP 2: 2 x 2 x 128 x 2 B x 18 = 18,432 B a token at TP 1."""
    r = kvlayout.request(shape(DENSE), kvlayout.Settings(tp=tp), 131072, kvlayout.version(None))
    assert r.bytes_per_token == 2 * kv_heads * 128 * 2 * 18
    assert (len(r.layout.groups), r.layout.group_size) == (1, 18)


MATRIX = [
    (name, [*tp, *kv, *rest, "--gpu", "h200"])
    for name, tps in ((MOE, ("1", "2", "4")), (DENSE, ("1", "2", "4", "8")))
    for tp, kv, rest in (
        *((["--tp", t], [], ["--max-model-len", "auto"]) for t in tps),
        (["--tp", tps[-1]], ["--kv-cache-dtype", "fp8"], ["--max-model-len", "32768"]),
        (["--tp", "2", "--pp", "2"], [], ["--max-model-len", "auto"]),
        (["--tp", "2", "--pp", "2"], ["--kv-cache-dtype", "fp8"], ["--max-model-len", "65536", "--engine-version", "0.10.1.1"]),
    )
]


@pytest.mark.parametrize(("name", "args"), MATRIX, ids=[f"{n}-{'-'.join(a[1::2])}" for n, a in MATRIX])
def test_the_command_line_predicts_a_pool(name: str, args: list[str], tmp_path: Path) -> None:
    """TP 1 to 8 (4 for the 21B, whose 20 heads stop there), fp8, PP 2 and auto: a verdict each."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(data(name)))
    done = run_calc("model", str(config), *args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"] in ("Ernie4_5ForCausalLM", "Ernie4_5_MoeForCausalLM")
    assert out["verdict"] and out["kv_bytes_per_token"] > 0
