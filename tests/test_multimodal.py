"""Multimodal starts (calc/engine/multimodal.py, the tower in calc/engine/hfconfig/multimodal.py and calc/engine/weights.py): the
vision tower's weights as vLLM's model code builds them, divided over the tensor-parallel ranks
or whole on each (--mm-encoder-tp-mode data), gone when --limit-mm-per-prompt allows none of its
modalities, and the encoder's outputs the profile run keeps."""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest
from conftest import cli_json, config_shape, run_calc
from test_cli import assert_one_error_line

from calc.checks import modeled
from calc.engine import hfconfig, multimodal, predict, ranks, weights
from calc.units import GiB, InputError

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "models" / "configs"
LOG_81 = ROOT / "logs" / "public" / "81-v011-qwen25-vl-3b-ray-data-encoder-budget.log"


def rope(positions: int, rotary_dim: int) -> int:
    """A rotary embedding's cos/sin cache, built at load on every rank (and every pipeline stage)
    beside the weights, in the model's dtype (rotary_embedding/base.py, register_buffer, 0.20.0)."""
    return positions * rotary_dim * 2


def report(name: str, **given) -> dict:
    """The report as `python -m calc model --json` gives it."""
    return modeled.model_report(modeled.ModelInputs((CONFIGS / name.removesuffix(".json") / "config.json").read_text(), name, **given)).to_json()


def test_qwen25_vl_3b_meets_its_checkpoint_and_the_loading_line() -> None:
    """Qwen2.5-VL-3B-Instruct: 3,754,622,976 parameters on its card, the language model's
    3,085,938,688 (tied head) and the tower's 668,684,288: a 14 x 14 x 2 patch embedding without
    bias, 32 blocks of two RMSNorms, qkv, proj, a gated MLP of 3,420 with biases, a merger of
    5,120 to 2,048 (vllm/model_executor/models/qwen2_5_vl.py). logs/public/81 (v0.11.0, TP 1):
    'Model loading took 7.1550 GiB' = 7,682,622,751 B. The language model alone was 19.7 % light;
    with the tower and the rope's cache the count is 0.6 % under what loading took (other buffers beside the weights)."""
    d, i = 1280, 3420
    block = 2 * d + (3 * d * d + 3 * d) + (d * d + d) + (2 * i * d + 2 * i) + (d * i + d)
    tower = d * 3 * 2 * 14 * 14 + 32 * block + d + (5120 * 5120 + 5120) + (2048 * 5120 + 2048)
    assert tower == 668_684_288
    r = report("qwen2.5-vl-3b.json", max_model_len=8192)
    assert r["tower"]["bytes_per_rank"] == tower * 2 and r["tower"]["replicated"] is False
    # the rope's cache: M-RoPE keeps four times the positions (rotary_embedding/mrope.py)
    assert r["weights_bytes_per_rank"] - rope(4 * 128000, 128) == 3_754_622_976 * 2 == (3_085_938_688 + tower) * 2
    text = LOG_81.read_text()
    assert "Model loading took 7.1550 GiB" in text
    loaded = round(Fraction("7.1550") * GiB)
    assert loaded == 7_682_622_751
    before, after = Fraction(3_085_938_688 * 2 - loaded, loaded), Fraction(r["weights_bytes_per_rank"] - loaded, loaded)
    assert round(float(before) * 100, 1) == -19.7 and round(float(after) * 100, 1) == -0.6


def test_the_encoder_budget_and_batch_the_log_prints() -> None:
    """logs/public/81: max_num_batched_tokens 2048 (the example's engine_kwargs), one image of at
    most 16,384 tokens: budget max(2048, 16384) = 16384 and 16384 // 16384 = 1 item, as printed;
    the outputs kept, 16,384 x 2,048 x 2 B = 64 MiB."""
    assert "Encoder cache will be initialized with a budget of 16384 tokens, and profiled with 1 image items" in LOG_81.read_text()
    s = hfconfig.shape(json.loads((CONFIGS / "qwen2.5-vl-3b" / "config.json").read_text()), "q")
    p = multimodal.encoder_profile(s, multimodal.Settings(), 2048, 256, 8192, (0, 11))
    assert p is not None and (p.budget_tokens, p.items, p.held_bytes) == (16384, 1, 16384 * 2048 * 2)
    # Gemma 3 at 8192 tokens: 256 a picture, 8192 // 256 = 32 items of 3,840 wide; 0.8.5 rounds up the same
    g = hfconfig.shape(json.loads((CONFIGS / "gemma-3-12b-it" / "config.json").read_text()), "g")
    p = multimodal.encoder_profile(g, multimodal.Settings(), 8192, 256, 32768)
    assert p is not None and (p.budget_tokens, p.items, p.held_bytes) == (8192, 32, 32 * 256 * 3840 * 2)
    # a prompt limited to one image and a short context: items = min(32, 2 seqs x max(1, min(1, 4096 // 256))) = 2
    p = multimodal.encoder_profile(g, multimodal.Settings(limits={"image": 1}), 8192, 2, 4096)
    assert p is not None and p.items == 2
    assert multimodal.encoder_profile(g, multimodal.Settings(), 8192, 256, 32768, (0, 7)) is None  # V0: not read


def test_the_profile_keeps_the_encoder_outputs_in_the_predicted_pool() -> None:
    s = hfconfig.shape(json.loads((CONFIGS / "qwen2.5-vl-3b" / "config.json").read_text()), "q")
    card = predict.card_from_total("22 GiB")
    start = predict.Start(max_model_len=8192, max_num_batched_tokens=2048, engine_version="0.11.0")
    with_tower = predict.predict(s, card, start)
    without = predict.predict(s, card, predict.Start(**{**start.__dict__, "multimodal": multimodal.Settings(limits={"image": 0, "video": 0})}))
    enc = multimodal.encoder_profile(s, multimodal.Settings(), 2048, 256, 8192, (0, 11))
    assert enc is not None and enc.held_bytes == 16384 * 2048 * 2  # the image's outputs, kept through the language model's pass
    # the tower's own forward over that image's 65,536 patches comes first and is the larger here
    assert with_tower.activation.bytes == max(enc.forward_bytes, without.activation.bytes + enc.held_bytes) == enc.forward_bytes
    assert with_tower.weights.bytes - without.weights.bytes == 668_684_288 * 2  # no tower loaded
    assert "1 dummy items (65,536 patches" in with_tower.activation.source
    small = predict.predict(s, card, predict.Start(**{**start.__dict__, "max_num_batched_tokens": 8192, "max_num_seqs": 1024}))
    assert "profiled with 1 image items" in small.activation.source  # the sampler's phase above the tower's: the outputs counted


def qwen3_vl_tower_rank(tp: int) -> int:
    """Qwen3-VL-30B-A3B's tower on one of `tp` ranks, by hand (qwen3_vl.py): LayerNorms, the
    patch embedding with its bias, the 2,304-row position table and each row-parallel bias whole;
    qkv, fc1 and each merger's linear_fc1 divided by their rows, proj, fc2 and linear_fc2 by their
    columns; a deepstack merger norms 4,608 after the shuffle."""
    d, i, wide, out = 1152, 4304, 4608, 2048
    block = 4 * d + (3 * d // tp) * d + 3 * d // tp + d * (d // tp) + d + (i // tp) * d + i // tp + d * (i // tp) + d
    merger = (wide // tp) * wide + wide // tp + out * (wide // tp) + out
    return d * 3 * 2 * 16 * 16 + d + 2304 * d + 27 * block + (2 * d + merger) + 3 * (2 * wide + merger)


def test_the_tower_divided_or_whole_on_each_rank() -> None:
    one = qwen3_vl_tower_rank(1)
    assert one == 538_631_408
    moe = report("qwen3-vl-30b-a3b-instruct.json", max_model_len=32768, tp=2)
    assert moe["tower"]["bytes_per_rank"] == qwen3_vl_tower_rank(2) * 2 == 543_281_008
    assert moe["weights_bytes_per_rank"] == _text_rank(2) + 543_281_008
    data = report("qwen3-vl-30b-a3b-instruct.json", max_model_len=32768, tp=2, multimodal=multimodal.Settings("data"))
    assert data["tower"] == {**moe["tower"], "bytes_per_rank": one * 2, "replicated": True, "mm_encoder_tp_mode": "data"}
    assert data["weights_bytes_per_rank"] - moe["weights_bytes_per_rank"] == (one - qwen3_vl_tower_rank(2)) * 2
    assert data["notes"][-1].endswith("1.00 GiB a rank, whole on every rank (--mm-encoder-tp-mode data)")
    assert moe["notes"][-1].endswith("0.51 GiB a rank, its projections divided over the 2 ranks")


def _text_rank(tp: int) -> int:
    s = hfconfig.shape(json.loads((CONFIGS / "qwen3-vl-30b-a3b-instruct" / "config.json").read_text()), "q")
    return sum(weights.tensor_bytes(t, weights.quant_of(s), 2) for t in weights.tensors(s, tp) if not t.tower)


def test_heads_that_do_not_divide_leave_the_tower_whole() -> None:
    """Pixtral's 16 heads over 3 ranks: vLLM falls back to one whole copy a rank (vision.py)."""
    t = hfconfig.shape(json.loads((CONFIGS / "ministral-3-3b-2512" / "config.json").read_text()), "m").tower
    assert t is not None and weights.tower_split(t, 3) == 1 and weights.tower_split(t, 4) == 4


def test_no_image_no_video_loads_no_tower_from_0_11() -> None:
    zero = multimodal.Settings(limits={"image": 0, "video": 0})
    r = report("qwen3-vl-8b-instruct.json", max_model_len=32768, multimodal=zero)
    assert r["tower"] is None and r["weights_bytes_per_rank"] == 8_190_735_360 * 2 + rope(262144, 128)
    assert r["notes"][-1].startswith("--limit-mm-per-prompt allows no image or video: vLLM builds and loads no Qwen3-VL vision tower")
    old = report("qwen2.5-vl-3b.json", max_model_len=8192, multimodal=zero, engine_version="0.8.5")  # qwen2_5_vl.py, 0.8.5
    assert old["tower"] is not None
    assert "vLLM 0.8 builds the Qwen2.5-VL vision tower whatever --limit-mm-per-prompt says (the limit skips it from 0.11.0)" in old["notes"]
    only_video = report("qwen3-vl-8b-instruct.json", max_model_len=32768, multimodal=multimodal.Settings(limits={"image": 0}))
    assert only_video["tower"] is not None  # the tower serves video still
    # Gemma 3 tests the limit from 0.15.0 only (gemma3_mm.py through _mark_tower_model)
    image0 = multimodal.Settings(limits={"image": 0})
    assert report("gemma-3-12b-it.json", max_model_len=8192, multimodal=image0, engine_version="0.14.0")["tower"] is not None
    assert report("gemma-3-12b-it.json", max_model_len=8192, multimodal=image0, engine_version="0.15.0")["tower"] is None


def test_every_pipeline_stage_builds_the_tower() -> None:
    """The V1 model runner builds the tower on every stage (interfaces.py _mark_tower_model skips
    it after the first stage under Model Runner V2 only, from v0.33.0, the newest rules)."""
    r = report("qwen2.5-vl-3b.json", max_model_len=8192, pp=2, engine_version="0.20.0")
    tower = 668_684_288 * 2
    first, last = r["ranks"]
    # the tied table twice, and each stage its rope cache
    assert first["weights_bytes"] + last["weights_bytes"] == (3_085_938_688 + 151_936 * 2048) * 2 + 2 * tower + 2 * rope(4 * 128000, 128)
    v2_first, v2_last = report("qwen2.5-vl-3b.json", max_model_len=8192, pp=2)["ranks"]  # Model Runner V2: the tower on the first stage alone
    assert (v2_first["weights_bytes"], v2_last["weights_bytes"]) == (first["weights_bytes"], last["weights_bytes"] - tower)
    s = hfconfig.shape(json.loads((CONFIGS / "qwen2.5-vl-3b" / "config.json").read_text()), "q")
    assert ranks._place("visual.blocks.0.attn.qkv", False, ((0, 18), (18, 36)), True) == (0, 1)
    assert s.tower is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"image": 0, "video": 0}', {"image": 0, "video": 0}),
        ("image=2,video=0", {"image": 2, "video": 0}),
        ('{"image": {"count": 1, "width": 512}}', {"image": 1}),
    ],
)
def test_limits_as_vllm_spells_them(text: str, expected: dict) -> None:
    assert multimodal.parse_limits(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"picture": 0}', "--limit-mm-per-prompt: found modality 'picture', expected one of image, video, audio"),
        ("image=-1", "--limit-mm-per-prompt: found image='-1', expected a count of items from 0 to 1,000,000"),
        ("image", "--limit-mm-per-prompt: found 'image', expected modality=count, such as image=0"),
        ('{"image": 0', "--limit-mm-per-prompt: found "),
        ("[1]", "--limit-mm-per-prompt: found '[1]', expected modality=count"),
    ],
)
def test_bad_limits_are_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        multimodal.parse_limits(text)
    assert str(e.value).startswith(message)


def test_the_flags_on_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    config = str(CONFIGS / "qwen3-vl-30b-a3b-instruct" / "config.json")
    r = cli_json(["model", config, "--tp", "2", "--max-model-len", "32768", "--mm-encoder-tp-mode", "data", "--json"], capsys)
    assert r["tower"]["bytes_per_rank"] == 538_631_408 * 2 and r["tower"]["replicated"] is True
    r = cli_json(["model", config, "--tp", "2", "--max-model-len", "32768", "--limit-mm-per-prompt", '{"image": 0, "video": 0}', "--json"], capsys)
    assert r["tower"] is None and r["weights_bytes_per_rank"] == _text_rank(2)
    done = run_calc("model", config, "--max-model-len", "8192", "--mm-encoder-tp-mode", "tensor")
    assert_one_error_line(done, "--mm-encoder-tp-mode: found 'tensor', expected weights or data")


@pytest.mark.parametrize("name", ["gemma-3-12b-it", "ministral-3-3b-2512", "llava-1.5-7b-hf"])
def test_data_mode_falls_back_to_weights_where_the_model_does_not_support_it(name: str) -> None:
    """gemma3_mm.py, mistral3.py and llava.py set no supports_encoder_tp_data (0.11.0 to 0.33.0): vLLM
    warns and builds the tower as under weights, divided over the ranks (vllm/config/model.py)."""
    s = config_shape(name)
    for rel in ((0, 11), (0, 33)):
        built, notes = multimodal.apply(s, multimodal.Settings("data"), rel)
        assert built.tower is not None and not built.tower.data_parallel
        assert any("does not support it" in n for n in notes)


def test_data_parallel_encoder_needs_0_11() -> None:
    with pytest.raises(InputError, match=r"--mm-encoder-tp-mode: found data with vLLM 0.8, expected 0.11.0 or later"):
        report("qwen2.5-vl-3b.json", max_model_len=8192, tp=2, engine_version="0.8.5", multimodal=multimodal.Settings("data"))
    r = report("qwen2.5-vl-3b.json", max_model_len=8192, tp=2, engine_version="0.11.0", multimodal=multimodal.Settings("data"))
    assert r["tower"]["replicated"] is True and r["tower"]["bytes_per_rank"] == 668_684_288 * 2


def test_the_key_value_form_as_vllm_read_it() -> None:
    """vLLM 0.8.x's nullable_kvs lowercased the keys and refused a key given twice with two values
    ('Conflicting values specified for key'); the same value twice is one."""
    assert multimodal.parse_limits("IMAGE=0, Video=1") == {"image": 0, "video": 1}
    assert multimodal.parse_limits("image=2,image=2") == {"image": 2}
    with pytest.raises(InputError, match=r"^--limit-mm-per-prompt: found image=2 and image=3, expected one count a modality$"):
        multimodal.parse_limits("image=2,image=3")
    assert isinstance(multimodal.parse_limits("image=0"), multimodal.PairLimits)
    assert not isinstance(multimodal.parse_limits('{"image": 0}'), multimodal.PairLimits)


def test_the_key_value_form_is_gone_from_0_10() -> None:
    """From 0.10.0 vLLM parses the flag with json.loads alone (0.8.5's optional_type fell back to
    nullable_kvs and warned it 'will be removed in v0.10.0'): the note gives the JSON to pass."""
    shape = hfconfig.shape(json.loads((CONFIGS / "qwen3-vl-8b-instruct" / "config.json").read_text()), "q")
    pairs = multimodal.Settings(limits=multimodal.parse_limits("image=0,video=0"))
    _, notes = multimodal.apply(shape, pairs, (0, 33))
    assert notes[-1] == (
        "--limit-mm-per-prompt image=0,video=0: vLLM 0.33 takes JSON only and refuses the key=value form "
        """(vllm/engine/arg_utils.py, from 0.10.0); give it to vLLM as '{"image": 0, "video": 0}'"""
    )
    _, notes = multimodal.apply(shape, pairs, (0, 8))
    assert not any("JSON only" in n for n in notes)
    _, notes = multimodal.apply(shape, multimodal.Settings(limits=multimodal.parse_limits('{"image": 0, "video": 0}')), (0, 33))
    assert not any("JSON only" in n for n in notes)


def test_one_modality_limited_leaves_the_tower() -> None:
    """Qwen3-VL serves images and video: image=0 alone leaves video at vLLM's 999, and the tower
    is built; the note says which limit keeps it."""
    shape = hfconfig.shape(json.loads((CONFIGS / "qwen3-vl-8b-instruct" / "config.json").read_text()), "q")
    built, notes = multimodal.apply(shape, multimodal.Settings(limits={"image": 0}), (0, 33))
    assert built.tower is not None
    assert notes == [
        "--limit-mm-per-prompt allows no image but leaves video at 999: the Qwen3-VL vision tower is built, loaded and profiled; "
        "limit video to 0 as well to leave it out"
    ]


def test_the_qwen25_vl_attention_peak_by_release() -> None:
    """Qwen2.5-VL's tower attention as each release's qwen2_5_vl.py writes it, a patch (hidden 1,280,
    16 heads of 80, bfloat16): the block's residual, and the normed input the block passes in
    (`self.attn(self.norm1(x), ...)`, kept among the call's arguments); then in 0.11.0 the fused qkv
    output kept until the attention returns (3 x hidden), q, k, v copied contiguous (3 x hidden),
    q and k concatenated (2 x hidden) and rotated at once in float32 (qwen2_vl.py
    apply_rotary_pos_emb_vision: t.float(), a float32 result, its cast back, and the float32 cosines
    and sines, 40 values each): 38 x 1,280 + 320 B a patch, above the gated MLP's 2 + 2 + 3 x 2.672
    hidden; the tower carries its float32 rotary table (40 x 4 B) through the blocks.
    0.10.1.1 rotates q, then k: one hidden in float32 twice and one cast, 24 x 1,280 B.
    0.11.1 copies no q, k, v: q and k are rearranged into (two b) at b = 1, a view (a size-1 dimension
    merged), and rotated in float32 as before, `t.float()` their first copy; Qwen2-VL's own attention
    concatenates them (torch.cat, 2 x hidden) first.
    From 0.12.0 q and k are rotated in the model's dtype (copied first from 0.15.0), and the projection writes
    its output while all of it is held: 8 x hidden and the normed input and the output, 10 x 1,280 x 2 B,
    above the gated MLP's (1,280 + 3 x 3,420) x 2 B; above one rank the projection reduces out of place,
    one hidden more. The context layer's `.contiguous()` copies nothing (a batch of one).
    Qwen3-VL's blocks build the same attention.
    The pixels (14 x 14 x 2 x 3 values a patch) come from the processor already in bfloat16 from
    0.10 on (vLLM casts its floating outputs to the model's dtype); 0.8.x keeps them in float32."""
    s = hfconfig.shape(json.loads((CONFIGS / "qwen2.5-vl-3b" / "config.json").read_text()), "q")
    assert s.tower is not None and (s.tower.hidden, s.tower.heads) == (1280, 16)
    n, pixels = 65536, 65536 * 3 * 2 * 14 * 14 * 2
    b011, _ = multimodal.encoder_forward_peak(s.tower, 1, 1, 2, (0, 11))
    assert b011 == n * (1280 * (2 + 2 + 6 + 6 + 4 + 8 + 8 + 4) + 2 * 40 * 4 + 40 * 4) + pixels == 3_541_041_152
    assert multimodal.attention_live(s.tower, 1, 2, (0, 11, 0)) == multimodal.attention_live(s.tower, 1, 2, (0, 11))
    b0111, _ = multimodal.encoder_forward_peak(s.tower, 1, 1, 2, (0, 11, 1))
    assert b0111 == n * (1280 * (2 + 2 + 6 + 8 + 8 + 4) + 2 * 40 * 4 + 40 * 4) + pixels == 2_702_180_352
    q2 = hfconfig.shape(json.loads((CONFIGS / "qwen2-vl-7b-instruct" / "config.json").read_text()), "q2").tower
    assert q2 is not None and q2.kind == "qwen2-vl"
    # the normed input, the qkv output, qk_concat, the float32 copy and result, the cast back, and the tables
    q2_live = q2.hidden * (2 + 6 + 4 + 8 + 8 + 4) + 2 * 40 * 4  # cos and sin, 40 float32 values each
    assert multimodal.attention_live(q2, 1, 2, (0, 11, 1))[0] == q2_live
    assert "0.11.1 and 0.11.2" in multimodal.attention_live(s.tower, 1, 2, (0, 11, 2))[1]
    b010, _ = multimodal.encoder_forward_peak(s.tower, 1, 1, 2, (0, 10))
    assert b010 == n * 1280 * (2 + 6 + 6 + 4 + 4 + 2) + pixels
    b019, _ = multimodal.encoder_forward_peak(s.tower, 1, 1, 2, (0, 19))
    assert b019 == n * 1280 * (2 + 20) + pixels < b010 < b0111 < b011
    assert "0.11.0" in multimodal.attention_live(s.tower, 1, 2, (0, 11))[1]
    # the normed input, 8 x hidden and the projection's output, above the gated MLP's
    assert multimodal.attention_live(s.tower, 1, 2, (0, 19))[0] == 10 * 1280 * 2 > (1280 + 3 * 3420) * 2
    # up to 0.14.x the rotation reads the rearranged qk in place (a view at b = 1) and writes one tensor:
    # no copy before it, 8 x hidden in all; 0.15.0 adds `qk_reshaped.contiguous()`; Qwen2-VL's torch.cat copies throughout
    assert multimodal.attention_live(s.tower, 1, 2, (0, 12))[0] == multimodal.attention_live(s.tower, 1, 2, (0, 14))[0] == 8 * 1280 * 2
    assert multimodal.attention_live(s.tower, 1, 2, (0, 15))[0] == 10 * 1280 * 2
    assert multimodal.attention_live(q2, 1, 2, (0, 13))[0] == 10 * 1280 * 2
    # divided over two ranks but three whole: the normed input, the projection's output and its reduced copy
    assert multimodal.attention_live(s.tower, 2, 2, (0, 19))[0] == (3 * 1280 + 8 * 1280 // 2) * 2
    q3 = hfconfig.shape(json.loads((CONFIGS / "qwen3-vl-8b-instruct" / "config.json").read_text()), "q3").tower
    assert q3 is not None and q3.kind == "qwen3-vl"
    assert multimodal.attention_live(q3, 1, 2, (0, 11)) == multimodal.attention_live(replace(s.tower, hidden=q3.hidden), 1, 2, (0, 11))
    b08, _ = multimodal.encoder_forward_peak(s.tower, 1, 1, 2, (0, 8))  # float32 pixels
    assert b08 == n * 1280 * (2 + 6 + 6 + 4 + 4 + 2) + 2 * pixels


def test_the_qwen_attention_of_0_11_0_gathers_qkv_under_tp() -> None:
    """Under --mm-encoder-tp-mode weights vLLM 0.11.0 divides the tower's q, k and v heads over the ranks,
    and split_qkv then gathers every rank's qkv whole (qwen2_5_vl.py all_gather_interleave: a list of
    TP tensors, 3 x hidden, and their torch.cat, 3 x hidden more, beside the rank's own 3 x hidden / TP
    and the normed input). Qwen3-VL-30B-A3B's tower (hidden 1,152) at TP 4: (1 + 0.75 + 6) x 1,152 x 2 B a
    patch, above the rotation's and the projection's. At TP 2 the rotation is still the larger, and
    0.11.1 gathers nothing. Start 121 (TP 4, 0.11.0): the tower's forward over its 49,152 patches comes
    to 1.32 GiB, below the 2.34 GiB of outputs the profile keeps alone, so the peak is not the tower's."""
    s = hfconfig.shape(json.loads((CONFIGS / "qwen3-vl-30b-a3b-instruct" / "config.json").read_text()), "q3")
    assert s.tower is not None and (s.tower.hidden, s.tower.heads) == (1152, 16)
    h = 1152
    live, source = multimodal.attention_live(s.tower, 4, 2, (0, 11))
    assert live == (h + 3 * h // 4 + 6 * h) * 2 and "gathered whole" in source
    rotation2 = (h + (3 + 3 + 2 + 2) * h // 2) * 2 + (4 * h // 2) * 4 + 72 * 4
    assert multimodal.attention_live(s.tower, 2, 2, (0, 11))[0] == rotation2 > (h + 3 * h // 2 + 6 * h) * 2
    assert "gathered" not in multimodal.attention_live(s.tower, 4, 2, (0, 11, 1))[1]
    p = multimodal.encoder_profile(s, multimodal.Settings(), 2048, 256, 65536, (0, 11), tp=4)
    assert p is not None and p.patches == 49152 and p.forward_bytes < p.held_bytes
    assert round(p.forward_bytes / GiB, 2) == 1.32 and round(p.held_bytes / GiB, 2) == 2.34


def test_the_encoder_peak_against_the_l4_start() -> None:
    """logs/public/81 (v0.11.0, one L4, max_num_batched_tokens 2048): 'Available KV cache memory:
    9.26 GiB' after 'Model loading took 7.1550 GiB'. The tower's forward over the one image of
    16,384 tokens sets the profile's peak (3.30 GiB, the attention of 0.11.0 above); the pool comes
    1.5 % under the printed: of the 22.03 GiB x 0.9 the log leaves 0.11 GiB for non-torch memory, where the
    one-GPU median (H100 starts) is 0.25 GiB (the tower's forward modeled from 0.19.0's code left it 12.6 % over)."""
    s = hfconfig.shape(json.loads((CONFIGS / "qwen2.5-vl-3b" / "config.json").read_text()), "q")
    text = LOG_81.read_text()
    assert "Available KV cache memory: 9.26 GiB" in text
    card = predict.card_from_total("22.03 GiB")  # the L4 as the catalog gives it (nvidia-l4)
    p = predict.predict(s, card, predict.Start(max_model_len=8192, max_num_batched_tokens=2048, engine_version="0.11.0"),
                        given=predict.Given(round(Fraction("7.1550") * GiB)))  # fmt: skip
    assert p.activation.bytes == 3_541_041_152 and "0.11.0: q, k and v copied, qk concatenated and rotated in float32" in p.activation.source
    printed = round(Fraction("9.26") * GiB)
    assert Fraction(-16, 1000) < Fraction(p.available_kv_bytes - printed, printed) < Fraction(-13, 1000)
    left = round(Fraction("22.03") * GiB * Fraction(9, 10)) - round(Fraction("7.1550") * GiB) - printed - p.activation.bytes
    assert round(left / GiB, 2) == 0.11 and p.non_torch.bytes == round(Fraction("0.25") * GiB)


def test_release_0_11_widens_short_outputs_to_the_budget() -> None:
    """vLLM 0.11.x (gpu_model_runner.py profile_run) widens each item's encoder output shorter than
    the encoder budget to the whole budget (`output.new_zeros((encoder_budget, hidden))`) before
    keeping it; 0.12.x widens to the most tokens an item gives (what Gemma 3 writes already), and
    0.13.0 keeps the outputs as written. Gemma 3 12B at 8,192 tokens: 32 items of 256 tokens, each
    kept as 8,192 x 3,840 at 0.11.0 (1.88 GiB), as 256 x 3,840 from 0.12.0 (0.06 GiB)."""
    g = hfconfig.shape(json.loads((CONFIGS / "gemma-3-12b-it" / "config.json").read_text()), "g")
    wide = multimodal.encoder_profile(g, multimodal.Settings(), 8192, 1024, 8192, (0, 11))
    kept = multimodal.encoder_profile(g, multimodal.Settings(), 8192, 1024, 8192, (0, 12))
    assert wide is not None and kept is not None and wide.items == kept.items == 32
    assert wide.held_bytes == 32 * 8192 * 3840 * 2 and kept.held_bytes == 32 * 256 * 3840 * 2
    assert "each, widened" in wide.source and "widened" not in kept.source
    # an item as long as the budget is not widened (Qwen2.5-VL's one image of 16,384 tokens)
    q = hfconfig.shape(json.loads((CONFIGS / "qwen2.5-vl-3b" / "config.json").read_text()), "q")
    one = multimodal.encoder_profile(q, multimodal.Settings(), 2048, 256, 8192, (0, 11))
    assert one is not None and one.held_bytes == 16384 * 2048 * 2


def test_the_items_round_down_from_0_10() -> None:
    """Mistral Small 3.1's images give 3,080 tokens (55 x 55 merged patches and a break token a
    row). At a budget of 8,192 tokens 0.8.x profiles cdiv(8192, 3080) = 3 images
    (gpu_model_runner.py profile_run, 0.8.5); 0.10.1.1 already takes 8192 // 3080 = 2
    (vllm/v1/worker/utils.py MultiModalBudget.get_max_items), as the v0.19.0 start prints
    ('profiled with 2 image items', logs/starts/120)."""
    m = hfconfig.shape(json.loads((CONFIGS / "mistral3-24b-flux2-text-encoder" / "config.json").read_text()), "m")
    assert m.tower is not None and m.tower.image_tokens == 55 * 56
    items = {rel: multimodal.encoder_profile(m, multimodal.Settings(), 8192, 1024, 8192, rel) for rel in ((0, 8), (0, 10), (0, 19))}
    assert {rel: p.items for rel, p in items.items() if p is not None} == {(0, 8): 3, (0, 10): 2, (0, 19): 2}
    log = (ROOT / "logs" / "starts" / "120-v0190-mistral-small-31-24b-vl-h100-llmd-planner.log").read_text()
    assert "budget of 8192 tokens, and profiled with 2 image items" in log


def test_a_video_outweighs_the_image_as_each_release_sizes_it() -> None:
    """The profile runs the modality whose item has the most tokens (get_modality_with_max_tokens).
    Qwen2.5-VL's video (qwen2_vl.py get_num_frames_with_most_features): frames at the largest image
    size (16,384 tokens a pair of frames), as many as max_model_len holds, at most 14 from 0.11.0
    (16 before, and one image's tokens taken off the length first). At 8,192 tokens one frame pair
    ties the image (the image up to 0.16.x, the first of the largest; video from 0.17.0, by name);
    at 32,768 four frames give 32,768 tokens, the budget, and twice the image's patches; at 128,000,
    14 frames, 114,688 tokens; 0.10.1.1 holds 12 frames there (128,000 - 16,384 over 16,384 a pair).
    --limit-mm-per-prompt with no video keeps the image."""
    q = hfconfig.shape(json.loads((CONFIGS / "qwen2.5-vl-3b" / "config.json").read_text()), "q")
    assert q.tower is not None
    item = multimodal.largest_item
    assert (item(q.tower, multimodal.Settings(), 8192, (0, 11)).modality, item(q.tower, multimodal.Settings(), 8192, (0, 20)).modality) == ("image", "video")
    long = item(q.tower, multimodal.Settings(), 32768, (0, 11))
    assert (long.modality, long.tokens, long.patches) == ("video", 32768, 32768 * 4)
    assert item(q.tower, multimodal.Settings(), 128000, (0, 11)).tokens == 7 * 16384
    assert item(q.tower, multimodal.Settings(), 128000, (0, 10)).tokens == 6 * 16384
    assert item(q.tower, multimodal.Settings(limits={"video": 0}), 128000, (0, 11)).modality == "image"
    p = multimodal.encoder_profile(q, multimodal.Settings(), 2048, 256, 32768, (0, 11))
    assert p is not None and (p.budget_tokens, p.items, p.patches) == (32768, 1, 131072) and "1 video items" in p.source


def test_the_qwen3_vl_video_profile_of_0_11_against_its_start() -> None:
    """logs/starts/121 (v0.11.0, Qwen3-VL-30B-A3B, TP 4, max_model_len 65,536): 'Encoder cache will be
    initialized with a budget of 153600 tokens, and profiled with 1 video items'. qwen3_vl.py 0.11.0:
    frames of the largest image (4,096 px a side) shrunk by the video processor's smart_resize so a
    clip holds at most 25,165,824 pixels (longest_edge), from 2 frames up while the clip's tokens stay
    within max_model_len, capped at 24,576 frames: 32 x 32 px frames, 12,288 temporal pairs of one
    token each; the budget counts each token 12.5 (timestamps and vision marks): 153,600. The tower
    sees 12,288 x 4 patches; the outputs (12,288 rows of 2,048 x 4 with the deepstack mergers') are
    widened to the budget's 153,600 rows (0.11.x), 2.34 GiB kept through the language model's pass.
    From 0.13.0 the 12.5 is gone and the image (16,384 tokens) is the larger."""
    s = hfconfig.shape(json.loads((CONFIGS / "qwen3-vl-30b-a3b-instruct" / "config.json").read_text()), "q3")
    assert s.tower is not None
    text = (ROOT / "logs" / "starts" / "121-v0110-qwen3-vl-30b-a3b-tp4-rtx3090-video-profile-sipeed.log").read_text()
    assert "budget of 153600 tokens, and profiled with 1 video items" in text
    assert multimodal._qwen3_video_tokens(24576, 4096, 16, 2, 2) == 12288
    p = multimodal.encoder_profile(s, multimodal.Settings(), 2048, 256, 65536, (0, 11), tp=4)
    assert p is not None and (p.budget_tokens, p.items, p.tokens_per_item, p.patches) == (153600, 1, 153600, 12288 * 4)
    assert p.held_bytes == 153600 * 2048 * 4 * 2 and "1 video items" in p.source
    later = multimodal.encoder_profile(s, multimodal.Settings(), 2048, 256, 65536, (0, 13), tp=4)
    assert later is not None and (later.budget_tokens, later.items) == (16384, 1) and "image items" in later.source


def test_the_qwen3_vl_encoder_peak_against_its_v0_28_starts() -> None:
    """logs/starts/199 to 204 (v0.28.0, Model Runner V2, Qwen3-VL-8B, one RTX 4090) print '2.26 GiB for peak
    activation', cached or cold: the tower's forward over one image of 65,536 patches (16,384 tokens) sets it.
    A patch holds in the last blocks its residual, the attention at its projection (the normed input, the
    fused qkv, the q and k copy and its rotation, the attention's output and the projection's, 10 x 1,152
    x 2 B), the bfloat16 pixels (3 x 2 x 16 x 16 x 2 B), the position embeddings (1,152 x 2 B), the rotary
    cosines and sines (2 x 36 x 2 B) and, a token of four patches, the three deepstack features (4,096 x 2 B
    each): within the printed figure's rounding. Without the projection's output and the rotary tables it
    came to 2.11 GiB."""
    s = hfconfig.shape(json.loads((CONFIGS / "qwen3-vl-8b-instruct" / "config.json").read_text()), "q3")
    assert s.tower is not None and (s.tower.hidden, s.tower.heads, s.tower.deepstack) == (1152, 16, 3)
    text = (ROOT / "logs" / "starts" / "201-v0280-qwen3-vl-8b-rtx4090-v2-runner-util090-llm-infra-bench.log").read_text()
    assert "2.26 GiB for peak activation" in text and "profiled with 1 image items" in text
    n = 65536
    peak, patches = multimodal.encoder_forward_peak(s.tower, 1, 1, 2, (0, 28))
    per_patch = 1152 * 2 + 10 * 1152 * 2 + 3 * 2 * 16 * 16 * 2 + 1152 * 2 + 2 * 36 * 2
    assert patches == n and peak == n * per_patch + 3 * (n // 4) * 4096 * 2
    assert round(Fraction("2.255") * GiB) <= peak < round(Fraction("2.265") * GiB)
    assert multimodal.qwen3_vl_carried(s.tower, n, 2, (0, 11)) == multimodal.qwen3_vl_carried(s.tower, n, 2, (0, 12)) - 2 * n * 36 * 2
