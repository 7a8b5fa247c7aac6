"""After the start (calc/engine/afterstart.py): what a prefill at max_model_len takes beyond the profile
run, which measured max_num_batched_tokens fresh tokens and no context."""

from __future__ import annotations

import pytest
from conftest import cli_json
from conftest import config_shape as _shape

from calc.engine import afterstart
from calc.units import GiB, MiB


def test_mla_context_pass_of_the_last_chunk() -> None:
    """DeepSeek-V2-Lite (16 heads of 128 nope + 64 rope, v 128, kv_lora 512), TP 1, 32,768
    tokens, 8,192-token chunks: the context chunk is min(max(8 x 32,768, 4 x 256 x 64), 65,536)
    = 65,536 tokens, the last chunk's context 24,576 of them: kv_nope 24,576 x 16 x 256 x 2 B,
    k 24,576 x 16 x 192 x 2 B, and the partial outputs 2 x 8,192 x 16 x (128 x 2 + 4) B; the
    gather workspace 65,536 x 576 x 2 B comes before serving."""
    e = afterstart.mla_context(_shape("deepseek-v2-lite-chat"), 1, 32768, 256, 64, 8192)
    assert dict(e.parts) == {
        "up-projected context (kv_nope)": 24576 * 16 * 256 * 2,
        "k for the context (k_nope with k_pe)": 24576 * 16 * 192 * 2,
        "partial outputs and log-sum-exp": 2 * 8192 * 16 * 260,
    }
    assert e.bytes == 420_478_976 and e.after_profile_bytes == 65536 * 576 * 2 == 75_497_472
    # a prompt that fits one chunk has no context pass
    assert afterstart.mla_context(_shape("deepseek-v2-lite-chat"), 1, 8192, 256, 64, 8192).bytes == 0
    # Kimi K2 at TP 8 (64 heads: 8 a rank), 131,072 tokens: one full 65,536-token context pass
    k = afterstart.mla_context(_shape("kimi-k2-instruct"), 8, 131072, 256, 64, 8192)
    assert dict(k.parts)["up-projected context (kv_nope)"] == 65536 * 8 * 256 * 2 == 256 * MiB


def test_sparse_indexer_logits_by_release() -> None:
    """8,192-token chunks at 262,144 tokens: 8 GiB of float32 logits in one piece before 0.19.0,
    less the 256 MiB the profile measured; from 0.19.0 at most 512 MiB a sub-chunk."""
    old = afterstart.sparse_indexer_logits(8192, 262144, (0, 18))
    assert old.bytes == 8192 * 262144 * 4 - 8192 * 8192 * 4 == 8 * GiB - 256 * MiB
    new = afterstart.sparse_indexer_logits(8192, 262144, (0, 19))
    assert new.bytes == 512 * MiB - 256 * MiB and "VLLM_SPARSE_INDEXER_MAX_LOGITS_MB" in new.source
    assert afterstart.sparse_indexer_logits(8192, 262144, (0, 33), budget_mib=64).bytes == 0  # the budget below the profile's


def test_left_after_start_against_the_worst_prefill(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["model", "models/configs/deepseek-v2-lite-chat/config.json", "--max-model-len", "32768", "--json"]
    short = cli_json([*base, "--left-after-start", "0.3 GiB"], capsys)["worst_prefill"]
    assert short["bytes"] == 420_478_976 and short["fits"] is False
    # 420,478,976 B = 0.3916 GiB rounded up; 0.3 GiB typed is 322,122,547 B, 0.2999 GiB, rounded down
    assert short["note"] == (
        "a prefill at max_model_len takes 0.40 GiB a rank beyond the profile run; 0.29 GiB is left after "
        "the start: 0.11 GiB short, the long prefill will fail after a clean start"
    )
    fits = cli_json([*base, "--left-after-start", "1 GiB"], capsys)["worst_prefill"]
    assert fits["fits"] is True and fits["note"].endswith("is left after the start: it fits")
    plain = cli_json(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "32768", "--json"], capsys)["worst_prefill"]
    assert plain["bytes"] == 0 and plain["source"].startswith("plain attention")


def test_indexer_logits_churn_on_a_unified_box() -> None:
    """vllm-project/vllm pull request 58068 on issue 55569 (GLM-5.3-Flash, two DGX Sparks, 4,608-token
    chunks, the indexer's kpool 4): a chunk's logits pass the 512 MiB budget at "about 116k
    tokens": 512 MiB / (4 x 4,608) = 29,127 pooled positions = 116,508 tokens. Every chunk's logits
    a new segment, a 231K prompt leaves 19.43 GiB in the allocator over 51 chunks where the 115K
    prompt that works leaves 6.43 GiB over 25."""
    assert afterstart.budget_crossing(4608, 512, 4) == 116_508
    works = afterstart.sparse_indexer_churn(4608, 115_000, (0, 33), 512, 4)
    dies = afterstart.sparse_indexer_churn(4608, 231_000, (0, 33), 512, 4)
    assert dict(works.parts)["chunks"] == 25 and dict(dies.parts)["chunks"] == 51
    assert round(works.bytes / GiB, 2) == 6.43 and round(dies.bytes / GiB, 2) == 19.43
    # the first chunk: 4,608 x (4,608 // 4) x 4 B, under the budget
    assert afterstart.sparse_indexer_churn(4608, 4608, (0, 33), 512, 4).bytes == 4608 * 1152 * 4
    # before 0.19.0 nothing caps a launch: the chunks past the crossing take their whole width
    assert afterstart.sparse_indexer_churn(4608, 231_000, (0, 18), 512, 4).bytes > dies.bytes


def test_verdict_rounds_on_the_safe_side() -> None:
    """One byte short at about 1.005 GiB: to the nearest hundredth both sides print 1.01 GiB and a
    shortfall of 0.00 GiB; the cost is rounded up and what is left down, the shortfall worked from
    them as printed (1.01 - 1.00)."""
    left = GiB + 5 * GiB // 1000
    extra = afterstart.Extra(left + 1, (), "")
    fits, said = afterstart.verdict(left, extra)
    assert fits is False
    assert said == (
        "a prefill at max_model_len takes 1.01 GiB a rank beyond the profile run; 1.00 GiB is left after "
        "the start: 0.01 GiB short, the long prefill will fail after a clean start"
    )
    fits, said = afterstart.verdict(left + 1, extra)
    assert fits is True and said.startswith("a prefill at max_model_len takes 1.01 GiB a rank beyond the profile run; 1.01 GiB is left")
    # it fits by 10 B across the half-hundredth: to the nearest, 1.00 taken and 1.01 left; rounded
    # up and down the two would have read 1.01 taken and 1.00 left beside "it fits"
    above = GiB + 5 * GiB // 1000 + 10
    fits, said = afterstart.verdict(above, afterstart.Extra(above - 10, (), ""))
    assert fits is True and said == ("a prefill at max_model_len takes 1.00 GiB a rank beyond the profile run; 1.01 GiB is left after the start: it fits")
