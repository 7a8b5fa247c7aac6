"""What the config model reports (calc/checks/modeled.py): its inputs and the report's parts, for
the command line and the browser alike, each with its JSON as `model --json` gives it."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from calc.answers import report
from calc.engine import lora, multimodal, offload
from calc.engine.hfconfig import Shape
from calc.engine.predict.fixes import Limits
from calc.engine.predict.startup import FreeAtStart
from calc.jsontext import JsonObject
from calc.units import shown


@dataclass(frozen=True)
class ModelInputs:
    config_text: str
    config_file: str = "config.json"
    tp: int = 1
    kv_cache_dtype: str = "auto"
    max_model_len: int = 8192
    pool: int | None = None
    engine_version: str | None = None
    index_text: str | None = None
    index_file: str = "model.safetensors.index.json"
    checkpoint_bytes: int | None = None  # the checkpoint's size typed, in place of an index (the browser's calculator)
    block_size: int | None = None
    prefill_budget: int = 8192
    speculative_tokens: int = 0
    dcp: int = 1
    prefix_caching: bool | None = None  # None: the engine's default (on, but for hybrids up to 0.27.1)
    pp: int = 1  # --pipeline-parallel-size
    pp_layer_partition: str | None = None  # VLLM_PP_LAYER_PARTITION
    lora: lora.Lora | None = None  # --enable-lora and its sizes
    offload: offload.Offload | None = None  # --cpu-offload-gb, --kv-offloading-size, --swap-space
    multimodal: multimodal.Settings | None = None  # --mm-encoder-tp-mode, --limit-mm-per-prompt
    dp: int = 1  # --data-parallel-size
    enable_expert_parallel: bool = False  # --enable-expert-parallel
    enable_eplb: bool = False  # --enable-eplb
    eplb_config: str | None = None  # --eplb-config, JSON (0.11.0 on)
    num_redundant_experts: int | None = None  # --num-redundant-experts (up to 0.11.0)


@dataclass(frozen=True)
class StagePoolTerms:
    """A pipeline stage's own pool terms on a card (calc/engine/predict/)."""

    lora_bytes: int
    activation_peak_bytes: int
    cuda_graph_bytes: int
    available_kv_bytes: int
    kv_blocks: int
    non_torch_bytes: int = 0  # the last stage holds Model Runner V2's sampler state too


@dataclass(frozen=True)
class StageReport:
    """One pipeline stage, one rank of it: its layers, weights and KV figures."""

    rank: int
    layers: int
    first_layer: int
    end_layer: int
    holds: tuple[str, ...]
    weights_bytes: int
    drafter_bytes: int
    kv_bytes_per_token: int | Fraction
    kv_bytes_per_request: int
    kv_block_bytes: int
    kv_floor_bytes: int
    lora_bytes: int | None = None  # with --enable-lora
    offloaded_bytes: int | None = None  # with an offload flag
    experts: ExpertsReport | None = None  # with the experts split over TP x DP ranks
    pool: StagePoolTerms | None = None  # on a card

    def to_json(self) -> JsonObject:
        """The stage as the report's `ranks` list gives it: the pool terms last, LoRA's in its place."""
        out: dict[str, object] = {f: getattr(self, f) for f in STAGE_KEYS}
        out["holds"] = list(self.holds)
        if self.lora_bytes is not None:
            out["lora_bytes"] = self.lora_bytes
        if self.offloaded_bytes is not None:
            out["offloaded_bytes"] = self.offloaded_bytes
        if self.experts is not None:
            out.update(report.to_json_object(self.experts))
        if self.pool is not None:
            out.update(report.to_json_object(self.pool))
        return report.to_json_object(out)


STAGE_KEYS = ("rank", "layers", "first_layer", "end_layer", "holds", "weights_bytes", "drafter_bytes", "kv_bytes_per_token", "kv_bytes_per_request",
              "kv_block_bytes", "kv_floor_bytes")  # fmt: skip


@dataclass(frozen=True)
class GateTerm:
    name: str
    bytes: int
    source: str


@dataclass(frozen=True)
class CardPin:
    """A pool pinned on a discrete card (--kv-cache-memory-bytes): vLLM takes the pin as the pool and
    sizes nothing from the utilization, so what decides the start is whether the pin and what stays
    beside it fit the card: with what vLLM's worker and other processes hold before its start snapshot.
    `margin_bytes` is the card's total less the needs (negative where short). The utilization still
    has to pass vLLM's free-memory check at start (`start_check_passes`)."""

    card: str
    total_bytes: int
    pin_bytes: int
    weights_bytes: int
    activation_peak_bytes: int
    non_torch_bytes: int
    cuda_graph_bytes: int
    lora_bytes: int
    buffer_bytes: int
    needs_bytes: int
    margin_bytes: int
    fits: bool
    source: str
    held_bytes: int = 0  # held before vLLM's start snapshot: its CUDA context, NCCL's buffers under TP, other processes (predict.startup)
    requested_bytes: int = 0  # total x utilization, what vLLM's start check asks free even with a pin
    free_at_start_bytes: int | None = None  # what that check sees free; None where the release checks nothing
    start_check_passes: bool | None = None
    utilization_at_most: float | None = None  # the highest utilization, two decimals, the free memory holds

    @property
    def free_shown(self) -> Fraction:
        """The free memory at start as the printed figures give it: the total less what is held before
        vLLM starts, both as printed beside it."""
        return shown(self.total_bytes, "GiB") - shown(self.held_bytes, "GiB")

    @property
    def passes_start_check(self) -> bool:
        """Whether vLLM's free-memory check at start passes (vllm/v1/worker/gpu_worker.py init_device)."""
        return self.start_check_passes is not False

    @property
    def terms(self) -> tuple[GateTerm, ...]:
        """The nonzero terms `needs_bytes` adds, named as the command line and the form print them."""
        named = (("CUDA context and other processes", self.held_bytes), ("weights", self.weights_bytes), ("peak activation", self.activation_peak_bytes),
                 ("non-torch", self.non_torch_bytes), ("CUDA graphs", self.cuda_graph_bytes), ("LoRA slots", self.lora_bytes),
                 ("vLLM's buffer", self.buffer_bytes), ("pin", self.pin_bytes))  # fmt: skip
        return tuple(GateTerm(n, b, "") for n, b in named if b)

    @property
    def largest_pin_bytes(self) -> int:
        """The largest pin the card holds beside the rest; zero or less where none does."""
        return self.total_bytes - self.needs_bytes + self.pin_bytes


@dataclass(frozen=True)
class UnifiedGate:
    """The start gate of a pinned start on one box, each term with its source. `needs_bytes` is None
    outside calibration (no overhead measured or typed, or settings beyond the calibration's),
    `outside_calibration` then says why; where the overhead alone is unknown, `terms` are the
    known ones (no overhead among them) and `room_for_overhead_bytes` what MemAvailable leaves it."""

    box: str
    available_bytes: int
    available_source: str
    overhead_source: str
    terms: tuple[GateTerm, ...]
    needs_bytes: int | None
    passes: bool | None  # None outside calibration; False too where the known terms alone are over MemAvailable
    margin_bytes: int | None  # MemAvailable less the needs: negative where refused
    largest_pin_bytes: int | None
    outside_calibration: str  # why the gate cannot size the start, "" where it can
    room_for_overhead_bytes: int | None  # where only the overhead is unknown: MemAvailable less the known terms (`terms`)
    seats: int  # the sequences and the prefill budget gated: the calibration's unless given
    prefill_budget: int


@dataclass(frozen=True)
class ExpertRankReport:
    """One rank of a stage's TP x DP ranks: its routed experts and weights."""

    ep_rank: int
    dp_rank: int
    tp_rank: int
    local_experts: int
    weights_bytes: int


@dataclass(frozen=True)
class ExpertsReport:
    """The experts of a stage's heaviest rank, and every rank's."""

    local_experts: int
    expert_ranks: tuple[ExpertRankReport, ...]


@dataclass(frozen=True)
class TowerReport:
    """The vision tower as one rank holds it."""

    name: str
    blocks: int
    bytes_per_rank: int
    replicated: bool
    mm_encoder_tp_mode: str
    source: str


@dataclass(frozen=True)
class PrefillPart:
    name: str
    bytes: int


@dataclass(frozen=True)
class WorstPrefill:
    """What a prefill at max_model_len takes beyond the profile run (calc/engine/afterstart.py),
    and against --left-after-start whether it fits."""

    bytes: int
    parts: tuple[PrefillPart, ...]
    source: str
    after_profile_bytes: int
    left_after_start_bytes: int | None
    fits: bool | None
    note: str


@dataclass(frozen=True)
class ShmQueue:
    name: str
    count: int
    bytes: int
    source: str


@dataclass(frozen=True)
class SleepReport:
    level: int
    host_backup_bytes: int
    device_freed_bytes: int
    unified_freed_bytes: int
    kv_known: bool


@dataclass(frozen=True)
class HostMemory:
    """What the start puts in host memory: the weights and KV moved there (--cpu-offload-gb,
    --kv-offloading-size, --swap-space; calc/engine/offload.py), /dev/shm's message queues against
    --shm-size, and what sleep mode frees (calc/engine/hostmem.py). `shm_bytes` is None where
    /dev/shm was not asked about (no --shm-size, --mq-max-chunk-mb or --enable-sleep-mode)."""

    shm_queues: tuple[ShmQueue, ...]
    shm_bytes: int | None
    shm_size_bytes: int | None
    shm_refused: bool
    sleep: SleepReport | None
    notes: tuple[str, ...]
    offloaded_bytes_per_rank: int = 0  # the weights --cpu-offload-gb moves, on one rank
    weights_on_device_bytes_per_rank: int | None = None  # what stays on the device; None without offload
    kv_offloading_bytes: int = 0
    swap_space_bytes: int = 0
    offload_host_bytes: int = 0  # the three over every rank, as the text's host-memory line adds them


@dataclass(frozen=True)
class LoraReport:
    """The LoRA slots on the heaviest rank and the adapters on the host."""

    max_loras: int
    max_lora_rank: int
    max_cpu_loras: int
    slot_bytes: int
    device_bytes_per_rank: int
    host_bytes_per_worker: int  # every worker process keeps its own whole copies
    host_bytes: int
    modules: int
    source: str


@dataclass(frozen=True)
class OffloadReport:
    """The bytes moved to the host, and what a unified-memory box makes of them."""

    offloaded_bytes_per_rank: int
    weights_on_device_bytes_per_rank: int
    offloaded_bytes: int
    kv_offloading_bytes: int
    swap_space_bytes: int
    host_bytes: int
    # on a unified-memory box the host is the same memory: nothing is saved, and the host buffers add
    unified_saving_bytes: int
    unified_extra_bytes: int
    source: str


@dataclass(frozen=True)
class PredictedTerm:
    bytes: int
    source: str


@dataclass(frozen=True)
class PredictedFix:
    change: str
    flags: str
    available_kv_bytes: int
    kv_tokens: int | None


@dataclass(frozen=True)
class HeldOutError:
    """How far the predicted pool was off on the held-out public starts (catalog/policy.yaml prediction)."""

    median: float  # |predicted - printed| / printed
    p90: float
    starts: int
    source: str


@dataclass(frozen=True)
class CardPrediction:
    """The pool predicted on a card (calc/engine/predict/): each term with its source, vLLM's verdict."""

    card: str
    card_source: str
    total_memory_bytes: int
    gpu_memory_utilization: float
    requested_bytes: int
    max_num_seqs: int
    max_num_batched_tokens: int
    batch_source: str
    activation_peak_bytes: int
    forward_peak_bytes: int
    sampler_warmup_bytes: int
    compile_block_bytes: int  # what a first start's compile holds at once in the profile (predict.compile_block); 0 when none
    non_torch_bytes: int
    cuda_graph_bytes: int
    terms: dict[str, PredictedTerm]
    available_kv_bytes: int
    verdict: str
    verdict_reason: str
    fixes: tuple[PredictedFix, ...]
    tightest_rank: int
    settings_that_fit: Limits | None = None  # how far each setting goes, the others as given
    held_out_error: HeldOutError | None = None  # the band the prediction was off by on public starts nothing was fitted to
    free_at_start_bytes: int | None = None  # what vLLM's start check sees free on a rank, where the release checks it (predict.startup)
    free_at_start: FreeAtStart | None = None  # its parts, where the answer says it (--in-use given, or the check refuses)
    extensible_kv_cache: bool = False  # the pool measured after warmup (v0.34.0's default): the terms come off budget_bytes
    budget_bytes: int = 0  # what the terms come off: requested_bytes, or min(requested, free at start less the margin)
    margin_bytes: int | None = None  # with the extensible KV cache, the margin kept free beside the peak
    reserved_kv_bytes: int | None = None  # with it, what 'Available KV cache memory' prints: the range reserved, not the pool


@dataclass(frozen=True)
class ModelReport:
    """Before the first start, from a config.json: weights a rank, the KV cost of a request, what a
    pool holds, each pipeline stage; on a card, the pool predicted. `to_json()` is `python -m calc
    model --json`, in vLLM's spelling."""

    architecture: str
    family: str
    layers: str
    tp: int
    kv_cache_dtype: str
    max_model_len: int
    engine_rules: str
    weights_bytes_per_rank: int
    weights_source: str
    drafter_bytes_per_rank: int
    checkpoint_bytes: int | None
    kv_bytes_per_token: int | Fraction
    kv_fixed_bytes_per_request: int
    kv_bytes_per_request: int
    kv_floor_bytes: int  # the smallest pool vLLM's one-request check passes
    null_block_bytes: int
    block_size: int
    kv_groups: int
    layers_per_group: int
    padding_layers: int
    pp: int
    dp: int
    enable_expert_parallel: bool
    ep_size: int
    world_size: int
    ranks: tuple[StageReport, ...]
    lora: LoraReport | None
    tower: TowerReport | None
    offload: OffloadReport | None
    notes: tuple[str, ...]
    modeled: bool = True
    kv_tokens: int | None = None
    kv_tokens_all_replicas: int | None = None  # each replica its own pool and requests
    max_concurrency: Fraction | None = None
    kv_blocks: int | None = None
    largest_max_model_len: int | None = None
    pool_bytes: int | None = None  # the pool given, or the one predicted on a card
    # vLLM's one-request check (vllm/v1/core/kv_cache_utils.py, _check_enough_kv_cache_memory):
    # below it the start is refused, and the figures above are never printed; None without a pool
    one_request_fits: bool | None = None
    prediction: CardPrediction | None = field(default=None)
    worst_prefill: WorstPrefill | None = None  # the command line's, beside the report
    host_memory: HostMemory | None = None
    gate: UnifiedGate | None = None  # the command line's start gate on a unified-memory box, with a pin
    card_pin: CardPin | None = None  # the command line's pinned pool on a discrete card
    after_start: bool = False  # the command line adds worst_prefill and host_memory, null or not
    # the config as read and its Shape before the multimodal settings, for the prediction beside the
    # report (read once); neither is in the JSON
    config: JsonObject = field(default_factory=dict, repr=False, compare=False)
    shape: Shape | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> JsonObject:
        out: dict[str, object] = {key: getattr(self, key) for key in REPORT_KEYS}
        out["ranks"] = [st.to_json() for st in self.ranks]
        out["notes"] = list(self.notes)
        p = self.prediction
        if p is None:
            if self.pool_bytes is not None:
                out.update(pool_bytes=self.pool_bytes, one_request_fits=self.one_request_fits)
        else:
            ahead = {f: getattr(p, f) for f in CARD_KEYS}
            ahead["terms"] = {name: {"bytes": t.bytes, "source": t.source} for name, t in p.terms.items()}
            out.update(ahead, available_kv_bytes=p.available_kv_bytes, pool_bytes=self.pool_bytes, one_request_fits=self.one_request_fits,
                       verdict=p.verdict, verdict_reason=p.verdict_reason, fixes=[report.to_json(f) for f in p.fixes], tightest_rank=p.tightest_rank,
                       settings_that_fit=p.settings_that_fit.to_json() if p.settings_that_fit else None,
                       held_out_error=p.held_out_error)  # fmt: skip
        if self.after_start:
            out.update(worst_prefill=self.worst_prefill, host_memory=self.host_memory, gate=self.gate, card_pin=self.card_pin)
        return report.to_json_object(out)


REPORT_KEYS = ("modeled", "architecture", "family", "layers", "tp", "kv_cache_dtype", "max_model_len", "engine_rules", "weights_bytes_per_rank",
               "weights_source", "drafter_bytes_per_rank", "checkpoint_bytes", "kv_bytes_per_token", "kv_fixed_bytes_per_request",
               "kv_bytes_per_request", "kv_floor_bytes", "null_block_bytes", "block_size", "kv_groups", "layers_per_group", "padding_layers",
               "kv_tokens", "kv_tokens_all_replicas", "max_concurrency", "kv_blocks", "largest_max_model_len", "pp", "dp", "enable_expert_parallel",
               "ep_size", "world_size", "ranks", "lora", "tower", "offload", "notes")  # fmt: skip
CARD_KEYS = ("card", "card_source", "total_memory_bytes", "gpu_memory_utilization", "requested_bytes", "extensible_kv_cache", "budget_bytes",
             "margin_bytes", "reserved_kv_bytes", "max_num_seqs", "max_num_batched_tokens",
             "batch_source", "activation_peak_bytes", "forward_peak_bytes", "sampler_warmup_bytes", "compile_block_bytes", "non_torch_bytes",
             "cuda_graph_bytes", "free_at_start_bytes")  # fmt: skip
