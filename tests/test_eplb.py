"""EPLB's redundant experts (calc/engine/ranks.py): under --enable-eplb the MoE layers are built with
experts + redundant physical experts, dealt evenly over the EP ranks (vllm/model_executor/layers/
fused_moe/layer.py, 0.10.1 to 0.33.0), spelled --num-redundant-experts up to 0.11.0 and
--eplb-config '{"num_redundant_experts": N}' from 0.11.0 (vllm/engine/arg_utils.py, vllm/config/parallel.py)."""

from __future__ import annotations

import pytest
from conftest import cli_json

from calc.engine import kvlayout, ranks
from calc.units import GiB, InputError

QWEN3_30B = "models/configs/qwen3-30b-a3b/config.json"
KIMI_K2 = "models/configs/kimi-k2-instruct/config.json"
EXPERT_FP8 = 3 * 7168 * 2048 + 3 * (7168 // 128) * (2048 // 128) * 4  # a DeepSeek-V3-shaped FP8 expert with its block scales


def _model(capsys: pytest.CaptureFixture[str], config: str, *flags: str) -> dict:
    return cli_json(["model", config, "--max-model-len", "4096", *flags, "--json"], capsys)


def test_each_rank_holds_experts_plus_redundant_over_ep(capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3-30B-A3B at TP 2 with EP: 128 experts, 64 a rank; 32 redundant make 160, 80 a rank:
    16 more bf16 experts (3 x 2048 x 768 x 2 B) in each of its 48 MoE layers."""
    plain = _model(capsys, QWEN3_30B, "--tp", "2", "--enable-expert-parallel")
    eplb = _model(capsys, QWEN3_30B, "--tp", "2", "--enable-expert-parallel", "--enable-eplb", "--eplb-config", '{"num_redundant_experts": 32}')
    assert [e["local_experts"] for e in plain["ranks"][0]["expert_ranks"]] == [64, 64]
    assert [e["local_experts"] for e in eplb["ranks"][0]["expert_ranks"]] == [80, 80]
    assert eplb["weights_bytes_per_rank"] - plain["weights_bytes_per_rank"] == 16 * 48 * 3 * 2048 * 768 * 2
    assert any(n.startswith("EPLB with 32 redundant experts: 128 + 32 = 160 physical experts a layer, 80 on each of the 2 EP ranks") for n in eplb["notes"])
    rearranged = _model(capsys, QWEN3_30B, "--tp", "2", "--enable-expert-parallel", "--enable-eplb")
    assert rearranged["weights_bytes_per_rank"] == plain["weights_bytes_per_rank"]  # no copies: the experts only move


def test_one_redundant_expert_a_rank_costs_what_vllms_docs_say(capsys: pytest.CaptureFixture[str]) -> None:
    """vLLM's expert-parallel deployment guide (docs/serving/expert_parallel_deployment.md, added by
    https://github.com/vllm-project/vllm/pull/24537): one redundant expert per rank costs
    "approximately 2.4 GB" on DeepSeek-V3, NUM_MOE_LAYERS x BYTES_PER_EXPERT. Kimi K2 has DeepSeek-V3's
    FP8 expert (hidden 7168, expert intermediate 2048, 128 x 128 blocks) in 60 MoE layers: 384 experts
    over EP 16 are 24 a rank, 16 redundant make 25; DeepSeek-V3's 58 MoE layers of that expert are 2.38 GiB."""
    flags = ("--tp", "8", "--data-parallel-size", "2", "--enable-expert-parallel")
    plain = _model(capsys, KIMI_K2, *flags)
    eplb = _model(capsys, KIMI_K2, *flags, "--enable-eplb", "--eplb-config", '{"num_redundant_experts": 16}')
    assert (plain["ranks"][0]["local_experts"], eplb["ranks"][0]["local_experts"]) == (24, 25)
    extra = eplb["weights_bytes_per_rank"] - plain["weights_bytes_per_rank"]
    assert extra == 60 * EXPERT_FP8
    assert round(58 * EXPERT_FP8 / GiB, 1) == 2.4


def test_the_older_spelling_in_its_releases(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ("--tp", "2", "--enable-expert-parallel", "--enable-eplb")
    old = _model(capsys, QWEN3_30B, *flags, "--num-redundant-experts", "32", "--engine-version", "0.10.1")
    both = _model(capsys, QWEN3_30B, *flags, "--num-redundant-experts", "32", "--engine-version", "0.11.0")
    new = _model(capsys, QWEN3_30B, *flags, "--eplb-config", '{"num_redundant_experts": 32}', "--engine-version", "0.11.0")
    assert old["ranks"][0]["local_experts"] == both["ranks"][0]["local_experts"] == new["ranks"][0]["local_experts"] == 80


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--enable-eplb", "--num-redundant-experts", "32"], "--num-redundant-experts: found with vLLM v0.32.0 to v0.33.x, expected --eplb-config"),
        (
            ["--enable-eplb", "--eplb-config", '{"num_redundant_experts": 32}', "--engine-version", "0.10.1"],
            "--eplb-config: found with vLLM 0.10.1, expected --num-redundant-experts N",
        ),
        (["--eplb-config", '{"num_redundant_experts": 32}'], "--eplb-config: found 32 redundant experts without --enable-eplb"),
        (["--num-redundant-experts", "8", "--engine-version", "0.11.0"], "--num-redundant-experts: found 8 without --enable-eplb"),
        (
            ["--enable-eplb", "--eplb-config", '{"num_redundant_experts": 3}'],
            "--enable-eplb: 128 experts + 3 redundant = 131 over 2 EP ranks, expected a sum the ranks divide",
        ),
        (["--enable-eplb", "--eplb-config", '{"num_redundant_experts": -1}'], "--eplb-config: found num_redundant_experts -1, expected a whole number from 0"),
        (["--enable-eplb", "--eplb-config", "[32]"], "--eplb-config: found list, expected a JSON object"),
        (["--enable-eplb", "--eplb-config", "{num"], "--eplb-config: found text that is not JSON"),
        (["--enable-eplb", "--engine-version", "0.8.5"], "--enable-eplb: found with vLLM 0.8.5, expected 0.10.1 or later"),
    ],
)
def test_what_vllm_refuses_of_eplb(flags: list[str], message: str) -> None:
    from test_cli import assert_one_error_line
    from test_parallel_probes import calc

    assert_one_error_line(calc("model", QWEN3_30B, "--max-model-len", "4096", "--tp", "2", "--enable-expert-parallel", *flags), message)


def test_eplb_needs_expert_parallel_over_more_than_one_rank() -> None:
    from calc.engine import hfconfig

    shape = hfconfig.shape(hfconfig.load(open(QWEN3_30B).read(), QWEN3_30B), QWEN3_30B)
    rules = kvlayout.version(None)
    with pytest.raises(InputError, match="--enable-eplb: found without --enable-expert-parallel"):
        ranks.check_parallel(shape, ranks.Parallel(2, 1, False, True, 0), rules)
    with pytest.raises(InputError, match=r"--enable-eplb: found at TP x DP = 1"):
        ranks.check_parallel(shape, ranks.Parallel(1, 1, True, True, 0), rules)
