"""One answer for a startup log: did the start start, where it failed, the least change that
passes (each change checked against the log's own figures), and the whole command.

Standard library only: the browser's "Your start" calls the same `answer` as `python -m calc ingest`.

`watch(lines)` passes a log's lines through unchanged while noting what the figure reader does
not keep (the lines that say the server is up, traceback frames, the torch out-of-memory figures,
the settings lines); `answer(reading, watcher)` gives a `LogAnswer`; `answer_text(text)` does both
for a log held as one text. The parts, each a module of this package: `watcher` (what the lines
say beside the figures), `phases` (the phase that failed and the verdict), `fixes` (the least
changes, each checked against the log's figures, worked as `printing` prints them), `command`
(every flag the log proves, and the whole command), `result` (the answer as JSON and as text).
Where each failure is printed, as the engine's source has it:

- the free-memory check: vllm/v1/worker/gpu_worker.py init_device (to 0.13), vllm/v1/worker/utils.py
  request_memory (0.14 on): "Free memory on device ... on startup is less than desired GPU memory utilization";
  from 0.32, where another process holds the weights (an IPC weight loader), the same function says
  "... on startup is less than the engine's budget after excluding external process's weights" or
  "Externally held weights on device ... exceed the desired GPU memory utilization" (read alike in
  0.32.0 and 0.33.0);
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

import io

from calc.answers.logverdict.command import proven_flags, whole_command
from calc.answers.logverdict.fixes import least_changes
from calc.answers.logverdict.phases import PHASES, RUNNING, failed_phase, failed_step, verdict_of
from calc.answers.logverdict.result import JSON_KEYS, VERDICTS, CommandChange, Fix, LogAnswer, Phase
from calc.answers.logverdict.watcher import Watcher, watch
from calc.logs import logread
from calc.logs.logread import Found, LogReading
from calc.units import InputError

__all__ = [
    "JSON_KEYS", "PHASES", "VERDICTS", "CommandChange", "Fix", "LogAnswer", "Phase", "Watcher", "answer", "answer_text", "failure_only", "watch",
]  # fmt: skip


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
    step = failed_step(w, w.lines + 1, kind == "sglang")
    return LogReading(
        engine=engine,
        missing=["every figure: the log ends before the lines that size the start"],
        notes=[
            f"the log ends at line {w.lines}, {RUNNING.get(step, 'before the memory profile')}, before any line the figures are read from "
            "(such as 'Model loading took' or 'GPU KV cache size'): it was cut there, or the start got no further"
        ],
    )


def answer(reading: LogReading, watcher: Watcher | None = None) -> LogAnswer:
    w = watcher or Watcher()
    sglang = reading.engine is not None and reading.engine.value == "sglang"
    phase = failed_phase(reading, w, sglang)
    verdict, how = verdict_of(reading, w, phase)
    fixes = least_changes(reading, w, phase, sglang) if verdict in ("refused", "killed") else []
    chosen = next((f for f in fixes if f.passes), fixes[0] if fixes else None)
    flags = proven_flags(reading, w, sglang)
    command, changes, shown = whole_command(reading, flags, chosen, sglang)
    return LogAnswer(verdict, how, phase, tuple(fixes), command, tuple(changes), tuple(shown), tuple(flags.items()))
