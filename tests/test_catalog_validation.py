"""The catalog's validation: each kind of bad entry, made by a text edit on a copy of catalog/, is
refused with a message naming the file, the key path, what was found and what was expected; and
the JSON Schema files editors use agree with the loader on the shipped catalog and on bad entries."""

from __future__ import annotations

import json
import marshal
import pickle
from decimal import Decimal
from pathlib import Path

import jsonschema
import pytest
from conftest import CATALOG_DIR, edit, run_calc

from calc.catalog.loader import load_dir, raw_as_json, read_yaml_dir
from calc.catalog.schema import schemas
from calc.catalog.spec import FILES, CatalogError
from calc.units import InputError


@pytest.fixture(scope="module")
def validators() -> dict[str, jsonschema.protocols.Validator]:
    out = {}
    for name in FILES:
        schema = json.loads((CATALOG_DIR / "schema" / f"{name}.schema.json").read_text(encoding="utf-8"))
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        out[name] = cls(schema)
    return out


def schema_errors(directory: Path, validators: dict) -> dict[str, list[str]]:
    """Schema errors by file, over the raw YAML as the build hands it to the browser (dates as text)."""
    raw = json.loads(raw_as_json(read_yaml_dir(directory)))
    return {name: [e.message for e in validators[name].iter_errors(raw[name])] for name in FILES if list(validators[name].iter_errors(raw[name]))}


# (id, file, old text, new text, key path, found as the message shows it, expected (part), the schema catches it too)
CASES = [
    ("missing-required-field", "boxes.yaml", "    name: RTX 5090 node\n", "", "boxes[1].name", "nothing", "text", True),
    ("mistyped-field-name", "boxes.yaml", "    name: DGX Spark (GB10)\n", "    nmae: DGX Spark (GB10)\n", "boxes[0].nmae", "'nmae'", "one of id, name, memory, total_memory", True),
    ("mistyped-figure-key", "starts.yaml", "value: 79.29 GiB", "valeu: 79.29 GiB", "deployments[0].starts[1].weights_loaded.valeu", "'valeu'", "one of ", True),
    ("size-unknown-unit", "starts.yaml", "value: 79.29 GiB", "value: 79.29 GiG", "deployments[0].starts[1].weights_loaded.value", "'79.29 GiG'", "a size with its unit, such as 79.29 GiB", True),
    ("size-without-unit-number", "starts.yaml", "value: 79.29 GiB", "value: 79.29", "deployments[0].starts[1].weights_loaded.value", "79.29", "a size with its unit", True),
    ("size-without-unit-text", "starts.yaml", "kv_pin: 16e9 B", "kv_pin: 16e9", "deployments[0].starts[0].kv_pin", "'16e9'", "(a bare number has no unit)", True),
    ("size-without-unit-integer", "boxes.yaml", "value: 8501810176 B", "value: 8501810176", "boxes[1].serving.kv_pin.value", "8501810176", "(a bare number has no unit)", True),
    ("size-negative", "starts.yaml", "value: 79.29 GiB", "value: -79.29 GiB", "deployments[0].starts[1].weights_loaded.value", "'-79.29 GiB'", "a size of zero or more bytes", True),
    ("duplicate-id", "boxes.yaml", "id: rtx-5090-node", "id: dgx-spark", "boxes[1].id", "'dgx-spark'", "an id not used before in this file", False),
    ("unknown-model", "starts.yaml", "model: deepseek-v4-flash", "model: deepseek-v5-flash", "deployments[0].model", "'deepseek-v5-flash'", "the id of an entry in models.yaml (deepseek-v4-flash, ", False),
    ("unknown-resident-model", "plans.yaml", "- model: example-70b-4bit", "- model: example-70b-3bit", "plans[0].residents[1].model", "'example-70b-3bit'", "the id of an entry in models.yaml", False),
    ("unknown-box", "traces.yaml", "box: dgx-spark", "box: dgx-sprak", "traces[0].box", "'dgx-sprak'", "the id of an entry in boxes.yaml (dgx-spark, rtx-5090-node, h100-sxm, ", False),
    ("box-without-any-total", "boxes.yaml", "    spec_memory:\n      value: 128 GB\n      kind: published\n      source: NVIDIA Jetson Thor specification, 128 GB 256-bit LPDDR5X shared by CPU and GPU, https://www.nvidia.com/en-us/autonomous-machines/embedded-systems/jetson-thor/\n      note: written as the specification writes it; the total the operating system reports is lower, and the catalog has no reading of it\n", "", "boxes[12].total_memory", "nothing", "a total: total_memory, reported_total or spec_memory", False),
    ("bad-kind", "boxes.yaml", "kind: published\n      source: NVIDIA specification, LPDDR5X", "kind: publisehd\n      source: NVIDIA specification, LPDDR5X", "boxes[0].spec_memory.kind", "'publisehd'", "one of measured, shard headers, modeled, published", True),
    ("missing-kind", "boxes.yaml", "      kind: published\n      source: NVIDIA specification, LPDDR5X", "      source: NVIDIA specification, LPDDR5X", "boxes[0].spec_memory.kind", "nothing", "one of measured, ", True),
    ("bad-enum", "boxes.yaml", "name: DGX Spark (GB10)\n    memory: unified", "name: DGX Spark (GB10)\n    memory: shared", "boxes[0].memory", "'shared'", "one of unified, discrete", True),
    ("bad-id", "boxes.yaml", "id: dgx-spark", "id: DGX Spark", "boxes[0].id", "'DGX Spark'", "an id of lower-case letters, digits, dots and dashes", True),
    ("bad-date", "incidents.yaml", "date: 2026-09-30\n    title", "date: 30/09/2026\n    title", "incidents[0].date", "'30/09/2026'", "a date written YYYY-MM-DD", True),
    ("min-above-max", "incidents.yaml", "min: 0.8 GiB", "min: 5.8 GiB", "incidents[0].available.min", "'5.8 GiB'", "at most max (4.2 GiB)", False),
    ("fraction-above-one", "boxes.yaml", "value: 0.98", "value: 1.5", "boxes[1].serving.gpu_memory_utilization.value", "1.5", "a fraction above 0 and at most 1", True),
    ("count-not-whole", "starts.yaml", "value: 290858", "value: 290858.5", "deployments[0].starts[0].kv_tokens.value", "290858.5", "a whole number of zero or more", True),
    ("number-as-words", "models.yaml", "parameters: 27e9", "parameters: lots", "models[4].parameters", "'lots'", "a number of zero or more", True),
    ("number-nan", "models.yaml", "parameters: 27e9", "parameters: nan", "models[4].parameters", "'nan'", "a number of zero or more", True),
    ("whole-number-as-words", "policy.yaml", "value: 3\n    kind: setting", "value: three\n    kind: setting", "guard.polls_in_a_row.value", "'three'", "a whole number of zero or more", True),
    ("list-expected", "plans.yaml", "fractions: [0.5, 0.35]", "fractions: 0.5", "fraction_plans[0].fractions", "0.5", "a list", True),
    ("fraction-in-list", "plans.yaml", "fractions: [0.5, 0.35]", "fractions: [0.5, 1.35]", "fraction_plans[0].fractions[1]", "1.35", "a fraction above 0 and at most 1", True),
]  # fmt: skip


@pytest.mark.parametrize(("file", "old", "new", "path", "found", "expected", "schema"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_entry_is_refused_with_file_path_found_and_expected(catalog_copy: Path, file, old, new, path, found, expected, schema) -> None:
    edit(catalog_copy, file, old, new)
    with pytest.raises(CatalogError) as raised:
        load_dir(catalog_copy)
    error = raised.value
    message = str(error)
    assert (error.file, error.path) == (file, path), message
    assert message.startswith(f"{file}: {path}: found {found}, expected "), message
    assert expected in message, message
    assert "\n" not in message


@pytest.mark.parametrize(("file", "old", "new"), [c[1:4] for c in CASES if c[7]], ids=[c[0] for c in CASES if c[7]])
def test_bad_entry_fails_the_json_schema_too(catalog_copy: Path, validators, file, old, new) -> None:
    edit(catalog_copy, file, old, new)
    errors = schema_errors(catalog_copy, validators)
    assert list(errors) == [file.removesuffix(".yaml")], errors


def test_invalid_yaml_names_the_line(catalog_copy: Path) -> None:
    text = (catalog_copy / "policy.yaml").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if line.startswith("guard:"))
    lines.insert(target + 1, "  floor: [8 GiB\n")  # an unclosed flow sequence
    (catalog_copy / "policy.yaml").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(CatalogError) as raised:
        load_dir(catalog_copy)
    message = str(raised.value)
    assert raised.value.file == "policy.yaml"
    assert message.startswith("policy.yaml: line "), message
    line = int(message.split("line ")[1].split(",")[0])
    assert target + 2 <= line <= target + 3, message  # the broken line (1-based) or the one the parser stops at
    assert "expected valid YAML" in message


def test_tab_indentation_names_its_line_and_column(catalog_copy: Path) -> None:
    edit(catalog_copy, "boxes.yaml", "    name: RTX 5090 node\n    memory: discrete\n", "    name: RTX 5090 node\n\tmemory: discrete\n")
    lines = (catalog_copy / "boxes.yaml").read_text(encoding="utf-8").splitlines()
    number = next(i for i, line in enumerate(lines, 1) if line.startswith("\tmemory"))
    with pytest.raises(
        CatalogError,
        match=rf"^boxes\.yaml: line {number}, column 1: found .*(?:cannot start any token|tab character that violates indentation).*, expected valid YAML$",
    ):
        load_dir(catalog_copy)


def test_missing_file(catalog_copy: Path) -> None:
    (catalog_copy / "traces.yaml").unlink()
    with pytest.raises(CatalogError) as raised:
        load_dir(catalog_copy)
    assert str(raised.value) == f"traces.yaml: (file): found nothing, expected a file at {catalog_copy / 'traces.yaml'}"


@pytest.mark.parametrize("spelled", ["{d}", "{d}/", "{d}//", "{d}/./"])
def test_a_missing_file_is_named_as_pathlib_names_it(catalog_copy: Path, spelled: str) -> None:
    """The catalog is read by os.path (the command line starts without pathlib), and a missing
    file's message names its path as it did: normalised, however --catalog was spelled."""
    (catalog_copy / "boxes.yaml").unlink()
    with pytest.raises(CatalogError) as raised:
        load_dir(spelled.format(d=catalog_copy))
    assert str(raised.value) == f"boxes.yaml: (file): found nothing, expected a file at {catalog_copy}/boxes.yaml"


def test_a_catalog_folder_that_is_a_file_is_a_missing_catalog(tmp_path: Path) -> None:
    (tmp_path / "cat").write_text("", encoding="utf-8")
    with pytest.raises(CatalogError) as raised:
        load_dir(tmp_path / "cat")
    assert str(raised.value) == f"boxes.yaml: (file): found nothing, expected a file at {tmp_path}/cat/boxes.yaml"
    with pytest.raises(CatalogError) as raised:
        load_dir(f"{tmp_path}/no\0where")
    assert str(raised.value).startswith("boxes.yaml: (file): found nothing, expected a file at ")


def test_a_date_is_on_the_calendar_as_datetime_reads_it() -> None:
    """The catalog's date check, made without datetime, takes what date.fromisoformat takes."""
    import datetime
    import re

    from calc.catalog.spec import _is_date

    def takes(text: str) -> bool:
        if not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", text):
            return False
        try:
            datetime.date.fromisoformat(text if len(text) == 10 else text + "-01")
        except ValueError:
            return False
        return True

    texts = [f"{y:04d}-{m:02d}-{d:02d}" for y in (0, 1, 1900, 2000, 2024, 2026, 2100, 9999) for m in range(14) for d in range(33)]
    texts += [f"{y:04d}-{m:02d}" for y in (0, 1, 2026, 9999) for m in range(14)]
    texts += ["\uff12\uff10\uff12\uff16-01-01", "\u0662\u0660\u0662\u0666-01", "2026-1-01", "2026-01-1", "20260101", "2026-01-01 ", "2026-W01", ""]
    assert [t for t in texts if _is_date(t) != takes(t)] == []
    assert _is_date("2024-02-29") and not _is_date("2026-02-29") and not _is_date("2100-02-29") and _is_date("2000-02-29")


def test_empty_file(catalog_copy: Path) -> None:
    (catalog_copy / "plans.yaml").write_text("# nothing here\n", encoding="utf-8")
    with pytest.raises(CatalogError, match=r"^plans\.yaml: : found None, expected a mapping with plans, fraction_plans$"):
        load_dir(catalog_copy)


def test_shipped_catalog_loads(catalog) -> None:
    assert {"dgx-spark", "rtx-5090-node", "h100-sxm", "h100-pcie", "h200", "b200", "a100-40gb", "a100-80gb"} <= set(catalog.boxes)
    assert {"l40s", "rtx-4090", "rtx-pro-6000-blackwell", "gh200", "jetson-agx-thor", "ryzen-ai-max-395-128gb"} <= set(catalog.boxes)
    assert "dsv4-flash-pair" in catalog.deployments


# --- JSON Schema ----------------------------------------------------------------------------


def test_shipped_catalog_validates_against_the_schema_files(validators) -> None:
    assert schema_errors(CATALOG_DIR, validators) == {}


def test_schema_files_are_what_calc_writes() -> None:
    for name, schema in schemas().items():
        assert json.loads((CATALOG_DIR / "schema" / name).read_text(encoding="utf-8")) == schema, name


def test_every_yaml_file_points_at_its_schema() -> None:
    for name in FILES:
        first = (CATALOG_DIR / f"{name}.yaml").read_text(encoding="utf-8").splitlines()[0]
        assert first == f"# yaml-language-server: $schema=schema/{name}.schema.json"


def test_schema_check_command_passes() -> None:
    done = run_calc("schema", "--check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"catalog/schema: {len(FILES)} files up to date"
    assert done.stderr == ""


def test_the_parsed_catalog_is_kept_and_any_edit_parses_again(catalog_copy: Path) -> None:
    first = load_dir(catalog_copy)
    kept = catalog_copy / "__pycache__" / "catalog.marshal"
    stamp = kept.stat().st_mtime_ns
    assert load_dir(catalog_copy) == first and kept.stat().st_mtime_ns == stamp  # read from what was kept
    edit(catalog_copy, "boxes.yaml", "value: 121.69 GiB", "value: 121.70 GiB")
    changed = load_dir(catalog_copy)
    assert changed.boxes["dgx-spark"]["total_memory"].value == 130_674_379_981  # 121.70 x 2^30, to the byte
    assert first.boxes["dgx-spark"]["total_memory"].value == 130_663_642_563  # 121.69 x 2^30
    assert kept.stat().st_mtime_ns != stamp  # parsed again, and kept for the files as they are now
    kept.write_bytes(b"not marshal data")
    assert load_dir(catalog_copy) == changed  # a damaged one is parsed again, not trusted
    texts = {name: (catalog_copy / f"{name}.yaml").read_bytes() for name in FILES}
    reader = marshal.loads(kept.read_bytes())["reader"]
    forged = {"reader": reader, "texts": texts, "raw": {"boxes": compile("1", "x", "eval")}}
    kept.write_bytes(marshal.dumps(forged))
    assert load_dir(catalog_copy) == changed  # a cache holding more than plain data is not trusted
    marker = catalog_copy / "ran"

    class Touch:  # unpickling this creates the marker file
        def __reduce__(self):
            return (Path.touch, (marker,))

    kept.write_bytes(pickle.dumps(Touch()))  # a pickle where the cache is: never unpickled
    assert load_dir(catalog_copy) == changed and not marker.exists()
    edit(catalog_copy, "boxes.yaml", "value: 121.70 GiB", "value: 121.70 Gib")
    with pytest.raises(CatalogError, match="boxes.yaml"):
        load_dir(catalog_copy)  # validation runs on every load, kept or not


# --- boxes ----------------------------------------------------------------------------------


def test_box_totals_best_first(catalog) -> None:
    from calc.engine.derive import box_total

    assert box_total(catalog.boxes["dgx-spark"]).kind == "engine"
    h100 = box_total(catalog.boxes["h100-sxm"])
    assert (h100.kind, h100.figure.value) == ("engine", 85_045_477_376)  # CUDA's total, below the driver's
    assert catalog.boxes["h100-sxm"]["reported_total"].value == 81559 * 2**20 == 85_520_809_984  # as another public report gives it
    a100 = box_total(catalog.boxes["a100-80gb"])
    assert (a100.kind, a100.figure.value) == ("engine", round(Decimal("79.32") * 2**30))  # vLLM's start check, below the driver's
    assert catalog.boxes["a100-80gb"]["reported_total"].value == 80 * 2**30
    thor = box_total(catalog.boxes["jetson-agx-thor"])
    assert (thor.kind, thor.figure.value) == ("specification", 128 * 10**9)


def test_the_cards_totals_as_torch_and_vllm_report_them(catalog) -> None:
    """Each card's total is the one torch and vLLM print (catalog/boxes.yaml, each with its public
    reading), below the driver's total where the catalog has both, and the pool is predicted on it."""
    from calc.engine import predict
    from calc.engine.derive import box_total

    expected = {  # GiB as printed: torch's total_memory / 2^30, vLLM's 'total_gpu_memory' or start check
        "h100-pcie": "79.19", "h200": "139.81", "b200": "178.35", "rtx-pro-6000-blackwell": "94.97",
        "nvidia-l4": "22.03", "amd-mi300x": "191.98", "nvidia-a10g": "22.06",
        "nvidia-a40": "44.42", "rtx-a6000": "47.54", "rtx-6000-ada": "44.43", "nvidia-l40": "44.40",
        "tesla-v100-16gb": "15.77", "tesla-v100-32gb": "31.74", "nvidia-h20": "95.22", "rtx-4080-super": "15.57", "rtx-4070-ti-super": "15.56",
        "rtx-3080": "9.78", "rtx-5080": "15.48", "rtx-5070-ti": "15.47", "gh200": "94.50",
        "h100-nvl": "93.10", "nvidia-a30": "23.53", "rtx-3060": "11.76", "rtx-4060-ti-16gb": "15.60", "rtx-2080-ti": "10.76",
        "a800-80gb": "79.33", "nvidia-l20": "44.53", "rtx-a4000": "15.61", "rtx-4070-ti": "11.73", "rtx-3080-ti": "11.62",
        "rtx-3070": "7.78", "rtx-3090-ti": "23.55", "titan-rtx": "23.64", "quadro-rtx-8000": "47.24", "b300": "267.69", "gb200": "184.31",
        "amd-mi325x": "255.98",
    }  # fmt: skip
    for box_id, gib in expected.items():
        total = box_total(catalog.boxes[box_id])
        assert (total.kind, total.figure.value) == ("engine", round(Decimal(gib) * 2**30)), box_id
        assert predict.card_of_box(catalog.boxes[box_id]).total_bytes == total.figure.value
        reported = catalog.boxes[box_id].get("reported_total")
        if reported is not None and box_id != "gh200":  # CUDA keeps some of the driver's total back: 0.4 to 1 GiB on these cards
            assert 0.4 * 2**30 < reported.value - total.figure.value < 2**30, box_id
    assert catalog.boxes["h200"]["reported_total"].value == 143771 * 2**20
    assert catalog.boxes["rtx-pro-6000-blackwell"]["reported_total"].value == 97887 * 2**20
    assert catalog.boxes["nvidia-a10g"]["reported_total"].value == 23028 * 2**20
    for box_id in ("nvidia-a40", "rtx-6000-ada", "nvidia-l40"):  # 48 GB with ECC on: nvidia-smi's 46,068 MiB
        assert catalog.boxes[box_id]["reported_total"].value == 46068 * 2**20, box_id
    assert catalog.boxes["rtx-4080-super"]["reported_total"].value == 16376 * 2**20
    assert catalog.boxes["h100-nvl"]["reported_total"].value == 95830 * 2**20
    assert catalog.boxes["b300"]["reported_total"].value == 275040 * 2**20  # 0.90 GiB above torch's 267.69 GiB
    # the GB200, a superchip's HBM GPU as the GH200 is: sized on CUDA's total, as a discrete card
    assert not predict.card_of_box(catalog.boxes["gb200"]).unified and catalog.boxes["gb200"]["memory"] == "discrete"
    # the GH200: CUDA keeps 1,103 MiB of nvidia-smi's 97,871 MiB back (deviceQuery's 96,768 MiB), more than on the cards
    # above; vLLM reads it as a discrete card (CUDA reports it not integrated), so its total is sized as theirs is
    assert catalog.boxes["gh200"]["reported_total"].value - catalog.boxes["gh200"]["total_memory"].value == (97871 - 96768) * 2**20
    assert not predict.card_of_box(catalog.boxes["gh200"]).unified
    # a discrete box with nothing but the driver's total is not sized
    driver_only = {k: v for k, v in catalog.boxes["gh200"].items() if k != "total_memory"}
    assert box_total(driver_only).kind == "driver"
    with pytest.raises(InputError, match=r"has no total as torch and vLLM report it in catalog/boxes.yaml \(only its reported total\)"):
        predict.card_of_box(driver_only)


def test_a_specification_read_as_binary_is_backed_by_the_drivers_total(catalog) -> None:
    """Where the catalog reads the vendor's "N GB" as N GiB, the driver's total must exceed N x 10^9 B
    (a decimal capacity could not hold it) and not exceed N GiB."""
    checked = []
    for box_id, box in catalog.boxes.items():
        spec, reported = box.get("spec_memory"), box.get("reported_total")
        if spec is None or reported is None or spec.value % 2**30:
            continue
        n = spec.value // 2**30
        assert n * 10**9 < reported.value <= spec.value, box_id
        checked.append(box_id)
    assert set(checked) == {"rtx-5090-node", "h100-sxm", "b200", "a100-40gb", "a100-80gb", "l40s", "rtx-4090", "nvidia-a10g"}


def test_boxes_with_only_a_specification_work_in_every_calculator(catalog, capsys) -> None:
    """The planner, the fraction check and the gate's reference pages take a spec-only box's total
    from the best figure the catalog has, and say which."""
    from calc.present import cli, html

    raw = dict(html.defaults_of(catalog, "plan").values)
    raw.update(box="jetson-agx-thor", available="100 GiB")
    out = html.run(catalog, "plan", raw)
    assert out.valid and out.figures["total"] == "119.21 GiB"  # 128 GB as the specification writes it
    note = html.changed(catalog, "plan", "box", raw)["sources"]["plan-box-src"]
    assert "the specification" in note
    assert cli.main(["fraction", "--box", "h100-pcie"]) == 2
    assert "--free: box h100-pcie has no free-at-start reading in the catalog; give --free" in capsys.readouterr().err
    assert cli.main(["fraction", "--box", "h100-sxm", "--free", "77 GiB", "--fraction", "0.98", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total_bytes"] == 85_045_477_376  # CUDA's total, the one vLLM multiplies
    assert data["requested_bytes"] == 83_344_567_829  # ceil(0.98 x total), above 77 GiB free
    assert data["passes"] is False


def test_trace_polls_run_forward(catalog_copy) -> None:
    edit(catalog_copy, "traces.yaml", "{t: 23, available: 119280 MiB", "{t: 25, available: 119280 MiB")
    with pytest.raises(CatalogError, match=r"^traces\.yaml: traces\[0\]\.samples\[2\]\.t: found 25, expected a time after the poll before it \(25\)$"):
        load_dir(catalog_copy)


def test_kernel_init_window_ends_on_a_poll(catalog_copy) -> None:
    edit(catalog_copy, "traces.yaml", "      to_t: 25\n", "      to_t: 27\n")
    with pytest.raises(
        CatalogError, match=r"^traces\.yaml: traces\[0\]\.kernel_init\.to_t: found 27, expected the time of one of the trace's polls \(0, 23, 25, 30, 40\)$"
    ):
        load_dir(catalog_copy)
