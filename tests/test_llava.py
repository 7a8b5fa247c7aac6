"""LLaVA (LlavaForConditionalGeneration), read by vLLM's model code (llava.py, clip.py and the
language model text_config names): the parameter count against the published total, the KV cache a
token, the CLIP tower under tensor parallel and --limit-mm-per-prompt, the encoder profile, refused
input and the command line. llava-1.5-7b-hf is shipped (models/configs/SOURCES.yaml): its text_config
leaves Vicuna-7B's dimensions to LlamaConfig's defaults, which the reading takes and notes."""

from __future__ import annotations

import json

import pytest
from conftest import cli_json, config_path, config_shape, parameters

from calc.engine import hfconfig, kvlayout, multimodal, weights
from calc.units import InputError

LLAVA = "llava-1.5-7b-hf"

# --- llava-1.5-7b-hf: Vicuna-7B's 32 layers (LlamaConfig's defaults), CLIP ViT-L/14 at 336 to its 23rd layer ---

H, V, INNER = 4096, 32064, 11008  # 32,064 is a multiple of 64: no padding (vocab_parallel_embedding.py)
TEXT = 2 * V * H + H + 32 * (2 * H + 4 * H * H + 3 * INNER * H)  # embedding and head untied, the final norm; norms, q/k/v/o, the MLP
E, M = 1024, 4096
BLOCK = 2 * 2 * E + 3 * E * E + 3 * E + E * E + E + M * E + M + E * M + E  # two LayerNorms, qkv and out_proj, fc1 and fc2, with biases
EMBED = E + E * 3 * 14 * 14 + (24 * 24 + 1) * E + 2 * E  # class embedding, patch embedding (no bias), positions, pre_layrnorm
PROJECTOR = H * E + H + H * H + H  # linear_1 and linear_2 with biases (multimodal_projector_bias, LlavaConfig's default)


def test_llava_15_7b_meets_its_published_size() -> None:
    """llava-1.5-7b-hf: transformers counts 7,063,427,072 parameters in LlavaForConditionalGeneration
    built from this config (SOURCES.yaml). vLLM builds the CLIP tower up to vision_feature_layer -2,
    23 of its 24 layers, and no post_layernorm (llava.py init_vision_tower_for_llava,
    require_post_norm=False): one layer and one LayerNorm fewer, 7,050,828,800."""
    s = config_shape(LLAVA)
    assert (s.architecture, s.layers, s.hidden, s.heads, s.kv_heads, s.head_dim) == ("LlavaForConditionalGeneration", (hfconfig.FULL,) * 32, H, 32, 32, 128)
    assert not s.tie_embeddings and s.vocab == V and s.dtype_bytes == 2
    assert s.tower is not None
    assert (s.tower.kind, s.tower.depth, s.tower.positions, s.tower.out_hidden, s.tower.image_tokens) == ("clip", 23, 577, H, 576)
    assert parameters(s, tower=False) == TEXT == 6_738_939_904
    assert parameters(s, tower=True) == EMBED + 23 * BLOCK + PROJECTOR == 311_888_896
    assert parameters(s) + BLOCK + 2 * E == 7_063_427_072  # the checkpoint's 24th layer and post_layernorm, which vLLM leaves unloaded
    said = " ".join(s.defaults)
    for taken in ("LlamaConfig's defaults", "text_config.num_hidden_layers 32", "text_config.intermediate_size 11008",
                  "LlavaConfig's defaults in transformers 5.5.3: multimodal_projector_bias true", "CLIPVisionConfig's", "vision_config.num_channels 3"):  # fmt: skip
        assert taken in said


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_clip_and_the_projector_split_over_the_ranks(tp: int) -> None:
    """16 heads divide over 1, 2 and 4 ranks: qkv and fc1 by rows, out_proj and fc2 by columns, the
    projector's linear_1 by rows and linear_2 by columns; norms, embeddings and row-parallel biases whole."""
    s = config_shape(LLAVA)
    assert s.tower is not None
    by = {t.path: t for t in weights.tower_tensors(s.tower, tp)}
    layer = "vision_tower.vision_model.encoder.layers.0"
    assert (by[f"{layer}.attn.qkv"].rows, by[f"{layer}.attn.proj"].cols, by[f"{layer}.mlp.fc1"].rows, by[f"{layer}.mlp.fc2"].cols) == (
        3 * E // tp, E // tp, M // tp, M // tp)  # fmt: skip
    assert (by["multi_modal_projector.linear_1"].rows, by["multi_modal_projector.linear_2"].cols, by["multi_modal_projector.linear_2.bias"].rows) == (
        H // tp, H // tp, H)  # fmt: skip
    assert "vision_tower.vision_model.encoder.layers.22.mlp.fc2" in by and "vision_tower.vision_model.encoder.layers.23.mlp.fc2" not in by
    assert not any("post_layernorm" in path for path in by)


def test_a_tp_that_does_not_divide_clips_heads_is_refused() -> None:
    """clip.py CLIPAttention divides the 16 heads over the ranks (divide(num_heads, tp_size)): 3 ranks
    fail to load, and LLaVA's --mm-encoder-tp-mode data falls back to weights (tests/test_multimodal.py)."""
    s = config_shape(LLAVA)
    assert s.tower is not None
    with pytest.raises(InputError, match="16 heads.*clip.py CLIPAttention"):
        weights.tower_tensors(s.tower, 3)


def test_llava_kv_a_token() -> None:
    """32 layers x K and V x 32 KV heads x 128 x 2 bytes (float16); fp8 at TP 2 halves both."""
    s = config_shape(LLAVA)
    assert kvlayout.request(s, kvlayout.Settings(), 4096, kvlayout.version(None)).bytes_per_token == 32 * 2 * 32 * 128 * 2 == 524288
    assert kvlayout.request(s, kvlayout.Settings(tp=2, kv_cache_dtype="fp8"), 4096, kvlayout.version(None)).bytes_per_token == 32 * 2 * 16 * 128


def test_llava_encoder_profile_and_the_image_limit() -> None:
    """One image is 576 tokens (CLIP's (336 / 14)^2 patches, the class token dropped under the
    'default' select strategy: llava.py get_num_image_tokens); budget max(8,192, 576), items
    min(8,192 // 576, 256 x min(999, 4,096 // 576)) = 14, their outputs 576 x 4,096 wide. The tower
    sees 577 positions an image, 576 of them patches of pixels. With no image allowed, llava.py leaves the tower and projector
    unbuilt from 0.10.1.1 (its own __init__); an older release builds them."""
    s = config_shape(LLAVA)
    p = multimodal.encoder_profile(s, multimodal.Settings(), 8192, 256, 4096, (0, 33))
    assert p is not None
    assert (p.budget_tokens, p.items, p.tokens_per_item, p.held_bytes, p.patches) == (8192, 14, 576, 14 * 576 * H * 2, 14 * 577)
    per_position = E * 2 + max((E + 4 * E + E) * 2, (E + 2 * M) * 2)  # the residual and the MLP's peak, above the attention's
    assert p.forward_bytes == 14 * 577 * per_position + 14 * 576 * 3 * 14 * 14 * 2  # and the pixels of 576 patches an image
    zero = multimodal.Settings(limits={"image": 0})
    for rel in ((0, 10), (0, 13), (0, 33)):
        assert multimodal.apply(s, zero, rel)[0].tower is None
    assert multimodal.apply(s, zero, (0, 8))[0].tower is not None


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda c: c.pop("vision_config"), "vision_config"),
        (lambda c: c.pop("text_config"), "text_config"),
        (lambda c: c.update(vision_feature_select_strategy="cls"), "vision_feature_select_strategy"),
        (lambda c: c["vision_config"].update(model_type="siglip_vision_model"), "vision_config.model_type"),
        (lambda c: c.update(vision_feature_layer=-30), "vision_feature_layer"),
        (lambda c: c["text_config"].update(architectures=["Qwen2ForCausalLM"]), "text_config.architectures[0]"),
        (lambda c: c["text_config"].update(num_attention_heads="32"), "text_config.num_attention_heads"),
    ],
)
def test_a_config_llava_cannot_read_is_refused_by_name(edit, field: str) -> None:  # type: ignore[no-untyped-def]
    config = json.loads(config_path(LLAVA).read_text())
    edit(config)
    with pytest.raises(hfconfig.ConfigError, match=field.replace("[", r"\[").replace("]", r"\]")):
        hfconfig.shape(config, "config.json")


def test_the_command_line_reads_llava(capsys: pytest.CaptureFixture[str]) -> None:
    data = cli_json(["model", str(config_path(LLAVA)), "--tp", "2", "--gpu", "l4", "--max-model-len", "4096", "--json"], capsys)
    assert data["architecture"] == "LlavaForConditionalGeneration"
    assert data["verdict"] and data["tower"]["blocks"] == 23
    assert data["pool_bytes"] is None or data["pool_bytes"] > 0
