"""Your start on a pasted log: the same answer as `python -m calc ingest` (calc/answers/logverdict/), the
engine's own counts where it printed them, SGLang's figures as SGLang's, a lone MemAvailable line."""

from __future__ import annotations

from html import unescape
from pathlib import Path

from conftest import ROOT

from calc.answers.logverdict import answer_text
from calc.present import html
from calc.units import GiB

PUBLIC = ROOT / "logs" / "public"
OWN = ("preset", "weights", "overhead", "bytes_per_token", "pin", "max_model_len", "tp", "before", "model")


def _public(prefix: str) -> Path:
    (path,) = PUBLIC.glob(f"{prefix}-*.log")
    return path


def own(catalog, **fields: str) -> dict[str, str]:
    raw = dict(html.defaults_of(catalog, "yourstart").values)
    raw.update(dict.fromkeys(OWN, ""))
    raw.update({"box": "other"})
    raw.update(fields)
    return raw


def test_the_log_answer_is_ingests(catalog) -> None:
    text = _public("17").read_text(encoding="utf-8")  # refused: one request of 131,072 tokens does not fit
    out = html.run(catalog, "yourstart", own(catalog, log=text))
    assert out.valid, out.errors
    _, a = answer_text(text)
    assert out.figures["log_verdict"] == a.verdict == "refused"
    assert out.figures["log_phase"] == "max_model_len"
    assert unescape(out.figures["log_command"]) == a.command and "--max-model-len 49170" in (a.command or "")
    assert out.figures["log_fix_0"] == "passes"


def test_full_contexts_follow_the_printed_concurrency(catalog) -> None:
    # 45: a Qwen3.5 hybrid on 0.18 prints 729,696 tokens (counted per KV group before 0.21) and 10.85x at
    # 262,144: tokens / max_model_len would say 2 full contexts beside the engine's 10.85x
    out = html.run(catalog, "yourstart", own(catalog, log=_public("45").read_text(encoding="utf-8"), box="dgx-spark"))
    assert out.valid, out.errors
    assert out.figures["grid_tokens_0"] == "729,696 tokens"
    assert out.figures["grid_contexts_0_262144"] == "10"


def test_sglang_tokens_are_labelled_sglangs_and_its_command_keeps_the_logged_count(catalog) -> None:
    # 48: SGLang 0.4.4 with Gemma 3, 'KV Cache is allocated. #tokens: 834615': the pool over its bytes a token
    # printed with two decimals holds 834,614, one short of the count SGLang logged
    text = _public("48").read_text(encoding="utf-8")
    out = html.run(catalog, "yourstart", own(catalog, log=text))
    assert out.valid, out.errors
    result = out.sections["yourstart-result"]
    assert "(logged by SGLang)" in result and "(logged by vLLM)" not in result
    reading, _ = answer_text(text)
    tokens = reading.kv_tokens.value  # type: ignore[union-attr]
    assert tokens == 834615 and f"--max-total-tokens {tokens}" in unescape(out.figures["command"])


def test_a_lone_memavailable_line_is_read_as_kib(catalog) -> None:
    raw = own(catalog, log=_public("45").read_text(encoding="utf-8"), box="dgx-spark", before="MemAvailable:   118345676 kB")
    out = html.run(catalog, "yourstart", raw)
    assert out.valid, out.errors
    assert out.figures["available_b"] == f"{118345676 * 1024:,} B"
    assert out.figures["available"] == f"{118345676 * 1024 / GiB:.2f} GiB"


def test_the_serve_command_keeps_the_logs_other_flags(catalog) -> None:
    # 35: 0.24's non-default args hold the parsers, the quantization and trust-remote-code
    out = html.run(catalog, "yourstart", own(catalog, log=_public("35").read_text(encoding="utf-8")))
    assert out.valid, out.errors
    cmd = unescape(out.figures["command"])
    for flag in ("--quantization modelopt", "--trust-remote-code", "--reasoning-parser qwen3", "--tool-call-parser qwen3_coder", "--enable-auto-tool-choice"):
        assert flag in cmd, flag
    assert cmd.count("--max-model-len") == 1 and cmd.count("--kv-cache-dtype") == 1


def test_a_paste_of_the_failure_alone_is_answered(catalog) -> None:
    # https://github.com/vllm-project/vllm/issues/19186: the traceback's end, 'RuntimeError: CUDA error: out of memory' in capture_end
    text = (ROOT / "logs" / "public" / "phases" / "graphs-19186-v1-capture-end-cuda-error.log").read_text(encoding="utf-8")
    out = html.run(catalog, "yourstart", own(catalog, log=text))
    assert out.valid, out.errors
    assert (out.figures["log_verdict"], out.figures["log_phase"], out.figures["log_fix_0"]) == ("killed", "cuda_graph_capture", "passes")
    assert unescape(out.figures["log_command"]) == "vllm serve MODEL \\\n  --enforce-eager"
