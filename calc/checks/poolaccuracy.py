"""How close calc/engine/predict/ comes to the pool vLLM printed, on public starts it never saw.

models/pool_starts.yaml lists the starts; every third (index % 3 == 2) is held out, and the three
fitted constants of calc/engine/predict/ are medians over the others only (`fit`). Each row predicts
the pool from the config, the card's total and the settings, and compares it with the log's
"Available KV cache memory" (V1) or "the rest of the memory reserved for KV Cache" (V0). A pool
vLLM printed negative has no relative error: its row checks the verdict instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from fractions import Fraction
from statistics import median

from calc.catalog.entries import Box
from calc.checks import accuracy, records
from calc.engine import hfconfig, multimodal, predict
from calc.engine.predict.graphs import CEILING
from calc.jsontext import JsonObject
from calc.logs import logread
from calc.units import GiB, InputError, parse_size


@dataclass(frozen=True)
class PrintedTerms:
    """What a start's log prints of the profile's terms, in bytes (the middle of what the printed
    figure rounds), or what its entry quotes where the reader does not take the line; None where
    neither gives the term."""

    activation_peak: int | None = None
    non_torch: int | None = None
    cuda_graph: int | None = None
    weights: int | None = None

    def get(self, term: str) -> int | None:
        """One term by its name in records.PRINTED_TERMS."""
        if term not in TERMS:
            raise KeyError(term)
        value: int | None = getattr(self, term)
        return value


@dataclass(frozen=True)
class Constants:
    """The fitted constants of calc/engine/predict/, each field the constant of the same name in capitals
    (`in_force` reads them there; `fit` gives them from the fitted starts): bytes, and the per-card
    non-torch offsets in bytes by card id."""

    non_torch_one_rank: int
    non_torch_one_rank_v0: int
    non_torch_one_rank_v2: int
    non_torch_per_rank_tp: int
    non_torch_per_rank_tp_v0: int
    non_torch_per_rank_tp_no_cumem: int
    non_torch_per_rank_tp_other_boards: int
    sampler_bytes_per_logit: int
    sampler_triton_bytes_per_logit: int
    cuda_graph_piecewise_first: int
    cuda_graph_full_first: int
    cuda_graph_piecewise_per_layer: int
    cuda_graph_full_per_layer: int
    cuda_graph_piecewise_per_moe_layer: int
    cuda_graph_full_per_moe_layer: int
    v2_piecewise_first: int
    v2_piecewise_per_layer: int
    v2_full_per_layer: int
    non_torch_card_offsets: dict[str, int]

    @classmethod
    def in_force(cls) -> Constants:
        """The constants calc/engine/predict/ predicts with now."""
        return cls(**{f.name: getattr(predict, f.name.upper()) for f in fields(cls)})

    def to_json(self) -> dict[str, int | dict[str, int]]:
        """By the constants' own names, as `scripts/pool_accuracy.py --fit` prints them."""
        return {f.name.upper(): getattr(self, f.name) for f in fields(self)}


def held_out(index: int) -> bool:
    """The fixed rule: every third entry, counting from 0, is held out (index % 3 == 2)."""
    return index % 3 == 2


@dataclass(frozen=True)
class Row:
    index: int
    label: str
    log: str
    url: str
    held_out: bool
    printed_pool: int  # the middle of what the printed figure rounds
    prediction: predict.Prediction
    printed_terms: PrintedTerms  # what the log prints of the terms
    log_verdict: str = "starts"  # what vLLM did: "starts", "no KV memory" or "max_model_len" (the log's error)
    family: str = ""  # hfconfig.Shape.family: dense, moe, mla, sliding window, hybrid
    era: str = ""  # era_of(the start's release)
    release: tuple[int, int] = (0, 0)  # the start's vLLM release, (major, minor)
    layers: int = 0  # the config's decoder layers: each further CUDA graph grows with them
    tower: bool = False  # the start builds a vision tower (calc/engine/multimodal.py profiles its encoder)
    nvls: bool = True  # the card runs NCCL's NVLS all-reduce (predict.NVLS_BOXES)
    cumem: bool = True  # NCCL allocates with cuMem in the start's release (predict.nccl_cumem)
    card: str = ""  # the card's catalog id (predict.Card.id)

    @property
    def error(self) -> Fraction | None:
        """(predicted - printed) / printed; None where vLLM printed no positive pool."""
        if self.printed_pool <= 0:
            return None
        return Fraction(self.prediction.available_kv_bytes - self.printed_pool, self.printed_pool)

    @property
    def naive_error(self) -> Fraction | None:
        """The naive rule's error, total x utilization - weights, on the same start (None as above)."""
        if self.printed_pool <= 0:
            return None
        p = self.prediction
        return Fraction(p.requested_bytes - p.weights.bytes - self.printed_pool, self.printed_pool)

    @property
    def verdict_matches(self) -> bool:
        return self.prediction.verdict == self.log_verdict


TERMS = records.PRINTED_TERMS


def _size(text: object, where: str) -> int:
    """A size an entry states ('79.19 GiB'): printed figures are GiB, as vLLM prints them."""
    return round(parse_size(str(text), where))


def _mid(found: logread.Found | None) -> int | None:
    if found is None:
        return None
    return int(found.value)


def rows(entries: list[records.PoolStart], configs: dict[str, JsonObject], logs: dict[str, str], boxes: Mapping[str, Box], urls: dict[str, str]) -> list[Row]:
    return [_row(e, configs, logs, boxes, urls) for e in entries]


def _stated_weights(e: records.PoolStart, r: logread.LogReading) -> tuple[int | None, str]:
    """The weights an entry takes instead of the config's count, and their source: the log's loading
    line (`weights: log`), or the weights as a line the reader does not take prints them."""
    if e.weights == "log":
        if r.model_loading_bytes is None:
            raise InputError(f"{e.where}.weights: {e.log} prints no loading line, expected one for weights: log")
        return int(r.model_loading_bytes.value), f"{e.log}, line {r.model_loading_bytes.line_no}"
    if e.weights is not None:
        return _size(e.weights, f"{e.where}.weights"), f"{e.log}, as the entry quotes it"
    return None, ""


def _row(e: records.PoolStart, configs: dict[str, JsonObject], logs: dict[str, str], boxes: Mapping[str, Box], urls: dict[str, str]) -> Row:
    """One start predicted from its config, its card and its settings, beside what its log printed."""
    where = e.where
    if e.log not in logs:
        raise InputError(f"{where}.log: found {e.log!r}, expected a log in logs/public/")
    if e.config not in configs:
        raise InputError(f"{where}.config: found {e.config!r}, expected one of {', '.join(sorted(configs))}")
    r = logread.read_log(logs[e.log])
    file = f"models/configs/{e.config}/config.json"
    config = configs[e.config] if e.quantization is None else hfconfig.quantization_applied(configs[e.config], e.quantization, f"{where}.quantization, {file}")
    shape = hfconfig.shape(config, file)
    card = predict.card_of_box(predict.find_box(boxes, e.box))
    if r.total_memory_bytes is not None:  # the log's own total beats the catalog's reading
        card = replace(
            card, total_bytes=int(r.total_memory_bytes.value), total_text=r.total_memory_bytes.line_text, source=f"{e.log}, line {r.total_memory_bytes.line_no}"
        )
    elif e.total_memory is not None:  # a total the log prints in a line the reader does not take (a DEBUG snapshot)
        card = replace(card, total_bytes=_size(e.total_memory, f"{where}.total_memory"), total_text=e.total_memory, source=f"{e.log}, as the entry quotes it")
    utilization = e.gpu_memory_utilization
    if utilization is None and r.gpu_memory_utilization:
        utilization = Fraction(r.gpu_memory_utilization.value)
    drafts = e.speculative_tokens
    if drafts is None:  # as the log's speculative config states it
        drafts = int((r.speculative.value.get("num_speculative_tokens") if r.speculative else None) or 0)
    start = predict.Start(
        tp=int(e.tp or (r.tensor_parallel_size.value if r.tensor_parallel_size else 1)),
        max_model_len=e.max_model_len,
        utilization=utilization,
        max_num_seqs=e.max_num_seqs,
        max_num_batched_tokens=e.max_num_batched_tokens,
        engine_version=e.engine_version,
        kv_cache_dtype=e.kv_cache_dtype,
        prefix_caching=accuracy.log_mamba_cache_mode(logs[e.log])[0],  # as the log states it, else the release's default
        flashinfer_sampler=flashinfer_sampler(logs[e.log], e.sampler, f"{where}.sampler"),
        marlin_experts=marlin_experts(logs[e.log], e.experts, f"{where}.experts"),
        quantization=e.quantization or ("awq" if FORCED_AWQ in logs[e.log] else None),
        drafter=drafts > 0,
        speculative_tokens=drafts,
        compile_cached=compile_cached(logs[e.log]),
        enforce_eager=enforce_eager(logs[e.log]),
        multimodal=multimodal.Settings(limits=dict.fromkeys(multimodal.MODALITIES, 0)) if TEXT_ONLY in logs[e.log] else None,
    )
    weights_bytes, weights_source = _stated_weights(e, r)
    p = predict.predict(shape, card, start, predict.experts_per_token(config), predict.Given(weights_bytes, weights_source, rounding=weights_bytes is None))
    if r.available_kv_bytes is None:
        raise InputError(f"{where}.log: {e.log} prints no pool")
    # Terms the log prints in a line the reader does not take, quoted by the entry: they win over the reader's.
    quoted = {key: _size(text, f"{where}.printed.{key}") for key, text in e.printed.items()}
    terms = PrintedTerms(
        activation_peak=quoted.get("activation_peak", _mid(r.activation_peak_bytes)),
        non_torch=quoted.get("non_torch", _mid(r.non_torch_bytes)),
        cuda_graph=quoted.get("cuda_graph", _mid(r.cuda_graph_bytes)),
        weights=quoted.get("weights", _mid(r.model_loading_bytes)),
    )
    error = r.error.value if r.error is not None else None
    said = "no KV memory" if error == "no_kv_memory" or r.available_kv_bytes.value <= 0 else "max_model_len" if error == "max_model_len" else "starts"
    release = predict.release(e.engine_version)
    return Row(e.index, e.label, e.log, e.url or urls.get(e.log, ""), held_out(e.index), int(r.available_kv_bytes.value), p, terms, said,
               shape.family, era_of(release), release, len(shape.layers), shape.tower is not None, card.nvls,
               predict.nccl_cumem(e.engine_version), card.id)  # fmt: skip


_COMPILE_TIME = re.compile(r"torch\.compile (?:took|takes):? ([0-9]+(?:\.[0-9]+)?) s|\(compilation: ([0-9]+(?:\.[0-9]+)?) s\)")
CACHED_COMPILE_SECONDS = 5  # a compile this quick loaded the compiled graph: a cold one takes 12 s and more in these logs


def compile_cached(text: str) -> bool:
    """Whether the start loaded its compiled graph from vLLM's cache (predict.compile_block): the log
    says so ('Directly load AOT compilation', 'Directly load the compiled graph(s)'), or its compile
    took under CACHED_COMPILE_SECONDS ('torch.compile took 0.54 s in total', 'init engine ...
    (compilation: 0.11 s)'); a log that says it compiled ('Compiling a graph for'), or says neither,
    is a first start's."""
    if "Compiling a graph for" in text:
        return False
    if "Directly load" in text:
        return True
    m = _COMPILE_TIME.search(text)
    return m is not None and float(m[1] or m[2]) < CACHED_COMPILE_SECONDS


_ENFORCE_EAGER = ("enforce_eager=True", "'enforce_eager': True")  # the engine's config line (core.py) and the arguments line (api_utils.py)


# vllm/multimodal/registry.py supports_multimodal_inputs (read in 0.28.0): every modality's limit at 0, as
# --language-model-only or --limit-mm-per-prompt sets them, so no tower is built and no encoder profiled
TEXT_ONLY = "All limits of multimodal modalities supported by the model are set to 0, running in text-only mode"


def enforce_eager(text: str) -> bool:
    """Whether the start ran under --enforce-eager, as its own log states it: the engine's
    configuration line ('enforce_eager=True') or the arguments line ("'enforce_eager': True").
    A log that states neither ran with graphs, the default."""
    return any(m in text for m in _ENFORCE_EAGER)


_FLASHINFER_SAMPLER = "Using FlashInfer for top-p & top-k sampling"  # v1/sample/ops/topk_topp_sampler.py, TopKTopPSampler.__init__
_NO_FLASHINFER_SAMPLER = ("FlashInfer top-p/top-k sampling disabled via", "FlashInfer is not available. Falling back")  # the same __init__, 0.21.0 and 0.10.1.1


def flashinfer_sampler(text: str, stated: object, where: str) -> bool | None:
    """Whether the start sampled with FlashInfer: the log's own line (or its line that
    VLLM_USE_FLASHINFER_SAMPLER=0 turned it off, or that it is not available), or what the entry
    states (`sampler: flashinfer` or `sampler: pytorch`) where the log kept no such line; None where
    neither says, the release's default."""
    if stated is None:
        return True if _FLASHINFER_SAMPLER in text else False if any(n in text for n in _NO_FLASHINFER_SAMPLER) else None
    if stated not in ("flashinfer", "pytorch"):
        raise InputError(f"{where}: found {stated!r}, expected flashinfer or pytorch")
    return stated == "flashinfer"


_MARLIN_EXPERTS = (  # the line that names the method whose Marlin MoE ran, and the method
    ("Using CompressedTensorsWNA16MarlinMoEMethod", "compressed-tensors"),  # compressed_tensors_moe.py get_moe_method's INFO line (0.13.0)
    ("quantization=awq_marlin", "awq"),  # the engine's config line (core.py 'Initializing a V1 LLM engine')
    ("quantization=gptq_marlin", "gptq"),
    ("Using CompressedTensorsWNA16MoEMethod", ""),  # compressed-tensors' Triton int path (moe_wna16)
)
FORCED_AWQ = "so forcing awq"  # quantization/awq_marlin.py override_quantization_method's warning (v0.10.1.1 to v0.23.0)
_STATED_EXPERTS = {"awq_marlin": "awq", "gptq_marlin": "gptq", "compressed-tensors-wna16-marlin": "compressed-tensors", "triton": ""}


def marlin_experts(text: str, stated: object, where: str) -> str | None:
    """The method whose int experts ran Marlin (predict.marlin_experts): the log's line naming it
    (CompressedTensorsWNA16MarlinMoEMethod, or the engine's awq_marlin or gptq_marlin quantization;
    "" where it names compressed-tensors' Triton path), or what the entry states (`experts:
    awq_marlin`, `gptq_marlin`, `compressed-tensors-wna16-marlin` or `triton`) where the log keeps
    no such line; None where neither says, the config's quantization_config."""
    if stated is None:
        return next((method for line, method in _MARLIN_EXPERTS if line in text), None)
    if stated not in _STATED_EXPERTS:
        raise InputError(f"{where}: found {stated!r}, expected {', '.join(_STATED_EXPERTS)}")
    return _STATED_EXPERTS[stated]


ERAS = ("V0, before 0.8.0", "V1, from 0.8.0, before 0.20.0", "V1 from 0.20.0, the CUDA graph estimate off the pool")


def era_of(rel: tuple[int, int]) -> str:
    """The release's era for the accuracy table: V0's profile (before 0.8, where these starts ran
    V0), V1's up to 0.19, and V1 from 0.20, when the CUDA graph estimate comes off the pool."""
    return ERAS[0] if rel < (0, 8) else ERAS[1] if rel < (0, 20) else ERAS[2]


@dataclass(frozen=True)
class Summary:
    starts: int  # rows with a relative error (a positive printed pool)
    median: Fraction | None  # of |error|
    p90: Fraction | None
    verdicts_right: int
    verdicts: int


def percentile(values: list[Fraction], q: int) -> Fraction:
    """The q-th percentile by the nearest rank (the smallest value at or above q % of them)."""
    ordered = sorted(values)
    rank = max(1, -(-q * len(ordered) // 100))
    return ordered[rank - 1]


def summary(rs: list[Row], naive: bool = False) -> Summary:
    """The median and 90th-percentile absolute error over the rows with a printed pool; with
    `naive`, of the naive rule (total x utilization - weights) on the same rows."""
    errors = [abs(e) for e in ((r.naive_error if naive else r.error) for r in rs) if e is not None]
    return Summary(len(errors), Fraction(median(errors)) if errors else None, percentile(errors, 90) if errors else None,
                   sum(r.verdict_matches for r in rs), len(rs))  # fmt: skip


GRAPH_ESTIMATE_FROM = (0, 20)  # vllm/envs.py VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 1, v0.20.0
PEAK_WITH_GRAPHS_FROM = (0, 27)  # vllm/v1/worker/gpu_worker.py, v0.27.0 and v0.27.1: the printed peak is the transient headroom and the graph estimate
TERM_NAMES = {"weights": "weights", "activation_peak": "activation peak", "non_torch": "non-torch memory", "cuda_graph": "CUDA graph estimate"}


def predicted_term(r: Row, term: str) -> int | None:
    """The prediction's figure for a term a log prints, as vLLM composes that figure: the weights
    where they are counted from the config (not a figure the entry takes from the log), and from
    v0.27.0 the peak as the transient headroom and the graph estimate, less the compile's block that
    release counts as consumed (Prediction.pinned_bytes, predict.pinned_block); the graph estimate from v0.20.0, where it comes
    off the pool. None where the prediction has no such figure."""
    p = r.prediction
    if term == "weights":
        return p.weights.bytes if p.weights.source.startswith("calc/engine/weights.py") else None
    if term == "non_torch":
        return p.non_torch.bytes
    if term == "cuda_graph":  # up to v0.19.x a log may print the estimate, but the pool keeps it (predict.cuda_graph)
        return p.cuda_graph.bytes if r.release >= GRAPH_ESTIMATE_FROM else None
    if r.release < PEAK_WITH_GRAPHS_FROM:
        return p.activation.bytes
    return p.activation.bytes - p.pinned_bytes + p.cuda_graph.bytes


@dataclass(frozen=True)
class TermSummary:
    term: str
    era: str  # "" for every era
    starts: int  # the rows that print the term and predict it
    median: int  # of |predicted - printed|, bytes
    p90: int
    median_relative: Fraction


def term_errors(rs: list[Row]) -> list[TermSummary]:
    """Each printed term's error, over every era and in each, fitted and held-out starts together: the
    median and 90th percentile of |predicted - printed| in bytes, and the median relative to the
    printed figure; an era with no start printing the term is left out."""
    out = []
    for term in TERM_NAMES:
        for era in ("", *ERAS):
            pairs = [(predicted_term(r, term), r.printed_terms.get(term)) for r in rs if era in ("", r.era)]
            got = [(abs(a - b), Fraction(abs(a - b), b)) for a, b in pairs if a is not None and b is not None and b > 0]
            if got:
                absolute = [a for a, _ in got]
                out.append(TermSummary(term, era, len(got), int(median(absolute)), int(percentile([Fraction(a) for a in absolute], 90)),
                                       Fraction(median([f for _, f in got]))))  # fmt: skip
    return out


MULTIMODAL = "multimodal (a vision tower; also in its family)"


def by_group(rs: list[Row]) -> list[tuple[str, str, Summary]]:
    """The summary of each family and of each era, every row counted (fitted and held out), in the
    order of hfconfig.FAMILIES and ERAS; a group with no start is left out. The multimodal starts
    (a vision tower built, its encoder profiled) follow the families as a group of their own,
    each also counted in its language model's family."""
    out = []
    for kind, names, key in (("family", hfconfig.FAMILIES, "family"), ("era", ERAS, "era")):
        for name in names:
            chosen = [r for r in rs if getattr(r, key) == name]
            if chosen:
                out.append((kind, name, summary(chosen)))
        towers = [r for r in rs if r.tower]
        if kind == "family" and towers:
            out.append((kind, MULTIMODAL, summary(towers)))
    return out


def fit(rs: list[Row], graph_logs: list[records.GraphLog], logs: dict[str, str], layers: dict[str, int] | None = None,
        buffers: dict[str, int] | None = None, activations: dict[str, int] | None = None,
        moe_layers: dict[str, int] | None = None) -> Constants:  # fmt: skip
    """The constants calc/engine/predict/ takes, as medians over the rows not held out (and the
    CUDA graph logs, which are no pool start): the non-torch increase on one GPU and under TP, the
    sampler's bytes a logit where the printed activation peak is the sampler's (dense models, which hold
    nothing of their own through it but the residual), each mode's first capture (the full mode's
    less the attention backend's buffers, `buffers`: predict.full_graph_buffers of each graph log;
    the piecewise mode's less its largest graph's activations, `activations`:
    predict.piecewise_activations of each graph log)
    and each further graph's bytes a decoder layer of each mode (`layers`: each graph log's
    decoder layers, the rows' own where none is given): the logs of dense models give a dense
    layer's, those of MoE models (`moe_layers`: each graph log's layers with routed experts) what
    is left a layer with experts once their dense layers take the dense median; under TP with NCCL's cuMem off (up to
    v0.10.1.1), where no log prints the non-torch increase, what the printed pool leaves."""
    fitted = [r for r in rs if not r.held_out]
    one = [nt for r in fitted if (nt := r.printed_terms.non_torch) is not None and _tp(r) == 1 and r.era != ERAS[0]]
    one_v0 = [nt for r in fitted if (nt := r.printed_terms.non_torch) is not None and _tp(r) == 1 and r.era == ERAS[0]]
    # under TP on NVSwitch boards, NCCL's paths there (predict.non_torch): the median of those alone
    many = [nt for r in fitted if (nt := r.printed_terms.non_torch) is not None and _tp(r) > 1 and r.era != ERAS[0] and r.nvls and r.cumem]
    many_v0 = [nt for r in fitted if (nt := r.printed_terms.non_torch) is not None and _tp(r) > 1 and r.era == ERAS[0]]
    # With cuMem off no start prints the non-torch increase under TP: what its printed pool leaves
    # after the printed weights and the predicted activation peak (no CUDA graph estimate then), on
    # boards without NVSwitch multicast (an NVSwitch board takes its own constant, cuMem or not).
    no_cumem = [
        r.prediction.requested_bytes - w - r.prediction.activation.bytes - r.printed_pool
        for r in fitted
        if _tp(r) > 1 and r.era == ERAS[1] and not r.cumem and not r.nvls and r.printed_terms.non_torch is None
        and (w := r.printed_terms.weights) is not None and r.printed_pool > 0
    ]  # fmt: skip
    # With cuMem on, off NVSwitch boards, no start prints it either: what the printed pool leaves after the
    # printed weights, the predicted activation peak, the graph estimate (printed where it is) and V2's state.
    other_boards = [
        r.prediction.requested_bytes - w - r.prediction.activation.bytes - _graphs_printed_or_predicted(r)
        - r.prediction.sampler_state_bytes - r.printed_pool
        for r in fitted
        if _tp(r) > 1 and r.era != ERAS[0] and r.cumem and not r.nvls and r.printed_terms.non_torch is None
        and (w := r.printed_terms.weights) is not None and r.printed_pool > 0
    ]  # fmt: skip
    # Model Runner V2 from v0.27.0 prints the consumed memory: what it leaves after the loading line and the
    # sampler's state, where no compile's block is counted as kept (predict.pinned_block)
    v2 = [
        consumed - w - r.prediction.sampler_state_bytes
        for r in fitted
        if r.prediction.runner_v2 and r.release >= predict.V2_CONSUMED_FROM and _tp(r) == 1 and not r.prediction.pinned_bytes
        and (w := r.printed_terms.weights) is not None and (consumed := v2_consumed(logs[r.log])) is not None
    ]  # fmt: skip
    sampler: dict[str, list[Fraction]] = {"sort": [], "triton": []}
    for r in fitted:  # where the printed peak is above the forward pass, it is the sampler's
        if r.family != "dense":  # a model's own buffers held through it (experts, recurrent state) are modeled, not printed
            continue
        act, p = r.printed_terms.activation_peak, r.prediction
        for path, values in sampler.items():
            if act is not None and act > p.forward.bytes and f"(fitted, {path})" in p.sampler.source:
                values.append(Fraction(act - p.residual_bytes - p.moe_workspace_bytes, p.sampler_rows * p.vocab))
    firsts: dict[str, list[int]] = {"PIECEWISE": [], "FULL": []}
    per_layer: dict[str, list[Fraction]] = {"PIECEWISE": [], "FULL": []}
    moe_growth: dict[str, list[tuple[int, int, int]]] = {"PIECEWISE": [], "FULL": []}  # (per graph, dense layers, MoE layers)
    held = {r.log for r in rs if r.held_out}
    depth = {r.log: r.layers for r in rs} | (layers or {})
    for g in graph_logs:  # the logs that print vLLM's own two measurements (DEBUG), but a held-out start's
        measured = graph_breakdown(logs[g.log]) if g.log not in held else {}
        if measured and depth.get(g.log):
            moe = (moe_layers or {}).get(g.log, 0)
            for mode, (first, per) in measured.items():  # the full mode's first capture less the backend's buffers
                own = (buffers or {}).get(g.log, 0) if mode == "FULL" else (activations or {}).get(g.log, 0)
                firsts[mode].append(first - own)
                if moe:
                    moe_growth[mode].append((per, depth[g.log] - moe, moe))
                else:
                    per_layer[mode].append(Fraction(per, depth[g.log]))
    dense_rate = {mode: median(v) if v else Fraction(0) for mode, v in per_layer.items()}
    moe_rate = {mode: [Fraction(per - dense_rate[mode] * d, m) for per, d, m in v] for mode, v in moe_growth.items()}
    v2_full, v2_piecewise, v2_firsts = v2_graph_growths(fitted, logs)
    return Constants(
        non_torch_one_rank=_median_bytes(one),
        non_torch_one_rank_v0=_median_bytes(one_v0),
        non_torch_one_rank_v2=_median_bytes(v2),
        non_torch_per_rank_tp=_median_bytes(many),
        non_torch_per_rank_tp_v0=_median_bytes(many_v0),
        non_torch_per_rank_tp_no_cumem=_median_bytes(no_cumem),
        non_torch_per_rank_tp_other_boards=_median_bytes(other_boards),
        sampler_bytes_per_logit=_median_bytes(sampler["sort"]),
        sampler_triton_bytes_per_logit=_median_bytes(sampler["triton"]),
        cuda_graph_piecewise_first=_median_bytes(firsts["PIECEWISE"]),
        cuda_graph_full_first=_median_bytes(firsts["FULL"]),
        cuda_graph_piecewise_per_layer=_median_bytes(per_layer["PIECEWISE"]),
        cuda_graph_full_per_layer=_median_bytes(per_layer["FULL"]),
        cuda_graph_piecewise_per_moe_layer=_median_bytes(moe_rate["PIECEWISE"]),
        cuda_graph_full_per_moe_layer=_median_bytes(moe_rate["FULL"]),
        v2_piecewise_first=_median_bytes(v2_firsts),
        v2_piecewise_per_layer=_median_bytes(v2_piecewise),
        v2_full_per_layer=_median_bytes(v2_full),
        non_torch_card_offsets=card_offsets(rs),
    )


def _median_bytes(values: Sequence[int | Fraction]) -> int:
    """The median of a constant's evidence in whole bytes; 0 where there is none."""
    return round(median([Fraction(v) for v in values])) if values else 0


def card_offset_row(r: Row) -> bool:
    """A start that sets its card's own non-torch memory (fitted) or checks it (held out): one GPU
    under V1, not Model Runner V2, with a printed pool and a catalog card."""
    return r.era != ERAS[0] and _tp(r) == 1 and not r.prediction.stages and not r.prediction.runner_v2 and r.printed_pool > 0 and bool(r.card)


def card_offsets(rs: list[Row]) -> dict[str, int]:
    """What each card's own fitted one-GPU V1 starts leave beside V1's non-torch constant
    (predict.NON_TORCH_CARD_OFFSETS), for the cards with predict.CARD_OFFSET_MIN_STARTS such starts or
    more: the offset the rows were predicted with plus the median of their (predicted - printed) pool,
    so that the constants in force are reproduced when they are these medians. V0's starts and Model
    Runner V2's keep their own constants and count for none."""
    gaps: dict[str, list[int]] = {}
    for r in rs:
        if not r.held_out and card_offset_row(r):
            gaps.setdefault(r.card, []).append(r.prediction.available_kv_bytes - r.printed_pool)
    return {
        card: predict.NON_TORCH_CARD_OFFSETS.get(card, 0) + round(median(v)) for card, v in sorted(gaps.items()) if len(v) >= predict.CARD_OFFSET_MIN_STARTS
    }


_CONSUMED = re.compile(r"Actual usage is ([0-9]+(?:\.[0-9]+)?) GiB for consumed memory \(weights \+ non-torch\)")  # vllm/v1/worker/gpu_worker.py, 0.27.0 on


def v2_consumed(text: str) -> int | None:
    """The consumed memory a v0.27.0-or-later log prints at the end of its start ('Actual usage is 15.54
    GiB for consumed memory (weights + non-torch)'), the middle of what it rounds; None where it prints none."""
    m = _CONSUMED.search(text)
    return round(Fraction(m.group(1)) * GiB) if m else None


_V2_CAPTURED = re.compile(r"Graph capturing finished in \d+ secs, took ([0-9.]+) GiB")  # vllm/v1/worker/gpu/model_runner.py capture_model


def v2_captured(text: str) -> int | None:
    """What Model Runner V2's profile capture took (its first 'Graph capturing finished in 10 secs,
    took 0.28 GiB' line, before the pool is printed; the second is the real capture), the middle
    of what it rounds; None where the log prints none before the pool."""
    pool = text.find("Available KV cache memory")
    m = _V2_CAPTURED.search(text, 0, pool if pool >= 0 else len(text))
    return round(Fraction(m[1]) * 2**30) if m else None


def v2_graph_growths(fitted: list[Row], logs: dict[str, str]) -> tuple[list[Fraction], list[Fraction], list[int]]:
    """What each fitted V2 start tells of predict.v2_cuda_graph_estimate's parts, from what it
    prints: the estimate less the profile's measured capture (v2_captured) is the full graphs'
    extrapolation less its two samples, (full - 2) x the second sample where that is above 1 MiB. A
    start with the default capture list (51 piecewise graphs, up to 512 tokens) gives a full graph's
    growth a decoder layer, and a further piecewise graph's: the measured capture less the two
    samples and the largest piecewise graph's first capture (predict.V2_PIECEWISE_FIRST beside its
    activations, Prediction.graph_activations). A shorter list (max_num_seqs 8 captures 5 piecewise
    graphs of up to 16 tokens and 4 full ones), whose capture is mostly its first, gives that first
    capture's own part: the measured capture less the two full samples and the further piecewise
    graphs as modeled (predict.V2_FULL_PER_LAYER, predict.V2_PIECEWISE_PER_LAYER) and its
    activations. Starts with too few graphs to tell are left out."""
    full_growth: list[Fraction] = []
    piecewise_growth: list[Fraction] = []
    firsts: list[int] = []
    default = len(predict.capture_grid(CEILING))
    for r in fitted:
        p, estimate, captured = r.prediction, r.printed_terms.cuda_graph, v2_captured(logs[r.log])
        (piecewise, full), layers = p.graphs, r.layers
        if not p.runner_v2 or r.release < predict.V2_ESTIMATE_FROM or estimate is None or captured is None or piecewise < 2 or full < 3:
            continue
        if piecewise < default:
            samples = 2 * predict.V2_FULL_PER_LAYER * layers
            firsts.append(captured - samples - (piecewise - 1) * predict.V2_PIECEWISE_PER_LAYER * layers - p.graph_activations)
            continue
        first = predict.V2_PIECEWISE_FIRST + p.graph_activations
        sample = Fraction(estimate - captured, full - 2)
        full_growth.append(sample / layers)
        piecewise_growth.append((captured - 2 * sample - first) / ((piecewise - 1) * layers))
    return full_growth, piecewise_growth, firsts


_BREAKDOWN = re.compile(r"Estimated (PIECEWISE|FULL) CUDA graph memory: ([0-9.]+) MiB first-capture \+ \((\d+)-1\) \S+ ([0-9.]+) MiB per-graph")
_COUNTS = re.compile(r"Profiling CUDA graph memory: ((?:(?:PIECEWISE|FULL)=\d+ \(largest=\d+\)(?:, )?)+)")
_TOTAL = re.compile(r"Estimated CUDA graph memory: ([0-9.]+) GiB total")


def largest_graph(text: str, mode: str) -> int | None:
    """The largest graph of a mode ("FULL" or "PIECEWISE") a log profiled: its 'FULL=35 (largest=256)',
    or else, where it prints only the DEBUG lines, the mode's graphs counted there ('(51-1)') as the
    default sizes run: 1, 2, 4, then by 8 to 256 and by 16 above (predict.capture_grid)."""
    m = re.search(mode + r"=\d+ \(largest=(\d+)\)", text)
    if m:
        return int(m[1])
    counted = {name: int(n) for name, _, n, _ in _BREAKDOWN.findall(text)}
    grid = predict.capture_grid(1024)
    return grid[min(counted[mode], len(grid)) - 1] if mode in counted else None


def graph_breakdown(text: str) -> dict[str, tuple[int, int]]:
    """vLLM's two measurements for each mode, as its DEBUG line prints them (gpu_model_runner.py
    profile_cudagraph_memory, v0.19.0 on): {mode: (first capture, per graph)} in bytes."""
    return {m[1]: (round(Fraction(m[2]) * 2**20), round(Fraction(m[4]) * 2**20)) for m in _BREAKDOWN.finditer(text)}


@dataclass(frozen=True)
class GraphCheck:
    log: str
    piecewise: int
    full: int
    printed: int  # "Estimated CUDA graph memory: X GiB total", the middle of what X rounds
    predicted: int  # predict.cuda_graph_estimate over the same counts

    @property
    def error(self) -> Fraction:
        return Fraction(self.predicted - self.printed, self.printed)


def graph_checks(names: list[str], logs: dict[str, str], layers: dict[str, int], buffers: dict[str, int] | None = None,
                 activations: dict[str, int] | None = None, moe_layers: dict[str, int] | None = None) -> list[GraphCheck]:  # fmt: skip
    """The estimate predict.cuda_graph_estimate gives for the graphs each log profiled (its
    'Profiling CUDA graph memory: PIECEWISE=.., FULL=..' line) and its model's decoder layers
    (`moe_layers` of them with routed experts) beside the total vLLM printed."""
    out = []
    for name in names:
        text = logs[name]
        counts, total = _COUNTS.search(text), _TOTAL.search(text)
        # the graphs profiled: the INFO line, or else the DEBUG lines' "(51-1)"
        modes = dict(re.findall(r"(PIECEWISE|FULL)=(\d+)", counts[1])) if counts else {m[1]: m[3] for m in _BREAKDOWN.finditer(text)}
        if not modes or total is None:
            raise InputError(f"models/pool_starts.yaml: cuda_graph_logs: {name} prints no 'Profiling CUDA graph memory' line with its total")
        pw, full = int(modes.get("PIECEWISE", 0)), int(modes.get("FULL", 0))
        if not layers.get(name):
            raise InputError(f"models/pool_starts.yaml: cuda_graph_logs: {name} has no config to count its layers, expected a start's or its own config")
        estimate = predict.cuda_graph_estimate(pw, full, layers[name], (buffers or {}).get(name, 0), (activations or {}).get(name, 0),
                                               (moe_layers or {}).get(name, 0))  # fmt: skip
        out.append(GraphCheck(name, pw, full, round(Fraction(total[1]) * 2**30), estimate))
    return out


def _graphs_printed_or_predicted(r: Row) -> int:
    """The CUDA graph estimate the log prints, else the prediction's."""
    return r.printed_terms.cuda_graph if r.printed_terms.cuda_graph is not None else r.prediction.cuda_graph.bytes


def _tp(r: Row) -> int:
    return r.prediction.tp
