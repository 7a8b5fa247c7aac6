"""The catalog's entries as the layers above read them: one TypedDict per mapping of the spec
(calc/catalog/spec.py), its required keys required and its optional keys `NotRequired`, each
figure a `Figure`. The spec validates and converts; these say what the result holds, so a
mistyped key is a type error. `tests/test_typed_entries.py` keeps the two alike key for key.
(No `from __future__ import annotations` here: Python 3.11 reads `NotRequired` only from
annotations it evaluates, and the test reads the required keys at run time.)"""

from fractions import Fraction
from typing import Literal, NotRequired, TypedDict

from calc.catalog.spec import Figure

Memory = Literal["unified", "discrete"]
Attention = Literal["mla", "full", "sliding", "hybrid"]
Outcome = Literal["serving", "killed", "failed"]


# --- boxes.yaml -----------------------------------------------------------------------------


class Serving(TypedDict):
    kv_pin: Figure
    gpu_memory_utilization: Figure


class DeviceNames(TypedDict):
    names: list[str]
    source: str


class Box(TypedDict):
    id: str
    name: str
    memory: Memory
    total_memory: NotRequired[Figure]
    reported_total: NotRequired[Figure]
    spec_memory: NotRequired[Figure]
    idle_available: NotRequired[Figure]
    free_at_start: NotRequired[Figure]
    in_use_at_start: NotRequired[Figure]  # an idle card at vLLM's start snapshot: its own CUDA context (predict.startup)
    serving: NotRequired[Serving]
    device_names: NotRequired[DeviceNames]


# --- models.yaml ----------------------------------------------------------------------------


class SpeculativeConfig(TypedDict):
    method: str
    num_speculative_tokens: int
    source: str


class Drafter(TypedDict):
    name: str
    weights: Figure
    speculative_config: SpeculativeConfig


class Architecture(TypedDict):
    layers: int
    attention: Attention
    kv_lora_rank: NotRequired[int]
    qk_rope_head_dim: NotRequired[int]
    kv_heads: NotRequired[int]
    head_dim: NotRequired[int]
    full_attention_interval: NotRequired[int]
    sliding_window: NotRequired[int]
    linear_k_heads: NotRequired[int]
    linear_v_heads: NotRequired[int]
    linear_k_dim: NotRequired[int]
    linear_v_dim: NotRequired[int]
    conv_kernel: NotRequired[int]
    state_dtype: NotRequired[Literal["float32", "bfloat16", "float16"]]
    drafter_layers: NotRequired[int]
    source: NotRequired[str]
    note: NotRequired[str]


class ModelGate(TypedDict):
    prefill_bytes_per_token: NotRequired[Figure]
    seat_bytes: NotRequired[Figure]


class KvReport(TypedDict):
    kv_dtype: str
    engine: NotRequired[str]
    label: NotRequired[str]
    tp: NotRequired[int]
    max_model_len: NotRequired[int]
    block_size: NotRequired[int]
    speculative_tokens: NotRequired[int]
    pool: NotRequired[Figure]
    tokens: NotRequired[Figure]
    bytes_per_token: NotRequired[Figure]


class LengthReading(TypedDict):
    max_model_len: int
    tokens: Figure


class LengthReport(TypedDict):
    kv_dtype: str
    pool: Figure
    readings: list[LengthReading]
    engine: NotRequired[str]
    label: NotRequired[str]
    tp: NotRequired[int]
    block_size: NotRequired[int]
    speculative_tokens: NotRequired[int]


class Model(TypedDict):
    id: str
    name: str
    checkpoint: NotRequired[str]
    illustrative: NotRequired[bool]
    parameters: NotRequired[float]
    bits_per_parameter: NotRequired[float]
    weights: NotRequired[Figure]
    drafter: NotRequired[Drafter]
    architecture: NotRequired[Architecture]
    gate: NotRequired[ModelGate]
    kv_reports: NotRequired[list[KvReport]]
    length_reports: NotRequired[list[LengthReport]]


# --- starts.yaml ----------------------------------------------------------------------------


class Settings(TypedDict):
    max_model_len: NotRequired[int]
    seats: NotRequired[int]
    prefill_budget: NotRequired[int]
    kv_dtype: NotRequired[str]
    speculative_tokens: NotRequired[int]
    block_size: NotRequired[int]


class GateRowFigures(TypedDict):
    weights: Figure
    overhead: Figure


class Start(TypedDict):
    kv_pin: int
    outcome: Outcome
    generation: NotRequired[int]
    date: NotRequired[str]
    settings: NotRequired[Settings]
    gate_row: NotRequired[GateRowFigures]
    weights_loaded: NotRequired[Figure]
    available_before: NotRequired[Figure]
    available_after: NotRequired[Figure]
    lowest_available: NotRequired[Figure]
    kv_tokens: NotRequired[Figure]
    concurrency: NotRequired[Figure]
    init_seconds: NotRequired[Figure]
    decode_rate: NotRequired[Figure]
    outcome_note: NotRequired[str]
    source: NotRequired[str]
    gpu_memory_utilization: NotRequired[Figure]


class Readings(TypedDict):
    idle_available: NotRequired[Figure]
    loaded_available: NotRequired[Figure]


class GateRequest(TypedDict):
    """A pin asked of the gate on a date, and whether the start went ahead."""

    date: str
    kv_pin: int
    drafter: bool
    available: Figure
    outcome: Literal["started", "refused"]


class Deployment(TypedDict):
    id: str
    name: str
    model: str
    box: str
    boxes: int
    tp: int
    settings: Settings
    starts: list[Start]
    engine: NotRequired[str]
    readings: NotRequired[Readings]
    requests: NotRequired[list[GateRequest]]


# --- policy.yaml ----------------------------------------------------------------------------


class Calibration(TypedDict):
    prefill_budget: Figure
    seats: Figure


class HeadBox(TypedDict):
    ray_head: Figure


class GatePolicy(TypedDict):
    headroom: Figure
    reading_precision: Figure
    calibration: Calibration
    head_box: NotRequired[HeadBox]


class GuardPolicy(TypedDict):
    floor: Figure
    poll_seconds: Figure
    polls_in_a_row: Figure


class VllmPolicy(TypedDict):
    default_gpu_memory_utilization: Figure
    earlier_default_gpu_memory_utilization: Figure
    prefetch_fraction: Figure


class Prediction(TypedDict):
    held_out_median_error: Figure
    held_out_p90_error: Figure
    held_out_starts: Figure


class Policy(TypedDict):
    gate: GatePolicy
    guard: GuardPolicy
    vllm: VllmPolicy
    prediction: NotRequired[Prediction]


# --- incidents.yaml, traces.yaml, plans.yaml ------------------------------------------------


class Incident(TypedDict):
    id: str
    date: str
    title: str
    box: str
    symptom: str
    engine: NotRequired[str]
    prefill_budget: NotRequired[int]
    available: NotRequired[Figure]
    free: NotRequired[Figure]
    served_for_weeks_available: NotRequired[Figure]
    checkpoint: NotRequired[Figure]
    min_free_kbytes: NotRequired[Figure]


class Sample(TypedDict):
    t: float
    available: int
    event: NotRequired[str]


class KernelInit(TypedDict):
    from_t: float
    to_t: float


class Trace(TypedDict):
    id: str
    title: str
    box: str
    kind: str
    source: str
    samples: list[Sample]
    engine: NotRequired[str]
    note: NotRequired[str]
    checkpoint: NotRequired[Figure]
    kernel_init: NotRequired[KernelInit]


class Resident(TypedDict):
    model: str
    role: NotRequired[str]


class Plan(TypedDict):
    id: str
    title: str
    box: str
    residents: list[Resident]
    budget_stated: NotRequired[Figure]


class FractionPlan(TypedDict):
    id: str
    box: str
    fractions: list[Fraction]


# Each file as its spec checks it (calc/catalog/spec.py SPEC), and the seven together: what the
# catalog is built from (calc/catalog/model.py build).
class BoxesFile(TypedDict):
    boxes: list[Box]


class ModelsFile(TypedDict):
    models: list[Model]


class StartsFile(TypedDict):
    deployments: list[Deployment]


class IncidentsFile(TypedDict):
    incidents: list[Incident]


class TracesFile(TypedDict):
    traces: list[Trace]


class PlansFile(TypedDict):
    plans: list[Plan]
    fraction_plans: list[FractionPlan]


class Files(TypedDict):
    boxes: BoxesFile
    models: ModelsFile
    starts: StartsFile
    policy: Policy
    incidents: IncidentsFile
    traces: TracesFile
    plans: PlansFile
