"""EXAONE 3, Nemotron, ChatGLM, DeepSeek-MoE V1 and MiniCPM each on an H100 from the command line:
pipeline stages of half the layers each, and a pool predicted at TP 1, TP 2 with fp8 KV, and TP 2 x PP 2."""

from __future__ import annotations

import pytest
from conftest import config_text, predicted_on_h100

from calc.checks import modeled
from calc.engine import ranks

# config, class, layers, KV heads a rank at TP 2, head size, max_model_len
CLASSES = [
    ("exaone-3.0-7.8b-instruct", "ExaoneForCausalLM", 32, 4, 128, 4096),
    ("nemotron-mini-4b-instruct", "NemotronForCausalLM", 32, 4, 128, 4096),
    ("glm-4-9b-chat", "ChatGLMModel", 40, 1, 128, 8192),
    ("deepseek-moe-16b-chat", "DeepseekForCausalLM", 28, 8, 128, 4096),
    ("minicpm-2b-sft-fp32", "MiniCPMForCausalLM", 40, 18, 64, 2048),
]


@pytest.mark.parametrize(("name", "architecture", "layers", "kv_heads", "head_dim", "length"), CLASSES)
def test_pipeline_stages_hold_half_the_layers_each(name: str, architecture: str, layers: int, kv_heads: int, head_dim: int, length: int) -> None:
    """PP 2 splits the layers in halves; a rank's token at TP 2 holds K and V of its stage's layers for
    its share of the KV heads (GLM-4's two groups, one a rank)."""
    half = layers // 2
    assert ranks.partition(layers, 2) == (half, half)
    r = modeled.model_report(modeled.ModelInputs(config_text(name), tp=2, pp=2, max_model_len=length))
    assert r.architecture == architecture and r.kv_bytes_per_token == half * 2 * kv_heads * head_dim * 2


@pytest.mark.parametrize(("name", "architecture", "layers", "kv_heads", "head_dim", "length"), CLASSES)
@pytest.mark.parametrize("args", [["--tp", "1"], ["--tp", "2", "--kv-cache-dtype", "fp8"], ["--tp", "2", "--pp", "2"]])
def test_the_command_line_predicts_a_pool(name: str, architecture: str, layers: int, kv_heads: int, head_dim: int, length: int, args: list[str]) -> None:
    predicted_on_h100(name, architecture, args, length)
