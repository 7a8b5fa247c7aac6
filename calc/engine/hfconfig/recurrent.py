"""The readers of the hybrid and state-space classes: layers that hold a state a request (Mamba-1 and -2,
gated delta, short convolutions, lightning attention), beside attention or alone."""

from __future__ import annotations

from typing import Any

from calc.engine.hfconfig.core import (
    _MISSING,
    DTYPE_BYTES,
    FULL,
    LIGHTNING,
    LINEAR,
    MAMBA,
    MAMBA1,
    MAX_LAYERS,
    MLP_ONLY,
    MOE_ONLY,
    PARALLEL,
    SHORT_CONV,
    ConfigError,
    GatedDeltaNet,
    Mamba1Mixer,
    Mamba2Mixer,
    Mlp,
    ShortConvMixer,
    _common,
    _kinds,
    _layer_types,
    _Reader,
    _untied,
    as_flag,
)
from calc.engine.hfconfig.moe import _qwen_moe

MINIMAX_TEXT = ("MiniMaxText01ForCausalLM", "MiniMaxM1ForCausalLM")


def _minimax_text01(r: _Reader) -> dict[str, Any]:
    """MiniMax-Text-01 and MiniMax-M1 (vllm/model_executor/models/minimax_text_01.py, MiniMaxText01ForCausalLM
    for both names, 0.10.1.1 to 0.23.0, the same layers in each): layer i is lightning attention where
    attn_type_list[i] is 0 (MiniMaxText01LinearAttention, layers/mamba/linear/minimax_linear_attn.py in
    0.23.0: qkv_proj of 3 x heads x head_dim and output_gate of heads x head_dim, both divided over the
    ranks, out_proj, and a norm of heads x head_dim divided like them, MiniMaxText01RMSNormTP; no bias) and
    softmax attention where it is 1 (MiniMaxText01Attention: q/k/v and o_proj without bias, a float32 rope
    of rotary_dim). Every layer two RMSNorms and num_local_experts experts of intermediate_size with a
    float32 router (MiniMaxText01MoE: ReplicatedLinear params_dtype float32); a layer of one expert is a
    gated MLP. lm_head is never tied and kept in float32 (lm_head.float()). Each lightning layer keeps one
    state a request, heads / TP x head_dim x head_dim in the model's dtype (linear_attention_state_shape
    and _dtype, under --mamba-cache-dtype auto). Refused: layer_types in place of attn_type_list, a list of
    expert counts, a shared MLP (shared_intermediate_size above 0) and a sliding window, none of which
    MiniMax's configs write."""
    n = r.layers()
    kinds = r.get("attn_type_list", None)
    if not isinstance(kinds, list) or len(kinds) != n or any(k not in (0, 1) or isinstance(k, bool) for k in kinds):
        raise ConfigError(r.file, r.prefix + "attn_type_list", kinds if kinds is not None else _MISSING,
                          f"a list of {n} layer types, 0 (lightning attention) or 1 (softmax attention)")  # fmt: skip
    experts = r.get("num_local_experts")
    if isinstance(experts, list):
        raise ConfigError(r.file, r.prefix + "num_local_experts", experts, "one whole number: experts counted a layer are not modeled")
    shared = r.get("shared_intermediate_size", 0)
    if not (shared in (0, None) or isinstance(shared, list) and not any(shared)):
        raise ConfigError(r.file, r.prefix + "shared_intermediate_size", shared, "0: MiniMax's shared MLP and its coefficient are not modeled")
    if r.get("sliding_window", None) is not None:
        raise ConfigError(r.file, r.prefix + "sliding_window", r.get("sliding_window"), "null: a window on MiniMax's softmax layers is not modeled")
    _untied(r, "minimax_text_01.py")
    count, width = r.int("num_local_experts"), r.int("intermediate_size")
    mlp = Mlp(experts=count, expert_intermediate=width) if count > 1 else Mlp(intermediate=width)
    common = {**_common(r), "head_dim": r.int("head_dim", None) or r.int("hidden_size") // r.int("num_attention_heads")}
    layers = tuple(FULL if k == 1 else LIGHTNING for k in kinds)
    return {**common, "layers": layers, "mlps": (mlp,) * n, "router_fp32": count > 1, "lm_head_fp32": True, "tie_embeddings": False}


def _qwen3_next(r: _Reader) -> dict[str, Any]:
    n = r.layers()
    layers = _kinds(r, n, LINEAR, "linear_attention", "full_attention_interval")
    moe = _qwen_moe(r)["mlps"] if r.get("num_experts") not in (_MISSING, None, 0) else (Mlp(intermediate=r.int("intermediate_size")),) * n
    # vLLM takes mamba_ssm_dtype for the recurrent state from Qwen3.5's config only
    # (vllm/model_executor/models/config.py, Qwen3_5ForConditionalGenerationConfig, 0.24.0)
    state = _state_bytes(r, "mamba_ssm_dtype", None) if r.architecture.startswith("Qwen3_5") else None
    linear = GatedDeltaNet(
        k_heads=r.int("linear_num_key_heads"),
        v_heads=r.int("linear_num_value_heads"),
        k_dim=r.int("linear_key_head_dim"),
        v_dim=r.int("linear_value_head_dim"),
        conv_kernel=r.int("linear_conv_kernel_dim"),
    )
    return {**_common(r, qk_norm="head"), "layers": layers, "mlps": moe, "linear": linear, "output_gate": True,
            "state_dtype_bytes": state,
            "drafter_layers": _mtp_layers(r)}  # fmt: skip


def _mtp_layers(r: _Reader) -> int:
    """The MTP drafter's layers, loaded only with speculative decoding: Qwen3NextMTP reads
    num_nextn_predict_layers and Qwen3_5MTP mtp_num_hidden_layers, each 1 when the config has none
    (vllm/model_executor/models/qwen3_next_mtp.py and qwen3_5_mtp.py, getattr(config, ..., 1), 0.33.0)."""
    layers: int = r.int("num_nextn_predict_layers" if r.architecture == "Qwen3NextForCausalLM" else "mtp_num_hidden_layers", 1, minimum=0)
    return layers


def _state_bytes(r: _Reader, key: str, default: str | None) -> int | None:
    """Bytes of one element of the recurrent state, as the config names its dtype."""
    state = r.get(key, default)
    if state is None:
        return None
    if not isinstance(state, str) or state not in DTYPE_BYTES:
        raise ConfigError(r.file, r.prefix + key, state, "float32, bfloat16 or float16")
    return DTYPE_BYTES[state]


def _nemotron_h(r: _Reader) -> dict[str, Any]:
    pattern = r.get("hybrid_override_pattern")
    blocks = r.get("layers_block_type")
    if pattern is _MISSING and blocks is not _MISSING:
        # transformers 5's NemotronHConfig keeps the layers as layers_block_type, a list of mamba, moe and attention, whose
        # length is num_hidden_layers, and gives vLLM its hybrid_override_pattern from it (M, E and *); read in 5.5.3
        names = {"mamba": "M", "moe": "E", "attention": "*"}
        if not isinstance(blocks, list) or not blocks or len(blocks) > MAX_LAYERS or not all(isinstance(b, str) and b in names for b in blocks):
            raise ConfigError(r.file, r.prefix + "layers_block_type", blocks, "a list of the layers' kinds, each mamba, moe or attention")
        pattern = "".join(names[b] for b in blocks)
        n = len(blocks)
    else:
        n = r.layers()
    if not isinstance(pattern, str) or len(pattern) != n or set(pattern) - set("M*-E"):
        raise ConfigError(r.file, r.prefix + "hybrid_override_pattern", pattern if pattern is not _MISSING else _MISSING,
                          f"{n} characters of M (mamba), * (attention), - (MLP) and E (experts)")  # fmt: skip
    kinds = {"M": MAMBA, "*": FULL, "-": MLP_ONLY, "E": MOE_ONLY}
    layers = tuple(kinds[c] for c in pattern)
    common = _common(r)
    common["head_dim"] = r.int("head_dim", None) or r.int("attention_head_dim", None) or common["head_dim"]
    state = _state_bytes(r, "mamba_ssm_cache_dtype", "float32")  # vLLM's NemotronHForCausalLMConfig default (0.24.0)
    mamba = Mamba2Mixer(
        heads=r.int("mamba_num_heads"),
        head_dim=r.int("mamba_head_dim"),
        state=r.int("ssm_state_size"),
        groups=r.int("n_groups"),
        conv_kernel=r.int("conv_kernel"),
    )
    # Squared-ReLU MLPs and experts, up and down projections only; n_shared_experts shared ones of
    # moe_shared_expert_intermediate_size; a router in float32 with its score-correction bias
    # (vllm/model_executor/models/nemotron_h.py: NemotronHMLP, NemotronHMoE, 0.33.0). The router's
    # weight stays float32 where no Hopper or datacenter-Blackwell kernel takes it (GateLinear), as on GB10.
    mlp = Mlp(intermediate=r.int("intermediate_size"), gated=False)
    moe = mlp
    if "E" in pattern:
        shared = r.int("n_shared_experts", 0, minimum=0) * r.int("moe_shared_expert_intermediate_size", 0, minimum=0)
        # moe_latent_size (Nemotron 3 Super): the routed experts take and give vectors of that width, not
        # hidden_size, through fc1_latent_proj and fc2_latent_proj (NemotronHMoE, nemotron_h.py, 0.33.0)
        latent = r.int("moe_latent_size", None) or 0  # null or absent: no latent projections
        moe = Mlp(experts=r.int("n_routed_experts"), expert_intermediate=r.int("moe_intermediate_size"), shared_intermediate=shared,
                  gated=False, latent=latent)  # fmt: skip
    mlps = tuple(mlp if k == MLP_ONLY else moe if k == MOE_ONLY else Mlp() for k in layers)
    steps, drafter = _nemotron_h_mtp(r)
    if MOE_ONLY in drafter and not moe.experts:
        raise ConfigError(r.file, r.prefix + "mtp_layers_block_type", list(drafter), "no moe layer in a model whose own layers have no experts")
    return {**common, "layers": layers, "mlps": mlps, "mamba": mamba, "state_dtype_bytes": state,
            "router_fp32": "E" in pattern, "routing_bias": "E" in pattern, "drafter_layers": steps, "drafter_kinds": drafter}  # fmt: skip


def _nemotron_h_mtp(r: _Reader) -> tuple[int, tuple[str, ...]]:
    """Nemotron-H's MTP drafter (vllm/model_executor/models/nemotron_h_mtp.py, NemotronHMultiTokenPredictor, 0.18.0 to
    0.33.0): num_nextn_predict_layers steps (one only: it asserts so), each a run of layers by
    mtp_hybrid_override_pattern, an attention layer for each * and an MoE layer for each E (any other kind raises
    NotImplementedError), built as the model's own. transformers 5.5.3's NemotronHConfig keeps them as
    mtp_layers_block_type (attention and moe), taken from a config's mtp_hybrid_override_pattern where the list is
    not given, and ["attention", "moe"] where neither is. No MTP layers where num_nextn_predict_layers is 0 or absent."""
    steps = r.int("num_nextn_predict_layers", 0, minimum=0)
    if not steps:
        return 0, ()
    if steps != 1:
        raise ConfigError(r.file, r.prefix + "num_nextn_predict_layers", steps, "0 or 1: vLLM's nemotron_h_mtp.py builds one MTP step only")
    names = {"attention": FULL, "moe": MOE_ONLY}
    blocks = r.get("mtp_layers_block_type", None)
    pattern = r.get("mtp_hybrid_override_pattern", None)
    if blocks is None and isinstance(pattern, str):
        chars = {"*": "attention", "E": "moe", "M": "mamba", "-": "mlp"}
        blocks = [chars.get(c, c) for c in pattern]
        key = "mtp_hybrid_override_pattern"
    else:
        key = "mtp_layers_block_type"
        blocks = ["attention", "moe"] if blocks is None else blocks
    if not isinstance(blocks, list) or not blocks or len(blocks) > MAX_LAYERS or not all(isinstance(b, str) and b in names for b in blocks):
        raise ConfigError(r.file, r.prefix + key, r.get(key), "the MTP layers' kinds, each attention (*) or moe (E): nemotron_h_mtp.py builds no other")
    return steps, tuple(names[b] for b in blocks)


def _granite_hybrid(r: _Reader) -> dict[str, Any]:
    """IBM Granite 4.0-H (vllm/model_executor/models/granitemoehybrid.py, GraniteMoeHybridForCausalLM,
    0.33.0; the same layers from 0.10.1.1): each layer, by layer_types, a Mamba2 mixer (MambaMixer2,
    intermediate mamba_expand x hidden_size in mamba_n_heads heads of mamba_d_head, a conv bias, no
    projection bias) or attention (GraniteMoeHybridAttention: head_dim hidden_size / heads whatever the
    config says, attention_bias on qkv and o_proj alike, a rope only with position_embedding_type
    "rope"), then num_local_experts routed experts of intermediate_size (GraniteMoeMoE: a router in the
    model's dtype) beside a shared gated MLP of shared_intermediate_size (GraniteMoeSharedMLP), or that
    MLP alone where the config has no experts. The recurrent state is kept in the model's dtype
    (get_mamba_state_dtype_from_config: mamba2_state_dtype of the model's dtype unless
    --mamba-ssm-cache-dtype says otherwise)."""
    n = r.layers()
    layers = _layer_types(r, n, {"mamba": MAMBA, "attention": FULL})
    common = _common(r)
    common["head_dim"] = common["hidden"] // common["heads"]
    common["output_bias"] = common["attention_bias"]
    mamba: Mamba2Mixer | None = None
    if MAMBA in layers:
        hidden, heads, head_dim = common["hidden"], r.int("mamba_n_heads"), r.int("mamba_d_head")
        if r.int("mamba_expand") * hidden != heads * head_dim:
            raise ConfigError(r.file, r.prefix + "mamba_expand", r.get("mamba_expand"),
                              f"mamba_n_heads x mamba_d_head ({heads * head_dim}) over hidden_size ({hidden}): the mixer's width both ways")  # fmt: skip
        # transformers' GraniteMoeHybridConfig defaults: a conv bias, no projection bias
        if not r.flag("mamba_conv_bias", True) or r.flag("mamba_proj_bias", False):
            raise ConfigError(r.file, r.prefix + "mamba_proj_bias", r.get("mamba_proj_bias", False),
                              "false, with mamba_conv_bias true: other mixer biases are not modeled")  # fmt: skip
        mamba = Mamba2Mixer(heads=heads, head_dim=head_dim, state=r.int("mamba_d_state"), groups=r.int("mamba_n_groups"), conv_kernel=r.int("mamba_d_conv"))
    experts, shared = r.int("num_local_experts", 0, minimum=0), r.int("shared_intermediate_size", 0, minimum=0)
    if experts:
        mlp = Mlp(experts=experts, expert_intermediate=r.int("intermediate_size"), shared_intermediate=shared)
    else:
        mlp = Mlp(intermediate=shared)
    return {**common, "layers": layers, "mlps": (mlp,) * n, "mamba": mamba}


def _jamba(r: _Reader) -> dict[str, Any]:
    """AI21's Jamba (vllm/model_executor/models/jamba.py, JambaForCausalLM, 0.33.0; the same layers from
    0.10.1.1): layer i is attention where i % attn_layer_period == attn_layer_offset, else a Mamba-1
    mixer (MambaMixer: intermediate mamba_expand x hidden_size, mamba_dt_rank ("auto": hidden_size / 16
    rounded up), mamba_d_state, mamba_d_conv, a conv bias by mamba_conv_bias, projection biases by
    mamba_proj_bias, its dt, B and C RMSNorms, A in float32), as transformers' JambaConfig lays them out
    (layers_block_type). Attention takes hidden_size / heads a head, no bias and no rope. Layer i's
    feed-forward has num_experts experts (JambaMoE: a router in the model's dtype) where i %
    expert_layer_period == expert_layer_offset, else one gated MLP of intermediate_size. The head is
    never tied: JambaForCausalLM builds its own lm_head. The state is kept in the model's dtype
    (mamba1_state_dtype, unless --mamba-ssm-cache-dtype says otherwise)."""
    n = r.layers()
    period, offset = r.int("attn_layer_period"), r.int("attn_layer_offset", minimum=0)
    every, first = r.int("expert_layer_period"), r.int("expert_layer_offset", minimum=0)
    if offset >= period or first >= every:  # transformers' JambaConfig.validate_architecture refuses it
        key, value, bound = ("attn_layer_offset", offset, period) if offset >= period else ("expert_layer_offset", first, every)
        raise ConfigError(r.file, r.prefix + key, value, f"a layer offset below its period ({bound})")
    common = _common(r)
    common["head_dim"] = common["hidden"] // common["heads"]
    common["attention_bias"] = False
    hidden = common["hidden"]
    layers = tuple(FULL if i % period == offset else MAMBA1 for i in range(n))
    rank = r.get("mamba_dt_rank")
    dt_rank = -(-hidden // 16) if rank == "auto" else r.int("mamba_dt_rank")
    mamba: Mamba1Mixer | None = None
    if MAMBA1 in layers:
        mamba = Mamba1Mixer(inner=r.int("mamba_expand") * hidden, state=r.int("mamba_d_state"), conv_kernel=r.int("mamba_d_conv"),
                            dt_rank=dt_rank, conv_bias=r.flag("mamba_conv_bias", True), bias=r.flag("mamba_proj_bias"))  # fmt: skip
    experts, intermediate = r.int("num_experts"), r.int("intermediate_size")
    moe = Mlp(experts=experts, expert_intermediate=intermediate) if experts > 1 else Mlp(intermediate=intermediate)
    mlps = tuple(moe if i % every == first else Mlp(intermediate=intermediate) for i in range(n))
    return {**common, "layers": layers, "mlps": mlps, "mamba": mamba, "tie_embeddings": False}


def _mamba_pure(r: _Reader) -> dict[str, Any]:
    """Mamba-1 without attention (vllm/model_executor/models/mamba.py, MambaForCausalLM, 0.33.0; the same
    layers from 0.10.1.1; FalconMambaForCausalLM is registered to the same class): each layer an RMSNorm
    and a MambaMixer (mamba_mixer.py) of intermediate_size, state_size, conv_kernel, time_step_rank, a
    conv bias by use_conv_bias and projection biases by use_bias; no MLP; a final norm_f; the head tied
    by tie_word_embeddings. FalconMamba (model_type falcon_mamba) norms dt, B and C with RMSNorms
    without weight (rms_norm_has_weight=False), plain Mamba not at all: neither adds a parameter.
    transformers' config classes set intermediate_size to expand x hidden_size whatever the file says,
    so a file whose two disagree is refused. No layer has attention: the model is attention free."""
    n = r.layers()
    hidden = r.int("hidden_size")
    inner = r.int("expand") * hidden
    given = r.int("intermediate_size", None)
    if given is not None and given != inner:
        raise ConfigError(r.file, r.prefix + "intermediate_size", given,
                          f"expand x hidden_size ({inner}): transformers' {r.architecture.removesuffix('ForCausalLM')}Config sets it so")  # fmt: skip
    rank = r.get("time_step_rank")
    dt_rank = -(-hidden // 16) if rank == "auto" else r.int("time_step_rank")
    mamba = Mamba1Mixer(inner=inner, state=r.int("state_size"), conv_kernel=r.int("conv_kernel"), dt_rank=dt_rank,
                        conv_bias=r.flag("use_conv_bias"), bias=r.flag("use_bias"), norms=False)  # fmt: skip
    return {"hidden": hidden, "vocab": r.int("vocab_size"), "heads": 0, "kv_heads": 0, "head_dim": 0,
            "layers": (MAMBA1,) * n, "mlps": (Mlp(),) * n, "mamba": mamba}  # fmt: skip


def _mamba2_pure(r: _Reader) -> dict[str, Any]:
    """Mamba-2 without attention (vllm/model_executor/models/mamba2.py, Mamba2ForCausalLM, 0.33.0; the
    same layers from 0.10.1.1): each layer an RMSNorm and a MambaMixer2 (mamba_mixer2.py) of num_heads
    heads of head_dim, n_groups groups of state_size, conv_kernel taps, a conv bias by use_conv_bias,
    projection biases by use_bias and the gated RMSNorm (use_rms_norm, on by default); no MLP; a final
    norm_f; the head tied by tie_word_embeddings, which the file must give. The state is sized from
    expand x hidden_size (get_mamba_state_shape_from_config), the mixer from num_heads x head_dim: a
    file whose two disagree is refused. No layer has attention: the model is attention free."""
    n = r.layers()
    hidden, heads, head_dim = r.int("hidden_size"), r.int("num_heads"), r.int("head_dim")
    if r.int("expand") * hidden != heads * head_dim:
        raise ConfigError(r.file, r.prefix + "expand", r.get("expand"),
                          f"num_heads x head_dim ({heads * head_dim}) over hidden_size ({hidden}): the mixer's width both ways")  # fmt: skip
    given = r.int("intermediate_size", None)
    if given is not None and given != heads * head_dim:
        raise ConfigError(r.file, r.prefix + "intermediate_size", given, f"num_heads x head_dim ({heads * head_dim}): the mixer's width")
    as_flag(r.get("tie_word_embeddings"), r.file, r.prefix + "tie_word_embeddings")
    mamba = Mamba2Mixer(heads=heads, head_dim=head_dim, state=r.int("state_size"), groups=r.int("n_groups"), conv_kernel=r.int("conv_kernel"),
                        conv_bias=as_flag(r.get("use_conv_bias"), r.file, r.prefix + "use_conv_bias"),
                        bias=as_flag(r.get("use_bias"), r.file, r.prefix + "use_bias"), norm=True)  # fmt: skip
    return {"hidden": hidden, "vocab": r.int("vocab_size"), "heads": 0, "kv_heads": 0, "head_dim": 0,
            "layers": (MAMBA,) * n, "mlps": (Mlp(),) * n, "mamba": mamba}  # fmt: skip


def _falcon_h1(r: _Reader) -> dict[str, Any]:
    """TII's Falcon-H1 (vllm/model_executor/models/falcon_h1.py, FalconH1ParallelHybrid, 0.33.0; the same
    layers from 0.10.1.1): every layer runs attention (q, k and v of head_dim, or hidden_size / heads
    without it, no bias, a rope of attn_rotary_emb or the head) and a Mamba-2 mixer side by side on one
    input norm (MambaMixer2 of intermediate mamba_d_ssm, or mamba_expand x hidden_size where it is null,
    in mamba_n_heads heads of mamba_d_head, mamba_n_groups groups, a conv bias by mamba_conv_bias,
    projection biases by mamba_proj_bias, the gated norm only with mamba_rms_norm), then a pre-MLP norm
    and a gated MLP of intermediate_size without bias (mlp_bias and projectors_bias are not read). Each
    layer keeps an attention cache and a Mamba-2 state; the state in the model's dtype
    (mamba2_state_dtype, unless --mamba-ssm-cache-dtype says otherwise)."""
    n = r.layers()
    common = _common(r)
    common["attention_bias"] = False
    hidden, heads, head_dim = common["hidden"], r.int("mamba_n_heads"), r.int("mamba_d_head")
    d_ssm = r.int("mamba_d_ssm", None)
    inner = d_ssm if d_ssm is not None else r.int("mamba_expand") * hidden
    if heads * head_dim != inner:  # transformers' FalconH1Config.validate_architecture refuses it, and so the model
        raise ConfigError(r.file, r.prefix + ("mamba_d_ssm" if d_ssm is not None else "mamba_expand"), d_ssm if d_ssm is not None else r.get("mamba_expand"),
                          f"mamba_n_heads x mamba_d_head ({heads * head_dim}): the mixer's width both ways")  # fmt: skip
    groups = r.int("mamba_n_groups")
    mamba = Mamba2Mixer(heads=heads, head_dim=head_dim, state=r.int("mamba_d_state"), groups=groups, conv_kernel=r.int("mamba_d_conv"),
                        conv_bias=r.flag("mamba_conv_bias", True), bias=r.flag("mamba_proj_bias"), norm=r.flag("mamba_rms_norm"))  # fmt: skip
    return {**common, "layers": (PARALLEL,) * n, "mlps": (Mlp(intermediate=r.int("intermediate_size")),) * n, "mamba": mamba}


def _lfm2(r: _Reader) -> dict[str, Any]:
    """Liquid AI's LFM2 (vllm/model_executor/models/lfm2.py, Lfm2ForCausalLM, 0.33.0; registered from
    0.10.2), and LFM2-MoE's layers with their own feed-forwards (_lfm2_moe_mlps): each layer, by layer_types ("full_attention", else a short convolution), is attention
    (qkv_proj and out_proj without bias, hidden_size / heads a head, q and k normed a head, a rope) or
    ShortConv (vllm/model_executor/layers/mamba/short_conv.py: in_proj of 3 x conv_dim, a depthwise conv
    of conv_L_cache taps, out_proj, biases by conv_bias), each with two norms and a gated MLP (Lfm2MLP) of
    block_ff_dim (transformers' Lfm2Config reads it as intermediate_size) taken down to two thirds,
    times block_ffn_dim_multiplier, rounded up to block_multiple_of where block_auto_adjust_ff_dim. vLLM
    ties the head to the embedding whatever the config says (tie_weights). The conv state is kept in the
    model's dtype (short_conv_state_dtype)."""
    n = r.layers()
    layer_types = r.get("layer_types", None)
    if layer_types is None and r.architecture == "Lfm2ForCausalLM":  # Lfm2Config fills them from full_attn_idxs, every layer where it has none
        idxs = r.get("full_attn_idxs", None)
        if idxs is None:
            idxs = r.taken["full_attn_idxs"] = list(range(n))
        if not isinstance(idxs, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in idxs):
            raise ConfigError(r.file, r.prefix + "full_attn_idxs", idxs, "a list of layer numbers")
        layer_types = ["full_attention" if i in idxs else "conv" for i in range(n)]
    if not isinstance(layer_types, list) or len(layer_types) != n or not all(isinstance(t, str) for t in layer_types):
        raise ConfigError(r.file, r.prefix + "layer_types", layer_types, f"a list of {n} layer types")
    layers = tuple(FULL if t == "full_attention" else SHORT_CONV for t in layer_types)
    common = _common(r, qk_norm="head")
    common["head_dim"] = common["hidden"] // common["heads"]
    hidden = common["hidden"]
    mamba = ShortConvMixer(inner=hidden, conv_kernel=r.int("conv_L_cache"), conv_bias=r.flag("conv_bias")) if SHORT_CONV in layers else None
    if r.architecture == "Lfm2MoeForCausalLM":
        return {**common, **_lfm2_moe_mlps(r, n), "layers": layers, "mamba": mamba, "tie_embeddings": True}
    for key in ("block_dim", "conv_dim"):  # the MLP's and the convolution's width; the residual stream's hidden_size
        if r.int(key) != hidden:
            raise ConfigError(r.file, r.prefix + key, r.get(key), f"hidden_size ({hidden}): a width other than the layers' is not modeled")
    ff = r.int("block_ff_dim", None) or r.int("intermediate_size")
    if r.flag("block_auto_adjust_ff_dim", True):
        ff = int(2 * ff / 3)
        multiplier = r.get("block_ffn_dim_multiplier", 1.0)
        if multiplier is not None:
            if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) or multiplier <= 0:
                raise ConfigError(r.file, r.prefix + "block_ffn_dim_multiplier", multiplier, "a number above zero")
            ff = int(multiplier * ff)
        multiple = r.int("block_multiple_of")
        ff = multiple * -(-ff // multiple)
    return {**common, "layers": layers, "mlps": (Mlp(intermediate=ff),) * n, "mamba": mamba, "tie_embeddings": True}


def _lfm2_moe_mlps(r: _Reader, n: int) -> dict[str, Any]:
    """LFM2-MoE's feed-forwards (vllm/model_executor/models/lfm2_moe.py, 0.33.0; the same from 0.13.0, the
    first release read that registers it): the first num_dense_layers a gated MLP of intermediate_size as
    it stands (Lfm2MoeMlp), the rest num_experts experts of moe_intermediate_size (Lfm2MoeSparseMoeBlock:
    a router in the model's dtype and, with use_expert_bias, a float32 score-correction bias), no shared
    expert. Its layers are LFM2's, the convolution hidden_size wide (get_mamba_state_shape_from_config);
    transformers' Lfm2MoeConfig does not fill layer_types, so the config must give them."""
    dense, experts = r.int("num_dense_layers", minimum=0), r.int("num_experts")
    moe = Mlp(experts=experts, expert_intermediate=r.int("moe_intermediate_size"))
    mlp = Mlp(intermediate=r.int("intermediate_size")) if dense else moe
    return {"mlps": tuple(mlp if i < dense else moe for i in range(n)), "routing_bias": r.flag("use_expert_bias", True)}
