"""The card prediction against what vLLM does at the edges a sweep of real configs found: each
answer typed back (a length, a limit, a fix) gets the verdict it promised."""

from __future__ import annotations

import pytest
from test_cli import as_json, calc

CONFIGS = "models/configs"


@pytest.mark.parametrize(
    ("model", "own"),
    [
        ("exaone-3.5-2.4b-it-text2sql", 32768),  # max_position_embeddings beside a llama3 rope, which does not stretch it
        ("glm-4-9b-chat", 131072),  # seq_length, no max_position_embeddings
        ("falcon-7b-instruct", 2048),  # no length key in the file: FalconConfig's default max_position_embeddings
    ],
)
def test_a_length_above_the_derived_one_is_refused(model: str, own: int) -> None:
    """vLLM refuses a max_model_len above the length it derives from the config, rope scaling and
    every length key counted (vllm/config/model.py _get_and_verify_max_len), not only above a plain
    max_position_embeddings; the longest that fits is the derived one, and that one starts."""
    config = f"{CONFIGS}/{model}/config.json"
    at = as_json("model", config, "--gpu", "h100-sxm", "--max-model-len", str(own))
    assert at["verdict"] == "starts"
    assert at["settings_that_fit"]["max_model_len"] == own
    above = as_json("model", config, "--gpu", "h100-sxm", "--max-model-len", str(own + 1))
    assert above["verdict"] == "max_model_len"
    assert f"greater than the derived max_model_len ({own:,})" in above["verdict_reason"]
    allowed = as_json("model", config, "--gpu", "h100-sxm", "--max-model-len", str(own + 1), "--allow-long-max-model-len")
    assert allowed["verdict"] == "starts"


def test_a_refused_start_of_a_class_without_pipeline_parallel_keeps_its_verdict() -> None:
    """MiniMax-M1 (456B) on an L4 pair: its weights do not fit, and the fixes tried do not end in
    vLLM's refusal of pipeline parallel for the class (no SupportsPP): the verdict stands, no stages offered."""
    r = as_json("model", f"{CONFIGS}/minimax-m1/config.json", "--gpu", "l4", "--tensor-parallel-size", "2", "--engine-version", "0.11.0")
    assert r["verdict"] == "weights do not fit"
    assert r["weights_bytes_per_rank"] > 200 * 2**30
    assert not any("--pipeline-parallel-size" in f["flags"] for f in r["fixes"])


@pytest.mark.parametrize(
    ("model", "release", "expected"),
    [
        ("falcon3-mamba-7b-base", "0.8.5", "expected 0.10.2 or later"),  # FalconMambaForCausalLM, V0 only up to 0.10.1
        ("llama-4-scout-17b-16e-instruct", "0.8.5", "expected 0.10.x to 0.13.x or 0.19.0 and later"),  # chunked local attention
    ],
)
def test_a_release_whose_rule_was_not_read_is_named_by_its_flag(model: str, release: str, expected: str) -> None:
    """A release whose rule for the model is not modeled is refused on one line that names the flag,
    what was found and what was expected."""
    done = calc("model", f"{CONFIGS}/{model}/config.json", "--gpu", "h100-sxm", "--engine-version", release)
    assert done.returncode == 2
    assert done.stderr.startswith(f"calc: error: --engine-version: found {release}, {expected}: "), done.stderr


def test_the_shorter_length_offered_is_the_longest_that_starts() -> None:
    """Qwen2.5-VL 3B at its own 128,000 on an RTX 4090 (0.20.0 rules): the vision tower's profile is sized by
    max_model_len, so the pool grows as the length falls and the length vLLM's refusal names (the one
    the refused pool holds) is far below the longest that starts. The fix offers the longest: it
    starts, one token more does not, and it is the limit settings_that_fit prints."""
    argv = ("model", f"{CONFIGS}/qwen2.5-vl-3b/config.json", "--gpu", "rtx-4090", "--engine-version", "0.20.0")
    r = as_json(*argv)
    assert r["verdict"] == "max_model_len" and r["max_model_len"] == 128000
    longest = r["settings_that_fit"]["max_model_len"]
    assert r["largest_max_model_len"] < longest < 128000
    assert r["fixes"][0]["flags"] == f"--max-model-len {longest}"
    assert as_json(*argv, "--max-model-len", str(longest))["verdict"] == "starts"
    assert as_json(*argv, "--max-model-len", str(longest + 1))["verdict"] == "max_model_len"


@pytest.mark.parametrize(("pin", "flag"), [(("--kv-cache-memory-bytes", "20e9"), "--kv-cache-memory-bytes"), ((), "--engine-version")])
def test_a_unified_box_gate_before_the_pin_flag_is_refused(pin: tuple[str, ...], flag: str) -> None:
    """The DGX Spark's start gate takes a pinned pool, which vLLM reads from 0.11.0 only: on 0.10.2
    the pin cannot be given (and none is taken for it), so the gate is refused, as on a discrete card."""
    done = calc("model", f"{CONFIGS}/qwen3-8b/config.json", "--gpu", "dgx-spark", *pin, "--engine-version", "0.10.2")
    assert done.returncode == 2
    assert done.stderr.startswith(f"calc: error: {flag}: found "), done.stderr
    assert "expected vLLM 0.11.0 or later" in done.stderr or "expected 0.11.0 or later" in done.stderr
    assert as_json("model", f"{CONFIGS}/qwen3-8b/config.json", "--gpu", "dgx-spark", "--kv-cache-memory-bytes", "20e9", "--engine-version", "0.11.0")["gate"]


def test_auto_fits_the_length_to_the_pool_profiled_at_the_models_own() -> None:
    """--max-model-len auto: vLLM profiles at the model's own length, then fits the length to that pool
    (determine_available_memory before _auto_fit_max_model_len). Qwen2.5-VL 3B on an RTX 4090: the vision
    tower's profile at 128,000 leaves a pool that holds one request of the length the refused start
    names, and that pool stays; a length typed instead is profiled at itself and goes further."""
    argv = ("model", f"{CONFIGS}/qwen2.5-vl-3b/config.json", "--gpu", "rtx-4090")
    own = as_json(*argv)
    auto = as_json(*argv, "--max-model-len", "auto")
    assert own["max_model_len"] == 128000 and own["verdict"] == "max_model_len"
    assert auto["verdict"] == "starts" and auto["max_model_len"] == own["largest_max_model_len"] < 128000
    assert auto["available_kv_bytes"] == own["available_kv_bytes"]
    assert auto["activation_peak_bytes"] == own["activation_peak_bytes"]
    assert 1 <= auto["max_concurrency"] < 2
    typed = auto["settings_that_fit"]["max_model_len"]
    assert typed > auto["max_model_len"] and as_json(*argv, "--max-model-len", str(typed))["verdict"] == "starts"


def test_an_ignore_list_is_matched_as_each_pattern_alone() -> None:
    """The ignore list is matched as one expression (a long list took minutes, read for every tensor
    of every start tried); over GLM-4.7 NVFP4's 94 names and every tensor of the model, each name
    gets the answer the patterns give one by one (fnmatch, alone or with a suffix, or a whole dotted part)."""
    import fnmatch
    import json
    from pathlib import Path

    from calc.engine import hfconfig, weights

    text = Path(f"{CONFIGS}/glm-4.7-nvfp4/config.json").read_text()
    shape = hfconfig.shape(json.loads(text), "config.json")
    patterns = weights.quant_of(shape).ignore
    assert len(patterns) == 94

    def one_by_one(name: str) -> bool:
        for p in (g for pattern in patterns for g in weights._globs(pattern)):
            if fnmatch.fnmatch(name, p) or fnmatch.fnmatch(name, p + ".*") or ("*" not in p and f".{p}." in f".{name}."):
                return True
        return False

    paths = [t.path for t in weights.tensors(shape)]
    answers = [weights._ignored(p, patterns) for p in paths]
    assert answers == [one_by_one(p) or one_by_one(p.replace(".shared_expert.", ".shared_experts.")) for p in paths]
    assert any(answers) and not all(answers)
