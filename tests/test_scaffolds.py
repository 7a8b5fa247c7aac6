"""The two scaffolds, each run into a temporary copy of the project: scripts/new_log_shape.py adds
a line shape's entry, its fixture and its case, and the copy's tests pass and read the line;
scripts/new_architecture.py registers a model class, ships its config with its source and adds its
case, and the copy's tests pass. A case whose figures are wrong is refused and leaves nothing."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

# a real line the reader has no shape for: logs/public/45 (guardkit/guardkit docs/reviews/agentic-factory/qwen-run-2.md), line 44
pytestmark = pytest.mark.slow  # copies the project and runs its tests in it: make test, not make test-fast

UNREAD = "(EngineCore pid=62) INFO 03-26 11:05:37 [gpu_model_runner.py:5867] Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)"
UNREAD_URL = "https://github.com/guardkit/guardkit/blob/703734eee2aec9ba5591dd7eedf8aabeb0291c4a/docs/reviews/agentic-factory/qwen-run-2.md"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    for part in ("calc", "scripts", "tests", "models", "catalog", "logs"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__", "*.marshal"))
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def run(copy: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(copy / "scripts" / script), *args, "--root", str(copy)], capture_output=True, text=True, timeout=300)


def shape_args(*expect: str) -> list[str]:
    return [
        "graph_profile", "--trigger", "PIECEWISE=", "--regex", "Profiling CUDA graph memory: PIECEWISE=INT",
        "--put", "graph_profile:0:count", "--era", "v1", "--source", "v1/worker/gpu_model_runner.py", "--line", UNREAD, "--url", UNREAD_URL,
        *[a for e in expect for a in ("--expect", e)],
    ]  # fmt: skip


def test_a_new_log_shape_is_added_with_its_fixture_and_read(copy: Path) -> None:
    done = run(copy, "new_log_shape.py", *shape_args("graph_profile=51"))
    assert done.returncode == 0, done.stderr
    assert "added: calc/logs/shapes.py entry, tests/data/logshapes/graph_profile.log and .json" in done.stdout
    shapes = (copy / "calc" / "logs" / "shapes.py").read_text(encoding="utf-8")
    assert 'Shape(\'graph_profile\', "PIECEWISE=", r"Profiling CUDA graph memory: PIECEWISE=" + INT' in shapes
    assert shapes.index("graph_profile") < shapes.index("    # SGLang\n")  # among vLLM's shapes
    assert json.loads((copy / "tests/data/logshapes/graph_profile.json").read_text())["figures"] == {"graph_profile": ["51"]}
    # the copy's own tests pass with the new shape: its case, every shape well formed, the prefilter
    # computed; all but the one that asks for the new figure's conclusion, which the scaffold names
    # as the next step and leaves to the engineer (what the reading makes of it is a choice)
    conclusion = "test_every_name_a_line_puts_is_concluded_and_every_conclusion_is_put"
    assert done.stdout.strip().splitlines()[-1].startswith("next: conclude graph_profile in calc/logs/conclude/")
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_logshape_cases.py", "tests/test_logshapes.py", "-k", f"not {conclusion}"],
        cwd=copy, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert re.search(r"\b(\d+) passed", tests.stdout)
    unconcluded = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_logshapes.py", "-k", conclusion],
        cwd=copy, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert unconcluded.returncode == 1 and "'graph_profile'" in unconcluded.stdout
    # and the copy's reader now reads the line, its prefilter holding the new trigger
    read = subprocess.run(
        [sys.executable, "-c", "import sys; from tests.test_logshape_cases import seen; from calc.logs.shapes import ANCHORS; "
         "print(seen(sys.argv[1]).get('graph_profile'), any(a in sys.argv[1] for a in ANCHORS))", UNREAD],
        cwd=copy, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert read.stdout.split() == ["['51']", "True"], read.stderr


def test_a_log_shape_whose_figures_are_wrong_leaves_nothing(copy: Path) -> None:
    before = (copy / "calc" / "logs" / "shapes.py").read_bytes()
    done = run(copy, "new_log_shape.py", *shape_args("graph_profile=512"))  # the largest graph, not the count
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1] == (
        "new_log_shape: the new case fails (see above), so nothing was written: check the pattern, the puts and the --expect figures of 'graph_profile'"
    )
    assert (copy / "calc" / "logs" / "shapes.py").read_bytes() == before
    assert not (copy / "tests/data/logshapes/graph_profile.log").exists()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("--put", "graph_profile:1:graphs"), "--put 'graph_profile:1:graphs': found the unit 'graphs', expected one of GiB, unit@, count"),
        (("--put", "graph_profile:5:count"), "--put 'graph_profile:5:count': found the group '5', expected '-' or a group of the pattern (0 to 0)"),
        (("--trigger", "PIECEWISE=="), "--trigger 'PIECEWISE==': not in the line"),
        (("--regex", "Profiling CPU graph memory: PIECEWISE=INT"), "--regex 'Profiling CPU graph memory: PIECEWISE=INT': does not match the line"),
    ],
)
def test_a_log_shape_with_a_bad_part_is_refused_in_one_line(copy: Path, change: tuple[str, str], said: str) -> None:
    args = shape_args("graph_profile=51")
    flag, value = change
    args[args.index(flag) + 1] = value
    if flag == "--put":
        args[args.index("--put") + 1] = value
    done = run(copy, "new_log_shape.py", *args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and said in done.stderr, done.stderr


def _without_granite(copy: Path) -> Path:
    """The copy as it was before Granite's class was added; its config kept aside."""
    hf = copy / "calc" / "engine" / "hfconfig" / "registry.py"
    hf.write_text(hf.read_text(encoding="utf-8").replace('    "GraniteForCausalLM": _llama,\n', ""), encoding="utf-8")
    config = copy / "granite-config.json"
    shutil.move(copy / "models" / "configs" / "granite-3.3-8b-instruct" / "config.json", config)
    (copy / "models" / "configs" / "granite-3.3-8b-instruct").rmdir()
    sources = copy / "models" / "configs" / "SOURCES.yaml"
    text = sources.read_text(encoding="utf-8")
    sources.write_text(re.sub(r"\n  granite-3\.3-8b-instruct:\n(?:    .*\n|      .*\n)*", "\n", text), encoding="utf-8")
    return config


ARCH_ARGS = ["GraniteForCausalLM", "--like", "LlamaForCausalLM", "--name", "granite-3.3-8b-instruct", "--model", "ibm-granite/granite-3.3-8b-instruct",
             "--url", "https://huggingface.co/ibm-granite/granite-3.3-8b-instruct/blob/main/config.json"]  # fmt: skip


def test_a_new_architecture_is_registered_with_its_config_and_case(copy: Path) -> None:
    config = _without_granite(copy)
    # 2 (K and V) x 8 KV heads x 128 head_dim (4096 / 32 heads) x 2 B (bfloat16) x 40 layers
    done = run(copy, "new_architecture.py", *ARCH_ARGS, "--config", str(config), "--bytes-per-token", str(2 * 8 * 128 * 2 * 40))
    assert done.returncode == 0, done.stderr + done.stdout
    hf = (copy / "calc" / "engine" / "hfconfig" / "registry.py").read_text(encoding="utf-8")
    assert '    "GraniteForCausalLM": _llama,  # read as LlamaForCausalLM\n}' in hf
    assert (copy / "models/configs/granite-3.3-8b-instruct/config.json").read_bytes() == config.read_bytes()
    assert '  granite-3.3-8b-instruct:\n    model: "ibm-granite/granite-3.3-8b-instruct"' in (copy / "models/configs/SOURCES.yaml").read_text()
    assert '- name: "granite-3.3-8b-instruct"\n  architecture: "GraniteForCausalLM"\n  tp: 1' in (copy / "tests/data/architectures.yaml").read_text()
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "tests/test_architecture_cases.py"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert tests.returncode == 0, tests.stdout[-3000:]
    assert "test_config_reads_as_its_class_with_its_bytes_a_token[granite-3.3-8b-instruct] PASSED" in tests.stdout, tests.stdout[-3000:]


def test_an_architecture_whose_bytes_are_wrong_leaves_nothing(copy: Path) -> None:
    config = _without_granite(copy)
    kept = {
        p: p.read_bytes() for p in (copy / "calc/engine/hfconfig/registry.py", copy / "models/configs/SOURCES.yaml", copy / "tests/data/architectures.yaml")
    }
    done = run(copy, "new_architecture.py", *ARCH_ARGS, "--config", str(config), "--bytes-per-token", "131072")  # Llama 3.1 8B's 32 layers, not Granite's 40
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("new_architecture: the new case fails (see above), so nothing was written")
    assert all(p.read_bytes() == data for p, data in kept.items())
    assert not (copy / "models/configs/granite-3.3-8b-instruct").exists()


def test_an_architecture_already_registered_or_unknown_is_refused(copy: Path) -> None:
    config = copy / "models/configs/llama-3.1-8b/config.json"
    done = run(copy, "new_architecture.py", "LlamaForCausalLM", "--like", "MistralForCausalLM", "--config", str(config), "--name", "llama-copy",
               "--model", "m", "--url", "https://example.org/c", "--bytes-per-token", "131072")  # fmt: skip
    assert done.returncode == 2 and "LlamaForCausalLM: registered already in calc/engine/hfconfig/registry.py" in done.stderr
    config = _without_granite(copy)
    done = run(copy, "new_architecture.py", *ARCH_ARGS[:2], "NoSuchForCausalLM", *ARCH_ARGS[3:], "--config", str(config), "--bytes-per-token", "1")
    assert done.returncode == 2 and "--like 'NoSuchForCausalLM': not registered, expected one of" in done.stderr
