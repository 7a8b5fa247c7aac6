"""The lines a start prints: one entry a line shape.

Each entry (`Shape`) says everything the reader knows of one line shape: the substring that must
be present (`trigger`, a cheap first test), the pattern, what each of its groups gives (`Put`:
the figure and how the group is read, its unit), the era or engine the line proves, how its
message begins (a line so begun is a message of its own, never the tail of a fold), and where
the engine prints it. The reader's prefilter and its list of message beginnings are computed
from these entries; nothing about a line shape is kept anywhere else.

A number at the very end of a line may be cut by a fold, so patterns end on a unit, a word or
punctuation. Adding a line shape: `scripts/new_log_shape.py` adds its entry here, a fixture line
and its test.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol

from calc.logs.figures import _count, _decimal_half, _exact_size, _fraction

NUM = r"(-?[0-9][0-9,]*(?:\.[0-9]+)?)"
INT = r"([0-9](?:[0-9,]*[0-9])?)"  # a count; a comma after it is punctuation, not a digit group

# How a group is read (a Put's unit):
#   "GiB"       a size printed in GiB (vLLM's GB before 0.8.3 is 2**30 too: see calc/logs/figures.py)
#   "unit@N"    a size in the unit printed in group N (GB, GiB, MB, MiB)
#   "count"     a whole number as printed, ASCII digits with commas
#   "fraction"  a decimal, kept exact ("0.9")
#   "fraction±" a decimal with half its last printed digit (the printing's interval)
#   "x"         a ratio printed as "1.74x", with half its last digit
#   "bytes"     a whole number of bytes
#   "GB"        SGLang's free memory in GB (2**30 bytes), exact as printed
#   "GB-part"   one of SGLang's pools or loads in GB, added to the others of its rank later
#   "text"      the text itself (a version)
#   "word"      the text itself, printed as it is (a dtype)
#   "flag"      the line was seen (the group, if any, is what it printed)
#   "const"     the Put's value (an error kind), for a line that proves it
UNITS = ("GiB", "unit@", "count", "fraction", "fraction±", "x", "bytes", "GB", "GB-part", "text", "word", "flag", "const")


class Recorder(Protocol):
    """What a line's reading records into: the reader."""

    def put(
        self,
        name: str,
        value: Any,
        line: Any,
        printed: str | None = None,
        half: Fraction = Fraction(0),
        text: str | None = None,
        exact: Fraction | None = None,
    ) -> None: ...

    def size(self, name: str, printed: str, unit: str, line: Any, text: str) -> None: ...

    def hint(self, era: str) -> None: ...


@dataclass(frozen=True)
class Put:
    """One figure a line gives: the reader's name for it, the pattern's group it is read from
    (None for a flag or a constant) and how that group is read (see UNITS)."""

    field: str
    group: int | None
    unit: str
    value: Any = None

    def record(self, rec: Recorder, groups: tuple[str | None, ...], line: Any, text: str) -> None:
        raw = groups[self.group] if self.group is not None else None
        unit = self.unit
        if self.group is not None and not raw:  # an optional part the line did not print
            return
        if unit == "flag":
            rec.put(self.field, True, line, raw, text=text)
        elif unit == "const":
            rec.put(self.field, self.value, line, text=text)
        elif raw is None:
            raise ValueError(f"{self.field}: the unit {unit!r} reads a group")
        elif unit == "GiB":
            rec.size(self.field, raw, "GiB", line, text)
        elif unit.startswith("unit@"):
            rec.size(self.field, raw, str(groups[int(unit[5:])]), line, text)
        elif unit == "count":
            rec.put(self.field, _count(raw), line, raw, text=text)
        elif unit == "fraction":
            rec.put(self.field, _fraction(raw), line, raw, text=text)
        elif unit == "fraction±":
            rec.put(self.field, _fraction(raw), line, raw, _decimal_half(raw), text)
        elif unit == "x":
            rec.put(self.field, Decimal(raw), line, f"{raw}x", _decimal_half(raw), text)
        elif unit == "bytes":
            rec.put(self.field, int(raw), line, f"{int(raw):,} B", text=text)
        elif unit == "GB":
            rec.put(self.field, _fraction(raw), line, f"{raw} GB", text=text)
        elif unit == "GB-part":
            exact, half = _exact_size(raw, "GB")
            rec.put(self.field, (exact, half, f"{raw} GB"), line, text=text)
        elif unit == "text":
            rec.put(self.field, raw, line, text=text)
        elif unit == "word":
            rec.put(self.field, raw, line, raw, text=text)
        else:
            raise ValueError(f"{self.field}: found the unit {unit!r}, expected one of {', '.join(UNITS)}")


Then = Callable[[Recorder, tuple[str | None, ...], Any, str], None]


@dataclass(frozen=True)
class Shape:
    """One line shape a start prints, and what it gives."""

    name: str
    trigger: str
    regex: str
    puts: tuple[Put, ...] = ()
    era: str | None = None  # the era or engine the line proves: "v0", "v1", "v?" (vLLM, either), "sglang"
    era_if: tuple[int, str] | None = None  # an era the line proves when that group was printed (before `era`)
    begins: str | None = None  # how its message begins (a regular expression), where that is not a fold's tail
    settings: bool = False  # a settings line, read whole once it has ended (it may fold over many lines)
    engine_line: bool = True  # False for a command line or an argument list: alone, neither is a log
    said_unread: bool = False  # its words without a figure an engine prints are said, where no other line gives it
    then: Then | None = None  # what a Put cannot say (a choice between figures, a sum), after the puts
    source: str = ""  # where the engine prints it, by release
    reach: int = 120  # how far from its trigger it reads: a line cut further on lost nothing it reads

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """Compiled on first use: a log holds the triggers of a few shapes, and an import that
        compiled them all would cost every page that imports calc (in the browser too)."""
        return re.compile(self.regex)

    def record(self, rec: Recorder, m: re.Match[str], line: Any, text: str) -> None:
        groups = m.groups()
        for put in self.puts:
            put.record(rec, groups, line, text)
        if self.then is not None:
            self.then(rec, groups, line, text)
        if self.era_if is not None and groups[self.era_if[0]] is not None:
            rec.hint(self.era_if[1])
        elif self.era is not None:
            rec.hint(self.era)


# --- what a Put cannot say ---------------------------------------------------------------------


def _engine_config(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    """ "Initializing a V1 LLM engine (v0.10.1) with config: ...": the version where printed, V1 or V0."""
    if g[1]:
        rec.put("version", g[1], line, text=text)
    rec.hint("v1" if g[0] else "v0")


def _served_model(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    """`vllm serve MODEL ...`: the model, where the first word is not a flag."""
    if g[0] and not g[0].startswith("-"):
        rec.put("model", g[0].strip("'\""), line, text=text)


def _expert_parallel(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    """The expert-parallel group's size and the experts one rank holds of all of them (its rank is in the line too)."""
    rank, size, local, total = (_count(str(x)) for x in g)
    if rank < size and 0 < local <= total:
        rec.put("ep", (size, local, total), line, f"{local}/{total} experts on each of {size} ranks", text=text)


def _kv_group(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    """A fork's per-group KV line: the group's index, its spec, its block size and one full request's blocks in it."""
    index, spec, block, per_request = int(str(g[0])), str(g[1]), _count(str(g[2])), _count(str(g[4]))
    if block >= 1:
        printed = f"group {index}: {spec} block_size={block}, {per_request} blocks per request"
        rec.put("kv_group", (index, spec, block, per_request), line, printed, text=text)


def _padding(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    rec.put("padding", (int(str(g[0])), g[1]), line, text=text)


def _kv_in_use(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    """The pool in GiB (0.11 on), or in whole bytes (0.10.x)."""
    number = str(g[0])
    if g[1] == "GiB":
        rec.size("available", number, "GiB", line, text)
    elif "." not in number:
        rec.put("available_exact", _count(number), line, f"{_count(number):,} B", text=text)


def _sglang_kv(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    """SGLang's pool: K + V (or one KV size for MLA), each with two decimals; its dtype and tokens."""
    if g[0]:
        rec.put("kv_dtype", g[0], line, g[0], text=text)
    if g[1]:
        rec.put("tokens", _count(g[1]), line, g[1], text=text)
    parts = [str(g[2]), str(g[3])] if g[2] is not None else [str(g[4])]
    sizes = [_exact_size(p, "GB") for p in parts]
    printed = " + ".join(f"{p} GB" for p in parts)
    rec.put("sg_pool", (sum(x for x, _ in sizes), sum((h for _, h in sizes), Fraction(0)), printed), line, text=text)


def _sglang_profiled(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    """A --max-total-tokens above what the profile left is cut to it; a profile of <= 0 tokens ends the start."""
    profiled = int(str(g[1]))
    if profiled > 0:
        rec.put("tokens", profiled, line, g[1], text=text)
    else:
        rec.put("sg_profiled_none", profiled, line, g[1], text=text)
        rec.put("error", "no_kv_memory", line, text=text)


def _graph_advice(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    """The CUDA-graph advice's fractions as printed: the current one, the one without the estimate
    (where printed) and the one that keeps the pool; they differ by estimate / total."""
    current, rest = g[0], [x for x in g[1:] if x is not None]
    if current is None or not rest:
        return
    equivalent, suggested = (rest[0], rest[1]) if len(rest) == 2 else (None, rest[0])
    rec.put("cg_advice", (current, equivalent, suggested), line, text=text)


def _blocks_override(rec: Recorder, g: tuple[str | None, ...], line: Any, text: str) -> None:
    """The pool's blocks as profiled and as set; 0 profiled is the CUDA-graph profile's minimal KV cache, not the pool."""
    profiled, override = _count(str(g[0])), _count(str(g[1]))
    if profiled > 0 and override > 0:
        rec.put("blocks_override", (profiled, override), line, f"{profiled:,} blocks profiled, {override:,} set", text=text)


# --- the shapes ----------------------------------------------------------------------------------

_VERSION = (Put("version", 0, "text"),)
_FRACTION = (Put("fraction", 0, "fraction±"),)
_FREE_CHECK = (Put("free", 0, "GiB"), Put("total", 1, "GiB"), Put("fraction", 2, "fraction"), Put("requested", 3, "GiB"))
_NO_KV = Put("error", None, "const", "no_kv_memory")
_SG_TOTAL = (Put("tokens", 0, "count"), Put("sg_total", 0, "count"))

SHAPES: tuple[Shape, ...] = (
    # vLLM, every era
    Shape("version_api", "vLLM API server version", r"vLLM API server version v?([0-9][\w.+-]*)", _VERSION, era="v?", begins="vLLM API server"),
    Shape("version_api", "▀▄▀ █", r"▀▄▀ █\s+version\s+v?([0-9][\w.+-]*)", _VERSION, era="v?",
          source="entrypoints/utils.py, later serve/utils/api_utils.py log_version_and_model, 0.19 on: the logo's version line"),
    Shape("version_api", "vLLM server version", r"vLLM server version v?([0-9][\w.+-]*)", _VERSION, era="v?",
          source="the same, with VLLM_DISABLE_LOG_LOGO: 'vLLM server version X, serving model M'"),
    Shape("engine_config", "LLM engine", r"Initializing an? (V1 )?LLM engine (?:\(v?([0-9][\w.+-]*)\) )?with config: (.*)",
          then=_engine_config, begins="Initializing (?:a|an) ", settings=True),
    Shape("args", "args: ", r"(?:non-default args|^args): (.*)", begins="non-default args|args: ", settings=True, engine_line=False),
    Shape("serve_cmd", "vllm serve ", r"vllm serve\s+(\S+)(.*)", then=_served_model, settings=True, engine_line=False),
    Shape("serve_cmd", "api_server", r"vllm\.entrypoints\.openai\.api_server(\s.*)", settings=True, engine_line=False),
    Shape("serve_cmd", "vllm/vllm-openai", r"vllm/vllm-openai(?::\S*)?(\s.*)", settings=True, engine_line=False,
          source="'docker run ... vllm/vllm-openai:latest \\ --tensor-parallel-size 4'"),
    Shape("loading_v0", "Loading model weights took", r"Loading model weights took " + NUM + r" ?(GB|MB|GiB|MiB)",
          (Put("loading", 0, "unit@1"),), era="v0", begins="Loading model weights took"),
    Shape("loading", "Model loading took", r"Model loading took " + NUM + r" ?(GB|GiB|MB|MiB)",
          (Put("loading", 0, "unit@1"),), era="v?", begins="Model loading took", said_unread=True),
    Shape("drafter", "Loading drafter model", r"Loading drafter model", (Put("drafter", None, "flag"),)),
    Shape("profile_line", "kv_cache_size=", r"kv_cache_size=" + NUM + r" ?GiB", (Put("available", 0, "GiB"),), era="v0"),
    Shape("can_use", "the current vLLM instance can use",
          r"the current vLLM instance can use\s+(?:total_gpu_memory \([^)]*\) x gpu_memory_utilization \([^)]*\) = ?)?" + NUM + r" ?GiB",
          (Put("requested", 0, "GiB"),), begins="the current vLLM instance",
          source="V0 0.6.6-0.10: 'total_gpu_memory (X) x gpu_memory_utilization (F) = Y GiB'; 0.6.5's table (vllm/worker/worker.py)"),
    # a setting's name also appears in advice text ("Try increasing `gpu_memory_utilization`"): its figure follows it closely
    Shape("profile_total", "total_gpu_memory", r"total_gpu_memory(?:=|\s*\(|\s+)" + NUM + r" ?GiB", (Put("total", 0, "GiB"),), reach=40),
    Shape("profile_fraction", "gpu_memory_utilization", r"gpu_memory_utilization(?:=|\s*\(|\s+)([01]\.[0-9]+)(?=[)\s,.]|$)", _FRACTION, reach=40),
    Shape("profile_weights", "model weights take", r"model weights take\s+" + NUM + r" ?GiB", (Put("profile_weights", 0, "GiB"),), begins="model weights take"),
    Shape("profile_rest", "reserved for KV Cache is", r"the rest of the memory reserved for KV Cache is\s+" + NUM + r" ?GiB",
          (Put("available", 0, "GiB"),), era="v0"),
    Shape("profile_table", "available_kv_cache_memory", r"available_kv_cache_memory\s+" + NUM + r" ?GiB", (Put("available", 0, "GiB"),), era="v0"),
    Shape("available", "Available KV cache memory", r"Available KV cache memory: " + NUM + r" ?GiB", (Put("available", 0, "GiB"),),
          era="v1", begins="Available KV cache", said_unread=True, source="vllm/v1/worker/gpu_worker.py, 0.9.1 on"),
    # 0.34.0's extensible KV cache: 'Available KV cache memory' is the range reserved; the pool is sized after warmup
    Shape("measured", "KV cache blocks (",
          r"Memory after warmup: " + NUM + r" ?GiB free, " + NUM + r" ?GiB committed to the KV cache, .*?; " + INT
          + r" KV cache blocks \(" + NUM + r" ?GiB\) fit within the requested " + NUM + r" ?GiB",
          (Put("measured_pool", 3, "GiB"),), era="v1", begins="Memory after warmup",
          source="vllm/v1/worker/extensible_kv_cache.py measure_kv_cache_blocks, 0.34.0"),
    Shape("pinned", "as specified by kv_cache_memory_bytes",
          r"(?:Initial free memory " + NUM + r" ?GiB, )?reserved " + NUM + r" ?GiB (?:memory )?for KV Cache as specified by kv_cache_memory_bytes",
          (Put("free", 0, "GiB"), Put("pinned_printed", 1, "GiB")), era="v1", begins="Initial free memory", source="0.10.2 on"),
    Shape("tokens", "KV cache size: ", r"(?:GPU|XPU|NPU|HPU|TPU|CPU|GPU \+ host) KV cache size: " + INT + r" tokens", (Put("tokens", 0, "count"),),
          era="v1", begins="GPU KV cache size", said_unread=True,
          source="v1/core/kv_cache_utils.py (the device's name off CUDA, 'GPU + host' with a host tier: 0.33)"),
    Shape("concurrency", "Maximum concurrency for", r"Maximum concurrency for " + INT + r" tokens per request: " + NUM + r"x",
          (Put("max_model_len", 0, "count"), Put("concurrency", 1, "x")), begins="Maximum concurrency"),
    Shape("concurrency_len", "Maximum concurrency for", r"Maximum concurrency for " + INT + r" ", (Put("max_model_len", 0, "count"),),
          source="the length, where the line is cut after it"),
    Shape("blocks", "blocks: ", r"(?:GPU|CUDA|cuda|gpu|NPU|npu|XPU|xpu|HPU|hpu) blocks: " + INT + r"(?=\D|$)(?:, # CPU blocks: " + INT + ")?",
          (Put("blocks", 0, "count"),), era_if=(1, "v0"), begins=r"#? ?\w+ blocks: "),
    Shape("blocks", "num_gpu_blocks is:", r"num_gpu_blocks is:\s*" + INT + r"(?=\D|$)(?:(CPU))?", (Put("blocks", 0, "count"),), era_if=(1, "v0"), era="v1",
          source="v1/metrics/loggers.py log_engine_initialized: 'Engine 000: vllm cache_config_info with initialization after num_gpu_blocks is: N'"),
    Shape("block_hybrid", "Setting attention block size to", r"Setting attention block size to " + INT + r" tokens", (Put("block_size", 0, "count"),),
          begins="Setting attention block"),
    Shape("padding", "padding layers", r"Add " + INT + r" padding layers, may waste at most " + NUM + r"%", then=_padding, begins=r"Add \d+ padding"),
    Shape("dcp", "cp_world_size", r"Multiplying the GPU KV cache size by the d?cp_world_size " + INT + r"(?=\D|$)", (Put("dcp", 0, "count"),),
          source="0.10.2-0.11: 'by the dcp_world_size N.'; 0.12 on: 'by the cp_world_size N (pcp_world_size P * dcp_world_size D).'"),
    Shape("graph_taken", "Graph capturing finished", r"Graph capturing finished in [0-9.]+ secs?, took " + NUM + r" ?GiB", (Put("graph_taken", 0, "GiB"),)),
    Shape("graph_pool", "CUDA graph pool memory", r"CUDA graph pool memory: " + NUM + r" ?GiB \(actual\), " + NUM + r" ?GiB \(estimated\)",
          (Put("graph_taken", 0, "GiB"), Put("cuda_graph", 1, "GiB"))),
    Shape("chunked", "max_num_batched_tokens=", r"Chunked prefill is enabled with max_num_batched_tokens=" + INT + r"(?=\D|$)", (Put("prefill", 0, "count"),)),
    Shape("non_torch", "non_torch_memory", r"(?<!GiB, )non_torch_memory(?:=|\s+takes\s+|\s+)" + NUM + r" ?GiB", (Put("non_torch", 0, "GiB"),), reach=40),
    Shape("activation", "activation peak memory", r"PyTorch activation peak memory(?:\s+takes)?\s+" + NUM + r" ?GiB", (Put("activation", 0, "GiB"),)),
    Shape("cuda_graph", "Estimated CUDA graph memory", r"Estimated CUDA graph memory: " + NUM + r" ?GiB", (Put("cuda_graph", 0, "GiB"),),
          begins="Estimated CUDA graph"),
    Shape("cuda_graph_fraction", "The current --gpu-memory-utilization=",
          r"The current --gpu-memory-utilization=([01]\.[0-9]+)(?= )(?: is equivalent to --gpu-memory-utilization=([01]\.[0-9]+) without CUDA graph "
          r"memory profiling\. To maintain the same effective KV cache size as before, increase --gpu-memory-utilization to ([01]\.[0-9]+)(?=\.))?",
          _FRACTION, then=_graph_advice, reach=300,
          source="vllm/v1/worker/gpu_worker.py determine_available_memory (0.18 with VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1, 0.21 on by "
          "default): F, round(F - estimate / total, 4) and min(round(F + estimate / total, 4), 1.0), each printed %.4f"),
    Shape("cuda_graph_fraction", "increase --gpu-memory-utilization from", r"increase --gpu-memory-utilization from ([01]\.[0-9]+)(?= to )(?: to ([01]\.[0-9]+)(?= to maintain))?", _FRACTION, then=_graph_advice,
          source="0.18 (gpu_worker.py): 'To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 and increase --gpu-memory-utilization from 0.9000 to 0.9690 ...'"),
    Shape("cuda_graph_off", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
          r"(To try it now, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1|CUDA graph memory profiling is disabled)", (Put("cuda_graph_off", 0, "flag"),),
          begins="CUDA graph memory",
          source="the estimate printed but not taken off the pool (vllm/v1/worker/gpu_worker.py): VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS defaults to 0 "
          "up to 0.19.x ('To try it now, set ...=1', 0.18.1, 0.19.1) and to 1 from 0.20.0 (vllm/envs.py), where setting it to 0 prints "
          "'CUDA graph memory profiling is disabled (...=0)' (0.20.0 to 0.33.0)"),
    Shape("cuda_graph_fraction", "increasing --gpu-memory-utilization from", r"increasing --gpu-memory-utilization from ([01]\.[0-9]+)(?= to )(?: to ([01]\.[0-9]+)(?=\.))?", _FRACTION, then=_graph_advice),
    Shape("max_len_used", "Using max model len", r"Using max model len " + INT + r"(?=\D|$)", (Put("max_model_len", 0, "count"),)),
    Shape("fail_free", "on startup is less than desired GPU memory utilization",
          r"Free memory on device(?: \S+)? \(" + NUM + r"/" + NUM + r" ?GiB\) on startup is less than desired GPU memory utilization \(([0-9.]+), " + NUM + r" ?GiB\)",
          (*_FREE_CHECK, Put("error", None, "const", "free_memory")), begins="Free memory on device"),
    Shape("fail_free", "is less than the engine's budget after excluding",
          r"Free memory on device(?: \S+)? \(" + NUM + r"/" + NUM + r" ?GiB\) on startup is less than the engine's budget after excluding "
          r"external process's weights \(([0-9.]+), " + NUM + r" ?GiB\)",
          (*_FREE_CHECK[:3], Put("engine_budget", 3, "GiB"), Put("error", None, "const", "free_memory")), begins="Free memory on device",
          source="vllm/v1/worker/utils.py request_memory, 0.32.0 on: weights another process holds (get_external_weight_memory, an IPC "
          "weight loader) are taken off ceil(total x fraction), and free memory must hold the rest, the engine's budget"),
    Shape("fail_external", "Externally held weights on device",
          r"Externally held weights on device(?: \S+)? \(" + NUM + r"/" + NUM + r" ?GiB\) exceed the desired GPU memory utilization \(([0-9.]+), "
          + NUM + r" ?GiB\)",
          (Put("external", 0, "GiB"), Put("total", 1, "GiB"), Put("fraction", 2, "fraction"), Put("requested", 3, "GiB"),
           Put("error", None, "const", "free_memory")), begins="Externally held weights",
          source="vllm/v1/worker/utils.py request_memory, 0.32.0 on: the weights another process holds are at least ceil(total x fraction)"),
    Shape("external_info", "Weights are held outside this process",
          r"Weights are held outside this process: of the " + NUM + r" ?GiB utilization budget, " + NUM + r" ?GiB is externally held and "
          + NUM + r" ?GiB remains",
          (Put("requested", 0, "GiB"), Put("external", 1, "GiB"), Put("engine_budget", 2, "GiB")), begins="Weights are held outside",
          source="vllm/v1/worker/utils.py request_memory, 0.32.0 on (info, once), where the check passed"),
    Shape("free_info", "on startup. Desired GPU memory utilization is",
          r"Free memory on device(?: \S+)? \(" + NUM + r"/" + NUM + r" ?GiB\) on startup\. Desired GPU memory utilization is \(([0-9.]+), " + NUM + r" ?GiB\)",
          _FREE_CHECK, begins="Free memory on device"),
    # the suggestion's split: "Actual usage is X GiB for weight, ..." (vLLM), "Actual usage: X GiB for weights, ..." (vllm-ascend)
    Shape("usage_weights", "Actual usage", r"Actual usage(?: is|:) " + NUM + r" ?GiB for weights?(?=[,. ])", (Put("profile_weights", 0, "GiB"),)),
    Shape("usage_activation", "for peak activation", r"(?<![\w.,-])" + NUM + r" ?GiB for peak activation(?=[,. ])", (Put("activation", 0, "GiB"),)),
    Shape("usage_non_torch", "for non-torch memory", r"(?<![\w.,-])" + NUM + r" ?GiB for non-torch memory(?=[,. ])", (Put("non_torch", 0, "GiB"),)),
    Shape("kv_in_use", "Current kv cache memory in use is", r"Current kv cache memory in use is " + NUM + r" ?(GiB|bytes\.)", then=_kv_in_use,
          source="gpu_worker.py prints the pool, self.available_kv_cache_memory_bytes, as a whole number of bytes in 0.10.x and in GiB after"),
    Shape("advice_end", "Replace gpu_memory_utilization", r"Replace gpu_memory_utilization[^\n]{0,300}?Current kv cache memory in use is", reach=300,
          source="the advice ends with the pool: one cut before it has lost it"),
    Shape("usage_graph", "for CUDAGraph memory", r"(?<![\w.,-])" + NUM + r" ?GiB for CUDAGraph memory(?=[,. ])", (Put("graph_taken", 0, "GiB"),)),
    Shape("ascend_available", "Available memory: ", r"Available memory: ([0-9]+), total memory: ([0-9]+)",
          (Put("available", 0, "bytes"), Put("total", 1, "bytes")), source="vllm-ascend worker_v1.py, in bytes"),
    Shape("expert_parallel", "Expert parallelism is enabled",
          r"\[EP Rank " + INT + r"/" + INT + r"\] Expert parallelism is enabled\.(?: Expert placement strategy: \w+\.)? Local/global number of experts: "
          + INT + r"/" + INT + r"(?=\D|$)", then=_expert_parallel,
          source="model_executor/layers/fused_moe/layer.py (0.11 to 0.20), fused_moe/expert_map_manager.py (0.26 on): "
          "'[EP Rank r/N] Expert parallelism is enabled. Expert placement strategy: linear. Local/global number of experts: L/G. ...'"),
    Shape("kv_dtype_line", "Using KV cache dtype", r"Using KV cache dtype: ([\w.]+)", (Put("kv_dtype", 0, "word"),)),
    Shape("oom", "OutOfMemoryError", r"OutOfMemoryError: (?:CUDA out of memory\. )?(.{0,120})", (Put("oom", None, "flag"),)),
    Shape("fail_blocks", "No available memory for the cache blocks", r"No available memory for the cache blocks", (_NO_KV,)),
    Shape("fail_one", "To serve at least one request with the",
          r"To serve at least one request with the models?'s max(?: seq len|_model_len| model len) \(" + INT + r"\),\s*\(?" + NUM
          + r" ?GiB KV cache is needed, which is larger than the available KV cache memory \(" + NUM + r" ?GiB\)",
          (Put("max_model_len", 0, "count"), Put("kv_needed", 1, "GiB"), Put("available", 2, "GiB"), Put("error", None, "const", "max_model_len")),
          era="v1", begins="To serve at least"),
    Shape("fail_estimate", "estimated maximum model length is", r"estimated maximum model length is " + INT + r"(?=[^\d,]|,\D)", (Put("estimated", 0, "count"),)),
    Shape("fail_v0", "is larger than the maximum number of tokens that can be stored in KV cache",
          r"max seq len \(" + INT + r"\) is larger than the maximum number of tokens that can be stored in KV cache \(" + INT + r"\)",
          (Put("max_model_len", 0, "count"), Put("v0_capacity", 1, "count"), Put("error", None, "const", "max_model_len")),
          era="v0", begins="The model's max seq len"),
    Shape('start_snapshot', "memory snapshot: ", r"memory snapshot: torch_peak=" + NUM + r" ?GiB, (?:torch_allocated=" + NUM + r" ?GiB, )?free_memory=" + NUM + r" ?GiB, total_memory=" + NUM + r" ?GiB", (Put("total", 3, "GiB"),), source="v1/worker/gpu_worker.py 0.19 (DEBUG): 'worker init memory snapshot: %r', MemorySnapshot.__repr__ (utils/mem_utils.py; 'torch_allocated=' after torch_peak in 0.28.0 to 0.33.0); its non_torch_memory is the CUDA context before loading, not the profile's term"),
    Shape('profile_increase', "non-torch forward increase memory", r"torch peak memory increase: " + NUM + r" ?GiB; non-torch forward increase memory: " + NUM + r" ?GiB(?:; weights memory: " + NUM + r" ?GiB)?", (Put("activation", 0, "GiB"), Put("non_torch", 1, "GiB"), Put("profile_weights", 2, "GiB"),), source="MemoryProfilingResult.__repr__ (utils/mem_utils.py, 0.13 on), logged at DEBUG by v1/worker/gpu_worker.py: 'Memory profiling takes S seconds. Total non KV cache memory: X; torch peak memory increase: A; non-torch forward increase memory: N; weights memory: W.'"),
    Shape("profile_consumed", "total consumed (from mem_get_info)",
          r"torch peak memory increase: " + NUM + r" ?GiB; total consumed \(from mem_get_info\): " + NUM + r" ?GiB(?:; weights memory: " + NUM + r" ?GiB)?",
          (Put("activation", 0, "GiB"), Put("profile_weights", 2, "GiB")),
          source="MemoryProfilingResult.__repr__ (utils/mem_utils.py, 0.28.0 to 0.33.0), at DEBUG: '...; torch peak memory increase: A; "
          "total consumed (from mem_get_info): C; weights memory: W.', C the weights and non-torch memory together, not read"),
    Shape("fail_free_grew", "Error in memory profiling. Initial free memory",
          r"Error in memory profiling\. Initial free memory " + NUM + r" ?GiB, current free memory " + NUM + r" ?GiB",
          (Put("free", 0, "GiB"), Put("free_grew", 1, "GiB"), Put("error", None, "const", "free_memory")), begins="Error in memory profiling",
          source="vllm/v1/worker/gpu_worker.py determine_available_memory (0.11.0 to 0.33.0; 0.31 on not on ROCm): an assertion that free "
          "memory did not grow during the profile, another process having released memory while vLLM measured"),
    Shape('kv_dtype_said', "data type to store kv cache", r"Using ([\w.]+) data type to store kv cache", (Put("kv_dtype_said", 0, "word"),), era="v?", source="config/cache.py (CacheConfig._validate_cache_dtype), logged where kv_cache_dtype starts with fp8: 'Using fp8 data type to store kv cache' up to 0.19 (any fp8 variant), 'Using %s data type to store kv cache' with the dtype itself from 0.20"),
    Shape("fork_kv_group", "kv-capacity-log] group ",
          r"kv-capacity-log\] group ([0-9]+): (\w+) layers=[0-9]+ block_size=" + INT + r" page_size=[0-9,]+ B blocks/request@" + INT + r"=" + INT + r"(?= )",
          then=_kv_group, era="v1",
          source="a fork's log-only overlay on v1/core/kv_cache_utils.py (GLM-5.3-Flash kit, overlay/patch_kv_capacity_log.py): one line a KV cache "
          "group, 'group I: SPEC layers=N block_size=B page_size=P B blocks/request@L=K ...', K = cdiv(max_memory_usage_bytes, page_size_bytes), "
          "the group's share of vLLM's num_blocks_per_request"),
    Shape('fork_kv_pool', "usable block ids: ", r"usable block ids: " + INT + r" \(num_blocks=" + INT + r" incl\. the null block; " + INT + r" ids per " + INT + r"-token request(?: => " + NUM + r"x\))?", (Put("blocks", 1, "count"), Put("blocks_per_request", 2, "count"), Put("max_model_len", 3, "count"), Put("concurrency", 4, "x"),), era="v1", source="a fork's log-only overlay on v1/core/kv_cache_utils.py (GLM-5.3-Flash kit, GLM53_KV_CAPACITY_LOG, overlay/patch_kv_capacity_log.py): after 'GPU KV cache size' it prints one line per KV cache group and 'usable block ids: U (num_blocks=N incl. the null block; D ids per L-token request => Rx)', N the pool's blocks (kv_cache_config.num_blocks), D the sum over groups of cdiv(max_memory_usage_bytes, page_size_bytes), R = N / D (vLLM's max_concurrency)"),
    Shape('max_len_changed', "Changing max_model_len from", r"Changing max_model_len from " + INT + r" to " + INT + r"(?=\D|$)", (Put("max_len_from", 0, "count"), Put("max_model_len", 1, "count"),), source="a model's own config rule sets max_model_len again after ModelConfig verified it and says so (vllm/model_executor/models/config.py NomicBertModelConfig, 0.13.0)"),
    Shape('max_len_auto_fit', "Auto-fit max_model_len: reduced from", r"Auto-fit max_model_len: reduced from " + INT + r" to " + INT + r"(?=\D|$)", (Put("max_len_from", 0, "count"), Put("max_model_len", 1, "count"),), source="--max-model-len auto (-1): the longest length the profiled pool holds, set after the profile (vllm/v1/core/kv_cache_utils.py _auto_fit_max_model_len, absent from 0.13.0; kv_cache_planning.py in 0.33.0)"),
    Shape("fit_pool", "available for KV cache)", r"to fit in available GPU memory \(" + NUM + r" ?GiB available for KV cache\)",
          (Put("fit_pool", 0, "GiB"),),
          source="_auto_fit_max_model_len (vllm/v1/core/kv_cache_utils.py, 0.14 to 0.31): the KV memory of the worker whose pool holds the "
          "shortest length (limiting_worker_mem), the pool it profiled up to 0.30 and that pool less one block (the null block) in 0.31"),
    Shape("fit_pool", "to fit in available KV cache memory (",
          r"reduced from " + INT + r" to " + INT + r" to fit in available KV cache memory \(" + NUM + r" ?GiB",
          (Put("fit_pool", 2, "GiB"),),
          source="_auto_fit_max_model_len, 0.32 on (kv_cache_utils.py; kv_cache_planning.py in 0.33.0): 'reduced from A to B to fit in "
          "available KV cache memory (X GiB GPU)', X the limiting worker's pool less one block (the null block)"),
    Shape("max_len_fits", "Auto-fit max_model_len: full model context length",
          r"Auto-fit max_model_len: full model context length " + INT + r" fits in available", (Put("max_model_len", 0, "count"),),
          source="--max-model-len auto where the model's whole length fits every worker's pool (_auto_fit_max_model_len, 0.14 on); "
          "0.32 on adds the first worker's pool, '(X GiB GPU)', not read: no worker limited the length"),
    Shape("startup_plan", "Applying persisted startup plan",
          r"Applying persisted startup plan \(fingerprint \S+\): kv_cache_memory_bytes=" + INT + r" \(", (Put("pin", 0, "count"),), era="v1",
          begins="Applying persisted startup plan", reach=200,
          source="vllm/v1/worker/startup_plan.py (0.28.0 to 0.33.0, under VLLM_ENABLE_STARTUP_PLAN=1): a pool in bytes saved by an earlier start "
          "of the same settings is set as kv_cache_memory_bytes, and the profile is skipped"),
    Shape("blocks_override", "with num_gpu_blocks_override=", r"Overriding num_gpu_blocks=" + INT + r" with num_gpu_blocks_override=" + INT + r"(?=\D|$)",
          then=_blocks_override, era="v1", begins="Overriding num_gpu_blocks",
          source="vllm/v1/core/kv_cache_utils.py (0.11.0 to 0.32; kv_cache_planning.py in 0.33.0): the profiled pool's blocks and the "
          "count --num-gpu-blocks-override sets instead, allocated as that many blocks; 0.18 to 0.31 also print it, as 'num_gpu_blocks=0', "
          "for the minimal KV cache of the CUDA-graph profile (gpu_model_runner.py _init_minimal_kv_cache_for_profiling), which is not the pool"),
    Shape("fail_fit", "Cannot auto-fit max_model_len", r"Cannot auto-fit max_model_len: not enough GPU memory available to serve even a single token",
          (_NO_KV,), begins="Cannot auto-fit",
          source="_auto_fit_max_model_len (0.14 on): a worker's pool holds not one token at --max-model-len auto"),
    # SGLang
    Shape("sg_args", "server_args=", r"server_args=ServerArgs\((.*)", era="sglang", begins="server_args=", settings=True),
    Shape("sg_load", "Load weight end", r"Load weight end\..*?avail mem=" + NUM + r" ?GB(?:, mem usage=" + NUM + r" ?GB)?",
          (Put("sg_avail_load", 0, "GB"), Put("sg_loading", 1, "GB-part"), Put("sglang_line", None, "flag")), era="sglang", begins="Load weight end"),
    Shape("sg_pool_end", "Memory pool end", r"Memory pool end\. avail mem=" + NUM + r" ?GB",
          (Put("sg_avail_pool", 0, "GB"), Put("sglang_line", None, "flag")), era="sglang", begins="Memory pool end"),
    Shape("sg_no_kv", "leave no GPU memory for the KV cache", r"leave no GPU memory for the KV cache(?: under --mem-fraction-static=([01]?\.[0-9]+))?",
          (_NO_KV, Put("mem_fraction", 0, "fraction")), era="sglang"),
    Shape("sg_kv", "KV Cache is allocated",
          r"KV Cache is allocated\.(?: dtype: ([\w.]+),)?(?: #tokens: " + INT + r",)? (?:K size: " + NUM + r" ?GB, V size: " + NUM + r" ?GB|KV size: " + NUM + r" ?GB)",
          then=_sglang_kv, era="sglang", begins="KV Cache is allocated",
          source="mem_cache/memory_pool.py: GB = 1024 * 1024 * 1024 before 'KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB'"),
    Shape("sg_total", "max_total_num_tokens=", r"max_total_num_tokens=" + INT + r"(?=,|\s|$)", _SG_TOTAL, era="sglang", begins="max_total_num_tokens="),
    Shape("sg_total", "full_layer_tokens=", r"Use sliding window memory pool\. full_layer_tokens=" + INT + r"(?=,|\s|$)",
          (*_SG_TOTAL, Put("sg_swa", None, "flag")), era="sglang",
          source="a sliding-window hybrid (model_runner.py): 'Use sliding window memory pool. full_layer_tokens=N, swa_layer_tokens=M'; "
          "its max_total_num_tokens is the full layers' N, and each pool prints its own 'KV Cache is allocated. #tokens'"),
    Shape("sg_swa", "SWAKVPool mem usage", r"SWAKVPool mem usage: " + NUM + r" ?GB", (Put("sg_swa", None, "flag"),), era="sglang",
          source="mem_cache/swa_memory_pool.py: 'SWAKVPool mem usage: X GB, swa size: N, full size: M' after its two pools' lines"),
    Shape("sg_profiled", "is larger than the profiled value", r"max_total_tokens=" + INT + r" is larger than the profiled value (-?[0-9]+)",
          then=_sglang_profiled, era="sglang",
          source="model_runner.py: a --max-total-tokens above what the profile left is cut to it; a profile of <= 0 tokens ends the start "
          "with 'Not enough memory' (0.3-0.5)"),
    Shape("sg_context", "context_len=", r"(?:^|[\s,])context_len=" + INT + r"(?=,|\s|$)", (Put("max_model_len", 0, "count"),)),
    Shape("sg_fail", "Not enough memory",
          r"Not enough memory\. Please try to increase --mem-fraction-static(?:\. Current value: (?:self\.server_args\.)?mem_fraction_static=([01]?\.[0-9]+))?",
          (_NO_KV, Put("mem_fraction", 0, "fraction")), era="sglang",
          source="model_runner.py (0.3-0.5.x) and pool_configurator.py: only SGLang asks for --mem-fraction-static; later releases append "
          "'Current value: {self.server_args.mem_fraction_static=}' or 'Current value: mem_fraction_static=0.2'"),
    Shape("sg_version", "sglang", r"(?:sglang|SGLang)(?: version|==| v)\s*v?([0-9][\w.+-]*)", _VERSION),
)  # fmt: skip

# Messages no shape reads that still begin a message of their own (never a fold's tail).
OTHER_BEGINNINGS = ("Memory profiling", r"\w+Error: ", "Based on the available memory", "Try increasing")


def _cover(triggers: list[str], least: int = 12) -> tuple[str, ...]:
    """A few substrings that every trigger holds one of (a line holding none is read by no shape):
    whole words of the triggers, at least `least` characters long (short ones, such as "KV cache",
    are common in lines no shape reads), chosen greedily, the one that covers most first."""
    unique = sorted(set(triggers))
    candidates: set[str] = set(unique)
    for trigger in unique:
        words = trigger.split(" ")
        for i in range(len(words)):
            for j in range(i + 1, len(words) + 1):
                if len(part := " ".join(words[i:j])) >= least:
                    candidates.add(part)
    joined = "\n".join(unique)  # a part held by one trigger alone covers no more than the trigger itself
    shared = sorted(c for c in candidates if c in unique or joined.count(c) > 1)
    covers = {c: frozenset(t for t in unique if c in t) for c in shared}
    left, chosen = set(unique), []
    while left:
        best = max(covers, key=lambda c: (len(covers[c] & left), len(c)))
        chosen.append(best)
        left -= covers[best]
    return tuple(chosen)


# The reader's prefilter, computed: a line that holds none of these is read by no shape.
ANCHORS = _cover([s.trigger for s in SHAPES])
TRIGGER = re.compile("|".join(sorted({re.escape(s.trigger) for s in SHAPES}, key=len, reverse=True)))
MESSAGE_START = re.compile("(?:" + "|".join(dict.fromkeys([*(s.begins for s in SHAPES if s.begins), *OTHER_BEGINNINGS])) + ")")
SETTINGS = tuple(dict.fromkeys(s.name for s in SHAPES if s.settings))
SAID_UNREAD = tuple(dict.fromkeys(s.name for s in SHAPES if s.said_unread))
