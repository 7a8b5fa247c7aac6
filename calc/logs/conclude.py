"""From what the reader saw to the reading: a figure printed differently by ranks or repeats is
read at its smallest (what vLLM sizes the pool by) or its largest (the weights), each with a note;
the pool, the token count and the bytes per token are worked out with the printing's rounding;
what the log lacks is said (`missing`), and so is what was worked out rather than printed (`notes`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from calc.logs.figures import Derived, Found, GiB, LogReading, MiB, Opt
from calc.logs.shapes import SAID_UNREAD
from calc.units import InputError, fmt

if TYPE_CHECKING:
    from calc.logs.reader import Reader

_DRAFTERLESS = {"ngram", "suffix", "ngram_gpu"}  # speculative methods that load no drafter model


def _free_within_total(r: Reader) -> None:
    """Free memory above the total it was printed beside (`Free memory on device (90.0/80.0 GiB)`):
    neither figure of that line is read."""
    totals = {found.line_no: found for _, found, _ in r.seen.get("total", [])}
    for _, free, _ in list(r.seen.get("free", [])):
        total = totals.get(free.line_no)
        if total is not None and free.value > total.value:
            r.unreadable.append((free.line_no, f"free memory {free.printed} above the total {total.printed}"))
            for name, found in (("free", free), ("total", total)):
                r.seen[name] = [e for e in r.seen[name] if e[1] is not found]
                if not r.seen[name]:
                    del r.seen[name]


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


def _pick(reader: Reader, name: str, lowest: bool = True, notes: list[str] | None = None, what: str = "") -> Found | None:
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
        shown = ", ".join(f"{f.printed or f.value} (line {f.line_no})" for _, f, _ in entries[:6])
        if name in ("available", "tokens", "blocks", "concurrency"):
            rule = "the smallest, which vLLM sizes every rank's pool by"
        else:
            rule = "the smallest" if lowest else "the largest, the rank that needs the most"
        notes.append(f"{what or name}: ranks or repeats printed different figures: {shown}; reading {rule}")
    return found


def _speculative_entry(reader: Reader) -> Found:
    """The speculative entry that names its method (an argument dump may hold one without it, as
    `{'num_speculative_tokens': 3}` beside the engine's `SpeculativeConfig(method='mtp', ...)`), its
    count filled from another entry where it lacks one."""
    entries = [f for _, f, _ in reader.seen["speculative"]]
    named = [f for f in entries if f.value[0]]
    chosen = (named or entries)[0]
    count = chosen.value[1] if chosen.value[1] is not None else next((f.value[1] for f in entries if f.value[1] is not None), None)
    return replace(chosen, value=(chosen.value[0], count))


_DP_TP = re.compile(r"\bDP(\d+) TP(\d+)\b")


def _sglang_dp_tp(reader: Reader, notes: list[str]) -> Found | None:
    """SGLang with data-parallel attention tags each rank "DPn TPn" (n over the whole tensor-parallel
    group): ranks TP0 to TPk, every one present, give a tensor-parallel size of k + 1."""
    tagged = [(int(m[2]), f) for entries in reader.seen.values() for _, f, rank in entries if rank and (m := _DP_TP.search(rank))]
    if not tagged or not reader.tp_ranks:
        return None
    size = max(reader.tp_ranks) + 1
    if size < 2 or reader.tp_ranks != set(range(size)):
        return None
    first = min(tagged, key=lambda t: t[1].line_no)[1]
    how = f"the rank tags DP0 TP0 to TP{size - 1} (every rank present, from line {first.line_no})"
    notes.append(f"tensor_parallel_size {size}: {how}; SGLang's data-parallel attention tags each rank of the tensor-parallel group")
    return Found(size, first.line_no, first.line_text, str(size))


def _pp_from_ranks(reader: Reader, notes: list[str]) -> Found | None:
    """vLLM names each pipeline stage's worker "Worker_PPn" (with "_TPm" under tensor parallelism too,
    v1/executor/multiproc_executor.py): stages PP0 to PPk, every one present, give a pipeline-parallel
    size of k + 1; some of them give only a least size, said in a note."""
    stages = sorted(reader.pp_ranks)
    size = stages[-1] + 1
    first = min(reader.pp_ranks.values())
    shown = ", ".join(f"PP{n}" for n in stages[:8]) + (", ..." if len(stages) > 8 else "")
    if stages != list(range(size)):
        notes.append(
            f"the worker prefixes show pipeline-parallel stage(s) {shown} (from line {first}), so pipeline_parallel_size is at least {size}; "
            "not every stage is in the log, and no setting says it"
        )
        return None
    if size < 2:
        return None
    how = f"the worker prefixes Worker_PP0 to Worker_PP{size - 1}, every stage present (from line {first})"
    notes.append(f"pipeline_parallel_size {size}: {how}; the log prints no setting")
    return Found(size, first, how, str(size), derived=True)


def _dp_from_ranks(reader: Reader, notes: list[str]) -> Found | None:
    """Each data-parallel rank runs its own engine, "EngineCore_DPn" ("EngineCore_n" in 0.10.x), and
    its workers are "Worker_DPn_..." when data_parallel_size > 1 (v1/engine/utils.py,
    v1/executor/multiproc_executor.py): ranks DP0 to DPk, every one present, give k + 1."""
    ranks = sorted(reader.dp_ranks)
    if not ranks:
        return None
    first = min(reader.dp_ranks.values())
    size = ranks[-1] + 1
    if size >= 2 and ranks == list(range(size)):
        how = f"the process prefixes DP0 to DP{size - 1}, every data-parallel rank present (from line {first})"
        notes.append(f"data_parallel_size {size}: {how}; the log prints no setting")
        return Found(size, first, how, str(size), derived=True)
    if size >= 2 or reader.dp_worker is not None:
        shown = ", ".join(f"DP{n}" for n in ranks[:8]) + (", ..." if len(ranks) > 8 else "")
        why = f" (a worker names its data-parallel rank only when there are several, line {reader.dp_worker})" if reader.dp_worker else ""
        notes.append(
            f"the process prefixes show data-parallel rank(s) {shown}{why}, so data_parallel_size is at least {max(size, 2)}; "
            "not every rank is in the log, and no setting says it"
        )
    return None


def _expert_parallel(reader: Reader, notes: list[str]) -> Found | None:
    """Expert parallel: the line each MoE layer's rank prints (its group's size and the experts it
    holds), the setting, or a worker prefix that names an expert-parallel rank ("_EPn")."""
    entries = reader.seen.get("ep") or []
    if entries:
        sizes = {v[0] for v, _, _ in entries}
        found = max((f for _, f, _ in entries), key=lambda f: f.value[1])  # the rank that holds the most experts
        size, local, total = found.value
        if len(sizes) > 1:
            notes.append(f"expert parallel: the ranks printed different group sizes ({', '.join(str(n) for n in sorted(sizes))}); reading line {found.line_no}")
        notes.append(
            f"expert parallel over {size} ranks: {local} of the {total} experts of each MoE layer on a rank (line {found.line_no}), "
            "so a rank holds that share of the experts' weights"
        )
        return found
    if "ep_on" in reader.seen:
        f = reader.seen["ep_on"][0][1]
        return Found((None, None, None), f.line_no, f.line_text, "on")
    if reader.ep_prefix is not None:
        how = f"a worker prefix names an expert-parallel rank (_EPn, line {reader.ep_prefix}), as vLLM's workers do with --enable-expert-parallel"
        notes.append(f"expert parallel is on: {how}")
        return Found((None, None, None), reader.ep_prefix, how, "on", derived=True)
    return None


def _model_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.rstrip("/").rsplit("/", 1)[-1].lower())


def _conflict(reader: Reader, name: str, what: str) -> None:
    entries = reader.seen.get(name) or []
    values: dict[Any, Found] = {}
    for v, f, _ in entries:  # a model named by its path in one line and by its id in another is one model
        values.setdefault(_model_key(v) if name == "model" else v, f)
    if len(values) > 1:
        a, b = sorted(values.values(), key=lambda f: f.line_no)[:2]
        shown = [repr(f.value) if isinstance(f.value, str) else f.printed or f.value for f in (a, b)]
        raise InputError(
            f"found two starts in one log: {what} {shown[0]} at line {a.line_no} and {shown[1]} at line {b.line_no}; "
            "expected the lines of one start (split the log and read each part)"
        )


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
# (a fallback, a choice between lines, a sum) has its function below.
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
    "kv_needed": Pick("kv_needed_bytes", what="KV needed for one request"),
    "cuda_graph": Pick("cuda_graph_bytes", lowest=False, what="estimated CUDA graph memory"),
    "graph_taken": Pick("cuda_graph_taken_bytes", lowest=False, what="CUDA graph memory taken"),
    "cuda_graph_off": Pick("cuda_graph_off", lowest=False, what="CUDA graph memory profiling off"),
    "non_torch": Pick("non_torch_bytes", lowest=False, what="non-torch memory"),
    "activation": Pick("activation_peak_bytes", lowest=False, what="activation peak"),
    "prefill": Pick("max_num_batched_tokens", what="max_num_batched_tokens"),
    "seats": Pick("max_num_seqs", what="max_num_seqs"),
}
# the reader's names the functions below conclude ("sglang_line" only proves the engine); every name a
# shape or a setting puts is in a table or here (tests/test_logshapes.py)
CONCLUDED_ELSEWHERE = frozenset({
    "sglang_line", "model", "served", "tp", "pp", "dp", "ep", "ep_on", "kv_dtype", "kv_dtype_said", "loading", "sg_loading", "profile_weights",
    "tokens", "sg_total", "blocks", "concurrency", "dcp", "blocks_per_request", "kv_group", "sg_pool", "sg_swa", "sg_avail_load",
    "sg_avail_pool", "available", "available_exact", "pinned_printed", "error", "sg_profiled_none", "estimated", "v0_capacity",
    "speculative", "drafter", "oom", "padding",
})  # fmt: skip


def _picked(r: Reader, picks: dict[str, Pick], notes: list[str]) -> dict[str, Found | None]:
    """The figures a table picks, by the reading's field."""
    return {p.field: _pick(r, name, p.lowest, notes, p.what) for name, p in picks.items()}


def _refuse_what_is_no_log(r: Reader) -> None:
    """A YAML file, a command line alone, figures no engine prints, a config.json, or nothing a start prints."""
    if r.text_lines >= 10 and r.yaml_lines * 10 >= r.text_lines * 6:
        raise InputError(
            f"found a YAML file ({r.yaml_lines} of its {r.text_lines} lines are 'key: value'), not a startup log; expected the lines vLLM or "
            "SGLang prints as it starts (log lines quoted in a YAML file are not one start)"
        )
    if r.seen and not r.engine_lines:
        raise InputError(
            f"found a command line or an argument list in {r.lines_read} lines but none of the lines a start prints "
            "(such as 'GPU KV cache size', 'Model loading took', 'KV Cache is allocated'); expected a startup log"
        )
    if not r.seen and r.unreadable:
        no, what = r.unreadable[0]
        raise InputError(f"found only figures no engine prints (line {no}: {what}), expected a startup log's figures as vLLM or SGLang print them")
    if not r.seen and r.oversized:
        raise InputError(f"found only figures of more than 32 digits (line {r.oversized[0]}), expected a startup log's figures as vLLM or SGLang print them")
    if not r.seen and r.config_line is not None:
        no, text = r.config_line
        raise InputError(
            f"found a model's config.json (line {no}: {text!r}), not a startup log; expected the lines vLLM or SGLang prints as it "
            "starts (a config is read by `python -m calc model CONFIG`)"
        )
    if not r.seen:
        raise InputError(
            f"found none of the lines a vLLM or SGLang start prints in {r.lines_read} lines "
            "(such as 'GPU KV cache size', 'Model loading took', 'KV Cache is allocated'); expected a startup log"
        )


def _unreadable_notes(r: Reader) -> list[str]:
    """The figures that are not read, each with its line: oversized, free above its total, a line's words without its figure."""
    notes: list[str] = []
    if r.oversized:
        notes.append(f"line {r.oversized[0]} holds a figure of more than 32 digits, not one an engine prints: it is not read")
    _free_within_total(r)
    for figure in SAID_UNREAD:  # a shape that says its unread figure is named for the figure it gives
        if figure in r.unread and figure not in r.seen:
            no, said = r.unread[figure]
            r.unreadable.append((no, f"{said!r}: its figure could not be read"))
    notes.extend(f"unreadable, line {no}: {what}; not one an engine prints, so it is not read" for no, what in r.unreadable)
    return notes


def _refuse_two_starts(r: Reader) -> None:
    """Two models, lengths, fractions or TP sizes, or a vLLM line beside an SGLang one: two starts."""
    _conflict(r, "model", "model")
    _conflict(r, "max_model_len", "max_model_len")
    _conflict(r, "fraction", "gpu_memory_utilization")
    _conflict(r, "tp", "tensor_parallel_size")
    vllm_at = min((r.era_lines[e] for e in ("v0", "v1", "v?") if e in r.era_lines), default=None)
    if vllm_at is not None and "sglang" in r.era_lines:
        raise InputError(
            f"found two starts in one log: a vLLM line at line {vllm_at} and an SGLang line at line {r.era_lines['sglang']}; "
            "expected the lines of one start (split the log and read each part)"
        )


def _engine(r: Reader) -> dict[str, Found | None]:
    """The engine (vLLM unless a line proves SGLang) and its era, from the lines' hints."""
    engine_name = "sglang" if r.era_hints.get("sglang") else "vllm"
    any_line = next(iter(r.seen.values()))[0][1]
    engine = Found(engine_name, any_line.line_no, any_line.line_text)
    era_name = "sglang" if engine_name == "sglang" else "v0" if r.era_hints.get("v0", 0) > r.era_hints.get("v1", 0) else "v1" if r.era_hints.get("v1") else None
    era = Found(era_name, any_line.line_no, any_line.line_text) if era_name else None
    return {"engine": engine, "era": era}


def _parallel(r: Reader, sglang: bool, notes: list[str]) -> dict[str, Found | None]:
    """The model and how it is split: tensor, pipeline, data and expert parallel, from settings or rank prefixes."""
    model = _pick(r, "model", True, notes, "model") or _pick(r, "served", True, notes, "served model name")
    tp = _pick(r, "tp", True, notes, "tensor_parallel_size")
    if tp is None and sglang:
        tp = _sglang_dp_tp(r, notes)
    if tp is None and r.tp_ranks:
        ranks = ", ".join(f"TP{n}" for n in sorted(r.tp_ranks)[:8])
        notes.append(
            f"the rank prefixes show {len(r.tp_ranks)} tensor-parallel rank(s) ({ranks}), so tensor_parallel_size is at least {max(r.tp_ranks) + 1}; the log prints no setting"
        )
    pp = _pick(r, "pp", True, notes, "pipeline_parallel_size")
    if pp is None and r.pp_ranks:
        pp = _pp_from_ranks(r, notes)
    dp = _pick(r, "dp", True, notes, "data_parallel_size") or _dp_from_ranks(r, notes)
    ep = _expert_parallel(r, notes)
    return {"model": model, "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp, "expert_parallel": ep}


def _kv_dtype(r: Reader, vllm: bool, notes: list[str]) -> Found | None:
    """The KV cache's dtype: a setting that names one, else cache.py's fp8 line, else the setting (auto)."""
    kv_dtype = None
    dtypes = r.seen.get("kv_dtype") or []
    concrete = [f for v, f, _ in dtypes if str(v) != "auto"]
    cache_line = r.seen.get("kv_dtype_said") or []
    if concrete:
        kv_dtype = concrete[0]
    elif cache_line:
        # cache.py's "Using fp8 data type to store kv cache": the KV cache's own dtype, where no setting
        # gives it (an engine config line cut before its kv_cache_dtype); never the weights' dtype
        kv_dtype = cache_line[0][1]
    elif dtypes:
        kv_dtype = dtypes[0][1]
    if kv_dtype is None and vllm:
        notes.append(
            "the KV cache dtype is not printed (no kv_cache_dtype setting, no 'Using fp8 data type to store kv cache'): "
            "the command sets no --kv-cache-dtype, vLLM's default auto, which keeps the KV cache in the model's dtype; "
            "a dtype=torch.bfloat16 or a loading line's dtype is the weights', not the KV cache's"
        )
    return kv_dtype


def _loading(r: Reader, notes: list[str]) -> Found | None:
    """The weights one rank loaded: vLLM's loading line (the largest rank), SGLang's loads summed, or the profile's weights."""
    loading = _pick(r, "loading", False, notes, "model loading")
    if loading is None and "sg_loading" in r.seen:
        loading = _sglang_sum(
            r, "sg_loading", notes, "loaded weights {n} times on one rank (lines {lines}): the target's and the drafter's; the weights read are their sum"
        )
    if loading is None and "profile_weights" in r.seen:
        loading = _pick(r, "profile_weights", False, notes, "model weights")
    return loading


def _pool_counts(r: Reader, sglang: bool, max_len: Opt, block: Opt, notes: list[str]) -> dict[str, Found | None]:
    """The pool's tokens, blocks and concurrency; a concurrency and a block size the blocks per request give."""
    tokens = _pick(r, "tokens", True, notes, "KV cache tokens")
    if sglang and "sg_total" in r.seen:
        # a hybrid prints one "KV Cache is allocated. #tokens" per pool (full and sliding-window); the
        # capacity SGLang schedules by is max_total_num_tokens (model_runner.py)
        tokens = _pick(r, "sg_total", True, notes, "max_total_num_tokens")
    blocks = _pick(r, "blocks", True, notes, "GPU blocks")
    concurrency = _pick(r, "concurrency", True, notes, "maximum concurrency")
    dcp = _pick(r, "dcp", True, notes, "dcp_world_size")
    per_request = _pick(r, "blocks_per_request", True, notes, "blocks per request")
    groups = sorted({v for v, _, _ in r.seen.get("kv_group") or []})
    if blocks is not None and per_request is not None:
        concurrency = _concurrency_from_blocks(blocks, per_request, concurrency, tokens, max_len, groups, notes)
    if block is None and groups:
        block = _block_from_groups(r, groups, notes)
    return {"kv_tokens": tokens, "gpu_blocks": blocks, "max_concurrency": concurrency, "dcp_size": dcp, "block_size": block}


def _pool(r: Reader, sglang: bool, pin: Opt, tokens: Opt, notes: list[str]) -> dict[str, Found | None]:
    """The pool: SGLang's K and V summed (or what free memory fell by), else vLLM's printed pool,
    exact where a line gives its bytes, the reserved pin where printed; the pin if nothing else."""
    available = None
    if sglang and "sg_pool" in r.seen:
        available = _sglang_pool(r, notes)
        if "sg_swa" in r.seen:  # a sliding-window hybrid: its two pools are the full layers' and the window layers', not a drafter's
            notes[:] = [
                n.replace("the target's and the drafter's", "the full-attention layers' and the sliding-window layers'")
                if n.startswith("SGLang allocated")
                else n
                for n in notes
            ]
        if available.value == 0:
            _below_precision(available, tokens, notes)
            available = None
    elif sglang and "sg_avail_load" in r.seen and "sg_avail_pool" in r.seen:
        available = _sglang_pool_from_free(r, notes)
    else:
        available = _exact_pool(
            _pick(r, "available", True, notes, "available KV cache memory"), _pick(r, "available_exact", True, notes, "KV cache memory in use"), notes
        )
        pinned = _pick(r, "pinned_printed", True, notes, "reserved KV cache memory")
        if pinned is not None:
            if pin is not None and abs(pinned.value - pin.value) > pinned.half:
                notes.append(f"the pin {pin.value:,} B (line {pin.line_no}) and the reserved {pinned.printed} (line {pinned.line_no}) disagree")
            available = pinned
            if pin is None:
                pin = pinned
    if pin is not None and available is None:
        available = pin
    return {"available_kv_bytes": available, "kv_cache_memory_bytes": pin}


def _error(r: Reader, available: Opt, blocks: Opt, notes: list[str]) -> Found | None:
    """The check that refused the start (free memory, no KV memory, max_model_len), a negative pool
    or no blocks being no KV memory; a traceback that is none of them is said."""
    error = None
    errors = {v: f for v, f, _ in r.seen.get("error", [])}
    if available is not None and available.value < 0:
        errors.setdefault("no_kv_memory", available)
        notes.append(f"the KV pool came out negative ({available.printed}, line {available.line_no}): weights and overhead exceed what the fraction allows")
    if blocks is not None and blocks.value == 0:
        errors.setdefault("no_kv_memory", blocks)
    for _, f, _ in r.seen.get("sg_profiled_none", [])[:1]:
        notes.append(
            f"SGLang's memory profile left {f.printed} tokens for the KV cache (line {f.line_no}): what the weights leave is less than the "
            "(1 - mem_fraction_static) share SGLang keeps back, and it stops with 'Not enough memory' (model_runner.py)"
        )
    for kind in ("free_memory", "no_kv_memory", "max_model_len"):
        if kind in errors:
            e = errors[kind]
            error = Found(kind, e.line_no, e.line_text)
            break
    if error is None and r.traceback is not None and "oom" not in r.seen:
        if r.exception is not None:
            notes.append(
                f"a traceback (line {r.traceback}) ends in {r.exception[1]!r} (line {r.exception[0]}): the start failed, "
                "but not at one of the memory checks read here"
            )
        else:
            notes.append(
                f"a traceback begins at line {r.traceback}, but the paste holds no exception line after it: the start failed, and the reason was cut off"
            )
    return error


def _estimated(r: Reader, tokens: Opt, notes: list[str]) -> dict[str, Found | None]:
    """vLLM's estimated maximum model length; V0's capacity line gives it (and the tokens, where none are printed)."""
    estimated = _pick(r, "estimated", True, notes, "estimated maximum model length")
    if estimated is None and "v0_capacity" in r.seen:
        cap = _pick(r, "v0_capacity", True, notes, "")
        assert cap is not None  # seen, so picked
        estimated = Found(cap.value, cap.line_no, cap.line_text, cap.printed, derived=True)
        if tokens is None:
            tokens = cap
        notes.append(
            f"the V0 check prints the tokens the cache can hold ({cap.value:,}, line {cap.line_no}); "
            "that is the largest max_model_len that passes, given as the estimated maximum model length"
        )
    return {"estimated_max_model_len": estimated, "kv_tokens": tokens}


def _block_worked_out(got: dict[str, Found | None], notes: list[str]) -> Found | None:
    """A block size no line prints: V0's tokens over its blocks, or the blocks, the concurrency and max_model_len."""
    block, tokens, blocks, era = got["block_size"], got["kv_tokens"], got["gpu_blocks"], got["era"]
    era_name = era.value if era is not None else None
    if block is None and tokens is not None and blocks is not None and blocks.value and tokens.value % blocks.value == 0 and era_name == "v0":
        block = Found(
            tokens.value // blocks.value,
            tokens.line_no,
            f"{tokens.value:,} tokens / {blocks.value:,} blocks (lines {tokens.line_no}, {blocks.line_no})",
            derived=True,
        )
        notes.append(f"block size {block.value} is worked out from the tokens and the blocks, not printed")
    concurrency, max_len = got["max_concurrency"], got["max_model_len"]
    if block is None and blocks is not None and blocks.value and concurrency is not None and max_len is not None and era_name in ("v0", "v1"):
        block = _block_from_concurrency(blocks, concurrency, max_len, notes)
    return block


def _speculation(r: Reader) -> dict[str, Found | None]:
    """The speculative config, and whether a drafter was loaded (said, or a method that loads one)."""
    speculative = None
    if "speculative" in r.seen:
        s = _speculative_entry(r)
        speculative = Found({"method": s.value[0], "num_speculative_tokens": s.value[1]}, s.line_no, s.line_text)
    drafter = r.seen.get("drafter")
    drafter_loaded = drafter[0][1] if drafter else None
    if drafter_loaded is None and speculative is not None and (speculative.value["method"] or "").lower() not in _DRAFTERLESS:
        drafter_loaded = Found(True, speculative.line_no, speculative.line_text)
    return {"speculative": speculative, "drafter_loaded": drafter_loaded}


def _date(r: Reader, notes: list[str]) -> Found | None:
    """The earliest timestamp's day, where the timestamps carry a year."""
    if r.dates:
        day, no = min(r.dates)
        return Found(day, no, f"timestamp {day}")
    if r.month_days:
        notes.append(f"the timestamps carry month and day ({', '.join(sorted(r.month_days)[:3])}) but no year: the log's date is not known")
    return None


def _padding(r: Reader, notes: list[str]) -> Found | None:
    """A CUDA out-of-memory error after the checks is said; a hybrid's padding layers are read."""
    for _, f, _ in r.seen.get("oom", [])[:1]:
        notes.append(
            f"a CUDA out-of-memory error (line {f.line_no}): none of vLLM's start checks refused the start; memory ran out after them "
            "(CUDA graphs, warm-up or the first requests)"
        )
    padding = None
    for _, f, _ in r.seen.get("padding", [])[:1]:
        padding = Found(f.value[0], f.line_no, f.line_text, f"{f.value[0]} (up to {f.value[1]} % of the pool)")
        count, waste = f.value
        notes.append(
            f"a hybrid model: vLLM added {count} padding layers to group its KV layers, which may waste up to {waste} % of the pool (line {f.line_no}); "
            "pool / tokens is then an effective figure, not a per-layer cost"
        )
    return padding


def conclude(r: Reader) -> LogReading:
    """The reading of what the reader saw: each figure or group concluded by its function or its
    table's `Pick`, in the order their notes are said."""
    _refuse_what_is_no_log(r)
    notes = _unreadable_notes(r)
    _refuse_two_starts(r)
    got = _engine(r)
    engine, era = got["engine"], got["era"]
    assert engine is not None  # the engine is always concluded
    sglang = engine.value == "sglang"
    got |= _parallel(r, sglang, notes)
    got |= _picked(r, LENGTH, notes)
    got["kv_cache_dtype"] = _kv_dtype(r, not sglang, notes)
    got |= _picked(r, SETTINGS, notes)
    got["model_loading_bytes"] = _loading(r, notes)
    got |= _pool_counts(r, sglang, got["max_model_len"], got["block_size"], notes)
    got |= _pool(r, sglang, got["kv_cache_memory_bytes"], got["kv_tokens"], notes)
    got["error"] = _error(r, got["available_kv_bytes"], got["gpu_blocks"], notes)
    got |= _estimated(r, got["kv_tokens"], notes)
    got["block_size"] = _block_worked_out(got, notes)
    got |= _speculation(r)
    got["date"] = _date(r, notes)
    got |= _picked(r, MEMORY, notes)
    got["padding_layers"] = _padding(r, notes)

    pin, available, tokens, max_len, concurrency = (
        got[k] for k in ("kv_cache_memory_bytes", "available_kv_bytes", "kv_tokens", "max_model_len", "max_concurrency")
    )
    per_token = _bytes_per_token(pin, available, tokens, got["gpu_blocks"], got["block_size"], got["dcp_size"], got["kv_needed_bytes"], max_len,
                                 concurrency, notes, got["engine_version"])  # fmt: skip
    if not sglang and got["error"] is None and concurrency is None:
        per_token = _one_request_fits(per_token, pin or available, tokens, max_len, notes)
    missing: list[str] = []
    pool_unread = r.unread.get("available") or next(((no, what) for no, what in r.unreadable if what.startswith("KV pool ")), None)
    _missing(missing, engine.value, era.value if era is not None else None, got["model_loading_bytes"], available, pin, tokens, got["gpu_blocks"],
             got["block_size"], max_len, concurrency, got["gpu_memory_utilization"], got["mem_fraction_static"], got["tensor_parallel_size"],
             per_token, pool_unread)  # fmt: skip
    if r.last_partial is not None and r.last_partial[0] == r.lines_read:
        no, text = r.last_partial
        notes.append(f"line {no} ends mid-line ({text[-60:]!r}): the log is cut short there, and a figure cut off with it is not read")
        missing.append(f"the figure of line {no}, cut off")
    if not sglang and era is not None and era.value == "v1" and got["model_loading_bytes"] is not None and got["drafter_loaded"] is not None:
        notes.append(
            f"'Model loading took' (line {got['model_loading_bytes'].line_no}) includes the drafter's weights: V1 loads the drafter inside the same measured step"
        )
    return LogReading(**got, bytes_per_token=per_token, missing=missing, notes=notes)


def with_pin(reading: LogReading, pin: int, said: str) -> LogReading:
    """The reading with a pin the log does not print (typed, or from the command that started
    it): the pool is then exact, and the bytes per token follow from it."""
    found = Found(pin, 0, said, f"{pin:,} B")
    notes = [n for n in reading.notes]
    per_token = _bytes_per_token(
        found, reading.available_kv_bytes, reading.kv_tokens, reading.gpu_blocks, reading.block_size, reading.dcp_size,
        reading.kv_needed_bytes, reading.max_model_len, reading.max_concurrency, notes, reading.engine_version,
    )  # fmt: skip
    if (reading.engine is None or reading.engine.value == "vllm") and reading.error is None and reading.max_concurrency is None:
        per_token = _one_request_fits(per_token, found, reading.kv_tokens, reading.max_model_len, notes)
    missing: list[str] = []
    _missing(
        missing, reading.engine.value if reading.engine else "vllm", reading.era.value if reading.era else None, reading.model_loading_bytes,
        reading.available_kv_bytes, found, reading.kv_tokens, reading.gpu_blocks, reading.block_size, reading.max_model_len,
        reading.max_concurrency, reading.gpu_memory_utilization, reading.mem_fraction_static, reading.tensor_parallel_size, per_token,
    )  # fmt: skip
    if reading.available_kv_bytes is not None and not reading.available_kv_bytes.low <= pin <= reading.available_kv_bytes.high:
        notes.append(
            f"the pin given, {pin:,} B, is not the pool the log prints ({reading.available_kv_bytes.printed}, line {reading.available_kv_bytes.line_no})"
        )
    return replace(reading, kv_cache_memory_bytes=found, bytes_per_token=per_token, missing=missing, notes=notes)


def _exact_pool(available: Opt, exact: Opt, notes: list[str]) -> Found | None:
    """The pool in whole bytes (0.10.x's "Current kv cache memory in use is N bytes.") where the
    rounded "Available KV cache memory" agrees with it, or where that line is missing; ranks that
    print different pools are read at the smallest, as elsewhere."""
    if exact is None:
        return available
    if available is None or available.low <= exact.value <= available.high:
        return exact
    smallest = exact if exact.value < available.value else available
    notes.append(
        f"KV cache memory: ranks or repeats printed different figures: {available.printed} (line {available.line_no}), "
        f"{exact.printed} in use (line {exact.line_no}); reading the smallest, which vLLM sizes every rank's pool by"
    )
    return smallest


def _concurrency_from_blocks(blocks: Found, per_request: Found, concurrency: Opt, tokens: Opt, max_len: Opt, groups: list[Any], notes: list[str]) -> Opt:
    """A line that prints the pool's blocks and one full request's blocks (summed over the KV cache groups) gives vLLM's
    max_concurrency exactly: num_blocks / num_blocks_per_request (vllm/v1/core/kv_cache_utils.py,
    get_max_concurrency_for_kv_cache_config); the printed concurrency is checked against it, or stands in for it."""
    exact = Fraction(blocks.value, per_request.value)
    where = f"line {blocks.line_no}" if blocks.line_no == per_request.line_no else f"lines {blocks.line_no}, {per_request.line_no}"
    how = f"{blocks.value:,} blocks / {per_request.value:,} blocks per request ({where}) = {float(exact):.4f}"
    if groups:
        summed = sum(int(g[3]) for g in groups)
        sizes = ", ".join(f"group {g[0]} {g[1]} {g[2]}" for g in groups)
        agree = "add up to" if summed == per_request.value else f"add up to {summed}, not"
        notes.append(
            f"the KV cache groups' block sizes (tokens a block): {sizes}; their blocks per request {agree} the {per_request.value:,} the pool line prints"
        )
    if tokens is not None and max_len is not None:
        product = math.floor(exact * max_len.value)
        if product == tokens.value:
            notes.append(
                f"the token count {tokens.value:,} (line {tokens.line_no}) is int({blocks.value:,} / {per_request.value:,} x {max_len.value:,}): "
                "the concurrency x max_model_len, not a count of the tokens the pool's blocks hold"
            )
    if concurrency is not None:
        if abs(Fraction(concurrency.value) - exact) <= concurrency.half:
            notes.append(f"maximum concurrency {concurrency.printed} (line {concurrency.line_no}) = {how}, as vLLM works it out")
            return replace(concurrency, exact=exact)
        notes.append(f"maximum concurrency {concurrency.printed} (line {concurrency.line_no}) is not {how}: the printed figure is read")
        return concurrency
    shown_value = f"{float(exact):.2f}"
    notes.append(f"maximum concurrency {shown_value}x is worked out: {how}, as vLLM works it out; the log prints no concurrency line")
    return Found(Decimal(shown_value), per_request.line_no, how, f"{shown_value}x", Fraction(1, 200), derived=True, exact=exact)


def _block_from_groups(r: Reader, groups: list[Any], notes: list[str]) -> Found | None:
    """A hybrid's block size, where nothing else prints it: its full-attention group's, from the per-group KV lines."""
    attention = [g for g in groups if "Attention" in str(g[1]) and "SlidingWindow" not in str(g[1])]
    if not attention:
        return None
    g = attention[0]
    line = next(f for v, f, _ in r.seen["kv_group"] if v == g)
    notes.append(f"block size {g[2]} is the full-attention group's (group {g[0]}, {g[1]}, line {line.line_no}); each group has its own")
    return Found(g[2], line.line_no, line.line_text, str(g[2]), derived=True)


def _block_from_concurrency(blocks: Found, concurrency: Found, max_len: Found, notes: list[str]) -> Found | None:
    """Builds that print blocks compute the concurrency as blocks x block_size / max_model_len
    (V0: vllm/executor/gpu_executor.py 0.6.x, executor_base.py 0.7-0.10; V1: v1/core/kv_cache_utils.py
    0.7.x), so the block size follows, when the printed two decimals leave only one whole number."""
    printed = Fraction(concurrency.value)
    low = (printed - concurrency.half) * max_len.value / blocks.value
    high = (printed + concurrency.half) * max_len.value / blocks.value
    candidates = list(range(max(1, math.ceil(low)), math.floor(high) + 1))
    if len(candidates) != 1:
        return None
    size = candidates[0]
    how = (
        f"block size {size}: {concurrency.printed} x {fmt(max_len.value, 'count')} / {fmt(blocks.value, 'count')} blocks = "
        f"{fmt(Fraction(printed) * max_len.value / blocks.value, 'plain')} ({fmt(Fraction(low), 'plain', down=True)} to {fmt(Fraction(high), 'plain', up=True)} "
        f"with the printing's rounding; lines {concurrency.line_no}, {blocks.line_no})"
    )
    notes.append(how + "; worked out, not printed")
    return Found(size, concurrency.line_no, how, derived=True)


def _sglang_pool(r: Reader, notes: list[str]) -> Found:
    """SGLang prints one "KV Cache is allocated" per pool and rank; a drafter has its own pool."""
    return _sglang_sum(r, "sg_pool", notes, "allocated {n} KV pools on one rank (lines {lines}): the target's and the drafter's; the pool read is their sum")


def _below_precision(pool: Found, tokens: Opt, notes: list[str]) -> None:
    """SGLang prints K and V with two decimals ("K size: %.2f GB", mem_cache/memory_pool.py): a pool
    printed "0.00 GB" for each is anything under half a hundredth per figure, not a measured 0 bytes."""
    most = math.ceil(pool.high)
    said = f"SGLang printed the pool as {pool.printed} (line {pool.line_no}): each figure is under 0.005 GB, so the pool is 0 to {fmt(pool.high, 'GiB')} "
    said += f"(under {most:,} B), below what the printing can tell; it is not read as a measured figure"
    if tokens is not None and tokens.value > 0:
        said += f", and the bytes per token are at most {most:,} B / {tokens.value:,} tokens = {math.ceil(Fraction(most, tokens.value)):,} B"
    notes.append(said)


def _sglang_pool_from_free(r: Reader, notes: list[str]) -> Found | None:
    """Without its "KV Cache is allocated" line, SGLang's pool is what free memory fell by between
    "Load weight end" and "Memory pool end" on one rank (the token-to-request table is in it too)."""
    for _, after, rank in r.seen["sg_avail_pool"]:
        before = next((f for _, f, k in r.seen["sg_avail_load"] if k == rank), None)
        if before is None:
            continue
        exact = (before.value - after.value) * GiB
        pool = Found(round(exact), after.line_no, after.line_text, f"{before.printed} - {after.printed}", Fraction(GiB, 100), derived=True, exact=exact)
        notes.append(
            f"SGLang's pool is worked out, not printed: free memory fell from {before.printed} (line {before.line_no}) to {after.printed} "
            f"(line {after.line_no}) on {rank or 'the rank'} when the pool was allocated, {fmt(exact, 'GiB')}"
        )
        return pool
    return None


def _sglang_sum(r: Reader, name: str, notes: list[str], said: str) -> Found:
    """What SGLang prints once for the target and once for a drafter adds up on each rank; ranks
    are alike, and the smallest is read. A figure printed twice alike on one rank counts once."""
    by_rank: dict[str | None, list[Found]] = {}
    for _, f, rank in r.seen[name]:
        by_rank.setdefault(rank, []).append(f)
    totals = []
    for parts in by_rank.values():
        exact = sum(f.value[0] for f in parts)
        half = sum((f.value[1] for f in parts), Fraction(0))
        printed = " + ".join(f.value[2] for f in parts)
        totals.append(Found(round(exact), parts[0].line_no, parts[0].line_text, printed, half, exact=exact))
        if len(parts) > 1 and len(totals) == 1:
            notes.append("SGLang " + said.format(n=len(parts), lines=", ".join(str(f.line_no) for f in parts)))
    return min(totals, key=lambda f: f.value)


def _release(version: Opt) -> tuple[int, int, int] | None:
    """The release of a printed engine version ("0.13.0+faa43dbf.nv26.01": (0, 13, 0); "0.20": (0, 20, 0)); none
    for a source build without a release tag, which setuptools-scm numbers "0.1.devN+gHASH" whatever its age."""
    if version is not None and re.match(r"v?0\.1\.dev", str(version.value)):
        return None
    found = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", str(version.value)) if version is not None and version.value else None
    return (int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)) if found else None


def _token_count_how(tokens: Found, concurrency: Found, max_len: Found, version: Opt) -> str:
    """What the printed token count is, by version (vllm/v1/core/kv_cache_utils.py): from 0.20.1
    int(concurrency x max_model_len) (0.20.0 still counts blocks); before, the pool's blocks x block size (per KV group), which
    equals concurrency x max_model_len for full attention."""
    matches = abs(tokens.value - Fraction(concurrency.value) * max_len.value) <= concurrency.half * max_len.value + 1
    release = _release(version)
    if release is not None and release < (0, 20, 1):
        if matches:
            return (
                f"; the token count is the pool's blocks x block size, as {version.value} prints it (builds up to 0.20.0), "  # type: ignore[union-attr]
                "and equals the concurrency x max_model_len, as it does for full attention"
            )
        return f"; the token count is the pool's blocks (per KV group), as {version.value} prints it (builds up to 0.20.0), not the concurrency x max_model_len"  # type: ignore[union-attr]
    if matches:
        if release is not None:
            return "; the token count is the concurrency x max_model_len (as builds from 0.20.1 print it), so this is an effective figure at this max_model_len"
        return (
            "; the token count equals the concurrency x max_model_len: builds from 0.20.1 print it so (an effective figure at this max_model_len), "
            "earlier builds print the pool's blocks, which agree for full attention; the log prints no version to tell which"
        )
    return "; the token count is not the concurrency x max_model_len here, so it counts the pool's blocks (per KV group), as builds up to 0.20.0 print it"


def _bytes_per_token(
    pin: Opt,
    available: Opt,
    tokens: Opt,
    blocks: Opt,
    block: Opt,
    dcp: Opt,
    kv_needed: Opt,
    max_len: Opt,
    concurrency: Opt,
    notes: list[str],
    version: Opt = None,
) -> Derived | None:
    pool = pin if pin is not None else available
    if pool is not None and pool.value > 0:
        count, count_how, lines = None, "", [pool.line_no]
        if tokens is not None and tokens.value > 0:
            count = tokens.value
            count_how = f"{tokens.value:,} tokens (line {tokens.line_no})"
            lines.append(tokens.line_no)
            if dcp is not None and dcp.value > 1:
                count = Fraction(tokens.value, dcp.value)
                count_how += f" / dcp {dcp.value} (line {dcp.line_no}: the printed count is multiplied by the decode-context-parallel size)"
                lines.append(dcp.line_no)
        elif blocks is not None and blocks.value > 0 and block is not None:
            count = blocks.value * block.value
            count_how = f"{blocks.value:,} blocks x {block.value} tokens (lines {blocks.line_no}, {block.line_no})"
            lines.append(blocks.line_no)
        if count:
            pool_how = "the pin" if pool is pin else "the pool"
            exact = "exact" if not pool.half else f"printed as {pool.printed}, so +- {_fmt_half(pool.half)}"
            where = f"line {pool.line_no}" if pool.line_no else pool.line_text
            how = f"{pool_how} {pool.value:,} B ({where}, {exact}) / {count_how}, per rank"
            if tokens is not None and concurrency is not None and max_len is not None:
                how += _token_count_how(tokens, concurrency, max_len, version)
            value = Fraction(pool.value) / count
            return Derived(value, Fraction(pool.low) / count, Fraction(pool.high) / count, how, tuple(lines))
    if kv_needed is not None and max_len is not None:
        how = (
            f"{kv_needed.printed} needed for one request of {max_len.value:,} tokens (line {kv_needed.line_no}) / {max_len.value:,}, per rank; "
            "from the one-request check, which holds any context-independent part too"
        )
        return Derived(
            Fraction(kv_needed.value, max_len.value), Fraction(kv_needed.low, max_len.value), Fraction(kv_needed.high, max_len.value), how, (kv_needed.line_no,)
        )
    return None


def _one_request_fits(per_token: Derived | None, pool: Opt, tokens: Opt, max_len: Opt, notes: list[str]) -> Derived | None:
    """vLLM prints "GPU KV cache size" only after check_enough_kv_cache_memory has found one request of
    max_model_len fits the pool (vllm/v1/core/kv_cache_utils.py). A pool / tokens whose max_model_len
    tokens exceed the pool is then no per-token cost: builds up to 0.20.0 print the tokens per KV group
    on hybrid models (sliding-window or mamba groups), and the concurrency line that would tell is missing."""
    if per_token is None or pool is None or tokens is None or max_len is None or tokens.line_no not in per_token.lines:
        return per_token
    cost = per_token.low * max_len.value
    if cost <= pool.high:
        return per_token
    notes.append(
        f"pool / tokens is {fmt(per_token.value, 'count')} B per token (lines {pool.line_no}, {tokens.line_no}), and {fmt(max_len.value, 'count')} of them "
        f"(line {max_len.line_no}) come to {fmt(cost, 'GiB')}, more than the {pool.printed} pool, although vLLM prints the token count only once one "
        "such request fits: the figures are inconsistent, so no bytes per token is given; the token count is the pool's tokens per KV group "
        "(a hybrid model, builds up to 0.20.0), and the concurrency line, which would give one request's cost, is not in the log"
    )
    return None


def _fmt_half(half: Fraction) -> str:
    if half >= GiB // 1000:
        return f"{float(half / GiB):g} GiB"
    return f"{float(half / MiB):g} MiB"


def _missing(
    missing: list[str], engine: str, era: str | None, loading: Opt, available: Opt, pin: Opt, tokens: Opt, blocks: Opt, block: Opt,
    max_len: Opt, concurrency: Opt, fraction: Opt, mem_fraction: Opt, tp: Opt, per_token: Derived | None,
    unread: tuple[int, str] | None = None,
) -> None:  # fmt: skip
    if loading is None:
        said = "'Load weight end ... mem usage'" if engine == "sglang" else "'Model loading took'"
        missing.append(f"the weights (no {said} line): what one rank holds cannot be split into weights and overhead")
    if available is None and pin is None:
        if unread is not None:
            missing.append(f"the KV pool in bytes: line {unread[0]} has its words but not a figure an engine prints ({unread[1]!r})")
        elif era == "v1":
            missing.append(
                "the KV pool in bytes: V1 builds before 0.9.1 print no 'Available KV cache memory' line; "
                "the pool is tokens x bytes per token, if the bytes per token are known from elsewhere"
            )
        else:
            missing.append("the KV pool in bytes")
    if engine == "vllm" and pin is None and available is not None and available.half:
        if "as specified by kv_cache_memory_bytes" in available.line_text:
            missing.append(f"kv_cache_memory_bytes in bytes: the log prints the pin as {available.printed}, known to +- {_fmt_half(available.half)}")
        else:
            missing.append(f"kv_cache_memory_bytes: the pool is the profiled {available.printed}, known to +- {_fmt_half(available.half)}")
    if tokens is None:
        if blocks is not None and block is not None:
            missing.append(f"the token count: V0 prints blocks; {blocks.value:,} blocks x {block.value} = {blocks.value * block.value:,} tokens")
        elif blocks is not None:
            missing.append("the token count and the block size: tokens = blocks x block size (16 is vLLM's default on CUDA, not assumed here)")
        else:
            missing.append(
                "the token count ('KV Cache is allocated. #tokens' or 'max_total_num_tokens')"
                if engine == "sglang"
                else "the token count ('GPU KV cache size')"
            )
    if max_len is None:
        missing.append("max_model_len: full contexts and the per-request cost cannot be worked out")
    if concurrency is None and engine == "vllm" and tokens is not None and max_len is not None and per_token is None and (available or pin):
        missing.append("the concurrency line: the token count counts per KV group here (see the notes), so the full contexts are not known")
    elif concurrency is None and engine == "vllm" and tokens is not None and max_len is not None:
        missing.append(
            f"the concurrency line: {fmt(tokens.value, 'count')} / {fmt(max_len.value, 'count')} = "
            f"{fmt(Fraction(tokens.value, max_len.value), 'plain', down=True)} full contexts, rounded down"
        )
    if engine == "vllm" and fraction is None and pin is None:
        missing.append("gpu_memory_utilization (vLLM's default has changed between releases, so it is not assumed; the catalog's policy.yaml gives each)")
    if engine == "sglang" and mem_fraction is None:
        missing.append("mem_fraction_static (the ServerArgs line)")
    if tp is None:
        missing.append("tensor_parallel_size: every figure is one rank's; how many ranks there are is not known")
    if per_token is None and not (tokens is not None and (available or pin)):  # with both, the notes say why there is none
        missing.append("bytes per token: needs the pool in bytes and the token count (or blocks and block size)")
