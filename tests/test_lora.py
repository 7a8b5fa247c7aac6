"""LoRA (calc/engine/lora.py): the slots vLLM 0.33.0 allocates for every wrapped module on a rank, worked
by hand from create_lora_weights' shapes (A: max_loras x rank x input on the rank a slice; B:
max_loras x output on the rank x rank), the adapters on the host, the pool they take."""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import cli_json as _json
from conftest import config_shape as _shape

from calc.engine import lora, predict
from calc.present import cli

# Qwen3 8B: hidden 4096, 32 heads and 8 KV heads of 128, intermediate 12288, 36 layers, vocab 151936.
H, Q, KV, INTER, L, V = 4096, 32 * 128, 8 * 128, 12288, 36, 151936


def _qwen3_8b_values(tp: int) -> int:
    """Values of one slot at rank 1: each linear's A (its input on the rank) and B (its output)."""
    q, kv, o_in, i = Q // tp, KV // tp, Q // tp, INTER // tp
    layer = (H + q) + 2 * (H + kv) + (o_in + H) + 2 * (H + i) + (i + H)  # q, k, v; o; gate, up; down
    return L * layer + (V + H) + (H + V)  # the embedding and the logits processor: the whole vocabulary


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_dense_slots_by_hand(tp: int) -> None:
    b = lora.per_rank(_shape("qwen3-8b"), tp, lora.Lora(max_loras=4, max_lora_rank=64))
    assert b.slot_bytes == _qwen3_8b_values(tp) * 64 * 2
    assert b.device_bytes == 4 * b.slot_bytes
    assert b.modules == L * 7 + 2
    assert b.host_bytes == 4 * _qwen3_8b_values(1) * 64 * 2  # whole adapters on the host, whatever the TP


def test_tp1_slot_is_the_figure() -> None:
    assert lora.per_rank(_shape("qwen3-8b"), 1, lora.Lora(max_loras=1, max_lora_rank=64)).slot_bytes == 389_120_000


def test_moe_slots_by_hand() -> None:
    """Qwen3 30B-A3B: 128 experts of 768 over hidden 2048; w13 holds two A slices of every
    expert, w2 one, and the router (a ReplicatedLinear) its own."""
    h, e, i, r = 2048, 128, 768, 16
    attention = (h + 32 * 128) + 2 * (h + 4 * 128) + (32 * 128 + h)
    experts = e * (2 * h + 2 * i) + e * (i + h)
    router = h + e
    values = 48 * (attention + experts + router) + 2 * (151936 + h)
    assert lora.per_rank(_shape("qwen3-30b-a3b"), 1, lora.Lora(max_lora_rank=r)).slot_bytes == values * r * 2


def test_tied_head_wraps_the_embedding_again() -> None:
    """Llama 3.2 3B ties its head: the embedding module is wrapped under lm_head once more."""
    shape = _shape("llama-3.2-3b")
    tied = lora.per_rank(shape, 1, lora.Lora())
    untied = lora.per_rank(replace(shape, tie_embeddings=False), 1, lora.Lora())
    assert tied.slot_bytes - untied.slot_bytes == (128256 + 3072) * 16 * 2


def test_stages_split_the_slots() -> None:
    shape, cfg = _shape("qwen3-8b"), lora.Lora(max_loras=2, max_lora_rank=32)
    first = lora.per_rank(shape, 1, cfg, range(0, 18), first=True, last=False)
    last = lora.per_rank(shape, 1, cfg, range(18, 36), first=False, last=True)
    assert first.slot_bytes + last.slot_bytes == lora.per_rank(shape, 1, cfg).slot_bytes
    assert first.slot_bytes == last.slot_bytes  # the embedding's slots and the head's are the same size


@pytest.mark.parametrize(
    ("cfg", "fragment"),
    [
        (lora.Lora(max_lora_rank=24), "--max-lora-rank: found 24, expected one of 1, 8, 16, 32, 64, 128, 256, 320, 512"),
        (lora.Lora(max_loras=4, max_cpu_loras=2), "--max-cpu-loras: found 2, expected at least --max-loras 4"),
    ],
)
def test_what_lora_config_refuses(cfg: lora.Lora, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        lora.check(cfg)


def test_a_vocabulary_above_the_limit_is_refused() -> None:
    with pytest.raises(ValueError, match="vLLM 0.33 refuses LoRA above 258,048"):
        lora.per_rank(replace(_shape("qwen3-8b"), vocab=262144), 1, lora.Lora())


def test_cli_json_and_pool(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--gpu", "rtx-3090", "--json"]
    plain = _json(base, capsys)
    with_lora = _json([*base, "--enable-lora", "--max-loras", "4", "--max-lora-rank", "64", "--max-cpu-loras", "8"], capsys)
    slots = 4 * _qwen3_8b_values(1) * 64 * 2
    assert with_lora["lora"]["device_bytes_per_rank"] == slots
    assert with_lora["lora"]["host_bytes"] == 8 * _qwen3_8b_values(1) * 64 * 2
    assert with_lora["terms"]["lora"]["bytes"] == slots and "lora" not in plain["terms"]
    assert plain["available_kv_bytes"] - with_lora["available_kv_bytes"] == slots


def test_cli_lora_under_pipeline_parallel(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--pp", "2", "--enable-lora", "--json"], capsys)
    assert [s["lora_bytes"] for s in r["ranks"]] == [lora.per_rank(_shape("qwen3-8b"), 1, lora.Lora(), range(0, 18), True, False).device_bytes] * 2
    assert r["lora"]["host_bytes"] == 2 * r["lora"]["host_bytes_per_worker"]


def test_prediction_takes_each_stage_its_own_slots() -> None:
    shape = _shape("qwen3-32b")
    card = predict.card_from_total("44.42 GiB")
    start = predict.Start(pp=2, max_model_len=8192)
    plain = predict.predict(shape, card, start)
    with_lora = predict.predict(shape, card, replace(start, lora=lora.Lora(max_loras=2, max_lora_rank=32)))
    for a, b in zip(plain.stages, with_lora.stages, strict=True):
        assert a.available_kv_bytes - b.available_kv_bytes == b.lora_bytes > 0


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--max-loras", "4"], "--max-loras: found without --enable-lora"),
        (["--enable-lora", "--max-lora-rank", "24"], "--max-lora-rank: found 24"),
        (["--enable-lora", "--max-loras", "4", "--max-cpu-loras", "2"], "--max-cpu-loras: found 2"),
        (["--enable-lora", "--max-loras", "0"], "--max-loras: found 0"),
    ],
)
def test_cli_bad_lora_is_one_line(extra: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", *extra])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and fragment in err, err


def test_fewer_slots_is_a_fix() -> None:
    """Qwen3 8B at 8,192 on an RTX 3090 with 16 slots of rank 64 leaves no KV memory; nine slots
    start and ten do not (each slot is 389,120,000 B; a first start, which holds the compile's block)."""
    shape = _shape("qwen3-8b")
    card = predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "rtx-3090"))
    start = predict.Start(max_model_len=8192, lora=lora.Lora(max_loras=16, max_lora_rank=64))
    found = {f.flags: f for f in predict.fixes(shape, card, start)}
    assert "--max-loras 9" in found and found["--max-loras 9"].prediction.verdict == "starts"
    assert predict.predict(shape, card, replace(start, lora=lora.Lora(max_loras=10, max_lora_rank=64))).verdict != "starts"


def test_tied_embeddings_under_pipeline_parallel() -> None:
    """Llama 3.2 3B at PP 2: the last stage builds its own embedding for the tied head, wrapped as
    the embedding and again under lm_head; the first stage's once."""
    shape, cfg = _shape("llama-3.2-3b"), lora.Lora()
    first = lora.per_rank(shape, 1, cfg, range(0, 14), first=True, last=False)
    last = lora.per_rank(shape, 1, cfg, range(14, 28), first=False, last=True)
    embedding = (128256 + 3072) * 16 * 2
    assert last.slot_bytes - first.slot_bytes == embedding + (3072 + 128256) * 16 * 2  # one more embedding, and the logits
    assert first.slot_bytes + last.slot_bytes == lora.per_rank(shape, 1, cfg).slot_bytes + embedding


def test_the_limits_follow_the_release() -> None:
    """layers/logits_processor.py refuses `32000 < vocab_size > 257024` in 0.8.2 to 0.16.0 and
    `vocab_size > 258048` from 0.17.0; config.py's possible_max_ranks has no rank 1 up to 0.11.0,
    config/lora.py's MaxLoRARanks has it from 0.13.0."""
    shape = replace(_shape("qwen3-8b"), vocab=257536)  # between the two limits
    assert lora.per_rank(shape, 1, lora.Lora(), rel=(0, 17)).device_bytes > 0
    with pytest.raises(lora.InputError, match=r"vocab_size is 257,536, vLLM 0\.16 refuses LoRA above 257,024"):
        lora.per_rank(shape, 1, lora.Lora(), rel=(0, 16))
    with pytest.raises(lora.InputError, match=r"vLLM 0\.33 refuses LoRA above 258,048"):
        lora.per_rank(replace(shape, vocab=258049), 1, lora.Lora())
    one = lora.Lora(max_lora_rank=1)
    lora.check(one, (0, 13))
    with pytest.raises(
        lora.InputError, match=r"--max-lora-rank: found 1, expected one of 8, 16, 32, 64, 128, 256, 320, 512 \(vllm/config.py LoRAConfig, vLLM 0\.11\)"
    ):
        lora.per_rank(_shape("qwen3-8b"), 1, one, rel=(0, 11))


def test_the_release_reaches_the_prediction(capsys: pytest.CaptureFixture[str]) -> None:
    """--engine-version 0.11.0 with --max-lora-rank 1: one line naming the flag, not a slot figured."""
    status = cli.main(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--gpu", "l40s",
                       "--engine-version", "0.11.0", "--enable-lora", "--max-lora-rank", "1"])  # fmt: skip
    err = capsys.readouterr().err
    assert status == 2 and len(err.strip().splitlines()) == 1 and "--max-lora-rank: found 1, expected one of 8, 16" in err, err
