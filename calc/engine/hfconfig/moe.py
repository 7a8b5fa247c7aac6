"""The readers of the mixture-of-experts classes (MLA's DeepSeek among them)."""

from __future__ import annotations

from typing import Any

from calc.engine.hfconfig.core import (
    _MISSING,
    _SLIDING_OR_FULL,
    CHUNKED,
    FULL,
    MLA,
    ConfigError,
    DeepseekV4Dims,
    Indexer,
    Mlp,
    _common,
    _layer_types,
    _Reader,
    _uniform,
    _untied,
)


def _glm4_moe(r: _Reader) -> dict[str, Any]:
    """GLM-4.5 to 4.7: dense MLPs in the first first_k_dense_replace layers, then routed experts
    and one shared; the router in float32 with its correction bias; the MTP layers load only
    with speculative decoding (vllm/model_executor/models/glm4_moe.py)."""
    n = r.layers()
    first_dense = r.int("first_k_dense_replace", 0, minimum=0)
    experts = r.int("moe_intermediate_size")
    moe = Mlp(experts=r.int("n_routed_experts"), expert_intermediate=experts, shared_intermediate=r.int("n_shared_experts", 0, minimum=0) * experts)
    mlps = tuple(moe if i >= first_dense else Mlp(intermediate=r.int("intermediate_size")) for i in range(n))
    common = {**_common(r, qk_norm="head" if r.get("use_qk_norm", False) else ""), "head_dim": r.int("head_dim")}  # read as is: no default
    return {**common, "layers": (FULL,) * n, "mlps": mlps, "router_fp32": True, "routing_bias": True,
            "drafter_layers": r.int("num_nextn_predict_layers", 0, minimum=0)}  # fmt: skip


def _minimax_m2(r: _Reader) -> dict[str, Any]:
    """MiniMax-M2: every layer routed experts of intermediate_size, no shared one (vLLM ignores
    shared_intermediate_size), q and k normed over all heads, divided over the ranks. Its MTP
    modules are skipped: vLLM has no drafter for them (vllm/model_executor/models/minimax_m2.py)."""
    n = r.layers()
    moe = Mlp(experts=r.int("num_local_experts"), expert_intermediate=r.int("intermediate_size"))
    return {**_common(r, qk_norm="split"), "layers": (FULL,) * n, "mlps": (moe,) * n, "router_fp32": True,
            "routing_bias": r.flag("use_routing_bias")}  # fmt: skip


def _qwen_moe(r: _Reader, qk_norm: str = "", bias: bool = False) -> dict[str, Any]:
    """Qwen2 and Qwen3 MoE. Qwen2 MoE's q/k/v carry a bias, as Qwen2's do
    (vllm/model_executor/models/qwen2_moe.py, Qwen2MoeAttention: QKVParallelLinear(bias=True), 0.33.0)."""
    n = r.layers()
    only = r.get("mlp_only_layers", []) or []
    if not isinstance(only, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only):
        raise ConfigError(r.file, r.prefix + "mlp_only_layers", only, "a list of layer indexes")
    step = r.int("decoder_sparse_step", 1)
    moe = Mlp(experts=r.int("num_experts"), expert_intermediate=r.int("moe_intermediate_size"),
              shared_intermediate=r.int("shared_expert_intermediate_size", 0, minimum=0), gated_shared=True)  # fmt: skip
    dense = Mlp(intermediate=r.int("intermediate_size", 1))
    mlps = tuple(moe if (i not in only and (i + 1) % step == 0) else dense for i in range(n))
    return {**_common(r, bias=bias, qk_norm=qk_norm), **_uniform(r, n), "mlps": mlps}


def _mixtral(r: _Reader) -> dict[str, Any]:
    n = r.layers()
    return {**_common(r), **_uniform(r, n), "mlps": (Mlp(experts=r.int("num_local_experts"), expert_intermediate=r.int("intermediate_size")),) * n}


def _granite_moe(r: _Reader) -> dict[str, Any]:
    """IBM's Granite 3.0 and 3.1 MoE models (vllm/model_executor/models/granitemoe.py, GraniteMoeForCausalLM,
    0.10.1.1 to 0.33.0): Mixtral's layout, every layer num_local_experts experts of intermediate_size and a
    router (GraniteMoeMoE: gate and FusedMoE, divided over the ranks or dealt under expert parallel as any
    FusedMoE); q/k/v and o_proj without biases whatever attention_bias says (bias=False), head_dim
    hidden_size / heads, the head tied where the config says. The embedding, attention, residual and
    logits multipliers scale activations and build no weight. From 0.29.0 the attention also reads
    layer_types, layer_rope_theta and attention_sinks (granite.py granite_layer_attn_params: sliding
    layers, NoPE layers, sinks), which no Granite 3.x MoE config writes: a config that does is refused."""
    n = r.layers()
    for key in ("layer_types", "layer_rope_theta", "attention_sinks"):
        if r.get(key, None) is not None:
            raise ConfigError(r.file, r.prefix + key, r.get(key), "absent: Granite MoE's per-layer windows, NoPE layers and sinks are not modeled")
    if r.flag("attention_bias", False):
        raise ConfigError(r.file, r.prefix + "attention_bias", True, "false: vLLM's granitemoe.py builds no attention bias")
    moe = Mlp(experts=r.int("num_local_experts"), expert_intermediate=r.int("intermediate_size"))
    common = {**_common(r), "head_dim": r.int("hidden_size") // r.int("num_attention_heads")}
    return {**common, **_uniform(r, n), "mlps": (moe,) * n}


def _phimoe(r: _Reader) -> dict[str, Any]:
    """Microsoft's Phi-3.5-MoE (vllm/model_executor/models/phimoe.py, PhiMoEForCausalLM, 0.10.1.1 to 0.33.0):
    every layer num_local_experts experts of intermediate_size and a router (PhiMoE: gate and FusedMoE);
    q/k/v and o_proj with biases whatever attention_bias says (bias=True); the two layer norms and the
    final one nn.LayerNorm with a weight and a bias (elementwise_affine, bias by default); head_dim the
    config's, else hidden_size / heads; lm_head (ParallelLMHead, bias=True, quant_config=None) its own,
    its bias of the padded vocabulary divided like it, never tied to the embedding."""
    n = r.layers()
    _untied(r, "phimoe.py")
    moe = Mlp(experts=r.int("num_local_experts"), expert_intermediate=r.int("intermediate_size"))
    return {**_common(r), **_uniform(r, n), "mlps": (moe,) * n, "attention_bias": True, "output_bias": True,
            "norm_bias": True, "lm_head_bias": True}  # fmt: skip


def _olmoe(r: _Reader) -> dict[str, Any]:
    """AI2's OLMoE (vllm/model_executor/models/olmoe.py, OlmoeForCausalLM, 0.10.1.1 to 0.33.0): every layer
    num_experts experts of intermediate_size and a router (OlmoeMoE: gate and FusedMoE), no shared expert;
    q/k/v and o_proj without biases (bias=False); q_norm and k_norm RMSNorms over all heads (heads x
    head_dim and KV heads x head_dim), whole on every rank (_apply_qk_norm gathers q and k over the
    ranks before norming them); head_dim hidden_size / heads; lm_head its own, never tied."""
    n = r.layers()
    _untied(r, "olmoe.py")
    if r.flag("attention_bias", False):
        raise ConfigError(r.file, r.prefix + "attention_bias", True, "false: vLLM's olmoe.py builds no attention bias")
    moe = Mlp(experts=r.int("num_experts"), expert_intermediate=r.int("intermediate_size"))
    common = {**_common(r, qk_norm="full"), "head_dim": r.int("hidden_size") // r.int("num_attention_heads")}
    return {**common, **_uniform(r, n), "mlps": (moe,) * n}


def _by_layer(r: _Reader, key: str, n: int, minimum: int = 1) -> list[int]:
    """A field that is one whole number for every layer or a list of n, one a layer (Hunyuan's)."""
    value = r.get(key)
    if not isinstance(value, list):
        return [r.int(key, minimum=minimum)] * n
    if len(value) != n or any(isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in value):
        raise ConfigError(r.file, r.prefix + key, value, f"a whole number, or a list of {n} whole numbers of at least {minimum}, one a layer")
    return value


def _hunyuan(r: _Reader) -> dict[str, Any]:
    """Tencent's Hunyuan models (vllm/model_executor/models/hunyuan_v1.py, HunYuanMoEV1ForCausalLM and
    HunYuanDenseV1ForCausalLM, 0.10.1.1 to 0.28.0, and the MoE class's hunyuan_v1_moe.py in 0.9.2, the
    same layers; from 0.29.0 the registry sends both to the Transformers backend: OWN_CODE_RELEASES).
    head_dim is head_dim where set, else attention_head_dim, else hidden_size / heads; q/k/v and o_proj
    biased where attention_bias or bias says; with use_qk_norm, query_layernorm and key_layernorm of
    head_dim. A layer is HunYuanSparseMoeBlock where num_experts is above 1 (_is_moe): num_experts
    experts of moe_intermediate_size (else intermediate_size), a router (ReplicatedLinear, unquantized,
    in the model's dtype) and, with use_mixed_mlp_moe, a shared HunYuanMLP of intermediate_size x
    num_shared_expert, without a gate of its own, divided over the ranks like a dense MLP; else a dense
    HunYuanMLP of intermediate_size, biased where mlp_bias says. Each of these sizes (and moe_topk) may
    be one value or a list, one a layer. Cross-layer attention (use_cla with a cla_share_factor above 1:
    a layer the factor does not divide reads the K and V of the layer before through
    HunYuanCrossAttention, q_proj alone) is refused: its cache sharing is not modeled."""
    n = r.layers()
    if r.flag("use_cla", False) and r.int("cla_share_factor", 1) > 1:
        raise ConfigError(r.file, r.prefix + "use_cla", True, "false: Hunyuan's cross-layer attention (cla_share_factor above 1) is not modeled")
    heads, hidden = r.int("num_attention_heads"), r.int("hidden_size")
    head_dim = r.int("head_dim", None) or r.int("attention_head_dim", None) or hidden // heads
    common = _common(r)
    bias = common["attention_bias"] or r.flag("bias", False)
    common.update(head_dim=head_dim, attention_bias=bias, output_bias=bias, qk_norm="head" if r.flag("use_qk_norm", False) else "")
    if isinstance(r.get("num_experts", None), list):
        raise ConfigError(r.file, r.prefix + "num_experts", r.get("num_experts"), "one whole number: hunyuan_v1.py builds as many in every MoE layer")
    experts = 0 if r.get("num_experts", None) is None else r.int("num_experts", minimum=0)  # absent or null: dense (_is_moe)
    intermediate = _by_layer(r, "intermediate_size", n)
    if experts <= 1:
        mlps = tuple(Mlp(intermediate=size, bias=r.flag("mlp_bias")) for size in intermediate)
        return {**common, "layers": (FULL,) * n, "mlps": mlps}
    sizes = intermediate if r.get("moe_intermediate_size", None) is None else _by_layer(r, "moe_intermediate_size", n)
    shared = _by_layer(r, "num_shared_expert", n, minimum=0) if r.flag("use_mixed_mlp_moe", False) else [0] * n
    mlps = tuple(Mlp(experts=experts, expert_intermediate=size, shared_intermediate=intermediate[i] * shared[i]) for i, size in enumerate(sizes))
    return {**common, "layers": (FULL,) * n, "mlps": mlps}


def _bailing(r: _Reader) -> dict[str, Any]:
    """inclusionAI's Ling (vllm/model_executor/models/bailing_moe.py: BailingMoeForCausalLM, Ling 1.x,
    from 0.10.1.1; BailingMoeV2ForCausalLM, Ling and Ring 2.0, from 0.11.0, a subclass that adds nothing;
    read as 0.11.0 to 0.33.0 build them). Attention: query_key_value of head_dim (else hidden_size / heads),
    biased where use_bias or use_qkv_bias says, dense (o_proj) biased where use_bias says; with use_qk_norm,
    query_layernorm and key_layernorm of head_dim, RMSNorms where use_rmsnorm says, else nn.LayerNorms
    with a bias; a rope of rotary_dim, else head_dim x partial_rotary_factor. The first
    first_k_dense_replace layers a gated MLP of intermediate_size; the rest num_experts experts of
    moe_intermediate_size (BailingMoE: FusedMoE, no bias) with a router (GateLinear, float32 where
    router_dtype is "fp32", else the model's 2 B), a float32 expert_bias with
    moe_router_enable_expert_bias, and with num_shared_experts a shared gated MLP of
    moe_shared_expert_intermediate_size (else moe_intermediate_size) x num_shared_experts. The head is
    tied where the config says. vLLM builds no drafter for the class (its MTP, bailing_moe_mtp.py, is
    Ling 2.5's), so num_nextn_predict_layers loads nothing. 0.10.1.1 and 0.10.2 build Ling 1.x alike for
    its configs (no dense layers, no q/k norms, no expert bias, a router in the model's dtype); they
    read neither first_k_dense_replace nor use_qk_norm. use_bias (every linear but the experts biased,
    the MLPs' too) is refused: no Ling checkpoint sets it."""
    n = r.layers()
    if r.flag("use_bias", False):
        raise ConfigError(r.file, r.prefix + "use_bias", True, "false: Bailing's biased linears (use_bias) are not modeled")
    common = _common(r)
    common["attention_bias"] = r.flag("use_qkv_bias", False)
    if r.flag("use_qk_norm", False):
        common["qk_norm"] = "head" if r.flag("use_rmsnorm", False) else "head layernorm"
    experts, moe_width = r.int("num_experts"), r.int("moe_intermediate_size")
    shared = r.int("num_shared_experts", 0, minimum=0)
    if shared:
        shared *= moe_width if r.get("moe_shared_expert_intermediate_size", None) is None else r.int("moe_shared_expert_intermediate_size")
    moe = Mlp(experts=experts, expert_intermediate=moe_width, shared_intermediate=shared)
    first_dense = r.int("first_k_dense_replace", minimum=0)
    mlps = tuple(Mlp(intermediate=r.int("intermediate_size")) if i < first_dense else moe for i in range(n))
    router = r.get("router_dtype", None)
    return {**common, "layers": (FULL,) * n, "mlps": mlps, "router_fp32": router == "fp32",
            "routing_bias": r.flag("moe_router_enable_expert_bias", False)}  # fmt: skip


def _deepseek(r: _Reader) -> dict[str, Any]:
    n = r.layers()
    first_dense = r.int("first_k_dense_replace", 0, minimum=0)
    freq = r.int("moe_layer_freq", 1)
    moe = Mlp(experts=r.int("n_routed_experts"), expert_intermediate=r.int("moe_intermediate_size"),
              shared_intermediate=r.int("n_shared_experts", 0, minimum=0) * r.int("moe_intermediate_size"))  # fmt: skip
    dense = Mlp(intermediate=r.int("intermediate_size"))
    mlps = tuple(moe if (i >= first_dense and i % freq == 0) else dense for i in range(n))
    common = _common(r)
    return {
        **common,
        "kv_heads": 1,
        "layers": (MLA,) * n,
        "mlps": mlps,
        "q_lora_rank": r.int("q_lora_rank", None),
        "kv_lora_rank": r.int("kv_lora_rank"),
        "qk_nope_head_dim": r.int("qk_nope_head_dim"),
        "qk_rope_head_dim": r.int("qk_rope_head_dim"),
        "v_head_dim": r.int("v_head_dim"),
        "drafter_layers": r.int("num_nextn_predict_layers", 0, minimum=0),
    }


def _deepseek_v1(r: _Reader) -> dict[str, Any]:
    """DeepSeek-MoE 16B, DeepSeek-Prover-V1.5 and other model_type "deepseek" checkpoints (DeepseekForCausalLM,
    which registry.py sends to deepseek_v2.py, a subclass of DeepseekV2ForCausalLM that adds nothing, in 0.13.0,
    0.20.0 and 0.33.0). DeepseekV2DecoderLayer takes DeepseekAttention for model_type deepseek (use_mha): plain
    attention, qkv_proj of num_attention_heads query heads and num_key_value_heads K and V heads of hidden_size /
    heads (a config's head_dim is not read: another width does not load) and o_proj, no bias; input_layernorm and
    post_attention_layernorm RMSNorms. A layer is a DeepseekV2MoE (a router of n_routed_experts, FusedMoE of
    moe_intermediate_size, shared experts of n_shared_experts x moe_intermediate_size) where n_routed_experts is
    set, the layer is at least first_k_dense_replace and a multiple of moe_layer_freq; else a dense gated MLP of
    intermediate_size (every layer where n_routed_experts is null, as in DeepSeek-Prover-V1.5). lm_head is its
    own, never tied. A config with MLA fields (kv_lora_rank) under model_type deepseek is refused: its checkpoint
    holds MLA weights that DeepseekAttention does not build."""
    n = r.layers()
    _untied(r, "deepseek_v2.py")
    if r.get("model_type", None) != "deepseek":
        raise ConfigError(r.file, r.prefix + "model_type", r.get("model_type", None), 'deepseek: DeepseekAttention is taken for model_type "deepseek" alone')
    if r.get("kv_lora_rank", None) is not None:
        raise ConfigError(r.file, r.prefix + "kv_lora_rank", r.get("kv_lora_rank"), "null: MLA checkpoints are DeepseekV2ForCausalLM's")
    common = _common(r)
    common.update(head_dim=common["hidden"] // common["heads"], attention_bias=False, output_bias=False)
    given = r.get("head_dim", None)
    if given is not None and given != common["head_dim"]:
        raise ConfigError(r.file, r.prefix + "head_dim", given, f"{common['head_dim']}: DeepseekAttention builds heads of hidden_size / heads")
    dense = Mlp(intermediate=r.int("intermediate_size"))
    if r.get("n_routed_experts", None) is None:
        return {**common, "layers": (FULL,) * n, "mlps": (dense,) * n}
    first_dense = r.int("first_k_dense_replace", 0, minimum=0)
    freq = r.int("moe_layer_freq", 1)
    width = r.int("moe_intermediate_size")
    shared = 0 if r.get("n_shared_experts", None) is None else r.int("n_shared_experts", minimum=0)
    moe = Mlp(experts=r.int("n_routed_experts"), expert_intermediate=width, shared_intermediate=shared * width)
    mlps = tuple(moe if (i >= first_dense and i % freq == 0) else dense for i in range(n))
    return {**common, "layers": (FULL,) * n, "mlps": mlps, "routing_bias": r.get("topk_method", None) == "noaux_tc"}


def _deepseek_v32(r: _Reader) -> dict[str, Any]:
    """DeepSeek-V3.2-Exp and V3.2 (vllm/model_executor/models/deepseek_v2.py, DeepseekV2MLAAttention
    and Indexer, 0.11.0 to 0.33.0): DeepSeek-V3's layers, each MLA layer with a lightning indexer
    (is_v32: the config has index_topk), replicated on every rank: wq_b (q_lora_rank to index_n_heads
    x index_head_dim, quantized as the checkpoint is), wk and weights_proj (hidden_size to index_head_dim
    and to index_n_heads, fused into one unquantized wk_weights_proj from 0.20.0; 0.11.0 and 0.13.0 also
    give weights_proj a bias of index_n_heads) and k_norm, a LayerNorm of index_head_dim (float32 in
    0.33.0), counted as 0.33.0 builds them. Each indexer keeps its own cache of one key a token
    (DeepseekV32IndexerCache), and from 0.13.0 its own rope (indexer_rope_emb, neox style: a cos/sin
    cache apart from MLA's). An MTP layer builds a full indexer too. index_topk_freq or
    index_topk_pattern (layers that reuse another layer's indexer, 0.33.0) are refused: no config of
    this class writes them. GLM-5 and 5.1 (GlmMoeDsaForCausalLM, model_type glm_moe_dsa) are built by the
    same code and read here: their router's logits are float32 from 0.25.0 (_get_moe_router_dtype), its
    weight in the model's dtype; GLM-5.2's shared indexers (index_topk_freq 4) are refused likewise."""
    fields = _deepseek(r)
    q_lora = fields["q_lora_rank"]
    if q_lora is None:
        raise ConfigError(r.file, r.prefix + "q_lora_rank", None, "a whole number: the indexer's wq_b reads the q latent (vLLM asserts it)")
    for key in ("index_topk_freq", "index_topk_pattern"):
        if r.get(key, None) not in (None, 1):
            raise ConfigError(r.file, r.prefix + key, r.get(key), "absent or 1: indexers shared between layers are not modeled")
    r.int("index_topk")
    # topk_method "noaux_tc" gives each gate a float32 e_score_correction_bias (deepseek_v2.py DeepseekV2MoE)
    fields["routing_bias"] = r.get("topk_method", None) == "noaux_tc"
    fields["indexer"] = Indexer(heads=r.int("index_n_heads"), head_dim=r.int("index_head_dim"), q_lora_rank=q_lora)
    return fields


DSV4_RATIOS = (0, 4, 128)  # a layer's compress ratio: 0 sliding window alone, 4 (CSA, with an indexer), 128 (HCA)


def _deepseek_v4(r: _Reader) -> dict[str, Any]:
    """DeepSeek V4 (vllm/models/deepseek_v4/, DeepseekV4ForCausalLM; registered from 0.20.0, in
    vllm/model_executor/models/deepseek_v4.py up to 0.21.0; read as 0.33.0's nvidia/model.py,
    attention.py and compressor.py build it). Every layer is a DeepseekV4DecoderLayer: an attention of
    num_attention_heads heads of head_dim over one latent (fused_wqa_wkv, wq_b, wo_a of o_groups groups of
    o_lora_rank, wo_b), a compressor where the layer's compress ratio is 4 or 128 and an indexer where it
    is 4, and an MoE (DeepseekV4MoE) of n_routed_experts experts of moe_intermediate_size and
    n_shared_experts shared ones; the first num_hash_layers layers route by a token table (tid2eid)
    instead of a score bias; hyper-connections of hc_mult streams around both. The ratios are the first
    num_hidden_layers entries of compress_ratios (the rest are the MTP layers'). The MTP layers
    (num_nextn_predict_layers) are dropped at load (the weights mapper maps "mtp." to None) and load only
    as the DeepSeekV4MTP drafter, which is not modeled: drafter_layers stays 0. The vision variant
    (vision_n_layers, DeepseekV4ForConditionalGeneration from 0.30.0) is refused."""
    n = r.layers()
    if r.get("vision_n_layers", 0) not in (0, None):
        raise ConfigError(r.file, r.prefix + "vision_n_layers", r.get("vision_n_layers"), "absent or 0: DeepSeek V4's vision variant is not modeled")
    if r.get("hidden_act", "silu") != "silu":
        raise ConfigError(r.file, r.prefix + "hidden_act", r.get("hidden_act"), "silu: DeepseekV4MLP takes no other")
    _untied(r, "deepseek_v4")
    ratios = r.get("compress_ratios")
    if not isinstance(ratios, list) or len(ratios) < n or any(isinstance(v, bool) or v not in DSV4_RATIOS for v in ratios):
        raise ConfigError(r.file, r.prefix + "compress_ratios", ratios, f"a list of at least {n} ratios, each 0, 4 or 128, one a layer")
    expert_dtype = r.get("expert_dtype", "fp4")  # quant_config.py DeepseekV4FP8Config: missing is fp4
    if expert_dtype not in ("fp4", "fp8"):
        raise ConfigError(r.file, r.prefix + "expert_dtype", expert_dtype, "fp4 or fp8 (quant_config.py _DEEPSEEK_V4_EXPERT_DTYPES)")
    width = r.int("moe_intermediate_size")
    shared = r.get("n_shared_experts", None)
    shared = 0 if shared is None else r.int("n_shared_experts")
    moe = Mlp(experts=r.int("n_routed_experts"), expert_intermediate=width, shared_intermediate=shared * width)
    r.int("index_topk")  # the indexer's top-k buffer's width (DeepseekV4Model.topk_indices_buffer)
    dsv4 = DeepseekV4Dims(o_lora_rank=r.int("o_lora_rank"), o_groups=r.int("o_groups"), hc_mult=r.int("hc_mult"),
                          index_heads=r.int("index_n_heads"), index_head_dim=r.int("index_head_dim"),
                          hash_layers=r.int("num_hash_layers", minimum=0), top_k=r.int("num_experts_per_tok"), expert_fp4=expert_dtype == "fp4")  # fmt: skip
    return {**_common(r), "attention_bias": False, "output_bias": False, "kv_heads": 1, "layers": (MLA,) * n, "mlps": (moe,) * n,
            "q_lora_rank": r.int("q_lora_rank"), "qk_rope_head_dim": r.int("qk_rope_head_dim"), "sliding_window": r.int("sliding_window"),
            "routing_bias": r.get("topk_method", None) == "noaux_tc", "compress_ratios": tuple(ratios[:n]), "dsv4": dsv4}  # fmt: skip


def _gpt_oss(r: _Reader) -> dict[str, Any]:
    n = r.layers()
    layers = _layer_types(r, n, _SLIDING_OR_FULL)
    moe = Mlp(experts=r.int("num_local_experts"), expert_intermediate=r.int("intermediate_size"), bias=True)
    return {**_common(r), "layers": layers, "mlps": (moe,) * n, "sliding_window": r.int("sliding_window"), "sinks": True,
            "output_bias": True}  # fmt: skip


def _llama4(r: _Reader) -> dict[str, Any]:
    """Llama 4's language model (vllm/model_executor/models/llama4.py, Llama4DecoderLayer and
    Llama4Attention, 0.33.0): a layer whose no_rope_layers entry is 1 takes RoPE and chunked local
    attention over attention_chunk_size tokens (ChunkedLocalAttention), one whose entry is 0 is a
    global NoPE layer of full attention; no_rope_layers empty or absent is filled as transformers'
    Llama4TextConfig fills it, one NoPE layer in no_rope_layer_interval (the last of each run). The
    q/k/v and o projections carry no bias and the q/k norm no weight. Every
    interleave_moe_layer_step-th layer is Llama4MoE: num_local_experts experts of intermediate_size,
    a router in the model's dtype and one shared expert (LlamaMLP of intermediate_size); the others
    a dense LlamaMLP of intermediate_size_mlp."""
    n = r.layers()
    chunk = r.int("attention_chunk_size", None)
    if chunk is None:
        raise ConfigError(r.file, r.prefix + "attention_chunk_size", None, "a whole number: Llama 4 without chunked local attention is not modeled")
    rope = r.data.get("no_rope_layers")
    if not rope:
        every = r.int("no_rope_layer_interval")
        rope = [int((i + 1) % every != 0) for i in range(n)]
    if not isinstance(rope, list) or len(rope) != n or any(v not in (0, 1) or isinstance(v, bool) for v in rope):
        raise ConfigError(r.file, r.prefix + "no_rope_layers", rope, f"a list of {n} entries, 1 for a RoPE layer and 0 for a NoPE one")
    step = r.int("interleave_moe_layer_step", minimum=0)
    shared = r.int("intermediate_size")
    moe = Mlp(experts=r.int("num_local_experts"), expert_intermediate=shared, shared_intermediate=shared)
    dense = Mlp(intermediate=r.int("intermediate_size_mlp"))
    mlps = tuple(moe if step and (i + 1) % step == 0 else dense for i in range(n))
    # a null head_dim is hidden_size / heads (Llama4TextConfig.__post_init__, transformers 5.5.3); a missing one is refused
    head_dim = r.int("head_dim", None) if r.data.get("head_dim", _MISSING) is None else r.int("head_dim")
    common = {**_common(r), "attention_bias": False, "output_bias": False}
    common["head_dim"] = head_dim or common["hidden"] // common["heads"]
    return {**common, "layers": tuple(CHUNKED if v else FULL for v in rope), "mlps": mlps, "attention_chunk_size": chunk}


def _ernie45_moe(r: _Reader) -> dict[str, Any]:
    """Baidu's ERNIE 4.5 MoE models (vllm/model_executor/models/ernie45_moe.py, Ernie4_5_MoeDecoderLayer,
    0.10.1.1 to 0.33.0): attention with q/k/v biased by use_bias and o_proj never; layer i holds
    Ernie4_5_MoeMoE where use_moe (moe_num_experts > 0 unless the config says) and (i + 1) %
    moe_layer_interval == 0 and moe_layer_start_index <= i <= moe_layer_end_index (-1: the last
    layer, as transformers' Ernie4_5_MoeConfig fills it), else a dense Ernie4_5_MoeMLP of
    intermediate_size with use_bias. The MoE: moe_num_experts experts of moe_intermediate_size, a
    router and its e_score_correction_bias (built whatever moe_use_aux_free says), and
    moe_num_shared_experts shared experts fused into one MLP of moe_num_shared_experts x
    moe_intermediate_size, no bias and no gate of its own. The router is float32 from 0.13.0
    (params_dtype=torch.float32) and in the model's dtype in 0.10.1.1 and 0.11.0; counted as 0.13.0
    on. The MTP layers of num_nextn_predict_layers are skipped at load (orig_to_new_substr "mtp") and
    load only as ernie_mtp.py's drafter, which is not counted."""
    n = r.layers()
    experts = r.int("moe_num_experts", 0, minimum=0)
    end = r.get("moe_layer_end_index", n - 1)
    if end == -1:
        end = n - 1
    if isinstance(end, bool) or not isinstance(end, int) or end < 0:
        raise ConfigError(r.file, r.prefix + "moe_layer_end_index", end, "a layer index, or -1 for the last layer")
    start, every = r.int("moe_layer_start_index", 0, minimum=0), r.int("moe_layer_interval", 1)
    bias = r.flag("use_bias", False)
    use_moe = r.flag("use_moe", experts > 0)
    if use_moe and not experts:
        raise ConfigError(r.file, r.prefix + "moe_num_experts", experts, "a whole number of at least 1 where use_moe is true")
    size = r.int("moe_intermediate_size") if use_moe else 0
    moe = Mlp(experts=experts, expert_intermediate=size, shared_intermediate=r.int("moe_num_shared_experts", 0, minimum=0) * size)
    dense = Mlp(intermediate=r.int("intermediate_size"), bias=bias)
    mlps = tuple(moe if use_moe and (i + 1) % every == 0 and start <= i <= end else dense for i in range(n))
    common = {**_common(r), "attention_bias": bias, "output_bias": False}
    return {**common, "layers": (FULL,) * n, "mlps": mlps, "router_fp32": use_moe, "routing_bias": use_moe}
