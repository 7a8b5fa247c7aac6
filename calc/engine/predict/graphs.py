"""The CUDA graph estimate vLLM takes off the pool from 0.20.0: the capture sizes, the two
measured growths, and which model runner and which models take it."""

from __future__ import annotations

from dataclasses import dataclass

from calc.engine import kvlayout
from calc.engine.hfconfig import CHUNKED, FULL, MLA, RECURRENT, SLIDING, Shape
from calc.engine.predict.cards import Card, is_hopper, is_sm100, is_sm120, runs_flashinfer
from calc.engine.predict.defaults import LATEST
from calc.engine.predict.terms import Term, forward_peak
from calc.units import fmt

CUDA_GRAPH_PIECEWISE_FIRST = 85_983_232  # the piecewise mode's first capture beside its largest graph's activations (fitted)
CUDA_GRAPH_FULL_FIRST = 4_194_304  # the full mode's first capture beside the attention backend's buffers (fitted)
FA3_SPLITS = 32  # vllm/config/attention.py flash_attn_max_num_splits_for_cuda_graph, v0.20.0 to v0.33.0
CUDA_GRAPH_PIECEWISE_PER_LAYER = 196_608  # each further piecewise graph's growth, a decoder layer with a dense MLP (fitted)
CUDA_GRAPH_FULL_PER_LAYER = 149_797  # each further full graph's growth, a decoder layer with a dense MLP (fitted)
CUDA_GRAPH_PIECEWISE_PER_MOE_LAYER = 262_144  # each further piecewise graph's growth, a decoder layer with routed experts (fitted)
CUDA_GRAPH_FULL_PER_MOE_LAYER = 262_144  # each further full graph's growth, a decoder layer with routed experts (fitted)
# Model Runner V2 from v0.29.0 (v2_cuda_graph_estimate), fitted on its starts' two printed figures
V2_PIECEWISE_FIRST = 35_805_781  # the largest piecewise graph's first capture beside its activations (fitted)
V2_PIECEWISE_PER_LAYER = 158_767  # each piecewise graph after the first, a decoder layer
V2_FULL_PER_LAYER = 58_103  # each full graph, a decoder layer
MIN_PER_GRAPH = 1 << 20  # vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory: 'at least 1 MiB per graph', v0.20.0 to v0.33.0
V2_MIN_PER_GRAPH = MIN_PER_GRAPH  # vllm/v1/worker/gpu/cudagraph_utils.py _MIN_PER_GRAPH_BYTES, v0.29.0 to v0.33.0


GPT_OSS_CAPTURE = 1024  # models/config.py GptOssForCausalLMConfig: max_cudagraph_capture_size 1024 (v0.13.0 to v0.33.0)
CEILING = 512  # the largest capture size vLLM sets by default
SM100_CEILING = 1024  # on data-center Blackwell (compute capability 10.x) from SM100_CEILING_FROM
SM100_CEILING_FROM = (0, 28)  # vllm/config/vllm.py _set_cudagraph_sizes: is_device_capability_family(100), v0.28.0
APPEND_BATCH_FROM = (0, 21)  # _set_cudagraph_sizes appends max_num_batched_tokens when it fits under the largest, v0.21.0
DECODE_GRID_FROM = (0, 29)  # with drafts, the request-count grid times the query length is appended, v0.29.0
APPEND_SEQS_FROM = (0, 31)  # without drafts, max_num_seqs is appended when it fits under the largest, v0.31.0

FLASHINFER_WORKSPACE = 394 * 1024 * 1024  # vllm/envs.py VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE, v0.20.0 to v0.33.0
FLASHINFER_WORKSPACE_BYTES_PER_ELEM = 16  # v1/attention/backends/flashinfer.py FLASHINFER_PREFILL_WORKSPACE_BYTES_PER_ELEM, v0.26.0
FLASHINFER_WORKSPACE_SCALED_FROM = (0, 26)  # the builder's workspace sized to the batch from v0.26.0 (v0.25.0 keeps the default)
SM120_XQA_FROM = (0, 28)  # utils/flashinfer.py supports_trtllm_attention: XQA decode on compute capability 12.x from v0.28.0


@dataclass(frozen=True)
class Capture:
    """What decides the graphs besides the batch: the tokens drafted a step, the card, and whether
    the attention backend can capture a full graph of a speculative decode step."""

    speculative_tokens: int = 0
    sm100: bool = False  # data-center Blackwell: the larger ceiling (from v0.28.0), TRT-LLM's decode kernels
    flashinfer: bool = False  # the attention backend is FlashInfer (runs_flashinfer, a model without MLA)
    sm120: bool = False  # Blackwell GeForce and RTX PRO: FlashInfer decodes with XQA from v0.28.0
    fa3: bool = False  # FlashAttention 3 (Hopper, FlashAttention's backend or its MLA one): split buffers in full graphs
    max_size: int | None = None  # --max-cudagraph-capture-size: the grid up to it, no decode sizes appended
    sizes: tuple[int, ...] | None = None  # --cudagraph-capture-sizes: these, none above max_num_batched_tokens
    mode: str = "FULL_AND_PIECEWISE"  # cudagraph_mode (-O, --compilation-config): NONE, PIECEWISE, FULL_DECODE_ONLY or the default

    @property
    def full_spec_decode(self) -> bool:
        """Whether the backend captures a speculative decode step whole: all but FlashInfer without
        TRT-LLM's decode kernels (capture_of)."""
        return not self.flashinfer or self.sm100


def capture_grid(largest: int) -> list[int]:
    """1, 2, 4, then 8 to 248 by 8 and 256 up by 16, none above `largest`."""
    sizes = [s for s in (1, 2, 4) if s <= largest]
    sizes += list(range(8, min(largest + 1, 256), 8))
    sizes += list(range(256, largest + 1, 16))
    return sizes


def capture_sizes(max_num_seqs: int, max_num_batched_tokens: int, architecture: str = "", rel: tuple[int, int] = (0, 20),
                  capture: Capture = Capture()) -> list[int]:  # fmt: skip
    """vllm/config/vllm.py, _set_cudagraph_sizes (v0.20.0 to v0.33.0): the grid capture_grid gives up to
    min(2 x max_num_seqs x (1 + the drafted tokens), 512, max_num_batched_tokens), 1,024 in place of
    512 on data-center Blackwell from v0.28.0; gpt-oss sets the largest to 1,024
    (GptOssForCausalLMConfig.verify_and_update_config, vllm/model_executor/models/config.py), still
    no more than max_num_batched_tokens (log 111: 'PIECEWISE=83 (largest=1024)'). From v0.21.0
    max_num_batched_tokens is appended when it is no larger; with drafts from v0.29.0 each count of
    the request grid (up to max_num_seqs, itself included) times the query length, where it fits
    under the ceiling; without drafts from v0.31.0 max_num_seqs itself. Sizes given
    (--cudagraph-capture-sizes) are taken as they are, none above max_num_batched_tokens; a largest
    given (--max-cudagraph-capture-size) replaces the default's and appends no decode sizes (read in
    v0.24.0 and v0.33.0)."""
    if capture.sizes is not None:
        return sorted({n for n in capture.sizes if n <= max_num_batched_tokens})
    query = 1 + capture.speculative_tokens
    ceiling = SM100_CEILING if capture.sm100 and rel >= SM100_CEILING_FROM else CEILING
    decode: list[int] = []
    if capture.max_size is not None:
        cap = capture.max_size  # the user's: the default sizing, gpt-oss's among it, is skipped
    elif architecture == "GptOssForCausalLM":
        cap = GPT_OSS_CAPTURE  # set in the compilation config: the default sizing is skipped
    else:
        cap = min(max_num_seqs * query * 2, ceiling)
        if query > 1 and rel >= DECODE_GRID_FROM:
            most = min(max_num_seqs, ceiling)
            decode = [n * query for n in sorted(set(capture_grid(most) + [most])) if n * query <= cap]
        elif query == 1 and rel >= APPEND_SEQS_FROM and max_num_seqs <= cap:
            decode = [max_num_seqs]
    largest = min(cap, max_num_batched_tokens)
    sizes = capture_grid(largest)
    if rel >= APPEND_BATCH_FROM and max_num_batched_tokens <= largest:
        sizes.append(max_num_batched_tokens)
    sizes += [d for d in decode if d <= max_num_batched_tokens]
    return sorted(set(sizes))


def graph_counts(max_num_seqs: int, max_num_batched_tokens: int, architecture: str = "", rel: tuple[int, int] = (0, 20),
                 capture: Capture = Capture(), runner_v2: bool = False) -> tuple[int, int]:  # fmt: skip
    """The graphs vLLM captures under FULL_AND_PIECEWISE, the default cudagraph_mode (vllm/config/
    compilation.py; gpu_model_runner.py profile_cudagraph_memory logs them as 'Profiling CUDA graph
    memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)'): a piecewise graph for every
    capture size, and a full decode graph for every size from the query length (1 + the drafted
    tokens) up to max_num_seqs x the query length (vllm/v1/cudagraph_dispatcher.py
    initialize_cudagraph_keys). With drafts, a backend that cannot capture a speculative decode step
    whole drops the full graphs ('setting cudagraph_mode=PIECEWISE', resolve_cudagraph_mode_and_sizes);
    where the full graphs stay, the V1 runner rounds every size up to a multiple of the query length,
    none above the largest (adjust_cudagraph_sizes_for_spec_decode; Model Runner V2 sizes its own
    from v0.25.0)."""
    piecewise, full = graph_sizes(max_num_seqs, max_num_batched_tokens, architecture, rel, capture, runner_v2)
    return len(piecewise), len(full)


def graph_sizes(max_num_seqs: int, max_num_batched_tokens: int, architecture: str = "", rel: tuple[int, int] = (0, 20),
                capture: Capture = Capture(), runner_v2: bool = False) -> tuple[list[int], list[int]]:  # fmt: skip
    """The token counts of the piecewise graphs and of the full ones, as graph_counts counts them; a
    cudagraph_mode given keeps the piecewise ones alone (PIECEWISE), the full decode ones alone
    (FULL_DECODE_ONLY) or none (NONE) (vllm/config/compilation.py CUDAGraphMode, v0.12.0 to v0.33.0)."""
    if capture.mode == "NONE":
        return [], []
    query = 1 + capture.speculative_tokens
    sizes = capture_sizes(max_num_seqs, max_num_batched_tokens, architecture, rel, capture)
    if capture.mode == "PIECEWISE" or (query > 1 and not capture.full_spec_decode):
        return sizes, []
    if query > 1 and sizes and not (runner_v2 and rel >= (0, 25)):
        top = sizes[-1]
        sizes = sorted({-(-s // query) * query for s in sizes if -(-s // query) * query <= top}) or ([query] if query <= top else [])
    full = [s for s in sizes if query <= s <= query * max_num_seqs]
    return ([] if capture.mode == "FULL_DECODE_ONLY" else sizes), full


def further_graph(mode: str, layers: int, moe_layers: int = 0) -> int:
    """A further graph's growth in the shared pool (cuda_graph_estimate), at least 1 MiB: the bytes a
    decoder layer of the mode, a layer with routed experts at its own rate."""
    dense, moe = (
        (CUDA_GRAPH_PIECEWISE_PER_LAYER, CUDA_GRAPH_PIECEWISE_PER_MOE_LAYER)
        if mode == "PIECEWISE"
        else (CUDA_GRAPH_FULL_PER_LAYER, CUDA_GRAPH_FULL_PER_MOE_LAYER)
    )
    return max(dense * (layers - moe_layers) + moe * moe_layers, MIN_PER_GRAPH)


def cuda_graph_estimate(piecewise: int, full: int, layers: int, full_buffers: int = 0, activations: int = 0, moe_layers: int = 0) -> int:
    """vLLM's own estimate (vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory, the same
    formula in every release from v0.20.0 to v0.33.0; read in each): for each mode, PIECEWISE first
    and then FULL (vllm/v1/cudagraph_dispatcher.py get_capture_descs, largest first), it captures
    the two largest graphs into one throwaway pool, takes the first capture's fall of free memory
    (torch.cuda.mem_get_info; torch.accelerator.get_memory_info from v0.25.0) as `first_capture`
    and the second's, at least 1 MiB ('at least 1 MiB per graph for driver overhead',
    MIN_PER_GRAPH), as `per_graph`, and estimates
        max over modes of first_capture + sum over modes of per_graph x (graphs of the mode - 1)
    (the modes share one pool and never replay at once, so their first captures overlap). From
    v0.23.0 a multimodal model's encoder graphs, opt-in, add their own measured capture; none here.
    The two measurements are the driver's at run time, so the parts are fitted:
    - the piecewise mode's first capture reserves in the fresh pool what its largest graph's
      forward holds at once, `activations` (piecewise_activations: terms.forward_peak at that
      graph's tokens), beside a part of its own, CUDA_GRAPH_PIECEWISE_FIRST (the H100 logs of
      v0.19.0 print 84 to 160 MiB for 7B to 8B models at 512 tokens, 212 for Gemma 2 27B and
      Mistral Small 24B, whose MLPs are two to three times as wide);
    - the full mode's first capture, its largest graph's activations already in the pool the
      piecewise graphs left, holds what its warm-ups allocate for the attention backend,
      `full_buffers` (full_graph_buffers: FlashAttention 3's split buffers, FlashInfer's
      workspace), beside the graph's own, CUDA_GRAPH_FULL_FIRST; with no piecewise graph
      (FULL_DECODE_ONLY) its activations too;
    - the second capture grows by the graph's own nodes, not by its buffers: a captured graph keeps
      no tensor in the shared pool (CUDAGraphWrapper holds each piece's output by a weak reference,
      the last piece's already inside the capture: compilation/cuda_graph.py and backends.py
      weak_ref_output, v0.20.0 to v0.33.0), so a smaller graph reuses the blocks the largest freed.
      A piecewise capture is one CUDA graph a piece, and the compiled model is split at every
      attention layer (vllm/config/compilation.py, splitting_ops = _attention_ops;
      compilation/piecewise_backend.py), a full graph holds every layer's kernels; so each further
      graph grows with the decoder layers, not with the tensor-parallel size (the H100 logs of
      v0.19.0 print 18 to 20 MiB for 80 layers at TP 2 and 4, 4 to 6 MiB for 28 or 32 at TP 1, 2
      and 4), and by more for a layer with routed experts (`moe_layers`), whose kernels outnumber a
      dense MLP's: the router's top-k, moe_align_block_size, two grouped GEMMs, the activation and
      moe_sum (model_executor/layers/fused_moe/fused_moe.py fused_experts_impl, v0.20.0); the fitted
      MoE logs print 6 to 10 MiB for 24 to 32 layers. The growth is one sample that the logs print in
      steps of 2 MiB, and where a log also prints the real capture ('CUDA graph pool memory: 0.42
      GiB (actual), 0.34 GiB (estimated)', v0.20.0 on) the two differ by a fifth to two fifths;
      what sets a card's or a release's growth apart (2 MiB a graph for Qwen3-8B on an RTX PRO 6000
      Blackwell, 8 and 4 on an H100) is not among the inputs.
    The fixed parts and the bytes a layer of each mode are the medians over the fitted logs that
    print the two measurements (the DEBUG line 'Estimated FULL CUDA graph memory: 260.00 MiB
    first-capture + (51-1) x 6.00 MiB per-graph'): a dense layer's over the dense models' logs, a
    layer with routed experts' over the MoE models' logs, less their dense layers at the dense
    median (poolaccuracy.fit)."""
    if not piecewise and not full:
        return 0
    further = further_graph("PIECEWISE", layers, moe_layers) * max(piecewise - 1, 0)
    further += further_graph("FULL", layers, moe_layers) * max(full - 1, 0)
    return first_capture(piecewise, full, full_buffers, activations) + further


def v2_cuda_graph_estimate(piecewise: int, full: int, layers: int, full_buffers: int = 0, activations: int = 0) -> int:
    """Model Runner V2's own estimate (vllm/v1/worker/gpu/cudagraph_utils.py profile_cudagraph_memory,
    the same in v0.29.0 to v0.33.0; read in each): it captures every piecewise graph and the two
    largest full ones (_FULL_GRAPH_PROFILING_SAMPLES) into a throwaway pool, measures the whole capture
    by free memory ('Graph capturing finished in 10 secs, took 0.28 GiB', its first such line), then
    swaps the two full samples for their extrapolation, first + (full graphs - 1) x max(second,
    1 MiB) (_extrapolate_full_graph_memory). So the piecewise graphs count as captured, not
    extrapolated from the second largest as the V1 runner's do: the largest's first capture,
    V2_PIECEWISE_FIRST beside its `activations` (piecewise_activations), and each further one's
    growth a decoder layer, V2_PIECEWISE_PER_LAYER; a full graph, captured after them into the same
    pool, grows by its nodes alone, V2_FULL_PER_LAYER a layer, its first beside the attention
    backend's buffers (full_graph_buffers). The three are medians over the fitted V2 starts that
    print the measured capture and the estimate (the 'equivalent to --gpu-memory-utilization' line):
    those with the default list of 51 piecewise graphs give the two growths, those whose list stops
    at 16 tokens, whose capture is mostly its first, give the first capture's own part, 33 MiB where
    the V1 runner's measures 82 (poolaccuracy.v2_graph_growths)."""
    if not piecewise and not full:
        return 0
    own = V2_PIECEWISE_FIRST + activations + V2_PIECEWISE_PER_LAYER * layers * (piecewise - 1) if piecewise else 0
    per_full = V2_FULL_PER_LAYER * layers
    if not full:
        return own
    first_full = (per_full if piecewise else CUDA_GRAPH_FULL_FIRST + activations) + full_buffers
    return own + first_full + (full - 1) * max(per_full, V2_MIN_PER_GRAPH)


def first_capture(piecewise: int, full: int, full_buffers: int = 0, activations: int = 0) -> int:
    """The larger of the modes' first captures (cuda_graph_estimate): the piecewise mode's own and
    its largest graph's activations, or the full mode's own and the attention backend's buffers
    (and the activations where no piecewise graph came first)."""
    pw = CUDA_GRAPH_PIECEWISE_FIRST + activations if piecewise else 0
    fl = CUDA_GRAPH_FULL_FIRST + full_buffers + (0 if piecewise else activations) if full else 0
    return max(pw, fl)


def piecewise_activations(shape: Shape, tp: int, tokens: int, topk: int = 0, rel: tuple[int, int] = LATEST, eager: bool = False) -> int:
    """What the first capture of the largest graph, `tokens` tokens, reserves in the fresh graph pool
    for its forward: the tensors a layer holds at once, as the profile's forward pass holds them
    (terms.forward_peak at those tokens): the residual stream and the widest layer's transients.
    The pool keeps what a capture allocated, so this stays in the first capture's measurement; the
    smaller graphs after it reuse it. `eager`: the model is not compiled (a compilation mode of 0,
    whose full graphs vLLM keeps from v0.31.0, vllm/config/vllm.py _normalize_piecewise_cudagraph_mode),
    so the captured forward holds what Python names (terms.eager_moments)."""
    return forward_peak(shape, tp, tokens, topk, rel, eager=eager).bytes if tokens else 0


def fa3_split_buffers(tokens: int, heads: int, head_dim: int) -> int:
    """FlashAttention 3's split-KV buffers for a full graph of `tokens`: vLLM passes num_splits =
    flash_attn_max_num_splits_for_cuda_graph (32) to every call a full graph captures, 'so that large
    enough intermediate buffers are pre-allocated during capture' (v1/attention/backends/flash_attn.py,
    FlashAttentionMetadataBuilder, v0.20.0 to v0.33.0), and FA3 holds an fp32 output accumulator of
    [splits, tokens, heads, head_dim] and a log-sum-exp one of [splits, heads, tokens]: 32 x tokens x
    the rank's query heads x (head_dim + 1) x 4 bytes. The first full capture, the largest, holds
    them: 258 MiB for Llama 3.1 8B at 512 tokens, where the H100 logs of v0.19.0 print 260 MiB, and
    half at TP 2 (132), a quarter at TP 4 (70)."""
    return FA3_SPLITS * tokens * heads * (head_dim + 1) * 4


def flashinfer_workspace(max_num_batched_tokens: int, heads: int, head_dim: int, rel: tuple[int, int]) -> int:
    """One metadata builder's FlashInfer workspace: VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE, 394 MiB by
    default (vllm/envs.py), and from v0.26.0 no less than max_num_batched_tokens x the rank's query
    heads x head_dim x 16 bytes (v1/attention/backends/flashinfer.py _get_workspace_buffer)."""
    scaled = max_num_batched_tokens * heads * head_dim * FLASHINFER_WORKSPACE_BYTES_PER_ELEM if rel >= FLASHINFER_WORKSPACE_SCALED_FROM else 0
    return max(FLASHINFER_WORKSPACE, scaled)


def attention_groups(shape: Shape) -> int:
    """The KV cache groups that hold attention layers, each with its own metadata builder and so its
    own FlashInfer workspace (the V1 runner shares none: vllm/v1/worker/gpu_model_runner.py, v0.26.0),
    as kvlayout.layout groups the layers (vllm/v1/core/kv_cache_utils.py get_kv_cache_groups): one
    for Qwen3.5 and Qwen3-Next (a full-attention layer in four), none for MLA. A layout vLLM refuses
    is refused where the pool is sized; one group stands in here."""
    try:
        lay = kvlayout.layout(kvlayout.layer_specs(shape, kvlayout.Settings()))
    except ValueError:
        return 1
    return sum(1 for g in lay.groups if g.spec.kind in (FULL, SLIDING, CHUNKED))


def flashinfer_native_decode(capture: Capture, rel: tuple[int, int]) -> bool:
    """Whether FlashInfer decodes with its own wrapper, the one that allocates the builder's workspace:
    not where TRT-LLM's kernels decode (FlashInferMetadataBuilder use_trtllm_decode_attention, from
    can_use_trtllm_attention in vllm/utils/flashinfer.py): TRT-LLM-gen on data-center Blackwell, XQA
    on Hopper (v0.26.0 to v0.33.0; FlashAttention runs there, runs_flashinfer) and on compute capability
    12.x from v0.28.0. The rule assumes the kernels' download site is reachable (has_nvidia_artifactory)."""
    return capture.flashinfer and not capture.sm100 and not (capture.sm120 and rel >= SM120_XQA_FROM)


def full_graph_buffers(shape: Shape, capture: Capture, tp: int, largest_full: int, max_num_batched_tokens: int, rel: tuple[int, int],
                       runner_v2: bool = False) -> tuple[int, str]:  # fmt: skip
    """What the attention backend allocates in the warm-ups of the first full capture, with what says
    so: FlashAttention 3's split buffers for the largest full graph (fa3_split_buffers; MLA's output is
    kv_lora_rank wide), none for a model with attention sinks (gpt-oss-20b on H100s, log 111, prints an
    8 MiB first full capture); else, where FlashInfer decodes with its own wrapper, each attention
    group's builder's workspace (flashinfer_workspace), which that warm-up is the first to build
    metadata for on the V1 runner (Model Runner V2 allocates it with its builders, before it
    measures: vllm/v1/worker/gpu/attn_utils.py init_attn_backend, v0.29.0). FlashAttention 2 and
    Triton take no more than the graph's own. A model without attention (Mamba, Mamba-2) runs no
    attention backend, so none of these."""
    if shape.attention_free:
        return 0, ""
    heads = max(shape.heads // tp, 1)
    if capture.fa3 and not shape.sinks:
        width = shape.kv_lora_rank if MLA in shape.layers and shape.kv_lora_rank else shape.head_dim
        b = fa3_split_buffers(largest_full, heads, width)
        return (
            b,
            f"FlashAttention 3's split buffers, {FA3_SPLITS} x {largest_full:,} tokens x {heads} heads x ({width} + 1) x 4 B (v1/attention/backends/flash_attn.py)",
        )
    if flashinfer_native_decode(capture, rel) and not runner_v2:
        groups = attention_groups(shape)
        b = groups * flashinfer_workspace(max_num_batched_tokens, heads, shape.head_dim, rel)
        return (
            b,
            f"FlashInfer's workspace, {groups} x {fmt(b // max(groups, 1), 'MiB', 0, up=True)} (v1/attention/backends/flashinfer.py _get_workspace_buffer)",
        )
    return 0, ""


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


def capture_of(shape: Shape, card: Card, kv_cache_dtype: str, speculative_tokens: int, rel: tuple[int, int] = LATEST) -> Capture:
    """The graphs' inputs from the card and the settings. FlashInfer captures a speculative decode step
    whole only with TRT-LLM's decode kernels, on data-center Blackwell (v1/attention/backends/
    flashinfer.py get_cudagraph_support: UNIFORM_BATCH there, UNIFORM_SINGLE_TOKEN_DECODE elsewhere,
    v0.20.0 to v0.33.0), so on another card that runs it (runs_flashinfer) drafts leave the piecewise
    graphs alone; FlashAttention and the gated-delta and Mamba backends capture it (UNIFORM_BATCH).
    An MLA model runs an MLA backend, which this rule leaves as captured whole; so does a card
    known by its total alone."""
    sm100 = is_sm100(card.name)
    if shape.full_kv is not None and shape.full_kv[1] != shape.head_dim and (rel >= (0, 24) or max(shape.full_kv[1], shape.head_dim) > 256):
        # Gemma 4's heads of two sizes (vllm/model_executor/models/config.py Gemma4Config.verify_and_update_config):
        # up to 0.23.x where a head is wider than 256, TRITON_ATTN for every layer; from 0.24.0 wherever the sizes differ,
        # FA4 where it is supported, else TRITON_ATTN; neither is
        # FlashInfer nor FA3, but from 0.32.0 an fp8 KV cache on Hopper keeps FA3 on the layers it takes
        return Capture(speculative_tokens, sm100, False, is_sm120(card.name), rel >= (0, 32) and is_hopper(card.name) and kv_cache_dtype.startswith("fp8"))
    runs = runs_flashinfer(card, kv_cache_dtype, rel)
    flashinfer = bool(runs) and MLA not in shape.layers
    fa3 = runs is False and is_hopper(card.name)  # FlashAttention first on Hopper, FA3 there (fa_utils.py get_flash_attn_version)
    return Capture(speculative_tokens, sm100, flashinfer, is_sm120(card.name), fa3)


def mamba_graphs(shape: Shape, rel: tuple[int, int], enforce_eager: bool, capture: Capture = Capture()) -> bool:
    """Whether vLLM holds max_num_seqs to the pool's blocks: from v0.20.0 a model with mamba or
    gated-delta layers captures full decode CUDA graphs (FULL_AND_PIECEWISE, the default mode), and
    each decode sequence of one needs its own Mamba cache block, so resolve_cudagraph_mode_and_sizes
    (vllm/config/compilation.py, 0.20.0 to 0.33.0) refuses a max_num_seqs above kv_cache_config.num_blocks.
    None under --enforce-eager (no graphs), nor where drafts leave piecewise graphs alone (the check
    asks cudagraph_mode.has_full_cudagraphs())."""
    full = (capture.speculative_tokens == 0 or capture.full_spec_decode) and capture.mode not in ("NONE", "PIECEWISE")
    return rel >= (0, 20) and not enforce_eager and full and bool(RECURRENT & set(shape.layers))


# ROCm keeps these on the V1 runner from the release given (vllm/config/vllm.py ROCM_DEFAULT_MRV1_ARCHITECTURES,
# v0.29.0 to v0.31.0; gone in v0.32.0)
ROCM_V1_ARCHITECTURES = {"DeepseekV32ForCausalLM": (0, 29), "DeepseekV4ForCausalLM": (0, 29), "GlmMoeDsaForCausalLM": (0, 30)}
V2_EVERY_MODEL_FROM = (0, 29)  # use_v2_model_runner defaults to V2 for every model, v0.29.0 to v0.33.0


def model_runner_v2(shape: Shape, rel: tuple[int, int], vendor: str = "nvidia") -> bool:
    """Whether the release runs this model on Model Runner V2 when VLLM_USE_V2_MODEL_RUNNER is unset
    (vllm/config/vllm.py, VllmConfig.use_v2_model_runner and _is_default_v2_model_runner_model):
    v0.22.0 and v0.23.x a listed architecture, neither MoE nor quantized; v0.24.x a listed
    architecture; v0.25.x and v0.26.x any model that is neither hybrid nor MoE, and a listed MoE;
    v0.27.x and v0.28.x a listed hybrid too; from v0.29.0 every model (the list and
    _is_default_v2_model_runner_model are gone), but on ROCm up to v0.31.x ROCM_V1_ARCHITECTURES.
    Before v0.22.0 the V1 runner alone. The features V2 leaves to V1 (ngram drafts up to v0.30.x,
    suffix drafts, prefill context parallel, sequence parallel, stock torch.compile, custom logits
    processors, prompt embeddings; in v0.22.0 a reasoning parser too) are not among the inputs here."""
    if rel < (0, 22):
        return False
    if rel >= V2_EVERY_MODEL_FROM:
        return not (vendor == "amd" and ROCM_V1_ARCHITECTURES.get(shape.architecture, (1, 0)) <= rel < (0, 32))
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
               runner_v2: bool = False, capture: Capture = Capture(), tp: int = 1, topk: int = 0, eager: bool = False) -> Term:  # fmt: skip
    """The CUDA graph estimate taken off the pool (gpu_worker.py determine_available_memory, from
    v0.20.0, where vllm/envs.py turns VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS on): vLLM's own
    formula, cuda_graph_estimate, over the graphs graph_counts gives and the shape's decoder layers
    (a pipeline stage's own). Zero before v0.20.0 (the estimate is off by default there: v0.19.0
    prints it and takes nothing off), under --enforce-eager and on ROCm, and on Model Runner V2
    before v0.29.0 (`runner_v2`, model_runner_v2 of the whole model): its profile_cudagraph_memory
    returns 0 (vllm/v1/worker/gpu/model_runner.py, v0.22.0 to v0.28.0; https://github.com/vllm-project/vllm/issues/49224), so the
    worker takes nothing off for the graphs it captures after sizing the pool. From v0.29.0 V2
    measures its own estimate (vllm/v1/worker/gpu/cudagraph_utils.py), v2_cuda_graph_estimate. The
    full mode's first capture holds the attention backend's buffers for the largest full graph
    (full_graph_buffers), the piecewise mode's its largest graph's activations (piecewise_activations,
    `topk` the experts a token is routed to; `eager`, nothing compiled, as an eager forward holds them)."""
    if enforce_eager:
        return Term("cuda_graph", 0, "--enforce-eager: no graphs are captured")
    if capture.mode == "NONE":
        return Term("cuda_graph", 0, "cudagraph_mode NONE (-O0 or --compilation-config): no graphs are captured")
    if rel < (0, 20):
        return Term("cuda_graph", 0, "before v0.20.0 the estimate is off by default (vllm/envs.py, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)")
    if vendor == "amd":
        return Term("cuda_graph", 0, "vllm/v1/worker/gpu_worker.py, v0.20.0: no estimate on ROCm")
    if runner_v2 and rel < V2_ESTIMATE_FROM:
        return Term("cuda_graph", 0, "Model Runner V2, this release's default for the model (vllm/config/vllm.py use_v2_model_runner): its "
                    "profile_cudagraph_memory returns 0 (vllm/v1/worker/gpu/model_runner.py, v0.22.0 to v0.28.0), so nothing is taken off")  # fmt: skip
    pw_sizes, full_sizes = graph_sizes(max_num_seqs, max_num_batched_tokens, shape.architecture, rel, capture, runner_v2)
    piecewise, full = len(pw_sizes), len(full_sizes)
    layers = len(shape.layers)
    moe_layers = sum(1 for m in shape.mlps if m.experts)
    drafts = capture.speculative_tokens
    why = (
        (
            f" ({drafts} drafted tokens: "
            + (
                ("Model Runner V2's own sizes" if runner_v2 and rel >= (0, 25) else "sizes in multiples of " + str(drafts + 1))
                if full
                else "the backend captures no full graph of a speculative step"
            )
            + ")"
        )
        if drafts
        else ""
    )
    buffers, said = full_graph_buffers(shape, capture, tp, full_sizes[-1], max_num_batched_tokens, rel, runner_v2) if full else (0, "")
    held = f", with {fmt(buffers, 'MiB', 0, up=True)} of {said}" if buffers else ""
    largest = (pw_sizes or full_sizes)[-1] if pw_sizes or full_sizes else 0
    acts = piecewise_activations(shape, tp, largest, topk, rel, eager)
    mine = f" (its activations at {largest:,} token{'' if largest == 1 else 's'}, {fmt(acts, 'MiB', 0, up=True)}, in it)" if acts else ""
    if runner_v2:
        own = (
            f"{fmt(V2_PIECEWISE_FIRST + acts, 'MiB', 0, up=True)} for the largest piecewise graph{mine} + a further one "
            f"{fmt(V2_PIECEWISE_PER_LAYER * layers, 'MiB', 1, up=True)}, "
            if piecewise
            else f"{fmt(CUDA_GRAPH_FULL_FIRST + acts, 'MiB', 0, up=True)} for the first full graph{mine} + "
        )
        return Term("cuda_graph", v2_cuda_graph_estimate(piecewise, full, layers, buffers, acts),
                    "vllm/v1/worker/gpu/cudagraph_utils.py profile_cudagraph_memory (Model Runner V2, v0.29.0 to v0.33.0: every piecewise graph "
                    f"captured and measured, the full ones extrapolated from the two largest): PIECEWISE={piecewise}, FULL={full}{why}; "
                    f"{own}a full graph {fmt(max(V2_FULL_PER_LAYER * layers, V2_MIN_PER_GRAPH), 'MiB', 1, up=True)}"
                    f"{held}, over {layers} layers (fitted)")  # fmt: skip
    first = first_capture(piecewise, full, buffers, acts)
    pw_first = CUDA_GRAPH_PIECEWISE_FIRST + acts if piecewise else 0
    which = mine if piecewise and first == pw_first else ("" if piecewise else mine) + held  # no piecewise graph: the full one's activations
    return Term("cuda_graph", cuda_graph_estimate(piecewise, full, layers, buffers, acts, moe_layers),
                f"vllm/v1/worker/gpu_model_runner.py profile_cudagraph_memory, v0.20.0 to v0.33.0: PIECEWISE={piecewise}, FULL={full}{why}; "
                f"{fmt(first, 'MiB', 0, up=True)} first capture{which} + a further graph "
                f"{fmt(further_graph('PIECEWISE', layers, moe_layers), 'MiB', 1, up=True)} piecewise, "
                f"{fmt(further_graph('FULL', layers, moe_layers), 'MiB', 1, up=True)} full over {layers} layers"
                f"{f' ({moe_layers} with routed experts)' if moe_layers else ''} (fitted)")  # fmt: skip
