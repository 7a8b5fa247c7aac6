"""What a figure read from a log is (`Found`, `Derived`), what one log says (`LogReading`), and
numbers as the engines print them.

Units, as each engine's source prints them:
- vLLM's "GB" in the lines read here is 2**30 bytes in every release: "Loading model weights took
  %.4f GB" divides by float(2**30) (vllm/worker/model_runner.py 0.4.1-0.7.3,
  vllm/v1/worker/gpu_model_runner.py 0.6.4-0.7.3), and so does "Model loading took %.4f GB and %.6f
  seconds" (both files, 0.8.0-0.8.2); from 0.8.3 the line says GiB (GiB_bytes = 1 << 30; the 0.8.2
  wheel prints "GB", 0.8.3 "GiB"), and from 0.14 prints it through format_gib
  (vllm/utils/mem_utils.py: str(round(b / GiB_bytes, 2)), so "12.0 GiB" has two decimals of
  precision too). An "MB" figure (no release prints one; seen in a patched 0.5.3) is read as 2**20.
  Other vLLM lines print 10**9 bytes as "GB" ("[PrefetchOffloader] ... Total GPU memory saved: %.4f
  GB", model_executor/offloader/prefetch.py 0.18.1 on; "Created mmap file %s (%.2f GB)",
  v1/kv_offload/cpu/shared_offload_region.py 0.20.0 on): no figure is read from them.
- V1 prints "Available KV cache memory" from 0.9.1 (vllm/v1/worker/gpu_worker.py); 0.7-0.9.0 go
  from the weights straight to the blocks or the token count. A pinned start prints "reserved X GiB
  memory for KV Cache as specified by kv_cache_memory_bytes" instead (0.10.2 on).
- "GPU KV cache size" is blocks x block size up to 0.20.0 (per KV group on hybrid models) and
  int(concurrency x max_model_len) from 0.20.1 (vllm/v1/core/kv_cache_utils.py: 0.20.0 prints
  num_blocks // groups x block size, 0.20.1 `int(max_concurrency * max_model_len)`); 0.10.2-0.14 multiply
  it by the decode-context-parallel size and say so.
  (Version boundaries as read from the released sdists: logs/public/UNITS.md.)
- SGLang's "GB" is 2**30 bytes as well: mem_cache/memory_pool.py sets GB = 1024 * 1024 * 1024
  before printing "KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB".
- `--kv-cache-memory-bytes 750M` on a command line: vLLM's human_readable_int reads a capital
  suffix as binary (M = 2**20) and a small one as decimal (m = 10**6).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from decimal import Decimal
from fractions import Fraction
from typing import Any

from calc.jsontext import Json, JsonObject
from calc.units import InputError, parse_number

GiB, MiB = 2**30, 2**20

# --- what a figure is --------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    """One figure read from the log, with the line it came from.

    `printed` is the figure as the log printed it; `half` is half its last printed digit, in
    the unit of `value` (bytes for sizes), so the true figure lies in [low, high].
    """

    value: Any
    line_no: int
    line_text: str
    printed: str | None = None
    half: Fraction = Fraction(0)
    derived: bool = False  # worked out from other lines, not printed: kept out of to_json
    exact: Fraction | None = None  # the printed figure exactly, where `value` rounds it to whole bytes

    @property
    def low(self) -> Any:
        return (self.exact if self.exact is not None else self.value) - self.half if self.half else self.value

    @property
    def high(self) -> Any:
        return (self.exact if self.exact is not None else self.value) + self.half if self.half else self.value


@dataclass(frozen=True)
class Derived:
    """A figure worked out from read ones: its value, its bounds and how."""

    value: Fraction
    low: Fraction
    high: Fraction
    how: str
    lines: tuple[int, ...]

    @property
    def line_no(self) -> int | None:
        return self.lines[0] if self.lines else None


Opt = Found | None


def _figure(json: bool = False, page: tuple[str, str | None] | None = None, ingest: tuple[int, str] | None = None) -> Any:
    """A figure of the reading: `json` puts it among ingest --json's keys, `page` gives its row on
    the "Your start" page (its label and unit), in field order; `ingest` its row in `ingest`'s text
    under "Read:" (its place there and its label: the text lists the settings first, then the pool,
    then the checks' figures, an order older than the fields')."""
    meta: dict[str, object] = {"json": json}
    if page is not None:
        meta["page"] = page
    if ingest is not None:
        meta["ingest"] = ingest
    return field(default=None, metadata=meta)


@dataclass(frozen=True)
class LogReading:
    """What one startup log says. Every figure is per rank, as the engines print them."""

    engine: Found | None = _figure(json=True, page=("Engine", None))  # "vllm" or "sglang"
    engine_version: Found | None = _figure(json=True, page=("Version", None))
    era: Found | None = None  # "v0", "v1" (vLLM engines) or "sglang"
    model: Found | None = _figure(ingest=(1, "model"), page=("Model", None))
    tensor_parallel_size: Found | None = _figure(ingest=(3, "tensor_parallel_size"), json=True, page=("Tensor-parallel size", "count"))
    pipeline_parallel_size: Found | None = None  # the setting, or every stage's "Worker_PPn" prefix
    data_parallel_size: Found | None = None  # the setting, or every data-parallel rank's prefix
    expert_parallel: Found | None = None  # (ep_size, local experts, global experts) where printed, else (None, None, None): expert parallel is on
    max_model_len: Found | None = _figure(ingest=(4, "max_model_len"), json=True, page=("max_model_len", "count"))
    kv_cache_dtype: Found | None = _figure(ingest=(5, "kv_cache_dtype"), json=True, page=("KV cache dtype", None))
    block_size: Found | None = _figure(ingest=(6, "block_size"), json=True, page=("Block size", "count"))
    gpu_memory_utilization: Found | None = _figure(ingest=(7, "gpu_memory_utilization"), json=True, page=("gpu_memory_utilization", "fraction"))  # Fraction
    mem_fraction_static: Found | None = _figure(ingest=(8, "mem_fraction_static"), json=True, page=("mem_fraction_static", "fraction"))  # Fraction
    kv_cache_memory_bytes: Found | None = _figure(ingest=(9, "kv_cache_memory_bytes"), json=True, page=("KV pin", "GiB"))  # the pin, exact bytes
    total_memory_bytes: Found | None = _figure(ingest=(17, "total memory"), page=("Total memory", "GiB"))
    free_memory_bytes: Found | None = _figure(ingest=(16, "free memory"), page=("Free memory", "GiB"))  # from the free-memory check or the pin line
    model_loading_bytes: Found | None = _figure(ingest=(10, "model loading"), json=True, page=("Weights loaded", "GiB"))
    available_kv_bytes: Found | None = _figure(
        json=True, page=("KV cache memory available", "GiB"), ingest=(11, "KV pool")
    )  # the pool as printed (profiled, pinned, or SGLang's K + V)
    kv_tokens: Found | None = _figure(ingest=(12, "KV tokens"), json=True, page=("KV cache tokens", "tokens"))
    gpu_blocks: Found | None = _figure(ingest=(13, "GPU blocks"), json=True, page=("KV blocks", "count"))
    max_concurrency: Found | None = _figure(ingest=(14, "max concurrency"), json=True, page=("Maximum concurrency", "x"))  # Decimal as printed
    bytes_per_token: Derived | None = _figure(json=True, page=("Bytes per token a rank", "B"))
    error: Found | None = _figure(ingest=(22, "error"), json=True, page=("Start failure", None))  # "free_memory", "no_kv_memory" or "max_model_len"
    estimated_max_model_len: Found | None = _figure(ingest=(20, "estimated max_model_len"), json=True, page=("vLLM's estimated maximum max_model_len", "count"))
    kv_needed_bytes: Found | None = _figure(ingest=(19, "KV for one request"))  # one request at max_model_len, from the one-request check
    requested_memory_bytes: Found | None = _figure(ingest=(18, "requested memory"))  # gpu_memory_utilization x total, as the free-memory check prints it
    engine_budget_bytes: Found | None = _figure(ingest=(28, "engine budget"))  # 0.32 on: the requested memory less the weights another process holds
    external_weights_bytes: Found | None = _figure(ingest=(29, "weights held outside"))  # 0.32 on: what get_external_weight_memory gave
    free_after_profile_bytes: Found | None = _figure(ingest=(30, "free after the profile"))  # more than at start: the profile's assertion failed
    cuda_graph_bytes: Found | None = _figure(ingest=(15, "CUDA graph estimate"))  # "Estimated CUDA graph memory"
    cuda_graph_taken_bytes: Found | None = _figure(ingest=(23, "CUDA graphs took"))  # "Graph capturing finished ..., took X GiB": what the graphs held
    cuda_graph_off: Found | None = None  # the line saying the estimate was not taken off the pool (the default up to 0.19.x)
    total_from_graphs: Found | None = None  # the card's total worked out from the CUDA-graph advice and the estimate (derived)
    non_torch_bytes: Found | None = _figure(ingest=(24, "non-torch memory"))  # the V0 memory profile's non_torch_memory
    activation_peak_bytes: Found | None = _figure(ingest=(25, "activation peak"))  # and its PyTorch activation peak
    max_num_batched_tokens: Found | None = _figure(ingest=(26, "max_num_batched_tokens"))  # the prefill budget
    max_num_seqs: Found | None = _figure(ingest=(27, "max_num_seqs"))
    dcp_size: Found | None = None
    padding_layers: Found | None = None  # hybrid models: "Add N padding layers, may waste at most X% KV cache memory"
    speculative: Found | None = _figure(
        ingest=(21, "speculative"), page=("Speculative decoding", None)
    )  # {"method": str | None, "num_speculative_tokens": int | None}
    drafter_loaded: Found | None = None
    date: Found | None = _figure(ingest=(2, "date"), page=("Date", None))  # ISO date, where the timestamps carry a year
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Found | Derived]:
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), (Found, Derived))}

    def to_json(self) -> JsonObject:
        """The issue's keys, always present, null where the log does not say; sizes in bytes."""
        out: JsonObject = {}
        for key in JSON_KEYS:
            found = getattr(self, key)
            out[key] = None if found is None or getattr(found, "derived", False) else _json_value(found.value)
        out["lines"] = {key: f.line_no for key, f in self.figures().items() if out.get(key) is not None and f.line_no is not None}
        out["unreadable"] = [note.removeprefix("unreadable, ") for note in self.notes if note.startswith("unreadable, ")]
        return out


# ingest --json's keys and the "Your start" page's rows, in field order, from the fields' declarations
JSON_KEYS = tuple(f.name for f in fields(LogReading) if f.metadata.get("json"))
PAGE_FIGURES: tuple[tuple[str, str, str | None], ...] = tuple((f.name, *f.metadata["page"]) for f in fields(LogReading) if "page" in f.metadata)
# ingest's "Read:" rows, (field, label), in their declared places
INGEST_ROWS: tuple[tuple[str, str], ...] = tuple(
    (f.name, f.metadata["ingest"][1]) for f in sorted((f for f in fields(LogReading) if "ingest" in f.metadata), key=lambda f: f.metadata["ingest"][0])
)


def _json_value(value: object) -> Json:
    if isinstance(value, Fraction):
        return round(value) if value.denominator > 1 and abs(value) > 100 else float(value) if value.denominator > 1 else int(value)
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"found a {type(value).__name__}, expected a value JSON can hold")


# --- numbers as printed ------------------------------------------------------------------

_UNITS = {"GiB": GiB, "GB": GiB, "G": GiB, "MiB": MiB, "MB": MiB, "KiB": 2**10, "B": 1}


def _exact_size(printed: str, unit: str) -> tuple[Fraction, Fraction]:
    """Bytes from a printed size and half its last digit: ("7.71", "GiB") -> 7.71 GiB +- 0.005 GiB.

    vLLM's GiB figures have at least two decimals of precision even when fewer are printed:
    from 0.14 on, format_gib (vllm/utils/mem_utils.py) prints str(round(b / GiB_bytes, 2)),
    which drops trailing zeros ("12.0 GiB" is 11.995 to 12.005 GiB); before, they were %.2f.
    """
    number = Decimal(printed.replace(",", ""))
    scale = _UNITS[unit]
    digits = _places(number)
    if unit == "GiB":
        digits = max(digits, 2)
    return Fraction(number) * scale, Fraction(scale, 2 * 10**digits)


def _places(number: Decimal) -> int:
    """Decimal places a printed number was written with (0 for a whole number)."""
    exponent = number.as_tuple().exponent
    return max(0, -exponent) if isinstance(exponent, int) else 0


def _decimal_half(printed: str) -> Fraction:
    digits = _places(Decimal(printed))
    return Fraction(1, 2 * 10**digits)


def _count(text: str) -> int:
    """A whole number as printed, ASCII digits only (int() also takes Arabic-Indic and others)."""
    digits = text.replace(",", "").replace("_", "")
    if not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"found {text[:40]!r}, expected a whole number")
    return int(digits)


def _fraction(text: str) -> Fraction:
    """A decimal as printed, read as every number is (calc.units.parse_number: ASCII digits, digits
    and exponent bounded before any arithmetic: Fraction(Decimal("1e999999999")) never returns)."""
    body = text.replace(",", "")
    negative = body.startswith("-")
    value = parse_number(body[1:] if negative else body, "figure")
    return -value if negative else value


def human_readable_int(text: str) -> int:
    """vLLM's reading of `--kv-cache-memory-bytes 750M` (engine/arg_utils.py, human_readable_int):
    k, m, g, t are decimal; K, M, G, T binary; a bare number is bytes."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)([kmgtKMGT]?)\s*", text)
    if not match:
        raise InputError(f"kv_cache_memory_bytes: found {text!r}, expected a whole number of bytes or one with a k/m/g or K/M/G suffix")
    number, suffix = match.groups()
    if suffix in "kmgt" and suffix:
        return int(Decimal(number) * 10 ** (3 * ("kmgt".index(suffix) + 1)))
    if suffix:
        return int(Decimal(number)) << (10 * ("KMGT".index(suffix) + 1))
    return int(Decimal(number))
