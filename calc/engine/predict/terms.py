"""The terms of the profile run: the forward pass, the MoE workspace, the sampler's warm-up, the
memory outside torch, and what a quantization method holds beyond the checkpoint."""

from __future__ import annotations

from dataclasses import dataclass

from calc.engine import hfconfig, weights
from calc.engine.hfconfig import CHUNKED, FULL, LIGHTNING, LINEAR, MAMBA, MAMBA1, MLA, PARALLEL, SHORT_CONV, SLIDING, Shape
from calc.engine.predict.cards import is_hopper
from calc.engine.predict.defaults import LATEST, patch_release
from calc.jsontext import JsonObject
from calc.units import fmt

# Fitted constants (see calc/engine/predict/__init__.py): the medians over the fitted starts; graphs.py keeps the graphs'.
SAMPLER_BYTES_PER_LOGIT = 39  # bytes V0's sampler (before v0.8.0) holds per (row x vocabulary) element, sorting; V1's sort is derived (sort_bytes_per_logit)
SAMPLER_TRITON_BYTES_PER_LOGIT = 15  # and with the Triton top-k/top-p kernel (v0.17.0 to v0.20.x), no sort
NON_TORCH_ONE_RANK = 268_435_456  # the non-torch increase on one GPU (V1)
NON_TORCH_ONE_RANK_V0 = 375_809_638  # and on V0
NON_TORCH_PER_RANK_TP = 2_222_645_576  # and on each rank under tensor or pipeline parallel (V1: NCCL, custom all-reduce, symmetric memory)
NON_TORCH_PER_RANK_TP_V0 = 322_122_547  # and on V0
NON_TORCH_PER_RANK_TP_NO_CUMEM = 200_853_894  # and on V1 up to v0.10.1.1, where vLLM turns NCCL's cuMem allocator off, off NVSwitch boards
NON_TORCH_PER_RANK_TP_OTHER_BOARDS = 272_542_728  # and on V1 with NCCL's cuMem on, off NVSwitch boards (PCIe cards, A100, AMD)
NON_TORCH_ONE_RANK_V2 = 151_338_281  # and on one GPU under Model Runner V2 from v0.27.0, beside its sampler's state (v2_sampler_state)
# What a card's own fitted one-GPU V1 starts leave beside NON_TORCH_ONE_RANK (their median gap, poolaccuracy.card_offsets),
# for the cards with CARD_OFFSET_MIN_STARTS of them or more; any other card takes the release's constant alone.
NON_TORCH_CARD_OFFSETS: dict[str, int] = {
    "a100-40gb": 57_790_956,
    "a100-80gb": -95_715_426,
    "h100-sxm": -7_212_105,
    "rtx-4080-laptop": -205_140_243,
    "rtx-4090": -195_028_007,
}
CARD_OFFSET_MIN_STARTS = 3


# --- the terms -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    name: str
    bytes: int
    source: str


def experts_per_token(config: JsonObject) -> int:
    """Experts each token is routed to (num_experts_per_tok, experts_per_token or moe_topk; ERNIE 4.5's
    moe_k, which vllm/model_executor/models/ernie45_moe.py passes as top_k, 0.10.1.1 to 0.33.0). A list,
    one a layer (Hunyuan's moe_topk, which hunyuan_v1.py reads as moe_topk[layer_id], 0.10.1.1 to
    0.28.0), gives its largest."""
    for c in (config, config.get("text_config") if isinstance(config.get("text_config"), dict) else {}):
        assert isinstance(c, dict)
        for key in ("num_experts_per_tok", "experts_per_token", "moe_topk", "num_selected_experts", "moe_k"):
            value = c.get(key)
            each = value if isinstance(value, list) else [value]
            counts = [v for v in each if isinstance(v, int) and not isinstance(v, bool) and v > 0]
            if counts and len(counts) == len(each):
                return max(counts)
    return 0


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def mxfp4_padding(shape: Shape, tp: int, rel: tuple[int, int], vendor: str = "nvidia", card_name: str = "") -> Term:
    """What vLLM's MXFP4 MoE method holds for the experts beyond the checkpoint's count once loaded.
    v0.10 and v0.11 (vllm/model_executor/layers/quantization/mxfp4.py, Mxfp4MoEMethod.create_weights,
    v0.11.0): the fused gate_up (w13) and down (w2) weights, their e8m0 scales (one a 32) and their
    bf16 biases are made for a padded intermediate size a rank and a padded hidden size:
    - the Marlin path, which get_mxfp4_backend takes on every CUDA card when the optional
      triton_kernels package is absent and no FlashInfer MXFP4 variable is set (v0.10 and v0.11
      depend on neither; log 16 prints marlin_utils_fp4.py's warning on an H100): intermediate a
      rank to a multiple of 128, hidden to 256 ("n % 256 == 0 and k % 128 == 0");
    - ROCm's Triton path: both to a multiple of 256.
    v0.19.x on Hopper (read in v0.19.0): the oracle (fused_moe/oracle/mxfp4.py,
    select_mxfp4_moe_backend) takes the TRITON backend, the vendored triton_kernels being present
    (vllm/third_party/triton_kernels) and FlashInfer's TRT-LLM kernels Blackwell's only; then
    - mxfp4_round_up_hidden_size_and_intermediate_size: intermediate a rank to a multiple of 64;
    - convert_to_mxfp4_moe_kernel_format (TRITON) swizzles w13 and w2 with
      quantization/utils/mxfp4_utils.py _swizzle_mxfp4: HopperMXValueLayout.swizzle_data pads both
      dims of each expert's (K/2 bytes, N) matrix to a multiple of 64; HopperMXScaleLayout pads the
      scales' N to a multiple of 2 x num_warps(8) x 2 x 8 = 256 into new tensors, while the loaded
      w13_weight_scale and w2_weight_scale stay registered on the layer (only w13_weight and
      w2_weight are deleted); the biases become float32 (w13_bias.to(torch.float32)).
    From v0.12 to v0.18 and from v0.20 (where the oracle's order and the Hopper kernels change),
    and on other cards, the kernel vLLM picks is not modeled: no padding counted."""
    from calc.engine.weights import quant_of

    moe = [m for m in shape.mlps if m.experts]
    if quant_of(shape).method != "mxfp4" or not moe:
        return Term("mxfp4_padding", 0, "no MXFP4 experts")

    def experts(h: int, i: int, e: int) -> int:  # w13 + scale + bias, w2 + scale + bias, one layer, as the checkpoint counts them
        return e * (2 * i * h // 2 + 2 * i * h // 32 + 2 * i * 2 + h * i // 2 + h * i // 32 + h * 2)

    def triton_hopper(h: int, i: int, e: int) -> int:  # the same, as v0.19.0's TRITON backend holds them on Hopper
        ip = round_up(i, 64)
        values = round_up(h // 2, 64) * round_up(2 * ip, 64) + round_up(ip // 2, 64) * round_up(h, 64)
        swizzled_scales = round_up(2 * ip, 256) * round_up(h // 32, 2) + round_up(h, 256) * round_up(ip // 32, 2)
        loaded_scales = 2 * ip * (h // 32) + h * (ip // 32)
        return e * (values + swizzled_scales + loaded_scales + (2 * ip + h) * 4)

    if rel[:2] == (0, 19) and vendor == "nvidia" and is_hopper(card_name):
        extra = sum(triton_hopper(shape.hidden, m.expert_intermediate // tp, m.experts) - experts(shape.hidden, m.expert_intermediate // tp, m.experts)
                    for m in shape.mlps if m.experts)  # fmt: skip
        return Term("mxfp4_padding", extra,
                    "fused_moe/oracle/mxfp4.py (TRITON on Hopper) and quantization/utils/mxfp4_utils.py _swizzle_mxfp4, v0.19.0: intermediate to 64, "
                    "Hopper value layout padded to 64, scales swizzled beside the loaded ones, float32 biases")  # fmt: skip
    if not (0, 10) <= rel < (0, 12):
        return Term("mxfp4_padding", 0, "MXFP4 experts: the kernel vLLM picks on this card and release is not modeled; no padding counted")
    h_align, i_align = (256, 256) if vendor == "amd" else (256, 128)
    extra = 0
    for m in shape.mlps:
        if m.experts:
            i = m.expert_intermediate // tp
            extra += experts(round_up(shape.hidden, h_align), round_up(i, i_align), m.experts) - experts(shape.hidden, i, m.experts)
    path = "ROCm Triton, intermediate and hidden to 256" if vendor == "amd" else "Marlin, intermediate to 128 and hidden to 256"
    return Term("mxfp4_padding", extra, f"vllm/model_executor/layers/quantization/mxfp4.py create_weights, v0.11.0: {path}")


def moe_chunk(rel: tuple[int, int]) -> int | None:
    """The rows a fused-expert call works on at once (VLLM_FUSED_MOE_CHUNK_SIZE, vllm/envs.py):
    32,768 up to v0.12 (read in v0.8.5 and v0.11.0), 16,384 from v0.13.0 to v0.17.x; from v0.18.0
    the modular kernel takes every row at once (modular_kernel.py _allocate_buffers, M_full)."""
    if rel >= (0, 18):
        return None
    return 16384 if rel >= (0, 13) else 32768


def _experts_n(shape: Shape, m: hfconfig.Mlp, tp: int) -> tuple[int, int]:
    """(N, the activation's output width) of a fused-expert call on one rank: N is the fused
    gate_up width, 2 x expert intermediate / TP (up alone for an ungated activation, whose output
    is N wide: modular_kernel.py adjust_N_for_activation, v0.19.0)."""
    n = (2 if m.gated else 1) * m.expert_intermediate // tp
    return n, (n // 2 if m.gated else n)


def moe_workspace(shape: Shape, tp: int, tokens: int, topk: int, rel: tuple[int, int] = LATEST, marlin: str = "") -> Term:
    """The fused-expert workspace that stays allocated after the forward pass, through the sampler's
    warm-up. From v0.14.0 vLLM runs unquantized experts through the modular kernel
    (unquantized_fused_moe_method.py, FusedMoEModularKernel over TritonExperts, v0.14.0; the
    unquantized oracle's TRITON backend on CUDA, v0.19.0), whose _allocate_buffers takes
    workspace13 and workspace2 from the worker's WorkspaceManager (vllm/v1/worker/workspace.py,
    get_simultaneous: one torch.empty kept for the process, grown never shrunk, locked after the
    warm-up). TritonExperts.workspace_shapes (fused_moe.py, v0.19.0): workspace13 = M x top_k x
    max(N/2, K), workspace2 = M x top_k x max(N, K), in the activations' dtype, with M the rows of
    a chunk (moe_chunk); with more than one chunk the output (M_full x K) is taken beside them
    (modular_kernel.py, v0.14.0 to v0.17.x), with one it shares workspace13.
    Up to v0.13.x unquantized experts call fused_experts (fused_moe.py fused_experts_impl), whose
    caches are freed at each layer's end: nothing stays. Quantized experts (fp8, MXFP4, ...) pick
    their kernel by card from v0.12 (fused_moe/oracle/); that choice is not modeled and their
    workspace is not held here (on Hopper, v0.19.0 runs MXFP4 through the monolithic Triton
    kernel, which takes no workspace from the manager). Int experts on Marlin (`marlin`,
    marlin_experts): "direct" keeps nothing (fused_marlin_moe's caches are its own torch.empty);
    "modular" keeps MarlinExperts' workspace from the same manager: workspace13 = M x top_k x
    max(N', K) shared with the output (M x K), workspace2 = M x top_k x max(2N', K), N' the expert
    intermediate a rank (MarlinExperts.workspace_shapes, experts/marlin_moe.py, v0.25.0 and v0.33.0;
    fused_marlin_moe.py, v0.20.0), the same sizes as TritonExperts' over every token."""
    from calc.engine.weights import quant_of

    moe = [m for m in shape.mlps if m.experts]
    if not moe or not topk:
        return Term("moe_workspace", 0, "no fused experts")
    if rel < (0, 14):
        return Term("moe_workspace", 0, "up to v0.13.x fused_experts frees its caches at each layer (fused_moe.py fused_experts_impl)")
    if marlin == "direct":
        return Term("moe_workspace", 0, "int experts through fused_marlin_moe, whose caches are freed at each layer (fused_moe/fused_marlin_moe.py)")
    if quant_of(shape).method != "none" and marlin != "modular":
        return Term("moe_workspace", 0, "quantized experts: the kernel vLLM picks by card is not modeled; no workspace held")
    chunk = moe_chunk(rel)
    rows = min(tokens, chunk) if chunk else tokens
    dt, k = shape.dtype_bytes, shape.hidden
    most = 0
    for m in set(moe):
        n, act = _experts_n(shape, m, tp)
        w13, w2, out = rows * topk * max(act, k), rows * topk * max(n, k), tokens * k
        most = max(most, (w13 + w2 + out) if rows < tokens else (max(w13, out) + w2))
    experts = "MarlinExperts.workspace_shapes, v0.20.0 to v0.33.0" if marlin == "modular" else "TritonExperts.workspace_shapes, v0.14.0 to v0.33.0"
    return Term("moe_workspace", most * dt,
                f"vllm/v1/worker/workspace.py WorkspaceManager, kept from the forward pass (fused_moe/modular_kernel.py _allocate_buffers, "
                f"{experts}): {rows:,} rows x top_k {topk}")  # fmt: skip


MARLIN_FROM = (0, 10)  # fused_marlin_moe's caches as read in v0.10.1.1 (earlier releases not read)
# Up to (not including) these releases each method calls fused_marlin_moe itself, whose caches are
# freed at each layer's end; from them it builds make_wna16_moe_kernel (fused_moe/oracle/int_wna16.py),
# MarlinExperts under the modular kernel, whose workspace the WorkspaceManager keeps.
MARLIN_DIRECT_UNTIL = {
    "gptq": (0, 20),  # gptq_marlin.py GPTQMarlinMoEMethod: make_wna16_moe_kernel in v0.20.0
    "awq": (0, 22),  # awq_marlin.py AWQMarlinMoEMethod.apply calls fused_marlin_moe in v0.21.0, make_wna16_moe_kernel in v0.22.0
    "compressed-tensors": (0, 23),  # compressed_tensors_moe_wna16_marlin.py: fused_marlin_moe in v0.22.0, make_wna16_moe_kernel in v0.23.0
}
MARLIN_METHODS = tuple(MARLIN_DIRECT_UNTIL)


def marlin_experts(shape: Shape, rel: tuple[int, int] = LATEST, vendor: str = "nvidia", stated: str | None = None) -> str:
    """How a layer's int4 (or int8) experts run Marlin on a CUDA card: "direct" where the quant
    method calls fused_marlin_moe itself (AWQ: awq_marlin.py AWQMarlinMoEMethod.apply; GPTQ:
    gptq_marlin.py GPTQMarlinMoEMethod.apply; compressed-tensors' W4A16/WNA16:
    CompressedTensorsWNA16MarlinMoEMethod.apply; read in v0.10.1.1, v0.11.0, v0.13.0, v0.19.0,
    v0.20.0, v0.21.0 and v0.22.0), "modular" where it builds MarlinExperts under the modular kernel
    (MARLIN_DIRECT_UNTIL; read in v0.20.0, v0.22.0, v0.23.0, v0.25.0 and v0.33.0), "" where Marlin
    is not modeled (not an int checkpoint, before v0.10, not NVIDIA; cards below compute
    capability 8.0, where vLLM takes no Marlin kernel, are not told apart). `stated`: the method
    whose Marlin MoE the start's log or entry says ran ("awq", "gptq" or "compressed-tensors"; ""
    for another kernel), else the config's quantization_config."""
    from calc.engine.weights import quant_of

    if rel < MARLIN_FROM or vendor != "nvidia":
        return ""
    if stated is None:
        q, quant = shape.quantization or {}, quant_of(shape)
        method = str(q.get("quant_method", "")).lower() if quant.method == "int" and quant.bits in (4, 8) else ""
        groups = q.get("config_groups")
        if method == "awq" and quant.bits != 4:
            method = ""  # awq_marlin.py is_awq_marlin_compatible: 4 bits
        if method == "compressed-tensors" and isinstance(groups, dict) and any(isinstance(g, dict) and g.get("input_activations") for g in groups.values()):
            method = ""  # quantized activations (W8A8 int8): CompressedTensorsW8A8Int8MoEMethod, not WNA16
    else:
        method = stated
    if method not in MARLIN_DIRECT_UNTIL:
        return ""
    return "direct" if rel < MARLIN_DIRECT_UNTIL[method] else "modular"


def plain_awq(rel: tuple[int, int], quantization: str | None, awq_checkpoint: bool = False, turing: bool = False) -> str:
    """Why the plain AWQ kernel runs the linear layers, "" where Marlin does: `--quantization awq` asked for
    by name keeps it up to v0.23.x (quantization/awq_marlin.py override_quantization_method: 'so forcing
    awq', v0.10.1.1 to v0.23.0; from v0.24.0 auto_awq.py takes awq to Marlin wherever Marlin runs); and an
    AWQ checkpoint on a Turing card runs it up to v0.13.x, where Marlin asks compute capability 8.0
    (quantization/utils/marlin_utils.py and AWQMarlinConfig.get_min_capability; 7.5 from v0.14.0)."""
    if awq_checkpoint and turing and rel < MARLIN_TURING_FROM:
        return "turing"
    if quantization is not None and quantization.strip().lower() == "awq" and rel < AUTO_AWQ_FROM:
        return "forced"
    return ""


MARLIN_TURING_FROM = (0, 14)  # quantization/utils/marlin_utils.py query_marlin_supported_quant_types: 'device_capability < 75', v0.14.0
AUTO_AWQ_FROM = (0, 24)  # quantization/auto_awq.py AutoAWQConfig.override_quantization_method takes "awq", v0.24.0
AWQ_DEQUANT_TOKENS = 256  # quantization/awq.py AWQLinearMethod.apply FP16_MATMUL_HEURISTIC_CONDITION, v0.10.1.1 to v0.23.0


# Decoders whose MLP keeps gate_up's output named through down_proj (`gate_up, _ = self.gate_up_proj(x);
# x = self.act_fn(gate_up); x, _ = self.down_proj(x)`): qwen2.py Qwen2MLP (v0.6.4, v0.7.2, v0.11.0, v0.18.0, v0.24.0,
# v0.30.0, v0.33.0), which qwen3.py takes as Qwen3MLP, mimo.py's MiMo builds and the Qwen2/2.5/3-VL language models
# build; qwen2_moe.py Qwen2MoeMLP (`gate_up` and `out`), Qwen3.5's dense MLP (qwen3_5.py, v0.18.0 and v0.33.0); gemma.py,
# gemma2.py, granite.py, exaone.py, minicpm.py, commandr.py (Cohere, Cohere2) and internlm2.py (v0.7.2, v0.24.0 and
# v0.33.0); baichuan.py (v0.7.2, v0.24.0; v0.25.0 no longer registers it) and olmo2.py (OLMo 2 and 3; v0.7.2, v0.24.0,
# v0.25.1; from v0.28.0 the Transformers backend serves them, not read here); gemma3.py from its first, exaone4.py and
# lfm2.py (v0.11.0, v0.18.0, v0.24.0, v0.33.0), hunyuan_v1.py's dense MLP and seed_oss.py (v0.11.0, v0.18.0, v0.24.0; by
# v0.33.0 the Transformers backend serves them), gemma3n.py and gemma4.py (v0.24.0 and v0.33.0). llama.py's LlamaMLP rebinds `x` to it, which frees it once the activation is out: Llama, Mistral (mistral.py
# MistralMLP too), Phi-3, DeciLM, InternLM3, ERNIE 4.5 and GLM-4 (glm4.py takes it as Glm4MLP), and so do ChatGLM's
# GLMMLP, Nemotron's, Phi's and StarCoder2's. InternVL (InternVLChatModel) is left out: its language model decides it
# (Qwen2, Qwen3 and InternLM2 keep it, Llama frees it), and the shape does not name that class.
GATE_UP_HELD = frozenset({
    "Qwen2ForCausalLM", "Qwen3ForCausalLM", "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration",
    "Qwen3VLForConditionalGeneration", "Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "MiMoForCausalLM",
    "GemmaForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3nForCausalLM",
    "Gemma3nForConditionalGeneration", "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration",
    "GraniteForCausalLM", "ExaoneForCausalLM", "Exaone4ForCausalLM", "BaichuanForCausalLM", "BaiChuanForCausalLM", "MiniCPMForCausalLM",
    "Olmo2ForCausalLM", "Olmo3ForCausalLM", "CohereForCausalLM", "Cohere2ForCausalLM", "InternLM2ForCausalLM",
    "HunYuanDenseV1ForCausalLM", "SeedOssForCausalLM", "Lfm2ForCausalLM",
})  # fmt: skip


def eager_moments(h: int, i: int, attention: int, tp: int, held: bool) -> int:
    """Per token, in elements, the largest a dense decoder layer holds when its forward runs eagerly (V0
    always; V1 under --enforce-eager or -O0), as Python keeps its tensors named (layers past the first):
    the layer's input, still named by the model's loop (`hidden_states, residual = layer(positions,
    hidden_states, ...)`, qwen2.py and llama.py Qwen2Model/LlamaModel.forward, v0.7.2 and v0.24.0), the
    residual and the MLP's (or attention's) input, normed in place (fused_add_rms_norm), then
    - beside down_proj's output (h): the activation's (i) and, where the MLP keeps it (`held`,
      GATE_UP_HELD), gate_up's (2 x i);
    - beside o_proj's output (h): the attention's transients (`attention`, qkv's output and the core's);
    - under TP, the all-reduce after each row-parallel layer is out of place: its output beside the
      rank's partial (pynccl.py PyNcclCommunicator.all_reduce `out_tensor = torch.empty_like(in_tensor)`,
      custom_all_reduce.py custom_all_reduce and the torch.distributed fallback's `input_.clone()`,
      parallel_state.py _all_reduce_out_place, v0.7.2; cuda_communicator.py all_reduce, v0.25.1), one
      more hidden row a token.
    `i` is the intermediate a rank holds. A compiled forward (V1's default) frees each tensor after its
    last use, and keeps the form forward_peak takes for it."""
    reduced = h if tp > 1 else 0
    return max(4 * h + (3 * i if held else i) + reduced, 3 * h + attention + reduced)


def forward_peak(shape: Shape, tp: int, tokens: int, topk: int, rel: tuple[int, int] = LATEST, marlin: bool = False, dequantized: bool = False,
                 eager: bool = False) -> Term:  # fmt: skip
    """The dummy forward pass of `tokens` tokens (gpu_model_runner.py, _dummy_run with is_profile,
    v0.20.0; model_runner.py, profile_run, on V0): the residual stream (hidden states, residual and
    the normed input a layer reads) plus the largest of a layer's transient tensors, in the model
    dtype, on one rank.
    - attention: the fused qkv output and the attention output (q heads and KV heads divided by TP);
    - dense MLP: gate_up's output (2 x intermediate / TP) and the activation's (intermediate / TP);
    - MoE (vllm/model_executor/layers/fused_moe/fused_moe.py, TritonExperts.workspace_shapes,
      v0.20.0): rows x top_k x (max(N/2, K) + max(N, K)) plus the output (tokens x K), where
      N = 2 x expert intermediate / TP, K = hidden and rows the tokens of one chunk (moe_chunk:
      VLLM_FUSED_MOE_CHUNK_SIZE up to v0.17.x); a shared expert adds its own MLP;
    - MoE through fused_marlin_moe called by the quant method (`marlin`, marlin_experts "direct";
      fused_moe/fused_marlin_moe.py, v0.10.1.1 to v0.22.0), every token at once, no chunk: intermediate_cache13
      (M x top_k x max(N, K), gate_up's output and then down's), intermediate_cache2
      (M x top_k x N/2, the activation's) and the output (M x K, torch.empty_like unless in place),
      with N the fused gate_up width and M the tokens (MarlinExperts under the modular kernel,
      "modular", takes TritonExperts' shapes: fused_marlin_moe.py MarlinExperts.workspace_shapes,
      v0.20.0, experts/marlin_moe.py from v0.21.0);
    - gated-delta, mamba, short-convolution and lightning layers: their input projection's output and the mixer's;
    - under the plain AWQ kernel (`dequantized`, plain_awq) at 256 tokens or more, awq_dequantize writes a
      linear layer's whole weight on the rank in the model dtype before torch.matmul (quantization/awq.py
      AWQLinearMethod.apply, v0.10.1.1 to v0.23.0): beside qkv's input and output, beside gate_up's, and
      beside down_proj's with gate_up's output and the activation's still held (the MLP's forward keeps both)."""
    dt = shape.dtype_bytes
    h = shape.hidden
    # the widest attention layer's q and k/v (Gemma 4's full layers have their own head_dim and KV heads: Shape.kv_dims)
    q, kv = max(((shape.heads // tp * d, max(1, heads // tp) * d) for heads, d in (shape.kv_dims(FULL), shape.kv_dims(SLIDING))),
                key=lambda qkv: 2 * qkv[0] + 2 * qkv[1])  # fmt: skip
    attention = 0
    if {FULL, SLIDING, CHUNKED, PARALLEL} & set(shape.layers):
        attention = (q + 2 * kv) + q
    if MLA in shape.layers and shape.kv_lora_rank is not None:
        rope = shape.qk_rope_head_dim or 0
        nope = shape.qk_nope_head_dim or 0
        v = shape.v_head_dim or shape.head_dim
        attention = max(attention, shape.heads // tp * (nope + rope) + shape.kv_lora_rank + rope + shape.heads // tp * (nope + v) + shape.heads // tp * v)
    if LINEAR in shape.layers and shape.linear:
        g = shape.linear
        key, value = g.k_heads * g.k_dim, g.v_heads * g.v_dim
        attention = max(attention, (2 * key + 2 * value) // tp + value // tp)  # in_proj_qkvz's output and the core's
    if LIGHTNING in shape.layers:  # qkv_proj's output, and the core's beside output_gate's (minimax_linear_attn.py)
        attention = max(attention, 3 * q + 2 * q)
    if (MAMBA in shape.layers or PARALLEL in shape.layers) and shape.mamba:
        mb = shape.part(hfconfig.Mamba2Mixer)
        inner = mb.heads * mb.head_dim
        attention = max(attention, (2 * inner + 2 * mb.groups * mb.state + mb.heads) // tp + inner // tp)
    if (MAMBA1 in shape.layers or SHORT_CONV in shape.layers) and shape.mamba:  # in_proj's output (x and z; B, C and x) and the mixer's
        inner = shape.part(hfconfig.Mamba1Mixer).inner if MAMBA1 in shape.layers else shape.part(hfconfig.ShortConvMixer).inner
        width = (2 if MAMBA1 in shape.layers else 3) * inner // tp
        attention = max(attention, width + inner // tp)
    per_token = 3 * h + attention
    eager_held = False  # an eager forward's dense layer (eager_moments) sets the largest moment
    whole = dequantized and tokens >= AWQ_DEQUANT_TOKENS
    dequant = tokens * (3 * h + q + 2 * kv) + h * (q + 2 * kv) if whole and attention else 0
    chunk = moe_chunk(rel)
    rows = min(tokens, chunk) if chunk else tokens
    moe_bytes = 0  # a chunked MoE layer's workspace, sized on the chunk, not on every token
    for m in set(shape.mlps):
        if m.experts:
            n, act = _experts_n(shape, m, tp)
            k = topk or 1
            shared = 3 * m.shared_intermediate // tp if m.shared_intermediate else 0
            workspace = tokens * k * marlin_moe_workspace(n, act, h) if marlin else rows * k * (max(act, h) + max(n, h))
            moe_bytes = max(moe_bytes, tokens * (3 * h + h + shared) + workspace)
        else:
            per_token = max(per_token, 3 * h + 3 * m.intermediate // tp)
            held = eager_moments(h, m.intermediate // tp, attention, tp, shape.architecture in GATE_UP_HELD) if eager and attention else 0
            if held > per_token:
                per_token, eager_held = held, True
            if whole:
                i = m.intermediate // tp
                dequant = max(dequant, tokens * (3 * h + 2 * i) + h * 2 * i, tokens * (3 * h + 3 * i) + i * h)
    experts = (
        "fused_moe/fused_marlin_moe.py fused_marlin_moe, v0.13.0: every token at once" if marlin else "fused_moe.py TritonExperts.workspace_shapes, v0.20.0"
    )
    awq = "; the plain AWQ kernel's whole weights (quantization/awq.py AWQLinearMethod.apply, v0.23.0)" if dequant else ""
    ran = ("; run eagerly (terms.py eager_moments): the layer's input, the residual and the MLP's input beside down_proj's output"
           + (" and gate_up's, which the MLP keeps named" if shape.architecture in GATE_UP_HELD else "")
           + (", and the out-of-place all-reduce's output under TP (pynccl.py all_reduce, v0.7.2)" if tp > 1 else "")
           if eager_held else "")  # fmt: skip
    return Term("forward", max(tokens * per_token, moe_bytes, dequant) * dt,
                f"vllm/v1/worker/gpu_model_runner.py _dummy_run(max_num_tokens, is_profile=True), v0.20.0; {experts}{awq}{ran}")  # fmt: skip


def marlin_moe_workspace(n: int, act: int, k: int) -> int:
    """The elements fused_marlin_moe allocates a (token x top_k) row beside its output
    (fused_moe/fused_marlin_moe.py, v0.11.0 fused_marlin_moe and v0.13.0 _fused_marlin_moe; v0.19.0
    writes max(w13_num_shards * N, K)): intermediate_cache13, max(2 x N, K) with N the expert
    intermediate a rank (w2's rows, marlin_moe_intermediate_size), here the fused gate_up width `n`
    against the hidden size `k`, and intermediate_cache2, N (`act`, the activation's output)."""
    return max(n, k) + act


TRITON_SAMPLER_MIN_ROWS = 8  # topk_topp_sampler.py apply_top_k_top_p: `if HAS_TRITON and logits.shape[0] >= 8` (v0.17.0)
FLASHINFER_SAMPLER_BYTES_PER_LOGIT = 14  # with bf16 logits: flashinfer_bytes_per_logit(2)
V2_SAMPLER_WARMUP_PASS_FROM = (0, 33)  # gpu/model_runner.py _dummy_sampler_run's pass with SamplingParams.for_sampler_warmup, v0.33.0
SORT_SEGMENTED_MIN_ROWS = 128  # PyTorch's SortStable.cu launch_stable_sort_kernel: `nsegments < 128` sorts by one full sort
SORT_TEMP_SEGMENTED = 20  # segmented_sort_pairs: its int64 reverse indices (8 B) and CUB's third keys (4 B) and values (8 B) buffers
SORT_TEMP_FULL = 32  # segmented_sort_pairs_by_full_sort: two int2 index-and-segment buffers (16 B), the keys' output (4 B), CUB's third buffers (12 B)


def flashinfer_bytes_per_logit(logits_bytes: int = 2) -> int:
    """What V1's FlashInfer top-k/top-p holds an element: the logits as computed (`logits_bytes`),
    kept by _dummy_sampler_run, their float32 copy (v1/sample/sampler.py; none for float32 logits),
    and inside flashinfer_sample's top_k_top_p_sampling_from_logits (flashinfer/sampling.py,
    filter_apply_order "top_k_first", the default) top_k_mask_logits' new float32 tensor
    (torch.empty_like(logits)) and torch.softmax's float32 probabilities: 14 B with bf16 logits.
    Read in flashinfer-python 0.2.11, the release vLLM 0.10.1.1's `flashinfer` extra pins (0.3.1
    for 0.11.0, 0.6.8.post1 a dependency of 0.21.0; flashinfer-ai/flashinfer's stored sampling.py
    has the same steps)."""
    return logits_bytes + (4 if logits_bytes != 4 else 0) + 4 + 4


def sort_bytes_per_logit(rows: int, logits_bytes: int = 2) -> int:
    """What V1's PyTorch-native top-k/top-p holds an element at its peak, the sort (read in
    v0.10.1.1, v0.11.0, v0.13.0, v0.19.0 and v0.21.0; the dummy run asks top_k = vocabulary - 1 and
    top_p = 0.9 of every row, gpu_model_runner.py _dummy_sampler_run):
    - the logits compute_logits returned, in the model's dtype (`logits_bytes`), which
      _dummy_sampler_run keeps, and their float32 copy (v1/sample/sampler.py Sampler.forward,
      `logits.to(torch.float32)`; none for float32 logits): 4 B;
    - apply_top_k_top_p's `logits.sort(dim=-1)` (v1/sample/ops/topk_topp_sampler.py): float32
      values (4 B) and int64 indices (8 B);
    - inside the sort, PyTorch's launch_stable_sort_kernel (aten/src/ATen/native/cuda/SortStable.cu,
      one segment a row): from 128 rows (and for one) segmented_sort_pairs takes int64 reverse
      indices (8 B) and CUB's DeviceSegmentedRadixSort, given separate outputs, its third keys and
      values buffers (4 + 8 B; cub dispatch_segmented_radix_sort.cuh, 'bytes needed for 3rd keys
      buffer'): SORT_TEMP_SEGMENTED; from 2 to 127 rows segmented_sort_pairs_by_full_sort takes two
      int2 buffers, the keys' output and CUB's third buffers: SORT_TEMP_FULL.
    Later steps hold less: at the scatter, beside the logits, their copy and the sort's outputs,
    the top-k and top-p masks (1 B each), the softmax cumulated in place (4 B) and the scatter's
    copy (4 B), 28 B with bf16 logits, taken after the sort's own buffers are freed."""
    temp = SORT_TEMP_FULL if 1 < rows < SORT_SEGMENTED_MIN_ROWS else SORT_TEMP_SEGMENTED
    return logits_bytes + (4 if logits_bytes != 4 else 0) + 4 + 8 + temp


def sampler_warmup(vocab: int, rows: int, rel: tuple[int, int] = LATEST, vendor: str = "nvidia", flashinfer: bool | None = None, logits_bytes: int = 2,
                   runner_v2: bool = False) -> Term:  # fmt: skip
    """The sampler's warm-up (gpu_model_runner.py, _dummy_sampler_run, v0.20.0; V0 samples one row
    a sequence in profile_run): the logits of `rows` = min(max_num_seqs, max_num_batched_tokens)
    rows over the whole vocabulary.
    - On Model Runner V2 (`runner_v2`, v0.22.0 on: graphs.py model_runner_v2)
      vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run samples a dummy batch left at the
      sampling states' defaults (gpu/sample/states.py: temperature 0, top-k the vocabulary, top-p
      1), so no top-k/top-p runs and gumbel_sample keeps a row's few block maxima. From v0.22.0 to
      v0.25.x gpu/sample/sampler.py apply_sampling_params still copies the logits to float32 (4 B
      more an element); v0.26.x works on them in place, and from v0.27.0 to v0.32.x it returns them
      untouched (_requires_logits_processing, then needs_logits_processing): the logits alone.
      v0.33.0 adds a second pass with SamplingParams.for_sampler_warmup (top-k 50, top-p 0.9,
      penalties, logprobs), which runs the float32 copy and the top-k/top-p pipeline: the figures
      below, as V1's.
    - Up to v0.16.x the PyTorch-native top-k/top-p sort runs (VLLM_USE_FLASHINFER_SAMPLER unset,
      vllm/envs.py; before v0.12.0 only where FlashInfer is not installed, see below), and below 8
      rows after: on V1 sort_bytes_per_logit an element, from the source (38 B with bf16 logits
      from 128 rows); on V0 (before v0.8.0, whose sampler is not read here)
      SAMPLER_BYTES_PER_LOGIT, fitted.
    - From v0.17.0 to v0.20.x, on 8 rows or more, apply_top_k_top_p masks in place with a Triton
      kernel (v1/sample/ops/topk_topp_triton.py) and no sort: the logits, their float32 copy, the
      float32 probabilities and random_sample's exponential draw (2 + 4 + 4 + 4 B with bf16
      logits), beside the kernel's cached buffer of one float32 row a program (topk_topp_triton.py
      apply_top_k_top_p_triton: min(SMs, rows) rows, 0.52 B an element on an H100 at 1,024 rows),
      whose SM count the catalog does not hold: SAMPLER_TRITON_BYTES_PER_LOGIT bytes an element,
      fitted (14.9 on the fitted H100 starts).
    - From v0.21.0 FlashInfer's sampler is the default on CUDA cards of compute capability 7.5 to
      12.1 (vllm/envs.py, VLLM_USE_FLASHINFER_SAMPLER = True; v1/sample/ops/topk_topp_sampler.py):
      no sort, flashinfer_bytes_per_logit bytes an element.
    - From v0.8.0 to v0.11.x V1 reads VLLM_USE_FLASHINFER_SAMPLER unset as on: FlashInfer's sampler
      runs wherever FlashInfer imports (v1/sample/ops/topk_topp_sampler.py, TopKTopPSampler.__init__,
      `envs.VLLM_USE_FLASHINFER_SAMPLER is not False`, v0.10.1.1 and v0.11.0), and the log says
      'Using FlashInfer for top-p & top-k sampling.'. The wheel lists FlashInfer as an extra only
      (vllm[flashinfer], METADATA of v0.10.1.1 and v0.11.0), so `flashinfer` is what the install has:
      false (the sort) unless told. flashinfer_sample calls top_k_top_p_sampling_from_logits on the
      float32 logits (v0.10.1.1): flashinfer_bytes_per_logit bytes an element. From v0.12.0
      it is opt-in (VLLM_USE_FLASHINFER_SAMPLER=1) until v0.21.0.
    `flashinfer`: what is known of FlashInfer's sampler (True: installed, which counts up to v0.11.x;
    False: not installed, or VLLM_USE_FLASHINFER_SAMPLER=0, which from v0.21.0 leaves the
    PyTorch-native path, the Triton kernel from 8 rows: 'FlashInfer top-p/top-k sampling disabled via
    VLLM_USE_FLASHINFER_SAMPLER=0', topk_topp_sampler.py, 0.21.0); None: the release's default."""
    if runner_v2 and rel < V2_SAMPLER_WARMUP_PASS_FROM:
        copy = 4 if rel < (0, 26) else 0
        return Term("sampler", rows * vocab * (logits_bytes + copy),
                    "vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run (Model Runner V2): the dummy requests sample greedily with no "
                    "top-k or top-p (gpu/sample/sampler.py), so the logits" + (" and their float32 copy" if copy else " alone")
                    + f": {rows} rows x {vocab} logits x {logits_bytes + copy} B")  # fmt: skip
    if runner_v2:
        v1 = sampler_warmup(vocab, rows, rel, vendor, flashinfer, logits_bytes)
        return Term("sampler", v1.bytes, "vllm/v1/worker/gpu/model_runner.py _dummy_sampler_run, its second pass (Model Runner V2, v0.33.0: "
                    "SamplingParams.for_sampler_warmup, top-k 50 and top-p 0.9 over float32 logits) through " + v1.source)  # fmt: skip
    fi = flashinfer_bytes_per_logit(logits_bytes)
    if (0, 8) <= rel < (0, 12) and flashinfer and vendor == "nvidia":
        return Term("sampler", rows * vocab * fi,
                    f"vllm/v1/sample/ops/topk_topp_sampler.py forward_cuda (FlashInfer where it imports, v0.8.0 to v0.11.x; v0.10.1.1; "
                    f"flashinfer/sampling.py top_k_top_p_sampling_from_logits, 0.2.11): {rows} rows x {vocab} logits x {fi} B")  # fmt: skip
    if rel >= (0, 21) and vendor == "nvidia" and flashinfer is not False:
        return Term("sampler", rows * vocab * fi,
                    f"vllm/v1/sample/ops/topk_topp_sampler.py forward_cuda (FlashInfer, default from v0.21.0; flashinfer/sampling.py "
                    f"top_k_top_p_sampling_from_logits): {rows} rows x {vocab} logits x {fi} B")  # fmt: skip
    if rel >= (0, 17) and rows >= TRITON_SAMPLER_MIN_ROWS:
        return Term("sampler", rows * vocab * SAMPLER_TRITON_BYTES_PER_LOGIT,
                    f"vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p, v0.17.0 on without FlashInfer: the Triton kernel (topk_topp_triton.py) from "
                    f"{TRITON_SAMPLER_MIN_ROWS} rows, no sort: {rows} rows x {vocab} logits x {SAMPLER_TRITON_BYTES_PER_LOGIT} B (fitted, triton)")  # fmt: skip
    if rel < (0, 8):
        return Term("sampler", rows * vocab * SAMPLER_BYTES_PER_LOGIT,
                    f"vllm/model_executor/layers/sampler.py, V0 (top-k/top-p by sort): {rows} rows x {vocab} logits "
                    f"x {SAMPLER_BYTES_PER_LOGIT} B (fitted, sort)")  # fmt: skip
    per = sort_bytes_per_logit(rows, logits_bytes)
    return Term("sampler", rows * vocab * per,
                f"vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run and v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p (PyTorch-native "
                f"sort; PyTorch SortStable.cu): {rows} rows x {vocab} logits x {per} B")  # fmt: skip


# vllm/config/compilation.py: combo_kernels and benchmark_combo_kernel set for torch >= 2.9.0.dev, read in v0.11.1 to v0.33.0; the
# v0.11.1 wheel is the first to require torch 2.9.0 (its METADATA: torch==2.9.0; v0.11.0 requires 2.8.0 and has no such setting)
COMBO_KERNELS_FROM = (0, 11, 1)
PINNED_FROM = (0, 27)  # vllm/utils/mem_utils.py memory_profiling: the consumed memory read from free memory (total_consumed), v0.27.0 and v0.27.1 alike
PINNED_UNTIL = (0, 31)  # vllm/v1/worker/gpu_worker.py: _scoped_allocator_max_split(20) around profile_run too, v0.31.0
FUSED_EMBEDDING_FROM = (0, 29)  # vocab_parallel_embedding.py use_fused_embedding: ops.vocab_parallel_embedding under TP on CUDA, v0.29.0


def compile_block(shape: Shape, tp: int, rel: tuple[int, ...] = LATEST, compiled: bool = True, pp: int = 1, vendor: str = "nvidia") -> Term:
    """What a start that compiles the model (its first, with no compiled graph in vLLM's cache) holds
    at once while it compiles, inside the profile's window: vLLM turns on Inductor's combo kernels
    and their benchmarking (vllm/config/compilation.py, from v0.11.1, the first release built on torch
    2.9; `rel` (major, minor) or (major, minor, patch), a release without its patch taken at .0), and Inductor benchmarks a
    candidate kernel on full-size random copies of its arguments, the model's weights among them.
    The largest weight an Inductor kernel reads is the embedding (a gather; the linear layers and the
    experts are custom ops), so the block is taken as the embedding a rank holds, rows padded to 64
    x hidden x the model's dtype. Where that is above the profile's own peak it is the peak: the
    public cold starts print 0.71 GiB of transient memory for Qwen3-4B (an embedding of 0.72 GiB),
    0.44 for Qwen2.5-1.5B (0.43), where their starts that load the compiled graph from the cache
    print 0.15 and 0.12. The size is fitted to those starts, not read from Inductor's code; a start
    that loads its compiled graph ('Directly load AOT compilation'), or runs --enforce-eager, compiles
    nothing, and under pipeline parallel the block is not modeled. From v0.29.0 an unquantized
    embedding under tensor parallel on a CUDA card gathers with vLLM's own fused op
    (ops.vocab_parallel_embedding), not an Inductor kernel, so no such block. From v0.27.0 to v0.30.x a freed
    block can stay pinned by a later small allocation past empty_cache() and count as consumed
    (pinned_block); v0.31.0 limits the split during the profile run, as its comment says."""
    if not compiled:
        return Term("compile", 0, "nothing is compiled in the profile: --enforce-eager, -O0, or the compiled graph loaded from vLLM's cache")
    if rel < COMBO_KERNELS_FROM:
        return Term("compile", 0, "before v0.11.1 (torch 2.8) vLLM leaves Inductor's combo kernels and their benchmarking off")
    if pp > 1:
        return Term("compile", 0, "under pipeline parallel the compile's block is not modeled")
    if tp > 1 and rel >= FUSED_EMBEDDING_FROM and vendor == "nvidia":
        return Term("compile", 0, "from v0.29.0 the embedding gathers with vLLM's fused op under tensor parallel "
                    "(vocab_parallel_embedding.py use_fused_embedding), not an Inductor kernel")  # fmt: skip
    rows = weights.vocab_rows(shape.vocab, tp)
    b = rows * shape.hidden * shape.dtype_bytes
    return Term("compile", b, f"a first start compiles the model inside the profile, its benchmarks on copies of the weights as large as "
                f"the embedding, {rows:,} x {shape.hidden:,} x {shape.dtype_bytes} B a rank (vllm/config/compilation.py combo kernels, "
                "v0.11.1 to v0.33.0; the size fitted to the public cold starts)")  # fmt: skip


def pinned_block(rel: tuple[int, int]) -> bool:
    """Whether the compile's block stays counted once freed (compile_block): v0.27.0 to v0.30.x. The
    caller leaves it out where Qwen3-VL's vision tower was profiled first: its freed memory takes the
    later allocations instead, as the three multimodal cold starts of v0.28.0 print it (Qwen3-VL 8B on
    an RTX 4090, models/pool_starts.yaml: non-torch 0.18 GiB, no block kept; fitted, not read in the
    allocator's code, and kept to the tower those starts ran until others show it)."""
    return PINNED_FROM <= rel < PINNED_UNTIL


V2_CONSUMED_FROM = (0, 27)  # vllm/utils/mem_utils.py memory_profiling: total_consumed from free memory (read in 0.27.0, 0.27.1, 0.28.0)


def v2_sampler_state(vocab: int, max_num_seqs: int, rel: tuple[int, int], v2: bool, speculative_tokens: int = 0) -> Term:
    """What Model Runner V2 allocates for its sampler once the weights are loaded, after 'Model loading
    took' is measured and before the profile (vllm/v1/worker/gpu/model_runner.py load_model: Sampler and
    StructuredOutputsWorker, read in 0.27.1 and 0.28.0), in int32 a row of max_num_seqs (max_num_reqs):
    gpu/sample/penalties.py PenaltiesState, output_bin_counts (max_num_reqs x vocabulary) and
    prompt_bin_mask (max_num_reqs x the vocabulary / 32), and gpu/structured_outputs.py grammar_bitmask
    (max_num_reqs x the decode step's query length x the vocabulary / 32), read in 0.27.0, 0.29.0, 0.30.0
    and 0.33.0 as in 0.28.0. vLLM counts it from v0.27.0, where the consumed memory is read from free
    memory (V2_CONSUMED_FROM), not from torch's allocation; before, it counted neither as the weights, the
    peak nor non-torch memory. The logit-bias, bad-words and smaller per-request rows (about 17 KiB a
    request in 0.28.0) are not counted. Zero for the V1 runner."""
    if not v2 or rel < V2_CONSUMED_FROM:
        return Term("v2_sampler_state", 0, "no Model Runner V2 sampler state counted as consumed (the V1 runner, or before v0.27.0)")
    words = -(-vocab // 32)
    b = max_num_seqs * (vocab + words + (1 + speculative_tokens) * words) * 4
    return Term("v2_sampler_state", b,
                f"Model Runner V2's sampler state, built after the weights are measured (vllm/v1/worker/gpu/sample/penalties.py output_bin_counts "
                f"and prompt_bin_mask, gpu/structured_outputs.py grammar_bitmask, int32, 0.27.0 to 0.33.0): {max_num_seqs} requests x "
                f"({vocab:,} + {words:,} + {1 + speculative_tokens} x {words:,}) x 4 B")  # fmt: skip


NCCL_CUMEM_FROM = (0, 10, 2)  # vllm/env_override.py sets NCCL_CUMEM_ENABLE=0 up to v0.10.1.1; v0.10.2 has no such override


def nccl_cumem(version: str | None) -> bool:
    """Whether NCCL allocates with cuMem, its default, in this vLLM release: vllm/env_override.py
    turns it off (NCCL_CUMEM_ENABLE=0, unless the variable is set) up to v0.10.1.1 (read in v0.8.5
    and v0.10.1.1) and v0.10.2 drops the override (read in v0.10.2 and v0.11.0). A version without
    its patch level is taken at .0, and a patch level with a suffix (0.10.2rc1, 0.10.2+cu128) at its
    digits, as patch_release reads it."""
    if not version:
        return True
    return patch_release(version) >= NCCL_CUMEM_FROM


def non_torch(tp: int, pp: int = 1, rel: tuple[int, int] = LATEST, nvls: bool = True, cumem: bool | None = None, v2: bool = False,
              card: str = "") -> Term:  # fmt: skip
    """Memory outside torch's allocator that grew during loading and profiling (vllm/utils/mem_utils.py,
    memory_profiling, non_torch_increase, v0.20.0; vllm/worker/worker.py on V0): cuBLAS workspaces
    on one GPU, NCCL and custom all-reduce buffers on top under tensor or pipeline parallel. No
    figure of the source: the medians of the fitted starts that print it, on one GPU apart for V0
    (before v0.8.0, where the profile measured from the process's start) and V1 (from its first
    snapshot, after the CUDA context). On one GPU under Model Runner V2 (`v2`) from v0.27.0, where vLLM
    reads the consumed memory from free memory and prints it ('Actual usage is X GiB for consumed memory
    (weights + non-torch)'), its own median (NON_TORCH_ONE_RANK_V2): what that figure leaves after the
    loading line and the sampler's state (v2_sampler_state, which the caller adds), on the fitted starts
    where no compile's block is kept.

    Under tensor or pipeline parallel V1 with NCCL's cuMem off (`cumem`, nccl_cumem: up to
    v0.10.1.1 vllm/env_override.py sets NCCL_CUMEM_ENABLE=0, unless the variable is set or the box
    has /dev/nvidia-caps-imex-channels) on a board without NVSwitch multicast takes its own median:
    v0.10.2 drops the override and NCCL keeps its own default. Up to v0.10.x the snapshot is also
    taken before the distributed init (gpu_worker.py init_device, v0.10.1.1 and v0.10.2; after it
    from v0.11.0), so NCCL's set-up counts. No start with cuMem off prints the term: the constant is
    the median of what the fitted starts' printed pools leave after their printed weights and the
    predicted activation (poolaccuracy.fit), on A100s 0.17 to 0.23 GiB a rank. On an NVSwitch board
    with cuMem off the fitted H100 starts leave 2.30 and 2.40 GiB a rank (TP 8, v0.10.0), as much as
    the boards with cuMem on print: the NVSwitch board's constant, cuMem or not. `cumem` None: as the
    release's (major, minor) gives it, .0.

    The fitted starts that print the term under TP ran on HGX H100 and H200 boards, where NCCL
    opens its NVSwitch paths (and, with cuMem, its NVLink SHARP all-reduce); that the memory is
    NCCL's is read from the same figure with cuMem off, not from NCCL's code. On a card without it (`nvls` false: PCIe cards, A100, AMD) under TP the term is NCCL's
    without NVLS, with its own median (NON_TORCH_PER_RANK_TP_OTHER_BOARDS): no such start prints the
    term either, so it is what the fitted starts' printed pools leave after their printed weights, the
    predicted activation, the graph estimate (printed where it is) and V2's sampler state. Whether the custom all-reduce runs (custom_all_reduce.py: peer-to-peer, and full NVLink
    above two cards) changes no term from v0.11.0: its buffers are made before the snapshot, and the
    NCCL-only starts on cards without peer-to-peer fit this constant.

    V0 (0.7.x) takes its baseline snapshot before it starts NCCL (vllm/worker/worker.py init_device,
    0.7.2), so NCCL's communicator and the custom all-reduce's IPC buffers (16 MiB outside torch) count
    in its term under TP. Its one fitted start (two L40S) prints 0.30 GiB; an A100 pair with
    peer-to-peer prints 1.54 (held out): NCCL's buffers follow its transport, which no input gives.

    On one GPU under V1 a card (its catalog id, `card`) whose fitted one-GPU V1 starts number
    CARD_OFFSET_MIN_STARTS or more adds what they leave beside V1's constant, their median
    (NON_TORCH_CARD_OFFSETS, poolaccuracy.card_offsets): an RTX 4080 Laptop's starts leave 0.19 GiB less
    than the H100s that set the constant, under v0.20.0 as under v0.23.0 and at every utilization (V0
    0.7.2 prints 0.04 GiB there). No source line gives these figures, and they are thin: the laptop's
    starts are one machine's, and the v0.10.x starts that print the term print less on every card, so
    part of a figure may be the release's. Not under V0 or Model Runner V2, whose constants are their own."""
    if tp * pp == 1:
        if v2 and rel >= V2_CONSUMED_FROM:
            return Term("non_torch", NON_TORCH_ONE_RANK_V2, "vllm/utils/mem_utils.py memory_profiling, total_consumed less the weights, v0.27.0 on; "
                        "one GPU under Model Runner V2 (fitted, V2)")  # fmt: skip
        if rel < (0, 8):
            return Term("non_torch", NON_TORCH_ONE_RANK_V0, "vllm/worker/worker.py determine_num_available_blocks, V0; one GPU (fitted, V0)")
        offset = NON_TORCH_CARD_OFFSETS.get(card, 0)
        own = (f"; V1's {_gib(NON_TORCH_ONE_RANK)} {'less' if offset < 0 else 'and'} {_gib(abs(offset))} {'' if offset < 0 else 'more '}on this card, "
               "the median gap of its own fitted starts (fitted, card)") if offset else ""  # fmt: skip
        return Term("non_torch", max(0, NON_TORCH_ONE_RANK + offset),
                    "vllm/utils/mem_utils.py memory_profiling, non_torch_increase, v0.20.0; one GPU (fitted)" + own)  # fmt: skip
    if rel < (0, 8):
        return Term(
            "non_torch", NON_TORCH_PER_RANK_TP_V0, "vllm/worker/worker.py determine_num_available_blocks, V0; NCCL and all-reduce under TP/PP (fitted, V0)"
        )
    if not nvls and not (cumem if cumem is not None else rel > (0, 10)):
        return Term("non_torch", NON_TORCH_PER_RANK_TP_NO_CUMEM,
                    "vllm/utils/__init__.py memory_profiling, non_torch_increase, v0.10.1.1; NCCL under TP/PP with NCCL_CUMEM_ENABLE=0 "
                    "(vllm/env_override.py, up to v0.10.1.1) (fitted, cuMem off)")  # fmt: skip
    if not nvls:  # under TP or PP alike: the board's own paths whatever the layout
        return Term("non_torch", NON_TORCH_PER_RANK_TP_OTHER_BOARDS,
                    "vllm/utils/mem_utils.py memory_profiling, non_torch_increase, v0.20.0; NCCL under TP/PP on a board without NVSwitch "
                    "multicast (fitted, other boards)")  # fmt: skip
    return Term(
        "non_torch", NON_TORCH_PER_RANK_TP, "vllm/utils/mem_utils.py memory_profiling, non_torch_increase, v0.20.0; NCCL and all-reduce under TP/PP (fitted)"
    )


def _gib(n: int, up: bool = False, down: bool = False) -> str:
    """Bytes as a sentence prints them: a cost rounded up, what is available or saved down."""
    return fmt(n, "GiB", up=up, down=down)
