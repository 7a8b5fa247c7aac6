"""Kimi K2.5 (KimiK25ForConditionalGeneration): a DeepSeek-V3 language model, read by the DeepSeek reader
from text_config, and the MoonViT tower with its projector, counted as kimi_k25_vit.py builds them; the
count against the published totals, the checkpoint's bytes, the tower's split over the ranks, the KV cache
a token, the release window and the command line.

No copy of moonshotai/Kimi-K2.5's config.json was found at a citable address. The fixture
(tests/data/configs/kimi-k2.5) is the config as transformers 5.7.0 prints it (KimiK25Config, its remote
code) in a public model report of a local copy of the checkpoint (code index file 62530201892, repository
not named), written as JSON verbatim: the text config carries the fields transformers fills in (id2label,
return_dict...), which no reader takes. The same report lists the checkpoint's tensors and sums them to
554.27 GiB, which the bytes below meet. The class is unchecked."""

from __future__ import annotations

import json

import pytest
from conftest import cli_json, config_path, config_refusal, config_shape, config_text, parameters

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, multimodal, weights
from calc.engine.predict import release
from calc.units import InputError

K25 = "kimi-k2.5"
D, MLP = 1152, 4304  # MoonViT's width and MLP
BLOCK = 2 * 2 * D + 3 * D * D + 3 * D + D * D + D + MLP * D + MLP + D * MLP + D  # norm0, norm1, wqkv, wo, fc0, fc1 (with biases)
ENCODER = 27 * BLOCK + 2 * D + 64 * 64 * D + D * 3 * 14 * 14 + D  # final_layernorm, the position table, the patch embedding
PROJECTOR = 2 * D + 4608 * 4608 + 4608 + 7168 * 4608 + 7168  # pre_norm, linear_1 (1,152 x 2 x 2), linear_2 to 7,168
EXPERT = 3 * 2048 * 7168


def test_kimi_k25_meets_its_published_size() -> None:
    """1T parameters, 32.86B active (NVIDIA's technical blog on Kimi K2.5; the model card's 1T and 32B), the
    vision encoder MoonViT of 400M (the model card's table). The language model is Kimi K2's, layer for
    layer: 1,026,408,209,408. The encoder counts 416,866,032 (0.42B) and the projector 54,277,888;
    1,026,879,353,328 in all. Active: all but 376 of the 384 routed experts in each of the 60 MoE layers,
    less the tower: 32,861,477,888."""
    s = config_shape(K25)
    assert (s.layers.count(hfconfig.MLA), s.kv_lora_rank, s.drafter_layers) == (61, 512, 0)
    text = parameters(s, tower=False)
    assert text == parameters(config_shape("kimi-k2-instruct")) == 1_026_408_209_408
    assert parameters(s, tower=True) == ENCODER + PROJECTOR == 471_143_920
    assert (ENCODER, round(ENCODER / 1e8)) == (416_866_032, 4)
    total = parameters(s)
    assert total == 1_026_879_353_328 and round(total / 1e12) == 1
    assert total - 60 * 376 * EXPERT - ENCODER - PROJECTOR == 32_861_477_888
    assert hfconfig.unchecked_note("KimiK25ForConditionalGeneration")


def test_kimi_k25_checkpoint_bytes() -> None:
    """INT4 experts in groups of 32 (compressed-tensors pack-quantized: half a byte and a bf16 scale a
    group), the rest bf16 as the ignore list says: lm_head, every self_attn, the shared_experts (vLLM's and
    the checkpoint's name) and the dense MLP of layer 0 ("re:.*mlp\\.(gate|up|gate_up|down)_proj.*", read as
    one pattern a choice). 595,147,547,616 B = 554.27 GiB, the report's sum of the checkpoint's tensors."""
    s = config_shape(K25)
    q = weights.quant_of(s)
    by = {t.path: t for t in weights.tensors(s)}
    assert weights.tensor_bytes(by["model.layers.0.mlp.gate_proj"], q, 2) == 18432 * 7168 * 2
    assert weights.tensor_bytes(by["model.layers.1.mlp.shared_expert.down_proj"], q, 2) == 7168 * 2048 * 2
    assert weights.tensor_bytes(by["model.layers.1.mlp.experts.down_proj"], q, 2) == 384 * (7168 * 2048 // 2 + 7168 * 2048 // 32 * 2)
    total = sum(weights.tensor_bytes(t, q, 2) for t in weights.tensors(s) if not t.buffer)
    assert total == 595_147_547_616 and f"{total / 2**30:.2f}" == "554.27"
    r = modeled.model_report(modeled.ModelInputs(config_text(K25), K25, tp=8, max_model_len=32768))
    assert r.weights_bytes_per_rank == weights.per_rank(s, 8).model
    assert any("MoonViT vision tower (27 blocks)" in n for n in r.notes)
    assert any("MoonViT vision tower's encoder profile" in n and "not modeled" in n for n in r.notes)


@pytest.mark.parametrize(("tp", "split"), [(1, 1), (2, 2), (4, 4), (8, 8), (16, 16), (32, 1)])
def test_the_tower_over_the_ranks(tp: int, split: int) -> None:
    """wqkv, wo, fc0 and fc1 divide over the ranks where the 16 heads do; at 32 ranks vLLM builds the tower
    whole on each (vision.py is_vit_use_data_parallel(num_heads), kimi_k25.py from 0.26.0); the projector
    (ReplicatedLinear), the norms and the embeddings are whole on every rank."""
    s = config_shape(K25)
    assert s.tower is not None and weights.tower_split(s.tower, tp) == split
    by = {t.path: t for t in weights.tower_tensors(s.tower, tp)}
    assert (by["vision_tower.encoder.blocks.0.wqkv"].rows, by["vision_tower.encoder.blocks.0.mlp.fc1"].cols) == (3 * D // split, MLP // split)
    assert by["mm_projector.linear_2"].rows == 7168 and by["mm_projector.linear_1"].cols == 4 * D
    data = multimodal.apply(s, multimodal.Settings(mm_encoder_tp_mode="data"), (0, 33))[0]
    assert data.tower is not None and weights.tower_split(data.tower, tp) == 1


def test_kimi_k25_kv_a_token() -> None:
    """DeepSeek-V3's MLA: (512 + 64) x 2 B x 61 layers = 70,272 B a token, on every rank; fp8 halves it."""
    s = config_shape(K25)
    for tp in (1, 8):
        assert kvlayout.request(s, kvlayout.Settings(tp=tp), 262144, kvlayout.version(None)).bytes_per_token == 576 * 2 * 61 == 70272
    assert kvlayout.request(s, kvlayout.Settings(kv_cache_dtype="fp8"), 262144, kvlayout.version(None)).bytes_per_token == 576 * 61


def test_the_registry_window_and_the_limit() -> None:
    """vllm/model_executor/models/registry.py: KimiK25ForConditionalGeneration from 0.15.0 (not in 0.14.0)
    to 0.33.0. --limit-mm-per-prompt '{"vision_chunk": 0}' leaves the tower unbuilt from 0.16.0
    (_mark_tower_model(vllm_config, "vision_chunk")); 0.15.0 builds it whatever the limit."""
    arch = "KimiK25ForConditionalGeneration"
    assert hfconfig.outside_own_code(arch, release("0.15.0")) is None and hfconfig.outside_own_code(arch, release(None)) is None
    with pytest.raises(InputError, match=r"0.14.0 does not register KimiK25ForConditionalGeneration .* expected --engine-version 0.15 or later"):
        modeled.model_report(modeled.ModelInputs(config_text(K25), K25, max_model_len=4096, engine_version="0.14.0"))
    s = config_shape(K25)
    zero = multimodal.Settings(limits={"vision_chunk": 0})
    assert multimodal.apply(s, zero, (0, 15))[0].tower is not None
    assert multimodal.apply(s, zero, (0, 16))[0].tower is None


def _vision(change: dict) -> dict:
    data: dict = json.loads(config_text(K25))
    return {"vision_config": {**data["vision_config"], **change}}


BAD = [
    (_vision({"vt_hidden_size": 1024}), "vision_config.vt_hidden_size: found 1024, expected 1152: vLLM builds vision_config.hidden_size"),
    (_vision({"mm_projector_type": "patchmergerv2"}), "vision_config.mm_projector_type: found 'patchmergerv2', expected patchmerger"),
    (_vision({"merge_kernel_size": [2, 3]}), "vision_config.merge_kernel_size: found [2, 3], expected two equal whole numbers"),
    ({"vision_config": None}, "vision_config: found nothing, expected an object describing the vision tower"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=["vt_hidden_size", "projector", "merge", "no-vision"])
def test_bad_input_is_one_line_naming_the_field(change: dict, message: str) -> None:
    assert message in config_refusal(K25, change)


@pytest.mark.parametrize("args", [["--tp", "8", "--max-model-len", "auto"], ["--tp", "8", "--pp", "2", "--kv-cache-dtype", "fp8", "--max-model-len", "131072"]])
def test_the_command_line_predicts_a_pool(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    out = cli_json(["model", str(config_path(K25)), *args, "--gpu", "h200", "--json"], capsys)
    assert out["architecture"] == "KimiK25ForConditionalGeneration" and out["layers"] == "61 mla"
    assert out["verdict"] and out["kv_bytes_per_token"] > 0
