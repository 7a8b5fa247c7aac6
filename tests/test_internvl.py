"""InternVL (InternVLChatModel), read by vLLM's model code (internvl.py, intern_vit.py and the
language model llm_config names): the parameter count against the published total, the KV cache a
token and a request, the groups, the InternViT tower under tensor parallel and the command line.
Three configs are shipped (models/configs/SOURCES.yaml): InternVL3-1B (Qwen2.5-0.5B and InternViT-300M),
as a notebook prints it after loading the checkpoint, and InternVL2-8B (InternLM2.5-7B, InternViT-300M)
and InternVL2-26B (InternLM2-20B, InternViT-6B), as a serving project's module quotes them. No whole
config.json of InternVL3-8B, -38B or -78B was found, so their published sizes (7.94B, 38.4B) are not
checked; the HF-format InternVLForConditionalGeneration is vLLM's interns1.py, another tower, and is
refused."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, multimodal, weights

CONFIGS = Path(__file__).resolve().parent.parent / "models" / "configs"
CONFIG = CONFIGS / "internvl3-1b" / "config.json"


def shape(name: str = "internvl3-1b") -> hfconfig.Shape:
    return hfconfig.shape(json.loads((CONFIGS / name / "config.json").read_text()), name)


count = parameters


# --- InternVL3-1B: Qwen2.5-0.5B's 24 layers under llm_config, InternViT-300M's 24 blocks of 1,024 ---

H, V, V_PADDED = 896, 151674, 151680  # the vocabulary padded to a multiple of 64 (vocab_parallel_embedding.py)
LAYER = 2 * H + (H + 2 * 128) * H + (H + 2 * 128) + H * H + 3 * 4864 * H  # norms, q/k/v with biases (2 KV heads of 64), o_proj, the MLP
TEXT = 2 * V_PADDED * H + H + 24 * LAYER  # embedding and head untied, the final norm
E, M = 1024, 4096
BLOCK = 2 * 2 * E + 2 * E + 3 * E * E + 3 * E + E * E + E + M * E + M + E * M + E  # two LayerNorms, ls1 and ls2, qkv and proj, fc1 and fc2, with biases
EMBED = E + E * 3 * 14 * 14 + E + (32 * 32 + 1) * E  # class embedding, patch embedding with bias, positions (448 / 14)^2 + 1
MLP1 = 2 * 4 * E + H * 4 * E + H + H * H + H  # LayerNorm of 1,024 x (1 / 0.5)^2, two Linears with biases
TOWER = EMBED + 24 * BLOCK + MLP1


def test_internvl3_1b_meets_its_published_size() -> None:
    """InternVL3-1B: 0.9B parameters (InternViT-300M and Qwen2.5-0.5B). Counted as vLLM builds it:
    629,708,672 in the language model (the vocabulary padded by 6 rows to 151,680 in each of the
    embedding and the head: 629,697,920 unpadded) and 308,495,104 in the tower and mlp1,
    938,193,024 together as the checkpoint holds them."""
    s = shape()
    assert (s.architecture, s.layers, s.heads, s.kv_heads, s.head_dim, s.attention_bias) == ("InternVLChatModel", (hfconfig.FULL,) * 24, 14, 2, 64, True)
    assert not s.tie_embeddings and s.vocab == V
    assert count(s, tower=False) == TEXT == 629_708_672
    assert count(s, tower=True) == TOWER == 308_495_104
    raw = TEXT - 2 * (V_PADDED - V) * H + TOWER
    assert raw == 938_193_024 and round(raw / 1e9, 1) == 0.9
    assert s.tower is not None
    assert (s.tower.kind, s.tower.depth, s.tower.merge, s.tower.positions, s.tower.out_hidden) == ("internvit", 24, 2, 1025, 896)
    assert (s.tower.rms_norm, s.tower.qk_norm, s.tower.qkv_bias, s.tower.image_tokens) == (False, False, True, 0)
    # the dynamic rope of factor 2 stretches the cache: 32,768 x 2 positions of 64
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(65536, 64)]


@pytest.mark.parametrize("tp", [1, 2])
def test_internvit_splits_over_the_ranks(tp: int) -> None:
    """16 heads divide over 1 and 2 ranks: qkv and fc1 by rows, proj and fc2 by columns; norms, layer
    scales, row-parallel biases, the embeddings and mlp1 whole. --mm-encoder-tp-mode data builds the
    whole tower on each rank."""
    s = shape()
    assert s.tower is not None
    by = {t.path: t for t in weights.tower_tensors(s.tower, tp)}
    layer = "vision_model.encoder.layers.0"
    assert (by[f"{layer}.attn.qkv"].rows, by[f"{layer}.attn.proj"].cols, by[f"{layer}.mlp.fc1"].rows, by[f"{layer}.mlp.fc2"].cols) == (
        3 * E // tp,
        E // tp,
        M // tp,
        M // tp,
    )
    assert (by[f"{layer}.attn.proj.bias"].rows, by["mlp1.1"].rows, by["mlp1.1"].cols) == (E, H, 4 * E)
    whole = sum(t.rows * t.cols for t in weights.tower_tensors(replace(s.tower, data_parallel=True), tp))
    assert whole == TOWER
    r = modeled.model_report(modeled.ModelInputs(CONFIG.read_text(), tp=tp, max_model_len=32768))
    assert r.weights_bytes_per_rank == weights.per_rank(s, tp).model


def test_internvit_attention_stays_whole_where_its_heads_do_not_divide() -> None:
    """Heads that do not divide over the ranks: vLLM builds the attention whole on each rank
    (intern_vit.py InternParallelAttention with disable_tp, 0.33.0; InternSdpaAttention up to 0.13.0),
    while InternMLP is still divided. 16 heads over 3 ranks, the rule alone."""
    s = shape()
    assert s.tower is not None
    by = {t.path: t for t in weights.tower_tensors(s.tower, 3)}
    layer = "vision_model.encoder.layers.0"
    assert (by[f"{layer}.attn.qkv"].rows, by[f"{layer}.attn.proj"].cols, by[f"{layer}.mlp.fc1"].rows) == (3 * E, E, M // 3)
    qk = replace(s.tower, rms_norm=True, qk_norm=True, qkv_bias=False)
    by = {t.path: t for t in weights.tower_tensors(qk, 2)}
    assert (by[f"{layer}.norm1"].rows, by[f"{layer}.attn.q_norm"].rows, f"{layer}.attn.qkv.bias" in by) == (E, E, False)


def test_internvl3_1b_kv_a_token_and_a_request() -> None:
    """24 layers of 2 KV heads of 64, K and V, 2 B: 12,288 B a token at TP 1; one group of 24 full
    attention layers, a page 16 tokens x 2 x 2 x 64 x 2 B; a request of 32,768 tokens holds 2,048
    pages. TP 2 holds one KV head a rank; fp8 halves the token."""
    s = shape()
    for version in (None, "0.10.1.1", "0.13.0"):
        r = kvlayout.request(s, kvlayout.Settings(), 32768, kvlayout.version(version))
        assert r.bytes_per_token == 24 * 2 * 2 * 64 * 2 == 12288
        assert (len(r.layout.groups), r.layout.group_size, r.layout.page_bytes) == (1, 24, 16 * 2 * 2 * 64 * 2)
        assert (r.pages_per_request, r.bytes_per_request, r.fixed_bytes) == (2048, 2048 * 24 * 16 * 512, 0)
    assert kvlayout.request(s, kvlayout.Settings(tp=2), 32768, kvlayout.version(None)).bytes_per_token == 24 * 2 * 1 * 64 * 2
    assert kvlayout.request(s, kvlayout.Settings(kv_cache_dtype="fp8"), 32768, kvlayout.version(None)).bytes_per_token == 24 * 2 * 2 * 64


def test_internvl_max_model_len_and_encoder_profile() -> None:
    """auto: llm_config's max_position_embeddings 32,768 x the dynamic rope's factor 2 (vLLM reads
    llm_config as text_config). The encoder profile is not modeled, and the report says why; the tower
    is left out under a zero limit of images and videos from 0.15.0 only (_mark_tower_model)."""
    assert hfconfig.derived_max_model_len(json.loads(CONFIG.read_text()), (0, 33)).tokens == 65536
    s = shape()
    assert multimodal.encoder_profile(s, multimodal.Settings(), 8192, 256, 32768) is None
    r = modeled.model_report(modeled.ModelInputs(CONFIG.read_text(), tp=1, max_model_len=32768))
    assert any("InternViT vision tower's encoder profile" in n and "not modeled" in n for n in r.notes)
    zero = multimodal.Settings(limits={"image": 0, "video": 0})
    assert multimodal.apply(s, zero, (0, 13))[0].tower is not None
    assert multimodal.apply(s, zero, (0, 15))[0].tower is None


def test_other_internvl_language_models_and_the_hf_class_are_refused() -> None:
    """A language model other than Qwen2, Qwen3, Qwen3 MoE, Llama or InternLM2 under llm_config (Phi-3,
    InternVL 1.5's mini models) is not modeled; neither is InternVLForConditionalGeneration
    (interns1.py in vLLM)."""
    data = json.loads(CONFIG.read_text())
    data["llm_config"]["architectures"] = ["Phi3ForCausalLM"]
    with pytest.raises(hfconfig.ConfigError, match=r"llm_config\.architectures\[0\].*InternLM2ForCausalLM"):
        hfconfig.shape(data, "internvl")
    data["architectures"] = ["InternVLForConditionalGeneration"]
    with pytest.raises(hfconfig.ConfigError, match="architectures"):
        hfconfig.shape(data, "internvl")


@pytest.mark.parametrize(
    "args",
    [
        ["--tp", "1", "--max-model-len", "auto", "--gpu", "l4"],
        ["--tp", "2", "--max-model-len", "32768", "--gpu", "l4"],
        ["--tp", "1", "--kv-cache-dtype", "fp8", "--max-model-len", "32768", "--gpu", "l4"],
        ["--tp", "2", "--pp", "2", "--max-model-len", "auto", "--gpu", "l4"],
        ["--tp", "2", "--max-model-len", "16384", "--gpu", "l4", "--engine-version", "0.10.1.1"],
        ["--tp", "2", "--max-model-len", "32768", "--gpu", "l4", "--mm-encoder-tp-mode", "data"],
    ],
)
def test_the_command_line_predicts_a_pool(args: list[str]) -> None:
    done = run_calc("model", str(CONFIG), *args, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["architecture"] == "InternVLChatModel"
    assert data["pool_bytes"] is None or data["pool_bytes"] > 0


@pytest.mark.parametrize("tp", ["4", "8"])
def test_internvl3_1b_at_tp_4_and_8_is_refused_as_vllm_refuses_it(tp: str) -> None:
    """14 attention heads do not divide over 4 or 8 ranks."""
    done = run_calc("model", str(CONFIG), "--tp", tp, "--max-model-len", "32768", "--json")
    assert done.returncode == 2 and "Traceback" not in done.stderr and "14 attention heads" in done.stderr


# --- InternVL2-8B and -26B: InternLM2 under llm_config; InternViT-300M and InternViT-6B ---


def internlm2(h: int, inter: int, layers: int, kv_heads: int) -> int:
    """InternLM2 as internlm2.py builds it: Llama's layers without biases (head_dim 128), untied."""
    layer = 2 * h + (h + 2 * kv_heads * 128) * h + h * h + 3 * inter * h
    return 2 * 92608 * h + h + layers * layer  # 92,553 tokens padded to 92,608


VIT_6B_BLOCK = 2 * 3200 + 2 * 3200 + 3 * 3200 * 3200 + 3200 * 3200 + 3200 + 2 * 3200 + 2 * 12800 * 3200 + 12800 + 3200
VIT_6B = 3200 + 3200 * 3 * 14 * 14 + 3200 + 1025 * 3200 + 45 * VIT_6B_BLOCK  # RMSNorms, q_norm and k_norm, no qkv bias


def mlp1(vit: int, h: int) -> int:
    return 2 * 4 * vit + h * 4 * vit + h + h * h + h


@pytest.mark.parametrize(
    ("name", "text", "tower", "published"),
    [
        ("internvl2-8b", internlm2(4096, 14336, 32, 8), EMBED + 24 * BLOCK + mlp1(1024, 4096), 8.08e9),
        ("internvl2-26b", internlm2(6144, 16384, 48, 8), VIT_6B + mlp1(3200, 6144), 25.5e9),
    ],
)
def test_internvl2_meets_its_published_size(name: str, text: int, tower: int, published: float) -> None:
    """InternVL2-8B: 7,738,232,832 in the language model and 337,583,104 in the tower and mlp1,
    8,075,365,376 unpadded (published as 8.08B); InternVL2-26B: 19,861,936,128 and 5,652,925,824,
    25,514,186,112 unpadded (published as 25.5B)."""
    s = shape(name)
    assert (s.architecture, s.attention_bias, s.output_bias, s.tie_embeddings) == ("InternVLChatModel", False, False, False)
    assert count(s, tower=False) == text and count(s, tower=True) == tower
    h = s.hidden
    raw = text + tower - 2 * (92608 - 92553) * h
    assert raw == {"internvl2-8b": 8_075_365_376, "internvl2-26b": 25_514_186_112}[name]
    assert abs(raw - published) < 0.005 * published


@pytest.mark.parametrize("tp", [2, 4, 8])
def test_internvit_6b_keeps_its_attention_whole(tp: int) -> None:
    """InternViT-6B's 25 heads divide over no TP above 1: qkv, proj, q_norm and k_norm whole on every
    rank, the MLP divided; the language model's 48 heads and 8 KV heads divide as usual."""
    s = shape("internvl2-26b")
    assert s.tower is not None
    by = {t.path: t for t in weights.tower_tensors(s.tower, tp)}
    layer = "vision_model.encoder.layers.0"
    assert (by[f"{layer}.attn.qkv"].rows, by[f"{layer}.attn.proj"].cols, by[f"{layer}.attn.q_norm"].rows) == (3 * 3200, 3200, 3200)
    assert (by[f"{layer}.mlp.fc1"].rows, by[f"{layer}.mlp.fc2"].cols, by[f"{layer}.norm1"].rows) == (12800 // tp, 12800 // tp, 3200)
    assert weights.tower_split(s.tower, tp) == 1
    r = kvlayout.request(s, kvlayout.Settings(tp=tp), 32768, kvlayout.version(None))
    assert r.bytes_per_token == 48 * 2 * (8 // tp) * 128 * 2


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("internvl2-26b", ["--tp", "2", "--max-model-len", "auto", "--gpu", "a100-80gb"]),
        ("internvl2-26b", ["--tp", "8", "--max-model-len", "32768", "--kv-cache-dtype", "fp8", "--gpu", "l4"]),
        ("internvl2-26b", ["--tp", "2", "--pp", "2", "--max-model-len", "32768", "--gpu", "l4"]),
        ("internvl2-26b", ["--tp", "4", "--max-model-len", "32768", "--gpu", "l4", "--engine-version", "0.10.1.1"]),
        ("internvl2-8b", ["--tp", "1", "--max-model-len", "auto", "--gpu", "l4"]),
        ("internvl2-8b", ["--tp", "4", "--max-model-len", "32768", "--gpu", "l4", "--mm-encoder-tp-mode", "data"]),
    ],
)
def test_internvl2_command_line_predicts_a_pool(name: str, args: list[str]) -> None:
    done = run_calc("model", str(CONFIGS / name / "config.json"), *args, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["architecture"] == "InternVLChatModel"
