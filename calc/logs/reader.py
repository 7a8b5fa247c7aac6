"""The reader: a log read one physical line at a time, each peeled to its message (calc/logs/peel.py),
folded lines joined again, and every line shape (calc/logs/shapes.py) whose trigger a message holds
applied. It keeps what was seen; calc/logs/conclude/ turns that into a LogReading."""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

from calc.logs.conclude import conclude
from calc.logs.figures import Found, LogReading, _count, _exact_size, _fraction, human_readable_int
from calc.logs.peel import PROCESS, Line, peel
from calc.logs.shapes import ANCHORS, MESSAGE_START, SHAPES, TRIGGER, Shape
from calc.units import LARGEST_COUNT, LARGEST_SIZE, InputError

# Setting names as the engine config line, argument dumps, command lines and SGLang's ServerArgs write them.
_KEY = {
    "model": "model", "model_path": "model", "served_model_name": "served", "max_model_len": "max_model_len",
    "max_seq_len": "max_model_len", "context_length": "max_model_len", "max-model-len": "max_model_len",
    "tensor_parallel_size": "tp", "tensor-parallel-size": "tp", "tp_size": "tp", "tp": "tp",
    "pipeline_parallel_size": "pp", "pipeline-parallel-size": "pp", "pp_size": "pp", "pp-size": "pp", "pp": "pp", "dp": "dp", "dcp": "dcp",
    "kv_cache_dtype": "kv_dtype", "kv-cache-dtype": "kv_dtype", "block_size": "block_size", "block-size": "block_size",
    "page_size": "block_size", "gpu_memory_utilization": "fraction", "gpu-memory-utilization": "fraction",
    "mem_fraction_static": "mem_fraction", "mem-fraction-static": "mem_fraction",
    "kv_cache_memory_bytes": "pin", "kv-cache-memory-bytes": "pin", "kv-cache-memory": "pin", "kv_cache_memory": "pin",
    "decode_context_parallel_size": "dcp", "decode-context-parallel-size": "dcp",
    "max_num_batched_tokens": "prefill", "max-num-batched-tokens": "prefill", "max_num_seqs": "seats", "max-num-seqs": "seats",
    "data_parallel_size": "dp", "data-parallel-size": "dp", "enable_expert_parallel": "ep_on", "enable-expert-parallel": "ep_on",
}  # fmt: skip
_SETTING = re.compile(r"""(?:^|[\s,({])['"]?(?P<key>--[\w-]+|-tp|-pp|-dp|-dcp|[A-Za-z_][\w-]*)['"]?(?:\s*+[=:]|\s)\s*+(?P<value>'[^']*'|"[^"]*"|[^\s,)}'"]+)""")
_SPEC_METHOD = re.compile(r"""(?:method|speculative_algorithm|speculative-algorithm)['"]?\s*[:=\s]\s*['"]?([\w-]+)""")
# vLLM's num_speculative_tokens; SGLang's speculative_num_steps is the same count (its num_draft_tokens adds the verified one)
_SPEC_COUNT = re.compile(r"""(?:num_spec_tokens|num_speculative_tokens|speculative_num_steps|speculative-num-steps)['"]?\s*[:=\s]\s*([0-9]+)""")
_SPEC_BLOCK = re.compile(r"""speculative[_-](?:config|algorithm)['"]?\s*[:=\s]\s*(SpeculativeConfig\([^)]*\)|\{[^}]*\}|'\{[^}]*\}'|'[\w-]+'|[\w-]+)""")

_PLAIN_HEAD = re.compile(r"\([A-Za-z_][\w-]* (?:pid|rank|ip)=|(?:INFO|WARNING|DEBUG|ERROR) \d\d-\d\d ")  # a line that begins a message
# The timestamp of a line the prefilter passes over: vLLM's "INFO 03-26 11:06:09" or an ISO date after its process prefix
_STAMP = re.compile(r"(?:^|\) )(?:(?:INFO|WARNING|DEBUG|ERROR) (\d\d-\d\d) \d\d:|(\d{4}-\d{2}-\d{2})[T ]\d\d:)")
_TP_PREFIX = re.compile(r"\(\w*?_TP([0-9]{1,6})[_ )]")  # "(Worker_TP2 pid=1)", "(Worker_TP2_EP2 pid=1)"
_PP_PREFIX = re.compile(r"\(\w*?_PP([0-9]{1,6})[_ )]")  # "(Worker_PP1 pid=1)", "(Worker_PP1_TP0 pid=1)"
_EP_PREFIX = re.compile(r"\(\w*?_EP([0-9]{1,6})[_ )]")  # "(Worker_TP2_EP2 pid=1)": expert parallel on (multiproc_executor.py)
_DP_WORKER = re.compile(r"\(Worker\w*?_DP([0-9]{1,6})[_ )]")  # a worker names its DP rank only when data_parallel_size > 1
# a Hugging Face config.json's own keys, one a line as it is saved: a config given where a log was expected
_CONFIG_KEY = re.compile(r'^\s*"(architectures|model_type|num_hidden_layers|num_attention_heads|torch_dtype)"\s*:')
# a YAML mapping's line ("  source: ...", "- label: ..."), a log's own level words and exceptions aside
_YAML_KEY = re.compile(r"^\s*(?:- )?(?!(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b)[a-z_][\w-]*: ")
_DP_PREFIX = re.compile(r"\((?:EngineCore_|\w*?_DP)([0-9]{1,6})[_ )]")  # "(EngineCore_DP1 pid=1)", "(EngineCore_1 pid=1)", "(Worker_DP1_TP0 pid=1)"
_FLATTENED = re.compile(r"(?<!\s)\s+(?=(?:\([A-Za-z_][\w-]*(?:[\s,]+(?:\w+=[^\s,)]+|[A-Z]+\d+))+\)\s+)?(?:INFO|WARNING|ERROR|DEBUG) \d\d-\d\d \d\d:\d\d:\d\d)")
_LONG_NUMBER = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?")
_ESCAPED_BREAK = re.compile(r"(?:\\r)?\\n")
_HEADISH = re.compile(r"\s*(?:\([A-Za-z_][\w-]* (?:pid|rank|ip)=|(?:INFO|WARNING|DEBUG|ERROR) \d\d-\d\d |\[\d{4}-\d\d-\d\d )")
_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception)(?::\s.*|\(.*)")  # "ValueError: ...", "RuntimeError(...)"
# the lines that say a start is complete and the server up (vllm/entrypoints/openai/api_server.py, uvicorn,
# vllm/v1/engine/core.py's "init engine ... took", SGLang's http_server.py)
STARTED = (
    "Application startup complete", "Starting vLLM API server", "Starting vLLM server on", "Uvicorn running on",
    "The server is fired up and ready to roll", "init engine (profile, create kv cache, warmup model) took",
)  # fmt: skip
# the exceptions that only point back at the one that stopped the start (vllm/v1/engine/utils.py
# wait_for_engine_startup, vllm/v1/executor/multiproc_executor.py wait_for_ready, 0.13 to 0.33)
_POINTS_BACK = re.compile(r"See root cause above|See stack trace for root cause")
# what a process raises once another has stopped the start and closed the pipes it talked over
_TEARDOWN = re.compile(r"^(?:BrokenPipeError|ConnectionResetError|EOFError)\b")


def root_cause(kept: tuple[int, str] | None, new: tuple[int, str]) -> tuple[int, str]:
    """The exception a log's start stopped with: the last one, unless it only points back at an
    earlier one ("Engine core initialization failed. See root cause above.") or is a pipe closed
    under a process once the start had already failed (BrokenPipeError): the earlier one is kept."""
    if kept is None or _POINTS_BACK.search(kept[1]):
        return new
    return kept if _POINTS_BACK.search(new[1]) or _TEARDOWN.match(new[1]) else new


_CUT_MARK = re.compile(r"^(?:\[\s*(?:\.\.\.|…)[^\]]*\]|\.{3,}|…)$")  # "[... cut ...]", "...": a poster's cut, not a fold


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
        if parts and PROCESS.fullmatch(parts[-1].strip() + " "):
            parts[-1] = f"{parts[-1]} {part}"
        else:
            parts.append(part)
    return parts


def _joint(before: Line, after: Line) -> str:
    """How two physical lines of one message join: nothing at a terminal's fold (the previous
    line ran to the full width, or the break falls at punctuation), else the space a re-wrap ate."""
    if before.msg.endswith((",", "(", "=", ":", "/", " ")) or after.msg.startswith((",", ")", "=")):
        return ""
    return "" if before.width >= 79 else " "


# What each figure can be, as an engine prints it. A figure outside is a broken or hostile line:
# it is reported with its line and never used (a utilization of 7.5 once gave an overhead of
# 887.72 GiB; a negative load, a 32-digit pool, TP 0 or max_model_len 0 all read as valid).
_NAMES = {
    "loading": "model loading", "available": "KV pool", "available_exact": "KV pool", "tokens": "KV tokens", "measured_pool": "KV pool measured after warmup",
    "blocks": "GPU blocks", "concurrency": "maximum concurrency", "fraction": "gpu_memory_utilization",
    "mem_fraction": "mem_fraction_static", "tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "pin": "kv_cache_memory_bytes",
    "free": "free memory", "total": "total memory", "requested": "requested memory", "engine_budget": "engine budget",
    "external": "weights held outside the process", "free_grew": "free memory after the profile", "kv_needed": "KV for one request",
    "estimated": "estimated max_model_len", "prefill": "max_num_batched_tokens", "seats": "max_num_seqs", "dcp": "decode_context_parallel_size",
}  # fmt: skip
_AT_LEAST_ONE = ("max_model_len", "tp", "pp", "block_size", "dcp", "prefill", "seats", "estimated", "blocks_per_request")
_NOT_NEGATIVE_SIZES = ("loading", "total", "free", "requested", "engine_budget", "external", "fit_pool", "free_grew", "kv_needed", "profile_weights", "pinned_printed", "pin",
                       "activation", "sg_loading")  # fmt: skip
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


class Reader:
    """Reads one line at a time; holds what was seen, and a short window for folded lines."""

    def __init__(self) -> None:
        self.seen: dict[str, list[tuple[Any, Found, str | None]]] = {}
        self.lines_read = 0
        self.window: list[Line | tuple[int, str]] = []  # the current message: its headed line and up to 3 continuations
        self.tentative: list[tuple[Shape, Line, re.Match[str]]] = []
        self.tp_ranks: set[int] = set()
        self.pp_ranks: dict[int, int] = {}  # pipeline stage: the first line its prefix is on
        self.dp_ranks: dict[int, int] = {}  # data-parallel rank: the first line its prefix is on
        self.ep_prefix: int | None = None  # the first line whose worker prefix names an expert-parallel rank
        self.text_lines = 0  # lines that are not blank
        self.yaml_lines = 0  # of them, a YAML mapping's "key: value"
        self.config_line: tuple[int, str] | None = None  # the first line that is a model config's key
        self.dp_worker: int | None = None  # the first line whose worker prefix names a data-parallel rank
        self.by_dp: dict[str, dict[int, list[Found]]] = {}  # a figure's values on each data-parallel rank, repeats included
        self.stage_of: dict[int, int] = {}  # a line's pipeline stage, where its worker prefix names one
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
        self.settings: tuple[Shape, Line, list[Line]] | None = None
        self.traceback: int | None = None  # the line a traceback begins on
        self.started: int | None = None  # the first line that says the start is complete
        self.exception: tuple[int, str] | None = None  # the last exception line after it

    # recording ----------------------------------------------------------------------------

    def put(
        self,
        name: str,
        value: Any,
        line: Line,
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
        if line.pp_rank is not None:
            self.stage_of[line.no] = line.pp_rank
        if line.dp_rank is not None:
            self.by_dp.setdefault(name, {}).setdefault(line.dp_rank, []).append(found)
        entries = self.seen.setdefault(name, [])
        for v, _, r in entries:
            if v == value and (r == line.rank or name not in ("sg_pool", "sg_loading")):
                return
        entries.append((value, found, line.rank))

    def size(self, name: str, printed: str, unit: str, line: Line, text: str) -> None:
        """A printed size: bytes, the exact printed figure and half its last digit."""
        exact, half = _exact_size(printed, unit)
        self.put(name, round(exact), line, f"{printed} {unit}", half, text, exact)

    def setting(self, key: str, raw: str, line: Line, text: str) -> None:
        name = _KEY.get(key.lstrip("-"))
        if name is None:
            return
        value = raw.strip("'\"")
        if value in ("None", "", "null") or (name == "served" and value.startswith("[")):
            return
        try:
            if name == "ep_on":
                if value.lower() == "true":
                    self.put(name, True, line, value, text=text)
            elif name in ("max_model_len", "tp", "pp", "dp", "block_size", "dcp", "prefill", "seats"):
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

    def settings_in(self, body: str, line: Line, text: str) -> None:
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

    def match(self, text: str, line: Line, only_new: bool = False) -> bool:
        """Apply every rule whose trigger the text holds. Returns whether a triggered rule failed."""
        failed = False
        hits = {m.group() for m in TRIGGER.finditer(text)}
        for rule in SHAPES:
            if rule.trigger not in hits:
                continue
            m = rule.pattern.search(text)
            if not m:
                if rule.said_unread:  # its words but no figure an engine prints ("1e400 GiB"): said, if none is read
                    self.unread.setdefault(rule.name, (line.no, text[text.rfind(rule.trigger) :][:80]))
                failed = failed or (len(text) - text.rfind(rule.trigger) < rule.reach and not _ends_whole(text))
                continue
            if m.end() == len(text) and text[-1:].isdigit() and not only_new and not rule.settings:
                self.tentative.append((rule, line, m))  # a fold may have cut the number: wait one line
                continue
            self.apply(rule, m, line, text)
        return failed

    def apply(self, rule: Shape, m: re.Match[str], line: Line, text: str) -> None:
        """Record what a rule's match says; a figure in it that cannot be read is said, with its line."""
        try:
            self._apply(rule, m, line, text)
        except (ValueError, ArithmeticError):  # InputError too: a figure as no engine prints it
            self.unreadable.append((line.no, f"{m.group()[:80]!r}: its figure could not be read"))

    def _apply(self, shape: Shape, m: re.Match[str], line: Line, text: str) -> None:
        self.at = line.no
        if any(x and len(x) > 32 and _LONG_NUMBER.fullmatch(x) for x in m.groups()):
            self.oversized.append(line.no)  # no engine prints a figure this long: a broken or hostile line
            return
        if shape.engine_line:  # a command line or an argument list alone is not a log
            self.engine_lines += 1
        shape.record(self, m, line, text)
        if shape.settings:
            self.defer(shape, line)

    def hint(self, era: str) -> None:
        self.era_hints[era] = self.era_hints.get(era, 0) + 1
        self.era_lines.setdefault(era, self.at)

    # the stream ---------------------------------------------------------------------------

    def defer(self, rule: Shape, line: Line, parts: list[Line] | None = None) -> None:
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
        if raw.strip():
            self.text_lines += 1
            if ": " in raw[:60] and _YAML_KEY.match(raw):
                self.yaml_lines += 1
        if self.config_line is None and '"' in raw[:40] and _CONFIG_KEY.match(raw):
            self.config_line = (no, raw.strip()[:60])
        if "_EP" in raw[:80] and self.ep_prefix is None and _EP_PREFIX.search(raw, 0, 80):
            self.ep_prefix = no
        if "_DP" in raw[:80] and self.dp_worker is None and _DP_WORKER.search(raw, 0, 80):
            self.dp_worker = no
        continued = self.last_raw.rstrip().endswith("\\")  # a shell command's line continues on the next, whatever prefixes both
        self.last_raw = raw
        if self.started is None and self.traceback is None and any(m in raw for m in STARTED):
            self.started = no
        if "Traceback (most recent call last)" in raw:
            self.traceback = self.traceback or no
        elif self.traceback and ("Error: " in raw or "Exception: " in raw or "Error(" in raw):
            m = _EXCEPTION.search(raw)
            if m and raw[max(0, m.start() - 6) : m.start()] != "raise ":  # a frame's source line, "raise RuntimeError(", raises nothing yet
                self.exception = root_cause(self.exception, (no, m[0][:120]))
        if not self.tentative and not continued and _PLAIN_HEAD.match(raw) and not any(a in raw for a in ANCHORS):
            # the bulk of a long log: a new message (it begins with a prefix or a level) that no rule
            # reads; it ends the message before it, and is peeled only if a fold continues it
            m = _TP_PREFIX.match(raw)
            if m:
                self.tp_ranks.add(int(m[1]))
            if "_PP" in raw[:80] and (p := _PP_PREFIX.search(raw, 0, 80)):  # also inside "(EngineCore_DP0 pid=1) (Worker_PP3 pid=2)"
                self.pp_ranks.setdefault(int(p[1]), no)
            if "EngineCore_" in raw[:80] or "_DP" in raw[:80]:
                for d in _DP_PREFIX.finditer(raw, 0, 80):
                    self.dp_ranks.setdefault(int(d[1]), no)
            if not self.dates and not self.month_days and (stamp := _STAMP.search(raw, 0, 160)):  # the log's first timestamp
                if stamp[1]:
                    self.month_days.add(stamp[1])
                else:
                    self.dates.append((stamp[2], no))
            self.flush()
            self.window = [(no, raw)]
            self.last_partial = None
            return
        line = self.peeled(no, raw)
        continuation = (
            (continued or not line.headed)
            and bool(self.window)
            and bool(line.msg)
            and not _CUT_MARK.match(line.msg.rstrip())
            and not MESSAGE_START.match(line.msg)
        )
        if self.tentative:
            cut = continuation and line.msg[:1] in "0123456789.,"
            if not cut:
                for rule, at, m in self.tentative:
                    self.apply(rule, m, at, at.msg)
            self.tentative = []
        if continuation:
            self.window = [*(w if isinstance(w, Line) else self.peeled(*w) for w in self.window[-2:]), line]
            if self.settings is not None and len(self.settings[2]) < 200:
                self.settings[2].append(line)
        else:
            self.flush()
            self.window = [line] if line.msg else []
        msg = line.msg
        failed = self.match(msg, line) if any(a in msg for a in ANCHORS) and TRIGGER.search(msg) else False
        if continuation:
            self.joined()
        self.last_partial = (no, line.msg) if failed else None

    def peeled(self, no: int, raw: str) -> Line:
        """A line peeled (at once, or once a fold turns out to continue it), with what its
        prefixes say kept: its tensor-parallel rank, its date, its month and day."""
        line = peel(no, raw)
        if line.tp_rank is not None:
            self.tp_ranks.add(line.tp_rank)
        if line.pp_rank is not None:
            self.pp_ranks.setdefault(line.pp_rank, no)
        if line.dp_rank is not None:
            self.dp_ranks.setdefault(line.dp_rank, no)
        if line.date:
            self.dates.append((line.date, no))
        if line.month_day:
            self.month_days.add(line.month_day)
        return line

    def joined(self) -> None:
        """A folded or re-wrapped message: read the last lines joined, without and with a space,
        and keep only what spans a join (what lies within one line was read on its own)."""
        window = [w if isinstance(w, Line) else peel(*w) for w in self.window]  # peeled when the continuation came
        for sep in ("", " "):
            text, starts = "", []
            for part in window:
                if text:
                    text += sep
                starts.append(len(text))
                text += part.msg
            if not TRIGGER.search(text):
                continue
            hits = {m.group() for m in TRIGGER.finditer(text)}
            for rule in SHAPES:
                if rule.trigger not in hits:
                    continue
                m = rule.pattern.search(text)
                if not m:
                    continue
                first = max(i for i, at in enumerate(starts) if at <= m.start())
                last = max(i for i, at in enumerate(starts) if at < m.end())
                if rule.settings:
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
        return conclude(self)
