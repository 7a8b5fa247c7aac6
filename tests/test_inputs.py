"""One declaration per input (calc/present/inputs.py): every command-line flag and every calculator field
is derived from the table, read off the built parser and the rendered forms; flags are spelled as
vLLM spells them, the former spellings still read; and the browser inputs for pipeline parallel,
LoRA and offload give calc's own figures."""

from __future__ import annotations

import argparse
import json
import math
import re

import pytest
from conftest import ROOT

from calc.checks import modeled
from calc.present import address, cli, inputs, vllmserve
from calc.present import html as calc_html
from calc.present.calculators import form, start
from calc.units import GiB, fmt

CONFIG = ROOT / "models/configs/qwen3-8b/config.json"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = cli.main(argv)
    out, err = capsys.readouterr()
    return status, out, err


# --- the command line -----------------------------------------------------------------------


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_every_flag_of_every_command_comes_from_the_table(command: str) -> None:
    p = _subparsers()[command]
    uses = {u.key: u for u in inputs.COMMAND_FLAGS[command]}
    declared: dict[str, set[str]] = {}
    for action in p._actions:
        if action.dest in ("help", "json"):
            assert action.help in (inputs.INPUTS["json"].help, "show this help message and exit")
            continue
        if command == "model" and action.dest in vllmserve.dests():  # the rest of a pasted `vllm serve` line: calc/present/vllmserve.py
            continue
        assert action.dest in uses, f"{command}: {action.option_strings or action.dest} is declared outside calc/present/inputs.py"
        u = uses[action.dest]
        flag, aliases = inputs.flag_names(u)
        names = action.option_strings or [action.dest]
        declared.setdefault(action.dest, set()).update(names)
        if names == [flag] or not action.option_strings:
            assert action.help == inputs.cli_help(u)
        else:  # a former spelling: read, not listed
            assert set(names) <= set(aliases) and action.help == argparse.SUPPRESS
    assert declared == {k: {inputs.flag_names(u)[0], *inputs.flag_names(u)[1]} for k, u in uses.items()}


def test_flags_are_spelled_as_vllm_spells_them() -> None:
    """A flag for a vLLM setting is vLLM's: `--` and its EngineArgs field with dashes
    (vllm/engine/arg_utils.py); prefix caching's and chunked prefill's off switches are argparse's
    --no- form of them, the speculative tokens go inside vLLM's --speculative-config, and the
    optimization level is vLLM's -O (--optimization-level read too)."""
    own = {
        "no_prefix_caching": "--no-enable-prefix-caching",
        "no_chunked_prefill": "--no-enable-chunked-prefill",
        "no_extensible_kv_cache": "--no-enable-extensible-kv-cache",
        "speculative_tokens": "--speculative-tokens",
    }
    for i in inputs.TABLE:
        if i.vllm and i.flag and i.flag.startswith("--"):
            assert i.flag == own.get(i.key, "--" + i.vllm.replace("_", "-")), i.key
    renamed = {a: i.flag for i in inputs.TABLE for a in i.aliases}
    assert renamed == {
        "--pin": "--kv-cache-memory-bytes",
        "--seats": "--max-num-seqs",
        "--prefill-budget": "--max-num-batched-tokens",
        "--tp": "--tensor-parallel-size",
        "--pp": "--pipeline-parallel-size",
        "--dcp": "--decode-context-parallel-size",
        "--fraction": "--gpu-memory-utilization",
        "--device-memory-utilization": "--gpu-memory-utilization",
        "--prefix-caching": "--enable-prefix-caching",
        "--no-prefix-caching": "--no-enable-prefix-caching",
        "--optimization-level": "-O",
    }


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (["gate", "--pin", "20e9", "--seats", "4", "--prefill-budget", "8192"], ["gate", "--kv-cache-memory-bytes", "20e9", "--max-num-seqs", "4", "--max-num-batched-tokens", "8192"]),
        (["fraction", "--fraction", "0.8"], ["fraction", "--gpu-memory-utilization", "0.8"]),
        (["kv", "--pin", "12e9", "--seats", "2", "--typical-context", "1000"], ["kv", "--kv-cache-memory-bytes", "12e9", "--max-num-seqs", "2", "--typical-context", "1000"]),
        (
            ["model", str(CONFIG), "--max-model-len", "8192", "--tp", "2", "--pp", "2", "--pool", "5 GiB", "--dcp", "2", "--prefix-caching"],
            ["model", str(CONFIG), "--max-model-len", "8192", "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2",
             "--kv-cache-memory-bytes", "5 GiB", "--decode-context-parallel-size", "2", "--enable-prefix-caching"],
        ),
    ],
)  # fmt: skip
def test_a_former_spelling_gives_the_same_answer(old: list[str], new: list[str], capsys) -> None:
    status, out, err = run([*old, "--json"], capsys)
    assert status == 0 and err == ""
    before = json.loads(out)
    status, out, err = run([*new, "--json"], capsys)
    assert status == 0 and err == ""
    assert json.loads(out) == before


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["gate", "--kv-cache-memory-bytes", "0"], "--kv-cache-memory-bytes: found 0 B, expected a KV pin above zero"),
        (["gate", "--pin", "0"], "--pin: found 0 B, expected a KV pin above zero"),
        (["gate", "--max-num-seqs", "x"], "--max-num-seqs: found 'x', expected a whole number"),
        (["gate", "--seats", "x"], "--seats: found 'x', expected a whole number"),
        (["model", str(CONFIG), "--max-model-len", "1000", "--tensor-parallel-size", "3"], "--tensor-parallel-size: found 3, expected a divisor"),
        (["model", str(CONFIG), "--max-model-len", "1000", "--tp", "3"], "--tp: found 3, expected a divisor"),
        (["model", str(CONFIG), "--max-model-len", "1000", "--pipeline-parallel-size", "0"], "--pipeline-parallel-size: found 0, expected at least 1"),
        (
            ["model", str(CONFIG), "--max-model-len", "1000", "--prefill-budget", "5", "--max-num-batched-tokens", "6"],
            "--max-num-batched-tokens: found beside --prefill-budget, expected one of them (they are the same setting)",
        ),
        (
            ["model", str(CONFIG), "--max-model-len", "1000", "--gpu", "l40s", "--kv-cache-memory-bytes", "5GiB", "--engine-version", "0.10.2"],
            "--kv-cache-memory-bytes: found for vLLM 0.10.2",
        ),
        (["fraction", "--gpu-memory-utilization", "2"], "--gpu-memory-utilization: found '2', expected a fraction above 0 and at most 1"),
    ],
)
def test_a_message_names_the_flag_as_typed(argv: list[str], message: str, capsys) -> None:
    status, out, err = run(argv, capsys)
    assert status == 2 and out == ""
    assert err.startswith("calc: error: " + message), err
    assert err.count("\n") == 1


def test_help_lists_vllms_spelling_and_names_the_former_one(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["model", "--help"])
    out = capsys.readouterr().out
    assert "--pipeline-parallel-size PIPELINE_PARALLEL_SIZE" in out and "(formerly --pp, still read)" in out
    assert "--pp PP" not in out and "--tp TP" not in out


# --- the forms and the address --------------------------------------------------------------


@pytest.mark.parametrize("calculator", calc_html.CALCULATORS)
def test_every_form_field_comes_from_the_table(catalog, calculator: str) -> None:
    """The rendered form's fields, labels and help lines are the table's, in the table's order."""
    page = calc_html.calculator_html(catalog, calculator)
    names = re.findall(r' name="([a-z0-9_]+)" aria-describedby', page)
    uses = form.form_uses(calculator, start.max_boxes(catalog))
    assert names == [name for name, _, _ in uses]
    by_name = {name: (u, n) for name, u, n in uses}
    for name in names:
        u, n = by_name[name]
        dom = form.dom_id(calculator, name)
        label = re.search(rf'<label for="{dom}">([^<]*)</label>', page)
        assert label is not None
        wanted = (u.input.label if u.label is None else u.label).replace("{n}", fmt(n, "count"))
        assert label.group(1).startswith(form.esc(wanted)), (name, label.group(1), wanted)
        text = u.input.form_help if u.form_help is None else u.form_help
        shown = re.search(rf'<span class="calc-help" id="{dom}-help">([^<]*)</span>', page)
        assert (shown.group(1) if shown else "") == form.esc(text) or "{" in text, name


@pytest.mark.parametrize("calculator", calc_html.CALCULATORS)
def test_the_address_keeps_every_field_under_its_table_name(catalog, calculator: str) -> None:
    fields = [f.name for f in calc_html.fields_of(catalog, calculator)]
    assert fields == [name for name, _, _ in form.form_uses(calculator, start.max_boxes(catalog))]
    values = {name: "7" for name in fields}
    pairs = address.encode(values, {}, fields).pairs
    keys = address.address_keys(fields)  # vLLM's key where its input has one, else the table's name
    assert [n for n, _ in pairs] == [keys.get(f, f) for f in fields]
    assert address.decode(pairs, fields).values == values


def test_a_bad_value_in_a_new_field_is_named_beside_it(catalog) -> None:
    d = dict(calc_html.defaults_of(catalog, "before").values)
    cases = [
        ({"pipeline_parallel_size": "0"}, "pipeline_parallel_size", "Pipeline parallel size: found 0, expected at least 1"),
        ({"pp_layer_partition": "10,10"}, "pp_layer_partition", "Layers of each stage: found '10,10' with one stage"),
        (
            {"pipeline_parallel_size": "2", "pp_layer_partition": "10,10"},
            "pp_layer_partition",
            "Layers of each stage: found 20 layers in all, expected the model's 48",
        ),
        ({"max_loras": "4"}, "max_loras", "LoRA slots: found 4 with LoRA off, expected LoRA adapters on ticked beside it"),
        ({"enable_lora": "on", "max_lora_rank": "7"}, "max_lora_rank", "Largest LoRA rank: found 7, expected one of"),
        ({"enable_lora": "on", "max_loras": "4", "max_cpu_loras": "2"}, "max_cpu_loras", "LoRA adapters on the host: found 2, expected at least --max-loras 4"),
        ({"cpu_offload_gb": "-1"}, "cpu_offload_gb", "Weights moved to the host, GiB a rank: found '-1', expected a size in GiB, 0 or more"),
        ({"kv_offloading_size": "0"}, "kv_offloading_size", "KV offloading, GiB over the ranks: found 0, expected a size in GiB above 0"),
    ]
    for edits, field, message in cases:
        out = calc_html.run(catalog, "before", {**d, **edits})
        assert not out.valid and out.errors[field].startswith(message), (edits, out.errors)
    start = dict(calc_html.defaults_of(catalog, "start").values)
    out = calc_html.run(catalog, "start", {**start, "kv_offloading_size": "lots"})
    assert out.errors["kv_offloading_size"].startswith("KV offloading, GiB over the ranks: found 'lots'")


# --- the new browser inputs, against the command line ---------------------------------------


def _model_json(capsys, *flags: str) -> dict:
    d_config = str(ROOT / "models/configs/qwen3-30b-a3b/config.json")
    status, out, err = run(["model", d_config, "--max-model-len", "32768", "--kv-cache-memory-bytes", "10e9", *flags, "--json"], capsys)
    assert status == 0, err
    return json.loads(out)


def test_before_splits_the_layers_over_pipeline_stages_as_the_command_line_does(catalog, capsys) -> None:
    d = dict(calc_html.defaults_of(catalog, "before").values)
    out = calc_html.run(catalog, "before", {**d, "pipeline_parallel_size": "2"})
    r = _model_json(capsys, "--pipeline-parallel-size", "2")
    assert out.valid and len(r["ranks"]) == 2
    for st in r["ranks"]:  # 48 layers: 24 a stage, the embedding on the first and the head on the last
        assert st["layers"] == 24
        assert out.figures[f"stage{st['rank']}_weights"] == fmt(st["weights_bytes"], "GiB")
        assert out.figures[f"stage{st['rank']}_kv"] == fmt(st["kv_bytes_per_token"], "count")
    assert out.figures["weights"] == fmt(r["weights_bytes_per_rank"], "GiB")  # the heaviest stage's
    assert out.figures["per_token"] == fmt(49152, "count")  # half of the 98,304 B a token of 48 layers
    assert "Pipeline parallel 2" in out.sections["before-result"]
    uneven = calc_html.run(catalog, "before", {**d, "pipeline_parallel_size": "2", "pp_layer_partition": "20,28"})
    assert uneven.figures["stage1_kv"] == fmt(28 * 2048, "count")


def test_before_counts_the_lora_slots_in_the_gate(catalog, capsys) -> None:
    d = dict(calc_html.defaults_of(catalog, "before").values)
    raw = {**d, "overhead": "4 GiB", "available": "100 GiB", "enable_lora": "on", "max_loras": "2", "max_lora_rank": "64"}
    out = calc_html.run(catalog, "before", raw)
    r = _model_json(capsys, "--enable-lora", "--max-loras", "2", "--max-lora-rank", "64")
    lora = r["lora"]["device_bytes_per_rank"]
    assert lora > 0
    assert out.figures["lora"] == fmt(lora, "GiB")
    assert out.figures["lora_host"] == fmt(r["lora"]["host_bytes"], "GiB")
    assert out.figures["term_weights"] == fmt(r["weights_bytes_per_rank"] + lora, "GiB")  # the slots are allocated beside the weights
    plain = calc_html.run(catalog, "before", {**raw, "enable_lora": "", "max_loras": "1", "max_lora_rank": "16"})
    assert plain.figures["term_weights"] == fmt(r["weights_bytes_per_rank"], "GiB")
    assert plain.figures["needs"] != out.figures["needs"]
    without = calc_html.run(catalog, "before", {**raw, "enable_lora": ""})
    assert not without.valid  # the sizes typed without the box ticked are refused, not ignored


def test_before_offload_frees_nothing_on_a_unified_box_and_frees_the_card(catalog, capsys) -> None:
    d = dict(calc_html.defaults_of(catalog, "before").values)
    assert catalog.boxes[d["box"]]["memory"] == "unified"
    raw = {**d, "overhead": "4 GiB", "available": "100 GiB", "cpu_offload_gb": "10", "kv_offloading_size": "8"}
    out = calc_html.run(catalog, "before", raw)
    r = _model_json(capsys, "--cpu-offload-gb", "10", "--kv-offloading-size", "8")
    of = r["offload"]
    assert out.figures["offloaded"] == fmt(of["offloaded_bytes_per_rank"], "GiB") and of["offloaded_bytes_per_rank"] > 9 * GiB
    assert out.figures["kv_offloading"] == fmt(8 * GiB, "GiB")
    # on the unified box the weights stay whole and the KV offloading buffer comes out of MemAvailable
    assert out.figures["term_weights"] == fmt(r["weights_bytes_per_rank"], "GiB")
    assert out.figures["term_host_buffers"] == fmt(8 * GiB, "GiB")
    assert "frees nothing" in out.sections["before-result"] or "nothing is freed" in out.sections["before-result"]
    card = next(b for b, box in catalog.boxes.items() if box["memory"] == "discrete")
    on_card = calc_html.run(catalog, "before", {**raw, "box": card, "available": "20 GiB"})
    assert on_card.figures["term_weights"] == fmt(of["weights_on_device_bytes_per_rank"], "GiB")  # the moved weights leave the card
    assert "term_host_buffers" not in on_card.figures  # and the host buffers are not on it


def test_the_start_gate_counts_kv_offloading_as_the_command_line_does(catalog, capsys) -> None:
    d = dict(calc_html.defaults_of(catalog, "start").values)
    out = calc_html.run(catalog, "start", {**d, "kv_offloading_size": "8", "cpu_offload_gb": "2"})
    status, text, err = run(["gate", "--deployment", d["deployment"], "--kv-offloading-size", "8", "--cpu-offload-gb", "2", "--json"], capsys)
    assert status == 0, err
    g = json.loads(text)
    tp = catalog.deployments[d["deployment"]]["tp"]
    host = next(t for t in g["terms"] if t["name"] == "host buffers")
    assert host["bytes"] == math.ceil(8 * GiB / tp)
    assert out.figures["term_host_buffers"] == fmt(host["bytes"], "GiB")
    assert out.figures["needs"] == fmt(sum(float(fmt(t["bytes"], "GiB").split()[0]) for t in g["terms"]) * GiB, "GiB")
    assert "--kv-offloading-size 8" in out.figures["flags"] and "--cpu-offload-gb 2" in out.figures["flags"]
    assert any("--cpu-offload-gb 2" in n for n in g["notes"]) and "cpu-offload-gb 2" in out.sections["start-verdict"]


def test_the_model_inputs_the_form_gives_are_the_command_lines(catalog) -> None:
    """The same config at the same settings: the form's LoRA figure is modeled.model_report's."""
    d = dict(calc_html.defaults_of(catalog, "before").values)
    out = calc_html.run(catalog, "before", {**d, "enable_lora": "on"})
    from calc.engine import lora

    r = modeled.model_report(modeled.ModelInputs(d["config"], max_model_len=32768, pool=10**10, lora=lora.Lora()))
    assert out.figures["lora"] == fmt(r.lora.device_bytes_per_rank, "GiB")


def test_a_message_of_the_model_names_the_field_it_came_from(catalog) -> None:
    """calc/engine/ranks.py says --pp; the form names its own field, whatever it is called."""
    d = dict(calc_html.defaults_of(catalog, "before").values)
    out = calc_html.run(catalog, "before", {**d, "pipeline_parallel_size": "49"})
    assert out.errors == {
        "pipeline_parallel_size": "Pipeline parallel size: found 49, expected at most the model's 48 layers (a stage of no layers holds nothing to run)"
    }
    out = calc_html.run(catalog, "before", {**d, "tp": "3"})
    assert out.errors == {"tp": "Tensor parallel size: found 3, expected a divisor of the model's 32 attention heads"}


def test_a_label_speaks_the_glossarys_word() -> None:
    """The table's label of an input holds its word, the one the pages' prose uses; vLLM's spelling
    goes in brackets beside it where the two differ."""
    for i in inputs.TABLE:
        if i.label:
            assert i.word.lower() in i.label.lower(), (i.key, i.word, i.label)
        if i.label and i.flag and i.flag.startswith("--") and i.vllm and i.word.replace(" ", "_") != i.vllm and "(" in i.label:
            assert i.flag in i.label, (i.key, i.label)


def test_a_link_written_with_vllms_keys_opens(catalog) -> None:
    names = [f.name for f in calc_html.fields_of(catalog, "start")]
    restored = address.decode([("kv_cache_memory_bytes", "20e9"), ("max_num_seqs", "8"), ("drafter", "on")], names)
    assert restored.values == {"pin": "20e9", "seats": "8", "drafter": "on"} and restored.dropped == ()
    twice = address.decode([("pin", "12e9"), ("kv_cache_memory_bytes", "20e9")], names)
    assert twice.values == {"pin": "12e9"} and twice.dropped == ("'pin' given twice (the first kept)",)
    assert address.decode([("max_num_seqz", "8")], names).dropped == ("'max_num_seqz' (not a field of this calculator)",)
    assert address.vllm_keys([f.name for f in calc_html.fields_of(catalog, "before")])["tensor_parallel_size"] == "tp"


def hidden_spellings() -> tuple[set[str], dict[str, set[str]]]:
    """The former spellings the command line still reads but no longer lists: every input's, and
    each command's own (`--pool` is `model`'s former --kv-cache-memory-bytes, and `fit`'s own flag)."""
    everywhere = {a for i in inputs.TABLE for a in i.aliases}
    by_command = {
        command: {a for u in uses for a in (u.aliases if u.aliases is not None else u.input.aliases)} for command, uses in inputs.COMMAND_FLAGS.items()
    }
    return everywhere, by_command


def test_the_pages_spell_every_flag_as_vllm_does() -> None:
    """No page shows a former spelling of a flag (`--pin`, `--seats`, `--tp`...): in prose, in a
    table or in a command the page runs, each flag is spelled as --help lists it, vLLM's way."""
    everywhere, by_command = hidden_spellings()
    assert {"--pin", "--seats", "--prefill-budget", "--tp", "--fraction"} <= everywhere  # the list is read as it should be
    flag = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*(?![\w-])")
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")) + sorted((ROOT / "hooks").rglob("*.py")):
        text = page.read_text(encoding="utf-8")
        for run in re.finditer(r"""shell\(\s*["'](\w+) ([^"']*)""", text):  # a command the page runs: its own former spellings too
            number = text.count("\n", 0, run.start()) + 1
            found += [f"{page.relative_to(ROOT)}:{number}: {f}" for f in flag.findall(run.group(2)) if f in by_command.get(run.group(1), set())]
        for number, line in enumerate(text.splitlines(), 1):
            found += [f"{page.relative_to(ROOT)}:{number}: {f}" for f in flag.findall(line) if f in everywhere]
    assert found == []


def test_every_select_of_every_calculator_offers_its_choices(catalog) -> None:
    """A select drawn without options cannot be used: every calculator's select lists its choices,
    and the default value is one of them."""
    for calculator in calc_html.CALCULATORS:
        defaults = calc_html.defaults_of(catalog, calculator).values
        for f in calc_html.fields_of(catalog, calculator):
            if f.kind == "select":
                values = [v for v, _, _ in f.options]
                assert values, (calculator, f.name)
                assert defaults.get(f.name, "") in values, (calculator, f.name, defaults.get(f.name))
