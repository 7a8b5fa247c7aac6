"""What a log's answer prints as arithmetic adds up from what it prints: on every public log, each
"A x B / C = D" (and its kin) in the fixes' checks gives D from A, B and C as printed, rounded as
printed, so a reader with a calculator gets the printed result from the printed terms. And a log
whose workers are named by pipeline stage gets --pipeline-parallel-size in its command."""

from __future__ import annotations

import ast
import math
import re
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest
from conftest import ROOT

from calc.answers import logverdict
from calc.logs.logread import read_log
from calc.logs.peel import peel
from calc.units import InputError

PUBLIC = ROOT / "logs" / "public"
LOGS = sorted(PUBLIC.glob("*.log")) + sorted((PUBLIC / "phases").glob("*.log"))

_COMMENT = re.compile(r"\((?=[^()]*[A-Za-wyz])[^()]*\)")  # "(line 4)", "(the high end of ...)": words, not terms
_WORDS = re.compile(r"\b(?:GiB|tokens|pool|needed|the total|free)\b")
_TAIL = re.compile(r"[-\d.,\sx/+()]*$")
_RESULT = re.compile(r"=\s*(-?[\d,]+(?:\.\d+)?)")


def _value(node: ast.AST) -> Fraction:
    if isinstance(node, ast.Expression):
        return _value(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return Fraction(str(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_value(node.operand)
    if isinstance(node, ast.BinOp):
        a, b = _value(node.left), _value(node.right)
        ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b} if not isinstance(node.op, ast.Div) else {ast.Div: a / b}
        return ops[type(node.op)]
    raise ValueError(ast.dump(node))


def equations(text: str) -> list[tuple[str, Fraction, str, bool]]:
    """Each "terms = result" in a message: (the terms as printed, their value, the printed result, rounded down)."""
    out = []
    for m in _RESULT.finditer(text):
        left = text[: m.start()]
        left = left[max(left.rfind(";"), left.rfind(": "), left.rfind(", ") if ", " in left[-12:] else -1) + 1 :]
        while _COMMENT.search(left):
            left = _COMMENT.sub("", left)
        left = _WORDS.sub("", left)
        terms = _TAIL.search(left)[0].strip()  # type: ignore[index]
        terms = " ".join(terms[terms.find(next((c for c in terms if c.isdigit() or c in "(-"), "")) :].split()) if terms else terms
        if not re.search(r"\d\s*[x/+\-]\s*\(?\s*\d", terms):
            continue
        expr = terms.replace(",", "").replace(" x ", " * ")
        out.append((terms, _value(ast.parse(expr, mode="eval")), m[1], "rounded down" in text[m.end() : m.end() + 40]))
    return out


def _rounded(value: Fraction, printed: str, down: bool) -> str:
    places = len(printed.split(".")[1]) if "." in printed else 0
    if down:
        return f"{math.floor(value):,}"
    q = Decimal(value.numerator) / Decimal(value.denominator)
    return f"{q.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):,}"


def _answers() -> list[tuple[str, str]]:
    out = []
    for path in LOGS:
        try:
            _, answer = logverdict.answer_text(path.read_text(encoding="utf-8"))
        except InputError:
            continue
        out.extend((path.name, line) for line in answer.text())
    return out


def test_the_checker_reads_terms_as_printed() -> None:
    got = equations("check: 1.705 GiB pool (the low end of the printed 1.71 GiB, line 1) x 131,072 / 4.545 GiB needed (line 5) = 49,170 tokens, rounded down")
    assert got == [("1.705 x 131,072 / 4.545", Fraction("1.705") * 131072 / Fraction("4.545"), "49,170", True)]
    got = equations("the pool grows by (0.95 - 0.9) x the total 23.64 GiB = 1.18 GiB, for the 71.16 GiB - 28.57 GiB = 42.59 GiB one request lacks")
    assert [(t, v, p) for t, v, p, _ in got] == [
        ("(0.95 - 0.9) x 23.64", Fraction("0.05") * Fraction("23.64"), "1.18"),
        ("71.16 - 28.57", Fraction("42.59"), "42.59"),
    ]


def test_every_printed_equation_of_every_public_log_adds_up_from_its_printed_terms() -> None:
    checked = 0
    for name, line in _answers():
        for terms, value, printed, down in equations(line):
            assert _rounded(value, printed, down) == printed, f"{name}: {terms} = {printed}, but the printed terms give {float(value):.4f}: {line.strip()}"
            checked += 1
    assert checked >= 15


@pytest.mark.parametrize(
    ("log", "said"),
    [
        # the high end of the printed total is what vLLM's check is hardest at: 0.89 x 22.05 alone gives 19.62
        ("14-v1-free-memory-check-fraction.log", "0.89 x 22.055 GiB (the high end of the printed total 22.05 GiB) = 19.63 GiB"),
        # 1.71 x 131,072 / 4.54 would give 49,367: the ends of the printing give the fewest, and they are printed
        ("17-v011-gpt-oss-120b-h100-maxlen-error.log", "1.705 GiB pool (the low end of the printed 1.71 GiB, line 1) x 131,072 / 4.545 GiB needed"),
        (
            "20-v08-v1-1m-context-maxlen-error-no-estimate.log",
            "x 1,048,576 / 24.005 GiB needed (the high end of the printed 24.00 GiB, line 1) = 435,286 tokens",
        ),
    ],
)
def test_a_check_at_the_ends_of_the_printing_prints_the_ends(log: str, said: str) -> None:
    path = next(p for p in PUBLIC.glob(log[:3] + "*.log"))
    _, answer = logverdict.answer_text(path.read_text(encoding="utf-8"))
    assert any(said in line for line in answer.text()), "\n".join(answer.text())


# --- pipeline parallel ------------------------------------------------------------------------


def test_every_pipeline_stage_named_gives_the_pipeline_parallel_size_in_the_command() -> None:
    # vllm-project/vllm#32105: Worker_PP0 to Worker_PP7 compile, then the one-request check refuses the start
    text = (PUBLIC / "84-v014-pp8-every-stage-maxlen-error.log").read_text(encoding="utf-8")
    reading, answer = logverdict.answer_text(text)
    assert reading.pipeline_parallel_size is not None and reading.pipeline_parallel_size.value == 8
    out = answer.to_json()
    assert out["verdict"] == "refused"
    assert out["command"] == "vllm serve MODEL \\\n  --pipeline-parallel-size 8 \\\n  --max-model-len 81392"
    assert "pipeline_parallel_size 8: the worker prefixes Worker_PP0 to Worker_PP7, every stage present (from line 1)" in " ".join(reading.notes)
    # vllm-project/vllm#25650: four stages print their pools
    reading, answer = logverdict.answer_text((PUBLIC / "85-v010-pp4-worker-pp-available-kv.log").read_text(encoding="utf-8"))
    assert reading.pipeline_parallel_size is not None and reading.pipeline_parallel_size.value == 4
    assert "--pipeline-parallel-size 4" in answer.to_json()["command"]


def test_some_stages_named_give_a_least_size_and_no_flag() -> None:
    # the same log's tail alone (log 19): stages PP1, PP4, PP5 and PP6 are seen, so at least 7; 8 is not proven
    reading, answer = logverdict.answer_text((PUBLIC / "19-v014-pp8-maxlen-error-worker-pp.log").read_text(encoding="utf-8"))
    assert reading.pipeline_parallel_size is None
    assert any("stage(s) PP1, PP4, PP5, PP6 (from line 5), so pipeline_parallel_size is at least 7" in n for n in reading.notes)
    assert "--pipeline-parallel-size" not in (answer.to_json()["command"] or "")


def test_stage_and_rank_prefixes_as_vllm_prints_them() -> None:
    # vllm-project/vllm#35426 (-tp 2 -pp 2): "(Worker_PP1_TP0 pid=3954408) ERROR 02-27 00:29:48 [multiproc_executor.py:863] ..."
    line = peel(1, "(Worker_PP1_TP0 pid=3954408) ERROR 02-27 00:29:48 [multiproc_executor.py:863] torch.distributed.DistBackendError: NCCL error")
    assert (line.pp_rank, line.tp_rank) == (1, 0)
    nested = peel(1, "(EngineCore_DP0 pid=200073) (Worker_PP3 pid=200085) ERROR 10-17 02:19:27 [multiproc_executor.py:654] WorkerProc hit an exception.")
    assert (nested.pp_rank, nested.tp_rank) == (3, None)  # vllm-project/vllm#27067


def test_a_setting_gives_the_pipeline_parallel_size_before_the_prefixes() -> None:
    # vllm-project/vllm#32105's description: the argument dump says 3
    text = (
        "(APIServer pid=3257917) INFO 01-11 03:44:56 [utils.py:254] non-default args: {'model_tag': 'Qwen/Qwen3-VL-30B-A3B-Thinking-FP8', "
        "'model': 'Qwen/Qwen3-VL-30B-A3B-Thinking-FP8', 'pipeline_parallel_size': 3, 'gpu_memory_utilization': 0.97}\n"
        "(Worker_PP0 pid=1) INFO 01-11 03:45:56 [gpu_worker.py:298] Available KV cache memory: 1.50 GiB\n"
    )
    reading = read_log(text)
    assert reading.pipeline_parallel_size is not None and reading.pipeline_parallel_size.value == 3
    assert not any("worker prefixes" in n for n in reading.notes)
    _, answer = logverdict.answer_text(text)
    assert "--pipeline-parallel-size 3" in answer.to_json()["command"]
