"""Pipeline parallel: which layers each stage holds, and its weights and KV cache from them.

Read from vLLM's released sources (the same rule in 0.8.2, 0.11.0, 0.20.0 and 0.33.0):
- vllm/distributed/utils.py, get_pp_indices: num_hidden_layers // pp layers a stage; the
  remainder r goes one layer each to the r stages before the last (partitions[-2], [-3], ...),
  the last stage being spared for its norm and head. VLLM_PP_LAYER_PARTITION ("15,16,15,15")
  replaces the rule: as many counts as stages, adding up to num_hidden_layers, else ValueError.
- vllm/model_executor/models/utils.py, make_layers: a stage builds its own layers and a
  PPMissingLayer in place of every other one.
- vllm/model_executor/models/llama.py and qwen2.py (0.33.0): the embedding lives on the first
  stage, and with tie_word_embeddings on the last stage too (`is_first_rank or
  (tie_word_embeddings and is_last_rank)`), where the head is tied to it; an untied lm_head and
  the final norm live on the last stage. So tied or not, the first and last stages each hold one
  vocabulary-sized matrix once there are two stages or more.
- The drafter layers (MTP) load with the last stage, beside the head they share.
- The KV pool: every stage sizes its own pool from its own free memory, then vLLM keeps the
  smallest count of blocks over the stages (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs,
  "Change the num_blocks of each worker to the smallest among all workers"; 0.33.0 moves it to
  kv_cache_planning.py). The one-request check: from 0.17.0 each stage's own layers against its
  own pool (_project_kv_cache_groups_to_worker); in 0.14.0 to 0.16.x the whole model's layers
  against the smallest stage's pool, so a start of PP 8 needs eight times the KV a stage holds
  (the "Pipeline parallelism cannot share kvcache" refusal, vLLM issue 32105); up to 0.13.0 each
  stage's own layers (check_enough_kv_cache_memory on kv_cache_spec_one_worker).

KV groups follow the whole model's layer ratio in vLLM (get_kv_cache_groups over every stage's
layers) and are projected onto each stage; here a stage's layout is grouped from its own layers,
which is the same for a model of one layer kind (dense, MoE, MLA) and an approximation for a
hybrid's padding.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction

from calc.engine import kvlayout, weights
from calc.engine.hfconfig import Shape
from calc.units import InputError

MAX_PP = 64
_LAYER = re.compile(r"model\.layers\.(\d+)\.")


def partition(layers: int, pp: int, override: str | None = None) -> tuple[int, ...]:
    """The layers of each stage, as get_pp_indices counts them (`override`: VLLM_PP_LAYER_PARTITION)."""
    if not 1 <= pp <= MAX_PP:
        raise InputError(f"--pp: found {pp}, expected a pipeline parallel size from 1 to {MAX_PP}")
    if override is not None:
        parts = override.split(",")
        if not all(re.fullmatch(r"\s*\d{1,6}\s*", p) for p in parts):
            raise InputError(f"--pp-layer-partition: found {override!r}, expected whole numbers of layers separated by commas, such as 15,16,15,15")
        counts = tuple(int(p) for p in parts)
        if len(counts) != pp:
            raise InputError(f"--pp-layer-partition: found {len(counts)} stages, expected {pp}, one count a pipeline stage (vLLM raises ValueError)")
        if sum(counts) != layers:
            raise InputError(f"--pp-layer-partition: found {sum(counts)} layers in all, expected the model's {layers} (vLLM raises ValueError)")
        if 0 in counts:
            raise InputError(f"--pp-layer-partition: found a stage of no layers in {override!r}, expected at least one layer a stage")
        return counts
    if pp > layers:
        raise InputError(f"--pp: found {pp}, expected at most the model's {layers} layers (a stage of no layers holds nothing to run)")
    each = [layers // pp] * pp
    for i in range(2, layers % pp + 2):  # the remainder to the stages before the last
        each[-i] += 1
    return tuple(each)


@dataclass(frozen=True)
class Stage:
    """One pipeline stage (one rank of each tensor-parallel group in it)."""

    rank: int
    first_layer: int
    end_layer: int  # one past its last layer
    weights_bytes: int  # on one of its tensor-parallel ranks
    drafter_bytes: int
    holds: tuple[str, ...]  # embedding, head, final norm, beyond its layers
    kv_bytes_per_token: Fraction  # its own layers' cache, one token
    kv_bytes_per_request: int  # its own layers' cache, one request of max_model_len
    kv_block_bytes: int  # one block over its own layers: what a block of the pool costs it
    kv_floor_bytes: int  # the smallest pool its one-request check passes

    @property
    def layers(self) -> int:
        return self.end_layer - self.first_layer


def _place(path: str, drafter: bool, bounds: tuple[tuple[int, int], ...], tied: bool) -> tuple[int, ...]:
    """The stages a tensor is built on."""
    last = len(bounds) - 1
    if drafter:
        return (last,)
    if path == "model.embed_tokens":
        return (0, last) if tied and last else (0,)
    if path in ("lm_head", "model.norm"):
        return (last,)
    m = _LAYER.match(path + ".")
    if m is None:
        raise ValueError(f"no stage for tensor {path}")  # a tensor weights.py lists and this module does not place
    i = int(m.group(1))
    return tuple(n for n, (a, b) in enumerate(bounds) if a <= i < b)


def stage_shape(shape: Shape, first: int, end: int, last: bool) -> Shape:
    """The model as one stage builds it: its own layers, the drafter layers on the last."""
    return replace(shape, layers=shape.layers[first:end], mlps=shape.mlps[first:end], drafter_layers=shape.drafter_layers if last else 0)


def stages(
    shape: Shape,
    settings: kvlayout.Settings,
    max_model_len: int,
    rules: kvlayout.Version,
    pp: int,
    override: str | None = None,
    total_size: int | None = None,
    source: str = "index total_size",
) -> tuple[Stage, ...]:
    """Every stage's layers, weights and KV cache, one tensor-parallel rank of each."""
    counts = partition(len(shape.layers), pp, override)
    bounds = tuple((sum(counts[:n]), sum(counts[: n + 1])) for n in range(pp))
    quant = weights.quant_of(shape)
    scale, _, _ = weights.checkpoint_scale(shape, total_size, source)
    model = [0] * pp
    drafter = [0] * pp
    for t in weights.tensors(shape, settings.tp):
        b = weights.tensor_bytes(t, quant, shape.dtype_bytes)
        for n in _place(t.path, t.drafter, bounds, shape.tie_embeddings):
            if t.drafter:
                drafter[n] += b
            else:
                model[n] += b
    out = []
    for n, (a, b) in enumerate(bounds):
        last = n == pp - 1
        sub = stage_shape(shape, a, b, last)
        holds = (("embedding",) if n == 0 or (last and shape.tie_embeddings) else ()) + (("head", "final norm") if last else ())
        try:
            req: kvlayout.Request | None = kvlayout.request(sub, settings, max_model_len, rules)
        except ValueError as error:
            if "no layer that holds a KV cache" not in str(error):
                raise
            req = None  # a stage of layers without cache (Nemotron-H's MLP-only layers)
        per_token = req.bytes_per_token if req else Fraction(0)
        block = req.layout.group_size * req.layout.page_bytes if req else 0
        out.append(Stage(n, a, b, round(model[n] * scale), round(drafter[n] * scale), holds, per_token,
                         req.bytes_per_request if req else 0, block, req.floor_bytes if req else 0))  # fmt: skip
    return tuple(out)


def in_flight(rules: kvlayout.Version, pp: int) -> kvlayout.Version:
    """The build's rules with the sliding window charged as pipeline parallel charges it: from 0.26.0
    max_in_flight_tokens is max_concurrent_batches x max_num_batched_tokens, and max_concurrent_batches
    is the pipeline size under PP on the V1 model runner (vllm/config/vllm.py, 0.26.0, 0.29.0, 0.33.0:
    "PP requires PP-size concurrent batches to fill the pipeline"), not async scheduling's two."""
    if pp > 1 and rules.in_flight_batches > 1:
        return replace(rules, in_flight_batches=pp)
    return rules


def whole_model_check(rules: kvlayout.Version) -> bool:
    """Whether this build checks one request of the whole model's layers against the smallest
    stage's pool (0.14.0 to 0.16.x), rather than each stage's own layers."""
    if rules.engine == "v0" or rules.name == kvlayout.NEWEST:
        return False
    parts = rules.name.lstrip("v").split(".")
    return (0, 14) <= (int(parts[0]), int(parts[1])) < (0, 17)


@dataclass(frozen=True)
class Pools:
    """What a pool of the given bytes on each stage holds: the smallest count of blocks decides."""

    blocks: int
    tightest: int  # the stage with the fewest blocks
    blocks_per_stage: tuple[int, ...]


def pools(stage_list: tuple[Stage, ...], pool_bytes: tuple[int, ...]) -> Pools:
    """vLLM's num_blocks over the stages: each stage's pool // its block, the smallest kept."""
    each = tuple(p // s.kv_block_bytes if s.kv_block_bytes else 10**18 for s, p in zip(stage_list, pool_bytes, strict=True))
    least = min(each)
    return Pools(least, each.index(least), each)
