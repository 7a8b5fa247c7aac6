"""Gemma 3n (Gemma3nForConditionalGeneration, Gemma3nForCausalLM), read by vLLM's model code
(gemma3n.py, gemma3n_mm.py): the language model's count by hand, the KV cache with the KV-shared
layers holding none, the groups, and the command line.

No whole config.json of Gemma 3n E2B or E4B was found (models/configs/SOURCES.yaml says where was
looked), so both classes are unchecked and the tests read Gemma 3n E4B from a fixture
(tests/data/configs/gemma-3n-e4b/): the text fields a public test module quotes for it (code index
file 58141470368, repository not named: vocab 262,400, per-layer vocab 262,144, hidden 2,048, per-layer
hidden 256, intermediate 16,384, 35 layers, 8 heads, 2 KV heads of 256, window 512, laurel rank 64,
4 AltUp inputs, 15 KV-shared layers) nested under text_config, with "architectures" and
"model_type" added; layer_types, which the module writes as transformers' default, are left out and
filled as Gemma3nTextConfig fills them. The published totals (E4B 7.85B, E2B 5.4B) include the vision
and audio towers, which are not modeled, so they are not checked."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, multimodal, weights
from calc.units import InputError

CONFIG = Path(__file__).resolve().parent / "data" / "configs" / "gemma-3n-e4b" / "config.json"
NO_TOWERS = '{"image": 0, "audio": 0}'


def shape() -> hfconfig.Shape:
    return hfconfig.shape(json.loads(CONFIG.read_text()), "gemma-3n-e4b")


def text_only() -> hfconfig.Shape:
    """The language model alone, as a start that limits images and audio to 0 builds it (0.15.0 on)."""
    s, _ = multimodal.apply(shape(), multimodal.Settings(limits={"image": 0, "audio": 0}), (0, 33))
    return s


count = parameters


H, V, V_LAYER, HPL, L, N, RANK, INTER, D = 2048, 262400, 262144, 256, 35, 4, 64, 16384, 256
INPUTS = V * H + H + V_LAYER * L * HPL + L * HPL * H + HPL + 2 * (N - 1) * H * H  # tied embedding, final norm, per-layer inputs, AltUp in and out
COMMON = 5 * H + 3 * INTER * H + (N * N + N * N * N + N * H + 2 * H) + (2 * RANK * H + H) + 2 * HPL * H  # norms, MLP, AltUp, laurel, per-layer gate
OWN = 8 * D * H + 2 * 2 * D * H + H * 8 * D + 2 * D  # q, k, v, o, q_norm and k_norm (v_norm has no weight)
SHARED = 8 * D * H + H * 8 * D + D  # q_proj, o_proj and q_norm alone (0.30.0 on)
TEXT = INPUTS + 20 * (COMMON + OWN) + 15 * (COMMON + SHARED)


def test_gemma3n_e4b_language_model_count() -> None:
    """6,835,235,568 parameters as vLLM 0.30.0 and later build the language model; the checkpoint's
    shared layers also carry k_proj, v_proj and k_norm, 15 x 2,097,408 more (6,866,696,688), which
    vLLM drops. Both vocabularies are multiples of 64: no padding."""
    s = text_only()
    assert s.architecture == "Gemma3nForConditionalGeneration" and s.tower is None and s.tie_embeddings
    assert s.layers.count(hfconfig.SLIDING) == 16 and s.layers.count(hfconfig.FULL) == 4
    assert s.layers[20:].count(hfconfig.SHARED_SLIDING) == 12 and s.layers[20:].count(hfconfig.SHARED_FULL) == 3
    assert s.layers[19] == hfconfig.FULL and s.layers[18] == hfconfig.SLIDING  # the caches the shared layers read
    assert count(s) == TEXT == 6_835_235_568
    assert TEXT + 15 * (2 * 2 * D * H + D) == 6_866_696_688
    # the full and the sliding layers keep their own cos/sin caches (rope_theta and rope_local_base_freq)
    assert [(r.kind, r.positions, r.rotary_dim) for r in s.ropes] == [("full", 32768, 256), ("sliding", 32768, 256)]
    assert s.per_layer == hfconfig.PerLayerInputs(hidden=256, vocab=262144, altup=4, laurel=64)
    # Gemma 3n's layers (AltUp) need LAuReL's rank too: refused by name where it was not read, never a rank of 0
    with pytest.raises(ValueError, match="a Gemma 3n layer needs altup_num_inputs and laurel_rank"):
        weights.tensors(replace(s, per_layer=replace(s.per_layer, laurel=None)), 1)


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_gemma3n_splits_over_the_ranks(tp: int) -> None:
    """q, the MLP, laurel's linear_left and the AltUp projections divide; k and v hold max(1, 2 / TP)
    heads; the per-layer embedding is vocab-parallel; AltUp's coefficients, the router and the
    per-layer gate and projection are replicated, correct_output_scale in float32."""
    s = text_only()
    by = {t.path: t for t in weights.tensors(s, tp)}
    assert by["model.embed_tokens_per_layer"].rows == V_LAYER // tp and by["model.per_layer_model_projection"].rows == L * HPL // tp
    assert by["model.layers.0.self_attn.k_proj"].rows == max(1, 2 // tp) * D and by["model.layers.0.laurel.linear_left"].rows == RANK // tp
    assert by["model.layers.0.per_layer_input_gate"].rows == HPL and by["model.layers.0.altup.modality_router"].rows == N
    assert by["model.layers.0.altup.correct_output_scale"].dtype_bytes == 4
    assert "model.layers.20.self_attn.k_proj" not in by and by["model.layers.20.self_attn.q_proj"].rows == 8 * D // tp


def test_gemma3n_kv_holds_the_unshared_layers_alone() -> None:
    """The 15 KV-shared layers hold no cache (gpu_model_runner.py get_kv_cache_spec): 16 sliding and 4
    full layers, 2 KV heads of 256, 2 B. A token of the full layers 4 x 2 x 2 x 256 x 2 = 8,192 B;
    groups of 4 layers (the full layers' count): one full, four sliding; a page 16 x 2,048 B a layer.
    At 32,768 tokens and a budget of 2,048 (0.13.0, one batch in flight) a full group holds 2,048 pages,
    a sliding one cdiv(511 + 2,048, 16) + 1 = 161."""
    s = text_only()
    r = kvlayout.request(s, kvlayout.Settings(prefill_budget=2048), 32768, kvlayout.version("0.13.0"))
    assert r.bytes_per_token == 4 * 2 * 2 * 256 * 2 == 8192
    assert (len(r.layout.groups), r.layout.group_size, r.layout.page_bytes) == (5, 4, 16 * 2 * 2 * 256 * 2)
    assert r.pages_per_request == 2048 + 4 * 161
    assert r.bytes_per_request == (2048 + 4 * 161) * 4 * 16 * 2048
    assert kvlayout.request(s, kvlayout.Settings(tp=4), 32768, kvlayout.version(None)).bytes_per_token == 4 * 2 * 1 * 256 * 2
    assert kvlayout.request(s, kvlayout.Settings(kv_cache_dtype="fp8"), 32768, kvlayout.version(None)).bytes_per_token == 4 * 2 * 2 * 256


def test_gemma3n_for_causal_lm_reads_the_same_layers() -> None:
    """The text-only class over the same fields, top level: the same count, no towers, no limits needed."""
    data = json.loads(CONFIG.read_text())
    s = hfconfig.shape({**data["text_config"], "architectures": ["Gemma3nForCausalLM"]}, "gemma-3n-e4b-text")
    assert s.tower is None and count(s) == TEXT
    assert hfconfig.unchecked_note(s.architecture)


def test_gemma3n_refusals() -> None:
    """The towers are refused unless both limits leave them unbuilt (0.15.0 on); pipeline parallel is
    refused as vLLM refuses it (no SupportsPP); so is a shared range whose targets are not a full and,
    before it, a sliding layer."""
    s = shape()
    assert s.tower is not None and s.tower.kind == "gemma3n"
    with pytest.raises(InputError, match="not modeled"):
        weights.tensors(s, 1)
    partial, _ = multimodal.apply(s, multimodal.Settings(limits={"image": 0}), (0, 33))
    assert partial.tower is not None
    early, _ = multimodal.apply(s, multimodal.Settings(limits={"image": 0, "audio": 0}), (0, 13))
    assert early.tower is not None
    data = json.loads(CONFIG.read_text())
    data["text_config"]["num_kv_shared_layers"] = 14
    with pytest.raises(hfconfig.ConfigError, match="num_kv_shared_layers"):
        hfconfig.shape(data, "gemma-3n")
    with pytest.raises(InputError, match="SupportsPP"):
        modeled.model_report(
            modeled.ModelInputs(CONFIG.read_text(), tp=1, pp=2, max_model_len=32768, multimodal=multimodal.Settings(limits={"image": 0, "audio": 0}))
        )
    assert replace(s, tower=None).tower is None


@pytest.mark.parametrize(
    "args",
    [
        ["--tp", "1", "--max-model-len", "auto", "--gpu", "l4"],
        ["--tp", "2", "--max-model-len", "32768", "--gpu", "l4"],
        ["--tp", "4", "--max-model-len", "32768", "--gpu", "l4"],
        ["--tp", "8", "--max-model-len", "32768", "--kv-cache-dtype", "fp8", "--gpu", "h100-sxm"],
        ["--tp", "1", "--max-model-len", "32768", "--kv-cache-dtype", "fp8", "--gpu", "l4", "--engine-version", "0.19.0"],
    ],
)
def test_the_command_line_predicts_a_pool(args: list[str]) -> None:
    done = run_calc("model", str(CONFIG), *args, "--limit-mm-per-prompt", NO_TOWERS, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["architecture"] == "Gemma3nForConditionalGeneration"
    assert data["pool_bytes"] is None or data["pool_bytes"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tp", "1", "--pp", "2", "--limit-mm-per-prompt", NO_TOWERS], "SupportsPP"),
        (["--tp", "1"], "not modeled"),
        (["--tp", "1", "--limit-mm-per-prompt", NO_TOWERS, "--engine-version", "0.13.0"], "not modeled"),
    ],
)
def test_the_command_line_refuses_in_one_line(args: list[str], message: str) -> None:
    done = run_calc("model", str(CONFIG), *args, "--max-model-len", "32768", "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr and message in done.stderr
