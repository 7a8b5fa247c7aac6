"""What the figure reader does not keep, noted as a log's lines stream past: the lines that say the
server is up, traceback frames and progress lines (which step was running), the torch
out-of-memory figures, the settings lines and SGLang's free memory around the weights."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction

from calc.logs.peel import peel
from calc.logs.reader import STARTED, root_cause

GiB, MiB = 2**30, 2**20

_STARTED = STARTED
_OOM = re.compile(
    r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|HIP out of memory|NPU out of memory|out of memory occurred|OOM when allocating"
)
_TORCH_OOM = re.compile(
    r"Tried to allocate ([0-9.]+) ?(GiB|MiB|KiB)\. GPU \d+ has a total capacity of ([0-9.]+) ?(GiB|MiB) of which ([0-9.]+) ?(GiB|MiB|KiB|bytes) is free"
)
# "... dummy requests", which a terminal may fold away; a pooling model warms up its pooler instead
# ("warming up pooler (task='embed') with N dummy requests", gpu_model_runner.py _dummy_pooler_run, 0.11.0 to 0.33.0)
_SAMPLER = re.compile(r"warming up (?:sampler|pooler(?: \(task=[^)]{0,40}\))?) with ([0-9]+)\b")
_KILLED = re.compile(
    r"(?:^|\s)Killed\s*$|exit code 137|exitcode: ?-9|SIGKILL|died unexpectedly|Engine core initialization failed|\] Error executing metho|"
    r"WorkerProc hit an exception|EngineCore failed to start|EngineCore hit an exception|Scheduler hit an exception"
)
# traceback frames and progress lines that say which step was running, the most specific first
FRAMES = (
    ("sampler_warmup", re.compile(r"_dummy_sampler_run|_dummy_pooler_run|warming up sampler|warming up pooler")),
    (
        "cuda_graph_capture",
        re.compile(r"capture_model|torch/cuda/graphs\.py|capture_end|cuda_graph_runner\.py|Capturing CUDA graph|Capturing cudagraph|Capture cuda graph"),
    ),
    ("kv_cache_tensors", re.compile(r"\binitialize_kv_cache\b|_allocate_kv_cache|initialize_kv_cache_tensors|initialize_from_config|init_memory_pool")),
    ("profile_run", re.compile(r"profile_run|determine_available_memory|determine_num_available_blocks|_dummy_run|Starting profile run")),
    (
        "loading_weights",
        re.compile(r"load_model|load_weights|model_loader|Loading safetensors|Starting to load model|Load weight begin|make_layers|_init_model"),
    ),
)
_MILESTONES = (
    ("loaded", re.compile(r"Model loading took|Loading model weights took|Load weight end")),
    ("profiled", re.compile(r"Available KV cache memory|Memory profiling takes|GPU KV cache size|# GPU blocks|KV Cache is allocated|reserved .* for KV Cache")),
    ("captured", re.compile(r"Graph capturing finished|Capture cuda graph end")),
)
_SETTINGS = re.compile(
    r"(non-default args: |args: Namespace\(|with config: |server_args=ServerArgs\(|vllm serve |sglang\.launch_server|vllm\.entrypoints\.openai\.api_server|vllm/vllm-openai)"
)
_SG_AVAIL = re.compile(r"Load weight (begin|end)\..*?avail mem=([0-9.]+) ?GB")
# one cheap test before the patterns above: every one of them needs one of these
_WORTH = re.compile(
    r"Application startup|Starting vLLM|Uvicorn running|fired up|init engine|out of memory|OutOfMemory|OOM|Killed|exit code|exitcode|SIGKILL|"
    r"died|initialization failed|Error|Exception|capture|Captur|graphs\.py|kv_cache|from_config|memory_pool|profile|determine_|_dummy|"
    r"load_model|load_weights|model_loader|safetensors|to load model|Load weight|make_layers|_init_model|warming up|took|KV cache size|KV cache memory|"
    r"Memory profiling|blocks|KV Cache|args|config: |ServerArgs|vllm serve|launch_server|api_server|avail mem|encoder|multi-modal|"
    r"multimodal|mm_|ForConditionalGeneration|VL\b|Traceback|File \""
)
# a line as vLLM's logger heads it ("INFO 01-23 07:32:01 model_runner.py:1060] ", "(EngineCore pid=1) INFO ... [core.py:75] ")
# or SGLang's ("[2025-05-01 10:00:00 TP0] "): the text is a log, whatever else it holds
_VLLM_HEADER = re.compile(r"(?:^|\) )(?:DEBUG|INFO|WARNING|ERROR) (?:\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? )?\[?[\w./-]+\.py:\d+\] ")
_SGLANG_HEADER = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z]+\d+)*\] ")
_FRAME_LINE = re.compile(r'File "[^"]+", line \d+, in ')
_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception): \S.*")
_PYDANTIC_DETAIL = re.compile(r"^(?:\([^)]*\))?\s+((?:Value|Assertion) error, .*)")
_MULTIMODAL = re.compile(r"encoder cache|multi-modal|limit_mm_per_prompt|ForConditionalGeneration|multimodal|mm_processor|VL\b")


@dataclass
class Watcher:
    """What the figure reader does not keep, noted as the lines stream past."""

    started: tuple[int, str] | None = None
    killed: tuple[int, str] | None = None
    oom: tuple[int, str] | None = None
    torch_oom: tuple[int, Fraction, Fraction, Fraction] | None = None  # line, tried, total, free (bytes)
    sampler: tuple[int, int] | None = None  # line, dummy requests
    frames: list[tuple[int, str]] = field(default_factory=list)
    milestones: dict[str, int] = field(default_factory=dict)
    settings: list[tuple[int, str]] = field(default_factory=list)
    sg_avail: dict[str, Fraction] = field(default_factory=dict)
    multimodal: int | None = None
    traceback: int | None = None  # the line the first traceback begins on
    exception: tuple[int, str] | None = None  # the last exception line after it
    engine: str | None = None  # "vllm" or "sglang", from the paths a traceback names
    headed: tuple[int, str] | None = None  # the first line headed as vLLM's or SGLang's logger heads it, and whose
    lines: int = 0

    def see(self, no: int, raw: str) -> None:
        self.lines = no
        if len(raw) > 100_000:
            raw = raw[:100_000]
        if self.exception is not None and self.exception[0] == no - 1 and (m := _PYDANTIC_DETAIL.search(raw)):
            # pydantic prints a ValidationError's count on its line and the reason on the next:
            # "1 validation error for ModelConfig" / "  Value error, User-specified max_model_len (8192) is greater ..."
            if "validation error" in self.exception[1]:
                self.exception = (self.exception[0], f"{self.exception[1]}: {m[1]}"[:300])
        if self.settings and self.settings[-1][1].endswith("\\") and len(self.settings[-1][1]) < 20_000:
            # a command line continued with a backslash: its next line belongs to it
            at, text = self.settings[-1]
            self.settings[-1] = (at, text[:-1].rstrip() + " " + raw.strip())
            return
        if self.headed is None and (raw[:1] == "[" or "INFO" in raw or "WARNING" in raw or "DEBUG" in raw or "ERROR" in raw):
            if _VLLM_HEADER.search(raw, 0, 200):
                self.headed = (no, "vllm")
            elif _SGLANG_HEADER.match(raw):
                self.headed = (no, "sglang")
        if ("throughput" in raw or "HTTP/1." in raw or " request " in raw) and "rror" not in raw and "emory" not in raw:
            return  # the bulk of a long serving log: throughput, access and request lines
        if not _WORTH.search(raw) and not (self.engine is None and ("vllm" in raw or "sglang" in raw)):
            return  # nothing here reads it
        if any(s in raw for s in _STARTED) and self.started is None:
            self.started = (no, _message(no, raw))
        if "out of memory" in raw or "OutOfMemory" in raw or "OOM" in raw:
            if _OOM.search(raw) and self.oom is None:
                self.oom = (no, _message(no, raw))
            m = _TORCH_OOM.search(raw)
            if m and self.torch_oom is None:
                self.torch_oom = (no, _bytes(m[1], m[2]), _bytes(m[3], m[4]), _bytes(m[5], m[6]))
            s = _SAMPLER.search(raw)
            if s and self.sampler is None:
                self.sampler = (no, int(s[1]))
        if self.killed is None and _KILLED.search(raw):
            self.killed = (no, _message(no, raw))
        for phase, pattern in FRAMES:
            if pattern.search(raw):
                self.frames.append((no, phase))
                break
        for stage, pattern in _MILESTONES:
            if stage not in self.milestones and pattern.search(raw):
                self.milestones[stage] = no
        if _SETTINGS.search(raw) and len(self.settings) < 20:
            self.settings.append((no, _message(no, raw)))
        if "avail mem=" in raw and (m := _SG_AVAIL.search(raw)):
            self.sg_avail.setdefault(m[1], Fraction(m[2]) * GiB)
        if self.multimodal is None and _MULTIMODAL.search(raw):
            self.multimodal = no
        if "Traceback (most recent call last)" in raw or (self.traceback is None and _FRAME_LINE.search(raw)):
            self.traceback = self.traceback or no  # a paste may begin inside a traceback, at one of its frames
        elif self.traceback and ("Error" in raw or "Exception" in raw) and (m := _EXCEPTION.search(raw)):
            self.exception = root_cause(self.exception, (no, m[0][:200]))
        if self.engine is None and ("sglang/srt" in raw or "sglang." in raw):
            self.engine = "sglang"
        elif self.engine is None and ("vllm/" in raw or "vllm." in raw):
            self.engine = "vllm"


def _message(no: int, raw: str) -> str:
    return peel(no, raw).msg.strip()


def _bytes(number: str, unit: str) -> Fraction:
    return Fraction(number) * {"GiB": GiB, "MiB": MiB, "KiB": 2**10, "bytes": 1}[unit]


def watch(lines: Iterable[str], watcher: Watcher) -> Iterator[str]:
    """The lines, unchanged, each seen by the watcher on its way to the figure reader."""
    for no, raw in enumerate(lines, 1):
        watcher.see(no, raw)
        yield raw
