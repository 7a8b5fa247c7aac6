"""Five dense classes vLLM builds with its own model code: Gemma 1 (GemmaForCausalLM, gemma.py), InternLM2
and 2.5 (InternLM2ForCausalLM, internlm2.py), InternLM3 (InternLM3ForCausalLM, which the registry sends to
llama.py) and Xiaomi's MiMo-7B (MiMoForCausalLM, mimo.py, with its MTP layer as mimo_mtp.py builds it), each
registered so from 0.10.1.1 to 0.33.0, and StarCoder2 (Starcoder2ForCausalLM, starcoder2.py), registered so
from 0.10.1.1 to 0.24.0 and sent to the Transformers backend from 0.25.0: the parameter count against the
published total, the KV cache a token, tensor and pipeline parallel, refusals, and the command line.

No whole config.json of the last four was found at a citable address, so those classes are unchecked; Gemma 7B's
was found later (models/configs/gemma-7b, a public repository's test data), and the tests still read fixtures (tests/data/configs/; models/configs/SOURCES.yaml says where each was found and
where else was looked): gemma-7b, transformers' printed GemmaConfig of google/gemma-7b; internlm2_5-7b-chat,
its config.json quoted whole in a deployment note; internlm3-8b-instruct, the field dict a test module
quotes as its real config; mimo-7b, the MiMo-7B fields NVIDIA-NeMo/Megatron-Bridge's bridge test quotes;
starcoder2-3b, StarCoder2-3B's fields as NVIDIA/TensorRT-LLM's model test quotes them, its layer count
(cut to 6 for testing, "Reduced from 30/32/40") put back to 30."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_missing_field_refused, config_path, config_text, parameters, run_calc

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, ranks, weights

NAMES = ("gemma-7b", "internlm2_5-7b-chat", "internlm3-8b-instruct", "mimo-7b", "starcoder2-3b")
RELEASE = {"starcoder2-3b": "0.24.0"}  # the last release whose starcoder2.py builds it


def data(name: str) -> dict:
    loaded: dict = json.loads(config_text(name))
    return loaded


def shape(name: str, **changes: object) -> hfconfig.Shape:
    return hfconfig.shape({**data(name), **changes}, name)


def layer(h: int, q: int, kv: int, ffn: int, qkv_bias: bool = False) -> int:
    """One dense layer: q/k/v/o of q and kv output widths, a gated MLP, two norms."""
    return h * q + 2 * h * kv + q * h + 3 * h * ffn + 2 * h + ((q + 2 * kv) if qkv_bias else 0)


def kv_token(layers: int, kv_heads: int, head_dim: int, tp: int) -> int:
    """K and V of every layer, the KV heads a rank holds (one at least), two bytes each."""
    return layers * 2 * max(1, kv_heads // tp) * head_dim * 2


# --- Gemma 7B ---------------------------------------------------------------------------------------

GEMMA_LAYERS = 28 * layer(3072, 16 * 256, 16 * 256, 24576)


def test_gemma_7b_meets_its_published_size() -> None:
    """8,537,680,896 parameters, google/gemma-7b's safetensors total; without the embedding,
    7,751,248,896, as the Gemma report's Table 2 gives (arXiv 2403.08295, whose embedding row counts a
    256,128-token vocabulary, not the checkpoint's 256,000). head_dim 256 over 16 heads: attention
    4,096 wide on a hidden size of 3,072. The embedding is the head; no bias anywhere."""
    s = shape("gemma-7b")
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.layers) == ("GemmaForCausalLM", 16, 16, 256, True, ("full",) * 28)
    assert GEMMA_LAYERS + 3072 == 7_751_248_896
    assert parameters(s) == 256000 * 3072 + GEMMA_LAYERS + 3072 == 8_537_680_896
    names = {t.path for t in weights.tensors(s)}
    assert "lm_head" not in names and not any(n.endswith(".bias") for n in names)
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(8192, 256)]
    # the config.json itself (models/configs/gemma-7b) reads to the same count, so the class is checked
    shipped = Path(__file__).resolve().parent.parent / "models" / "configs" / "gemma-7b" / "config.json"
    assert parameters(hfconfig.shape(json.loads(shipped.read_text()), str(shipped))) == 8_537_680_896
    assert not hfconfig.unchecked_note("GemmaForCausalLM")


def test_gemma_2b_dimensions_meet_the_reports_row() -> None:
    """The same reading on Gemma 2B's dimensions as the report's Table 1 gives them (d_model 2,048, 18
    layers, 8 heads and one KV head of 256, feedforward 32,768 for gate and up together): 1,981,884,416
    outside the embedding, Table 2's figure, multi-query attention's single K and V head counted once."""
    s = shape("gemma-7b", hidden_size=2048, num_hidden_layers=18, num_attention_heads=8, num_key_value_heads=1, intermediate_size=16384)
    assert parameters(s) - 256000 * 2048 == 18 * layer(2048, 8 * 256, 256, 16384) + 2048 == 1_981_884_416


@pytest.mark.parametrize("tp", [1, 2, 4, 8, 16])
def test_gemma_7b_weights_and_kv_per_rank(tp: int) -> None:
    """Heads, KV heads, MLP and vocabulary divided over the ranks, the norms and the rope cache
    (8,192 x 256 x 2 B) whole on each; KV 28 layers x 2 x 16 / TP heads x 256 x 2 B a token."""
    s = shape("gemma-7b")
    per_layer = layer(3072, 16 * 256 // tp, 16 * 256 // tp, 24576 // tp)
    assert weights.per_rank(s, tp).model == 2 * (256000 // tp * 3072 + 3072 + 28 * per_layer) + 8192 * 256 * 2
    r = kvlayout.request(s, kvlayout.Settings(tp=tp), 8192, kvlayout.version(None))
    assert r.bytes_per_token == kv_token(28, 16, 256, tp) and r.pages_per_request == 512


def test_gemma_reads_as_gemma_py_builds() -> None:
    """attention_bias is not read (bias=False written in); a config without head_dim takes GemmaConfig's
    256, and says so; an untied head and an activation gemma.py raises on are refused."""
    assert not shape("gemma-7b", attention_bias=True).attention_bias
    bare = {k: v for k, v in data("gemma-7b").items() if k != "head_dim"}
    s = hfconfig.shape(bare, "gemma-7b")
    assert s.head_dim == 256 and "head_dim 256" in s.defaults[0]
    assert shape("gemma-7b", hidden_activation=None).mlps == shape("gemma-7b").mlps
    with pytest.raises(hfconfig.ConfigError, match="tie_word_embeddings: found False"):
        shape("gemma-7b", tie_word_embeddings=False)
    with pytest.raises(hfconfig.ConfigError, match="hidden_activation: found 'relu'"):
        shape("gemma-7b", hidden_activation="relu")


# --- InternLM2.5 7B, and InternLM2 under InternVL -------------------------------------------------------

INTERNLM2_LAYERS = 32 * layer(4096, 32 * 128, 8 * 128, 14336)


def test_internlm2_5_7b_meets_its_published_size() -> None:
    """7,737,708,544 parameters, as InternLM2.5-7B-Chat's safetensors headers count them: 92,544
    tokens (a multiple of 64, so unpadded), embedding and output untied, no bias anywhere."""
    s = shape("internlm2_5-7b-chat")
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("InternLM2ForCausalLM", 32, 8, 128, False)
    assert parameters(s) == 2 * 92544 * 4096 + INTERNLM2_LAYERS + 4096 == 7_737_708_544
    assert not any(t.path.endswith(".bias") for t in weights.tensors(s))
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(65536, 128)]  # dynamic NTK, factor 2
    assert hfconfig.unchecked_note("InternLM2ForCausalLM")


def test_internlm2_reads_the_same_on_its_own_and_under_internvl() -> None:
    """InternVL2-8B's llm_config is InternLM2.5-7B-Chat's: the same layers, one reader, the vocabulary
    apart (92,553 there). internlm2.py writes bias=False in and takes head_dim as hidden_size / heads, so
    neither a "bias" nor a head_dim field changes the reading."""
    alone, under = shape("internlm2_5-7b-chat"), shape("internvl2-8b")
    same = ("layers", "hidden", "heads", "kv_heads", "head_dim", "mlps", "attention_bias", "output_bias", "tie_embeddings")
    assert [getattr(alone, f) for f in same] == [getattr(under, f) for f in same]
    assert parameters(under, tower=False) - parameters(alone) == 2 * (92608 - 92544) * 4096
    assert parameters(shape("internlm2_5-7b-chat", bias=True, head_dim=64)) == parameters(alone)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_internlm2_5_weights_and_kv_per_rank(tp: int) -> None:
    """8 KV heads divide over 1 to 8 ranks: 32 x 2 x 8 / TP x 128 x 2 B a token."""
    s = shape("internlm2_5-7b-chat")
    per_layer = layer(4096, 32 * 128 // tp, 8 * 128 // tp, 14336 // tp)
    assert weights.per_rank(s, tp).model == 2 * (2 * 92544 // tp * 4096 + 4096 + 32 * per_layer) + 65536 * 128 * 2
    assert kvlayout.request(s, kvlayout.Settings(tp=tp), 32768, kvlayout.version(None)).bytes_per_token == kv_token(32, 8, 128, tp)


# --- InternLM3 8B ---------------------------------------------------------------------------------------

INTERNLM3_LAYERS = 48 * layer(4096, 32 * 128, 2 * 128, 10240)


def test_internlm3_8b_counts_as_llama_py_builds_it() -> None:
    """8,804,241,408 parameters (the 8B of its name): 48 layers of 32 heads and 2 KV heads of 128,
    128,512 tokens untied, no bias. No exact published total was found to check it against."""
    s = shape("internlm3-8b-instruct")
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("InternLM3ForCausalLM", 32, 2, 128, False)
    assert parameters(s) == 2 * 128512 * 4096 + INTERNLM3_LAYERS + 4096 == 8_804_241_408
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(6 * 32768, 128)]  # dynamic NTK, factor 6
    assert hfconfig.unchecked_note("InternLM3ForCausalLM")


@pytest.mark.parametrize(
    ("changes", "qkv", "o"),
    [({"qkv_bias": True}, True, False), ({"bias": True}, False, True), ({"bias": True, "qkv_bias": None}, True, True),
     ({"attention_bias": True, "qkv_bias": None}, True, True)],
)  # fmt: skip
def test_internlm3_biases_as_llama_py_reads_them(changes: dict, qkv: bool, o: bool) -> None:
    """o_proj biased where attention_bias or "bias" says; q/k/v where qkv_bias says, and as o_proj in a
    config without qkv_bias (LlamaDecoderLayer: hasattr(config, "qkv_bias"))."""
    config = {k: v for k, v in {**data("internlm3-8b-instruct"), **changes}.items() if v is not None}
    s = hfconfig.shape(config, "internlm3-8b-instruct")
    assert (s.attention_bias, s.output_bias) == (qkv, o)
    extra = (32 * 128 + 2 * 2 * 128 if qkv else 0) + (4096 if o else 0)
    assert parameters(s) == 8_804_241_408 + 48 * extra


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_internlm3_kv_heads_replicate_past_two_ranks(tp: int) -> None:
    """Two KV heads: one a rank at TP 2, and one a rank (replicated) at TP 4 and 8."""
    s = shape("internlm3-8b-instruct")
    assert kvlayout.request(s, kvlayout.Settings(tp=tp), 32768, kvlayout.version(None)).bytes_per_token == kv_token(48, 2, 128, tp)
    k_proj = {t.path: t for t in weights.tensors(s, tp)}["model.layers.0.self_attn.k_proj"]
    assert k_proj.rows == max(1, 2 // tp) * 128


# --- MiMo-7B --------------------------------------------------------------------------------------------

MIMO_LAYER = layer(4096, 32 * 128, 8 * 128, 11008, qkv_bias=True)
MIMO_MTP = MIMO_LAYER + 2 * 4096 * 4096 + 3 * 4096  # input_proj of 8,192 to 4,096, token, hidden and final norms
MIMO_MAIN = 2 * 151680 * 4096 + 36 * MIMO_LAYER + 4096


def test_mimo_7b_meets_its_published_size() -> None:
    """7,622,619,136 parameters in the model and 210,790,400 in its MTP layer: 7,833,409,536 in the
    checkpoint, published as 7.83B (MiMo-7B-RL's safetensors total). Qwen2's q/k/v biases, untied."""
    s = shape("mimo-7b")
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.drafter_layers, s.attention_bias, s.output_bias) == (
        "MiMoForCausalLM", 32, 8, 128, 1, True, False)  # fmt: skip
    assert parameters(s, drafter=False) == MIMO_MAIN == 7_622_619_136
    assert parameters(s, drafter=True) == MIMO_MTP == 210_790_400
    assert round((MIMO_MAIN + MIMO_MTP) / 1e9, 2) == 7.83
    drafter = {t.path for t in weights.tensors(s) if t.drafter}
    assert {"model.layers.36.input_proj", "model.layers.36.token_layernorm", "model.layers.36.final_layernorm"} <= drafter
    assert not any("embed" in p or "head" in p for p in drafter)  # the target's, swapped in at load
    assert hfconfig.unchecked_note("MiMoForCausalLM")


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_mimo_weights_kv_and_drafter_per_rank(tp: int) -> None:
    """The MTP layer's input_proj (nn.Linear) whole on every rank, its Qwen2 layer divided; with one
    speculative token the drafter's attention layer joins the pool: 37 layers a token."""
    s = shape("mimo-7b")
    main_layer = layer(4096, 32 * 128 // tp, 8 * 128 // tp, 11008 // tp, qkv_bias=True)
    w = weights.per_rank(s, tp)
    assert w.model == 2 * (2 * 151680 // tp * 4096 + 4096 + 36 * main_layer) + 32768 * 128 * 2
    assert w.drafter == 2 * (main_layer + 2 * 4096 * 4096 + 3 * 4096)
    plain = kvlayout.request(s, kvlayout.Settings(tp=tp), 32768, kvlayout.version(None))
    drafting = kvlayout.request(s, kvlayout.Settings(tp=tp, speculative_tokens=1), 32768, kvlayout.version(None))
    assert (plain.bytes_per_token, drafting.bytes_per_token) == (kv_token(36, 8, 128, tp), kv_token(37, 8, 128, tp))


def test_mimo_keeps_qwen2s_window_rule() -> None:
    """MiMoConfig is Qwen2Config's: a sliding_window without use_sliding_window is dropped, every layer
    full; use_sliding_window (layers from max_window_layers on) is refused, as for Qwen2."""
    assert shape("mimo-7b", sliding_window=32768, use_sliding_window=False).layers == ("full",) * 36
    with pytest.raises(hfconfig.ConfigError, match="use_sliding_window: found True"):
        shape("mimo-7b", sliding_window=4096, use_sliding_window=True)
    assert shape("mimo-7b", num_nextn_predict_layers=0).drafter_layers == 0


# --- StarCoder2-3B --------------------------------------------------------------------------------------


def starcoder2_layer(h: int, q: int, kv: int, ffn: int, bias: bool = True) -> int:
    """q/k/v/o, c_fc and c_proj, their biases where use_bias says, and two LayerNorms of a weight and a bias."""
    return h * q + 2 * h * kv + q * h + 2 * h * ffn + 4 * h + ((q + 2 * kv + h + ffn + h) if bias else 0)


STARCODER2_LAYERS = 30 * starcoder2_layer(3072, 24 * 128, 2 * 128, 12288)


def test_starcoder2_3b_meets_its_published_size() -> None:
    """3,030,371,328 parameters, published as 3.03B: 30 layers of 24 heads and 2 KV heads of 128, biases
    throughout, LayerNorms with biases, the final one too, and the embedding as the head
    (Starcoder2Config's default, which the config leaves to it, and says so)."""
    s = shape("starcoder2-3b")
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings, s.norm_bias) == ("Starcoder2ForCausalLM", 24, 2, 128, True, True)
    assert (s.layers, s.sliding_window) == (("sliding",) * 30, 4096)
    assert parameters(s) == 49152 * 3072 + STARCODER2_LAYERS + 2 * 3072 == 3_030_371_328
    assert round(parameters(s) / 1e9, 2) == 3.03
    by = {t.path: t for t in weights.tensors(s)}
    assert "lm_head" not in by and by["model.norm"].rows == by["model.norm.bias"].rows == by["model.layers.0.input_layernorm.bias"].rows == 3072
    assert not any("gate_proj" in p for p in by) and by["model.layers.0.mlp.up_proj.bias"].rows == 12288
    assert "tie_word_embeddings true" in s.defaults[0] and hfconfig.unchecked_note("Starcoder2ForCausalLM")


@pytest.mark.parametrize(("tp", "release", "pages"), [(1, "0.24.0", 769), (2, "0.24.0", 769), (4, "0.10.1.1", 769), (8, "0.24.0", 769)])
def test_starcoder2_3b_weights_and_kv_per_rank(tp: int, release: str, pages: int) -> None:
    """24 heads and the MLP divided over the ranks, the 2 KV heads one a rank from TP 2 on; row-parallel
    biases (o_proj, c_proj), the norms and the rope cache (16,384 x 128 x 2 B) whole. Every layer slides:
    at 16,384 tokens each holds cdiv(min(4,095 + 8,192, 16,384), 16) + 1 = 769 pages and nothing grows."""
    s = shape("starcoder2-3b")
    q, kv, ffn = 24 * 128 // tp, max(1, 2 // tp) * 128, 12288 // tp
    per_layer = 3072 * q + 2 * 3072 * kv + q * 3072 + 2 * 3072 * ffn + 4 * 3072 + q + 2 * kv + 3072 + ffn + 3072
    assert weights.per_rank(s, tp).model == 2 * (49152 // tp * 3072 + 2 * 3072 + 30 * per_layer) + 16384 * 128 * 2
    r = kvlayout.request(s, kvlayout.Settings(tp=tp), 16384, kvlayout.version(release))
    assert (r.bytes_per_token, r.pages_per_request) == (0, pages)
    assert r.fixed_bytes == pages * 16 * kv_token(30, 2, 128, tp)


def test_starcoder2_reads_its_switches() -> None:
    """use_bias false drops every linear's bias but not the LayerNorms'; an untied config gains an
    lm_head; no window is every layer full."""
    plain = shape("starcoder2-3b", use_bias=False)
    assert parameters(plain) == 3_030_371_328 - 30 * (24 * 128 + 4 * 128 + 3072 + 12288 + 3072)
    assert parameters(shape("starcoder2-3b", tie_word_embeddings=False)) == 3_030_371_328 + 49152 * 3072
    assert shape("starcoder2-3b", sliding_window=None).layers == ("full",) * 30


@pytest.mark.parametrize("release", [None, "0.25.0", "0.33.0"])
def test_starcoder2_is_figured_with_the_same_layers_where_the_transformers_backend_serves_it(release: str | None) -> None:
    """From 0.25.0 the registry sends Starcoder2ForCausalLM to the Transformers backend (starcoder2.py is
    gone), which builds it with vLLM's layers: 0.24's KV cache and weights, less its cos/sin cache, and a
    note naming the last release whose own code builds it; no version is the newest."""
    args = ["--engine-version", release] if release else []
    done = run_calc("model", str(config_path("starcoder2-3b")), "--gpu", "h200", "--max-model-len", "4096", *args, "--json")
    own = run_calc("model", str(config_path("starcoder2-3b")), "--gpu", "h200", "--max-model-len", "4096", "--engine-version", "0.24.0", "--json")
    assert done.returncode == own.returncode == 0, done.stderr
    backend, code = json.loads(done.stdout), json.loads(own.stdout)
    assert [n for n in backend["notes"] if "0.25.0 and later serve Starcoder2ForCausalLM with the Transformers backend" in n]
    assert backend["kv_bytes_per_token"] == code["kv_bytes_per_token"]
    assert 0 <= code["weights_bytes_per_rank"] - backend["weights_bytes_per_rank"] < 64 * 2**20


# --- all five: pipeline stages, bad input, the command line -----------------------------------------------


@pytest.mark.parametrize(("name", "layers", "kv_heads", "head_dim"), [("gemma-7b", 28, 16, 256), ("internlm2_5-7b-chat", 32, 8, 128),
                                                                    ("internlm3-8b-instruct", 48, 2, 128), ("mimo-7b", 36, 8, 128)])  # fmt: skip
def test_pipeline_stages(name: str, layers: int, kv_heads: int, head_dim: int) -> None:
    """PP 2 splits the layers in halves; a rank's token at TP 2 holds its half's."""
    first, second = ranks.partition(layers, 2)
    assert first + second == layers and abs(first - second) <= 1
    r = modeled.model_report(modeled.ModelInputs(config_text(name), tp=2, pp=2, max_model_len=8192))
    assert r.kv_bytes_per_token == kv_token(max(first, second), kv_heads, head_dim, 2)


def test_starcoder2_pipeline_stages() -> None:
    """PP 2 at TP 2: 15 sliding layers a stage, each holding 769 pages of 16 x 2 x 1 x 128 x 2 B; starcoder2.py
    builds the tied embedding and the final LayerNorm on both stages (no PPMissingLayer, 0.24.0)."""
    r = modeled.model_report(modeled.ModelInputs(config_text("starcoder2-3b"), tp=2, pp=2, max_model_len=16384, engine_version="0.24.0"))
    assert (r.kv_bytes_per_token, r.kv_fixed_bytes_per_request) == (0, 15 * 769 * 16 * 2 * 128 * 2)
    first, second = r.ranks
    ends = (49152 // 2 * 3072 + 2 * 3072) * 2  # the embedding's half at TP 2, the norm's weight and bias
    assert first.weights_bytes == second.weights_bytes and first.weights_bytes > ends
    s = shape("starcoder2-3b")
    assert ranks.stage_weights(s, weights.tensors(s, 2), 2)[0] == ranks.stage_weights(s, weights.tensors(s, 2), 2)[1]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("field", ["hidden_size", "num_attention_heads", "intermediate_size", "vocab_size"])
def test_a_missing_field_is_one_line_naming_it(name: str, field: str, tmp_path: Path) -> None:
    release = ["--engine-version", RELEASE[name]] if name in RELEASE else []
    assert_missing_field_refused(data(name), field, tmp_path, *release)


MATRIX = [
    (name, [*tp, *rest, "--gpu", "h200", *(["--engine-version", RELEASE[name]] if name in RELEASE and "--engine-version" not in rest else [])])
    for name in NAMES
    for tp, rest in (
        (["--tp", "1"], ["--max-model-len", "auto"]),
        (["--tp", "2"], ["--max-model-len", "auto", "--kv-cache-dtype", "fp8"]),
        (["--tp", "4"], ["--max-model-len", "8192"]),
        (["--tp", "2", "--pp", "2"], ["--max-model-len", "auto"]),
        (["--tp", "8"], ["--max-model-len", "8192", "--engine-version", "0.10.1.1"]),
    )
]


@pytest.mark.parametrize(("name", "args"), MATRIX, ids=[f"{n}-{'-'.join(a[1::2])}" for n, a in MATRIX])
def test_the_command_line_predicts_a_pool(name: str, args: list[str]) -> None:
    done = run_calc("model", str(config_path(name)), *args, "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["architecture"] == data(name)["architectures"][0] and out["verdict"]
    assert out["kv_bytes_per_token"] + out["kv_fixed_bytes_per_request"] > 0  # StarCoder2's layers all slide: nothing grows


def test_mimo_drafting_on_the_command_line() -> None:
    """--speculative-tokens 1 loads the MTP layer: its bytes beside the model's, its layer in the pool."""
    done = run_calc("model", str(config_path("mimo-7b")), "--gpu", "h100-sxm", "--max-model-len", "32768", "--speculative-tokens", "1", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["drafter_bytes_per_rank"] == 2 * MIMO_MTP and out["kv_bytes_per_token"] == kv_token(37, 8, 128, 1)
