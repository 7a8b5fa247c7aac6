"""The least changes that pass, ranked, each checked against the log's own figures (or marked
unchecked where the log prints none to check it by), for each phase a start fails in."""

from __future__ import annotations

import math
from fractions import Fraction

from calc.answers.logverdict.command import proven_flags
from calc.answers.logverdict.printing import as_printed, ceil2, end, floor2, ftext, gib, printed
from calc.answers.logverdict.result import Fix, Phase
from calc.answers.logverdict.watcher import GiB, Watcher
from calc.logs.logread import Found, LogReading
from calc.units import shown


def _tp(r: LogReading, flags: dict[str, str | None]) -> int:
    if r.tensor_parallel_size is not None:
        return int(r.tensor_parallel_size.value)
    value = flags.get("--tensor-parallel-size") or flags.get("--tp-size")
    return int(value) if value and value.isdigit() else 1


def _total(r: LogReading) -> tuple[Fraction, Fraction, str] | None:
    """The card's total: the ends a larger fraction is sized by (the low) and checked against the
    free memory by (the high), and where it came from, where the log does not print it."""
    if r.total_memory_bytes is not None:
        return Fraction(r.total_memory_bytes.value), Fraction(r.total_memory_bytes.value), ""
    if r.requested_memory_bytes is not None and r.gpu_memory_utilization is not None and r.gpu_memory_utilization.value:
        total = Fraction(r.requested_memory_bytes.value) / Fraction(r.gpu_memory_utilization.value)
        return total, total, ""
    worked = r.total_from_graphs
    if worked is not None:
        low = shown(Fraction(worked.low), "GiB", down=True)
        said = f" (the low end of the total worked out from vLLM's CUDA-graph advice: {worked.line_text})"
        return low, Fraction(worked.high), said
    return None


def least_changes(r: LogReading, w: Watcher, phase: Phase | None, sglang: bool) -> list[Fix]:
    name = phase["phase"] if phase else None
    flags = proven_flags(r, w, sglang)
    if sglang:
        return _sglang_fixes(r, w, name)
    if name == "max_model_len":
        return _max_len_fixes(r, flags)
    if name == "free_memory":
        return _free_fixes(r)
    if name == "kv_cache_allocation":
        return _no_pool_fixes(r, w, flags)
    if name in ("cuda_graph_capture", "sampler_warmup", "profile_run", "kv_cache_tensors", "loading_weights"):
        return _oom_fixes(r, w, flags, name)
    return []


def _kv_is_16bit(r: LogReading, flags: dict[str, str | None]) -> bool:
    dtype = str(r.kv_cache_dtype.value) if r.kv_cache_dtype is not None else (flags.get("--kv-cache-dtype") or "auto")
    return dtype in ("auto", "bfloat16", "float16", "torch.bfloat16", "torch.float16", "half")


def _max_len_fixes(r: LogReading, flags: dict[str, str | None]) -> list[Fix]:
    out: list[Fix] = []
    length, needed, pool, est = r.max_model_len, r.kv_needed_bytes, r.available_kv_bytes, r.estimated_max_model_len
    if est is not None and est.value > 0:
        check = f"the engine's own estimate of the longest request the pool holds (line {est.line_no})"
        if needed is not None and length is not None and pool is not None:
            cost = printed(needed) * est.value / length.value
            check += f"; {est.value:,} tokens x {gib(needed.value)} / {length.value:,} = {gib(cost)}, within the {pool.printed} pool"
        out.append(Fix("--max-model-len", str(est.value), "at most the engine's estimate", check, True))
    elif needed is not None and length is not None and pool is not None and needed.value > 0:
        low, high = shown(Fraction(pool.low), "GiB", 3), shown(Fraction(needed.high), "GiB", 3)
        longest = math.floor(low * length.value / high)
        check = (
            f"{end(low)} pool (the low end of the printed {pool.printed}, line {pool.line_no}) x {length.value:,} / {end(high)} needed "
            f"(the high end of the printed {needed.printed}, line {needed.line_no}) = {longest:,} tokens, rounded down: "
            "each figure at the end of its printing that gives the fewest; the engine printed no estimate"
        )
        if longest > 0:
            out.append(Fix("--max-model-len", str(longest), "the longest request the printed pool holds", check, True))
    stated = r.kv_cache_dtype is not None or "--kv-cache-dtype" in flags
    if needed is not None and pool is not None and _kv_is_16bit(r, flags):
        ok = Fraction(needed.high) / 2 <= pool.low
        check = f"one request needs {needed.printed} at 16 bits (line {needed.line_no}), {needed.printed} / 2 = {gib(printed(needed) / 2)} at fp8, {'within' if ok else 'more than'} the {pool.printed} pool"
        verdict: bool | None = ok
        if not stated:
            check = "if the KV cache was 16-bit (the log does not print its dtype): " + check
            # unstated, the cache is 16-bit (halved by fp8), 8-bit already (unchanged) or, for a float32
            # model, 32-bit (quartered): where even the quarter does not fit, no reading of it passes
            verdict = None if Fraction(needed.high) / 4 <= pool.low else False
            if verdict is False:
                check += f"; even a 32-bit cache quartered ({gib(printed(needed) / 4)}) is more than the pool"
        out.append(Fix("--kv-cache-dtype", "fp8", "halves the KV cache's bytes per token (keeps max_model_len)", check, verdict))
    totals = _total(r)
    fraction = r.gpu_memory_utilization
    if needed is not None and pool is not None and totals is not None and totals[0] and fraction is not None:
        total, top, said = totals
        up = ceil2(Fraction(fraction.value) + (Fraction(needed.high) - Fraction(pool.low)) / total)
        free = r.free_memory_bytes
        ok = up <= 1 and (free is None or up * top <= free.low)
        lacks = printed(needed) - printed(pool)
        check = (
            f"the pool grows by ({ftext(up)} - {fraction.printed or ftext(Fraction(fraction.value))}) x the total {gib(total)}{said} = "
            f"{gib((up - Fraction(fraction.value)) * as_printed(total))}, for the {needed.printed} - {pool.printed} = {gib(lacks)} one request lacks"
        )
        check += "; above 1, no fraction does it" if up > 1 else (f"; within the free {free.printed}" if free is not None and ok else "")
        out.append(Fix("--gpu-memory-utilization", ftext(min(up, Fraction(1))), "a larger share of the card for the pool", check, ok))
    tp = _tp(r, flags)
    weights = r.model_loading_bytes
    if needed is not None and pool is not None:
        if weights is not None:
            gain = Fraction(weights.value) / 2
            ok = Fraction(needed.high) / 2 <= Fraction(pool.low) + gain
            check = (
                f"per rank, one request's KV halves ({needed.printed} / 2 = {gib(printed(needed) / 2)}) and the weights' half "
                f"({weights.printed} / 2 = {gib(printed(weights) / 2)}) joins the {pool.printed} pool (when the KV heads divide by {2 * tp})"
            )
        else:
            ok, check = None, "the log prints no weights, so the pool a rank gains cannot be worked out"
        out.append(Fix("--tensor-parallel-size", str(2 * tp), "twice the cards: each holds half the weights and half of each request's KV", check, ok))
    return out


def _free_fixes(r: LogReading) -> list[Fix]:
    free, total, fraction = r.free_memory_bytes, r.total_memory_bytes, r.gpu_memory_utilization
    if r.free_after_profile_bytes is not None:
        return _free_grew_fixes(r.free_after_profile_bytes, free)
    if r.engine_budget_bytes is not None and free is not None and total is not None and fraction is not None:
        return _free_fixes_external(r.engine_budget_bytes, free, total, fraction)
    if r.external_weights_bytes is not None and free is None and total is not None and fraction is not None:
        return _external_exceeds_fixes(r.external_weights_bytes, total, fraction)
    if free is None or total is None:
        return []
    down = floor2(Fraction(free.low) / Fraction(total.high))
    asked = math.ceil(down * Fraction(total.high))
    top, least = shown(Fraction(total.high), "GiB", 3), shown(Fraction(free.low), "GiB", 3)
    check = (
        f"{ftext(down)} x {end(top)} (the high end of the printed total {total.printed}) = {gib(down * top)}, "
        f"within the free {end(least)} (the low end of the printed {free.printed}, line {free.line_no}); "
        f"the check is ceil(fraction x total) <= free, each figure at the end of its printing that is hardest"
    )
    was = f"; the log's {fraction.printed or fraction.value} asks more" if fraction is not None else ""
    out = []
    if down > 0:
        out.append(Fix("--gpu-memory-utilization", ftext(down), "the largest two decimals that pass vLLM's free-memory check" + was, check, asked <= free.low))
    out.append(
        Fix("(free the card)", None, "stop what else holds memory on the card (another vLLM, a notebook), then keep the fraction",
            f"{total.printed} - {free.printed} free = {gib(printed(total) - printed(free))} of the card was in use before this start", None)
    )  # fmt: skip
    return out


def _free_grew_fixes(after: Found, before: Found | None) -> list[Fix]:
    """vLLM asserts that free memory did not grow between the start and the end of its profile
    (vllm/v1/worker/gpu_worker.py determine_available_memory): no setting of this start moves it.
    A pool given in bytes skips the profile and the assertion with it (the same function returns
    before profiling when kv_cache_memory_bytes is set)."""
    grew = f"free memory went from {before.printed} to {after.printed} (line {after.line_no})" if before is not None else f"free memory grew to {after.printed}"
    return [
        Fix("(keep the card steady)", None, "start when no other process on the card is starting or stopping, then keep the settings",
            f"{grew}: another process released memory while vLLM measured", None),
        Fix("--kv-cache-memory-bytes", None, "a pool given in bytes: vLLM skips the profile and this assertion, and no longer sizes the pool itself",
            "the log prints no pool to size it by; a start that passes prints a suggestion for it", None),
    ]  # fmt: skip


def _free_fixes_external(budget: Found, free: Found, total: Found, fraction: Found) -> list[Fix]:
    """0.32 on, weights held by another process: vLLM asks ceil(fraction x total) - external <= free
    (vllm/v1/worker/utils.py request_memory), the external weights being ceil(fraction x total) - the
    printed budget; a smaller fraction lowers the budget by the fraction's drop x total, the
    external weights staying as they are. Each figure at the end of its printing that is hardest."""
    f = Fraction(fraction.value)
    over = Fraction(budget.high) - Fraction(free.low) + 1  # the budget over the free memory, at least; ceil() adds under a byte
    down = floor2(f - over / Fraction(total.low))
    dropped = (f - down) * Fraction(total.low)
    low = shown(Fraction(total.low), "GiB", 3)
    check = (
        f"the engine's budget {budget.printed} is over the free {free.printed} by {gib(printed(budget) - printed(free))} (line {free.line_no}); "
        f"({fraction.printed or ftext(f)} - {ftext(down)}) x {end(low)} (the low end of the printed total "
        f"{total.printed}) = {gib((f - down) * low)} off the budget, the weights held outside the process unchanged; "
        f"the check is ceil(fraction x total) - the external weights <= free, each figure at the end of its printing that is hardest"
    )
    external = f * printed(total) - printed(budget)
    out = []
    if down > 0:
        out.append(Fix("--gpu-memory-utilization", ftext(down), "the largest two decimals that pass vLLM's free-memory check with the weights held outside; "
                       f"the log's {fraction.printed or fraction.value} asks more", check, dropped >= over))  # fmt: skip
    out.append(
        Fix("(free the card)", None, "stop what else holds memory on the card, other than the process that holds the weights, then keep the fraction",
            f"{total.printed} - {free.printed} free = {gib(printed(total) - printed(free))} of the card was in use before this start, of which "
            f"{fraction.printed or ftext(f)} x {total.printed} - {budget.printed} = {gib(external)} are the weights held outside the process", None)
    )  # fmt: skip
    return out


def _external_exceeds_fixes(external: Found, total: Found, fraction: Found) -> list[Fix]:
    """0.32 on: the weights another process holds are at least ceil(fraction x total), so nothing is
    left for the engine (vllm/v1/worker/utils.py request_memory). A fraction above external / total
    passes this check; whether free memory then holds the engine's share is checked next, on figures
    this message does not print."""
    up = floor2(Fraction(external.high) / Fraction(total.low)) + Fraction(1, 100)
    check = (
        f"{ftext(up)} x {end(shown(Fraction(total.low), 'GiB', 3))} (the low end of the printed total {total.printed}) = "
        f"{gib(up * shown(Fraction(total.low), 'GiB', 3))}, above the {end(shown(Fraction(external.high), 'GiB', 3))} held outside "
        f"(the high end of the printed {external.printed}, line {external.line_no}); the engine's own share, the fraction's rest, "
        "must then hold its activations and the KV pool and be free on the card, which this message does not print"
    )
    return [
        Fix("--gpu-memory-utilization", ftext(min(up, Fraction(1))), "a larger share, so some of it is left after the weights held outside the process"
            f"; the log's {fraction.printed or fraction.value} is below them", check, None if up <= 1 else False)
    ]  # fmt: skip


def _no_pool_fixes(r: LogReading, w: Watcher, flags: dict[str, str | None]) -> list[Fix]:
    out: list[Fix] = []
    pool = r.available_kv_bytes
    deficit = -Fraction(pool.low) if pool is not None and pool.value <= 0 else None
    lacking = -printed(pool) if pool is not None and deficit is not None else Fraction(0)  # as printed, for the messages
    totals, fraction = _total(r), r.gpu_memory_utilization
    if deficit is not None and totals is not None and totals[0] and fraction is not None:
        total, top, said = totals
        up = ceil2(Fraction(fraction.value) + (deficit + GiB) / total)
        free = r.free_memory_bytes
        ok = up <= 1 and (free is None or up * top <= free.low)
        more = (up - Fraction(fraction.value)) * as_printed(total)
        check = f"the pool was {pool.printed} (line {pool.line_no}); ({ftext(up)} - {fraction.printed or ftext(Fraction(fraction.value))}) x {gib(total)}{said} = {gib(more)} more for it, a GiB or more above zero"  # type: ignore[union-attr]
        out.append(
            Fix(
                "--gpu-memory-utilization",
                ftext(min(up, Fraction(1))),
                "a larger share of the card, so a pool is left after the weights and the profile",
                check,
                ok,
            )
        )
    elif totals is None:
        out.append(
            Fix(
                "--gpu-memory-utilization",
                None,
                "a larger share of the card",
                "the log prints no total, so the share that leaves a pool cannot be worked out",
                None,
            )
        )
    graphs, off = r.cuda_graph_bytes, r.cuda_graph_off
    if graphs is not None and off is not None:
        # determine_available_memory takes the estimate off only under VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
        # (vllm/v1/worker/gpu_worker.py), off by default before 0.21, as the log's own line says
        out.append(
            Fix("--enforce-eager", None, "no CUDA graphs: but this build did not take their estimate off the pool",
                f"the graphs' estimate of {graphs.printed} (line {graphs.line_no}) was not taken off the pool (line {off.line_no}: "
                "profiling of CUDA graph memory is off), so without graphs the pool is the same", False)
        )  # fmt: skip
    elif graphs is not None:
        ok = deficit is not None and Fraction(graphs.low) > deficit
        out.append(
            Fix("--enforce-eager", None, "no CUDA graphs: their estimate is no longer taken off the pool",
                f"the graphs' estimate is {graphs.printed} (line {graphs.line_no})" + (f", the pool lacked {gib(lacking)}" if deficit is not None else ""), ok if deficit is not None else None)
        )  # fmt: skip
    activation = r.activation_peak_bytes
    prefill = r.max_num_batched_tokens
    if prefill is not None:
        half = max(prefill.value // 2, 256)
        check = f"the profile's activation peak scales with the batch of {prefill.value:,} tokens (line {prefill.line_no})"
        if activation is not None and deficit is not None:
            ok = Fraction(activation.low) / 2 > deficit
            check += f"; half of its {activation.printed} peak is {'more' if ok else 'less'} than the {gib(lacking)} lacking"
            out.append(Fix("--max-num-batched-tokens", str(half), "a smaller profile batch", check, ok))
        else:
            out.append(
                Fix("--max-num-batched-tokens", str(half), "a smaller profile batch", check + "; the log prints no activation peak to check it by", None)
            )
    weights = r.model_loading_bytes
    tp = _tp(r, flags)
    if weights is not None:
        gain = Fraction(weights.value) / 2
        ok = deficit is not None and gain > deficit
        out.append(
            Fix("--tensor-parallel-size", str(2 * tp), "twice the cards: each rank holds half the weights",
                f"a rank frees {weights.printed} / 2 = {gib(printed(weights) / 2)} of its weights" + (f", against the {gib(lacking)} lacking" if deficit is not None else ""), ok if deficit is not None else None)
        )  # fmt: skip
    if w.multimodal is not None:
        out.append(Fix("--limit-mm-per-prompt", '{"image": 1, "video": 0}', "a multimodal model profiles its encoder at the most items a prompt may carry",
                       f"the log names a multimodal model or its encoder (line {w.multimodal}); the encoder's share is not printed", None))  # fmt: skip
    return out


def _oom_fixes(r: LogReading, w: Watcher, flags: dict[str, str | None], phase: str) -> list[Fix]:
    out: list[Fix] = []
    short = None
    if w.torch_oom is not None:
        no, tried, total_t, free_t = w.torch_oom
        short = tried - free_t
        oom_said = f"line {no}: {gib(tried)} asked, {gib(free_t)} free of {gib(total_t)}"
    fraction = r.gpu_memory_utilization
    seats = r.max_num_seqs
    if phase == "sampler_warmup":
        count = w.sampler[1] if w.sampler else (seats.value if seats is not None else None)
        if count:
            half = max(count // 2, 1)
            if short is not None:
                ok = tried / 2 <= free_t
                check = f"the sampler's allocation scales with the requests: {gib(tried)} / 2 = {gib(as_printed(tried) / 2)}, {'within' if ok else 'more than'} the {gib(free_t)} free ({oom_said})"
            else:
                ok, check = None, f"the warm-up ran {count:,} dummy requests; the log prints no allocation to check half of them by"
            out.append(Fix("--max-num-seqs", str(half), "fewer dummy requests in the sampler warm-up (and fewer sequences at once)", check, ok))
    if phase == "cuda_graph_capture":
        out.append(Fix("--enforce-eager", None, "no CUDA graphs are captured (decoding is slower)", "the step that failed does not run", True))
    if phase == "profile_run":
        prefill = r.max_num_batched_tokens
        budget = prefill.value if prefill is not None else None
        if budget is not None:
            half = max(budget // 2, 256)
            if short is not None:
                ok = tried / 2 <= free_t
                check = f"the profile's batch is {budget:,} tokens (line {prefill.line_no}); half the failing allocation is {gib(tried)} / 2 = {gib(as_printed(tried) / 2)}, {'within' if ok else 'more than'} the {gib(free_t)} free"  # type: ignore[union-attr]
            else:
                ok, check = None, f"the profile's batch is {budget:,} tokens (line {prefill.line_no}); the log prints no allocation to check half of it by"  # type: ignore[union-attr]
            out.append(Fix("--max-num-batched-tokens", str(half), "a smaller dummy batch in the profile run", check, ok))
        if w.multimodal is not None:
            out.append(Fix("--limit-mm-per-prompt", '{"image": 1, "video": 0}', "the encoder is profiled at the most items a prompt may carry",
                           f"the log names a multimodal model or its encoder (line {w.multimodal}); the encoder's share is not printed", None))  # fmt: skip
    if fraction is not None and short is not None and phase in ("cuda_graph_capture", "sampler_warmup", "kv_cache_tensors"):
        down = floor2(Fraction(fraction.value) - short / total_t)
        freed = (Fraction(fraction.value) - down) * total_t
        out.append(
            Fix("--gpu-memory-utilization", ftext(down), "a smaller KV pool leaves room for what failed",
                f"the pool shrinks by ({fraction.printed or ftext(Fraction(fraction.value))} - {ftext(down)}) x {gib(total_t)} = "
                f"{gib((Fraction(fraction.value) - down) * as_printed(total_t))}, at least the {gib(tried)} - {gib(free_t)} = "
                f"{gib(as_printed(tried) - as_printed(free_t))} the allocation lacked ({oom_said})", freed >= short and down > 0)
        )  # fmt: skip
    elif fraction is not None and phase in ("cuda_graph_capture", "sampler_warmup", "kv_cache_tensors"):
        out.append(Fix("--gpu-memory-utilization", ftext(Fraction(fraction.value) - Fraction(5, 100)), "a smaller KV pool leaves room for what failed",
                       "the log prints no out-of-memory figures to size the step by", None))  # fmt: skip
    if phase in ("loading_weights", "profile_run"):
        tp = _tp(r, flags)
        check = f"each rank holds half the weights; {oom_said}" if short is not None else "the log prints no weights or out-of-memory figures to check it by"
        out.append(Fix("--tensor-parallel-size", str(2 * tp), "twice the cards, each loading half the weights", check, None))
        if "--quantization" not in flags:
            out.append(Fix("--quantization", "fp8", "weights in 8 bits on the fly (a 16-bit checkpoint loads at about half)",
                           "the log prints no weights to check it by", None))  # fmt: skip
    return out


def _sglang_fixes(r: LogReading, w: Watcher, phase: str | None) -> list[Fix]:
    out: list[Fix] = []
    mfs = r.mem_fraction_static
    before, after = w.sg_avail.get("begin"), w.sg_avail.get("end")
    if phase == "sglang_not_enough_memory":
        if before and after:
            # model_runner.py: rest = available after the weights - total x (1 - mem_fraction_static); the pool needs rest > 0
            least = 1 - after / before
            up = ceil2(least) + Fraction(1, 100)
            b, a = as_printed(before), as_printed(after)
            check = (
                f"SGLang keeps back (1 - mem_fraction_static) x {gib(before)} (free before the weights); {gib(after)} is free after them, "
                f"so the pool is above zero from 1 - {gib(after)} / {gib(before)} = {float(1 - a / b):.4f}: {ftext(up)} leaves "
                f"{gib(after)} - (1 - {ftext(up)}) x {gib(before)} = {gib(a - b * (1 - up))}"
            )
            out.append(Fix("--mem-fraction-static", ftext(up), "a larger static share for the weights and the pool", check, up < 1))
        else:
            out.append(Fix("--mem-fraction-static", ftext(Fraction(mfs.value) + Fraction(5, 100)) if mfs is not None else None,
                           "a larger static share for the weights and the pool", "the log prints no 'avail mem' before and after the weights to size it by", None))  # fmt: skip
        if r.model_loading_bytes is not None:
            tp = int(r.tensor_parallel_size.value) if r.tensor_parallel_size is not None else 1
            out.append(Fix("--tp-size", str(2 * tp), "twice the cards, each holding half the weights",
                           f"a rank frees {r.model_loading_bytes.printed} / 2 = {gib(printed(r.model_loading_bytes) / 2)} of its weights", None))  # fmt: skip
        return out
    if mfs is not None:
        out.append(Fix("--mem-fraction-static", ftext(Fraction(mfs.value) - Fraction(5, 100)), "a smaller pool leaves room for CUDA graphs and activations",
                       f"the log's {mfs.printed or mfs.value}" + (f"; {gib(w.torch_oom[1])} asked - {gib(w.torch_oom[3])} free = {gib(as_printed(w.torch_oom[1]) - as_printed(w.torch_oom[3]))} was lacking" if w.torch_oom else ""), None))  # fmt: skip
    out.append(
        Fix("--chunked-prefill-size", "4096", "a smaller prefill chunk, a smaller activation peak", "the log prints no activation figure to check it by", None)
    )
    if r.kv_tokens is not None:
        out.append(Fix("--max-total-tokens", str(r.kv_tokens.value // 2), "cap the pool below what the profile allowed",
                       f"half the {r.kv_tokens.value:,} tokens logged (line {r.kv_tokens.line_no})", None))  # fmt: skip
    return out
