"""Baichuan and Baichuan 2 (BaichuanForCausalLM, BaiChuanForCausalLM), read by vLLM's
vllm/model_executor/models/baichuan.py (the same parameters in 0.13.0, 0.20.0 and 0.23.0); from 0.24.0 the
registry no longer lists them (_PREVIOUSLY_SUPPORTED_MODELS: "0.23.0"). The parameter count against the
checkpoint, the KV cache a token, the rope (Baichuan2 7B) or ALiBi (the 13B models), the release window, and the
command line.

baichuan-inc/Baichuan2-7B-Base's and Baichuan-13B-Chat's own config.json and a Baichuan-7B fine-tune's ship byte
for byte as their Hub pages show them (models/configs/SOURCES.yaml)."""

from __future__ import annotations

import json

import pytest
from conftest import config_path, config_shape, config_text, parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, ranks, weights

NAME = "baichuan2-7b-base"
H, V, FFN = 4096, 125696, 11008
THIRTEEN_B = {"hidden_size": 5120, "num_attention_heads": 40, "num_hidden_layers": 40, "intermediate_size": 13696}
LAST = kvlayout.version("0.23.0")


def shape(**changes: object) -> hfconfig.Shape:
    return hfconfig.shape({**json.loads(config_text(NAME)), **changes}, NAME)


def layer(h: int, ffn: int, tp: int = 1) -> int:
    """W_pack (q, k and v of as many heads as query heads) and o_proj, the gated MLP, divided; two RMSNorms."""
    return 4 * h * h // tp + 3 * ffn // tp * h + 2 * h


def test_baichuan2_7b_meets_its_checkpoint() -> None:
    """7,505,973,248 parameters: an untied head of 125,696, 32 layers of 32 heads of 128, no bias; the rope turns
    the whole head (hidden_size 4,096 is Baichuan2 7B's). Baichuan2-7B-Chat's pytorch_model.bin of bfloat16 tensors
    is 13.98 GB as a mirror of its repository gives it in GiB (ai.gitee.com/hf-models/baichuan-inc/Baichuan2-7B-Chat):
    that count at 2 B."""
    s = shape()
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("BaichuanForCausalLM", 32, 32, 128, False)
    assert parameters(s) == 2 * V * H + H + 32 * layer(H, FFN) == 7_505_973_248
    assert round(2 * parameters(s) / 2**30, 2) == 13.98
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(4096, 128)]
    assert hfconfig.unchecked_note("BaichuanForCausalLM") is None


def test_baichuan2_13b_takes_alibi() -> None:
    """13,896,668,160 parameters (Baichuan2 13B's 13.9B) on 5,120 wide: BaichuanForCausalLM takes ALiBi slopes, no
    rope cache; BaiChuanForCausalLM (Baichuan 7B) always rotates."""
    s = shape(**THIRTEEN_B)
    assert parameters(s) == 2 * V * 5120 + 5120 + 40 * layer(5120, 13696) == 13_896_668_160 and s.ropes == ()
    assert shape(architectures=["BaiChuanForCausalLM"], **THIRTEEN_B).ropes != ()


def test_baichuan_13b_chat_and_baichuan_7b() -> None:
    """Baichuan-13B-Chat: 13,264,901,120 parameters (13B) on a vocabulary of 64,000, ALiBi, 819,200 B of KV a
    token; its config gives model_max_length alone, which vLLM takes as the longest context (4,096). Baichuan-7B
    (BaiChuanForCausalLM): 7,000,559,616 parameters, the leaderboard's "params": 7.0, with a rope."""
    s = config_shape("baichuan-13b-chat")
    assert (s.heads, s.kv_heads, s.head_dim, s.ropes) == (40, 40, 128, ())
    assert parameters(s) == 2 * 64000 * 5120 + 5120 + 40 * layer(5120, 13696) == 13_264_901_120
    assert kvlayout.request(s, kvlayout.Settings(), 4096, LAST).bytes_per_token == 40 * 2 * 40 * 128 * 2
    assert hfconfig.derived_max_model_len(json.loads(config_text("baichuan-13b-chat")), (0, 23)).tokens == 4096
    seven = config_shape("baichuan-7b-sft-001")
    assert seven.architecture == "BaiChuanForCausalLM" and [(r.positions, r.rotary_dim) for r in seven.ropes] == [(4096, 128)]
    assert parameters(seven) == 2 * 64000 * H + H + 32 * layer(H, FFN) == 7_000_559_616 and round(parameters(seven) / 1e9, 1) == 7.0


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_baichuan_weights_and_kv_per_rank(tp: int) -> None:
    """524,288 B a token at TP 1: 32 layers x 2 x 32 KV heads x 128 x 2 B, divided over the ranks."""
    s = shape()
    assert weights.per_rank(s, tp).model == 2 * (2 * V // tp * H + H + 32 * layer(H, FFN, tp)) + 4096 * 128 * 2
    assert kvlayout.request(s, kvlayout.Settings(tp=tp), 4096, LAST).bytes_per_token == 32 * 2 * 32 // tp * 128 * 2


@pytest.mark.parametrize("architecture", ["BaichuanForCausalLM", "BaiChuanForCausalLM"])
def test_baichuan_is_built_up_to_0_23_only(architecture: str) -> None:
    assert hfconfig.outside_own_code(architecture, (0, 23, 0)) is None
    assert hfconfig.outside_own_code(architecture, (0, 13)) is None
    assert "0.24.0 and later no longer register" in (hfconfig.outside_own_code(architecture, (0, 24)) or "")
    assert hfconfig.own_code_window(architecture) == ("v0.8 to v0.23.x", "from v0.24.0 the registry no longer lists it")


def test_pipeline_stages() -> None:
    assert ranks.partition(32, 2) == (16, 16)
    r = modeled.model_report(modeled.ModelInputs(config_text(NAME), tp=2, pp=2, max_model_len=4096, engine_version="0.23.0"))
    assert r.kv_bytes_per_token == 16 * 2 * 16 * 128 * 2


@pytest.mark.parametrize("args", [["--tp", "1"], ["--tp", "2", "--kv-cache-dtype", "fp8"], ["--tp", "2", "--pp", "2"]])
def test_the_command_line_predicts_a_pool(args: list[str]) -> None:
    done = run_calc("model", str(config_path(NAME)), *args, "--max-model-len", "4096", "--gpu", "h100-sxm", "--engine-version", "0.23.0", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"] == "BaichuanForCausalLM" and out["verdict"] and out["kv_bytes_per_token"] > 0


def test_the_command_line_refuses_a_release_that_no_longer_lists_it() -> None:
    done = run_calc("model", str(config_path(NAME)), "--max-model-len", "4096", "--gpu", "h100-sxm", "--engine-version", "0.24.0")
    assert done.returncode != 0 and "no longer register BaichuanForCausalLM" in done.stderr
