"""The whole command a log proves: every flag from its command line, its argument dump and the
engine's config line (the first that says it wins) and the model, with the chosen change marked."""

from __future__ import annotations

import ast
import json
import re
from fractions import Fraction

from calc.answers.logverdict.printing import ftext
from calc.answers.logverdict.result import CommandChange, Fix
from calc.answers.logverdict.watcher import Watcher
from calc.logs.logread import LogReading

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
    "runner": "--runner", "convert": "--convert",  # a pooling runner serves embeddings, not generation (vllm/engine/arg_utils.py, 0.13)
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
                    "--pp-size": "1", "--dp-size": "1", "--ep-size": "1", "--runner": "auto", "--convert": "auto"}  # fmt: skip
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


def _plain(value: str) -> object:
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
        out: dict[str, object] = {}
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


def proven_flags(r: LogReading, w: Watcher, sglang: bool) -> dict[str, str | None]:
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
        out["--gpu-memory-utilization"] = r.gpu_memory_utilization.printed or ftext(Fraction(r.gpu_memory_utilization.value))
    if sglang and "--mem-fraction-static" not in out and r.mem_fraction_static is not None:
        out["--mem-fraction-static"] = r.mem_fraction_static.printed or ftext(Fraction(r.mem_fraction_static.value))
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


# vLLM's short spellings of the flags kept here (vllm/engine/arg_utils.py, 0.13.0)
_SHORT = {
    "-tp": "tensor_parallel_size",
    "-pp": "pipeline_parallel_size",
    "-dp": "data_parallel_size",
    "-dcp": "decode_context_parallel_size",
    "-q": "quantization",
}


def _command_pairs(rest: str, positional_model: bool) -> list[tuple[str, str]]:
    tokens = re.findall(r"""'[^']*'|"[^"]*"|\S+""", rest.replace("\\", " "))
    out: list[tuple[str, str]] = []
    i = 0
    if positional_model and tokens and not tokens[0].startswith("-"):
        out.append(("model", repr(tokens[0].strip("'\""))))
        i = 1
    while i < len(tokens):
        t = tokens[i]
        if t.split("=")[0] in _SHORT:  # "-pp 2", "-tp=4"
            t = "--" + _SHORT[t.split("=")[0]] + t[len(t.split("=")[0]) :]
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


def whole_command(
    r: LogReading, flags: dict[str, str | None], fix: Fix | None, sglang: bool
) -> tuple[str | None, list[CommandChange], list[tuple[str, str | None, bool]]]:
    if not flags and (fix is None or not fix.flag.startswith("--") or (fix.value is None and fix.flag not in _SWITCHES)):
        return None, [], []
    model = flags.get("MODEL") or "MODEL"
    rest = {k: v for k, v in flags.items() if k != "MODEL"}
    changes: list[CommandChange] = []
    changed: set[str] = set()
    if fix is not None and fix.flag.startswith("--") and not (fix.value is None and fix.flag not in _SWITCHES):
        changes.append({"flag": fix.flag, "value": fix.value, "was": rest.get(fix.flag), "why": fix.why, "passes": fix.passes})
        rest[fix.flag] = fix.value
        changed.add(fix.flag)
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
