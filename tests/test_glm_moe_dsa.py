"""GLM-5 and GLM-5.1 (GlmMoeDsaForCausalLM), which vLLM builds as DeepSeek V3.2: MLA layers, each with a
lightning indexer and its own cache of one key a token; the parameter count against the published total,
the KV cache a token by release, the weights a rank holds, the release window and the command line.

No copy of zai-org/GLM-5's config.json was found at a citable address. The fixture
(tests/data/configs/glm-5.1) is zai-org/GLM-5.1's, the same architecture, as a public model report quotes
it whole under "原始 config.json" (code index file 62604838642, repository not named; read from a local copy
of the checkpoint). The same report sums the checkpoint's 59,870 tensors to 753,864,139,008 values,
which the count below meets exactly. The class is unchecked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_missing_field_refused, cli_json, config_path, config_refusal, config_shape, config_text, parameters

from calc.checks import modeled
from calc.engine import hfconfig, kvlayout, weights
from calc.engine.predict import release
from calc.units import InputError

GLM = "glm-5.1"
H, V = 6144, 154880
# q_a and its norm, q_b (64 heads x 256), kv_a and its norm, kv_b (64 heads x (192 + 256)), o
MLA = 2048 * H + 2048 + 64 * 256 * 2048 + 576 * H + 512 + 64 * (192 + 256) * 512 + H * 64 * 256
INDEXER = 32 * 128 * 2048 + (128 + 32) * H + 2 * 128  # wq_b, wk and weights_proj (fused), k_norm's weight and bias
EXPERT = 3 * 2048 * H
MOE = 256 * H + 256 + 256 * EXPERT + EXPERT  # the router and its float32 correction bias, 256 experts, one shared
MAIN = 2 * V * H + H + 78 * (MLA + INDEXER + 2 * H) + 3 * 3 * 12288 * H + 75 * MOE  # three dense layers of 12,288
MTP_CHECKPOINT = MLA + INDEXER + 2 * H + MOE + 2 * H * H + 3 * H  # the MTP layer, eh_proj, enorm, hnorm, shared_head.norm


def test_glm5_meets_its_published_size() -> None:
    """744B parameters, 40B active (zai-org/GLM-5's model card and README). Counted as deepseek_v2.py
    builds them: 743,911,218,432. With the checkpoint's MTP layer (layer 78: a decoder layer, eh_proj,
    enorm, hnorm and shared_head.norm, no embedding or head of its own), 753,864,139,008, the report's sum.
    vLLM's MTP drafter builds its own embedding and head besides (deepseek_mtp.py). Active: all but 248 of
    the 256 routed experts in each of the 75 MoE layers, 41.78B, 39.88B without the embedding and head."""
    s = config_shape(GLM)
    assert (s.layers.count(hfconfig.MLA), s.drafter_layers, s.indexer) == (78, 1, hfconfig.Indexer(heads=32, head_dim=128, q_lora_rank=2048))
    assert s.routing_bias and not s.router_fp32  # GateLinear keeps the model's dtype; only its logits are float32 (0.25.0 on)
    assert parameters(s, drafter=False) == MAIN == 743_911_218_432 and round(MAIN / 1e9) == 744
    assert MAIN + MTP_CHECKPOINT == 753_864_139_008
    assert parameters(s, drafter=True) == MTP_CHECKPOINT + 2 * V * H
    active = MAIN - 75 * 248 * EXPERT
    assert round((active - 2 * V * H) / 1e9) == 40
    assert hfconfig.unchecked_note("GlmMoeDsaForCausalLM")


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_glm5_weights_a_rank_holds(tp: int) -> None:
    """MLA's 64 heads divide over the ranks (q_b, kv_b and o), the indexer is whole on every rank, and the
    report's weights are the tensors' bytes a rank holds."""
    s = config_shape(GLM)
    by = {t.path: t for t in weights.tensors(s, tp)}
    p = "model.layers.0.self_attn."
    assert by[p + "q_b_proj"].rows == 64 // tp * 256
    assert (by[p + "indexer.wq_b"].rows, by[p + "indexer.wq_b"].cols) == (32 * 128, 2048)
    assert by["model.layers.78.self_attn.indexer.wq_b"].drafter
    r = modeled.model_report(modeled.ModelInputs(config_text(GLM), GLM, tp=tp, max_model_len=32768))
    assert r.weights_bytes_per_rank == weights.per_rank(s, tp).model
    assert hfconfig.INDEXER_NOTE in r.notes


def test_glm5_kv_by_release() -> None:
    """A layer's token: the MLA latent (512 + 64) and the indexer's key (128 fp8 values and a float32
    scale, 132 B), one group of 78 layers, block 64, not divided by the ranks. From 0.19.0 auto keeps
    bf16: (1,152 + 132) x 78 = 100,152 B; fp8 is fp8_ds_mla, (656 + 132) x 78 = 61,464 B. 0.16.0 to 0.18.0
    register the class, but how they store the sparse MLA cache was not read."""
    s = config_shape(GLM)
    for version, kv, token in (("0.19.0", "auto", 1152 + 132), (None, "auto", 1152 + 132), ("0.26.0", "fp8", 656 + 132)):
        for tp in (1, 8):
            r = kvlayout.request(s, kvlayout.Settings(tp=tp, kv_cache_dtype=kv), 202752, kvlayout.version(version))
            assert r.bytes_per_token == 78 * token, (version, kv)
            assert (len(r.layout.groups), r.layout.group_size, r.layout.min_block_size) == (1, 78, 64)
            assert r.bytes_per_request == 202752 // 64 * 78 * 64 * token
    assert kvlayout.request(s, kvlayout.Settings(speculative_tokens=1), 8192, kvlayout.version(None)).bytes_per_token == 79 * 1284
    with pytest.raises(ValueError, match="--engine-version: found 0.16.0, expected 0.11.x to 0.13.x or 0.19.0 and later: .* was not read"):
        kvlayout.request(s, kvlayout.Settings(), 8192, kvlayout.version("0.16.0"))


def test_the_registry_window() -> None:
    """vllm/model_executor/models/registry.py: GlmMoeDsaForCausalLM from 0.16.0 (not in 0.15.0) to 0.33.0."""
    arch = "GlmMoeDsaForCausalLM"
    assert hfconfig.outside_own_code(arch, release("0.16.0")) is None and hfconfig.outside_own_code(arch, release(None)) is None
    with pytest.raises(InputError, match=r"0.15.0 does not register GlmMoeDsaForCausalLM .* expected --engine-version 0.16 or later"):
        modeled.model_report(modeled.ModelInputs(config_text(GLM), GLM, max_model_len=4096, engine_version="0.15.0"))


BAD = [
    ({"index_topk_freq": 4}, "index_topk_freq: found 4, expected absent or 1"),
    ({"q_lora_rank": None}, "q_lora_rank: found None, expected a whole number"),
    ({"index_head_dim": None}, "index_head_dim: found nothing"),
]


@pytest.mark.parametrize(("change", "message"), BAD, ids=[next(iter(c)) for c, _ in BAD])
def test_bad_input_is_one_line_naming_the_field(change: dict, message: str) -> None:
    assert message in config_refusal(GLM, change)


def test_a_missing_field_on_the_command_line(tmp_path: Path) -> None:
    assert_missing_field_refused(json.loads(config_text(GLM)), "index_n_heads", tmp_path, "--tp", "8")


@pytest.mark.parametrize("args", [["--tp", "8", "--max-model-len", "auto"], ["--tp", "4", "--pp", "2", "--kv-cache-dtype", "fp8", "--max-model-len", "65536"]])
def test_the_command_line_predicts_a_pool(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    out = cli_json(["model", str(config_path(GLM)), *args, "--gpu", "h200", "--json"], capsys)
    assert out["architecture"] == "GlmMoeDsaForCausalLM" and out["layers"] == "78 mla"
    assert out["verdict"] and out["kv_bytes_per_token"] > 0


def test_the_blackwell_fp8_default_is_said(capsys: pytest.CaptureFixture[str]) -> None:
    """From 0.32.0 vLLM turns --kv-cache-dtype auto into fp8_e4m3 for this class on compute capability 10.x
    (config.py GlmMoeDsaForCausalLM.verify_and_update_config; 0.29.0 to 0.31.0 set only the DCP defaults):
    the prediction says so on a B200, not on an H200 nor before 0.32.0."""

    def notes(gpu: str, version: str | None = None) -> list[str]:
        extra = ["--engine-version", version] if version else []
        out = cli_json(["model", str(config_path(GLM)), "--tp", "8", "--max-model-len", "32768", "--gpu", gpu, *extra, "--json"], capsys)
        return [n for n in out["notes"] if "fp8_e4m3" in n]

    assert len(notes("b200")) == 1 and "from 0.32.0" in notes("b200")[0]
    assert notes("h200") == [] and notes("b200", "0.31.0") == []
