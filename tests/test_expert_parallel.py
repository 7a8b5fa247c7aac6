"""Expert and data parallel (calc/engine/ranks.py): the routed experts each rank holds as vLLM's
determine_expert_map deals them, the experts split over TP x DP ranks, the replicas' own pools,
MLA's data parallel attention; checked against the public data- and expert-parallel logs."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import cli_json as _json
from conftest import config_shape as _shape

from calc.engine import kvlayout, ranks, weights
from calc.present import cli
from calc.units import GiB, InputError

NEWEST = kvlayout.version(None)
LOGS = Path(__file__).resolve().parent.parent / "logs" / "public"
LITE = "models/configs/deepseek-v2-lite-chat/config.json"


# --- how many experts each EP rank holds ------------------------------------------------------------


def test_the_remainder_goes_to_the_first_ranks() -> None:
    """vLLM pull request 21497's own example: 30 experts over EP 8 were [3, 3, 3, 3, 3, 3, 3, 9]
    and are [4, 4, 4, 4, 4, 4, 3, 3] (determine_expert_map, 0.10.1 and later)."""
    assert ranks.expert_counts(30, 8, NEWEST) == (4, 4, 4, 4, 4, 4, 3, 3)
    assert ranks.expert_counts(30, 8, kvlayout.version("0.10.1")) == (4, 4, 4, 4, 4, 4, 3, 3)
    assert ranks.expert_counts(30, 8, kvlayout.version("0.8.5")) == (3, 3, 3, 3, 3, 3, 3, 9)
    assert ranks.expert_counts(64, 3, NEWEST) == (22, 21, 21)
    assert ranks.expert_counts(288, 3, NEWEST) == (96, 96, 96)  # "[EP Rank 0/3] ... Local/global number of experts: 96/288"
    assert ranks.expert_counts(256, 2, NEWEST) == (128, 128)  # "[EP Rank 0/2] ... 128/256" (vLLM pull request 37505)


def test_more_ranks_than_experts_is_refused() -> None:
    with pytest.raises(InputError, match="9 EP ranks .* for 8 experts"):
        ranks.expert_counts(8, 9, NEWEST)


# --- each rank's weights ----------------------------------------------------------------------------


def _expert_bytes(shape_name: str, tp: int) -> int:
    shape = _shape(shape_name)
    quant = weights.quant_of(shape)
    return sum(weights.tensor_bytes(t, quant, shape.dtype_bytes) for t in weights.tensors(shape, tp) if ".experts." in t.path)


def test_ep_deals_the_experts_whole() -> None:
    """DeepSeek-V2-Lite (64 routed experts of 1408 over 26 MoE layers) at DP 4 with EP: each rank
    holds 16 experts whole, a quarter of the routed bytes, and the attention, embedding, head,
    dense first layer and shared experts of TP 1 (whole)."""
    shape = _shape("deepseek-v2-lite-chat")
    every = weights.per_rank(shape, 1).model
    routed = _expert_bytes("deepseek-v2-lite-chat", 1)
    assert routed == 26 * 64 * 3 * 2048 * 1408 * 2
    group = ranks.expert_ranks(shape, ranks.Parallel(1, 4, True), NEWEST)[0]
    assert [e.local_experts for e in group] == [16] * 4
    assert [e.dp_rank for e in group] == [0, 1, 2, 3] and [e.tp_rank for e in group] == [0] * 4
    assert all(e.weights_bytes == every - routed + routed // 4 for e in group)


def test_dp_without_ep_divides_each_expert() -> None:
    """Without --enable-expert-parallel the experts are TP-sharded over TP x DP ranks
    (flatten_tp_across_dp): every expert on every rank, each a quarter as wide; the bytes match EP's."""
    shape = _shape("deepseek-v2-lite-chat")
    every = weights.per_rank(shape, 1).model
    routed = _expert_bytes("deepseek-v2-lite-chat", 1)
    group = ranks.expert_ranks(shape, ranks.Parallel(1, 4, False), NEWEST)[0]
    assert [e.local_experts for e in group] == [64] * 4
    assert group[0].weights_bytes == every - routed + _expert_bytes("deepseek-v2-lite-chat", 4)
    with pytest.raises(InputError, match="intermediate size 1408 does not divide over TP x DP = 3"):
        ranks.check_parallel(shape, ranks.Parallel(1, 3, False), NEWEST)
    ranks.check_parallel(shape, ranks.Parallel(1, 3, True), NEWEST)  # EP deals whole experts: no division


def test_uneven_experts_make_uneven_ranks() -> None:
    """EP 3 over 64 experts: rank 0 holds 22, ranks 1 and 2 hold 21: one expert of 26 layers more."""
    shape = _shape("deepseek-v2-lite-chat")
    group = ranks.expert_ranks(shape, ranks.Parallel(1, 3, True), NEWEST)[0]
    assert [e.local_experts for e in group] == [22, 21, 21]
    one_expert = 26 * 3 * 2048 * 1408 * 2
    assert group[0].weights_bytes - group[1].weights_bytes == one_expert == group[0].weights_bytes - group[2].weights_bytes
    old = ranks.expert_ranks(shape, ranks.Parallel(1, 3, True), kvlayout.version("0.13.0"))[0]
    assert [e.local_experts for e in old] == [22, 21, 21]


def test_shared_experts_replicated_under_sequence_parallel_moe() -> None:
    """EP with TP 2 and DP 2 on DeepSeek (0.11.0 on): the shared experts are whole on every rank;
    at DP 1 they are divided over the two TP ranks."""
    shape = _shape("deepseek-v2-lite-chat")
    shared = 26 * 3 * 2048 * (2 * 1408) * 2
    both = ranks.expert_ranks(shape, ranks.Parallel(2, 2, True), NEWEST)[0][0].weights_bytes
    assert ranks.shared_replicated(shape, ranks.Parallel(2, 2, True), NEWEST)
    assert not ranks.shared_replicated(shape, ranks.Parallel(2, 1, True), NEWEST)
    tp_only = ranks.expert_ranks(shape, ranks.Parallel(2, 2, True), kvlayout.version("0.10.1"))[0][0].weights_bytes
    assert both - tp_only == shared // 2


def test_ep_of_a_dense_model_is_refused() -> None:
    with pytest.raises(InputError, match="expected an MoE model"):
        ranks.check_parallel(_shape("qwen3-8b"), ranks.Parallel(2, 1, True), NEWEST)


# --- the command line -------------------------------------------------------------------------------


def test_model_json_lists_every_rank(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(
        ["model", LITE, "--tensor-parallel-size", "1", "--data-parallel-size", "3", "--enable-expert-parallel", "--max-model-len", "4096", "--json"], capsys
    )
    assert r["dp"] == 3 and r["ep_size"] == 3 and r["world_size"] == 3
    (stage,) = r["ranks"]
    assert [e["local_experts"] for e in stage["expert_ranks"]] == [22, 21, 21]
    assert stage["local_experts"] == 22 and r["weights_bytes_per_rank"] == stage["expert_ranks"][0]["weights_bytes"] == stage["weights_bytes"]
    assert r["kv_bytes_per_token"] == 27 * 576 * 2  # the latent, whole on every rank


def test_pp_with_ep(capsys: pytest.CaptureFixture[str]) -> None:
    """PP 2 with EP over TP 2 x DP 3: each stage's six ranks deal their own layers' experts."""
    r = _json(["model", LITE, "--tp", "2", "--pp", "2", "--data-parallel-size", "3", "--enable-expert-parallel", "--max-model-len", "4096", "--json"], capsys)
    assert r["world_size"] == 12 and r["ep_size"] == 6
    assert [s["layers"] for s in r["ranks"]] == [14, 13]
    assert [[e["local_experts"] for e in s["expert_ranks"]] for s in r["ranks"]] == [[11, 11, 11, 11, 10, 10]] * 2


def test_text_groups_alike_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["model", LITE, "--data-parallel-size", "3", "--enable-expert-parallel", "--max-model-len", "4096", "--pool", "10GiB"]) == 0
    out = capsys.readouterr().out
    assert "Ranks: 3 = TP 1 x PP 1 x DP 3; expert parallel over 3 ranks" in out
    assert "rank 0: 22 routed experts a layer" in out and "ranks 1-2: 21 routed experts a layer" in out
    assert "uneven: 22 on rank 0, 21 on others" in out


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--data-parallel-size", "0"], "--data-parallel-size: found 0"),
        (["--data-parallel-size", "3"], "intermediate size 1408 does not divide over TP x DP = 3"),
        (["--tp", "16", "--data-parallel-size", "8", "--enable-expert-parallel"], "128 EP ranks (TP x DP) for 64 experts"),
    ],
)
def test_bad_parallel_is_one_line(extra: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["model", LITE, "--max-model-len", "4096", *extra])
    out, err = capsys.readouterr()
    assert status == 2 and out == "" and err.count("\n") == 1 and fragment in err, err


def test_ep_on_a_dense_model_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["model", "models/configs/qwen3-8b/config.json", "--tp", "2", "--enable-expert-parallel", "--max-model-len", "4096"]) == 2
    assert "expected an MoE model" in capsys.readouterr().err


# --- against the public logs ------------------------------------------------------------------------

_DP_LINE = re.compile(r"\(EngineCore_(\d+) pid=\d+\).*(?:Available KV cache memory: ([\d.]+) GiB|GPU KV cache size: ([\d,]+) tokens)")


def test_each_replica_sizes_its_own_pool() -> None:
    """logs/public/50 (vLLM 0.10.1, DP 4 with EP, TP 1, an MoE of 27 MLA layers): each EngineCore
    prints its own pool and token count, and they differ (28.47 GiB and 982,928 tokens on ranks 0 and
    3, 28.33 GiB and 978,000 / 978,064 on 2 and 1): the replicas keep their own blocks, no smallest
    is taken over them. Each count is the model's: DeepSeek-V2-Lite's latent, 27 x 576 x 2 = 31,104
    B a token, blocks of 16, holds the logged tokens inside the pool's printed interval."""
    pools: dict[int, Fraction] = {}
    tokens: dict[int, int] = {}
    for line in (LOGS / "50-v0101-dp4-enginecore-n-per-rank-kv.log").read_text().splitlines():
        m = _DP_LINE.search(line)
        if m and m[2]:
            pools[int(m[1])] = Fraction(m[2])
        elif m and m[3]:
            tokens[int(m[1])] = int(m[3].replace(",", ""))
    assert sorted(pools) == sorted(tokens) == [0, 1, 2, 3]
    assert len(set(tokens.values())) == 3  # not one count for all: no smallest over the replicas
    argv = ["model", LITE, "--data-parallel-size", "4", "--enable-expert-parallel", "--max-model-len", "4096", "--block-size", "16",
            "--engine-version", "0.10.1", "--json"]  # fmt: skip
    for rank, printed in pools.items():
        low = int((printed - Fraction(5, 1000)) * GiB)
        high = int((printed + Fraction(5, 1000)) * GiB) - 1
        lo = cli_tokens([*argv, "--pool", str(low)])
        hi = cli_tokens([*argv, "--pool", str(high)])
        assert lo <= tokens[rank] <= hi, (rank, lo, tokens[rank], hi)


def cli_tokens(argv: list[str]) -> int:
    import io
    import json
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):
        assert cli.main(argv) == 0
    r = json.loads(buf.getvalue())
    assert r["kv_bytes_per_token"] == 31104 and r["kv_tokens_all_replicas"] == 4 * r["kv_tokens"]
    return int(r["kv_tokens"])


def test_ep_rank_is_the_flattened_rank() -> None:
    """logs/public/51 (TP 8 with EP, DP 1): the workers are tagged Worker_DP0_TPn_EPn, the EP rank
    being dp_rank x TP + tp_rank, as the ranks here are numbered."""
    seen = set(re.findall(r"Worker_DP(\d+)_TP(\d+)_EP(\d+)", (LOGS / "51-v011-tp8-ep-worker-dp0-tp7-ep7-available-kv.log").read_text()))
    assert len(seen) == 8
    layout = ranks.expert_ranks(_shape("deepseek-v2-lite-chat"), ranks.Parallel(8, 1, True), NEWEST)[0]
    by_place = {(e.dp_rank, e.tp_rank): e.ep_rank for e in layout}
    for dp, tp, ep in seen:
        assert by_place[(int(dp), int(tp))] == int(ep)


def test_a_card_predicts_from_the_heaviest_rank(capsys: pytest.CaptureFixture[str]) -> None:
    """With a card the pool is the rank with the most experts' (its weights less); a larger TP is not
    offered as a fix, since it would be figured without the expert split."""
    argv = ["model", "models/configs/qwen3-30b-a3b/config.json", "--tp", "2", "--data-parallel-size", "2", "--enable-expert-parallel",
            "--total-memory", "21 GiB", "--max-model-len", "32768", "--json"]  # fmt: skip
    r = _json(argv, capsys)
    assert r["ep_size"] == 4 and r["ranks"][0]["local_experts"] == 32
    assert r["terms"]["weights"]["bytes"] == r["weights_bytes_per_rank"] == r["ranks"][0]["weights_bytes"]
    assert r["verdict"] == "max_model_len" and r["fixes"]
    assert not any("tensor-parallel-size" in f["flags"] or "pipeline-parallel-size" in f["flags"] for f in r["fixes"])
    assert any("all-to-all" in n for n in r["notes"])


def test_a_dense_models_replicas_are_whole_copies(capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3 8B at DP 2: each replica holds the whole model at TP 1 and its own pool."""
    one = _json(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--pool", "10GiB", "--json"], capsys)
    two = _json(["model", "models/configs/qwen3-8b/config.json", "--data-parallel-size", "2", "--max-model-len", "8192", "--pool", "10GiB", "--json"], capsys)
    assert two["weights_bytes_per_rank"] == one["weights_bytes_per_rank"] and two["kv_tokens"] == one["kv_tokens"]
    assert two["kv_tokens_all_replicas"] == 2 * one["kv_tokens"] and two["world_size"] == 2 and two["ep_size"] == 1
    assert "expert_ranks" not in two["ranks"][0]


def test_mla_under_tp_holds_the_same_latent_on_every_rank(capsys: pytest.CaptureFixture[str]) -> None:
    """DeepSeek-V2-Lite at TP 4 and at DP 4 (TP 1): the same latent a token on every rank; at TP
    the four ranks hold one set of tokens, at DP four, and the attention is whole on each DP rank."""
    tp = _json(["model", LITE, "--tp", "4", "--max-model-len", "4096", "--pool", "10GiB", "--json"], capsys)
    dp = _json(["model", LITE, "--data-parallel-size", "4", "--enable-expert-parallel", "--max-model-len", "4096", "--pool", "10GiB", "--json"], capsys)
    assert tp["kv_bytes_per_token"] == dp["kv_bytes_per_token"] == 27 * 576 * 2
    assert tp["kv_tokens"] == dp["kv_tokens"] and dp["kv_tokens_all_replicas"] == 4 * tp["kv_tokens"]
    assert any("data parallel attention" in n for n in dp["notes"])


def test_ep_at_tp_1_before_0_9_keeps_the_experts_divided() -> None:
    """Up to 0.8.5 EP needs TP > 1 (fused_moe/layer.py: `enable_expert_parallel and self.tp_size > 1`):
    at TP 1 and DP 4 every rank holds all 64 experts, each a quarter wide; at DP 3 they do not divide."""
    shape, old = _shape("deepseek-v2-lite-chat"), kvlayout.version("0.8.5")
    assert not ranks.uses_ep(ranks.Parallel(1, 4, True), old) and ranks.uses_ep(ranks.Parallel(2, 2, True), old)
    group = ranks.expert_ranks(shape, ranks.Parallel(1, 4, True), old)[0]
    assert [e.local_experts for e in group] == [64] * 4
    assert group[0].weights_bytes == ranks.expert_ranks(shape, ranks.Parallel(1, 4, False), NEWEST)[0][0].weights_bytes
    with pytest.raises(InputError, match="does not divide over TP x DP = 3"):
        ranks.check_parallel(shape, ranks.Parallel(1, 3, True), old)
