"""The card prediction against what vLLM does at the edges a sweep of real configs found: each
answer typed back (a length, a limit, a fix) gets the verdict it promised."""

from __future__ import annotations

import pytest
from test_cli import as_json

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

