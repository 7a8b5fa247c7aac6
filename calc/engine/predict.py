"""Before the first start on a discrete card: the pool vLLM will leave for the KV cache, term by term.

vLLM sizes its KV pool once, at start (vllm/v1/worker/gpu_worker.py, determine_available_memory,
v0.20.0 to v0.33.0; vllm/worker/worker.py, determine_num_available_blocks, on V0):

    requested = ceil(total x gpu_memory_utilization)        (vllm/v1/worker/utils.py, request_memory)
    pool      = requested - weights - activation peak - non-torch increase - CUDA graph estimate

- weights: what loading left allocated on the rank ("Model loading took"), modeled here by
  calc/engine/weights.py from the config;
- activation peak: the torch allocator's peak over the profile run (gpu_model_runner.py,
  profile_run): one forward pass of max_num_batched_tokens tokens (_dummy_run, is_profile=True)
  followed by the sampler's warm-up over min(max_num_seqs, tokens) rows of logits
  (_dummy_sampler_run);
- non-torch increase: memory the driver, cuBLAS, NCCL and the custom all-reduce took outside
  torch's allocator since the engine's first snapshot (vllm/utils/mem_utils.py, memory_profiling);
- CUDA graph estimate: from v0.20.0 (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1 in
  vllm/envs.py) the memory a capture of every graph size will take comes off the pool
  (gpu_model_runner.py, profile_cudagraph_memory); none under --enforce-eager. Up to v0.19.x the
  estimate is off by default and the graphs are captured after the pool is sized.

Every term is a function of the config, the card and the settings; each says which vLLM file and
release it follows. Three constants are no figure of the source but of the allocator at run time
(bytes a sampler warm-up holds per logit, the non-torch increase, bytes a captured graph holds);
they are medians over the starts of models/pool_starts.yaml that are not held out
(scripts/pool_accuracy.py --fit prints them; tests/test_predict.py checks they still are).

A unified-memory box (GB10, Jetson) is not sized here: vLLM reads its free memory as MemAvailable
(vllm/utils/mem_utils.py, MemorySnapshot) and the start gate (calc/engine/gate.py) stays the answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from calc.catalog.entries import Box
from calc.engine import hfconfig, kvlayout, lora, multimodal, offload, ranks, weights
from calc.engine.hfconfig import FULL, LINEAR, MAMBA, MLA, SLIDING, Shape
from calc.jsontext import JsonObject
from calc.units import GiB, InputError, fmt, parse_size

LATEST = (0, 33)  # the newest release whose source these terms were read in
SMALLEST_CARD = GiB  # no card vLLM runs on has less; a smaller --total-memory is a unit left out (80 for 80 GiB)
MAX_MODEL_LEN = 2**27  # 134M tokens: above every published context; a longer one is a typing slip

# Fitted constants (see the module docstring): the medians over the fitted starts.
SAMPLER_BYTES_PER_LOGIT = 36  # bytes the sampler warm-up holds per (row x vocabulary) element, sorting
SAMPLER_TRITON_BYTES_PER_LOGIT = 15  # and with the Triton top-k/top-p kernel (v0.17.0 to v0.20.x), no sort
NON_TORCH_ONE_RANK = 268_435_456  # the non-torch increase on one GPU (V1)
NON_TORCH_ONE_RANK_V0 = 375_809_638  # and on V0
NON_TORCH_PER_RANK_TP = 2_244_120_412  # and on each rank under tensor or pipeline parallel (V1: NCCL, custom all-reduce, symmetric memory)
NON_TORCH_PER_RANK_TP_V0 = 322_122_547  # and on V0
NON_TORCH_PER_RANK_TP_NO_CUMEM = 356_567_430  # and on V1 before v0.11.0, where vLLM turns NCCL's cuMem allocator off
CUDA_GRAPH_FIRST_CAPTURE = 272_629_760  # what vLLM's profile measures for the first (largest) graph of a mode
CUDA_GRAPH_PIECEWISE_PER_LAYER = 196_608  # each further piecewise graph's growth, a decoder layer
CUDA_GRAPH_FULL_PER_LAYER = 149_797  # each further full graph's growth, a decoder layer


# --- cards -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Card:
    id: str
    name: str
    total_bytes: int  # total memory as torch and vLLM report it (torch.cuda.mem_get_info()[1])
    total_text: str  # as the catalog writes it
    source: str
    unified: bool = False  # CPU and GPU share one memory: vLLM reads MemAvailable
    vendor: str = "nvidia"  # "amd": ROCm takes no CUDA graph estimate off the pool
    nvls: bool = True  # NCCL's NVLink SHARP all-reduce can run (non_torch); a card known by its total alone is taken as able


# Boards whose GPUs meet on NVSwitch with multicast (HGX H100, H200, B200): there NCCL's NVLS
# all-reduce runs when NCCL allocates with cuMem, and its buffers count outside torch (non_torch).
NVLS_BOXES = ("h100-sxm", "h200", "b200")


def card_of_box(box: Box) -> Card:
    """A catalog box (catalog/boxes.yaml) as a card. Only its total_memory is the total torch and
    vLLM report; a box with nothing but the driver's or the vendor's figure cannot be sized here."""
    total = box.get("total_memory")
    if total is None:
        have = next((k for k in ("reported_total", "spec_memory") if k in box), None)
        raise InputError(
            f"--gpu: {box['name']} has no total as torch and vLLM report it in catalog/boxes.yaml"
            + (f" (only its {have.replace('_', ' ')})" if have else "")
            + "; give --total-memory, the total_gpu_memory of a vLLM log or torch.cuda.mem_get_info()[1]"
        )
    name = str(box["name"])
    vendor = "amd" if name.upper().startswith("AMD") else "nvidia"
    unified = box.get("memory") == "unified"
    return Card(str(box["id"]), name, int(total.size), str(total.entry), str(total.source or ""), unified, vendor, str(box["id"]) in NVLS_BOXES)


def find_box(boxes: Mapping[str, Box], name: str) -> Box:
    """A catalog box by its id or its name, case, spaces and dashes aside, or by a run of the words
    of either ("4090", "A100 80GB", "GB10") when that names one box; a name that fits several
    ("H100") lists them, an unknown one lists the known."""
    key = _key(name)
    for box in boxes.values():
        if key in (_key(box["id"]), _key(box["name"]), _key(str(box["name"]).removeprefix("NVIDIA "))):
            return box
    fits = [box for box in boxes.values() if key and key in _word_runs(box)]
    if len(fits) == 1:
        return fits[0]
    if fits:
        raise InputError(f"--gpu: found {name!r}, which fits {' and '.join(str(b['id']) for b in fits)}; expected one of them")
    raise InputError(f"--gpu: found {name!r}, expected one of {', '.join(boxes)}")


def _word_runs(box: Box) -> set[str]:
    """Every run of consecutive words of a box's id and of its name, each as _key spells it."""
    runs: set[str] = set()
    for text in (str(box["id"]), str(box["name"])):
        words = [w for w in (_key(w) for w in re.split(r"[\s\-()+]+", text)) if w]
        runs.update("".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1))
    return runs


def _key(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


# --- releases and defaults -------------------------------------------------------------------


def release(text: str | None) -> tuple[int, int]:
    """(major, minor) of a vLLM version; the newest read when none is given."""
    if not text:
        return LATEST
    parts = text.strip().lstrip("v").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise InputError(f"--engine-version: found {text!r}, expected a vLLM version such as 0.10.1 or 0.26.0") from None


def default_utilization(rel: tuple[int, int]) -> Fraction:
    """vllm/config/cache.py, gpu_memory_utilization: 0.9 up to v0.19.x, 0.92 from v0.20.0."""
    return Fraction(92, 100) if rel >= (0, 20) else Fraction(9, 10)


@dataclass(frozen=True)
class Batch:
    max_num_batched_tokens: int
    max_num_seqs: int
    source: str


def default_batch(rel: tuple[int, int], card_total: int, card_name: str, max_model_len: int, offline: bool = False) -> Batch:
    """The scheduler's defaults when the reader sets neither.

    V1 (v0.8.0 on): vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults (_set_default_args_v1
    in v0.8.x): a card of 70 GiB or more that is no A100 takes 8192 tokens (16384 offline) and 1024
    sequences, any other 2048 (8192 offline) and 256; from v0.28.0 a card of 160 GiB or more
    takes 16384 tokens served too; v0.33.0 keeps GB10 on the small tier.
    V0 (before v0.8): vllm/config.py, SchedulerConfig: 256 sequences and max(max_model_len, 2048)
    tokens, or 2048 when chunked prefill is on (served with max_model_len above 32K)."""
    if rel < (0, 8):
        chunked = max_model_len > 32768 and not offline
        tokens = 2048 if chunked else max(max_model_len, 2048)
        return Batch(tokens, 256, "vllm/config.py, SchedulerConfig, V0 (v0.6-v0.7): " + ("chunked prefill, 2048" if chunked else "max(max_model_len, 2048)"))
    where = "vllm/engine/arg_utils.py, get_batch_defaults"
    gb10 = "gb10" in _key(card_name) and rel >= (0, 33)
    if rel >= (0, 28) and card_total >= 160 * GiB:
        return Batch(16384, 1024, f"{where} (v0.28.0 on): 160 GiB or more")
    if card_total >= 70 * GiB and "a100" not in _key(card_name) and not gb10:
        return Batch(16384 if offline else 8192, 1024, f"{where}: 70 GiB or more, no A100")
    return Batch(8192 if offline else 2048, 256, f"{where}: below 70 GiB, an A100" + (" or GB10" if gb10 else ""))


# --- the terms -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    name: str
    bytes: int
    source: str


def experts_per_token(config: JsonObject) -> int:
    """Experts each token is routed to (num_experts_per_tok, experts_per_token or moe_topk)."""
    for c in (config, config.get("text_config") if isinstance(config.get("text_config"), dict) else {}):
        assert isinstance(c, dict)
        for key in ("num_experts_per_tok", "experts_per_token", "moe_topk", "num_selected_experts"):
            value = c.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                return value
    return 0


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


HOPPER = ("h100", "h200", "h800", "h20", "gh200")  # compute capability 9.0: triton_kernels' Hopper layouts


def is_hopper(card_name: str) -> bool:
    return any(k in _key(card_name) for k in HOPPER)


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


def moe_workspace(shape: Shape, tp: int, tokens: int, topk: int, rel: tuple[int, int] = LATEST) -> Term:
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
    kernel, which takes no workspace from the manager)."""
    from calc.engine.weights import quant_of

    moe = [m for m in shape.mlps if m.experts]
    if not moe or not topk:
        return Term("moe_workspace", 0, "no fused experts")
    if rel < (0, 14):
        return Term("moe_workspace", 0, "up to v0.13.x fused_experts frees its caches at each layer (fused_moe.py fused_experts_impl)")
    if quant_of(shape).method != "none":
        return Term("moe_workspace", 0, "quantized experts: the kernel vLLM picks by card is not modeled; no workspace held")
    chunk = moe_chunk(rel)
    rows = min(tokens, chunk) if chunk else tokens
    dt, k = shape.dtype_bytes, shape.hidden
    most = 0
    for m in set(moe):
        n, act = _experts_n(shape, m, tp)
        w13, w2, out = rows * topk * max(act, k), rows * topk * max(n, k), tokens * k
        most = max(most, (w13 + w2 + out) if rows < tokens else (max(w13, out) + w2))
    return Term("moe_workspace", most * dt,
                f"vllm/v1/worker/workspace.py WorkspaceManager, kept from the forward pass (fused_moe/modular_kernel.py _allocate_buffers, "
                f"TritonExperts.workspace_shapes, v0.14.0 to v0.33.0): {rows:,} rows x top_k {topk}")  # fmt: skip


def forward_peak(shape: Shape, tp: int, tokens: int, topk: int, rel: tuple[int, int] = LATEST) -> Term:
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
    - gated-delta and mamba layers: their input projection's output."""
    dt = shape.dtype_bytes
    h = shape.hidden
    kv_rank = max(1, shape.kv_heads // tp)
    q = shape.heads // tp * shape.head_dim
    kv = kv_rank * shape.head_dim
    attention = 0
    if FULL in shape.layers or SLIDING in shape.layers:
        attention = (q + 2 * kv) + q
    if MLA in shape.layers and shape.kv_lora_rank is not None:
        rope = shape.qk_rope_head_dim or 0
        nope = shape.qk_nope_head_dim or 0
        v = shape.v_head_dim or shape.head_dim
        attention = max(attention, shape.heads // tp * (nope + rope) + shape.kv_lora_rank + rope + shape.heads // tp * (nope + v) + shape.heads // tp * v)
    if LINEAR in shape.layers and shape.linear:
        g = shape.linear
        key, value = g["k_heads"] * g["k_dim"], g["v_heads"] * g["v_dim"]
        attention = max(attention, (2 * key + 2 * value) // tp + value // tp)  # in_proj_qkvz's output and the core's
    if MAMBA in shape.layers and shape.mamba:
        mb = shape.mamba
        inner = mb["heads"] * mb["head_dim"]
        attention = max(attention, (2 * inner + 2 * mb["groups"] * mb["state"] + mb["heads"]) // tp + inner // tp)
    per_token = 3 * h + attention
    chunk = moe_chunk(rel)
    rows = min(tokens, chunk) if chunk else tokens
    moe_bytes = 0  # a chunked MoE layer's workspace, sized on the chunk, not on every token
    for m in set(shape.mlps):
        if m.experts:
            n, act = _experts_n(shape, m, tp)
            k = topk or 1
            shared = 3 * m.shared_intermediate // tp if m.shared_intermediate else 0
            moe_bytes = max(moe_bytes, tokens * (3 * h + h + shared) + rows * k * (max(act, h) + max(n, h)))
        else:
            per_token = max(per_token, 3 * h + 3 * m.intermediate // tp)
    return Term("forward", max(tokens * per_token, moe_bytes) * dt,
                "vllm/v1/worker/gpu_model_runner.py _dummy_run(max_num_tokens, is_profile=True), v0.20.0; "
                "fused_moe.py TritonExperts.workspace_shapes, v0.20.0")  # fmt: skip


TRITON_SAMPLER_MIN_ROWS = 8  # topk_topp_sampler.py apply_top_k_top_p: `if HAS_TRITON and logits.shape[0] >= 8` (v0.17.0)
FLASHINFER_SAMPLER_BYTES_PER_LOGIT = 10  # the logits as computed (2 B), their float32 copy (4 B), FlashInfer's probabilities (4 B)


def sampler_warmup(vocab: int, rows: int, rel: tuple[int, int] = LATEST, vendor: str = "nvidia", flashinfer: bool = False) -> Term:
    """The sampler's warm-up (gpu_model_runner.py, _dummy_sampler_run, v0.20.0; V0 samples one row
    a sequence in profile_run): the logits of `rows` = min(max_num_seqs, max_num_batched_tokens)
    rows over the whole vocabulary.
    - Up to v0.16.x the PyTorch-native top-k/top-p sort runs (VLLM_USE_FLASHINFER_SAMPLER unset,
      vllm/envs.py; before v0.12.0 only where FlashInfer is not installed, see below): the float32 logits, the sorted copy and its int64 indices, the softmax and
      its cumulative sum: SAMPLER_BYTES_PER_LOGIT bytes an element, fitted.
    - From v0.17.0 to v0.20.x, on 8 rows or more, apply_top_k_top_p masks in place with a Triton
      kernel (v1/sample/ops/topk_topp_triton.py) and no sort: the logits, their float32 copy, the
      float32 probabilities and random_sample's exponential draw, SAMPLER_TRITON_BYTES_PER_LOGIT
      bytes an element, fitted.
    - From v0.21.0 FlashInfer's sampler is the default on CUDA cards of compute capability 7.5 to
      12.1 (vllm/envs.py, VLLM_USE_FLASHINFER_SAMPLER = True; v1/sample/ops/topk_topp_sampler.py):
      no sort, FLASHINFER_SAMPLER_BYTES_PER_LOGIT bytes an element (v1/sample/sampler.py casts the
      logits to float32; FlashInfer takes their softmax).
    - From v0.8.0 to v0.11.x V1 reads VLLM_USE_FLASHINFER_SAMPLER unset as on: FlashInfer's sampler
      runs wherever FlashInfer imports (v1/sample/ops/topk_topp_sampler.py, TopKTopPSampler.__init__,
      `envs.VLLM_USE_FLASHINFER_SAMPLER is not False`, v0.10.1.1 and v0.11.0), and the log says
      'Using FlashInfer for top-p & top-k sampling.'. The wheel lists FlashInfer as an extra only
      (vllm[flashinfer], METADATA of v0.10.1.1 and v0.11.0), so `flashinfer` is what the install has:
      false (the sort) unless told. flashinfer_sample calls top_k_top_p_sampling_from_logits on the
      float32 logits (v0.10.1.1): FLASHINFER_SAMPLER_BYTES_PER_LOGIT bytes an element. From v0.12.0
      it is opt-in (VLLM_USE_FLASHINFER_SAMPLER=1) until v0.21.0."""
    if (0, 8) <= rel < (0, 12) and flashinfer and vendor == "nvidia":
        return Term("sampler", rows * vocab * FLASHINFER_SAMPLER_BYTES_PER_LOGIT,
                    f"vllm/v1/sample/ops/topk_topp_sampler.py forward_cuda (FlashInfer where it imports, v0.8.0 to v0.11.x; v0.10.1.1): "
                    f"{rows} rows x {vocab} logits x {FLASHINFER_SAMPLER_BYTES_PER_LOGIT} B")  # fmt: skip
    if rel >= (0, 21) and vendor == "nvidia":
        return Term("sampler", rows * vocab * FLASHINFER_SAMPLER_BYTES_PER_LOGIT,
                    f"vllm/v1/sample/ops/topk_topp_sampler.py forward_cuda (FlashInfer, default from v0.21.0): {rows} rows x {vocab} logits "
                    f"x {FLASHINFER_SAMPLER_BYTES_PER_LOGIT} B")  # fmt: skip
    if rel >= (0, 17) and rows >= TRITON_SAMPLER_MIN_ROWS:
        return Term("sampler", rows * vocab * SAMPLER_TRITON_BYTES_PER_LOGIT,
                    f"vllm/v1/sample/ops/topk_topp_sampler.py apply_top_k_top_p, v0.17.0 to v0.20.x: the Triton kernel (topk_topp_triton.py) from "
                    f"{TRITON_SAMPLER_MIN_ROWS} rows, no sort: {rows} rows x {vocab} logits x {SAMPLER_TRITON_BYTES_PER_LOGIT} B (fitted, triton)")  # fmt: skip
    return Term("sampler", rows * vocab * SAMPLER_BYTES_PER_LOGIT,
                f"vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run, v0.20.0 (PyTorch-native top-k/top-p): {rows} rows x {vocab} logits "
                f"x {SAMPLER_BYTES_PER_LOGIT} B (fitted, sort)")  # fmt: skip


def non_torch(tp: int, pp: int = 1, rel: tuple[int, int] = LATEST, nvls: bool = True) -> Term:
    """Memory outside torch's allocator that grew during loading and profiling (vllm/utils/mem_utils.py,
    memory_profiling, non_torch_increase, v0.20.0; vllm/worker/worker.py on V0): cuBLAS workspaces
    on one GPU, NCCL and custom all-reduce buffers on top under tensor or pipeline parallel. No
    figure of the source: the medians of the fitted starts that print it, on one GPU apart for V0
    (before v0.8.0, where the profile measured from the process's start) and V1 (from its first
    snapshot, after the CUDA context).

    Under tensor or pipeline parallel V1 before v0.11.0 takes its own median: up to v0.10.x
    vllm/env_override.py sets NCCL_CUMEM_ENABLE=0 (unless the variable is set or the box has
    /dev/nvidia-caps-imex-channels; read in v0.8.5 and v0.10.1.1), so NCCL allocates its buffers
    without cuMem and takes no NVLink SHARP buffers, which need it; v0.11.0 drops the override and
    NCCL keeps its own default. There the snapshot is also taken before the distributed init
    (gpu_worker.py init_device, v0.10.1.1; after it from v0.11.0), so NCCL's set-up counts. No start
    before v0.11.0 prints the term: the constant is the median of what the fitted starts' printed
    pools leave after their printed weights and the predicted activation (poolaccuracy.fit).

    From v0.11.0, where NCCL keeps cuMem, the fitted starts under TP all ran on HGX H100 boards,
    where NCCL also runs its NVLink SHARP (NVLS) all-reduce, whose buffers need NVSwitch multicast
    and cuMem. On a card without it (`nvls` false: PCIe cards, A100, AMD) under TP the term is NCCL's
    without NVLS, which the starts before v0.11.0 measured (A100s, NVLS off with cuMem): the same
    constant."""
    if tp * pp == 1:
        if rel < (0, 8):
            return Term("non_torch", NON_TORCH_ONE_RANK_V0, "vllm/worker/worker.py determine_num_available_blocks, V0; one GPU (fitted, V0)")
        return Term("non_torch", NON_TORCH_ONE_RANK, "vllm/utils/mem_utils.py memory_profiling, non_torch_increase, v0.20.0; one GPU (fitted)")
    if rel < (0, 8):
        return Term(
            "non_torch", NON_TORCH_PER_RANK_TP_V0, "vllm/worker/worker.py determine_num_available_blocks, V0; NCCL and all-reduce under TP/PP (fitted, V0)"
        )
    if rel < (0, 11):
        return Term("non_torch", NON_TORCH_PER_RANK_TP_NO_CUMEM,
                    "vllm/utils/__init__.py memory_profiling, non_torch_increase, v0.10.1.1; NCCL under TP/PP with NCCL_CUMEM_ENABLE=0 "
                    "(vllm/env_override.py, up to v0.10.x) (fitted, before v0.11)")  # fmt: skip
    if tp > 1 and not nvls:
        return Term("non_torch", NON_TORCH_PER_RANK_TP_NO_CUMEM,
                    "vllm/utils/mem_utils.py memory_profiling, non_torch_increase, v0.20.0; NCCL under TP on a card without NVSwitch multicast, "
                    "so without NCCL's NVLS buffers: the median where NCCL ran without them (fitted, before v0.11)")  # fmt: skip
    return Term(
        "non_torch", NON_TORCH_PER_RANK_TP, "vllm/utils/mem_utils.py memory_profiling, non_torch_increase, v0.20.0; NCCL and all-reduce under TP/PP (fitted)"
    )


GPT_OSS_CAPTURE = 1024  # models/config.py GptOssForCausalLMConfig: max_cudagraph_capture_size 1024 (v0.13.0 to v0.33.0)


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, architecture: str = "") -> list[int]:
    """vllm/config/vllm.py, _set_cudagraph_sizes (v0.20.0): [1, 2, 4] + 8 to 248 by 8 + 256 by 16,
    up to min(2 x max_num_seqs, 512, max_num_batched_tokens); gpt-oss sets the largest to 1,024
    (GptOssForCausalLMConfig.verify_and_update_config, vllm/model_executor/models/config.py), still
    no more than max_num_batched_tokens (log 111: 'PIECEWISE=83 (largest=1024)')."""
    cap = GPT_OSS_CAPTURE if architecture == "GptOssForCausalLM" else min(2 * max_num_seqs, 512)
    largest = min(cap, max_num_batched_tokens)
    sizes = [s for s in (1, 2, 4) if s <= largest]
    sizes += list(range(8, min(largest + 1, 256), 8))
    sizes += list(range(256, largest + 1, 16))
    return sizes


def graph_counts(max_num_seqs: int, max_num_batched_tokens: int, architecture: str = "") -> tuple[int, int]:
    """The graphs vLLM captures under FULL_AND_PIECEWISE, the default cudagraph_mode (vllm/config/
    compilation.py; gpu_model_runner.py profile_cudagraph_memory logs them as 'Profiling CUDA graph
    memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)'): a piecewise graph for every
    capture size, and a full decode graph for every size up to max_num_seqs."""
    sizes = capture_sizes(max_num_seqs, max_num_batched_tokens, architecture)
    return len(sizes), len([s for s in sizes if s <= max_num_seqs])


def cuda_graph_estimate(piecewise: int, full: int, layers: int) -> int:
    """vLLM's own estimate (vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory, v0.20.0 to
    v0.33.0): for each mode it captures the two largest graphs, takes the first capture's growth of
    free memory (torch.cuda.mem_get_info) as `first_capture` and the second's as `per_graph`, and
    estimates
        max over modes of first_capture + sum over modes of per_graph x (graphs of the mode - 1)
    (the modes share one pool and never replay at once, so their first captures overlap). The two
    measurements are the driver's at run time, no figure of the source. The second capture grows by
    the graph's own nodes, not by its buffers (the pool is shared): a piecewise capture is one CUDA
    graph a piece, and the compiled model is split at every attention layer (vllm/config/
    compilation.py, splitting_ops = _attention_ops; compilation/piecewise_backend.py), a full graph
    holds every layer's kernels; so each further graph grows with the decoder layers, not with the
    tensor-parallel size (the H100 logs of v0.19.0 print 18 to 20 MiB for 80 layers at TP 2 and 4,
    4 to 6 MiB for 28 or 32 at TP 1, 2 and 4). CUDA_GRAPH_FIRST_CAPTURE and the bytes a layer of
    each mode are the medians over the fitted logs that print the two measurements (the DEBUG line
    'Estimated FULL CUDA graph memory: 260.00 MiB first-capture + (51-1) x 6.00 MiB per-graph')."""
    if not piecewise and not full:
        return 0
    further = CUDA_GRAPH_PIECEWISE_PER_LAYER * max(piecewise - 1, 0) + CUDA_GRAPH_FULL_PER_LAYER * max(full - 1, 0)
    return CUDA_GRAPH_FIRST_CAPTURE + further * layers


# The architectures each release runs on Model Runner V2 by default (vllm/config/vllm.py,
# DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES), from the release that set the list.
V2_ARCHITECTURES: tuple[tuple[tuple[int, int], frozenset[str]], ...] = (
    ((0, 22), frozenset({"Qwen3ForCausalLM"})),
    ((0, 23), frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"})),
    ((0, 24), frozenset({"Qwen3ForCausalLM", "DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM",
                         "LlamaForCausalLM", "MistralForCausalLM"})),
    ((0, 25), frozenset({"DeepseekV2ForCausalLM", "Qwen2MoeForCausalLM", "GraniteMoeForCausalLM"})),
    ((0, 26), frozenset({"DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM", "InklingForConditionalGeneration",
                         "LongcatFlashNgramForCausalLM", "Qwen2MoeForCausalLM"})),
    ((0, 27), frozenset({"DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM", "InklingForConditionalGeneration",
                         "KimiK3ForConditionalGeneration", "LongcatFlashNgramForCausalLM", "Qwen2MoeForCausalLM"})),
    ((0, 28), frozenset({"DeepseekV2ForCausalLM", "DeepseekV4ForCausalLM", "GraniteMoeForCausalLM", "InklingForCausalLM",
                         "InklingForConditionalGeneration", "KimiK3ForConditionalGeneration", "LongcatFlashNgramForCausalLM",
                         "Qwen2MoeForCausalLM"})),
)  # fmt: skip
V2_ESTIMATE_FROM = (0, 29)  # vllm/v1/worker/gpu/cudagraph_utils.py profile_cudagraph_memory: V2's own estimate from v0.29.0


def mamba_graphs(shape: Shape, rel: tuple[int, int], enforce_eager: bool) -> bool:
    """Whether vLLM holds max_num_seqs to the pool's blocks: from v0.20.0 a model with mamba or
    gated-delta layers captures full decode CUDA graphs (FULL_AND_PIECEWISE, the default mode), and
    each decode sequence of one needs its own Mamba cache block, so resolve_cudagraph_mode_and_sizes
    (vllm/config/compilation.py, 0.20.0 to 0.33.0) refuses a max_num_seqs above kv_cache_config.num_blocks.
    None under --enforce-eager (no graphs)."""
    return rel >= (0, 20) and not enforce_eager and bool({MAMBA, LINEAR} & set(shape.layers))


def model_runner_v2(shape: Shape, rel: tuple[int, int]) -> bool:
    """Whether the release runs this model on Model Runner V2 when VLLM_USE_V2_MODEL_RUNNER is unset
    (vllm/config/vllm.py, VllmConfig.use_v2_model_runner and _is_default_v2_model_runner_model):
    v0.22.0 and v0.23.x a listed architecture, neither MoE nor quantized; v0.24.x a listed
    architecture; v0.25.1 and v0.26.x any model that is neither hybrid nor MoE, and a listed MoE;
    from v0.27.0 a listed hybrid too. Before v0.22.0 the V1 runner alone. The features V2 leaves
    to V1 (ngram drafts, prefill context parallel, sequence parallel, custom logits processors,
    prompt embeddings; in v0.22.0 a reasoning parser too) are not among the inputs here."""
    if rel < (0, 22):
        return False
    archs = [a for since, a in V2_ARCHITECTURES if since <= rel][-1]
    listed = shape.architecture in archs
    moe = any(m.experts for m in shape.mlps)
    hybrid = shape.family == "hybrid"
    if rel < (0, 24):
        return listed and not moe and shape.quantization is None
    if rel < (0, 25):
        return listed
    if rel < (0, 27):
        return not hybrid and (listed or not moe)
    return (listed or not hybrid) and (listed or not moe)


def cuda_graph(shape: Shape, rel: tuple[int, int], max_num_seqs: int, max_num_batched_tokens: int, enforce_eager: bool, vendor: str = "nvidia",
               runner_v2: bool = False) -> Term:  # fmt: skip
    """The CUDA graph estimate taken off the pool (gpu_worker.py determine_available_memory, from
    v0.20.0, where vllm/envs.py turns VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on): vLLM's own
    formula, cuda_graph_estimate, over the graphs graph_counts gives and the shape's decoder layers
    (a pipeline stage's own). Zero before v0.20.0 (the estimate is off by default there: v0.19.0
    prints it and takes nothing off), under --enforce-eager and on ROCm, and on Model Runner V2
    before v0.29.0 (`runner_v2`, model_runner_v2 of the whole model): its profile_cudagraph_memory
    returns 0 (vllm/v1/worker/gpu/model_runner.py, v0.22.0 to v0.28.0; https://github.com/vllm-project/vllm/issues/49224), so the
    worker takes nothing off for the graphs it captures after sizing the pool. From v0.29.0 V2
    measures its own estimate (vllm/v1/worker/gpu/cudagraph_utils.py); the formula here, fitted on
    the V1 runner's, stands in for it."""
    if enforce_eager:
        return Term("cuda_graph", 0, "--enforce-eager: no graphs are captured")
    if rel < (0, 20):
        return Term("cuda_graph", 0, "before v0.20.0 the estimate is off by default (vllm/envs.py, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)")
    if vendor == "amd":
        return Term("cuda_graph", 0, "vllm/v1/worker/gpu_worker.py, v0.20.0: no estimate on ROCm")
    if runner_v2 and rel < V2_ESTIMATE_FROM:
        return Term("cuda_graph", 0, "Model Runner V2, this release's default for the model (vllm/config/vllm.py use_v2_model_runner): its "
                    "profile_cudagraph_memory returns 0 (vllm/v1/worker/gpu/model_runner.py, v0.22.0 to v0.28.0), so nothing is taken off")  # fmt: skip
    piecewise, full = graph_counts(max_num_seqs, max_num_batched_tokens, shape.architecture)
    layers = len(shape.layers)
    return Term("cuda_graph", cuda_graph_estimate(piecewise, full, layers),
                f"vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory, v0.20.0: PIECEWISE={piecewise}, FULL={full}; "
                f"{fmt(CUDA_GRAPH_FIRST_CAPTURE, 'MiB', 0, up=True)} first capture + a further graph {fmt(CUDA_GRAPH_PIECEWISE_PER_LAYER * layers, 'MiB', 1, up=True)} "
                f"piecewise, {fmt(CUDA_GRAPH_FULL_PER_LAYER * layers, 'MiB', 1, up=True)} full over {layers} layers (fitted)")  # fmt: skip


# --- the start -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Start:
    tp: int = 1
    pp: int = 1
    max_model_len: int = 8192
    utilization: Fraction | None = None  # None: the release's default
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enforce_eager: bool = False
    kv_cache_dtype: str = "auto"
    engine_version: str | None = None
    offline: bool = False  # the LLM class, not `vllm serve`
    pp_layer_partition: str | None = None  # VLLM_PP_LAYER_PARTITION
    lora: lora.Lora | None = None  # --enable-lora: its slots are allocated at load, beside the weights
    cpu_offload_gib: Fraction = Fraction(0)  # --cpu-offload-gb: whole parameters moved to the host, a rank
    prefix_caching: bool | None = None  # None: the release's default (off for hybrids up to 0.27.1): a hybrid's mamba cache mode
    multimodal: multimodal.Settings | None = None  # --mm-encoder-tp-mode, --limit-mm-per-prompt
    flashinfer_sampler: bool = False  # FlashInfer installed: V1 samples with it from v0.8.0 to v0.11.x (sampler_warmup)


@dataclass(frozen=True)
class StagePool:
    """One pipeline stage's pool: its own weights, activation peak and graphs off the same request."""

    rank: int
    layers: int
    weights_bytes: int
    activation_bytes: int  # the sampler warms up on the last stage only
    cuda_graph_bytes: int
    available_kv_bytes: int
    kv_block_bytes: int
    kv_blocks: int  # available // block; vLLM keeps the smallest over the stages
    lora_bytes: int = 0


@dataclass(frozen=True)
class Prediction:
    total_bytes: int
    utilization: Fraction
    requested_bytes: int
    weights: Term
    activation: Term  # the profile run's peak: forward pass or sampler, whichever is larger, plus what stays
    forward: Term
    sampler: Term
    non_torch: Term
    cuda_graph: Term
    available_kv_bytes: int  # the pool one rank gets; negative where vLLM would print it so
    max_num_seqs: int
    max_num_batched_tokens: int
    batch_source: str
    kv_bytes_per_request: int
    kv_tokens: int | None
    max_concurrency: Fraction | None
    largest_max_model_len: int | None
    verdict: str  # "starts", "weights do not fit", "no KV memory", "max_model_len", "max_num_seqs"
    reason: str
    sampler_rows: int = 0
    vocab: int = 0
    residual_bytes: int = 0  # the forward pass's hidden states, alive while the sampler runs
    tp: int = 1
    stages: tuple[StagePool, ...] = ()  # under pipeline parallel, every stage; the figures above are the tightest's
    tightest_stage: int = 0
    lora: Term = Term("lora", 0, "no --enable-lora")
    moe_workspace_bytes: int = 0  # the fused-expert workspace kept through the sampler's warm-up (moe_workspace)


def check_start(s: Start) -> None:
    """The settings vLLM itself refuses before it loads anything, each as one line."""
    if s.utilization is not None and not 0 < s.utilization <= 1:
        raise InputError(f"--gpu-memory-utilization: found {float(s.utilization):g}, expected a fraction above 0 and at most 1")
    if not 0 < s.max_model_len <= MAX_MODEL_LEN:
        raise InputError(f"--max-model-len: found {s.max_model_len}, expected a length from 1 to {MAX_MODEL_LEN:,}")
    if s.max_num_seqs is not None and not 0 < s.max_num_seqs <= 1_000_000:
        raise InputError(f"--max-num-seqs: found {s.max_num_seqs}, expected a count from 1 to 1,000,000")
    if not 1 <= s.pp <= ranks.MAX_PP:
        raise InputError(f"--pipeline-parallel-size: found {s.pp}, expected a pipeline parallel size from 1 to {ranks.MAX_PP}")
    if s.max_num_batched_tokens is not None and not 0 < s.max_num_batched_tokens <= MAX_MODEL_LEN:
        raise InputError(f"--max-num-batched-tokens: found {s.max_num_batched_tokens}, expected a count from 1 to {MAX_MODEL_LEN:,}")


def predict(
    shape: Shape,
    card: Card,
    s: Start,
    topk: int = 0,
    weights_bytes: int | None = None,
    weights_source: str = "",
    stage_weights: tuple[int, ...] | None = None,
    stage_lora_slots: tuple[int, ...] | None = None,
) -> Prediction:
    """The pool one rank gets, each term with its source, and vLLM's verdict on the start.
    `weights_bytes` replaces the config's count (the checkpoint's size, or a log's loading line);
    under pipeline parallel `stage_weights` gives each stage's (calc/engine/ranks.py counts them without).
    `stage_lora_slots`, one LoRA slot's bytes on each stage's rank where that rank's weights are not
    TP's alone (expert or data parallel: the slots follow the rank's own experts, calc/engine/lora.py).

    Under pipeline parallel every stage sizes its pool the same way from its own weights, its own
    layers' graphs and, on the last stage alone, the sampler's warm-up (gpu_model_runner.py
    profile_run: `if get_pp_group().is_last_rank`, 0.33.0); vLLM then keeps the smallest count of
    blocks over the stages (calc/engine/ranks.py), and the stage that gives it is the one reported."""
    check_start(s)
    if card.unified:
        also = "; there --cpu-offload-gb frees nothing, the weights it moves stay in the same memory" if s.cpu_offload_gib else ""
        raise InputError(
            f"--gpu: {card.name} is a unified-memory box: vLLM sizes it from MemAvailable; use `gate` (or --total-memory for a discrete card){also}"
        )
    rel = release(s.engine_version)
    mm = s.multimodal or multimodal.Settings()
    shape, _ = multimodal.apply(shape, mm, rel)
    v = ranks.in_flight(kvlayout.version(s.engine_version), s.pp)
    util = s.utilization if s.utilization is not None else default_utilization(rel)
    requested = math.ceil(card.total_bytes * util)
    batch = default_batch(rel, card.total_bytes, card.name, s.max_model_len, s.offline)
    tokens = s.max_num_batched_tokens or batch.max_num_batched_tokens
    seqs = s.max_num_seqs or batch.max_num_seqs
    if weights_bytes is None:
        w = weights.per_rank(shape, s.tp)
        pad = mxfp4_padding(shape, s.tp, rel, card.vendor, card.name)
        wterm = Term("weights", w.model + pad.bytes, f"calc/engine/weights.py from the config ({w.source}); vLLM's 'Model loading took'"
                     + (f"; MXFP4 experts padded by {_gib(pad.bytes, up=True)}: {pad.source}" if pad.bytes else ""))  # fmt: skip
    else:
        wterm = Term("weights", weights_bytes, weights_source or "given")
    fwd = forward_peak(shape, s.tp, tokens, topk, rel)
    smp = sampler_warmup(shape.vocab, min(seqs, tokens), rel, card.vendor, s.flashinfer_sampler)
    # The forward pass's hidden states stay while the sampler runs (profile_run deletes them after),
    # and so does the fused-expert workspace the worker keeps (moe_workspace).
    residual = tokens * shape.hidden * shape.dtype_bytes
    ws = moe_workspace(shape, s.tp, tokens, topk, rel)
    peak = max(fwd.bytes, smp.bytes + residual + ws.bytes)
    enc = multimodal.encoder_profile(shape, mm, tokens, seqs, s.max_model_len, rel, s.tp)
    held = enc.held_bytes if enc else 0
    # The tower's own forward pass runs first, on the profile's dummy items, and frees all but its
    # outputs before the language model's (gpu_model_runner.py profile_run): the peak is the larger.
    enc_fwd = enc.forward_bytes if enc else 0
    enc_tower = shape.tower
    if enc and enc_tower and enc_fwd > peak + held:
        act = Term(
            "activation_peak",
            enc_fwd,
            f"the vision tower's forward over the profile's {enc.items} dummy items ({enc.patches:,} patches; calc/engine/multimodal.py "
            f"encoder_forward_peak, from the model code; {multimodal.attention_live(enc_tower, s.tp, shape.dtype_bytes, rel)[1]}), "
            "above the language model's pass and the sampler warm-up",
        )
    else:
        act = Term(
            "activation_peak",
            peak + held,
            "the larger of the forward pass and the sampler warm-up: "
            + (fwd.source if fwd.bytes >= smp.bytes + residual + ws.bytes else smp.source)
            + (f"; plus {_gib(ws.bytes, up=True)} of fused-expert workspace kept through it ({ws.source})" if ws.bytes and fwd.bytes < peak else "")
            + (f"; plus {_gib(held, up=True)} of encoder outputs the profile keeps ({enc.source})" if enc else ""),
        )
    nt = non_torch(s.tp, s.pp, rel, card.nvls)
    v2 = model_runner_v2(shape, rel)  # decided on the whole model, not a pipeline stage's layers
    cg = cuda_graph(shape, rel, seqs, tokens, s.enforce_eager, card.vendor, v2)
    if stage_lora_slots is not None and len(stage_lora_slots) != s.pp:
        raise InputError(f"stage LoRA slots: found {len(stage_lora_slots)}, expected one a stage of {s.pp}")
    lora_n = tuple(
        (slot * s.lora.max_loras if stage_lora_slots else lora.per_rank(shape, s.tp, s.lora, range(a, b), a == 0, b == len(shape.layers), rel).device_bytes)
        if s.lora
        else 0
        for (a, b), slot in zip(_bounds(len(shape.layers), s.pp, s.pp_layer_partition), stage_lora_slots or (0,) * s.pp, strict=True)
    )
    bounds = _bounds(len(shape.layers), s.pp, s.pp_layer_partition)
    moved_n = tuple(offload.moved(shape, s.tp, s.cpu_offload_gib, range(a, b)) if s.cpu_offload_gib else 0 for a, b in bounds)
    if s.pp == 1 and moved_n[0]:
        moved = min(moved_n[0], wterm.bytes)
        wterm = Term("weights", wterm.bytes - moved, f"{wterm.source}, less {_gib(moved)} --cpu-offload-gb moves to the host (offloader/uva.py)")
    lterm = _lora_term(s.lora, lora_n[0])
    pool = requested - wterm.bytes - lterm.bytes - act.bytes - nt.bytes - cg.bytes
    mode = kvlayout.mamba_cache_mode(shape, v, s.prefix_caching)  # a hybrid's state pages, by the release's rule
    settings = kvlayout.Settings(tp=s.tp, kv_cache_dtype=s.kv_cache_dtype, prefill_budget=tokens, mamba_cache_mode=mode)
    kv_shape, tightest, check_whole = shape, 0, False
    stage_pools: tuple[StagePool, ...] = ()
    try:
        req = kvlayout.request(shape, settings, s.max_model_len, v)
        if s.pp > 1:
            stage_list = ranks.stages(shape, settings, s.max_model_len, v, s.pp, s.pp_layer_partition)
            own = stage_weights or tuple(st.weights_bytes for st in stage_list)
            if len(own) != s.pp:
                raise InputError(f"stage weights: found {len(own)}, expected one a stage of {s.pp}")
            made: list[StagePool] = []
            for st, w_n in zip(stage_list, own, strict=True):
                w_n -= min(moved_n[st.rank], w_n)  # --cpu-offload-gb: each worker moves its own budget
                last = st.rank == s.pp - 1
                act_n = act.bytes if last else max(fwd.bytes + held, enc_fwd if st.rank == 0 else 0)  # the tower sits on the first stage
                cg_n = cuda_graph(ranks.stage_shape(shape, st.first_layer, st.end_layer, last), rel, seqs, tokens, s.enforce_eager, card.vendor, v2)
                avail = requested - w_n - lora_n[st.rank] - act_n - nt.bytes - cg_n.bytes
                blocks = avail // st.kv_block_bytes if st.kv_block_bytes and avail > 0 else (0 if avail <= 0 else 10**18)
                made.append(StagePool(st.rank, st.layers, w_n, act_n, cg_n.bytes, avail, st.kv_block_bytes, blocks, lora_n[st.rank]))
            stage_pools = tuple(made)
            tightest = min(stage_pools, key=lambda sp: (sp.kv_blocks, sp.available_kv_bytes)).rank
            st, sp = stage_list[tightest], stage_pools[tightest]
            last = tightest == s.pp - 1
            kv_shape = ranks.stage_shape(shape, st.first_layer, st.end_layer, last)
            wterm = Term("weights", sp.weights_bytes, f"stage {tightest} of {s.pp} (layers {st.first_layer}-{st.end_layer - 1}): calc/engine/ranks.py")
            if not last:
                act = Term("activation_peak", max(fwd.bytes + held, enc_fwd if tightest == 0 else 0),
                           "the forward pass alone: the sampler warms up on the last stage only; " + fwd.source)  # fmt: skip
            cg = cuda_graph(kv_shape, rel, seqs, tokens, s.enforce_eager, card.vendor, v2)
            lterm = _lora_term(s.lora, sp.lora_bytes)
            pool = sp.available_kv_bytes
            check_whole = ranks.whole_model_check(v)
            if not check_whole:
                req = kvlayout.request(kv_shape, settings, s.max_model_len, v)
    except ValueError as error:
        if isinstance(error, InputError):
            raise
        raise InputError(str(error)) from None
    kv_tokens = concurrency = largest = None
    heaviest = max((sp.weights_bytes + sp.lora_bytes for sp in stage_pools), default=wterm.bytes + lterm.bytes)
    if heaviest >= card.total_bytes:
        verdict, reason = (
            "weights do not fit",
            (
                f"CUDA out of memory while loading: {_gib(heaviest, up=True)} of weights a rank on a card of {_gib(card.total_bytes, down=True)} "
                "(vllm/v1/worker/gpu_model_runner.py load_model)"
            ),
        )
    elif pool <= 0:
        verdict, reason = (
            "no KV memory",
            (
                "vLLM refuses: 'No available memory for the cache blocks' (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory); "
                f"the terms take {_gib(requested - pool, up=True)} of the {_gib(requested, down=True)} requested"
            ),
        )
    else:
        p = kvlayout.pool(kv_shape, settings, s.max_model_len, pool, v, None if check_whole else req)
        kv_tokens, concurrency = p.tokens, p.concurrency
        largest = kvlayout.largest_max_model_len(shape if check_whole else kv_shape, settings, pool, v)
        if req.bytes_per_request > pool:
            verdict, reason = (
                "max_model_len",
                (
                    f"vLLM refuses: one request of {s.max_model_len:,} tokens needs {_gib(req.bytes_per_request, up=True)} of KV cache, more than the "
                    f"{_gib(pool, down=True)} available; the largest max_model_len that fits is {largest:,} (vllm/v1/core/kv_cache_utils.py)"
                ),
            )
        elif mamba_graphs(kv_shape, rel, s.enforce_eager) and seqs > p.blocks:
            verdict, reason = (
                "max_num_seqs",
                (
                    f"vLLM refuses: max_num_seqs ({seqs}) exceeds the {p.blocks:,} Mamba cache blocks the pool holds; each sequence of a full decode "
                    "CUDA graph needs one (vllm/config/compilation.py resolve_cudagraph_mode_and_sizes, from 0.20.0)"
                ),
            )
        else:
            verdict, reason = "starts", f"{fmt(p.tokens, 'count')} tokens, {fmt(p.concurrency, 'plain')} requests of {s.max_model_len:,} at once"
    return Prediction(card.total_bytes, util, requested, wterm, act, fwd, smp, nt, cg, pool, seqs, tokens,
                      batch.source if not (s.max_num_seqs and s.max_num_batched_tokens) else "given", req.bytes_per_request,
                      kv_tokens, concurrency, largest, verdict, reason, min(seqs, tokens), shape.vocab, residual, s.tp * s.pp,
                      stage_pools, tightest, lterm, ws.bytes)  # fmt: skip


def _bounds(layers: int, pp: int, override: str | None) -> list[tuple[int, int]]:
    counts = ranks.partition(layers, pp, override)
    return [(sum(counts[:n]), sum(counts[: n + 1])) for n in range(pp)]


def _lora_term(cfg: lora.Lora | None, n: int) -> Term:
    if cfg is None:
        return Term("lora", 0, "no --enable-lora")
    return Term("lora", n, f"vllm/lora/layers create_lora_weights, 0.33.0: {cfg.max_loras} slot(s) of rank {cfg.max_lora_rank}, allocated in load_model")


def _gib(n: int, up: bool = False, down: bool = False) -> str:
    """Bytes as a sentence prints them: a cost rounded up, what is available or saved down."""
    return fmt(n, "GiB", up=up, down=down)


def card_from_total(text: str) -> Card:
    """--total-memory: a card known only by its total, as torch reports it."""
    size = parse_size(text, "--total-memory")
    if size <= 0:
        raise InputError(f"--total-memory: found {text!r}, expected a size above zero such as '79.22 GiB'")
    if size < SMALLEST_CARD:
        raise InputError(
            f"--total-memory: found {text!r}, {fmt(size, 'B')}, expected a card's total of at least {fmt(SMALLEST_CARD, 'GiB', 0)}, "
            "such as '79.22 GiB' (a number without a unit is bytes)"
        )
    return Card("given", f"a card of {text}", size, text, "--total-memory")


__all__ = ["Card", "Prediction", "Start", "Term", "card_of_box", "find_box", "hfconfig", "predict"]


# --- the settings that fit ---------------------------------------------------------------------


@dataclass(frozen=True)
class Fix:
    change: str  # what changes, in words
    flags: str  # the vLLM flags that make it
    start: Start
    prediction: Prediction


def fixes(
    shape: Shape,
    card: Card,
    s: Start,
    topk: int = 0,
    weights_bytes: int | None = None,
    weights_source: str = "",
    stage_weights: tuple[int, ...] | None = None,
    stage_lora_slots: tuple[int, ...] | None = None,
) -> list[Fix]:
    """For a start vLLM refuses, the least changes that pass, each checked by `predict`, in this
    order: a shorter max_model_len (the longest that starts), fp8 KV, a higher utilization (the
    lowest that starts, at most 0.98), fewer sequences (the most that start), fewer LoRA slots
    (the most that start), a larger TP, and
    where no larger TP passes (heads that do not divide), more pipeline stages."""
    from dataclasses import replace

    def run(t: Start) -> Prediction:
        same = t.tp == s.tp and t.pp == s.pp
        return predict(
            shape, card, t, topk, weights_bytes if same else None, weights_source, stage_weights if same else None, stage_lora_slots if same else None
        )

    base = run(s)
    if base.verdict == "starts":
        return []
    out: list[Fix] = []
    if base.verdict == "max_model_len" and base.largest_max_model_len:
        t = replace(s, max_model_len=base.largest_max_model_len)
        p = run(t)
        if p.verdict == "starts":
            out.append(Fix(f"max_model_len {t.max_model_len:,}", f"--max-model-len {t.max_model_len}", t, p))
    if s.kv_cache_dtype in ("auto", "bfloat16", "bf16", "float16", "fp16") and shape.dtype_bytes == 2:
        t = replace(s, kv_cache_dtype="fp8")
        p = run(t)
        if p.verdict == "starts":
            out.append(Fix("fp8 KV cache", "--kv-cache-dtype fp8", t, p))
    util = s.utilization if s.utilization is not None else default_utilization(release(s.engine_version))
    for hundredths in range(math.floor(util * 100) + 1, 99):
        t = replace(s, utilization=Fraction(hundredths, 100))
        p = run(t)
        if p.verdict == "starts":
            out.append(Fix(f"gpu_memory_utilization {hundredths / 100:.2f}", f"--gpu-memory-utilization {hundredths / 100:.2f}", t, p))
            break
    seqs = base.max_num_seqs // 2
    while seqs >= 1:
        t = replace(s, max_num_seqs=seqs)
        p = run(t)
        if p.verdict == "starts":
            out.append(Fix(f"max_num_seqs {seqs}", f"--max-num-seqs {seqs}", t, p))
            break
        seqs //= 2
    if s.lora is not None and s.lora.max_loras > 1:  # fewer adapter slots: the most that start (the pool falls as they grow)
        cfg = s.lora

        def slots(n: int) -> Start:
            return replace(s, lora=replace(cfg, max_loras=n, max_cpu_loras=max(n, cfg.max_cpu_loras or n)))

        lo, hi = 0, cfg.max_loras - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if run(slots(mid)).verdict == "starts":
                lo = mid
            else:
                hi = mid - 1
        if lo:
            t = slots(lo)
            out.append(Fix(f"max_loras {lo}", f"--max-loras {lo}", t, run(t)))
    for tp in (2, 4, 8):
        if tp <= s.tp or shape.heads % tp or (MLA not in shape.layers and shape.kv_heads % tp and tp % shape.kv_heads):
            continue
        t = replace(s, tp=tp)
        try:
            p = run(t)
        except InputError:
            continue
        if p.verdict == "starts":
            out.append(Fix(f"tensor parallel {tp}", f"--tensor-parallel-size {tp}", t, p))
            break
    if not any(f.start.tp != s.tp for f in out):  # no larger TP passes: more pipeline stages, each of its own layers
        for pp in (2, 4, 8):
            if pp <= s.pp or pp > len(shape.layers):
                continue
            t = replace(s, pp=pp, pp_layer_partition=None)
            p = predict(shape, card, t, topk, None, weights_source)
            if p.verdict == "starts":
                out.append(Fix(f"pipeline parallel {pp}", f"--pipeline-parallel-size {pp}", t, p))
                break
    return out
