"""Before the first start: weights and KV from a config.json, one report for the command line
and the browser alike. Every figure here is modeled (calc/engine/weights.py, calc/engine/kvlayout.py).
The report's parts and their JSON are calc/checks/modelreport.py's; this module works them out."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Any

from calc.catalog.entries import Policy
from calc.checks.modelreport import (
    CardPin,
    CardPrediction,
    ExpertRankReport,
    ExpertsReport,
    HeldOutError,
    HostMemory,
    LoraReport,
    ModelInputs,
    ModelReport,
    OffloadReport,
    PredictedFix,
    PredictedTerm,
    PrefillPart,
    ShmQueue,
    SleepReport,
    StagePoolTerms,
    StageReport,
    TowerReport,
    WorstPrefill,
)
from calc.engine import hfconfig, kvlayout, lora, multimodal, offload, predict, ranks, weights
from calc.units import InputError, fmt

__all__ = [
    "CardPin",
    "CardPrediction",
    "ExpertRankReport",
    "ExpertsReport",
    "HeldOutError",
    "HostMemory",
    "LoraReport",
    "ModelInputs",
    "ModelReport",
    "OffloadReport",
    "PredictedFix",
    "PredictedTerm",
    "PrefillPart",
    "ShmQueue",
    "SleepReport",
    "StagePoolTerms",
    "StageReport",
    "TowerReport",
    "WorstPrefill",
    "beyond_read",
    "model_report",
    "parallel_notes",
    "release_of",
    "start_kv_dtype",
    "stage_report",
]


def model_report(i: ModelInputs) -> ModelReport:
    """Weights per rank, the KV cost of one request and, given a pool, what vLLM would print.
    Raises InputError (ConfigError names the file and field) for anything it cannot size."""
    config = hfconfig.load(i.config_text, i.config_file)
    read = shape = hfconfig.shape(config, i.config_file)
    rel = release_of(i.engine_version)  # InputError for a version that does not parse
    kv_dtype, kv_note = kvlayout.checkpoint_kv_dtype(shape.quantization, i.kv_cache_dtype, rel)
    i = replace(i, kv_cache_dtype=kv_dtype)
    built = kvlayout.version(i.engine_version).release if i.engine_version else rel
    elsewhere = hfconfig.outside_own_code(shape.architecture, built)
    if elsewhere:
        raise InputError(f"--engine-version: found {i.engine_version or f'nothing (the newest rules read, {rel[0]}.{rel[1]})'}: {elsewhere}")
    backend = hfconfig.transformers_backend(shape.architecture, built)
    if backend:  # Transformers' rotary embedding keeps no cos/sin cache
        read = shape = replace(shape, ropes=())
    shape, mm_notes = multimodal.apply(shape, i.multimodal or multimodal.Settings(), rel)
    shape = weights.bnb_as_loaded(weights.drafter_as_loaded(hfconfig.ropes_as_loaded(shape, rel), rel, i.pp), predict.patch_release(i.engine_version),
                                  i.engine_version)  # fmt: skip
    if i.tp > 1 and weights.bnb_saved(shape):
        raise InputError(
            f"--tensor-parallel-size: found {i.tp} for a checkpoint saved with bitsandbytes ({i.config_file}), expected 1: vLLM refuses it "
            "('Prequant BitsAndBytes models with tensor parallelism is not supported. Please try with pipeline parallelism.', "
            "vllm/model_executor/model_loader/bitsandbytes_loader.py, v0.23.0); an unquantized checkpoint under --quantization bitsandbytes splits"
        )
    shape = hfconfig.at_max_model_len(shape, i.max_model_len)
    total, source = weights.checkpoint_size(hfconfig.load(i.index_text, i.index_file), i.index_file) if i.index_text else (None, "")
    if i.checkpoint_bytes is not None:  # a size typed: split over the stages and ranks as an index's total_size is
        total, source = i.checkpoint_bytes, "checkpoint size typed"
    if i.tp < 1 or shape.heads % i.tp:
        raise InputError(f"--tensor-parallel-size: found {i.tp}, expected a divisor of the model's {shape.heads} attention heads")
    if hfconfig.MLA not in shape.layers and shape.kv_heads % i.tp and i.tp % shape.kv_heads:  # vLLM asserts one or the other
        raise InputError(f"--tensor-parallel-size: found {i.tp}, expected a divisor or a multiple of the model's {shape.kv_heads} KV heads")
    if i.dcp < 1 or i.tp % i.dcp:
        raise InputError(f"--decode-context-parallel-size: found {i.dcp}, expected a divisor of the tensor parallel size {i.tp}")
    try:
        rules = ranks.in_flight(kvlayout.version(i.engine_version), i.pp)
        hybrid = bool(hfconfig.RECURRENT & set(shape.layers))
        prefix_caching = kvlayout.prefix_caching_on(shape, rules, i.prefix_caching)
        mode = kvlayout.mamba_cache_mode(shape, rules, i.prefix_caching)
        settings = kvlayout.Settings(tp=i.tp, kv_cache_dtype=i.kv_cache_dtype, block_size=i.block_size,
                                     prefill_budget=i.prefill_budget, speculative_tokens=i.speculative_tokens, dcp=i.dcp,
                                     mamba_cache_mode=mode)  # fmt: skip
        req = kvlayout.request(shape, settings, i.max_model_len, rules)
        redundant = ranks.redundant_experts(i.eplb_config, i.num_redundant_experts, rules, i.enable_eplb)
        par = ranks.Parallel(i.tp, i.dp, i.enable_expert_parallel, i.enable_eplb, redundant)
        ranks.check_parallel(shape, par, rules)
        split = ranks.moe_experts(shape) > 0 and (i.dp > 1 or ranks.uses_ep(par, rules))
        group = ranks.expert_ranks(shape, par, rules, i.pp, i.pp_layer_partition, total, source or "index total_size") if split else None
        heavy = max(range(len(group[0])), key=lambda r: (group[0][r].local_experts, -r)) if group else 0
        own = ranks.rank_tensors(shape, par, rules, heavy) if split else None
        # the vision tower on the first stage alone under Model Runner V2 from v0.33.0, as the pool counts it (multimodal.tower_stages)
        tower_first = i.pp > 1 and not multimodal.tower_stages(1, rel, predict.model_runner_v2(shape, rel))[0]
        stage_list = ranks.stages(shape, settings, i.max_model_len, rules, i.pp, i.pp_layer_partition, total, source or "index total_size", own,
                                  tower_first=tower_first)  # fmt: skip
    except ValueError as error:
        if isinstance(error, InputError):
            raise
        if shape.compress_ratios:  # DeepSeek V4: the weights are counted, the cache is not (kvlayout.DSV4_KV_NOTE): say the weights
            counted = weights.per_rank(shape, i.tp, total, source)
            raise InputError(f"{error}; the weights alone, from the {counted.source}: {fmt(counted.model, 'GiB')} a rank at TP {i.tp}") from None
        raise InputError(str(error)) from None
    w = weights.per_rank(shape, i.tp, total, source)
    if split:  # the rank with the most experts, which holds the most
        w = weights.Weights(stage_list[0].weights_bytes, stage_list[-1].drafter_bytes, w.source, w.checkpoint_total)
    notes = [n for n in [beyond_read(i.engine_version), hfconfig.unchecked_note(shape.architecture), kv_note] if n] + list(shape.defaults)
    notes += parallel_notes(shape, par, rules, group, heavy)
    if shape.indexer:
        notes.append(hfconfig.INDEXER_NOTE)
    if i.speculative_tokens and not shape.drafter_layers:
        notes.append(
            f"{i.speculative_tokens} speculative tokens, and the config has no MTP layers for a drafter: a drafter from another checkpoint "
            "(EAGLE, a draft model) is not counted, neither its weights nor its KV cache; vLLM refuses num_speculative_tokens given "
            "without a method or model ('num_speculative_tokens was provided but without speculative model', vllm/config/speculative.py, 0.33.0)"
        )
    if shape.per_layer:
        wide = len(shape.layers) * shape.per_layer.hidden
        gemma = "gemma4" if shape.architecture.startswith("Gemma4") else "gemma3n"
        first = "0.19.0" if gemma == "gemma4" else "0.10.1.1"
        shared = any(kind in (hfconfig.SHARED_FULL, hfconfig.SHARED_SLIDING) for kind in shape.layers)
        unbuilt = [
            f"the KV-shared layers' k_proj, v_proj and k_norm, which vLLM {first} to 0.29.x also build and load (qkv_proj on "
            f"every layer; from 0.30.0 {gemma}.py builds q_proj alone, as counted here)"
        ] if shared else []  # fmt: skip
        if shape.architecture.endswith("ForConditionalGeneration"):
            cls = shape.architecture
            unbuilt.append(
                f"the per-layer embedding buffer {gemma}_mm.py allocates at load, max_num_batched_tokens x {wide:,} values in the "
                f"model's dtype ({cls}.per_layer_embeddings: {fmt(2048 * wide * shape.dtype_bytes, 'MiB')} at 2,048 tokens)"
            )
        if unbuilt:
            notes.append("not modeled: " + "; and ".join(unbuilt))
    if shape.float32_checkpoint:
        notes.append("the checkpoint is float32: vLLM's --dtype auto loads it in bfloat16 (float16 on GPUs without it), as figured here")
    notes += mm_notes
    if backend:
        notes.append(backend)
    tower_bytes = 0
    if shape.tower is not None:
        tw = shape.tower
        tower_bytes = sum(weights.tensor_bytes(t, weights.quant_of(shape), shape.dtype_bytes) for t in weights.tower_tensors(tw, i.tp))
        tower_bytes = round(tower_bytes * weights.checkpoint_scale(shape, total, source or "index total_size")[0])
        tower_split = weights.tower_split(tw, i.tp)
        how = (
            "whole on every rank (--mm-encoder-tp-mode data)"
            if tw.data_parallel and i.tp > 1
            else f"its attention whole on every rank (its {tw.heads} heads do not divide over {i.tp} ranks), its MLP divided"
            if tower_split == 1 and i.tp > 1 and tw.kind == "internvit"
            else f"whole on every rank: its {tw.heads} heads do not divide over {i.tp} ranks"
            if tower_split == 1 and i.tp > 1
            else f"its projections divided over the {i.tp} ranks"
        )
        if tw.kind == "gemma4-unified":  # no blocks: the embedders, patch_dense divided, the projections whole (gemma4_unified.py)
            how = f"patch_dense divided over the {i.tp} ranks, the rest whole on each"
            notes.append(f"the weights include the {tw.name}, {fmt(tower_bytes, 'GiB')}" + (f" a rank, {how}" if i.tp > 1 else ""))
        else:
            notes.append(
                f"the weights include the {tw.name} ({tw.depth} blocks) and its projector, {fmt(tower_bytes, 'GiB')}" + (f" a rank, {how}" if i.tp > 1 else "")
            )
        if tw.kind == "gemma4-unified":
            notes.append(
                f"the {tw.name}' profile (the dummy images', videos' and audio's soft tokens, gemma4_unified.py "
                "Gemma4UnifiedProcessingInfo.get_mm_max_tokens_per_item, and the encoder outputs kept) is not modeled"
            )
        elif not tw.image_tokens:
            glm = "the largest image is the processor's size.longest_edge in pixels (preprocessor_config.json; glm4_1v.py get_image_size_with_most_features)"
            intern = (
                "an image is cut into tiles up to max_dynamic_patch (plus a thumbnail), 256 tokens a tile, but a video of one tile a frame "
                "as long as max_model_len holds is served only where the tokenizer has a video token (internvl.py ctx_video_token): "
                "the tokenizer's vocabulary"
            )
            moonvit = "its dummy image and video chunk are sized by the image processor (preprocessor_config.json, media_tokens_calculator)"
            unread = (
                intern
                if tw.kind == "internvit"
                else glm
                if tw.kind == "glm4v"
                else moonvit
                if tw.kind == "moonvit"
                else "the most tiles an image is cut into is the processor's max_patches (preprocessor_config.json)"
            )
            notes.append(f"the {tw.name}'s encoder profile (its dummy images' forward and outputs) is not modeled: {unread}, which the config does not give")
    if shape.max_positions is not None and i.max_model_len > shape.max_positions:
        notes.append(f"max_model_len {i.max_model_len:,} is above the config's max_position_embeddings ({shape.max_positions:,}): "
                     "vLLM refuses it unless VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 is set")  # fmt: skip
    if hybrid and rules.one_state_page:
        notes.append(f"vLLM {rules.name} keeps one mamba state a request, prefix caching or not")
    elif shape.attention_free and i.prefix_caching is None:
        notes.append(f"prefix caching is off by default for attention-free models in vLLM {rules.name}: one mamba state a request, "
                     f"its block max_model_len ({i.max_model_len:,} tokens), so the tokens printed are the concurrency x max_model_len")  # fmt: skip
    elif hybrid and i.prefix_caching is None and not prefix_caching:
        notes.append(f"prefix caching is off by default for hybrid models in vLLM {rules.name}: one mamba state a request")
    if hybrid and mode == "all":
        notes.append(f"with prefix caching on, vLLM {rules.name} runs {shape.architecture} in mamba 'all' mode: a state page for every block of context")
    if hybrid and mode == "align" and hfconfig.LINEAR in shape.layers and rules.name == kvlayout.NEWEST:
        notes.append(
            "from vLLM 0.33.0 a gated-delta layer whose prefill runs on FlashInfer holds one page more a request (a prefill checkpoint), not counted here"
        )
    whole_req = req
    tight = max(stage_list, key=lambda st: (st.kv_block_bytes, st.weights_bytes))  # the fewest blocks from one pool
    tight_shape = shape
    if i.pp > 1:
        tight_shape = ranks.stage_shape(shape, tight.first_layer, tight.end_layer, tight.rank == i.pp - 1)
        req = kvlayout.request(tight_shape, settings, i.max_model_len, rules)
        heaviest = max(stage_list, key=lambda st: st.weights_bytes)
        w = weights.Weights(heaviest.weights_bytes, stage_list[-1].drafter_bytes, w.source, w.checkpoint_total)
        notes.append(
            f"pipeline parallel {i.pp}: layers "
            + ", ".join(str(st.layers) for st in stage_list)
            + (" as VLLM_PP_LAYER_PARTITION gives them" if i.pp_layer_partition else " as vLLM splits them (vllm/distributed/utils.py get_pp_indices)")
            + f"; the weights are the heaviest stage's (stage {heaviest.rank}), the KV figures the stage with the fewest blocks (stage {tight.rank})"
        )
        if ranks.whole_model_check(rules):
            notes.append(
                f"vLLM {rules.name} checks one request of the whole model's layers against the smallest stage's pool "
                "(vllm/v1/core/kv_cache_utils.py get_kv_cache_configs, 0.14.0 to 0.16.x): the smallest pool that starts is the whole model's"
            )
    # under expert or data parallel the LoRA slots and the offloaded parameters follow the rank's own
    # experts (calc/engine/lora.py, calc/engine/offload.py): those of the rank with the most
    if i.lora is not None:
        lora.check_parallel(ranks.moe_experts(shape), i.tp, i.dp, ranks.uses_ep(par, rules), rel)
    stage_lora = (
        tuple(lora.per_rank(shape, i.tp, i.lora, range(st.first_layer, st.end_layer), st.rank == 0, st.rank == i.pp - 1, rel, own) for st in stage_list)
        if i.lora is not None
        else None
    )
    host, moved = None, tuple(0 for _ in stage_list)
    if i.offload is not None:
        moved = tuple(offload.moved(shape, i.tp, i.offload.cpu_offload_gib, range(st.first_layer, st.end_layer), own) for st in stage_list)
        moved = tuple(min(m, st.weights_bytes) for m, st in zip(moved, stage_list, strict=True))  # a checkpoint smaller than the count
        every = _moved_by_every_rank(shape, par, rules, group, stage_list, i.offload.cpu_offload_gib) if split and group else None
        host = offload.host_use(i.offload, moved, i.tp, rules.engine, every)
        notes += list(host.notes)
        said = offload.unified_note(host, w.model)
        if said:
            notes.append(said)
    floor = whole_req.floor_bytes if i.pp > 1 and ranks.whole_model_check(rules) else max(st.kv_floor_bytes for st in stage_list)
    lay = req.layout
    out = ModelReport(
        architecture=shape.architecture,
        family=shape.family,
        layers=shape.parameters_note,
        tp=i.tp,
        kv_cache_dtype=i.kv_cache_dtype,
        max_model_len=i.max_model_len,
        engine_rules=_engine_rules(rules, i.engine_version),
        weights_bytes_per_rank=w.model,
        weights_source=w.source,
        drafter_bytes_per_rank=w.drafter,
        checkpoint_bytes=w.checkpoint_total,
        kv_bytes_per_token=int(req.bytes_per_token) if req.bytes_per_token.denominator == 1 else req.bytes_per_token,
        kv_fixed_bytes_per_request=req.fixed_bytes,
        kv_bytes_per_request=req.bytes_per_request,
        kv_floor_bytes=floor,
        null_block_bytes=req.null_block_bytes,
        block_size=min(g.spec.block_size for g in lay.groups),
        kv_groups=len(lay.groups),
        layers_per_group=lay.group_size,
        padding_layers=lay.padding_layers,
        pp=i.pp,
        dp=i.dp,
        enable_expert_parallel=i.enable_expert_parallel,
        ep_size=par.ep_size if ranks.uses_ep(par, rules) else 1,
        world_size=i.tp * i.pp * i.dp,
        ranks=tuple(
            replace(
                stage_report(st),
                lora_bytes=stage_lora[st.rank].device_bytes if stage_lora else None,
                offloaded_bytes=moved[st.rank] if host else None,
                experts=_experts_report(group[st.rank], heavy) if group else None,
            )
            for st in stage_list
        ),
        lora=_lora_report(i.lora, stage_lora, i.tp * i.dp) if i.lora is not None and stage_lora else None,  # every worker of every replica
        tower=_tower_report(shape.tower, tower_bytes, i.tp) if shape.tower is not None else None,
        offload=_offload_report(host, max(st.weights_bytes - m for st, m in zip(stage_list, moved, strict=True))) if host is not None else None,
        notes=tuple(notes),
        config=config,
        shape=read,
    )
    if i.pool is not None:
        p = kvlayout.pool(tight_shape, settings, i.max_model_len, i.pool, rules, req)
        check_shape = shape if i.pp > 1 and ranks.whole_model_check(rules) else tight_shape
        largest = kvlayout.largest_max_model_len(check_shape, settings, i.pool, rules)
        out = replace(
            out,
            pool_bytes=i.pool,
            kv_tokens=p.tokens,
            max_concurrency=p.concurrency,
            kv_blocks=p.blocks,
            largest_max_model_len=largest,
            kv_tokens_all_replicas=p.tokens * i.dp,  # each replica its own pool and requests
            # vLLM's one-request check (vllm/v1/core/kv_cache_utils.py, _check_enough_kv_cache_memory):
            # below it the start is refused, and the figures above are never printed
            one_request_fits=largest >= i.max_model_len,
        )
    return out


def beyond_read(text: str | None) -> str | None:
    """Where --engine-version names a release newer than the newest whose source was read
    (calc/engine/predict/defaults.py NEWEST_READ, the 0.34.0 wheel), what the report says of it: the rules
    followed are the newest release's, and the version typed is beyond it. None otherwise."""
    if not text or release_of(text) <= predict.NEWEST_READ:
        return None
    newest = f"{predict.NEWEST_READ[0]}.{predict.NEWEST_READ[1]}.0"
    return f"--engine-version {text.strip()} is beyond vLLM {newest}, the newest release read: the rules used are those of {newest}"


def _engine_rules(rules: kvlayout.Version, version: str | None) -> str:
    """The rules the report follows, as its first line names them."""
    how = f"{'V0' if rules.engine == 'v0' else 'V1'}, tokens printed from {rules.prints}"
    if beyond_read(version) is None:
        return f"vLLM {rules.name} ({how})"
    assert version is not None
    newest = f"{predict.NEWEST_READ[0]}.{predict.NEWEST_READ[1]}.0"
    return f"the rules of vLLM {newest}, the newest release read ({how}); {version.strip()} is beyond it"


def start_kv_dtype(config_text: str, file: str, kv_cache_dtype: str, engine_version: str | None) -> str:
    """--kv-cache-dtype as a start runs with it (kvlayout.checkpoint_kv_dtype: auto under a ModelOpt checkpoint that
    names its KV quantization takes that); as given where the config or the version does not read, which
    model_report then names."""
    try:
        quant = hfconfig.shape(hfconfig.load(config_text, file), file).quantization
        return kvlayout.checkpoint_kv_dtype(quant, kv_cache_dtype, release_of(engine_version))[0]
    except InputError:
        return kv_cache_dtype


def release_of(text: str | None) -> tuple[int, int]:
    """(major, minor) of --engine-version; the newest read when none is given."""
    return predict.release(text)


_TOWER_SOURCES = {
    "qwen3-vl": "qwen3_vl.py",
    "qwen2.5-vl": "qwen2_5_vl.py",
    "qwen2-vl": "qwen2_vl.py",
    "glm4v": "glm4_1v.py",
    "siglip": "siglip.py and gemma3_mm.py",
    "pixtral": "pixtral.py and mistral3.py",
    "llama4": "mllama4.py",
    "internvit": "intern_vit.py and internvl.py",
    "gemma3n": "gemma3n_mm.py",
    "gemma4": "gemma4_mm.py",
    "gemma4-unified": "gemma4_unified.py",
    "clip": "clip.py and llava.py",
    "moonvit": "kimi_k25_vit.py and kimi_k25.py",
}


def _tower_report(tw: hfconfig.Tower, bytes_per_rank: int, tp: int) -> TowerReport:
    """The vision tower as one rank holds it."""
    return TowerReport(
        name=tw.name,
        blocks=tw.depth,
        bytes_per_rank=bytes_per_rank,
        replicated=tp > 1 and weights.tower_split(tw, tp) == 1,
        mm_encoder_tp_mode="data" if tw.data_parallel else "weights",
        source=f"vllm/model_executor/models/{_TOWER_SOURCES[tw.kind]}, 0.33.0",
    )


def parallel_notes(shape: hfconfig.Shape, par: ranks.Parallel, rules: kvlayout.Version, group: Any, heavy: int) -> list[str]:
    """What data and expert parallel do to this model's ranks, in words."""
    out = []
    experts = ranks.moe_experts(shape)
    if par.dp > 1:
        out.append(
            f"data parallel {par.dp}: {par.dp} replicas of TP {par.tp}, {par.tp * par.dp} ranks a stage; each replica sizes its own KV pool "
            "from its own free memory and serves its own requests (the figures here are one replica's)"
        )
    if experts and group and ranks.uses_ep(par, rules):
        counts = [e.local_experts for e in group[0]]
        dealt = "even" if len(set(counts)) == 1 else f"uneven: {max(counts)} on rank {heavy}, {min(counts)} on others"
        out.append(
            f"expert parallel over TP x DP = {par.ep_size} ranks: {experts} routed experts, {dealt} (determine_expert_map); each expert whole "
            "on its rank; attention, embeddings and dense layers as under TP; the weights are the rank with the most experts"
        )
        if par.eplb:
            out.append(
                f"EPLB with {par.redundant} redundant experts: {experts} + {par.redundant} = {experts + par.redundant} physical experts a layer, "
                f"{counts[heavy]} on each of the {par.ep_size} EP ranks, each copy a whole expert's weights "
                "(fused_moe/layer.py global_num_experts, 0.10.1 to 0.33.0)" + ("" if par.redundant else ": no copies, the experts only rearranged")
            )
        if ranks.shared_replicated(shape, par, rules):
            out.append("with EP, TP > 1 and DP > 1 the shared experts are built whole on every rank (sequence-parallel MoE, deepseek_v2.py)")
    elif par.ep and experts and par.ep_size == 1:
        out.append("--enable-expert-parallel on one rank (TP x DP = 1): the rank holds every expert, as without it")
    elif par.ep and experts:
        out.append(
            f"--enable-expert-parallel at TP 1: vLLM {rules.name} deals experts only when TP > 1 (fused_moe/layer.py): they stay sharded over the DP ranks"
        )
    elif experts and par.dp > 1:
        out.append(f"without --enable-expert-parallel each expert is divided over TP x DP = {par.tp * par.dp} ranks (flatten_tp_across_dp)")
    if par.dp > 1 and hfconfig.MLA in shape.layers:
        out.append(
            "MLA keeps one whole latent a token on every rank, divided by no TP: under data parallel attention each rank's pool holds its own "
            f"requests, {par.dp} times the tokens of TP {par.tp * par.dp}, whose ranks would all hold the same ones"
        )
    return out


def _experts_report(each: tuple[ranks.ExpertRank, ...], heavy: int) -> ExpertsReport:
    """A stage's TP x DP ranks: the routed experts and weights of each."""
    return ExpertsReport(
        local_experts=each[heavy].local_experts,
        expert_ranks=tuple(ExpertRankReport(e.ep_rank, e.dp_rank, e.tp_rank, e.local_experts, e.weights_bytes) for e in each),
    )


def _moved_by_every_rank(
    shape: hfconfig.Shape, par: ranks.Parallel, rules: kvlayout.Version, group: Any, stage_list: tuple[ranks.Stage, ...], gib: Fraction
) -> int:
    """What --cpu-offload-gb moves off every TP x DP rank of every stage together, each rank from
    its own experts (ranks holding as many experts move as many bytes: each count figured once)."""
    total = 0
    for st, each in zip(stage_list, group, strict=True):
        figured: dict[int, int] = {}
        for e in each:
            if e.local_experts not in figured:
                own = ranks.rank_tensors(shape, par, rules, e.ep_rank)
                figured[e.local_experts] = min(offload.moved(shape, par.tp, gib, range(st.first_layer, st.end_layer), own), e.weights_bytes)
            total += figured[e.local_experts]
    return total


def _lora_report(cfg: lora.Lora, each: tuple[lora.LoraBytes, ...], tp: int) -> LoraReport:
    top = max(each, key=lambda b: b.device_bytes)
    return LoraReport(
        max_loras=cfg.max_loras,
        max_lora_rank=cfg.max_lora_rank,
        max_cpu_loras=cfg.max_cpu_loras or cfg.max_loras,
        slot_bytes=top.slot_bytes,
        device_bytes_per_rank=top.device_bytes,
        host_bytes_per_worker=each[0].host_bytes,
        host_bytes=each[0].host_bytes * tp * len(each),
        modules=top.modules,
        source="vllm/lora/layers (create_lora_weights) and model_manager.py, 0.33.0",
    )


def _offload_report(h: offload.HostUse, on_device: int) -> OffloadReport:
    return OffloadReport(
        offloaded_bytes_per_rank=h.offloaded_per_rank,
        weights_on_device_bytes_per_rank=on_device,
        offloaded_bytes=h.offloaded_bytes,
        kv_offloading_bytes=h.kv_offloading_bytes,
        swap_space_bytes=h.swap_bytes,
        host_bytes=h.host_bytes,
        unified_saving_bytes=0,
        unified_extra_bytes=h.kv_offloading_bytes + h.swap_bytes,
        source="vllm/model_executor/offloader/uva.py, vllm/config/cache.py and vllm/config/vllm.py, 0.33.0",
    )


def stage_report(st: ranks.Stage) -> StageReport:
    """One pipeline stage as the report's `ranks` list gives it."""
    per_token = st.kv_bytes_per_token
    return StageReport(
        rank=st.rank,
        layers=st.layers,
        first_layer=st.first_layer,
        end_layer=st.end_layer,
        holds=st.holds,
        weights_bytes=st.weights_bytes,
        drafter_bytes=st.drafter_bytes,
        kv_bytes_per_token=int(per_token) if per_token.denominator == 1 else per_token,
        kv_bytes_per_request=st.kv_bytes_per_request,
        kv_block_bytes=st.kv_block_bytes,
        kv_floor_bytes=st.kv_floor_bytes,
    )


def prediction_given(r: ModelReport, shape: hfconfig.Shape, start: predict.Start) -> predict.Given:
    """What the modeled report gives the pool's prediction (calc/engine/predict/ Given): the weights a
    rank with the drafter's layers when drafting (they load with the model, inside the profiler that
    prints 'Model loading took': gpu_model_runner.py load_model, drafter.load_model, 0.20.0), each
    pipeline stage's own, and under expert or data parallel the LoRA slots of each stage's rank with
    the most experts."""
    drafter = r.drafter_bytes_per_rank if start.drafter else 0
    own = tuple(st.weights_bytes + (st.drafter_bytes if start.drafter else 0) for st in r.ranks) if start.pp > 1 else None
    slots = tuple((st.lora_bytes or 0) // start.lora.max_loras for st in r.ranks) if expert_split(r, shape) and start.lora is not None else None
    weights_from = f"calc/engine/weights.py from the {r.weights_source}" + (
        f", with the drafter's layers {fmt(drafter, 'GiB')} (they load with the model: gpu_model_runner.py load_model, 0.20.0)" if drafter else ""
    )
    return predict.Given(r.weights_bytes_per_rank + drafter, weights_from, own, slots, rounding=not expert_split(r, shape))


def expert_split(r: ModelReport, shape: hfconfig.Shape) -> bool:
    """Whether the experts are split over data or expert parallel ranks: the pool is then the rank with the most experts'."""
    return (r.dp > 1 or r.ep_size > 1) and bool(ranks.moe_experts(shape))


def held_out_error(policy: Policy) -> HeldOutError | None:
    """The band the predicted pool was off by on the held-out public starts, as catalog/policy.yaml
    keeps it (scripts/pool_accuracy.py measures it; tests/test_predict.py checks it still holds)."""
    band = policy.get("prediction")
    if band is None:
        return None
    return HeldOutError(float(band["held_out_median_error"].fraction), float(band["held_out_p90_error"].fraction), int(band["held_out_starts"].count),
                        "catalog/policy.yaml prediction: the held-out public starts of models/pool_starts.yaml, nothing fitted to them "
                        "(scripts/pool_accuracy.py)")  # fmt: skip


def compile_cache_note(
    shape: hfconfig.Shape, card: predict.Card, start: predict.Start, topk: int, given: predict.Given, p: predict.Prediction
) -> tuple[str, ...]:
    """Where the compile's block of a first start is what sets the activation peak (predict.compile_block),
    what a later start that loads the compiled graph from vLLM's cache gets instead: the same start
    predicted again with the graph cached. The same in the command line and the browser's calculator."""
    if start.compile_cached or p.compile.bytes == 0:
        return ()
    cached = predict.predict(shape, card, replace(start, compile_cached=True), topk, given)
    gain = cached.available_kv_bytes - p.available_kv_bytes
    if gain <= 0 or cached.available_kv_bytes <= 0:  # nothing to gain, or no pool either way
        return ()
    return (
        f"the activation peak {fmt(p.activation.bytes, 'GiB')} is a first start's, which compiles the model inside the profile "
        f"({fmt(p.compile.bytes, 'GiB')} held at once); a later start that loads the compiled graph from vLLM's cache "
        f"(~/.cache/vllm/torch_compile_cache, 'Directly load') peaks at {fmt(cached.activation.bytes, 'GiB')} and leaves "
        f"{fmt(gain, 'GiB', down=True)} more a rank ({fmt(cached.available_kv_bytes, 'GiB')}): --compile-cached figures it",
    )


def prediction_notes(r: ModelReport, shape: hfconfig.Shape, start: predict.Start, card_name: str = "") -> tuple[str, ...]:
    """What a predicted pool says beside its figures: the model report's notes, a FlashInfer switch
    the release does not read, and under an expert split what the pool leaves out. The same in the
    command line (`calc model --gpu`) and the browser's calculator. A prediction is on a discrete card:
    what a unified-memory box would make of the host memory is left out."""
    notes = [n for n in r.notes if not n.startswith(offload.UNIFIED)]
    rel = predict.release(start.engine_version)
    if predict.extensible_kv_cache(rel, start.extensible_kv_cache):
        notes.append(predict.extensible.NOTE)
    if start.flashinfer_sampler and not (0, 8) <= rel < (0, 12):
        notes.append(
            f"--flashinfer-installed changes nothing on vLLM {rel[0]}.{rel[1]}: V1 samples with FlashInfer wherever it imports from 0.8.0 to "
            "0.11.x only; from 0.12.0 on VLLM_USE_FLASHINFER_SAMPLER=1 alone, and by default on NVIDIA cards from 0.21.0 "
            "(vllm/v1/sample/ops/topk_topp_sampler.py, vllm/envs.py)"
        )
    why = predict.plain_awq(rel, start.quantization, predict.awq_checkpoint(shape), predict.is_turing(card_name))
    dequant = (f"at {predict.AWQ_DEQUANT_TOKENS} tokens or more it dequantizes each weight whole before its matmul, counted in the "
               "activation peak")  # fmt: skip
    if why == "turing":
        notes.append(
            f"on a Turing card vLLM {rel[0]}.{rel[1]} runs an AWQ checkpoint with the plain AWQ kernel, not Marlin, which asks compute "
            f"capability 8.0 up to 0.13.x (quantization/utils/marlin_utils.py; 7.5 from 0.14.0): {dequant}"
        )
    elif why == "forced":
        notes.append(
            f"--quantization awq by name keeps vLLM {rel[0]}.{rel[1]} on the plain AWQ kernel, not Marlin ('so forcing awq', "
            f"quantization/awq_marlin.py): {dequant}; --quantization awq_marlin, or none, runs Marlin, faster and without that transient"
        )
    if shape.architecture == "GlmMoeDsaForCausalLM" and rel >= (0, 32) and r.kv_cache_dtype == "auto" and predict.is_sm100(card_name):
        notes.append(
            f"on a compute capability 10.x card vLLM {rel[0]}.{rel[1]} turns --kv-cache-dtype auto into fp8_e4m3 for GlmMoeDsaForCausalLM "
            "(model_executor/models/config.py, GlmMoeDsaForCausalLM.verify_and_update_config, from 0.32.0); the KV cache here is figured in "
            "the model's dtype, and the sparse backend's fp8 layout on that card is not modeled"
        )
    if expert_split(r, shape):
        notes.append(
            "on the card, the pool is the rank with the most experts'; the buffers the MoE's all-to-all exchange allocates across the "
            "TP x DP ranks are not counted, and a larger TP or more stages are not offered as fixes (they would change the expert split)"
        )
    return tuple(notes)


PIN_FLAG_FROM = (0, 11)  # --kv-cache-memory-bytes: read in vllm/v1/worker/gpu_worker.py of v0.11.0


PIN_BUFFER = 150 * 2**20  # vllm/v1/worker/gpu_worker.py: the 150 MiB its pool advice keeps back beside the terms (0.11.0, 0.33.0)


def card_pin(r: ModelReport, card: predict.Card, start: predict.Start, pin: int) -> CardPin:
    """The pinned pool on a discrete card: vLLM still runs the profile (which compiles the model), then
    returns the pin as the pool without sizing it from the utilization (vllm/v1/worker/gpu_worker.py
    determine_available_memory, v0.11.0 to v0.33.0). Beside the pool stay the weights, the non-torch
    memory and the LoRA slots; the warm-up passes, the CUDA graph capture and serving run beside it
    (compile_or_warm_up_model), so the profile's peak activation and the graphs count too, with the
    150 MiB vLLM's own advice keeps back (free - weights - peak - non-torch - graphs - 150 MiB,
    gpu_worker.py, 0.11.0 and 0.33.0). The graphs are vLLM's estimate from v0.20.0, and before it the
    same estimate over v0.20.0's capture sizes (graphs are captured there too, only not estimated)."""
    shape = r.shape
    assert shape is not None, "model_report keeps the config's Shape"
    p = predict.predict(shape, card, start, predict.experts_per_token(r.config), prediction_given(r, shape, start))
    graphs = p.cuda_graph.bytes
    if not graphs and not start.enforce_eager and predict.release(start.engine_version) < (0, 20) and card.vendor == "nvidia":
        graphs = predict.cuda_graph(shape, (0, 20), p.max_num_seqs, p.max_num_batched_tokens, False, card.vendor, tp=start.tp,
                                    topk=predict.experts_per_token(r.config)).bytes  # fmt: skip
    free = p.free_at_start
    held = card.total_bytes - free.bytes if free is not None else 0
    top = predict.highest_utilization(card.total_bytes, free.bytes) if free is not None else None  # the check runs with a pin too
    needs = held + p.weights.bytes + p.activation.bytes + p.non_torch.bytes + graphs + p.lora.bytes + PIN_BUFFER + pin
    return CardPin(card.name, card.total_bytes, pin, p.weights.bytes, p.activation.bytes, p.non_torch.bytes, graphs, p.lora.bytes, PIN_BUFFER, needs,
                   card.total_bytes - needs, needs <= card.total_bytes,
                   "vllm/v1/worker/gpu_worker.py determine_available_memory and compile_or_warm_up_model (v0.11.0 to v0.33.0): the pin is "
                   "the pool, the utilization sizes nothing; beside it, what is held before vLLM's start snapshot (its CUDA context, "
                   "NCCL's buffers, other processes: " + (free.source if free is not None else "none modeled") + "), the weights, the peak "
                   "activation, non-torch memory, LoRA slots, the CUDA graphs and vLLM's 150 MiB",
                   held, p.requested_bytes, free.bytes if free is not None else None,
                   p.requested_bytes <= free.bytes if free is not None else None, float(top) if top is not None else None)  # fmt: skip
