"""One case a config: each model class in tests/data/architectures.yaml reads from its real
config.json (models/configs/<name>/) as that class, and its KV cache holds the bytes a token one
rank holds that the case gives, worked out by hand. scripts/new_architecture.py adds a case with
its class's registration and its config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from calc.engine import hfconfig, kvlayout

ROOT = Path(__file__).resolve().parent.parent
CASES = yaml.safe_load((ROOT / "tests" / "data" / "architectures.yaml").read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_config_reads_as_its_class_with_its_bytes_a_token(case: dict) -> None:
    path = ROOT / "models" / "configs" / case["name"] / "config.json"
    shape = hfconfig.shape(json.loads(path.read_text(encoding="utf-8")), case["name"])
    assert shape.architecture == case["architecture"]
    assert case["architecture"] in hfconfig.model_classes()
    assert shape.family in hfconfig.FAMILIES
    settings = kvlayout.Settings(tp=case["tp"], kv_cache_dtype=case["kv_cache_dtype"])
    assert kvlayout.request(shape, settings, 8192, kvlayout.version(None)).bytes_per_token == case["bytes_per_token"]
    assert case["source"].startswith("https://")


def test_each_case_names_a_shipped_config_once() -> None:
    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)) >= 3
    assert all((ROOT / "models" / "configs" / n / "config.json").is_file() for n in names)
