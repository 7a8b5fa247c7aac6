"""A Hugging Face config.json read into the shape the weight and KV models need.

One function, `shape`, turns the config (and its `text_config` where a multimodal wrapper
holds one) into a `Shape`: the layer kinds in order (full attention, sliding window, MLA,
mamba, linear attention), the attention and MLP dimensions, the drafter layers the config
declares, and the checkpoint's quantization. Anything the models cannot size is refused with
a `ConfigError` that names the file and the field.

The package, each module importing only those above it in this list:
- core.py: the layer kinds, Shape and its parts, ConfigError, load, the quantization under
  --quantization, the field reader and the parts the readers share; from_architecture;
- defaults.py: the transformers config classes' defaults a missing field is filled from;
- dense.py, moe.py, recurrent.py (hybrid and state-space), multimodal.py (the vision towers,
  Gemma 3n): one reader function a model family;
- registry.py: which reader reads which class (_ARCHITECTURES), the LLaVA and InternVL readers
  that read their language model through it, and the tables of classes (NO_PIPELINE, the
  release windows, NOT_MODELED, UNCHECKED);
- read.py: shape, at_max_model_len and derived_max_model_len.
This module re-exports the names the rest of the project uses.
"""

from __future__ import annotations

from calc.engine.hfconfig.core import (
    AT_LOAD,
    ATTENTION_FREE,
    CHUNKED,
    FAMILIES,
    FULL,
    HF_QUANT_CONFIG,
    INDEXER_NOTE,
    INDEXER_QUANT_BLOCK,
    LIGHTNING,
    LINEAR,
    MAMBA,
    MAMBA1,
    MLA,
    MLP_ONLY,
    MOE_ONLY,
    NO_ATTENTION,
    PARALLEL,
    RECURRENT,
    SHARED_FULL,
    SHARED_SLIDING,
    SHORT_CONV,
    SLIDING,
    ConfigError,
    DeepseekV4Dims,
    GatedDeltaNet,
    Indexer,
    Mamba1Mixer,
    Mamba2Mixer,
    Mlp,
    PerLayerInputs,
    Shape,
    ShortConvMixer,
    Tower,
    as_flag,
    from_architecture,
    load,
    quantization_applied,
    quantized_at_load,
    with_hf_quant_config,
)
from calc.engine.hfconfig.read import (
    DEFAULT_MAX_LEN,
    MM_PREFIX_FLOOR_FROM,
    at_max_model_len,
    batched_tokens_floor,
    derived_max_model_len,
    ropes_as_loaded,
    shape,
)
from calc.engine.hfconfig.recurrent import MINIMAX_TEXT
from calc.engine.hfconfig.registry import (
    DROPPED,
    NO_PIPELINE,
    OWN_CODE_RELEASES,
    UNCHECKED,
    model_classes,
    outside_own_code,
    own_code_window,
    read_as,
    transformers_backend,
    unchecked_note,
)

__all__ = [
    "ATTENTION_FREE",
    "AT_LOAD",
    "CHUNKED",
    "ConfigError",
    "DEFAULT_MAX_LEN",
    "DROPPED",
    "DeepseekV4Dims",
    "FAMILIES",
    "FULL",
    "HF_QUANT_CONFIG",
    "GatedDeltaNet",
    "INDEXER_NOTE",
    "INDEXER_QUANT_BLOCK",
    "Indexer",
    "LIGHTNING",
    "LINEAR",
    "MAMBA",
    "MAMBA1",
    "MINIMAX_TEXT",
    "MM_PREFIX_FLOOR_FROM",
    "MLA",
    "MLP_ONLY",
    "MOE_ONLY",
    "Mamba1Mixer",
    "Mamba2Mixer",
    "Mlp",
    "NO_ATTENTION",
    "NO_PIPELINE",
    "OWN_CODE_RELEASES",
    "PARALLEL",
    "PerLayerInputs",
    "RECURRENT",
    "SHARED_FULL",
    "SHARED_SLIDING",
    "SHORT_CONV",
    "SLIDING",
    "Shape",
    "ShortConvMixer",
    "Tower",
    "UNCHECKED",
    "as_flag",
    "at_max_model_len",
    "ropes_as_loaded",
    "batched_tokens_floor",
    "derived_max_model_len",
    "from_architecture",
    "load",
    "model_classes",
    "read_as",
    "outside_own_code",
    "own_code_window",
    "transformers_backend",
    "quantization_applied",
    "quantized_at_load",
    "with_hf_quant_config",
    "shape",
    "unchecked_note",
]
