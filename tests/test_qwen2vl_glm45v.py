"""Qwen2-VL (Qwen2VLForConditionalGeneration) and GLM-4.5V (Glm4vMoeForConditionalGeneration), read
by vLLM's model code: the parameter counts against the published totals, the KV cache a token and a
request, the groups, the vision tower under tensor parallel, the encoder profile and the command
line. Both configs are shipped (models/configs/SOURCES.yaml): Qwen2-VL-7B-Instruct as a MindSpore
port quotes it, GLM-4.5V as a model report prints it beside its checkpoint's parameter total.
No whole config.json of Qwen2-VL-2B or -72B was found, so their published sizes are not checked.

GLM-4.1V (Glm4vForConditionalGeneration) has no whole config.json at a citable address: its class is
unchecked, and the tests read GLM-4.1V-9B-Thinking from a fixture (tests/data/configs/): the text
fields a public test module quotes as GLM-4.1V's (code index file 54636794657, repository not
named), the vision fields another quotes (54872200264: depth 24, hidden 1,536, 12 heads, image 336,
out_hidden_size 4,096, intermediate 13,696), with "architectures" and "model_type" added (the class
transformers and vLLM register for model_type glm4v); fields left out are transformers'
Glm4vTextConfig defaults (max_position_embeddings 32,768, where the model card gives 64K)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import config_path, config_shape, config_text, parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, multimodal, weights
from calc.units import InputError

CONFIGS = Path(__file__).resolve().parent.parent / "models" / "configs"
QWEN, GLM, GLM41 = "qwen2-vl-7b-instruct", "glm-4.5v", "glm-4.1v-9b-thinking"


path, text, shape = config_path, config_text, config_shape


count = parameters


# --- Qwen2-VL-7B-Instruct: Qwen2's 28 layers and a 32-block tower of 1,280 ---

H = 3584
Q_LAYER = 2 * H + (H + 2 * 512) * H + (H + 2 * 512) + H * H + 3 * 18944 * H  # norms, q/k/v with biases, o_proj, the MLP
Q_TEXT = 2 * 152064 * H + H + 28 * Q_LAYER  # embedding and head untied, the final norm
E, M = 1280, 5120  # embed_dim and embed_dim x mlp_ratio 4
Q_BLOCK = 4 * E + 3 * E * E + 3 * E + E * E + E + M * E + M + E * M + E  # two LayerNorms, qkv and proj, fc1 and fc2, with biases
Q_TOWER = E * 3 * 2 * 14 * 14 + 32 * Q_BLOCK + 2 * E + 4 * E * 4 * E + 4 * E + H * 4 * E + H  # patch embedding (no bias), blocks, merger


def test_qwen2_vl_7b_meets_its_published_size() -> None:
    """Qwen2-VL-7B-Instruct: 8.29B parameters (the Hub's safetensors count). Counted as qwen2_vl.py
    builds it: 7,615,616,512 in the language model and 675,759,104 in the tower and merger,
    8,291,375,616 together."""
    s = shape(QWEN)
    assert (s.architecture, s.layers, s.heads, s.kv_heads, s.head_dim) == ("Qwen2VLForConditionalGeneration", (hfconfig.FULL,) * 28, 28, 4, 128)
    assert count(s, tower=False) == Q_TEXT == 7_615_616_512
    assert count(s, tower=True) == Q_TOWER == 675_759_104
    assert Q_TEXT + Q_TOWER == 8_291_375_616 and round((Q_TEXT + Q_TOWER) / 1e9, 2) == 8.29
    assert s.tower is not None and (s.tower.kind, s.tower.intermediate, s.tower.out_hidden, s.tower.image_tokens) == ("qwen2-vl", 5120, 3584, 16384)
    # M-RoPE keeps 4 x max_position_embeddings in its cos/sin cache (rotary_embedding/mrope.py)
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(4 * 32768, 128)]


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_qwen2_vl_tower_splits_over_the_ranks(tp: int) -> None:
    """16 heads divide over 1, 2 and 4 ranks: qkv, fc1 and the merger's mlp.0 are divided by rows,
    proj, fc2 and mlp.2 by columns; norms and row-parallel biases are whole. --mm-encoder-tp-mode
    data builds the whole tower on each rank."""
    s = shape(QWEN)
    assert s.tower is not None
    by = {t.path: t for t in weights.tower_tensors(s.tower, tp)}
    assert (by["visual.blocks.0.attn.qkv"].rows, by["visual.blocks.0.mlp.fc2"].cols, by["visual.merger.mlp.0"].rows) == (3 * E // tp, M // tp, 4 * E // tp)
    assert by["visual.merger.mlp.2.bias"].rows == H
    whole = sum(t.rows * t.cols for t in weights.tower_tensors(replace(s.tower, data_parallel=True), tp))
    assert whole == Q_TOWER
    r = modeled.model_report(modeled.ModelInputs(text(QWEN), tp=tp, max_model_len=32768))
    assert r.weights_bytes_per_rank == weights.per_rank(s, tp).model


def test_qwen2_vl_kv_a_token_and_a_request() -> None:
    """28 layers of 4 KV heads of 128, K and V, 2 B: 57,344 B a token at TP 1; one group of 28 full
    attention layers, a page 16 tokens x 28 layers x 2,048 B; a request of 32,768 tokens holds 2,048
    pages, 1.75 GiB. fp8 halves the token; TP 2 halves the heads."""
    s = shape(QWEN)
    for version in (None, "0.10.1.1", "0.13.0"):
        r = kvlayout.request(s, kvlayout.Settings(), 32768, kvlayout.version(version))
        assert r.bytes_per_token == 28 * 2 * 4 * 128 * 2 == 57344
        assert (len(r.layout.groups), r.layout.group_size, r.layout.page_bytes) == (1, 28, 16 * 2 * 4 * 128 * 2)
        assert (r.pages_per_request, r.bytes_per_request, r.fixed_bytes) == (2048, 2048 * 28 * 16 * 2048, 0)
    fp8 = kvlayout.request(s, kvlayout.Settings(tp=2, kv_cache_dtype="fp8"), 32768, kvlayout.version(None))
    assert fp8.bytes_per_token == 28 * 2 * 2 * 128 * 1


def test_qwen2_vl_encoder_profile() -> None:
    """The profile runs Qwen2.5-VL's rules (qwen2_vl.py's processing info, which qwen2_5_vl.py
    extends): the largest image 12,845,056 pixels over 28 x 28 a token, 16,384 tokens; a video of
    4 frames at that size at max_model_len 32,768 (2 x 32,768 // 16,384, at most 14), 2 x 16,384 =
    32,768 tokens, which beats the image. Budget max(8,192, 32,768); one item; its outputs 32,768 x
    3,584 x 2 B kept through the dummy pass. With video limited to 0: the image, 16,384 tokens.
    The forward at 0.33.0, a patch: the residual (1,280 x 2 B) and the attention's peak at its
    projection (qwen2_vl.py Qwen2VisionAttention.forward: the normed input, the fused qkv, the q and k
    copy and its rotation, the attention's output and the projection's, 10 x 1,280 x 2 B), above the
    MLP's (1,280 + 2 x 5,120) x 2 B; and its pixels 3 x 2 x 14 x 14 x 2 B."""
    s = shape(QWEN)
    p = multimodal.encoder_profile(s, multimodal.Settings(), 8192, 256, 32768, (0, 33))
    assert p is not None
    assert (p.budget_tokens, p.items, p.tokens_per_item, p.held_bytes) == (32768, 1, 32768, 32768 * 3584 * 2)
    assert (p.patches, p.forward_bytes) == (32768 * 4, 32768 * 4 * (1280 * 2 + 10 * 1280 * 2 + 3 * 2 * 14 * 14 * 2))
    image = multimodal.encoder_profile(s, multimodal.Settings(limits={"video": 0}), 8192, 256, 32768, (0, 33))
    assert image is not None and (image.budget_tokens, image.items, image.held_bytes) == (16384, 1, 16384 * 3584 * 2)
    zero = multimodal.Settings(limits={"image": 0, "video": 0})
    for rel in ((0, 10), (0, 33)):  # qwen2_vl.py tests the limit in its own __init__ from 0.10.1.1
        shape_without, notes = multimodal.apply(s, zero, rel)
        assert shape_without.tower is None and notes


def test_qwen2_vl_7b_at_tp8_is_refused_as_vllm_refuses_it() -> None:
    """28 attention heads do not divide over 8 ranks."""
    with pytest.raises(hfconfig.ConfigError, match="num_attention_heads"):
        weights.per_rank(shape(QWEN), 8)
    done = run_calc("model", str(CONFIGS / QWEN / "config.json"), "--tp", "8", "--max-model-len", "32768", "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "28 attention heads" in done.stderr


# --- GLM-4.5V: GLM-4.5-Air's 46 layers and a 24-block tower of 1,536 ---

G = 4096
G_ATTENTION = 2 * G + (12288 + 2 * 1024) * G + (12288 + 2 * 1024) + G * 12288  # norms, q/k/v with biases (96 and 8 heads of 128), o_proj
G_EXPERT = 3 * 1408 * G
G_MOE = 128 * G + 128 + 128 * G_EXPERT + G_EXPERT  # router and its correction bias, 128 experts, one shared
G_TEXT = 2 * 151552 * G + G + 46 * G_ATTENTION + 3 * 10944 * G + 45 * G_MOE  # layer 0 dense (first_k_dense_replace 1)
D, OUT, INNER = 1536, 4096, 10944
G_BLOCK = 2 * D + 3 * D * D + D * D + 3 * OUT * D  # RMSNorms, qkv and proj, gate_up and down of out_hidden_size; no biases
G_TOWER = (
    D * 3 * 2 * 14 * 14 + D + 576 * D  # patch embedding with bias, the position table of (336 / 14)^2
    + 24 * G_BLOCK + D + OUT * D * 4 + OUT + D  # blocks, post_conv_layernorm, downsample (2 x 2, with bias), post_layernorm
    + OUT * OUT + 2 * OUT + 3 * INNER * OUT  # merger: proj, the LayerNorm, gate_up and down
)  # fmt: skip


def test_glm_45v_meets_its_checkpoints_total() -> None:
    """GLM-4.5V: 106B parameters, 12B active (the model card), and 107,710,933,120 in its 46
    safetensors files (the model report the config comes from). Counted as glm4_1v.py and
    glm4_moe.py build it: 106,852,251,264 in the language model and 858,681,856 in the tower, the
    checkpoint's total to the parameter. A token runs 8 of the 128 experts: 13.42B active with the
    embedding and head, 12.18B without them."""
    s = shape(GLM)
    assert (s.architecture, len(s.layers), s.heads, s.kv_heads, s.head_dim, s.attention_bias) == ("Glm4vMoeForConditionalGeneration", 46, 96, 8, 128, True)
    assert count(s, tower=False) == G_TEXT == 106_852_251_264
    assert count(s, tower=True) == G_TOWER == 858_681_856
    assert G_TEXT + G_TOWER == 107_710_933_120
    active = G_TEXT - 45 * 120 * G_EXPERT
    assert (round(active / 1e9, 2), round((active - 2 * 151552 * G) / 1e9, 2)) == (13.42, 12.18)
    assert s.drafter_layers == 0  # the printed config names no MTP layer, and the checkpoint holds none
    # partial_rotary_factor 0.5: 64 of 128 dimensions rotate; M-RoPE keeps 4 x 65,536 positions
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(4 * 65536, 64)]


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_glm_45v_tower_under_tp(tp: int) -> None:
    """12 heads divide over 1, 2 and 4 ranks: qkv, gate_up and the merger's proj and gate_up are
    divided by rows, proj and the down projections by columns; norms, the patch embedding, the
    position table and the downsample are whole."""
    s = shape(GLM)
    assert s.tower is not None and weights.tower_split(s.tower, tp) == tp
    by = {t.path: t for t in weights.tower_tensors(s.tower, tp)}
    assert (by["visual.blocks.0.attn.qkv"].rows, by["visual.blocks.0.mlp.gate_up_proj"].rows, by["visual.merger.down_proj"].cols) == (
        3 * D // tp,
        2 * OUT // tp,
        INNER // tp,
    )
    assert (by["visual.downsample"].rows, by["visual.embeddings.position_embedding"].rows) == (OUT, 576)
    whole = sum(t.rows * t.cols for t in weights.tower_tensors(replace(s.tower, data_parallel=True), tp))
    assert whole == G_TOWER


def test_glm_45v_at_tp8_needs_the_data_parallel_tower() -> None:
    """12 heads do not divide over 8 ranks, and glm4_1v.py asks is_vit_use_data_parallel without the
    head count, so nothing falls back: Glm4vVisionAttention's dist_utils.divide(12, 8) stops the load.
    --mm-encoder-tp-mode data builds the tower whole on each rank; from 0.15.0 a limit of 0 images and
    videos leaves it out."""
    s = shape(GLM)
    assert s.tower is not None
    with pytest.raises(InputError, match="12 heads"):
        weights.per_rank(s, 8)
    done = run_calc("model", str(CONFIGS / GLM / "config.json"), "--tp", "8", "--max-model-len", "65536", "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "--mm-encoder-tp-mode data" in done.stderr
    data = multimodal.apply(s, multimodal.Settings("data"), (0, 33))[0]
    assert data.tower is not None and weights.tower_split(data.tower, 8) == 1
    assert count(data, 8, tower=True) == G_TOWER
    assert multimodal.apply(s, multimodal.Settings(limits={"image": 0, "video": 0}), (0, 15))[0].tower is None


def test_glm_45v_kv_a_token_and_a_request() -> None:
    """46 layers of 8 KV heads of 128: 188,416 B a token at TP 1, 23,552 at TP 8 (one head a rank);
    one group of 46 full-attention layers; a request of 65,536 tokens, 4,096 pages."""
    s = shape(GLM)
    one = kvlayout.request(s, kvlayout.Settings(), 65536, kvlayout.version(None))
    assert one.bytes_per_token == 46 * 2 * 8 * 128 * 2 == 188416
    eight = kvlayout.request(s, kvlayout.Settings(tp=8), 65536, kvlayout.version("0.13.0"))
    assert eight.bytes_per_token == 46 * 2 * 1 * 128 * 2 == 23552
    assert (len(eight.layout.groups), eight.layout.group_size, eight.pages_per_request) == (1, 46, 4096)
    assert eight.bytes_per_request == 4096 * 46 * 16 * 2 * 128 * 2
    fp8 = modeled.model_report(modeled.ModelInputs(text(GLM), tp=4, max_model_len=65536, kv_cache_dtype="fp8"))
    assert fp8.kv_bytes_per_token == 46 * 2 * 2 * 128 * 1


def test_glm_45v_encoder_profile_is_refused_in_words() -> None:
    """The largest image is the processor's, not the config's: no profile, and the report says so."""
    s = shape(GLM)
    assert multimodal.encoder_profile(s, multimodal.Settings(), 8192, 256, 65536) is None
    r = modeled.model_report(modeled.ModelInputs(text(GLM), tp=4, max_model_len=65536))
    assert any("GLM-4V vision tower's encoder profile" in n and "not modeled" in n for n in r.notes)
    # GLM-4V's model code tests --limit-mm-per-prompt only from 0.15.0 (_mark_tower_model)
    zero = multimodal.Settings(limits={"image": 0, "video": 0})
    assert multimodal.apply(s, zero, (0, 13))[0].tower is not None
    assert multimodal.apply(s, zero, (0, 15))[0].tower is None


@pytest.mark.parametrize(
    ("name", "args"),
    [
        (QWEN, ["--tp", "1", "--max-model-len", "auto", "--gpu", "l4"]),
        (QWEN, ["--tp", "2", "--max-model-len", "32768", "--gpu", "h100-sxm"]),
        (QWEN, ["--tp", "4", "--kv-cache-dtype", "fp8", "--max-model-len", "32768", "--gpu", "a100-80gb"]),
        (QWEN, ["--tp", "2", "--pp", "2", "--max-model-len", "auto", "--gpu", "l4"]),
        (QWEN, ["--tp", "2", "--max-model-len", "16384", "--gpu", "l4", "--engine-version", "0.11.0"]),
        (GLM, ["--tp", "4", "--max-model-len", "auto", "--gpu", "h100-sxm"]),
        (GLM, ["--tp", "8", "--max-model-len", "65536", "--kv-cache-dtype", "fp8", "--gpu", "h100-sxm", "--mm-encoder-tp-mode", "data"]),
        (GLM, ["--tp", "8", "--max-model-len", "auto", "--gpu", "h100-sxm", "--limit-mm-per-prompt", '{"image": 0, "video": 0}']),
        (GLM, ["--tp", "2", "--pp", "2", "--max-model-len", "auto", "--gpu", "h200"]),
        (GLM, ["--tp", "1", "--max-model-len", "auto", "--gpu", "h200"]),
        (GLM41, ["--tp", "1", "--max-model-len", "auto", "--gpu", "l4"]),
        (GLM41, ["--tp", "2", "--max-model-len", "32768", "--kv-cache-dtype", "fp8", "--gpu", "l4"]),
        (GLM41, ["--tp", "4", "--pp", "2", "--max-model-len", "auto", "--gpu", "a100-80gb"]),
        (GLM41, ["--tp", "8", "--max-model-len", "32768", "--gpu", "h100-sxm", "--mm-encoder-tp-mode", "data"]),
    ],
)
def test_the_command_line_predicts_a_pool(name: str, args: list[str]) -> None:
    done = run_calc("model", str(path(name)), *args, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["architecture"] in ("Qwen2VLForConditionalGeneration", "Glm4vMoeForConditionalGeneration", "Glm4vForConditionalGeneration")
    assert data["verdict"]
    assert data["pool_bytes"] is None or data["pool_bytes"] > 0


# --- GLM-4.1V-9B-Thinking (a fixture): GLM-4's 40 layers and the GLM-4V tower ---

T = 4096
T_LAYER = 4 * T + (T + 2 * 256) * T + (T + 2 * 256) + T * T + 3 * 13696 * T  # four norms, q/k/v with biases (2 KV heads), o_proj, the MLP
T_TEXT = 2 * 151552 * T + T + 40 * T_LAYER
T_TOWER = G_TOWER - 3 * INNER * OUT + 3 * 13696 * OUT  # GLM-4.5V's tower with the merger's intermediate_size 13,696


def test_glm_41v_counts_and_says_it_is_unchecked() -> None:
    """Counted as glm4_1v.py and glm4.py build it: 9,400,279,040 in the language model (published as
    9B) and 892,498,432 in the tower, 10,292,777,472 together. The class is unchecked, and the report
    says so."""
    s = shape(GLM41)
    assert (s.architecture, len(s.layers), s.kv_heads, s.head_dim, s.attention_bias) == ("Glm4vForConditionalGeneration", 40, 2, 128, True)
    assert s.extra_norms == ("post_self_attn_layernorm", "post_mlp_layernorm")
    assert count(s, tower=False) == T_TEXT == 9_400_279_040 and round(T_TEXT / 1e9) == 9
    assert count(s, tower=True) == T_TOWER == 892_498_432
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(4 * 32768, 64)]
    assert "Glm4vForConditionalGeneration" in hfconfig.UNCHECKED
    r = modeled.model_report(modeled.ModelInputs(text(GLM41), tp=2, max_model_len=32768))
    assert any(n.startswith("Glm4vForConditionalGeneration is read by vLLM's model code, but no real public config.json") for n in r.notes)


def test_glm_41v_kv_a_token_and_a_request() -> None:
    """40 layers of 2 KV heads of 128: 40,960 B a token at TP 1; from TP 2 one head a rank (at TP 4
    each is held twice), 20,480 B; one group of 40 layers, 2,048 pages at 32,768 tokens."""
    s = shape(GLM41)
    assert kvlayout.request(s, kvlayout.Settings(), 32768, kvlayout.version(None)).bytes_per_token == 40 * 2 * 2 * 128 * 2 == 40960
    for tp in (2, 4):
        r = kvlayout.request(s, kvlayout.Settings(tp=tp), 32768, kvlayout.version(None))
        assert r.bytes_per_token == 40 * 2 * 1 * 128 * 2
        assert (len(r.layout.groups), r.layout.group_size, r.pages_per_request) == (1, 40, 2048)
    with pytest.raises(InputError, match="12 heads"):
        weights.per_rank(s, 8)
