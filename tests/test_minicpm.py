"""OpenBMB's MiniCPM (MiniCPMForCausalLM), read by vLLM's vllm/model_executor/models/minicpm.py (the same
parameters in 0.13.0, 0.20.0 and 0.33.0): the parameter count against the checkpoint, the vocabulary padded as
vLLM pads it, the tie the config leaves out, the MoE variant, the KV cache a token, tensor and pipeline parallel,
and the command line.

openbmb/MiniCPM-2B-sft-fp32's config.json ships byte for byte as its Hub blame page shows it
(models/configs/SOURCES.yaml): it names no model_type and no tie_word_embeddings."""

from __future__ import annotations

import json

import pytest
from conftest import config_text, parameters

from calc.engine import hfconfig, kvlayout, weights

NAME = "minicpm-2b-sft-fp32"
H, V, FFN = 2304, 122753, 5760
PADDED = 122816  # the vocabulary padded to a multiple of 64 (vocab_parallel_embedding.py)


def shape(**changes: object) -> hfconfig.Shape:
    return hfconfig.shape({**json.loads(config_text(NAME)), **changes}, NAME)


def layer(tp: int = 1) -> int:
    """q/k/v/o of 36 heads of 64 (36 K and V heads), the gated MLP, divided; two RMSNorms whole."""
    return 4 * H * H // tp + 3 * FFN // tp * H + 2 * H


def test_minicpm_2b_meets_its_checkpoint() -> None:
    """2,724,880,896 parameters in the checkpoint (the 2.4B of MiniCPM-2B's name leaves the embedding out:
    2,442,057,984 for the 40 layers and the final norm); the embedding is the head (tied by MiniCPMConfig's default,
    the config says nothing), so MiniCPM-2B-sft-bf16's pytorch_model.bin of bfloat16 tensors, 5.45 GB
    (huggingface.co/openbmb/MiniCPM-2B-sft-bf16/tree/refs%2Fpr%2F1), is that count at 2 B (an untied head would
    make it 6.02 GB). vLLM pads the vocabulary to 122,816 rows."""
    s = shape()
    assert (s.architecture, s.heads, s.kv_heads, s.head_dim, s.tie_embeddings) == ("MiniCPMForCausalLM", 36, 36, 64, True)
    assert (s.attention_bias, s.output_bias, set(s.mlps)) == (False, False, {hfconfig.Mlp(intermediate=FFN)})
    checkpoint = V * H + H + 40 * layer()
    assert checkpoint == 2_724_880_896 and round(2 * checkpoint / 1e9, 2) == 5.45
    assert checkpoint - V * H == 2_442_057_984 and round(2 * (checkpoint + V * H) / 1e9, 2) == 6.02
    assert parameters(s) == checkpoint + (PADDED - V) * H
    assert [(r.positions, r.rotary_dim) for r in s.ropes] == [(2048, 64)]
    assert hfconfig.unchecked_note("MiniCPMForCausalLM") is None


@pytest.mark.parametrize("tp", [1, 2, 4])
def test_minicpm_weights_and_kv_per_rank(tp: int) -> None:
    """368,640 B a token at TP 1: 40 layers x 2 x 36 KV heads x 64 x 2 B, divided over the ranks."""
    s = shape()
    assert weights.per_rank(s, tp).model == 2 * (PADDED // tp * H + H + 40 * layer(tp)) + 2048 * 64 * 2
    assert kvlayout.request(s, kvlayout.Settings(tp=tp), 2048, kvlayout.version(None)).bytes_per_token == 40 * 2 * 36 // tp * 64 * 2


def test_minicpm_reads_its_variants() -> None:
    """An untied head where the config says so (MiniCPM4's); grouped K and V heads (MiniCPM-1B's 8 of 24); a head
    of hidden_size / heads whatever head_dim says; num_experts above 0 gives MiniCPM-MoE's experts, no shared one."""
    assert not shape(tie_word_embeddings=False).tie_embeddings
    one_b = shape(hidden_size=1536, num_attention_heads=24, num_key_value_heads=8, num_hidden_layers=52, intermediate_size=3840)
    assert (one_b.kv_heads, one_b.head_dim) == (8, 64)
    assert shape(head_dim=128).head_dim == 64
    assert set(shape(num_experts=8, num_experts_per_tok=2).mlps) == {hfconfig.Mlp(experts=8, expert_intermediate=FFN)}
