"""For a start vLLM refuses, the least changes that pass; for any start, how far each setting can go
with the others as given. Each is checked by the same prediction."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction

from calc.engine import fraction, weights
from calc.engine.hfconfig import AT_LOAD, MLA, Shape
from calc.engine.kvlayout import largest
from calc.engine.predict.cards import Card, fp8_refused
from calc.engine.predict.defaults import default_utilization, extensible_kv_cache, release
from calc.engine.predict.pool import Given, Prediction, Start, own_length, predict
from calc.units import InputError

# --- max_model_len auto -----------------------------------------------------------------------

AUTO_LENGTH = ("auto", "-1")  # vLLM's --max-model-len -1 or auto: the largest that fits (argparse_utils.py human_readable_int_or_auto)
AUTO_LENGTH_FROM = (0, 14)  # vllm/v1/core/kv_cache_utils.py _auto_fit_max_model_len, first in 0.14.0
AUTO_FIT = "vllm/v1/core/kv_cache_utils.py _auto_fit_max_model_len, 0.14.0 to 0.32.x; kv_cache_planning.py from 0.33.0"


def auto_length(s: Start, p: Prediction) -> Start:
    """--max-model-len auto (or -1), from 0.14.0: vLLM profiles at the model's own length (`s`'s,
    predicted as `p`), then takes the largest length one request fits, at most that one (AUTO_FIT).
    The pool stays the one profiled and the max_num_seqs set before the fit stays. The same start
    where the model's own length fits whole, or where no length does."""
    fit = p.largest_max_model_len
    if fit is None or not 0 < fit < s.max_model_len:
        return s
    return replace(s, max_model_len=fit, profiled_len=s.max_model_len, max_num_seqs=p.max_num_seqs)


def auto_length_note(own: int, fit: int | None) -> str:
    """What --max-model-len auto did with the model's own length `own`, given the largest one request fits."""
    if fit is not None and 0 < fit < own:
        return f"reduced to {fit:,}, the largest the pool holds ({AUTO_FIT})"
    if fit is not None and fit >= own:
        return f"it fits whole ({AUTO_FIT})"
    return f"vLLM cannot fit it: no memory for one token ({AUTO_FIT})"


# --- the settings that fit ---------------------------------------------------------------------


@dataclass(frozen=True)
class Fix:
    change: str  # what changes, in words
    flags: str  # the vLLM flags that make it
    start: Start
    prediction: Prediction


def fixes(
    shape: Shape,
    card: Card,
    s: Start,
    topk: int = 0,
    given: Given | None = None,
) -> list[Fix]:
    """For a start vLLM refuses, the least changes that pass, each checked by `predict`, in this
    order: a shorter max_model_len (the longest that starts), fp8 KV, a higher utilization (the
    lowest that starts, at most 0.98), fewer sequences (the most that start), fewer LoRA slots
    (the most that start), an unquantized checkpoint's weights in fp8 as they load, a larger TP, and
    where no larger TP passes (heads that do not divide), more pipeline stages."""
    from dataclasses import replace

    g = given or Given()

    def run(t: Start) -> Prediction:
        return predict(shape, card, t, topk, g.at(s, t))

    base = run(s)
    if base.verdict == "starts":
        return []
    if base.verdict == "free memory" and base.free_at_start is not None:
        return _within_free(s, base, run, lambda t: fixes(shape, card, t, topk, given))
    out: list[Fix] = []
    if base.verdict == "max_model_len" and base.largest_max_model_len:
        own = own_length(shape, s)
        cap = min(s.max_model_len - 1, own) if own is not None else s.max_model_len - 1  # shorter, and no longer than the model's own
        # from the length vLLM's refusal names up: the pool can grow as the length falls (a vision tower's
        # encoder profile sized by max_model_len), so a longer one may start than the refused pool holds
        first = min(base.largest_max_model_len, cap)
        most = largest(lambda n: run(replace(s, max_model_len=n)).verdict == "starts", first, cap) if first >= 1 else None
        if most is not None:
            t = replace(s, max_model_len=most)
            out.append(Fix(f"max_model_len {most:,}", f"--max-model-len {most}", t, run(t)))
    if s.kv_cache_dtype in ("auto", "bfloat16", "bf16", "float16", "fp16") and shape.dtype_bytes == 2:
        t = replace(s, kv_cache_dtype="fp8")
        p = run(t)
        if p.verdict == "starts":
            out.append(Fix("fp8 KV cache", "--kv-cache-dtype fp8", t, p))
    rel = release(s.engine_version)
    util = s.utilization if s.utilization is not None else default_utilization(rel, extensible_kv_cache(rel, s.extensible_kv_cache))
    for hundredths in range(math.floor(util * 100) + 1, 99):
        t = replace(s, utilization=Fraction(hundredths, 100))
        p = run(t)
        if p.verdict == "starts":
            out.append(Fix(f"gpu_memory_utilization {hundredths / 100:.2f}", f"--gpu-memory-utilization {hundredths / 100:.2f}", t, p))
            break
    seqs = largest(lambda n: run(replace(s, max_num_seqs=n)).verdict == "starts", 1, base.max_num_seqs - 1)
    if seqs is not None:
        t = replace(s, max_num_seqs=seqs)
        out.append(Fix(f"max_num_seqs {seqs}", f"--max-num-seqs {seqs}", t, run(t)))
    if s.lora is not None and s.lora.max_loras > 1:  # fewer adapter slots: the most that start (the pool falls as they grow)
        cfg = s.lora

        def slots(n: int) -> Start:
            return replace(s, lora=replace(cfg, max_loras=n, max_cpu_loras=max(n, cfg.max_cpu_loras or n)))

        most = largest(lambda n: run(slots(n)).verdict == "starts", 1, cfg.max_loras - 1)
        if most is not None:
            t = slots(most)
            out.append(Fix(f"max_loras {most}", f"--max-loras {most}", t, run(t)))
    fp8_fits = base.verdict != "max_model_len" and not shape.quantization and shape.dtype_bytes == 2 and s.pp == 1 and not s.drafter
    if fp8_fits and fp8_refused(card.name, release(s.engine_version)) is None:  # where the weights leave no pool, not where a length is too long
        # the weights in fp8 as they load (--quantization fp8: Fp8Config, on the cards its compute capability allows),
        # counted from the config as fp8 packs them (a checkpoint's own size given for the unquantized weights does not hold)
        fp8 = replace(shape, quantization=dict(AT_LOAD["fp8"]))
        t = replace(s, quantization="fp8")
        p = predict(fp8, card, t, topk, Given(rounding=g.rounding))
        if p.verdict == "max_model_len" and p.largest_max_model_len:  # the weights fit now, and a shorter length with them
            t = replace(t, max_model_len=p.largest_max_model_len)
            p = predict(fp8, card, t, topk, Given(rounding=g.rounding))
        if p.verdict == "starts":
            shorter = t.max_model_len != s.max_model_len
            out.append(Fix("weights in fp8 as they load" + (f", and max_model_len {t.max_model_len:,}" if shorter else ""),
                           "--quantization fp8" + (f" --max-model-len {t.max_model_len}" if shorter else ""), t, p))  # fmt: skip
    for tp in () if weights.bnb_saved(shape) else (2, 4, 8):  # vLLM splits a saved bitsandbytes checkpoint over stages only
        if tp <= s.tp or shape.heads % tp or (MLA not in shape.layers and shape.kv_heads % tp and tp % shape.kv_heads):
            continue
        t = replace(s, tp=tp)
        try:
            p = run(t)
        except InputError:
            continue
        if p.verdict == "starts":
            out.append(Fix(f"tensor parallel {tp}", f"--tensor-parallel-size {tp}", t, p))
            break
    if not any(f.start.tp != s.tp for f in out):  # no larger TP passes: more pipeline stages, each of its own layers
        for pp in (2, 4, 8):
            if pp <= s.pp or pp > len(shape.layers):
                continue
            t = replace(s, pp=pp, pp_layer_partition=None)
            try:
                p = run(t)
            except InputError:  # a split vLLM refuses (a class without SupportsPP): not offered
                continue
            if p.verdict == "starts":
                out.append(Fix(f"pipeline parallel {pp}", f"--pipeline-parallel-size {pp}", t, p))
                break
    return out


def _within_free(s: Start, base: Prediction, run: Callable[[Start], Prediction], again: Callable[[Start], list[Fix]]) -> list[Fix]:
    """For a start refused at vLLM's free-memory check: the highest utilization, two decimals, that the
    free memory at start holds (startup.py), and with it the longest max_model_len where the smaller
    pool no longer holds one request; where neither passes, that utilization with each of the least
    changes that pass from there (`again`: fixes at that utilization)."""
    from dataclasses import replace

    assert base.free_at_start is not None
    top = highest_utilization(base.total_bytes, base.free_at_start.bytes)
    if top is None:
        return []
    at_top = t = replace(s, utilization=top)
    p = run(t)
    util_flags = flags = f"--gpu-memory-utilization {float(top):.2f}"
    util_change = change = f"gpu_memory_utilization {float(top):.2f}"
    if p.verdict == "max_model_len" and p.largest_max_model_len:
        t = replace(t, max_model_len=p.largest_max_model_len)
        p = run(t)
        flags, change = flags + f" --max-model-len {t.max_model_len}", change + f", and max_model_len {t.max_model_len:,}"
    if p.verdict == "starts":
        return [Fix(change, flags, t, p)]
    return [Fix(f"{util_change}, and {f.change}", f"{util_flags} {f.flags}", f.start, f.prediction) for f in again(at_top)]


def highest_utilization(total: int, free: int) -> Fraction | None:
    """The highest gpu_memory_utilization, two decimals and at most 0.98, whose request the free
    memory at start holds (vLLM's check, fraction.py); None where not even 0.01 fits."""
    top = min(fraction.ceiling(total, free, 2), Fraction(98, 100)) if free > 0 else Fraction(0)
    return top if top > 0 else None


@dataclass(frozen=True)
class Limits:
    """How far each setting can go with the others as given, each checked by `predict`: the longest
    max_model_len that starts (--max-model-len auto takes it where the model's own is longer), the
    most sequences and the lowest utilization that start. None: no value starts. The sequences stop
    at max_num_batched_tokens where memory does not stop them first (vLLM refuses more)."""

    max_model_len: int | None
    max_num_seqs: int | None
    gpu_memory_utilization: Fraction | None
    seqs_limited_by: str = "memory"  # or "max_num_batched_tokens"
    utilization_ceiling: Fraction | None = None  # the highest the free memory at start holds, below 0.98 (vLLM's check); None: not binding
    utilization_top: Fraction = Fraction(98, 100)  # the highest tried: 0.98, or 1.0 where the pool is measured after warmup (no check)

    def to_json(self) -> dict[str, object]:
        return {
            "max_model_len": self.max_model_len,
            "max_num_seqs": self.max_num_seqs,
            "max_num_seqs_limited_by": self.seqs_limited_by,
            "gpu_memory_utilization": float(self.gpu_memory_utilization) if self.gpu_memory_utilization is not None else None,
            "gpu_memory_utilization_at_most": float(self.utilization_ceiling) if self.utilization_ceiling is not None else None,
        }


def limits(
    shape: Shape,
    card: Card,
    s: Start,
    topk: int = 0,
    given: Given | None = None,
    longest: int | None = None,
) -> Limits:
    """The settings that fit, each alone: the pool falls as max_model_len (one request must fit,
    and the defaults move with it) and max_num_seqs grow (the sampler's rows, the graphs' capture
    sizes; a hybrid's state blocks from 0.20.0), and rises with the utilization, so each limit is the
    edge a bisection over `predict` finds. `longest`, the model's own length, caps the length: vLLM
    refuses a longer one unless told to allow it (VLLM_ALLOW_LONG_MAX_MODEL_LEN)."""
    from dataclasses import replace

    def starts(t: Start) -> bool:
        try:
            return predict(shape, card, t, topk, given).verdict == "starts"
        except InputError:  # a setting vLLM refuses before it sizes anything (more sequences than tokens)
            return False

    base = predict(shape, card, s, topk, given)
    top = max(base.largest_max_model_len or 0, s.max_model_len, s.profiled_len or 0)
    if longest is not None and s.max_model_len <= longest:
        top = min(top, longest)
    length = largest(lambda n: starts(replace(s, max_model_len=n, profiled_len=None)), 1, top)  # a length typed is the one profiled
    tokens = base.max_num_batched_tokens
    seqs = largest(lambda n: starts(replace(s, max_num_seqs=n)), 1, tokens)
    free = base.free_at_start
    top_tried = Fraction(1) if base.measured else Fraction(98, 100)  # 0.34.0's measured pool: no free-memory check, up to 1.0
    ceiling = highest_utilization(base.total_bytes, free.bytes) if free is not None else top_tried
    hi = int(ceiling * 100) if ceiling is not None else 0  # above it vLLM's free-memory check refuses whatever the pool
    lowest = largest(lambda n: starts(replace(s, utilization=Fraction(hi + 1 - n, 100))), 1, hi)
    by = "max_num_batched_tokens" if seqs == tokens else "memory"
    bound = ceiling if free is not None and (ceiling is None or ceiling < Fraction(98, 100)) else None  # where the check binds below 0.98
    return Limits(length, seqs, Fraction(hi + 1 - lowest, 100) if lowest is not None else None, by, bound, top_tried)
