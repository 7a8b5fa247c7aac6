"""Google's Gemma 4 (Gemma4ForConditionalGeneration, Gemma4ForCausalLM), read by vLLM's model code
(vllm/model_executor/models/gemma4.py and gemma4_mm.py, registered from 0.19.0 to 0.33.0): the dense
31B with its own head size and KV heads on the full layers, E4B with per-layer embeddings and KV-shared
layers, and the MoE layers; each count against the published total, the KV cache a token and a
request, the split over the ranks, and the command line.

No whole config.json of a google/gemma-4-* checkpoint was found at a citable address
(models/configs/SOURCES.yaml says where was looked), so both classes are unchecked and the tests read
three fixtures (tests/data/configs/):
- gemma-4-31b-it: transformers 5.7.0's printed Gemma4Config of google/gemma-4-31B-it, whole, in a public
  model report (code index file 62810419502, repository not named), its JSON copied as printed;
- gemma-4-e4b: the config.json of a fine-tune of google/gemma-4-E4B-it (Jackrong's Gemopus-4-E4B-it,
  quantized with auto-round, from unsloth/gemma-4-E4B-it), printed whole in a public session log (code
  index file 53822000136), without its quantization_config, which is the fine-tune's and not Google's;
- gemma-4-a4b-98e-v6-coder-it: the config.json of ManniX-ITA/gemma-4-A4B-98e-v6-coder-it, an expert-pruned
  derivative of Gemma 4 26B-A4B (98 experts a layer where the 26B has 128), printed by `head -100` in a
  public session log (code index file 54800082081) and cut there after transformers_version: its
  vision_config, which these readings do not read, is missing.
No config of E2B or of 26B-A4B itself was found; 26B-A4B is checked through the pruned model's count
with the 30 missing experts a layer added by hand. Gemma 4 12B (Gemma4UnifiedForConditionalGeneration,
gemma4_unified.py, registered from 0.23.0) reads tests/data/configs/gemma-4-12b: google/gemma-4-12B's
config.json as the Hub served it (revision 56820d7d8cbe8e47975a53325439ed272e91cff2), printed whole in a
public session log (code index file 54518386891).

Published totals: Gemma 4 31B IT, "Total Parameters: 30.7B" (NVIDIA's model card,
https://docs.api.nvidia.com/nim/reference/google-gemma-4-31b-it); 26B A4B, 25.2B in total (the Gemma 4
model specs table, https://gemma4pro.xyz/zh/guide: "26B A4B MoE 25.2..."); E4B, about 8B with embeddings,
its vision encoder about 150M and its audio encoder about 300M (the specifications table of
https://skills.cat/skills/luckyegg168/gemma-4: "Total Parameters (with embeddings) ~5.1B ~8B ~30.7B",
"Vision Encoder Params ~150M ~150M ~550M", "Audio Encoder Params ~300M ~300M N/A", for E2B, E4B and 31B).
12B, "11.95B per the model card", its vision embedder "~35M-param"
(https://labindex.pages.dev/outputs/google/gemma-4-12b). The towers of the other sizes are built by
transformers' AutoModel and not modeled: their counts here are the language models', and a start is sized
with --limit-mm-per-prompt leaving the towers unbuilt; 12B's embedders are counted."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import assert_missing_field_refused, parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, multimodal, weights
from calc.units import InputError

FIXTURES = Path(__file__).resolve().parent / "data" / "configs"
DENSE, SMALL, MOE, UNIFIED = "gemma-4-31b-it", "gemma-4-e4b", "gemma-4-a4b-98e-v6-coder-it", "gemma-4-12b"
NO_TOWERS = '{"image": 0, "video": 0, "audio": 0}'
SHARED = (hfconfig.SHARED_FULL, hfconfig.SHARED_SLIDING)


def data(name: str) -> dict:
    loaded: dict = json.loads((FIXTURES / name / "config.json").read_text())
    return loaded


def text_only(name: str, config: dict | None = None) -> hfconfig.Shape:
    """The language model alone, as a start that allows no image, video or audio builds it."""
    s = hfconfig.shape(config or data(name), name)
    built, _ = multimodal.apply(s, multimodal.Settings(limits={"image": 0, "video": 0, "audio": 0}), (0, 33))
    return built


def causal(name: str) -> dict:
    """The text-only class over the same fields, at the top level."""
    return {**data(name)["text_config"], "architectures": ["Gemma4ForCausalLM"]}


# 31B: 50 sliding layers (32 heads, 16 KV heads of 256) and 10 full ones (4 KV heads of 512, attention_k_eq_v);
# four norms a layer, q_norm and k_norm of the head, the gated MLP; the embedding tied
H, V, FFN = 5376, 262144, 21504
NORMS_MLP = 4 * H + 3 * FFN * H
SLIDE = 32 * 256 * H + 2 * 16 * 256 * H + H * 32 * 256 + 2 * 256 + NORMS_MLP
FULL = 32 * 512 * H + 2 * 4 * 512 * H + H * 32 * 512 + 2 * 512 + NORMS_MLP  # V built too: qkv_proj holds K twice
DENSE_TOTAL = V * H + H + 50 * SLIDE + 10 * FULL


def test_gemma4_31b_meets_its_published_size() -> None:
    """30,807,445,760 parameters as vLLM builds them. A k_eq_v layer's checkpoint ships k_proj alone and
    vLLM loads it into the K and the V part of qkv_proj, so the checkpoint holds 10 x 2,048 x 5,376 fewer:
    30,697,345,280, the published 30.7B."""
    s = text_only(DENSE)
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.full_kv, s.sliding_window, s.tie_embeddings) == (
        "Gemma4ForConditionalGeneration", 32, 16, 256, (4, 512), 1024, True)  # fmt: skip
    assert s.layers == ((hfconfig.SLIDING,) * 5 + (hfconfig.FULL,)) * 10
    assert parameters(s) == DENSE_TOTAL == 30_807_445_760
    assert round((DENSE_TOTAL - 10 * 4 * 512 * H) / 1e9, 1) == 30.7
    by = {t.path: t for t in weights.tensors(s)}
    full = "model.layers.5.self_attn"
    assert (by[f"{full}.k_proj"].rows, by[f"{full}.v_proj"].rows, by[f"{full}.q_norm"].rows) == (2048, 2048, 512)
    assert (by["model.layers.0.self_attn.k_proj"].rows, by["model.layers.0.self_attn.q_proj"].rows) == (4096, 8192)
    # each kind its own cos/sin cache: the full layers' proportional rope spans the whole 512 (gemma4_rope.py)
    assert [(r.kind, r.positions, r.rotary_dim) for r in s.ropes] == [("full", 262144, 512), ("sliding", 262144, 256)]
    assert hfconfig.unchecked_note(s.architecture)


def test_gemma4_e4b_language_model_count() -> None:
    """7,463,013,376 parameters as vLLM 0.30.0 and later build E4B's language model: the tied embedding,
    the per-layer embedding (262,144 x 42 x 256) and its projection and norm, 24 layers of their own (20
    sliding, 4 full of 512-wide heads with the same 2 KV heads, no k_eq_v) and 18 KV-shared ones holding
    q_proj, o_proj and q_norm alone, each with the per-layer gate and projection and five norms. The
    checkpoint's shared layers also ship k_proj, v_proj and k_norm (7,518,068,992). With the towers'
    published 150M and 300M that is 8.0B, the published total with embeddings."""
    h, hpl, ffn, d, dg = 2560, 256, 10240, 256, 512
    s = text_only(SMALL)
    assert (s.full_kv, s.kv_heads, s.per_layer) == ((2, 512), 2, hfconfig.PerLayerInputs(hidden=256, vocab=262144))
    assert s.layers[:24].count(hfconfig.FULL) == 4 and s.layers[24:].count(hfconfig.SHARED_FULL) == 3
    assert s.layers[24:].count(hfconfig.SHARED_SLIDING) == 15
    inputs = V * h + h + V * 42 * hpl + 42 * hpl * h + hpl
    common = 5 * h + 3 * ffn * h + 2 * hpl * h

    def own(width: int) -> int:
        return 8 * width * h + 2 * 2 * width * h + h * 8 * width + 2 * width

    def shared(width: int) -> int:
        return 2 * 8 * width * h + width

    total = inputs + 24 * common + 20 * own(d) + 4 * own(dg) + 15 * (common + shared(d)) + 3 * (common + shared(dg))
    assert parameters(s) == total == 7_463_013_376
    checkpoint = total + 15 * (2 * 2 * d * h + d) + 3 * (2 * 2 * dg * h + dg)
    assert checkpoint == 7_518_068_992 and round((checkpoint + 150e6 + 300e6) / 1e9, 1) == 8.0
    assert s.ropes[0].rotary_dim == 512 and s.ropes[1].rotary_dim == 256


def test_gemma4_double_wide_mlp_on_the_shared_layers() -> None:
    """use_double_wide_mlp (E2B's) doubles the MLP of the KV-shared layers alone (gemma4.py Gemma4DecoderLayer);
    attention_k_eq_v without num_global_key_value_heads keeps the sliding layers' KV heads on the full ones."""
    config = data(SMALL)
    config["text_config"] = {**config["text_config"], "use_double_wide_mlp": True, "attention_k_eq_v": True}
    s = text_only(SMALL, config)
    assert {m.intermediate for m in s.mlps[:24]} == {10240} and {m.intermediate for m in s.mlps[24:]} == {20480}
    assert s.full_kv == (2, 512)
    assert parameters(s) == parameters(text_only(SMALL)) + 18 * 3 * 10240 * 2560


def test_gemma4_moe_layers_and_the_26b_total() -> None:
    """Each layer runs the dense MLP (2,112) beside 98 experts of 704: the router (proj of 98 rows, a
    scale of 2,816, per_expert_scale) and three more norms. With the 26B-A4B's 128 experts a layer, 30 x 30
    experts more: 25,247,559,680 as vLLM builds it, 25,233,141,760 in the checkpoint (no v_proj on the
    5 k_eq_v layers): the published 25.2B."""
    h = 2816
    s = text_only(MOE)
    assert (s.heads, s.kv_heads, s.full_kv, s.mlps[0].experts, s.mlps[0].expert_intermediate) == (16, 8, (2, 512), 98, 704)
    layer = "model.layers.0"
    by = {t.path: t for t in weights.tensors(s)}
    assert {f"{layer}.mlp.gate_proj", f"{layer}.router.proj", f"{layer}.router.scale", f"{layer}.experts.down_proj",
            f"{layer}.post_feedforward_layernorm_1", f"{layer}.pre_feedforward_layernorm_2"} <= set(by)  # fmt: skip
    assert (by[f"{layer}.experts.gate_up_proj"].count, by[f"{layer}.router.per_expert_scale"].rows) == (98, 98)
    slide = 16 * 256 * h + 2 * 8 * 256 * h + h * 16 * 256 + 2 * 256
    full = 16 * 512 * h + 2 * 2 * 512 * h + h * 16 * 512 + 2 * 512
    block = 7 * h + 3 * 2112 * h + 98 * h + h + 98 + 98 * 3 * 704 * h
    assert parameters(s) == V * h + h + 25 * slide + 5 * full + 30 * block == 19_892_371_580
    with_128 = parameters(s) + 30 * 30 * (3 * 704 * h + h + 1)
    assert with_128 == 25_247_559_680 and round((with_128 - 5 * 2 * 512 * h) / 1e9, 1) == 25.2


def test_gemma4_kv_cache() -> None:
    """31B: a token of the 10 full layers 10 x 2 x 4 x 512 x 2 = 81,920 B; a sliding page 16 x 2 x 16 x
    256 x 2 = 262,144 B, a full one grown to 32 tokens to match; groups of 10 layers, five sliding and one
    full. At 262,144 tokens (two batches of 8,192 in flight) a full group holds 8,192 pages and a sliding one
    cdiv(1,023 + 16,384, 16) + 1 = 1,089. E4B: its 18 shared layers hold none; 4 x 2 x 2 x 512 x 2 =
    16,384 B a token. The pruned MoE: 5 x 2 x 2 x 512 x 2 = 20,480 B."""
    r = kvlayout.request(text_only(DENSE), kvlayout.Settings(), 262144, kvlayout.version(None))
    assert r.bytes_per_token == 10 * 2 * 4 * 512 * 2 == 81920
    kinds = [(g.spec.kind, g.spec.block_size, g.spec.page_bytes) for g in r.layout.groups]
    assert kinds == [("sliding", 16, 262144)] * 5 + [("full", 32, 262144)] and r.layout.group_size == 10
    assert r.pages_per_request == 8192 + 5 * 1089
    assert r.bytes_per_request == (8192 + 5 * 1089) * 10 * 262144
    small = kvlayout.request(text_only(SMALL), kvlayout.Settings(), 131072, kvlayout.version(None))
    assert small.bytes_per_token == 4 * 2 * 2 * 512 * 2 == 16384 and small.layout.group_size == 4
    assert sum(g.layers for g in small.layout.groups) == 24
    assert kvlayout.request(text_only(MOE), kvlayout.Settings(), 262144, kvlayout.version(None)).bytes_per_token == 20480
    fp8 = kvlayout.request(text_only(DENSE), kvlayout.Settings(kv_cache_dtype="fp8"), 262144, kvlayout.version(None))
    assert fp8.bytes_per_token == 81920 // 2


@pytest.mark.parametrize(("tp", "sliding_kv", "full_kv"), [(1, 16, 4), (2, 8, 2), (4, 4, 1), (8, 2, 1)])
def test_gemma4_31b_splits_over_the_ranks(tp: int, sliding_kv: int, full_kv: int) -> None:
    """q, o and the MLP divide; the sliding layers' 16 KV heads divide, the full layers' 4 while there are as
    many as ranks and one a rank below; norms and the rope caches whole. The KV a token: the full layers' heads a rank."""
    s = text_only(DENSE)
    by = {t.path: t for t in weights.tensors(s, tp)}
    assert by["model.layers.0.self_attn.k_proj"].rows == sliding_kv * 256 and by["model.layers.5.self_attn.k_proj"].rows == full_kv * 512
    assert by["model.layers.5.self_attn.q_proj"].rows == 32 // tp * 512 and by["model.layers.0.mlp.down_proj"].cols == FFN // tp
    r = kvlayout.request(s, kvlayout.Settings(tp=tp), 32768, kvlayout.version(None))
    assert r.bytes_per_token == 10 * 2 * full_kv * 512 * 2
    assert sum(t.rows * t.cols for t in weights.tensors(s, tp) if t.buffer) == 262144 * (512 + 256)


def test_gemma4_for_causal_lm_and_the_towers() -> None:
    """Gemma4ForCausalLM over the same text fields counts the same, without towers. The multimodal class's
    towers are refused unless the limits leave them unbuilt: images and video for the 31B, audio too for
    E4B (its config has an audio_config)."""
    assert parameters(hfconfig.shape(causal(DENSE), "g")) == DENSE_TOTAL
    assert hfconfig.shape(causal(SMALL), "g").tower is None
    for name, modalities in ((DENSE, ("image", "video")), (SMALL, ("image", "video", "audio"))):
        s = hfconfig.shape(data(name), name)
        assert s.tower is not None and s.tower.modalities == modalities
        with pytest.raises(InputError, match="not modeled"):
            weights.tensors(s, 1)
        kept, _ = multimodal.apply(s, multimodal.Settings(limits={"image": 0}), (0, 33))
        assert kept.tower is not None


def test_gemma4_release_window_and_pipeline() -> None:
    """Registered from 0.19.0 (not in 0.18.0); Gemma4Model builds the embedding, the per-layer embedding
    and the final norm on every pipeline stage (no PPMissingLayer), so each E4B stage holds them."""
    text = json.dumps(causal(SMALL))
    with pytest.raises(InputError, match="0.19"):
        modeled.model_report(modeled.ModelInputs(text, tp=1, max_model_len=32768, engine_version="0.18.0"))
    one = modeled.model_report(modeled.ModelInputs(text, tp=1, max_model_len=32768, engine_version="0.19.0"))
    two = modeled.model_report(modeled.ModelInputs(text, tp=1, pp=2, max_model_len=32768))
    ends = 262144 * 2560 + 262144 * 42 * 256 + 42 * 256 * 2560 + 256 + 2560
    assert all(stage.weights_bytes > ends * 2 for stage in two.ranks)
    assert sum(stage.weights_bytes for stage in two.ranks) > one.weights_bytes_per_rank


def test_gemma4_attention_backend() -> None:
    """Heads of 256 and 512: vLLM runs neither FlashInfer nor FA3 (Gemma4Config.verify_and_update_config:
    TRITON_ATTN up to 0.23.x, FA4 or TRITON_ATTN from 0.24.0), so no FA3 split buffers on an H100 and no
    FlashInfer workspace on a B200; from 0.32.0 an fp8 cache on Hopper keeps FA3 on the layers it takes."""
    from calc.engine import predict
    from calc.present import cli

    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    h100, b200 = (predict.card_of_box(predict.find_box(boxes, b)) for b in ("h100-sxm", "b200"))
    s = text_only(DENSE)
    assert not predict.capture_of(s, h100, "auto", 0).fa3 and not predict.capture_of(s, b200, "auto", 0).flashinfer
    assert predict.capture_of(s, h100, "fp8", 0, (0, 32)).fa3 and not predict.capture_of(s, h100, "fp8", 0, (0, 31)).fa3
    # heads of 128 and 256, none wider than 256: up to 0.23.x the card's backend (FlashInfer on a B200); from 0.24.0
    # Gemma4Config acts wherever the two sizes differ
    narrow = replace(s, head_dim=128, full_kv=(s.full_kv[0], 256) if s.full_kv else None)
    assert predict.capture_of(narrow, b200, "auto", 0, (0, 23)).flashinfer and not predict.capture_of(narrow, b200, "auto", 0, (0, 24)).flashinfer


@pytest.mark.parametrize(
    ("name", "extra", "tokens"),
    [
        (DENSE, [], 2496),  # a prefix LM (use_bidirectional_attention "vision"): 2,048 raised to 32 x 78
        (DENSE, ["--engine-version", "0.21.0"], 2048),  # before 0.22.0 no floor
        (DENSE, ["--max-num-batched-tokens", "1024"], 1024),  # a value given stays
        (SMALL, [], 2048),  # E4B's use_bidirectional_attention is null: no prefix LM
        (UNIFIED, [], 2496),
    ],
)
def test_a_prefix_lm_raises_the_default_batch(name: str, extra: list[str], tokens: int) -> None:
    """vLLM raises a default max_num_batched_tokens to the largest multimodal item of a prefix LM (a video of
    32 frames of 70 soft tokens and 8 more), whatever the limits; on an L40S (below 70 GiB: 2,048 by default)."""
    done = run_calc("model", str(FIXTURES / name / "config.json"), "--gpu", "l40s", "--max-model-len", "32768",
                    "--limit-mm-per-prompt", NO_TOWERS, *extra, "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["max_num_batched_tokens"] == tokens
    assert hfconfig.batched_tokens_floor(causal(DENSE)) == 0 and hfconfig.shape(data(DENSE), "g").batched_tokens_floor == 2496


def test_gemma4_refusals(tmp_path: Path) -> None:
    """A missing head_dim is refused in one line; so is an MoE switch on which the releases disagree
    (enable_moe_block against num_experts), and a shared range with no layer of a kind before it."""
    assert_missing_field_refused(causal(DENSE), "head_dim", tmp_path)
    config = causal(DENSE)
    with pytest.raises(hfconfig.ConfigError, match="num_experts: found nothing, expected a count as enable_moe_block is true"):
        hfconfig.shape({**config, "enable_moe_block": True}, "g")
    with pytest.raises(hfconfig.ConfigError, match="num_kv_shared_layers"):
        hfconfig.shape({**config, "num_kv_shared_layers": 55}, "g")
    assert all(kind not in SHARED for kind in hfconfig.shape(config, "g").layers)


def test_gemma4_12b_unified_meets_its_published_size() -> None:
    """The language model (40 sliding layers of 8 KV heads of 256, 8 full ones of one KV head of 512, k_eq_v)
    holds 11,923,078,912 parameters; the vision embedder (48 x 48 x 3 patches: two LayerNorms of 6,912 and
    3,840, patch_dense with its bias, the 1,120 x 2 x 3,840 position table, pos_norm) and the projections from
    3,840 and 640 wide frames add 52,379,904: 11,975,458,816 as vLLM builds it, 11,959,730,176 in the
    checkpoint (no v_proj on the 8 k_eq_v layers), the card's 11.95B to its two decimals (11.96 rounded). The
    embedder's patch_dense and position table: 35M, as published. The embedders are built whatever the limits
    say, divided over the ranks only in patch_dense. The KV a token: 8 x 2 x 1 x 512 x 2 = 16,384 B."""
    h = 3840
    s = text_only(UNIFIED)
    assert (s.architecture, s.full_kv, s.kv_heads, s.tower is not None) == ("Gemma4UnifiedForConditionalGeneration", (1, 512), 8, True)
    slide = 16 * 256 * h + 2 * 8 * 256 * h + h * 16 * 256 + 2 * 256 + 4 * h + 3 * 15360 * h
    full = 16 * 512 * h + 2 * 1 * 512 * h + h * 16 * 512 + 2 * 512 + 4 * h + 3 * 15360 * h
    assert parameters(s, tower=False) == V * h + h + 40 * slide + 8 * full == 11_923_078_912
    patch = 48 * 48 * 3
    embedders = 2 * patch + patch * h + h + 2 * h + 1120 * 2 * h + 2 * h + h * h + h * 640
    assert parameters(s, tower=True) == embedders == 52_379_904
    checkpoint = parameters(s) - 8 * 512 * h
    assert checkpoint == 11_959_730_176 and int(checkpoint / 1e7) / 100 == 11.95
    assert round((patch * h + 1120 * 2 * h) / 1e6) == 35
    by = {t.path: t for t in weights.tensors(s, 4)}
    assert (by["vision_embedder.patch_dense"].rows, by["embed_vision.embedding_projection"].rows, by["embed_audio.embedding_projection"].cols) == (960, h, 640)
    assert kvlayout.request(s, kvlayout.Settings(), 262144, kvlayout.version(None)).bytes_per_token == 16384
    with pytest.raises(InputError, match="0.23"):
        modeled.model_report(modeled.ModelInputs(json.dumps(data(UNIFIED)), tp=1, max_model_len=32768, engine_version="0.22.0"))


MATRIX = [
    [name, *args]
    for name, args in (
        (DENSE, ["--tp", "1", "--max-model-len", "auto", "--gpu", "h200"]),
        (DENSE, ["--tp", "2", "--max-model-len", "262144", "--gpu", "h200"]),
        (DENSE, ["--tp", "8", "--kv-cache-dtype", "fp8", "--max-model-len", "131072", "--gpu", "h100-sxm"]),
        (DENSE, ["--tp", "2", "--pp", "2", "--max-model-len", "65536", "--gpu", "h100-sxm", "--engine-version", "0.19.0"]),
        (SMALL, ["--tp", "1", "--max-model-len", "auto", "--gpu", "l4"]),
        (SMALL, ["--tp", "2", "--max-model-len", "32768", "--gpu", "l4"]),
        (MOE, ["--tp", "2", "--max-model-len", "131072", "--gpu", "h200"]),
        (MOE, ["--tp", "2", "--data-parallel-size", "2", "--enable-expert-parallel", "--max-model-len", "32768", "--gpu", "h200"]),
        (UNIFIED, ["--tp", "1", "--max-model-len", "auto", "--gpu", "l40s"]),
        (UNIFIED, ["--tp", "2", "--pp", "2", "--max-model-len", "131072", "--gpu", "h100-sxm", "--engine-version", "0.23.0"]),
    )
]


@pytest.mark.parametrize("args", MATRIX, ids=["-".join(a[0:1] + a[2::2]) for a in MATRIX])
def test_the_command_line_predicts_a_pool(args: list[str]) -> None:
    name, *rest = args
    done = run_calc("model", str(FIXTURES / name / "config.json"), *rest, "--limit-mm-per-prompt", NO_TOWERS, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"].startswith("Gemma4") and out["architecture"].endswith("ForConditionalGeneration")
    assert out["verdict"] and out["kv_bytes_per_token"] > 0


def test_the_command_line_refuses_the_towers() -> None:
    done = run_calc("model", str(FIXTURES / DENSE / "config.json"), "--gpu", "h200", "--max-model-len", "32768")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert '{"image": 0, "video": 0}' in done.stderr
