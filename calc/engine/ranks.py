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

from calc import jsontext
from calc.engine import kvlayout, weights
from calc.engine.hfconfig import NO_PIPELINE, Shape
from calc.units import InputError

MAX_PP = 64
_LAYER = re.compile(r"model\.layers\.(\d+)\.")


def partition(layers: int, pp: int, override: str | None = None) -> tuple[int, ...]:
    """The layers of each stage, as get_pp_indices counts them (`override`: VLLM_PP_LAYER_PARTITION)."""
    if not 1 <= pp <= MAX_PP:
        raise InputError(f"--pipeline-parallel-size: found {pp}, expected a pipeline parallel size from 1 to {MAX_PP}")
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
        raise InputError(f"--pipeline-parallel-size: found {pp}, expected at most the model's {layers} layers (a stage of no layers holds nothing to run)")
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


# Classes whose model code builds the embedding, the final norm and the head on every stage, without
# PPMissingLayer (a stage skips them in forward, not at load): phi.py, falcon.py, gpt_neox.py,
# gpt_bigcode.py and starcoder2.py, 0.10.1.1 to the last release that builds each; gemma4.py (Gemma4Model,
# 0.19.0 to 0.33.0), with its per-layer embedding and projection too.
EVERY_STAGE = frozenset({"PhiForCausalLM", "FalconForCausalLM", "GPTNeoXForCausalLM", "GPTBigCodeForCausalLM", "Starcoder2ForCausalLM",
                         "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration"})  # fmt: skip
_ENDS = ("model.embed_tokens", "model.wpe", "lm_head", "lm_head.bias", "model.norm", "model.norm.bias")


def _place(path: str, drafter: bool, bounds: tuple[tuple[int, int], ...], tied: bool, every: bool = False, tower_first: bool = False) -> tuple[int, ...]:
    """The stages a tensor is built on; `every`: the model code builds its ends on each (EVERY_STAGE);
    `tower_first`: the vision tower on the first stage alone (Model Runner V2 from v0.33.0)."""
    last = len(bounds) - 1
    if every and (path in _ENDS or path.startswith(("model.embed_tokens_per_layer", "model.per_layer_"))):
        return tuple(range(len(bounds)))
    if drafter:
        return (last,)
    if path.startswith(("visual.", "vision_tower.", "vision_model.", "multi_modal_projector.", "mlp1.", "mm_projector.", "vision_embedder.",
                        "embed_vision.", "embed_audio.")):  # fmt: skip
        # the vision tower is built on every stage by the V1 model runner; only Model Runner V2 skips it
        # after the first (vllm/model_executor/models/interfaces.py, _mark_tower_model, 0.33.0)
        return (0,) if tower_first else tuple(range(len(bounds)))
    if path == "model.embed_tokens":
        return (0, last) if tied and last else (0,)
    if path.startswith(("model.embed_tokens_per_layer", "model.per_layer_", "model.altup_projections.")):  # Gemma 3n: before the layers
        return (0,)
    if path.startswith("model.hc_head_"):  # DeepSeek V4's hyper-connection head: DeepseekV4Model builds it on every stage
        return tuple(range(len(bounds)))  # (vllm/models/deepseek_v4/nvidia/model.py, no PPMissingLayer, 0.33.0)
    if path.startswith("model.altup_unembed_projections."):
        return (last,)
    if path in ("lm_head", "lm_head.bias", "model.norm", "model.norm.bias"):
        return (last,)
    m = _LAYER.match(path + ".")
    if m is None:
        raise ValueError(f"no stage for tensor {path}")  # a tensor weights.py lists and this module does not place
    i = int(m.group(1))
    return tuple(n for n, (a, b) in enumerate(bounds) if a <= i < b)


def stage_shape(shape: Shape, first: int, end: int, last: bool) -> Shape:
    """The model as one stage builds it: its own layers, the drafter layers on the last."""
    ratios = shape.compress_ratios[first:end]  # DeepSeek V4's, one a layer
    return replace(shape, layers=shape.layers[first:end], mlps=shape.mlps[first:end], drafter_layers=shape.drafter_layers if last else 0,
                   compress_ratios=ratios)  # fmt: skip


def stages(
    shape: Shape,
    settings: kvlayout.Settings,
    max_model_len: int,
    rules: kvlayout.Version,
    pp: int,
    override: str | None = None,
    total_size: int | None = None,
    source: str = "index total_size",
    tensors: list[weights.Tensor] | None = None,
    tower_first: bool = False,
) -> tuple[Stage, ...]:
    """Every stage's layers, weights and KV cache, one tensor-parallel rank of each (`tensors`:
    that rank's weights when they are not TP's alone, as under expert or data parallel;
    `tower_first`: the vision tower built on the first stage alone, as _place says)."""
    counts = partition(len(shape.layers), pp, override)
    bounds = tuple((sum(counts[:n]), sum(counts[: n + 1])) for n in range(pp))
    tensors = tensors if tensors is not None else weights.tensors(shape, settings.tp)
    bytes_of = stage_weights(shape, tensors, pp, override, total_size, source, tower_first)
    out = []
    for n, (a, b) in enumerate(bounds):
        last = n == pp - 1
        sub = stage_shape(shape, a, b, last)
        holds = (("embedding",) if n == 0 or (last and shape.tie_embeddings) else ()) + (("head", "final norm") if last else ())
        if shape.tower is not None and n in _place("visual.", False, bounds, shape.tie_embeddings, tower_first=tower_first):  # as _place says
            holds += (shape.tower.name,)
        try:
            req: kvlayout.Request | None = kvlayout.request(sub, settings, max_model_len, rules)
        except ValueError as error:
            if "no layer that holds a KV cache" not in str(error):
                raise
            req = None  # a stage of layers without cache (Nemotron-H's MLP-only layers)
        per_token = req.bytes_per_token if req else Fraction(0)
        block = req.layout.group_size * req.layout.page_bytes if req else 0
        out.append(Stage(n, a, b, bytes_of[n][0], bytes_of[n][1], holds, per_token,
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


# --- expert and data parallel ------------------------------------------------------------------
#
# Read from vLLM's released sources:
# - --data-parallel-size D runs D engines, each with its own TP x PP workers: a replica sizes its
#   own pool from its own free memory and keeps its own count of blocks (the smallest over its own
#   workers only: vllm/v1/core/kv_cache_utils.py get_kv_cache_configs runs a replica at a time).
#   A dense model's replicas are wholly independent ("Non-MoE DP ranks are completely independent,
#   so treat like DP=1", vllm/v1/engine/core.py, 0.14.0 to 0.33.0).
# - An MoE's expert layers are sharded over all TP x DP ranks of a stage, not over TP alone
#   (vllm/model_executor/layers/fused_moe/config.py FusedMoEParallelConfig.make and
#   flatten_tp_across_dp_and_pcp, 0.33.0; fused_moe/layer.py FusedMoE.__init__, 0.8.2): without
#   --enable-expert-parallel each expert's intermediate is divided by TP x DP (which must divide it:
#   `assert self.intermediate_size % tp_size == 0`, fused_moe/config.py, 0.33.0); with it the
#   experts are dealt whole over EP = TP x DP ranks (ep_size = tp_size, the flattened size; up to
#   0.8.5 only when TP > 1: `enable_expert_parallel and self.tp_size > 1`).
# - How many each EP rank holds (determine_expert_map: fused_moe/layer.py up to 0.20.0,
#   fused_moe/expert_map_manager.py from 0.26.0): from 0.10.1 (read in 0.10.1, 0.11.0, 0.13.0,
#   0.17.0, 0.20.0, 0.26.0, 0.29.0, 0.33.0) experts // EP each, one more to each of the first
#   experts % EP ranks (`base_experts + 1 if ep_rank < remainder`, vLLM pull request 21497); up to
#   0.8.5 experts // EP each and the whole remainder on the last rank. 0.9.x and 0.10.0 are not read.
# - Attention, embeddings, dense MLPs, routers and shared experts stay as under TP: divided over the
#   TP ranks of a replica, whole on each rank at TP 1. With EP, TP > 1 and DP > 1 together (the
#   sequence-parallel MoE, vllm/config/parallel.py use_sequence_parallel_moe, 0.11.0 to 0.33.0) the
#   DeepSeek family builds its shared experts replicated on every rank (DeepseekV2MLP
#   `disable_tp=is_sequence_parallel`, vllm/model_executor/models/deepseek_v2.py, 0.11.0 to 0.33.0).
# - MLA attention's cache is one latent a token on every TP rank (not divided), so under TP the
#   ranks of a replica hold the same tokens; data parallel attention (DP D at TP 1) gives each rank
#   its own requests: D times the tokens over the ranks, the attention weights whole on each
#   (vllm/model_executor/layers/attention/mla_attention.py get_kv_cache_spec, 0.33.0:
#   num_kv_heads=1 and max_tp_shards=1 whatever the TP; the motive of vLLM's data parallel
#   attention, vLLM issue 16037: "If Tensor Parallelism is used in an MLA model, we duplicate the
#   KV cache across GPUs").

# - EPLB (--enable-eplb) and its redundant experts: the MoE layers are built with
#   global_num_experts = experts + num_redundant_experts physical experts (fused_moe/layer.py
#   FusedMoE.__init__, 0.10.1 to 0.20.0; determine_expert_counts, 0.26.0 to 0.33.0), dealt by the
#   same determine_expert_map, so each EP rank holds (experts + redundant) / EP experts' weights,
#   every copy a whole expert; EPLB refuses a count EP does not divide ("EPLB currently only
#   supports even distribution of experts across ranks", the same files), redundant experts without
#   EPLB ("Redundant experts are only supported with EPLB"), EPLB without --enable-expert-parallel
#   or at TP x DP = 1 (vllm/config/parallel.py, ParallelConfig.__post_init__, 0.10.1 to 0.33.0).
#   The count is spelled --num-redundant-experts N up to 0.11.0 (a ParallelConfig field in 0.10.1;
#   deprecated in 0.11.0, vllm/engine/arg_utils.py forwards it into eplb_config, "will be removed
#   in v0.12.0", and 0.13.0 has no such flag) and --eplb-config '{"num_redundant_experts": N}'
#   from 0.11.0 (EPLBConfig, vllm/config/parallel.py, 0.11.0 to 0.33.0). Before 0.10.1 EPLB is
#   not read (0.8.5 has none).

MAX_DP = 1024
BALANCED_FROM = (0, 10, 1)  # the first release read that deals the remainder to the first ranks
EPLB_FROM = (0, 10, 1)  # the first release read with EPLB
EPLB_CONFIG_FROM = (0, 11, 0)  # --eplb-config, read in 0.11.0 (0.10.2 not read)
OLD_REDUNDANT_UNTIL = (0, 11, 99)  # --num-redundant-experts: 0.10.1 and 0.11.0; gone in 0.13.0


@dataclass(frozen=True)
class Parallel:
    """The ranks of a start: TP within a replica, DP replicas, and whether MoE layers use EP."""

    tp: int = 1
    dp: int = 1
    ep: bool = False  # --enable-expert-parallel
    eplb: bool = False  # --enable-eplb
    redundant: int = 0  # EPLB's redundant experts: copies beyond the routed experts, dealt with them

    @property
    def ep_size(self) -> int:
        return self.tp * self.dp if self.ep else 1


def _release(rules: kvlayout.Version) -> tuple[int, int, int]:
    if rules.name == kvlayout.NEWEST:
        return (0, 33, 0)
    parts = (rules.name.lstrip("v").split(".") + ["0", "0"])[:3]
    return tuple(int(re.match(r"\d*", p).group() or 0) for p in parts)  # type: ignore[return-value, union-attr]


def expert_counts(experts: int, ep_size: int, rules: kvlayout.Version) -> tuple[int, ...]:
    """The routed experts each EP rank holds, as determine_expert_map deals them."""
    if ep_size < 1:
        raise InputError(f"expert parallel size: found {ep_size}, expected at least 1")
    if experts < ep_size:
        raise InputError(f"--enable-expert-parallel: {ep_size} EP ranks (TP x DP) for {experts} experts, expected at most one rank an expert")
    base, extra = divmod(experts, ep_size)
    if _release(rules) >= BALANCED_FROM:
        return tuple(base + 1 if r < extra else base for r in range(ep_size))
    return tuple(base + (extra if r == ep_size - 1 else 0) for r in range(ep_size))


def moe_experts(shape: Shape) -> int:
    """The routed experts of the model's MoE layers (0 for a dense model)."""
    return max((m.experts for m in shape.mlps), default=0)


def check_parallel(shape: Shape, par: Parallel, rules: kvlayout.Version) -> None:
    """What vLLM refuses of a TP x DP x EP layout, each as one line."""
    if not 1 <= par.dp <= MAX_DP:
        raise InputError(f"--data-parallel-size: found {par.dp}, expected a data parallel size from 1 to {MAX_DP}")
    experts = moe_experts(shape)
    if par.ep and not experts:
        raise InputError(f"--enable-expert-parallel: found on {shape.architecture}, expected an MoE model (this one has no routed experts)")
    ep = uses_ep(par, rules)
    if not ep and experts and par.dp > 1:  # the experts TP-sharded over TP x DP ranks (also EP at TP 1 up to 0.8.5)
        width = par.tp * par.dp
        for m in shape.mlps:
            if m.experts and m.expert_intermediate % width:
                raise InputError(
                    f"--data-parallel-size: the experts' intermediate size {m.expert_intermediate} does not divide over TP x DP = {width} ranks "
                    "(vLLM asserts intermediate_size % tp_size == 0, fused_moe/config.py); expected a TP x DP that divides it, or --enable-expert-parallel"
                )
    check_eplb(shape, par, rules)
    if ep:
        expert_counts(experts + par.redundant, par.ep_size, rules)


MAX_REDUNDANT = 4096


def redundant_experts(eplb_config: str | None, num_redundant: int | None, rules: kvlayout.Version, eplb: bool = True) -> int:
    """EPLB's redundant experts as the release spells them: --num-redundant-experts N up to 0.11.0,
    --eplb-config '{"num_redundant_experts": N}' from 0.11.0 (the rules above); 0 when neither.
    Redundant experts without --enable-eplb (`eplb` False) are refused, named as typed."""
    at = _release(rules)
    if eplb_config is not None and num_redundant is not None:
        raise InputError("--num-redundant-experts: found beside --eplb-config, expected one of them (0.11.0 forwards the first into the second)")
    if num_redundant is not None:
        if at > OLD_REDUNDANT_UNTIL:
            raise InputError(
                f"--num-redundant-experts: found with vLLM {rules.name}, expected --eplb-config '{{\"num_redundant_experts\": {num_redundant}}}' "
                "(0.11.0 deprecated the flag for removal in 0.12.0; 0.13.0 has none)"
            )
        if num_redundant and not eplb:
            raise InputError(f"--num-redundant-experts: found {num_redundant} without --enable-eplb, expected --enable-eplb beside it (vLLM: {_NO_EPLB})")
        return num_redundant
    if eplb_config is None:
        return 0
    if at < EPLB_CONFIG_FROM:
        raise InputError(f"--eplb-config: found with vLLM {rules.name}, expected --num-redundant-experts N (--eplb-config is read from 0.11.0)")
    try:
        data = jsontext.loads(eplb_config.strip())
    except jsontext.JsonError as error:
        raise InputError(f"--eplb-config: found {error.found}, expected JSON such as '{{\"num_redundant_experts\": 32}}'") from None
    if not isinstance(data, dict):
        raise InputError(f"--eplb-config: found {type(data).__name__}, expected a JSON object such as '{{\"num_redundant_experts\": 32}}'")
    count = data.get("num_redundant_experts", 0)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_REDUNDANT:
        raise InputError(f"--eplb-config: found num_redundant_experts {count!r}, expected a whole number from 0 to {MAX_REDUNDANT}")
    if count and not eplb:
        raise InputError(f"--eplb-config: found {count} redundant experts without --enable-eplb, expected --enable-eplb beside it (vLLM: {_NO_EPLB})")
    return count


_NO_EPLB = "redundant experts are only supported with EPLB"


def check_eplb(shape: Shape, par: Parallel, rules: kvlayout.Version) -> None:
    """What vLLM refuses of EPLB and its redundant experts (see the rules above), each as one line."""
    if par.redundant < 0:
        raise InputError(f"num_redundant_experts: found {par.redundant}, expected 0 or more")
    if not par.eplb:
        if par.redundant:
            raise InputError(f"--enable-eplb: found off with {par.redundant} redundant experts, expected it on (vLLM: {_NO_EPLB})")
        return
    if _release(rules) < EPLB_FROM:
        raise InputError(f"--enable-eplb: found with vLLM {rules.name}, expected 0.10.1 or later (the first release read with EPLB)")
    if not par.ep:
        raise InputError("--enable-eplb: found without --enable-expert-parallel, expected it beside (vLLM: enable_expert_parallel must be True to use EPLB)")
    if par.tp * par.dp <= 1:
        raise InputError("--enable-eplb: found at TP x DP = 1, expected a tensor or data parallel size above 1 (vLLM: EPLB requires it)")
    experts = moe_experts(shape)
    total = experts + par.redundant
    if total % par.ep_size:
        raise InputError(
            f"--enable-eplb: {experts} experts + {par.redundant} redundant = {total} over {par.ep_size} EP ranks, expected a sum the ranks divide "
            "(vLLM: EPLB currently only supports even distribution of experts across ranks)"
        )


def uses_ep(par: Parallel, rules: kvlayout.Version) -> bool:
    """Whether the MoE layers are dealt over EP ranks (up to 0.8.5 only with TP above 1)."""
    return par.ep and par.ep_size > 1 and (par.tp > 1 or _release(rules) >= (0, 9, 0))


def shared_replicated(shape: Shape, par: Parallel, rules: kvlayout.Version) -> bool:
    """DeepSeek's shared experts built whole on every rank: EP with TP > 1 and DP > 1, 0.11.0 on."""
    return uses_ep(par, rules) and par.tp > 1 and par.dp > 1 and _release(rules) >= (0, 11, 0) and shape.architecture.startswith("Deepseek")


def rank_tensors(shape: Shape, par: Parallel, rules: kvlayout.Version, ep_rank: int = 0) -> list[weights.Tensor]:
    """Every weight as one rank holds it: attention and the rest over TP, the routed experts over
    TP x DP (each expert divided) or, under EP, the EP rank's own experts whole."""
    attn = weights.tensors(shape, par.tp)
    if not moe_experts(shape) or (par.dp == 1 and not uses_ep(par, rules)):
        return attn
    ep = uses_ep(par, rules)
    moe = weights.tensors(shape, 1 if ep else par.tp * par.dp)
    whole = weights.tensors(shape, 1) if shared_replicated(shape, par, rules) else None
    out = []
    for n, (a, m) in enumerate(zip(attn, moe, strict=True)):
        if ".experts." in a.path:
            out.append(replace(m, count=expert_counts(m.count + par.redundant, par.ep_size, rules)[ep_rank]) if ep else m)
        elif whole is not None and ".shared_expert." in a.path:
            out.append(whole[n])
        else:
            out.append(a)
    return out


@dataclass(frozen=True)
class ExpertRank:
    """One rank of a TP x DP group: its place, its routed experts, its weights (one stage's)."""

    ep_rank: int
    dp_rank: int
    tp_rank: int
    local_experts: int
    weights_bytes: int


def expert_ranks(
    shape: Shape,
    par: Parallel,
    rules: kvlayout.Version,
    pp: int = 1,
    override: str | None = None,
    total_size: int | None = None,
    source: str = "index total_size",
) -> tuple[tuple[ExpertRank, ...], ...]:
    """Each pipeline stage's TP x DP ranks, their experts and weights. Ranks that hold as many
    experts hold as many bytes: each distinct count is figured once."""
    experts = moe_experts(shape)
    ep = uses_ep(par, rules)
    counts = expert_counts(experts + par.redundant, par.ep_size, rules) if ep else (experts,) * (par.tp * par.dp)
    figured: dict[int, tuple[tuple[int, int], ...]] = {}
    for r, local in enumerate(counts):
        if local not in figured:
            figured[local] = stage_weights(shape, rank_tensors(shape, par, rules, r if ep else 0), pp, override, total_size, source)
    return tuple(tuple(ExpertRank(r, r // par.tp, r % par.tp, local, figured[local][n][0]) for r, local in enumerate(counts)) for n in range(pp))


def stage_weights(
    shape: Shape, tensors: list[weights.Tensor], pp: int, override: str | None = None, total_size: int | None = None, source: str = "index total_size",
    tower_first: bool = False,
) -> tuple[tuple[int, int], ...]:  # fmt: skip
    """The model's and the drafter's bytes on each stage, from one rank's tensors."""
    if pp > 1 and shape.architecture in NO_PIPELINE:
        raise InputError(f"--pipeline-parallel-size: found {pp}, expected 1: vLLM refuses pipeline parallel for {shape.architecture}, "
                         "which does not implement SupportsPP (vllm/config/model.py verify_with_parallel_config)")  # fmt: skip
    counts = partition(len(shape.layers), pp, override)
    bounds = tuple((sum(counts[:n]), sum(counts[: n + 1])) for n in range(pp))
    quant = weights.quant_of(shape)
    scale, _, _ = weights.checkpoint_scale(shape, total_size, source)
    model = [0] * pp
    drafter = [0] * pp
    buffers = [0] * pp
    for t in tensors:
        b = weights.tensor_bytes(t, quant, shape.dtype_bytes)
        places = _place(t.path, t.drafter, bounds, shape.tie_embeddings, shape.architecture in EVERY_STAGE, tower_first)
        layer = _LAYER.match(t.path + ".")
        if t.buffer and layer is not None:  # a rope's cache: on every stage that builds a layer of its kind (each process its own get_rope)
            kind = shape.layers[int(layer.group(1))]
            places = tuple(n for n, (a, b) in enumerate(bounds) if kind in shape.layers[a:b])
        for n in places:
            if t.buffer:  # built at load: not scaled to the checkpoint
                buffers[n] += b
            elif t.drafter:
                drafter[n] += b
            else:
                model[n] += b
    return tuple((round(m * scale) + f, round(d * scale)) for m, d, f in zip(model, drafter, buffers, strict=True))
