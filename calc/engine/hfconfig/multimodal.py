"""The multimodal wrappers: the classes that hold a vision tower (WITH_VISION), the tower and projector
read from vision_config (_tower), and the language models of Gemma 3n (_gemma3n) and Gemma 4 (_gemma4). The language models of LLaVA
and InternVL are read by the class they name, through the table (registry.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calc.engine.hfconfig.core import (
    _GEMMA_NORMS,
    _MISSING,
    _SLIDING_OR_FULL,
    FULL,
    MAX_DIMENSION,
    MAX_LAYERS,
    SHARED_FULL,
    SHARED_SLIDING,
    SLIDING,
    ConfigError,
    Mlp,
    PerLayerInputs,
    Said,
    Tower,
    _common,
    _layer_types,
    _Reader,
    as_flag,
)
from calc.engine.hfconfig.defaults import _CLIP_VISION, _LLAMA, _LLAVA_TOP, _MISTRAL

# LLaVA (llava.py, LlavaForConditionalGeneration, registered in every release read, 0.8.5 to 0.33.0): the language model is the class
# text_config names, or its model_type's causal LM (vllm/config/vllm.py with_hf_config:
# MODEL_FOR_CAUSAL_LM_MAPPING_NAMES), read here by that class's reader. LLaVA-NeXT (llava_next.py) adds
# image_newline and its anyres tiles; no whole public config.json of it was found, so it is not read.
LLAVA = ("LlavaForConditionalGeneration",)
_LLAVA_TEXT_CLASSES = {"llama": ("LlamaConfig", _LLAMA), "mistral": ("MistralConfig", _MISTRAL)}
_LLAVA_TEXT = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM"}
# Multimodal wrappers: the language model from text_config, the vision tower from vision_config (Tower).
WITH_VISION = LLAVA + ("Gemma3ForConditionalGeneration", "Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "Qwen3VLForConditionalGeneration",
               "Qwen3VLMoeForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration", "Mistral3ForConditionalGeneration",
               "Llama4ForConditionalGeneration", "Qwen2VLForConditionalGeneration", "Glm4vMoeForConditionalGeneration",
               "Glm4vForConditionalGeneration", "InternVLChatModel", "Gemma3nForConditionalGeneration", "KimiK25ForConditionalGeneration",
               "Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration")  # fmt: skip

# Kimi K2.5's MoonViT: the fields vLLM builds it from and what its config class fills in where they are absent
# (vllm/transformers_utils/configs/kimi_k25.py KimiK25VisionConfig, 0.15.0 to 0.31.0; transformers'
# Kimi_K25VisionConfig from 0.32.0, the same values), beside the names the published checkpoints write them under
# (the remote code's vt_* fields, which neither class reads)
_MOONVIT = (("hidden_size", "vt_hidden_size", 1152), ("intermediate_size", "vt_intermediate_size", 4304),
            ("num_hidden_layers", "vt_num_hidden_layers", 27), ("num_attention_heads", "vt_num_attention_heads", 16))  # fmt: skip


# The most tokens one image gives the language model, as vLLM's processors size the dummy image of the
# encoder profile: Qwen2.5-VL's preprocessor_config.json max_pixels 12,845,056 over 28 x 28 pixels a
# token (a public v0.11.0 start prints "Encoder cache will be initialized with a budget of 16384
# tokens"); Qwen3-VL's longest_edge 16,777,216 over 32 x 32; Pixtral's image_size over patch x merge
# a side, one break token a row (mistral3.py, get_num_image_tokens); Gemma 3's mm_tokens_per_image.
# Qwen2-VL's processor has the same max_pixels (a public quote of its preprocessor_config.json,
# Qwen2VLImageProcessor: "max_pixels": 12845056, code index file 46628936662).
_IMAGE_TOKENS = {"qwen3-vl": 16777216 // (32 * 32), "qwen2.5-vl": 12845056 // (28 * 28), "qwen2-vl": 12845056 // (28 * 28)}


def _tower(data: dict[str, Any], file: str, arch: str, text_hidden: int, filled: list[_Reader] | None = None) -> Tower:
    """The vision tower of a multimodal wrapper, from its vision_config (`filled` gathers the
    readers that took a transformers class's defaults, for the shape's notes)."""
    if arch in LLAVA:
        return _llava_tower(data, file, arch, text_hidden, filled if filled is not None else [])
    if arch.startswith("Gemma3n"):  # not read: its tensors are refused (weights.py), its profile not modeled
        return Tower("gemma3n", 0, 0, 0, 1, 1, out_hidden=text_hidden, modalities=("image", "audio"))
    if arch.startswith("Gemma4Unified"):
        return _gemma4_unified(data, file, text_hidden)
    if arch.startswith("Gemma4"):  # likewise; the audio tower only where the config has an audio_config (gemma4_mm.py, 0.19.0 to 0.33.0)
        audio = ("audio",) if data.get("audio_config") is not None else ()
        return Tower("gemma4", 0, 0, 0, 1, 1, out_hidden=text_hidden, modalities=("image", "video", *audio))
    vision = data.get("vision_config")
    if vision is None and arch.startswith("Llama4"):
        # Llama4Config fills a missing vision_config with Llama4VisionConfig's defaults (transformers 5.5.3), a tower of
        # its own dimensions, not the checkpoint's: sized only where the limits leave it unbuilt (weights.py refuses it)
        return Tower("llama4-default", 0, 0, 0, 1, 1, out_hidden=text_hidden)
    if not isinstance(vision, dict):
        raise ConfigError(file, "vision_config", vision if vision is not None else _MISSING, "an object describing the vision tower")
    v = _Reader(vision, file, "vision_config.")
    if arch.startswith(("Qwen3VL", "Qwen3_5")):
        deep = v.get("deepstack_visual_indexes", [])
        if not isinstance(deep, list):
            raise ConfigError(file, "vision_config.deepstack_visual_indexes", deep, "a list of layer indexes")
        return Tower("qwen3-vl", v.int("hidden_size"), v.int("intermediate_size"), v.int("depth", maximum=MAX_LAYERS), v.int("num_heads"),
                     v.int("patch_size"), v.int("in_channels", 3), v.int("temporal_patch_size", 2), v.int("out_hidden_size"),
                     v.int("spatial_merge_size", 2), v.int("num_position_embeddings"), len(deep), True, ("image", "video"),
                     _IMAGE_TOKENS["qwen3-vl"])  # fmt: skip
    if arch.startswith("Qwen2_5_VL"):
        return Tower("qwen2.5-vl", v.int("hidden_size"), v.int("intermediate_size"), v.int("depth", maximum=MAX_LAYERS), v.int("num_heads"),
                     v.int("patch_size"), v.int("in_channels", v.int("in_chans", 3)), v.int("temporal_patch_size", 2), v.int("out_hidden_size"),
                     v.int("spatial_merge_size", 2), 0, 0, True, ("image", "video"), _IMAGE_TOKENS["qwen2.5-vl"])  # fmt: skip
    if arch.startswith("Qwen2VL"):
        # Qwen2VisionTransformer: blocks of embed_dim, an MLP of int(embed_dim x mlp_ratio); the merger
        # writes vision_config.hidden_size (qwen2_vl.py: self.out_hidden_size = vision_config.hidden_size)
        embed, ratio = v.int("embed_dim"), v.get("mlp_ratio", _MISSING)
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0:
            raise ConfigError(file, "vision_config.mlp_ratio", ratio, "a number above zero")
        return Tower("qwen2-vl", embed, int(embed * ratio), v.int("depth", maximum=MAX_LAYERS), v.int("num_heads"), v.int("patch_size"),
                     v.int("in_channels", v.int("in_chans", 3)), v.int("temporal_patch_size", 2), v.int("hidden_size"),
                     v.int("spatial_merge_size", 2), 0, 0, True, ("image", "video"), _IMAGE_TOKENS["qwen2-vl"])  # fmt: skip
    if arch.startswith("Glm4v"):
        # The encoder profile is not modeled (image_tokens 0): the largest image is the processor's
        # size.longest_edge (preprocessor_config.json, glm4_1v.py get_image_size_with_most_features), not the config's.
        patch = v.int("patch_size")
        return Tower("glm4v", v.int("hidden_size"), v.int("intermediate_size"), v.int("depth", maximum=MAX_LAYERS), v.int("num_heads"), patch,
                     v.int("in_channels", 3), v.int("temporal_patch_size", 2), v.int("out_hidden_size"), v.int("spatial_merge_size", 2),
                     (v.int("image_size") // patch) ** 2, modalities=("image", "video"))  # fmt: skip
    if arch.startswith("KimiK25"):
        return _moonvit(vision, v, file, text_hidden)
    top = _Reader(data, file)
    if arch == "InternVLChatModel":
        return _internvit(data, v, top, file, text_hidden)
    if arch.startswith("Llama4"):
        # The encoder profile is not modeled (image_tokens 0): the most tiles an image is cut into is the
        # processor's max_patches (preprocessor_config.json, mllama4.py get_max_num_tiles), not the config's.
        patch, image = v.int("patch_size"), v.int("image_size")
        if v.flag("multi_modal_projector_bias", False):
            raise ConfigError(file, "vision_config.multi_modal_projector_bias", True, "false: the adapter's biases are not modeled")
        return Tower("llama4", v.int("hidden_size"), v.int("intermediate_size"), v.int("num_hidden_layers", maximum=MAX_LAYERS),
                     v.int("num_attention_heads"), patch, v.int("num_channels", 3), 1, text_hidden, 1, (image // patch) ** 2 + 1,
                     adapter=(v.int("projector_input_dim"), v.int("projector_output_dim"), v.int("vision_output_dim")))  # fmt: skip
    if arch.startswith("Gemma3"):
        patch, image = v.int("patch_size"), v.int("image_size")
        return Tower("siglip", v.int("hidden_size"), v.int("intermediate_size"), v.int("num_hidden_layers", maximum=MAX_LAYERS),
                     v.int("num_attention_heads"), patch, v.int("num_channels", 3), 1, text_hidden, 1, (image // patch) ** 2,
                     image_tokens=top.int("mm_tokens_per_image", 256))  # fmt: skip
    # Mistral 3: the tower built up to the deepest vision_feature_layer (mistral3.py, _get_num_hidden_layers)
    layers, feature = v.int("num_hidden_layers", maximum=MAX_LAYERS), data.get("vision_feature_layer", -1)
    if isinstance(feature, bool) or not isinstance(feature, int) or not -layers <= feature <= layers:
        raise ConfigError(file, "vision_feature_layer", feature, f"a layer index from {-layers} to {layers}")
    patch, merge = v.int("patch_size"), top.int("spatial_merge_size", 2)
    side = v.int("image_size") // (patch * merge)
    return Tower("pixtral", v.int("hidden_size"), v.int("intermediate_size"), layers + feature + 1 if feature < 0 else feature,
                 v.int("num_attention_heads"), patch, v.int("num_channels", 3), 1, text_hidden, merge,
                 projector_bias=as_flag(data.get("multimodal_projector_bias", True), file, "multimodal_projector_bias"),
                 image_tokens=side * (side + 1))  # fmt: skip


def _gemma4_unified(data: dict[str, Any], file: str, text_hidden: int) -> Tower:
    """Gemma 4 Unified's embedders (Tower "gemma4-unified", gemma4_unified.py 0.23.0 to 0.33.0): the vision
    embedder from vision_config's model_patch_size, mm_embed_dim and mm_posemb_size; each
    Gemma4MultimodalEmbedder projects from its config's output_proj_dims, else its hidden_size. The encoder
    profile is not modeled (image_tokens 0)."""
    vision = data.get("vision_config")
    if not isinstance(vision, dict):  # gemma4_unified.py raises "Gemma4 Unified requires a vision configuration"
        raise ConfigError(file, "vision_config", vision if vision is not None else _MISSING, "an object describing the vision embedder")
    v = _Reader(vision, file, "vision_config.")
    width = v.int("output_proj_dims", None) or v.int("hidden_size")
    modalities: tuple[str, ...] = ("image", "video")
    audio_width = 0
    audio = data.get("audio_config")
    if audio is not None:
        if not isinstance(audio, dict):
            raise ConfigError(file, "audio_config", audio, "an object describing the audio embedder, or null")
        a = _Reader(audio, file, "audio_config.")
        audio_width, modalities = a.int("output_proj_dims", None) or a.int("hidden_size"), ("image", "video", "audio")
    return Tower("gemma4-unified", v.int("mm_embed_dim"), width, 0, 1, v.int("model_patch_size"), 3, 1, text_hidden,
                 positions=v.int("mm_posemb_size"), modalities=modalities, audio_width=audio_width)  # fmt: skip


def _llava_tower(data: dict[str, Any], file: str, arch: str, text_hidden: int, filled: list[_Reader]) -> Tower:
    """LLaVA's CLIP tower and projector (Tower "clip"). init_vision_tower_for_llava (llava.py,
    0.10.1.1 to 0.33.0) builds the tower up to the deepest vision_feature_layer (_get_num_hidden_layers:
    num_hidden_layers + layer + 1 for a negative one, a list's deepest); linear_1 reads the vision
    width. SigLIP and Pixtral vision configs, which the same function builds, are refused: SigLIP's
    pooling head differs across releases, and no whole public pixtral-12b config.json was found."""
    vision = data.get("vision_config")
    if vision is None and arch.startswith("Llama4"):
        # Llama4Config fills a missing vision_config with Llama4VisionConfig's defaults (transformers 5.5.3), a tower of
        # its own dimensions, not the checkpoint's: sized only where the limits leave it unbuilt (weights.py refuses it)
        return Tower("llama4-default", 0, 0, 0, 1, 1, out_hidden=text_hidden)
    if not isinstance(vision, dict):
        raise ConfigError(file, "vision_config", vision if vision is not None else _MISSING, "an object describing the vision tower")
    kind = vision.get("model_type", "clip_vision_model")
    if kind != "clip_vision_model":
        raise ConfigError(file, "vision_config.model_type", kind, "clip_vision_model: SigLIP and Pixtral towers under LLaVA are not modeled")
    top = _Reader(data, file, "", "LlavaConfig", _LLAVA_TOP)
    v = _Reader(vision, file, "vision_config.", "CLIPVisionConfig", _CLIP_VISION)
    filled += [top, v]
    layers = v.int("num_hidden_layers", maximum=MAX_LAYERS)
    feature = top.get("vision_feature_layer")
    indexes = feature if isinstance(feature, list) and feature else [feature]
    for index in indexes:
        if isinstance(index, bool) or not isinstance(index, int) or not -layers <= index <= layers:
            raise ConfigError(file, "vision_feature_layer", feature, f"a layer index from {-layers} to {layers}, or a list of them")
    deepest = max(layers + i + 1 if i < 0 else i for i in indexes)
    hidden, heads, patch = v.int("hidden_size"), v.int("num_attention_heads"), v.int("patch_size")
    if hidden % heads:
        raise ConfigError(file, "vision_config.num_attention_heads", heads, f"a divisor of vision_config.hidden_size ({hidden}) (clip.py raises otherwise)")
    image = v.int("image_size")
    strategy = top.get("vision_feature_select_strategy")
    if strategy not in ("default", "full"):
        raise ConfigError(file, "vision_feature_select_strategy", strategy, "default or full")
    positions = (image // patch) ** 2 + 1
    # the most tokens an image gives: one size, CLIP's patches less the class token under 'default'
    # (llava.py get_num_image_tokens, get_num_selected_vision_tokens)
    tokens = positions - (strategy == "default")
    return Tower("clip", hidden, v.int("intermediate_size"), deepest, heads, patch, v.int("num_channels"), 1, text_hidden,
                 positions=positions, projector_bias=top.flag("multimodal_projector_bias"), image_tokens=tokens)  # fmt: skip


def _moonvit(vision: dict[str, Any], v: _Reader, file: str, text_hidden: int) -> Tower:
    """Kimi K2.5's MoonViT and its projector (Tower "moonvit"; kimi_k25_vit.py, 0.15.0 to 0.33.0). vLLM
    builds the tower from vision_config's hidden_size, intermediate_size, num_hidden_layers and
    num_attention_heads, its config class's defaults where they are absent, as they are in the published
    checkpoints, which write them as vt_*: a vt_* field that differs from what vLLM builds is refused (its
    weights would not load). The position table is init_pos_emb_height x init_pos_emb_width (else
    pos_emb_height and pos_emb_width, 64 each: MoonViT3dPretrainedModel _get_pos_emb_size, 0.33.0). The
    projector is "patchmerger" (Kimi K3's "patchmergerv2" is another class). The encoder profile is not
    modeled (image_tokens 0): its dummy image and video chunk are sized by the image processor
    (preprocessor_config.json, media_tokens_calculator), which the config does not give."""
    sizes = {}
    for key, written, default in _MOONVIT:
        built = v.int(key, default, maximum=MAX_LAYERS if key == "num_hidden_layers" else MAX_DIMENSION)
        said = vision.get(written)
        if said is not None and said != built:
            raise ConfigError(file, f"vision_config.{written}", said, f"{built}: vLLM builds vision_config.{key} and would not load a tower of another size")
        sizes[key] = built
    kind = vision.get("mm_projector_type", "patchmerger")
    if kind != "patchmerger":
        raise ConfigError(file, "vision_config.mm_projector_type", kind, "patchmerger: other MoonViT projectors are not modeled")
    merge = vision.get("merge_kernel_size", [2, 2])
    if not isinstance(merge, list) or len(merge) != 2 or merge[0] != merge[1] or isinstance(merge[0], bool) or not isinstance(merge[0], int) or merge[0] < 1:
        raise ConfigError(file, "vision_config.merge_kernel_size", merge, "two equal whole numbers, such as [2, 2]")
    side = {dim: v.int(f"init_pos_emb_{dim}", None) or v.int(f"pos_emb_{dim}", 64) for dim in ("height", "width")}
    heads, hidden = sizes["num_attention_heads"], sizes["hidden_size"]
    if hidden % heads:
        raise ConfigError(file, "vision_config.num_attention_heads", heads, f"a divisor of the tower's width ({hidden})")
    return Tower("moonvit", hidden, sizes["intermediate_size"], sizes["num_hidden_layers"], heads, v.int("patch_size", 14), 3, 1, text_hidden,
                 merge[0], side["height"] * side["width"], modalities=("vision_chunk",))  # fmt: skip


def _internvit(data: dict[str, Any], v: _Reader, top: _Reader, file: str, text_hidden: int) -> Tower:
    """InternVL's InternViT and mlp1 (Tower "internvit"). The tower is built up to select_layer
    (internvl.py _init_vision_model: num_hidden_layers + select_layer + 1 for a negative one); mlp1's
    input is hidden x (1 / downsample_ratio)^2 (pixel_shuffle merges that many patches into one token).
    norm_type, qkv_bias and qk_normalization are read as written: InternVisionConfig's defaults are
    those of the 6B tower, so a config without them is refused rather than guessed. The encoder
    profile is not modeled (image_tokens 0): see calc/checks/modeled.py."""
    layers = v.int("num_hidden_layers", maximum=MAX_LAYERS)
    select = data.get("select_layer", _MISSING)
    if isinstance(select, bool) or not isinstance(select, int) or not -layers <= select < layers:
        raise ConfigError(file, "select_layer", select, f"a layer index from {-layers} to {layers - 1}")
    ratio = data.get("downsample_ratio", _MISSING)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 < ratio <= 1 or (1 / ratio) != int(1 / ratio):
        raise ConfigError(file, "downsample_ratio", ratio, "a number such as 0.5: one over a whole number")
    norm = v.get("norm_type", _MISSING)
    if norm not in ("layer_norm", "rms_norm"):
        raise ConfigError(file, "vision_config.norm_type", norm, "layer_norm or rms_norm")
    hidden, heads, patch = v.int("hidden_size"), v.int("num_attention_heads"), v.int("patch_size")
    if hidden % heads:
        raise ConfigError(
            file, "vision_config.num_attention_heads", heads, f"a divisor of vision_config.hidden_size ({hidden}) (intern_vit.py raises otherwise)"
        )
    for key in ("qkv_bias", "qk_normalization"):
        if key not in v.data:
            raise ConfigError(file, f"vision_config.{key}", _MISSING, "true or false, as the config writes it")
    return Tower("internvit", hidden, v.int("intermediate_size"), layers + select + 1 if select < 0 else select + 1, heads, patch, 3, 1,
                 text_hidden, int(1 / ratio), (v.int("image_size") // patch) ** 2 + 1, modalities=("image", "video"),
                 rms_norm=norm == "rms_norm", qk_norm=v.flag("qk_normalization"), qkv_bias=v.flag("qkv_bias"))  # fmt: skip


def _gemma3n(r: _Reader) -> dict[str, Any]:
    """Gemma 3n's language model (vllm/model_executor/models/gemma3n.py, Gemma3nDecoderLayer and
    Gemma3nAttention, 0.33.0; the same layers from 0.10.1.1): layers by layer_types, sliding or full,
    the last num_kv_shared_layers reading the cache of the last layer of their kind before them
    (kv_sharing_target_layer_name: the layer before the shared ones for full attention, the one
    before that for sliding), so they hold no cache (gpu_model_runner.py get_kv_cache_spec skips a
    layer with a sharing target, 0.10.1.1 to 0.33.0). A layer's MLP is intermediate_size[i]
    (a list, or one size for all); q and k are normed a head, v by a norm without weight; each layer
    adds AltUp (Gemma3nAltUp), a laurel block (Gemma3nLaurelBlock) and the per-layer input gate and
    projection, and five norms."""
    n = r.layers()
    types = r.get("layer_types", None)
    if types is None:  # transformers' Gemma3nTextConfig fills them so: every fifth layer full
        types = ["full_attention" if (i + 1) % 5 == 0 else "sliding_attention" for i in range(n)]
        r.taken["layer_types"] = Said("full_attention every fifth layer, sliding_attention the others")
        r.data = {**r.data, "layer_types": types}
    kinds = list(_layer_types(r, n, _SLIDING_OR_FULL))
    shared = r.int("num_kv_shared_layers", minimum=0, maximum=n)
    first = n - shared
    if shared and (first < 2 or kinds[first - 1] != FULL or kinds[first - 2] != SLIDING):
        raise ConfigError(r.file, r.prefix + "num_kv_shared_layers", shared,
                          "a count whose first shared layer follows a full-attention layer and, before it, a sliding one "
                          "(gemma3n.py takes those two as the cache the shared layers read)")  # fmt: skip
    kinds = [k if i < first else SHARED_FULL if k == FULL else SHARED_SLIDING for i, k in enumerate(kinds)]
    sizes = r.get("intermediate_size")
    if isinstance(sizes, int) and not isinstance(sizes, bool):
        sizes = [sizes] * n
    if not isinstance(sizes, list) or len(sizes) != n or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in sizes):
        raise ConfigError(r.file, r.prefix + "intermediate_size", sizes, f"a whole number, or a list of {n}, one a layer")
    activation = r.get("hidden_activation", None)
    if activation not in (None, "gelu_pytorch_tanh"):
        raise ConfigError(r.file, r.prefix + "hidden_activation", activation, "gelu_pytorch_tanh (gemma3n.py Gemma3nMLP raises otherwise)")
    if not r.flag("altup_correct_scale", True):
        raise ConfigError(r.file, r.prefix + "altup_correct_scale", False, "true (gemma3n.py asserts it)")
    per_layer = PerLayerInputs(hidden=r.int("hidden_size_per_layer_input"), vocab=r.int("vocab_size_per_layer_input"),
                               altup=r.int("altup_num_inputs"), laurel=r.int("laurel_rank"))  # fmt: skip
    return {**_common(r, qk_norm="head"), "layers": tuple(kinds), "mlps": tuple(Mlp(intermediate=v) for v in sizes),
            "sliding_window": r.int("sliding_window"), "extra_norms": (*_GEMMA_NORMS, "post_per_layer_input_norm"),
            "per_layer": per_layer}  # fmt: skip


_GEMMA4_MOE_NORMS = ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2")


def _gemma4(r: _Reader) -> dict[str, Any]:
    """Gemma 4's language model (vllm/model_executor/models/gemma4.py, Gemma4DecoderLayer and
    Gemma4Attention, 0.19.0 to 0.33.0). Layers by layer_types, sliding or full; a full layer's head is
    global_head_dim wide, and under attention_k_eq_v it holds num_global_key_value_heads KV heads
    (vllm/transformers_utils/configs/gemma4.py gemma4_layer_config, 0.28.0; the same choice written in
    gemma4.py from 0.19.0; transformers' per_layer_config from 0.32.0). A k_eq_v layer's checkpoint ships
    k_proj alone, which vLLM loads into both the K and the V part of one qkv_proj: V is built, and
    cached, all the same. q and k are normed a head, v by a norm without weight; four norms a layer.
    The last num_kv_shared_layers read the cache of the last earlier layer of their kind and hold none
    (kv_sharing_target_layer_name); from 0.30.0 such a layer builds q_proj alone (and o_proj, q_norm),
    and under use_double_wide_mlp its MLP is twice intermediate_size. hidden_size_per_layer_input above
    0 adds the per-layer embedding (Gemma 3n's, without AltUp or laurel) and a gate, a projection and a
    norm a layer. A layer with an MoE block runs the dense MLP and the experts side by side: the
    router (its proj of num_experts rows, a scale of hidden_size, a per_expert_scale) and experts of
    moe_intermediate_size (else expert_intermediate_size), and three more norms. Releases 0.19.0 to
    0.31.0 build the block where enable_moe_block says; 0.32.0 and 0.33.0 where num_experts is not null:
    a config on which the two disagree is refused."""
    n = r.layers()
    kinds = list(_layer_types(r, n, _SLIDING_OR_FULL))
    shared = r.int("num_kv_shared_layers", 0, minimum=0, maximum=n)
    first = n - shared
    for i in range(first, n):
        if kinds[i] not in kinds[:first]:
            raise ConfigError(r.file, r.prefix + "num_kv_shared_layers", shared,
                              f"a count that leaves a {kinds[i]} layer before the shared ones (gemma4.py reads layer {i}'s cache from the last one)")  # fmt: skip
    kinds = [k if i < first else SHARED_FULL if k == FULL else SHARED_SLIDING for i, k in enumerate(kinds)]
    common = {**_common(r, qk_norm="head"), "head_dim": r.int("head_dim")}
    common["output_bias"] = common["attention_bias"]  # o_proj takes attention_bias too
    heads, kv, d = common["heads"], common["kv_heads"], common["head_dim"]
    global_d = r.int("global_head_dim", None) or d
    global_kv = kv
    if r.flag("attention_k_eq_v", False):
        global_kv = r.int("num_global_key_value_heads", None) or kv
        if global_kv > heads or heads % global_kv:
            raise ConfigError(r.file, r.prefix + "num_global_key_value_heads", global_kv, f"a divisor of num_attention_heads ({heads})")
    full_kv = (global_kv, global_d) if (global_kv, global_d) != (kv, d) and FULL in kinds else None
    intermediate = r.int("intermediate_size")
    wide = 2 if r.flag("use_double_wide_mlp", False) else 1
    moe = r.flag("enable_moe_block", False)
    experts = r.get("num_experts", None)
    if moe != (experts is not None):
        raise ConfigError(r.file, r.prefix + "num_experts", experts if experts is not None else _MISSING,
                          f"{'a count' if moe else 'null'} as enable_moe_block is {str(moe).lower()}: vLLM 0.19.0 to 0.31.0 build the experts "
                          "by enable_moe_block, 0.32.0 and later by num_experts")  # fmt: skip
    norms: tuple[str, ...] = _GEMMA_NORMS
    if moe:
        key = "moe_intermediate_size" if "moe_intermediate_size" in r.data else "expert_intermediate_size"
        expert = Mlp(experts=r.int("num_experts"), expert_intermediate=r.int(key), shared_intermediate=intermediate)
        r.int("top_k_experts")
        mlps = tuple(replace(expert, shared_intermediate=intermediate * wide) if i >= first else expert for i in range(n))
        norms += _GEMMA4_MOE_NORMS
    else:
        mlps = tuple(Mlp(intermediate=intermediate * (wide if i >= first else 1)) for i in range(n))
    hpl = r.int("hidden_size_per_layer_input", 0, minimum=0) if r.get("hidden_size_per_layer_input", None) is not None else 0
    per_layer = PerLayerInputs(hidden=hpl, vocab=r.int("vocab_size_per_layer_input", common["vocab"])) if hpl else None
    if hpl:
        norms += ("post_per_layer_input_norm",)
    window = r.int("sliding_window") if SLIDING in kinds or SHARED_SLIDING in kinds else None
    return {**common, "layers": tuple(kinds), "mlps": mlps, "sliding_window": window, "extra_norms": norms, "per_layer": per_layer,
            "full_kv": full_kv}  # fmt: skip
