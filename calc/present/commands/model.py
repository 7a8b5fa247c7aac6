"""`model`: before the first start, weights and KV per rank from a config.json (modeled)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from calc.catalog.model import Catalog
from calc.present import inputs, vllmserve
from calc.present.commands.common import _flag, _frac, _host_memory, _int, read_text
from calc.present.commands.gate import available_list
from calc.units import InputError, fmt, parse_count, parse_memory, printed_sum, shown

if TYPE_CHECKING:  # the log reader and the others are imported by their commands only: the rest start faster
    from calc.checks import modeled as modeled_module
    from calc.checks import modelreport as modelreport_module
    from calc.engine import lora as lora_module
    from calc.engine import multimodal as multimodal_module
    from calc.engine import offload as offload_module
    from calc.engine import predict as predict_module


def _read_text(path: str, what: str) -> str:
    from calc import files

    try:
        return files.read_bounded(path).decode("utf-8")
    except OSError as error:
        raise InputError(f"{what} {path}: cannot read it ({error.strerror})") from None
    except UnicodeDecodeError:
        raise InputError(f"{what} {path}: not text, expected a JSON file") from None


def _config_path(path: str) -> str:
    """The config.json to read: the path given, or the one inside a checkpoint's folder, which is what vLLM's --model takes."""
    import os

    if not os.path.isdir(path):
        return path
    inside = os.path.join(path, "config.json")
    if not os.path.isfile(inside):
        raise InputError(vllmserve.without_config("config", path))
    return inside


def _beside_quant(config_text: str, config: str) -> tuple[str, str | None]:
    """The config with the hf_quant_config.json of its folder, where it has one and the config no quantization_config."""
    import os

    from calc.engine import hfconfig

    beside = os.path.join(os.path.dirname(config), hfconfig.HF_QUANT_CONFIG)
    if config == "-" or os.path.basename(config) == hfconfig.HF_QUANT_CONFIG or not os.path.isfile(beside):  # standard input has no folder
        return config_text, None
    return hfconfig.with_hf_quant_config(config_text, _read_text(beside, "quantization config"), config, beside)


def _length(args: argparse.Namespace, config_text: str, card: object, rel: tuple[int, int], gated: bool = False) -> tuple[int, bool, str]:
    """max_model_len as vLLM takes it: the number typed; none (or left out), the config's derived
    length; -1 or auto (0.14.0 and later), the derived length, to be fitted to the pool (a card's, a
    pin, or on a unified box, `gated`, the largest pin its gate passes). With the note that says so."""
    from calc.engine import hfconfig, predict

    raw = args.max_model_len
    if isinstance(raw, str) and raw.strip().lower() == "none":
        raw = None
    auto = isinstance(raw, str) and raw.strip().lower() in predict.AUTO_LENGTH
    if raw is not None and not auto:
        return _int(args, "max_model_len"), False, ""
    if auto and rel < predict.AUTO_LENGTH_FROM:
        raise InputError(f"--max-model-len: found {raw.strip()!r} on vLLM {rel[0]}.{rel[1]}, expected a token count (auto and -1 from 0.14.0)")
    if auto and card is None and args.pin is None and not gated:
        raise InputError(f"--max-model-len: found {raw.strip()!r} without a card or a pool, expected --gpu NAME, --total-memory SIZE or a pool to fit it to")
    tokens, source = hfconfig.derived_max_model_len(hfconfig.load(config_text, args.config), rel, args.config).given_none
    said = f"max_model_len {tokens:,}: " + ("auto, " if auto else "none given, ") + f"the model's own, from {source}"
    return tokens, auto, said


@dataclass(frozen=True)
class TakenPin:
    """The pin cmd_model took itself on a unified box where none was given, with where the
    MemAvailable it was taken against came from (a second reading must not differ)."""

    available_source: str


def cmd_model(
    catalog: Catalog | None, args: argparse.Namespace, said: tuple[str, ...] = (), taken: TakenPin | None = None, profiled: int | None = None
) -> object:
    """`profiled`: the length the profile ran at, where --max-model-len auto fitted a shorter one to its pool."""
    from dataclasses import replace

    from calc.checks import modeled, unified
    from calc.engine import derive, hfconfig, predict

    args.config = _config_path(args.config)
    if args.config == "-":  # standard input is read once: a second run of this command (auto, a pin taken) reuses it
        args.config_stdin = getattr(args, "config_stdin", None) or read_text("-")
        if not args.config_stdin.strip():
            raise InputError("config -: found nothing on standard input, expected the model's config.json piped in (calc model - < config.json)")
    config_text, read_as = hfconfig.read_as(args.config_stdin if args.config == "-" else _read_text(args.config, "config"), args.read_as, args.config)
    config_text, beside_note = _beside_quant(config_text, args.config)
    config_text = hfconfig.quantized_at_load(config_text, args.quantization, args.config)
    start_kv = modeled.start_kv_dtype(config_text, args.config, args.kv_cache_dtype, args.engine_version)
    card = _card(catalog, args)
    said = said or vllmserve.notes(args, card_read=card is not None and not card.unified)  # the rest of a pasted `vllm serve` line
    gated = None  # a unified-memory box: the pool is pinned and the start gated against MemAvailable, not predicted
    if card is not None and card.unified and catalog is not None:
        gated, card = catalog.boxes[card.id], None
    elif args.available is not None or args.overhead is not None:
        beside = f"beside {card.name}, a discrete card whose pool is predicted" if card is not None else "without a unified-memory box"
        raise InputError(f"{'--available' if args.available is not None else '--overhead'}: found {beside}, "
                         "expected --gpu of a unified-memory box (dgx-spark...): they gate its start against MemAvailable")  # fmt: skip
    if gated is not None and predict.release(args.engine_version) < modeled.PIN_FLAG_FROM:  # the gate takes a pin, which vLLM reads from 0.11.0
        earlier = "an earlier release sizes the pool from --gpu-memory-utilization against MemAvailable, which the start gate does not model"
        raise InputError(f"{_flag(args, 'pin')}: found for vLLM {args.engine_version} on the {gated['name']}, expected vLLM 0.11.0 or later, which "
                         f"takes a pool in bytes (vllm/v1/worker/gpu_worker.py determine_available_memory); {earlier}" if args.pin is not None else
                         f"--engine-version: found {args.engine_version} on the {gated['name']}, expected 0.11.0 or later: the start gate takes the "
                         f"pool pinned by --kv-cache-memory-bytes, which vLLM reads from 0.11.0; {earlier}")  # fmt: skip
    max_len, auto, length_note = _length(args, config_text, card, predict.release(args.engine_version), gated is not None)
    lora_cfg = _lora(args)
    host_cfg = _offload(args)
    mm_cfg = _multimodal(args)
    start = None
    if card is not None:
        compiling = vllmserve.compilation(
            predict.patch_release(args.engine_version), args.optimization_level, args.compilation_config,
            _int(args, "max_cudagraph_capture_size") if args.max_cudagraph_capture_size is not None else None, args.cudagraph_capture_sizes,
        )  # fmt: skip
        start = predict.Start(
            tp=_int(args, "tp"), pp=_int(args, "pp"), pp_layer_partition=args.pp_layer_partition, lora=lora_cfg, max_model_len=max_len,
            cpu_offload_gib=host_cfg.cpu_offload_gib if host_cfg else Fraction(0),
            utilization=_frac(args, "gpu_memory_utilization") if args.gpu_memory_utilization is not None else None,
            max_num_seqs=_int(args, "seats") if args.seats is not None else None,
            max_num_batched_tokens=_int(args, "prefill_budget") if args.prefill_budget is not None else None,
            enforce_eager=args.enforce_eager, kv_cache_dtype=start_kv, engine_version=args.engine_version, offline=args.offline,
            flashinfer_sampler=predict.flashinfer_sampler(args.flashinfer_installed, args.no_flashinfer_sampler), drafter=_int(args, "speculative_tokens") > 0,
            speculative_tokens=_int(args, "speculative_tokens"),
            prefix_caching=False if args.no_prefix_caching else True if args.prefix_caching else None,
            multimodal=mm_cfg, quantization=args.quantization, allow_long_max_model_len=args.allow_long_max_model_len,
            compile_cached=args.compile_cached, chunked_prefill=vllmserve.chunked(args), extensible_kv_cache=False if args.no_extensible_kv_cache else None,
            max_cudagraph_capture_size=compiling.max_size, cudagraph_capture_sizes=compiling.sizes, cudagraph_mode=compiling.mode,
            compiled=compiling.compiled, in_use=_in_use(args, card),
            profiled_len=profiled,
            model_len=hfconfig.derived_max_model_len(hfconfig.load(config_text, args.config), predict.release(args.engine_version), args.config).longest_taken,
        )  # fmt: skip
        said = (*said, *(n for n in compiling.notes if n not in said))
        predict.check_start(start)
        if args.pin is not None and _int(args, "pin") == 0:  # vLLM reads 0 as no pin (`if kv_cache_memory_bytes := ...`)
            raise InputError(f"{_flag(args, 'pin')}: found 0 beside a card, expected a pool above zero, or the flag left out: vLLM reads 0 as no "
                             "pin and sizes the pool from the utilization (vllm/v1/worker/gpu_worker.py determine_available_memory)")  # fmt: skip
        if args.pin is not None and predict.release(args.engine_version) < modeled.PIN_FLAG_FROM:
            raise InputError(f"{_flag(args, 'pin')}: found for vLLM {args.engine_version}, expected vLLM 0.11.0 or later, which takes a pool in bytes "
                             "(vllm/v1/worker/gpu_worker.py determine_available_memory), or the pin left out: the card predicts the pool")  # fmt: skip
    elif gated is not None and args.in_use is not None:
        raise InputError(f"--in-use: found on the {gated['name']}, a unified-memory box, expected it left out: what other processes hold is out of "
                         "MemAvailable already, which the gate reads (--available, or the box's idle reading)")  # fmt: skip
    elif gated is not None and (given := _card_flags(args)):
        raise InputError(f"{given[0]}: found beside the pinned pool on the {gated['name']}, expected it left out: on a unified-memory box the pin is "
                         "the pool, so nothing the card's prediction reads applies; the gate reads MemAvailable (--available, --overhead)")  # fmt: skip
    elif given := [*_card_flags(args), *(["--max-num-seqs"] if args.seats is not None and gated is None else [])]:
        raise InputError(f"{', '.join(given)}: found without a card, expected --gpu NAME or --total-memory SIZE")
    pp = _int(args, "pp")
    if args.pp_layer_partition is not None and pp == 1:
        raise InputError(
            "--pp-layer-partition: found with --pipeline-parallel-size 1, expected --pipeline-parallel-size N above 1 (it splits the layers over the pipeline stages)"
        )
    budget = _int(args, "prefill_budget") if args.prefill_budget is not None else None
    if budget is None and card is not None and start is not None:
        budget = predict.batch_on(start, card, hfconfig.batched_tokens_floor(hfconfig.load(config_text, args.config)))[0]
    inputs = modeled.ModelInputs(
        config_text=config_text,
        config_file=args.config,
        tp=_int(args, "tp"),
        kv_cache_dtype=args.kv_cache_dtype,
        max_model_len=max_len,
        pool=_int(args, "pin") if args.pin is not None else None,
        engine_version=args.engine_version,
        index_text=_read_text(args.index, "index") if args.index is not None else None,
        index_file=args.index or "model.safetensors.index.json",
        block_size=_int(args, "block_size") if args.block_size is not None else None,
        prefill_budget=budget or 8192,
        speculative_tokens=_int(args, "speculative_tokens"),
        dcp=_int(args, "dcp"),
        prefix_caching=False if args.no_prefix_caching else True if args.prefix_caching else None,
        pp=pp,
        pp_layer_partition=args.pp_layer_partition,
        lora=lora_cfg,
        offload=host_cfg,
        multimodal=mm_cfg,
        dp=parse_count(args.data_parallel_size, "--data-parallel-size", 1),
        enable_expert_parallel=args.enable_expert_parallel,
        enable_eplb=args.enable_eplb,
        eplb_config=args.eplb_config,
        num_redundant_experts=_int(args, "num_redundant_experts", 0) if args.num_redundant_experts is not None else None,
    )
    try:
        r = modeled.model_report(inputs)
    except hfconfig.ConfigError as error:  # a class calc does not read: the flag that reads it as one it does
        if args.read_as is not None:
            raise InputError(f"{error} (the config read as {args.read_as} by --read-as)") from None
        if not str(error).startswith((f"{args.config}: architectures[0]: found", f"{args.config}: architectures: found")):
            raise
        raise InputError(f"{error}; or --read-as CLASS to read it as a class whose layers it has, at your word") from None
    if card is not None and start is not None and args.pin is not None:  # the pool pinned: what decides is whether it fits beside the rest
        r = replace(r, card_pin=modeled.card_pin(r, card, start, _int(args, "pin")))
    elif card is not None and start is not None:
        r = _with_prediction(r, card, start, modeled.held_out_error(catalog.policy) if catalog else None)
    if gated is not None:
        assert catalog is not None, "a gated box is found in the catalog"
        available = available_list(args.available, 1)[0][0] if args.available is not None else None
        overhead = _int(args, "overhead") if args.overhead is not None else None
        if overhead is not None and not 16 * 2**20 <= overhead <= derive.box_total(gated).figure.size:
            raise InputError(f"--overhead: found {args.overhead.strip()!r}, {fmt(overhead, 'B')}, expected a rank's overhead from a measured start, "
                             "such as '6 GiB', at most the box's total (a number without a unit is bytes)")  # fmt: skip
        auto_read = args.available is not None and args.available.strip() == "auto"
        read = taken.available_source if taken else "this machine's /proc/meminfo (--available auto)" if auto_read else "given"
        seats = _int(args, "seats") if args.seats is not None else None
        g = unified.unified_gate(catalog, gated, r, _int(args, "pin") if args.pin is not None else 0, available, overhead, budget, seats, read,
                                 "the largest pin the gate passes (none given)" if taken else "the pin asked for", _int(args, "speculative_tokens") > 0)  # fmt: skip
        if args.pin is None:  # no pin: the largest the gate passes, then the tokens it holds, on the same MemAvailable reading
            again = {"pin": str(_largest_pin(g, gated["name"], args)), "available": str(g.available_bytes) if auto_read else args.available}
            return cmd_model(catalog, argparse.Namespace(**{**vars(args), **again}),
                             (*said, f"no --kv-cache-memory-bytes: the largest pin the start gate passes on the {gated['name']}, taken as the pin "
                                     f"(overhead {g.overhead_source}; MemAvailable {fmt(g.available_bytes, 'GiB')}, {g.available_source})"),
                             TakenPin(read))  # fmt: skip
        r = replace(r, gate=g)
    if auto:  # fitted as vLLM fits it: the largest length that passes the one-request check, at most the model's
        fit = r.largest_max_model_len
        if fit is not None and 0 < fit < max_len:
            fitted = f"{length_note}; {predict.auto_length_note(max_len, fit)}"
            again = {"max_model_len": str(fit), "prefill_budget": str(budget) if budget is not None else None}
            if start is not None:  # the defaults vLLM set before the fit stay
                seats = r.prediction.max_num_seqs if r.prediction else start.max_num_seqs  # a pin: no prediction, the release's default
                again["seats"] = str(seats if seats is not None else predict.batch_on(start, card, 0)[1]) if card is not None else None
            # the pool stays the one profiled at the model's own length: vLLM fits the length after the profile
            return cmd_model(catalog, argparse.Namespace(**{**vars(args), **again}), (*said, fitted), taken, max_len)
        length_note += f"; {predict.auto_length_note(max_len, fit)}"
    said = (*said, length_note) if length_note else said
    said = (*said, read_as) if read_as else said
    said = (*said, beside_note) if beside_note else said
    worst = _worst_prefill(args, r, budget or 8192)
    host = _host_memory(args, r.tp, r.pp, r.weights_bytes_per_rank, r.pool_bytes, offload=r.offload)
    sold = predict.sold_size_note(args.total_memory, catalog.boxes if catalog else {}) if args.total_memory is not None else None
    said = said + ((sold,) if sold else ()) + r.notes + ((worst.note,) if worst.note else ()) + (host.notes if host is not None else ())
    r = replace(r, worst_prefill=worst, host_memory=host, after_start=True, notes=said)
    if args.json:
        return r.to_json()
    lines = [
        f"{r.architecture} ({r.family}: {r.layers}), TP={r.tp}, KV {r.kv_cache_dtype}; {r.engine_rules}; all figures modeled",
        f"Weights per rank: {fmt(r.weights_bytes_per_rank, 'GiB')} (from the {r.weights_source})"
        + (f", drafter layers {fmt(r.drafter_bytes_per_rank, 'GiB')} more with speculative decoding" if r.drafter_bytes_per_rank else ""),
        f"KV per request at {fmt(r.max_model_len, 'count')} tokens: {fmt(r.kv_bytes_per_request, 'GiB')} = "
        f"{fmt(r.kv_bytes_per_token, 'count')} B a token + {fmt(r.kv_fixed_bytes_per_request, 'GiB' if r.kv_fixed_bytes_per_request >= 2**30 // 100 else 'count')}{'' if r.kv_fixed_bytes_per_request >= 2**30 // 100 else ' B'} fixed",
        f"  {r.kv_groups} KV group(s) of {r.layers_per_group} layers, block {r.block_size} tokens"
        + (f", {r.padding_layers} padding layer(s)" if r.padding_layers else ""),
        f"Smallest pool that starts: {fmt(r.kv_floor_bytes, 'B')} ({fmt(r.kv_floor_bytes, 'e9', 2, up=True)} rounded up)"
        + (
            f", the request and the block of {fmt(r.null_block_bytes, 'B')} vLLM 0.29.0 and later hold back before the one-request check"
            if r.null_block_bytes
            else ", one request (this build holds no block back before the check)"
        ),
    ]
    if r.kv_tokens is not None:
        assert r.pool_bytes is not None and r.max_concurrency is not None and r.largest_max_model_len is not None, "a pool that holds tokens is sized"
        lines += [
            f"Pool {fmt(r.pool_bytes, 'GiB')}: GPU KV cache size {fmt(r.kv_tokens, 'tokens')}, "
            f"maximum concurrency {fmt(r.max_concurrency, 'x')} at {fmt(r.max_model_len, 'count')}",
            f"Largest max_model_len one request fits: {fmt(r.largest_max_model_len, 'count')}"
            if r.shape is None or not r.shape.attention_free or r.kv_bytes_per_token
            else "Largest max_model_len one request fits: any, once one state does: an attention-free model's request holds its state "
            "whatever its length (vLLM's estimate returns the max_model_len set, or 0)",
        ]
        if r.one_request_fits is False and r.prediction is None:  # with a card, vLLM's verdict says it
            lines.insert(
                len(lines) - 2,
                f"vLLM refuses this start: one request at max_model_len {fmt(r.max_model_len, 'count')} does not fit this pool "
                "(its check raises before vLLM prints the pool's size and concurrency below)",
            )
    if r.prediction is not None:
        c = r.prediction
        terms = c.terms
        lines.insert(2, f"On {c.card} ({fmt(c.total_memory_bytes, 'GiB')}) x utilization {c.gpu_memory_utilization} = "
                        f"{fmt(c.requested_bytes, 'GiB')} requested; max_num_seqs {c.max_num_seqs}, max_num_batched_tokens {c.max_num_batched_tokens}")  # fmt: skip
        lines.insert(3, "  less " + ", ".join(f"{name} {fmt(t.bytes, 'GiB')}" for name, t in terms.items()))
        loaded = terms.get("weights")
        if loaded is not None and fmt(loaded.bytes, "GiB") != fmt(r.weights_bytes_per_rank, "GiB"):  # two weight figures: say why
            lines[3] += f"\n  weights {fmt(loaded.bytes, 'GiB')} as loaded, not {fmt(r.weights_bytes_per_rank, 'GiB')}: {loaded.source}"
        if (free := c.free_at_start) is not None:  # vLLM's check at start, before it loads anything: its parts as printed, the verdict on bytes
            lines[3] = (
                f"  free at vLLM's start check: {fmt(free.shown, 'GiB')} ({free.source}), "
                f"{'holds' if free.bytes >= c.requested_bytes else 'less than'} the {fmt(c.requested_bytes, 'GiB')} requested\n"
            ) + lines[3]
        # the requested share less the terms, as printed beside it (units.shown): a reader's subtraction
        if c.extensible_kv_cache:  # the pool measured after warmup: the terms come off the budget, not the request
            assert c.margin_bytes is not None and c.reserved_kv_bytes is not None and c.free_at_start_bytes is not None
            from calc.answers import report

            base = report.budget_as_printed(c.requested_bytes, c.free_at_start_bytes, c.margin_bytes, c.budget_bytes)
            lines[2] += (f"\n  measured after warmup (the extensible KV cache, vLLM 0.34.0's default): the terms come off "
                         f"{fmt(base, 'GiB')}, the smaller of the {fmt(c.requested_bytes, 'GiB')} requested and the "
                         f"{fmt(c.free_at_start_bytes, 'GiB')} free at start less a {fmt(c.margin_bytes, 'GiB')} margin; 'Available KV cache memory' "
                         f"prints {fmt(c.reserved_kv_bytes, 'GiB')}, the range reserved, not the pool")  # fmt: skip
        else:
            base = shown(c.requested_bytes, "GiB")
        left = base - printed_sum([t.bytes for t in terms.values()], "GiB")
        pool = fmt(left, "GiB") if c.available_kv_bytes > 0 else f"none, {fmt(-left, 'GiB')} short"
        if c.available_kv_bytes > 0 and fmt(left, "GiB") != fmt(c.available_kv_bytes, "GiB"):  # the terms add up as printed; say the exact figure too
            pool += f" (as the printed terms add up; {fmt(c.available_kv_bytes, 'GiB')} from the exact bytes)"
        lines.insert(4, f"KV pool a rank (predicted): {pool}; vLLM's verdict: {c.verdict} ({c.verdict_reason})")
        band = c.held_out_error if c.available_kv_bytes > 0 else None  # beside a pool, not a refusal for want of one
        if band is not None:
            lines.insert(5, f"  on {band.starts} held-out public starts the predicted pool was off by {fmt(band.median, '%', 2)} at the median, "
                            f"{fmt(band.p90, '%', 2)} at the 90th percentile (scripts/pool_accuracy.py)")  # fmt: skip
        at = 5 + (band is not None)
        for i, f in enumerate(c.fixes):
            lines.insert(at + i, f"  passes with {f.change} ({f.flags}): pool {fmt(f.available_kv_bytes, 'GiB')}")
        if c.settings_that_fit is not None:
            lines.insert(at + len(c.fixes), "  " + _fit_line(c.settings_that_fit))
    if r.lora is not None:
        lo = r.lora
        lines.insert(2, f"LoRA: {lo.max_loras} slot(s) of rank {lo.max_lora_rank} on each rank, {fmt(lo.device_bytes_per_rank, 'GiB')} "
                        f"allocated at load beside the weights ({lo.modules} modules); {lo.max_cpu_loras} adapter(s) on the host, "
                        f"at most {fmt(lo.host_bytes, 'GiB')} over every worker")  # fmt: skip
    if r.offload is not None:
        of = r.offload
        lines.insert(2, f"Host memory: {fmt(of.offloaded_bytes_per_rank, 'GiB')} of weights a rank moved by --cpu-offload-gb "
                        f"({fmt(of.weights_on_device_bytes_per_rank, 'GiB')} stay on the device), KV offloading {fmt(of.kv_offloading_bytes, 'GiB')}, "
                        f"swap {fmt(of.swap_space_bytes, 'GiB')}: {fmt(of.host_bytes, 'GiB')} on the host in all")  # fmt: skip
    if r.dp > 1 or r.ep_size > 1:
        lines[1:1] = _parallel_lines(r)
    if r.pp > 1:
        lines.insert(2, f"Pipeline parallel {r.pp}, one rank of each stage:")
        for n, st in enumerate(r.ranks):
            holds = f" + {', '.join(st.holds)}" if st.holds else ""
            lines.insert(3 + n, f"  stage {st.rank}: layers {st.first_layer}-{st.end_layer - 1} ({st.layers}{holds}): weights "
                                f"{fmt(st.weights_bytes, 'GiB')}, KV {fmt(st.kv_bytes_per_token, 'count')} B a token")  # fmt: skip
    if r.gate is not None:
        lines += _gate_lines(r.gate, catalog.boxes[r.gate.box]["name"] if catalog else r.gate.box)
        if r.one_request_fits is False and r.gate.passes:
            lines[-1] += "; but vLLM refuses the start before it serves: one request does not fit the pin (above)"
    if r.card_pin is not None:
        lines += _card_pin_lines(r.card_pin)
        if r.one_request_fits is False and r.card_pin.fits:
            lines[-1] += "; but vLLM refuses the start before it serves: one request does not fit the pin (above)"
    lines += [f"Note: {note}" for note in r.notes]
    return "\n".join(lines)


def _largest_pin(g: modelreport_module.UnifiedGate, box: str, args: argparse.Namespace) -> int:
    """The largest pin the gate passes (unified.unified_gate, as the gate prints it); what is missing
    where the gate cannot size one or none passes."""
    from calc.checks import unified

    if g.needs_bytes is None:
        measured = g.overhead_source == "typed" or g.overhead_source.startswith("from ")
        want = ("a pin such as 10e9, or settings inside the gate's calibration (--max-num-seqs, --max-num-batched-tokens)" if measured
                else "a pin such as 10e9, or --overhead, a rank's overhead from a measured start")  # fmt: skip
        room = (
            f"; {unified.known_names(g)} alone leave {fmt(g.room_for_overhead_bytes, 'GiB', down=True)} of MemAvailable for the pin and the overhead"
            if g.room_for_overhead_bytes is not None
            else ""
        )
        raise InputError(f"--kv-cache-memory-bytes: found nothing on the {box}, whose pool is the one pinned; the gate cannot size the largest pin "
                         f"({g.outside_calibration}{room}): expected {want}")  # fmt: skip
    if g.largest_pin_bytes is None:
        where = f", read from {g.available_source}" if args.available is not None and args.available.strip() == "auto" else ""
        raise InputError(f"--kv-cache-memory-bytes: found nothing on the {box}, and no pin passes its gate: the weights, overhead and headroom "
                         f"alone need {fmt(g.needs_bytes, 'GiB')} of the {fmt(g.available_bytes, 'GiB')} MemAvailable{where}; expected a smaller "
                         "model, fewer weights a rank (--tensor-parallel-size over more boxes) or more memory available")  # fmt: skip
    return g.largest_pin_bytes


def _card_flags(args: argparse.Namespace) -> list[str]:
    """The flags of a card's prediction given, as the command line spells them."""
    flags = (("gpu_memory_utilization", "--gpu-memory-utilization"), ("enforce_eager", "--enforce-eager"), ("offline", "--offline"),
             ("flashinfer_installed", "--flashinfer-installed"), ("no_flashinfer_sampler", "--no-flashinfer-sampler"),
             ("allow_long_max_model_len", "--allow-long-max-model-len"), ("compile_cached", "--compile-cached"), ("in_use", "--in-use"),
             ("no_extensible_kv_cache", "--no-enable-extensible-kv-cache"))  # fmt: skip
    return [flag for key, flag in flags if getattr(args, key) not in (None, False)]


def _in_use(args: argparse.Namespace, card: predict_module.Card) -> int:
    """--in-use: what other processes hold on each card, below the card's total."""
    if args.in_use is None:
        return 0
    from calc.engine.predict import startup

    held = parse_memory(args.in_use, "--in-use")
    startup.check_in_use(held, card.total_bytes, card.name, context=card.context_bytes)
    return held


def _gate_lines(g: modelreport_module.UnifiedGate, box: str) -> list[str]:
    """The start gate on a unified-memory box: each term, the needs as the terms print, MemAvailable
    and the margin from the printed figures, the largest pin that passes."""
    from calc.answers import report

    if g.needs_bytes is None:
        measured = g.overhead_source == "typed" or g.overhead_source.startswith("from ")
        over = g.passes is False  # the known terms alone over MemAvailable
        lines = [f"Start gate on {box}: " + ("refused whatever the overhead, which is unknown" if over else "outside calibration")
                 + f" ({g.outside_calibration})" + ("" if measured or over else "; give --overhead, a rank's overhead from a measured start")]  # fmt: skip
        if g.room_for_overhead_bytes is not None:
            known, room = report.needs_as_printed(g.terms), report.margin_as_printed(g.available_bytes, g.terms)
            lines += [f"  known: a rank needs {fmt(known, 'GiB')} = " + " + ".join(f"{t.name} {fmt(t.bytes, 'GiB')}" for t in g.terms if t.bytes)
                      + ", and the overhead, unknown",
                      f"  against MemAvailable {fmt(g.available_bytes, 'GiB')} ({g.available_source}): "
                      + (f"{fmt(room, 'GiB')} left for the overhead: the start passes if its overhead is at most that" if not over
                         else f"refused whatever the overhead: the known terms alone are {fmt(abs(room), 'GiB')} over")]  # fmt: skip
        return lines
    needs, margin = report.needs_as_printed(g.terms), report.margin_as_printed(g.available_bytes, g.terms)
    return [
        f"Start gate on {box} (overhead {g.overhead_source}; {g.seats:,} sequences and {g.prefill_budget:,} batched tokens, the calibration's unless "
        "given by --max-num-seqs and --max-num-batched-tokens)",
        f"  a rank needs {fmt(needs, 'GiB')} = " + " + ".join(f"{t.name} {fmt(t.bytes, 'GiB')}" for t in g.terms if t.bytes),
        f"  against MemAvailable {fmt(g.available_bytes, 'GiB')} ({g.available_source}): "
        + (f"passes, {fmt(margin, 'GiB')} to spare" if g.passes else f"refused, {fmt(-margin, 'GiB')} short")
        + (f"; the largest pin that passes: {fmt(g.largest_pin_bytes, 'e9', 2, down=True)}" if g.largest_pin_bytes else "; no pin passes"),
    ]


def _parallel_lines(r: modeled_module.ModelReport) -> list[str]:
    """Data and expert parallel: the ranks of each replica, their experts and weights, grouped."""
    out = [f"Ranks: {r.world_size} = TP {r.tp} x PP {r.pp} x DP {r.dp}" + (f"; expert parallel over {r.ep_size} ranks" if r.ep_size > 1 else "")]
    for st in r.ranks:
        kinds: dict[tuple[int, int], list[int]] = {}
        for e in st.experts.expert_ranks if st.experts else ():
            kinds.setdefault((e.local_experts, e.weights_bytes), []).append(e.ep_rank)
        where = f"stage {st.rank}: " if r.pp > 1 else ""
        for (local, held), members in kinds.items():
            shown_ranks = (
                f"rank {members[0]}"
                if len(members) == 1
                else f"ranks {members[0]}-{members[-1]}"
                if members == list(range(members[0], members[-1] + 1))
                else "ranks " + ", ".join(map(str, members))
            )
            out.append(f"  {where}{shown_ranks}: {local} routed experts a layer, weights {fmt(held, 'GiB')}")
    if r.kv_tokens is not None and r.kv_tokens_all_replicas is not None and r.dp > 1:
        out.append(f"  {r.dp} replicas x {fmt(r.kv_tokens, 'tokens')} = {fmt(r.kv_tokens_all_replicas, 'tokens')} over the replicas")
    return out


def _lora(args: argparse.Namespace) -> lora_module.Lora | None:
    """--enable-lora and its sizes, as vLLM's LoRAConfig takes them (defaults 1 slot, rank 16)."""
    from calc.engine import lora

    sizes = {"--max-loras": args.max_loras, "--max-lora-rank": args.max_lora_rank, "--max-cpu-loras": args.max_cpu_loras}
    if not args.enable_lora:
        given = [name for name, value in sizes.items() if value is not None]
        if given:
            raise InputError(f"{given[0]}: found without --enable-lora, expected --enable-lora beside it")
        return None
    cfg = lora.Lora(
        _int(args, "max_loras") if args.max_loras is not None else 1,
        _int(args, "max_lora_rank") if args.max_lora_rank is not None else 16,
        _int(args, "max_cpu_loras") if args.max_cpu_loras is not None else None,
    )
    lora.check(cfg)
    return cfg


def _offload(args: argparse.Namespace) -> offload_module.Offload | None:
    """--cpu-offload-gb, --kv-offloading-size (and its backend) and --swap-space, in GiB as vLLM takes them."""
    from calc.engine import offload

    if args.kv_offloading_backend is not None and args.kv_offloading_size is None:
        raise InputError("--kv-offloading-backend: found without --kv-offloading-size, expected the size beside it (vLLM offloads nothing without it)")
    if args.cpu_offload_gb is None and args.kv_offloading_size is None and args.swap_space is None:
        return None

    def gib(text: str | None, flag: str) -> Fraction | None:
        return None if text is None else inputs.gib_at_least_zero(text, flag)

    o = offload.Offload(
        gib(args.cpu_offload_gb, "--cpu-offload-gb") or Fraction(0),
        gib(args.kv_offloading_size, "--kv-offloading-size"),
        args.kv_offloading_backend or "native",
        gib(args.swap_space, "--swap-space"),
    )
    offload.check(o)
    return o


def _multimodal(args: argparse.Namespace) -> multimodal_module.Settings | None:
    """--mm-encoder-tp-mode and --limit-mm-per-prompt, as vLLM spells them."""
    from calc.engine import multimodal

    if args.mm_encoder_tp_mode is None and args.limit_mm_per_prompt is None:
        return None
    cfg = multimodal.Settings(
        args.mm_encoder_tp_mode if args.mm_encoder_tp_mode is not None else "weights",
        multimodal.parse_limits(args.limit_mm_per_prompt) if args.limit_mm_per_prompt is not None else None,
    )
    multimodal.check(cfg)
    return cfg


def _worst_prefill(args: argparse.Namespace, r: modeled_module.ModelReport, chunk: int) -> modeled_module.WorstPrefill:
    """What a prefill at max_model_len takes beyond the profile run (calc/engine/afterstart.py), and
    against --left-after-start whether it fits."""
    from calc.checks import modeled
    from calc.engine import afterstart, hfconfig

    shape = r.shape
    assert shape is not None, "model_report keeps the config's Shape"
    seqs = (r.prediction.max_num_seqs if r.prediction else None) or (_int(args, "seats") if args.seats is not None else 256)
    if hfconfig.MLA in shape.layers:
        extra = afterstart.mla_context(shape, r.tp, r.max_model_len, seqs, r.block_size, chunk)
    else:
        extra = afterstart.Extra(0, (), "plain attention: the kernels tile the scores, the last chunk's activations are the profile run's")
    left = parse_memory(args.left_after_start, "--left-after-start") if args.left_after_start is not None else None
    fits, said = afterstart.verdict(left, extra) if left is not None else (None, "")
    return modeled.WorstPrefill(
        extra.bytes, tuple(modeled.PrefillPart(n, b) for n, b in extra.parts), extra.source, extra.after_profile_bytes, left, fits, said
    )


def _fit_line(fit: predict_module.Limits) -> str:
    """The settings that fit, each with the others as given (predict.limits), in one line."""
    seqs = fit.max_num_seqs
    top = fit.utilization_ceiling if fit.utilization_ceiling is not None else fit.utilization_top
    parts = [
        f"max_model_len up to {fit.max_model_len:,}" if fit.max_model_len is not None else "no max_model_len starts",
        (f"max_num_seqs up to {seqs:,}" + (" (max_num_batched_tokens)" if fit.seqs_limited_by == "max_num_batched_tokens" else ""))
        if seqs is not None else "no max_num_seqs starts",
        (f"gpu_memory_utilization from {float(fit.gpu_memory_utilization):.2f}" if fit.gpu_memory_utilization is not None
         else f"no gpu_memory_utilization up to {float(top):.2f} starts")
        + (f" to {float(top):.2f} (vLLM's free-memory check at start)" if fit.utilization_ceiling is not None and fit.gpu_memory_utilization is not None else ""),
    ]  # fmt: skip
    return "each alone, the rest as given: " + "; ".join(parts)


def _card(catalog: Catalog | None, args: argparse.Namespace) -> predict_module.Card | None:
    from calc.engine import predict

    if args.gpu is not None and args.total_memory is not None:
        raise InputError("--gpu: found beside --total-memory, expected one of them")
    if args.total_memory is not None:
        return predict.card_from_total(args.total_memory)
    if args.gpu is None:
        return None
    if catalog is None:
        raise InputError("--gpu: found no catalog to look the card up in, expected --total-memory instead")
    return predict.card_of_box(predict.find_box(catalog.boxes, args.gpu))


def _card_pin_lines(c: modelreport_module.CardPin) -> list[str]:
    """The pinned pool against the card: each term, the sum, the margin from the printed figures."""
    from calc.answers import report

    sized = c.terms
    needs = report.needs_as_printed(sized)
    margin = report.margin_as_printed(c.total_bytes, sized)
    return [
        f"On {c.card} ({fmt(c.total_bytes, 'GiB')}), the pool pinned at {fmt(c.pin_bytes, 'GiB')}: vLLM takes the pin as the pool and "
        "sizes nothing from --gpu-memory-utilization, though its start check still asks that much of the card free "
        "(vllm/v1/worker/gpu_worker.py determine_available_memory, request_memory)",
        f"  the pin and what stays beside it: {fmt(needs, 'GiB')} = " + " + ".join(f"{t.name} {fmt(t.bytes, 'GiB')}" for t in sized)
        + (f"; fits, {fmt(margin, 'GiB')} to spare" if c.fits
           else f"; {fmt(-margin, 'GiB')} over the card: CUDA out of memory once the pool is allocated (at its allocation or the warm-up after it)")
        + (f"; the largest pin the card holds beside the rest: {fmt(c.largest_pin_bytes, 'e9', 2, down=True)}"
           if c.largest_pin_bytes > 0 else "; no pin fits beside the rest: fewer weights a rank"),
        *([_pin_refused_at_start(c)] if not c.passes_start_check else []),
    ]  # fmt: skip


def _pin_refused_at_start(c: modelreport_module.CardPin) -> str:
    """The pinned start vLLM's free-memory check refuses before it loads anything."""
    assert c.free_at_start_bytes is not None
    lower = (f"--gpu-memory-utilization {c.utilization_at_most:.2f} or lower passes it" if c.utilization_at_most
             else "no utilization passes it: less held by other processes")  # fmt: skip
    return (f"  but vLLM refuses at start: free memory on device ({fmt(c.free_shown, 'GiB')}/{fmt(c.total_bytes, 'GiB')}) is less "
            f"than the {fmt(c.requested_bytes, 'GiB', up=True)} the utilization asks (vllm/v1/worker/gpu_worker.py init_device); with a pin the "
            f"utilization sizes nothing, so {lower}")  # fmt: skip


def _with_prediction(
    r: modeled_module.ModelReport, card: predict_module.Card, start: predict_module.Start, band: modeled_module.HeldOutError | None = None
) -> modeled_module.ModelReport:
    """The modeled report with the pool predicted on the card: each term with its source, vLLM's verdict.
    With speculative tokens the drafter's layers load with the model, inside the profiler that
    prints 'Model loading took' (gpu_model_runner.py load_model, drafter.load_model, 0.20.0): they
    are weights, on the last stage."""
    from dataclasses import replace

    from calc.checks import modeled
    from calc.engine import predict

    data, shape = r.config, r.shape
    assert shape is not None, "model_report keeps the config's Shape"
    split = modeled.expert_split(r, shape)
    topk = predict.experts_per_token(data)
    given = modeled.prediction_given(r, shape, start)
    p = predict.predict(shape, card, start, topk, given)
    terms = {
        t.name: modeled.PredictedTerm(t.bytes, t.source)
        for t in (p.weights, p.lora, p.activation, p.non_torch, p.cuda_graph, p.graph_kept)
        if (t.name != "lora" or start.lora) and (t.name != "graph_estimate_kept" or p.measured)
    }
    pool = p.available_kv_bytes
    found = predict.fixes(shape, card, start, topk, given)
    notes = modeled.prediction_notes(r, shape, start, card.name) + modeled.compile_cache_note(shape, card, start, topk, given, p)
    if split:  # a larger TP or more stages would be figured without the expert split: not offered
        found = [f for f in found if f.start.tp == start.tp and f.start.pp == start.pp]
    prediction = modeled.CardPrediction(
        card=card.name,
        card_source=card.source,
        total_memory_bytes=p.total_bytes,
        gpu_memory_utilization=float(p.utilization),
        requested_bytes=p.requested_bytes,
        max_num_seqs=p.max_num_seqs,
        max_num_batched_tokens=p.max_num_batched_tokens,
        batch_source=p.batch_source,
        activation_peak_bytes=p.activation.bytes,
        forward_peak_bytes=p.forward.bytes,
        sampler_warmup_bytes=p.sampler.bytes,
        compile_block_bytes=p.compile.bytes,
        non_torch_bytes=p.non_torch.bytes,
        cuda_graph_bytes=p.cuda_graph.bytes,
        terms=terms,
        available_kv_bytes=pool,
        verdict=p.verdict,
        verdict_reason=p.reason,
        fixes=tuple(modeled.PredictedFix(f.change, f.flags, f.prediction.available_kv_bytes, f.prediction.kv_tokens) for f in found),
        tightest_rank=p.tightest_stage,
        settings_that_fit=predict.limits(shape, card, start, topk, given, predict.own_length(shape, start)),
        held_out_error=band if pool > 0 and not p.measured else None,  # the band of a predicted pool checked on public starts
        free_at_start_bytes=p.free_at_start.bytes if p.free_at_start is not None else p.measured.free_at_start if p.measured else None,
        # said where the check bites or was asked for (--in-use)
        free_at_start=p.free_at_start if start.in_use or p.verdict == "free memory" else None,
        extensible_kv_cache=p.measured is not None,
        budget_bytes=p.budget_bytes,
        margin_bytes=p.measured.margin if p.measured else None,
        reserved_kv_bytes=p.reserved_kv_bytes,
    )
    return replace(
        r,
        prediction=prediction,
        pool_bytes=pool if pool > 0 else None,
        kv_tokens=p.kv_tokens,
        max_concurrency=p.max_concurrency,
        kv_blocks=None,
        largest_max_model_len=p.largest_max_model_len,
        one_request_fits=p.largest_max_model_len is not None and p.largest_max_model_len >= r.max_model_len,
        notes=notes,
        ranks=tuple(replace(st, pool=_stage_pool(sp)) for st, sp in zip(r.ranks, p.stages or (None,) * len(r.ranks), strict=True)),
    )


def _stage_pool(sp: predict_module.StagePool | None) -> modeled_module.StagePoolTerms | None:
    """A pipeline stage's own pool terms, for its entry in `ranks`."""
    from calc.checks import modeled

    if sp is None:
        return None
    return modeled.StagePoolTerms(
        lora_bytes=sp.lora_bytes,
        activation_peak_bytes=sp.activation_bytes,
        cuda_graph_bytes=sp.cuda_graph_bytes,
        available_kv_bytes=sp.available_kv_bytes,
        kv_blocks=sp.kv_blocks,
        non_torch_bytes=sp.non_torch_bytes,
    )
