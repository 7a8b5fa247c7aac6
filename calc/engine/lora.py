"""LoRA: the adapter slots vLLM allocates on every rank at load, and the adapters kept on the host.

Read from vLLM 0.33.0 (vllm/lora/):
- model_manager.py `_create_lora_modules`: with no --lora-target-modules every module
  get_supported_lora_modules finds is wrapped (utils.py: every LinearBase and MoE runner, and the
  model's embedding_modules, embed_tokens and lm_head), PPMissingLayer skipped (a pipeline stage
  wraps its own layers only); `lora_slots` is max_loras.
- layers/base_linear.py and column_parallel_linear.py `create_lora_weights`: per slice of a
  linear layer, A of max_loras x max_lora_rank x its input on the rank and B of max_loras x its
  output on the rank x max_lora_rank (a column-parallel layer's output and a row-parallel
  layer's input are divided by TP, the other side whole), zeros in lora_dtype, the model's dtype
  under "auto" (config/lora.py). A merged layer keeps one A a slice: q, k and v three, gate and
  up two.
- layers/fused_moe.py: w13 A max_loras x experts x rank x hidden a slice (two when gated), w13 B
  max_loras x experts x intermediate / TP x rank, w2 A max_loras x experts x rank x intermediate
  / TP, w2 B max_loras x experts x hidden x rank: every expert a rank holds.
- layers/vocab_parallel_embedding.py: the embedding's A max_loras x vocab x rank (the whole
  vocabulary, not divided) and B max_loras x hidden x rank; layers/logits_processor.py: the
  head's A max_loras x rank x hidden and B max_loras x vocab x rank, and a vocabulary above
  258,048 refused. A tied head is the embedding module seen a second time under `lm_head`, which
  _create_lora_modules wraps again: its embedding slots are counted twice.
- The slots are made inside load_model (gpu_model_runner.py, under the DeviceMemoryProfiler whose
  figure "Model loading took" prints), so they come off the pool as weights do.
- worker_manager.py `_load_adapter`: every worker process loads the whole adapter to the CPU
  (from_local_checkpoint, device="cpu"; lora_model.py pins it), and LRUCacheWorkerLoRAManager
  keeps up to max_cpu_loras of them (max_loras when not given, at least max_loras:
  config/lora.py). An adapter is at most one of the whole model's slots (TP 1, every layer) at
  the largest rank.

- MoE experts (vllm/lora/layers/fused_moe.py): not wrapped before it exists (0.11.0 has no such
  layer: an MoE's experts take no slots; 0.12 is not read, taken as 0.13.0); from 0.13.0 its
  slots span the rank's own experts (local_num_experts) and the intermediate as the rank holds it
  (intermediate_size_per_partition: divided over TP x DP without expert parallel, whole with it).
  Expert parallel is refused from 0.13.0 to 0.20.x (FusedMoEWithLoRA.__init__: "EP support for
  Fused MoE LoRA is not implemented yet"); from 0.21.0 it is taken with the default all2all
  backend (allgather_reducescatter) but not as the sequence-parallel MoE, EP with TP and DP both
  above 1 (`_ep_check`: `assert not moe_parallel_config.is_sequence_parallel`, 0.21.0 to
  0.33.0; vllm/config/parallel.py use_sequence_parallel_moe).

Not counted: Punica's index tensors (a few integers a token), --fully-sharded-loras (which
divides the A of column-parallel layers and the B of row-parallel ones), --lora-target-modules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from calc.engine import weights
from calc.engine.hfconfig import Shape
from calc.units import InputError

RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # config/lora.py MaxLoRARanks, 0.13.0 to 0.33.0
RANKS_BEFORE_0_13 = RANKS[1:]  # config.py LoRAConfig possible_max_ranks, 0.8.2 to 0.11.0: no rank 1
MAX_VOCAB = 258048  # layers/logits_processor.py, 0.17.0 to 0.33.0: `vocab_size > 258048` refused
MAX_VOCAB_BEFORE_0_17 = 257024  # 0.8.2 to 0.16.0: `32000 < vocab_size > 257024` refused
LATEST = (0, 33)


def ranks_of(rel: tuple[int, int]) -> tuple[int, ...]:
    """The --max-lora-rank values a release takes (0.12 not read: taken as 0.13)."""
    return RANKS if rel >= (0, 12) else RANKS_BEFORE_0_13


def max_vocab(rel: tuple[int, int]) -> int:
    """The largest vocabulary a release's LoRA logits processor takes."""
    return MAX_VOCAB if rel >= (0, 17) else MAX_VOCAB_BEFORE_0_17


_LAYER = re.compile(r"model\.layers\.(\d+)\.")


@dataclass(frozen=True)
class Lora:
    """--enable-lora's settings."""

    max_loras: int = 1
    max_lora_rank: int = 16
    max_cpu_loras: int | None = None  # None: max_loras


def check(cfg: Lora, rel: tuple[int, int] = LATEST) -> None:
    """What vLLM's LoRAConfig refuses, each as one line."""
    if cfg.max_loras < 1:
        raise InputError(f"--max-loras: found {cfg.max_loras}, expected at least 1")
    allowed = ranks_of(rel)
    if cfg.max_lora_rank not in allowed:
        where = "vllm/config/lora.py" if rel >= (0, 12) else f"vllm/config.py LoRAConfig, vLLM {rel[0]}.{rel[1]}"
        raise InputError(f"--max-lora-rank: found {cfg.max_lora_rank}, expected one of {', '.join(map(str, allowed))} ({where})")
    if cfg.max_cpu_loras is not None and cfg.max_cpu_loras < cfg.max_loras:
        raise InputError(
            f"--max-cpu-loras: found {cfg.max_cpu_loras}, expected at least --max-loras {cfg.max_loras} (vLLM: max_cpu_loras must be >= max_loras)"
        )


@dataclass(frozen=True)
class LoraBytes:
    slot_bytes: int  # one adapter slot on the rank: A and B of every wrapped module
    device_bytes: int  # max_loras slots, allocated at load
    host_bytes: int  # max_cpu_loras whole adapters of the largest rank, kept in one worker's host memory
    modules: int  # wrapped modules on the rank


def _gated(shape: Shape, path: str) -> bool:
    m = _LAYER.match(path)
    mlp = shape.mlps[int(m.group(1))] if m and int(m.group(1)) < len(shape.mlps) else shape.mlps[-1]
    return mlp.gated


MOE_LORA_FROM = (0, 12)  # vllm/lora/layers/fused_moe.py: absent in 0.11.0, present in 0.13.0 (0.12 not read)
MOE_LORA_EP_FROM = (0, 21)  # expert parallel taken from 0.21.0 (refused 0.13.0 to 0.20.x)


def _wraps(t: weights.Tensor, rel: tuple[int, int]) -> bool:
    """Whether the release wraps this tensor's module at all: an MoE's experts from 0.13.0 only."""
    return ".experts." not in t.path or rel >= MOE_LORA_FROM


def check_parallel(experts: int, tp: int, dp: int, ep: bool, rel: tuple[int, int] = LATEST) -> None:
    """What vLLM refuses of LoRA on an MoE's experts under expert parallel (see above), one line each."""
    if not experts or not ep or rel < MOE_LORA_FROM:
        return
    if rel < MOE_LORA_EP_FROM:
        raise InputError(
            f"--enable-lora: found with --enable-expert-parallel on vLLM {rel[0]}.{rel[1]}, expected vLLM 0.21.0 or later, or no expert parallel "
            "(vllm/lora/layers/fused_moe.py 0.13.0 to 0.20.x: EP support for Fused MoE LoRA is not implemented yet)"
        )
    if tp > 1 and dp > 1:
        raise InputError(
            f"--enable-lora: found with expert parallel at TP {tp} x DP {dp}, the sequence-parallel MoE, expected TP 1 or DP 1 "
            "(vllm/lora/layers/fused_moe.py _ep_check, 0.21.0 to 0.33.0)"
        )


def per_rank(
    shape: Shape,
    tp: int,
    cfg: Lora,
    layers: range | None = None,
    first: bool = True,
    last: bool = True,
    rel: tuple[int, int] = LATEST,
    tensors: list[weights.Tensor] | None = None,
) -> LoraBytes:
    """The LoRA bytes on one rank holding `layers` (all by default), the embedding when `first`,
    the head when `last`, under release `rel`'s limits; `tensors`, the rank's weights where they
    are not TP's alone (expert or data parallel: calc/engine/ranks.py rank_tensors), whose experts
    the MoE slots follow."""
    check(cfg, rel)
    limit = max_vocab(rel)
    if last and shape.vocab > limit and shape.vocab > 32000:
        raise InputError(
            f"--enable-lora: the model's vocab_size is {shape.vocab:,}, vLLM {rel[0]}.{rel[1]} refuses LoRA above {limit:,} (vllm/lora/layers/logits_processor.py)"
        )
    r, elem = cfg.max_lora_rank, shape.dtype_bytes
    values = modules = 0
    for t in tensors if tensors is not None else weights.tensors(shape, tp):
        if t.drafter or not _wraps(t, rel):
            continue
        m = _LAYER.match(t.path + ".")
        if m is None or (layers is not None and int(m.group(1)) not in layers):
            continue
        # the MoE router (a ReplicatedLinear); not a non-gated MoE's (model_manager.py skips `mixer.gate`)
        router = t.path.endswith((".gate", ".router")) and t.cols == shape.hidden and _gated(shape, t.path + ".")
        if not (t.linear or router):
            continue
        slices = 2 if t.path.endswith("gate_up_proj") and _gated(shape, t.path + ".") else 1
        values += t.count * r * (slices * t.cols + t.rows)
        modules += 1
    # the embedding: on the first stage, and with tied embeddings on the last too (its own copy, for
    # the head), where it is wrapped a second time under lm_head
    embeddings = int(first or (last and shape.tie_embeddings)) + int(last and shape.tie_embeddings)
    values += embeddings * r * (shape.vocab + shape.hidden)
    modules += embeddings
    if last:
        values += r * (shape.hidden + shape.vocab)  # the logits processor's A and B
        modules += 1
    slot = values * elem
    return LoraBytes(slot, slot * cfg.max_loras, adapter_bytes(shape, cfg, rel) * (cfg.max_cpu_loras or cfg.max_loras), modules)


def adapter_bytes(shape: Shape, cfg: Lora, rel: tuple[int, int] = LATEST) -> int:
    """The largest adapter a worker loads to the host: every wrapped module of the whole model at
    TP 1, the embedding and the head once each, at max_lora_rank."""
    whole = per_rank_values(shape, cfg, rel)
    return whole * shape.dtype_bytes


def per_rank_values(shape: Shape, cfg: Lora, rel: tuple[int, int] = LATEST) -> int:
    r = cfg.max_lora_rank
    values = 0
    for t in weights.tensors(shape, 1):
        if t.drafter or _LAYER.match(t.path + ".") is None or not _wraps(t, rel):
            continue
        router = t.path.endswith((".gate", ".router")) and t.cols == shape.hidden and _gated(shape, t.path + ".")
        if t.linear or router:
            slices = 2 if t.path.endswith("gate_up_proj") and _gated(shape, t.path + ".") else 1
            values += t.count * r * (slices * t.cols + t.rows)
    return values + 2 * r * (shape.vocab + shape.hidden)
