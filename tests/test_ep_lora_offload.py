"""LoRA's expert slots and --cpu-offload-gb under expert and data parallel: both follow the rank's
own experts (vllm/lora/layers/fused_moe.py local_num_experts and intermediate_size_per_partition;
vllm/model_executor/offloader/uva.py moving the rank's parameters whole), not TP's split."""

from __future__ import annotations

import pytest
from conftest import cli_json
from test_cli import assert_one_error_line
from test_parallel_probes import calc

QWEN3_30B = "models/configs/qwen3-30b-a3b/config.json"  # 48 MoE layers of 128 experts, hidden 2048, expert intermediate 768, bf16
DSV2_LITE = "models/configs/deepseek-v2-lite-chat/config.json"  # 26 MoE layers of 64 experts, hidden 2048, expert intermediate 1408
RANK = 16


def _model(capsys: pytest.CaptureFixture[str], config: str, *flags: str) -> dict:
    return cli_json(["model", config, "--max-model-len", "4096", *flags, "--json"], capsys)


def _expert_slot(experts: int, hidden: int, intermediate: int) -> int:
    """One slot of one MoE layer in FusedMoEWithLoRA's buffers, values: w13 A (two slices of
    experts x rank x hidden), w13 B (two of experts x intermediate x rank), w2 A (experts x rank
    x intermediate), w2 B (experts x hidden x rank)."""
    return experts * RANK * (2 * hidden + 2 * intermediate + intermediate + hidden)


def test_lora_expert_slots_follow_the_ranks_experts(capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3-30B-A3B at TP 2: without EP every rank holds all 128 experts, each intermediate halved;
    with EP 64 experts whole. The slot differs by exactly the MoE buffers' difference."""
    tp = _model(capsys, QWEN3_30B, "--tp", "2", "--enable-lora")["lora"]
    ep = _model(capsys, QWEN3_30B, "--tp", "2", "--enable-expert-parallel", "--enable-lora")["lora"]
    moe_tp = 48 * _expert_slot(128, 2048, 768 // 2) * 2
    moe_ep = 48 * _expert_slot(64, 2048, 768) * 2
    assert tp["slot_bytes"] - ep["slot_bytes"] == moe_tp - moe_ep == 603_979_776
    old = _model(capsys, QWEN3_30B, "--tp", "2", "--enable-lora", "--engine-version", "0.11.0")["lora"]
    assert tp["slot_bytes"] - old["slot_bytes"] == moe_tp  # 0.11.0 wraps no expert: no MoE slots
    assert old["modules"] == tp["modules"] - 2 * 48


def test_lora_slots_on_the_rank_with_the_most_experts(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-V2-Lite over DP 3 with EP: 64 experts dealt 22, 21, 21; the slots are rank 0's 22,
    each expert's intermediate whole; without EP each rank holds all 64, intermediate / 3."""
    ep = _model(capsys, DSV2_LITE, "--data-parallel-size", "3", "--enable-expert-parallel", "--enable-lora")
    no_ep = _model(capsys, DSV2_LITE, "--data-parallel-size", "2", "--enable-lora")
    dense = ep["lora"]["slot_bytes"] - 26 * _expert_slot(22, 2048, 1408) * 2
    assert dense == no_ep["lora"]["slot_bytes"] - 26 * _expert_slot(64, 2048, 1408 // 2) * 2  # attention, shared experts, embedding: TP 1 in both
    assert ep["lora"]["host_bytes"] == 3 * ep["lora"]["host_bytes_per_worker"]  # every worker of every replica keeps its adapters


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--tp", "2", "--enable-expert-parallel", "--engine-version", "0.20.0"],
            "--enable-lora: found with --enable-expert-parallel on vLLM 0.20, expected vLLM 0.21.0 or later, or no expert parallel",
        ),
        (
            ["--tp", "2", "--data-parallel-size", "2", "--enable-expert-parallel"],
            "--enable-lora: found with expert parallel at TP 2 x DP 2, the sequence-parallel MoE",
        ),
    ],
)
def test_what_vllm_refuses_of_lora_under_expert_parallel(flags: list[str], message: str) -> None:
    assert_one_error_line(calc("model", QWEN3_30B, "--max-model-len", "4096", *flags, "--enable-lora"), message)


def test_lora_under_expert_parallel_from_0_21_and_before_moe_lora(capsys: pytest.CaptureFixture[str]) -> None:
    assert _model(capsys, QWEN3_30B, "--tp", "2", "--enable-expert-parallel", "--enable-lora", "--engine-version", "0.21.0")["lora"] is not None
    old = _model(capsys, QWEN3_30B, "--tp", "2", "--enable-expert-parallel", "--enable-lora", "--engine-version", "0.11.0")["lora"]
    assert old["slot_bytes"] == _model(capsys, QWEN3_30B, "--tp", "2", "--enable-lora", "--engine-version", "0.11.0")["lora"]["slot_bytes"]


def test_offload_moves_each_ranks_own_experts(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-V2-Lite over DP 3 with EP, 0.5 GiB a rank: the budget runs into layer 1's experts
    parameter, which moves whole: 22 experts on rank 0, 21 on the others, one expert
    (3 x 1408 x 2048 x 2 B) apart; all the workers together move the three ranks' figures."""
    o = _model(capsys, DSV2_LITE, "--data-parallel-size", "3", "--enable-expert-parallel", "--cpu-offload-gb", "0.5")["offload"]
    expert = 3 * 1408 * 2048 * 2
    assert o["offloaded_bytes_per_rank"] == 570_435_584
    assert o["offloaded_bytes"] == 3 * 570_435_584 - 2 * expert
    eplb = _model(capsys, QWEN3_30B, "--tp", "2", "--enable-expert-parallel", "--enable-eplb", "--eplb-config", '{"num_redundant_experts": 2}',
                  "--cpu-offload-gb", "1")["offload"]  # fmt: skip
    plain = _model(capsys, QWEN3_30B, "--tp", "2", "--enable-expert-parallel", "--cpu-offload-gb", "1")["offload"]
    # 1 GiB moves two layers whole, their experts parameters among them: each one expert (3 x 768 x 2048 x 2 B) heavier with 65 a rank
    assert plain["offloaded_bytes_per_rank"] == 1_246_766_080
    assert eplb["offloaded_bytes_per_rank"] - plain["offloaded_bytes_per_rank"] == 2 * 3 * 768 * 2048 * 2


def test_on_a_card_the_pool_takes_the_lora_slots_of_the_ranks_own_experts(capsys: pytest.CaptureFixture[str]) -> None:
    """Under expert parallel the card's pool (calc/engine/predict/) takes LoRA's slots as the rank
    with the most experts holds them (vllm/lora/layers/fused_moe.py: local_num_experts, the
    intermediate whole), the same figure as the rank's own lora report, not TP's split of every
    expert; the pool falls by exactly the slots, and the fewer-slots fix is figured the same way."""
    args = (QWEN3_30B, "--tp", "2", "--enable-expert-parallel", "--gpu", "h100-sxm")
    r = _model(capsys, *args, "--enable-lora")
    bare = _model(capsys, *args)
    assert r["terms"]["lora"]["bytes"] == r["lora"]["device_bytes_per_rank"] == 863_330_304
    assert bare["available_kv_bytes"] - r["available_kv_bytes"] == 863_330_304
    assert not any("takes LoRA's slots as TP" in n for n in r["notes"])
    four = _model(capsys, *args, "--enable-lora", "--max-loras", "4")
    assert four["terms"]["lora"]["bytes"] == 4 * 863_330_304
