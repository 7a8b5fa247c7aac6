"""Four classic dense classes vLLM builds with its own model code: Phi-1.5 / Phi-2 (PhiForCausalLM, phi.py,
0.10.1.1 to 0.31.0), Falcon (FalconForCausalLM, falcon.py, 0.10.1.1 to 0.33.0), GPT-NeoX and Pythia
(GPTNeoXForCausalLM, gpt_neox.py, 0.10.1.1 to 0.31.0) and SantaCoder / StarCoder (GPTBigCodeForCausalLM,
gpt_bigcode.py, 0.10.1.1 to 0.24.0), the later releases sending Phi, GPT-NeoX and GPTBigCode to the
Transformers backend: the parameter count against the published total, the KV cache a token, tensor and
pipeline parallel, refusals, and the command line.

Phi-2 (models/configs/phi-2) and Falcon-7B-Instruct (models/configs/falcon-7b-instruct) ship as public
repositories quote their config.json. GPT-NeoX and GPTBigCode are unchecked and read fixtures
(tests/data/configs/): pythia-6.9b-deduped, transformers' printed GPTNeoXConfig; gpt_bigcode-santacoder,
SantaCoder's config as an mlx port's test quotes it (models/configs/SOURCES.yaml says where)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_missing_field_refused, config_path, config_text, parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, ranks, weights

NAMES = ("phi-2", "falcon-7b-instruct", "pythia-6.9b-deduped", "gpt_bigcode-santacoder")
RELEASE = {"phi-2": "0.31.0", "pythia-6.9b-deduped": "0.31.0", "gpt_bigcode-santacoder": "0.24.0"}  # the last that build them


def data(name: str) -> dict:
    loaded: dict = json.loads(config_text(name))
    return loaded


def shape(name: str, **changes: object) -> hfconfig.Shape:
    return hfconfig.shape({**data(name), **changes}, name)


def layer(h: int, kv: int, ffn: int, tp: int = 1, norms: int = 2, bias: bool = True) -> int:
    """One rank's share of a layer of h-wide attention (q of h, k and v of kv each) and a plain MLP of
    ffn: the column-parallel matrices and their biases divided, the row-parallel biases and the
    LayerNorms (weight and bias) whole."""
    weights_ = h * (h + 2 * kv) // tp + h * h // tp + 2 * h * ffn // tp
    biases = (h + 2 * kv) // tp + h + ffn // tp + h if bias else 0
    return weights_ + biases + norms * 2 * h


def kv_token(layers: int, kv_heads: int, head_dim: int, tp: int) -> int:
    return layers * 2 * max(1, kv_heads // tp) * head_dim * 2


def request(name: str, tp: int, **changes: object) -> kvlayout.Request:
    return kvlayout.request(shape(name, **changes), kvlayout.Settings(tp=tp), 2048, kvlayout.version(RELEASE.get(name)))


# --- Phi-2 ------------------------------------------------------------------------------------------


def test_phi_2_meets_its_published_size() -> None:
    """2,779,683,840 parameters, Phi-2's 2.7B (its model card, huggingface.co/microsoft/phi-2): a parallel
    block of one biased LayerNorm, biased q/k/v, dense, fc1 and fc2 of 4 x 2,560, an untied lm_head with a
    bias; the rope turns 0.4 of each 80-wide head (32)."""
    s = shape("phi-2")
    assert (s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.parallel_block, s.lm_head_bias) == (32, 32, 80, False, True, True)
    total = 2 * 51200 * 2560 + 51200 + 2 * 2560 + 32 * layer(2560, 2560, 10240, norms=1)
    assert parameters(s) == total == 2_779_683_840
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(2048, 32)]
    assert hfconfig.unchecked_note("PhiForCausalLM") is None


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_phi_2_weights_and_kv_per_rank(tp: int) -> None:
    s = shape("phi-2")
    head = 2 * 51200 // tp * 2560 + 51200 // tp
    assert parameters(s, tp) == head + 2 * 2560 + 32 * layer(2560, 2560, 10240, tp, norms=1)
    assert request("phi-2", tp).bytes_per_token == kv_token(32, 32, 80, tp) == 32 * 2 * 32 // tp * 80 * 2


def test_phi_reads_as_phi_py_builds() -> None:
    """intermediate_size is not read (fc1 is n_inner, else 4 x hidden): another width is refused; so are
    fewer K and V heads, q/k LayerNorms and a tied head, which phi.py does not build. A missing
    partial_rotary_factor is PhiConfig's 0.5."""
    assert shape("phi-2", n_inner=10240).mlps == shape("phi-2").mlps
    for change, found in (({"intermediate_size": 8192}, "intermediate_size: found 8192"), ({"num_key_value_heads": 8}, "num_key_value_heads: found 8"),
                          ({"qk_layernorm": True}, "qk_layernorm: found True"), ({"tie_word_embeddings": True}, "tie_word_embeddings: found True")):  # fmt: skip
        with pytest.raises(hfconfig.ConfigError, match=found):
            shape("phi-2", **change)
    bare = {k: v for k, v in data("phi-2").items() if k != "partial_rotary_factor"}
    assert [r.rotary_dim for r in hfconfig.shape(bare, "phi-2").ropes] == [40]


# --- Falcon -----------------------------------------------------------------------------------------


def test_falcon_7b_counts_as_falcon_py_builds_it() -> None:
    """6,921,720,704 parameters, Falcon-7B's 7B (its model card): multi-query attention (one K and V head
    of 64; the config's num_kv_heads 71 is not read without new_decoder_architecture), no biases but the
    LayerNorms', one norm a parallel block, an MLP of 4 x 4,544, the head tied (FalconConfig's default)."""
    s = shape("falcon-7b-instruct")
    assert (s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.parallel_block, s.extra_norms) == (71, 1, 64, True, True, ())
    assert parameters(s) == 65024 * 4544 + 2 * 4544 + 32 * layer(4544, 64, 4 * 4544, norms=1, bias=False) == 6_921_720_704
    assert round(parameters(s) / 1e9) == 7
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(2048, 64)]
    assert "tie_word_embeddings true" in s.defaults[0]
    assert request("falcon-7b-instruct", 1).bytes_per_token == kv_token(32, 1, 64, 1) == 8192


FALCON_40B = {"hidden_size": 8192, "num_attention_heads": 128, "num_kv_heads": 8, "num_hidden_layers": 60, "new_decoder_architecture": True}


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16])
def test_falcon_new_decoder_architecture(tp: int) -> None:
    """Falcon-40B's dimensions (8,192 wide, 128 heads, 8 K and V heads, 60 layers) under
    new_decoder_architecture: num_kv_heads read, ln_attn and ln_mlp (num_ln_in_parallel_attn None is 2),
    the K and V heads divided, one a rank from TP 8 on."""
    s = shape("falcon-7b-instruct", **FALCON_40B)
    assert (s.kv_heads, s.extra_norms) == (8, ("ln_mlp",))
    assert parameters(s, tp) == 65024 // tp * 8192 + 2 * 8192 + 60 * layer(8192, 8 * 64 // min(tp, 8) * tp, 32768, tp, bias=False)
    assert request("falcon-7b-instruct", tp, **FALCON_40B).bytes_per_token == kv_token(60, 8, 64, tp)
    one = shape("falcon-7b-instruct", **FALCON_40B, num_ln_in_parallel_attn=1)
    assert one.extra_norms == () and parameters(s) - parameters(one) == 60 * 2 * 8192


def test_falcon_rw_takes_alibi_and_two_norms() -> None:
    """Falcon-RW's switches: no parallel_attn (input and post-attention norms), bias on every projection,
    K and V heads one a query head without multi_query, alibi instead of a rope."""
    s = shape("falcon-7b-instruct", parallel_attn=False, bias=True, multi_query=False, alibi=True)
    assert (s.kv_heads, s.parallel_block, s.attention_bias, s.output_bias, s.ropes) == (71, False, True, True, ())
    assert parameters(s) == 65024 * 4544 + 2 * 4544 + 32 * layer(4544, 4544, 4 * 4544)
    assert not shape("falcon-7b-instruct", tie_word_embeddings=False).tie_embeddings
    with pytest.raises(hfconfig.ConfigError, match="ffn_hidden_size: found 16384"):
        shape("falcon-7b-instruct", ffn_hidden_size=16384)


# --- Pythia 6.9B ------------------------------------------------------------------------------------


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_pythia_6_9b_meets_its_published_size(tp: int) -> None:
    """6,857,302,016 parameters, the Pythia model card's total for 6.9B: biased query_key_value and dense,
    a biased MLP of 16,384, two LayerNorms a layer whatever use_parallel_residual says, embed_out untied;
    the rope turns rotary_pct 0.25 of each 128-wide head. Everything divides over 1 to 8 ranks."""
    s = shape("pythia-6.9b-deduped")
    assert (s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == (32, 32, 128, False)
    assert parameters(s, tp) == 2 * 50432 // tp * 4096 + 2 * 4096 + 32 * layer(4096, 4096, 16384, tp)
    assert parameters(s) == 6_857_302_016
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(2048, 32)]
    assert request("pythia-6.9b-deduped", tp).bytes_per_token == kv_token(32, 32, 128, tp)
    assert shape("pythia-6.9b-deduped", use_parallel_residual=False).mlps == s.mlps
    assert parameters(shape("pythia-6.9b-deduped", attention_bias=False)) == 6_857_302_016 - 32 * (3 * 4096 + 4096)
    assert hfconfig.unchecked_note("GPTNeoXForCausalLM")
    saved = {k: v for k, v in data("pythia-6.9b-deduped").items() if k != "rotary_pct"}
    assert [r.rotary_dim for r in hfconfig.shape({**saved, "partial_rotary_factor": 0.5}, "pythia").ropes] == [64]


# --- SantaCoder -------------------------------------------------------------------------------------


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_santacoder_meets_its_published_size(tp: int) -> None:
    """1,124,886,528 parameters, SantaCoder's 1.1B: GPTBigCodeConfig's names (n_embd, n_head, n_layer,
    n_inner), one K and V head (multi_query), replicated on every rank, biased projections and
    LayerNorms, wte tied to the head and wpe, 2,048 learned positions, whole on every rank; no rope."""
    s = shape("gpt_bigcode-santacoder")
    assert (s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.position_table, s.ropes) == (16, 1, 128, True, 2048, ())
    per_layer = layer(2048, 128 * tp, 8192, tp)  # K and V whole on each rank: 128 wide each, tp times over before dividing
    assert parameters(s, tp) == 49280 // tp * 2048 + 2048 * 2048 + 2 * 2048 + 24 * per_layer
    assert parameters(s) == 1_124_886_528 and round(parameters(s) / 1e8) == 11
    assert request("gpt_bigcode-santacoder", tp).bytes_per_token == kv_token(24, 1, 128, tp) == 12288
    assert shape("gpt_bigcode-santacoder", multi_query=False).kv_heads == 16
    assert hfconfig.unchecked_note("GPTBigCodeForCausalLM")


# --- all four: releases, pipeline stages, bad input, the command line -------------------------------------


@pytest.mark.parametrize(("name", "last"), [("phi-2", "0.31"), ("pythia-6.9b-deduped", "0.31"), ("gpt_bigcode-santacoder", "0.24")])
def test_figured_with_the_same_layers_where_the_transformers_backend_serves_it(name: str, last: str) -> None:
    """Past its own code's last release the Transformers backend builds the class with vLLM's layers:
    the KV cache of that release's own code, the weights less its cos/sin cache, and a note that says so."""
    done = run_calc("model", str(config_path(name)), "--gpu", "h200", "--max-model-len", "2048", "--json")
    own = run_calc("model", str(config_path(name)), "--gpu", "h200", "--max-model-len", "2048", "--engine-version", f"{last}.0", "--json")
    assert done.returncode == own.returncode == 0, done.stderr
    backend, code = json.loads(done.stdout), json.loads(own.stdout)
    (note,) = [n for n in backend["notes"] if "Transformers backend" in n]
    assert f"as vLLM {last}'s own code lays them out" in note
    assert backend["kv_bytes_per_token"] == code["kv_bytes_per_token"]
    assert 0 <= code["weights_bytes_per_rank"] - backend["weights_bytes_per_rank"] < 64 * 2**20  # the rope's cos/sin cache alone


def test_pipeline_stages_place_the_position_table_on_each() -> None:
    """PP 2: 12 SantaCoder layers a stage; gpt_bigcode.py builds wpe on both."""
    r = modeled.model_report(modeled.ModelInputs(config_text("gpt_bigcode-santacoder"), tp=1, pp=2, max_model_len=2048, engine_version="0.24.0"))
    assert r.kv_bytes_per_token == kv_token(12, 1, 128, 1)
    for name, layers, kv_heads, head_dim in (("phi-2", 16, 32, 80), ("pythia-6.9b-deduped", 16, 32, 128)):
        r = modeled.model_report(modeled.ModelInputs(config_text(name), tp=2, pp=2, max_model_len=2048, engine_version="0.31.0"))
        assert r.kv_bytes_per_token == kv_token(layers, kv_heads, head_dim, 2)


def test_each_stage_builds_the_ends() -> None:
    """phi.py, falcon.py, gpt_neox.py and gpt_bigcode.py build the embedding, the final norm and the head
    on every stage (no PPMissingLayer): at PP 2 each of Phi-2's stages holds them beside its 16 layers,
    and its rope cache (2,048 x 32 x 2 B); SantaCoder's tied wte and its wpe sit on both stages too."""
    s = shape("phi-2")
    ends = 2 * 51200 * 2560 + 51200 + 2 * 2560
    each = (ends + 16 * layer(2560, 2560, 10240, norms=1)) * 2 + 2048 * 32 * 2
    assert ranks.stage_weights(s, weights.tensors(s), 2) == ((each, 0), (each, 0))
    s = shape("gpt_bigcode-santacoder")
    each = (49280 * 2048 + 2048 * 2048 + 2 * 2048 + 12 * layer(2048, 128, 8192)) * 2
    assert ranks.stage_weights(s, weights.tensors(s), 2) == ((each, 0), (each, 0))


FIELDS = {"phi-2": "hidden_size", "falcon-7b-instruct": "num_attention_heads", "pythia-6.9b-deduped": "intermediate_size",
          "gpt_bigcode-santacoder": "n_embd"}  # fmt: skip


@pytest.mark.parametrize("name", NAMES)
def test_a_missing_field_is_one_line_naming_it(name: str, tmp_path: Path) -> None:
    release = ["--engine-version", RELEASE[name]] if name in RELEASE else []
    assert_missing_field_refused(data(name), FIELDS[name], tmp_path, *release)


@pytest.mark.parametrize("name", NAMES)
def test_the_command_line_predicts_a_pool(name: str) -> None:
    release = ["--engine-version", RELEASE[name]] if name in RELEASE else []
    done = run_calc("model", str(config_path(name)), "--gpu", "h100-sxm", "--max-model-len", "auto", *release, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"] == data(name)["architectures"][0] and out["verdict"] and out["kv_bytes_per_token"] > 0
    assert out["weights_bytes_per_rank"] == weights.per_rank(shape(name), 1).model
