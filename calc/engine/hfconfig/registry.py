"""Which reader reads which class (_ARCHITECTURES, model_classes), the wrappers whose language model
is read by another class's reader (LLaVA, InternVL), and the tables of classes: no pipeline parallel,
the releases that build a class with its own model code, the classes not modeled or unchecked."""

from __future__ import annotations

import json
from typing import Any

from calc.engine.hfconfig.core import _MISSING, ConfigError, _Reader, load
from calc.engine.hfconfig.dense import (
    _baichuan,
    _chatglm,
    _cohere,
    _decilm,
    _dense,
    _ernie45,
    _exaone,
    _exaone4,
    _falcon,
    _gemma,
    _gemma2,
    _gemma3,
    _glm4,
    _gpt_bigcode,
    _gpt_neox,
    _internlm2,
    _internlm3,
    _llama,
    _mimo,
    _minicpm,
    _nemotron,
    _olmo,
    _phi,
    _qwen3,
    _starcoder2,
)
from calc.engine.hfconfig.moe import (
    _bailing,
    _deepseek,
    _deepseek_v1,
    _deepseek_v4,
    _deepseek_v32,
    _ernie45_moe,
    _glm4_moe,
    _gpt_oss,
    _granite_moe,
    _hunyuan,
    _llama4,
    _minimax_m2,
    _mixtral,
    _olmoe,
    _phimoe,
    _qwen_moe,
)
from calc.engine.hfconfig.multimodal import _LLAVA_TEXT, _gemma3n, _gemma4
from calc.engine.hfconfig.recurrent import (
    MINIMAX_TEXT,
    _falcon_h1,
    _granite_hybrid,
    _jamba,
    _lfm2,
    _mamba2_pure,
    _mamba_pure,
    _minimax_text01,
    _nemotron_h,
    _qwen3_next,
)

# vLLM refuses pipeline parallel for a model class without SupportsPP (vllm/config/model.py
# verify_with_parallel_config: "Pipeline parallelism is not supported for this model"):
# gemma3n.py Gemma3nForCausalLM and gemma3n_mm.py Gemma3nForConditionalGeneration (0.10.1.1 to 0.33.0),
# minimax_text_01.py MiniMaxText01ForCausalLM, which MiniMaxM1ForCausalLM names too (0.10.1.1 to 0.23.0).
NO_PIPELINE = frozenset({"Gemma3nForCausalLM", "Gemma3nForConditionalGeneration", *MINIMAX_TEXT})


# The language models an InternVL config's llm_config may name that these readers size; InternLM2
# (InternVL2 and InternVL 2.5's 8B and 26B) is read as on its own (_internlm2); the others vLLM builds are refused.
_INTERNVL_TEXT = ("Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM", "LlamaForCausalLM", "InternLM2ForCausalLM")


def _llava(r: _Reader) -> dict[str, Any]:
    """LLaVA's language model: text_config's architectures[0], else its model_type's
    causal LM (llama when LlavaConfig is given none), built by init_vllm_registered_model over text_config."""
    if not r.prefix:  # LlavaConfig would build LlamaConfig() whole from its defaults: a config without one is refused
        raise ConfigError(r.file, "text_config", _MISSING, "an object holding the language model's fields")
    archs = r.data.get("architectures")
    model_type = r.data.get("model_type", "llama")
    inner = (
        archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else _LLAVA_TEXT.get(model_type) if isinstance(model_type, str) else None
    )
    if inner is None or inner not in _LLAVA_TEXT.values():
        where, found = ("architectures[0]", inner) if isinstance(archs, list) and archs else ("model_type", model_type)
        raise ConfigError(
            r.file,
            r.prefix + where,
            found,
            "one of " + ", ".join(_LLAVA_TEXT.values()) + " (llama or mistral): other language models under LLaVA are not modeled",
        )
    text = _Reader(r.data, r.file, r.prefix, inner, r.defaults)
    text.taken = r.taken
    fields: dict[str, Any] = _ARCHITECTURES[inner](text)
    return fields


def _internvl(r: _Reader) -> dict[str, Any]:
    """InternVL 2.5, 3 and 3.5 (vllm/model_executor/models/internvl.py, InternVLChatModel, 0.10.1.1 to
    0.33.0): the language model is the class llm_config names, built over it by
    init_vllm_registered_model, and read here by that class's own reader."""
    archs = r.data.get("architectures")
    inner = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    if inner not in _INTERNVL_TEXT:
        raise ConfigError(r.file, r.prefix + "architectures[0]", inner if inner is not None else _MISSING,
                          "one of " + ", ".join(_INTERNVL_TEXT) + ": other language models under InternVL are not modeled")  # fmt: skip
    text = _Reader(r.data, r.file, r.prefix, inner, r.defaults)
    text.taken = r.taken
    fields: dict[str, Any] = _ARCHITECTURES[inner](text)
    return fields


_ARCHITECTURES = {
    "LlamaForCausalLM": _llama,
    "MistralForCausalLM": _llama,
    "Mistral3ForConditionalGeneration": _llama,
    "Phi3ForCausalLM": _llama,
    "GraniteForCausalLM": _llama,
    "Qwen2ForCausalLM": lambda r: _dense(r, bias=True),  # Qwen2's q/k/v carry a bias
    "Qwen2_5_VLForConditionalGeneration": lambda r: _dense(r, bias=True),
    # Qwen2-VL: Qwen2's layers (qwen2_vl.py builds Qwen2ForCausalLM over the config, 0.10.1.1 to 0.33.0)
    "Qwen2VLForConditionalGeneration": lambda r: _dense(r, bias=True),
    "Qwen3ForCausalLM": _qwen3,
    "Qwen3VLForConditionalGeneration": _qwen3,
    "Qwen3MoeForCausalLM": lambda r: _qwen_moe(r, qk_norm="head"),
    "Qwen3VLMoeForConditionalGeneration": lambda r: _qwen_moe(r, qk_norm="head"),
    "Qwen2MoeForCausalLM": lambda r: _qwen_moe(r, bias=True),
    "SeedOssForCausalLM": lambda r: _dense(r, bias=True),
    "Olmo2ForCausalLM": _olmo,
    "Olmo3ForCausalLM": _olmo,
    "Glm4ForCausalLM": _glm4,
    "Glm4MoeForCausalLM": _glm4_moe,
    # GLM-4.5V / 4.6V: GLM-4.5-Air's layers from text_config (glm4_1v.py Glm4vForConditionalGeneration
    # builds Glm4MoeForCausalLM for model_type glm4v_moe, 0.33.0)
    "Glm4vMoeForConditionalGeneration": _glm4_moe,
    "Glm4vForConditionalGeneration": lambda r: _glm4(r, bias=False),
    "MiniMaxM2ForCausalLM": _minimax_m2,
    "Gemma2ForCausalLM": _gemma2,
    "MixtralForCausalLM": _mixtral,
    "DeepseekV3ForCausalLM": _deepseek,
    "DeepseekForCausalLM": _deepseek_v1,
    "DeepseekV2ForCausalLM": _deepseek,
    "DeepseekV32ForCausalLM": _deepseek_v32,
    "DeepseekV4ForCausalLM": _deepseek_v4,
    # GLM-5 and 5.1: DeepSeek V3.2's layers (deepseek_v2.py GlmMoeDsaForCausalLM, a subclass that adds
    # nothing, 0.16.0 to 0.28.0; vllm/models/deepseek_v32, the same class as DeepSeek V3.2's, 0.29.0 to 0.33.0)
    "GlmMoeDsaForCausalLM": _deepseek_v32,
    "DeciLMForCausalLM": _decilm,
    "GptOssForCausalLM": _gpt_oss,
    "Gemma3ForCausalLM": _gemma3,
    "Gemma3ForConditionalGeneration": _gemma3,
    "Qwen3NextForCausalLM": _qwen3_next,
    "Qwen3_5ForCausalLM": _qwen3_next,
    "Qwen3_5ForConditionalGeneration": _qwen3_next,
    # Qwen3.5 / 3.6 MoE: Qwen3-Next's layers, each a sparse MoE block (vllm/model_executor/models/qwen3_5.py,
    # Qwen3_5DecoderLayer: model_type qwen3_5_moe_text takes Qwen3NextSparseMoeBlock, 0.33.0)
    "Qwen3_5MoeForConditionalGeneration": _qwen3_next,
    "NemotronForCausalLM": _nemotron,
    "NemotronHForCausalLM": _nemotron_h,
    "GraniteMoeHybridForCausalLM": _granite_hybrid,
    "JambaForCausalLM": _jamba,
    "MambaForCausalLM": _mamba_pure,
    "FalconMambaForCausalLM": _mamba_pure,  # the registry maps it to mamba.py's MambaForCausalLM (0.10.1.1 to 0.33.0)
    "Mamba2ForCausalLM": _mamba2_pure,
    "FalconH1ForCausalLM": _falcon_h1,
    "Lfm2ForCausalLM": _lfm2,
    "Lfm2MoeForCausalLM": _lfm2,  # LFM2's layers, experts from num_dense_layers on (_lfm2_moe_mlps)
    "Llama4ForConditionalGeneration": _llama4,
    # Kimi K2.5 and K2.6: DeepSeek-V3's layers from text_config (kimi_k25.py builds DeepseekV2ForCausalLM over it,
    # 0.19.0 to 0.33.0; DeepseekV2Model and a ParallelLMHead, the same tensors, 0.15.0 to 0.18.0) and the MoonViT tower
    "KimiK25ForConditionalGeneration": _deepseek,
    "InternVLChatModel": _internvl,
    "LlavaForConditionalGeneration": _llava,
    "Gemma3nForCausalLM": _gemma3n,
    # Gemma 3n: the language model from text_config (gemma3n_mm.py builds Gemma3nForCausalLM over it)
    "Gemma3nForConditionalGeneration": _gemma3n,
    "Gemma4ForCausalLM": _gemma4,
    # Gemma 4: the language model from text_config (gemma4_mm.py builds Gemma4ForCausalLM over it, 0.19.0 to 0.33.0)
    "Gemma4ForConditionalGeneration": _gemma4,
    # Gemma 4 Unified (12B): Gemma4ForCausalLM over text_config (gemma4_unified.py, init_vllm_registered_model, 0.23.0 to 0.33.0)
    "Gemma4UnifiedForConditionalGeneration": _gemma4,
    "Ernie4_5ForCausalLM": _ernie45,
    "Ernie4_5_MoeForCausalLM": _ernie45_moe,
    "ChatGLMModel": _chatglm,
    "ChatGLMForConditionalGeneration": _chatglm,  # registry.py: chatglm.py ChatGLMForCausalLM, as ChatGLMModel
    "CohereForCausalLM": _cohere,
    "Cohere2ForCausalLM": _cohere,
    "ExaoneForCausalLM": _exaone,
    "Exaone4ForCausalLM": _exaone4,
    "GemmaForCausalLM": _gemma,
    "InternLM2ForCausalLM": _internlm2,
    "InternLM3ForCausalLM": _internlm3,
    "MiMoForCausalLM": _mimo,
    "MiniCPMForCausalLM": _minicpm,
    "Starcoder2ForCausalLM": _starcoder2,
    "PhiForCausalLM": _phi,
    "FalconForCausalLM": _falcon,
    "GPTNeoXForCausalLM": _gpt_neox,
    "GPTBigCodeForCausalLM": _gpt_bigcode,
    "GraniteMoeForCausalLM": _granite_moe,
    "PhiMoEForCausalLM": _phimoe,
    "OlmoeForCausalLM": _olmoe,
    "HunYuanMoEV1ForCausalLM": _hunyuan,
    "HunYuanDenseV1ForCausalLM": _hunyuan,
    "BaichuanForCausalLM": _baichuan,
    "BaiChuanForCausalLM": _baichuan,  # Baichuan 7B (upper-case C), always a rope
    "BailingMoeForCausalLM": _bailing,
    "BailingMoeV2ForCausalLM": _bailing,
    "MiniMaxText01ForCausalLM": _minimax_text01,
    "MiniMaxM1ForCausalLM": _minimax_text01,  # registry.py maps it to minimax_text_01.py's MiniMaxText01ForCausalLM
}

# Classes whose model code vLLM registers in only some of the releases read (vllm/model_executor/models/
# registry.py): the first release that builds them with it, (major, minor) or (major, minor, patch) where a
# patch release added it, and the last (major, minor), every patch of it included. Hunyuan's MoE class is
# hunyuan_v1_moe.py in 0.9.2 (absent from 0.8.5), both classes hunyuan_v1.py from 0.10.1.1 to 0.28.0;
# from 0.29.0 (to 0.33.0) the registry sends both to the Transformers backend
# (_TRANSFORMERS_SUPPORTED_MODELS), which is not modeled. StarCoder2: starcoder2.py in every release read
# up to 0.24.0; from 0.25.0 the registry maps Starcoder2ForCausalLM to the Transformers backend and the file is gone.
# GPTBigCodeForCausalLM likewise (gpt_bigcode.py to 0.24.0, the Transformers backend from 0.25.0); PhiForCausalLM
# and GPTNeoXForCausalLM are phi.py and gpt_neox.py up to 0.31.0 and the Transformers backend from 0.32.0.
# OLMo 2: olmo2.py to 0.25.0, the Transformers backend from 0.26.0; OLMo 3: olmo2.py from 0.11.0 (absent
# from 0.10.2), olmo3.py from 0.26.0 to 0.28.0 (the same parameters), the Transformers backend from 0.29.0;
# Seed-OSS: seed_oss.py from 0.10.2 (absent from 0.10.1.1) to 0.31.0, the Transformers backend from 0.32.0.
# FalconForCausalLM is falcon.py in every release read (its RWForCausalLM alias is gone from 0.29.0).
# Baichuan (BaiChuanForCausalLM, BaichuanForCausalLM): baichuan.py up to 0.23.0; dropped from 0.24.0 (DROPPED).
# No last release: registered from the first to the newest read, 0.33.0. The first is the first release read
# that lists the class (read: 0.8.5, 0.9.2, 0.10.1.1, 0.10.2, 0.11.0, 0.12.0 to 0.19.0, 0.20.0 to 0.26.0, 0.27.1,
# 0.28.0 to 0.33.0), so a release between two read ones counts as the later. DeepSeek V4's code moved from
# vllm/model_executor/models/deepseek_v4.py (to 0.21.0) to vllm/models/deepseek_v4/ (from 0.22.0). The text-only
# Qwen3_5ForCausalLM is listed from 0.27.1; from 0.17.0 to 0.26.0 the registry finds it by its suffix
# (registry.py _normalize_arch, from 0.10.1.1: a ForCausalLM it does not list is looked up as
# ForConditionalGeneration, config/model.py _SUFFIX_TO_DEFAULTS).
OWN_CODE_RELEASES: dict[str, tuple[tuple[int, ...], tuple[int, int] | None]] = {
    "HunYuanMoEV1ForCausalLM": ((0, 9, 2), (0, 28)),
    "HunYuanDenseV1ForCausalLM": ((0, 10, 1), (0, 28)),
    "Starcoder2ForCausalLM": ((0, 8), (0, 24)),
    "PhiForCausalLM": ((0, 8), (0, 31)),
    "GPTNeoXForCausalLM": ((0, 8), (0, 31)),
    "GPTBigCodeForCausalLM": ((0, 8), (0, 24)),
    "Olmo2ForCausalLM": ((0, 8), (0, 25)),
    "Olmo3ForCausalLM": ((0, 11), (0, 28)),
    "SeedOssForCausalLM": ((0, 10, 2), (0, 31)),
    "Ernie4_5_MoeForCausalLM": ((0, 9, 2), None),
    "FalconH1ForCausalLM": ((0, 9, 2), None),
    "Gemma3nForConditionalGeneration": ((0, 9, 2), None),
    "Glm4vForConditionalGeneration": ((0, 9, 2), None),
    "GraniteMoeHybridForCausalLM": ((0, 9, 2), None),
    "MiMoForCausalLM": ((0, 9, 2), None),
    "NemotronHForCausalLM": ((0, 9, 2), None),
    "BailingMoeForCausalLM": ((0, 10, 1), None),
    "Ernie4_5ForCausalLM": ((0, 10, 1), None),
    "Exaone4ForCausalLM": ((0, 10, 1), None),
    "Gemma3nForCausalLM": ((0, 10, 1), None),
    "Glm4MoeForCausalLM": ((0, 10, 1), None),
    "Glm4vMoeForConditionalGeneration": ((0, 10, 1), None),
    "GptOssForCausalLM": ((0, 10, 1), None),
    "Lfm2ForCausalLM": ((0, 10, 2), None),
    "Qwen3NextForCausalLM": ((0, 10, 2), None),
    "BailingMoeV2ForCausalLM": ((0, 11), None),
    "DeepseekV32ForCausalLM": ((0, 11), None),
    "Qwen3VLForConditionalGeneration": ((0, 11), None),
    "Qwen3VLMoeForConditionalGeneration": ((0, 11), None),
    "Lfm2MoeForCausalLM": ((0, 12), None),
    "MiniMaxM2ForCausalLM": ((0, 12), None),
    "KimiK25ForConditionalGeneration": ((0, 15), None),
    "GlmMoeDsaForCausalLM": ((0, 16), None),
    "Qwen3_5ForConditionalGeneration": ((0, 17), None),
    "Qwen3_5MoeForConditionalGeneration": ((0, 17), None),
    "Qwen3_5ForCausalLM": ((0, 17), None),
    "Gemma4ForCausalLM": ((0, 19), None),
    "Gemma4ForConditionalGeneration": ((0, 19), None),
    "DeepseekV4ForCausalLM": ((0, 20), None),
    "Gemma4UnifiedForConditionalGeneration": ((0, 23), None),
    "MiniMaxText01ForCausalLM": ((0, 10), (0, 23)),
    "MiniMaxM1ForCausalLM": ((0, 10), (0, 23)),
    "BaiChuanForCausalLM": ((0, 8), (0, 23)),
    "BaichuanForCausalLM": ((0, 8), (0, 23)),
}
# Classes the registry drops after their window (vllm/model_executor/models/registry.py
# _PREVIOUSLY_SUPPORTED_MODELS, 0.24.0 to 0.33.0: "0.23.0", the last release that served them). Baichuan's
# baichuan.py is in 0.13.0, 0.20.0 and 0.23.0 (and the releases before); 0.33.0 lists both its names there.
DROPPED = frozenset({"MiniMaxText01ForCausalLM", "MiniMaxM1ForCausalLM", "BaiChuanForCausalLM", "BaichuanForCausalLM"})
# Releases before the window that register a class but build it otherwise: MiniMax on the V0 engine only
# (0.8.5 and 0.9.2: SupportsV0Only, its state in a pool of its own, MinimaxCacheManager; M1 from 0.9.2).
_V0_ONLY = {"MiniMaxText01ForCausalLM": (0, 8), "MiniMaxM1ForCausalLM": (0, 9)}
_REGISTRY = "vllm/model_executor/models/registry.py"


def _release(parts: tuple[int, ...]) -> tuple[int, int, int]:
    """A release as (major, minor, patch), patch 0 where it is not given."""
    return (*parts, 0, 0)[:3]  # type: ignore[return-value]


def _name(parts: tuple[int, ...]) -> str:
    return ".".join(map(str, parts))


def own_code_window(architecture: str) -> tuple[str, str] | None:
    """The window of releases whose own model code builds this class, and what vLLM does outside
    it, as the KV page's table says them; None for a class every release read builds."""
    window = OWN_CODE_RELEASES.get(architecture)
    if window is None:
        return None
    first, last = window
    if last is None:
        return f"v{_name(first)} and later", "earlier registries do not list it"
    after = f"from v{last[0]}.{last[1] + 1}.0"
    if architecture in DROPPED:
        before = "; before, V0 only where listed" if architecture in _V0_ONLY else ""
        return f"v{_name(first)} to v{_name(last)}.x", f"{after} the registry no longer lists it{before}"
    return f"v{_name(first)} to v{_name(last)}.x", f"{after} the Transformers backend, figured with the same layers"


def outside_own_code(architecture: str, release: tuple[int, ...]) -> str | None:
    """Why vLLM `release` ((major, minor) or (major, minor, patch)) does not build this class with the
    model code read, None where it does."""
    window = OWN_CODE_RELEASES.get(architecture)
    at = _release(release)
    if window is None or _release(window[0]) <= at and (window[1] is None or at[:2] <= window[1]):
        return None
    first, last = window
    if last is None:
        return (f"vLLM {_name(release)} does not register {architecture} in the releases read ({_REGISTRY} lists it from "
                f"{_name(first)}); expected --engine-version {_name(first)} or later")  # fmt: skip
    y, z = last
    expected = f"expected --engine-version from {_name(first)} to {y}.{z}.x, whose own model code builds it"
    if at[:2] > last and architecture in DROPPED:
        return f"vLLM {y}.{z + 1}.0 and later no longer register {architecture} ({_REGISTRY} _PREVIOUSLY_SUPPORTED_MODELS); {expected}"
    if architecture in _V0_ONLY and _V0_ONLY[architecture] <= at[:2]:
        return (f"vLLM {_name(release)} builds {architecture} for the V0 engine only, its state in a pool apart from the KV cache "
                f"(minimax_cache.py MinimaxCacheManager), which is not modeled; {expected}")  # fmt: skip
    if at[:2] > last:  # the Transformers backend builds it (transformers_backend)
        return None
    return f"vLLM {_name(release)} does not register {architecture} ({_REGISTRY}); {expected}"


TRANSFORMERS_BACKEND = "vllm/model_executor/models/transformers/base.py"


def transformers_backend(architecture: str, release: tuple[int, ...]) -> str | None:
    """Past its own code's window (OWN_CODE_RELEASES, a class not DROPPED) vLLM serves a class with the
    Transformers backend (registry.py _TRANSFORMERS_SUPPORTED_MODELS), which builds the Transformers
    model with vLLM's own layers in place of its linear layers, vocabulary embeddings and norms (the
    attention's q, k and v and a GLU's gate and up fused as vLLM's code fuses them) and allocates
    the KV cache through vLLM's Attention, from the same config's heads, KV heads and head size
    (transformers/base.py _create_attention_instances and fuser.py, read in 0.25.0 and 0.33.0): the layers, the weights and the KV
    cache of its own code's last release. The rotary embedding is Transformers' own, with no
    cos/sin cache. The note says so; None where vLLM builds the class with its own code."""
    window = OWN_CODE_RELEASES.get(architecture)
    if window is None or window[1] is None or architecture in DROPPED or _release(release)[:2] <= window[1]:
        return None
    y, z = window[1]
    return (
        f"vLLM {y}.{z + 1}.0 and later serve {architecture} with the Transformers backend ({_REGISTRY} _TRANSFORMERS_SUPPORTED_MODELS), which "
        f"builds the Transformers model with vLLM's own linear, embedding and attention layers ({TRANSFORMERS_BACKEND}): its layers, weights and "
        f"KV cache are figured as vLLM {y}.{z}'s own code lays them out, with Transformers' rotary embedding in place of vLLM's cos/sin cache; "
        "the backend's own memory is not checked against a start"
    )


# Classes vLLM serves, if at all, without model code of its own: the Transformers backend
# (vllm/model_executor/models/transformers/), which builds transformers' modules and is not modeled.
NOT_MODELED = {
    "Ernie4_5_ForCausalLM": "the remote-code name of Baidu's Paddle checkpoints (ERNIE-4.5-0.3B-Paddle), in no vLLM registry from "
    "0.10.1.1 to 0.33.0; vLLM's ernie45.py is registered as Ernie4_5ForCausalLM, which the -PT checkpoints name",
    "SmolLM3ForCausalLM": "vLLM has no SmolLM3 model code: its registry sends the class to the Transformers backend "
    "(vllm/model_executor/models/registry.py _TRANSFORMERS_SUPPORTED_MODELS, 0.10.1.1 to 0.33.0); its layers are Llama's, "
    "every fourth without a rope, so LlamaForCausalLM reads them",
}


# Classes read by vLLM's model code whose reading no real public config.json has checked: none was
# found quoted whole (models/configs/SOURCES.yaml says where was looked); a reading of one says so.
UNCHECKED = frozenset(
    {
        "BailingMoeForCausalLM",
        "BailingMoeV2ForCausalLM",
        "ChatGLMForConditionalGeneration",
        "Cohere2ForCausalLM",
        "CohereForCausalLM",
        "DeepseekV32ForCausalLM",
        "DeepseekV4ForCausalLM",
        "Ernie4_5ForCausalLM",
        "Ernie4_5_MoeForCausalLM",
        "Exaone4ForCausalLM",
        "FalconH1ForCausalLM",
        "GPTBigCodeForCausalLM",
        "GPTNeoXForCausalLM",
        "Gemma3nForCausalLM",
        "Gemma3nForConditionalGeneration",
        "Gemma4ForCausalLM",
        "Gemma4ForConditionalGeneration",
        "Gemma4UnifiedForConditionalGeneration",
        "Glm4ForCausalLM",
        "Glm4vForConditionalGeneration",
        "GlmMoeDsaForCausalLM",
        "GraniteMoeForCausalLM",
        "GraniteMoeHybridForCausalLM",
        "HunYuanDenseV1ForCausalLM",
        "InternLM2ForCausalLM",
        "InternLM3ForCausalLM",
        "KimiK25ForConditionalGeneration",
        "Lfm2ForCausalLM",
        "Mamba2ForCausalLM",
        "MiMoForCausalLM",
        "MiniMaxText01ForCausalLM",
        "Olmo3ForCausalLM",
        "OlmoeForCausalLM",
        "SeedOssForCausalLM",
        "Starcoder2ForCausalLM",
    }
)


def unchecked_note(architecture: str) -> str | None:
    """The note a reading of an unchecked class carries, None for a checked one."""
    if architecture not in UNCHECKED:
        return None
    return (
        f"{architecture} is read by vLLM's model code, but no real public config.json of this class has checked the reading: "
        "compare the weights with the checkpoint's size before trusting the figures"
    )


def model_classes() -> list[str]:
    """The `architectures` names these models read, in order."""
    return sorted(_ARCHITECTURES)


def read_as(text: str, cls: str | None, file: str, flag: str = "--read-as", absent: str = "no --read-as") -> tuple[str, str]:
    """A config read as the class `cls` at the reader's word (`flag`, --read-as on the command line):
    the config with its architectures[0] replaced by a class these models read, and the note that
    says so; the config as it is, and no note, without one. A class vLLM builds as these models read
    it is refused (`absent`: what the caller expects instead), as is a class they do not read."""
    from calc.units import InputError

    if cls is None or not cls.strip():
        return text, ""
    cls = cls.strip()
    known = model_classes()
    if cls not in known:
        alike = next((k for k in known if k.lower() == cls.lower()), None)
        raise InputError(f"{flag}: found {cls!r}, expected a model class calc reads, such as "
                         + (alike if alike else "LlamaForCausalLM, Qwen2ForCausalLM or MistralForCausalLM"))  # fmt: skip
    data = load(text, file)
    archs = data.get("architectures")
    own = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    if own == cls:
        return text, ""
    if own in known:
        raise InputError(f"{flag}: found {cls!r} for {file}'s {own}, which calc reads as vLLM builds it: expected {absent}")
    named = f"class {own!r}" if own else "config, which names no class,"
    note = (f"{file}'s {named} read as {cls} at your word ({flag}): its layers, weights and KV cache are figured as "
            f"{cls}'s; vLLM builds it with its own code for the class, the Transformers backend or remote code, which may differ")  # fmt: skip
    return json.dumps({**data, "architectures": [cls]}), note


# Generation classes vLLM 0.33.0 registers that these models do not read (vllm/model_executor/models/registry.py,
# _TEXT_GENERATION_MODELS and _MULTIMODAL_MODELS): a config naming one is refused as not modeled, not as a typo.
SERVED_NOT_READ = frozenset(
    {
        "AXK1ForCausalLM",
        "AfmoeForCausalLM",
        "AliceAIForCausalLM",
        "Alpamayo2Super",
        "ApertusForCausalLM",
        "AriaForConditionalGeneration",
        "AudioFlamingo3ForConditionalGeneration",
        "BagelForConditionalGeneration",
        "BailingMoeV2_5ForCausalLM",
        "BailingMoeV3ForCausalLM",
        "BailingMoeV3VLForConditionalGeneration",
        "BeamForCausalLM",
        "BeeForConditionalGeneration",
        "Blip2ForConditionalGeneration",
        "BloomForCausalLM",
        "Cohere2MoeForCausalLM",
        "Cohere2VisionForConditionalGeneration",
        "CohereAsrForConditionalGeneration",
        "CohereCompassForConditionalGeneration",
        "Cosmos3EdgeForConditionalGeneration",
        "Cosmos3ForConditionalGeneration",
        "DbrxForCausalLM",
        "DeepseekOCR2ForCausalLM",
        "DeepseekOCRForCausalLM",
        "DeepseekV41ForCausalLM",
        "DeepseekV4ForConditionalGeneration",
        "DeepseekVLV2ForCausalLM",
        "DiffusionGemmaForBlockDiffusion",
        "DomynEdgeForCausalLM",
        "DoryForCausalLM",
        "Dots3NoteForCausalLM",
        "DotsOCRForCausalLM",
        "Eagle2_5_VLForConditionalGeneration",
        "Ernie4_5_VLMoeForConditionalGeneration",
        "Exaone4_5_ForConditionalGeneration",
        "ExaoneMoEForCausalLM",
        "ExaoneMoeForCausalLM",
        "FireRedASR2ForConditionalGeneration",
        "FlintForCausalLM",
        "FunASRForConditionalGeneration",
        "FunAudioChatForConditionalGeneration",
        "GLM4VForCausalLM",
        "GPT2LMHeadModel",
        "GPTJForCausalLM",
        "Glm4MoeLiteForCausalLM",
        "Glm5NextForCausalLM",
        "Glm5NextForConditionalGeneration",
        "GlmAsrForConditionalGeneration",
        "GlmOcrForConditionalGeneration",
        "Granite4VisionForConditionalGeneration",
        "GraniteMoeSWAForCausalLM",
        "GraniteMoeSharedForCausalLM",
        "GraniteSWAForCausalLM",
        "GraniteSpeechForConditionalGeneration",
        "GraniteSpeechPlusForConditionalGeneration",
        "H2OVLChatModel",
        "HCXVisionV2ForCausalLM",
        "HYV3ForCausalLM",
        "HYV4ForCausalLM",
        "HfMoondream",
        "HrmTextForCausalLM",
        "HyperCLOVAXForCausalLM",
        "IQuestCoderForCausalLM",
        "IQuestLoopCoderForCausalLM",
        "Idefics3ForConditionalGeneration",
        "InklingForCausalLM",
        "InklingForConditionalGeneration",
        "InternS1ForConditionalGeneration",
        "InternS1ProForConditionalGeneration",
        "InternS2MobiusForConditionalGeneration",
        "InternS2PreviewForConditionalGeneration",
        "InternVLForConditionalGeneration",
        "IsaacForConditionalGeneration",
        "K2HorizonForCausalLM",
        "KananaVForConditionalGeneration",
        "KeyeForConditionalGeneration",
        "KeyeVL1_5ForConditionalGeneration",
        "KimiK3ForConditionalGeneration",
        "KimiLinearForCausalLM",
        "KimiVLForConditionalGeneration",
        "LLaMAForCausalLM",
        "LagunaForCausalLM",
        "Lfm2VlForConditionalGeneration",
        "LightOnOCRForConditionalGeneration",
        "Llama4ForCausalLM",
        "Llama_Nemotron_Nano_VL",
        "LlavaNextForConditionalGeneration",
        "LlavaNextVideoForConditionalGeneration",
        "LlavaOnevision2ForConditionalGeneration",
        "LlavaOnevisionForConditionalGeneration",
        "LongcatFlashForCausalLM",
        "LongcatFlashNgramForCausalLM",
        "MiDashengLMModel",
        "MiMoV2FlashForCausalLM",
        "MiMoV2ForCausalLM",
        "MiMoV2OmniForCausalLM",
        "MiniCPM3ForCausalLM",
        "MiniCPMO",
        "MiniCPMOcrForConditionalGeneration",
        "MiniCPMV",
        "MiniCPMV4_6ForConditionalGeneration",
        "MiniCPMV4_7ForConditionalGeneration",
        "MiniMaxM3SparseForCausalLM",
        "MiniMaxM3SparseForConditionalGeneration",
        "Ministral3ForCausalLM",
        "MistralLarge3ForCausalLM",
        "Molmo2ForConditionalGeneration",
        "MolmoForCausalLM",
        "Moondream3ForCausalLM",
        "MoonshotKimiaForCausalLM",
        "MossAudioModel",
        "MossTranscribeDiarizeForConditionalGeneration",
        "MuseGlimmerForCausalLM",
        "MuseGlimmerForConditionalGeneration",
        "MuseSparkForConditionalGeneration",
        "NVLM_D",
        "NemotronHPuzzleForCausalLM",
        "NemotronH_Nano_Omni_Reasoning_V3",
        "NemotronH_Nano_VL_V2",
        "NemotronH_Omni_Reasoning_V3",
        "NemotronH_Super_Omni_Reasoning_V3",
        "NemotronParseForConditionalGeneration",
        "OPTForCausalLM",
        "OlmoHybridForCausalLM",
        "OpenCUAForConditionalGeneration",
        "OpenPanguVLForConditionalGeneration",
        "OpenVLAForActionPrediction",
        "OrionForCausalLM",
        "Ovis",
        "Ovis2_5",
        "Ovis2_6ForCausalLM",
        "Ovis2_6_MoeForCausalLM",
        "PaddleOCRVLForConditionalGeneration",
        "PaliGemmaForConditionalGeneration",
        "PanguEmbeddedForCausalLM",
        "PanguProMoEV2ForCausalLM",
        "PanguUltraMoEForCausalLM",
        "Param2MoEForCausalLM",
        "Phi3VForCausalLM",
        "Phi4ForCausalLMV",
        "Phi4MMForCausalLM",
        "PixtralForConditionalGeneration",
        "Plamo3ForCausalLM",
        "QianfanOCRForConditionalGeneration",
        "Qwen2AudioForConditionalGeneration",
        "Qwen2_5OmniForConditionalGeneration",
        "Qwen2_5OmniModel",
        "Qwen3ASRForConditionalGeneration",
        "Qwen3ASRRealtimeGeneration",
        "Qwen3OmniMoeForConditionalGeneration",
        "Qwen3_5MoeForCausalLM",
        "Qwen4ExpForCausalLM",
        "Qwen4ExpForConditionalGeneration",
        "RForConditionalGeneration",
        "RadioMBartPrefixForCausalLM",
        "Rnj1ForCausalLM",
        "SarvamMLAForCausalLM",
        "SarvamMoEForCausalLM",
        "SkyworkR1VChatModel",
        "SmolVLMForConditionalGeneration",
        "SolarForCausalLM",
        "StableLmForCausalLM",
        "Step1ForCausalLM",
        "Step3TextForCausalLM",
        "Step3VLForConditionalGeneration",
        "Step3p5ForCausalLM",
        "Step3p7ForConditionalGeneration",
        "Step5ForCausalLM",
        "Step5ForConditionalGeneration",
        "StepVLForConditionalGeneration",
        "TeleChat2ForCausalLM",
        "TeleChat3ForCausalLM",
        "TeleFLMForCausalLM",
        "UltravoxModel",
        "UnlimitedOCRForCausalLM",
        "VoxtralForConditionalGeneration",
        "VoxtralRealtimeGeneration",
        "WhisperForConditionalGeneration",
        "Zamba2ForCausalLM",
    }
)

# Classes vLLM 0.33.0 names as served up to a release and no longer (registry.py _PREVIOUSLY_SUPPORTED_MODELS:
# "was supported in vLLM until v..."), with that release.
NO_LONGER_SERVED = {
    "AquilaForCausalLM": "0.24.0",
    "AquilaModel": "0.24.0",
    "ArcticForCausalLM": "0.28.0",
    "AyaVisionForConditionalGeneration": "0.24.0",
    "BaiChuanForCausalLM": "0.23.0",
    "BaichuanForCausalLM": "0.23.0",
    "BambaForCausalLM": "0.23.0",
    "ChameleonForConditionalGeneration": "0.28.0",
    "Cheers": "0.28.0",
    "CheersForConditionalGeneration": "0.28.0",
    "DonutForConditionalGeneration": "0.10.2",
    "Dots1ForCausalLM": "0.23.0",
    "ErnieForSequenceClassification": "0.23.0",
    "ErnieForTokenClassification": "0.23.0",
    "ErnieModel": "0.23.0",
    "Fairseq2LlamaForCausalLM": "0.28.0",
    "FireRedLIDForConditionalGeneration": "0.28.0",
    "FuyuForCausalLM": "0.25.0",
    "GritLM": "0.28.0",
    "Grok1ForCausalLM": "0.24.0",
    "Grok1ModelForCausalLM": "0.24.0",
    "HCXVisionForCausalLM": "0.28.0",
    "InternLM2VEForCausalLM": "0.23.0",
    "InternLMForCausalLM": "0.23.0",
    "JAISLMHeadModel": "0.22.0",
    "MPTForCausalLM": "0.28.0",
    "MantisForConditionalGeneration": "0.24.0",
    "MiniMaxForCausalLM": "0.23.0",
    "MiniMaxM1ForCausalLM": "0.23.0",
    "MiniMaxText01ForCausalLM": "0.23.0",
    "MiniMaxVL01ForConditionalGeneration": "0.23.0",
    "MllamaForConditionalGeneration": "0.10.2",
    "MotifForCausalLM": "0.10.2",
    "MptForCausalLM": "0.28.0",
    "MusicFlamingoForConditionalGeneration": "0.24.0",
    "OuroForCausalLM": "0.26.0",
    "PersimmonForCausalLM": "0.25.0",
    "Phi3SmallForCausalLM": "0.9.2",
    "Phi4FlashForCausalLM": "0.10.2",
    "Phi4MultimodalForCausalLM": "0.12.0",
    "Plamo2ForCausalLM": "0.26.0",
    "PrithviGeoSpatialMAE": "0.28.0",
    "QWenLMHeadModel": "0.23.0",
    "QwenVLForConditionalGeneration": "0.23.0",
    "RWForCausalLM": "0.28.0",
    "StableLMEpochForCausalLM": "0.28.0",
    "Tarsier2ForConditionalGeneration": "0.23.0",
    "TarsierForConditionalGeneration": "0.24.0",
    "TeleChatForCausalLM": "0.25.0",
    "XverseForCausalLM": "0.23.0",
}
