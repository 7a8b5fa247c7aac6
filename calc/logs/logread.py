"""Read a vLLM or SGLang startup log, as people paste it, into the figures a start printed.

Standard library only: the browser runs this module through Pyodide.

`read_log(text)` (or `read_lines(lines)`, which streams) returns a `LogReading`: each figure is
a `Found` that keeps the line it came from and, for a figure printed with decimals, the
interval the printing leaves open ("7.71 GiB" is 7.705 to 7.715 GiB). Lines are read one at a
time; prefixes of every kind (process, Ray, docker compose, timestamps, logfmt, JSON, ANSI
colour) are peeled off first, and a line folded by a terminal or re-wrapped in a quote is read
joined to the few lines that follow it.

What callers use: `read_log(text)` / `read_lines(lines)` -> `LogReading` (raises `InputError`,
one line, on what is not a startup log); its figures are `Found(value, line_no, line_text)`
with `printed`, `low`/`high` (the printing's interval) and `derived` (worked out, not printed:
kept out of `to_json`), or `None`; `bytes_per_token` is a `Derived(value, low, high, how,
lines)`, per rank. `LogReading.to_json()` gives the keys of JSON_KEYS plus `lines` and `unreadable`;
`missing` and `notes` say what the log lacks and what was worked out. `with_pin(reading, pin,
said)` adds a pin the log does not print. Sizes are whole bytes; per-rank figures that ranks
print differently are read at their smallest (what vLLM sizes the pool by), weights at their
largest, each with a note.

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

import functools
import io
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, fields, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any

from calc import jsontext
from calc.units import LARGEST_COUNT, LARGEST_SIZE, InputError, fmt, parse_number

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

JSON_KEYS = (
    "engine", "engine_version", "tensor_parallel_size", "max_model_len", "kv_cache_dtype", "block_size",
    "gpu_memory_utilization", "mem_fraction_static", "kv_cache_memory_bytes", "model_loading_bytes",
    "available_kv_bytes", "kv_tokens", "gpu_blocks", "max_concurrency", "bytes_per_token", "error",
    "estimated_max_model_len",
)  # fmt: skip


@dataclass(frozen=True)
class LogReading:
    """What one startup log says. Every figure is per rank, as the engines print them."""

    engine: Found | None = None  # "vllm" or "sglang"
    engine_version: Found | None = None
    era: Found | None = None  # "v0", "v1" (vLLM engines) or "sglang"
    model: Found | None = None
    tensor_parallel_size: Found | None = None
    max_model_len: Found | None = None
    kv_cache_dtype: Found | None = None
    block_size: Found | None = None
    gpu_memory_utilization: Found | None = None  # Fraction
    mem_fraction_static: Found | None = None  # Fraction
    kv_cache_memory_bytes: Found | None = None  # the pin, exact bytes
    model_loading_bytes: Found | None = None
    available_kv_bytes: Found | None = None  # the pool as printed (profiled, pinned, or SGLang's K + V)
    kv_tokens: Found | None = None
    gpu_blocks: Found | None = None
    max_concurrency: Found | None = None  # Decimal as printed
    bytes_per_token: Derived | None = None
    error: Found | None = None  # "free_memory", "no_kv_memory" or "max_model_len"
    estimated_max_model_len: Found | None = None
    kv_needed_bytes: Found | None = None  # one request at max_model_len, from the one-request check
    free_memory_bytes: Found | None = None  # from the free-memory check or the pin line
    total_memory_bytes: Found | None = None
    requested_memory_bytes: Found | None = None  # gpu_memory_utilization x total, as the free-memory check prints it
    cuda_graph_bytes: Found | None = None  # "Estimated CUDA graph memory"
    cuda_graph_taken_bytes: Found | None = None  # "Graph capturing finished ..., took X GiB": what the graphs held
    cuda_graph_off: Found | None = None  # the line saying the estimate was not taken off the pool (the default up to 0.19.x)
    non_torch_bytes: Found | None = None  # the V0 memory profile's non_torch_memory
    activation_peak_bytes: Found | None = None  # and its PyTorch activation peak
    max_num_batched_tokens: Found | None = None  # the prefill budget
    max_num_seqs: Found | None = None
    dcp_size: Found | None = None
    padding_layers: Found | None = None  # hybrid models: "Add N padding layers, may waste at most X% KV cache memory"
    speculative: Found | None = None  # {"method": str | None, "num_speculative_tokens": int | None}
    drafter_loaded: Found | None = None
    date: Found | None = None  # ISO date, where the timestamps carry a year
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Found | Derived]:
        return {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), (Found, Derived))}

    def to_json(self) -> dict[str, Any]:
        """The issue's keys, always present, null where the log does not say; sizes in bytes."""
        out: dict[str, Any] = {}
        for key in JSON_KEYS:
            found = getattr(self, key)
            out[key] = None if found is None or getattr(found, "derived", False) else _json_value(found.value)
        out["lines"] = {key: f.line_no for key, f in self.figures().items() if out.get(key) is not None and f.line_no is not None}
        out["unreadable"] = [note.removeprefix("unreadable, ") for note in self.notes if note.startswith("unreadable, ")]
        return out


def _json_value(value: Any) -> Any:
    if isinstance(value, Fraction):
        return round(value) if value.denominator > 1 and abs(value) > 100 else float(value) if value.denominator > 1 else int(value)
    if isinstance(value, Decimal):
        return float(value)
    return value


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


# --- peeling a line down to its message --------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\^\[\[[0-9;]*[A-Za-z]")  # also "^[[0;36m", as pasted
_QUOTE = re.compile(r"^\s*[>▎▍▌│┃]\s?")  # a Markdown quote, or the bar a chat or issue renderer draws
_COMPOSE = re.compile(r"^[A-Za-z0-9][\w.-]*\s+\|\s?")
_PIPE = re.compile(r"^\|\s*[\w./:@-]+\s*\|\s?")  # "date | host/container | message", as log collectors print
_BAR = re.compile(r"^\|[ \t]+")  # "2026-04-24 00:40:36.996 | message": Docker Desktop's log view, after its timestamp
_ISO = re.compile(r"^\[?(\d{4}-\d{2}-\d{2})[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\]?\s*")
_SGLANG_HEAD = re.compile(r"^\[(\d{4}-\d{2}-\d{2}) \d{2}:\d{2}:\d{2}(?:[.,]\d+)?((?: [A-Z]+\d+)*)\]\s*")
# "(EngineCore_DP0 pid=1)", "(VllmWorker TP0 pid=2)", "(RayWorkerWrapper pid=3, ip=10.0.0.1)", "(raylet)", "(raylet, ip=10.0.0.1)"
# Each item is one `key=value` or tag, and items are apart: no part of the line can be read two ways.
_PROCESS = re.compile(r"^\((?:([A-Za-z_][\w-]*+)[\s,]*+)?((?:(?>\w++=[^\s,)]++|[A-Z]++\d++)(?:[\s,]++(?>\w++=[^\s,)]++|[A-Z]++\d++))*+)?)\)\s+")
_TORCH_RANK = re.compile(r"^\[rank([0-9]{1,6})\]:\s*")
_KUBECTL = re.compile(r"^\[pod/[^\]\s]+\]\s+")  # kubectl logs --prefix
_SYSLOG = re.compile(r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d )?[\w.-]+ [\w.@/-]+\[\d+\]: ")  # journalctl: "Nov 30 12:00:01 host vllm[123]: "
_PROCESS_CUT = re.compile(r"^([A-Za-z_][\w-]*)((?:\s+\w+=[^\s,)]+)+)\)\s+")  # "VllmWorker rank=4 pid=5432) ": its "(" lost to a cut
_VLLM_HEAD = re.compile(r"^(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+(?:(?P<md>\d\d-\d\d)\s+\d\d:\d\d:\d\d(?:[.,]\d+)?\s+)?\[?[\w./-]+\.py:\d+\]?\s+")
_GLOG_HEAD = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+[\w./-]+:\d+\]\s*")
_LOGFMT_MSG = re.compile(r'(?:^|\s)msg="((?:[^"\\]|\\.)*)"')
_LOGFMT_TIME = re.compile(r"(?:^|\s)(?:time|ts)=\"?(\d{4}-\d{2}-\d{2})")
_REPEATED = re.compile(r"\[repeated \d++x across cluster\]\s*+$")
_TP = re.compile(r"(?:^|[_ ])TP([0-9]{1,6})(?:[_ ]|$)")


@dataclass
class _Line:
    no: int
    msg: str
    headed: bool  # began with a header or prefix: a new message, not a continuation
    rank: str | None
    tp_rank: int | None
    date: str | None
    month_day: str | None
    width: int = 0  # the physical line's length: a terminal folds at its full width


def _peel(no: int, raw: str) -> _Line:
    text = raw.rstrip("\r\n")
    if "\x1b" in text or "^[[" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:  # a progress bar redrawn on one line: the terminal shows what follows the last return
        text = text.rsplit("\r", 1)[-1] or text.replace("\r", "")
    headed, rank, tp_rank, date, month_day = False, None, None, None, None
    stamped = False  # the prefix just peeled was a timestamp
    for _ in range(8):  # prefixes nest: peel them one by one, choosing the pattern by the first character
        first = text[:1]
        m = None
        if first == "(":
            m = _PROCESS.match(text)
            if m and (m[1] or m[2]):
                name, rest = m[1] or "", m[2]
                t = _TP.search(f"{name} {rest.strip()}")
                if t:
                    tp_rank = int(t[1])
                if not (name.startswith("EngineCore") or name == "APIServer"):
                    rank = f"{name} {rest}".strip()
        elif first == "[" or first.isdigit():
            m = _SGLANG_HEAD.match(text)
            if m:
                date = m[1]
                tags = m[2].split()
                for tag in tags:
                    t = _TP.search(tag)
                    if t:
                        tp_rank = int(t[1])
                rank = " ".join(tags) or rank
            else:
                m = _ISO.match(text)
                if m:
                    date = date or m[1]
                else:
                    m = _TORCH_RANK.match(text)
                    if m:
                        rank = f"rank{m[1]}"
                    else:
                        m = _KUBECTL.match(text)
        elif first in (">", " ", "\t", "▎", "▍", "▌", "│", "┃"):
            m = _QUOTE.match(text)
            if not (m and m.end()):
                break
            text = text[m.end() :]
            continue
        elif first == "|":
            m = _PIPE.match(text) or (_BAR.match(text) if stamped else None)
        elif first.isalpha():
            head = text[:100]
            if not headed and "=" in head and ")" in head:
                m = _PROCESS_CUT.match(text)
                if m:
                    t = _TP.search(m[1])
                    if t:
                        tp_rank = int(t[1])
                    rank = f"{m[1]} {m[2].strip()}"
            if m is None and "|" in head and not _VLLM_HEAD.match(text):
                m = _COMPOSE.match(text)
            if m is None and "]: " in head:
                m = _SYSLOG.match(text)
        if not m:
            break
        headed, stamped = True, m.re is _ISO
        text = text[m.end() :]
    if text.startswith("{") and ('"message"' in text or '"msg"' in text):
        try:
            record = jsontext.loads(text)
        except ValueError:
            record = None
        if isinstance(record, dict):
            message = record.get("message", record.get("msg"))
            if isinstance(message, str):
                stamp = str(record.get("asctime", record.get("time", record.get("timestamp", ""))))
                if re.match(r"\d{4}-\d{2}-\d{2}", stamp):
                    date = stamp[:10]
                text, headed = message, True
    elif "msg=" in text and ("level=" in text or "time=" in text):
        m = _LOGFMT_MSG.search(text)
        if m:
            t = _LOGFMT_TIME.search(text)
            if t:
                date = t[1]
            text, headed = m[1].replace('\\"', '"').replace("\\\\", "\\"), True
    m = _VLLM_HEAD.match(text) or _GLOG_HEAD.match(text)
    if m:
        if m.re is _VLLM_HEAD and m["md"]:
            month_day = m["md"]
        text, headed = text[m.end() :], True
    if text.endswith("cluster]") and (repeated := _REPEATED.search(text)):
        text = text[: repeated.start()].rstrip()
    return _Line(no, text.lstrip(), headed, rank, tp_rank, date, month_day, len(raw.rstrip("\r\n")))


# --- the lines a start prints ------------------------------------------------------------
# Each rule: a substring that must be present (a cheap first test) and a pattern. A number at
# the very end of a line may be cut by a fold, so patterns end on a unit, a word or punctuation.

NUM = r"(-?[0-9][0-9,]*(?:\.[0-9]+)?)"
INT = r"([0-9](?:[0-9,]*[0-9])?)"  # a count; a comma after it is punctuation, not a digit group


@dataclass(frozen=True)
class _Rule:
    name: str
    trigger: str
    source: str
    reach: int = 120  # how far from its trigger the rule reads: a line cut further on lost nothing it reads

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: a log holds the triggers of a few rules, and an import that
        compiled them all would cost every page that imports calc (in the browser too)."""
        return re.compile(self.source)


def _rule(name: str, trigger: str, pattern: str, reach: int = 120) -> _Rule:
    return _Rule(name, trigger, pattern, reach)


RULES = (
    # vLLM, every era
    _rule("version_api", "vLLM API server version", r"vLLM API server version v?([0-9][\w.+-]*)"),
    # from 0.19 (entrypoints/utils.py, later serve/utils/api_utils.py log_version_and_model): the logo's "version X" line,
    # or "vLLM server version X, serving model M" with VLLM_DISABLE_LOG_LOGO
    _rule("version_api", "▀▄▀ █", r"▀▄▀ █\s+version\s+v?([0-9][\w.+-]*)"),
    _rule("version_api", "vLLM server version", r"vLLM server version v?([0-9][\w.+-]*)"),
    _rule("engine_config", "LLM engine", r"Initializing an? (V1 )?LLM engine (?:\(v?([0-9][\w.+-]*)\) )?with config: (.*)"),
    _rule("args", "args: ", r"(?:non-default args|^args): (.*)"),
    _rule("serve_cmd", "vllm serve ", r"vllm serve\s+(\S+)(.*)"),
    _rule("serve_cmd", "api_server", r"vllm\.entrypoints\.openai\.api_server(\s.*)"),
    _rule("serve_cmd", "vllm/vllm-openai", r"vllm/vllm-openai(?::\S*)?(\s.*)"),  # "docker run ... vllm/vllm-openai:latest \ --tensor-parallel-size 4"
    _rule("loading_v0", "Loading model weights took", r"Loading model weights took " + NUM + r" ?(GB|MB|GiB|MiB)"),
    _rule("loading", "Model loading took", r"Model loading took " + NUM + r" ?(GB|GiB|MB|MiB)"),
    _rule("drafter", "Loading drafter model", r"Loading drafter model"),
    _rule("profile_line", "kv_cache_size=", r"kv_cache_size=" + NUM + r" ?GiB"),
    # V0 0.6.6-0.10: "the current vLLM instance can use total_gpu_memory (X) x gpu_memory_utilization (F) = Y GiB";
    # 0.6.5's table: "the current vLLM instance can use    Y GiB" (vllm/worker/worker.py)
    _rule("can_use", "the current vLLM instance can use",
          r"the current vLLM instance can use\s+(?:total_gpu_memory \([^)]*\) x gpu_memory_utilization \([^)]*\) = ?)?" + NUM + r" ?GiB"),
    # a setting's name also appears in advice text ("Try increasing `gpu_memory_utilization`"): its figure follows it closely
    _rule("profile_total", "total_gpu_memory", r"total_gpu_memory(?:=|\s*\(|\s+)" + NUM + r" ?GiB", 40),
    _rule("profile_fraction", "gpu_memory_utilization", r"gpu_memory_utilization(?:=|\s*\(|\s+)([01]\.[0-9]+)(?=[)\s,.]|$)", 40),
    _rule("profile_weights", "model weights take", r"model weights take\s+" + NUM + r" ?GiB"),
    _rule("profile_rest", "reserved for KV Cache is", r"the rest of the memory reserved for KV Cache is\s+" + NUM + r" ?GiB"),
    _rule("profile_table", "available_kv_cache_memory", r"available_kv_cache_memory\s+" + NUM + r" ?GiB"),
    _rule("available", "Available KV cache memory", r"Available KV cache memory: " + NUM + r" ?GiB"),
    _rule("pinned", "as specified by kv_cache_memory_bytes",
          r"(?:Initial free memory " + NUM + r" ?GiB, )?reserved " + NUM + r" ?GiB (?:memory )?for KV Cache as specified by kv_cache_memory_bytes"),
    # "GPU KV cache size" (the device's name off CUDA, "GPU + host" with a host tier: v1/core/kv_cache_utils.py 0.33)
    _rule("tokens", "KV cache size: ", r"(?:GPU|XPU|NPU|HPU|TPU|CPU|GPU \+ host) KV cache size: " + INT + r" tokens"),
    _rule("concurrency", "Maximum concurrency for", r"Maximum concurrency for " + INT + r" tokens per request: " + NUM + r"x"),
    _rule("concurrency_len", "Maximum concurrency for", r"Maximum concurrency for " + INT + r" "),  # the length, where the line is cut after it
    _rule("blocks", "blocks: ", r"(?:GPU|CUDA|cuda|gpu|NPU|npu|XPU|xpu|HPU|hpu) blocks: " + INT + r"(?=\D|$)(?:, # CPU blocks: " + INT + ")?"),
    # v1/metrics/loggers.py log_engine_initialized: "Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: N"
    _rule("blocks", "num_gpu_blocks is:", r"num_gpu_blocks is:\s*" + INT + r"(?=\D|$)(?:(CPU))?"),
    _rule("block_hybrid", "Setting attention block size to", r"Setting attention block size to " + INT + r" tokens"),
    _rule("padding", "padding layers", r"Add " + INT + r" padding layers, may waste at most " + NUM + r"%"),
    # 0.10.2-0.11: "by the dcp_world_size N."; 0.12 on: "by the cp_world_size N (pcp_world_size P * dcp_world_size D)."
    _rule("dcp", "cp_world_size", r"Multiplying the GPU KV cache size by the d?cp_world_size " + INT + r"(?=\D|$)"),
    _rule("graph_taken", "Graph capturing finished", r"Graph capturing finished in [0-9.]+ secs?, took " + NUM + r" ?GiB"),
    _rule("graph_pool", "CUDA graph pool memory", r"CUDA graph pool memory: " + NUM + r" ?GiB \(actual\), " + NUM + r" ?GiB \(estimated\)"),
    _rule("chunked", "max_num_batched_tokens=", r"Chunked prefill is enabled with max_num_batched_tokens=" + INT + r"(?=\D|$)"),
    _rule("non_torch", "non_torch_memory", r"non_torch_memory(?:=|\s+takes\s+|\s+)" + NUM + r" ?GiB", 40),
    _rule("activation", "activation peak memory", r"PyTorch activation peak memory(?:\s+takes)?\s+" + NUM + r" ?GiB"),
    _rule("cuda_graph", "Estimated CUDA graph memory", r"Estimated CUDA graph memory: " + NUM + r" ?GiB"),
    _rule("cuda_graph_fraction", "The current --gpu-memory-utilization=", r"The current --gpu-memory-utilization=([01]\.[0-9]+)(?= )"),
    # 0.18 (gpu_worker.py): "To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 and increase --gpu-memory-utilization from 0.9000 to 0.9690 ..."
    _rule("cuda_graph_fraction", "increase --gpu-memory-utilization from", r"increase --gpu-memory-utilization from ([01]\.[0-9]+)(?= to )"),
    # The estimate printed but not taken off the pool (vllm/v1/worker/gpu_worker.py): VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS
    # defaults to 0 up to 0.19.x ("To try it now, set ...=1", 0.18.1, 0.19.1) and to 1 from 0.20.0 (vllm/envs.py), where
    # setting it to 0 prints "CUDA graph memory profiling is disabled (...=0)" (0.20.0 to 0.33.0).
    _rule("cuda_graph_off", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
          r"(To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1|CUDA graph memory profiling is disabled)"),  # fmt: skip
    _rule("cuda_graph_fraction", "increasing --gpu-memory-utilization from", r"increasing --gpu-memory-utilization from ([01]\.[0-9]+)(?= to )"),
    _rule("max_len_used", "Using max model len", r"Using max model len " + INT + r"(?=\D|$)"),
    _rule("fail_free", "on startup is less than desired GPU memory utilization",
          r"Free memory on device(?: \S+)? \(" + NUM + r"/" + NUM + r" ?GiB\) on startup is less than desired GPU memory utilization \(([0-9.]+), " + NUM + r" ?GiB\)"),
    _rule("free_info", "on startup. Desired GPU memory utilization is",
          r"Free memory on device(?: \S+)? \(" + NUM + r"/" + NUM + r" ?GiB\) on startup\. Desired GPU memory utilization is \(([0-9.]+), " + NUM + r" ?GiB\)"),
    # the suggestion's split: "Actual usage is X GiB for weight, ..." (vLLM), "Actual usage: X GiB for weights, ..." (vllm-ascend)
    _rule("usage_weights", "Actual usage", r"Actual usage(?: is|:) " + NUM + r" ?GiB for weights?(?=[,. ])"),
    _rule("usage_activation", "for peak activation", r"(?<![\w.,-])" + NUM + r" ?GiB for peak activation(?=[,. ])"),
    _rule("usage_non_torch", "for non-torch memory", r"(?<![\w.,-])" + NUM + r" ?GiB for non-torch memory(?=[,. ])"),
    # gpu_worker.py prints the pool, self.available_kv_cache_memory_bytes, as a whole number of bytes in 0.10.x and in GiB after
    _rule("kv_in_use", "Current kv cache memory in use is", r"Current kv cache memory in use is " + NUM + r" ?(GiB|bytes\.)"),
    # and the line ends with that pool: one cut before it has lost it
    _rule("advice_end", "Replace gpu_memory_utilization", r"Replace gpu_memory_utilization[^\n]{0,300}?Current kv cache memory in use is", 300),
    _rule("usage_graph", "for CUDAGraph memory", r"(?<![\w.,-])" + NUM + r" ?GiB for CUDAGraph memory(?=[,. ])"),
    _rule("ascend_available", "Available memory: ", r"Available memory: ([0-9]+), total memory: ([0-9]+)"),  # vllm-ascend worker_v1.py, in bytes
    _rule("kv_dtype_line", "Using KV cache dtype", r"Using KV cache dtype: ([\w.]+)"),
    _rule("oom", "OutOfMemoryError", r"OutOfMemoryError: (?:CUDA out of memory\. )?(.{0,120})"),
    _rule("fail_blocks", "No available memory for the cache blocks", r"No available memory for the cache blocks"),
    _rule("fail_one", "To serve at least one request with the",
          r"To serve at least one request with the models?'s max(?: seq len|_model_len| model len) \(" + INT + r"\),\s*\(?" + NUM
          + r" ?GiB KV cache is needed, which is larger than the available KV cache memory \(" + NUM + r" ?GiB\)"),
    _rule("fail_estimate", "estimated maximum model length is", r"estimated maximum model length is " + INT + r"(?=[^\d,]|,\D)"),
    _rule("fail_v0", "is larger than the maximum number of tokens that can be stored in KV cache",
          r"max seq len \(" + INT + r"\) is larger than the maximum number of tokens that can be stored in KV cache \(" + INT + r"\)"),
    # SGLang
    _rule("sg_args", "server_args=", r"server_args=ServerArgs\((.*)"),
    _rule("sg_load", "Load weight end", r"Load weight end\..*?avail mem=" + NUM + r" ?GB(?:, mem usage=" + NUM + r" ?GB)?"),
    _rule("sg_pool_end", "Memory pool end", r"Memory pool end\. avail mem=" + NUM + r" ?GB"),
    _rule("sg_no_kv", "leave no GPU memory for the KV cache",
          r"leave no GPU memory for the KV cache(?: under --mem-fraction-static=([01]?\.[0-9]+))?"),
    _rule("sg_kv", "KV Cache is allocated",
          r"KV Cache is allocated\.(?: dtype: ([\w.]+),)?(?: #tokens: " + INT + r",)? (?:K size: " + NUM + r" ?GB, V size: " + NUM + r" ?GB|KV size: " + NUM + r" ?GB)"),
    _rule("sg_total", "max_total_num_tokens=", r"max_total_num_tokens=" + INT + r"(?=,|\s|$)"),
    # a sliding-window hybrid (model_runner.py): "Use sliding window memory pool. full_layer_tokens=N, swa_layer_tokens=M";
    # its max_total_num_tokens is the full layers' N, and each pool prints its own "KV Cache is allocated. #tokens"
    _rule("sg_total", "full_layer_tokens=", r"Use sliding window memory pool\. full_layer_tokens=" + INT + r"(?=,|\s|$)"),
    # mem_cache/swa_memory_pool.py: "SWAKVPool mem usage: X GB, swa size: N, full size: M" after its two pools' lines
    _rule("sg_swa", "SWAKVPool mem usage", r"SWAKVPool mem usage: " + NUM + r" ?GB"),
    # model_runner.py: a --max-total-tokens above what the profile left is cut to it; a profile of <= 0 tokens
    # ends the start with "Not enough memory" (0.3-0.5)
    _rule("sg_profiled", "is larger than the profiled value", r"max_total_tokens=" + INT + r" is larger than the profiled value (-?[0-9]+)"),
    _rule("sg_context", "context_len=", r"(?:^|[\s,])context_len=" + INT + r"(?=,|\s|$)"),
    # model_runner.py (0.3-0.5.x) and pool_configurator.py: only SGLang asks for --mem-fraction-static; later releases
    # append "Current value: {self.server_args.mem_fraction_static=}" or "Current value: mem_fraction_static=0.2"
    _rule("sg_fail", "Not enough memory",
          r"Not enough memory\. Please try to increase --mem-fraction-static(?:\. Current value: (?:self\.server_args\.)?mem_fraction_static=([01]?\.[0-9]+))?"),
    _rule("sg_version", "sglang", r"(?:sglang|SGLang)(?: version|==| v)\s*v?([0-9][\w.+-]*)"),
)  # fmt: skip
# Cheap first test before the trigger pattern: every trigger holds one of these (a test checks it).
ANCHORS = (
    "KV cache size", "KV cache memory", "KV Cache", "took", "args", "serve", "api_server", "blocks", "padding", "gpu_memory",
    "kv_cache", "total_gpu", "weights take", "Maximum concurrency", "Setting attention", "Using max", "Free memory", "No available",
    "estimated maximum", "max seq len", "Load weight", "Memory pool", "max_total", "context_len", "Not enough", "sglang", "SGLang",
    "LLM engine", "vLLM API", "drafter", "Estimated CUDA", "leave no GPU", "cp_world", "--gpu-memory", "esired GPU memory",
    "kv cache memory", "stored in KV cache", "Available memory", "KV cache dtype", "OutOfMemoryError", "Graph capturing",
    "CUDA graph pool", "max_num_batched_tokens", "non_torch_memory", "activation peak", "vLLM instance", "Actual usage",
    "peak activation", "non-torch memory", "profiled value", "CUDAGraph memory", "vllm-openai", "ESTIMATE_CUDAGRAPHS",
    "▀▄▀", "server version", "num_gpu_blocks", "full_layer_tokens", "SWAKVPool",
)  # fmt: skip
_TRIGGER = re.compile("|".join(sorted({re.escape(r.trigger) for r in RULES}, key=len, reverse=True)))

# Setting names as the engine config line, argument dumps, command lines and SGLang's ServerArgs write them.
_KEY = {
    "model": "model", "model_path": "model", "served_model_name": "served", "max_model_len": "max_model_len",
    "max_seq_len": "max_model_len", "context_length": "max_model_len", "max-model-len": "max_model_len",
    "tensor_parallel_size": "tp", "tensor-parallel-size": "tp", "tp_size": "tp", "tp": "tp",
    "kv_cache_dtype": "kv_dtype", "kv-cache-dtype": "kv_dtype", "block_size": "block_size", "block-size": "block_size",
    "page_size": "block_size", "gpu_memory_utilization": "fraction", "gpu-memory-utilization": "fraction",
    "mem_fraction_static": "mem_fraction", "mem-fraction-static": "mem_fraction",
    "kv_cache_memory_bytes": "pin", "kv-cache-memory-bytes": "pin", "kv-cache-memory": "pin", "kv_cache_memory": "pin",
    "decode_context_parallel_size": "dcp", "decode-context-parallel-size": "dcp",
    "max_num_batched_tokens": "prefill", "max-num-batched-tokens": "prefill", "max_num_seqs": "seats", "max-num-seqs": "seats",
}  # fmt: skip
_SETTING = re.compile(r"""(?:^|[\s,({])['"]?(?P<key>--[\w-]+|-tp|[A-Za-z_][\w-]*)['"]?(?:\s*+[=:]|\s)\s*+(?P<value>'[^']*'|"[^"]*"|[^\s,)}'"]+)""")
_SPEC_METHOD = re.compile(r"""(?:method|speculative_algorithm|speculative-algorithm)['"]?\s*[:=\s]\s*['"]?([\w-]+)""")
# vLLM's num_speculative_tokens; SGLang's speculative_num_steps is the same count (its num_draft_tokens adds the verified one)
_SPEC_COUNT = re.compile(r"""(?:num_spec_tokens|num_speculative_tokens|speculative_num_steps|speculative-num-steps)['"]?\s*[:=\s]\s*([0-9]+)""")
_SPEC_BLOCK = re.compile(r"""speculative[_-](?:config|algorithm)['"]?\s*[:=\s]\s*(SpeculativeConfig\([^)]*\)|\{[^}]*\}|'\{[^}]*\}'|'[\w-]+'|[\w-]+)""")
_DRAFTERLESS = {"ngram", "suffix", "ngram_gpu"}

_PLAIN_HEAD = re.compile(r"\([A-Za-z_][\w-]* (?:pid|rank|ip)=|(?:INFO|WARNING|DEBUG|ERROR) \d\d-\d\d ")  # a line that begins a message
_TP_PREFIX = re.compile(r"\(\w*?_TP([0-9]{1,6})[_ )]")  # "(Worker_TP2 pid=1)", "(Worker_TP2_EP2 pid=1)"
_FLATTENED = re.compile(r"(?<!\s)\s+(?=(?:\([A-Za-z_][\w-]*(?:[\s,]+(?:\w+=[^\s,)]+|[A-Z]+\d+))+\)\s+)?(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d)")
_LONG_NUMBER = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?")
_ESCAPED_BREAK = re.compile(r"(?:\\r)?\\n")
_HEADISH = re.compile(r"\s*(?:\([A-Za-z_][\w-]* (?:pid|rank|ip)=|(?:INFO|WARNING|DEBUG|ERROR) \d\d-\d\d |\[\d{4}-\d\d-\d\d )")
_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception)(?::\s.*|\(.*)")  # "ValueError: ...", "RuntimeError(...)"
_CUT_MARK = re.compile(r"^(?:\[\s*(?:\.\.\.|…)[^\]]*\]|\.{3,}|…)$")  # "[... cut ...]", "...": a poster's cut, not a fold
# How a message begins: a line that begins so is a message of its own, never the tail of a fold.
_MESSAGE_START = re.compile(
    r"(?:Initializing (?:a|an) |GPU KV cache size|Maximum concurrency|Available KV cache|Model loading took|Loading model weights took|"
    r"Memory profiling|#? ?\w+ blocks: |KV Cache is allocated|Load weight end|Memory pool end|\w+Error: |non-default args|args: |"
    r"server_args=|max_total_num_tokens=|The model's max seq len|To serve at least|the current vLLM instance|model weights take|"
    r"Estimated CUDA graph|CUDA graph memory|Free memory on device|Initial free memory|Add \d+ padding|Setting attention block|vLLM API server|"
    r"Based on the available memory|Try increasing)"
)
_DEFERRED = ("engine_config", "args", "serve_cmd", "sg_args")


def _ends_whole(text: str) -> bool:
    """A line that ends a sentence or a bracket, not one cut: a point right after a digit may be
    a decimal point whose digits were cut ("per request: 1." of "1.74x")."""
    end = text.rstrip()
    return end.endswith((")", "]")) or (end.endswith(".") and not end[-2:-1].isdigit())


def _unflatten(raw: str) -> list[str]:
    """The messages of a line whose breaks were lost, each with its process prefix: a part that is
    only a prefix ("(Worker_TP2_EP2 pid=2080)") belongs to the header after it."""
    parts: list[str] = []
    for part in _FLATTENED.split(raw):
        if parts and _PROCESS.fullmatch(parts[-1].strip() + " "):
            parts[-1] = f"{parts[-1]} {part}"
        else:
            parts.append(part)
    return parts


def _joint(before: _Line, after: _Line) -> str:
    """How two physical lines of one message join: nothing at a terminal's fold (the previous
    line ran to the full width, or the break falls at punctuation), else the space a re-wrap ate."""
    if before.msg.endswith((",", "(", "=", ":", "/", " ")) or after.msg.startswith((",", ")", "=")):
        return ""
    return "" if before.width >= 79 else " "


# What each figure can be, as an engine prints it. A figure outside is a broken or hostile line:
# it is reported with its line and never used (a utilization of 7.5 once gave an overhead of
# 887.72 GiB; a negative load, a 32-digit pool, TP 0 or max_model_len 0 all read as valid).
_NAMES = {
    "loading": "model loading", "available": "KV pool", "available_exact": "KV pool", "tokens": "KV tokens",
    "blocks": "GPU blocks", "concurrency": "maximum concurrency", "fraction": "gpu_memory_utilization",
    "mem_fraction": "mem_fraction_static", "tp": "tensor_parallel_size", "pin": "kv_cache_memory_bytes",
    "free": "free memory", "total": "total memory", "requested": "requested memory", "kv_needed": "KV for one request",
    "estimated": "estimated max_model_len", "prefill": "max_num_batched_tokens", "seats": "max_num_seqs", "dcp": "decode_context_parallel_size",
}  # fmt: skip
_UNREAD_FIGURES = {"available": "available", "loading": "loading", "tokens": "tokens"}  # rule: the figure it gives
_AT_LEAST_ONE = ("max_model_len", "tp", "block_size", "dcp", "prefill", "seats", "estimated")
_NOT_NEGATIVE_SIZES = ("loading", "total", "free", "requested", "kv_needed", "profile_weights", "pinned_printed", "pin", "activation", "sg_loading")
_COUNTS = ("tokens", "blocks", "available_exact")
_SIGNED_SIZES = ("available", "cuda_graph", "graph_taken", "non_torch", "sg_pool", "sg_avail_load", "sg_avail_pool")  # vLLM prints a negative pool


def _impossible(name: str, value: Any) -> str | None:
    """Why a figure read from a line is none an engine prints, or None when it may be."""
    if isinstance(value, bool) or not isinstance(value, (int, Fraction, Decimal)):
        return None
    if name in _AT_LEAST_ONE and not 1 <= value <= LARGEST_COUNT:
        return f"expected a whole number from 1 to {LARGEST_COUNT:.0e}"
    if name in _COUNTS and not 0 <= value <= LARGEST_COUNT:
        return f"expected a count from 0 to {LARGEST_COUNT:.0e}"
    if name in ("fraction", "mem_fraction") and not 0 < value <= 1:
        return "expected a fraction above 0 and at most 1"
    if name == "concurrency" and not 0 <= value <= LARGEST_COUNT:
        return f"expected a ratio from 0 to {LARGEST_COUNT:.0e}"
    if name in _NOT_NEGATIVE_SIZES and not 0 <= value <= LARGEST_SIZE:
        return "expected a size from 0 B to 1 PiB"
    if name in _SIGNED_SIZES and not -LARGEST_SIZE <= value <= LARGEST_SIZE:
        return "expected a size within 1 PiB"
    return None


class _Reader:
    """Reads one line at a time; holds what was seen, and a short window for folded lines."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[Any, Found, str | None]]] = {}
        self.lines_read = 0
        self.window: list[_Line | tuple[int, str]] = []  # the current message: its headed line and up to 3 continuations
        self.tentative: list[tuple[_Rule, _Line, re.Match[str]]] = []
        self.tp_ranks: set[int] = set()
        self.dates: list[tuple[str, int]] = []
        self.month_days: set[str] = set()
        self.era_hints: dict[str, int] = {}
        self.era_lines: dict[str, int] = {}  # the first line that hinted at each era or engine
        self.at = 0  # the line being applied
        self.oversized: list[int] = []  # lines whose figure is too long to be one an engine printed
        self.unreadable: list[tuple[int, str]] = []  # (line, what): figures no engine prints, not read
        self.unread: dict[str, tuple[int, str]] = {}  # a figure's words on a line whose figure could not be read
        self.last_partial: tuple[int, str] | None = None
        self.last_raw: str = ""
        self.nonblank = False
        self.engine_lines = 0
        self.settings: tuple[_Rule, _Line, list[_Line]] | None = None
        self.traceback: int | None = None  # the line a traceback begins on
        self.exception: tuple[int, str] | None = None  # the last exception line after it

    # recording ----------------------------------------------------------------------------

    def put(
        self,
        name: str,
        value: Any,
        line: _Line,
        printed: str | None = None,
        half: Fraction = Fraction(0),
        text: str | None = None,
        exact: Fraction | None = None,
    ) -> None:
        impossible = _impossible(name, value)
        if impossible:  # no engine prints this: said with its line, never used
            self.unreadable.append((line.no, f"{_NAMES.get(name, name)} {printed or value}: {impossible}"))
            return
        found = Found(value, line.no, text if text is not None else line.msg, printed, half, exact=exact)
        entries = self.seen.setdefault(name, [])
        for v, _, r in entries:
            if v == value and (r == line.rank or name not in ("sg_pool", "sg_loading")):
                return
        entries.append((value, found, line.rank))

    def size(self, name: str, printed: str, unit: str, line: _Line, text: str) -> None:
        """A printed size: bytes, the exact printed figure and half its last digit."""
        exact, half = _exact_size(printed, unit)
        self.put(name, round(exact), line, f"{printed} {unit}", half, text, exact)

    def setting(self, key: str, raw: str, line: _Line, text: str) -> None:
        name = _KEY.get(key.lstrip("-"))
        if name is None:
            return
        value = raw.strip("'\"")
        if value in ("None", "", "null") or (name == "served" and value.startswith("[")):
            return
        try:
            if name in ("max_model_len", "tp", "block_size", "dcp", "prefill", "seats"):
                self.put(name, _count(value), line, value, text=text)
            elif name in ("fraction", "mem_fraction"):
                self.put(name, _fraction(value), line, value, text=text)
            elif name == "pin":
                self.put("pin", human_readable_int(value), line, value, text=text)
            elif name in ("model", "served"):
                self.put(name, value, line, value, text=text)
            elif name == "kv_dtype":
                self.put(name, value, line, value, text=text)
        except (ValueError, ArithmeticError, InputError):  # a setting no engine prints so: said, not used
            self.unreadable.append((line.no, f"{key} {value[:40]!r}: its figure could not be read"))

    def settings_in(self, body: str, line: _Line, text: str) -> None:
        spec = _SPEC_BLOCK.search(body)
        if spec:
            block = spec[1]
            body = body[: spec.start()] + body[spec.end() :]
            if block not in ("None", "'None'", "{}"):
                method = _SPEC_METHOD.search(block)
                count = _SPEC_COUNT.search(block) or _SPEC_COUNT.search(body)
                name = method[1] if method else (block.strip("'\"") if re.fullmatch(r"'?[\w-]+'?", block) else None)
                if name and name.lower() == "none":
                    name = None
                if name or count:
                    self.put("speculative", (name, int(count[1]) if count else None), line, text=text)
        for m in _SETTING.finditer(body):
            self.setting(m["key"], m["value"], line, text)

    # one message --------------------------------------------------------------------------

    def match(self, text: str, line: _Line, only_new: bool = False) -> bool:
        """Apply every rule whose trigger the text holds. Returns whether a triggered rule failed."""
        failed = False
        hits = {m.group() for m in _TRIGGER.finditer(text)}
        for rule in RULES:
            if rule.trigger not in hits:
                continue
            m = rule.pattern.search(text)
            if not m:
                if rule.name in _UNREAD_FIGURES:  # its words but no figure an engine prints ("1e400 GiB"): said, if none is read
                    self.unread.setdefault(rule.name, (line.no, text[text.rfind(rule.trigger) :][:80]))
                failed = failed or (len(text) - text.rfind(rule.trigger) < rule.reach and not _ends_whole(text))
                continue
            if m.end() == len(text) and text[-1:].isdigit() and not only_new and rule.name not in _DEFERRED:
                self.tentative.append((rule, line, m))  # a fold may have cut the number: wait one line
                continue
            self.apply(rule, m, line, text)
        return failed

    def apply(self, rule: _Rule, m: re.Match[str], line: _Line, text: str) -> None:
        """Record what a rule's match says; a figure in it that cannot be read is said, with its line."""
        try:
            self._apply(rule, m, line, text)
        except (ValueError, ArithmeticError):  # InputError too: a figure as no engine prints it
            self.unreadable.append((line.no, f"{m.group()[:80]!r}: its figure could not be read"))

    def _apply(self, rule: _Rule, m: re.Match[str], line: _Line, text: str) -> None:
        name, g = rule.name, m.groups()
        self.at = line.no
        if any(x and len(x) > 32 and _LONG_NUMBER.fullmatch(x) for x in g):
            self.oversized.append(line.no)  # no engine prints a figure this long: a broken or hostile line
            return
        if name not in ("args", "serve_cmd"):  # a command line or an argument list alone is not a log
            self.engine_lines += 1
        put = self.put
        if name == "version_api":
            put("version", g[0], line, text=text)
            self.hint("v?")
        elif name == "engine_config":
            if g[1]:
                put("version", g[1], line, text=text)
            self.hint("v1" if g[0] else "v0")
            self.defer(rule, line)
        elif name == "args":
            self.defer(rule, line)
        elif name == "serve_cmd":
            if rule.trigger == "vllm serve " and not g[0].startswith("-"):
                put("model", g[0].strip("'\""), line, text=text)
            self.defer(rule, line)
        elif name in ("loading_v0", "loading"):
            self.size("loading", g[0], g[1], line, text)
            self.hint("v0" if name == "loading_v0" else "v?")
        elif name == "drafter":
            put("drafter", True, line, text=text)
        elif name in ("profile_line", "profile_rest", "profile_table"):
            self.size("available", g[0], "GiB", line, text)
            self.hint("v0")
        elif name == "profile_total":
            self.size("total", g[0], "GiB", line, text)
        elif name == "can_use":
            self.size("requested", g[0], "GiB", line, text)
        elif name == "usage_weights":
            self.size("profile_weights", g[0], "GiB", line, text)
        elif name == "usage_activation":
            self.size("activation", g[0], "GiB", line, text)
        elif name == "usage_non_torch":
            self.size("non_torch", g[0], "GiB", line, text)
        elif name in ("profile_fraction", "cuda_graph_fraction"):
            put("fraction", _fraction(g[0]), line, g[0], _decimal_half(g[0]), text)
        elif name == "profile_weights":
            self.size("profile_weights", g[0], "GiB", line, text)
        elif name == "available":
            self.size("available", g[0], "GiB", line, text)
            self.hint("v1")
        elif name == "pinned":
            if g[0]:
                self.size("free", g[0], "GiB", line, text)
            self.size("pinned_printed", g[1], "GiB", line, text)
            self.hint("v1")
        elif name == "tokens":
            put("tokens", _count(g[0]), line, g[0], text=text)
            self.hint("v1")
        elif name == "concurrency":
            put("max_model_len", _count(g[0]), line, g[0], text=text)
            put("concurrency", Decimal(g[1]), line, f"{g[1]}x", _decimal_half(g[1]), text)
        elif name == "concurrency_len":
            put("max_model_len", _count(g[0]), line, g[0], text=text)
        elif name == "blocks":
            put("blocks", _count(g[0]), line, g[0], text=text)
            if g[1] is not None:
                self.hint("v0")
            elif rule.trigger == "num_gpu_blocks is:":
                self.hint("v1")  # printed by v1/metrics/loggers.py
        elif name == "block_hybrid":
            put("block_size", _count(g[0]), line, g[0], text=text)
        elif name == "padding":
            put("padding", (int(g[0]), g[1]), line, text=text)
        elif name == "dcp":
            put("dcp", _count(g[0]), line, g[0], text=text)
        elif name == "cuda_graph":
            self.size("cuda_graph", g[0], "GiB", line, text)
        elif name == "cuda_graph_off":
            put("cuda_graph_off", True, line, g[0], text=text)
        elif name in ("graph_taken", "graph_pool"):
            self.size("graph_taken", g[0], "GiB", line, text)
            if name == "graph_pool":
                self.size("cuda_graph", g[1], "GiB", line, text)
        elif name == "chunked":
            put("prefill", _count(g[0]), line, g[0], text=text)
        elif name == "non_torch":
            self.size("non_torch", g[0], "GiB", line, text)
        elif name == "activation":
            self.size("activation", g[0], "GiB", line, text)
        elif name == "max_len_used":
            put("max_model_len", _count(g[0]), line, g[0], text=text)
        elif name == "fail_free":
            self.size("free", g[0], "GiB", line, text)
            self.size("total", g[1], "GiB", line, text)
            put("fraction", _fraction(g[2]), line, g[2], text=text)
            self.size("requested", g[3], "GiB", line, text)
            put("error", "free_memory", line, text=text)
        elif name == "free_info":
            self.size("free", g[0], "GiB", line, text)
            self.size("total", g[1], "GiB", line, text)
            put("fraction", _fraction(g[2]), line, g[2], text=text)
            self.size("requested", g[3], "GiB", line, text)
        elif name == "kv_in_use" and g[1] == "GiB":
            self.size("available", g[0], "GiB", line, text)
        elif name == "kv_in_use" and "." not in g[0]:
            put("available_exact", _count(g[0]), line, f"{_count(g[0]):,} B", text=text)
        elif name == "usage_graph":
            self.size("graph_taken", g[0], "GiB", line, text)
        elif name == "ascend_available":
            put("available", int(g[0]), line, f"{int(g[0]):,} B", text=text)
            put("total", int(g[1]), line, f"{int(g[1]):,} B", text=text)
        elif name == "kv_dtype_line":
            put("kv_dtype", g[0], line, g[0], text=text)
        elif name == "oom":
            put("oom", True, line, text=text)
        elif name == "fail_blocks":
            put("error", "no_kv_memory", line, text=text)
        elif name == "sg_fail":
            put("error", "no_kv_memory", line, text=text)
            if g[0]:
                put("mem_fraction", _fraction(g[0]), line, g[0], text=text)
            self.hint("sglang")
        elif name == "fail_one":
            put("max_model_len", _count(g[0]), line, g[0], text=text)
            self.size("kv_needed", g[1], "GiB", line, text)
            self.size("available", g[2], "GiB", line, text)
            put("error", "max_model_len", line, text=text)
            self.hint("v1")
        elif name == "fail_estimate":
            put("estimated", _count(g[0]), line, g[0], text=text)
        elif name == "fail_v0":
            put("max_model_len", _count(g[0]), line, g[0], text=text)
            put("v0_capacity", _count(g[1]), line, g[1], text=text)
            put("error", "max_model_len", line, text=text)
            self.hint("v0")
        elif name == "sg_args":
            self.defer(rule, line)
            self.hint("sglang")
        elif name == "sg_load":
            put("sg_avail_load", _fraction(g[0]), line, f"{g[0]} GB", text=text)
            if g[1] is not None:
                exact, half = _exact_size(g[1], "GB")
                put("sg_loading", (exact, half, f"{g[1]} GB"), line, text=text)
            self.hint("sglang")
            put("sglang_line", True, line, text=text)
        elif name == "sg_pool_end":
            put("sg_avail_pool", _fraction(g[0]), line, f"{g[0]} GB", text=text)
            self.hint("sglang")
            put("sglang_line", True, line, text=text)
        elif name == "sg_no_kv":
            put("error", "no_kv_memory", line, text=text)
            if g[0]:
                put("mem_fraction", _fraction(g[0]), line, g[0], text=text)
            self.hint("sglang")
        elif name == "sg_kv":
            if g[0]:
                put("kv_dtype", g[0], line, g[0], text=text)
            if g[1]:
                put("tokens", _count(g[1]), line, g[1], text=text)
            parts = [g[2], g[3]] if g[2] is not None else [g[4]]
            sizes = [_exact_size(p, "GB") for p in parts]
            printed = " + ".join(f"{p} GB" for p in parts)
            put("sg_pool", (sum(x for x, _ in sizes), sum((h for _, h in sizes), Fraction(0)), printed), line, text=text)
            self.hint("sglang")
        elif name == "sg_total":
            put("tokens", _count(g[0]), line, g[0], text=text)
            put("sg_total", _count(g[0]), line, g[0], text=text)
            if rule.trigger == "full_layer_tokens=":
                put("sg_swa", True, line, text=text)
            self.hint("sglang")
        elif name == "sg_swa":
            put("sg_swa", True, line, text=text)
            self.hint("sglang")
        elif name == "sg_profiled":
            profiled = int(g[1])
            if profiled > 0:
                put("tokens", profiled, line, g[1], text=text)
            else:
                put("sg_profiled_none", profiled, line, g[1], text=text)
                put("error", "no_kv_memory", line, text=text)
            self.hint("sglang")
        elif name == "sg_context":
            put("max_model_len", _count(g[0]), line, g[0], text=text)
        elif name == "sg_version":
            put("version", g[0], line, text=text)

    def hint(self, era: str) -> None:
        self.era_hints[era] = self.era_hints.get(era, 0) + 1
        self.era_lines.setdefault(era, self.at)

    # the stream ---------------------------------------------------------------------------

    def defer(self, rule: _Rule, line: _Line, parts: list[_Line] | None = None) -> None:
        """A settings line may be folded over many lines: read it whole, once it has ended."""
        if self.settings is None or self.settings[1].no != line.no:
            self.flush()
            self.settings = (rule, line, parts or [line])
        elif parts and len(parts) > len(self.settings[2]):
            self.settings = (rule, line, parts)

    def flush(self) -> None:
        if self.settings is None:
            return
        rule, head, parts = self.settings
        self.settings = None
        for joint in (_joint, lambda before, after: " "):
            text = parts[0].msg
            for before, part in zip(parts, parts[1:], strict=False):
                text += joint(before, part) + part.msg
            m = rule.pattern.search(text)
            if m:
                self.settings_in(m.groups()[-1], head, text)
                return

    def feed(self, no: int, raw: str) -> None:
        if "\\n" in raw and len(parts := _ESCAPED_BREAK.split(raw.rstrip("\r\n"))) > 2 and sum(bool(_HEADISH.match(p)) for p in parts) > 1:
            # a log whose line breaks were pasted as the two characters backslash and n (a JSON or Python string)
            self.lines_read -= len(parts) - 1
            for part in parts:
                self.feed(no, part)
            return
        if len(raw) > 300 and _FLATTENED.search(raw, 1) and len(parts := _unflatten(raw)) > 1:
            # a log whose line breaks a web page or a scrape lost: one message per header again
            self.lines_read -= len(parts) - 1
            for part in parts:
                self.feed_one(no, part)
            return
        self.feed_one(no, raw)

    def feed_one(self, no: int, raw: str) -> None:
        if not raw or raw.isspace():  # a blank line ends the message before it, and is nothing more
            self.lines_read += 1
            self.last_raw = raw
            for rule, at, held in self.tentative:
                self.apply(rule, held, at, at.msg)
            self.tentative = []
            self.flush()
            self.window = []
            self.last_partial = None
            return
        self.lines_read += 1
        if not self.nonblank and raw.strip():
            self.nonblank = True
        if "\x00" in raw:
            raise InputError(f"line {no}: found binary data (NUL bytes), expected the text of a vLLM or SGLang startup log")
        continued = self.last_raw.rstrip().endswith("\\")  # a shell command's line continues on the next, whatever prefixes both
        self.last_raw = raw
        if "Traceback (most recent call last)" in raw:
            self.traceback = self.traceback or no
        elif self.traceback and ("Error: " in raw or "Exception: " in raw or "Error(" in raw):
            m = _EXCEPTION.search(raw)
            if m:
                self.exception = (no, m[0][:120])
        if not self.tentative and not continued and _PLAIN_HEAD.match(raw) and not any(a in raw for a in ANCHORS):
            # the bulk of a long log: a new message (it begins with a prefix or a level) that no rule
            # reads; it ends the message before it, and is peeled only if a fold continues it
            m = _TP_PREFIX.match(raw)
            if m:
                self.tp_ranks.add(int(m[1]))
            self.flush()
            self.window = [(no, raw)]
            self.last_partial = None
            return
        line = _peel(no, raw)
        if line.tp_rank is not None:
            self.tp_ranks.add(line.tp_rank)
        if line.date:
            self.dates.append((line.date, no))
        if line.month_day:
            self.month_days.add(line.month_day)
        continuation = (
            (continued or not line.headed)
            and bool(self.window)
            and bool(line.msg)
            and not _CUT_MARK.match(line.msg.rstrip())
            and not _MESSAGE_START.match(line.msg)
        )
        if self.tentative:
            cut = continuation and line.msg[:1] in "0123456789.,"
            if not cut:
                for rule, at, m in self.tentative:
                    self.apply(rule, m, at, at.msg)
            self.tentative = []
        if continuation:
            self.window = [*(w if isinstance(w, _Line) else _peel(*w) for w in self.window[-2:]), line]
            if self.settings is not None and len(self.settings[2]) < 200:
                self.settings[2].append(line)
        else:
            self.flush()
            self.window = [line] if line.msg else []
        msg = line.msg
        failed = self.match(msg, line) if any(a in msg for a in ANCHORS) and _TRIGGER.search(msg) else False
        if continuation:
            self.joined()
        self.last_partial = (no, line.msg) if failed else None

    def joined(self) -> None:
        """A folded or re-wrapped message: read the last lines joined, without and with a space,
        and keep only what spans a join (what lies within one line was read on its own)."""
        window = [w if isinstance(w, _Line) else _peel(*w) for w in self.window]  # peeled when the continuation came
        for sep in ("", " "):
            text, starts = "", []
            for part in window:
                if text:
                    text += sep
                starts.append(len(text))
                text += part.msg
            if not _TRIGGER.search(text):
                continue
            hits = {m.group() for m in _TRIGGER.finditer(text)}
            for rule in RULES:
                if rule.trigger not in hits:
                    continue
                m = rule.pattern.search(text)
                if not m:
                    continue
                first = max(i for i, at in enumerate(starts) if at <= m.start())
                last = max(i for i, at in enumerate(starts) if at < m.end())
                if rule.name in _DEFERRED:
                    if self.settings is None or self.settings[1].no != window[first].no:
                        self.apply(rule, m, window[first], text[starts[first] :])
                        self.defer(rule, window[first], list(window[first:]))
                elif first != last:
                    self.apply(rule, m, window[first], text[starts[first] :])

    def finish(self) -> LogReading:
        self.flush()
        for rule, at, m in self.tentative:
            self.apply(rule, m, at, at.msg)
        self.tentative = []
        return _conclude(self)


def read_lines(lines: Iterable[str]) -> LogReading:
    """Read a startup log line by line (a file object streams)."""
    reader = _Reader()
    no = 0
    for no, raw in enumerate(lines, 1):
        reader.feed(no, raw)
    if not reader.nonblank:
        raise InputError("found no text, expected a vLLM or SGLang startup log")
    return reader.finish()


def read_log(text: str) -> LogReading:
    """Read a startup log given as one text."""
    if not isinstance(text, str):
        raise InputError(f"found {type(text).__name__}, expected the text of a startup log")
    if not text.strip():
        raise InputError("found no text, expected a vLLM or SGLang startup log")
    return read_lines(io.StringIO(text))


# --- from what was seen to the reading -------------------------------------------------------


def _free_within_total(r: _Reader) -> None:
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


def _pick(reader: _Reader, name: str, lowest: bool = True, notes: list[str] | None = None, what: str = "") -> Found | None:
    entries = reader.seen.get(name)
    if not entries:
        return None
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


def _speculative_entry(reader: _Reader) -> Found:
    """The speculative entry that names its method (an argument dump may hold one without it, as
    `{'num_speculative_tokens': 3}` beside the engine's `SpeculativeConfig(method='mtp', ...)`), its
    count filled from another entry where it lacks one."""
    entries = [f for _, f, _ in reader.seen["speculative"]]
    named = [f for f in entries if f.value[0]]
    chosen = (named or entries)[0]
    count = chosen.value[1] if chosen.value[1] is not None else next((f.value[1] for f in entries if f.value[1] is not None), None)
    return replace(chosen, value=(chosen.value[0], count))


_DP_TP = re.compile(r"\bDP(\d+) TP(\d+)\b")


def _sglang_dp_tp(reader: _Reader, notes: list[str]) -> Found | None:
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


def _model_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.rstrip("/").rsplit("/", 1)[-1].lower())


def _conflict(reader: _Reader, name: str, what: str) -> None:
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


def _conclude(r: _Reader) -> LogReading:
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
    if not r.seen:
        raise InputError(
            f"found none of the lines a vLLM or SGLang start prints in {r.lines_read} lines "
            "(such as 'GPU KV cache size', 'Model loading took', 'KV Cache is allocated'); expected a startup log"
        )
    notes: list[str] = []
    missing: list[str] = []
    if r.oversized:
        notes.append(f"line {r.oversized[0]} holds a figure of more than 32 digits, not one an engine prints: it is not read")
    _free_within_total(r)
    for rule_name, figure in _UNREAD_FIGURES.items():
        if rule_name in r.unread and figure not in r.seen:
            no, said = r.unread[rule_name]
            r.unreadable.append((no, f"{said!r}: its figure could not be read"))
    notes.extend(f"unreadable, line {no}: {what}; not one an engine prints, so it is not read" for no, what in r.unreadable)
    _conflict(r, "model", "model")
    _conflict(r, "max_model_len", "max_model_len")
    vllm_at = min((r.era_lines[e] for e in ("v0", "v1", "v?") if e in r.era_lines), default=None)
    if vllm_at is not None and "sglang" in r.era_lines:
        raise InputError(
            f"found two starts in one log: a vLLM line at line {vllm_at} and an SGLang line at line {r.era_lines['sglang']}; "
            "expected the lines of one start (split the log and read each part)"
        )

    def pick(name: str, lowest: bool = True, what: str = "") -> Found | None:
        return _pick(r, name, lowest, notes, what)

    engine_name = "sglang" if r.era_hints.get("sglang") else "vllm"
    any_line = next(iter(r.seen.values()))[0][1]
    engine = Found(engine_name, any_line.line_no, any_line.line_text)
    era_name = "sglang" if engine_name == "sglang" else "v0" if r.era_hints.get("v0", 0) > r.era_hints.get("v1", 0) else "v1" if r.era_hints.get("v1") else None
    era = Found(era_name, any_line.line_no, any_line.line_text) if era_name else None

    model = pick("model", what="model") or pick("served", what="served model name")
    tp = pick("tp", what="tensor_parallel_size")
    if tp is None and engine_name == "sglang":
        tp = _sglang_dp_tp(r, notes)
    if tp is None and r.tp_ranks:
        ranks = ", ".join(f"TP{n}" for n in sorted(r.tp_ranks)[:8])
        notes.append(
            f"the rank prefixes show {len(r.tp_ranks)} tensor-parallel rank(s) ({ranks}), so tensor_parallel_size is at least {max(r.tp_ranks) + 1}; the log prints no setting"
        )
    max_len = pick("max_model_len")
    kv_dtype = None
    dtypes = r.seen.get("kv_dtype") or []
    concrete = [f for v, f, _ in dtypes if str(v) != "auto"]
    if concrete:
        kv_dtype = concrete[0]
    elif dtypes:
        kv_dtype = dtypes[0][1]
    block = pick("block_size", what="block size")
    fraction = pick("fraction", what="gpu_memory_utilization")
    mem_fraction = pick("mem_fraction", what="mem_fraction_static")
    pin = pick("pin", what="kv_cache_memory_bytes")
    loading = pick("loading", lowest=False, what="model loading")
    if loading is None and "sg_loading" in r.seen:
        loading = _sglang_sum(
            r, "sg_loading", notes, "loaded weights {n} times on one rank (lines {lines}): the target's and the drafter's; the weights read are their sum"
        )
    if loading is None and "profile_weights" in r.seen:
        loading = pick("profile_weights", lowest=False, what="model weights")
    tokens = pick("tokens", what="KV cache tokens")
    if engine_name == "sglang" and "sg_total" in r.seen:
        # a hybrid prints one "KV Cache is allocated. #tokens" per pool (full and sliding-window); the
        # capacity SGLang schedules by is max_total_num_tokens (model_runner.py)
        tokens = pick("sg_total", what="max_total_num_tokens")
    blocks = pick("blocks", what="GPU blocks")
    concurrency = pick("concurrency", what="maximum concurrency")
    dcp = pick("dcp", what="dcp_world_size")

    # the pool: the pin if the log has it, else what was printed
    available = None
    if engine_name == "sglang" and "sg_pool" in r.seen:
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
    elif engine_name == "sglang" and "sg_avail_load" in r.seen and "sg_avail_pool" in r.seen:
        available = _sglang_pool_from_free(r, notes)
    else:
        available = _exact_pool(pick("available", what="available KV cache memory"), pick("available_exact", what="KV cache memory in use"), notes)
        pinned = pick("pinned_printed", what="reserved KV cache memory")
        if pinned is not None:
            if pin is not None and abs(pinned.value - pin.value) > pinned.half:
                notes.append(f"the pin {pin.value:,} B (line {pin.line_no}) and the reserved {pinned.printed} (line {pinned.line_no}) disagree")
            available = pinned
            if pin is None:
                pin = pinned
    if pin is not None and available is None:
        available = pin

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
    estimated = pick("estimated", what="estimated maximum model length")
    if estimated is None and "v0_capacity" in r.seen:
        cap = pick("v0_capacity")
        assert cap is not None  # seen, so picked
        estimated = Found(cap.value, cap.line_no, cap.line_text, cap.printed, derived=True)
        if tokens is None:
            tokens = cap
        notes.append(
            f"the V0 check prints the tokens the cache can hold ({cap.value:,}, line {cap.line_no}); "
            "that is the largest max_model_len that passes, given as the estimated maximum model length"
        )
    if block is None and tokens is not None and blocks is not None and blocks.value and tokens.value % blocks.value == 0 and era_name == "v0":
        block = Found(
            tokens.value // blocks.value,
            tokens.line_no,
            f"{tokens.value:,} tokens / {blocks.value:,} blocks (lines {tokens.line_no}, {blocks.line_no})",
            derived=True,
        )
        notes.append(f"block size {block.value} is worked out from the tokens and the blocks, not printed")

    if block is None and blocks is not None and blocks.value and concurrency is not None and max_len is not None and era_name in ("v0", "v1"):
        block = _block_from_concurrency(blocks, concurrency, max_len, notes)

    speculative = None
    if "speculative" in r.seen:
        s = _speculative_entry(r)
        speculative = Found({"method": s.value[0], "num_speculative_tokens": s.value[1]}, s.line_no, s.line_text)
    drafter = r.seen.get("drafter")
    drafter_loaded = drafter[0][1] if drafter else None
    if drafter_loaded is None and speculative is not None and (speculative.value["method"] or "").lower() not in _DRAFTERLESS:
        drafter_loaded = Found(True, speculative.line_no, speculative.line_text)

    date = None
    if r.dates:
        day, no = min(r.dates)
        date = Found(day, no, f"timestamp {day}")
    elif r.month_days:
        notes.append(f"the timestamps carry month and day ({', '.join(sorted(r.month_days)[:3])}) but no year: the log's date is not known")
    version = pick("version", lowest=False, what="engine version")

    free = pick("free", what="free memory")
    total = pick("total", what="total memory")
    requested = pick("requested", what="requested memory")
    kv_needed = pick("kv_needed", what="KV needed for one request")
    cuda_graph = pick("cuda_graph", lowest=False, what="estimated CUDA graph memory")
    graph_taken = pick("graph_taken", lowest=False, what="CUDA graph memory taken")
    graph_off = pick("cuda_graph_off", lowest=False, what="CUDA graph memory profiling off")
    non_torch = pick("non_torch", lowest=False, what="non-torch memory")
    activation = pick("activation", lowest=False, what="activation peak")
    prefill = pick("prefill", what="max_num_batched_tokens")
    seats = pick("seats", what="max_num_seqs")

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

    per_token = _bytes_per_token(pin, available, tokens, blocks, block, dcp, kv_needed, max_len, concurrency, notes, version)
    if engine_name == "vllm" and error is None and concurrency is None:
        per_token = _one_request_fits(per_token, pin or available, tokens, max_len, notes)
    pool_unread = r.unread.get("available") or next(((no, what) for no, what in r.unreadable if what.startswith("KV pool ")), None)
    _missing(missing, engine_name, era_name, loading, available, pin, tokens, blocks, block, max_len, concurrency,
             fraction, mem_fraction, tp, per_token, pool_unread)  # fmt: skip
    if r.last_partial is not None and r.last_partial[0] == r.lines_read:
        no, text = r.last_partial
        notes.append(f"line {no} ends mid-line ({text[-60:]!r}): the log is cut short there, and a figure cut off with it is not read")
        missing.append(f"the figure of line {no}, cut off")
    if engine_name == "vllm" and era_name == "v1" and loading is not None and drafter_loaded is not None:
        notes.append(f"'Model loading took' (line {loading.line_no}) includes the drafter's weights: V1 loads the drafter inside the same measured step")

    return LogReading(
        engine=engine, engine_version=version, era=era, model=model, tensor_parallel_size=tp, max_model_len=max_len,
        kv_cache_dtype=kv_dtype, block_size=block, gpu_memory_utilization=fraction, mem_fraction_static=mem_fraction,
        kv_cache_memory_bytes=pin, model_loading_bytes=loading, available_kv_bytes=available, kv_tokens=tokens,
        gpu_blocks=blocks, max_concurrency=concurrency, bytes_per_token=per_token, error=error,
        estimated_max_model_len=estimated, kv_needed_bytes=kv_needed, free_memory_bytes=free, total_memory_bytes=total,
        requested_memory_bytes=requested,
        cuda_graph_bytes=cuda_graph, cuda_graph_taken_bytes=graph_taken, cuda_graph_off=graph_off, non_torch_bytes=non_torch,
        activation_peak_bytes=activation, max_num_batched_tokens=prefill, max_num_seqs=seats, dcp_size=dcp, padding_layers=padding, speculative=speculative, drafter_loaded=drafter_loaded, date=date,
        missing=missing, notes=notes,
    )  # fmt: skip


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


def _sglang_pool(r: _Reader, notes: list[str]) -> Found:
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


def _sglang_pool_from_free(r: _Reader, notes: list[str]) -> Found | None:
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


def _sglang_sum(r: _Reader, name: str, notes: list[str], said: str) -> Found:
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
    """The release of a printed engine version ("0.13.0+faa43dbf.nv26.01": (0, 13, 0); "0.20": (0, 20, 0))."""
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
