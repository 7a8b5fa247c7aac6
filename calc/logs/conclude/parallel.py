"""The engine and its era, the model, and how it is split: tensor, pipeline, data and expert
parallel, from the settings or from the ranks' prefixes."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from calc.logs.conclude.picks import pick
from calc.logs.figures import Found

if TYPE_CHECKING:
    from calc.logs.reader import Reader


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


def engine_and_era(r: Reader) -> dict[str, Found | None]:
    """The engine (vLLM unless a line proves SGLang) and its era, from the lines' hints."""
    engine_name = "sglang" if r.era_hints.get("sglang") else "vllm"
    any_line = next(iter(r.seen.values()))[0][1]
    engine = Found(engine_name, any_line.line_no, any_line.line_text)
    era_name = "sglang" if engine_name == "sglang" else "v0" if r.era_hints.get("v0", 0) > r.era_hints.get("v1", 0) else "v1" if r.era_hints.get("v1") else None
    era = Found(era_name, any_line.line_no, any_line.line_text) if era_name else None
    return {"engine": engine, "era": era}


def parallel(r: Reader, sglang: bool, notes: list[str]) -> dict[str, Found | None]:
    """The model and how it is split: tensor, pipeline, data and expert parallel, from settings or rank prefixes."""
    model = pick(r, "model", True, notes, "model") or pick(r, "served", True, notes, "served model name")
    tp = pick(r, "tp", True, notes, "tensor_parallel_size")
    if tp is None and sglang:
        tp = _sglang_dp_tp(r, notes)
    if tp is None and r.tp_ranks:
        ranks = ", ".join(f"TP{n}" for n in sorted(r.tp_ranks)[:8])
        notes.append(
            f"the rank prefixes show {len(r.tp_ranks)} tensor-parallel rank(s) ({ranks}), so tensor_parallel_size is at least {max(r.tp_ranks) + 1}; the log prints no setting"
        )
    pp = pick(r, "pp", True, notes, "pipeline_parallel_size")
    if pp is None and r.pp_ranks:
        pp = _pp_from_ranks(r, notes)
    dp = pick(r, "dp", True, notes, "data_parallel_size") or _dp_from_ranks(r, notes)
    ep = _expert_parallel(r, notes)
    return {"model": model, "tensor_parallel_size": tp, "pipeline_parallel_size": pp, "data_parallel_size": dp, "expert_parallel": ep}
