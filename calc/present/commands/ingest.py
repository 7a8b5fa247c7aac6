"""`ingest`: a vLLM or SGLang startup log read, what it gives and the catalog's figures for the model."""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from calc.catalog.model import Catalog, box_choices
from calc.present.commands.common import _flag, _int
from calc.units import InputError, fmt

if TYPE_CHECKING:  # the log reader and the others are imported by their commands only: the rest start faster
    from collections.abc import Iterable, Iterator
    from typing import BinaryIO

    from calc.answers import logverdict
    from calc.logs import logread


def read_log_file(name: str, watcher: logverdict.Watcher | None = None) -> logread.LogReading:
    """A log file (or - for standard input), streamed line by line; binary refused up front; a
    watcher, when given, sees each line on its way (calc.answers.logverdict)."""
    from calc import files

    try:
        stream = sys.stdin.buffer if name == "-" else files.open_regular(name)
        size = None if name == "-" else os.fstat(stream.fileno()).st_size
        with stream:
            return _read_log_stream(name, stream, size, watcher)
    except OSError as error:  # opening it, or reading it (/proc/self/mem gives an I/O error)
        raise InputError(f"{name}: cannot read it ({error.strerror}); expected a startup log file or -") from None


def _read_log_stream(name: str, stream: BinaryIO, size: int | None, watcher: logverdict.Watcher | None = None) -> logread.LogReading:
    """A log's text, binary refused up front, read line by line with progress shown for a large one
    (and seen by the watcher, when given, on its way)."""
    from calc.answers import logverdict
    from calc.logs import logread

    def watched(lines: Iterable[str]) -> Iterable[str]:
        return lines if watcher is None else logverdict.watch(lines, watcher)

    head = stream.peek(8192)[:8192] if hasattr(stream, "peek") else b""
    encoding = _utf16(head)
    if encoding:  # saved by a Windows shell or editor as UTF-16: text, not binary
        sample16 = head.decode(encoding, errors="replace")
        text16 = io.TextIOWrapper(stream, encoding=encoding, errors="replace", newline="")
        if sum(not (c.isprintable() or c in "\t\r\n\ufeff") for c in sample16) <= len(sample16) // 20:
            try:
                return logread.read_lines(watched(text16))
            except InputError as error:
                raise InputError(f"{name}: {error}") from None
    if b"\x00" in head:
        raise InputError(f"{name}: found binary data, expected the text of a vLLM or SGLang startup log")
    sample = head.decode("utf-8", errors="replace")
    if sample and sum(not (c.isprintable() or c in "\t\r\n\x1b") for c in sample) > len(sample) // 20:
        raise InputError(f"{name}: found binary data, expected the text of a vLLM or SGLang startup log")
    text = io.TextIOWrapper(stream, encoding="utf-8", errors="replace", newline="")
    try:
        return logread.read_lines(watched(_progress(text, name, size)))
    except InputError as error:
        raise InputError(f"{name}: {error}") from None


# A large read shows how far it has got on stderr: on a terminal (one line, rewritten) or, for a
# file of LARGE_READ bytes or more, a line every PROGRESS_EVERY characters. Standard output stays
# the answer alone.
LARGE_READ = 32 * 2**20


PROGRESS_EVERY = 16 * 2**20


def _progress(lines: Iterable[str], name: str, size: int | None) -> Iterator[str]:
    terminal = sys.stderr.isatty()
    if not terminal and (size is None or size < LARGE_READ):
        yield from lines
        return
    done, mark, count = 0, PROGRESS_EVERY, 0
    of = f" of {size / 1e6:,.1f} MB" if size else ""
    for count, line in enumerate(lines, 1):  # noqa: B007 (count is read after the loop)
        done += len(line)
        if done >= mark:
            mark += PROGRESS_EVERY
            print(
                f"{chr(13) if terminal else ''}calc: reading {name}: {done / 1e6:,.1f} MB{of}, {count:,} lines",
                end="" if terminal else "\n",
                file=sys.stderr,
                flush=True,
            )
        yield line
    if terminal and done >= PROGRESS_EVERY:
        print(f"\rcalc: read {name}: {done / 1e6:,.1f} MB, {count:,} lines", file=sys.stderr, flush=True)


def _utf16(head: bytes) -> str | None:
    """UTF-16 text (a BOM, or a NUL after most ASCII characters), as PowerShell's '>' writes a log."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return "utf-16"
    if len(head) >= 64 and head[1::2].count(0) > len(head) * 2 // 5 and head[0::2].count(0) < len(head) // 20:
        return "utf-16-le"
    return None


def cmd_ingest(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc.answers import ingest, logverdict
    from calc.logs import logread

    watcher = logverdict.Watcher()
    try:
        reading = read_log_file(args.file, watcher)
    except InputError as error:  # a paste of the failure alone is answered from the failure
        reading = logverdict.failure_only(watcher, str(error))
    if args.pin:
        reading = logread.with_pin(reading, _int(args, "pin"), f"{_flag(args, 'pin')} {args.pin}, given on the command line")
    said = logverdict.answer(reading, watcher)
    if args.json:
        return {**reading.to_json(), **said.to_json()}
    if args.yaml:
        model_id = args.model or ingest.catalog_model(catalog, reading)
        if model_id is None or model_id not in catalog.models:
            found = args.model or (reading.model.value if reading.model else "no model name")
            raise InputError(f"--yaml: found {found!r}, expected a model of the catalog; give --model (one of {', '.join(catalog.models)})")
        if args.id is not None and (not re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", args.id) or args.id in catalog.deployments):
            raise InputError(f"--id: found {args.id!r}, expected a new id of lower-case letters, digits, dots and dashes")
        if not args.box or args.box not in catalog.boxes:
            raise InputError(f"--box: found {args.box!r}, expected one of {box_choices(catalog.boxes, args.box)} (the box the log was taken on)")
        from calc.present.calculators import yourstart

        wrong = yourstart.box_mismatch(catalog, args.box, reading)  # a box whose total is not the log's: no entry written
        if wrong is not None:
            detail = wrong.split(": ", 1)[1].split("; choose its box")[0]
            raise InputError(f"--box: found {args.box!r}, expected the box the log was taken on: {detail}")
        source = "standard input" if args.file == "-" else Path(args.file).name
        entry = ingest.start_entry(
            reading, model_id=model_id, box=args.box, boxes=_int(args, "boxes"), source=f"startup log {source}",
            tp=_int(args, "tp") if args.tp else None, deployment_id=args.id,
        )  # fmt: skip
        return entry.rstrip("\n")
    if args.model and args.model not in catalog.models:
        raise InputError(f"--model: found {args.model!r}, expected one of {', '.join(catalog.models)}")
    return render_ingest(catalog, reading, args.file, args.model) + "\n" + "\n".join(said.text())


def render_ingest(catalog: Catalog, r: logread.LogReading, name: str, model_id: str | None = None) -> str:
    from calc.answers import ingest
    from calc.logs.figures import INGEST_ROWS

    engine = str(r.engine.value) if r.engine else ""
    build = f"{engine} {r.engine_version.value}" if r.engine_version else engine
    era = f", {r.era.value.upper()} engine" if r.era and r.era.value in ("v0", "v1") else ""
    lines = [f"{name}: a {build} startup log{era}", "Read:"]
    shown = {label: getattr(r, name) for name, label in INGEST_ROWS}
    for label, found in shown.items():
        if found is not None:
            where = "worked out, not printed (see Notes)" if found.derived else f"line {found.line_no}"
            lines.append(f"  {label:<24}{_shown(found):<28} {where}")
    lines.append("Derived:")
    lines.extend(f"  {d.name}: {d.value}\n    {d.how}" for d in ingest.derived(r))
    compared = ingest.compare(catalog, r, model_id)
    if compared:
        lines.append("Catalog:")
        lines.extend(f"  {c}" for c in compared)
    elif r.model is not None:
        lines.append(f"Catalog: no model matching {r.model.value!r}")
    if r.missing:
        lines.append("Not in the log:")
        lines.extend(f"  {m}" for m in r.missing)
    if r.notes:
        lines.append("Notes:")
        lines.extend(f"  {n}" for n in r.notes)
    return "\n".join(lines)


def _shown(found: logread.Found) -> str:
    if isinstance(found.value, dict):
        return ", ".join(f"{k} {v}" for k, v in found.value.items() if v is not None)
    if isinstance(found.value, int) and found.printed and found.half and not isinstance(found.value, bool):
        return f"{found.printed} ({fmt(found.value, 'B')})"
    if found.printed:
        return found.printed
    if isinstance(found.value, int) and not isinstance(found.value, bool) and found.value > 10**6:
        return f"{fmt(found.value, 'B')}"
    return str(found.value)
