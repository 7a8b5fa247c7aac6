"""Pipeline parallel (calc/engine/ranks.py): the layers each stage holds as vLLM's get_pp_indices splits
them, the embedding and head placed as its model code places them, each stage's weights and KV
from its own layers, the smallest stage's blocks deciding, on real configs."""

from __future__ import annotations

from fractions import Fraction

import pytest
from conftest import cli_json as _json
from conftest import config_shape as _shape

from calc.engine import kvlayout, predict, ranks, weights
from calc.present import cli
from calc.units import GiB, InputError

NEWEST = kvlayout.version(None)


# --- the partition, as vllm/distributed/utils.py get_pp_indices gives it ---------------------------


def rope(positions: int, rotary_dim: int) -> int:
    """A rotary embedding's cos/sin cache, built at load on every rank (and every pipeline stage)
    beside the weights, in the model's dtype (rotary_embedding/base.py, register_buffer, 0.20.0)."""
    return positions * rotary_dim * 2


@pytest.mark.parametrize(
    ("layers", "pp", "expected"),
    [
        (61, 4, (15, 15, 16, 15)),  # Kimi K2 / DeepSeek-V3: the one left over to the stage before the last
        (62, 4, (15, 16, 16, 15)),  # two left over: the two middle stages, never the first nor the last
        (63, 4, (16, 16, 16, 15)),  # three: every stage but the last
        (64, 4, (16, 16, 16, 16)),
        (36, 5, (7, 7, 7, 8, 7)),
        (28, 3, (9, 10, 9)),
        (92, 8, (11, 11, 11, 12, 12, 12, 12, 11)),  # GLM-4.6 at PP 8: four left over, to the four stages before the last
        (7, 1, (7,)),
    ],
)
def test_default_partition(layers: int, pp: int, expected: tuple[int, ...]) -> None:
    assert ranks.partition(layers, pp) == expected
    assert sum(expected) == layers


def test_the_environment_partition_replaces_the_rule() -> None:
    assert ranks.partition(61, 4, "16,15,15,15") == (16, 15, 15, 15)
    assert ranks.partition(61, 4, " 20, 14,14 ,13") == (20, 14, 14, 13)


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("15,15,16", "found 3 stages, expected 4"),
        ("15,15,16,16", "found 62 layers in all, expected the model's 61"),
        ("15,15,a,16", "expected whole numbers of layers separated by commas"),
        ("15,-1,31,16", "expected whole numbers of layers"),
        ("0,15,30,16", "a stage of no layers"),
        ("", "expected whole numbers"),
    ],
)
def test_a_bad_environment_partition_is_refused(text: str, fragment: str) -> None:
    with pytest.raises(InputError, match=fragment):
        ranks.partition(61, 4, text)


def test_more_stages_than_layers_is_refused() -> None:
    with pytest.raises(InputError, match="--pipeline-parallel-size: found 8, expected at most the model's 4 layers"):
        ranks.partition(4, 8)
    with pytest.raises(InputError, match="--pipeline-parallel-size: found 0"):
        ranks.partition(4, 0)


# --- each stage's weights and KV ------------------------------------------------------------------


def test_kimi_k2_over_four_stages() -> None:
    """61 MLA layers at TP 8 over 4 stages: 15, 15, 16, 15; the latent (512 + 64) x 2 B a layer,
    not divided by TP; the embedding on the first stage, head and norm on the last (untied); the
    stages together hold each tensor of one TP rank once."""
    shape = _shape("kimi-k2-instruct")
    st = ranks.stages(shape, kvlayout.Settings(tp=8), 32768, NEWEST, 4)
    assert [s.layers for s in st] == [15, 15, 16, 15]
    assert [(s.first_layer, s.end_layer) for s in st] == [(0, 15), (15, 30), (30, 46), (46, 61)]
    assert [s.kv_bytes_per_token for s in st] == [15 * 1152, 15 * 1152, 16 * 1152, 15 * 1152]
    assert [s.holds for s in st] == [("embedding",), (), (), ("head", "final norm")]
    assert sum(s.weights_bytes for s in st) == weights.per_rank(shape, 8).model + 3 * rope(4096 * 32, 64)  # each further stage its own rope cache
    # stage 2 and stage 1 differ by one MoE layer; stage 0 holds the first dense layer (first_k_dense_replace)
    layer = weights.per_rank(shape, 8).model
    assert st[2].weights_bytes > st[1].weights_bytes and st[0].weights_bytes < st[1].weights_bytes < layer


def test_tied_embeddings_load_on_both_ends() -> None:
    """Llama 3.2 3B ties its head to the embedding: with two stages the last builds its own
    embedding for the head (llama.py: `is_first_rank or (tie_word_embeddings and is_last_rank)`),
    so the stages hold one vocabulary matrix more than one GPU does, and differ by the final norm."""
    shape = _shape("llama-3.2-3b")
    st = ranks.stages(shape, kvlayout.Settings(), 8192, NEWEST, 2)
    embedding = 128256 * 3072 * 2  # the vocabulary is already a multiple of 64
    assert [s.layers for s in st] == [14, 14]
    assert st[1].weights_bytes - st[0].weights_bytes == 3072 * 2
    assert sum(s.weights_bytes for s in st) == weights.per_rank(shape).model + embedding + rope(131072, 128)  # the second stage's rope cache
    assert st[1].holds == ("embedding", "head", "final norm")


def test_untied_head_on_the_last_stage_only() -> None:
    """Qwen3 8B is untied: the embedding on stage 0, lm_head of the same size on stage 1; the
    stages add up to one GPU's weights exactly, and the KV halves."""
    shape = _shape("qwen3-8b")
    st = ranks.stages(shape, kvlayout.Settings(), 8192, NEWEST, 2)
    assert st[1].weights_bytes - st[0].weights_bytes == 4096 * 2
    assert sum(s.weights_bytes for s in st) == weights.per_rank(shape).model + rope(40960, 128)  # and the second stage's rope cache
    assert [s.kv_bytes_per_token for s in st] == [18 * 8 * 128 * 2 * 2] * 2
    assert st[0].kv_block_bytes == 18 * 16 * 8 * 128 * 2 * 2


def test_the_checkpoint_size_is_split_by_stage() -> None:
    """With the index's total_size the stages' counts are scaled as one GPU's is."""
    shape = _shape("qwen3-8b")
    whole = weights.per_rank(shape).checkpoint_total  # the checkpoint's tensors: the rope's cache is built, not scaled
    st = ranks.stages(shape, kvlayout.Settings(), 8192, NEWEST, 2, total_size=2 * whole)
    assert abs(sum(s.weights_bytes for s in st) - 2 * whole - 2 * rope(40960, 128)) <= 1


def test_pools_keep_the_smallest_count_of_blocks() -> None:
    shape = _shape("kimi-k2-instruct")
    st = ranks.stages(shape, kvlayout.Settings(tp=8), 32768, NEWEST, 4)
    p = ranks.pools(st, (20 * GiB,) * 4)
    assert p.tightest == 2 and p.blocks == 20 * GiB // (16 * 64 * 1152)
    assert p.blocks_per_stage[0] == 20 * GiB // (15 * 64 * 1152)
    # more room on the 16-layer stage moves the tightest
    p = ranks.pools(st, (20 * GiB, 20 * GiB, 22 * GiB, 20 * GiB))
    assert p.tightest == 0


def test_which_builds_check_the_whole_model() -> None:
    assert [ranks.whole_model_check(kvlayout.version(v)) for v in ("0.13.0", "0.14.0", "0.16.0", "0.17.0", "0.33.0")] == [False, True, True, False, False]
    assert not ranks.whole_model_check(NEWEST)


# --- the report and the command line --------------------------------------------------------------


def test_model_json_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(
        ["model", "models/configs/kimi-k2-instruct/config.json", "--tp", "8", "--pp", "4", "--max-model-len", "32768", "--pool", "20GiB", "--json"], capsys
    )
    assert r["pp"] == 4 and [s["layers"] for s in r["ranks"]] == [15, 15, 16, 15]
    assert [s["kv_bytes_per_token"] for s in r["ranks"]] == [17280, 17280, 18432, 17280]
    assert r["weights_bytes_per_rank"] == max(s["weights_bytes"] for s in r["ranks"])
    assert r["kv_bytes_per_token"] == 18432  # the stage with the fewest blocks
    blocks = 20 * GiB // (16 * 64 * 1152)
    assert r["kv_blocks"] == blocks and r["kv_tokens"] == int(Fraction(blocks, 32768 // 64) * 32768)
    assert r["kv_floor_bytes"] == 16 * 1152 * 32768 + 16 * 64 * 1152


def test_model_json_one_stage_is_the_whole_model(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--json"], capsys)
    assert r["pp"] == 1 and len(r["ranks"]) == 1
    assert r["ranks"][0]["weights_bytes"] == r["weights_bytes_per_rank"] and r["ranks"][0]["holds"] == ["embedding", "head", "final norm"]


def test_a_build_that_checks_the_whole_model(capsys: pytest.CaptureFixture[str]) -> None:
    """0.14.0 to 0.16.x check one request of every layer against the smallest stage's pool: at PP 2
    the floor is the whole model's request, twice a stage's; 0.17.0 checks the stage's own."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--pp", "2", "--max-model-len", "32768", "--json"]
    old = _json([*argv, "--engine-version", "0.15.0"], capsys)
    new = _json([*argv, "--engine-version", "0.17.0"], capsys)
    assert old["kv_floor_bytes"] == 36 * 8 * 128 * 2 * 2 * 32768
    assert new["kv_floor_bytes"] == 18 * 8 * 128 * 2 * 2 * 32768
    assert any("whole model's layers" in n for n in old["notes"])


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--pp", "0"], "--pp: found 0, expected at least 1"),
        (["--pp", "40"], "--pp: found 40, expected at most the model's 36 layers"),
        (["--pp-layer-partition", "18,18"], "--pp-layer-partition: found with --pipeline-parallel-size 1, expected --pipeline-parallel-size N above 1"),
        (["--pp", "2", "--pp-layer-partition", "18,17"], "--pp-layer-partition: found 35 layers in all, expected the model's 36"),
        (["--pp", "2", "--pp-layer-partition", "18;18"], "--pp-layer-partition: found '18;18'"),
    ],
)
def test_cli_bad_pp_is_one_line(extra: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", *extra])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and fragment in err, err


def test_text_lists_every_stage(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["model", "models/configs/qwen3-8b/config.json", "--pp", "2", "--pp-layer-partition", "20,16", "--max-model-len", "8192"]) == 0
    out = capsys.readouterr().out
    assert "stage 0: layers 0-19 (20 + embedding)" in out and "stage 1: layers 20-35 (16 + head, final norm)" in out
    assert "as VLLM_PP_LAYER_PARTITION gives them" in out


# --- the pool predicted on a card -----------------------------------------------------------------


def test_predicted_pool_per_stage() -> None:
    """Qwen3 32B at PP 2 on two L40S: each stage's pool is the request less its own weights, its
    graphs, the forward pass and its memory outside torch; the sampler's warm-up is the last stage's
    alone, and so is Model Runner V2's sampler state (256 requests x (151,936 + 2 x 4,748) int32)."""
    shape = _shape("qwen3-32b")
    card = predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "l40s"))
    p = predict.predict(shape, card, predict.Start(pp=2, max_model_len=32768))
    st = ranks.stages(shape, kvlayout.Settings(prefill_budget=p.max_num_batched_tokens), 32768, NEWEST, 2)
    assert [s.weights_bytes for s in p.stages] == [s.weights_bytes for s in st]
    first, last = p.stages
    assert first.activation_bytes == p.forward.bytes
    assert last.activation_bytes == max(p.forward.bytes, p.sampler.bytes + p.residual_bytes)
    assert last.non_torch_bytes - first.non_torch_bytes == p.sampler_state_bytes == 256 * (151_936 + 2 * 4_748) * 4
    for sp in p.stages:
        assert sp.available_kv_bytes == p.requested_bytes - sp.weights_bytes - sp.activation_bytes - sp.non_torch_bytes - sp.cuda_graph_bytes
        assert sp.kv_blocks == sp.available_kv_bytes // (32 * 16 * 8 * 128 * 2 * 2)
    assert p.tightest_stage == min(p.stages, key=lambda sp: (sp.kv_blocks, sp.available_kv_bytes)).rank
    tight = p.stages[p.tightest_stage]
    assert p.available_kv_bytes == tight.available_kv_bytes and p.weights.bytes == tight.weights_bytes
    assert p.kv_tokens == tight.kv_blocks * 16  # one group, a full-length request of whole blocks
    assert p.verdict == "starts"
    one = predict.predict(shape, card, predict.Start(max_model_len=32768))
    assert one.verdict == "weights do not fit"


def test_cli_predicts_ranks(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(["model", "models/configs/qwen3-32b/config.json", "--pp", "2", "--max-model-len", "32768", "--gpu", "l40s", "--json"], capsys)
    assert [s["layers"] for s in r["ranks"]] == [32, 32]
    assert r["tightest_rank"] in (0, 1)
    tight = r["ranks"][r["tightest_rank"]]
    assert r["available_kv_bytes"] == tight["available_kv_bytes"] == min(s["available_kv_bytes"] for s in r["ranks"])
    assert r["verdict"] == "starts"


def test_a_published_pp_refusal_of_the_whole_model(capsys: pytest.CaptureFixture[str]) -> None:
    """vllm-project/vllm issue 34076 (vLLM 0.15.2rc1): Qwen3-Coder-30B-A3B-Instruct-FP8 with
    VLLM_PP_LAYER_PARTITION=16,32 and --pipeline-parallel-size 2 is refused: "To serve at least one
    request with the models's max seq len (262144), (24.0 GiB KV cache is needed, which is larger than
    the available KV cache memory (3.18 GiB). Based on the available memory, the estimated maximum
    model length is 34736." Its KV geometry is Qwen3-30B-A3B's (48 layers of 4 KV heads of 128):
    24.0 GiB is all 48 layers, not the 16 or 32 of a stage; from 0.17.0 a stage checks its own."""
    argv = ["model", "models/configs/qwen3-30b-a3b/config.json", "--pp", "2", "--pp-layer-partition", "16,32", "--max-model-len", "262144", "--json"]
    old = _json([*argv, "--engine-version", "0.15.0", "--pool", "3.18GiB"], capsys)
    assert old["kv_floor_bytes"] == 24 * GiB  # printed "24.0 GiB"
    per_token = 48 * 4 * 128 * 2 * 2
    assert _json([*argv, "--engine-version", "0.15.0", "--pool", str(34736 * per_token)], capsys)["largest_max_model_len"] == 34736
    low = _json([*argv, "--engine-version", "0.15.0", "--pool", str(int(Fraction(3175, 1000) * GiB))], capsys)["largest_max_model_len"]
    high = _json([*argv, "--engine-version", "0.15.0", "--pool", str(int(Fraction(3185, 1000) * GiB) - 1)], capsys)["largest_max_model_len"]
    assert low <= 34736 <= high  # the printed 3.18 GiB holds the logged estimate
    new = _json([*argv, "--engine-version", "0.17.0"], capsys)
    assert [s["kv_floor_bytes"] for s in new["ranks"]] == [16 * 2048 * 262144, 32 * 2048 * 262144]
    assert new["kv_floor_bytes"] == 16 * GiB  # the 32-layer stage's own request


def test_more_stages_when_no_larger_tp_passes() -> None:
    """Qwen2.5 7B (28 heads: no TP 8) on a card of 7 GiB: TP 2 and 4 leave too little (each rank
    also holds the 2.1 GiB V1 keeps outside torch under TP), and so do two and four stages; eight
    stages of three or four layers pass (the sampler on the last only, each stage's graphs over its
    own layers)."""
    shape, card = _shape("qwen2.5-7b"), predict.card_from_total("7 GiB")
    start = predict.Start(max_model_len=4096)
    found = predict.fixes(shape, card, start)
    assert [f.flags for f in found] == ["--pipeline-parallel-size 8"]
    assert found[0].prediction.verdict == "starts" and [s.layers for s in found[0].prediction.stages] == [3, 3, 3, 4, 4, 4, 4, 3]
    for tp in (2, 4):
        assert predict.predict(shape, card, predict.Start(tp=tp, max_model_len=4096)).verdict != "starts"
    for pp in (2, 4):
        assert predict.predict(shape, card, predict.Start(pp=pp, max_model_len=4096)).verdict != "starts"


def test_a_window_is_charged_a_batch_a_stage() -> None:
    """From 0.26.0 a sliding window holds max_in_flight_tokens: under PP the pipeline's batches
    (max_concurrent_batches = pp on the V1 model runner), not async scheduling's two."""
    assert ranks.in_flight(NEWEST, 4).in_flight_batches == 4
    assert ranks.in_flight(NEWEST, 1).in_flight_batches == 2
    assert ranks.in_flight(kvlayout.version("0.25.1"), 4).in_flight_batches == 1


def test_gpt_oss_windows_under_four_stages(capsys: pytest.CaptureFixture[str]) -> None:
    shape = _shape("gpt-oss-120b")
    r = _json(["model", "models/configs/gpt-oss-120b/config.json", "--pp", "4", "--max-model-len", "131072", "--json"], capsys)
    tight = r["ranks"][[s["kv_block_bytes"] for s in r["ranks"]].index(max(s["kv_block_bytes"] for s in r["ranks"]))]
    sub = ranks.stage_shape(shape, tight["first_layer"], tight["end_layer"], tight["rank"] == 3)
    four = kvlayout.request(sub, kvlayout.Settings(), 131072, ranks.in_flight(NEWEST, 4))
    two = kvlayout.request(sub, kvlayout.Settings(), 131072, NEWEST)
    assert r["kv_fixed_bytes_per_request"] == four.fixed_bytes > two.fixed_bytes
