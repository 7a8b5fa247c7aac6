"""The phase a start failed in and its verdict: the engine's own check that refused it, the
step an out-of-memory error or an exception stopped, or how far a log that holds no failure got."""

from __future__ import annotations

import re

from calc.answers.logverdict.result import Phase
from calc.answers.logverdict.watcher import FRAMES, Watcher
from calc.logs.logread import LogReading

# phase: (what failed, the engine source that prints or raises it)
PHASES = {
    "free_memory": ("free memory below gpu_memory_utilization x total at start (vLLM's fraction check)",
                    "vllm/v1/worker/utils.py request_memory (0.14 on, its forms for weights held outside the process 0.32 on; gpu_worker.py init_device before)"),
    "kv_cache_allocation": ("no memory left for the KV cache blocks (a pool of zero or less)",
                            "vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory (kv_cache_planning.py in 0.33.0; V0: vllm/worker/worker.py raise_if_cache_size_invalid)"),
    "max_model_len": ("one request of max_model_len does not fit the KV pool",
                      "vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory (kv_cache_planning.py in 0.33.0; V0: vllm/worker/worker.py raise_if_cache_size_invalid)"),
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


RUNNING = {"loading_weights": "while the weights load", "profile_run": "in the profile run", "cuda_graph_capture": "while CUDA graphs are captured",
            "sampler_warmup": "while the sampler warms up", "kv_cache_tensors": "while the KV cache is allocated"}  # fmt: skip


def _phase_of(name: str, line: int, text: str, said: str | None = None, where: str | None = None) -> Phase:
    what, source = PHASES[name]
    return {"phase": name, "what": said or what, "line": line, "text": " ".join(text.split())[:300], "engine_source": where or source}


def _free_said(r: LogReading) -> str | None:
    """The free-memory check where another process holds the weights (0.32 on, vllm/v1/worker/utils.py request_memory)."""
    if r.engine_budget_bytes is not None:
        return ("free memory below the engine's budget at start: gpu_memory_utilization x total less the weights another process holds "
                "(vLLM's fraction check, 0.32 on)")  # fmt: skip
    if r.external_weights_bytes is not None and r.free_memory_bytes is None:
        return "the weights another process holds on the card are more than gpu_memory_utilization x total (vLLM's fraction check, 0.32 on)"
    return None


def failed_phase(r: LogReading, w: Watcher, sglang: bool) -> Phase | None:
    e = r.error
    if e is not None:
        if sglang:
            return _phase_of("sglang_not_enough_memory", e.line_no, e.line_text)
        name = {"free_memory": "free_memory", "no_kv_memory": "kv_cache_allocation", "max_model_len": "max_model_len"}[str(e.value)]
        if name == "kv_cache_allocation" and "Cannot auto-fit max_model_len" in e.line_text:
            return _phase_of(name, e.line_no, e.line_text, "at --max-model-len auto, a worker's KV pool holds not even one token",
                             "_auto_fit_max_model_len, vllm/v1/core/kv_cache_utils.py (0.14 on; kv_cache_planning.py in 0.33.0)")  # fmt: skip
        if name == "free_memory" and r.free_after_profile_bytes is not None:
            return _phase_of(name, e.line_no, e.line_text, "free memory grew while vLLM profiled: another process released memory meanwhile "
                             "(vLLM's assertion in the profile, not the fraction check)",
                             "vllm/v1/worker/gpu_worker.py determine_available_memory (0.11 on)")  # fmt: skip
        return _phase_of(name, e.line_no, e.line_text, _free_said(r) if name == "free_memory" else None)
    if w.sampler is not None:
        text = w.oom[1] if w.oom else f"warming up sampler with {w.sampler[1]} dummy requests"
        pooler = "warming up pooler" in text or "warming up pooler" in (w.oom[1] if w.oom else "")
        return _phase_of("sampler_warmup", w.sampler[0], text,
                         "out of memory warming up the pooler (a pooling model's sampler step) with max_num_seqs dummy requests" if pooler else None,
                         "vllm/v1/worker/gpu_model_runner.py _dummy_pooler_run" if pooler else None)  # fmt: skip
    if w.oom is not None and (w.started is None or w.oom[0] < w.started[0]):
        if sglang:
            return _phase_of("sglang_out_of_memory", w.oom[0], w.oom[1])
        return _phase_of(failed_step(w, w.oom[0], sglang), w.oom[0], w.oom[1])
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
        step = failed_step(w, at, sglang)
        what = re.sub(r"^out of memory ", "stopped ", PHASES[step][0])
        return _phase_of(step, at, text, f"{what}: the step the log shows running; {why}, so the cause is not printed")
    return None


def failed_step(w: Watcher, at: int, sglang: bool) -> str:
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
    for phase, _ in FRAMES:
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


def verdict_of(r: LogReading, w: Watcher, phase: Phase | None) -> tuple[str, str]:
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
