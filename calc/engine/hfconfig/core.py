"""The config reading core: the layer kinds, the Shape and its parts (Mlp, Tower, Rope and the records of its
mixers, indexer, DeepSeek V4 dimensions and per-layer inputs), ConfigError, the config's JSON object
(load), a checkpoint's quantization under --quantization, the field reader (_Reader) and what the family
readers share (_common, _uniform, _untied, the layer-kind patterns); and a cache-only Shape from a catalog
model's fields (from_architecture).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from calc import jsontext
from calc.units import InputError

FULL, SLIDING, MLA, MAMBA, LINEAR = "full", "sliding", "mla", "mamba", "linear"
# Recurrent mixers beside Mamba-2 (MAMBA) and gated delta (LINEAR): Jamba's Mamba-1 layers, LFM2's short
# convolutions, and Falcon-H1's layers, which run attention and a Mamba-2 mixer side by side
MAMBA1, SHORT_CONV, PARALLEL = "mamba1", "short conv", "attention+mamba"
LIGHTNING = "lightning"  # MiniMax-Text-01's and M1's lightning (linear) attention: one heads x head_dim x head_dim state a request
RECURRENT = frozenset({MAMBA, LINEAR, MAMBA1, SHORT_CONV, PARALLEL, LIGHTNING})  # layers that hold a state a request (a hybrid's)
# Classes with no attention layer at all (IsAttentionFree in vllm/model_executor/models/mamba.py and mamba2.py):
# their pool holds mamba states alone, of a block vLLM sets itself (vllm/model_executor/models/config.py MambaModelConfig)
ATTENTION_FREE = frozenset({"MambaForCausalLM", "FalconMambaForCausalLM", "Mamba2ForCausalLM"})
CHUNKED = "chunked"  # chunked local attention (Llama 4's RoPE layers): a request holds one chunk and the batch in flight
MLP_ONLY, MOE_ONLY = "mlp", "moe"  # Nemotron-H layers that hold a feed-forward and no cache
NO_ATTENTION = "no attention"  # a DeciLM layer whose attention is a no-op: no input norm, no cache, the MLP alone (or nothing)
# Gemma 3n's KV-shared layers: attention that reads an earlier layer's cache and holds none of its own
SHARED_FULL, SHARED_SLIDING = "shared full", "shared sliding"
INDEXER_QUANT_BLOCK = 128  # DeepSeek V3.2's indexer keys: fp8 values and one float32 scale per 128 (deepseek_v2.py quant_block_size)
INDEXER_NOTE = ("not modeled: the indexer's top-k buffer, max_num_batched_tokens x index_topk int32 on every rank, built at load "
                "(deepseek_v2.py DeepseekV2Model, topk_indices_buffer: 64 MiB at 8,192 tokens and a top-k of 2,048), nor its prefill "
                "workspaces")  # fmt: skip
FAMILIES = ("dense", "moe", "mla", "sliding window", "hybrid")
DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "bf16": 2, "fp16": 2}
MAX_LAYERS = 4096  # far above any published model's (a few hundred): a larger count is a typo
MAX_DIMENSION = 2**31 - 1  # a size or count beyond this holds no model that loads


class Said(str):
    """What was found, said in words rather than quoted as a value."""

    def __repr__(self) -> str:
        return str(self)


class ConfigError(InputError):
    """A config.json field that is missing or not what the models can size."""

    def __init__(self, file: str, path: str, found: Any, expected: str) -> None:
        shown = "nothing" if found is _MISSING else repr(found)
        super().__init__(f"{file}: {path}: found {shown}, expected {expected}")


_MISSING = object()


@dataclass(frozen=True)
class Mlp:
    """One decoder layer's feed-forward: dense, or experts (all resident) plus shared ones."""

    intermediate: int = 0
    experts: int = 0
    expert_intermediate: int = 0
    shared_intermediate: int = 0
    gated_shared: bool = False  # Qwen's shared expert has its own one-wide gate
    bias: bool = False
    gated: bool = True  # gate and up projections (SwiGLU); Nemotron-H's squared ReLU has up and down only
    latent: int = 0  # routed experts of this width in and out, behind projections from and to hidden_size (Nemotron 3 Super)


@dataclass(frozen=True)
class Tower:
    """A multimodal model's vision tower and the projector into the language model, read from the
    config's vision_config as vLLM's model code builds them (calc/engine/weights.py lists the tensors):

    - "qwen3-vl" (Qwen3-VL, Qwen3-VL MoE, Qwen3.5, Qwen3.6): vllm/model_executor/models/qwen3_vl.py,
      Qwen3_VisionTransformer: a Conv3d patch embedding with bias, a learned position table,
      `depth` blocks of two LayerNorms, attention (qkv, proj) and an MLP (linear_fc1, linear_fc2),
      all with biases, then a patch merger and one more for each deepstack layer;
    - "qwen2.5-vl": qwen2_5_vl.py, Qwen2_5_VisionTransformer: a Conv3d patch embedding without
      bias, RMSNorms, a gated MLP (gate_up_proj, down_proj), biases on every projection, a merger;
    - "qwen2-vl" (Qwen2-VL): qwen2_vl.py, Qwen2VisionTransformer (0.10.1.1 to 0.33.0): a Conv3d patch
      embedding of embed_dim without bias, `depth` blocks of two LayerNorms, attention (qkv, proj) and
      a QuickGELU MLP of embed_dim x mlp_ratio (fc1, fc2), all with biases, then Qwen2VisionPatchMerger
      (a LayerNorm, mlp.0 of embed_dim x merge^2 and mlp.2 to vision_config.hidden_size, the
      language model's width, both with biases);
    - "glm4v" (GLM-4.1V, GLM-4.5V): glm4_1v.py, Glm4vVisionTransformer (0.33.0): a Conv3d patch
      embedding with bias, a learned position table of (image_size / patch_size)^2 rows, `depth`
      blocks of two RMSNorms, attention (qkv, proj) and a gated MLP of out_hidden_size, no biases,
      post_conv_layernorm, a Conv2d downsample of merge x merge (with bias) to out_hidden_size,
      post_layernorm, and Glm4vPatchMerger (proj, a LayerNorm, gate_up and down of intermediate_size,
      no biases);
    - "siglip" (Gemma 3): siglip.py, SiglipVisionModel, and gemma3_mm.py, Gemma3MultiModalProjector;
    - "pixtral" (Mistral 3): pixtral.py, PixtralHFVisionModel (no biases), and mistral3.py,
      Mistral3MultiModalProjector with its patch merger;
    - "llama4" (Llama 4 Scout and Maverick): mllama4.py, Llama4VisionModel (an unfold patch
      embedding without bias, a class embedding, a learned position table, LayerNorms, `depth`
      encoder layers with biases), its pixel-shuffle adapter (vision_adapter.mlp: fc1 of
      projector_input_dim, fc2 of projector_output_dim) and Llama4MultiModalProjector (linear_1,
      no bias, divided over the ranks whatever --mm-encoder-tp-mode says), 0.33.0;
    - "internvit" (InternVL 2.5, 3 and 3.5): intern_vit.py, InternVisionModel (0.10.1.1 to 0.33.0): a
      Conv2d patch embedding with bias, a class embedding, a learned position table of
      (image_size / patch_size)^2 + 1 rows, then the encoder layers up to select_layer, each two
      norms (norm_type), attention (qkv with qkv_bias, proj with bias, q_norm and k_norm where
      qk_normalization), an MLP (fc1, fc2 with biases) and two layer scales (ls1, ls2); no final
      norm. Then internvl.py InternVLChatModel._init_mlp1: a LayerNorm of hidden x (1 / downsample_ratio)^2,
      a Linear to the language model's width and one more of that width, both with biases, plain
      nn.Linear, whole on every rank;
    - "clip" (LLaVA-1.5): clip.py, CLIPVisionModel, built by llava.py
      init_vision_tower_for_llava up to the deepest vision_feature_layer, without post_layernorm
      (require_post_norm=False): a class embedding, a Conv2d patch embedding without bias, a learned
      position table of (image_size / patch_size)^2 + 1 rows, pre_layrnorm, then blocks of two
      LayerNorms, attention (qkv_proj, out_proj) and an MLP (fc1, fc2), all with biases; then
      LlavaMultiModalProjector (linear_1 from the vision width to the language model's, linear_2 of
      that width, biases where multimodal_projector_bias);
    - "moonvit" (Kimi K2.5 and K2.6): kimi_k25_vit.py, MoonViT3dPretrainedModel (0.33.0; the same tensors
      from 0.15.0): a Conv2d patch embedding with bias, a learned position table of init_pos_emb_height x
      init_pos_emb_width rows (its time table a buffer), `depth` blocks of two LayerNorms, attention (wqkv,
      wo) and an MLP (fc0, fc1), all with biases, final_layernorm; then KimiK25MultiModalProjector
      (pre_norm, a LayerNorm of the tower's width, linear_1 of hidden x merge^2 and linear_2 to the
      language model's width, both with biases, ReplicatedLinear: whole on every rank);
    - "gemma3n" (Gemma 3n): gemma3n_mm.py builds the vision tower (timm's MobileNetV5, named by
      vision_config.architecture) and the audio tower (a Conformer) through transformers' AutoModel,
      with their embedders: not modeled (their tensors are refused), so a start is sized only where
      --limit-mm-per-prompt leaves both unbuilt;
    - "gemma4" (Gemma 4): gemma4_mm.py (0.19.0 to 0.33.0) builds the vision tower (images and video) and,
      where the config has an audio_config, the audio tower through transformers' AutoModel, each with a
      Gemma4MultimodalEmbedder: not modeled either, so a start is sized only where --limit-mm-per-prompt
      leaves them unbuilt;
    - "gemma4-unified" (Gemma 4 12B): gemma4_unified.py (0.23.0 to 0.33.0) builds no tower: Gemma4UnifiedVisionEmbedder
      (patch_ln1, a LayerNorm of model_patch_size^2 x 3; patch_dense, column-parallel to mm_embed_dim with a bias;
      patch_ln2; pos_embedding, mm_posemb_size x 2 x mm_embed_dim; pos_norm) and Gemma4MultimodalEmbedder's
      embedding_projection (ReplicatedLinear from output_proj_dims, else hidden_size, to the language model's width)
      for the images and, where the config has an audio_config, the audio frames; built whatever
      --limit-mm-per-prompt says (no _mark_tower_model);
    - "llama4-default" (a Llama 4 config without vision_config): the tower Llama4Config fills in from
      Llama4VisionConfig's defaults, not the checkpoint's: not sized (its tensors are refused), so a start is
      sized only where --limit-mm-per-prompt leaves it unbuilt.
    """

    kind: str
    hidden: int
    intermediate: int
    depth: int
    heads: int
    patch: int
    channels: int = 3
    temporal_patch: int = 1
    out_hidden: int = 0  # the width the merger or projector writes: the language model's
    merge: int = 1  # spatial_merge_size: patches merged into one token a side
    positions: int = 0  # a learned position table's rows
    deepstack: int = 0  # Qwen3-VL's deepstack mergers
    projector_bias: bool = False
    modalities: tuple[str, ...] = ("image",)
    image_tokens: int = 0  # the most tokens one image gives the language model (the processor's default); 0: not modeled
    adapter: tuple[int, int, int] = (0, 0, 0)  # Llama 4: projector_input_dim, projector_output_dim, vision_output_dim
    data_parallel: bool = False  # --mm-encoder-tp-mode data: the tower whole on every rank
    rms_norm: bool = False  # InternViT: norm_type rms_norm (RMSNorm, a weight) rather than layer_norm (a weight and a bias)
    qk_norm: bool = False  # InternViT: qk_normalization, an RMSNorm over all heads for q and one for k, whole on every rank
    qkv_bias: bool = True  # InternViT: qkv_bias
    audio_width: int = 0  # Gemma 4 Unified: the audio frames' width its audio embedder projects (0: no audio_config)

    @property
    def name(self) -> str:
        return {"qwen3-vl": "Qwen3-VL vision tower", "qwen2.5-vl": "Qwen2.5-VL vision tower", "qwen2-vl": "Qwen2-VL vision tower",
                "glm4v": "GLM-4V vision tower", "siglip": "SigLIP vision tower",
                "pixtral": "Pixtral vision tower", "clip": "CLIP vision tower",
                "llama4": "Llama 4 vision tower", "llama4-default": "Llama 4 vision tower", "internvit": "InternViT vision tower", "moonvit": "MoonViT vision tower",
                "gemma3n": "Gemma 3n vision and audio towers", "gemma4": "Gemma 4 vision and audio towers",
                "gemma4-unified": "Gemma 4 Unified vision and audio embedders"}[self.kind]  # fmt: skip


@dataclass(frozen=True)
class Rope:
    """One rotary embedding's cos/sin cache, a buffer vLLM builds at load on every rank, in the
    model's dtype (vllm/model_executor/layers/rotary_embedding/base.py, register_buffer
    cos_sin_cache, 0.20.0): positions x rotary_dim values, shared by the layers of `kind` (get_rope
    keeps one a distinct configuration)."""

    kind: str
    positions: int
    rotary_dim: int
    dtype_bytes: int | None = None  # built in this width whatever the model's (gpt-oss: float32)
    capped: bool = False  # built for min(positions, max_model_len) positions (MiniMax-Text-01's): at_max_model_len
    grown_before: tuple[int, int] | None = None  # an M-RoPE cache of 4 x the positions in releases before this one: ropes_as_loaded


@dataclass(frozen=True)
class Mamba2Mixer:
    """A Mamba-2 mixer's dimensions (vllm/model_executor/layers/mamba/mamba_mixer2.py, MambaMixer2)."""

    heads: int
    head_dim: int
    state: int
    groups: int
    conv_kernel: int
    conv_bias: bool = True
    bias: bool = False  # in_proj's and out_proj's
    norm: bool = True  # the gated RMSNorm


@dataclass(frozen=True)
class Mamba1Mixer:
    """A Mamba-1 mixer's dimensions (vllm/model_executor/layers/mamba/mamba_mixer.py, MambaMixer)."""

    inner: int
    state: int
    conv_kernel: int
    dt_rank: int
    conv_bias: bool
    bias: bool  # in_proj's and out_proj's
    norms: bool = True  # the weighted dt, B and C RMSNorms (Jamba's; FalconMamba's have no weight, Mamba has none)


@dataclass(frozen=True)
class ShortConvMixer:
    """LFM2's short convolution's dimensions (vllm/model_executor/layers/mamba/short_conv.py, ShortConv)."""

    inner: int
    conv_kernel: int
    conv_bias: bool


@dataclass(frozen=True)
class GatedDeltaNet:
    """A gated delta net's dimensions (vllm/model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py, QwenGatedDeltaNetAttention)."""

    k_heads: int
    v_heads: int
    k_dim: int
    v_dim: int
    conv_kernel: int


@dataclass(frozen=True)
class Indexer:
    """DeepSeek V3.2's lightning indexer's dimensions (vllm/model_executor/models/deepseek_v2.py, Indexer)."""

    heads: int
    head_dim: int
    q_lora_rank: int


@dataclass(frozen=True)
class DeepseekV4Dims:
    """DeepSeek V4's dimensions beyond the Shape's (vllm/models/deepseek_v4/nvidia/model.py and attention.py)."""

    o_lora_rank: int
    o_groups: int
    hc_mult: int  # the hyper-connections' streams
    index_heads: int
    index_head_dim: int
    hash_layers: int  # the first layers, routed by a token table (tid2eid)
    top_k: int  # num_experts_per_tok: tid2eid's width
    expert_fp4: bool  # expert_dtype fp4 (MXFP4 experts, e8m0 linear scales)


@dataclass(frozen=True)
class PerLayerInputs:
    """Gemma 3n's and Gemma 4's per-layer inputs (vllm/model_executor/models/gemma3n.py and gemma4.py)."""

    hidden: int
    vocab: int
    altup: int | None = None  # Gemma 3n's AltUp inputs; Gemma 4 has no AltUp
    laurel: int | None = None  # Gemma 3n's LAuReL rank; Gemma 4 has no LAuReL


_Part = TypeVar("_Part")


@dataclass(frozen=True)
class Shape:
    file: str
    architecture: str
    layers: tuple[str, ...]
    hidden: int
    vocab: int
    heads: int
    kv_heads: int
    head_dim: int
    mlps: tuple[Mlp, ...]
    dtype_bytes: int = 2  # as vLLM loads it: a float32 checkpoint runs in bfloat16 under --dtype auto
    float32_checkpoint: bool = False
    bnb_nested_on_device: bool = False  # bitsandbytes 4-bit statistics kept double-quantized on the device (weights.bnb_as_loaded)
    head_dim_v: int | None = None
    sliding_window: int | None = None
    attention_chunk_size: int | None = None  # the chunk of a CHUNKED layer
    tie_embeddings: bool = False
    attention_bias: bool = False  # q, k and v carry a bias
    output_bias: bool = False  # o_proj carries one too (Llama's attention_bias, Gemma 2, gpt-oss)
    # "head": q and k normed a head (Qwen3, Gemma 3, GLM); "head layernorm": so, by LayerNorms with a bias (Ling);
    # "full": over all heads, on every rank (OLMo 2); "split": over all heads, divided (MiniMax-M2)
    qk_norm: str = ""
    extra_norms: tuple[str, ...] = ()  # a layer's norms beyond the two around attention (Gemma 2 and 3, GLM-4)
    parallel_block: bool = False  # attention and MLP read one input norm, no post-attention norm (Cohere's commandr.py)
    norm_bias: bool = False  # the layer and final norms are LayerNorms with a bias (PhiMoE's phimoe.py, StarCoder2's starcoder2.py)
    lm_head_bias: bool = False  # lm_head carries a bias of the padded vocabulary, divided like it (PhiMoE)
    lm_head_fp32: bool = False  # lm_head kept in float32 whatever the model's dtype (MiniMax-Text-01's lm_head.float())
    no_input_norm: bool = False  # a layer normed only after attention and after the MLP (EXAONE 4.0's exaone4.py)
    position_table: int = 0  # rows of a learned position embedding, an nn.Embedding whole on every rank (GPTBigCode's wpe)
    router_fp32: bool = False  # the MoE router kept in float32 (GLM-4.5, MiniMax-M2)
    routing_bias: bool = False  # and its float32 score-correction bias a layer
    sinks: bool = False
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # the recurrent mixer, a record of its kind: Mamba-2 (MAMBA and PARALLEL layers), Mamba-1 (MAMBA1), short conv (SHORT_CONV)
    mamba: Mamba2Mixer | Mamba1Mixer | ShortConvMixer | None = None
    linear: GatedDeltaNet | None = None  # the gated delta net of the LINEAR layers
    indexer: Indexer | None = None  # DeepSeek V3.2's lightning indexer
    # DeepSeek V4: each layer's compress ratio (0: sliding window only, 4 with an indexer, 128), and its dimensions
    compress_ratios: tuple[int, ...] = ()
    dsv4: DeepseekV4Dims | None = None
    drafter_layers: int = 0
    # the kinds of one MTP step's layers where they are not a copy of the model's last (Nemotron-H's mtp_layers_block_type)
    drafter_kinds: tuple[str, ...] = ()
    # the MTP module's own ends vLLM swaps for the target's after loading (weights.drafter_as_loaded); none as read
    drafter_shared: frozenset[str] = frozenset()
    defaults: tuple[str, ...] = ()  # fields the config leaves out, taken as its transformers class's defaults
    max_positions: int | None = None  # max_position_embeddings, where no rope scaling stretches it
    output_gate: bool = False  # Qwen3-Next / Qwen3.5: q_proj also carries a gate for the output
    state_dtype_bytes: int | None = None  # mamba_ssm_dtype, which vLLM takes for the temporal state
    quantization: jsontext.JsonObject | None = None
    tower: Tower | None = None  # a multimodal model's vision tower and projector
    ropes: tuple[Rope, ...] = ()  # the rotary embeddings' cos/sin caches vLLM builds (not in the checkpoint)
    per_layer: PerLayerInputs | None = None  # Gemma 3n and Gemma 4: the per-layer inputs (Gemma 3n's: with AltUp and LAuReL)
    # Gemma 4: the full-attention layers' own KV heads and head_dim (global_head_dim; num_global_key_value_heads under
    # attention_k_eq_v), where kv_heads and head_dim are the sliding layers'; None: every layer the same
    full_kv: tuple[int, int] | None = None
    batched_tokens_floor: int = 0  # the least default max_num_batched_tokens vLLM takes (read.batched_tokens_floor)

    def kv_dims(self, kind: str) -> tuple[int, int]:
        """The KV heads and head_dim of a layer of `kind` (Gemma 4's full layers have their own: full_kv)."""
        if self.full_kv is not None and kind in (FULL, SHARED_FULL):
            return self.full_kv
        return self.kv_heads, self.head_dim

    def part(self, kind: type[_Part]) -> _Part:
        """The part of `kind` this shape holds (its mixer, gated delta net, indexer, DeepSeek V4 dimensions or
        per-layer inputs), or a ValueError where it holds none: a reader that needs one never reads a silent 0."""
        for held in (self.mamba, self.linear, self.indexer, self.dsv4, self.per_layer):
            if isinstance(held, kind):
                return held
        raise ValueError(f"{self.file}: {self.architecture}: no {kind.__name__} was read from the config, and its layers need one")

    @property
    def attention_free(self) -> bool:
        """No attention layer in the whole model (not a pipeline stage's): vLLM sizes its pool by the state alone."""
        return self.architecture in ATTENTION_FREE

    @property
    def family(self) -> str:
        """dense, moe, mla, sliding window or hybrid: the accuracy table's grouping."""
        kinds = set(self.layers)
        if kinds & RECURRENT:
            return "hybrid"
        if MLA in kinds:
            return "mla"
        if kinds & {SLIDING, CHUNKED}:
            return "sliding window"
        return "moe" if any(m.experts for m in self.mlps) else "dense"

    @property
    def parameters_note(self) -> str:
        counts = {kind: self.layers.count(kind) for kind in dict.fromkeys(self.layers)}
        return ", ".join(f"{n} {kind}" for kind, n in counts.items())


# vLLM reads a config's llm_config as its text_config (vllm/transformers_utils/config.py,
# _CONFIG_ATTRS_MAPPING {"llm_config": "text_config"}, 0.10.1.1 to 0.33.0): InternVL's configs name it so.
def _text_key(data: Mapping[str, Any]) -> str:
    """The key that holds the language model's fields: text_config, or llm_config where only it is given."""
    return "llm_config" if "text_config" not in data and "llm_config" in data else "text_config"


def load(text: str, file: str) -> jsontext.JsonObject:
    """The config's JSON object, or a ConfigError naming the file."""
    try:
        data = jsontext.loads(text)
    except jsontext.JsonError as error:
        raise ConfigError(file, "(the file)", Said(error.found), "a JSON object" if error.expected == "JSON" else error.expected) from None
    if not isinstance(data, dict):
        raise ConfigError(file, "(the file)", type(data).__name__, "a JSON object")
    return data


# --quantization: the methods vLLM takes in place of a checkpoint's own, as each one's
# override_quantization_method answers (vllm/model_executor/layers/quantization/: awq_marlin.py
# and gptq_marlin.py up to 0.21.0; auto_gptq.py from 0.22.0 and auto_awq.py from 0.24.0, which also
# take auto_gptq and auto_awq; modelopt.py, 0.33.0), and the one method that quantizes an unquantized checkpoint
# as it loads: fp8, one float32 scale a tensor, activations scaled at run time (fp8.py, Fp8Config with
# is_checkpoint_fp8_serialized False; its quantization_config is what Fp8Config.from_config reads, with
# that flag kept so the weights say they were counted in fp8 as they load).
# moe_wna16 (moe_wna16.py), which also overrides awq and gptq, runs no Marlin kernel and is not modeled.
QUANTIZATION_OVERRIDES = {
    "awq": ("awq_marlin", "auto_awq", "marlin"),
    "gptq": ("gptq_marlin", "auto_gptq", "marlin"),
    "modelopt": ("modelopt_fp4", "modelopt_mixed"),
}
AT_LOAD: dict[str, jsontext.JsonObject] = {
    "fp8": {"quant_method": "fp8", "activation_scheme": "dynamic", "is_checkpoint_fp8_serialized": False},
    # bitsandbytes_loader.py _unquantized_generator: quantize_4bit(compress_statistics=True, quant_type="nf4"), one block of 64
    # a rank after the split (BitsAndBytesConfig's defaults otherwise; `pre_quant` is the loader's own name for the difference)
    "bitsandbytes": {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "pre_quant": False},
}


def quantized_at_load(text: str, method: str | None, file: str) -> str:
    """The config text as vLLM sizes it under --quantization METHOD (quantization_applied)."""
    if method is None:
        return text
    data = load(text, file)
    applied = quantization_applied(data, method, file)
    return text if applied is data else json.dumps(applied)


HF_QUANT_CONFIG = "hf_quant_config.json"  # ModelOpt up to 0.29.0 writes the checkpoint's quantization here, not in config.json


def with_hf_quant_config(text: str, beside: str, file: str, beside_file: str) -> tuple[str, str | None]:
    """The config with the quantization of the hf_quant_config.json beside it, as vLLM reads a checkpoint
    folder: where config.json has no quantization_config, that file's object is taken in its place
    (vllm/transformers_utils/config.py get_config), and one ModelOpt produced ("producer": {"name":
    "modelopt"}, its algorithm under "quantization") is read as quant_method modelopt
    (model_arch_config_convertor.py _normalize_quantization_config), 0.33.0. Returns the text and a note
    saying so, or the text as it was and None where the config has its own."""
    data = load(text, file)
    inner = data.get(_text_key(data))
    if data.get("quantization_config") is not None or (isinstance(inner, dict) and inner.get("quantization_config") is not None):
        return text, None
    quant = load(beside, beside_file)
    producer = quant.get("producer")
    nested = quant.get("quantization")
    if isinstance(producer, dict) and producer.get("name") == "modelopt" and isinstance(nested, dict) and "quant_method" not in quant:
        algo = nested.get("quant_algo")
        if not isinstance(algo, str) or not algo:
            raise ConfigError(
                beside_file, "quantization.quant_algo", algo if "quant_algo" in nested else _MISSING, "ModelOpt's algorithm, such as NVFP4 or FP8"
            )
        quant = {**quant, "quant_method": "modelopt"}
    note = (f"quantization from {beside_file} beside the config, which has no quantization_config of its own "
            f"(vllm/transformers_utils/config.py get_config reads that file in its place)")  # fmt: skip
    return json.dumps({**data, "quantization_config": quant}), note


def quantization_applied(data: jsontext.JsonObject, method: str, file: str) -> jsontext.JsonObject:
    """The config under --quantization METHOD (vllm/config/model.py _verify_quantization, 0.33.0): a
    checkpoint quantized with the same method, or one that overrides it, is itself; another method is
    refused, as vLLM refuses it; an unquantized checkpoint under fp8 gains the quantization_config
    fp8 quantizes it with as it loads."""
    method = method.strip().lower()
    inner = data.get(_text_key(data))
    own = data.get("quantization_config", inner.get("quantization_config") if isinstance(inner, dict) else None)
    if isinstance(own, dict) and own:  # an empty one quantizes nothing (weights.quant_of)
        name = own.get("quant_method", _MISSING)
        if not isinstance(name, str) or not name:
            raise ConfigError(file, "quantization_config.quant_method", name, "the method the checkpoint was saved with, such as fp8 or awq")
        checkpoint = name.lower()
        if method == checkpoint or method in QUANTIZATION_OVERRIDES.get(checkpoint, ()):
            return data
        raise InputError(
            f"--quantization: found {method!r} for a checkpoint quantized with {checkpoint!r} ({file}'s quantization_config), expected "
            + " or ".join(repr(m) for m in (checkpoint, *QUANTIZATION_OVERRIDES.get(checkpoint, ())))
            + " (vLLM refuses a method that does not match the config's: vllm/config/model.py _verify_quantization)"
        )
    if method not in AT_LOAD:
        raise InputError(
            f"--quantization: found {method!r} for an unquantized checkpoint ({file} has no quantization_config), expected "
            + " or ".join(repr(m) for m in AT_LOAD)
            + " (quantized as it loads); other methods need a checkpoint saved with them"
        )
    return {**data, "quantization_config": dict(AT_LOAD[method])}


class _Reader:
    """A config's fields; one it leaves out is its class's default (`defaults`, noted in `taken`),
    else the `default` the caller gives, else refused."""

    def __init__(self, data: Mapping[str, Any], file: str, prefix: str = "", architecture: str = "", defaults: dict[str, Any] | None = None) -> None:
        self.data, self.file, self.prefix, self.architecture = data, file, prefix, architecture
        self.defaults = defaults or {}
        self.taken: dict[str, Any] = {}

    def get(self, key: str, default: Any = _MISSING) -> Any:
        if key not in self.data and key in self.defaults:
            self.taken[key] = self.defaults[key]
            return self.defaults[key]
        return self.data.get(key, default)

    def int(self, key: str, default: Any = _MISSING, minimum: int = 1, maximum: int = MAX_DIMENSION) -> Any:
        value = self.get(key, default)
        if value is None and default is None:
            return None
        if value is _MISSING:
            raise ConfigError(self.file, self.prefix + key, _MISSING, "a whole number")
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(self.file, self.prefix + key, value, f"a whole number of at least {minimum}")
        if value > maximum:
            raise ConfigError(self.file, self.prefix + key, value, f"a whole number of at most {maximum}")
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        return as_flag(self.get(key, default), self.file, self.prefix + key)

    def layers(self) -> Any:
        return self.int("num_hidden_layers", maximum=MAX_LAYERS)


def as_flag(value: Any, file: str, path: str) -> bool:
    """A config's true/false: JSON's own, never a string ("no" is a non-empty string, so bool()
    once took "tie_word_embeddings": "no" as tied)."""
    if not isinstance(value, bool):
        raise ConfigError(file, path, value, "true or false")
    return value


# A head_dim written null: transformers 5.5.3 takes hidden_size / num_attention_heads for it where the config class says
# so (LlamaConfig, MistralConfig, GptOssConfig, Llama4TextConfig, ...), and vLLM's Qwen3, Qwen3-Next, Qwen3.5, GLM-4 and
# Nemotron-H attention does the same where the class keeps it null (qwen3.py, qwen3_next.py, glm4.py, nemotron_h.py,
# 0.33.0); Gemma's classes keep it null and vLLM's Gemma models hand it on as it is (gemma.py, gemma2.py, gemma3.py,
# gemma3n.py, gemma4.py: head_dim=config.head_dim), so no head size follows from it there.
NULL_HEAD_DIM_KEPT = ("Gemma",)


def _common(r: _Reader, bias: bool = False, llama: bool = False, qk_norm: str = "") -> dict[str, Any]:
    """The attention's dimensions. `bias` is attention_bias's default; on Llama's attention it
    also puts a bias on o_proj (vllm/model_executor/models/llama.py, bias_o_proj)."""
    heads = r.int("num_attention_heads")
    hidden = r.int("hidden_size")
    kv_heads = r.int("num_key_value_heads", heads)
    if kv_heads > heads or heads % kv_heads:
        raise ConfigError(
            r.file, r.prefix + "num_key_value_heads", kv_heads, f"a divisor of num_attention_heads ({heads}): each KV head serves a group of query heads"
        )
    attention_bias = r.flag("attention_bias", bias)
    if "head_dim" in r.data and r.data["head_dim"] is None and r.architecture.startswith(NULL_HEAD_DIM_KEPT):
        raise ConfigError(r.file, r.prefix + "head_dim", None, f"a whole number: transformers' config class keeps a null head_dim as null and vLLM's "
                          f"{r.architecture} passes config.head_dim to its attention as it is (gemma*.py, 0.33.0), with no fallback to hidden_size / heads")  # fmt: skip
    return {
        "hidden": hidden,
        "vocab": r.int("vocab_size"),
        "heads": heads,
        "kv_heads": kv_heads,
        "head_dim": r.int("head_dim", None) or hidden // heads,
        "attention_bias": attention_bias,
        "output_bias": attention_bias and llama,
        "qk_norm": qk_norm,
    }


def _uniform(r: _Reader, n: int) -> dict[str, Any]:
    """Layers of one kind: full attention, or all sliding where the config names a window.

    vLLM sets the cache's sliding window from a config whose layers are not interleaved
    (vllm/engine/arg_utils.py, 0.26.0: `if not is_interleaved(...)`), and every attention layer
    without a window of its own takes it (vllm/model_executor/layers/attention/attention.py).
    Qwen's configs keep the window only with use_sliding_window, and then slide the layers from
    max_window_layers on, which these models do not size. MiMo's config is Qwen2's (MiMoConfig, remote
    code, subclasses Qwen2Config), so it keeps the window the same way."""
    if r.architecture.startswith(("Qwen", "MiMo")):
        if r.get("use_sliding_window", False):
            raise ConfigError(r.file, r.prefix + "use_sliding_window", True, "false: Qwen's sliding-window layers (from max_window_layers on) are not modeled")
        return {"layers": (FULL,) * n}
    if r.get("sliding_window", None) in (None, 0):
        return {"layers": (FULL,) * n}
    return {"layers": (SLIDING,) * n, "sliding_window": r.int("sliding_window")}


def _untied(r: _Reader, source: str) -> None:
    """A class whose model code builds lm_head apart from the embedding and never ties them."""
    if r.flag("tie_word_embeddings", False):
        raise ConfigError(r.file, r.prefix + "tie_word_embeddings", True, f"false: vLLM's {source} builds lm_head apart from the embedding, never tied")


def _layer_types(r: _Reader, n: int, names: dict[str, str]) -> tuple[str, ...]:
    types = r.get("layer_types")
    if not isinstance(types, list) or len(types) != n:
        raise ConfigError(r.file, r.prefix + "layer_types", types, f"a list of {n} layer types")
    out = []
    for i, t in enumerate(types):
        if t not in names:
            raise ConfigError(r.file, f"{r.prefix}layer_types[{i}]", t, "one of " + ", ".join(names))
        out.append(names[t])
    return tuple(out)


_SLIDING_OR_FULL = {"sliding_attention": SLIDING, "full_attention": FULL}
_GEMMA_NORMS = ("pre_feedforward_layernorm", "post_feedforward_layernorm")


def _interleaved(n: int, every: int, other: str) -> tuple[str, ...]:
    """One full-attention layer in `every` (the last of each run), the others `other`."""
    return tuple(FULL if (i + 1) % every == 0 else other for i in range(n))


def _kinds(r: _Reader, n: int, other: str, name: str, interval_key: str) -> tuple[str, ...]:
    """The layer kinds from layer_types where the config lists them, else from the interval."""
    if isinstance(r.get("layer_types"), list):
        return _layer_types(r, n, {name: other, "full_attention": FULL})
    return _interleaved(n, r.int(interval_key), other)


def from_architecture(arch: Mapping[str, object], model_id: str) -> Shape:
    """A cache-only Shape from a catalog model's architecture fields (catalog/models.yaml):
    enough for the KV layout, not for the weights, which the catalog records as read."""
    r = _Reader(arch, "catalog/models.yaml", f"models[{model_id}].architecture.")
    n, kind = r.int("layers"), arch.get("attention")
    common = {"file": f"catalog model {model_id}", "architecture": f"catalog: {kind}", "hidden": 0, "vocab": 0, "mlps": (Mlp(),) * n}
    if kind == "mla":
        return Shape(**common, heads=1, kv_heads=1, head_dim=0, layers=(MLA,) * n, kv_lora_rank=r.int("kv_lora_rank"),
                     qk_rope_head_dim=r.int("qk_rope_head_dim"), drafter_layers=r.int("drafter_layers", 0, minimum=0))  # fmt: skip
    heads = r.int("kv_heads")
    dims = {"heads": heads, "kv_heads": heads, "head_dim": r.int("head_dim"), "drafter_layers": r.int("drafter_layers", 0, minimum=0)}
    if kind == "full":
        return Shape(**common, **dims, layers=(FULL,) * n)
    state = r.get("state_dtype", None)
    if kind == "mamba":  # Nemotron-H: the layer kinds spelled out as its config's pattern
        pattern = arch.get("hybrid_override_pattern")
        if not isinstance(pattern, str) or len(pattern) != n or set(pattern) - set("M*-E"):
            raise ConfigError(r.file, r.prefix + "hybrid_override_pattern", pattern, f"{n} characters of M, *, - and E")
        layers = tuple({"M": MAMBA, "*": FULL}.get(c, MLP_ONLY) for c in pattern)
        mamba = Mamba2Mixer(**{k: r.int(f"mamba_{k}") for k in ("heads", "head_dim", "state", "groups", "conv_kernel")})
        return Shape(**common, **dims, layers=layers, mamba=mamba, state_dtype_bytes=DTYPE_BYTES[state] if state else None)
    every = r.int("full_attention_interval")
    if kind == "sliding":
        return Shape(**common, **dims, layers=_interleaved(n, every, SLIDING), sliding_window=r.int("sliding_window"))
    layers = _interleaved(n, every, LINEAR)
    linear = GatedDeltaNet(**{k: r.int(f"linear_{k}") for k in ("k_heads", "v_heads", "k_dim", "v_dim")}, conv_kernel=r.int("conv_kernel"))
    return Shape(**common, **dims, layers=layers, linear=linear, state_dtype_bytes=DTYPE_BYTES[state] if state else None)
