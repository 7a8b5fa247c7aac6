"""The pool predicted before the first start (calc/engine/predict/): each term against what vLLM's
source gives, the prediction against the pools real logs printed (models/pool_starts.yaml), the
fitted constants against the fitted starts, and the command line's keys and refusals."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from fractions import Fraction
from pathlib import Path

import pytest

from calc.checks import poolaccuracy, records
from calc.engine import hfconfig, multimodal, predict, weights
from calc.engine.predict.cards import is_sm100, runs_flashinfer
from calc.present import cli
from calc.units import GiB, InputError, fmt, parse_size

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import pool_accuracy  # noqa: E402


def _shape(name: str) -> hfconfig.Shape:
    return hfconfig.shape(json.loads((ROOT / "models" / "configs" / name / "config.json").read_text()), name)


@pytest.fixture(scope="module")
def measured() -> tuple[list[poolaccuracy.Row], poolaccuracy.Constants]:
    return pool_accuracy.load(ROOT)


# --- the terms, from vLLM's source -------------------------------------------------------------


def test_default_utilization_changed_at_0_20() -> None:
    assert predict.default_utilization(predict.release("0.19.1")) == Fraction(9, 10)
    assert predict.default_utilization(predict.release("0.20.0")) == Fraction(92, 100)
    assert predict.default_utilization(predict.release(None)) == Fraction(92, 100)


@pytest.mark.parametrize(
    ("version", "total", "name", "offline", "expected"),
    [
        ("0.20.0", 80 * GiB, "NVIDIA H100 SXM", False, (8192, 1024)),
        ("0.20.0", 80 * GiB, "NVIDIA H100 SXM", True, (16384, 1024)),
        ("0.20.0", 80 * GiB, "NVIDIA A100-80GB", False, (2048, 256)),  # the A100 stays on the small tier
        ("0.20.0", 24 * GiB, "NVIDIA GeForce RTX 3090", False, (2048, 256)),
        ("0.27.0", 178 * GiB, "NVIDIA B200", False, (8192, 1024)),
        ("0.28.0", 178 * GiB, "NVIDIA B200", False, (16384, 1024)),  # 160 GiB or more from 0.28.0
        ("0.32.0", 121 * GiB, "DGX Spark (GB10)", False, (8192, 1024)),
        ("0.33.0", 121 * GiB, "DGX Spark (GB10)", False, (2048, 256)),  # GB10 kept small from 0.33.0
    ],
)
def test_scheduler_defaults_by_release_and_card(version: str, total: int, name: str, offline: bool, expected: tuple[int, int]) -> None:
    b = predict.default_batch(predict.release(version), total, name, 32768, offline)
    assert (b.max_num_batched_tokens, b.max_num_seqs) == expected


def test_v0_budget_is_the_length_without_chunked_prefill() -> None:
    assert predict.default_batch((0, 6), 24 * GiB, "RTX 3090", 29000).max_num_batched_tokens == 29000
    assert predict.default_batch((0, 6), 24 * GiB, "RTX 3090", 1024).max_num_batched_tokens == 2048
    assert predict.default_batch((0, 6), 24 * GiB, "RTX 3090", 65536).max_num_batched_tokens == 2048  # chunked above 32K


def test_capture_sizes_match_the_graphs_a_log_profiled() -> None:
    """Log 31 (0.21, 256 seqs, 2048 tokens): 'PIECEWISE=51 (largest=512), FULL=35 (largest=256)'."""
    sizes = predict.capture_sizes(256, 2048)
    assert (len(sizes), sizes[-1]) == (51, 512)
    assert len([s for s in sizes if s <= 256]) == 35
    # gpt-oss takes up to 1,024 (models/config.py GptOssForCausalLMConfig): log 111, 'PIECEWISE=83 (largest=1024), FULL=83'
    assert predict.graph_counts(1024, 8192, "GptOssForCausalLM") == (83, 83)
    assert predict.capture_sizes(1024, 8192, "GptOssForCausalLM")[-1] == 1024
    assert predict.capture_sizes(1024, 512, "GptOssForCausalLM")[-1] == 512  # no more than the batch's tokens
    assert predict.graph_counts(1024, 8192) == (51, 51)


def test_capture_sizes_by_release() -> None:
    """vllm/config/vllm.py _set_cudagraph_sizes: max_num_batched_tokens is captured when it is off the
    stride from 0.21.0, max_num_seqs from 0.31.0, and data-center Blackwell goes up to 1,024 from 0.28.0."""
    assert predict.capture_sizes(256, 500, "", (0, 20))[-1] == 496
    assert predict.capture_sizes(256, 500, "", (0, 21))[-2:] == [496, 500]
    assert predict.graph_counts(256, 500, "", (0, 21)) == (51, 35)
    assert 100 not in predict.capture_sizes(100, 8192, "", (0, 30))
    assert predict.graph_counts(100, 8192, "", (0, 31)) == (29, 16)  # 1, 2, 4, 8 to 96 by 8, then 100
    b200 = predict.Capture(sm100=True)
    assert predict.graph_counts(1024, 8192, "", (0, 27), b200) == (51, 51)
    assert predict.graph_counts(1024, 8192, "", (0, 28), b200) == (83, 83)


def test_drafts_set_the_graphs_and_the_backend_may_drop_the_full_ones() -> None:
    """With n drafted tokens a decode step is n + 1 tokens a sequence: the largest size is 2 x
    max_num_seqs x (n + 1) (log 25: 'PIECEWISE=5 (largest=16)' at 2 x 2 x 4). FlashInfer without
    TRT-LLM decode captures no full graph of it ('setting cudagraph_mode=PIECEWISE', the same log, an
    RTX 3090 with an fp8 cache); FlashAttention keeps them, every size rounded up to a multiple of
    n + 1, and from 0.29.0 the request grid times n + 1 is added."""
    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    rtx, h100, b200 = (predict.card_of_box(predict.find_box(boxes, b)) for b in ("rtx-3090", "h100-sxm", "b200"))
    qwen = _shape("qwen3.5-27b-derestricted-gptq-int8")
    on_3090 = predict.capture_of(qwen, rtx, "fp8_e5m2", 3)
    assert not on_3090.full_spec_decode
    assert predict.graph_counts(2, 8192, qwen.architecture, (0, 21), on_3090) == (5, 0)
    assert predict.capture_of(qwen, rtx, "auto", 3).full_spec_decode  # FlashAttention with a bf16 cache
    assert predict.capture_of(qwen, h100, "fp8", 3).full_spec_decode  # FA3 takes fp8 on Hopper
    assert predict.capture_of(qwen, b200, "fp8", 3).full_spec_decode  # FlashInfer with TRT-LLM decode
    assert predict.capture_of(_shape("deepseek-v2-lite-chat"), rtx, "fp8", 3).full_spec_decode  # an MLA backend
    mtp = predict.Capture(3)
    assert predict.capture_sizes(8, 8192, "", (0, 26), mtp) == [1, 2, 4, *range(8, 65, 8)]
    assert predict.graph_counts(8, 8192, "", (0, 26), mtp) == (9, 5)  # 4, 8, 16 ... 64; full 4 to 32
    assert predict.graph_counts(8, 8192, "", (0, 26), mtp, runner_v2=True) == (11, 5)  # V2 sizes its own
    assert predict.graph_counts(9, 8192, "", (0, 28), mtp) == (10, 5)  # 4, 8, 16 ... 72; full 4 to 32
    assert predict.graph_counts(9, 8192, "", (0, 29), mtp) == (11, 6)  # 36 = 9 x 4 joins them
    # the hybrid's Mamba-block check asks for full graphs: none under FlashInfer with drafts
    assert predict.mamba_graphs(qwen, (0, 21), False, predict.Capture(3))
    assert not predict.mamba_graphs(qwen, (0, 21), False, on_3090)


def test_mxfp4_experts_padded_as_the_marlin_path_pads_them() -> None:
    """gpt-oss-120b on one H100 under 0.10/0.11 (quantization/mxfp4.py create_weights, Marlin):
    intermediate 2,880 to 2,944, hidden 2,880 to 3,072 for 128 experts in 36 layers: 5.13 GiB more
    than the checkpoint's count, and the rope's cache (131,072 positions of 64 in float32, as
    gpt_oss.py builds it): 65.93 GiB against the 65.97 GiB log 16 prints as loaded."""
    shape = _shape("gpt-oss-120b")

    def experts(h: int, i: int) -> int:
        return 128 * (2 * i * h // 2 + 2 * i * h // 32 + 2 * i * 2 + h * i // 2 + h * i // 32 + 2 * h)

    pad = predict.mxfp4_padding(shape, 1, (0, 10))
    assert pad.bytes == 36 * (experts(3072, 2944) - experts(2880, 2880))
    card = predict.Card("h", "H100", 85045477376, "79.2 GiB", "s")
    p = predict.predict(shape, card, predict.Start(max_model_len=131072, engine_version="0.10.1"), 4)
    assert round(p.weights.bytes / GiB, 2) == 65.93 and "Marlin" in p.weights.source
    assert abs(p.weights.bytes - parse_size("65.9651 GiB")) < 0.1 * GiB
    # TP 2: intermediate 1,440 a rank pads to 1,536
    assert predict.mxfp4_padding(shape, 2, (0, 11)).bytes == 36 * (
        128 * (2 * 1536 * 3072 // 2 + 2 * 1536 * 3072 // 32 + 4 * 1536 + 3072 * 1536 // 2 + 3072 * 1536 // 32 + 2 * 3072)
        - 128 * (2 * 1440 * 2880 // 2 + 2 * 1440 * 2880 // 32 + 4 * 1440 + 2880 * 1440 // 2 + 2880 * 1440 // 32 + 2 * 2880)
    )
    assert predict.mxfp4_padding(shape, 1, (0, 20)).bytes == 0  # the oracle's choice is not modeled
    assert predict.mxfp4_padding(shape, 1, (0, 19), card_name="NVIDIA L40S").bytes == 0  # nor off Hopper


def test_gpt_oss_mxfp4_as_triton_holds_it_on_hopper_in_0_19() -> None:
    """gpt-oss-20b under TP 2 on an H100, v0.19.0's TRITON backend: intermediate 1,440 a rank to
    1,472 (a multiple of 64); w13 swizzled as 1,472 x 2,944 bytes an expert and w2 as 768 x 2,880
    (HopperMXValueLayout: both dims to 64); the swizzled scales (2,944 and 2,880 rows to 3,072)
    beside the loaded ones, which stay registered; float32 biases. 32 experts in 24 layers: 0.55
    GiB more than the checkpoint's count, and the weights a rank come to 6.96 GiB against the 7.01
    GiB the log loads (6.41 counted as the checkpoint)."""
    shape = _shape("gpt-oss-20b")
    e, h, i, ip = 32, 2880, 1440, 1472
    held = e * (1472 * 2944 + 768 * 2880 + 3072 * 90 + 3072 * 46 + 2 * ip * 90 + h * 46 + (2 * ip + h) * 4)
    counted = e * (2 * i * h // 2 + 2 * i * h // 32 + 2 * i * 2 + h * i // 2 + h * i // 32 + h * 2)
    pad = predict.mxfp4_padding(shape, 2, (0, 19), card_name="NVIDIA H100 SXM")
    assert pad.bytes == 24 * (held - counted) == 585842688
    card = predict.Card("h100", "NVIDIA H100 SXM", round(79.19 * GiB), "79.19 GiB", "log 111")
    p = predict.predict(shape, card, predict.Start(tp=2, max_model_len=8192, engine_version="0.19.0"), 4)
    assert round(p.weights.bytes / GiB, 2) == 6.99 and "TRITON on Hopper" in p.weights.source  # with the rope cache, 32 MiB in float32
    assert abs(p.weights.bytes - parse_size("7.01 GiB")) < 0.06 * GiB
    assert predict.mxfp4_padding(_shape("qwen3-30b-a3b"), 1, (0, 10)).bytes == 0  # no MXFP4


def test_forward_peak_of_a_dense_model() -> None:
    """Llama 3.1 8B at 29,000 tokens: (3 x 4,096 + 3 x 14,336) x 2 B a token: the 2.99 GiB the V0.6.4
    log's peak_torch_memory (17.98 GiB) less its weights (14.99 GiB) shows."""
    t = predict.forward_peak(_shape("llama-3.1-8b"), 1, 29000, 0)
    assert t.bytes == 29000 * (3 * 4096 + 3 * 14336) * 2
    assert round(t.bytes / GiB, 2) == 2.99
    assert predict.forward_peak(_shape("llama-3.1-8b"), 1, 29000, 0, (0, 6), eager=True).bytes == t.bytes  # LlamaMLP frees gate_up


def test_an_eager_forward_holds_what_python_names() -> None:
    """Run eagerly (V0; V1 under --enforce-eager), a Qwen2 MLP keeps gate_up's output named through
    down_proj, beside the layer's input, the residual and the MLP's input: 4 x hidden + 3 x
    intermediate a token on one GPU, and under TP one hidden row more, the out-of-place all-reduce's
    output beside the rank's partial. The printed peaks: Qwen3 8B at 4,096 tokens on a 48 GB RTX 4090
    under v0.29.0 --enforce-eager, 0.41 GiB (logs/starts/196-..., 'Actual usage is ... 0.41 GiB for peak
    activation'); Qwen2.5 14B in float16 at TP 2 and 32,768 tokens under V0 0.7.2, 2.84 GiB (logs/starts/157-...);
    Qwen2.5-Coder-32B (Qwen2.5 32B's shape) at TP 4 and 131,072 tokens under V0 0.8.x, 11.32 GiB
    (logs/public/37-...). The compiled forward keeps 3 x hidden + 3 x intermediate."""
    qwen3 = _shape("qwen3-8b")
    assert predict.forward_peak(qwen3, 1, 4096, 0, (0, 29), eager=True).bytes == 4096 * (4 * 4096 + 3 * 12288) * 2
    assert round(predict.forward_peak(qwen3, 1, 4096, 0, (0, 29), eager=True).bytes / GiB, 2) == 0.41
    assert predict.forward_peak(qwen3, 1, 4096, 0, (0, 29)).bytes == 4096 * (3 * 4096 + 3 * 12288) * 2
    v0_tp2 = predict.forward_peak(_shape("qwen2.5-14b"), 2, 32768, 0, (0, 7), eager=True)
    assert v0_tp2.bytes == 32768 * (5 * 5120 + 3 * 13824 // 2) * 2 and "out-of-place all-reduce" in v0_tp2.source
    assert abs(v0_tp2.bytes - parse_size("2.84 GiB")) < 0.02 * GiB
    v0_tp4 = predict.forward_peak(_shape("qwen2.5-32b"), 4, 131072, 0, (0, 8), eager=True)
    assert abs(v0_tp4.bytes - parse_size("11.32 GiB")) < 0.02 * GiB
    # Llama's MLP rebinds x to the activation: under TP its down_proj moment (5 x hidden + intermediate / TP)
    # passes the activation's only where a rank's intermediate is under the hidden size (Llama 3.1 8B at TP 4:
    # 3,584 a rank; the attention's qkv and core outputs, 1,536 + 1,024)
    assert predict.eager_moments(4096, 14336 // 4, 1536 + 1024, 4, False) == 5 * 4096 + 14336 // 4 > 3 * 4096 + 3 * 14336 // 4
    assert "LlamaForCausalLM" not in predict.GATE_UP_HELD and "Qwen3ForCausalLM" in predict.GATE_UP_HELD


def test_every_mlp_that_names_gate_up_keeps_it_eagerly() -> None:
    """The classes whose MLP writes `gate_up, _ = self.gate_up_proj(x)` keep it to down_proj, not Qwen2 alone:
    Qwen3.5's dense MLP is qwen2_moe.py's Qwen2MoeMLP (qwen3_5.py, v0.18.0 and v0.33.0), and gemma.py,
    commandr.py and internlm2.py name it so too (v0.7.2, v0.24.0, v0.33.0). Qwen3.5 27B (hidden 5,120,
    intermediate 17,408, its public config) at 4,096 tokens eagerly holds 4 x 5,120 + 3 x 17,408 a token, where
    the compiled form keeps 3 x 5,120 + 3 x 17,408. Llama-style MLPs (llama.py, mistral.py, glm4.py's
    LlamaMLP) and ChatGLM's rebind it and stay out."""
    qwen35 = _shape("qwen3.5-27b-derestricted-gptq-int8")
    assert (qwen35.hidden, {m.intermediate for m in qwen35.mlps}) == (5120, {17408})
    assert predict.forward_peak(qwen35, 1, 4096, 0, (0, 27), eager=True).bytes == 4096 * (4 * 5120 + 3 * 17408) * 2
    assert predict.forward_peak(qwen35, 1, 4096, 0, (0, 27)).bytes == 4096 * (3 * 5120 + 3 * 17408) * 2
    held = {"Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration", "GemmaForCausalLM", "CohereForCausalLM", "Cohere2ForCausalLM",
            "InternLM2ForCausalLM", "MiMoForCausalLM", "Exaone4ForCausalLM"}  # fmt: skip
    assert held <= predict.GATE_UP_HELD
    assert not {"MistralForCausalLM", "Phi3ForCausalLM", "DeciLMForCausalLM", "Glm4ForCausalLM", "ChatGLMModel", "InternLM3ForCausalLM"} & predict.GATE_UP_HELD


def test_the_plain_awq_kernel_holds_a_whole_weight() -> None:
    """--quantization awq by name keeps AWQLinearMethod up to 0.23.x; at 256 tokens or more it writes
    gate_up's whole weight (3,584 x 2 x 18,944 for Qwen2.5 7B) beside gate_up's output: 2,048 x
    (3 x 3,584 + 2 x 18,944) + 3,584 x 37,888 values in float16, 0.18 GiB over the plain peak."""
    shape = _shape("qwen2.5-7b")
    plain = predict.forward_peak(shape, 1, 2048, 0)
    whole = predict.forward_peak(shape, 1, 2048, 0, (0, 22), dequantized=True)
    assert plain.bytes == 2048 * (3 * 3584 + 3 * 18944) * 2
    assert whole.bytes == (2048 * (3 * 3584 + 2 * 18944) + 3584 * 2 * 18944) * 2
    assert round((whole.bytes - plain.bytes) / GiB, 2) == 0.18 and "awq.py" in whole.source
    assert predict.forward_peak(shape, 1, 255, 0, (0, 22), dequantized=True).bytes == 255 * (3 * 3584 + 3 * 18944) * 2  # matmul on the packed weight
    cases = (((0, 23), "AWQ"), ((0, 24), "awq"), ((0, 22), "awq_marlin"), ((0, 22), None))
    assert [predict.plain_awq(rel, q) for rel, q in cases] == ["forced", "", "", ""]
    # a T4 (compute capability 7.5) runs an AWQ checkpoint on the plain kernel until Marlin takes 7.5, v0.14.0
    assert [predict.plain_awq(rel, None, True, True) for rel in ((0, 13), (0, 14))] == ["turing", ""]
    assert predict.plain_awq((0, 13), None, False, True) == "" and predict.is_turing("NVIDIA Tesla T4")
    assert predict.is_turing("NVIDIA GeForce RTX 2080 Ti") and not predict.is_turing("NVIDIA GeForce RTX 3060")


def test_forward_peak_of_an_moe_uses_the_fused_workspace() -> None:
    """Qwen3-30B-A3B: 8 of 128 experts of 768, hidden 2,048: top_k x (max(N/2, K) + max(N, K)) + K, N = 2 x 768."""
    shape = _shape("qwen3-30b-a3b")
    t = predict.forward_peak(shape, 1, 8192, 8)
    moe = 8 * (max(768, 2048) + max(1536, 2048)) + 2048
    assert t.bytes == 8192 * (3 * 2048 + moe) * 2


def test_the_moe_workspace_kept_through_the_sampler_by_release() -> None:
    """From 0.14.0 unquantized experts run through the modular kernel, whose workspace13 and
    workspace2 the worker's WorkspaceManager keeps (vllm/v1/worker/workspace.py): Qwen3-30B-A3B at
    8,192 tokens holds 8,192 x 8 x (2,048 + 2,048) x 2 B = 512 MiB while the sampler warms up, and
    the printed peak of its 0.19.0 start, 2.68 GiB, is the sampler's plus that. Up to 0.13.x
    fused_experts frees its caches at each layer; 0.14.0 to 0.17.x size them on a chunk of
    16,384 rows (VLLM_FUSED_MOE_CHUNK_SIZE), the output of every row beside them."""
    shape = _shape("qwen3-30b-a3b")
    assert predict.moe_workspace(shape, 1, 8192, 8, (0, 19)).bytes == 8192 * 8 * (2048 + 2048) * 2 == 512 * 2**20
    assert predict.moe_workspace(shape, 1, 8192, 8, (0, 13)).bytes == 0
    assert predict.moe_workspace(shape, 1, 32768, 8, (0, 16)).bytes == (16384 * 8 * (2048 + 2048) + 32768 * 2048) * 2
    assert predict.moe_workspace(shape, 1, 32768, 8, (0, 19)).bytes == 32768 * 8 * (2048 + 2048) * 2
    assert predict.moe_workspace(_shape("llama-3.1-8b"), 1, 8192, 0, (0, 19)).bytes == 0
    card = predict.Card("h100", "H100", round(79.19 * GiB), "79.19 GiB", "log 98")
    p = predict.predict(shape, card, predict.Start(max_model_len=8192, utilization=Fraction(95, 100), engine_version="0.19.0"), 8)
    assert p.moe_workspace_bytes == 512 * 2**20
    assert p.activation.bytes == p.sampler.bytes + p.residual_bytes + p.moe_workspace_bytes > p.forward.bytes
    assert round(p.activation.bytes / GiB, 2) == 2.70  # the log prints 2.68
    old = predict.predict(shape, card, predict.Start(max_model_len=8192, utilization=Fraction(95, 100), engine_version="0.13.0"), 8)
    assert old.moe_workspace_bytes == 0 and old.activation.bytes == max(old.forward.bytes, old.sampler.bytes + old.residual_bytes)


def test_the_vision_towers_forward_in_the_profile_run() -> None:
    """The tower runs first on the profile's dummy items and frees all but its outputs
    (gpu_model_runner.py profile_run): the peak is the larger of its forward and the language
    model's phase. Gemma 3 12B (SigLIP, 4,096 patches an image, 32 images at 8,192 tokens): the
    residual and normed input (2 x 1,152) and fc1 with its GELU (2 x 4,304) a patch, and the pixels
    in bfloat16 (vLLM casts the processor's output to the model's dtype): 2.81 GiB, below the
    sampler's phase (3.87), as the v0.19.0 start shows (it prints 3.94). Qwen2.5-VL-3B at 0.19.0
    (one image of 16,384 tokens, 65,536 patches): the attention at its projection, the normed input, 8 x
    hidden and the projection's output (10 x 1,280 a patch, above the gated MLP's 1,280 + 3 x 3,420) beside
    the residual: 1.86 GiB, above its language model's phase with 256 sequences, so it sets the peak."""
    card = predict.Card("h100", "NVIDIA H100 SXM", round(79.19 * GiB), "79.19 GiB", "log 112")
    gemma = _shape("gemma-3-12b-it")
    enc = multimodal.encoder_profile(gemma, multimodal.Settings(), 8192, 1024, 8192, (0, 19))
    assert enc is not None and (enc.items, enc.patches) == (32, 32 * 4096)
    assert enc.forward_bytes == 131072 * (2 * 1152 + 2 * 4304) * 2 + 131072 * 3 * 14 * 14 * 2
    p = predict.predict(gemma, card, predict.Start(max_model_len=8192, utilization=Fraction(95, 100), engine_version="0.19.0"))
    assert enc.forward_bytes < p.activation.bytes == p.sampler.bytes + p.residual_bytes + enc.held_bytes < parse_size("3.94 GiB")
    assert round(enc.forward_bytes / GiB, 2) == 2.81 and round(p.activation.bytes / GiB, 2) == 3.87
    qwen = _shape("qwen2.5-vl-3b")
    p = predict.predict(qwen, card, predict.Start(max_model_len=8192, max_num_seqs=256, engine_version="0.19.0"))
    assert p.activation.bytes == 65536 * (11 * 1280) * 2 + 65536 * 3 * 2 * 14 * 14 * 2 > p.sampler.bytes + p.residual_bytes
    assert round(p.activation.bytes / GiB, 2) == 1.86 and "vision tower's forward" in p.activation.source
    # at TP 2 the tower is divided over the ranks; --mm-encoder-tp-mode data builds it whole on each
    split = multimodal.encoder_profile(qwen, multimodal.Settings(), 8192, 256, 8192, (0, 19), tp=2)
    whole, _ = multimodal.apply(qwen, multimodal.Settings(mm_encoder_tp_mode="data"), (0, 19))
    data = multimodal.encoder_profile(whole, multimodal.Settings(mm_encoder_tp_mode="data"), 8192, 256, 8192, (0, 19), tp=2)
    assert split is not None and data is not None and split.forward_bytes < data.forward_bytes


def test_the_sampler_by_release() -> None:
    """Up to 0.16.x the PyTorch-native sort (V1: derived, 38 B a bf16 logit; V0: fitted); from 0.17.0
    on 8 rows or more the Triton top-k/top-p kernel, no sort (topk_topp_sampler.py); from 0.21.0
    FlashInfer's sampler by default on CUDA (vllm/envs.py), 14 B a bf16 logit; ROCm keeps the Triton path."""
    assert predict.sampler_warmup(151936, 256, (0, 16)).bytes == 256 * 151936 * 38
    assert predict.sampler_warmup(151936, 256, (0, 7)).bytes == 256 * 151936 * predict.SAMPLER_BYTES_PER_LOGIT
    assert predict.sampler_warmup(151936, 256, (0, 17)).bytes == 256 * 151936 * predict.SAMPLER_TRITON_BYTES_PER_LOGIT
    assert predict.sampler_warmup(151936, 256, (0, 20)).bytes == 256 * 151936 * predict.SAMPLER_TRITON_BYTES_PER_LOGIT
    assert predict.sampler_warmup(151936, 7, (0, 20)).bytes == 7 * 151936 * 50  # below 8 rows: the sort, by one full sort
    assert predict.SAMPLER_TRITON_BYTES_PER_LOGIT < predict.sort_bytes_per_logit(256)
    assert predict.sampler_warmup(151936, 256, (0, 21)).bytes == 256 * 151936 * 14
    assert predict.sampler_warmup(151936, 256, (0, 21), vendor="amd").bytes == 256 * 151936 * predict.SAMPLER_TRITON_BYTES_PER_LOGIT


def test_the_sampler_where_flashinfer_is_installed() -> None:
    """V1 from 0.8.0 to 0.11.x samples with FlashInfer wherever it imports (topk_topp_sampler.py,
    `VLLM_USE_FLASHINFER_SAMPLER is not False`, 0.10.1.1): 14 B a bf16 logit (the logits, their float32
    copy, FlashInfer's top-k masked copy and probabilities; flashinfer/sampling.py 0.2.11), no sort; from 0.12.0 it is
    opt-in, so an install that has it still sorts until 0.21.0; without it, the sort throughout."""
    assert predict.sampler_warmup(152064, 256, (0, 10), flashinfer=True).bytes == 256 * 152064 * 14
    assert predict.sampler_warmup(152064, 256, (0, 8), flashinfer=True).bytes == 256 * 152064 * 14
    assert predict.sampler_warmup(152064, 256, (0, 11), flashinfer=True).bytes == 256 * 152064 * 14
    assert predict.sampler_warmup(152064, 256, (0, 11), flashinfer=True, logits_bytes=4).bytes == 256 * 152064 * 12  # no float32 copy
    assert predict.sampler_warmup(152064, 256, (0, 10)).bytes == 256 * 152064 * 38
    assert predict.sampler_warmup(152064, 256, (0, 12), flashinfer=True).bytes == 256 * 152064 * 38
    assert predict.sampler_warmup(152064, 256, (0, 7), flashinfer=True).bytes == 256 * 152064 * predict.SAMPLER_BYTES_PER_LOGIT  # V0
    assert predict.sampler_warmup(152064, 256, (0, 10), vendor="amd", flashinfer=True).bytes == 256 * 152064 * 38
    # Qwen2 7B on one A100 at 0.25 (log 114): 0.51 GiB where the sort would hold 1.38
    shape = _shape("qwen2.5-7b")
    card = predict.Card("a100-80gb", "A100 80GB", round(Fraction("79.32") * GiB), "79.32 GiB", "")
    start = predict.Start(max_model_len=16384, utilization=Fraction(1, 4), engine_version="0.10.1.1")
    sort = predict.predict(shape, card, start)
    fi = predict.predict(shape, card, replace(start, flashinfer_sampler=True))
    assert (sort.sampler.bytes, fi.sampler.bytes) == (256 * 152064 * 38, 256 * 152064 * 14)
    assert fi.activation.bytes == 256 * 152064 * 14 + 2048 * 3584 * 2  # the sampler's warm-up and the hidden states it runs beside
    assert fi.available_kv_bytes - sort.available_kv_bytes == sort.activation.bytes - fi.activation.bytes


def test_the_sort_bytes_from_the_source() -> None:
    """V1's PyTorch-native top-k/top-p at its peak, the sort, by hand from the source for 1,024 rows
    of gpt-oss-120b's 201,088 bf16 logits (0.11.0 on one H100): the logits (2 B) and their float32
    copy (4 B, sampler.py), the sort's float32 values (4 B) and int64 indices (8 B)
    (topk_topp_sampler.py apply_top_k_top_p), PyTorch's int64 reverse indices (8 B,
    SortStable.cu segmented_sort_pairs, from 128 rows) and CUB's third keys and values buffers
    (4 + 8 B). From 2 to 127 rows one full sort takes two int2 buffers and the keys' output
    instead (8 + 8 + 4 B); float32 logits take no copy."""
    rows, vocab = 1024, 201088
    by_hand = rows * vocab * (2 + 4 + 4 + 8 + 8 + 4 + 8)
    assert predict.sampler_warmup(vocab, rows, (0, 11)).bytes == by_hand == 7_824_736_256
    assert predict.sort_bytes_per_logit(1) == predict.sort_bytes_per_logit(128) == 38
    assert predict.sort_bytes_per_logit(8) == predict.sort_bytes_per_logit(127) == 2 + 4 + 4 + 8 + 8 + 8 + 4 + 4 + 8 == 50
    assert predict.sort_bytes_per_logit(1024, logits_bytes=4) == 4 + 4 + 8 + 20
    assert predict.sampler_warmup(vocab, rows, (0, 11), logits_bytes=4).bytes == rows * vocab * 36


def test_the_marlin_experts_workspace_by_hand() -> None:
    """fused_marlin_moe (fused_moe/fused_marlin_moe.py, v0.13.0) for Qwen3-Next 80B-A3B's experts
    under TP 2 (hidden K = 2,048, expert intermediate 512, so N = 256 a rank, top_k 10) over 8,192
    tokens, bf16: intermediate_cache13 = M x top_k x max(2N, K) = 8,192 x 10 x 2,048 and
    intermediate_cache2 = M x top_k x N = 8,192 x 10 x 256, beside the output M x K, every token at
    once; TritonExperts' workspace over the same tokens (one 16,384-row chunk in v0.13.0) is
    M x top_k x (max(N, K) + max(2N, K)) = 8,192 x 10 x 4,096."""
    cache13, cache2, out = 8192 * 10 * max(2 * 256, 2048), 8192 * 10 * 256, 8192 * 2048
    assert (cache13, cache2) == (167_772_160, 20_971_520)
    assert 8192 * 10 * predict.marlin_moe_workspace(512, 256, 2048) == cache13 + cache2
    shape = _shape("qwen3-next-80b-a3b-instruct")
    marlin = predict.forward_peak(shape, 2, 8192, 10, (0, 13), marlin=True)
    triton = predict.forward_peak(shape, 2, 8192, 10, (0, 13))
    residual = 8192 * (3 * 2048 + 3 * 512 // 2)  # the residual stream, the normed input and the shared expert's MLP
    assert marlin.bytes == (residual + out + cache13 + cache2) * 2 == 524_288_000
    assert triton.bytes - marlin.bytes == 8192 * 10 * (4096 - 2304) * 2 == 293_601_280  # 0.27 GiB
    assert "fused_marlin_moe" in marlin.source


def test_which_experts_run_marlin() -> None:
    """An int checkpoint's experts run Marlin on CUDA from 0.10: the quant method calls
    fused_marlin_moe itself (GPTQ up to 0.19, AWQ up to 0.21, compressed-tensors' WNA16 up to 0.22),
    then builds MarlinExperts under the modular kernel (make_wna16_moe_kernel); a log's line or an
    entry names the method where the config is not the checkpoint's; W8A8 int8 is no WNA16."""
    bf16 = _shape("qwen3-next-80b-a3b-instruct")
    awq = replace(bf16, quantization={"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True})
    gptq = replace(bf16, quantization={"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True})
    assert [predict.marlin_experts(awq, r) for r in ((0, 9), (0, 10), (0, 19), (0, 21), (0, 22), (0, 33))] == [
        "", "direct", "direct", "direct", "modular", "modular"]  # fmt: skip
    assert [predict.marlin_experts(gptq, r) for r in ((0, 19), (0, 20))] == ["direct", "modular"]
    assert [predict.marlin_experts(bf16, (0, r), stated="compressed-tensors") for r in (13, 22, 23)] == ["direct", "direct", "modular"]
    assert predict.marlin_experts(awq, (0, 13), vendor="amd") == predict.marlin_experts(bf16, (0, 13)) == ""
    assert predict.marlin_experts(awq, (0, 13), stated="") == ""
    w8a8 = {"quant_method": "compressed-tensors", "format": "int-quantized",
            "config_groups": {"g": {"weights": {"type": "int", "num_bits": 8}, "input_activations": {"type": "int", "num_bits": 8}}}}  # fmt: skip
    assert predict.marlin_experts(replace(bf16, quantization=w8a8), (0, 13)) == ""
    line = "(Worker_TP0 pid=306) INFO 02-12 19:46:46 [compressed_tensors_moe.py:193] Using CompressedTensorsWNA16MarlinMoEMethod"
    assert poolaccuracy.marlin_experts(line, None, "x") == "compressed-tensors"
    assert poolaccuracy.marlin_experts("Initializing a V1 LLM engine (v0.11.0) with config: quantization=awq_marlin, ", None, "x") == "awq"
    assert poolaccuracy.marlin_experts("Using CompressedTensorsWNA16MoEMethod", None, "x") == ""
    assert poolaccuracy.marlin_experts("", None, "x") is None and poolaccuracy.marlin_experts("", "gptq_marlin", "x") == "gptq"
    with pytest.raises(InputError) as caught:
        poolaccuracy.marlin_experts("", "awq", "models/pool_starts.yaml: starts[54].experts")
    assert str(caught.value) == (
        "models/pool_starts.yaml: starts[54].experts: found 'awq', expected awq_marlin, gptq_marlin, compressed-tensors-wna16-marlin, triton"
    )


def test_marlin_experts_keep_their_workspace_once_modular() -> None:
    """Under the modular kernel (from 0.20 for GPTQ, 0.22 for AWQ) MarlinExperts takes its workspace
    from the WorkspaceManager, which keeps it through the sampler's warm-up: workspace13 =
    M x top_k x max(N, K) shared with the output, workspace2 = M x top_k x max(2N, K)
    (experts/marlin_moe.py MarlinExperts.workspace_shapes, 0.25.0), by hand for Qwen3-Next under TP 2
    over 8,192 tokens; fused_marlin_moe called directly keeps nothing."""
    shape = _shape("qwen3-next-80b-a3b-instruct")
    awq = replace(shape, quantization={"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True})
    kept = 8192 * 10 * max(256, 2048) + 8192 * 10 * max(512, 2048)  # the output (8,192 x 2,048) fits in workspace13
    assert predict.moe_workspace(awq, 2, 8192, 10, (0, 25), "modular").bytes == kept * 2 == 671_088_640
    assert predict.moe_workspace(awq, 2, 8192, 10, (0, 25)).bytes == 0  # quantized, the kernel not named
    assert predict.moe_workspace(shape, 2, 8192, 10, (0, 19), "direct").bytes == 0
    assert predict.moe_workspace(shape, 2, 8192, 10, (0, 19)).bytes == kept * 2  # bf16 experts through TritonExperts


def test_a_release_is_read_as_vllm_writes_it() -> None:
    """The forms vLLM's own versions take (a fourth number, release candidates, post and dev builds,
    a local build label, a leading v) read as (major, minor, patch); anything else is refused."""
    from calc.engine.release import parse_release

    forms = {"0.10.2": (0, 10, 2), "v0.11.0": (0, 11, 0), "0.11": (0, 11, 0), "0.10.1.1": (0, 10, 1), "0.10.2rc1": (0, 10, 2),
             "0.6.3.post1": (0, 6, 3), "0.9.2.dev123+gabc1234": (0, 9, 2), "0.10.2+cu128": (0, 10, 2), " 0.20.0 ": (0, 20, 0)}  # fmt: skip
    assert {text: parse_release(text) for text in forms} == forms
    for bad in ("-0.11.0", "0.-1.0", "0.11.x", "0", "0.11.0.0.0", "latest", "0.11.0 rc1", "１.0"):
        with pytest.raises(InputError, match=r"expected a vLLM version such as 0\.10\.1 or 0\.26\.0"):
            parse_release(bad)


def test_non_torch_under_tp_by_release() -> None:
    """Up to v0.10.1.1 vllm/env_override.py turns NCCL's cuMem allocator off (NCCL_CUMEM_ENABLE=0); off
    NVSwitch boards the NCCL memory a rank holds under TP is then the smallest median (A100 pairs leave
    0.17 to 0.23 GiB); v0.10.2 drops the override (the Qwen3-Next start on two H200 prints 1.38 GiB
    outside torch, seven times the 0.19). An NVSwitch board takes its own, cuMem or not: its two fitted
    starts with cuMem off (TP 8 on H100, v0.10.0) leave 2.30 and 2.40 GiB a rank. One GPU and V0 keep
    their own."""
    assert [predict.nccl_cumem(v) for v in ("0.8.5", "0.10.1.1", "0.10", "0.10.2", "v0.11.0", None)] == [False, False, False, True, True, True]
    # a pre-release or a local build of 0.10.2 is 0.10.2 (patch_release reads the patch's digits), as the compile's block reads it
    assert [predict.nccl_cumem(v) for v in ("0.10.2rc1", "0.10.2+cu128", "0.10.1.1+cu126")] == [True, True, False]
    assert predict.patch_release("0.10.2+cu128") == (0, 10, 2) and predict.patch_release("0.10.2rc1") == (0, 10, 2)
    assert predict.non_torch(2, 1, (0, 10), cumem=True).bytes == predict.NON_TORCH_PER_RANK_TP
    assert predict.non_torch(2, 1, (0, 10)).bytes == predict.NON_TORCH_PER_RANK_TP  # cuMem off on an NVSwitch board
    assert predict.non_torch(2, 1, (0, 10), nvls=False, cumem=True).bytes == predict.NON_TORCH_PER_RANK_TP_OTHER_BOARDS
    assert predict.non_torch(2, 1, (0, 10), nvls=False).bytes == predict.NON_TORCH_PER_RANK_TP_NO_CUMEM
    assert predict.non_torch(1, 2, (0, 8), nvls=False).bytes == predict.NON_TORCH_PER_RANK_TP_NO_CUMEM
    assert predict.non_torch(2, 1, (0, 11)).bytes == predict.NON_TORCH_PER_RANK_TP
    assert predict.non_torch(4, 1, (0, 19)).bytes == predict.NON_TORCH_PER_RANK_TP
    assert predict.non_torch(2, 1, (0, 7)).bytes == predict.NON_TORCH_PER_RANK_TP_V0
    assert predict.non_torch(1, 1, (0, 10)).bytes == predict.NON_TORCH_ONE_RANK
    assert round(predict.NON_TORCH_PER_RANK_TP_NO_CUMEM / GiB, 2) == 0.19
    assert round(predict.NON_TORCH_PER_RANK_TP_OTHER_BOARDS / GiB, 2) == 0.25
    assert predict.NON_TORCH_PER_RANK_TP_NO_CUMEM < predict.NON_TORCH_PER_RANK_TP / 5


def test_a_card_with_fitted_starts_takes_its_own_non_torch_memory(measured) -> None:
    """On one GPU under V1 a card with three fitted one-GPU starts or more adds their median gap to V1's
    constant: the RTX 4080 Laptop 0.19 GiB less (ten fitted and held-out starts from v0.20.0 to v0.23.0,
    every utilization from 0.33 to 0.85, were each 0.19 GiB under with the constant alone). Not on V0,
    Model Runner V2, under TP, or a card known by its total alone; a card with fewer fitted starts (the RTX
    3090's two V1 starts) takes the constant."""
    laptop = predict.NON_TORCH_CARD_OFFSETS["rtx-4080-laptop"]
    assert round(laptop / GiB, 2) == -0.19
    one = predict.non_torch(1, 1, (0, 23), card="rtx-4080-laptop")
    assert one.bytes == predict.NON_TORCH_ONE_RANK + laptop and "V1's 0.25 GiB less 0.19 GiB on this card" in one.source
    assert predict.non_torch(1, 1, (0, 7), card="rtx-4080-laptop").bytes == predict.NON_TORCH_ONE_RANK_V0
    assert predict.non_torch(1, 1, (0, 28), v2=True, card="rtx-4080-laptop").bytes == predict.NON_TORCH_ONE_RANK_V2
    assert predict.non_torch(2, 1, (0, 23), nvls=False, card="rtx-4080-laptop").bytes == predict.NON_TORCH_PER_RANK_TP_OTHER_BOARDS
    assert predict.non_torch(1, 1, (0, 23), card="rtx-3090").bytes == predict.non_torch(1, 1, (0, 23)).bytes == predict.NON_TORCH_ONE_RANK
    assert "rtx-3090" not in predict.NON_TORCH_CARD_OFFSETS and "on this card" not in predict.non_torch(1, 1, (0, 23)).source
    # a card known by its total alone (--total-memory) takes the constant, whatever its size
    given = predict.card_from_total("11.99 GiB")
    assert given.id not in predict.NON_TORCH_CARD_OFFSETS
    qwen = _shape("qwen2.5-7b")
    start = predict.Start(max_model_len=4096, utilization=Fraction(8, 10), engine_version="0.23.0")
    assert predict.predict(qwen, given, start).non_torch.bytes == predict.NON_TORCH_ONE_RANK
    rows, _ = measured
    laptops = [r for r in rows if r.card == "rtx-4080-laptop" and r.release >= (0, 8)]
    assert len(laptops) == 11 and sum(r.held_out for r in laptops) == 4
    assert all(abs(r.prediction.available_kv_bytes - r.printed_pool) < 0.03 * GiB for r in laptops if "fp8" not in r.label)
    # the fit counts a card's fitted one-GPU V1 starts alone: dropping the held-out rows changes nothing
    assert poolaccuracy.card_offsets([r for r in rows if not r.held_out]) == poolaccuracy.card_offsets(rows) == predict.NON_TORCH_CARD_OFFSETS


def test_the_kv_page_counts_the_starts_each_card_offset_rests_on(measured, catalog) -> None:
    """The KV page's table of card offsets counts the starts card_offsets fits and the held-out ones beside
    them, each with a printed pool: 25 fitted H100 SXM starts, not 26 (the gpt-oss-120b start under
    v0.10 printed a negative pool, which no gap is taken from); no RTX 4090 start checks its offset."""
    from hooks.pagemacros.build import Build
    from hooks.pagemacros.model_accuracy import pool_card_non_torch

    rows, _ = measured
    counts = {
        card: (sum(not r.held_out for r in own), sum(r.held_out for r in own))
        for card in predict.NON_TORCH_CARD_OFFSETS
        if (own := [r for r in rows if r.card == card and poolaccuracy.card_offset_row(r)])
    }
    assert counts == {"a100-40gb": (3, 2), "a100-80gb": (4, 4), "h100-sxm": (25, 10), "rtx-4080-laptop": (7, 4), "rtx-4090": (3, 0)}
    page = pool_card_non_torch(Build(None, catalog))  # type: ignore[arg-type]
    h100 = next(line for line in page.splitlines() if "H100 SXM" in line)
    assert [re.sub(r"<[^>]+>", "", cell).strip() for cell in h100.strip("| ").split(" | ")][1:3] == ["25", "10"]


def test_cli_turns_the_flashinfer_sampler_off(capsys) -> None:
    """--no-flashinfer-sampler is VLLM_USE_FLASHINFER_SAMPLER=0: from 0.21.0 the warm-up runs the
    Triton kernel, 15 B a logit against FlashInfer's 10, as the Qwen3-Reranker-8B start under 0.21.0
    printed (62.35 GiB, the same as under 0.20.2); with --flashinfer-installed it is one line."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-pro-6000-blackwell", "--gpu-memory-utilization", "0.85",
            "--max-model-len", "1024", "--max-num-seqs", "1024", "--max-num-batched-tokens", "16384", "--engine-version", "0.21.0", "--json"]  # fmt: skip
    on, off = _json(argv, capsys), _json([*argv, "--no-flashinfer-sampler"], capsys)
    rows_x_vocab = 1024 * 151936
    assert off["activation_peak_bytes"] - on["activation_peak_bytes"] == rows_x_vocab * (
        predict.SAMPLER_TRITON_BYTES_PER_LOGIT - predict.FLASHINFER_SAMPLER_BYTES_PER_LOGIT
    )
    assert on["available_kv_bytes"] - off["available_kv_bytes"] == off["activation_peak_bytes"] - on["activation_peak_bytes"]
    assert abs(off["available_kv_bytes"] - parse_size("62.35 GiB")) < 0.01 * parse_size("62.35 GiB")
    assert cli.main([*argv, "--no-flashinfer-sampler", "--flashinfer-installed"]) == 2
    assert capsys.readouterr().err == "calc: error: --flashinfer-installed, --no-flashinfer-sampler: found both, expected one of them\n"


def test_the_log_says_which_sampler_ran() -> None:
    """topk_topp_sampler.py's INFO line names FlashInfer; its warning that FlashInfer is not available
    does not; an entry may state it where the log kept no line, and a wrong word is one line."""
    assert poolaccuracy.flashinfer_sampler("INFO 09-04 01:02:57 [topk_topp_sampler.py:50] Using FlashInfer for top-p & top-k sampling.", None, "x")
    warned = "WARNING 09-03 04:38:28 [topk_topp_sampler.py:61] FlashInfer is not available. Falling back to the PyTorch-native implementation of top-p & top-k sampling."
    assert not poolaccuracy.flashinfer_sampler(warned, None, "x")
    assert poolaccuracy.flashinfer_sampler("", "flashinfer", "x") and not poolaccuracy.flashinfer_sampler("", "pytorch", "x")
    # from 0.21.0 FlashInfer's sampler is the default and VLLM_USE_FLASHINFER_SAMPLER=0 turns it off: the Triton kernel's warm-up
    off = "INFO 05-29 [topk_topp_sampler.py:70] FlashInfer top-p/top-k sampling disabled via VLLM_USE_FLASHINFER_SAMPLER=0; using PyTorch-native sampler."
    assert poolaccuracy.flashinfer_sampler(off, None, "x") is False and poolaccuracy.flashinfer_sampler("", None, "x") is None
    rel = predict.release("0.21.0")
    assert predict.sampler_warmup(151936, 1024, rel).bytes == 1024 * 151936 * predict.FLASHINFER_SAMPLER_BYTES_PER_LOGIT
    assert predict.sampler_warmup(151936, 1024, rel, flashinfer=False).bytes == 1024 * 151936 * predict.SAMPLER_TRITON_BYTES_PER_LOGIT
    with pytest.raises(InputError) as caught:
        poolaccuracy.flashinfer_sampler("", "triton", "models/pool_starts.yaml: starts[45].sampler")
    assert str(caught.value) == "models/pool_starts.yaml: starts[45].sampler: found 'triton', expected flashinfer or pytorch"


def test_cuda_graph_only_from_0_20_and_not_eager() -> None:
    shape = _shape("qwen3-8b")
    assert predict.cuda_graph(shape, (0, 19), 256, 2048, False).bytes == 0
    assert predict.cuda_graph(shape, (0, 21), 256, 2048, True).bytes == 0
    assert predict.cuda_graph(shape, (0, 21), 256, 2048, False, vendor="amd").bytes == 0
    # vLLM's formula over log 31's graphs: the larger first capture (the piecewise one where the full
    # graphs' backend holds no buffers, FlashAttention 2), then each further graph of both modes,
    # growing with Qwen3-8B's 36 decoder layers. The piecewise first capture holds the largest graph's
    # activations at 512 tokens: the residual stream (3 x 4,096) and the MLP's gate_up and activation
    # outputs (3 x 12,288), in bf16
    assert predict.graph_counts(256, 2048) == (51, 35)
    acts = 512 * (3 * 4096 + 3 * 12288) * 2
    assert predict.piecewise_activations(shape, 1, 512) == acts == 48 * 2**20
    per = 50 * predict.CUDA_GRAPH_PIECEWISE_PER_LAYER + 34 * predict.CUDA_GRAPH_FULL_PER_LAYER
    assert predict.cuda_graph(shape, (0, 21), 256, 2048, False).bytes == predict.CUDA_GRAPH_PIECEWISE_FIRST + acts + 36 * per
    assert predict.cuda_graph_estimate(5, 0, 64) == predict.CUDA_GRAPH_PIECEWISE_FIRST + 4 * 64 * predict.CUDA_GRAPH_PIECEWISE_PER_LAYER
    # a further graph counts at least 1 MiB (gpu_model_runner.py profile_cudagraph_memory, v0.20.0 to v0.33.0)
    assert predict.cuda_graph_estimate(3, 0, 2) == predict.CUDA_GRAPH_PIECEWISE_FIRST + 2 * 2**20
    # on Hopper FlashAttention 3's split buffers for the largest full graph (256 tokens) come first
    h100 = predict.Capture(fa3=True)
    split = predict.fa3_split_buffers(256, 32, 128)
    assert split == 32 * 256 * 32 * 129 * 4
    assert predict.cuda_graph(shape, (0, 21), 256, 2048, False, capture=h100).bytes == predict.CUDA_GRAPH_FULL_FIRST + split + 36 * per
    assert predict.cuda_graph_estimate(0, 0, 36) == 0


def test_model_runner_v2_takes_no_graph_estimate_before_0_29() -> None:
    """Model Runner V2's profile_cudagraph_memory returns 0 from v0.22.0 to v0.28.0
    (vllm/v1/worker/gpu/model_runner.py), and each release's vllm/config/vllm.py decides which models
    run on it by default: Qwen3 dense alone in v0.22.0, Llama and Mistral too in v0.23.0 (neither
    quantized), a listed set with its MoEs in v0.24.0, every model neither hybrid nor MoE from
    v0.25.0, and every model from v0.29.0 (use_v2_model_runner, the list gone). A start on V2 keeps the graphs' bytes in its pool; the V1 runner's start, and V2's
    from v0.29.0 (its own estimate), give them up. vLLM's tracker measured as much on 0.26.0
    (Qwen2.5-0.5B on an RTX PRO 6000: the same pool on either runner in eager mode, about a tenth
    of a GiB more on V2 with graphs, where V1 takes its estimate off)."""
    llama, qwen3, hybrid, moe, qwen2moe = (_shape(n) for n in ("llama-3.1-8b", "qwen3-8b", "qwen3.6-35b-a3b", "qwen3-30b-a3b", "qwen2-57b-a14b"))
    v2 = {
        name: [predict.model_runner_v2(shape, rel) for rel in ((0, 21), (0, 22), (0, 23), (0, 24), (0, 25), (0, 27), (0, 28), (0, 29))]
        for name, shape in (("llama", llama), ("qwen3", qwen3), ("hybrid", hybrid), ("moe", moe), ("qwen2moe", qwen2moe))
    }
    assert v2 == {
        "llama": [False, False, True, True, True, True, True, True],
        "qwen3": [False, True, True, True, True, True, True, True],
        "hybrid": [False] * 7 + [True],
        "moe": [False] * 7 + [True],
        "qwen2moe": [False, False, False, True, True, True, True, True],
    }
    # ROCm keeps GLM-5 on V1 from v0.30.0 to v0.31.x (ROCM_DEFAULT_MRV1_ARCHITECTURES; DeepSeek V3.2 and V4 from v0.29.0)
    glm5 = hfconfig.shape(json.loads((ROOT / "tests/data/configs/glm-5.1/config.json").read_text()), "glm-5.1")
    assert [predict.model_runner_v2(glm5, rel, "amd") for rel in ((0, 29), (0, 30), (0, 31), (0, 32))] == [True, False, False, True]
    assert predict.model_runner_v2(glm5, (0, 30))
    # a quantized checkpoint of a listed architecture stays on V1 until v0.24.0
    assert not predict.model_runner_v2(replace(llama, quantization={"quant_method": "fp8"}), (0, 23))
    assert predict.model_runner_v2(replace(llama, quantization={"quant_method": "fp8"}), (0, 24))
    card = predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "h100-sxm"))
    h100 = predict.capture_of(llama, card, "auto", 0)
    full = predict.cuda_graph(llama, (0, 21), 1024, 8192, False, capture=h100).bytes
    assert full > 0
    assert predict.cuda_graph(llama, (0, 25), 1024, 8192, False, runner_v2=True, capture=h100).bytes == 0
    # from v0.29.0 V2's own: 51 piecewise graphs measured (the largest's own beside its activations at 512 tokens,
    # 50 further at 32 layers), 51 full ones extrapolated from the two largest, the first beside FA3's split buffers
    # for 512 tokens of 32 heads
    split = 32 * 512 * 32 * 129 * 4
    acts = 512 * (3 * 4096 + 3 * 14336) * 2
    v2_own = predict.V2_PIECEWISE_FIRST + acts + 50 * 32 * predict.V2_PIECEWISE_PER_LAYER + (32 * 58_103 + split) + 50 * 32 * 58_103
    assert predict.cuda_graph(llama, (0, 29), 1024, 8192, False, runner_v2=True, capture=h100).bytes == v2_own
    assert round(v2_own / GiB, 2) == 0.66
    # the source names V2's own first capture and the 512-token graph's activations (54 MiB for Llama 3.1 8B: 512 x (3 x 4,096 + 3 x 14,336) x 2 B), not the V1 runner's
    said = predict.cuda_graph(llama, (0, 29), 1024, 8192, False, runner_v2=True, capture=h100).source
    assert f"{fmt(predict.V2_PIECEWISE_FIRST + acts, 'MiB', 0, up=True)} for the largest piecewise graph (its activations at 512 tokens, 54 MiB" in said
    assert fmt(predict.CUDA_GRAPH_PIECEWISE_FIRST + acts, "MiB", 0, up=True) not in said
    # FULL_DECODE_ONLY (no piecewise graph): the first full capture holds the activations, and the source says so on either runner
    decode_only = replace(h100, mode="FULL_DECODE_ONLY")
    for rel, v2 in (((0, 24), False), ((0, 29), True)):
        t = predict.cuda_graph(llama, rel, 1024, 8192, False, runner_v2=v2, capture=decode_only)
        assert "PIECEWISE=0" in t.source and "its activations at 512 tokens, 54 MiB" in t.source
    # nothing compiled (a compilation mode of 0 keeps the full graphs from v0.31.0): the captured forward is eager, and
    # Qwen3 8B's MLP keeps gate_up's output through it, 512 x (4 x 4,096 + 3 x 12,288) x 2 B
    qwen3_8b = _shape("qwen3-8b")
    eager_acts = predict.piecewise_activations(qwen3_8b, 1, 512, 0, (0, 31), eager=True)
    assert eager_acts == 512 * (4 * 4096 + 3 * 12288) * 2 > predict.piecewise_activations(qwen3_8b, 1, 512, 0, (0, 31)) == 512 * (3 * 4096 + 3 * 12288) * 2
    uncompiled = predict.predict(qwen3_8b, card, predict.Start(max_model_len=8192, engine_version="0.31.0", cudagraph_mode="FULL_DECODE_ONLY", compiled=False))
    assert uncompiled.graph_activations == eager_acts and "its activations at 512 tokens, 52 MiB" in uncompiled.cuda_graph.source
    one = predict.cuda_graph(llama, (0, 29), 1, 1, False, runner_v2=True, capture=h100).source
    assert "at 1 token," in one and "1 tokens" not in one.split("split buffers")[0]
    # the whole start: Llama 3.1 8B on an H100 keeps the 0.77 GiB the V1 runner's estimate takes, 0.67 GiB V2's from v0.29.0
    pools = {
        rel: predict.predict(llama, card, predict.Start(max_model_len=8192, engine_version=rel, compile_cached=True)) for rel in ("0.22.0", "0.25.1", "0.29.0")
    }
    assert pools["0.25.1"].cuda_graph.bytes == 0 and pools["0.22.0"].cuda_graph.bytes == full and pools["0.29.0"].cuda_graph.bytes == v2_own
    # both V2, the same sampler warm-up and pass; from v0.27.0 the consumed memory holds the sampler's state (1,024 requests
    # of 128,256 logits) beside V2's own non-torch term
    state = pools["0.29.0"].sampler_state_bytes
    assert state == 1024 * (128_256 + 2 * 4008) * 4 and pools["0.25.1"].sampler_state_bytes == 0
    assert pools["0.25.1"].non_torch.bytes == predict.NON_TORCH_ONE_RANK + predict.NON_TORCH_CARD_OFFSETS[card.id]  # the H100's own, V1
    assert pools["0.29.0"].non_torch.bytes == state + predict.NON_TORCH_ONE_RANK_V2  # V2's own constant: no card's offset
    assert pools["0.25.1"].available_kv_bytes - pools["0.29.0"].available_kv_bytes == v2_own + pools["0.29.0"].non_torch.bytes - pools["0.25.1"].non_torch.bytes
    # V1's warm-up runs FlashInfer's top-k/top-p over float32 copies; V2's dummy requests sample greedily, from a float32
    # copy of the logits up to v0.25.x, from the logits alone from v0.26.0 to v0.32.x; v0.33.0's second pass runs top-k/top-p
    assert pools["0.22.0"].sampler.bytes > pools["0.25.1"].sampler.bytes == 1024 * 128256 * (2 + 4)
    v2 = {rel: predict.sampler_warmup(128256, 1024, rel, runner_v2=True).bytes for rel in ((0, 26), (0, 32), (0, 33))}
    assert v2[(0, 26)] == v2[(0, 32)] == 1024 * 128256 * 2
    assert v2[(0, 33)] == predict.sampler_warmup(128256, 1024, (0, 33)).bytes == 1024 * 128256 * predict.FLASHINFER_SAMPLER_BYTES_PER_LOGIT
    assert round(full / GiB, 2) == 0.77
    # a pipeline stage without the MoE layers is still the MoE's: the runner is the whole model's
    staged = predict.predict(moe, card, predict.Start(max_model_len=8192, engine_version="0.25.1", pp=2))
    assert all(sp.cuda_graph_bytes > 0 for sp in staged.stages)


def test_flashinfer_workspace_grows_with_the_batch_from_0_26() -> None:
    """https://github.com/vllm-project/vllm/issues/52872 (an RTX 5090 of 31.4 GiB, a 64-layer hybrid
    of 16 full-attention and 48 gated-delta layers, at TP 1): the CUDA graph pool is 0.89 GiB at
    --max-num-batched-tokens 8192 and 0.52 GiB at 4096, 3072 and 2048. From v0.26.0 the FlashInfer
    builder's workspace is max(394 MiB, tokens x 24 query heads x 256 x 16 B) (v1/attention/backends/
    flashinfer.py _get_workspace_buffer), allocated in the first full capture's warm-up where FlashInfer
    decodes with its own wrapper: 768 MiB at 8,192 tokens, the default at 4,096 (384 MiB) and below.
    The report prints neither its cache dtype nor max_num_seqs; the step is FlashInfer's, which an
    RTX 5090 runs with an fp8 cache (runs_flashinfer), and the graphs are the same at every row, so
    the step alone is compared."""
    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    rtx5090, b200, rtx4090 = (predict.card_of_box(predict.find_box(boxes, b)) for b in ("rtx-5090-node", "b200", "rtx-4090"))
    qwen = _shape("qwen3.5-27b-derestricted-gptq-int8")
    assert (qwen.layers.count("full"), qwen.layers.count("linear"), qwen.heads, qwen.head_dim) == (16, 48, 24, 256)
    assert predict.attention_groups(qwen) == 1
    fp8 = predict.capture_of(qwen, rtx5090, "fp8", 0)

    def pool(version: str, tokens: int, capture: predict.Capture = fp8, tp: int = 1) -> int:
        rel = predict.release(version)
        return predict.cuda_graph(qwen, rel, 256, tokens, False, "nvidia", predict.model_runner_v2(qwen, rel), capture, tp).bytes

    rows = {tokens: pool("0.27.1", tokens) for tokens in (8192, 4096, 3072, 2048)}
    assert rows[4096] == rows[3072] == rows[2048]
    assert round((rows[8192] - rows[4096]) / GiB, 2) == round(0.89 - 0.52, 2)
    assert rows[8192] - rows[4096] == 8192 * 24 * 256 * 16 - predict.FLASHINFER_WORKSPACE
    ws = predict.flashinfer_workspace
    assert ws(4202, 24, 256, (0, 26)) == predict.FLASHINFER_WORKSPACE < ws(4203, 24, 256, (0, 26))
    assert ws(8192, 24, 256, (0, 25)) == predict.FLASHINFER_WORKSPACE  # the default alone before 0.26.0
    # v0.25.0 keeps the default workspace; from v0.28.0 a 12.x card decodes with XQA, which takes none
    assert pool("0.25.0", 8192) == pool("0.25.0", 2048) == rows[2048]
    assert pool("0.26.0", 8192) == rows[8192]
    # where no workspace is allocated in the full warm-up the piecewise graph's first capture, beside its activations
    # at 512 tokens, is the larger
    acts = predict.piecewise_activations(qwen, 1, 512)
    own = rows[2048] - predict.FLASHINFER_WORKSPACE - predict.CUDA_GRAPH_FULL_FIRST + predict.CUDA_GRAPH_PIECEWISE_FIRST + acts
    assert pool("0.28.0", 8192) == own
    # from v0.29.0 the model runs on V2, which builds the workspace before it measures and counts its own graphs
    assert pool("0.33.0", 8192) == predict.v2_cuda_graph_estimate(51, 35, 64, 0, acts)
    # FlashAttention 2 with a bf16 cache, TRT-LLM decode on a B200: no builder workspace in the capture
    assert pool("0.27.1", 8192, predict.capture_of(qwen, rtx5090, "auto", 0)) == own
    assert pool("0.27.1", 8192, predict.capture_of(qwen, b200, "fp8", 0)) == own
    # an RTX 4090 (8.9) decodes with FlashInfer's wrapper in every release; at TP 2 a rank holds 12 heads
    ada = predict.capture_of(qwen, rtx4090, "fp8", 0)
    assert pool("0.28.0", 16384, ada) - pool("0.28.0", 2048, ada) == 16384 * 24 * 256 * 16 - predict.FLASHINFER_WORKSPACE
    assert pool("0.28.0", 16384, ada, 2) - pool("0.28.0", 2048, ada, 2) == 16384 * 12 * 256 * 16 - predict.FLASHINFER_WORKSPACE
    # from v0.29.0 the hybrid runs on Model Runner V2, which builds the workspace with its builders, before the capture it measures
    assert pool("0.33.0", 16384, ada) == pool("0.33.0", 2048, ada)
    # drafts leave FlashInfer without full graphs off data-center Blackwell: no full capture, no workspace
    mtp = predict.capture_of(qwen, rtx5090, "fp8", 3)
    assert pool("0.27.1", 8192, mtp) == pool("0.27.1", 2048, mtp)
    # each attention group has its own builder: Gemma 3 1B's 22 sliding and 4 full layers make 7
    assert predict.attention_groups(_shape("gemma-3-1b-it")) == 7
    assert predict.attention_groups(_shape("deepseek-v2-lite-chat")) == 0
    assert predict.is_sm120("RTX 5090 node") and predict.is_sm120("NVIDIA RTX PRO 6000 Blackwell")
    assert not predict.is_sm120("NVIDIA GeForce RTX 4060") and not predict.is_sm120("NVIDIA B200")


def test_a_hybrid_needs_a_mamba_block_for_each_sequence_from_0_20() -> None:
    """From v0.20.0 vLLM refuses a hybrid whose max_num_seqs exceeds the pool's blocks, since each
    decode sequence of a full CUDA graph needs its own Mamba cache block (vllm/config/compilation.py
    resolve_cudagraph_mode_and_sizes); 0.17 to 0.19 capped the graphs instead. On an H100 the default
    1,024 sequences outgrow the blocks of Nemotron-3-Nano at its full length, as vLLM's own CI and
    recipes met it (max_num_seqs (1024) exceeds available Mamba cache blocks (600), (856))."""
    shape = _shape("nemotron-3-nano-30b-a3b")
    card = predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "h100-sxm"))
    start = predict.Start(max_model_len=262144, engine_version="0.21.0")
    p = predict.predict(shape, card, start)
    blocks = 888  # the pool's blocks: one page of each of the 6 layers of a group
    assert (p.verdict, p.max_num_seqs) == ("max_num_seqs", 1024)
    assert p.reason.startswith("vLLM refuses: max_num_seqs (1024) exceeds the 888 Mamba cache blocks the pool holds")
    assert predict.predict(shape, card, replace(start, max_num_seqs=blocks)).verdict == "starts"
    assert predict.predict(shape, card, replace(start, max_num_seqs=2048)).verdict == "max_num_seqs"
    assert predict.predict(shape, card, replace(start, enforce_eager=True)).verdict == "starts"  # no graphs
    assert predict.predict(shape, card, replace(start, engine_version="0.19.0")).verdict == "starts"  # capped, not refused
    # a dense model's sequences need no block of their own
    assert not predict.mamba_graphs(_shape("qwen3-8b"), (0, 21), False)
    # the fix is the most sequences that start: fewer graphs captured leave a few more blocks (905)
    fix = next(f for f in predict.fixes(shape, card, start) if f.change.startswith("max_num_seqs"))
    assert fix.flags == "--max-num-seqs 905" and fix.prediction.verdict == "starts"
    assert predict.predict(shape, card, replace(start, max_num_seqs=906)).verdict == "max_num_seqs"
    fit = predict.limits(shape, card, start)
    assert (fit.max_num_seqs, fit.seqs_limited_by, fit.gpu_memory_utilization) == (905, "memory", Fraction(95, 100))  # 1,024 blocks at 0.95


def test_a_further_cuda_graph_grows_with_the_layers_not_the_tp_size() -> None:
    """The second capture's growth, as vLLM's v0.19.0 DEBUG lines print it on the H100 starts, is
    the graph's own nodes: 80 layers take 16 to 20 MiB a piecewise graph at TP 2 and TP 4, 28 and
    32 layers 4 to 6 MiB at TP 1, 2 and 4. The estimate, a constant a layer of each mode fitted on
    the fitted logs, is the same at every TP and twice as large for twice the layers; the former
    constant a TP size (16 MiB a graph under TP) put Qwen2.5-7B under TP 2 at three times its
    printed 0.61 GiB."""
    qwen7 = _shape("qwen2.5-7b")
    a, b = (predict.cuda_graph(qwen7, (0, 20), 1024, 8192, False).bytes for _ in (1, 2))
    acts = 512 * (3 * 3584 + 3 * 18944) * 2  # the largest graph's activations: the residual stream and the MLP's, 512 tokens
    assert a == b == predict.CUDA_GRAPH_PIECEWISE_FIRST + acts + 28 * 50 * (predict.CUDA_GRAPH_PIECEWISE_PER_LAYER + predict.CUDA_GRAPH_FULL_PER_LAYER)
    assert round(a / GiB, 2) == 0.60  # log 94 (TP 2) prints 0.61 GiB, log 93 (TP 1) 0.61 GiB
    assert predict.cuda_graph_estimate(51, 51, 80) - predict.CUDA_GRAPH_PIECEWISE_FIRST == 2 * (
        predict.cuda_graph_estimate(51, 51, 40) - predict.CUDA_GRAPH_PIECEWISE_FIRST
    )
    # logs 108 and 109 (TP 2) print 1.63, log 110 (TP 4) 1.51: FlashAttention 3's split buffers, 32 of 64 heads a rank, then 16
    assert round(predict.cuda_graph_estimate(51, 51, 80, predict.fa3_split_buffers(512, 32, 128)) / GiB, 2) == 1.55
    assert round(predict.cuda_graph_estimate(51, 51, 80, predict.fa3_split_buffers(512, 16, 128)) / GiB, 2) == 1.42


def test_the_graph_estimate_against_the_printed(measured, catalog) -> None:
    """vLLM's own two measurements, fitted on the fitted H100 logs of v0.19.0 that print them (the
    piecewise first capture, a median of 82 MiB beside the largest graph's activations, 42 to 94 in
    the dense logs, where the first capture alone runs from 84 to 160 MiB; the full one, FlashAttention
    3's split buffers and a median of 4 MiB beside them, 2 to 13 in every log but gpt-oss's; a further
    graph 0.19 MiB a dense decoder layer piecewise, 0.14 full, and 0.25 MiB a layer with routed experts
    in both modes, from the fitted MoE logs: Mixtral under TP 2, DeepSeek-V2-Lite, gpt-oss-20b), give
    the H100 estimates at TP 1, 2 and 4 within 22 % but two (the test holds each): Llama 3.1 8B's TP 2
    start under by 62 % (26 MiB a piecewise graph, where TP 1 and TP 4 print 6) and the 70B starts under
    TP under by 15 to 20 % (their further graphs grow more than a dense layer's median). The MoE logs,
    under by 20 to 37 % at the dense rate, come within 17 %: DeepSeek-V2-Lite under by 17 % (10 MiB a
    further piecewise graph), Mixtral over by 12 %, gpt-oss-20b within 2 %; held out, Qwen3-30B-A3B
    over by 15 % (10 and 10 MiB printed, 12 and 12 modeled; 17 % under at the dense rate) and
    Qwen1.5-MoE-A2.7B under by 13 % (8 and 6 MiB printed, 6 and 6 modeled; 37 % under before). Off the
    H100: a 24 GB card with Qwen3-8B over by 21 %, GB10 with a hybrid MoE under by 43 % (59 % at the
    dense rate), five small piecewise graphs of 16 tokens under TP 2 within 2 % (over by 32 % while the
    first capture was a 512-token graph's for every list), an RTX 4080 Laptop's 19 graphs of up to 128
    tokens over by 15 % (35 % then), and Qwen3-8B's decoder on an RTX PRO 6000 Blackwell under v0.20.2
    and v0.21.0 over by 108 % (0.71 GiB modeled for 51 graphs a mode, 0.34 printed: 2 MiB a further
    graph where the H100 prints 8 and 4; no input tells the two cards' growths apart)."""
    import yaml

    data = yaml.safe_load((ROOT / "models" / "pool_starts.yaml").read_text(encoding="utf-8"))
    names = [g.log for g in records.graph_logs(data)]
    logs = {n: (ROOT / "logs" / "public" / n).read_text(encoding="utf-8") for n in names}
    rows, _ = measured
    graph_logs, entries = records.graph_logs(data), records.pool_starts(data)
    layers, buffers, activations, moe = pool_accuracy.graph_models(graph_logs, entries, logs, catalog.boxes, rows, ROOT)
    layers = {r.log: r.layers for r in rows} | layers
    checks = {Path(c.log).name.split("-")[0]: c for c in poolaccuracy.graph_checks(names, logs, layers, buffers, activations, moe)}
    expected = {"81": -0.081, "82": -0.165, "83": -0.081, "84": 0.055, "85": -0.15, "86": -0.165, "87": 0.218, "88": -0.048,
                "31": 0.206, "45": -0.43, "25": -0.014, "89": -0.618, "90": 0.085, "91": -0.081, "92": -0.081, "93": 0.108,
                "94": -0.067, "95": -0.195, "96": 0.108, "97": -0.004, "98": 0.151, "99": 0.119, "100": -0.169, "101": 0.218,
                "102": -0.081, "103": -0.081, "104": -0.195, "105": 0.108, "106": -0.081, "107": 0.11, "108": -0.051,
                "109": -0.051, "110": -0.059, "111": 0.016, "123": 1.081, "124": 1.081, "127": -0.127, "139": 0.152}  # fmt: skip
    assert {k: round(float(c.error), 3) for k, c in checks.items()} == expected
    assert (checks["45"].piecewise, checks["45"].full, checks["25"].piecewise, checks["25"].full) == (51, 35, 5, 0)
    assert poolaccuracy.graph_breakdown(logs[names[0]]) == {"PIECEWISE": (138 * 2**20, 6 * 2**20), "FULL": (260 * 2**20, 6 * 2**20)}


def test_the_largest_graph_of_each_mode_as_a_log_prints_it() -> None:
    """'Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)' (Phi-3 mini on a
    WSL2 RTX 3090, v0.19.1): each mode's largest as printed; a mode the log does not name, none."""
    text = (ROOT / "logs" / "starts" / "152-v0191-phi-3-mini-rtx3090-wsl2-local-ai.log").read_text(encoding="utf-8")
    assert (poolaccuracy.largest_graph(text, "PIECEWISE"), poolaccuracy.largest_graph(text, "FULL")) == (512, 256)
    assert poolaccuracy.largest_graph("no graph line", "FULL") is None


# --- against real logs ------------------------------------------------------------------------

# Per log: the relative error of the predicted pool, and the bound this test holds it to.
EXPECTED = {
    "01-v06-llama31-8b-3090-maxlen-29k.log": (0.0022, 0.02),
    "02-v06-llama31-8b-3090-20k-ok.log": (0.0035, 0.02),
    # V0's sort at the fitted 39 B a logit (36 B before entry 140's printed peak entered the median: +0.3 %)
    "04-v07-qwen25-32b-l40s-tp2.log": (-0.0113, 0.015),
    "05-v065-llama3-8b-tabular-profile.log": (0.0265, 0.035),
    # held out: the graph estimate is over by 0.11 GiB (0.63 against the printed 0.52), on a 24 GB card
    # the log does not name; FlashInfer's warm-up at 14 B a logit (its top-k masked copy counted), where
    # 10 B left the pool 2.1 % over. Predicted as a first start (its log says nothing of the compile), whose
    # block, the 1.16 GiB embedding, is above the 0.52 GiB peak modeled: 0.65 GiB under; -0.2 % if it loaded
    # its compiled graph from the cache
    "31-v02x-qwen3-8b-cudagraph-estimate-enginecore.log": (-0.1019, 0.105),
    # gpt-oss on Hopper: the experts padded for Marlin and the rope's cache (65.93 GiB against the
    # 65.97 log 16 loads); the sort's warm-up over 1,024 x 201,088 logits at 38 B a logit as the
    # source holds it (7.29 GiB; 23.9 % over at the fitted 36 B)
    "17-v011-gpt-oss-120b-h100-maxlen-error.log": (0.0184, 0.02),
    # held out: the EAGLE head's weights and KV layer are not counted (-0.1 % at the fitted 36 B a logit)
    "57-v091-llama31-8b-eagle-h100-quote-trailing-spaces.log": (-0.0057, 0.01),
    # v0.19.0 on an H100: the Triton sampler's warm-up, fitted on these two
    "81-v0190-llama31-8b-h100-16k-llmd-planner.log": (-0.0003, 0.005),
    "82-v0190-qwen25-7b-w8a8-h100-llmd-planner.log": (-0.0005, 0.005),
    # held out: the same profile with --quantization fp8, weights as the log prints them
    "83-v0190-llama31-8b-runtime-fp8-h100-llmd-planner.log": (-0.0002, 0.005),
    # Gemma 2's alternating sliding layers and its 256,000-token vocabulary in the sampler's warm-up
    "84-v0190-gemma2-2b-h100-llmd-planner.log": (-0.0009, 0.005),
    # Llama 3.3 70B FP8 under TP 2 (fitted: V1's NCCL and all-reduce memory, 2.1 GiB a rank) and TP 4 (held out)
    "85-v0190-llama33-70b-fp8-tp2-h100-llmd-planner.log": (0.0008, 0.005),
    "86-v0190-llama33-70b-fp8-tp4-h100-llmd-planner.log": (0.0026, 0.005),
    # Granite 3.1 8B with 3.3's shape: 0.46 GiB outside torch where the median start holds 0.25
    "87-v0190-granite31-8b-h100-llmd-planner.log": (0.005, 0.01),
    "88-v0190-qwen25-7b-fp8-dynamic-h100-llmd-planner.log": (-0.0005, 0.005),
    # the same sweep's other starts: TP 2 and 4 (V1's NCCL and all-reduce memory a rank), 32,768 tokens,
    # fp8 KV, float16, int4 and int8 weights as the log prints them
    "89-v0190-llama31-8b-tp2-h100-llmd-planner.log": (-0.0003, 0.005),
    "90-v0190-llama31-8b-tp4-h100-llmd-planner.log": (0.0006, 0.005),
    "91-v0190-llama31-8b-32k-h100-llmd-planner.log": (-0.0003, 0.005),
    "92-v0190-llama31-8b-kvfp8-h100-llmd-planner.log": (-0.0003, 0.005),
    "93-v0190-qwen25-7b-h100-llmd-planner.log": (0.0001, 0.005),
    "94-v0190-qwen25-7b-tp2-h100-llmd-planner.log": (-0.0007, 0.005),
    "95-v0190-qwen25-7b-tp4-h100-llmd-planner.log": (0.0, 0.005),
    "96-v0190-qwen25-7b-kvfp8-h100-llmd-planner.log": (0.0001, 0.005),
    "97-v0190-qwen3-8b-h100-llmd-planner.log": (-0.0004, 0.005),
    # MoE and MLA: the fused-expert workspace the worker keeps through the sampler's warm-up
    # (Qwen3-30B-A3B 2.70 GiB against the printed 2.68, Mixtral under TP 2 1.18 against 1.21,
    # DeepSeek-V2-Lite 1.94 against 1.93); DeepSeek-V2-Lite's weights are 0.17 GiB under the log's
    "98-v0190-qwen3-30b-a3b-h100-llmd-planner.log": (-0.0009, 0.005),
    "99-v0190-mixtral-8x7b-tp2-h100-llmd-planner.log": (0.001, 0.005),
    "100-v0190-deepseek-v2-lite-h100-llmd-planner.log": (0.0035, 0.005),
    # Granite 3.3 8B: 0.46 GiB outside torch, as Granite 3.1's start
    "101-v0190-granite33-8b-h100-llmd-planner.log": (0.005, 0.01),
    "102-v0190-llama31-8b-w4a16-h100-llmd-planner.log": (-0.0001, 0.005),
    "103-v0190-llama31-8b-w8a8-h100-llmd-planner.log": (-0.0001, 0.005),
    "104-v0190-llama33-70b-w8a8-tp2-h100-llmd-planner.log": (0.0008, 0.005),
    "105-v0190-qwen25-7b-32k-h100-llmd-planner.log": (0.0001, 0.005),
    "106-v0190-llama31-8b-fp16-h100-llmd-planner.log": (-0.0003, 0.005),
    "107-v0190-gemma2-9b-h100-llmd-planner.log": (-0.0014, 0.005),
    # Qwen2.5 72B under TP 2 with Qwen2-72B Instruct's config: 67.72 GiB of weights a rank against
    # the 67.80 the log loads, 0.08 GiB of a 3.04 GiB pool; Kimi-Dev-72B takes the log's weights
    "108-v0190-qwen25-72b-tp2-h100-llmd-planner.log": (0.0323, 0.035),
    "109-v0190-kimi-dev-72b-tp2-h100-llmd-planner.log": (0.0067, 0.01),
    "110-v0190-kimi-dev-72b-tp4-h100-llmd-planner.log": (0.0033, 0.005),
    # gpt-oss-20b under TP 2 on Hopper: v0.19.0's TRITON MXFP4 backend, its swizzled layout
    # counted, and the rope's cache in float32: 6.99 GiB a rank against the 7.01 loaded
    "111-v0190-gpt-oss-20b-tp2-h100-llmd-planner.log": (-0.0007, 0.005),
    # Qwen2.5-VL 3B on an L4 (vLLM 0.11.0, Ray Data's example): the tower's forward over one image of
    # 16,384 tokens sets the peak, its attention as 0.11.0 writes it (q, k and v copied, q and k concatenated
    # and rotated in float32, with the normed input the block passes in and the float32 rotary tables: 3.30 GiB).
    # 1.5 % under: the log leaves 0.11 GiB for non-torch memory, 0.25 taken (the one-GPU median, H100 starts).
    # 12.6 % over while the attention was read from 0.19.0's code; +0.5 % without the normed input and the tables
    "81-v011-qwen25-vl-3b-ray-data-encoder-budget.log": (-0.0147, 0.02),
    # held out: Gemma 3 12B, the vision tower's 32 profiled images over the language model's peak;
    # its weights with the two ropes' caches (the global one stretched 8x: 0.56 GiB) as loaded
    "112-v0190-gemma3-12b-it-vl-h100-llmd-planner.log": (0.0027, 0.02),
    "113-v0190-gemma2-27b-it-h100-llmd-planner.log": (-0.0028, 0.005),
    # vLLM 0.10.1.1 on A100s (a public benchmark's logs): FlashInfer's sampler where the log says it ran
    # (14 B a bf16 logit, no sort; flashinfer-python 0.2.11), the sort where FlashInfer is not installed
    # (118); under TP the NCCL memory of a release that turns NCCL's cuMem allocator off, off NVSwitch boards
    # (0.19 GiB a rank, fitted on 116, 117 and 119; 118, held out, across two nodes under Ray, within 0.2 %). On one
    # A100 (114, 115) the one-GPU non-torch median of the H100 starts and FlashInfer's 14 B take 0.16 GiB
    # more than these starts left (-0.5 % and -0.1 % at 10 B)
    "114-v01011-qwen2-7b-a100-util025-dennislee22.log": (-0.0157, 0.04),
    "115-v01011-qwen2-7b-a100-util05-dennislee22.log": (-0.0028, 0.01),
    "116-v01011-qwen2-7b-tp2-a100-util025-dennislee22.log": (-0.0019, 0.01),
    "117-v01011-qwen2-7b-tp2-a100-util05-dennislee22.log": (-0.0001, 0.005),
    "118-v01011-qwen2-7b-tp2-a100-40gb-ray-two-nodes-dennislee22.log": (0.0016, 0.005),  # the sort at 38 B
    "119-v01011-gpt-oss-120b-tp4-a100-ray-dennislee22.log": (0.001, 0.005),
    # Mistral Small 3.1 (Pixtral tower, mistralai's format, the log's weights): two images of 3,080
    # tokens profiled, as printed; the sampler's warm-up over 131,072 logits sets the peak
    "120-v0190-mistral-small-31-24b-vl-h100-llmd-planner.log": (0.0007, 0.005),
    # held out: Qwen3-VL 30B-A3B under TP 4 on four PCIe RTX 3090 (v0.11.0): the encoder's profile as
    # printed (one video of 153,600 tokens, its outputs widened to the budget: 2.34 GiB); no NVSwitch,
    # so NCCL's non-torch term without NVLS buffers (0.33 GiB a rank, not the HGX H100s' 2.09): what
    # this start leaves for activation and non-torch (4.12 GiB) less the modeled activation (3.66) is
    # 0.46 GiB, so the pool came out 6.6 % over; the sort's warm-up at the source's 38 B a logit (not
    # the fitted 36) brought it to 3.5 %, and NCCL's median without NVLS, refitted on the A100 starts
    # once FlashInfer's warm-up counts its top-k masked copy (0.19 GiB a rank, was 0.33), to 9.8 %; 7.8 % with that
    # median at 0.23 GiB (a Qwen3-32B start at TP 8 under v0.10.0 joined it); 6.3 % with the boards without NVSwitch
    # under cuMem taking their own median (0.25 GiB a rank, what their fitted starts leave). Before the NVLS split it
    # was 69.5 % under, and the verdict refused the length vLLM started: the split was looked for after that miss
    "121-v0110-qwen3-vl-30b-a3b-tp4-rtx3090-video-profile-sipeed.log": (0.069, 0.1),
    # Qwen3-Next 80B-A3B (hybrid, MoE) under TP 2 on two H200 (v0.10.2, the first release that leaves
    # NCCL's cuMem on): the weights as printed (74.28 GiB a rank); the printed non-torch term (1.38 GiB)
    # is 0.70 GiB under the NVLS boards' 2.08, and the printed peak (5.58 GiB, the sampler's) 0.04
    # over the modeled 5.54 (the sort at the source's 38 B a logit; 0.33 at the fitted 36), so the
    # pool comes out 1.5 % under (0.8 % at 36)
    "122-v0102-qwen3-next-80b-tp2-h200-hybrid-moe.log": (-0.0148, 0.02),
    # Qwen3-Reranker-8B through the LLM class on an RTX PRO 6000 Blackwell (v0.20.2, the CUDA graph
    # estimate off the pool; the log's weights): the modeled estimate (0.71 GiB over 51 piecewise and
    # 51 full graphs) is 0.37 GiB over the printed 0.34, and the modeled peak and non-torch term
    # (2.55 GiB, the Triton sampler's warm-up over 1,024 rows) 0.23 under what the start leaves them,
    # so the pool comes out 0.2 % under
    "123-v0202-qwen3-reranker-8b-rtx-pro-6000-colab.log": (-0.0022, 0.005),
    # held out: the same start under v0.21.0 (the same pool printed), with VLLM_USE_FLASHINFER_SAMPLER=0,
    # which its log says: the Triton sampler's warm-up (2.17 GiB), not FlashInfer's (1.45), v0.21.0's
    # default (0.9 % over before the log's line was read)
    "124-v0210-qwen3-reranker-8b-rtx-pro-6000-colab.log": (-0.0022, 0.005),
    # Qwen3-Next 80B-A3B AWQ 4-bit (hybrid, int4 experts) under TP 2 on two PCIe L40S (v0.13.0, fp8 KV, 8
    # sequences, the log's weights, 22.53 GiB a rank): its experts ran fused_marlin_moe (the log's
    # 'Using CompressedTensorsWNA16MarlinMoEMethod'), whose caches over 8,192 tokens (0.35 GiB) are
    # 0.27 GiB below TritonExperts' workspace; with NCCL's median without NVLS (0.19 GiB a rank) the
    # pool comes out 0.5 % over (1.9 % under with Triton's workspace and the former 0.33)
    "125-v0130-qwen3-next-80b-awq-tp2-l40s-aether.log": (0.0007, 0.01),
    # Added 2026-12-02, each as first predicted, nothing fitted to them: gpt-oss-20b on one A100 80GB
    # (v0.19.0, utilization 0.65, 131,072 tokens, the log's MXFP4 weights as Ampere loads them) 0.30 GiB
    # over a 36.56 GiB pool; Qwen1.5-MoE-A2.7B (held out: 60 experts and a shared one, 16 full KV heads)
    # and CodeLlama 7B (32 KV heads) on the llm-d-planner sweep's H100
    "126-v0190-gpt-oss-20b-a100-myoceane.log": (0.0011, 0.005),
    "127-v0190-qwen15-moe-a27b-h100-llmd-planner.log": (-0.0005, 0.005),
    "128-v0190-codellama-7b-h100-llmd-planner.log": (0.0012, 0.005),
    # v0.24.0 on an RTX 4090: 4.2 % over as first predicted, 0.9 % once the sampler's sort was read from
    # the source (38 B a logit, nothing fitted to this start); the log's 14.29 GiB of weights are 0.07 GiB
    # over the config's 14.22
    "129-v0240-qwen25-7b-rtx4090-llm-infra-lab.log": (0.0237, 0.029),  # +2.4 % with the RTX 4090's own non-torch figure (-1.7 % without)
    # v0.22.1 on an RTX 3090, held out: 5.8 % over as first predicted; quantization=awq runs AWQLinearMethod,
    # which at 256 tokens or more dequantizes each weight whole before its matmul (awq.py apply, v0.22.0):
    # 4.5 % over once that rule was read from the source (the log's 'so forcing awq'); the printed graph
    # estimate is 0.24 GiB over the formula's (0.19 while the first capture was a 512-token graph's for every
    # capture list; 0.11 GiB modeled for 5 and 4 graphs of up to 16 tokens, 0.35 printed), and about 0.5 GiB more
    # is not found
    "130-v0221-qwen25-7b-awq-rtx3090-runpod.log": (0.0085, 0.01),
    # Added 2026-12-02 (a second search), each as first predicted, nothing fitted to them: Qwen2.5 0.5B
    # Instruct (Qwen2-0.5B-Instruct's config) on an RTX 4090 under v0.24.0, 0.23 GiB under an 18.08 GiB
    # pool, and under WSL2 with v0.27.1, 0.35 GiB under 19.06 GiB; held out, Llama 4 Scout under TP 4
    # on the llm-d-planner sweep's H100 (v0.19.0), 0.18 GiB over 16.75 GiB
    "131-v0240-qwen25-05b-rtx4090-llm-infra-lab.log": (-0.0012, 0.015),
    # under v0.27.1 the start ran Model Runner V2, whose warm-up holds the logits alone: once read
    # (gpu/model_runner.py _dummy_sampler_run) its pool went from 0.35 GiB under to 0.08 GiB over
    "132-v0271-qwen25-05b-rtx4090-wsl2-llmso.log": (0.0022, 0.005),
    "133-v0190-llama4-scout-tp4-h100-llmd-planner.log": (0.0112, 0.015),
    # Added 2026-12-02 (a third search), each as first predicted, nothing changed in calc/ for them: Qwen2.5
    # 1.5B Instruct (Qwen2-1.5B-Instruct's config) on an RTX 4080 Laptop GPU under WSL2, 4,096 tokens, 64
    # sequences. Under v0.23.0 every pool comes out 0.16 GiB over, whatever the utilization (0.33 to 0.85: a
    # fixed term, not the card's total); the graph estimate is 0.07 GiB over the 0.19 GiB the same start prints
    # ('0.8500 is equivalent to 0.8340; 0.03 GiB over once the first capture holds the largest graph's 128-token
    # activations, not a 512-token graph's), so the peak and non-torch terms (0.38 GiB modeled) are about 0.22 GiB
    # under what these starts leave them; with --quantization fp8, 0.21 GiB over. Under v0.20.0 (held out: its
    # log prints 2.89 GiB of weights and a 0.19 GiB graph estimate) 0.06 GiB over; under V0 0.7.2 through Ray
    # Serve, 0.19 GiB under: the printed non-torch term is 0.04 GiB against V0's fitted 0.35, the printed peak
    # 0.48 GiB against the modeled 0.36
    "134-v0230-qwen25-15b-util055-rtx4080-laptop-llmso.log": (-0.0003, 0.005),
    "135-v0230-qwen25-15b-util085-rtx4080-laptop-llmso.log": (-0.0006, 0.005),
    "136-v0230-qwen25-15b-fp8-util085-rtx4080-laptop-llmso.log": (0.0114, 0.03),
    "137-v0230-qwen25-15b-util045-rtx4080-laptop-llmso.log": (0.0, 0.005),
    # the 0.23.0 laptop starts compiled (the same lab's e1-vanilla-startup.txt: 'compilation: 12.33 s'): with the
    # compile's block (the 0.43 GiB embedding against a 0.13 GiB peak) and the allocator's rounding of the weights
    # (0.09 GiB) each is 0.23 GiB under, where it was 0.16 over (0.19 under with the 128-token first capture): on this
    # WSL2 laptop under the V1 runner the cold transient the pools leave is about 0.2 GiB, not the embedding the V2
    # starts print. The card's own non-torch memory (predict.NON_TORCH_CARD_OFFSETS: its fitted V1 starts' median,
    # 0.19 GiB under V1's constant) takes each to within 0.01 GiB, the held-out ones too; V0 0.7.2 keeps its own
    "138-v0230-qwen25-15b-util033-rtx4080-laptop-llmso.log": (0.0044, 0.01),  # 0.19 GiB under a 0.27 GiB pool with V1's constant alone
    "139-v0200-qwen25-15b-util085-rtx4080-laptop-llmso.log": (-0.0006, 0.005),
    "140-v072-qwen25-15b-util060-rayserve-rtx4080-laptop-llmso.log": (-0.0512, 0.06),
    "141-v0230-qwen25-15b-fp8-util07656-rtx4080-laptop-llmso.log": (0.0128, 0.035),
    "142-v0230-qwen25-15b-util065-rtx4080-laptop-llmso.log": (-0.0005, 0.005),
    "143-v0230-qwen25-15b-util075-rtx4080-laptop-llmso.log": (-0.0006, 0.005),
    "144-v0230-qwen25-15b-util036-rtx4080-laptop-llmso.log": (0.0014, 0.01),
    "145-v0230-qwen25-15b-util040-rtx4080-laptop-llmso.log": (0.0005, 0.005),
    # Phi-2 on the llm-d-planner sweep's H100 (v0.19.0), added once PhiForCausalLM was read: 0.03 GiB over
    # a 69.0 GiB pool as first predicted (the printed peak 0.79 GiB against 0.77, non-torch 0.24 against 0.25)
    "146-v0190-phi-2-h100-llmd-planner.log": (0.0005, 0.005),
    # Added 2026-12-02 (a fourth search): Typhoon2.5 Qwen3 4B on an RTX 5060 Ti under WSL2 at 8,192 tokens, Model
    # Runner V2. As first predicted +54.2 %, -17.5 % (held out) and +17.0 %, with V1's sampler warm-up and Qwen3-4B's
    # config; once V2's (the logits alone, read from gpu/model_runner.py) +96.0 %, +4.9 % and +30.1 %; with the config
    # the starts print (Qwen3-4B-Instruct-2507's: 262,144 positions, so a rotary cache 0.05 GiB larger) +92.4 %, +2.9 %
    # and +28.9 %. From 0.27 the printed peak is the transient headroom and the graph estimate together (0.38 GiB
    # measured by V2): the starts that compiled leave 8.59 GiB consumed and a 0.71 GiB transient, the one that loaded
    # its compiled graph from the cache (v0.30.0 through Xinference, held out) 7.89 and 0.15, against 7.80 and 0.14
    # modeled. With the compile's block (the 0.72 GiB embedding, counted again as consumed up to v0.30.x) as below.
    # With V2's own non-torch term and its sampler's state (0.135 + 0.15 GiB at 256 sequences) 0.06 GiB under on the
    # cold start, whose 0.95 GiB beside its weights leave 0.07 once the pinned block and the state are off
    "147-v0290-typhoon25-qwen3-4b-rtx5060ti-wsl2-prp.log": (-0.0514, 0.058),
    "148-v0300-typhoon25-qwen3-4b-util070-rtx5060ti-wsl2-xinference-prp.log": (-0.0096, 0.015),
    "149-v0300-typhoon25-qwen3-4b-util090-rtx5060ti-wsl2-xinference-prp.log": (-0.0161, 0.022),
    # Llama 3.1 8B Instruct on an L4 under v0.11.0 at 32,000 tokens and 128 sequences: 0.32 GiB under, the peak and
    # non-torch terms (0.85 GiB modeled) being 0.53 GiB in the log. The one-GPU non-torch term (0.25 GiB) is fitted on
    # v0.19.0 starts, whose profile captures CUDA graphs inside its window (gpu_worker.py, v0.18.0 to v0.26.x); the
    # v0.10.2 starts that print it show 0.02 to 0.07. Even at that the sort over 128 rows (0.58 GiB) is above what is left
    "150-v0110-llama31-8b-l4-demo-env.log": (-0.0669, 0.07),
    # Qwen2.5 14B Instruct AWQ (forced awq) on an RTX A5000 under v0.13.0 at 8,192 tokens (held out): 0.22 GiB under,
    # the log leaving 1.43 GiB for the peak and non-torch terms against 1.65 modeled
    "151-v0130-qwen25-14b-awq-rtx-a5000-duo-talk.log": (-0.0264, 0.03),
    # Phi-3 mini 4K Instruct on an RTX 3090 under WSL2 and v0.19.1: 0.51 GiB under, the box's total a Linux reading
    "152-v0191-phi-3-mini-rtx3090-wsl2-local-ai.log": (-0.0435, 0.045),
    # Added 2026-12-02 (a fifth search), each as first predicted, nothing changed in calc/ for them, all three on Model
    # Runner V2 with Qwen2-1.5B-Instruct's config: Qwen2.5 Coder 1.5B Instruct in float16 on an A100 40GB under v0.31.0
    # at 16,384 tokens, 0.33 GiB over a 32.23 GiB pool (the log's 3.31 GiB consumed and 0.79 of peak, of which 0.35 the
    # graph estimate, against 3.13, and 0.12 with 0.51 modeled); Qwen2.5 1.5B Instruct in float16 on a Tesla T4 under
    # v0.30.0 at 4,096 tokens (the compiled graph from the cache, TRITON_ATTN, the PyTorch sampler), without prefix
    # caching (held out) and with it, 0.06 GiB under an 8.67 GiB pool each (3.24 GiB consumed and 0.46 of peak, of
    # which 0.34 the graph estimate, against 3.13, and 0.12 with 0.51 modeled). Once V2's own graph estimate is
    # modeled (0.34 GiB for these three, 0.40 for the Typhoon starts) each is over by what V2's consumed memory holds
    # beyond the weights and, where the start compiled from scratch, its larger transient
    "153-v0310-qwen25-coder-15b-a100-40gb-sql-agent-rl.log": (0.0023, 0.01),
    "154-v0300-qwen25-15b-fp16-tesla-t4-llm-lab.log": (-0.0007, 0.015),
    "155-v0300-qwen25-15b-fp16-prefix-cache-tesla-t4-llm-lab.log": (-0.0007, 0.015),
    # Qwen3 30B-A3B Instruct 2507 on an H100 under v0.10.2 at 6,144 tokens, the PyTorch sampler (its log: FlashInfer is
    # not available): 0.08 GiB under an 8.68 GiB pool, the printed peak 5.58 GiB against 5.54 modeled and the printed
    # non-torch term 0.07 GiB against 0.25. Held out, Qwen2.5 14B Instruct in float16 under TP 2 on two A100 40GB and V0
    # 0.7.2 at 32,768 tokens: 1.39 GiB over a 17.24 GiB pool, the printed non-torch term 1.54 GiB a rank against V0's
    # fitted 0.30 (2.02 over before the eager forward: the peak 2.84 printed, 2.20 modeled then, 2.83 now). V0 takes its
    # snapshot before NCCL starts (vllm/worker/worker.py init_device, 0.7.2), so NCCL's own buffers count; the custom
    # all-reduce on this pair adds 16 MiB (custom_all_reduce.py); the rest is NCCL's, sized by its transport
    "156-v0102-qwen3-30b-a3b-2507-h100-mlops-assignment.log": (-0.009, 0.015),
    "157-v072-qwen25-14b-tp2-a100-40gb-distributed-agent-gc.log": (0.0809, 0.085),
    # Added 2026-12-03 (a seventh search), each as first predicted, nothing changed in calc/ for them. Qwen3-VL 30B-A3B
    # under TP 2 on two H100 and v0.12.0 at 65,536 tokens (its encoder profiled with a video): 0.79 GiB under a 37.23 GiB
    # pool, the weights 0.29 GiB under the loading line. Qwen3 30B-A3B AWQ (Marlin MoE) on an RTX 3090 under v0.10.0 at
    # 0.8 and 2,048 tokens: 0.30 GiB under a 1.92 GiB pool, the PyTorch sampler and non-torch terms (1.63 GiB modeled)
    # above the 1.33 the log leaves (the sort over 256 rows alone, 1.38 GiB, is more; the launcher's arguments line,
    # cut from the excerpt for its API key, may set max_num_seqs). Held out, Llama 3.1 70B AWQ (the awq kernel) under TP 2 on two A100 40GB and
    # v0.19.0: 0.18 GiB over. Qwen3 Coder 30B-A3B on an A100 80GB under a 0.26.1 development build at 131,072 tokens
    # and 16 sequences, on its own config (shipped for it): 0.06 GiB under, every printed term within 0.08 GiB (its 12
    # graphs of up to 32 tokens: 0.20 GiB modeled at the MoE layers' growth, 0.15 printed)
    "158-v0120-qwen3-vl-30b-a3b-tp2-h100-video-cutting-agent.log": (-0.0289, 0.035),
    "159-v0100-qwen3-30b-a3b-awq-rtx3090-anton.log": (-0.1573, 0.16),
    "160-v0190-llama31-70b-awq-tp2-a100-40gb-mindsafe.log": (0.0072, 0.015),
    "161-v0261-qwen3-coder-30b-a3b-a100-80gb-autoscientists.log": (0.0019, 0.006),
    "162-v0150-qwen3-30b-a3b-2507-h200-util050-telco-rag.log": (0.0041, 0.01),
    "163-v0151-gpt-oss-120b-tp2-h200-util085-activate-rag.log": (0.0136, 0.02),
    "164-v0102-qwen3-4b-h100-defaults-neo4j-graphrag.log": (-0.0014, 0.005),
    # NVFP4 (W4A4) on an RTX 5060 Ti, 4 sequences, 2,048 batched tokens: 1.27 GiB over, the log's peak and non-torch
    # 1.71 GiB against 0.44 modeled. A first start ('Compiling a graph for dynamic shape') on v0.11.1, the first
    # release on torch 2.9, whose compile benchmarks Inductor's combo kernels: the 1.16 GiB embedding block sets the
    # peak (0.19 GiB before). 0.30 GiB over now, which the log, printing only its pool, does not place
    "165-v0111-qwen3-8b-nvfp4-fp8kv-rtx5060ti-vllm-server.log": (0.0457, 0.05),
    "166-v0102-llama2-7b-a100-80gb-defaults-neo4j-graphrag.log": (-0.0022, 0.005),
    # vLLM 0.26.0 on an A40 under Model Runner V2 (no graph estimate off the pool): bf16, AWQ, GPTQ and W8A8 int8
    # checkpoints of Llama 3.1 8B, each 0.13 to 0.14 GiB under, the modeled non-torch memory (0.25 GiB) above the 0.08 printed
    "167-v0260-llama31-8b-a40-v2-runner-llm-inference-optimization.log": (-0.0055, 0.01),
    "168-v0260-llama31-8b-awq-int4-a40-v2-runner-llm-inference-optimization.log": (-0.0042, 0.01),
    "169-v0260-llama31-8b-gptq-int4-a40-v2-runner-llm-inference-optimization.log": (-0.0042, 0.01),
    "170-v0260-llama31-8b-w8a8-int8-a40-v2-runner-llm-inference-optimization.log": (-0.0047, 0.01),
    # Qwen2.5 7B Instruct on an A10G under v0.11.0 at 32,768 tokens: 0.17 GiB under a 5.04 GiB pool, the peak and
    # non-torch terms (0.77 GiB modeled) above the 0.56 the log leaves on the box's total. Qwen3 8B on one A100 40GB
    # under v0.19.1, vllm serve's defaults (held out) and vllm bench latency's LLM class at 8,192 batched tokens; and
    # under v0.9.2's LLM class
    "171-v0110-qwen25-7b-a10g-inference-wall.log": (-0.0345, 0.035),
    "172-v0191-qwen3-8b-a100-40gb-serve-tokenkaki.log": (0.0032, 0.01),
    "173-v0191-qwen3-8b-a100-40gb-bench-latency-tokenkaki.log": (0.0016, 0.01),
    "174-v092-qwen3-8b-a100-40gb-bench-latency-tokenkaki.log": (-0.0053, 0.01),
    # Qwen2.5 1.5B Instruct on an L40S under v0.11.2 at 0.85 and 4,096 tokens (a report's quoted lines; held out)
    "175-v0112-qwen25-15b-util085-l40s-ai-inference-service.log": (-0.0053, 0.01),
    # vLLM 0.27.1 under Model Runner V2 on an RTX 4090 (a cold-start study's endpoint): Qwen3 8B compiling cold, 1.12 GiB
    # under a 4.92 GiB pool, the compile's block (the 1.16 GiB embedding) modeled as kept pinned past empty_cache() where
    # this start printed it neither in its consumed memory (0.27 GiB of non-torch) nor twice in its 1.18 GiB peak; the
    # same server from the compile cache; Qwen3 1.7B at 2,048 tokens, cold (held out; its 0.89 GiB of non-torch holds the
    # pinned 0.58 GiB block) and from the cache. From v0.27.0 Model Runner V2's consumed memory holds its sampler's
    # state, built after the weights are measured (output_bin_counts and two bitmasks, 0.15 GiB at 256 sequences of
    # Qwen's vocabulary), beside a non-torch term of its own (0.135 GiB, the median of the fitted V2 starts that print
    # their consumed memory and keep no compile's block): 0.29 GiB modeled here against the 0.27 printed
    "190-v0271-qwen3-8b-rtx4090-v2-runner-cold-coldstart-recon.log": (-0.2364, 0.24),
    "191-v0271-qwen3-8b-rtx4090-v2-runner-cached-coldstart-recon.log": (-0.0037, 0.005),
    "192-v0271-qwen3-17b-rtx4090-v2-runner-cold-maxlen2048-coldstart-recon.log": (0.0021, 0.005),
    "193-v0271-qwen3-17b-rtx4090-v2-runner-cached-maxlen2048-coldstart-recon.log": (0.0028, 0.01),
    # vLLM 0.29.0 under Model Runner V2 on a 48 GB RTX 4090 board, Qwen3 8B at 0.75, 4,096 tokens, 8 sequences: cold
    # compiles (bf16, AWQ held out) 1.18 GiB over on the peak and non-torch terms (2.57 modeled, the compile's block and
    # its pinned copy, against the 1.39 and 1.43 printed); --enforce-eager (bf16, AWQ), read from the arguments line;
    # 512 batched tokens (held out), where the pinned block shows in the printed non-torch (1.27 GiB); the compiled
    # graph from the cache. The graph estimate 0.15 GiB modeled against the 0.07 printed for 5 graphs of up to 16 tokens
    "194-v0290-qwen3-8b-rtx4090-48gb-v2-runner-vllm-lab.log": (-0.0595, 0.075),
    "195-v0290-qwen3-8b-awq-rtx4090-48gb-v2-runner-vllm-lab.log": (-0.0386, 0.05),
    # (the eager pair: the peak 0.41 GiB as printed, gate_up's output held; 0.25 GiB of non-torch modeled, 0.11-0.13 printed)
    "196-v0290-qwen3-8b-rtx4090-48gb-eager-vllm-lab.log": (-0.0014, 0.01),
    "197-v0290-qwen3-8b-awq-rtx4090-48gb-eager-vllm-lab.log": (-0.0006, 0.005),
    "198-v0290-qwen3-8b-rtx4090-48gb-512-batched-vllm-lab.log": (-0.0013, 0.015),
    # vLLM 0.28.0 under Model Runner V2 on an RTX 4090, Qwen3-VL-8B with one image profiled: the printed peak is 2.26 GiB
    # cold or from the cache. As first predicted 1.52 was modeled from the cache and 2.82 cold, the loaded weights 16.40
    # GiB against 16.65: +27 % to +45 % from the cache (util 0.9 and 0.96 held out), -12 % cold, the FP8 checkpoint -7 %.
    # Now the tower carries its position embeddings, its deepstack features and each attention's normed input (2.11 GiB
    # modeled), no pinned block follows an encoder profile, and the weights hold the M-RoPE cache at 4 x the positions
    # before v0.32.0 and the deepstack input buffers (16.64 GiB): +2 % to +5 %, the non-torch term 0.25 against 0.14-0.18.
    # With the attention's projection output (written while the qkv, the rotated copy and the attention's output are
    # held) and the rotary cosines and sines the tower carries, 2.259 GiB against the printed 2.26; the non-torch term
    # as V2 counts it from v0.27.0 (0.135 GiB and the sampler's state, 0.01 GiB at 16 sequences, 0.04 at 64) against
    # 0.14 to 0.18 printed: 0 % to +1.5 %, what is left the weights (16.64 GiB modeled, 16.65 printed) and rounding
    "199-v0280-qwen3-vl-8b-rtx4090-v2-runner-16-seqs-llm-infra-bench.log": (0.0048, 0.01),
    "200-v0280-qwen3-vl-8b-rtx4090-v2-runner-64-seqs-cold-llm-infra-bench.log": (0.0086, 0.02),
    "201-v0280-qwen3-vl-8b-rtx4090-v2-runner-util090-llm-infra-bench.log": (0.0121, 0.015),
    "202-v0280-qwen3-vl-8b-rtx4090-v2-runner-maxlen4096-cold-llm-infra-bench.log": (0.0086, 0.02),
    "203-v0280-qwen3-vl-8b-fp8-rtx4090-v2-runner-cold-llm-infra-bench.log": (-0.0001, 0.005),
    "204-v0280-qwen3-vl-8b-rtx4090-v2-runner-util096-llm-infra-bench.log": (0.0075, 0.015),
    "205-v0290-qwen3-8b-rtx4090-48gb-cached-prefix-caching-vllm-lab.log": (-0.001, 0.015),
    # Qwen3 8B in float16 on two Tesla T4 (PCIe), TP 2, vLLM 0.22.0 under Model Runner V2, eager: LLM()'s 8,192 batched
    # tokens, as the log's chunked-prefill line states them. The eager forward (gate_up's output held, the all-reduce's
    # out of place: 0.59 GiB) leaves 0.05 GiB of the 0.64 the log leaves for non-torch memory, 0.27 modeled: -5.3 %
    "206-v0220-qwen3-8b-fp16-tp2-tesla-t4-eager-exact-kaggle.log": (-0.0496, 0.058),
    # Qwen3-30B-A3B-2507 in bf16 on one RTX PRO 6000 Blackwell, vLLM 0.12.0, eager (held out)
    "207-v0120-qwen3-30b-a3b-2507-rtx-pro-6000-eager-vediosifter.log": (-0.0051, 0.01),
    # Qwen3-235B-A22B-FP8 on eight H100, TP 8 with expert parallelism, vLLM 0.10.0: the log leaves 7.96 GiB for the peak
    # and non-torch memory where 5.78 is modeled; it prints no profile to place the 2.2 GiB. Fitted: it moved the median of
    # NCCL's non-torch memory with cuMem off from 0.19 to 0.21 GiB a rank (0.23 with 320), until the NVSwitch boards with
    # cuMem off took their boards' own constant: both leave 2.3 to 2.4 GiB, as those boards print with cuMem on
    "208-v0100-qwen3-235b-a22b-fp8-tp8-ep-h100-eval-dataset.log": (0.0093, 0.065),
    # Qwen3-30B-A3B-2507 quantized to fp8 as it loaded, one H100, vLLM 0.22.1: the graph estimate printed 0.14 GiB for
    # 30 graphs of up to 128 tokens against 0.42 modeled at the MoE layers' growth (0.32 at the dense rate; the same log's
    # real capture took 0.22), the other terms under by as much
    "209-v0221-qwen3-30b-a3b-2507-runtime-fp8-h100-mlops-assignment.log": (-0.0, 0.005),
    # Qwen3.6-27B-FP8 (gated-delta hybrid) text only on one H100, vLLM 0.27.1, eager (held out): as first predicted -2.4 %,
    # the vision tower's profile modeled (1.73 GiB) where --language-model-only left vLLM none to profile; the log's
    # text-only line now reads as every modality's limit at 0. Eager, its dense MLP (qwen2_moe.py Qwen2MoeMLP) keeps
    # gate_up's output to down_proj: 0.55 GiB at 4,096 tokens where 0.52 was modeled; the log prints no peak to check it
    "210-v0271-qwen36-27b-fp8-hybrid-h100-eager-meeting-translator.log": (0.0048, 0.01),
    # Qwen2.5-32B on four RTX 3090 (PCIe, custom all-reduce off), TP 4, vLLM 0.18.1, eager: the log's weights 0.10 GiB
    # above the config's a rank; the log leaves 0.12 GiB for the peak and non-torch memory, under the eager forward's
    # 0.18 alone (the card's total, 23.58 GiB from another 3090, may be a tenth short)
    "211-v0181-qwen25-32b-tp4-rtx3090-eager-lambo.log": (-0.0399, 0.047),
    # MiniMax-M2.5 (block fp8) on four MI300X, TP 4, vLLM 0.16.0 on ROCm, eager
    "212-v0160-minimax-m25-fp8-tp4-mi300x-eager-triton-example.log": (0.0036, 0.005),
    # DeepSeek-V2-Lite-Chat in float16 on one H100, a 0.6.4 development tree (V0) before vLLM's MLA cache: the profile's
    # non-torch term, 5.21 GiB printed against 0.35 modeled, is the whole gap (0.6.4 counts the device's whole used
    # memory beyond the process's torch allocation, vllm/worker/worker.py:208-211)
    "213-v064dev-deepseek-v2-lite-fp16-h100-flashinfer-eager-pr10927.log": (0.1457, 0.15),
    # Qwen2.5-72B-Instruct GPTQ int4 on an A40-48Q vGPU profile, vLLM 0.6.4.post1, refused for its length: 4.09 GiB of
    # non-torch memory printed (held before the profile ran) against 0.35 modeled, and a 2.34 GiB peak against 1.85
    "214-v064post1-qwen25-72b-gptq-int4-a40-48q-maxlen-8192-refused.log": (10.8551, 10.86),
    # Qwen3-Coder-30B-A3B-Instruct-FP8 (block fp8 on Marlin) on one A100 SXM4 40GB, vLLM 0.19.1, cold compile
    "300-v0191-qwen3-coder-30b-a3b-fp8-a100-40gb-private-ai-inference.log": (0.0, 0.015),
    # Qwen2.5-7B-Instruct on one RTX 5090 under vLLM 0.30.0 (Model Runner V2): a fresh VM's first start, then Phase 5's
    # single changes (fp8 KV cache, fp8 weights, 8,192 batched tokens, all three of fp8, fp8 KV and 512 sequences) and
    # Phase 6's TP 2 over PCIe without peer-to-peer. The fp8 caches run FlashInfer, whose 394 MiB workspace V2 allocates
    # for its graph profile and calc/ does not count (+0.39 GiB on 302 and 305)
    "301-v0300-qwen25-7b-rtx5090-v2-runner-fresh-vm-llm-inference-ops.log": (0.0033, 0.015),
    "302-v0300-qwen25-7b-kv-fp8-rtx5090-v2-runner-llm-inference-ops.log": (0.0396, 0.05),
    "303-v0300-qwen25-7b-runtime-fp8-rtx5090-v2-runner-llm-inference-ops.log": (0.0036, 0.01),
    "304-v0300-qwen25-7b-8192-batched-rtx5090-v2-runner-llm-inference-ops.log": (0.0091, 0.02),
    "305-v0300-qwen25-7b-runtime-fp8-kv-fp8-512-seqs-rtx5090-v2-runner-llm-inference-ops.log": (0.029, 0.05),
    # TP 2 on two RTX 5090 without peer-to-peer: 0.84 GiB less pool than modeled, about the compile block the TP 1 starts hold
    "306-v0300-qwen25-7b-runtime-fp8-tp2-rtx5090-no-p2p-v2-runner-llm-inference-ops.log": (0.0276, 0.03),
    # two RTX 4090 without peer-to-peer under vLLM 0.25.1: Qwen1.5-MoE-A2.7B at TP 2 with expert parallelism (V2, the
    # graph from the cache), Qwen3-30B-A3B-FP8 at TP 2 with expert parallelism (V1, a cold compile: the graph estimate
    # printed 1.27 GiB against 1.10 modeled at the MoE layers' growth, 0.79 at the dense rate; the same model under v0.19.1
    # on one A100 without NCCL prints 1.21 for the same graphs) and Qwen2-7B-Instruct at TP 2 (V2, a cold compile)
    "307-v0251-qwen15-moe-a27b-tp2-ep-rtx4090-no-p2p-vllmexperience.log": (-0.0061, 0.013),
    "308-v0251-qwen3-30b-a3b-fp8-tp2-ep-rtx4090-no-p2p-vllmexperience.log": (0.0516, 0.065),
    "309-v0251-qwen2-7b-tp2-rtx4090-no-p2p-v2-runner-vllmexperience.log": (-0.002, 0.005),
    # Meta-Llama-3-8B on an H200 under 0.11.2 at 1,024 tokens (held out): the log leaves 4.89 GiB for the peak and
    # non-torch, 2.02 modeled; its capture 'took -0.41 GiB' (memory freed in the capture), which no rule models
    "310-v0112-llama3-8b-h200-1024-bench3.log": (0.0268, 0.03),
    "311-v0110-r1-distill-qwen-32b-fp8-l40s-elloraa.log": (0.0151, 0.02),
    "312-v0171-llama31-8b-a100-80gb-32k-memsuit.log": (-0.0005, 0.005),
    "313-v0171-qwen25-3b-distill-a100-80gb-32k-memsuit.log": (0.0003, 0.005),
    "314-v0102-qwen25-3b-fp16-rtx4090-autodl-memory-aware-rlhf.log": (0.0, 0.015),
    "315-v0190-gemma3-27b-it-vl-h100-llmd-planner.log": (0.0081, 0.01),
    "316-v0190-mistral-small-31-24b-w8a8-vl-h100-llmd-planner.log": (0.0035, 0.005),
    "317-v0190-mistral-small-31-24b-w8a8-vl-tp2-h100-llmd-planner.log": (0.0003, 0.005),
    "318-v0190-gemma-7b-h100-llmd-planner.log": (-0.0014, 0.005),
    "319-v0100-qwen3-14b-a100-80gb-32k-train-sft.log": (-0.003, 0.01),
    # Qwen3-32B at TP 8 on eight H100 under 0.10.0 (cuMem off), fp8 KV: the log leaves 7.88 GiB a rank for the peak and
    # non-torch, 2.1 GiB more than modeled, as entry 208's Qwen3-235B-A22B on the same host (NCCL on eight NVSwitch cards?)
    "320-v0100-qwen3-32b-tp8-kvfp8-h100-eval-dataset.log": (0.005, 0.04),
    "321-v0190-llama31-8b-8k-h100-llmd-planner.log": (-0.0003, 0.005),
    # Qwen3 MoE checkpoints in blocks of fp8 on L40S under pip's 0.10.2 (PyTorch's sampler), TP 2 and TP 8 with expert
    # parallelism: the TP 8 log's own terms, 1.4 GiB of peak and 0.18 of non-torch on rank 0, 1.39 and 0.27 modeled
    "322-v0102-qwen3-30b-a3b-2507-fp8-tp2-ep-l40s-ai-platform.log": (0.004, 0.01),
    "323-v0102-qwen3-235b-a22b-2507-fp8-tp8-ep-l40s-ai-platform.log": (-0.0025, 0.01),
    # Qwen2.5-14B-Instruct on one MI300X under ROCm's 0.17.1: the config's weights 0.09 GiB under the loading line
    "324-v0171-qwen25-14b-instruct-mi300x-rocm-paperhawk.log": (0.0055, 0.01),
    # Llama 3.1 8B in eager mode on an A100 40GB under 0.15.1 (held out): the log leaves 1.28 GiB for the peak and
    # non-torch, 1.48 modeled (the PyTorch sort's 1.16 GiB warm-up and the card's own 0.30 of non-torch)
    "325-v0151-llama31-8b-eager-a100-40gb-gce-vllm-gce.log": (-0.0104, 0.015),
    # Qwen2.5-7B in float16 in eager mode on a V100 32GB under 0.18.0 (Triton attention): the log leaves 1.22 GiB for the
    # peak and non-torch, 0.81 modeled
    "326-v0180-qwen25-7b-fp16-eager-v100-32gb-gpu-util-interference.log": (0.0337, 0.04),
    # Llama 3 70B AWQ (Marlin) at TP 2 on two L40S under 0.16.0: the log leaves 1.27 GiB a rank for the peak and
    # non-torch (0.9 x 44.42 - 18.55 - 20.16), 1.46 modeled (a 1.19 GiB peak and 0.27 of non-torch, PCIe)
    "327-v0160-llama3-70b-awq-tp2-l40s-kagaho.log": (-0.0089, 0.015),
    # Qwen2.5-7B on one RTX 5090 under 0.29.0 (Model Runner V2): cold compiles at 2,048 batched tokens, in bfloat16
    # (held out) and quantized to fp8 as it loads, and a warm start at 8,192 batched tokens, whose consumed memory
    # leaves 0.23 GiB beside the weights and the sampler's state, 0.05 to 0.13 more than the other V2 starts
    "328-v0290-qwen25-7b-rtx5090-vllm-serve-bench.log": (0.0051, 0.01),
    "329-v0290-qwen25-7b-fp8-online-rtx5090-vllm-serve-bench.log": (0.0065, 0.01),
    "330-v0290-qwen25-7b-mnbt8192-warm-rtx5090-vllm-serve-bench.log": (0.0079, 0.01),
    "331-v0290-qwen25-05b-rtx5090-vllm-serve-bench.log": (0.0036, 0.01),
    # the same card's warm start of a compressed-tensors fp8 checkpoint: consumed memory 0.43 GiB beside the weights
    "332-v0290-qwen25-7b-fp8-dynamic-warm-rtx5090-vllm-serve-bench.log": (0.0081, 0.01),
    # Qwen3.6-35B-A3B NVFP4 (ModelOpt mixed) on one RTX 5090 under 0.24.0, fp8 KV, one sequence, 131,072 tokens: the log
    # prints the pool alone; 0.05 GiB under it, the modeled terms unchecked
    "333-v0240-qwen36-35b-a3b-nvfp4-rtx5090-club3090.log": (-0.0076, 0.015),
    # log 328's start again with its compiled graph from the cache (held out): consumed less the weights 0.38 GiB, 1.36 cold
    "334-v0290-qwen25-7b-warm-rtx5090-vllm-serve-bench.log": (0.007, 0.01),
}


def _key(r: poolaccuracy.Row) -> str:
    """A start's log by its number (logs/public/NN-... or logs/starts/NN-...)."""
    return Path(r.log).name.split("-")[0]


def test_each_pool_against_the_printed(measured) -> None:
    rows, _ = measured
    seen = {}
    for r in rows:
        if r.error is None:
            continue
        expected, bound = EXPECTED[Path(r.log).name]
        assert float(r.error) == pytest.approx(expected, abs=5e-4), r.label
        assert abs(r.error) <= bound, r.label
        seen[Path(r.log).name] = r.held_out
    assert seen == {
        log: log.startswith(
            ("31-", "57-", "83-", "86-", "89-", "92-", "95-", "98-", "101-", "104-", "107-", "110-", "112-", "115-", "118-", "121-", "124-", "127-")
            + ("130-", "133-", "136-", "139-", "142-", "145-", "148-", "151-", "154-", "157-", "160-", "163-", "166-", "169-", "172-", "175-", "192-")
            + ("195-", "198-", "201-", "204-", "207-", "210-", "213-", "301-", "304-", "307-", "310-", "313-", "316-", "319-", "322-", "325-", "328-", "331-")
            + ("334-",)
        )
        for log in EXPECTED
    }


def test_verdicts_against_what_vllm_did(measured) -> None:
    """vLLM printed a negative pool on the 8 GB RTX 4060 (-1.05 GiB) and on one H100 with gpt-oss
    (-2.14 GiB) and refused both, as the prediction does; Llama 3.1 8B at 29,000 on a 3090 and
    gpt-oss at 0.95 on an H100 were refused for their length, as predicted (gpt-oss only once its
    experts are padded as the Marlin path pads them)."""
    rows, _ = measured
    said = {_key(r): (r.log_verdict, r.prediction.verdict) for r in rows}
    assert said == {
        "01": ("max_model_len", "max_model_len"), "02": ("starts", "starts"), "03": ("no KV memory", "no KV memory"),
        "04": ("starts", "starts"), "05": ("starts", "starts"), "31": ("starts", "starts"),
        "17": ("max_model_len", "max_model_len"), "16": ("no KV memory", "no KV memory"), "57": ("starts", "starts"),
        "81": ("starts", "starts"), "82": ("starts", "starts"), "83": ("starts", "starts"), "84": ("starts", "starts"),
        "85": ("starts", "starts"), "86": ("starts", "starts"), "87": ("starts", "starts"),
        "88": ("starts", "starts"),
        **{str(n): ("starts", "starts") for n in range(89, 121)},
        "121": ("starts", "starts"), "122": ("starts", "starts"), "123": ("starts", "starts"),
        "124": ("starts", "starts"), "125": ("starts", "starts"), "126": ("starts", "starts"),
        "127": ("starts", "starts"), "128": ("starts", "starts"), "129": ("starts", "starts"), "130": ("starts", "starts"),
        "131": ("starts", "starts"), "132": ("starts", "starts"), "133": ("starts", "starts"),
        # a 0.27 GiB pool at utilization 0.33 on the 0.23.0 laptop, predicted 0.27 GiB with the card's own non-torch
        # memory (0.08 GiB with V1's constant alone: less than the 4,096-token request, refused where vLLM started)
        **{str(n): ("starts", "starts") for n in range(134, 176)},
        **{str(n): ("starts", "starts") for n in range(190, 214)},
        # 0.39 GiB printed at utilization 0.95 on the A40-48Q (4.09 GiB of non-torch memory held before the profile), 4.75
        # predicted: started where vLLM refused the 8,192-token request
        "214": ("max_model_len", "starts"),
        **{str(n): ("starts", "starts") for n in range(300, 335)},
    }  # fmt: skip


def test_model_runner_v2_graph_estimate_against_the_printed(measured) -> None:
    """Every start on Model Runner V2 from v0.29.0 that prints its graph estimate (the 'equivalent to
    --gpu-memory-utilization' line) with the default capture list: predict.v2_cuda_graph_estimate
    within 0.035 GiB of it, fitted and held out alike (0.38 GiB for Qwen3-4B's 36 layers, 0.03 over; 0.34
    and 0.35 for Qwen2-1.5B's 28, 0.01 and 0.02 under), where the V1 runner's formula is 0.14 to 0.24 GiB over. Where max_num_seqs 8
    stops the list at 16 tokens (5 piecewise graphs, the 48 GB RTX 4090's Qwen3-8B starts) vLLM prints
    0.07 to 0.08 GiB and 0.06 is modeled: the 16-token graph's activations are 1.5 MiB, and the first
    capture's own part is V2's (predict.V2_PIECEWISE_FIRST, 33 MiB, fitted on those fitted starts' whole
    capture, 'took 0.06 GiB'), not the V1 runner's 82 MiB; with V1's, 0.10 GiB, and 0.15 while the
    first capture was a 512-token graph's for every list."""
    rows, _ = measured
    v2 = [r for r in rows if r.prediction.runner_v2 and r.release >= predict.V2_ESTIMATE_FROM and r.printed_terms.cuda_graph is not None]
    assert len(v2) == 15  # with 334, the RTX 5090 baseline's warm start
    short = [r for r in v2 if r.prediction.graphs[0] < 51]
    assert sorted(_key(r) for r in short) == ["194", "195", "198", "205"]
    for r in v2:
        piecewise, full = r.prediction.graphs
        off = r.prediction.cuda_graph.bytes - r.printed_terms.cuda_graph
        if r in short:
            assert -0.02 * GiB < off < 0, r.label
            continue
        assert abs(off) < 0.035 * GiB, r.label
        v1 = predict.cuda_graph_estimate(piecewise, full, r.layers, 0, r.prediction.graph_activations)
        assert v1 - r.printed_terms.cuda_graph > 0.14 * GiB, r.label


def test_model_runner_v2_counts_its_sampler_state_as_consumed(measured) -> None:
    """From v0.27.0 vLLM reads the consumed memory from free memory and prints it ('Actual usage is X GiB
    for consumed memory (weights + non-torch)'); Model Runner V2 builds its sampler after the weights are
    measured, an int32 row of the vocabulary a request (output_bin_counts) and two of a 32nd of it
    (prompt_bin_mask, grammar_bitmask). The public V2 starts that print it and keep no compile's block
    leave 0.25 to 0.33 GiB beside the loading line at 256 sequences (the RTX 5090's three warm starts of v0.29.0 0.38,
    0.38 and 0.43, which no rule explains), 0.14 to 0.18 at 16 and 64 (Qwen3-VL 8B,
    v0.28.0) and 0.11 to 0.13 at 8 (Qwen3 8B, v0.29.0): less the state, 0.10 to 0.18 each."""
    rows, _ = measured
    assert predict.v2_sampler_state(151_936, 256, (0, 28), True).bytes == 256 * (151_936 + 2 * 4748) * 4
    assert predict.v2_sampler_state(151_936, 256, (0, 28), True, speculative_tokens=3).bytes == 256 * (151_936 + 4748 + 4 * 4748) * 4
    assert predict.v2_sampler_state(151_936, 256, (0, 26), True).bytes == predict.v2_sampler_state(151_936, 256, (0, 28), False).bytes == 0
    assert predict.non_torch(1, 1, (0, 28), v2=True).bytes == predict.NON_TORCH_ONE_RANK_V2
    assert predict.non_torch(1, 1, (0, 26), v2=True).bytes == predict.NON_TORCH_ONE_RANK
    left = {}
    for r in rows:
        consumed = poolaccuracy.v2_consumed((ROOT / "logs" / "public" / r.log).read_text())
        if consumed is None or not r.prediction.runner_v2 or r.prediction.tp > 1 or r.prediction.pinned_bytes:
            continue
        printed = consumed - r.printed_terms.weights
        assert r.prediction.non_torch.bytes == predict.NON_TORCH_ONE_RANK_V2 + r.prediction.sampler_state_bytes, r.label
        left[_key(r)] = (r.prediction.max_num_seqs, printed, printed - r.prediction.sampler_state_bytes)
    assert {n for n, (seqs, _, _) in left.items() if seqs == 8} == {"196", "197", "205"}
    assert all(0.10 * GiB < printed < 0.14 * GiB for seqs, printed, _ in left.values() if seqs == 8)
    # the RTX 5090's three warm starts (logs 330, 332 and 334): 0.38, 0.43 and 0.38 GiB, 0.23, 0.28 and 0.23 beyond the state
    for n, (low, high) in {"330": (0.22, 0.23), "332": (0.27, 0.28), "334": (0.22, 0.23)}.items():
        seqs, printed, rest = left.pop(n)
        assert seqs == 256 and 0.37 * GiB < printed < 0.44 * GiB and low * GiB < rest < high * GiB
    assert all(0.24 * GiB < printed < 0.34 * GiB for seqs, printed, _ in left.values() if seqs == 256)
    assert all(0.09 * GiB < rest < 0.19 * GiB for _, _, rest in left.values())


def test_held_out_is_every_third(measured) -> None:
    rows, _ = measured
    assert [r.index for r in rows if r.held_out] == [i for i in range(len(rows)) if i % 3 == 2]


def test_the_constants_are_the_medians_of_the_fitted_starts(measured) -> None:
    _, fitted = measured
    assert fitted == poolaccuracy.Constants.in_force()
    assert fitted.non_torch_one_rank == predict.NON_TORCH_ONE_RANK and fitted.non_torch_card_offsets == predict.NON_TORCH_CARD_OFFSETS
    assert list(fitted.to_json())[:2] == ["NON_TORCH_ONE_RANK", "NON_TORCH_ONE_RANK_V0"]


def test_accuracy_summary(measured, capsys) -> None:
    rows, _ = measured
    fitted = poolaccuracy.summary([r for r in rows if not r.held_out])
    held = poolaccuracy.summary([r for r in rows if r.held_out])
    # with the Qwen3.6 35B-A3B NVFP4 start of 2026-12-04 (-0.8 %, fitted): the lead sets the policy band from these
    assert (fitted.starts, round(float(fitted.median), 4), round(float(fitted.p90), 3)) == (109, 0.0033, 0.044)
    assert (held.starts, round(float(held.median), 4), round(float(held.p90), 4)) == (54, 0.0039, 0.0268)  # 334 held out, +0.7 %
    assert pool_accuracy.main([]) == 0
    out = capsys.readouterr().out
    assert "fitted: 109 starts with a printed pool; median |error| +0.3 %, 90th percentile +4.4 %; verdict right on 109 of 110" in out
    assert "held out: 54 starts with a printed pool; median |error| +0.4 %, 90th percentile +2.7 %; verdict right on 55 of 55" in out


def test_accuracy_by_family_and_era(measured) -> None:
    """Each start falls in its config's family and its release's era; the groups' summaries are the
    summaries of those rows, fitted and held out together."""
    rows, _ = measured
    assert {_key(r): (r.family, r.era) for r in rows} == {
        "01": ("dense", poolaccuracy.ERAS[0]), "02": ("dense", poolaccuracy.ERAS[0]), "03": ("dense", poolaccuracy.ERAS[0]),
        "04": ("dense", poolaccuracy.ERAS[0]), "05": ("dense", poolaccuracy.ERAS[0]), "31": ("dense", poolaccuracy.ERAS[2]),
        "17": ("sliding window", poolaccuracy.ERAS[1]), "16": ("sliding window", poolaccuracy.ERAS[1]), "57": ("dense", poolaccuracy.ERAS[1]),
        "81": ("dense", poolaccuracy.ERAS[1]), "82": ("dense", poolaccuracy.ERAS[1]), "83": ("dense", poolaccuracy.ERAS[1]),
        "84": ("sliding window", poolaccuracy.ERAS[1]), "85": ("dense", poolaccuracy.ERAS[1]), "86": ("dense", poolaccuracy.ERAS[1]),
        "87": ("dense", poolaccuracy.ERAS[1]), "88": ("dense", poolaccuracy.ERAS[1]),
        **{str(n): ("dense", poolaccuracy.ERAS[1]) for n in range(89, 112)},
        "98": ("moe", poolaccuracy.ERAS[1]), "99": ("moe", poolaccuracy.ERAS[1]), "100": ("mla", poolaccuracy.ERAS[1]),
        "107": ("sliding window", poolaccuracy.ERAS[1]), "111": ("sliding window", poolaccuracy.ERAS[1]),
        "112": ("sliding window", poolaccuracy.ERAS[1]), "113": ("sliding window", poolaccuracy.ERAS[1]),
        **{str(n): ("dense", poolaccuracy.ERAS[1]) for n in range(114, 119)}, "119": ("sliding window", poolaccuracy.ERAS[1]),
        "120": ("dense", poolaccuracy.ERAS[1]), "121": ("moe", poolaccuracy.ERAS[1]), "122": ("hybrid", poolaccuracy.ERAS[1]),
        "123": ("dense", poolaccuracy.ERAS[2]), "124": ("dense", poolaccuracy.ERAS[2]), "125": ("hybrid", poolaccuracy.ERAS[1]),
        "126": ("sliding window", poolaccuracy.ERAS[1]), "127": ("moe", poolaccuracy.ERAS[1]), "128": ("dense", poolaccuracy.ERAS[1]),
        "129": ("dense", poolaccuracy.ERAS[2]), "130": ("dense", poolaccuracy.ERAS[2]),
        "131": ("dense", poolaccuracy.ERAS[2]), "132": ("dense", poolaccuracy.ERAS[2]), "133": ("sliding window", poolaccuracy.ERAS[1]),
        **{str(n): ("dense", poolaccuracy.ERAS[2]) for n in range(134, 146)}, "140": ("dense", poolaccuracy.ERAS[0]), "146": ("dense", poolaccuracy.ERAS[1]),
        **{str(n): ("dense", poolaccuracy.ERAS[2]) for n in range(147, 150)}, "150": ("dense", poolaccuracy.ERAS[1]), "151": ("dense", poolaccuracy.ERAS[1]),
        "152": ("sliding window", poolaccuracy.ERAS[1]), **{str(n): ("dense", poolaccuracy.ERAS[2]) for n in range(153, 156)}, "156": ("moe", poolaccuracy.ERAS[1]),
        "157": ("dense", poolaccuracy.ERAS[0]), "158": ("moe", poolaccuracy.ERAS[1]), "159": ("moe", poolaccuracy.ERAS[1]),
        "160": ("dense", poolaccuracy.ERAS[1]), "161": ("moe", poolaccuracy.ERAS[2]), "162": ("moe", poolaccuracy.ERAS[1]),
        "163": ("sliding window", poolaccuracy.ERAS[1]), "164": ("dense", poolaccuracy.ERAS[1]),
        "165": ("dense", poolaccuracy.ERAS[1]), "166": ("dense", poolaccuracy.ERAS[1]),
        **{str(n): ("dense", poolaccuracy.ERAS[2]) for n in range(167, 171)},
        **{str(n): ("dense", poolaccuracy.ERAS[1]) for n in range(171, 176)},
        **{str(n): ("dense", poolaccuracy.ERAS[2]) for n in range(190, 206)},
        "206": ("dense", poolaccuracy.ERAS[2]), "207": ("moe", poolaccuracy.ERAS[1]), "208": ("moe", poolaccuracy.ERAS[1]),
        "209": ("moe", poolaccuracy.ERAS[2]), "210": ("hybrid", poolaccuracy.ERAS[2]), "211": ("dense", poolaccuracy.ERAS[1]),
        "212": ("moe", poolaccuracy.ERAS[1]), "213": ("mla", poolaccuracy.ERAS[0]), "214": ("dense", poolaccuracy.ERAS[0]),
        "300": ("moe", poolaccuracy.ERAS[1]), **{str(n): ("dense", poolaccuracy.ERAS[2]) for n in range(301, 310)},
        "307": ("moe", poolaccuracy.ERAS[2]), "308": ("moe", poolaccuracy.ERAS[2]),
        **{str(n): ("dense", poolaccuracy.ERAS[1]) for n in range(310, 322)}, "315": ("sliding window", poolaccuracy.ERAS[1]),
        "322": ("moe", poolaccuracy.ERAS[1]), "323": ("moe", poolaccuracy.ERAS[1]), "324": ("dense", poolaccuracy.ERAS[1]),
        "325": ("dense", poolaccuracy.ERAS[1]), "326": ("dense", poolaccuracy.ERAS[1]), "327": ("dense", poolaccuracy.ERAS[1]),
        **{str(n): ("dense", poolaccuracy.ERAS[2]) for n in range(328, 333)},
        "333": ("hybrid", poolaccuracy.ERAS[2]),  # Qwen3.6-35B-A3B NVFP4, gated-delta hybrid MoE with its vision tower
        "334": ("dense", poolaccuracy.ERAS[2]),
    }  # fmt: skip
    groups = {(kind, name): s for kind, name, s in poolaccuracy.by_group(rows)}
    assert list(groups) == [("family", "dense"), ("family", "moe"), ("family", "mla"), ("family", "sliding window"),
                            ("family", "hybrid"), ("family", poolaccuracy.MULTIMODAL), ("era", poolaccuracy.ERAS[0]), ("era", poolaccuracy.ERAS[1]),
                            ("era", poolaccuracy.ERAS[2])]  # fmt: skip
    # the starts that build a vision tower, each also in its language model's family
    towers = [r for r in rows if r.tower]
    assert sorted(_key(r) for r in towers) == ["112", "120", "121", "133", "158", *(str(n) for n in range(199, 205)), "210", "315", "316", "317", "333", "81"]
    assert {r.family for r in towers} == {"dense", "sliding window", "moe", "hybrid"}
    mm = groups[("family", poolaccuracy.MULTIMODAL)]
    assert mm == poolaccuracy.summary(towers) and (mm.starts, round(float(mm.median), 4), round(float(mm.p90), 4)) == (17, 0.0076, 0.0286)  # 333 at -0.8 %
    dense = groups[("family", "dense")]
    assert (dense.starts, dense.verdicts) == (127, 128)  # with 334
    assert dense == poolaccuracy.summary([r for r in rows if r.family == "dense"])
    v1 = groups[("era", poolaccuracy.ERAS[1])]
    assert (v1.starts, round(float(v1.p90), 3)) == (91, 0.029)
    assert poolaccuracy.era_of((0, 7)) == poolaccuracy.ERAS[0] and poolaccuracy.era_of((0, 20)) == poolaccuracy.ERAS[2]


def test_the_naive_rule_on_the_same_starts(measured) -> None:
    """total x utilization - weights on the same starts: far off where the activation peak and the
    graphs are large beside the pool."""
    rows, _ = measured
    naive = poolaccuracy.summary([r for r in rows if not r.held_out], naive=True)
    held = poolaccuracy.summary([r for r in rows if r.held_out], naive=True)
    assert (round(float(naive.median), 3), round(float(naive.p90), 3)) == (0.084, 0.819)  # 109 fitted starts with 333
    assert round(float(held.median), 3) == 0.086  # 54 held-out starts with 334
    llama = next(r for r in rows if r.log.startswith("01-"))
    assert llama.naive_error == Fraction(llama.prediction.requested_bytes - llama.prediction.weights.bytes - llama.printed_pool, llama.printed_pool)


def test_percentile_by_nearest_rank() -> None:
    values = [Fraction(n, 100) for n in range(1, 11)]
    assert poolaccuracy.percentile(values, 90) == Fraction(9, 100)
    assert poolaccuracy.percentile(values[:1], 90) == Fraction(1, 100)


# --- the command line ------------------------------------------------------------------------


def _json(argv: list[str], capsys) -> dict:
    assert cli.main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_awq_by_name_before_0_24(tmp_path, capsys) -> None:
    """Qwen2.5 7B's config with an AWQ checkpoint's quantization_config (4 bits, groups of 128, the
    GEMM layout): --quantization awq on 0.22.0 keeps the plain kernel, whose whole gate_up weight at
    the 2,048-token profile comes off the pool and is said; on 0.24.0, and as awq_marlin, Marlin runs."""
    config = json.loads((ROOT / "models/configs/qwen2.5-7b/config.json").read_text())
    config["quantization_config"] = {"bits": 4, "group_size": 128, "quant_method": "awq", "version": "gemm", "zero_point": True}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    argv = ["model", str(path), "--gpu", "rtx-3090", "--max-model-len", "4096", "--max-num-seqs", "8", "--gpu-memory-utilization", "0.9", "--json",
            "--compile-cached"]  # fmt: skip
    forced = _json([*argv, "--quantization", "awq", "--engine-version", "0.22.0"], capsys)
    marlin = _json([*argv, "--quantization", "awq_marlin", "--engine-version", "0.22.0"], capsys)
    later = _json([*argv, "--quantization", "awq", "--engine-version", "0.24.0"], capsys)
    whole = predict.forward_peak(_shape("qwen2.5-7b"), 1, 2048, 0, (0, 22), dequantized=True).bytes
    plain = predict.forward_peak(_shape("qwen2.5-7b"), 1, 2048, 0).bytes
    assert marlin["available_kv_bytes"] - forced["available_kv_bytes"] == whole - plain
    assert later["available_kv_bytes"] == marlin["available_kv_bytes"]
    assert [n for n in forced["notes"] if "plain AWQ kernel" in n] and not [n for n in later["notes"] if "plain AWQ kernel" in n]


def test_cli_on_a_card(capsys) -> None:
    r = _json(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "16384", "--gpu", "rtx-3090",
               "--gpu-memory-utilization", "0.9764", "--engine-version", "0.21.0", "--json"], capsys)  # fmt: skip
    assert r["requested_bytes"] == -(-parse_size("23.58 GiB") * 9764 // 10000)  # ceil(total x utilization)
    assert (r["max_num_seqs"], r["max_num_batched_tokens"]) == (256, 2048)
    # the weights as loaded: the count, and the allocator's 2 MiB segments for each parameter of 20 MiB or more (v0.21.0)
    assert r["terms"]["weights"]["bytes"] == r["weights_bytes_per_rank"] + weights.allocator_rounding(_shape("qwen3-8b"), 1)
    parts = r["terms"]["weights"]["bytes"] + r["activation_peak_bytes"] + r["non_torch_bytes"] + r["cuda_graph_bytes"]
    assert r["available_kv_bytes"] == r["requested_bytes"] - parts
    # the largest graph, 512 tokens, holds its activations in the first capture: 3 x 4,096 + 3 x 12,288 in bf16 a token
    assert r["cuda_graph_bytes"] == predict.CUDA_GRAPH_PIECEWISE_FIRST + 512 * (3 * 4096 + 3 * 12288) * 2 + 36 * (
        50 * predict.CUDA_GRAPH_PIECEWISE_PER_LAYER + 34 * predict.CUDA_GRAPH_FULL_PER_LAYER
    )
    assert set(r["terms"]) == {"weights", "activation_peak", "non_torch", "cuda_graph"}
    assert all(t["source"] for t in r["terms"].values())
    assert r["verdict"] == "starts" and r["kv_tokens"] == r["largest_max_model_len"]
    eager = _json(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "16384", "--total-memory", "23.58 GiB",
                   "--gpu-memory-utilization", "0.9764", "--engine-version", "0.21.0", "--enforce-eager", "--json"], capsys)  # fmt: skip
    assert eager["cuda_graph_bytes"] == 0
    # a first start compiles inside the profile: its peak is the compile's block, the embedding (151,936 x 4,096 x 2 B);
    # eager compiles nothing, so its peak is the profile's own
    assert r["activation_peak_bytes"] == 151_936 * 4096 * 2 > eager["activation_peak_bytes"]
    assert eager["available_kv_bytes"] == r["available_kv_bytes"] + r["cuda_graph_bytes"] + r["activation_peak_bytes"] - eager["activation_peak_bytes"]


def test_cli_says_a_total_typed_as_sold(capsys) -> None:
    """--total-memory 80GB is 80e9 B, 74.51 GiB: the size an 80 GB card is sold at, not the 79.2 GiB
    torch reports on one. The answer says so and names the catalog's cards sold at that size with
    the total each reports; a total typed in GiB, or with decimals, is taken as the reading it is."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--json", "--total-memory"]
    sold = _json([*argv, "80GB"], capsys)
    assert sold["total_memory_bytes"] == 80 * 10**9
    (note,) = [n for n in sold["notes"] if n.startswith("--total-memory")]
    assert "read as 74.51 GiB" in note and "h100-sxm 79.20 GiB" in note and "a100-80gb 79.32 GiB" in note and "--gpu" in note
    for reading in ("79.19 GiB", "85.02 GB"):
        assert not [n for n in _json([*argv, reading], capsys)["notes"] if n.startswith("--total-memory")]


def test_cli_says_what_a_cached_compile_leaves(capsys) -> None:
    """Qwen3-8B on an H100 under 0.23.0: a first start's peak is the compile's block, the embedding
    (151,936 x 4,096 x 2 B); the note gives the pool of a start that loads the compiled graph from
    vLLM's cache, which --compile-cached predicts, and that start gets no such note."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "h100-sxm", "--engine-version", "0.23.0", "--max-model-len", "4096", "--json"]
    cold, cached = _json(argv, capsys), _json([*argv, "--compile-cached"], capsys)
    assert cold["activation_peak_bytes"] == cold["compile_block_bytes"] == 151_936 * 4096 * 2 > cached["activation_peak_bytes"]
    gain = cached["available_kv_bytes"] - cold["available_kv_bytes"]
    assert gain == cold["activation_peak_bytes"] - cached["activation_peak_bytes"] > 0
    (note,) = [n for n in cold["notes"] if "compiled graph" in n]
    assert f"leaves {fmt(gain, 'GiB', down=True)} more a rank ({fmt(cached['available_kv_bytes'], 'GiB')})" in note
    assert not [n for n in cached["notes"] if "compiled graph" in n]
    short = _json(["model", "models/configs/qwen3-32b/config.json", "--gpu", "rtx-4090", "--max-model-len", "32768", "--json"], capsys)
    assert short["available_kv_bytes"] < 0 and not [n for n in short["notes"] if "compiled graph" in n]  # no pool either way: no note


def test_cli_says_flashinfer_is_installed(capsys) -> None:
    """From 0.8.0 to 0.11.x V1 samples with FlashInfer wherever it imports (topk_topp_sampler.py,
    0.10.1.1): --flashinfer-installed prices the warm-up at 14 B a bf16 logit, not the sort's 38. On
    the public 0.10.1.1 start of Qwen2-7B on an A100 80GB at utilization 0.5 (its install's log prints
    'Using FlashInfer for top-p & top-k sampling.', and 'Available KV cache memory: 24.83 GiB') the
    flag brings the pool within 1 % of the printed; outside those releases it changes nothing
    and says so."""
    argv = ["model", "models/configs/qwen2.5-7b/config.json", "--max-model-len", "16384", "--gpu", "a100-80gb",
            "--gpu-memory-utilization", "0.5", "--engine-version", "0.10.1.1", "--json"]  # fmt: skip
    sort, fi = _json(argv, capsys), _json([*argv, "--flashinfer-installed"], capsys)
    rows_logits = 256 * 152064
    residual = sort["max_num_batched_tokens"] * 3584 * 2  # the hidden states kept through the sampler, bf16
    assert sort["activation_peak_bytes"] == rows_logits * predict.sort_bytes_per_logit(256) + residual
    assert fi["activation_peak_bytes"] == rows_logits * predict.FLASHINFER_SAMPLER_BYTES_PER_LOGIT + residual
    assert fi["available_kv_bytes"] - sort["available_kv_bytes"] == rows_logits * (38 - 14)
    assert abs(fi["available_kv_bytes"] / parse_size("24.83 GiB") - 1) < 0.01
    later = _json([*argv[:-2], "0.20.0", "--json", "--flashinfer-installed"], capsys)
    assert later["available_kv_bytes"] == _json([*argv[:-2], "0.20.0", "--json"], capsys)["available_kv_bytes"]
    assert any(n.startswith("--flashinfer-installed changes nothing on vLLM 0.20") for n in later["notes"])
    assert cli.main(["model", "models/configs/qwen2.5-7b/config.json", "--max-model-len", "16384", "--flashinfer-installed"]) == 2
    assert "calc: error: --flashinfer-installed: found without a card, expected --gpu NAME or --total-memory SIZE" in capsys.readouterr().err


def test_cli_refuses_a_length_one_request_cannot_hold(capsys) -> None:
    r = _json(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "131072", "--gpu", "rtx-3090", "--json"], capsys)
    assert r["verdict"] == "max_model_len"
    # the longest length that starts: what the pool holds less the null block vLLM 0.29.0 and later keep back
    assert r["largest_max_model_len"] < 131072 and r["largest_max_model_len"] == r["kv_tokens"] - r["block_size"]
    assert r["null_block_bytes"] == 2_359_296  # one block of 16 tokens at 147,456 B a token


@pytest.mark.parametrize(
    ("typed", "box"),
    [
        ("4090", "rtx-4090"),
        ("A100 80GB", "a100-80gb"),
        ("GB10", "dgx-spark"),
        ("L4", "nvidia-l4"),
        ("A10", "nvidia-a10"),
        ("T4", "tesla-t4"),
        ("MI300X", "amd-mi300x"),
        ("RTX 5090", "rtx-5090-node"),
        ("NVIDIA L40S", "l40s"),
        ("A40", "nvidia-a40"),
        ("a6000", "rtx-a6000"),
        ("RTX 6000 Ada", "rtx-6000-ada"),
        ("L40", "nvidia-l40"),
        ("V100 32GB", "tesla-v100-32gb"),
        ("V100 16GB", "tesla-v100-16gb"),
        ("H20", "nvidia-h20"),
        ("H200", "h200"),
        ("4080 SUPER", "rtx-4080-super"),
        ("4070 Ti SUPER", "rtx-4070-ti-super"),
        ("RTX 3080", "rtx-3080"),
        ("5080", "rtx-5080"),
        ("5070 Ti", "rtx-5070-ti"),
        ("H100 NVL", "h100-nvl"),
        ("A30", "nvidia-a30"),
        ("RTX 3060", "rtx-3060"),
        ("2080 Ti", "rtx-2080-ti"),
        ("4060 Ti 16GB", "rtx-4060-ti-16gb"),
        # torch's device names with their form-factor words, which no box spells
        ("NVIDIA A100-PCIE-40GB", "a100-40gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("Tesla V100-SXM2-32GB", "tesla-v100-32gb"),
        ("Tesla V100-PCIE-16GB", "tesla-v100-16gb"),
        ("NVIDIA H100 PCIe", "h100-pcie"),  # where the form factor tells two boxes apart, it stays
        # the SXM generation and the size typed beside the name, as people write them
        ("H100 SXM5", "h100-sxm"),
        ("H100-SXM5-80GB", "h100-sxm"),
        ("RTX 4090 24GB", "rtx-4090"),
        ("A100 SXM4 80GB", "a100-80gb"),
        ("H100 SXM5 80GB HBM3", "h100-sxm"),
        ("H100 80GB HBM3", "h100-sxm"),  # torch's name without the vendor's word
        ("RTX 3090 24GB", "rtx-3090"),  # no sold size in the catalog: its total, 23.58 GiB, is a 24 GB card's
        ("Tesla T4 16GB", "tesla-t4"),
        ("RTX 4090 (24GB)", "rtx-4090"),
        # the cards added with a public total of each
        ("A800", "a800-80gb"),
        ("NVIDIA A800-SXM4-80GB", "a800-80gb"),
        ("A800 80GB", "a800-80gb"),
        ("L20", "nvidia-l20"),
        ("A4000", "rtx-a4000"),
        ("RTX 3080 Ti", "rtx-3080-ti"),
        ("RTX 3080 Ti 12GB", "rtx-3080-ti"),
        ("3070", "rtx-3070"),
        ("3090 Ti", "rtx-3090-ti"),
        ("Titan RTX", "titan-rtx"),
        ("NVIDIA TITAN RTX", "titan-rtx"),
        ("RTX 8000", "quadro-rtx-8000"),
        ("B300", "b300"),
        ("NVIDIA B300 SXM6 AC", "b300"),
        ("GB200", "gb200"),
        ("NVIDIA GB200", "gb200"),
        ("MI325X", "amd-mi325x"),
        ("AMD Instinct MI325X", "amd-mi325x"),
        # a name that ends one box's words is that box, where the others go on to a Ti or SUPER
        ("4070 Ti", "rtx-4070-ti"),
        ("NVIDIA GeForce RTX 4070 Ti", "rtx-4070-ti"),
        ("4070 Ti SUPER", "rtx-4070-ti-super"),
        ("3080", "rtx-3080"),
        ("3090", "rtx-3090"),
        ("B200", "b200"),
    ],
)
def test_a_card_named_by_the_words_that_tell_it_apart(typed: str, box: str) -> None:
    """L4 is nvidia-l4, not the L40S whose id begins with the same letters: a run of whole words."""
    assert predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, typed)["id"] == box


def test_a_name_two_cards_share_lists_both() -> None:
    """'6000' is the RTX 6000 Ada and the RTX PRO 6000 Blackwell, not the RTX A6000 (its word is A6000);
    'V100' is either V100."""
    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    with pytest.raises(InputError, match="fits rtx-pro-6000-blackwell and rtx-6000-ada; expected one of them"):
        predict.find_box(boxes, "6000")
    with pytest.raises(InputError, match="fits tesla-v100-16gb and tesla-v100-32gb; expected one of them"):
        predict.find_box(boxes, "V100")
    # a size narrows a name that fits several: an H100 80GB is the SXM or the PCIe card, not the 94 GB NVL
    with pytest.raises(InputError, match=r"^--gpu: found 'H100 80GB', which fits h100-sxm and h100-pcie; expected one of them$"):
        predict.find_box(boxes, "H100 80GB")
    assert predict.find_box(boxes, "V100 32GB")["id"] == "tesla-v100-32gb" and predict.find_box(boxes, "V100 16GB")["id"] == "tesla-v100-16gb"
    # a card the catalog lacks: the flag that takes any card's total
    with pytest.raises(InputError, match=r"^--gpu: found 'H800', expected one of .*; or --total-memory SIZE, the total torch reports"):
        predict.find_box(boxes, "H800")


def test_a_card_by_the_name_torch_gives_it() -> None:
    """The device names vLLM, torch and nvidia-smi print find their box (catalog/boxes.yaml
    device_names), and a GeForce or Tesla name without the vendor's words; the names are unique."""
    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    found = {n: predict.find_box(boxes, n)["id"] for n in ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe",
                                                          "NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "NVIDIA GeForce RTX 5090", "Tesla T4",
                                                          "nvidia_h100_pcie", "AMD Instinct MI300X")}  # fmt: skip
    assert found == {"NVIDIA H100 80GB HBM3": "h100-sxm", "NVIDIA A100-SXM4-80GB": "a100-80gb", "NVIDIA A100 80GB PCIe": "a100-80gb",
                     "NVIDIA RTX PRO 6000 Blackwell Workstation Edition": "rtx-pro-6000-blackwell", "NVIDIA GeForce RTX 5090": "rtx-5090-node",
                     "Tesla T4": "tesla-t4", "nvidia_h100_pcie": "h100-pcie", "AMD Instinct MI300X": "amd-mi300x"}  # fmt: skip
    named = [n for b in boxes.values() for n in (b["device_names"]["names"] if "device_names" in b else [])]
    assert len(named) == len(set(named)) >= 15
    with pytest.raises(InputError, match="fits h100-sxm and h100-pcie and h100-nvl"):
        predict.find_box(boxes, "NVIDIA H100")
    # not the Ti SUPER, Ti, Ada or SUPER; torch's name for the RTX 4060 Ti is the 8 GB card's as well, so not the 16 GB box
    # a size the box is not sold at is another card (a 48 GB RTX 4090 is a rebuilt board; an 8 GB RTX 4060 Ti)
    for other in ("RTX 4060 Ti 8GB", "H100 SXM5 94GB"):
        with pytest.raises(InputError, match=f"^--gpu: found '{other}'"):
            predict.find_box(boxes, other)
    with pytest.raises(InputError, match=r"^--gpu: found 'RTX 3090 48GB': rtx-3090 \(NVIDIA GeForce RTX 3090\) is not sold at 48 GB; expected"):
        predict.find_box(boxes, "RTX 3090 48GB")
    for smaller in ("NVIDIA GeForce RTX 5070", "NVIDIA RTX 6000", "RTX 4080", "NVIDIA GeForce RTX 4060 Ti"):
        with pytest.raises(InputError, match=f"^--gpu: found '{smaller}', (expected a card of catalog/boxes.yaml by its whole name|which fits)"):
            predict.find_box(boxes, smaller)


def test_an_unknown_card_offers_the_ids_that_share_a_word() -> None:
    """Past a short line's worth of ids the error offers those sharing a word with the name typed
    (or the first) and the catalog's count: one line however many cards the catalog holds."""
    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    with pytest.raises(InputError) as caught:
        predict.find_box(boxes, "RTX 3050")
    message = str(caught.value)
    assert message.startswith("--gpu: found 'RTX 3050', expected one of rtx-5090-node, rtx-4090, ")
    assert (
        message.endswith(
            f" or another of the {len(boxes)} boxes of catalog/boxes.yaml; or --total-memory SIZE, the total torch reports for a card the catalog lacks"
        )
        and len(message) < 360
    )
    assert all(i.startswith("rtx-") for i in message.split("expected one of ")[1].split(" or another")[0].split(", "))
    # a word the id's word begins with: "MI300" offers the MI300X, not the first ids of the catalog
    for typed, offered in (("MI300", "amd-mi300x"), ("mi325", "amd-mi325x")):
        with pytest.raises(InputError) as caught:
            predict.find_box(boxes, typed)
        assert str(caught.value).startswith(f"--gpu: found {typed!r}, expected one of {offered}"), str(caught.value)


def test_the_added_cards_architecture_facts() -> None:
    """What the graphs read from a card's name (graphs.capture_of): Hopper for the H20 (FlashAttention 3),
    compute capability 12.x for the RTX 5080 and 5070 Ti (FlashInfer's XQA decode from v0.28.0), Volta
    for the V100 (Triton attends: not FlashInfer even with an fp8 cache), and Ampere or Ada elsewhere
    (FlashAttention 2, FlashInfer with an fp8 cache)."""
    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    card = {b: predict.card_of_box(boxes[b]) for b in ADDED_CARDS}
    qwen = _shape("qwen3-8b")
    for box_id, c in card.items():
        assert predict.is_hopper(c.name) == (box_id == "nvidia-h20"), box_id
        assert predict.is_sm120(c.name) == (box_id in ("rtx-5080", "rtx-5070-ti")), box_id
        assert not is_sm100(c.name) and c.vendor == "nvidia" and not c.unified and not c.nvls, box_id
        assert runs_flashinfer(c, "auto") is False, box_id
        assert runs_flashinfer(c, "fp8") is (box_id not in ("nvidia-h20", "tesla-v100-16gb", "tesla-v100-32gb")), box_id
    assert predict.capture_of(qwen, card["nvidia-h20"], "auto", 0).fa3
    assert not predict.capture_of(qwen, card["nvidia-a40"], "auto", 0).fa3
    volta = predict.capture_of(qwen, card["tesla-v100-32gb"], "fp8", 3)
    assert not volta.flashinfer and volta.full_spec_decode and not volta.fa3


# The cards added with a public total of each (catalog/boxes.yaml), by the compute capability family vLLM's rules read
AMPERE_ADA = ("a800-80gb", "nvidia-l20", "rtx-a4000", "rtx-4070-ti", "rtx-3080-ti", "rtx-3070", "rtx-3090-ti")
TURING_ADDED = ("titan-rtx", "quadro-rtx-8000")
SM100_ADDED = ("b300", "gb200")


def test_a_name_before_a_ti_or_super_lists_the_cards_it_is_not() -> None:
    """'RTX 4080' is neither the 4080 SUPER nor the 4080 Laptop GPU: both are named, as other cards; the RTX
    4070, 4070 Ti and 4070 Ti SUPER are each found by their whole name; 'Ti' alone fits every Ti and lists them."""
    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    for typed in ("4080", "RTX 4080", "NVIDIA GeForce RTX 4080"):
        with pytest.raises(InputError) as caught:
            predict.find_box(boxes, typed)
        assert str(caught.value) == (
            f"--gpu: found '{typed}', expected a card of catalog/boxes.yaml by its whole name: rtx-4080-super (NVIDIA GeForce RTX 4080 SUPER) "
            "and rtx-4080-laptop (NVIDIA GeForce RTX 4080 Laptop GPU) are other cards"
        )
    found = {t: predict.find_box(boxes, t)["id"] for t in ("4070", "NVIDIA GeForce RTX 4070", "4070 Ti", "RTX 4070 Ti", "4070 Ti SUPER")}
    assert found == {"4070": "rtx-4070", "NVIDIA GeForce RTX 4070": "rtx-4070", "4070 Ti": "rtx-4070-ti", "RTX 4070 Ti": "rtx-4070-ti",
                     "4070 Ti SUPER": "rtx-4070-ti-super"}  # fmt: skip
    # the RTX 4070 is known by nvidia-smi's total alone (12,282 MiB): not sized, the flag that takes torch's total is asked for
    assert boxes["rtx-4070"]["reported_total"].value == 12282 * 2**20 and "total_memory" not in boxes["rtx-4070"]
    with pytest.raises(InputError, match=r"^--gpu: NVIDIA GeForce RTX 4070 has no total as torch and vLLM report it .* \(only its reported total\)"):
        predict.card_of_box(boxes["rtx-4070"])
    with pytest.raises(InputError) as caught:
        predict.find_box(boxes, "Ti")
    listed = str(caught.value).split("which fits ")[1].split("; expected")[0].split(" and ")
    assert {"rtx-4070-ti", "rtx-4070-ti-super", "rtx-3080-ti", "rtx-3090-ti", "rtx-2080-ti", "rtx-5070-ti"} <= set(listed)
    # the plain RTX 3080 keeps its name beside the Ti; the 12 GB RTX 3080 is not the 10 GB box
    with pytest.raises(InputError, match=r"^--gpu: found 'RTX 3080 12GB': rtx-3080 \(NVIDIA GeForce RTX 3080\) is not sold at 12 GB"):
        predict.find_box(boxes, "RTX 3080 12GB")


def test_the_added_cards_land_in_their_compute_capability_family() -> None:
    """Ampere and Ada cards (8.0 to 8.9): FlashAttention, fp8 from every release, no NVLS; the TITAN RTX and
    Quadro RTX 8000 (7.5): Turing, so fp8 only from v0.14.0 and FlashInfer only before v0.24.0; the B300 and
    GB200 (10.x): data-center Blackwell, FlashInfer first, and NCCL's NVLS on their NVSwitch boards; the MI325X, AMD's."""
    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    for box_id in (*AMPERE_ADA, *TURING_ADDED, *SM100_ADDED):
        c = predict.card_of_box(boxes[box_id])
        assert c.vendor == "nvidia" and not c.unified and not predict.is_hopper(c.name) and not predict.is_sm120(c.name), box_id
        assert predict.is_turing(c.name) == (box_id in TURING_ADDED), box_id
        assert is_sm100(c.name) == c.nvls == (box_id in SM100_ADDED), box_id
        assert runs_flashinfer(c, "auto") is (box_id in SM100_ADDED), box_id
        assert (predict.fp8_refused(c.name, (0, 13)) is None) == (box_id not in TURING_ADDED), box_id
        assert predict.fp8_refused(c.name, (0, 14)) is None, box_id
    titan = predict.card_of_box(boxes["titan-rtx"])
    assert runs_flashinfer(titan, "auto", (0, 23)) and not runs_flashinfer(titan, "auto", (0, 24))
    assert predict.fp8_refused(titan.name, (0, 13)) == (
        "found a compute capability 7.5 card; vLLM 0.13's fp8 asks compute capability 8.0 or more (quantization/fp8.py "
        "Fp8Config.get_min_capability): expected --engine-version 0.14.0 or later, or a card of 8.0 or more"
    )
    # the MI325X is AMD's, as the MI300X: ROCm's rules, no FlashInfer, no NVLS
    mi325x = predict.card_of_box(boxes["amd-mi325x"])
    assert mi325x.vendor == "amd" and runs_flashinfer(mi325x, "auto") is None and not mi325x.nvls
    # vLLM's larger batch defaults leave out a card whose device name holds 'a100', which the A800's does not
    # (vllm/engine/arg_utils.py, 0.14.0: device_memory >= 70 GiB and "a100" not in device_name)
    a800 = predict.card_of_box(boxes["a800-80gb"])
    assert predict.default_batch((0, 20), a800.total_bytes, a800.name, 8192).max_num_batched_tokens == 8192


def _qwen3_8b_on(box_id: str, capsys) -> tuple[list[str], dict, int]:
    """Qwen3-8B at 8,192 tokens on a catalog card: the arguments, the JSON and the card's total, which
    the model reads from the catalog; a card of 30 GiB or more keeps a pool."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", "--gpu", box_id, "--json"]
    r = _json(argv, capsys)
    total = cli.load_dir(cli.CATALOG_DIR).boxes[box_id]["total_memory"].value
    assert r["total_memory_bytes"] == total
    if total > 30 * 2**30:
        assert r["verdict"] == "starts" and r["pool_bytes"] > 0
    return argv, r, total


@pytest.mark.parametrize("box_id", (*AMPERE_ADA, *TURING_ADDED, *SM100_ADDED, "amd-mi325x"))
def test_each_card_added_with_its_total_gives_a_verdict(box_id: str, capsys) -> None:
    """Qwen3-8B at 8,192 tokens: the model reads the catalog's total, and a card of 30 GiB or more keeps a pool."""
    argv, r, total = _qwen3_8b_on(box_id, capsys)
    if box_id in TURING_ADDED:  # fp8 weights refused before v0.14.0 on compute capability 7.5
        status = cli.main([*argv[:-1], "--quantization", "fp8", "--engine-version", "0.13.0"])
        assert status == 2 and "found a compute capability 7.5 card" in capsys.readouterr().err


ADDED_CARDS = ("nvidia-a40", "rtx-a6000", "rtx-6000-ada", "nvidia-l40", "tesla-v100-16gb", "tesla-v100-32gb", "nvidia-h20", "rtx-4080-super",
               "rtx-4070-ti-super", "rtx-3080", "rtx-5080", "rtx-5070-ti")  # fmt: skip


@pytest.mark.parametrize("box_id", ADDED_CARDS)
def test_each_added_card_gives_a_verdict_end_to_end(box_id: str, capsys) -> None:
    """Qwen3-8B at 8,192 tokens on each card: a pool where the weights leave room (the 48 GB and larger
    cards, the V100 32GB), vLLM's refusal on the 16 GB and 10 GB ones, and an fp8 checkpoint's pool on the
    16 GB cards of compute capability 8.0 and later (a V100 has no fp8 kernels to run it)."""
    argv, r, total = _qwen3_8b_on(box_id, capsys)
    if total <= 30 * 2**30:
        assert r["verdict"] in ("no KV memory", "weights do not fit") and r["pool_bytes"] is None
    if 15 * 2**30 < total < 30 * 2**30 and "v100" not in box_id:
        fp8 = _json([*argv, "--quantization", "fp8"], capsys)
        assert fp8["verdict"] == "starts" and fp8["pool_bytes"] > 0


def test_cli_without_a_card_answers_as_before(capsys) -> None:
    r = _json(
        ["model", "models/configs/qwen3-14b/config.json", "--max-model-len", "32768", "--pool", "6.51 GiB", "--engine-version", "0.11.0", "--json"], capsys
    )
    assert "verdict" not in r and "available_kv_bytes" not in r
    assert r["kv_tokens"] == 42656


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--gpu", "h800"], "--gpu: found 'h800', expected one of dgx-spark, "),
        (["--gpu", "H100"], "--gpu: found 'H100', which fits h100-sxm and h100-pcie and h100-nvl; expected one of them"),
        (["--gpu", "a100"], "--gpu: found 'a100', which fits a100-40gb and a100-80gb; expected one of them"),
        # a unified box's pool is pinned: without a pin or an overhead to size the largest, nothing to gate
        (["--gpu", "jetson-agx-thor"], "--kv-cache-memory-bytes: found nothing on the NVIDIA Jetson AGX Thor, whose pool is the one pinned"),
        (["--gpu", "dgx-spark"], "--kv-cache-memory-bytes: found nothing on the DGX Spark (GB10), whose pool is the one pinned"),
        (["--total-memory", "lots"], "--total-memory: found 'lots'"),
        (["--total-memory", "0 GiB"], "--total-memory: found '0 GiB', expected a size above zero"),
        (["--total-memory", "80"], "--total-memory: found '80', 80 B, expected a card's total of at least 1 GiB"),
        (["--total-memory", "1023 MiB"], "--total-memory: found '1023 MiB', 1,072,693,248 B, expected a card's total of at least 1 GiB"),
        (["--gpu", "l40s", "--gpu-memory-utilization", "0"], "--gpu-memory-utilization: found '0', expected a fraction above 0 and at most 1"),
        (["--gpu", "l40s", "--gpu-memory-utilization", "1.2"], "--gpu-memory-utilization: found '1.2'"),
        (["--gpu", "l40s", "--total-memory", "44 GiB"], "--gpu: found beside --total-memory"),
        (["--gpu", "l40s", "--pool", "5 GiB", "--engine-version", "0.10.2"], "--pool: found for vLLM 0.10.2, expected vLLM 0.11.0 or later"),
        (["--gpu-memory-utilization", "0.9"], "found without a card, expected --gpu NAME or --total-memory SIZE"),
        (["--gpu", "l40s", "--max-num-seqs", "0"], "--max-num-seqs: found 0, expected at least 1"),
        (["--gpu", "l40s", "--pp", "99"], "--pp: found 99, expected a pipeline parallel size from 1 to 64"),
    ],
)
def test_cli_bad_input_is_one_line(extra: list[str], fragment: str, capsys) -> None:
    status = cli.main(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "8192", *extra])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and fragment in err, err


def test_an_absurd_length_is_refused(capsys) -> None:
    status = cli.main(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "1000000000", "--gpu", "l40s"])
    _, err = capsys.readouterr()
    assert status == 2 and "--max-model-len: found 1000000000, expected a length from 1 to 134,217,728" in err


def test_a_spec_only_box_and_a_unified_box_are_not_sized() -> None:
    with pytest.raises(InputError, match="unified-memory"):
        predict.predict(_shape("qwen3-8b"), predict.Card("x", "GB10", 121 * GiB, "121 GiB", "s", unified=True), predict.Start())


def test_fixes_for_a_refused_start_each_pass(capsys) -> None:
    """Qwen3 8B at 131,072 on an RTX 3090 (0.26 rules): one request needs 18 GiB, the pool is 3.64 GiB.
    A shorter length (the longest that starts) passes; fp8 KV, 0.98 and fewer seqs do not, and TP 2 would
    hold the request only with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1: 131,072 is above the config's 40,960
    positions, which vLLM refuses first."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "131072", "--gpu", "rtx-3090", "--json"]
    r = _json(argv, capsys)
    assert r["verdict"] == "max_model_len" and "the derived max_model_len (40,960)" in r["verdict_reason"]
    assert [f["flags"] for f in r["fixes"]] == [f"--max-model-len {r['largest_max_model_len']}"]
    allowed = _json([*argv, "--allow-long-max-model-len"], capsys)
    assert [f["flags"] for f in allowed["fixes"]] == [f"--max-model-len {r['largest_max_model_len']}", "--tensor-parallel-size 2"]
    assert allowed["available_kv_bytes"] == r["available_kv_bytes"]
    shape = _shape("qwen3-8b")
    card = predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "rtx-3090"))
    for f in predict.fixes(shape, card, predict.Start(max_model_len=131072)):
        assert f.prediction.verdict == "starts"
        assert predict.predict(shape, card, f.start).available_kv_bytes == f.prediction.available_kv_bytes


def test_weights_larger_than_the_card() -> None:
    """Qwen2.5 32B in bf16 on an L40S-sized card: the weights alone are larger than the card. Two
    changes pass, each predicted again: its weights in fp8 as they load with the longest length
    that pool holds (one request at 32,768 tokens, 8 GiB, does not fit), or TP 2."""
    card = predict.card_from_total("44.42 GiB")
    shape, start = _shape("qwen2.5-32b"), predict.Start(max_model_len=32768)
    p = predict.predict(shape, card, start)
    assert p.verdict == "weights do not fit" and p.weights.bytes > card.total_bytes
    fp8, tp2 = predict.fixes(shape, card, start)
    assert tp2.flags == "--tensor-parallel-size 2"
    at_load = json.loads(hfconfig.quantized_at_load((ROOT / "models" / "configs" / "qwen2.5-32b" / "config.json").read_text(), "fp8", "config.json"))
    again = predict.predict(hfconfig.shape(at_load, "config.json"), card, fp8.start)
    assert fp8.flags == f"--quantization fp8 --max-model-len {again.largest_max_model_len}" and fp8.start.quantization == "fp8"
    assert again.verdict == fp8.prediction.verdict == "starts" and again.available_kv_bytes == fp8.prediction.available_kv_bytes
    assert predict.predict(hfconfig.shape(at_load, "config.json"), card, start).verdict == "max_model_len"  # fp8 alone is not enough


# --- the peer estimator ----------------------------------------------------------------------


def test_peer_comparison_says_when_the_peer_is_absent(monkeypatch, capsys) -> None:
    import peer_pool_accuracy

    monkeypatch.setitem(sys.modules, "vramcalc", None)  # import fails as when it is not installed
    assert peer_pool_accuracy.main([]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == "vramcalc: not installed, expected it beside the project to compare with (pip install vramcalc==0.1.2)\n"


def test_peer_pool_is_the_request_less_all_the_peer_counts_but_the_kv_cache(measured) -> None:
    """The pool a footprint estimator implies: total x utilization less its weights (split over TP),
    activations and overhead, for one request of max_model_len; a model it refuses has none."""
    import types

    import peer_pool_accuracy

    seen = []

    def estimate(config, mode, batch, seq_len):
        seen.append((config["model_type"], mode, batch, seq_len))
        if config["model_type"] != "llama":
            raise ValueError(f"model_type {config['model_type']!r} is not supported")
        return types.SimpleNamespace(weights=16 * GiB, activations=GiB, overhead=GiB // 2, kv_cache=5 * GiB)

    rows = peer_pool_accuracy.table(types.SimpleNamespace(estimate=estimate))
    measured_rows, _ = measured
    assert len(rows) == len(measured_rows) and seen[0] == ("llama", "inference", 1, 29000)
    first = measured_rows[0]
    assert rows[0]["peer"] == first.prediction.requested_bytes - (16 * GiB + GiB + GiB // 2)
    assert rows[0]["peer_error"] == pytest.approx((rows[0]["peer"] - first.printed_pool) / first.printed_pool)
    qwen_tp2 = next(r for r, m in zip(rows, measured_rows, strict=True) if m.log.startswith("04-"))
    assert qwen_tp2["peer"] is None and "is not supported" in qwen_tp2["peer_refused"]


def test_a_hybrid_on_a_card_holds_the_state_pages_of_its_release() -> None:
    """Qwen3.6-35B-A3B on an H100 SXM at 131,072 tokens, fp8 KV: on 0.24.0 prefix caching is off
    for a hybrid unless asked for (vllm/engine/arg_utils.py `and not model_config.is_hybrid`), so
    each of its three gated-delta groups holds one state page, not two: with blocks of 2,096
    tokens, cdiv(131,072, 2,096) = 63 attention pages + 3 = 66 a request by default, 63 + 6 = 69
    with --enable-prefix-caching, and 69 by default from 0.28.0. The pool (the vision tower's
    weights and the rope cache counted, 4 x the positions before 0.32.0, and the fused-expert workspace
    kept through the sampler's warm-up; the graph estimate at the MoE layers' growth), 98 blocks of ten
    layers' pages, is the same either way; 98 / 66 prints 1.48x, 98 / 69 1.42x."""
    from calc.engine import kvlayout

    config = json.loads((ROOT / "models" / "configs" / "qwen3.6-35b-a3b" / "config.json").read_text())
    shape = _shape("qwen3.6-35b-a3b")
    card = predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "h100-sxm"))

    def at(version: str, prefix: bool | None = None) -> predict.Prediction:
        start = predict.Start(max_model_len=131072, kv_cache_dtype="fp8", engine_version=version, prefix_caching=prefix, compile_cached=True)
        return predict.predict(shape, card, start, predict.experts_per_token(config))

    lay = kvlayout.request(shape, kvlayout.Settings(kv_cache_dtype="fp8"), 131072, kvlayout.version("0.24.0")).layout
    assert (lay.groups[0].spec.block_size, len(lay.groups), lay.group_size) == (2096, 4, 10)
    off, on, later = at("0.24.0"), at("0.24.0", True), at("0.28.0")
    assert off.available_kv_bytes == on.available_kv_bytes == later.available_kv_bytes
    assert off.available_kv_bytes // (lay.page_bytes * 10) == 98
    assert (off.max_concurrency, on.max_concurrency, later.max_concurrency) == (Fraction(98, 63 + 3), Fraction(98, 63 + 6), Fraction(98, 69))
    assert (off.kv_tokens, on.kv_tokens) == (int(Fraction(98, 66) * 131072), int(Fraction(98, 69) * 131072)) == (194622, 186160)


def test_start_excerpts_keep_their_sources() -> None:
    """Every excerpt in logs/starts/ names its public source, and the entries that measure it link
    the same address."""
    import yaml

    folder = ROOT / "logs" / "starts"
    sources = yaml.safe_load((folder / "SOURCES.yaml").read_text(encoding="utf-8"))
    assert {p.name for p in folder.glob("*.log")} == {s["file"] for s in sources}
    urls = {s["file"]: s["url"] for s in sources}
    assert all(u.startswith("https://") for u in urls.values())
    entries = yaml.safe_load((ROOT / "models" / "pool_starts.yaml").read_text(encoding="utf-8"))["starts"]
    excerpts = [e for e in entries if e["log"].startswith("../starts/")]
    assert len(excerpts) == 155  # with 333 and 334, the starts of 2026-12-04
    for e in excerpts:
        assert e["url"] == urls[e["log"].removeprefix("../starts/")], e["label"]


def test_an_entry_quoting_a_term_the_reader_misreads(measured) -> None:
    """v0.19's DEBUG snapshot prints non_torch_memory=0.51GiB (the CUDA context before loading); the
    profile's non-torch increase is the 0.25 GiB of gpu_worker.py:435, which the entry quotes and
    which wins."""
    rows, _ = measured
    row = next(r for r in rows if _key(r) == "81")
    assert row.printed_terms.non_torch == round(Fraction("0.25") * GiB)
    assert row.printed_terms.activation_peak == round(Fraction("1.89") * GiB)
    assert row.printed_terms.get("non_torch") == row.printed_terms.non_torch and row.printed_terms.weights is not None
    with pytest.raises(KeyError):
        row.printed_terms.get("pool")
    assert row.prediction.total_bytes == round(Fraction("79.19") * GiB)


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ({"printed": {"activation": "1 GiB"}}, "starts[0].printed: found {'activation': '1 GiB'}, expected a mapping of activation_peak"),
        ({"printed": {"non_torch": "lots"}}, "starts[0].printed.non_torch: found 'lots'"),
        ({"total_memory": "-3 GiB"}, "starts[0].total_memory: found '-3 GiB'"),
        ({"weights": "eight"}, "starts[0].weights: found 'eight'"),
    ],
)
def test_an_entry_with_a_bad_quote_says_which(extra: dict, fragment: str) -> None:
    from calc.catalog.loader import load_dir

    entry = {"label": "x", "log": "05-v065-llama3-8b-tabular-profile.log", "config": "llama-3.1-8b", "box": "h100-sxm",
             "engine_version": "0.6.5", "max_model_len": 8192, **extra}  # fmt: skip
    if "total_memory" in extra:  # the log's own total would win: use one that prints none
        entry.update(log="57-v091-llama31-8b-eagle-h100-quote-trailing-spaces.log", engine_version="0.9.1")
    log = (ROOT / "logs" / "public" / entry["log"]).read_text(encoding="utf-8")
    config = json.loads((ROOT / "models" / "configs" / "llama-3.1-8b" / "config.json").read_text())
    with pytest.raises(InputError) as caught:
        poolaccuracy.rows(records.pool_starts({"starts": [entry]}), {"llama-3.1-8b": config}, {entry["log"]: log}, load_dir(ROOT / "catalog").boxes, {})
    assert fragment in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_catalog_states_the_held_out_accuracy(measured) -> None:
    """The band the calculators print beside a predicted pool is the catalog's; it is the held-out
    starts' as they stand (re-run scripts/pool_accuracy.py and copy the figures when a start is added)."""
    from calc.catalog.loader import load_dir

    rows, _ = measured
    held = poolaccuracy.summary([r for r in rows if r.held_out])
    band = load_dir(ROOT / "catalog").policy["prediction"]
    assert band["held_out_median_error"].value == round(Fraction(held.median), 4)
    assert band["held_out_p90_error"].value == round(Fraction(held.p90), 4)
    assert band["held_out_starts"].value == held.starts


def test_the_command_line_states_the_held_out_band(capsys) -> None:
    """`calc model --gpu` prints beside the pool the band the calculator prints, from the catalog."""
    from calc.catalog.loader import load_dir

    band = load_dir(ROOT / "catalog").policy["prediction"]
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "8192"]
    said = _json([*argv, "--json"], capsys)["held_out_error"]
    assert (said["median"], said["p90"], said["starts"]) == (float(band["held_out_median_error"].value), float(band["held_out_p90_error"].value),
                                                              band["held_out_starts"].value)  # fmt: skip
    assert cli.main(argv) == 0
    assert f"on {said['starts']} held-out public starts the predicted pool was off by {fmt(said['median'], '%', 2)}" in capsys.readouterr().out


def test_the_verdict_prints_the_concurrency_as_the_pool_line_does(capsys) -> None:
    """Qwen3-VL 30B-A3B at TP 2 on an H100 SXM under vLLM 0.28.0, its tower whole on each rank and no
    images: 805,744 tokens at 16,384 is a concurrency of 49.1787; vLLM's line prints it to the
    nearest hundredth, 49.18x, and the verdict says the same."""
    argv = ["model", "models/configs/qwen3-vl-30b-a3b-instruct/config.json", "--max-model-len", "16384", "--gpu", "h100-sxm", "--tp", "2",
            "--mm-encoder-tp-mode", "data", "--limit-mm-per-prompt", "image=0", "--engine-version", "0.28.0", "--compile-cached"]  # fmt: skip
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "vLLM's verdict: starts (805,744 tokens, 49.18 requests of 16,384 at once)" in out
    assert "maximum concurrency 49.18x at 16,384" in out


def test_cli_says_why_the_weights_term_is_not_the_weights(capsys) -> None:
    """Gemma 3 27B on an H200: the config's weights are 51.38 GiB, the term the profile takes 51.53 GiB
    (the allocator's 2 MiB segments); the text says so beside the terms, once, and not where the two agree."""
    assert cli.main(["model", "models/configs/gemma-3-27b-it/config.json", "--gpu", "h200", "--max-model-len", "4096"]) == 0
    out = capsys.readouterr().out
    assert "Weights per rank: 51.38 GiB" in out and "  less weights 51.53 GiB," in out
    assert (
        "\n  weights 51.53 GiB as loaded, not 51.38 GiB: calc/engine/weights.py from the config; and 0.16 GiB of segments the allocator rounds up to 2 MiB"
        in out
    )
    assert cli.main(["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "4096"]) == 0
    assert "as loaded, not" not in capsys.readouterr().out


def test_cli_a_card_the_weights_overfill_prints_no_pool_not_a_negative_one(capsys) -> None:
    """Qwen3-32B on an RTX 4090 at 0.9: 21.31 GiB requested, the terms take 63.50 GiB, so the pool
    line says none and how far short, never a negative pool: the requested share less the terms as
    printed beside it, 21.31 - (61.03 + 1.45 + 0.29 + 0.72) = -42.18 (the exact terms, each rounded
    as printed; the activation term is the first start's compile block, the 1.45 GiB embedding)."""
    status = cli.main(["model", "models/configs/qwen3-32b/config.json", "--gpu", "rtx-4090", "--max-model-len", "32768", "--gpu-memory-utilization", "0.9"])
    out = capsys.readouterr().out
    assert status == 0
    assert "KV pool a rank (predicted): none, 42.18 GiB short; vLLM's verdict: weights do not fit" in out
    assert "-42.0" not in out


# --- max_model_len as vLLM takes it: none, a number with a suffix, auto -----------------------


def _config(path: str) -> dict:
    return hfconfig.load(Path(path).read_text(), path)


def test_the_derived_length_by_release() -> None:
    """vllm/config/model.py _get_and_verify_max_len: the smallest length key; a YaRN factor times
    its original_max_position_embeddings up to 0.29.x, the config's own from 0.30.0; a linear
    factor stretches it in both; Gemma 3's is not stretched."""
    assert hfconfig.derived_max_model_len(_config("models/configs/qwen3-8b/config.json"), (0, 33)).tokens == 40_960
    qwen_yarn = {**_config("models/configs/qwen3-8b/config.json"),
                 "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32_768}}  # fmt: skip
    assert hfconfig.derived_max_model_len(qwen_yarn, (0, 29)).tokens == 131_072
    assert hfconfig.derived_max_model_len(qwen_yarn, (0, 30)).tokens == 40_960
    linear = {**qwen_yarn, "rope_scaling": {"type": "linear", "factor": 2.0}}
    assert hfconfig.derived_max_model_len(linear, (0, 33)).tokens == 81_920
    assert hfconfig.derived_max_model_len({**linear, "model_type": "gemma3"}, (0, 33)).tokens == 40_960
    llama3 = {**qwen_yarn, "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192}}
    assert hfconfig.derived_max_model_len(llama3, (0, 20)).tokens == 40_960
    both = {**qwen_yarn, "rope_scaling": None, "seq_length": 8192}
    d = hfconfig.derived_max_model_len(both, (0, 33))
    assert d.tokens == 8192 and "seq_length" in d.source
    none = hfconfig.derived_max_model_len({"architectures": ["LlamaForCausalLM"]}, (0, 33))
    assert none.tokens == hfconfig.DEFAULT_MAX_LEN == 2048 and "vLLM assumes 2048" in none.source


QWEN3_8B_4090 = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--json"]


def test_no_length_is_the_models_own(capsys) -> None:
    """Without --max-model-len vLLM takes the config's 40,960 and refuses on a 4090: one request
    of 40,960 x 147,456 B is more than the pool; the report says where the length came from."""
    r = _json(QWEN3_8B_4090, capsys)
    assert r["max_model_len"] == 40_960 and r["verdict"] == "max_model_len"
    assert any(n.startswith("max_model_len 40,960: none given, the model's own, from") for n in r["notes"])


def test_auto_fits_the_length_to_the_pool(capsys) -> None:
    """--max-model-len auto (or -1) from 0.14.0: the largest length one request fits
    (_auto_fit_max_model_len), the pool and the defaults as sized at the model's own length."""
    own = _json(QWEN3_8B_4090, capsys)
    auto = _json([*QWEN3_8B_4090, "--max-model-len", "auto"], capsys)
    minus = _json([*QWEN3_8B_4090, "--max-model-len", "-1"], capsys)
    assert auto == minus
    assert auto["max_model_len"] == own["largest_max_model_len"] == 33_824 < 40_960
    assert auto["available_kv_bytes"] == own["available_kv_bytes"] and auto["verdict"] == "starts"
    assert any("reduced to 33,824, the largest the pool holds" in n for n in auto["notes"])
    whole = _json([*QWEN3_8B_4090[:-3], "--gpu", "h100-sxm", "--json", "--max-model-len", "auto"], capsys)
    assert whole["max_model_len"] == 40_960 and any("it fits whole" in n for n in whole["notes"])
    pool = _json([*QWEN3_8B_4090[:-3], "--pool", "5 GiB", "--json", "--max-model-len", "auto"], capsys)
    assert pool["max_model_len"] == pool["largest_max_model_len"] == 36_384
    # a pin beside a card: the pin is the pool, fitted the same; the card's default max_num_seqs stays (once 'found None')
    pinned = _json([*QWEN3_8B_4090, "--kv-cache-memory-bytes", "5 GiB", "--max-model-len", "auto"], capsys)
    assert pinned["max_model_len"] == 36_384 and pinned["card_pin"]["pin_bytes"] == 5 * 2**30 and pinned["card_pin"]["fits"]


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--max-model-len", "auto"], "--max-model-len: found 'auto' without a card or a pool, expected --gpu NAME"),
        (
            ["--max-model-len", "-1", "--gpu", "rtx-4090", "--engine-version", "0.13.0"],
            "found '-1' on vLLM 0.13, expected a token count (auto and -1 from 0.14.0)",
        ),
        (["--max-model-len", "1.5K"], "--max-model-len: found '1.5K', expected a whole number before K (binary), or 1.5k (decimal)"),
    ],
)
def test_a_length_vllm_would_not_take(capsys, flags: list[str], said: str) -> None:
    assert cli.main(["model", "models/configs/qwen3-8b/config.json", *flags]) == 2
    assert said in capsys.readouterr().err


def test_a_length_with_a_suffix(capsys) -> None:
    r = _json(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "32K", "--max-num-batched-tokens", "8k", "--json"], capsys)
    assert (r["max_model_len"], r["kv_bytes_per_request"]) == (32_768, 32_768 * 147_456)


def test_a_config_without_its_mtp_field_still_loads_one_mtp_layer() -> None:
    """Qwen3-Next-80B-A3B's config names no MTP layers; vLLM's Qwen3NextMTP takes
    getattr(config, "num_nextn_predict_layers", 1), so a drafted start loads one (qwen3_next_mtp.py,
    0.33.0), whose attention layer also joins the pool's groups."""
    shape = _shape("qwen3-next-80b-a3b-instruct")
    assert shape.drafter_layers == 1
    assert _shape("qwen3.6-35b-a3b").drafter_layers == 1  # mtp_num_hidden_layers, as written


def test_the_drafters_layers_load_with_the_model(capsys) -> None:
    """With --speculative-tokens the MTP layers load inside the profiler that prints 'Model loading
    took' (gpu_model_runner.py load_model, drafter.load_model, 0.20.0): the weights term grows by
    the drafter's bytes and the pool falls by as much; without it nothing is added. vLLM 0.28.0, whose
    V1 runner rounds the graphs' sizes for the drafts (Model Runner V2, every model's from 0.29.0,
    sizes its own)."""
    argv = ["model", "models/configs/qwen3.6-35b-a3b/config.json", "--gpu", "h100-sxm", "--max-model-len", "32768", "--engine-version", "0.28.0", "--json"]
    plain, mtp = _json(argv, capsys), _json([*argv, "--speculative-tokens", "3"], capsys)
    drafter = mtp["drafter_bytes_per_rank"]
    assert drafter == plain["drafter_bytes_per_rank"] > 1.5 * 2**30  # one MTP decoder layer of 256 experts, bf16
    # as loaded: each parameter of 20 MiB or more in a segment rounded up to 2 MiB (weights.allocator_rounding), the MTP layer's too
    shape = _shape("qwen3.6-35b-a3b")
    rounded, rounded_mtp = weights.allocator_rounding(shape, 1), weights.allocator_rounding(shape, 1, drafter=True)
    assert 0 < rounded <= rounded_mtp < 4 * 2**20
    assert plain["terms"]["weights"]["bytes"] == plain["weights_bytes_per_rank"] + rounded
    assert mtp["terms"]["weights"]["bytes"] == mtp["weights_bytes_per_rank"] + drafter + rounded_mtp
    assert "with the drafter's layers 1.57 GiB" in mtp["terms"]["weights"]["source"]
    # the drafts also set the graphs: a decode step of 4 tokens, every size a multiple of 4 (graph_counts)
    graphs = plain["cuda_graph_bytes"] - mtp["cuda_graph_bytes"]
    assert "PIECEWISE=49, FULL=49 (3 drafted tokens" in mtp["terms"]["cuda_graph"]["source"]
    assert plain["available_kv_bytes"] - mtp["available_kv_bytes"] == drafter + rounded_mtp - rounded - graphs
    newest = _json([*argv[:-3], "--speculative-tokens", "3", "--json"], capsys)
    assert "PIECEWISE=51, FULL=49 (3 drafted tokens: Model Runner V2's own sizes)" in newest["terms"]["cuda_graph"]["source"]


def test_nccls_nvls_buffers_only_on_nvswitch_boards() -> None:
    """From v0.11.0 the fitted non-torch term under TP is HGX H100s', where NCCL opens its NVSwitch
    paths; a card without NVSwitch multicast takes its own median, what the fitted starts on such
    cards leave (PCIe cards, A100, MI300X). One GPU is the same either way."""
    boxes = cli.load_dir(cli.CATALOG_DIR).boxes
    card = {b: predict.card_of_box(predict.find_box(boxes, b)) for b in ("h100-sxm", "h200", "b200", "h100-pcie", "rtx-3090", "a100-80gb", "amd-mi300x")}
    assert [b for b, c in card.items() if c.nvls] == ["h100-sxm", "h200", "b200"]
    assert predict.card_from_total("24 GiB").nvls  # a card known by its total alone: the larger term, on the safe side
    assert predict.non_torch(4, 1, (0, 11), nvls=False).bytes == predict.NON_TORCH_PER_RANK_TP_OTHER_BOARDS < 400 * 2**20
    assert predict.non_torch(4, 1, (0, 11), nvls=True).bytes == predict.NON_TORCH_PER_RANK_TP > 2 * 2**30
    assert predict.non_torch(1, 1, (0, 20), nvls=False) == predict.non_torch(1, 1, (0, 20), nvls=True)
    assert predict.non_torch(1, 2, (0, 20), nvls=False).bytes == predict.NON_TORCH_PER_RANK_TP_OTHER_BOARDS  # pipeline stages alike


def test_the_settings_that_fit_each_alone(capsys) -> None:
    """Qwen3-8B on an RTX 4090 at 16,000 tokens starts; the JSON says how far each setting goes with
    the others as given: the longest length one request fits (33,824, the same as the report's
    largest_max_model_len), sequences up to 1,438, where memory stops them before the batched
    tokens (the sampler's warm-up grows a row a sequence, FlashInfer's 14 B a logit in Model Runner
    V2's second pass, v0.33.0, and so does V2's sampler state, counted as consumed, 4.2 B a logit;
    the graphs stop at 512), and the lowest utilization that starts,
    0.82: at 0.81 the pool no longer holds one request of 16,000 tokens (a first start, which holds
    the compile's block, the 1.16 GiB embedding, above the profile's own peak). vLLM's free-memory check
    at start binds no lower than 0.98 on an idle 4090 (23.68 GiB less its 0.39 of CUDA context: 0.9835),
    so no upper bound is said; 3 GiB held by other processes bring it to 0.85."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "16k", "--json"]
    r = _json(argv, capsys)
    fit = r["settings_that_fit"]
    assert fit == {"max_model_len": 33_824, "max_num_seqs": 1438, "max_num_seqs_limited_by": "memory", "gpu_memory_utilization": 0.82,
                   "gpu_memory_utilization_at_most": None}  # fmt: skip
    assert fit["max_model_len"] == r["largest_max_model_len"]
    low = _json([*argv, "--gpu-memory-utilization", "0.82"], capsys)
    lower = _json([*argv, "--gpu-memory-utilization", "0.81"], capsys)
    assert (low["verdict"], lower["verdict"]) == ("starts", "max_model_len")
    assert cli.main(argv[:-1]) == 0
    assert "each alone, the rest as given: max_model_len up to 33,824; max_num_seqs up to 1,438; gpu_memory_utilization from 0.82\n" in (
        capsys.readouterr().out
    )
    held = _json([*argv, "--in-use", "3 GiB"], capsys)["settings_that_fit"]
    assert (held["gpu_memory_utilization"], held["gpu_memory_utilization_at_most"]) == (0.82, 0.85)
    # the model's own length caps it: vLLM refuses a longer one unless told to allow it
    h100 = _json([*argv[:2], "--gpu", "h100-sxm", "--max-model-len", "16k", "--json"], capsys)
    assert h100["largest_max_model_len"] > 40_960 == h100["settings_that_fit"]["max_model_len"]


def test_more_sequences_than_batched_tokens_are_refused(capsys) -> None:
    """vLLM refuses max_num_batched_tokens below max_num_seqs (vllm/config/scheduler.py, every
    release); from 0.12.0 its defaults give no more tokens than max_num_seqs x max_model_len and no
    more sequences than tokens (arg_utils.py _set_default_max_num_seqs_and_batched_tokens_args)."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "h100-sxm", "--max-model-len", "4096"]
    assert cli.main([*argv, "--max-num-seqs", "9000"]) == 2
    assert "--max-num-seqs: found 9,000 beside max_num_batched_tokens (the default) 8,192, expected at most 8,192" in capsys.readouterr().err
    short = _json(["model", "models/configs/qwen3-8b/config.json", "--gpu", "h100-sxm", "--max-model-len", "16", "--max-num-seqs", "8", "--json"], capsys)
    assert short["max_num_batched_tokens"] == 8 * 16  # the default 8,192 clamped to max_num_seqs x max_model_len
    old = _json(["model", "models/configs/qwen3-8b/config.json", "--gpu", "h100-sxm", "--max-model-len", "16", "--max-num-seqs", "8",
                 "--engine-version", "0.11.0", "--json"], capsys)  # fmt: skip
    assert old["max_num_batched_tokens"] == 8192


def test_the_fixes_keep_the_drafter_when_the_tp_changes(capsys) -> None:
    """With --speculative-tokens, a fix at a larger TP counts the drafter's layers as the start at
    that TP does: the same pool either way."""
    argv = ["model", "models/configs/qwen3.6-35b-a3b/config.json", "--speculative-tokens", "3", "--gpu", "h100-sxm", "--json"]
    fix = next(f for f in _json(argv, capsys)["fixes"] if f["flags"] == "--tensor-parallel-size 2")
    assert fix["available_kv_bytes"] == _json([*argv, "--tensor-parallel-size", "2"], capsys)["available_kv_bytes"]


def test_a_turing_card_runs_flashinfer_until_its_floor_rose() -> None:
    """A T4 (7.5): FlashInfer up to v0.23.x, the only backend there for an attention model; from v0.24.0
    FlashInfer asks 8.0 (flashinfer.py supports_compute_capability: 'broken on SM75') and Triton
    attends, capturing the full graphs FlashInfer without TRT-LLM's decode left out with drafts. The
    top-k/top-p sampler asks the same (topk_topp_sampler.py), so from v0.24.0 it warms up on Triton's
    kernel: the public T4 starts under v0.30.0 print 'FlashInfer top-p/top-k sampling unavailable:
    unsupported compute capability 7.5' and 'Using TRITON_ATTN' (logs/starts/154-...)."""
    from calc.catalog.loader import load_dir

    t4 = predict.card_of_box(load_dir(ROOT / "catalog").boxes["tesla-t4"])
    assert runs_flashinfer(t4, "auto", (0, 23)) is True
    assert runs_flashinfer(t4, "auto", (0, 24)) is False
    qwen = _shape("qwen3-8b")
    assert not predict.capture_of(qwen, t4, "auto", 2, (0, 23)).full_spec_decode
    assert predict.capture_of(qwen, t4, "auto", 2, (0, 24)).full_spec_decode
    qwen2 = _shape("qwen2.5-7b")  # on the V1 runner in both releases
    sampler = {v: predict.predict(qwen2, t4, predict.Start(max_model_len=4096, engine_version=v)).sampler.source for v in ("0.23.0", "0.24.0")}
    assert "FlashInfer" in sampler["0.23.0"] and "Triton kernel" in sampler["0.24.0"]


# --- a first start compiles inside the profile ------------------------------------------------


def test_a_first_start_holds_the_compile_block() -> None:
    """From v0.11.1 (the first release on torch 2.9) vLLM turns Inductor's combo kernels and their benchmarking on, and a first start
    compiles inside the profile: its peak is at least the embedding a rank holds (Qwen3-4B: 151,936
    rows x 2,560 x 2 B). The public Typhoon starts on an RTX 5060 Ti print a 0.71 GiB transient where
    they compiled and 0.15 GiB where they loaded the compiled graph, and 8.59 against 7.89 GiB consumed
    on v0.29.0 and v0.30.0, where a freed block stays pinned: the block counts twice there, once from
    v0.31.0, and not at all before v0.11.1, under --enforce-eager, from the cache or per stage under PP."""
    shape = _shape("qwen3-4b")
    embedding = 151_936 * 2560 * 2
    assert predict.compile_block(shape, 1, (0, 29)).bytes == embedding == 777_912_320
    assert predict.compile_block(shape, 2, (0, 28)).bytes == 75_968 * 2560 * 2  # the vocabulary split over the ranks
    # from v0.29.0 an embedding split over ranks on a CUDA card gathers with vLLM's fused op, not an Inductor kernel
    assert predict.compile_block(shape, 2, (0, 29)).bytes == 0 < predict.compile_block(shape, 2, (0, 29), vendor="amd").bytes
    # v0.11.1's wheel requires torch 2.9.0 and sets combo_kernels for it (vllm/config/compilation.py); v0.11.0's, torch 2.8.0
    assert predict.compile_block(shape, 1, (0, 11)).bytes == predict.compile_block(shape, 1, (0, 11, 0)).bytes == 0
    assert predict.compile_block(shape, 1, (0, 11, 1)).bytes == predict.compile_block(shape, 1, (0, 12)).bytes == embedding
    assert predict.compile_block(shape, 1, (0, 29), compiled=False).bytes == 0
    assert predict.compile_block(shape, 1, (0, 29), pp=2).bytes == 0
    assert [predict.pinned_block(r) for r in ((0, 26), (0, 27), (0, 30), (0, 31))] == [False, True, True, False]
    card = predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "rtx-5060-ti"))

    def at(version: str, **kw: object) -> predict.Prediction:
        start = predict.Start(max_model_len=8192, utilization=Fraction(7, 10), engine_version=version, **kw)  # type: ignore[arg-type]
        return predict.predict(shape, card, start)

    cached, cold, later, eager = at("0.30.0", compile_cached=True), at("0.30.0"), at("0.31.0"), at("0.31.0", enforce_eager=True)
    own = max(cached.forward.bytes, cached.sampler.bytes + cached.residual_bytes)
    assert cached.activation.bytes == own < 0.2 * GiB and cached.compile.bytes == 0
    assert cold.activation.bytes == 2 * embedding and later.activation.bytes == embedding  # pinned up to v0.30.x
    assert cold.available_kv_bytes == cached.available_kv_bytes - 2 * embedding + own
    assert eager.compile.bytes == 0 and eager.activation.bytes < 0.2 * GiB
    assert "combo kernels" in later.activation.source


def test_the_cli_takes_a_cached_compile(capsys) -> None:
    """--compile-cached: the compiled graph loaded from vLLM's cache, so the JSON's compile block is 0
    and the pool larger by what the block held above the profile's own peak; without a card it is
    refused with the other flags that need one."""
    argv = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "16384", "--json"]
    first, again = _json(argv, capsys), _json([*argv, "--compile-cached"], capsys)
    assert first["compile_block_bytes"] == first["activation_peak_bytes"] == 151_936 * 4096 * 2
    assert again["compile_block_bytes"] == 0 and again["activation_peak_bytes"] < first["activation_peak_bytes"]
    assert again["available_kv_bytes"] - first["available_kv_bytes"] == first["activation_peak_bytes"] - again["activation_peak_bytes"]
    assert cli.main(["model", "models/configs/qwen3-8b/config.json", "--max-model-len", "16384", "--compile-cached"]) == 2
    assert "--compile-cached: found without a card" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("line", "cached"),
    [
        ("INFO [decorators.py:313] Directly load AOT compilation from path /root/.cache/vllm/torch_compile_cache/x", True),
        ("INFO [monitor.py:53] torch.compile took 0.54 s in total", True),
        ("INFO [core.py:348] init engine (profile, create kv cache, warmup model) took 4.68 s (compilation: 0.11 s)", True),
        ("INFO [backends.py:393] Compiling a graph for compile range (1, 2048) takes 16.63 s", False),
        ("INFO [monitor.py:53] torch.compile took 27.73 s in total", False),
        ("INFO [core.py:306] init engine (profile, create kv cache, warmup model) took 21.00 s (compilation: 12.33 s)", False),
        ("INFO [gpu_worker.py:480] Available KV cache memory: 6.51 GiB", False),  # says nothing: a first start's
        ("INFO [monitor.py:53] torch.compile took . s in total", False),  # no time read: a first start's, not a ValueError
    ],
)
def test_a_log_says_whether_it_compiled(line: str, cached: bool) -> None:
    assert poolaccuracy.compile_cached(line) is cached


def test_a_log_says_whether_it_ran_eager(measured) -> None:
    """--enforce-eager as the 48 GB RTX 4090 lab's v0.29.0 logs state it (logs/starts/196-...): its arguments
    line, or the engine's configuration line; the same lab's compiled starts say False, and a log that says
    neither ran with graphs."""
    eager = (ROOT / "logs/starts/196-v0290-qwen3-8b-rtx4090-48gb-eager-vllm-lab.log").read_text()
    compiled = (ROOT / "logs/starts/194-v0290-qwen3-8b-rtx4090-48gb-v2-runner-vllm-lab.log").read_text()
    assert poolaccuracy.enforce_eager(eager) and not poolaccuracy.enforce_eager(compiled)
    assert poolaccuracy.enforce_eager(
        "[core.py:123] Initializing a V1 LLM engine (v0.29.0) with config: quantization=None, enforce_eager=True, kv_cache_dtype=auto"
    )
    assert not poolaccuracy.enforce_eager("[core.py:123] Initializing a V1 LLM engine (v0.29.0) with config: enforce_eager=False, kv_cache_dtype=auto")
    rows = {_key(r): r for r in measured[0]}
    assert rows["196"].prediction.cuda_graph.bytes == 0 and rows["196"].prediction.compile.bytes == 0


def test_the_load_rounds_each_large_parameter_to_2_mib() -> None:
    """From v0.21.0 vLLM loads the model with max_split_size_mb at 20 (gpu_worker.py load_model), so
    each parameter of 20 MiB or more holds its own segment, a multiple of 2 MiB, and 'Model loading
    took' counts it. Qwen2.5-1.5B (fp16): the embedding, 151,936 x 1,536 x 2 B, 0.875 MiB short of a
    multiple, and in each of 28 layers the fused gate_up_proj (1.5 MiB short) and down_proj (1.75);
    qkv_proj and o_proj are under 20 MiB. The public starts under v0.30.0 and v0.31.0 print 2.98 GiB
    for its 2.883 GiB of weights. Llama 3.1 8B's parameters are whole multiples: nothing."""
    qwen = _shape("qwen2-1.5b-instruct")
    assert weights.allocator_rounding(qwen, 1) == 917_504 + 28 * (1_572_864 + 1_835_008)
    # within 0.01 GiB of the printed 2.98 (smaller blocks carved from 20 MiB segments leave a few MiB more, not modeled)
    assert abs(weights.per_rank(qwen, 1).model + weights.allocator_rounding(qwen, 1) - 2.98 * GiB) < 0.01 * GiB
    assert weights.allocator_rounding(_shape("llama-3.1-8b"), 1) == 0
    card = predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "a100-40gb"))
    before, after = (predict.predict(qwen, card, predict.Start(max_model_len=4096, engine_version=v)).weights for v in ("0.20.0", "0.21.0"))
    assert after.bytes - before.bytes == weights.allocator_rounding(qwen, 1) and "max_split_size_mb 20" in after.source
    printed = predict.Given(3 * GiB, "a log's loading line", rounding=False)  # a printed figure holds it already
    assert predict.predict(qwen, card, predict.Start(max_model_len=4096, engine_version="0.21.0"), given=printed).weights.bytes == 3 * GiB


def test_each_printed_term_beside_the_prediction(measured) -> None:
    """The KV page's table of the terms the logs print: each compared as the release composes it. From
    v0.27.1 the printed peak is the transient and the graph estimate together (the T4 start of v0.30.0
    prints 0.46 GiB: 0.12 of transient, 0.34 of graphs), less the compile's block pinned as consumed up
    to v0.30.x; the graph estimate only from v0.20.0, where it comes off the pool."""
    rows, _ = measured
    t4 = next(r for r in rows if r.log.endswith("154-v0300-qwen25-15b-fp16-tesla-t4-llm-lab.log"))
    p = t4.prediction
    assert p.compile.bytes == 0 and poolaccuracy.predicted_term(t4, "activation_peak") == p.activation.bytes + p.cuda_graph.bytes
    assert abs(poolaccuracy.predicted_term(t4, "activation_peak") - t4.printed_terms.activation_peak) < 0.02 * GiB
    typhoon = next(r for r in rows if r.log.endswith("147-v0290-typhoon25-qwen3-4b-rtx5060ti-wsl2-prp.log"))
    pinned = typhoon.prediction.compile.bytes
    assert poolaccuracy.predicted_term(typhoon, "activation_peak") == typhoon.prediction.activation.bytes - pinned + typhoon.prediction.cuda_graph.bytes
    old = next(r for r in rows if r.release < (0, 20) and r.printed_terms.cuda_graph is not None)
    assert poolaccuracy.predicted_term(old, "cuda_graph") is None
    table = {(t.term, t.era): t for t in poolaccuracy.term_errors(rows)}
    graphs = table[("cuda_graph", "")]
    # the 0.22.1 H100 start of Qwen3-30B-A3B in fp8 (entry 209) estimates 0.32 GiB of graphs where its log prints 0.14,
    # Qwen3-8B's reranker on an RTX PRO 6000 (entries 123 and 124) 0.71 where theirs print 0.34, the AWQ start on an
    # RTX 3090 (entry 130) 0.11 where its log prints 0.35, and under TP 2 on two RTX 4090 without peer-to-peer (entry
    # 308) 0.79 where its log prints 1.27; the median is 0.03 GiB (0.08 while the first capture was a 512-token
    # graph's for every capture list and Model Runner V2's first capture the V1 runner's)
    assert graphs.starts == 25 and graphs.median < 0.035 * GiB and ("cuda_graph", poolaccuracy.ERAS[1]) not in table  # 334 the 25th
    peak = table[("activation_peak", poolaccuracy.ERAS[1])]
    assert peak.starts == 49 and peak.median < 0.03 * GiB and peak.median_relative < Fraction(2, 100)
    assert table[("weights", "")].median < 0.02 * GiB


def test_fp8_weights_only_where_the_card_takes_them(capsys) -> None:
    """Fp8Config asks compute capability 8.0 up to v0.13.x and 7.5 from v0.14.0 (quantization/fp8.py
    get_min_capability): on a T4 --quantization fp8 is refused under 0.10.2 and sized under 0.20.0, and
    a refused start there is offered fp8 weights only where they run; a V100 never takes them."""
    argv = ["model", "models/configs/qwen2.5-7b/config.json", "--gpu", "tesla-t4", "--max-model-len", "32768", "--json"]
    assert cli.main([*argv, "--engine-version", "0.10.2", "--quantization", "fp8"]) == 2
    err = capsys.readouterr().err
    assert "--gpu: NVIDIA Tesla T4 for --quantization fp8: found a compute capability 7.5 card; vLLM 0.10's fp8 asks compute capability 8.0" in err
    assert err.rstrip().endswith("expected --engine-version 0.14.0 or later, or a card of 8.0 or more")
    assert _json([*argv, "--engine-version", "0.20.0", "--quantization", "fp8"], capsys)["available_kv_bytes"] > 0
    old, new = _json([*argv, "--engine-version", "0.10.2"], capsys), _json([*argv, "--engine-version", "0.20.0"], capsys)
    assert old["verdict"] == new["verdict"] == "no KV memory"
    assert not [f for f in old["fixes"] if "--quantization fp8" in f["flags"]]
    assert [f for f in new["fixes"] if f["flags"].startswith("--quantization fp8")]
    assert predict.fp8_refused("NVIDIA Tesla V100-SXM2-16GB", (0, 33)) and predict.fp8_refused("NVIDIA H100", (0, 8)) is None


def test_read_as_reads_an_unknown_class_at_the_readers_word(tmp_path, capsys) -> None:
    """A fine-tune's config naming a class calc does not read is refused with the flag that reads it;
    --read-as LlamaForCausalLM gives Llama 3.1 8B's own figures and says it was read so at the
    reader's word; a class calc does not read is no --read-as."""
    llama = json.loads((ROOT / "models" / "configs" / "llama-3.1-8b" / "config.json").read_text())
    tuned = tmp_path / "config.json"
    tuned.write_text(json.dumps({**llama, "architectures": ["MyTunedLlamaForCausalLM"]}))
    argv = ["model", str(tuned), "--gpu", "h100-sxm", "--max-model-len", "8192", "--json"]
    assert cli.main(argv) == 2
    assert "found 'MyTunedLlamaForCausalLM'" in (err := capsys.readouterr().err) and "; or --read-as CLASS" in err
    read = _json([*argv, "--read-as", "LlamaForCausalLM"], capsys)
    own = _json(["model", "models/configs/llama-3.1-8b/config.json", "--gpu", "h100-sxm", "--max-model-len", "8192", "--json"], capsys)
    assert (read["weights_bytes_per_rank"], read["kv_bytes_per_token"], read["available_kv_bytes"]) == (
        own["weights_bytes_per_rank"], own["kv_bytes_per_token"], own["available_kv_bytes"])  # fmt: skip
    assert [n for n in read["notes"] if "'MyTunedLlamaForCausalLM' read as LlamaForCausalLM at your word (--read-as)" in n]
    assert cli.main([*argv, "--read-as", "FooForCausalLM"]) == 2
    assert "--read-as: found 'FooForCausalLM', expected a model class calc reads" in capsys.readouterr().err
    assert cli.main([*argv, "--read-as", "llamaforcausallm"]) == 2
    assert capsys.readouterr().err.rstrip().endswith("expected a model class calc reads, such as LlamaForCausalLM")
    own_argv = ["model", "models/configs/llama-3.1-8b/config.json", "--max-model-len", "8192", "--read-as", "Qwen2ForCausalLM"]
    assert cli.main(own_argv) == 2  # a class calc reads is read as vLLM builds it, not as another
    assert "which calc reads as vLLM builds it: expected no --read-as" in capsys.readouterr().err


def test_the_one_request_check_holds_back_the_null_block(capsys) -> None:
    """From v0.29.0 vLLM checks one request of max_model_len against the pool less the null block its
    BlockPool keeps (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory, 0.31.0): a length
    whose request alone fits but not beside that block is refused, so the verdict, the largest length
    and the settings that fit agree. Llama 3.1 70B under TP 2 on A100 80GB cards, the release's defaults."""
    argv = ["model", "models/configs/llama-3.1-70b-japanese-instruct-2407/config.json", "--gpu", "a100-80gb", "--tp", "2", "--json"]
    longest = _json([*argv, "--max-model-len", "128k"], capsys)["largest_max_model_len"]
    fits = _json([*argv, "--max-model-len", str(longest)], capsys)
    over = _json([*argv, "--max-model-len", str(longest + 16)], capsys)
    assert (fits["verdict"], over["verdict"]) == ("starts", "max_model_len")
    assert fits["available_kv_bytes"] == over["available_kv_bytes"]
    assert over["kv_bytes_per_request"] <= over["available_kv_bytes"] < over["kv_bytes_per_request"] + over["null_block_bytes"]
    assert fits["settings_that_fit"]["max_model_len"] == longest


def test_the_tower_and_its_profile_on_each_pipeline_stage() -> None:
    """Qwen3-VL 8B over three pipeline stages: the V1 model runner (v0.20.0) builds the vision tower,
    with its deepstack buffers, and profiles the encoder on every stage (gpu_model_runner.py
    profile_run has no stage check), so the middle stage's peak is the encoder's forward and its
    weights hold the buffers as the first's do; Model Runner V2 profiles the encoder on the first stage
    alone from v0.28.0 (gpu/model_runner.py), and from v0.33.0 builds the tower there alone
    (interfaces.py _mark_tower_model)."""
    shape, card = _shape("qwen3-vl-8b-instruct"), predict.card_of_box(predict.find_box(cli.load_dir(cli.CATALOG_DIR).boxes, "rtx-4090"))
    stages = {
        v: predict.predict(shape, card, predict.Start(max_model_len=4096, engine_version=v, pp=3)).stages for v in ("0.20.0", "0.31.0", "0.32.0", "0.33.0")
    }
    whole = predict.predict(shape, card, predict.Start(max_model_len=4096, engine_version="0.20.0"))
    first, middle, last = stages["0.20.0"]
    assert first.activation_bytes == middle.activation_bytes > 1 * GiB  # the encoder's forward on both
    assert last.activation_bytes == whole.activation.bytes
    v2_31, v2_33 = stages["0.31.0"], stages["0.33.0"]
    assert v2_31[1].activation_bytes < 0.5 * GiB and v2_31[0].activation_bytes > 1 * GiB  # the forward pass alone after the first
    assert v2_31[2].activation_bytes < whole.activation.bytes
    tokens = 2048  # the release's default batch on a 24 GiB card
    stack = 3 * tokens * shape.hidden * shape.dtype_bytes  # three deepstack mergers
    assert multimodal.deepstack_buffers(shape, tokens) == stack
    # the buffers go with the tower: v0.32.0 builds both on the middle stage, v0.33.0 neither
    v2_32 = stages["0.32.0"]
    tower = weights.per_rank(shape, 1).model - weights.per_rank(replace(shape, tower=None), 1).model
    assert v2_32[1].weights_bytes - v2_33[1].weights_bytes == stack + tower
    assert v2_32[0].weights_bytes == v2_33[0].weights_bytes


def test_the_command_line_counts_the_tower_on_the_stages_the_pool_does(capsys) -> None:
    """Qwen3-VL 8B over two pipeline stages on an RTX 4090: from v0.33.0 Model Runner V2 builds the
    vision tower on the first stage alone (interfaces.py _mark_tower_model), so the second stage's
    printed weights and the pool the command line predicts from them hold no tower; v0.32.0 builds
    it on both, and the second stage's weights are the tower's more."""
    shape = _shape("qwen3-vl-8b-instruct")
    tower = weights.per_rank(shape, 1).model - weights.per_rank(replace(shape, tower=None), 1).model
    out = {}
    for v in ("0.32.0", "0.33.0"):
        argv = ["model", "models/configs/qwen3-vl-8b-instruct/config.json", "--gpu", "rtx-4090", "--pp", "2", "--max-model-len", "8192"]
        assert cli.main([*argv, "--engine-version", v, "--json"]) == 0
        out[v] = json.loads(capsys.readouterr().out)
    second = {v: d["ranks"][1] for v, d in out.items()}
    assert shape.tower is not None and shape.tower.name not in second["0.33.0"]["holds"]
    assert shape.tower.name in second["0.32.0"]["holds"]
    assert second["0.32.0"]["weights_bytes"] - second["0.33.0"]["weights_bytes"] == tower
    d = out["0.33.0"]  # the second stage's pool is the request less its own printed terms
    rank = d["ranks"][1]
    spent = rank["weights_bytes"] + rank["activation_peak_bytes"] + rank["cuda_graph_bytes"] + rank["non_torch_bytes"]
    assert rank["available_kv_bytes"] == d["requested_bytes"] - spent


def test_model_runner_v2_builds_its_sampler_state_on_the_last_stage(capsys) -> None:
    """Qwen2 0.5B over two pipeline stages on an H100 under v0.33.0: Model Runner V2 builds its sampler
    (gpu/model_runner.py load_model, on the last pipeline rank alone) after the weights are measured,
    and from v0.27.0 vLLM counts it as consumed: 1,024 requests x (151,936 + 4,748 + 4,748) int32
    words, 661,225,472 B, in the second stage's non-torch memory and not in the first's."""
    argv = ["model", "models/configs/qwen2-0.5b-instruct/config.json", "--gpu", "h100-sxm", "--pp", "2", "--max-model-len", "8192",
            "--engine-version", "0.33.0", "--json"]  # fmt: skip
    assert cli.main(argv) == 0
    d = json.loads(capsys.readouterr().out)
    first, second = d["ranks"]
    assert second["non_torch_bytes"] - first["non_torch_bytes"] == 1024 * (151_936 + 4_748 + 4_748) * 4 == 661_225_472
    for r in (first, second):
        spent = r["weights_bytes"] + r["activation_peak_bytes"] + r["cuda_graph_bytes"] + r["non_torch_bytes"]
        assert r["available_kv_bytes"] == d["requested_bytes"] - spent


def test_v0_34_measures_the_pool_after_warmup(capsys) -> None:
    """vLLM 0.34.0 sizes the pool from memory measured after warmup by default (extensible_kv_cache.py
    measure_kv_cache_bytes): utilization 1.0 unless set; the terms come off min(requested, free at
    start less max(1 GiB, 0.75 x the peak kept)), the peak kept being the activation peak and the graph
    estimate, which so comes off twice; 'Available KV cache memory' prints the range reserved, the
    requested share less the profile's terms. Qwen3-8B on an RTX 4090: 23.68 GiB requested, 23.29 GiB
    free at start (the 4090's 0.39 GiB of CUDA context), a 1.18 GiB margin, a pool of 4.56 GiB where
    0.33.0's estimate leaves 4.65 GiB at 0.92; no held-out band is claimed for it."""
    base = ["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "16000", "--json"]
    r = _json([*base, "--engine-version", "0.34.0"], capsys)
    t = {name: term["bytes"] for name, term in r["terms"].items()}
    assert r["extensible_kv_cache"] is True and r["gpu_memory_utilization"] == 1.0 and r["requested_bytes"] == r["total_memory_bytes"]
    kept = t["activation_peak"] + t["cuda_graph"]
    assert t["graph_estimate_kept"] == t["cuda_graph"] > 0
    assert r["margin_bytes"] == max(GiB, kept * 3 // 4)
    assert r["budget_bytes"] == min(r["requested_bytes"], r["free_at_start_bytes"] - r["margin_bytes"])
    assert r["available_kv_bytes"] == r["budget_bytes"] - t["weights"] - t["activation_peak"] - t["non_torch"] - 2 * t["cuda_graph"]
    assert r["reserved_kv_bytes"] == r["requested_bytes"] - t["weights"] - t["activation_peak"] - t["non_torch"] - t["cuda_graph"]
    assert round(r["available_kv_bytes"] / GiB, 2) == 4.56 and round(r["free_at_start_bytes"] / GiB, 2) == 23.29
    assert r["held_out_error"] is None and any(n.startswith("vLLM 0.34.0 sizes the pool from the memory it measures after warmup") for n in r["notes"])
    # no free-memory check: the utilizations tried go up to 1.0, and no fix offers a lower one than the default 1.0
    assert r["settings_that_fit"]["gpu_memory_utilization"] == 0.84 and not any("gpu_memory_utilization" in f["flags"] for f in r["fixes"])
    # off, the estimate path: 0.33.0's pool, at 0.92, with its band
    off = _json([*base, "--engine-version", "0.34.0", "--no-enable-extensible-kv-cache"], capsys)
    old = _json([*base, "--engine-version", "0.33.0"], capsys)
    assert off["extensible_kv_cache"] is False and off["budget_bytes"] == off["requested_bytes"] and off["reserved_kv_bytes"] is None
    assert off["available_kv_bytes"] == old["available_kv_bytes"] and round(old["available_kv_bytes"] / GiB, 2) == 4.65
    assert off["held_out_error"] is not None and "graph_estimate_kept" not in off["terms"]
    # on ROCm the margin's floor is 3 GiB (KV_CACHE_MARGIN_FLOOR_BYTES), and the budget's source says so
    amd = _json(
        ["model", "models/configs/qwen2.5-14b/config.json", "--gpu", "amd-mi300x", "--max-model-len", "16000", "--engine-version", "0.34.0", "--json"], capsys
    )
    assert amd["margin_bytes"] == 3 * GiB and amd["budget_bytes"] == amd["free_at_start_bytes"] - 3 * GiB
    from calc.engine.predict import extensible

    said = extensible.budget(amd["requested_bytes"], amd["free_at_start_bytes"], GiB, "amd").source
    assert "a margin of max(3 GiB, 0.75 x the peak kept free), here free memory at start less the margin" in said
    # 0.34.0's default block, 64 tokens (CacheConfig.DEFAULT_BLOCK_SIZE), 16 before: the tokens a multiple of 64
    assert (r["block_size"], off["block_size"], old["block_size"]) == (64, 64, 16) and r["kv_tokens"] % 64 == 0
    # the request is a cap, not checked against free memory: 1 GiB held by others leaves a smaller budget, not a refusal
    held = _json([*base, "--engine-version", "0.34.0", "--in-use", "1 GiB"], capsys)
    assert held["verdict"] == "starts" and held["budget_bytes"] == held["free_at_start_bytes"] - held["margin_bytes"]
    assert held["available_kv_bytes"] == r["available_kv_bytes"] - GiB
    assert _json([*base, "--engine-version", "0.33.0", "--in-use", "1 GiB", "--gpu-memory-utilization", "0.99"], capsys)["verdict"] == "free memory"


def test_v0_34_text_adds_up_from_the_budget(capsys) -> None:
    """The text names the budget measured after warmup and the reservation 'Available KV cache memory'
    prints, and the pool it prints is the budget less the terms as printed."""
    assert cli.main(["model", "models/configs/qwen3-8b/config.json", "--gpu", "rtx-4090", "--max-model-len", "16000", "--engine-version", "0.34.0"]) == 0
    out = capsys.readouterr().out
    assert "x utilization 1.0 = 23.68 GiB requested" in out
    assert ("measured after warmup (the extensible KV cache, vLLM 0.34.0's default): the terms come off 22.11 GiB, the smaller of the 23.68 GiB "
            "requested and the 23.29 GiB free at start less a 1.18 GiB margin; 'Available KV cache memory' prints 6.54 GiB") in out  # fmt: skip
    assert "less weights 15.27 GiB, activation_peak 1.16 GiB, non_torch 0.29 GiB, cuda_graph 0.41 GiB, graph_estimate_kept 0.41 GiB" in out
    assert "KV pool a rank (predicted): 4.57 GiB (as the printed terms add up; 4.56 GiB from the exact bytes)" in out  # 22.11 - 17.54
    assert "held-out public starts" not in out
    assert cli.main(["model", "models/configs/qwen3-32b/config.json", "--gpu", "l40s", "--max-model-len", "40000", "--engine-version", "0.34.0"]) == 0
    assert "no gpu_memory_utilization up to 1.00 starts" in capsys.readouterr().out
