"""The catalog's entry types (calc/catalog/entries.py) say what the spec (calc/catalog/spec.py)
validates, key for key, required for required, and of the type the validator gives; a JSON
result is the recursive `Json`; a figure's value is read by its unit."""

from __future__ import annotations

import typing
from fractions import Fraction
from types import UnionType

import pytest

from calc.answers import report
from calc.catalog import entries
from calc.catalog.spec import SPEC, Figure
from calc.present import cli
from calc.units import InputError

# the type each leaf of the spec gives, as the validator (spec._check) returns it
_LEAF = {"int": int, "str": str, "id": str, "ref": str, "date": str, "num": float, "bool": bool, "size": int, "fraction": Fraction}


def _compare(spec: tuple[typing.Any, ...], hint: object, path: str) -> list[str]:
    """What differs between one spec node and the type annotated for it."""
    tag = spec[0]
    if tag == "obj":
        if not typing.is_typeddict(hint):
            return [f"{path}: a mapping in the spec, {hint!r} in entries.py"]
        assert isinstance(hint, type)
        _, required, optional = spec
        problems = []
        if hint.__required_keys__ != set(required):
            problems.append(f"{path}: required {sorted(hint.__required_keys__)} in entries.py, {sorted(required)} in the spec")
        if hint.__optional_keys__ != set(optional):
            problems.append(f"{path}: optional {sorted(hint.__optional_keys__)} in entries.py, {sorted(optional)} in the spec")
        hints = typing.get_type_hints(hint)
        for key, sub in {**required, **optional}.items():
            if key in hints:
                problems += _compare(sub, hints[key], f"{path}.{key}")
        return problems
    if tag == "list":
        if typing.get_origin(hint) is not list:
            return [f"{path}: a list in the spec, {hint!r} in entries.py"]
        return _compare(spec[1], typing.get_args(hint)[0], f"{path}[]")
    if tag == "fig":
        return [] if hint is Figure else [f"{path}: a figure in the spec, {hint!r} in entries.py"]
    if tag == "enum":
        if typing.get_origin(hint) is typing.Literal and set(typing.get_args(hint)) == set(spec[1]):
            return []
        if hint is str and tag == "enum" and len(spec[1]) > 4:  # a long list (a figure's kinds) is text
            return []
        return [f"{path}: one of {spec[1]} in the spec, {hint!r} in entries.py"]
    if isinstance(hint, UnionType):
        return [f"{path}: {tag} in the spec, the union {hint!r} in entries.py"]
    return [] if hint is _LEAF[tag] else [f"{path}: {tag} ({_LEAF[tag].__name__}) in the spec, {hint!r} in entries.py"]


# each file's entries: (file, its spec's path to the list or mapping, the type of one entry)
TYPED = [
    ("boxes", ("boxes",), entries.Box),
    ("models", ("models",), entries.Model),
    ("starts", ("deployments",), entries.Deployment),
    ("policy", (), entries.Policy),
    ("incidents", ("incidents",), entries.Incident),
    ("traces", ("traces",), entries.Trace),
    ("plans", ("plans",), entries.Plan),
    ("plans", ("fraction_plans",), entries.FractionPlan),
]


@pytest.mark.parametrize(("file", "path", "typed"), TYPED, ids=[f"{f}.{'.'.join(p)}" for f, p, _ in TYPED])
def test_each_entry_type_is_the_spec_key_for_key(file: str, path: tuple[str, ...], typed: type) -> None:
    spec = SPEC[file]
    for key in path:
        spec = spec[1][key] if key in spec[1] else spec[2][key]
        spec = spec[1] if spec[0] == "list" else spec
    assert _compare(spec, typed, f"{file}.yaml: {'.'.join(path) or '(top)'}") == []


def test_each_file_type_is_its_spec_and_the_files_are_the_catalogs() -> None:
    """calc/catalog/model.py builds the catalog from `Files`: each of its keys is a file, typed as the
    spec checks that file, whole."""
    hints = typing.get_type_hints(entries.Files)
    assert list(hints) == list(SPEC)
    assert [p for file, spec in SPEC.items() for p in _compare(spec, hints[file], f"{file}.yaml")] == []


def test_the_comparison_finds_a_key_the_types_leave_out() -> None:
    class Short(typing.TypedDict):
        id: str
        name: str

    spec = SPEC["boxes"][1]["boxes"][1]
    problems = _compare(spec, Short, "boxes")
    assert problems[0] == "boxes: required ['id', 'name'] in entries.py, ['id', 'memory', 'name'] in the spec"
    assert "optional [] in entries.py" in problems[1]


def test_the_catalog_holds_entries_of_those_types() -> None:
    catalog = cli.load_dir(cli.CATALOG_DIR)
    box = catalog.boxes["dgx-spark"]
    assert set(box) <= set(typing.get_type_hints(entries.Box))
    start = catalog.deployments["dsv4-flash-pair"]["starts"][-1]
    assert set(start) <= set(typing.get_type_hints(entries.Start))
    fractions = next(iter(catalog.fraction_plans.values()))["fractions"]
    assert all(type(f) is Fraction for f in fractions)  # a fraction is a Fraction even when written 1


def test_a_figure_is_read_by_its_unit() -> None:
    size = Figure(value=10**9, unit="size", kind="measured", entry="boxes.yaml: boxes[0].total_memory")
    share = Figure(value=Fraction(9, 10), unit="fraction", kind="setting", entry="policy.yaml: vllm.prefetch_fraction")
    span = Figure(value=None, unit="size", kind="measured", entry="models.yaml: pool", minimum=24 * 2**30, maximum=25 * 2**30)
    assert (size.size, size.count, size.number, share.fraction, span.sizes) == (10**9, 10**9, 10**9, Fraction(9, 10), (24 * 2**30, 25 * 2**30))
    with pytest.raises(InputError, match=r"^policy.yaml: vllm.prefetch_fraction: found Fraction\(9, 10\), expected a size in bytes$"):
        _ = share.size
    with pytest.raises(InputError, match=r"^boxes.yaml: boxes\[0\].total_memory: found 1000000000, expected a fraction$"):
        _ = size.fraction
    with pytest.raises(InputError, match=r"^models.yaml: pool: found a range \(25769803776 to 26843545600\), expected one value$"):
        _ = span.number


def test_to_json_gives_json_values_or_refuses() -> None:
    assert report.to_json({"a": (Fraction(1, 4), None, True, "x"), "b": [1]}) == {"a": [0.25, None, True, "x"], "b": [1]}
    assert report.to_json_object(report.FitReading(1000, 10, Fraction(5, 2))) == {"max_model_len": 1000, "tokens": 10, "pool_over_tokens": 2.5}
    with pytest.raises(TypeError, match="found a set, expected a value JSON can hold"):
        report.to_json({"a": {1}})
    with pytest.raises(TypeError, match="found list, expected a JSON object"):
        report.to_json_object([1])
