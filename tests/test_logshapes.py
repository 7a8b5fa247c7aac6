"""The line shapes as data (calc/logs/shapes.py): each entry well formed, the reader's prefilter and
its message beginnings computed from the entries and right on every public log, and what a log's
timestamps say not hanging on which words the prefilter happens to hold."""

from __future__ import annotations

import re

import pytest
from conftest import ROOT

from calc.logs import shapes
from calc.logs.logread import read_log
from calc.logs.peel import peel

PUBLIC = ROOT / "logs" / "public"
LOGS = sorted(PUBLIC.glob("*.log")) + sorted((PUBLIC / "phases").glob("*.log"))


@pytest.mark.parametrize("shape", shapes.SHAPES, ids=[f"{s.name}:{s.trigger}" for s in shapes.SHAPES])
def test_each_shape_is_well_formed(shape: shapes.Shape) -> None:
    groups = shape.pattern.groups
    for put in shape.puts:
        assert put.unit.split("@")[0] + ("@" if "@" in put.unit else "") in shapes.UNITS, put
        assert put.group is None or 0 <= put.group < groups, put
        if put.unit.startswith("unit@"):
            assert int(put.unit[5:]) < groups
        assert (put.unit == "const") == (put.value is not None), put
    assert shape.era in (None, "v0", "v1", "v?", "sglang")
    assert shape.era_if is None or shape.era_if[0] < groups
    assert shape.puts or shape.then or shape.settings or shape.name == "advice_end"  # a shape gives something, or says the line is one
    if shape.begins:
        re.compile(shape.begins)


def test_a_put_with_an_unknown_unit_is_refused_by_name() -> None:
    put = shapes.Put("tokens", 0, "tokens")
    with pytest.raises(ValueError, match=r"tokens: found the unit 'tokens', expected one of GiB, unit@, count"):
        put.record(None, ("12",), None, "12 tokens")  # type: ignore[arg-type]


def test_the_prefilter_is_computed_and_every_trigger_holds_one_of_it() -> None:
    triggers = {s.trigger for s in shapes.SHAPES}
    assert shapes.ANCHORS == shapes._cover(list(triggers))
    assert all(any(a in t for a in shapes.ANCHORS) for t in triggers)
    assert len(shapes.ANCHORS) < len(triggers)  # shared parts stand for several triggers
    assert "--gpu-memory-utilization" in shapes.ANCHORS  # three triggers hold it
    assert "KV cache" not in shapes.ANCHORS  # too short: "GPU KV cache usage" is in every stats line a server prints


def test_no_public_log_line_the_prefilter_passes_over_is_read_by_a_shape() -> None:
    passed, read = 0, 0
    for path in LOGS:
        for no, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            msg = peel(no, raw).msg
            if any(a in msg for a in shapes.ANCHORS):
                read += 1
                continue
            passed += 1
            hits = [s.name for s in shapes.SHAPES if s.pattern.search(msg)]
            assert hits == [], f"{path.name}:{no}: {msg[:100]!r} read by {hits} but holds none of the prefilter's words"
    assert passed > 500 and read > 300


def test_message_beginnings_are_the_shapes_and_the_other_messages() -> None:
    starts = shapes.MESSAGE_START
    assert starts.match("GPU KV cache size: 1,234 tokens") and starts.match("Maximum concurrency for 4,096 tokens per request: 1.5x")
    assert starts.match("KV Cache is allocated. #tokens: 10") and starts.match("ValueError: no memory")  # a shape's, and another message's
    assert not starts.match("cache size: 1,234 tokens")  # the tail of a fold
    assert all(
        s.begins is None
        or starts.match(
            re.sub(r"\\d\+|\\w\+|\(\?:a\|an\) |#\? \?", lambda m: {"\\d+": "1", "\\w+": "GPU", "(?:a|an) ": "a ", "#? ?": ""}[m[0]], s.begins).split("|")[0]
        )
        for s in shapes.SHAPES
    )


def test_the_settings_shapes_are_the_ones_read_whole() -> None:
    assert shapes.SETTINGS == ("engine_config", "args", "serve_cmd", "sg_args")
    assert [s.name for s in shapes.SHAPES if not s.engine_line] == ["args", "serve_cmd", "serve_cmd", "serve_cmd"]


def test_the_first_timestamp_is_kept_whether_or_not_a_line_is_folded() -> None:
    # a terminal fold cuts "GPU KV cache size" off its header: the header's month and day still count
    text = (PUBLIC / "17-v011-gpt-oss-120b-h100-maxlen-error.log").read_text(encoding="utf-8")
    folded = "\n".join(line[i : i + 80] for line in text.split("\n") for i in range(0, max(len(line), 1), 80))
    note = "the timestamps carry month and day (10-31) but no year: the log's date is not known"
    assert note in read_log(text).notes
    assert note in read_log(folded).notes
    # the only lines carrying a year (50, 51) lie among lines no shape reads; line 52 continues 51, which is then peeled
    reading = read_log((PUBLIC / "45-v018-gb10-qwen35-35b-a3b-hybrid-cudagraph-estimate.log").read_text(encoding="utf-8"))
    assert reading.date is not None and (reading.date.value, reading.date.line_no) == ("2026-03-26", 51)
    assert not any("month and day" in n for n in reading.notes)
    # a log whose only headed line outside the figures is an error's traceback line keeps its month and day
    text = (PUBLIC / "65-v091-free-memory-bare-fileline.log").read_text(encoding="utf-8")
    assert "the timestamps carry month and day (06-30) but no year: the log's date is not known" in read_log(text).notes


def test_the_json_keys_and_the_page_rows_come_from_the_readings_fields() -> None:
    from dataclasses import fields

    from calc.logs.figures import JSON_KEYS, PAGE_FIGURES, LogReading
    from calc.present.calculators.yourstart import LOG_FIGURES

    declared = {f.name: f.metadata for f in fields(LogReading)}
    assert JSON_KEYS[:3] == ("engine", "engine_version", "tensor_parallel_size") and len(JSON_KEYS) == 17
    assert all(declared[k]["json"] for k in JSON_KEYS)
    assert LOG_FIGURES is PAGE_FIGURES
    assert PAGE_FIGURES[10:12] == (("total_memory_bytes", "Total memory", "GiB"), ("free_memory_bytes", "Free memory", "GiB"))
    assert [k for k, _, _ in PAGE_FIGURES] == [name for name, meta in declared.items() if "page" in meta]


def _names_put() -> set[str]:
    """Every name a line shape's Put, a shape's `then` or a settings line records."""
    from calc.logs import reader

    source = (ROOT / "calc" / "logs" / "shapes.py").read_text(encoding="utf-8")
    then = set(re.findall(r'rec\.(?:put|size)\(\s*"(\w+)"', source))
    return {p.field for s in shapes.SHAPES for p in s.puts} | then | set(reader._KEY.values()) | {"speculative"}


def test_every_name_a_line_puts_is_concluded_and_every_conclusion_is_put() -> None:
    from calc.logs import conclude

    tables = {**conclude.LENGTH, **conclude.SETTINGS, **conclude.MEMORY}
    concluded = set(tables) | conclude.CONCLUDED_ELSEWHERE
    assert not set(tables) & conclude.CONCLUDED_ELSEWHERE
    put = _names_put()
    assert {"sg_avail_load", "padding", "ep_on", "pin"} <= put
    assert sorted(put - concluded) == []  # a new Put's field needs its Pick or its function in calc/logs/conclude/
    assert sorted(concluded - put) == []  # a Pick no line gives is stale


def test_each_pick_fills_a_field_of_the_reading_once() -> None:
    from dataclasses import fields

    from calc.logs import conclude
    from calc.logs.figures import LogReading

    picks = [p.field for table in (conclude.LENGTH, conclude.SETTINGS, conclude.MEMORY) for p in table.values()]
    assert len(picks) == len(set(picks)) == 20
    assert set(picks) <= {f.name for f in fields(LogReading)}


def test_a_picked_figure_printed_differently_is_read_at_its_table_end_with_its_note() -> None:
    # two ranks print different CUDA graph estimates: MEMORY reads the largest, naming it as its Pick says
    log = (
        "INFO 01-01 00:00:01 [gpu_model_runner.py:1] Model loading took 10.00 GiB and 3.1 seconds\n"
        "(Worker_TP0 pid=1) INFO 01-01 00:00:02 [gpu_worker.py:1] Estimated CUDA graph memory: 0.50 GiB total\n"
        "(Worker_TP1 pid=2) INFO 01-01 00:00:02 [gpu_worker.py:1] Estimated CUDA graph memory: 0.75 GiB total\n"
    )
    reading = read_log(log)
    assert reading.cuda_graph_bytes is not None and reading.cuda_graph_bytes.printed == "0.75 GiB"
    assert any(n.startswith("estimated CUDA graph memory: ranks or repeats printed different figures") and "reading the largest" in n for n in reading.notes)


def test_ingest_text_rows_come_from_the_readings_fields() -> None:
    from dataclasses import fields

    from calc.logs.figures import INGEST_ROWS, LogReading
    from calc.present import cli
    from calc.present.commands import ingest

    declared = {f.name: f.metadata["ingest"] for f in fields(LogReading) if "ingest" in f.metadata}
    places = sorted(place for place, _ in declared.values())
    assert places == list(range(1, len(declared) + 1))  # each place once, none skipped
    assert INGEST_ROWS[:2] == (("model", "model"), ("date", "date")) and ("model_loading_bytes", "model loading") in INGEST_ROWS
    assert len(INGEST_ROWS) == 30 and [label for _, label in INGEST_ROWS].index("KV pool") == 10
    text = (PUBLIC / "01-v06-llama31-8b-3090-maxlen-29k.log").read_text(encoding="utf-8")
    catalog = cli.load_dir(cli.CATALOG_DIR)
    rendered = ingest.render_ingest(catalog, read_log(text), "x.log").split("\n")
    read = rendered[rendered.index("Read:") + 1 : rendered.index("Derived:")]
    labels = [label for _, label in INGEST_ROWS]
    shown = [max((label for label in labels if row[2:].startswith(label + " ")), key=len) for row in read]
    assert shown == sorted(shown, key=labels.index) and "KV pool" in shown and "model loading" in shown
