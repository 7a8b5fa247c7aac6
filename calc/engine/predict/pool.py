"""The pool one rank gets on a card: the terms taken off the requested share, each stage's under
pipeline parallel, and vLLM's verdict on the start."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

from calc.engine import kvlayout, lora, multimodal, offload, ranks, weights
from calc.engine.hfconfig import MM_PREFIX_FLOOR_FROM, Shape, ropes_as_loaded
from calc.engine.predict import extensible, startup
from calc.engine.predict.cards import Card, flashinfer_runs_on, fp8_refused, is_turing
from calc.engine.predict.defaults import (
    CHUNKED_OFF_FROM,
    MAX_MODEL_LEN,
    Batch,
    default_batch,
    default_utilization,
    extensible_kv_cache,
    patch_release,
    release,
)
from calc.engine.predict.graphs import Capture, capture_of, cuda_graph, graph_counts, graph_sizes, mamba_graphs, model_runner_v2, piecewise_activations
from calc.engine.predict.terms import (
    Term,
    _gib,
    compile_block,
    forward_peak,
    marlin_experts,
    moe_workspace,
    mxfp4_padding,
    nccl_cumem,
    non_torch,
    pinned_block,
    plain_awq,
    sampler_warmup,
    v2_sampler_state,
)
from calc.units import InputError, fmt


def awq_checkpoint(shape: Shape) -> bool:
    """Whether the config's quantization_config is AWQ's."""
    return str((shape.quantization or {}).get("quant_method", "")).lower() == "awq"


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
    flashinfer_sampler: bool | None = (
        None  # whether FlashInfer's sampler runs (installed up to v0.11.x; off by VLLM_USE_FLASHINFER_SAMPLER=0); None: the release's default
    )
    marlin_experts: str | None = None  # the method whose Marlin MoE ran (awq, gptq, compressed-tensors; "" another kernel); None: from the config
    drafter: bool = False  # speculative decoding: the drafter's (MTP) layers load with the model, on the last stage
    speculative_tokens: int = 0  # --speculative-config's num_speculative_tokens: the query length of a decode step, the graphs' sizes
    allow_long_max_model_len: bool = False  # VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: a max_model_len above the model's own is taken
    model_len: int | None = None  # the longest vLLM takes from the config (hfconfig.derived_max_model_len); None: max_position_embeddings
    # the max_model_len the profile ran at, where it is not max_model_len: --max-model-len auto profiles at the model's own
    # length, then fits the length to that pool (vllm/v1/engine/core.py determine_available_memory before kv_cache_utils.py
    # get_kv_cache_configs _auto_fit_max_model_len, read in 0.18.0; kv_cache_planning.py in 0.33.0); None: max_model_len
    profiled_len: int | None = None
    quantization: str | None = None  # --quantization as given: awq by name keeps the plain AWQ kernel up to v0.23.x (plain_awq)
    compile_cached: bool = False  # the compiled graph is in vLLM's cache (a start after the first): nothing compiles in the profile
    chunked_prefill: bool | None = None  # --enable-chunked-prefill or --no-enable-chunked-prefill; None: the release's default
    max_cudagraph_capture_size: int | None = None  # --max-cudagraph-capture-size; None: vLLM's default
    cudagraph_capture_sizes: tuple[int, ...] | None = None  # --cudagraph-capture-sizes; None: vLLM's grid
    cudagraph_mode: str = "FULL_AND_PIECEWISE"  # -O1 PIECEWISE, -O0 NONE, or --compilation-config's (graphs.Capture.mode)
    compiled: bool = True  # False under -O0 or a compilation mode 0: torch.compile off, so no compile's block
    in_use: int = 0  # --in-use: bytes other processes hold on each card when vLLM starts (startup.py)
    extensible_kv_cache: bool | None = None  # --[no-]enable-extensible-kv-cache; None: the release's default (on from v0.34.0)


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
    non_torch_bytes: int = 0  # Model Runner V2's sampler state on the last stage alone


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
    graphs: tuple[int, int] = (0, 0)  # the piecewise and full CUDA graphs the estimate counts (graph_counts); none where it is 0
    runner_v2: bool = False  # the start runs Model Runner V2 (model_runner_v2)
    compile: Term = Term("compile", 0, "")  # what compiling the model holds at once in the profile (compile_block), inside `activation`
    pinned_bytes: int = 0  # the compile's block counted again as consumed (pinned_block), inside `activation`
    free_at_start: startup.FreeAtStart | None = None  # what vLLM's start snapshot sees free on a rank, where the release checks it
    graph_activations: int = 0  # the largest graph's activations in the estimate's first capture (graphs.piecewise_activations)
    sampler_state_bytes: int = 0  # Model Runner V2's sampler state counted as consumed (v2_sampler_state), inside `non_torch`
    measured: extensible.Budget | None = None  # where the pool is measured after warmup (v0.34.0's default): what the terms come off
    reserved_kv_bytes: int | None = None  # there, what 'Available KV cache memory' prints: the address range reserved, not the pool

    @property
    def budget_bytes(self) -> int:
        """What the terms come off: the requested share, or the budget measured after warmup."""
        return self.measured.bytes if self.measured else self.requested_bytes

    @property
    def graph_kept(self) -> Term:
        """Where the pool is measured after warmup, the graph estimate again, inside the peak kept free."""
        kept = self.cuda_graph.bytes if self.measured else 0
        return Term("graph_estimate_kept", kept, f"the graph estimate again, inside the transient peak kept free ({extensible.SOURCE})")


def flashinfer_sampler(installed: bool, off: bool) -> bool | None:
    """What a reader says of FlashInfer's sampler, as Start.flashinfer_sampler takes it: installed (it
    runs from 0.8.0 to 0.11.x), turned off by VLLM_USE_FLASHINFER_SAMPLER=0, or nothing, the release's
    own; both at once is refused."""
    if installed and off:
        raise InputError("--flashinfer-installed, --no-flashinfer-sampler: found both, expected one of them")
    return True if installed else False if off else None


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
    if s.max_cudagraph_capture_size is not None and not 0 < s.max_cudagraph_capture_size <= MAX_MODEL_LEN:
        raise InputError(f"--max-cudagraph-capture-size: found {s.max_cudagraph_capture_size}, expected a token count from 1 to {MAX_MODEL_LEN:,}")
    if s.cudagraph_capture_sizes is not None and not (s.cudagraph_capture_sizes and all(0 < n <= MAX_MODEL_LEN for n in s.cudagraph_capture_sizes)):
        raise InputError(
            f"--cudagraph-capture-sizes: found {list(s.cudagraph_capture_sizes)}, expected one token count or more, each from 1 to {MAX_MODEL_LEN:,}"
        )
    if s.max_num_batched_tokens is not None and not 0 < s.max_num_batched_tokens <= MAX_MODEL_LEN:
        raise InputError(f"--max-num-batched-tokens: found {s.max_num_batched_tokens}, expected a count from 1 to {MAX_MODEL_LEN:,}")


SCHEDULER = "vllm/config/scheduler.py SchedulerConfig: max_num_batched_tokens must be greater than or equal to max_num_seqs"


def scheduled(s: Start, batch: Batch, rel: tuple[int, int], floor: int = 0) -> tuple[int, int]:
    """max_num_batched_tokens and max_num_seqs as vLLM settles them: what the reader set, else the
    release's defaults, which from 0.12.0 give no more tokens than max_num_seqs x max_model_len
    and no more sequences than tokens (vllm/engine/arg_utils.py,
    _set_default_max_num_seqs_and_batched_tokens_args). vLLM refuses fewer tokens than sequences. A
    multimodal prefix LM's default tokens are first raised to `floor`, its largest item's tokens, from
    0.22.0 (hfconfig.batched_tokens_floor)."""
    seqs = s.max_num_seqs or batch.max_num_seqs
    tokens = s.max_num_batched_tokens or batch.max_num_batched_tokens
    if rel >= MM_PREFIX_FLOOR_FROM and s.max_num_batched_tokens is None:
        tokens = max(tokens, floor)
    if rel >= (0, 12) and s.max_num_batched_tokens is None:
        tokens = min(tokens, seqs * s.max_model_len)
    if rel >= (0, 12) and s.max_num_seqs is None:
        seqs = min(seqs, tokens)
    if s.chunked_prefill is False and rel >= CHUNKED_OFF_FROM and tokens < s.max_model_len:
        raise InputError(f"--max-num-batched-tokens: found {tokens:,} beside --no-enable-chunked-prefill and max_model_len {s.max_model_len:,}, "
                         f"expected at least {s.max_model_len:,}: vLLM refuses a budget below max_model_len with chunked prefill off "
                         "(vllm/config/scheduler.py verify_max_model_len)")  # fmt: skip
    if tokens < seqs:
        said = "--max-num-batched-tokens" if s.max_num_batched_tokens is not None else "max_num_batched_tokens (the default)"
        raise InputError(f"--max-num-seqs: found {seqs:,} beside {said} {tokens:,}, expected at most {tokens:,} ({SCHEDULER})")
    return tokens, seqs


def batch_on(s: Start, card: Card, floor: int = 0) -> tuple[int, int]:
    """max_num_batched_tokens and max_num_seqs of the start on the card (scheduled, from the release's defaults;
    `floor`: hfconfig.batched_tokens_floor of the config)."""
    rel = release(s.engine_version)
    return scheduled(s, default_batch(rel, card.total_bytes, card.name, s.max_model_len, s.offline, s.chunked_prefill), rel, floor)


@dataclass(frozen=True)
class Given:
    """What a prediction takes instead of the config's count. `weights_bytes` the weights a rank (the
    checkpoint's size, or a log's loading line), from `weights_source`; under pipeline parallel
    `stage_weights` each stage's (calc/engine/ranks.py counts them without); `stage_lora_slots` one
    LoRA slot's bytes on each stage's rank where that rank's weights are not TP's alone (expert or
    data parallel: the slots follow the rank's own experts, calc/engine/lora.py)."""

    weights_bytes: int | None = None
    weights_source: str = ""
    stage_weights: tuple[int, ...] | None = None
    stage_lora_slots: tuple[int, ...] | None = None
    # whether the allocator's rounding (weights.allocator_rounding) is added: not to a figure vLLM printed ('Model
    # loading took' holds it), nor under expert parallel (each rank's own experts are not what it counts)
    rounding: bool = True

    def at(self, s: Start, t: Start) -> Given:
        """What holds for start `t` changed from `s`: all of it at the same TP and stages, none at others."""
        return self if (t.tp, t.pp) == (s.tp, s.pp) else Given()


def predict(shape: Shape, card: Card, s: Start, topk: int = 0, given: Given | None = None) -> Prediction:
    """The pool one rank gets, each term with its source, and vLLM's verdict on the start; `given`,
    what replaces the config's count (Given).

    Under pipeline parallel every stage sizes its pool the same way from its own weights, its own
    layers' graphs and, on the last stage alone, the sampler's warm-up (gpu_model_runner.py
    profile_run: `if get_pp_group().is_last_rank`, 0.33.0); vLLM then keeps the smallest count of
    blocks over the stages (calc/engine/ranks.py), and the stage that gives it is the one reported."""
    check_start(s)
    g = given or Given()
    weights_bytes, weights_source, stage_weights, stage_lora_slots = g.weights_bytes, g.weights_source, g.stage_weights, g.stage_lora_slots
    if card.unified:
        also = "; there --cpu-offload-gb frees nothing, the weights it moves stay in the same memory" if s.cpu_offload_gib else ""
        raise InputError(
            f"--gpu: {card.name} is a unified-memory box: vLLM checks its start against MemAvailable, so the pool is the one you pin; expected "
            "--kv-cache-memory-bytes beside it, which gates the start against MemAvailable (--available, --overhead), or --total-memory "
            f"for a discrete card{also}"
        )
    rel = release(s.engine_version)
    q = shape.quantization or {}
    why = fp8_refused(card.name, rel) if str(q.get("quant_method", "")).lower() == "fp8" else None
    if why:
        what = "--quantization fp8" if q.get("is_checkpoint_fp8_serialized") is False else f"{shape.file}'s quantization_config.quant_method 'fp8'"
        raise InputError(f"--gpu: {card.name} for {what}: {why}")
    mm = s.multimodal or multimodal.Settings()
    shape, _ = multimodal.apply(shape, mm, rel)
    shape = weights.bnb_as_loaded(weights.drafter_as_loaded(ropes_as_loaded(shape, rel), rel, s.pp), patch_release(s.engine_version),
                                  s.engine_version)  # fmt: skip
    v = ranks.in_flight(kvlayout.version(s.engine_version), s.pp)
    ext = extensible_kv_cache(rel, s.extensible_kv_cache)  # the pool measured after warmup (extensible.py), v0.34.0's default
    util = s.utilization if s.utilization is not None else default_utilization(rel, ext)
    requested = math.ceil(card.total_bytes * util)
    batch = default_batch(rel, card.total_bytes, card.name, s.max_model_len, s.offline, s.chunked_prefill)
    tokens, seqs = scheduled(s, batch, rel, shape.batched_tokens_floor)
    if weights_bytes is None:
        w = weights.per_rank(shape, s.tp)
        pad = mxfp4_padding(shape, s.tp, rel, card.vendor, card.name)
        drafted = w.drafter if s.drafter else 0  # gpu_model_runner.py load_model loads the drafter inside the same profiler (0.20.0)
        wterm = Term("weights", w.model + drafted + pad.bytes, f"calc/engine/weights.py from the config ({w.source}); vLLM's 'Model loading took'"
                     + (f", with the drafter's layers {_gib(drafted)}" if drafted else "")
                     + (f"; MXFP4 experts padded by {_gib(pad.bytes, up=True)}: {pad.source}" if pad.bytes else ""))  # fmt: skip
    else:
        wterm = Term("weights", weights_bytes, weights_source or "given")
    # built with the model, inside its loading line: not to a figure vLLM printed (g.rounding, as the allocator's rounding below)
    stack = multimodal.deepstack_buffers(shape, tokens) if g.rounding else 0
    if stack and s.pp == 1:
        wterm = Term("weights", wterm.bytes + stack, f"{wterm.source}; with {_gib(stack, up=True)} of {multimodal.DEEPSTACK_SOURCE}")
    rounded = (
        0 if not g.rounding or rel < weights.ALLOCATOR_SPLIT_FROM or card.vendor != "nvidia" or s.pp > 1 else weights.allocator_rounding(shape, s.tp, s.drafter)
    )
    if rounded:
        wterm = Term("weights", wterm.bytes + rounded, f"{wterm.source}; and {_gib(rounded, up=True)} of segments the allocator rounds up to "
                     "2 MiB, each parameter of 20 MiB or more in its own (gpu_worker.py load_model: max_split_size_mb 20, v0.21.0)")  # fmt: skip
    marlin = marlin_experts(shape, rel, card.vendor, s.marlin_experts)
    eager = rel < (0, 8) or s.enforce_eager or not s.compiled  # V0 runs the model eagerly; V1 compiles it unless told not to
    fwd = forward_peak(shape, s.tp, tokens, topk, rel, marlin == "direct", bool(plain_awq(rel, s.quantization, awq_checkpoint(shape), is_turing(card.name))),
                       eager)  # fmt: skip
    v2 = model_runner_v2(shape, rel, card.vendor)  # decided on the whole model, not a pipeline stage's layers
    fi_sampler = s.flashinfer_sampler if s.flashinfer_sampler is not None or flashinfer_runs_on(card, rel) else False
    smp = sampler_warmup(shape.vocab, min(seqs, tokens), rel, card.vendor, fi_sampler, shape.dtype_bytes, v2)
    # The forward pass's hidden states stay while the sampler runs (profile_run deletes them after),
    # and so does the fused-expert workspace the worker keeps (moe_workspace).
    residual = tokens * shape.hidden * shape.dtype_bytes
    ws = moe_workspace(shape, s.tp, tokens, topk, rel, marlin)
    cb = compile_block(shape, s.tp, patch_release(s.engine_version), s.compiled and not (s.enforce_eager or s.compile_cached), s.pp, card.vendor)
    peak = max(fwd.bytes, smp.bytes + residual + ws.bytes, cb.bytes)
    mm_rel = patch_release(s.engine_version)  # 0.11.0 and 0.11.1 build the Qwen towers' attention apart (multimodal.attention_live)
    enc = multimodal.encoder_profile(shape, mm, tokens, seqs, s.profiled_len or s.max_model_len, mm_rel, s.tp)
    # counted again as consumed once freed (v0.27.0 to v0.30.x), but not after Qwen3-VL's encoder profile (pinned_block)
    pinned = cb.bytes if pinned_block(rel) and not (enc is not None and shape.tower is not None and shape.tower.kind == "qwen3-vl") else 0
    held = enc.held_bytes if enc else 0
    # The tower's own forward pass runs first, on the profile's dummy items, and frees all but its
    # outputs before the language model's (gpu_model_runner.py profile_run): the peak is the larger.
    enc_fwd = enc.forward_bytes if enc else 0
    enc_tower = shape.tower
    kept = (
        f"; and {_gib(pinned, up=True)} of it kept pinned past empty_cache(), counted as consumed (vllm/v1/worker/gpu_worker.py, v0.27.0 to v0.30.x)"
        if pinned
        else ""
    )
    if enc and enc_tower and enc_fwd > peak + held:
        act = Term(
            "activation_peak",
            enc_fwd + pinned,
            f"the vision tower's forward over the profile's {enc.items} dummy items ({enc.patches:,} patches; calc/engine/multimodal.py "
            f"encoder_forward_peak, from the model code; {multimodal.attention_live(enc_tower, s.tp, shape.dtype_bytes, mm_rel)[1]}), "
            "above the language model's pass and the sampler warm-up" + kept,
        )
    else:
        act = Term(
            "activation_peak",
            peak + held + pinned,
            "the larger of the forward pass, the sampler warm-up and the compile's block: "
            + (
                cb.source
                if cb.bytes == peak > max(fwd.bytes, smp.bytes + residual + ws.bytes)
                else fwd.source
                if fwd.bytes >= smp.bytes + residual + ws.bytes
                else smp.source
            )
            + (f"; plus {_gib(ws.bytes, up=True)} of fused-expert workspace kept through it ({ws.source})" if ws.bytes and fwd.bytes < peak else "")
            + (f"; plus {_gib(held, up=True)} of encoder outputs the profile keeps ({enc.source})" if enc else "")
            + kept,
        )
    nt = non_torch(s.tp, s.pp, rel, card.nvls, nccl_cumem(s.engine_version), v2, card.id)
    # Model Runner V2 builds its sampler on the last stage alone (gpu/model_runner.py load_model, is_last_pp_rank): under
    # pipeline parallel that stage's non-torch memory holds it, the others' not
    state = v2_sampler_state(shape.vocab, seqs, rel, v2, s.speculative_tokens)
    stage_nt = nt
    if state.bytes:
        nt = Term("non_torch", nt.bytes + state.bytes, f"{nt.source}; and {_gib(state.bytes, up=True)} of {state.source}")
    rel3, v0 = patch_release(s.engine_version), rel < (0, 8)
    if s.in_use and startup.whole_device(rel3, v0):
        nt = Term("non_torch", nt.bytes + s.in_use, f"{nt.source}; and the {_gib(s.in_use, up=True)} other processes hold (--in-use), which this "
                  "release's profile counts as its own: every byte the card holds beyond its torch allocation (startup.py)")  # fmt: skip
    elif s.in_use and v0:
        nt = Term("non_torch", nt.bytes, f"{nt.source}; the {_gib(s.in_use, up=True)} other processes hold (--in-use) are not counted: V0 from "
                  "0.6.5 measures from a baseline snapshot and checks no free memory at start (startup.py)")  # fmt: skip
    snapshot = startup.free_at_start(card.total_bytes, s.in_use, s.tp, card.nvls, rel3, card.context_bytes, card.context_source)
    free = snapshot if startup.checks_free(rel3, v0) and not ext else None  # with the extensible cache the request is a cap, not checked
    capture = replace(capture_of(shape, card, s.kv_cache_dtype, s.speculative_tokens, rel), max_size=s.max_cudagraph_capture_size,
                      sizes=s.cudagraph_capture_sizes, mode=s.cudagraph_mode)  # fmt: skip
    cg = cuda_graph(shape, rel, seqs, tokens, s.enforce_eager, card.vendor, v2, capture, s.tp, topk, not s.compiled)
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
    measured, reserved = None, None
    if ext:  # the terms off the measured budget, and the graph estimate again inside the peak kept free; 'Available KV cache memory' the range reserved
        reserved = pool
        measured, pool = extensible.after_warmup(requested, snapshot.bytes, wterm.bytes + lterm.bytes + nt.bytes, act.bytes, cg.bytes, card.vendor)
    mode = kvlayout.mamba_cache_mode(shape, v, s.prefix_caching)  # a hybrid's state pages, by the release's rule
    settings = kvlayout.Settings(tp=s.tp, kv_cache_dtype=s.kv_cache_dtype, prefill_budget=tokens, mamba_cache_mode=mode)
    kv_shape, tightest, check_whole = shape, 0, False
    stage_pools: tuple[StagePool, ...] = ()
    try:
        req = kvlayout.request(shape, settings, s.max_model_len, v)
        if s.pp > 1:
            tower_first = not multimodal.tower_stages(1, rel, v2)[0]  # Model Runner V2 from v0.33.0: the tower on the first stage alone
            stage_list = ranks.stages(shape, settings, s.max_model_len, v, s.pp, s.pp_layer_partition, tower_first=tower_first)
            own = stage_weights or tuple(st.weights_bytes + (st.drafter_bytes if s.drafter else 0) for st in stage_list)
            if len(own) != s.pp:
                raise InputError(f"stage weights: found {len(own)}, expected one a stage of {s.pp}")
            made: list[StagePool] = []
            for st, w_n in zip(stage_list, own, strict=True):
                w_n -= min(moved_n[st.rank], w_n)  # --cpu-offload-gb: each worker moves its own budget
                builds, profiles = multimodal.tower_stages(st.rank, rel, v2)
                w_n += stack if builds else 0  # the deepstack buffers, built beside the tower
                last = st.rank == s.pp - 1
                act_n = _stage_peak(act.bytes, peak, fwd.bytes, held, enc_fwd, last, profiles)
                cg_n = cuda_graph(ranks.stage_shape(shape, st.first_layer, st.end_layer, last), rel, seqs, tokens, s.enforce_eager, card.vendor, v2,
                                  capture, s.tp, topk, not s.compiled)  # fmt: skip
                nt_n = nt.bytes if last else stage_nt.bytes
                avail = requested - w_n - lora_n[st.rank] - act_n - nt_n - cg_n.bytes
                if ext:  # each rank measures its own (extensible.py); vLLM keeps the smallest count of blocks
                    avail = extensible.after_warmup(requested, snapshot.bytes, w_n + lora_n[st.rank] + nt_n, act_n, cg_n.bytes, card.vendor)[1]
                blocks = avail // st.kv_block_bytes if st.kv_block_bytes and avail > 0 else (0 if avail <= 0 else 10**18)
                made.append(StagePool(st.rank, st.layers, w_n, act_n, cg_n.bytes, avail, st.kv_block_bytes, blocks, lora_n[st.rank], nt_n))
            stage_pools = tuple(made)
            tightest = min(stage_pools, key=lambda sp: (sp.kv_blocks, sp.available_kv_bytes)).rank
            st, sp = stage_list[tightest], stage_pools[tightest]
            last = tightest == s.pp - 1
            kv_shape = ranks.stage_shape(shape, st.first_layer, st.end_layer, last)
            wterm = Term("weights", sp.weights_bytes, f"stage {tightest} of {s.pp} (layers {st.first_layer}-{st.end_layer - 1}): calc/engine/ranks.py")
            profiles = multimodal.tower_stages(tightest, rel, v2)[1]
            if not last:
                act = Term("activation_peak", _stage_peak(act.bytes, peak, fwd.bytes, held, enc_fwd, last, profiles),
                           "the forward pass alone: the sampler warms up on the last stage only; " + fwd.source
                           + ("; the encoder's profile runs on this stage too" if profiles and enc_fwd else ""))  # fmt: skip
            elif not profiles and enc_fwd:
                act = Term("activation_peak", peak, "the larger of the forward pass and the sampler warm-up; Model Runner V2 profiles "
                           "the encoder on the first stage alone (gpu/model_runner.py profile_run, v0.28.0)")  # fmt: skip
            cg = cuda_graph(kv_shape, rel, seqs, tokens, s.enforce_eager, card.vendor, v2, capture, s.tp, topk, not s.compiled)
            if not last:
                nt, state = stage_nt, Term("v2_sampler_state", 0, "the sampler's state is built on the last stage alone")
            lterm = _lora_term(s.lora, sp.lora_bytes)
            pool = sp.available_kv_bytes
            if ext:  # the tightest stage's own budget and reservation
                measured = extensible.budget(requested, snapshot.bytes, act.bytes + cg.bytes, card.vendor)
                reserved = requested - sp.weights_bytes - sp.lora_bytes - act.bytes - nt.bytes - cg.bytes
            check_whole = ranks.whole_model_check(v)
            if not check_whole:
                req = kvlayout.request(kv_shape, settings, s.max_model_len, v)
    except ValueError as error:
        if isinstance(error, InputError):
            raise
        raise InputError(str(error)) from None
    kv_tokens = concurrency = largest = None
    base = measured.bytes if measured else requested  # what the terms come off
    heaviest = max((sp.weights_bytes + sp.lora_bytes for sp in stage_pools), default=wterm.bytes + lterm.bytes)
    if heaviest >= card.total_bytes:
        verdict, reason = (
            "weights do not fit",
            (
                f"CUDA out of memory while loading: {_gib(heaviest, up=True)} of weights a rank on a card of {_gib(card.total_bytes)} "
                "(vllm/v1/worker/gpu_model_runner.py load_model)"
            ),
        )
    elif pool <= req.null_block_bytes:  # from 0.29.0 the check plans against the pool less the null block: none left is none
        verdict, reason = (
            "no KV memory",
            (
                "vLLM refuses: 'No available memory for the cache blocks' (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory); "
                + (f"the terms take {_gib(base - pool, up=True)} of the {_gib(base, down=True)} {'budget measured after warmup' if measured else 'requested'}" if pool <= 0 else
                   f"the {_gib(pool, down=True)} left hold no more than the {_gib(req.null_block_bytes, up=True)} block vLLM holds back")
            ),
        )  # fmt: skip
    else:
        p = kvlayout.pool(kv_shape, settings, s.max_model_len, pool, v, None if check_whole else req)
        kv_tokens, concurrency = p.tokens, p.concurrency
        largest = kvlayout.largest_max_model_len(shape if check_whole else kv_shape, settings, pool, v)
        if req.floor_bytes > pool:  # from 0.29.0 the check plans against the pool less the null block (kv_cache_utils.py)
            held_back = f" and the {_gib(req.null_block_bytes, up=True)} block vLLM holds back" if req.null_block_bytes else ""
            verdict, reason = (
                "max_model_len",
                (
                    f"vLLM refuses: one request of {s.max_model_len:,} tokens needs {_gib(req.bytes_per_request, up=True)} of KV cache{held_back}, more than the "
                    f"{_gib(pool, down=True)} available; the largest max_model_len that fits is {largest:,} (vllm/v1/core/kv_cache_utils.py)"
                ),
            )
        elif mamba_graphs(kv_shape, rel, s.enforce_eager, capture) and seqs > p.blocks:
            verdict, reason = (
                "max_num_seqs",
                (
                    f"vLLM refuses: max_num_seqs ({seqs}) exceeds the {p.blocks:,} Mamba cache blocks the pool holds; each sequence of a full decode "
                    "CUDA graph needs one (vllm/config/compilation.py resolve_cudagraph_mode_and_sizes, from 0.20.0)"
                ),
            )
        else:
            verdict, reason = "starts", f"{fmt(p.tokens, 'count')} tokens, {fmt(p.concurrency, 'plain')} requests of {s.max_model_len:,} at once"
    if free is not None and requested > free.bytes:  # the worker's start snapshot, before it loads anything
        verdict, reason = (
            "free memory",
            (
                f"vLLM refuses at start: free memory on device ({_gib(free.bytes, down=True)}/{_gib(card.total_bytes)}) is less than "
                f"desired GPU memory utilization ({float(util):g}, {_gib(requested, up=True)}) (vllm/v1/worker/gpu_worker.py init_device)"
            ),
        )
    # vLLM checks the length against the model's own before it loads anything: that refusal comes first
    longest = own_length(shape, s)
    if longest is not None and s.max_model_len > longest:
        verdict, reason = (
            "max_model_len",
            (
                f"vLLM refuses before it loads anything: max_model_len {s.max_model_len:,} is greater than the derived max_model_len "
                f"({'max_position_embeddings=' if s.model_len is None else ''}{longest:,}) unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set "
                "(vllm/config/model.py _get_and_verify_max_len)"
            ),
        )
    return Prediction(card.total_bytes, util, requested, wterm, act, fwd, smp, nt, cg, pool, seqs, tokens,
                      batch.source if not (s.max_num_seqs and s.max_num_batched_tokens) else "given", req.bytes_per_request,
                      kv_tokens, concurrency, largest, verdict, reason, min(seqs, tokens), shape.vocab, residual, s.tp * s.pp,
                      stage_pools, tightest, lterm, ws.bytes,
                      graph_counts(seqs, tokens, shape.architecture, rel, capture, v2) if cg.bytes else (0, 0), v2, cb, pinned, free,
                      _graph_activations(kv_shape, rel, seqs, tokens, capture, v2, s.tp, topk, not s.compiled) if cg.bytes else 0, state.bytes,
                      measured, reserved)  # fmt: skip


def _graph_activations(shape: Shape, rel: tuple[int, int], seqs: int, tokens: int, capture: Capture, v2: bool, tp: int, topk: int, eager: bool) -> int:
    """The activations the estimate's first capture holds: its largest graph's (graphs.piecewise_activations)."""
    pw, full = graph_sizes(seqs, tokens, shape.architecture, rel, capture, v2)
    sizes = pw or full
    return piecewise_activations(shape, tp, sizes[-1], topk, rel, eager) if sizes else 0


def own_length(shape: Shape, s: Start) -> int | None:
    """The longest max_model_len vLLM takes for the model: the length it derives from the config (the
    smallest length key, stretched by the rope scaling; vllm/config/model.py _get_and_verify_max_len,
    0.11.0 to 0.33.0), as `Start.model_len` carries it, else the config's max_position_embeddings;
    None where it takes any (VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, or no length key at all)."""
    if s.allow_long_max_model_len:
        return None
    return s.model_len if s.model_len is not None else shape.max_positions


def _stage_peak(whole: int, peak: int, fwd: int, held: int, enc_fwd: int, last: bool, profiles: bool) -> int:
    """A pipeline stage's profile peak: the last stage's the whole start's (`whole`, with the sampler),
    where its profile runs the encoder, else the language model's `peak`; an earlier stage's the
    forward pass alone, with the encoder's outputs held and its own forward where it profiles it
    (multimodal.tower_stages)."""
    if last:
        return whole if profiles or not enc_fwd else peak
    return max(fwd + held, enc_fwd) if profiles else fwd


def _bounds(layers: int, pp: int, override: str | None) -> list[tuple[int, int]]:
    counts = ranks.partition(layers, pp, override)
    return [(sum(counts[:n]), sum(counts[: n + 1])) for n in range(pp)]


def _lora_term(cfg: lora.Lora | None, n: int) -> Term:
    if cfg is None:
        return Term("lora", 0, "no --enable-lora")
    return Term("lora", n, f"vllm/lora/layers create_lora_weights, 0.33.0: {cfg.max_loras} slot(s) of rank {cfg.max_lora_rank}, allocated in load_model")
