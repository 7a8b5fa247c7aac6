"""Settings concluded by a rule of their own: the KV cache's dtype, the speculative config and
whether a drafter was loaded."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from calc.logs.figures import Found

if TYPE_CHECKING:
    from calc.logs.reader import Reader


_DRAFTERLESS = {"ngram", "suffix", "ngram_gpu"}  # speculative methods that load no drafter model


def _speculative_entry(reader: Reader) -> Found:
    """The speculative entry that names its method (an argument dump may hold one without it, as
    `{'num_speculative_tokens': 3}` beside the engine's `SpeculativeConfig(method='mtp', ...)`), its
    count filled from another entry where it lacks one."""
    entries = [f for _, f, _ in reader.seen["speculative"]]
    named = [f for f in entries if f.value[0]]
    chosen = (named or entries)[0]
    count = chosen.value[1] if chosen.value[1] is not None else next((f.value[1] for f in entries if f.value[1] is not None), None)
    return replace(chosen, value=(chosen.value[0], count))


def kv_dtype(r: Reader, vllm: bool, notes: list[str]) -> Found | None:
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


def speculation(r: Reader) -> dict[str, Found | None]:
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
