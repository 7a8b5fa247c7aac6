"""A message names a flag as vLLM spells it (`--tensor-parallel-size`, not `--tp`), as the command
line lists it; a former spelling is still read, and a message opening with a flag is given back in
the spelling the user typed (calc/present/cli.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import cli_json

from calc.checks import modeled
from calc.engine import hostmem, predict, ranks
from calc.present import inputs
from calc.units import InputError

ROOT = Path(__file__).resolve().parent.parent
# the former spellings: an alias of an input that is no input's own flag (fit's --pool is its own)
FORMER = sorted({a for i in inputs.TABLE for a in i.aliases} - {i.flag for i in inputs.TABLE if i.flag})


def _strings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(n.lineno, n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def test_the_former_spellings_are_the_short_ones() -> None:
    assert {"--tp", "--pp", "--dcp", "--pin", "--seats", "--fraction"} <= set(FORMER)


def test_no_text_of_calc_names_a_flag_by_a_former_spelling() -> None:
    """Only calc/present/inputs.py, which declares them, spells them."""
    pattern = re.compile(r"(?<![\w-])(" + "|".join(re.escape(f) for f in FORMER) + r")(?![\w-])")
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text[:80]!r}"
        for path in sorted((ROOT / "calc").rglob("*.py"))
        if path != ROOT / "calc/present/inputs.py"
        for line, text in _strings(path)
        if pattern.search(text)
    ]
    assert found == []


def test_the_engines_messages_name_vllms_flags() -> None:
    with pytest.raises(InputError, match=r"^--tensor-parallel-size / --pipeline-parallel-size: found 0 / 1, expected sizes from 1 to "):
        hostmem.shm_queues(0, 1, (0, 10))
    with pytest.raises(InputError, match=r"^--pipeline-parallel-size: found 0, expected a pipeline parallel size from 1 to 64"):
        predict.check_start(predict.Start(max_model_len=8192, pp=0))
    with pytest.raises(InputError, match=r"^--pipeline-parallel-size: found 5, expected at most the model's 4 layers"):
        ranks.partition(4, 5)
    text = (ROOT / "models/configs/qwen2.5-7b/config.json").read_text(encoding="utf-8")  # 28 heads, 4 KV heads
    with pytest.raises(InputError, match=r"^--tensor-parallel-size: found 3, expected a divisor of the model's 28 attention heads"):
        modeled.model_report(modeled.ModelInputs(text, max_model_len=8192, tp=3))
    with pytest.raises(InputError, match=r"^--decode-context-parallel-size: found 3, expected a divisor of the tensor parallel size 2"):
        modeled.model_report(modeled.ModelInputs(text, max_model_len=8192, tp=2, dcp=3))


def test_a_note_asks_for_the_pin_by_vllms_flag(capsys: pytest.CaptureFixture[str]) -> None:
    r = cli_json(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--enable-sleep-mode", "--json"], capsys)
    said = [n for n in r["notes"] if "the KV pool is not known here" in n]
    assert len(said) == 1 and said[0].endswith("(the KV pool is not known here: give --kv-cache-memory-bytes or a card)")
