"""Offload and host memory (calc/engine/offload.py): --cpu-offload-gb moves whole parameters of the
decoder layers until the budget is reached (vllm/model_executor/offloader/uva.py, 0.33.0); KV
offloading and (V0) swap take host memory; on a unified-memory box none of it frees anything."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from conftest import cli_json as _json
from conftest import config_shape as _shape

from calc.engine import offload, predict
from calc.present import cli
from calc.units import GiB

# Qwen3 8B, one rank, bfloat16: a layer's parameters in the offloader's order.
QKV = (32 + 8 + 8) * 128 * 4096 * 2
O_PROJ = 4096 * 32 * 128 * 2
NORMS_QK = 2 * 128 * 2
GATE_UP = 2 * 12288 * 4096 * 2
DOWN = 4096 * 12288 * 2
LAYER_NORMS = 2 * 4096 * 2
LAYER = QKV + O_PROJ + NORMS_QK + GATE_UP + DOWN + LAYER_NORMS


def test_parameters_in_the_offloaders_order() -> None:
    p = offload.parameters(_shape("qwen3-8b"), 1)
    assert [name for name, _ in p[:8]] == [
        "model.layers.0.self_attn.qkv_proj", "model.layers.0.self_attn.o_proj", "model.layers.0.self_attn.q_norm",
        "model.layers.0.self_attn.k_norm", "model.layers.0.mlp.gate_up_proj", "model.layers.0.mlp.down_proj",
        "model.layers.0.input_layernorm", "model.layers.0.post_attention_layernorm",
    ]  # fmt: skip
    assert p[0][1] == QKV and p[4][1] == GATE_UP and sum(size for _, size in p) == 36 * LAYER


def test_whole_parameters_until_the_budget() -> None:
    """4 GiB: eleven whole layers fall short by less than a qkv_proj, so the twelfth layer's
    qkv_proj moves whole and the bytes moved pass the budget."""
    budget = 4 * GiB
    assert 11 * LAYER < budget < 11 * LAYER + QKV
    assert offload.moved(_shape("qwen3-8b"), 1, Fraction(4)) == 11 * LAYER + QKV
    assert offload.moved(_shape("qwen3-8b"), 1, Fraction(0)) == 0
    assert offload.moved(_shape("qwen3-8b"), 1, Fraction(1000)) == 36 * LAYER  # never the embedding nor the head


def test_each_stage_has_its_own_budget() -> None:
    shape = _shape("qwen3-8b")
    assert offload.moved(shape, 1, Fraction(4), range(18, 36)) == offload.moved(shape, 1, Fraction(4), range(0, 18))


def test_host_use_and_engines() -> None:
    o = offload.Offload(Fraction(4), Fraction(16), "native", Fraction(8))
    v1 = offload.host_use(o, (1000, 2000), tp=2, engine="v1")
    assert v1.offloaded_bytes == 2 * 3000 and v1.kv_offloading_bytes == 16 * GiB and v1.swap_bytes == 0
    assert any("allocates nothing in the V1 engine" in n for n in v1.notes)
    v0 = offload.host_use(o, (1000, 2000), tp=2, engine="v0")
    assert v0.swap_bytes == 8 * GiB * 4  # a GPU each: two TP ranks of two stages
    lm = offload.host_use(offload.Offload(kv_offloading_gib=Fraction(16), kv_offloading_backend="lmcache"), (0,), 1, "v1")
    assert lm.kv_offloading_bytes == 0 and "LMCache's own server" in lm.notes[0]


def test_model_json_and_the_unified_note(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(
        ["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--cpu-offload-gb", "4", "--kv-offloading-size", "2", "--json"], capsys
    )
    of = r["offload"]
    assert of["offloaded_bytes_per_rank"] == 11 * LAYER + QKV
    assert of["weights_on_device_bytes_per_rank"] == r["weights_bytes_per_rank"] - of["offloaded_bytes_per_rank"]
    assert of["kv_offloading_bytes"] == 2 * GiB and of["host_bytes"] == of["offloaded_bytes"] + 2 * GiB
    assert of["unified_saving_bytes"] == 0 and of["unified_extra_bytes"] == 2 * GiB
    assert any(n.startswith("on a unified-memory box (GB10)") and "nothing is freed" in n for n in r["notes"])


def test_a_card_takes_the_moved_weights_off(capsys: pytest.CaptureFixture[str]) -> None:
    base = ["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--gpu", "rtx-3090", "--json"]
    plain = _json(base, capsys)
    moved = _json([*base, "--cpu-offload-gb", "4"], capsys)
    assert moved["terms"]["weights"]["bytes"] == plain["terms"]["weights"]["bytes"] - (11 * LAYER + QKV)
    assert moved["available_kv_bytes"] - plain["available_kv_bytes"] == 11 * LAYER + QKV


def test_a_unified_box_says_offload_frees_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--gpu", "dgx-spark", "--cpu-offload-gb", "4",
                       "--kv-cache-memory-bytes", "10e9", "--overhead", "5 GiB"])  # fmt: skip
    out, _ = capsys.readouterr()
    assert status == 0 and "on a unified-memory box (GB10): the 4.00 GiB a rank --cpu-offload-gb moves stay in the same memory" in out
    assert "weights 15.27 GiB + KV pin" in out  # the gate's weights term keeps all of them


def test_gate_counts_kv_offloading_and_not_cpu_offload(capsys: pytest.CaptureFixture[str]) -> None:
    """On the Spark pair (TP 2) an 8 GiB KV offloading buffer is 4 GiB a rank more in needs;
    --cpu-offload-gb leaves the needs as they were and says why."""
    plain = _json(["gate", "--json"], capsys)
    more = _json(["gate", "--kv-offloading-size", "8", "--cpu-offload-gb", "20", "--json"], capsys)
    assert more["needs_bytes"] - plain["needs_bytes"] == 4 * GiB
    assert plain["largest_pin_bytes"]["without_drafter"] - more["largest_pin_bytes"]["without_drafter"] == 4 * GiB
    assert any("--cpu-offload-gb 20: on this unified-memory box" in n for n in more["notes"])
    only = _json(["gate", "--cpu-offload-gb", "20", "--json"], capsys)
    assert only["needs_bytes"] == plain["needs_bytes"]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["--cpu-offload-gb", "-1"], "--cpu-offload-gb: found"),
        (["--kv-offloading-size", "0"], "--kv-offloading-size: found 0, expected a size in GiB above 0"),
        (["--kv-offloading-backend", "lmcache"], "--kv-offloading-backend: found without --kv-offloading-size"),
        (["--kv-offloading-size", "4", "--kv-offloading-backend", "disk"], "--kv-offloading-backend: found 'disk'"),
        (["--swap-space", "lots"], "--swap-space: found 'lots'"),
    ],
)
def test_cli_bad_offload_is_one_line(argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    status = cli.main(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", *argv])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and fragment in err, err


def test_predict_stage_budgets() -> None:
    shape = _shape("qwen3-32b")
    card = predict.card_from_total("23.58 GiB")
    p = predict.predict(shape, card, predict.Start(pp=2, max_model_len=8192, cpu_offload_gib=Fraction(4)))
    plain = predict.predict(shape, card, predict.Start(pp=2, max_model_len=8192))
    for a, b in zip(plain.stages, p.stages, strict=True):
        assert a.weights_bytes - b.weights_bytes == offload.moved(shape, 1, Fraction(4), range(32 * a.rank, 32 * a.rank + 32))


def test_gate_flags_carry_the_offload_settings(capsys: pytest.CaptureFixture[str]) -> None:
    r = _json(["gate", "--kv-offloading-size", "8", "--cpu-offload-gb", "2.5", "--json"], capsys)
    assert r["flags"][-2:] == ["--kv-offloading-size 8", "--cpu-offload-gb 2.5"]
    assert "--kv-offloading-size" not in " ".join(_json(["gate", "--json"], capsys)["flags"])
    status = cli.main(["gate", "--kv-offloading-size", "-1"])
    _, err = capsys.readouterr()
    assert status == 2 and err.count("\n") == 1 and "--kv-offloading-size: found '-1'" in err


def test_unified_note_rounds_on_the_safe_side() -> None:
    """1.0075 GiB moved by --cpu-offload-gb, 8.005 GiB of weights less a byte, 0.505 GiB of host
    buffers less a byte: the bytes moved and the weights are restated as the host-memory line and
    the terms print them (to the nearest), the buffers MemAvailable loses rounded up."""
    h = offload.HostUse(GiB + 75 * GiB // 10000, 0, GiB // 2 + 5 * GiB // 1000, 0, 0, ())
    note = offload.unified_note(h, 8 * GiB + 5 * GiB // 1000)
    assert note == (
        "on a unified-memory box (GB10): the 1.01 GiB a rank --cpu-offload-gb moves stay in the same memory: MemAvailable still "
        "falls by the whole 8.00 GiB of weights a rank, and nothing is freed; the host buffers (0.51 GiB) come out of MemAvailable too"
    )


def test_the_bytes_moved_print_alike_in_each_line(capsys: pytest.CaptureFixture[str]) -> None:
    """Qwen3 8B with --cpu-offload-gb 100 and a pool (no card: the note for a unified-memory box is
    said): every decoder layer moves, 13,892,143,104 B, 12.9381 GiB; the host-memory line and the
    unified-memory note say the same 12.94 GiB."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "32768", "--kv-cache-memory-bytes", "10e9", "--cpu-offload-gb", "100"]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    moved = _json(["model", *argv[1:], "--json"], capsys)["offload"]["offloaded_bytes_per_rank"]
    assert moved == 13_892_143_104
    assert "Host memory: 12.94 GiB of weights a rank moved by --cpu-offload-gb" in out
    assert "the 12.94 GiB a rank --cpu-offload-gb moves stay in the same memory" in out


def test_a_predicted_pool_on_a_discrete_card_says_nothing_of_unified_memory() -> None:
    """--cpu-offload-gb on an H100: the weights it moves leave the card, so the note that they stay in
    the same memory (a unified-memory box's) is not said; without a card the report still says it."""
    from conftest import run_calc

    path = "models/configs/qwen3-8b/config.json"
    on_card = json.loads(run_calc("model", path, "--gpu", "h100-sxm", "--cpu-offload-gb", "4", "--json").stdout)
    assert not any("unified-memory" in n for n in on_card["notes"])
    pinned = json.loads(run_calc("model", path, "--cpu-offload-gb", "4", "--kv-cache-memory-bytes", "10e9", "--json").stdout)
    assert any(n.startswith("on a unified-memory box (GB10): the 4.00 GiB a rank --cpu-offload-gb moves") for n in pinned["notes"])
