"""The defaults of transformers' config classes that the readers fill a missing field from: by model class
or text model_type (_DEFAULTS, which shape looks up), and LLaVA's text, vision and top-level classes'."""

from __future__ import annotations

from typing import Any

# What transformers fills in for a field a config leaves out (its config classes, transformers
# 5.5.3, models/<model>/configuration_<model>.py); vLLM reads the config through them. A saved
# config writes its class's own fields in full, except ones that postdate it (head_dim) and ones
# equal to the base class's default (tie_word_embeddings: true). A nested text_config is written
# as its difference from its class's defaults, so there any field may be left out.
_GEMMA3_TEXT = {"max_position_embeddings": 131072, "vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216, "num_hidden_layers": 26, "num_attention_heads": 8,
                "num_key_value_heads": 4, "head_dim": 256, "sliding_window": 4096, "sliding_window_pattern": 6, "tie_word_embeddings": True}  # fmt: skip
_QWEN3_5_TEXT = {"vocab_size": 248320, "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 32, "num_attention_heads": 16,
                 "num_key_value_heads": 4, "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                 "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4, "tie_word_embeddings": False}  # fmt: skip
# Qwen3_5MoeTextConfig: every layer a sparse MoE block with a gated shared expert (no intermediate_size)
_QWEN3_5_MOE_TEXT = {"vocab_size": 248320, "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 16, "num_key_value_heads": 2,
                     "head_dim": 256, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128,
                     "linear_num_key_heads": 16, "linear_num_value_heads": 32, "full_attention_interval": 4, "moe_intermediate_size": 512,
                     "shared_expert_intermediate_size": 512, "num_experts": 256, "tie_word_embeddings": False}  # fmt: skip
_QWEN3_VL_TEXT = {"vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016, "num_hidden_layers": 32, "num_attention_heads": 32,
                  "head_dim": 128, "tie_word_embeddings": False}  # fmt: skip
_QWEN3_VL_MOE_TEXT = {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24, "num_attention_heads": 16,
                      "moe_intermediate_size": 1408, "num_experts": 60, "tie_word_embeddings": False}  # fmt: skip
_QWEN2_5_VL_TEXT = {"vocab_size": 152064, "hidden_size": 8192, "intermediate_size": 29568, "num_hidden_layers": 80, "num_attention_heads": 64,
                    "num_key_value_heads": 8, "tie_word_embeddings": False}  # fmt: skip
_GLM4V_TEXT = {"vocab_size": 151552, "hidden_size": 4096, "intermediate_size": 13696, "num_hidden_layers": 40, "num_attention_heads": 32,
               "num_key_value_heads": 2, "max_position_embeddings": 32768, "tie_word_embeddings": False}  # fmt: skip
_MISTRAL = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
            "num_key_value_heads": 8, "sliding_window": 4096, "tie_word_embeddings": False}  # fmt: skip
# LlamaConfig and CLIPVisionConfig: what a LLaVA config's text_config and vision_config leave to
# them (llava-1.5-7b-hf writes its text_config's length and vocabulary alone, its vision_config
# without num_channels); LlavaConfig: the top level's fields the towers read
_LLAMA = {"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32,
          "max_position_embeddings": 2048, "tie_word_embeddings": False}  # fmt: skip
_CLIP_VISION = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12, "num_attention_heads": 12, "num_channels": 3,
                "image_size": 224, "patch_size": 32}  # fmt: skip
_LLAVA_TOP = {"vision_feature_layer": -2, "vision_feature_select_strategy": "default", "multimodal_projector_bias": True}
_MINISTRAL3 = {"vocab_size": 131072, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 34, "num_attention_heads": 32,
               "num_key_value_heads": 8, "head_dim": 128, "sliding_window": None, "tie_word_embeddings": False}  # fmt: skip
# Ernie4_5_MoeConfig: moe_layer_end_index -1 is the last layer; no head_dim field (hidden_size / heads)
_ERNIE45_MOE = {"moe_num_shared_experts": 2, "moe_layer_start_index": 1, "moe_layer_end_index": -1, "moe_layer_interval": 1, "use_bias": False,
                "tie_word_embeddings": True, "max_position_embeddings": 131072}  # fmt: skip


# Gemma3nTextConfig: the E4B model's text fields (layer_types, left out, are filled by the reader as it fills them)
_GEMMA3N_TEXT = {"vocab_size": 262400, "hidden_size": 2048, "intermediate_size": 16384, "num_hidden_layers": 35, "num_attention_heads": 8,
                 "num_key_value_heads": 2, "head_dim": 256, "max_position_embeddings": 32768, "sliding_window": 512, "tie_word_embeddings": True,
                 "vocab_size_per_layer_input": 262144, "hidden_size_per_layer_input": 256, "altup_num_inputs": 4, "num_kv_shared_layers": 15,
                 "laurel_rank": 64}  # fmt: skip
# JambaConfig, FalconH1Config (its mamba_d_ssm of 1,024 is refused unless the heads make that width),
# Lfm2Config and Lfm2MoeConfig
_JAMBA = {"attn_layer_period": 8, "attn_layer_offset": 4, "expert_layer_period": 2, "expert_layer_offset": 1, "num_experts": 16, "mamba_d_state": 16,
          "mamba_d_conv": 4, "mamba_expand": 2, "mamba_dt_rank": "auto", "mamba_conv_bias": True, "mamba_proj_bias": False,
          "max_position_embeddings": 262144}  # fmt: skip
_FALCON_H1 = {"mamba_d_ssm": 1024, "mamba_n_groups": 1, "mamba_d_conv": 4, "mamba_expand": 2, "mamba_conv_bias": True, "mamba_proj_bias": False,
              "mamba_rms_norm": False, "max_position_embeddings": 8192}  # fmt: skip
_LFM2 = {"block_multiple_of": 256, "block_ffn_dim_multiplier": 1.0, "block_auto_adjust_ff_dim": True, "conv_L_cache": 3, "conv_bias": False,
         "max_position_embeddings": 128000, "tie_word_embeddings": True}  # fmt: skip
_LFM2_MOE = {"conv_L_cache": 3, "conv_bias": False, "num_dense_layers": 2, "num_experts": 32, "use_expert_bias": True, "max_position_embeddings": 128000,
             "tie_word_embeddings": True}  # fmt: skip
_MAMBA1_PURE = {"state_size": 16, "expand": 2, "conv_kernel": 4, "use_bias": False, "use_conv_bias": True, "time_step_rank": "auto",
                "tie_word_embeddings": True}  # fmt: skip
_WRITTEN_IN_FULL = {"vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
                    "linear_conv_kernel_dim", "linear_key_head_dim", "linear_value_head_dim", "linear_num_key_heads", "linear_num_value_heads"}  # fmt: skip
# vLLM's own ChatGLMConfig (vllm/transformers_utils/configs/chatglm.py, 0.33.0): the fields a GLM-4 config may leave out
# (its PretrainedConfig base ties the head where the config says nothing)
_CHATGLM = {"seq_length": 2048, "rmsnorm": True, "post_layer_norm": True, "add_bias_linear": False, "add_qkv_bias": False,
            "multi_query_attention": False, "multi_query_group_num": 1, "tie_word_embeddings": True}  # fmt: skip
VLLM_CONFIG_CLASSES = frozenset({"ChatGLMConfig"})  # defined by vLLM itself, not by transformers
_DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "ChatGLMModel": ("ChatGLMConfig", _CHATGLM),
    "ChatGLMForConditionalGeneration": ("ChatGLMConfig", _CHATGLM),
    "MistralForCausalLM": ("MistralConfig", _MISTRAL),
    "Mistral3ForConditionalGeneration": ("MistralConfig", _MISTRAL),  # a text_config of model_type mistral
    "ministral3": ("Ministral3Config", _MINISTRAL3),  # ... or ministral3 (Ministral 3)
    "Qwen2_5_VLForConditionalGeneration": ("Qwen2_5_VLTextConfig", _QWEN2_5_VL_TEXT),
    "Qwen3VLForConditionalGeneration": ("Qwen3VLTextConfig", _QWEN3_VL_TEXT),
    # vLLM takes the tie from the top level (Qwen3VLMoeConfig: false), not the text class's true
    "Qwen3VLMoeForConditionalGeneration": ("Qwen3VLMoeTextConfig", _QWEN3_VL_MOE_TEXT),
    "Glm4vForConditionalGeneration": ("Glm4vTextConfig", _GLM4V_TEXT),
    "GemmaForCausalLM": ("GemmaConfig", {"head_dim": 256, "tie_word_embeddings": True}),
    "Starcoder2ForCausalLM": ("Starcoder2Config", {"use_bias": True, "tie_word_embeddings": True}),
    "PhiForCausalLM": ("PhiConfig", {"partial_rotary_factor": 0.5, "qk_layernorm": False, "tie_word_embeddings": False}),
    # FalconConfig: num_kv_heads None is num_attention_heads; vLLM's falcon.py ties the head where tie_word_embeddings is None
    "FalconForCausalLM": (
        "FalconConfig",
        {
            "multi_query": True,
            "parallel_attn": True,
            "bias": False,
            "alibi": False,
            "new_decoder_architecture": False,
            "num_ln_in_parallel_attn": None,
            "max_position_embeddings": 2048,
            "tie_word_embeddings": True,
        },
    ),
    "GPTNeoXForCausalLM": ("GPTNeoXConfig", {"rotary_pct": 0.25, "attention_bias": True, "tie_word_embeddings": False}),
    "GPTBigCodeForCausalLM": ("GPTBigCodeConfig", {"multi_query": True, "n_inner": None, "n_positions": 1024, "tie_word_embeddings": True}),
    "Gemma2ForCausalLM": ("Gemma2Config", {"head_dim": 256, "sliding_window": 4096, "tie_word_embeddings": True}),
    "Olmo3ForCausalLM": ("Olmo3Config", {"sliding_window": 4096}),
    "SeedOssForCausalLM": ("SeedOssConfig", {"head_dim": 128, "attention_bias": True}),
    "Glm4ForCausalLM": ("Glm4Config", {"head_dim": 128, "attention_bias": True}),
    "Qwen3ForCausalLM": ("Qwen3Config", {"head_dim": 128}),
    "GptOssForCausalLM": ("GptOssConfig", {"head_dim": 64}),
    "Gemma3ForCausalLM": ("Gemma3TextConfig", _GEMMA3_TEXT),
    "Gemma3ForConditionalGeneration": ("Gemma3TextConfig", _GEMMA3_TEXT),
    "Qwen3NextForCausalLM": ("Qwen3NextConfig", {"head_dim": 256}),
    "Qwen3_5ForCausalLM": ("Qwen3_5TextConfig", _QWEN3_5_TEXT),
    "Qwen3_5ForConditionalGeneration": ("Qwen3_5TextConfig", _QWEN3_5_TEXT),
    "Qwen3_5MoeForConditionalGeneration": ("Qwen3_5MoeTextConfig", _QWEN3_5_MOE_TEXT),
    "NemotronHForCausalLM": ("NemotronHConfig", {"head_dim": 128}),
    "NemotronForCausalLM": ("NemotronConfig", {"partial_rotary_factor": 0.5, "tie_word_embeddings": False}),
    "JambaForCausalLM": ("JambaConfig", _JAMBA),
    # MambaConfig and FalconMambaConfig (transformers 5.5.3 dataclass fields; intermediate_size is set to
    # int(expand x hidden_size) in __post_init__, time_step_rank "auto" to ceil(hidden_size / 16))
    "MambaForCausalLM": ("MambaConfig", _MAMBA1_PURE),
    "FalconMambaForCausalLM": ("FalconMambaConfig", _MAMBA1_PURE),
    "FalconH1ForCausalLM": ("FalconH1Config", _FALCON_H1),
    # Lfm2Config: block_ff_dim, where given, is its intermediate_size; layer_types from full_attn_idxs
    "Lfm2ForCausalLM": ("Lfm2Config", _LFM2),
    "Lfm2MoeForCausalLM": ("Lfm2MoeConfig", _LFM2_MOE),
    "Ernie4_5ForCausalLM": ("Ernie4_5Config", {"head_dim": 128, "use_bias": False, "tie_word_embeddings": True}),
    "Ernie4_5_MoeForCausalLM": ("Ernie4_5_MoeConfig", _ERNIE45_MOE),
    "CohereForCausalLM": ("CohereConfig", {"tie_word_embeddings": True}),
    # Exaone4Config: layer_types filled from an integer sliding_window_pattern (the last of each run full)
    "Exaone4ForCausalLM": ("Exaone4Config", {"sliding_window": 4096, "sliding_window_pattern": 4, "tie_word_embeddings": False}),
    "Cohere2ForCausalLM": ("Cohere2Config", {"tie_word_embeddings": True, "attention_bias": False, "sliding_window": 4096, "sliding_window_pattern": 4}),
    # Llama4TextConfig: no_rope_layers left empty is filled from the interval (one NoPE layer in four)
    "llama4_text": ("Llama4TextConfig", {"no_rope_layer_interval": 4, "interleave_moe_layer_step": 1}),
    "Llama4ForConditionalGeneration": ("Llama4TextConfig", {"no_rope_layer_interval": 4, "interleave_moe_layer_step": 1}),
    "gemma3n_text": ("Gemma3nTextConfig", _GEMMA3N_TEXT),
    "Gemma3nForCausalLM": ("Gemma3nTextConfig", _GEMMA3N_TEXT),
    "Gemma3nForConditionalGeneration": ("Gemma3nTextConfig", _GEMMA3N_TEXT),
}
