"""How a figure printed once or by several ranks and repeats is read: at its smallest (what vLLM
sizes the pool by) or its largest (the weights), each choice said in a note; and the tables of
the figures read as printed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from calc.logs.figures import Found

if TYPE_CHECKING:
    from calc.logs.reader import Reader


# what each data-parallel rank prints of its own engine: replicas do not share a pool, and none is
# sized by another's (v1/engine/core.py runs one EngineCore, with its own KV cache, a DP rank)
_PER_REPLICA = ("available", "available_exact", "tokens", "blocks", "concurrency")


def _per_replica(reader: Reader, name: str, lowest: bool, notes: list[str] | None, what: str) -> Found | None:
    """A pool figure printed by several data-parallel ranks: each rank's is said, and the first
    rank's is read (the smallest over its own tensor-parallel ranks)."""
    ranks = reader.by_dp.get(name, {})
    first = min(ranks)
    mine = ranks[first]
    if notes is not None:
        each = []
        for dp, found in sorted(ranks.items())[:8]:
            printed = list(dict.fromkeys(str(f.printed or f.value) for f in found))
            each.append(f"DP{dp} {' and '.join(printed[:3])} (line {found[0].line_no})")
        more = ", ..." if len(ranks) > 8 else ""
        notes.append(
            f"{what or name}: each of the {len(ranks)} data-parallel ranks runs its own engine with its own pool, so their figures "
            f"are not one pool's: {', '.join(each)}{more}; reading DP{first}'s"
        )
    choose = min if lowest else max
    return choose(mine, key=lambda f: f.value)


def pick(reader: Reader, name: str, lowest: bool = True, notes: list[str] | None = None, what: str = "") -> Found | None:
    entries = reader.seen.get(name)
    if not entries:
        return None
    if name in _PER_REPLICA and len(reader.by_dp.get(name, {})) > 1:
        return _per_replica(reader, name, lowest, notes, what)
    values = {v for v, _, _ in entries}
    if len(values) == 1:
        return entries[0][1]
    choose = min if lowest else max
    found = choose((f for _, f, _ in entries), key=lambda f: f.value)
    if notes is not None:
        stage = reader.stage_of
        shown = ", ".join(
            f"{f.printed or f.value} (line {f.line_no}" + (f", stage {stage[f.line_no]})" if f.line_no in stage else ")") for _, f, _ in entries[:6]
        )
        if name in ("available", "tokens", "blocks", "concurrency"):
            rule = "the smallest, which vLLM sizes every rank's pool by"
        else:
            rule = "the smallest" if lowest else "the largest, the rank that needs the most"
        notes.append(f"{what or name}: ranks or repeats printed different figures: {shown}; reading {rule}")
    return found


@dataclass(frozen=True)
class Pick:
    """How a figure printed once or by several ranks and repeats is concluded: the reading's field
    it fills, whether the smallest is read (the pool's figures and the settings vLLM sizes every
    rank by) or the largest (the weights and the terms the rank that needs the most holds), and
    what the notes call it."""

    field: str
    lowest: bool = True
    what: str = ""


# The figures read as printed, keyed by the reader's name (a Put's field in calc/logs/shapes.py),
# each group picked where its notes fall in the reading's notes. A figure with a rule of its own
# (a fallback, a choice between lines, a sum) has its function in parallel, settings, pool or failure.
LENGTH = {"max_model_len": Pick("max_model_len")}
SETTINGS = {
    "block_size": Pick("block_size", what="block size"),
    "fraction": Pick("gpu_memory_utilization", what="gpu_memory_utilization"),
    "mem_fraction": Pick("mem_fraction_static", what="mem_fraction_static"),
    "pin": Pick("kv_cache_memory_bytes", what="kv_cache_memory_bytes"),
}
MEMORY = {
    "version": Pick("engine_version", lowest=False, what="engine version"),
    "free": Pick("free_memory_bytes", what="free memory"),
    "total": Pick("total_memory_bytes", what="total memory"),
    "requested": Pick("requested_memory_bytes", what="requested memory"),
    "engine_budget": Pick("engine_budget_bytes", what="the engine's budget"),
    "external": Pick("external_weights_bytes", lowest=False, what="weights held outside the process"),
    "free_grew": Pick("free_after_profile_bytes", lowest=False, what="free memory after the profile"),
    "kv_needed": Pick("kv_needed_bytes", what="KV needed for one request"),
    "cuda_graph": Pick("cuda_graph_bytes", lowest=False, what="estimated CUDA graph memory"),
    "graph_taken": Pick("cuda_graph_taken_bytes", lowest=False, what="CUDA graph memory taken"),
    "cuda_graph_off": Pick("cuda_graph_off", lowest=False, what="CUDA graph memory profiling off"),
    "non_torch": Pick("non_torch_bytes", lowest=False, what="non-torch memory"),
    "activation": Pick("activation_peak_bytes", lowest=False, what="activation peak"),
    "prefill": Pick("max_num_batched_tokens", what="max_num_batched_tokens"),
    "seats": Pick("max_num_seqs", what="max_num_seqs"),
}
# the reader's names this package's functions conclude ("sglang_line" only proves the engine); every
# name a shape or a setting puts is in a table or here (tests/test_logshapes.py)
CONCLUDED_ELSEWHERE = frozenset({
    "sglang_line", "model", "served", "tp", "pp", "dp", "ep", "ep_on", "kv_dtype", "kv_dtype_said", "loading", "sg_loading", "profile_weights",
    "tokens", "sg_total", "blocks", "concurrency", "dcp", "blocks_per_request", "kv_group", "sg_pool", "sg_swa", "sg_avail_load",
    "sg_avail_pool", "available", "available_exact", "pinned_printed", "error", "sg_profiled_none", "estimated", "v0_capacity",
    "speculative", "drafter", "oom", "padding", "max_len_from", "fit_pool", "cg_advice", "blocks_override", "measured_pool",
})  # fmt: skip


def picked(r: Reader, picks: dict[str, Pick], notes: list[str]) -> dict[str, Found | None]:
    """The figures a table picks, by the reading's field."""
    return {p.field: pick(r, name, p.lowest, notes, p.what) for name, p in picks.items()}
