"""Peeling a physical log line down to its message: prefixes of every kind (process, Ray, docker
compose, kubectl, journalctl, timestamps, logfmt, JSON, ANSI colour, Markdown quotes) come off,
and what they said (the rank, the tensor-parallel rank, the date) is kept beside the message."""

from __future__ import annotations

import re
from dataclasses import dataclass

from calc import jsontext

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\^\[\[[0-9;]*[A-Za-z]")  # also "^[[0;36m", as pasted
_QUOTE = re.compile(r"^\s*[>▎▍▌│┃]\s?")  # a Markdown quote, or the bar a chat or issue renderer draws
_COMPOSE = re.compile(r"^[A-Za-z0-9][\w.-]*\s+\|\s?")
_PIPE = re.compile(r"^\|\s*[\w./:@-]+\s*\|\s?")  # "date | host/container | message", as log collectors print
_BAR = re.compile(r"^\|[ \t]+")  # "2026-04-24 00:40:36.996 | message": Docker Desktop's log view, after its timestamp
_ISO = re.compile(r"^\[?(\d{4}-\d{2}-\d{2})[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\]?\s*")
_SGLANG_HEAD = re.compile(r"^\[(\d{4}-\d{2}-\d{2}) \d{2}:\d{2}:\d{2}(?:[.,]\d+)?((?: [A-Z]+\d+)*)\]\s*")
# "(EngineCore_DP0 pid=1)", "(VllmWorker TP0 pid=2)", "(RayWorkerWrapper pid=3, ip=10.0.0.1)", "(raylet)", "(raylet, ip=10.0.0.1)"
# Each item is one `key=value` or tag, and items are apart: no part of the line can be read two ways.
PROCESS = re.compile(r"^\((?:([A-Za-z_][\w-]*+)[\s,]*+)?((?:(?>\w++=[^\s,)]++|[A-Z]++\d++)(?:[\s,]++(?>\w++=[^\s,)]++|[A-Z]++\d++))*+)?)\)\s+")
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
_PP = re.compile(r"(?:^|[_ ])PP([0-9]{1,6})(?:[_ ]|$)")  # "(Worker_PP1 pid=2)", "(Worker_PP1_TP0 pid=2)": the pipeline stage
# the data-parallel rank: "(EngineCore_DP1 pid=2)", "(Worker_DP1_TP0_EP2 pid=3)" (v1/executor/multiproc_executor.py,
# 0.11 on), "(EngineCore_1 pid=2)" (0.10.x)
DP = re.compile(r"^(?:EngineCore_|\w*?_DP)([0-9]{1,6})(?:_|$)")


@dataclass
class Line:
    no: int
    msg: str
    headed: bool  # began with a header or prefix: a new message, not a continuation
    rank: str | None
    tp_rank: int | None
    date: str | None
    month_day: str | None
    width: int = 0  # the physical line's length: a terminal folds at its full width
    pp_rank: int | None = None  # the pipeline stage its prefix names
    dp_rank: int | None = None  # the data-parallel rank its prefix names


def peel(no: int, raw: str) -> Line:
    text = raw.rstrip("\r\n")
    if "\x1b" in text or "^[[" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:  # a progress bar redrawn on one line: the terminal shows what follows the last return
        text = text.rsplit("\r", 1)[-1] or text.replace("\r", "")
    headed, rank, tp_rank, date, month_day = False, None, None, None, None
    pp_rank: int | None = None
    dp_rank: int | None = None
    stamped = False  # the prefix just peeled was a timestamp
    for _ in range(8):  # prefixes nest: peel them one by one, choosing the pattern by the first character
        first = text[:1]
        m = None
        if first == "(":
            m = PROCESS.match(text)
            if m and (m[1] or m[2]):
                name, rest = m[1] or "", m[2]
                t = _TP.search(f"{name} {rest.strip()}")
                if t:
                    tp_rank = int(t[1])
                p = _PP.search(name)
                if p:
                    pp_rank = int(p[1])
                d = DP.match(name)
                if d:
                    dp_rank = int(d[1])
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
                    p = _PP.search(m[1])
                    if p:
                        pp_rank = int(p[1])
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
    return Line(no, text.lstrip(), headed, rank, tp_rank, date, month_day, len(raw.rstrip("\r\n")), pp_rank, dp_rank)
