"""One answer for a startup log: did the start start, where it failed, the least change that
passes (each change checked against the log's own figures), and the whole command.

Standard library only: the browser's "Your start" calls the same `answer` as `python -m calc ingest`.

`watch(lines)` passes a log's lines through unchanged while noting what the figure reader does
not keep (the lines that say the server is up, traceback frames, the torch out-of-memory figures,
the settings lines); `answer(reading, watcher)` gives a `LogAnswer`; `answer_text(text)` does both
for a log held as one text. Where each failure is printed, as the engine's source has it:

- the free-memory check: vllm/v1/worker/gpu_worker.py init_device (to 0.13), vllm/v1/worker/utils.py
  request_memory (0.14 on): "Free memory on device ... on startup is less than desired GPU memory utilization";
- no memory for the cache blocks, and one request of max_model_len that does not fit:
  vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory ("No available memory for the cache
  blocks", "To serve at least one request ... the estimated maximum model length is N"); V0:
  vllm/worker/worker.py raise_if_cache_size_invalid;
- the sampler warm-up: vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run ("CUDA out of memory
  occurred when warming up sampler with N dummy requests");
- CUDA graph capture: vllm/v1/worker/gpu_model_runner.py capture_model, called from gpu_worker.py
  compile_or_warm_up_model (V0: vllm/worker/model_runner.py capture_model);
- the profile run: vllm/v1/worker/gpu_model_runner.py profile_run, called from gpu_worker.py
  determine_available_memory (V0: vllm/worker/worker.py determine_num_available_blocks);
- loading the weights: vllm/v1/worker/gpu_model_runner.py load_model and the model loader
  (vllm/model_executor/model_loader/);
- SGLang: python/sglang/srt/model_executor/model_runner.py ("Not enough memory. Please try to
  increase --mem-fraction-static"), its pool sized by mem_fraction_static after the weights load.
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, TypedDict

from calc.jsontext import JsonObject
from calc.logs import logread
from calc.logs.logread import Found, LogReading
from calc.logs.peel import peel
from calc.units import InputError, fmt, shown

GiB, MiB = 2**30, 2**20

VERDICTS = ("started", "refused", "killed", "unknown")
JSON_KEYS = ("verdict", "verdict_how", "failure_phase", "fixes", "command", "command_changes")  # what ingest --json adds

# phase: (what failed, the engine source that prints or raises it)
PHASES = {
    "free_memory": ("free memory below gpu_memory_utilization x total at start (vLLM's fraction check)",
                    "vllm/v1/worker/utils.py request_memory (0.14 on; gpu_worker.py init_device before)"),
    "kv_cache_allocation": ("no memory left for the KV cache blocks (a pool of zero or less)",
                            "vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory (V0: vllm/worker/worker.py raise_if_cache_size_invalid)"),
    "max_model_len": ("one request of max_model_len does not fit the KV pool",
                      "vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory (V0: vllm/worker/worker.py raise_if_cache_size_invalid)"),
    "loading_weights": ("out of memory loading the weights",
                        "vllm/v1/worker/gpu_model_runner.py load_model, vllm/model_executor/model_loader/"),
    "profile_run": ("out of memory in the profile run (a dummy batch of max_num_batched_tokens, and the encoder's for multimodal models)",
                    "vllm/v1/worker/gpu_model_runner.py profile_run, from gpu_worker.py determine_available_memory"),
    "cuda_graph_capture": ("out of memory capturing CUDA graphs",
                           "vllm/v1/worker/gpu_model_runner.py capture_model, from gpu_worker.py compile_or_warm_up_model (V0: vllm/worker/model_runner.py)"),
    "sampler_warmup": ("out of memory warming up the sampler with max_num_seqs dummy requests",
                       "vllm/v1/worker/gpu_model_runner.py _dummy_sampler_run"),
    "kv_cache_tensors": ("out of memory allocating the KV cache tensors",
                         "vllm/v1/worker/gpu_model_runner.py initialize_kv_cache"),
    "sglang_not_enough_memory": ("SGLang's pool came out empty: 'Not enough memory', mem_fraction_static too small for what the weights leave",
                                 "python/sglang/srt/model_executor/model_runner.py (0.3-0.5: profile_max_num_token, init_memory_pool; pool_configurator.py later)"),
    "sglang_out_of_memory": ("out of memory in SGLang after its pool was sized (CUDA graphs or the first batches)",
                             "python/sglang/srt/model_executor/cuda_graph_runner.py, model_runner.py"),
    "exception": ("the start stopped with an exception", "the exception line"),
}  # fmt: skip

_STARTED = (
    "Application startup complete", "Starting vLLM API server", "Starting vLLM server on", "Uvicorn running on",
    "The server is fired up and ready to roll", "init engine (profile, create kv cache, warmup model) took",
)  # fmt: skip
_OOM = re.compile(
    r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|HIP out of memory|NPU out of memory|out of memory occurred|OOM when allocating"
)
_TORCH_OOM = re.compile(
    r"Tried to allocate ([0-9.]+) ?(GiB|MiB|KiB)\. GPU \d+ has a total capacity of ([0-9.]+) ?(GiB|MiB) of which ([0-9.]+) ?(GiB|MiB|KiB|bytes) is free"
)
_SAMPLER = re.compile(r"warming up sampler with ([0-9]+)\b")  # "... dummy requests", which a terminal may fold away
_KILLED = re.compile(
    r"(?:^|\s)Killed\s*$|exit code 137|exitcode: ?-9|SIGKILL|died unexpectedly|Engine core initialization failed|\] Error executing metho|"
    r"WorkerProc hit an exception|EngineCore failed to start|EngineCore hit an exception|Scheduler hit an exception"
)
# traceback frames and progress lines that say which step was running, the most specific first
_FRAMES = (
    ("sampler_warmup", re.compile(r"_dummy_sampler_run|warming up sampler")),
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
        for phase, pattern in _FRAMES:
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
            self.exception = (no, m[0][:200])
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


# --- the answer ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fix:
    flag: str  # the flag as the engine takes it
    value: str | None  # None for a switch
    why: str
    check: str  # how the log's own figures check it, or why they cannot
    passes: bool | None  # True: checked to pass; False: checked not to suffice alone; None: the log cannot check it

    def to_json(self) -> JsonObject:
        return {"flag": self.flag, "value": self.value, "why": self.why, "check": self.check, "passes": self.passes}


class Phase(TypedDict):
    """The phase a start failed in, the line that says so and the engine source that prints it."""

    phase: str
    what: str
    line: int
    text: str
    engine_source: str


class CommandChange(TypedDict):
    """One flag of the whole command changed from what the log proves, and why."""

    flag: str
    value: str | None
    was: str | None
    why: str
    passes: bool | None


@dataclass(frozen=True)
class LogAnswer:
    verdict: str  # started, refused, killed or unknown
    verdict_how: str
    failure_phase: Phase | None
    fixes: tuple[Fix, ...]
    command: str | None
    command_changes: tuple[CommandChange, ...]
    command_flags: tuple[tuple[str, str | None, bool], ...] = ()  # flag, value, changed
    proven: tuple[tuple[str, str | None], ...] = ()  # every flag the log proves, before any change ("MODEL": the model)

    def to_json(self) -> JsonObject:
        p = self.failure_phase
        return {
            "verdict": self.verdict,
            "verdict_how": self.verdict_how,
            "failure_phase": None
            if p is None
            else {"phase": p["phase"], "what": p["what"], "line": p["line"], "text": p["text"], "engine_source": p["engine_source"]},
            "fixes": [f.to_json() for f in self.fixes],
            "command": self.command,
            "command_changes": [
                {"flag": c["flag"], "value": c["value"], "was": c["was"], "why": c["why"], "passes": c["passes"]} for c in self.command_changes
            ],
        }

    def text(self) -> list[str]:
        out = [f"Verdict: {self.verdict} ({self.verdict_how})"]
        if self.failure_phase:
            p = self.failure_phase
            out.append(f"Failed in: {p['phase']}, line {p['line']}: {p['what']}")
            out.append(f"  printed by {p['engine_source']}")
            if p.get("text"):
                out.append(f"  {p['text'][:200]}")
        if self.fixes:
            out.append("Least changes, ranked:")
            for i, f in enumerate(self.fixes, 1):
                said = {True: "passes", False: "not enough alone", None: "not checked"}[f.passes]
                out.append(f"  {i}. {f.flag}{' ' + f.value if f.value is not None else ''} ({said}): {f.why}")
                out.append(f"     check: {f.check}")
        if self.command:
            out.append("Command (every flag the log proves" + (", the changes marked below):" if self.command_changes else "):"))
            out.extend("  " + line for line in self.command.splitlines())
            for c in self.command_changes:
                was = f" (was {c['was']})" if c.get("was") is not None else " (added)"
                out.append(f"  changed: {c['flag']}{' ' + c['value'] if c['value'] is not None else ''}{was}")
        return out


def answer_text(text: str) -> tuple[LogReading, LogAnswer]:
    """Read a log held as one text and answer it."""
    watcher = Watcher()
    try:
        reading = logread.read_lines(watch(io.StringIO(text), watcher))
    except InputError as error:
        reading = failure_only(watcher, str(error))
    return reading, answer(reading, watcher)


def failure_only(watcher: Watcher, refused: str) -> LogReading:
    """A paste of the failure alone (a traceback, an out-of-memory error) holds none of the lines
    the figure reader reads: its answer comes from the failure; anything else stays refused."""
    said = watcher.oom or watcher.exception or watcher.sampler or watcher.killed or ((watcher.traceback, "a traceback") if watcher.traceback else None)
    if said is None and "found none of the lines" in refused and watcher.headed is not None and (watcher.frames or watcher.milestones):
        return _cut_early(watcher)
    if said is None or "found none of the lines" not in refused:
        raise InputError(refused)
    engine = Found(watcher.engine, said[0], "the paths its traceback names") if watcher.engine else None
    return LogReading(
        engine=engine,
        missing=["every figure: the paste holds the failure only, none of the lines a start prints before it"],
        notes=[f"{watcher.lines} lines of a failure, none of them a line the figures are read from"],
    )


def _cut_early(w: Watcher) -> LogReading:
    """A start's log that ends before any line its figures are read from (cut while the weights
    load, say): no failure, and no figure; its verdict says how far it got."""
    no, kind = w.headed or (0, "vllm")
    engine = Found(w.engine or kind, no, "the log's line headers" if w.engine is None else "the paths the log names")
    step = _failed_step(w, w.lines + 1, kind == "sglang")
    return LogReading(
        engine=engine,
        missing=["every figure: the log ends before the lines that size the start"],
        notes=[
            f"the log ends at line {w.lines}, {_RUNNING.get(step, 'before the memory profile')}, before any line the figures are read from "
            "(such as 'Model loading took' or 'GPU KV cache size'): it was cut there, or the start got no further"
        ],
    )


_RUNNING = {"loading_weights": "while the weights load", "profile_run": "in the profile run", "cuda_graph_capture": "while CUDA graphs are captured",
            "sampler_warmup": "while the sampler warms up", "kv_cache_tensors": "while the KV cache is allocated"}  # fmt: skip


def answer(reading: LogReading, watcher: Watcher | None = None) -> LogAnswer:
    w = watcher or Watcher()
    sglang = reading.engine is not None and reading.engine.value == "sglang"
    phase = _phase(reading, w, sglang)
    verdict, how = _verdict(reading, w, phase)
    fixes = _fixes(reading, w, phase, sglang) if verdict in ("refused", "killed") else []
    chosen = next((f for f in fixes if f.passes), fixes[0] if fixes else None)
    flags = _flags(reading, w, sglang)
    command, changes, shown = _command(reading, flags, chosen, sglang)
    return LogAnswer(verdict, how, phase, tuple(fixes), command, tuple(changes), tuple(shown), tuple(flags.items()))


# --- the phase that failed ----------------------------------------------------------------------


def _phase_of(name: str, line: int, text: str, said: str | None = None) -> Phase:
    what, source = PHASES[name]
    return {"phase": name, "what": said or what, "line": line, "text": " ".join(text.split())[:300], "engine_source": source}


def _phase(r: LogReading, w: Watcher, sglang: bool) -> Phase | None:
    e = r.error
    if e is not None:
        if sglang:
            return _phase_of("sglang_not_enough_memory", e.line_no, e.line_text)
        name = {"free_memory": "free_memory", "no_kv_memory": "kv_cache_allocation", "max_model_len": "max_model_len"}[str(e.value)]
        return _phase_of(name, e.line_no, e.line_text)
    if w.sampler is not None:
        return _phase_of("sampler_warmup", w.sampler[0], w.oom[1] if w.oom else f"warming up sampler with {w.sampler[1]} dummy requests")
    if w.oom is not None and (w.started is None or w.oom[0] < w.started[0]):
        if sglang:
            return _phase_of("sglang_out_of_memory", w.oom[0], w.oom[1])
        return _phase_of(_failed_step(w, w.oom[0], sglang), w.oom[0], w.oom[1])
    exception = _exception(r, w)
    if exception is not None and (w.started is None or exception[0] < w.started[0]):
        return _phase_of("exception", exception[0], exception[1], f"the start stopped with {exception[1][:120]!r}")
    cut = next((n for n in r.notes if "traceback begins at line" in n), None)
    if cut is None and w.traceback is not None and w.exception is None:
        cut = f"a traceback begins at line {w.traceback}, and the paste holds no exception line after it"
    ended = w.killed if w.killed is not None and (w.started is None or w.killed[0] < w.started[0]) else None
    at_cut = re.search(r"line (\d+)", cut) if cut is not None else None
    if ended is not None or at_cut is not None:
        if ended is not None:
            at, text, why = ended[0], ended[1], f"the process was ended ({ended[1][:80]!r})"
        else:
            assert at_cut is not None and cut is not None
            at, text, why = int(at_cut[1]), cut, "a traceback whose exception the paste cut off"
        step = _failed_step(w, at, sglang)
        what = re.sub(r"^out of memory ", "stopped ", PHASES[step][0])
        return _phase_of(step, at, text, f"{what}: the step the log shows running; {why}, so the cause is not printed")
    return None


def _failed_step(w: Watcher, at: int, sglang: bool) -> str:
    """The step a failure at line `at` stopped: the most specific traceback frame or progress line
    up to it (a traceback's frames run on after its first line), else the step after the last
    milestone the log reached before it."""
    reached = {s: no for s, no in w.milestones.items() if no < at}
    if sglang:
        return "sglang_out_of_memory" if "loaded" in reached else "loading_weights"
    near = {phase for no, phase in w.frames if no <= at + 200}
    if "loaded" in reached:
        near.discard("loading_weights")
    if "profiled" in reached:
        near.discard("profile_run")  # _dummy_run runs again to capture graphs and warm up after the profile
    for phase, _ in _FRAMES:
        if phase in near:
            return phase
    if "captured" in reached:
        return "sampler_warmup"
    if "profiled" in reached:
        return "cuda_graph_capture"
    if "loaded" in reached:
        return "profile_run"
    return "loading_weights"


def _exception(r: LogReading, w: Watcher | None = None) -> tuple[int, str] | None:
    if w is not None and w.exception is not None:
        return w.exception
    for note in r.notes:
        m = re.match(r"a traceback \(line \d+\) ends in '(.*)' \(line (\d+)\)", note) or re.match(
            r'a traceback \(line \d+\) ends in "(.*)" \(line (\d+)\)', note
        )
        if m:
            return int(m[2]), m[1]
    return None


def _verdict(r: LogReading, w: Watcher, phase: Phase | None) -> tuple[str, str]:
    if r.error is not None:
        engine = "SGLang" if r.engine is not None and r.engine.value == "sglang" else "vLLM"
        return "refused", f"{engine}'s own check refused it, line {r.error.line_no}"
    if phase is not None:
        return "killed", f"{phase['what']}, line {phase['line']}"
    if w.killed is not None and (w.started is None or w.killed[0] < w.started[0]):
        return "killed", f"the process ended, line {w.killed[0]}: {w.killed[1][:120]}"
    if w.started is not None:
        return "started", f"line {w.started[0]}: {w.started[1][:120]}"
    if r.era is not None and r.era.value == "v0" and "captured" in w.milestones:
        return "started", f"line {w.milestones['captured']}: V0 captures its CUDA graphs last, after the KV cache (vllm/worker/model_runner.py)"
    if any("traceback begins" in n for n in r.notes) or (w.traceback is not None and w.exception is None):
        return "killed", "a traceback, its exception cut off (see the notes)"
    early = next((n for n in r.notes if n.startswith("the log ends at line ")), None)
    if early is not None:
        return "unknown", early.split(", before any line")[0] + ", before any figure, and holds no failure: the start may still have failed after it"
    return "unknown", "the log ends before the server says it is up and holds no failure: the start may still have failed after it"


# --- the least change ---------------------------------------------------------------------------


def _ceil2(value: Fraction) -> Fraction:
    return Fraction(math.ceil(value * 100), 100)


def _floor2(value: Fraction) -> Fraction:
    return Fraction(math.floor(value * 100), 100)


def _ftext(value: Fraction) -> str:
    return f"{float(value):.2f}"


def _gib(value: Fraction | int) -> str:
    return fmt(Fraction(value), "GiB")


def _as_printed(value: Fraction | int) -> Fraction:
    """A size as _gib prints it: arithmetic a message prints is worked from its operands as printed,
    so a reader with a calculator gets the printed result from the printed terms."""
    return shown(Fraction(value), "GiB")


def _printed(found: Found) -> Fraction:
    """The figure as its line printed it, exactly (65.9651 GiB, not its whole bytes)."""
    return Fraction(found.exact if found.exact is not None else found.value)


def _end(value: Fraction | int) -> str:
    """One end of a figure printed with two decimals (71.16 GiB is 71.155 to 71.165): three decimals."""
    return fmt(Fraction(value), "GiB", 3)


def _tp(r: LogReading, flags: dict[str, str | None]) -> int:
    if r.tensor_parallel_size is not None:
        return int(r.tensor_parallel_size.value)
    value = flags.get("--tensor-parallel-size") or flags.get("--tp-size")
    return int(value) if value and value.isdigit() else 1


def _total(r: LogReading) -> Fraction | None:
    if r.total_memory_bytes is not None:
        return Fraction(r.total_memory_bytes.value)
    if r.requested_memory_bytes is not None and r.gpu_memory_utilization is not None and r.gpu_memory_utilization.value:
        return Fraction(r.requested_memory_bytes.value) / Fraction(r.gpu_memory_utilization.value)
    return None


def _fixes(r: LogReading, w: Watcher, phase: Phase | None, sglang: bool) -> list[Fix]:
    name = phase["phase"] if phase else None
    flags = _flags(r, w, sglang)
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
            cost = _printed(needed) * est.value / length.value
            check += f"; {est.value:,} tokens x {_gib(needed.value)} / {length.value:,} = {_gib(cost)}, within the {pool.printed} pool"
        out.append(Fix("--max-model-len", str(est.value), "at most the engine's estimate", check, True))
    elif needed is not None and length is not None and pool is not None and needed.value > 0:
        low, high = shown(Fraction(pool.low), "GiB", 3), shown(Fraction(needed.high), "GiB", 3)
        longest = math.floor(low * length.value / high)
        check = (
            f"{_end(low)} pool (the low end of the printed {pool.printed}, line {pool.line_no}) x {length.value:,} / {_end(high)} needed "
            f"(the high end of the printed {needed.printed}, line {needed.line_no}) = {longest:,} tokens, rounded down: "
            "each figure at the end of its printing that gives the fewest; the engine printed no estimate"
        )
        if longest > 0:
            out.append(Fix("--max-model-len", str(longest), "the longest request the printed pool holds", check, True))
    stated = r.kv_cache_dtype is not None or "--kv-cache-dtype" in flags
    if needed is not None and pool is not None and _kv_is_16bit(r, flags):
        ok = Fraction(needed.high) / 2 <= pool.low
        check = f"one request needs {needed.printed} at 16 bits (line {needed.line_no}), {needed.printed} / 2 = {_gib(_printed(needed) / 2)} at fp8, {'within' if ok else 'more than'} the {pool.printed} pool"
        if not stated:
            check = "if the KV cache was 16-bit (the log does not print its dtype): " + check
        out.append(Fix("--kv-cache-dtype", "fp8", "halves the KV cache's bytes per token (keeps max_model_len)", check, ok if stated else None))
    total = _total(r)
    fraction = r.gpu_memory_utilization
    if needed is not None and pool is not None and total and fraction is not None:
        up = _ceil2(Fraction(fraction.value) + (Fraction(needed.high) - Fraction(pool.low)) / total)
        free = r.free_memory_bytes
        ok = up <= 1 and (free is None or up * total <= free.low)
        lacks = _printed(needed) - _printed(pool)
        check = (
            f"the pool grows by ({_ftext(up)} - {fraction.printed or _ftext(Fraction(fraction.value))}) x the total {_gib(total)} = "
            f"{_gib((up - Fraction(fraction.value)) * _as_printed(total))}, for the {needed.printed} - {pool.printed} = {_gib(lacks)} one request lacks"
        )
        check += "; above 1, no fraction does it" if up > 1 else (f"; within the free {free.printed}" if free is not None and ok else "")
        out.append(Fix("--gpu-memory-utilization", _ftext(min(up, Fraction(1))), "a larger share of the card for the pool", check, ok))
    tp = _tp(r, flags)
    weights = r.model_loading_bytes
    if needed is not None and pool is not None:
        if weights is not None:
            gain = Fraction(weights.value) / 2
            ok = Fraction(needed.high) / 2 <= Fraction(pool.low) + gain
            check = (
                f"per rank, one request's KV halves ({needed.printed} / 2 = {_gib(_printed(needed) / 2)}) and the weights' half "
                f"({weights.printed} / 2 = {_gib(_printed(weights) / 2)}) joins the {pool.printed} pool (when the KV heads divide by {2 * tp})"
            )
        else:
            ok, check = None, "the log prints no weights, so the pool a rank gains cannot be worked out"
        out.append(Fix("--tensor-parallel-size", str(2 * tp), "twice the cards: each holds half the weights and half of each request's KV", check, ok))
    return out


def _free_fixes(r: LogReading) -> list[Fix]:
    free, total, fraction = r.free_memory_bytes, r.total_memory_bytes, r.gpu_memory_utilization
    if free is None or total is None:
        return []
    down = _floor2(Fraction(free.low) / Fraction(total.high))
    asked = math.ceil(down * Fraction(total.high))
    top, least = shown(Fraction(total.high), "GiB", 3), shown(Fraction(free.low), "GiB", 3)
    check = (
        f"{_ftext(down)} x {_end(top)} (the high end of the printed total {total.printed}) = {_gib(down * top)}, "
        f"within the free {_end(least)} (the low end of the printed {free.printed}, line {free.line_no}); "
        f"the check is ceil(fraction x total) <= free, each figure at the end of its printing that is hardest"
    )
    was = f"; the log's {fraction.printed or fraction.value} asks more" if fraction is not None else ""
    out = []
    if down > 0:
        out.append(Fix("--gpu-memory-utilization", _ftext(down), "the largest two decimals that pass vLLM's free-memory check" + was, check, asked <= free.low))
    out.append(
        Fix("(free the card)", None, "stop what else holds memory on the card (another vLLM, a notebook), then keep the fraction",
            f"{total.printed} - {free.printed} free = {_gib(_printed(total) - _printed(free))} of the card was in use before this start", None)
    )  # fmt: skip
    return out


def _no_pool_fixes(r: LogReading, w: Watcher, flags: dict[str, str | None]) -> list[Fix]:
    out: list[Fix] = []
    pool = r.available_kv_bytes
    deficit = -Fraction(pool.low) if pool is not None and pool.value <= 0 else None
    lacking = -_printed(pool) if pool is not None and deficit is not None else Fraction(0)  # as printed, for the messages
    total, fraction = _total(r), r.gpu_memory_utilization
    if deficit is not None and total and fraction is not None:
        up = _ceil2(Fraction(fraction.value) + (deficit + GiB) / total)
        free = r.free_memory_bytes
        ok = up <= 1 and (free is None or up * total <= free.low)
        more = (up - Fraction(fraction.value)) * _as_printed(total)
        check = f"the pool was {pool.printed} (line {pool.line_no}); ({_ftext(up)} - {fraction.printed or _ftext(Fraction(fraction.value))}) x {_gib(total)} = {_gib(more)} more for it, a GiB or more above zero"  # type: ignore[union-attr]
        out.append(
            Fix(
                "--gpu-memory-utilization",
                _ftext(min(up, Fraction(1))),
                "a larger share of the card, so a pool is left after the weights and the profile",
                check,
                ok,
            )
        )
    elif total is None:
        out.append(
            Fix(
                "--gpu-memory-utilization",
                None,
                "a larger share of the card",
                "the log prints no total, so the share that leaves a pool cannot be worked out",
                None,
            )
        )
    graphs = r.cuda_graph_bytes
    if graphs is not None:
        ok = deficit is not None and Fraction(graphs.low) > deficit
        out.append(
            Fix("--enforce-eager", None, "no CUDA graphs: their estimate is no longer taken off the pool",
                f"the graphs' estimate is {graphs.printed} (line {graphs.line_no})" + (f", the pool lacked {_gib(lacking)}" if deficit is not None else ""), ok if deficit is not None else None)
        )  # fmt: skip
    activation = r.activation_peak_bytes
    prefill = r.max_num_batched_tokens
    if prefill is not None:
        half = max(prefill.value // 2, 256)
        check = f"the profile's activation peak scales with the batch of {prefill.value:,} tokens (line {prefill.line_no})"
        if activation is not None and deficit is not None:
            ok = Fraction(activation.low) / 2 > deficit
            check += f"; half of its {activation.printed} peak is {'more' if ok else 'less'} than the {_gib(lacking)} lacking"
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
                f"a rank frees {weights.printed} / 2 = {_gib(_printed(weights) / 2)} of its weights" + (f", against the {_gib(lacking)} lacking" if deficit is not None else ""), ok if deficit is not None else None)
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
        oom_said = f"line {no}: {_gib(tried)} asked, {_gib(free_t)} free of {_gib(total_t)}"
    fraction = r.gpu_memory_utilization
    seats = r.max_num_seqs
    if phase == "sampler_warmup":
        count = w.sampler[1] if w.sampler else (seats.value if seats is not None else None)
        if count:
            half = max(count // 2, 1)
            if short is not None:
                ok = tried / 2 <= free_t
                check = f"the sampler's allocation scales with the requests: {_gib(tried)} / 2 = {_gib(_as_printed(tried) / 2)}, {'within' if ok else 'more than'} the {_gib(free_t)} free ({oom_said})"
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
                check = f"the profile's batch is {budget:,} tokens (line {prefill.line_no}); half the failing allocation is {_gib(tried)} / 2 = {_gib(_as_printed(tried) / 2)}, {'within' if ok else 'more than'} the {_gib(free_t)} free"  # type: ignore[union-attr]
            else:
                ok, check = None, f"the profile's batch is {budget:,} tokens (line {prefill.line_no}); the log prints no allocation to check half of it by"  # type: ignore[union-attr]
            out.append(Fix("--max-num-batched-tokens", str(half), "a smaller dummy batch in the profile run", check, ok))
        if w.multimodal is not None:
            out.append(Fix("--limit-mm-per-prompt", '{"image": 1, "video": 0}', "the encoder is profiled at the most items a prompt may carry",
                           f"the log names a multimodal model or its encoder (line {w.multimodal}); the encoder's share is not printed", None))  # fmt: skip
    if fraction is not None and short is not None and phase in ("cuda_graph_capture", "sampler_warmup", "kv_cache_tensors"):
        down = _floor2(Fraction(fraction.value) - short / total_t)
        freed = (Fraction(fraction.value) - down) * total_t
        out.append(
            Fix("--gpu-memory-utilization", _ftext(down), "a smaller KV pool leaves room for what failed",
                f"the pool shrinks by ({fraction.printed or _ftext(Fraction(fraction.value))} - {_ftext(down)}) x {_gib(total_t)} = "
                f"{_gib((Fraction(fraction.value) - down) * _as_printed(total_t))}, at least the {_gib(tried)} - {_gib(free_t)} = "
                f"{_gib(_as_printed(tried) - _as_printed(free_t))} the allocation lacked ({oom_said})", freed >= short and down > 0)
        )  # fmt: skip
    elif fraction is not None and phase in ("cuda_graph_capture", "sampler_warmup", "kv_cache_tensors"):
        out.append(Fix("--gpu-memory-utilization", _ftext(Fraction(fraction.value) - Fraction(5, 100)), "a smaller KV pool leaves room for what failed",
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
            up = _ceil2(least) + Fraction(1, 100)
            b, a = _as_printed(before), _as_printed(after)
            check = (
                f"SGLang keeps back (1 - mem_fraction_static) x {_gib(before)} (free before the weights); {_gib(after)} is free after them, "
                f"so the pool is above zero from 1 - {_gib(after)} / {_gib(before)} = {float(1 - a / b):.4f}: {_ftext(up)} leaves "
                f"{_gib(after)} - (1 - {_ftext(up)}) x {_gib(before)} = {_gib(a - b * (1 - up))}"
            )
            out.append(Fix("--mem-fraction-static", _ftext(up), "a larger static share for the weights and the pool", check, up < 1))
        else:
            out.append(Fix("--mem-fraction-static", _ftext(Fraction(mfs.value) + Fraction(5, 100)) if mfs is not None else None,
                           "a larger static share for the weights and the pool", "the log prints no 'avail mem' before and after the weights to size it by", None))  # fmt: skip
        if r.model_loading_bytes is not None:
            tp = int(r.tensor_parallel_size.value) if r.tensor_parallel_size is not None else 1
            out.append(Fix("--tp-size", str(2 * tp), "twice the cards, each holding half the weights",
                           f"a rank frees {r.model_loading_bytes.printed} / 2 = {_gib(_printed(r.model_loading_bytes) / 2)} of its weights", None))  # fmt: skip
        return out
    if mfs is not None:
        out.append(Fix("--mem-fraction-static", _ftext(Fraction(mfs.value) - Fraction(5, 100)), "a smaller pool leaves room for CUDA graphs and activations",
                       f"the log's {mfs.printed or mfs.value}" + (f"; {_gib(w.torch_oom[1])} asked - {_gib(w.torch_oom[3])} free = {_gib(_as_printed(w.torch_oom[1]) - _as_printed(w.torch_oom[3]))} was lacking" if w.torch_oom else ""), None))  # fmt: skip
    out.append(
        Fix("--chunked-prefill-size", "4096", "a smaller prefill chunk, a smaller activation peak", "the log prints no activation figure to check it by", None)
    )
    if r.kv_tokens is not None:
        out.append(Fix("--max-total-tokens", str(r.kv_tokens.value // 2), "cap the pool below what the profile allowed",
                       f"half the {r.kv_tokens.value:,} tokens logged (line {r.kv_tokens.line_no})", None))  # fmt: skip
    return out


# --- the whole command --------------------------------------------------------------------------

# config or argument names -> the flag, for what changes a start's memory or what it serves
_VLLM_FLAGS = {
    "served_model_name": "--served-model-name", "tensor_parallel_size": "--tensor-parallel-size", "pipeline_parallel_size": "--pipeline-parallel-size",
    "data_parallel_size": "--data-parallel-size", "quantization": "--quantization", "dtype": "--dtype", "kv_cache_dtype": "--kv-cache-dtype",
    "speculative_config": "--speculative-config", "trust_remote_code": "--trust-remote-code", "reasoning_parser": "--reasoning-parser",
    "tool_call_parser": "--tool-call-parser", "enable_auto_tool_choice": "--enable-auto-tool-choice", "max_model_len": "--max-model-len",
    "max_seq_len": "--max-model-len", "gpu_memory_utilization": "--gpu-memory-utilization", "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens", "enforce_eager": "--enforce-eager", "kv_cache_memory_bytes": "--kv-cache-memory-bytes",
    "enable_expert_parallel": "--enable-expert-parallel", "block_size": "--block-size", "limit_mm_per_prompt": "--limit-mm-per-prompt",
    "decode_context_parallel_size": "--decode-context-parallel-size", "tokenizer_mode": "--tokenizer-mode", "max_cudagraph_capture_size": "--max-cudagraph-capture-size",
    "enable_prefix_caching": "--enable-prefix-caching", "mamba_ssm_cache_dtype": "--mamba-ssm-cache-dtype",
    "enable_chunked_prefill": "--enable-chunked-prefill", "cpu_offload_gb": "--cpu-offload-gb", "enable_lora": "--enable-lora",
    "max_loras": "--max-loras", "max_lora_rank": "--max-lora-rank", "kv_offloading_size": "--kv-offloading-size",
}  # fmt: skip
_SGLANG_FLAGS = {
    "served_model_name": "--served-model-name", "tp_size": "--tp-size", "pp_size": "--pp-size", "dp_size": "--dp-size", "ep_size": "--ep-size",
    "quantization": "--quantization", "dtype": "--dtype", "kv_cache_dtype": "--kv-cache-dtype", "trust_remote_code": "--trust-remote-code",
    "context_length": "--context-length", "mem_fraction_static": "--mem-fraction-static", "max_total_tokens": "--max-total-tokens",
    "chunked_prefill_size": "--chunked-prefill-size", "max_running_requests": "--max-running-requests", "speculative_algorithm": "--speculative-algorithm",
    "speculative_num_steps": "--speculative-num-steps", "speculative_eagle_topk": "--speculative-eagle-topk",
    "speculative_num_draft_tokens": "--speculative-num-draft-tokens", "speculative_draft_model_path": "--speculative-draft-model-path",
    "enable_dp_attention": "--enable-dp-attention", "reasoning_parser": "--reasoning-parser", "tool_call_parser": "--tool-call-parser",
    "disable_cuda_graph": "--disable-cuda-graph", "cuda_graph_max_bs": "--cuda-graph-max-bs", "attention_backend": "--attention-backend",
}  # fmt: skip
# on or off, each way a flag of its own (--enable-prefix-caching, --no-enable-prefix-caching: engine/arg_utils.py)
_BOOLEAN_OPTIONAL = {"--enable-prefix-caching", "--enable-chunked-prefill"}
_OFF = "--no-"  # an on-or-off flag set off: its "--no-" form
_SWITCHES = {
    "--trust-remote-code",
    "--enable-auto-tool-choice",
    "--enforce-eager",
    "--enable-expert-parallel",
    "--enable-dp-attention",
    "--disable-cuda-graph",
    "--enable-lora",
}
_ENGINE_DEFAULTS = {"--tensor-parallel-size": "1", "--tp-size": "1", "--pipeline-parallel-size": "1", "--data-parallel-size": "1", "--decode-context-parallel-size": "1", "--tokenizer-mode": "auto",
                    "--cpu-offload-gb": "0", "--max-loras": "1", "--max-lora-rank": "16",
                    "--pp-size": "1", "--dp-size": "1", "--ep-size": "1"}  # fmt: skip
_QUOTED = re.compile(r"^'(.*)'$|^\"(.*)\"$")


def _split_top(body: str) -> list[tuple[str, str]]:
    """`key=value, key=value` (or `'key': value`) at the top level of brackets and quotes."""
    out: list[tuple[str, str]] = []
    depth, quote, start = 0, "", 0
    for i, c in enumerate(body + ","):
        if quote:
            if c == quote and body[i - 1 : i] != "\\":
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
            if depth < 0:
                body = body[:i]
                part = body[start:i].strip()
                if part:
                    out.extend(_pair(part))
                return out
        elif c == "," and depth == 0:
            part = body[start:i].strip()
            if part:
                out.extend(_pair(part))
            start = i + 1
    return out


def _pair(part: str) -> list[tuple[str, str]]:
    m = re.match(r"""^['"]?([A-Za-z_][\w]*)['"]?\s*(?:=|:)\s*(.*)$""", part, re.S)
    return [(m[1], m[2].strip())] if m else []


def _plain(value: str) -> Any:
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return _QUOTED.sub(lambda m: m[1] if m[1] is not None else m[2], value)


def _spec_json(value: str) -> str | None:
    """A speculative config as the JSON --speculative-config takes, from the dict, the JSON or the
    engine's `SpeculativeConfig(method='mtp', model='...', num_spec_tokens=2)`."""
    text = value.strip()
    if text in ("None", "", "{}"):
        return None
    if text.startswith("SpeculativeConfig("):
        pairs = dict(_split_top(text[len("SpeculativeConfig(") :]))
        out: dict[str, Any] = {}
        for key, name in (
            ("method", "method"),
            ("model", "model"),
            ("num_spec_tokens", "num_speculative_tokens"),
            ("num_speculative_tokens", "num_speculative_tokens"),
        ):
            if key in pairs and pairs[key] not in ("None", "''"):
                out[name] = _plain(pairs[key])
        return json.dumps(out) if out else None
    parsed = _plain(text)
    if isinstance(parsed, str):
        try:
            parsed = json.loads(parsed)
        except ValueError:
            return None
    if isinstance(parsed, dict):
        return json.dumps({k: v for k, v in parsed.items() if v is not None})
    return None


def _flag_value(flag: str, raw: str, kind: str = "args") -> str | None | bool:
    """The flag's value as a command line takes it; False: leave the flag out."""
    if flag == "--speculative-config":
        spec = _spec_json(raw)
        return spec if spec else False
    value = _plain(raw)
    if flag in _SWITCHES:
        return None if value is True or str(value).lower() == "true" else False
    if value is None or value == "" or str(value) in ("None", "auto") and flag != "--dtype":
        return False
    if flag in _BOOLEAN_OPTIONAL:
        # a command line or an argument dump sets it (non-default args holds only what was given); the
        # engine's config line prints it set or not, and a release may change it for a model (hybrids)
        if kind in ("config", "every") or not isinstance(value, bool) and str(value).lower() not in ("true", "false"):
            return False
        return None if value is True or str(value).lower() == "true" else _OFF
    if flag == "--served-model-name":
        if isinstance(value, (list, tuple)):
            value = " ".join(str(v) for v in value)
    if flag == "--limit-mm-per-prompt" and isinstance(value, dict):
        return json.dumps(value)
    if flag == "--dtype":
        value = str(value).replace("torch.", "")
        if value == "auto":
            return False
    if isinstance(value, bool):
        return str(value).lower()
    if _ENGINE_DEFAULTS.get(flag) == str(value):
        return False
    return str(value)


def _flags(r: LogReading, w: Watcher, sglang: bool) -> dict[str, str | None]:
    """Every flag the log proves, from its command line, its argument dump and the engine's config
    line (the first that says it wins), and the model."""
    names = _SGLANG_FLAGS if sglang else _VLLM_FLAGS
    order = {"serve": 0, "args": 1, "every": 1, "config": 2}
    found: dict[str, tuple[int, str | None]] = {}
    model: tuple[int, str] | None = None
    for _, text in w.settings:
        kind, pairs = _settings_pairs(text)
        if kind is None:
            continue
        rank = order[kind]
        for key, raw in pairs:
            if key in ("model", "model_path", "model_tag") and raw not in ("None", "''"):
                value = str(_plain(raw))
                if model is None or rank < model[0]:
                    model = (rank, value)
                continue
            if key.startswith("no_") and names.get(key[3:]) in _BOOLEAN_OPTIONAL and kind == "serve":
                key, raw = key[3:], "False"  # "--no-enable-prefix-caching" on a command line
            flag = names.get(key) if not key.startswith("--") else key
            if flag is None or flag not in set(names.values()):
                continue
            given = _flag_value(flag, raw, kind)
            if given is False or given is True:
                continue
            if flag not in found or rank < found[flag][0]:
                found[flag] = (rank, given)
    out: dict[str, str | None] = {}
    if model is not None:
        out["MODEL"] = model[1]
    elif r.model is not None:
        out["MODEL"] = str(r.model.value)
    for flag in names.values():
        if flag in found and flag not in out:
            given = found[flag][1]
            if given == _OFF:
                out["--no-" + flag[2:]] = None
            else:
                out[flag] = given
    if "--served-model-name" in out and out["--served-model-name"] == out.get("MODEL"):
        del out["--served-model-name"]  # the model's own name is what it serves by default
    # the figure reader's own, where no settings line says them
    tp_flag = "--tp-size" if sglang else "--tensor-parallel-size"
    if tp_flag not in out and r.tensor_parallel_size is not None and int(r.tensor_parallel_size.value) > 1:
        out[tp_flag] = str(r.tensor_parallel_size.value)
    pp_flag = "--pp-size" if sglang else "--pipeline-parallel-size"
    if pp_flag not in out and r.pipeline_parallel_size is not None and int(r.pipeline_parallel_size.value) > 1:
        out[pp_flag] = str(r.pipeline_parallel_size.value)
    if not sglang and "--data-parallel-size" not in out and r.data_parallel_size is not None and int(r.data_parallel_size.value) > 1:
        out["--data-parallel-size"] = str(r.data_parallel_size.value)
    if not sglang and r.expert_parallel is not None:
        out.setdefault("--enable-expert-parallel", None)
    len_flag = "--context-length" if sglang else "--max-model-len"
    if len_flag not in out and r.max_model_len is not None:
        out[len_flag] = str(r.max_model_len.value)
    if not sglang and "--kv-cache-dtype" not in out and r.kv_cache_dtype is not None and str(r.kv_cache_dtype.value) not in ("auto",):
        out["--kv-cache-dtype"] = str(r.kv_cache_dtype.value).replace("torch.", "")
    if not sglang and "--gpu-memory-utilization" not in out and r.gpu_memory_utilization is not None and r.kv_cache_memory_bytes is None:
        out["--gpu-memory-utilization"] = r.gpu_memory_utilization.printed or _ftext(Fraction(r.gpu_memory_utilization.value))
    if sglang and "--mem-fraction-static" not in out and r.mem_fraction_static is not None:
        out["--mem-fraction-static"] = r.mem_fraction_static.printed or _ftext(Fraction(r.mem_fraction_static.value))
    if not sglang and "--speculative-config" not in out and r.speculative is not None and r.speculative.value.get("method"):
        spec = {k: v for k, v in r.speculative.value.items() if v is not None}
        out["--speculative-config"] = json.dumps(spec)
    return out


def _settings_pairs(text: str) -> tuple[str | None, list[tuple[str, str]]]:
    # a Namespace and SGLang's ServerArgs print every argument, given or not: like the config line, not what was set
    for marker, kind in (("non-default args: ", "args"), ("args: Namespace(", "every"), ("with config: ", "config"), ("server_args=ServerArgs(", "every")):
        at = text.find(marker)
        if at >= 0:
            body = text[at + len(marker) :]
            if body.startswith("{"):
                body = body[1:]
            return kind, _split_top(body)
    m = re.search(r"(?:vllm serve|sglang\.launch_server|vllm\.entrypoints\.openai\.api_server|vllm/vllm-openai(?::\S*)?)\s+(.*)", text)
    if m:
        return "serve", _command_pairs(m[1], "vllm serve" in text)
    return None, []


def _command_pairs(rest: str, positional_model: bool) -> list[tuple[str, str]]:
    tokens = re.findall(r"""'[^']*'|"[^"]*"|\S+""", rest.replace("\\", " "))
    out: list[tuple[str, str]] = []
    i = 0
    if positional_model and tokens and not tokens[0].startswith("-"):
        out.append(("model", repr(tokens[0].strip("'\""))))
        i = 1
    while i < len(tokens):
        t = tokens[i]
        if t.startswith("--"):
            key, _, inline = t[2:].partition("=")
            key = key.replace("-", "_")
            if key == "model_path":
                key = "model"
            if inline:
                out.append((key, repr(inline)))
            elif i + 1 < len(tokens) and not tokens[i + 1].startswith("--"):
                value = tokens[i + 1]
                out.append((key, value if value[:1] in "'\"" else repr(value)))
                i += 1
            else:
                out.append((key, "True"))
        i += 1
    return out


def _command(
    r: LogReading, flags: dict[str, str | None], fix: Fix | None, sglang: bool
) -> tuple[str | None, list[CommandChange], list[tuple[str, str | None, bool]]]:
    if not flags and (fix is None or not fix.flag.startswith("--") or (fix.value is None and fix.flag not in _SWITCHES)):
        return None, [], []
    model = flags.get("MODEL") or "MODEL"
    rest = {k: v for k, v in flags.items() if k != "MODEL"}
    changes: list[CommandChange] = []
    changed: set[str] = set()
    if fix is not None and fix.flag.startswith("--") and not (fix.value is None and fix.flag not in _SWITCHES):
        was = rest.get(fix.flag, None) if fix.flag in rest else None
        changes.append({"flag": fix.flag, "value": fix.value, "was": was if fix.flag in rest else None, "why": fix.why, "passes": fix.passes})
        rest[fix.flag] = fix.value
        changed.add(fix.flag)
        if fix.flag == "--kv-cache-dtype" and "--kv-cache-memory-bytes" in rest:
            pass
    head = ["python -m sglang.launch_server", f"--model-path {model}"] if sglang else ["vllm serve", model]
    shown: list[tuple[str, str | None, bool]] = []
    parts = [" ".join(head)] if not sglang else head
    for flag, value in rest.items():
        parts.append(flag if value is None else f"{flag} {_shell_value(flag, value)}")
        shown.append((flag, value, flag in changed))
    return " \\\n  ".join(parts), changes, shown


def _shell_value(flag: str, value: str) -> str:
    """A flag's value for a shell: --served-model-name takes several names, each its own word."""
    if flag == "--served-model-name":
        return " ".join(_shell(name) for name in value.split())
    return _shell(value)


def _shell(value: str) -> str:
    if re.fullmatch(r"[\w./:@+=,-]+", value):
        return value
    return "'" + value.replace("'", "'\\''") + "'"
