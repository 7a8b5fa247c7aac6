"""The KV pool and its counts: the weights a rank loaded, the pool in bytes (vLLM's printed or
exact pool, the pin, SGLang's pools summed or what free memory fell by), its tokens, blocks,
concurrency and block size, worked out with the printing's rounding where no line prints them."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from calc.logs.conclude.picks import pick
from calc.logs.figures import Found, GiB, Opt
from calc.units import fmt

if TYPE_CHECKING:
    from calc.logs.reader import Reader


def loading(r: Reader, notes: list[str]) -> Found | None:
    """The weights one rank loaded: vLLM's loading line (the largest rank), SGLang's loads summed, or the profile's weights."""
    loading = pick(r, "loading", False, notes, "model loading")
    if loading is None and "sg_loading" in r.seen:
        loading = sglang_sum(
            r, "sg_loading", notes, "loaded weights {n} times on one rank (lines {lines}): the target's and the drafter's; the weights read are their sum"
        )
    if loading is None and "profile_weights" in r.seen:
        loading = pick(r, "profile_weights", False, notes, "model weights")
    return loading


def pool_counts(r: Reader, sglang: bool, max_len: Opt, block: Opt, notes: list[str]) -> dict[str, Found | None]:
    """The pool's tokens, blocks and concurrency; a concurrency and a block size the blocks per request give."""
    tokens = pick(r, "tokens", True, notes, "KV cache tokens")
    if sglang and "sg_total" in r.seen:
        # a hybrid prints one "KV Cache is allocated. #tokens" per pool (full and sliding-window); the
        # capacity SGLang schedules by is max_total_num_tokens (model_runner.py)
        tokens = pick(r, "sg_total", True, notes, "max_total_num_tokens")
    blocks = pick(r, "blocks", True, notes, "GPU blocks")
    concurrency = pick(r, "concurrency", True, notes, "maximum concurrency")
    dcp = pick(r, "dcp", True, notes, "dcp_world_size")
    per_request = pick(r, "blocks_per_request", True, notes, "blocks per request")
    groups = sorted({v for v, _, _ in r.seen.get("kv_group") or []})
    if blocks is not None and per_request is not None:
        concurrency = _concurrency_from_blocks(blocks, per_request, concurrency, tokens, max_len, groups, notes)
    if block is None and groups:
        block = _block_from_groups(r, groups, notes)
    return {"kv_tokens": tokens, "gpu_blocks": blocks, "max_concurrency": concurrency, "dcp_size": dcp, "block_size": block}


def kv_pool(r: Reader, sglang: bool, pin: Opt, tokens: Opt, notes: list[str]) -> dict[str, Found | None]:
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
            pick(r, "available", True, notes, "available KV cache memory"), pick(r, "available_exact", True, notes, "KV cache memory in use"), notes
        )
        available = _measured(r, available, notes)
        limiting = _limiting_worker(r, available, notes)
        # vLLM applies --num-gpu-blocks-override before it fits max_model_len (kv_cache_utils.py, 0.24.0 to
        # 0.31.0), so the auto-fit line's figure is the overridden pool already: overridden once, not again
        available = _overridden(r, available, notes) if limiting is available else limiting
        pinned = pick(r, "pinned_printed", True, notes, "reserved KV cache memory")
        if pinned is not None:
            if pin is not None and abs(pinned.value - pin.value) > pinned.half:
                notes.append(f"the pin {pin.value:,} B (line {pin.line_no}) and the reserved {pinned.printed} (line {pinned.line_no}) disagree")
            available = pinned
            if pin is None:
                pin = pinned
    if pin is not None and available is None:
        available = pin
    if pin is not None and "Applying persisted startup plan" in pin.line_text:
        notes.append(
            f"kv_cache_memory_bytes {pin.value:,} B comes from a startup plan an earlier start saved (line {pin.line_no}, VLLM_ENABLE_STARTUP_PLAN): "
            "vLLM skipped its profile and took the saved pool, not --gpu-memory-utilization"
        )
    return {"available_kv_bytes": available, "kv_cache_memory_bytes": pin}


def _measured(r: Reader, available: Opt, notes: list[str]) -> Opt:
    """From 0.34.0 the extensible KV cache sizes the pool after warmup ("Memory after warmup: ... N KV
    cache blocks (S GiB) fit within the requested R GiB", vllm/v1/worker/extensible_kv_cache.py): S is
    the pool; the 'Available KV cache memory' printed before it is the address range reserved."""
    measured = pick(r, "measured_pool", True, notes, "KV pool measured after warmup")
    if measured is None:
        return available
    reserved = f"; 'Available KV cache memory' {available.printed} (line {available.line_no}) is the range it reserved" if available else ""
    notes.append(f"vLLM sized the pool after warmup (the extensible KV cache, 0.34.0's default): {measured.printed} (line {measured.line_no}){reserved}")
    return measured


def _overridden(r: Reader, available: Opt, notes: list[str]) -> Opt:
    """--num-gpu-blocks-override: vLLM allocates the count set, not the count the profiled pool
    holds ("Overriding num_gpu_blocks=N with num_gpu_blocks_override=M", vllm/v1/core/kv_cache_utils.py;
    kv_cache_planning.py in 0.33.0), so the pool is M blocks of pool // N bytes each: between
    pool x M / (N + 1) and pool x M / N, the printed pool at the ends of its rounding."""
    entries = r.seen.get("blocks_override") or []
    if not entries:
        return available
    (profiled, override), line, _ = entries[0]
    if available is None or available.value <= 0:
        notes.append(f"--num-gpu-blocks-override set the pool to {override:,} blocks (line {line.line_no}), not the {profiled:,} the profile left")
        return available
    low, high = Fraction(available.low) * override / (profiled + 1), Fraction(available.high) * override / profiled
    how = (
        f"{available.printed} (line {available.line_no}) x {override:,} / {profiled:,} blocks (line {line.line_no}) = "
        f"{fmt(Fraction(printed_exact(available)) * override / profiled, 'GiB')}, {fmt(low, 'GiB', down=True)} to {fmt(high, 'GiB', up=True)}"
    )
    notes.append(
        f"KV pool: --num-gpu-blocks-override allocates {override:,} blocks, not the {profiled:,} the profiled pool holds, so the pool is {how} "
        "(a block's bytes are the profiled pool // its blocks); the figures worked from the pool follow it"
    )
    mid = (low + high) / 2
    return Found(round(mid), line.line_no, how, fmt(mid, "GiB"), (high - low) / 2, derived=True, exact=mid)


def printed_exact(found: Found) -> Fraction:
    return Fraction(found.exact if found.exact is not None else found.value)


def worker(r: Reader, found: Found) -> str:
    """The worker a figure's line names, where its prefix names a pipeline stage: ", stage 0's worker"."""
    stage = r.stage_of.get(found.line_no)
    return f", stage {stage}'s worker" if stage is not None else ""


def _limiting_worker(r: Reader, available: Opt, notes: list[str]) -> Opt:
    """--max-model-len auto names the pool of the worker that limits the length (_auto_fit_max_model_len,
    vllm/v1/core/kv_cache_utils.py 0.14 on, kv_cache_planning.py in 0.33.0). Under pipeline parallelism
    each stage profiles its own pool and vLLM gives every worker the smallest count of blocks
    (get_kv_cache_configs), so where that pool is below the one the log's worker lines print, a
    worker whose line is not in the log limits the start: its figure is read, and every figure after
    it follows it."""
    fit = pick(r, "fit_pool", True)
    if fit is None:
        return available
    lines = f"the auto-fit line (line {fit.line_no}) names the KV memory of the worker that limits max_model_len, {fit.printed}"
    lesser = " (from 0.31 that worker's pool less one block, the null block vLLM keeps back)"
    if available is None:
        notes.append(f"KV pool: {lines}{lesser}; no worker's own pool line is in the log, so it is read")
        return fit
    size = pick(r, "pp", False)
    staged = (size is not None and size.value > 1) or len(r.pp_ranks) > 0
    if fit.high < available.low and not staged:
        notes.append(
            f"KV pool: {lines}{lesser}, below the {available.printed} of line {available.line_no}; with no pipeline stages every worker's "
            "pool is alike, so the pool read stays the printed one"
        )
        return available
    if fit.high < available.low:
        stages = sorted(r.pp_ranks)
        other = ""
        if len(stages) == 1 and r.stage_of.get(available.line_no) is not None:
            which = f" (of {size.value} stages, stage {1 - stages[0]})" if size is not None and size.value == 2 and stages[0] in (0, 1) else ""
            other = f"; the log prints stage {stages[0]}'s pool alone, so the limiting worker is on another stage{which}"
        notes.append(
            f"KV pool: {lines}{lesser}, less than the {available.printed} of line {available.line_no}{worker(r, available)}{other}: "
            "vLLM fits the length to that worker and gives every worker the smallest count of blocks (get_kv_cache_configs), "
            f"so the pool read is the limiting worker's {fit.printed} (line {fit.line_no}), and the figures worked from the pool follow it"
        )
        return fit
    notes.append(f"KV pool: {lines}{lesser}; the {available.printed} of line {available.line_no}{worker(r, available)} is that worker's or agrees with it")
    return available


def total_from_graphs(r: Reader, total: Opt, requested: Opt, notes: list[str]) -> Found | None:
    """The card's total from the CUDA-graph advice: vLLM prints the current fraction F, F - d
    (where profiling of CUDA graph memory is on) and F + d, each rounded to four decimals, with
    d = the estimate / total (vllm/v1/worker/gpu_worker.py determine_available_memory, 0.18 on), and
    prints the estimate itself ("Estimated CUDA graph memory: X GiB", gpu_model_runner.py). So the
    total is the estimate / d, bounded by the printing's rounding of each. One estimate and one
    advice only: ranks with different figures are not paired."""
    advices = {v for v, _, _ in r.seen.get("cg_advice", [])}
    estimates = {v for v, _, _ in r.seen.get("cuda_graph", [])}
    if len(advices) != 1 or len(estimates) != 1:
        return None
    (_, advice, _), (_, estimate, _) = r.seen["cg_advice"][0], r.seen["cuda_graph"][0]
    current, equivalent, suggested = advice.value
    quarter = Fraction(1, 20000)  # half the last of four decimals
    f, s = Fraction(current), Fraction(suggested)
    if equivalent is not None and s < 1:
        d, half, how = (s - Fraction(equivalent)) / 2, quarter, f"({suggested} - {equivalent}) / 2"
    elif equivalent is not None:
        d, half, how = f - Fraction(equivalent), 2 * quarter, f"{current} - {equivalent}"
    elif s < 1:
        d, half, how = s - f, 2 * quarter, f"{suggested} - {current}"
    else:
        return None
    if d - half <= 0 or estimate.value <= 0:
        return None
    low, high = Fraction(estimate.low) / (d + half), Fraction(estimate.high) / (d - half)
    mid = Fraction(estimate.exact if estimate.exact is not None else estimate.value) / d
    how = (
        f"the estimate {estimate.printed} (line {estimate.line_no}) / {how} (the CUDA-graph advice, line {advice.line_no}) = {fmt(mid, 'GiB')}, "
        f"{fmt(low, 'GiB', down=True)} to {fmt(high, 'GiB', up=True)} with the printing's rounding"
    )
    found = Found(round(mid), advice.line_no, how, fmt(mid, "GiB"), (high - low) / 2, derived=True, exact=(low + high) / 2)
    if total is None and requested is None:
        notes.append(f"the card's total is not printed; vLLM's advice on CUDA graph memory gives it: {how}")
    elif total is not None:
        agree = "within" if low <= total.value <= high else "outside"
        notes.append(f"the card's total worked out from the CUDA-graph advice, {how}, is {agree} the printed {total.printed} (line {total.line_no})")
    return found


def estimated_length(r: Reader, tokens: Opt, notes: list[str]) -> dict[str, Found | None]:
    """vLLM's estimated maximum model length; V0's capacity line gives it (and the tokens, where none are printed)."""
    estimated = pick(r, "estimated", True, notes, "estimated maximum model length")
    if estimated is None and "v0_capacity" in r.seen:
        cap = pick(r, "v0_capacity", True, notes, "")
        assert cap is not None  # seen, so picked
        estimated = Found(cap.value, cap.line_no, cap.line_text, cap.printed, derived=True)
        if tokens is None:
            tokens = cap
        notes.append(
            f"the V0 check prints the tokens the cache can hold ({cap.value:,}, line {cap.line_no}); "
            "that is the largest max_model_len that passes, given as the estimated maximum model length"
        )
    return {"estimated_max_model_len": estimated, "kv_tokens": tokens}


def block_worked_out(got: dict[str, Found | None], notes: list[str]) -> Found | None:
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
    return sglang_sum(r, "sg_pool", notes, "allocated {n} KV pools on one rank (lines {lines}): the target's and the drafter's; the pool read is their sum")


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


def sglang_sum(r: Reader, name: str, notes: list[str], said: str) -> Found:
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
