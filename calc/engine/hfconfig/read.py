"""A config.json read whole (shape): its class's reader (registry.py) and what every class shares,
the dtype, the tie, the quantization, the rope caches vLLM builds and the declared context; a shape
at a max_model_len (at_max_model_len); the max_model_len vLLM derives from the config."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from calc import jsontext
from calc.engine.hfconfig.core import _MISSING, CHUNKED, DTYPE_BYTES, FULL, MLA, PARALLEL, SLIDING, ConfigError, Rope, Said, Shape, _Reader, _text_key, as_flag
from calc.engine.hfconfig.defaults import _DEFAULTS, _WRITTEN_IN_FULL, VLLM_CONFIG_CLASSES
from calc.engine.hfconfig.multimodal import _LLAVA_TEXT_CLASSES, LLAVA, WITH_VISION, _tower
from calc.engine.hfconfig.recurrent import MINIMAX_TEXT
from calc.engine.hfconfig.registry import _ARCHITECTURES, NO_LONGER_SERVED, NOT_MODELED, SERVED_NOT_READ


def shape(config: jsontext.JsonObject, file: str = "config.json") -> Shape:
    """The config read for the weight and KV models; ConfigError names what is missing."""
    data: dict[str, Any] = config  # each field is checked as it is read
    archs = data.get("architectures")
    if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
        raise ConfigError(file, "architectures", archs if archs is not None else _MISSING, 'a list naming the model class, such as ["LlamaForCausalLM"]')
    arch = archs[0]
    reader = _ARCHITECTURES.get(arch)
    if arch in NOT_MODELED:
        raise ConfigError(file, "architectures[0]", arch, f"a class vLLM builds with model code of its own: {NOT_MODELED[arch]}; not modeled")
    if reader is None:
        if arch in NO_LONGER_SERVED:  # vLLM's own refusal: "was supported in vLLM until v..., and is not supported anymore"
            arch = Said(f"{arch!r}, which vLLM served up to v{NO_LONGER_SERVED[arch]} and no later release (registry.py _PREVIOUSLY_SUPPORTED_MODELS, 0.33.0)")
        elif arch in SERVED_NOT_READ:
            arch = Said(f"{arch!r}, which vLLM 0.33.0 serves (vllm/model_executor/models/registry.py) but these models do not read")
        raise ConfigError(file, "architectures[0]", arch, "one of " + ", ".join(sorted(_ARCHITECTURES)))
    key = _text_key(data)
    text = data.get(key)
    if (text is not None or arch in WITH_VISION and key in data) and not isinstance(text, dict):
        raise ConfigError(file, key, text, "an object holding the language model's fields")
    inner = text if isinstance(text, dict) else data
    config_class, defaults = _class_defaults(data, inner, arch)
    if inner is data:  # a top level holds its class's fields in full: only those that postdate it are filled in
        defaults = {k: v for k, v in defaults.items() if k not in _WRITTEN_IN_FULL}
    r = _Reader(inner, file, key + "." if inner is not data else "", arch, defaults)
    quant = data.get("quantization_config", inner.get("quantization_config"))
    if quant is not None and not isinstance(quant, dict):
        raise ConfigError(file, "quantization_config", quant, "an object")
    # a dtype written null is absent (transformers_utils/model_arch_config_convertor.py, 0.33.0): the next place is read
    named = next(
        ((f"{pre}{k}", where[k]) for pre, where in (("", data), (key + ".", inner)) for k in ("torch_dtype", "dtype") if where.get(k) is not None), None
    )
    field, dtype = named or ("torch_dtype", "bfloat16")
    if not isinstance(dtype, str) or dtype not in DTYPE_BYTES:
        raise ConfigError(file, field, dtype, "bfloat16, float16 or float32")
    for rope_key in ("rope_scaling", "rope_parameters"):
        if inner.get(rope_key) is not None and not isinstance(inner[rope_key], dict):
            raise ConfigError(file, r.prefix + rope_key, inner[rope_key], 'an object such as {"rope_type": "yarn", "factor": 4.0}, or null')
    fields = reader(r)
    _top_k_checked(r, fields)
    filled: list[_Reader] = []  # the tower's readers that took a class's defaults
    tower = _tower(data, file, arch, fields["hidden"], filled) if arch in WITH_VISION else None
    tie = data.get("tie_word_embeddings", inner.get("tie_word_embeddings", _MISSING))
    if arch in LLAVA:  # the language model reads its own config's (llama.py over text_config), not the wrapper's
        tie = inner.get("tie_word_embeddings", _MISSING)
    where = "tie_word_embeddings" if "tie_word_embeddings" in data and arch not in LLAVA else r.prefix + "tie_word_embeddings"
    if "tie_embeddings" in fields:  # a class whose model code ties (or unties) the head whatever the config says
        tie = fields.pop("tie_embeddings")
    else:
        tie = as_flag(r.get("tie_word_embeddings", False) if tie is _MISSING else tie, file, where)
    taken = ", ".join(f"{r.prefix}{key} {json.dumps(value)}" for key, value in r.taken.items())
    from_where = "in vLLM's own vllm/transformers_utils/configs/" if config_class in VLLM_CONFIG_CLASSES else "in transformers 5.5.3"
    noted: tuple[str, ...] = (f"not in the config, taken as {config_class}'s defaults {from_where}: {taken}",) if taken else ()
    for other in filled:  # a tower reader's `architecture` names its transformers class
        if other.taken:
            said = ", ".join(f"{other.prefix}{key} {json.dumps(value)}" for key, value in other.taken.items())
            noted += (f"not in the config, taken as {other.architecture}'s defaults in transformers 5.5.3: {said}",)
    # --dtype auto downcasts a float32 checkpoint to the GPU's first dtype, bfloat16 from Ampere on
    # (vllm/config/model.py, _resolve_auto_dtype: "Downcast for float32 models")
    float32 = DTYPE_BYTES[dtype] == 4
    return Shape(file=file, architecture=arch, dtype_bytes=2 if float32 else DTYPE_BYTES[dtype], float32_checkpoint=float32,
                 tie_embeddings=tie, quantization=quant, defaults=noted,
                 max_positions=_max_positions(inner), tower=tower, ropes=_ropes(inner, fields, defaults, arch, file),
                 batched_tokens_floor=batched_tokens_floor(data), **fields)  # fmt: skip


def _top_k_checked(r: _Reader, fields: Mapping[str, Any]) -> None:
    """num_experts_per_tok, where an MoE config gives it: a whole number no larger than the experts a layer routes
    among (vLLM's FusedMoE picks that many of them a token; more than there are is a mistyped config)."""
    experts = max((m.experts for m in fields.get("mlps", ())), default=0)
    value = r.data.get("num_experts_per_tok")
    if not experts or value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= experts:
        raise ConfigError(r.file, r.prefix + "num_experts_per_tok", value, f"a whole number from 1 to {experts}, the experts each MoE layer routes among")


# Gemma 4's multimodal classes as prefix LMs, whose one item must fit one batch: the largest item is a video of
# _VIDEO_MAX_FRAMES (32) frames of _VIDEO_MAX_SOFT_TOKENS (70) soft tokens and 2 + 6 more each (gemma4_mm.py
# get_mm_max_tokens_per_item, which gemma4_unified.py keeps; 0.22.0 to 0.33.0), above any image (at most 1,120
# soft tokens) or audio clip; a limit of videos, even 0, leaves it so (only a num_frames option lowers it).
MM_PREFIX_ITEM_TOKENS = 32 * (70 + 2 + 6)
MM_PREFIX_FLOOR_FROM = (0, 22)


def batched_tokens_floor(config: Mapping[str, Any]) -> int:
    """The least max_num_batched_tokens vLLM takes by default for this config, 0 for none: a multimodal Gemma 4
    whose text_config says use_bidirectional_attention "vision" is a prefix LM (vllm/transformers_utils/
    model_arch_config_convertor.py Gemma4ModelArchConfigConvertor.is_mm_prefix_lm), and vLLM raises a default
    max_num_batched_tokens to its largest item's tokens (vllm/engine/arg_utils.py _get_min_mm_batched_tokens,
    "Raising max_num_batched_tokens", 0.22.0 to 0.33.0); a value given on the command line stays."""
    archs = config.get("architectures")
    text = config.get("text_config")
    arch = archs[0] if isinstance(archs, list) and archs else None
    if arch not in ("Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration") or not isinstance(text, dict):
        return 0
    return MM_PREFIX_ITEM_TOKENS if text.get("use_bidirectional_attention") == "vision" else 0


MROPE_FACTOR_FROM = (0, 32)  # qwen3_vl.py mrope_positions_factor: Qwen3-VL's and Qwen3.5's M-RoPE cache at 1 x the positions


def ropes_as_loaded(shape: Shape, rel: tuple[int, int]) -> Shape:
    """The shape's rope caches as a release builds them: before v0.32.0 Qwen3-VL's and Qwen3.5's M-RoPE
    cache holds 4 x the positions as every M-RoPE's does (rotary_embedding/mrope.py MRotaryEmbedding:
    `max_position_embeddings * 4`, read in 0.24.0 and 0.28.0); from v0.32.0 the model passes
    mrope_positions_factor, 1 unless video pruning is on (read in 0.33.0)."""
    if not any(r.grown_before and rel < r.grown_before for r in shape.ropes):
        return shape
    return replace(shape, ropes=tuple(replace(r, positions=r.positions * 4) if r.grown_before and rel < r.grown_before else r for r in shape.ropes))


def at_max_model_len(shape: Shape, max_model_len: int) -> Shape:
    """The shape as vLLM builds it for a max_model_len: a capped rope's cache holds no more positions than
    it (minimax_text_01.py: max_position = min(max_position_embeddings, max_model_len), 0.10.1.1 to 0.23.0)."""
    if not any(rope.capped for rope in shape.ropes):
        return shape
    ropes = tuple(replace(rope, positions=min(rope.positions, max_model_len)) if rope.capped else rope for rope in shape.ropes)
    return replace(shape, ropes=ropes)


def _max_positions(config: dict[str, Any]) -> int | None:
    """The longest context the config declares, where no rope scaling stretches it (vLLM derives
    the limit from both: vllm/config/model.py, _get_and_verify_max_len)."""
    positions = config.get("max_position_embeddings")
    scaled = any(isinstance(config.get(key), dict) and config[key] for key in ("rope_scaling", "rope_parameters"))
    if scaled or isinstance(positions, bool) or not isinstance(positions, int) or positions < 1:
        return None
    return positions


_LAYER_TYPE_KIND = {"full_attention": "full", "sliding_attention": "sliding"}


def _rope_positions(rp: Mapping[str, Any], max_pos: int, top_original: object = None) -> int:
    """How many positions a rope's cache holds (vllm/model_executor/layers/rotary_embedding/__init__.py
    get_rope, 0.20.0): a linear or dynamic factor stretches the model's positions, YaRN's (and
    DeepSeek's) its original ones; LongRoPE keeps a short cache and a long one; the rest, the model's.
    A dynamic rope with an alpha (Hunyuan's) is DynamicNTKAlphaRotaryEmbedding, whose cache holds the
    model's positions whatever its factor (rotary_embedding/dynamic_ntk_alpha_rope.py, 0.10.1.1 to 0.33.0)."""
    kind = str(rp.get("rope_type", rp.get("type", "default")))
    factor = rp.get("factor", 1)
    factor = factor if isinstance(factor, (int, float)) and not isinstance(factor, bool) and factor > 0 else 1
    original = rp.get("original_max_position_embeddings", top_original)  # Phi-3 writes it beside the rope, not in it
    original = original if isinstance(original, int) and not isinstance(original, bool) and original > 0 else max_pos
    if kind == "dynamic" and "alpha" in rp:
        return max_pos
    if kind in ("linear", "dynamic"):
        return int(max_pos * factor)
    if kind in ("yarn", "deepseek_yarn"):
        return int(original * factor)
    if kind in ("longrope", "su"):
        return original + max_pos
    return max_pos


def _ropes(inner: Mapping[str, Any], fields: Mapping[str, Any], defaults: Mapping[str, Any], arch: str, file: str = "config.json") -> tuple[Rope, ...]:
    """The cos/sin caches of a model's attention layers: one for each distinct rope; Gemma 3's
    sliding layers keep their own at the local base, unscaled (gemma3.py), a config's rope
    parameters by layer type give each kind its own. A length the config leaves out is its
    transformers class's default (`defaults`)."""
    layers = fields["layers"]
    kinds = [k for k in (FULL, SLIDING, MLA, CHUNKED, PARALLEL) if k in layers]
    if arch.startswith("Llama4"):  # its full-attention layers are NoPE: only the chunked ones rotate (llama4.py)
        kinds = [CHUNKED]
    if arch == "GraniteMoeHybridForCausalLM" and inner.get("position_embedding_type") != "rope":
        return ()  # granitemoehybrid.py builds a rope only for position_embedding_type "rope" (Granite 4.0-H: "nope")
    max_pos = inner.get("max_position_embeddings", defaults.get("max_position_embeddings"))
    if arch.startswith("Cohere"):  # commandr.py: model_max_length, else max_position_embeddings
        max_pos = inner.get("model_max_length") or max_pos
    if arch.startswith("ChatGLM"):  # chatglm.py: seq_length positions, vLLM's ChatGLMConfig's 2,048 where none is given
        max_pos = inner.get("seq_length", defaults.get("seq_length", 2048))
        if isinstance(max_pos, bool) or not isinstance(max_pos, int) or max_pos < 1:
            raise ConfigError(file, "seq_length", max_pos, "a whole number of positions, such as 131072")
    if not kinds or not isinstance(max_pos, int) or isinstance(max_pos, bool) or max_pos < 1:
        return ()
    if fields.get("compress_ratios"):  # DeepSeek V4: build_deepseek_v4_rope's caches (a plain one for the sliding layers,
        return ()  # compress_rope_theta's for the compressed ones, deepseek_v4/common/rope.py) are not modeled
    if arch.startswith(("NemotronH", "Jamba")):  # their attention layers take no rope (nemotron_h.py, jamba.py build none, 0.20.0 and 0.33.0)
        return ()
    if arch == "BaichuanForCausalLM" and fields["hidden"] != 4096:  # baichuan.py: ALiBi, no rope, but for Baichuan2 7B's 4,096
        return ()
    if arch == "GPTBigCodeForCausalLM" or arch == "FalconForCausalLM" and inner.get("alibi", False) is True:
        return ()  # gpt_bigcode.py learns its positions (wpe); falcon.py's alibi layers take slopes, no rope
    if MLA in layers:
        rot = fields.get("qk_rope_head_dim") or 0
    elif isinstance(inner.get("rotary_dim"), int) and not isinstance(
        inner.get("rotary_dim"), bool
    ):  # MiniMax-M2 writes it (minimax_m2.py rotary_dim=config.rotary_dim, 0.20.0)
        rot = inner["rotary_dim"]
    elif arch.startswith("FalconH1"):  # falcon_h1.py: attn_rotary_emb where the config has it, else the head (0.20.0 and 0.33.0)
        given = inner.get("attn_rotary_emb")
        rot = given if isinstance(given, int) and not isinstance(given, bool) and given > 0 else fields["head_dim"]
    elif arch.startswith("ChatGLM"):  # chatglm.py: partial_rotary_factor 0.5 written in (0.13.0 to 0.33.0)
        rot = fields["head_dim"] // 2
    elif arch == "GPTNeoXForCausalLM":  # gpt_neox.py: rotary_pct of the head (0.10.1.1; rope_parameters' partial_rotary_factor from it, 0.31.0)
        partial = inner.get("rotary_pct", inner.get("partial_rotary_factor", defaults.get("rotary_pct", 1)))  # transformers 5 saves the latter
        partial = partial if isinstance(partial, (int, float)) and not isinstance(partial, bool) and 0 < partial <= 1 else 1
        rot = int(fields["head_dim"] * partial)
    else:
        partial = inner.get("partial_rotary_factor", defaults.get("partial_rotary_factor", 1))
        partial = partial if isinstance(partial, (int, float)) and not isinstance(partial, bool) and 0 < partial <= 1 else 1
        rot = int(fields["head_dim"] * partial)
    if not rot:
        return ()
    rope = inner.get("rope_parameters") or inner.get("rope_scaling") or {}
    rope = rope if isinstance(rope, dict) else {}
    nested = {_LAYER_TYPE_KIND[k]: v for k, v in rope.items() if k in _LAYER_TYPE_KIND and isinstance(v, dict)}
    out: list[Rope] = []
    seen: set[tuple[int, int, bool, str]] = set()
    for kind in kinds:
        rp = nested.get(kind, {} if nested else rope)
        local = kind == SLIDING and arch.startswith("Gemma3")  # Gemma 3: the local rope, at its own base, unscaled
        positions = _rope_positions({} if local else rp, max_pos, inner.get("original_max_position_embeddings"))
        if arch.startswith("Gemma4"):  # each kind its own head; a proportional rope's cache spans the whole head whatever its
            # partial_rotary_factor (rotary_embedding/gemma4_rope.py Gemma4RotaryEmbedding: rotary_dim = head_size, 0.19.0 to 0.33.0)
            head = fields["full_kv"][1] if kind == FULL and fields.get("full_kv") else fields["head_dim"]
            part = rp.get("partial_rotary_factor", 1)
            part = part if isinstance(part, (int, float)) and not isinstance(part, bool) and 0 < part <= 1 else 1
            rot = head if rp.get("rope_type") == "proportional" else int(head * part)
        grown = None
        if "mrope_section" in rp or rp.get("type") == "mrope" or rp.get("rope_type") == "mrope":
            # M-RoPE keeps 4 x the positions (rotary_embedding/mrope.py, 0.8.2 to 0.33.0); from 0.32.0
            # Qwen3-VL and Qwen3.5 pass 1 unless video pruning is on (qwen3_vl.py mrope_positions_factor),
            # so theirs is read at 1 x and grown to 4 x for the releases before (ropes_as_loaded)
            if arch.startswith(("Qwen3VL", "Qwen3_5")):
                grown = MROPE_FACTOR_FROM
            else:
                positions *= 4
        key = (positions, rot, local, json.dumps(rp, sort_keys=True, default=str))  # get_rope's cache key: its base and scaling too
        if key not in seen:
            seen.add(key)
            # gpt_oss.py get_rope(dtype=torch.float32), 0.11.0 to 0.33.0; minimax_text_01.py the same, for
            # min(max_position_embeddings, max_model_len) positions (MiniMaxText01Attention, 0.10.1.1 to 0.23.0)
            minimax = arch in MINIMAX_TEXT
            out.append(Rope(kind, positions, rot, 4 if arch.startswith("GptOss") or minimax else None, capped=minimax, grown_before=grown))
    if fields.get("indexer") and out:  # DeepSeek V3.2's indexer rope: neox style, a cache of its own (deepseek_v2.py, 0.13.0 to 0.33.0)
        out.append(out[0])
    return tuple(out)


# The keys vLLM reads a model's longest context from, the smallest present winning
# (vllm/transformers_utils/model_arch_config_convertor.py derive_max_model_len_and_key, 0.33.0;
# vllm/config/model.py _get_and_verify_max_len up to 0.2x), and the rope types whose factor does
# not stretch it: from 0.30.0 YaRN's too, whose max_position_embeddings is taken as scaled already.
_LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
                "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")  # fmt: skip
_UNSTRETCHED = ("su", "longrope", "llama3")
_UNSTRETCHED_FROM_0_30 = (*_UNSTRETCHED, "yarn", "deepseek_yarn", "deepseek_llama_scaling")
DEFAULT_MAX_LEN = 2048  # no key in the config: vLLM assumes it, with a warning


@dataclass(frozen=True)
class DerivedLength:
    """The max_model_len vLLM takes when none is given (or -1, auto): from the config alone."""

    tokens: int  # the longest vLLM takes without VLLM_ALLOW_LONG_MAX_MODEL_LEN
    source: str
    default: int | None = None  # what it takes when none is given (or -1), where that is shorter (LongRoPE); None: tokens
    default_source: str = ""
    keyed: bool = True  # False: the config has no length key, and vLLM takes any max_model_len given (tokens is what it assumes for none)

    @property
    def longest_taken(self) -> int | None:
        """The longest max_model_len vLLM takes without VLLM_ALLOW_LONG_MAX_MODEL_LEN; None: any."""
        return self.tokens if self.keyed else None

    @property
    def given_none(self) -> tuple[int, str]:
        """The length vLLM takes when none is given, and where it comes from."""
        return (self.default, self.default_source) if self.default is not None else (self.tokens, self.source)


def _class_defaults(data: Mapping[str, Any], inner: Mapping[str, Any], arch: str) -> tuple[str, dict[str, Any]]:
    """The transformers class vLLM reads the (text) config through, and the fields it fills in."""
    text_type = inner.get("model_type") if inner is not data else None  # a wrapper's text model can be of more than one class
    if arch in LLAVA and inner is not data:  # LlavaConfig reads a text_config without model_type as llama
        return _LLAVA_TEXT_CLASSES.get(text_type if isinstance(text_type, str) else "llama", ("", {}))
    return _DEFAULTS.get(text_type if isinstance(text_type, str) else arch) or _DEFAULTS.get(arch, ("", {}))


def derived_max_model_len(config: jsontext.JsonObject, rel: tuple[int, int], file: str = "config.json") -> DerivedLength:
    """The longest context vLLM derives from the config (the text config of a multimodal one):
    the smallest of the length keys (a model_max_length wins outright), times the rope scaling
    factor unless the rope type is one that does not stretch it, and, up to 0.29.x, a YaRN
    factor times its original_max_position_embeddings (vllm/config/model.py
    _get_and_verify_max_len, 0.11.0 to 0.33.0). Gemma 3's is taken as scaled already. A
    tokenizer_config.json's model_max_length, which vLLM also caps it by, is not read."""
    data: dict[str, Any] = config
    text = data.get(_text_key(data))
    inner: dict[str, Any] = text if isinstance(text, dict) else data
    archs = data.get("architectures")
    config_class, defaults = _class_defaults(data, inner, archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else "")
    prefix = f"{_text_key(data)}." if inner is not data else ""
    for k in _LENGTH_KEYS:  # vLLM takes the min of those given (not None): a string or a count below one stops it or yields no length
        v = inner.get(k)
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 1):
            raise ConfigError(file, prefix + k, v, "a whole number of tokens, at least 1 (vllm/config/model.py _get_and_verify_max_len takes the smallest)")
    found = {k: v for k in _LENGTH_KEYS if isinstance(v := inner.get(k, defaults.get(k)), (int, float)) and not isinstance(v, bool) and v > 0}
    where = "vllm/config/model.py _get_and_verify_max_len"
    if "model_max_length" in found:
        key, length = "model_max_length", found["model_max_length"]
    elif found:
        key = min(found, key=lambda k: found[k])
        length = found[key]
    else:
        # none of the keys: a max_model_len given is taken as it is, none given is DEFAULT_MAX_LEN
        return DerivedLength(DEFAULT_MAX_LEN, f"none of {', '.join(_LENGTH_KEYS[:2])}... in {file}: vLLM assumes {DEFAULT_MAX_LEN} ({where})", keyed=False)
    said = f"{file}'s {key} ({length:,})" if key in inner else f"{key} {length:,}, not in {file}: {config_class}'s default in transformers 5.5.3"
    model_type = str(data.get("model_type", ""))
    rope = inner.get("rope_parameters") or inner.get("rope_scaling")
    params = [rope] if isinstance(rope, dict) and ("rope_type" in rope or "type" in rope) else list(rope.values()) if isinstance(rope, dict) else []
    unstretched = _UNSTRETCHED_FROM_0_30 if rel >= (0, 30) else _UNSTRETCHED
    if "gemma3" not in model_type:
        factor: float = 1.0
        for rp in params:
            if not isinstance(rp, dict):
                continue
            kind = str(rp.get("rope_type", rp.get("type", "default")))
            if kind in unstretched or kind in ("default", "mrope"):
                continue
            f = rp.get("factor", factor)
            if f is not None and (not isinstance(f, (int, float)) or isinstance(f, bool) or f <= 0):  # vLLM multiplies the length by it
                raise ConfigError(file, prefix + ("rope_parameters" if "rope_parameters" in inner else "rope_scaling") + ".factor", f, "a number above 0")
            factor = f if f is not None else 1.0
            original = rp.get("original_max_position_embeddings")
            if kind == "yarn" and isinstance(original, int) and not isinstance(original, bool) and original > 0:
                length, said = original, f"{file}'s rope original_max_position_embeddings ({original:,})"
        if factor != 1.0:
            length, said = length * factor, f"{said} x the rope scaling factor {factor:g}"
    era = "0.30.0 and later" if rel >= (0, 30) else "up to 0.29.x"
    # none given (or -1): from 0.12.0 a LongRoPE model starts at its original length, not the stretched one
    original = data.get("original_max_position_embeddings", inner.get("original_max_position_embeddings"))
    longrope = any(isinstance(rp, dict) and str(rp.get("rope_type", rp.get("type"))) in ("longrope", "su") for rp in params)
    if longrope and rel >= (0, 12) and isinstance(original, int) and not isinstance(original, bool) and original > 0:
        return DerivedLength(int(length), f"{said} ({where}, {era})", original,
                             f"{file}'s original_max_position_embeddings ({original:,}): LongRoPE's, which vLLM takes when none is given, from 0.12.0 ({where})")  # fmt: skip
    return DerivedLength(int(length), f"{said} ({where}, {era})")
