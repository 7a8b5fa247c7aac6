"""The readers of the dense classes: one feed-forward a layer, full or sliding-window attention."""

from __future__ import annotations

from typing import Any

from calc.engine.hfconfig.core import (
    _GEMMA_NORMS,
    _MISSING,
    _SLIDING_OR_FULL,
    FULL,
    MAX_LAYERS,
    NO_ATTENTION,
    SLIDING,
    ConfigError,
    Mlp,
    _common,
    _interleaved,
    _kinds,
    _layer_types,
    _Reader,
    _uniform,
    as_flag,
)


def _dense(r: _Reader, bias: bool = False, llama: bool = False, qk_norm: str = "") -> dict[str, Any]:
    n = r.layers()
    common = _common(r, bias, llama, qk_norm)
    return {**common, **_uniform(r, n), "mlps": (Mlp(intermediate=r.int("intermediate_size"), bias=r.flag("mlp_bias")),) * n}


def _llama(r: _Reader) -> dict[str, Any]:
    """Llama's layers, which Mistral, Phi-3 and Granite share: attention_bias also biases o_proj."""
    return _dense(r, llama=True)


def _qwen3(r: _Reader) -> dict[str, Any]:
    return _dense(r, qk_norm="head")


def _olmo(r: _Reader) -> dict[str, Any]:
    """OLMo 2 and 3: q and k normed over all heads; OLMo 3 slides three layers in four
    (transformers fills layer_types so when the config leaves them out)."""
    n = r.layers()
    common = {**_common(r, qk_norm="full"), "head_dim": r.int("hidden_size") // r.int("num_attention_heads")}  # vLLM's olmo2.py and olmo3.py
    mlps = (Mlp(intermediate=r.int("intermediate_size")),) * n
    if r.architecture == "Olmo2ForCausalLM":
        return {**common, "layers": (FULL,) * n, "mlps": mlps}
    layers = _layer_types(r, n, _SLIDING_OR_FULL) if isinstance(r.get("layer_types"), list) else _interleaved(n, 4, SLIDING)
    return {**common, "layers": layers, "mlps": mlps, "sliding_window": r.int("sliding_window")}


def _glm4(r: _Reader, bias: bool = True) -> dict[str, Any]:
    """GLM-4 (0414): Llama's layers with a norm after attention and one after the MLP. GLM-4.1V's
    language model is the same (glm4_1v.py builds Glm4ForCausalLM for model_type glm4v, 0.33.0), its
    q/k/v biased only where the config says so (glm4.py: getattr(config, "attention_bias", False);
    Glm4vTextConfig has no such field, Glm4Config's is true)."""
    return {**_dense(r, bias=bias), "extra_norms": ("post_self_attn_layernorm", "post_mlp_layernorm")}


def _gemma2(r: _Reader) -> dict[str, Any]:
    """Gemma 2: every other layer slides (the even ones, as transformers fills layer_types), four
    norms a layer, and attention_bias biases o_proj too (vllm/model_executor/models/gemma2.py)."""
    n = r.layers()
    layers = _layer_types(r, n, _SLIDING_OR_FULL) if isinstance(r.get("layer_types"), list) else _interleaved(n, 2, SLIDING)
    return {**_common(r, llama=True), "layers": layers, "mlps": (Mlp(intermediate=r.int("intermediate_size")),) * n,
            "sliding_window": r.int("sliding_window"), "extra_norms": _GEMMA_NORMS}  # fmt: skip


def _decilm(r: _Reader) -> dict[str, Any]:
    """NVIDIA's Llama-Nemotron NAS models (vllm/model_executor/models/nemotron_nas.py, DeciLMDecoderLayer,
    the same from 0.10.1.1 to 0.33.0): each layer as its block_configs entry builds it. An attention of
    no_op builds neither the attention nor its input norm and holds no cache; else LlamaAttention of
    num_attention_heads / n_heads_in_group KV heads (the config's num_key_value_heads is null). An ffn of
    no_op builds no MLP and no post-attention norm; else LlamaMLP of intermediate size
    2 x ffn_mult x hidden_size / 3 rounded down, then up to a multiple of 256
    (_ffn_mult_to_intermediate_size), or the block's intermediate_size where it has no ffn_mult.
    vLLM reads no replace_with_linear: a block that asks for one is refused, as is a model whose
    attention layers differ in n_heads_in_group (one KV head count a model is modeled)."""
    n = r.layers()
    blocks = r.get("block_configs")
    if not isinstance(blocks, list) or len(blocks) != n:
        raise ConfigError(r.file, r.prefix + "block_configs", blocks if blocks is not None else _MISSING, f"a list of {n} blocks, one a layer")
    heads, hidden = r.int("num_attention_heads"), r.int("hidden_size")
    groups: set[int] = set()
    layers, mlps = [], []
    for i, block in enumerate(blocks):
        where = f"{r.prefix}block_configs[{i}]"
        attention = block.get("attention") if isinstance(block, dict) else None
        ffn = block.get("ffn") if isinstance(block, dict) else None
        if not isinstance(attention, dict) or not isinstance(ffn, dict):
            raise ConfigError(r.file, where, block, "an object with an attention and an ffn object")
        a, f = _Reader(attention, r.file, where + ".attention."), _Reader(ffn, r.file, where + ".ffn.")
        for sub, part in ((a, "attention"), (f, "ffn")):
            if sub.flag("replace_with_linear", False):
                raise ConfigError(r.file, f"{where}.{part}.replace_with_linear", True, "false: vLLM's nemotron_nas.py builds no linear replacement")
        if a.flag("no_op", False):
            layers.append(NO_ATTENTION)
        else:
            group = a.int("n_heads_in_group")
            if heads % group:
                raise ConfigError(r.file, where + ".attention.n_heads_in_group", group, f"a divisor of num_attention_heads ({heads})")
            groups.add(group)
            layers.append(FULL)
        if f.flag("no_op", False):
            mlps.append(Mlp())
            continue
        mult = ffn.get("ffn_mult")
        if mult is None:
            size = f.int("intermediate_size")
        elif isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
            raise ConfigError(r.file, where + ".ffn.ffn_mult", mult, "a number above zero")
        else:
            size = int(2 * mult * hidden / 3)
            size += -size % 256
        mlps.append(Mlp(intermediate=size, bias=r.flag("mlp_bias")))
    if len(groups) != 1:
        raise ConfigError(r.file, r.prefix + "block_configs[*].attention.n_heads_in_group", sorted(groups) or None,
                          "one value over the layers with attention: a KV head count a layer is not modeled")  # fmt: skip
    bias = r.flag("attention_bias")
    common = {"hidden": hidden, "vocab": r.int("vocab_size"), "heads": heads, "kv_heads": heads // groups.pop(),
              "head_dim": r.int("head_dim", None) or hidden // heads, "attention_bias": bias, "output_bias": bias, "qk_norm": ""}  # fmt: skip
    return {**common, "layers": tuple(layers), "mlps": tuple(mlps)}


def _gemma3(r: _Reader) -> dict[str, Any]:
    n = r.layers()
    layers = _kinds(r, n, SLIDING, "sliding_attention", "sliding_window_pattern")
    return {**_common(r, qk_norm="head"), "layers": layers, "mlps": (Mlp(intermediate=r.int("intermediate_size")),) * n,
            "sliding_window": r.int("sliding_window"), "extra_norms": _GEMMA_NORMS}  # fmt: skip


def _ernie45(r: _Reader) -> dict[str, Any]:
    """Baidu's ERNIE 4.5 dense model (vllm/model_executor/models/ernie45.py, Ernie4_5ForCausalLM,
    0.10.1.1 to 0.33.0): LlamaForCausalLM's layers, the rope not neox style and o_proj's bias
    removed. Llama's layers read attention_bias and mlp_bias, not ERNIE's use_bias: a config with
    use_bias true holds biases vLLM's Llama layers do not build, and is refused."""
    if r.flag("use_bias", False):
        raise ConfigError(r.file, r.prefix + "use_bias", True, "false: vLLM's ernie45.py builds Llama's layers, which read no use_bias")
    return {**_dense(r), "output_bias": False}


def _cohere(r: _Reader) -> dict[str, Any]:
    """Cohere's Command R and R+ (CohereForCausalLM) and Command R7B and A (Cohere2ForCausalLM), both built
    by vllm/model_executor/models/commandr.py (0.10.1.1 to 0.33.0): a parallel block, attention and MLP
    reading one input norm (a weight, no bias) with no norm after attention; q/k/v, o_proj and the gated
    MLP without biases whatever attention_bias says; with use_qk_norm, q and k normed over the heads a
    rank holds (param_shape num_heads x head_dim, divided); the logits from the embedding (tie asserted
    up to 0.28.0, lm_head never built). Cohere2's layers slide or not by layer_types (transformers'
    Cohere2Config fills them from sliding_window_pattern, 4: the last of each four global), a global
    layer taking no rope; its head_dim is hidden_size / heads (Cohere2Config sets it so). A sliding layer's
    window is sliding_window up to 0.28.0 and sliding_window + 1 from 0.29.0 (calc/engine/kvlayout.py)."""
    n = r.layers()
    if r.flag("attention_bias", False):
        raise ConfigError(r.file, r.prefix + "attention_bias", True, "false: vLLM's commandr.py builds no attention bias")
    if not r.flag("tie_word_embeddings", True):
        raise ConfigError(r.file, r.prefix + "tie_word_embeddings", False, "true: commandr.py takes the logits from the embedding")
    common = {**_common(r, qk_norm="split" if r.flag("use_qk_norm", False) else ""), "parallel_block": True}
    mlps = (Mlp(intermediate=r.int("intermediate_size")),) * n
    if r.architecture == "CohereForCausalLM":
        return {**common, "layers": (FULL,) * n, "mlps": mlps}
    common["head_dim"] = common["hidden"] // common["heads"]
    layers = _kinds(r, n, SLIDING, "sliding_attention", "sliding_window_pattern")
    return {**common, "layers": layers, "mlps": mlps, "sliding_window": r.int("sliding_window")}


def _exaone4(r: _Reader) -> dict[str, Any]:
    """LG's EXAONE 4.0 (vllm/model_executor/models/exaone4.py, Exaone4DecoderLayer, the same from 0.10.1.1 to
    0.33.0): no input norm, a post_attention_layernorm and a post_feedforward_layernorm; q and k normed a
    head (RMSNorm of head_dim); q/k/v and o_proj biased where attention_bias or bias says, the gated MLP
    where mlp_bias does. A layer slides where layer_types says "sliding_attention", with the config's
    sliding_window (no + 1), else holds full attention without rope while any layer slides. A config
    without layer_types takes them as transformers' Exaone4Config fills them: the last of each
    sliding_window_pattern layers full, the rest sliding (an integer pattern; a string one such as "LLLG"
    is refused, as that class cannot take it)."""
    n = r.layers()
    common = _common(r, qk_norm="head")
    common["attention_bias"] = common["output_bias"] = common["attention_bias"] or r.flag("bias", False)
    if isinstance(r.get("layer_types"), list):
        layers = _layer_types(r, n, _SLIDING_OR_FULL)
    else:
        if r.get("sliding_window", None) is None:
            raise ConfigError(r.file, r.prefix + "sliding_window", None, "a window, or layer_types: Exaone4Config cannot fill layer_types without one")
        pattern = r.get("sliding_window_pattern")
        if isinstance(pattern, bool) or not isinstance(pattern, int) or pattern < 1:
            raise ConfigError(r.file, r.prefix + "sliding_window_pattern", pattern, "a whole number of layers, or layer_types")
        layers = _interleaved(n, pattern, SLIDING)
    mlps = (Mlp(intermediate=r.int("intermediate_size"), bias=r.flag("mlp_bias")),) * n
    window = r.int("sliding_window") if SLIDING in layers else None
    return {**common, "layers": layers, "mlps": mlps, "sliding_window": window, "no_input_norm": True,
            "extra_norms": ("post_feedforward_layernorm",)}  # fmt: skip


def _exaone(r: _Reader) -> dict[str, Any]:
    """LG's EXAONE 3.0, 3.5 and EXAONE Deep (vllm/model_executor/models/exaone.py, ExaoneForCausalLM, the same
    parameters in 0.13.0, 0.20.0 and 0.33.0): Llama's layers under EXAONE's names, read through the checkpoint's
    ExaoneConfig (remote code, configuration_exaone.py): num_layers, which its attribute_map gives as
    num_hidden_layers; qkv_proj of num_key_value_heads K and V heads (num_attention_heads where it has none) and
    out_proj, both biased where attention_bias or bias says; c_fc_0 and c_fc_1 (gate and up, merged) and c_proj,
    biased where mlp_bias says; ln_1 and ln_2, RMSNorms; ln_f; head_dim as the config gives it, else
    hidden_size / heads. Every layer full attention (no window is read). lm_head is the embedding where
    tie_word_embeddings says, PretrainedConfig's default (tied) where the config leaves it out."""
    n = r.int("num_layers", maximum=MAX_LAYERS)
    common = _common(r)
    biased = common["attention_bias"] or r.flag("bias", False)
    common.update(attention_bias=biased, output_bias=biased)
    mlps = (Mlp(intermediate=r.int("intermediate_size"), bias=r.flag("mlp_bias")),) * n
    return {**common, "layers": (FULL,) * n, "mlps": mlps, "tie_embeddings": r.flag("tie_word_embeddings", True)}


def _nemotron(r: _Reader) -> dict[str, Any]:
    """NVIDIA's Nemotron-4, Minitron and Nemotron-Mini (vllm/model_executor/models/nemotron.py, NemotronForCausalLM,
    the same parameters in 0.13.0, 0.20.0 and 0.33.0): qkv_proj of num_key_value_heads K and V heads and o_proj,
    biased where attention_bias or bias says; an MLP without a gate, up_proj (column-parallel) and down_proj
    (row-parallel) of intermediate_size with squared ReLU, biased where mlp_bias says; input_layernorm,
    post_attention_layernorm and the final norm NemotronLayerNorm1P, a LayerNorm with its bias. head_dim is the
    config's head_dim, else its kv_channels, else hidden_size / heads (NemotronConfig: vLLM's own up to 0.2x,
    transformers' from 0.33.0, both so). The rope turns partial_rotary_factor of each head (NemotronConfig's
    default: half); lm_head is the embedding where tie_word_embeddings says (its default: not)."""
    n = r.layers()
    common = _common(r)
    common["head_dim"] = r.int("head_dim", None) or r.int("kv_channels", None) or common["hidden"] // common["heads"]
    biased = common["attention_bias"] or r.flag("bias", False)
    common.update(attention_bias=biased, output_bias=biased)
    mlps = (Mlp(intermediate=r.int("intermediate_size"), bias=r.flag("mlp_bias"), gated=False),) * n
    return {**common, "layers": (FULL,) * n, "mlps": mlps, "norm_bias": True}


def _chatglm(r: _Reader) -> dict[str, Any]:
    """Zhipu's ChatGLM2, ChatGLM3 and GLM-4-9B (vllm/model_executor/models/chatglm.py, ChatGLMForCausalLM, which
    the registry builds for ChatGLMModel and ChatGLMForConditionalGeneration; the same parameters in 0.13.0,
    0.20.0 and 0.33.0), read through vLLM's own ChatGLMConfig (vllm/transformers_utils/configs/chatglm.py, which
    the config registry takes for model_type chatglm) under its own names: num_layers, padded_vocab_size (the
    embedding's and output_layer's rows), ffn_hidden_size. query_key_value holds num_attention_heads query heads
    and multi_query_group_num K and V heads where multi_query_attention says, else as many as query heads, each
    hidden_size / num_attention_heads wide (kv_channels is not read: a checkpoint of another width does not
    load); it is biased where add_bias_linear or add_qkv_bias says, dense (the output) where add_bias_linear
    does, as are dense_h_to_4h (gate and up, merged) and dense_4h_to_h. input_layernorm, post_attention_layernorm
    and final_layernorm are RMSNorms under rmsnorm, else LayerNorms with a bias. The rope turns half of each head
    over seq_length positions. output_layer is the embedding where tie_word_embeddings says. A config whose
    post_layer_norm is false (no final norm), a GLM-4V one (vision_config: chatglm.py refuses it) and the first
    ChatGLM-6B's (position_encoding_2d, the same two class names over other layers) are refused."""
    if r.get("position_encoding_2d", None) is not None:  # ChatGLM-6B's own config class writes it; ChatGLMConfig has no such field
        raise ConfigError(r.file, r.prefix + "position_encoding_2d", r.get("position_encoding_2d"),
                          "absent: the first ChatGLM-6B (2D positions, inner_hidden_size) is not what chatglm.py builds")  # fmt: skip
    if r.get("vision_config", None) is not None:
        raise ConfigError(r.file, r.prefix + "vision_config", "(an object)", "none: chatglm.py refuses a GLM-4V config (its text-only class)")
    if not r.flag("post_layer_norm"):
        raise ConfigError(r.file, r.prefix + "post_layer_norm", False, "true: a ChatGLM without its final norm is not modeled")
    n = r.int("num_layers", r.get("num_hidden_layers", _MISSING), maximum=MAX_LAYERS)  # ChatGLMConfig.attribute_map: the same field
    heads, hidden = r.int("num_attention_heads"), r.int("hidden_size")
    kv_heads = r.int("multi_query_group_num") if r.flag("multi_query_attention") else heads
    if kv_heads > heads or heads % kv_heads:
        raise ConfigError(r.file, r.prefix + "multi_query_group_num", kv_heads, f"a divisor of num_attention_heads ({heads})")
    _width(r, "kv_channels", hidden // heads, "chatglm.py builds heads of hidden_size / num_attention_heads")
    bias = r.flag("add_bias_linear")
    common = {"hidden": hidden, "vocab": r.int("padded_vocab_size"), "heads": heads, "kv_heads": kv_heads, "head_dim": hidden // heads,
              "attention_bias": bias or r.flag("add_qkv_bias"), "output_bias": bias, "qk_norm": ""}  # fmt: skip
    mlps = (Mlp(intermediate=r.int("ffn_hidden_size"), bias=bias),) * n
    return {**common, "layers": (FULL,) * n, "mlps": mlps, "norm_bias": not r.flag("rmsnorm")}


def _minicpm(r: _Reader) -> dict[str, Any]:
    """OpenBMB's MiniCPM 1B and 2B, MiniCPM4 and MiniCPM-MoE-8x2B (vllm/model_executor/models/minicpm.py,
    MiniCPMForCausalLM, the same parameters in 0.13.0, 0.20.0 and 0.33.0): Llama's layers without a bias anywhere
    (bias=False written in), qkv_proj of num_key_value_heads K and V heads of hidden_size / heads (a head_dim or
    kv_channels field is not read), RMSNorms; a gated MLP of intermediate_size, or where num_experts is above 0
    MiniCPMMoE: a router and num_experts experts of intermediate_size, each sharded over the ranks as FusedMoE
    shards them (no shared expert). The muP scales (scale_emb, scale_depth, dim_model_base) are numbers, not
    tensors. lm_head is the embedding where tie_word_embeddings says, the remote MiniCPMConfig's default (tied)
    where the config leaves it out, as MiniCPM-2B's does."""
    n = r.layers()
    common = _common(r)
    common.update(head_dim=common["hidden"] // common["heads"], attention_bias=False, output_bias=False)
    experts = r.int("num_experts", 0, minimum=0)
    width = r.int("intermediate_size")
    mlp = Mlp(experts=experts, expert_intermediate=width) if experts else Mlp(intermediate=width)
    return {**common, "layers": (FULL,) * n, "mlps": (mlp,) * n, "tie_embeddings": r.flag("tie_word_embeddings", True)}


def _baichuan(r: _Reader) -> dict[str, Any]:
    """Baichuan and Baichuan 2 (vllm/model_executor/models/baichuan.py, BaiChuanForCausalLM and BaichuanForCausalLM,
    the same parameters in 0.13.0, 0.20.0 and 0.23.0, the last release that registers them): W_pack (q/k/v fused,
    as many K and V heads as query heads, each hidden_size / heads wide) and o_proj without biases, a gated MLP of
    intermediate_size, RMSNorms. BaichuanForCausalLM rotates (a rope) where hidden_size is 4,096 (Baichuan2 7B)
    and takes ALiBi slopes, no rope, otherwise (Baichuan and Baichuan2 13B); BaiChuanForCausalLM (Baichuan 7B)
    always rotates. Baichuan2's NormHead is normalized as it loads: the same tensor. lm_head is the embedding where
    tie_word_embeddings says (BaichuanConfig's default: not)."""
    n = r.layers()
    fields = {**_mha(r), "attention_bias": False, "output_bias": False, "qk_norm": ""}
    return {**fields, "layers": (FULL,) * n, "mlps": (Mlp(intermediate=r.int("intermediate_size")),) * n}


def _gemma(r: _Reader) -> dict[str, Any]:
    """Gemma 1 (vllm/model_executor/models/gemma.py, GemmaDecoderLayer, the same from 0.10.1.1 to 0.33.0):
    Llama's layers without a bias anywhere (bias=False written in, whatever attention_bias says), every
    layer full attention, head_dim as the config gives it (Gemma 7B: 16 heads of 256, 4,096 wide on a
    hidden size of 3,072; GemmaConfig's default is 256), a GeGLU MLP (gate and up, the same tensors as
    SwiGLU) and GemmaRMSNorm's one weight a norm. The logits come from the embedding: gemma.py asserts
    tie_word_embeddings up to 0.28.x, and an untied config (an lm_head of its own from 0.29.0) is refused.
    The embedding's scale, sqrt(hidden_size), is a one-value buffer (register_buffer normalizer,
    persistent=False): two bytes, not counted. hidden_activation may be absent (gemma.py then takes
    approximate GeLU whatever hidden_act says), gelu_pytorch_tanh or gelu; vLLM raises on any other."""
    n = r.layers()
    activation = r.get("hidden_activation", None)
    if activation not in (None, "gelu_pytorch_tanh", "gelu"):
        raise ConfigError(r.file, r.prefix + "hidden_activation", activation, "gelu_pytorch_tanh or gelu (gemma.py raises otherwise)")
    if not r.flag("tie_word_embeddings", True):
        raise ConfigError(r.file, r.prefix + "tie_word_embeddings", False,
                          "true: gemma.py takes the logits from the embedding (it asserts so up to 0.28.x; an untied head is not modeled)")  # fmt: skip
    common = {**_common(r), "attention_bias": False, "output_bias": False}
    return {**common, "layers": (FULL,) * n, "mlps": (Mlp(intermediate=r.int("intermediate_size")),) * n}


def _internlm2(r: _Reader) -> dict[str, Any]:
    """InternLM2 and InternLM2.5 (vllm/model_executor/models/internlm2.py, InternLM2ForCausalLM, the same
    from 0.10.1.1 to 0.33.0): Llama's layers, q/k/v fused in wqkv and gate/up in gate_up_proj (the same
    sizes as apart), no bias anywhere (bias=False written in, whatever the config's "bias" says),
    head_dim hidden_size / num_attention_heads (any head_dim field is not read), every layer full
    attention, the output head tied only where the config says (InternLM2Config: not). Read on its own
    and as InternVL's language model under llm_config."""
    n = r.layers()
    common = _common(r)
    common.update(head_dim=common["hidden"] // common["heads"], attention_bias=False, output_bias=False)
    return {**common, "layers": (FULL,) * n, "mlps": (Mlp(intermediate=r.int("intermediate_size")),) * n}


def _internlm3(r: _Reader) -> dict[str, Any]:
    """InternLM3, which vLLM builds with Llama's code (registry.py: InternLM3ForCausalLM -> llama.py
    LlamaForCausalLM, 0.10.1.1 to 0.33.0). LlamaDecoderLayer reads its biases so: o_proj where
    attention_bias or the config's "bias" says, q/k/v where qkv_bias says when the config has it (else as
    o_proj), the MLP where mlp_bias says; head_dim as the config gives it (else hidden_size / heads).
    InternLM3's own modeling code reads "bias" as the MLP's; vLLM's reading is the one counted."""
    n = r.layers()
    common = _common(r, llama=True)
    biased = common["attention_bias"] or r.flag("bias", False)
    qkv = r.flag("qkv_bias") if "qkv_bias" in r.data else biased
    common.update(attention_bias=qkv, output_bias=biased)
    return {**common, **_uniform(r, n), "mlps": (Mlp(intermediate=r.int("intermediate_size"), bias=r.flag("mlp_bias")),) * n}


def _starcoder2(r: _Reader) -> dict[str, Any]:
    """StarCoder2 (vllm/model_executor/models/starcoder2.py, Starcoder2ForCausalLM, the same from 0.10.1.1 to
    0.24.0; from 0.25.0 the registry sends the class to the Transformers backend, see
    OWN_CODE_RELEASES): head_dim hidden_size / heads; q/k/v and o_proj biased where use_bias says;
    a plain MLP, c_fc (column-parallel) and c_proj (row-parallel), biased the same way; every norm,
    the final one too, an nn.LayerNorm with its bias. No layer passes a window of its own, so the
    config's sliding_window is every layer's (_uniform); the head is the embedding where
    tie_word_embeddings says so (Starcoder2Config's default: it does)."""
    n = r.layers()
    bias = r.flag("use_bias")
    common = _common(r)
    common.update(head_dim=common["hidden"] // common["heads"], attention_bias=bias, output_bias=bias)
    mlps = (Mlp(intermediate=r.int("intermediate_size"), bias=bias, gated=False),) * n
    return {**common, **_uniform(r, n), "mlps": mlps, "norm_bias": True}


def _width(r: _Reader, key: str, built: int, why: str) -> None:
    """A width the model code does not read: refused where the config says another, as the checkpoint would not load."""
    given = r.data.get(key)
    if given is not None and given != built:
        raise ConfigError(r.file, r.prefix + key, given, f"{built}: {why}, so a checkpoint of another width does not load")


def _mha(r: _Reader, heads_key: str = "num_attention_heads", hidden_key: str = "hidden_size") -> dict[str, Any]:
    """Attention of as many K and V heads as query heads, head_dim hidden / heads, and the vocabulary."""
    heads, hidden = r.int(heads_key), r.int(hidden_key)
    return {"hidden": hidden, "vocab": r.int("vocab_size"), "heads": heads, "kv_heads": heads, "head_dim": hidden // heads}


def _phi(r: _Reader) -> dict[str, Any]:
    """Microsoft's Phi-1, Phi-1.5 and Phi-2 (vllm/model_executor/models/phi.py, PhiForCausalLM, 0.10.1.1 to
    0.31.0; from 0.32.0 the registry sends the class to the Transformers backend, see OWN_CODE_RELEASES): a
    parallel block, attention and MLP reading one LayerNorm (with its bias); qkv_proj (QKVParallelLinear of
    num_attention_heads K and V heads, num_key_value_heads unread) and dense, both biased; fc1 and fc2 of
    n_inner, else 4 x hidden_size (PhiConfig's intermediate_size is not read), biased; final_layernorm; an
    lm_head of its own with a bias (tie asserted false). The rope turns partial_rotary_factor of each head."""
    n = r.layers()
    common = _mha(r)
    kv = r.data.get("num_key_value_heads")
    if kv is not None and kv != common["heads"]:
        raise ConfigError(r.file, r.prefix + "num_key_value_heads", kv, f"{common['heads']}: phi.py builds a K and V head for every query head")
    if r.flag("qk_layernorm"):
        raise ConfigError(r.file, r.prefix + "qk_layernorm", True, "false: phi.py builds no q or k LayerNorm")
    if r.flag("tie_word_embeddings"):
        raise ConfigError(r.file, r.prefix + "tie_word_embeddings", True, "false: phi.py's lm_head carries a bias of its own")
    inner = r.int("n_inner", None) or 4 * common["hidden"]
    _width(r, "intermediate_size", inner, "phi.py builds fc1 of n_inner, else 4 x hidden_size")
    return {**common, "layers": (FULL,) * n, "mlps": (Mlp(intermediate=inner, bias=True, gated=False),) * n, "attention_bias": True,
            "output_bias": True, "parallel_block": True, "norm_bias": True, "lm_head_bias": True}  # fmt: skip


def _falcon(r: _Reader) -> dict[str, Any]:
    """TII's Falcon 7B, 40B and 180B and Falcon-RW (vllm/model_executor/models/falcon.py, FalconForCausalLM,
    0.10.1.1 to 0.33.0): head_dim hidden_size / heads (asserted whole); K and V heads num_kv_heads under
    new_decoder_architecture, else one under multi_query, else one a query head (Falcon-7B's num_kv_heads
    is not read); query_key_value and dense biased where bias says; an MLP of 4 x hidden_size
    (ffn_hidden_size is not read), biased the same way; LayerNorms with biases: input_layernorm and
    post_attention_layernorm without parallel_attn, else ln_attn and ln_mlp where num_ln_in_parallel_attn
    is 2 (new_decoder_architecture leaves it 2 when None), else input_layernorm alone; ln_f. A rope of
    the whole head unless alibi (slopes, no tensor). The head is the embedding unless
    tie_word_embeddings is false (None ties). Falcon3 checkpoints are LlamaForCausalLM, Falcon-H1 FalconH1ForCausalLM."""
    n = r.layers()
    common = _mha(r)
    if common["head_dim"] * common["heads"] != common["hidden"]:
        raise ConfigError(r.file, r.prefix + "num_attention_heads", common["heads"], f"a divisor of hidden_size ({common['hidden']}): falcon.py asserts it")
    new = r.flag("new_decoder_architecture")
    if new:
        common["kv_heads"] = common["heads"] if r.get("num_kv_heads", None) is None else r.int("num_kv_heads")
    elif r.flag("multi_query"):
        common["kv_heads"] = 1
    if common["heads"] % common["kv_heads"]:
        raise ConfigError(r.file, r.prefix + "num_kv_heads", common["kv_heads"], f"a divisor of num_attention_heads ({common['heads']})")
    _width(r, "ffn_hidden_size", 4 * common["hidden"], "falcon.py builds dense_h_to_4h of 4 x hidden_size")
    bias = r.flag("bias")
    r.flag("alibi")  # read for the rope (_ropes): checked here
    fields = {**common, "layers": (FULL,) * n, "mlps": (Mlp(intermediate=4 * common["hidden"], bias=bias, gated=False),) * n,
              "attention_bias": bias, "output_bias": bias, "norm_bias": True}  # fmt: skip
    if r.flag("parallel_attn"):
        norms = r.get("num_ln_in_parallel_attn", None)
        fields.update(parallel_block=True, extra_norms=("ln_mlp",) if norms == 2 or norms is None and new else ())
    tie = r.get("tie_word_embeddings", None)
    fields["tie_embeddings"] = True if tie is None else as_flag(tie, r.file, r.prefix + "tie_word_embeddings")
    return fields


def _gpt_neox(r: _Reader) -> dict[str, Any]:
    """EleutherAI's GPT-NeoX-20B and Pythia (vllm/model_executor/models/gpt_neox.py, GPTNeoXForCausalLM,
    0.10.1.1 to 0.31.0; from 0.32.0 the Transformers backend, see OWN_CODE_RELEASES): query_key_value of as
    many K and V heads as query heads and dense, biased where attention_bias says (its default: they are);
    dense_h_to_4h and dense_4h_to_h of intermediate_size, always biased; input_layernorm and
    post_attention_layernorm, LayerNorms with biases, whatever use_parallel_residual says (it changes the
    sum, not the tensors); final_layer_norm; embed_out, the embedding where tie_word_embeddings says. The
    rope turns rotary_pct of each head."""
    n = r.layers()
    bias = r.flag("attention_bias")
    return {**_mha(r), "layers": (FULL,) * n, "mlps": (Mlp(intermediate=r.int("intermediate_size"), bias=True, gated=False),) * n,
            "attention_bias": bias, "output_bias": bias, "norm_bias": True}  # fmt: skip


def _gpt_bigcode(r: _Reader) -> dict[str, Any]:
    """BigCode's SantaCoder and StarCoder (vllm/model_executor/models/gpt_bigcode.py, GPTBigCodeForCausalLM,
    0.10.1.1 to 0.24.0; from 0.25.0 the Transformers backend, see OWN_CODE_RELEASES), read through
    GPTBigCodeConfig's names (n_embd, n_head, n_layer, n_positions, n_inner): c_attn of one K and V head
    under multi_query (replicated on every rank), else one a query head, and c_proj, both biased; c_fc of
    n_inner, else 4 x n_embd, and c_proj, biased; ln_1, ln_2 and ln_f, LayerNorms with biases; wte, and wpe,
    a learned table of n_positions rows (nn.Embedding, whole on every rank); no rope. The head is wte
    where tie_word_embeddings says (its default: it is)."""
    if r.flag("add_cross_attention", False):
        raise ConfigError(r.file, r.prefix + "add_cross_attention", True, "false: gpt_bigcode.py asserts no cross-attention")
    n = r.int("n_layer", maximum=MAX_LAYERS)
    common = _mha(r, "n_head", "n_embd")
    if r.flag("multi_query"):
        common["kv_heads"] = 1
    inner = r.int("n_inner", None) or 4 * common["hidden"]
    return {**common, "layers": (FULL,) * n, "mlps": (Mlp(intermediate=inner, bias=True, gated=False),) * n, "attention_bias": True,
            "output_bias": True, "norm_bias": True, "position_table": r.int("n_positions")}  # fmt: skip


def _mimo(r: _Reader) -> dict[str, Any]:
    """Xiaomi's MiMo-7B (vllm/model_executor/models/mimo.py, MiMoForCausalLM, 0.10.1.1 to 0.33.0): Qwen2's
    model and layers (MiMoModel subclasses Qwen2Model: q/k/v with biases, the final norm applied before
    the head), its model.mtp_layers skipped at load. Those num_nextn_predict_layers layers are the
    drafter's, loaded only with speculative decoding by mimo_mtp.py (MiMoMTP): each a
    MiMoMultiTokenPredictorLayer of token_layernorm, hidden_layernorm, input_proj (nn.Linear of
    2 x hidden_size to hidden_size, whole on every rank), a Qwen2DecoderLayer and final_layernorm. The MTP
    model also loads an embed_tokens and an lm_head, but the proposer swaps in the target's and frees its
    own inside the load's memory profile (vllm/v1/spec_decode/eagle.py load_model, 0.10.1.1;
    llm_base_proposer.py _maybe_share_embeddings and _maybe_share_lm_head, 0.33.0), so they are not
    counted; with pipeline parallelism (its world size above 1) the drafter keeps its own embedding, which
    is not modeled."""
    return {**_dense(r, bias=True), "drafter_layers": r.int("num_nextn_predict_layers", 0, minimum=0)}
