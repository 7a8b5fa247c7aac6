"""The rest of a `vllm serve` command line, so that `calc model` takes a command pasted whole: the
flags of vllm/engine/arg_utils.py and vllm/entrypoints/common/cli_args.py (v0.33.0, with earlier
releases' spellings) that calc has no input for. Those that size no GPU memory are read and set
aside; those that do, in a way calc does not model, are read and named in a note beside the figures,
which then take vLLM's default for them. A flag of neither table is refused as before. The compile's
and the graphs' settings (-O, --compilation-config, the capture sizes) are read here into one
Compilation, for the command line and the Before-the-first-start calculator alike."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from calc.engine.multimodal import MODALITIES

# No GPU memory of theirs: the server, logging, the tokenizer, parsers, the checkpoint's location,
# the scheduler's order. True: the flag takes a value; "+": one value or more; False: a switch.
ASIDE: Mapping[str, bool | str] = {
    # the OpenAI-compatible server (entrypoints/common/cli_args.py FrontendArgs)
    "--host": True, "--port": True, "--uds": True, "--api-key": True, "--root-path": True, "--served-model-name": "+",
    "--chat-template": True, "--chat-template-content-format": True, "--response-role": True, "--tool-call-parser": True,
    "--tool-parser-plugin": True, "--reasoning-parser": True, "--reasoning-parser-plugin": True, "--uvicorn-log-level": True,
    "--ssl-keyfile": True, "--ssl-certfile": True, "--ssl-ca-certs": True, "--ssl-cert-reqs": True, "--ssl-ciphers": True,
    "--allowed-origins": True, "--allowed-methods": True, "--allowed-headers": True, "--middleware": True, "--max-log-len": True,
    "--lora-modules": "+", "--api-server-count": True, "--enable-auto-tool-choice": False, "--enable-request-id-headers": False,
    "--disable-uvicorn-access-log": False, "--disable-fastapi-docs": False, "--enable-prompt-tokens-details": False,
    "--enable-server-load-tracking": False, "--enable-force-include-usage": False, "--return-tokens-as-token-ids": False,
    "--enable-log-outputs": False, "--headless": False, "--disable-log-requests": False, "--enable-log-requests": False,
    "--no-enable-log-requests": False, "--disable-log-stats": False,
    # the model's files and tokenizer (engine/arg_utils.py, ModelConfig and LoadConfig)
    "--tokenizer": True, "--tokenizer-mode": True, "--tokenizer-revision": True, "--revision": True, "--code-revision": True,
    "--hf-config-path": True, "--hf-token": True, "--download-dir": True, "--ignore-patterns": "+", "--config-format": True,
    "--trust-remote-code": False, "--skip-tokenizer-init": False, "--max-parallel-loading-workers": True, "--use-tqdm-on-load": False,
    "--no-use-tqdm-on-load": False, "--seed": True, "--generation-config": True, "--override-generation-config": True,
    "--max-logprobs": True, "--logprobs-mode": True,
    # how the ranks are reached and when requests are scheduled
    "--distributed-executor-backend": True, "--master-addr": True, "--master-port": True, "--nnodes": True, "--node-rank": True,
    "--data-parallel-address": True, "--data-parallel-rpc-port": True, "--data-parallel-backend": True,
    "--distributed-timeout-seconds": True, "--scheduling-policy": True, "--stream-interval": True, "--async-scheduling": False,
    "--no-async-scheduling": False, "--long-prefill-token-threshold": True, "--max-num-partial-prefills": True,
    "--structured-outputs-config": True, "--guided-decoding-backend": True, "--log-level": True, "--otlp-traces-endpoint": True,
    "--collect-detailed-traces": True, "--worker-use-ray": False, "--engine-use-ray": False, "--use-v2-block-manager": False,
    # more of the server, its logs and metrics, and the request queue (engine/arg_utils.py and entrypoints/common/cli_args.py,
    # v0.33.0; --enable-reasoning and the guided-decoding switches of earlier releases)
    "--allow-credentials": False, "--allowed-local-media-path": True, "--allowed-media-domains": "+", "--disable-frontend-multiprocessing": False,
    "--enable-tokenizer-info-endpoint": False, "--enable-ssl-refresh": False, "--exclude-tools-when-tool-choice-none": False,
    "--log-config-file": True, "--log-error-stack": False, "--logging-config": True, "--show-hidden-metrics-for-version": True,
    "--tool-server": True, "--trust-request-chat-template": False, "--trust-request-mm-kwargs": False,
    "--default-chat-template-kwargs": True, "--reasoning-effort-map": True, "--sse-keep-alive-interval": True, "--enable-log-deltas": False,
    "--enable-per-request-metrics": False, "--enable-offline-docs": False, "--disable-access-log-for-endpoints": True, "--grpc-port": True,
    "--data-parallel-supervisor-port": True, "--prefix-caching-hash-algo": True, "--enable-reasoning": False,
    "--guided-decoding-disable-fallback": False, "--guided-decoding-disable-any-whitespace": False,
    "--guided-decoding-disable-additional-properties": False, "--kv-cache-metrics": False, "--kv-cache-metrics-sample": True,
    "--cudagraph-metrics": False, "--enable-mfu-metrics": False, "--custom-histogram-buckets": True, "--aggregate-engine-logging": False,
    "--enable-logging-iteration-details": False, "--per-request-spec-decode-metrics": False, "--shutdown-timeout": True,
    "--tool-strict-level": True, "--mm-hasher-algorithm": True, "--safetensors-load-strategy": True, "--pt-load-map-location": True,
    "--numa-bind": False, "--cpu-distributed-timeout-seconds": True, "--max-num-queued-reqs": True, "--max-num-queued-tokens": True,
    "--logits-processor-pattern": True, "--data-parallel-rank": True, "--data-parallel-start-rank": True, "--data-parallel-size-local": True,
    "--data-parallel-hybrid-lb": False, "--data-parallel-external-lb": False, "--data-parallel-multi-port-external-lb": False,
    "--device": True, "--tokenizer-pool-size": True, "--preemption-mode": True, "--num-scheduler-steps": True, "--disable-cascade-attn": False,
    "--mm-processor-cache-type": True, "--enable-flashinfer-autotune": False, "--no-enable-flashinfer-autotune": False,
    "--logits-processors": "+", "--model-loader-extra-config": True, "--disable-chunked-mm-input": False, "--diffusion-config": True,
}  # fmt: skip

# Memory of theirs that calc does not model: each with the figure it moves. True / "+" / False as above.
NOT_MODELED: Mapping[str, tuple[bool | str, str]] = {
    "--max-seq-len-to-capture": (True, "the CUDA graphs captured (V0)"),
    "--disable-custom-all-reduce": (False, "non-torch memory under tensor parallel (the custom all-reduce buffers)"),
    "--attention-backend": (True, "the attention backend's buffers and the CUDA graphs"),
    "--speculative-config": (True, "the drafter's weights, its KV and the graphs (--speculative-tokens N reads a model's own MTP layers)"),
    "--hf-overrides": (True, "the model's shape (pass the config as overridden)"),
    "--num-gpu-blocks-override": (True, "the pool (vLLM sizes it to the blocks given)"),
    "--disable-sliding-window": (False, "the KV of the sliding-window layers (each then holds the whole context)"),
    "--disable-hybrid-kv-cache-manager": (False, "the KV layout of models with layers of several kinds"),
    "--kv-transfer-config": (True, "the KV connector's buffers"),
    "--mm-processor-kwargs": (True, "the multimodal profile's inputs"),
    "--mm-processor-cache-gb": (True, "host memory of the multimodal processor cache"),
    "--skip-mm-profiling": (False, "the multimodal encoder's share of the profile"),
    "--mamba-ssm-cache-dtype": (True, "the mamba state's size"),
    "--runner": (True, "a pooling runner keeps no KV cache for generation"),
    "--convert": (True, "a pooling runner keeps no KV cache for generation"),
    "--task": (True, "a pooling task keeps no KV cache for generation (V0's --task)"),
    "--load-format": (True, "the weights where the format quantizes as it loads (bitsandbytes, gguf)"),
    "--model-impl": (True, "the model's build (the Transformers backend keeps no rope cache, its own kernels)"),
    "--all2all-backend": (True, "the expert-parallel all-to-all buffers"),
    "--enable-dbo": (False, "the dual-batch overlap's micro-batches"),
    "--mm-ipc-gpu-memory-gb": (True, "GPU memory reserved for multimodal inputs off the pool"),
    "--mamba-cache-dtype": (True, "the mamba state's size"),
    "--mamba-block-size": (True, "the mamba state pages"),
    "--kv-cache-dtype-skip-layers": (True, "the KV bytes of the layers left in the model's dtype"),
    "--calculate-kv-scales": (False, "the KV scales' buffers"),
    "--enable-prompt-embeds": (False, "the prompt-embedding buffers"),
    "--spec-method": (True, "the drafter's weights, its KV and the graphs (--speculative-tokens N reads a model's own MTP layers)"),
    "--spec-model": (True, "the drafter's weights and KV"),
    "--spec-tokens": (True, "the drafted tokens' graphs (--speculative-tokens N models them for a model's own MTP layers)"),
    "--performance-mode": (True, "the CUDA graphs captured (interactivity captures 1 to 32 tokens)"),
    "--enable-batch-sharded-sampling": (False, "the sampler warm-up's rows"),
    "--prefill-context-parallel-size": (True, "the KV a rank holds under prefill context parallel"),
    "--rope-scaling": (True, "the rope cache (pass the config as scaled)"),
    "--attention-config": (True, "the attention backend's buffers and the CUDA graphs"),
    "--video-pruning-rate": (True, "the M-RoPE cache, 4 x the positions with pruning on, and the video items profiled"),
    "--mamba-cache-mode": (True, "the mamba state pages a request holds"),
    "--speculative-model": (True, "the drafter's weights and KV (V0's flag)"),
    "--num-speculative-tokens": (True, "the drafted tokens (V0's flag; --speculative-tokens N models a model's own MTP layers)"),
    "--max-num-active-seqs": (True, "the sequences the sampler warms up for"),
    "--max-num-scheduled-tokens": (True, "the tokens a step runs, the profile's batch"),
    "--mm-encoder-attn-backend": (True, "the vision tower's attention buffers"),
    "--rope-theta": (True, "the rope cache"),
    "--lora-dtype": (True, "the LoRA slots' bytes"),
    "--fully-sharded-loras": (False, "the LoRA slots a rank holds"),
    "--moe-backend": (True, "the fused-expert workspace"),
    "--offload-backend": (True, "the weights kept on the card"),
    "--cpu-offload-params": (True, "the weights kept on the card"),
    "--quantization-config": (True, "the weights' quantization"),
}  # fmt: skip

# The first release whose `vllm serve` has a flag, each read in that release and found absent in the one
# before it (vllm/engine/arg_utils.py and vllm/entrypoints/openai/cli_args.py of every release from 0.11.0
# to 0.18.0, patch releases included): an earlier release refuses the line (argparse: unrecognized
# arguments). 0.11.1 took most of 0.12.0's new flags. A flag first seen later than 0.18.0, or already
# in 0.11.0, has no entry: its first release was not read (but --cuda-graph-sizes, read in 0.8.5 and 0.9.0).
FIRST_RELEASE: Mapping[str, tuple[int, int, int]] = {
    **dict.fromkeys(("--reasoning-parser-plugin", "--master-addr", "--master-port", "--nnodes", "-n", "--node-rank", "-r", "--stream-interval",
                     "--aggregate-engine-logging", "-dph", "--data-parallel-external-lb", "-dpe", "--all2all-backend", "--mamba-block-size",
                     "--mm-encoder-attn-backend", "--cudagraph-capture-sizes", "--max-cudagraph-capture-size", "--kv-offloading-size",
                     "--kv-offloading-backend"), (0, 11, 1)),
    **dict.fromkeys(("--kv-cache-metrics", "--kv-cache-metrics-sample", "--prefill-context-parallel-size", "-pcp", "-cc"), (0, 12, 0)),
    **dict.fromkeys(("--cudagraph-metrics", "--attention-backend", "--attention-config", "-ac"), (0, 13, 0)),
    **dict.fromkeys(("--default-chat-template-kwargs", "--enable-log-deltas", "--enable-mfu-metrics", "--enable-offline-docs",
                     "--enable-logging-iteration-details", "-ep"), (0, 14, 0)),
    **dict.fromkeys(("--ssl-ciphers", "--mamba-cache-mode"), (0, 15, 0)),
    **dict.fromkeys(("--disable-access-log-for-endpoints", "--enable-flashinfer-autotune", "--no-enable-flashinfer-autotune"), (0, 16, 0)),
    **dict.fromkeys(("--language-model-only", "--performance-mode", "--moe-backend", "--offload-backend", "--cpu-offload-params"), (0, 17, 0)),
    **dict.fromkeys(("--distributed-timeout-seconds", "--shutdown-timeout"), (0, 18, 0)),
    "--cuda-graph-sizes": (0, 9, 0),  # SchedulerConfig.cuda_graph_sizes, in 0.9.0's vllm/config.py and engine/arg_utils.py, not 0.8.5's
}  # fmt: skip
# The first release whose `vllm serve` no longer has a flag: --cuda-graph-sizes, deprecated for
# --cudagraph-capture-sizes from 0.11.1 and gone from 0.13.0's vllm/engine/arg_utils.py
GONE_FROM: Mapping[str, tuple[int, int, int]] = {"--cuda-graph-sizes": (0, 13, 0)}


def out_of_release(typed: list[str] | None, version: str | None) -> None:
    """Refuse, in one line, a flag typed on a serve line for a release that has no such flag
    (FIRST_RELEASE, GONE_FROM): vLLM itself refuses that line. No version: the newest rules."""
    from calc.engine.predict.defaults import LATEST, patch_release
    from calc.units import InputError

    rel = patch_release(version)
    given = f"vLLM {version.strip()}" if version else f"vLLM {LATEST[0]}.{LATEST[1]}.0"
    said = given if version else f"{given} (the newest rules read: no --engine-version)"
    for flag in dict.fromkeys(typed or ()):
        first, gone = FIRST_RELEASE.get(flag), GONE_FROM.get(flag)
        if first is not None and rel < first:
            expected = f"vLLM {_dotted(first)} or later, the first release that has it"
        elif gone is not None and rel >= gone:
            expected = f"a release before vLLM {_dotted(gone)}, the first that has it no longer"
        else:
            continue
        raise InputError(f"{flag}: found with {said}, expected {expected} (vllm/engine/arg_utils.py, vllm/entrypoints/openai/cli_args.py): "
                         f"{given} refuses the line (unrecognized arguments)")  # fmt: skip


def _dotted(rel: tuple[int, ...]) -> str:
    return ".".join(map(str, rel))


# Load formats that read the checkpoint's tensors as they are (vllm/model_executor/model_loader/__init__.py LoadFormats,
# v0.33.0); the bitsandbytes and gguf formats of earlier releases quantize or dequantize as they load, which calc reads
# from the config (--quantization bitsandbytes) or not at all
PLAIN_FORMATS = frozenset({"auto", "hf", "dummy", "fastsafetensors", "instanttensor", "ipc_cache", "mistral", "modelexpress", "npcache", "pt",
                           "runai_streamer", "runai_streamer_sharded", "safetensors", "sharded_state", "tensorizer"})  # fmt: skip

# 16-bit dtypes: the widths calc models; vLLM loads a float32 checkpoint in bfloat16 under auto (vllm/config/model.py _resolve_auto_dtype)
DTYPES_16 = frozenset({"auto", "half", "float16", "bfloat16", "fp16", "bf16"})


def dests() -> frozenset[str]:
    """Every namespace attribute declare() stores a flag under."""
    return frozenset(
        {*(dest(f) for f in (*ASIDE, *NOT_MODELED)), "vllm_dtype", "cudagraph_capture_sizes", "compilation_config", "vllm_model_tag", "vllm_typed"}
    )


def dest(flag: str) -> str:
    """The namespace attribute a set-aside flag is stored under: apart from every input's key."""
    return "vllm_" + flag.lstrip("-").replace("-", "_").lower()


def declare(p: argparse.ArgumentParser) -> None:
    """The flags of both tables and --dtype on `model`'s parser, unlisted in its help but for a line."""
    for flag, takes in [*ASIDE.items(), *((f, t) for f, (t, _) in NOT_MODELED.items())]:
        if takes is False:
            p.add_argument(flag, dest=dest(flag), action="store_true", default=False, help=argparse.SUPPRESS)
        else:
            p.add_argument(flag, dest=dest(flag), nargs="+" if takes == "+" else None, default=None, help=argparse.SUPPRESS)
    p.add_argument("--served-model-tag", dest="vllm_model_tag", action="append", default=None, help=argparse.SUPPRESS)  # normalize's
    p.add_argument("--vllm-typed", dest="vllm_typed", action="append", default=None, help=argparse.SUPPRESS)  # normalize's: out_of_release
    p.add_argument("--cudagraph-capture-sizes", dest="cudagraph_capture_sizes", nargs="+", default=None, metavar="N",
                   help="with a card: the token counts vLLM captures a CUDA graph for, in place of its grid")  # fmt: skip
    # its deprecated spelling in v0.12.0 and v0.13.0 (engine/arg_utils.py)
    p.add_argument("--cuda-graph-sizes", dest="cudagraph_capture_sizes", nargs="+", default=None, help=argparse.SUPPRESS)
    p.add_argument("--compilation-config", dest="compilation_config", default=None, metavar="JSON",
                   help="with a card: its cudagraph_mode, cudagraph_capture_sizes, max_cudagraph_capture_size and mode 0 are modeled, "
                        "any other key named in a note")  # fmt: skip
    p.add_argument("-cc", dest="compilation_config", default=None, help=argparse.SUPPRESS)
    p.add_argument("--dtype", dest="vllm_dtype", default=None,
                   help="vLLM's --dtype: auto, half, float16 or bfloat16 (16-bit weights, as calc models them); other flags of "
                        "`vllm serve` that size no memory (--host, --port, --served-model-name, --trust-remote-code...) are read "
                        "and set aside, those calc does not model (--compilation-config, --max-cudagraph-capture-size...) named in a note")  # fmt: skip


def notes(args: argparse.Namespace, card_read: bool) -> tuple[str, ...]:
    """What the answer says of the vLLM flags read from these tables; a dtype calc does not model
    refused. Chunked prefill and the CUDA graphs' sizes are modeled where a card's pool is predicted
    (`card_read`: --gpu or --total-memory given), and set aside elsewhere: nothing else reads them."""
    from calc.units import InputError

    out_of_release(getattr(args, "vllm_typed", None), getattr(args, "engine_version", None))
    dtype = getattr(args, "vllm_dtype", None)
    if dtype is not None and dtype.strip().lower() not in DTYPES_16:
        raise InputError(f"--dtype: found {dtype.strip()!r}, expected auto, half, float16 or bfloat16: calc models weights and activations "
                         "in 16 bits (vLLM itself loads a float32 checkpoint in bfloat16 under auto)")  # fmt: skip
    given = [f for f in ASIDE if _given(args, f)]
    if _given(args, "--load-format") and str(getattr(args, dest("--load-format"))).strip().lower() in PLAIN_FORMATS:
        given.append("--load-format")  # a format that reads the checkpoint as it is: no memory of its own
    for key, flag in (("chunked_prefill", "--enable-chunked-prefill"), ("no_chunked_prefill", "--no-enable-chunked-prefill"),
                      ("max_cudagraph_capture_size", "--max-cudagraph-capture-size"), ("cudagraph_capture_sizes", "--cudagraph-capture-sizes"),
                      ("optimization_level", "-O"), ("compilation_config", "--compilation-config")):  # fmt: skip
        if getattr(args, key, None) not in (None, False) and not card_read:
            given.append(flag)
    unmodeled = [f for f in NOT_MODELED if _given(args, f) and f not in given]
    out: list[str] = []
    tags = getattr(args, "vllm_model_tag", None)
    if tags:
        out.append(f"the model vllm serve names ({', '.join(tags)}) is set aside: the config given is the one read")
    if given or dtype is not None:
        said = ([f"--dtype {dtype.strip()}"] if dtype is not None else []) + given
        out.append(f"read and set aside, as they size no GPU memory or match calc's 16-bit model: {', '.join(said)}")
    for flag in unmodeled:
        out.append(f"{flag}: read but not modeled, the figures take vLLM's default for it; it moves {NOT_MODELED[flag][1]}")
    return tuple(out)


def _given(args: argparse.Namespace, flag: str) -> bool:
    value = getattr(args, dest(flag), None)
    return value is not None and value is not False


@dataclass(frozen=True)
class Compilation:
    """What the serve line sets of the compile and the CUDA graphs, as predict.Start takes it."""

    max_size: int | None = None
    sizes: tuple[int, ...] | None = None
    mode: str = "FULL_AND_PIECEWISE"
    compiled: bool = True
    notes: tuple[str, ...] = ()


LEVEL_MODES = {"0": "NONE", "1": "PIECEWISE", "2": "FULL_AND_PIECEWISE", "3": "FULL_AND_PIECEWISE"}  # vllm/config/vllm.py, v0.12.0 to v0.33.0
MODES = ("NONE", "PIECEWISE", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")  # the cudagraph_modes whose graphs graphs.graph_sizes counts
OPTIMIZATION_FROM = (0, 12)  # -O N as an optimization level (vllm/config/vllm.py OptimizationLevel); before, a compilation level
SIZES_AS_GIVEN_FROM = (0, 11, 1)  # --cuda-graph-sizes N as the one size N (vllm/engine/arg_utils.py); before, the largest (legacy_sizes)
WITHOUT_PIECEWISE_FROM = (0, 31)  # no compile keeps a mode's full graphs (vllm/config/vllm.py _normalize_piecewise_cudagraph_mode)


def chunked(args: argparse.Namespace) -> bool | None:
    """--enable-chunked-prefill (True), --no-enable-chunked-prefill (False) or neither (None)."""
    return False if getattr(args, "no_chunked_prefill", False) else True if getattr(args, "chunked_prefill", False) else None


def compilation(
    rel: tuple[int, ...], level: str | None = None, config: str | None = None, largest: int | None = None, sizes: list[str] | None = None
) -> Compilation:
    """-O (`level`), --compilation-config (`config`), --max-cudagraph-capture-size (`largest`) and
    --cudagraph-capture-sizes (`sizes`, a list also as one comma-separated word: '1,2,4,8') read as
    vLLM reads them: the optimization level's cudagraph_mode and compile (level 0: none), then the
    config's own keys over it, then the flags. `rel` is the release, (major, minor) or with its patch:
    the capture sizes' reading changes in 0.11.1 (legacy_sizes)."""
    from calc.units import InputError, parse_count

    c = Compilation()
    if level is not None:
        value = str(level).strip().lstrip("=")
        if rel >= OPTIMIZATION_FROM and value not in LEVEL_MODES:  # vLLM refuses it (OptimizationLevel, 0 to 3)
            raise InputError(f"-O: found {value!r}, expected an optimization level, 0, 1, 2 or 3 (vllm/config/vllm.py OptimizationLevel)")
        if rel < OPTIMIZATION_FROM:
            c = replace(
                c, notes=(*c.notes, f"-O{value}: read but not modeled before v0.12.0, where it set a compilation level; the figures take vLLM's default")
            )
        else:
            c = replace(c, mode=LEVEL_MODES[value], compiled=value != "0")
    if config is not None:
        c = _config(c, config, parse_count)
    if largest is not None:
        c = replace(c, max_size=largest)
    if sizes is not None:
        words = [w for v in sizes for w in str(v).replace("[", " ").replace("]", " ").replace(",", " ").split()]
        if not words:
            raise InputError("--cudagraph-capture-sizes: found nothing, expected one token count or more")
        given = tuple(parse_count(w, "--cudagraph-capture-sizes") for w in words)
        c = replace(c, sizes=given if rel >= SIZES_AS_GIVEN_FROM else legacy_sizes(given))
    c = _without_compile(c, rel)
    if c.mode != "NONE" and c.max_size is not None and c.sizes is not None and c.max_size != max(c.sizes):  # checked where graphs are sized
        raise InputError(f"--max-cudagraph-capture-size: found {c.max_size:,} beside capture sizes whose largest is {max(c.sizes):,}, expected the "
                         "two to agree, or one of them left out: vLLM refuses them otherwise (vllm/config/vllm.py _set_cudagraph_sizes)")  # fmt: skip
    return c


def legacy_sizes(given: tuple[int, ...]) -> tuple[int, ...]:
    """--cuda-graph-sizes in v0.11.0, as vllm/config/__init__.py VllmConfig._set_cudagraph_sizes reads
    SchedulerConfig.cuda_graph_sizes (vllm/config/scheduler.py, read in v0.11.0): one value is the
    largest size, vLLM capturing 1, 2, 4 and every multiple of 8 up to it ([1, 2, 4] + range(8, N + 1,
    8)); several values are the sizes themselves, sorted. From v0.11.1 the flag is
    --cudagraph-capture-sizes' deprecated spelling, every value a size (vllm/engine/arg_utils.py,
    read in v0.11.1, v0.11.2 and v0.12.0; gone in v0.13.0). Either way vLLM drops a size above
    max_num_batched_tokens (graphs.capture_sizes)."""
    if len(given) != 1:
        return tuple(sorted(given))
    return (1, 2, 4, *range(8, given[0] + 1, 8))


def _without_compile(c: Compilation, rel: tuple[int, ...]) -> Compilation:
    """A graph mode that needs the piecewise compile, where nothing is compiled (-O0 or mode 0): up
    to v0.30.x vLLM overrides it to NONE (vllm/config/vllm.py __post_init__, read in v0.24.0 and
    v0.28.0: 'Cudagraph mode ... is not compatible with compilation mode ... Overriding to NONE'); from
    v0.31.0 it drops the piecewise part alone, FULL_AND_PIECEWISE becoming FULL_DECODE_ONLY
    (_normalize_piecewise_cudagraph_mode, CUDAGraphMode.without_piecewise, read in v0.31.0 and v0.33.0)."""
    if c.compiled or c.mode not in ("PIECEWISE", "FULL_AND_PIECEWISE"):
        return c
    if rel >= WITHOUT_PIECEWISE_FROM and c.mode == "FULL_AND_PIECEWISE":
        return replace(c, mode="FULL_DECODE_ONLY")
    return replace(c, mode="NONE")


def _config(c: Compilation, raw: str, parse_count: Callable[[str | int, str], int]) -> Compilation:
    """--compilation-config's JSON: the keys calc models, each checked; any other named in a note."""
    from calc.units import InputError

    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise InputError(f'--compilation-config: found {raw.strip()[:60]!r}, expected a JSON object such as \'{{"cudagraph_mode": "PIECEWISE"}}\'')
    where = "--compilation-config"
    if data.get("cudagraph_mode") is not None:  # null: the level's own, as vLLM fills it
        v = data["cudagraph_mode"]
        mode = MODES[v] if isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 1 else str(v).strip().upper()
        if mode == "FULL" or v == 2:  # full graphs of mixed batches too: the backend decides what it captures
            c = replace(c, notes=(*c.notes, f"{where}: cudagraph_mode FULL: read but not modeled, the figures take vLLM's default mode"))
        elif mode not in MODES:
            raise InputError(f"{where}: cudagraph_mode: found {v!r}, expected one of {', '.join(MODES)} or FULL")
        else:
            c = replace(c, mode=mode)
    for key in ("mode", "level"):  # CompilationMode (mode; level before it): 0, NONE, compiles nothing
        if key in data:
            v = data[key]
            if v in (0, "0", "NONE", "none"):
                c = replace(c, compiled=False)
            elif v in (3, "3", "VLLM_COMPILE", "vllm_compile"):  # vLLM's own compile, kept over the level's (vllm/config/vllm.py)
                c = replace(c, compiled=True)
            elif v is not None:
                c = replace(c, notes=(*c.notes, f"{where}: {key} {v!r}: read but not modeled, the figures take vLLM's compile (VLLM_COMPILE)"))
    if "max_cudagraph_capture_size" in data:
        c = replace(c, max_size=parse_count(data["max_cudagraph_capture_size"], f"{where}: max_cudagraph_capture_size"))
    if "cudagraph_capture_sizes" in data:
        sizes = data["cudagraph_capture_sizes"]
        if not isinstance(sizes, list) or not sizes:
            raise InputError(f"{where}: cudagraph_capture_sizes: found {sizes!r}, expected a list of token counts such as [1, 2, 4, 8]")
        c = replace(c, sizes=tuple(parse_count(n, f"{where}: cudagraph_capture_sizes") for n in sizes))
    rest = sorted(set(data) - {"cudagraph_mode", "mode", "level", "max_cudagraph_capture_size", "cudagraph_capture_sizes"})
    if rest:
        c = replace(c, notes=(*c.notes, f"{where}: {', '.join(rest)}: read but not modeled, the figures take vLLM's default for them"))
    return c


# vLLM's short spellings (vllm/engine/arg_utils.py, v0.33.0), read as their long ones
SHORT = {"-q": "--quantization", "-tp": "--tensor-parallel-size", "-pp": "--pipeline-parallel-size", "-dp": "--data-parallel-size",
         "-dcp": "--decode-context-parallel-size", "-pcp": "--prefill-context-parallel-size", "-ep": "--enable-expert-parallel",
         "-n": "--nnodes", "-r": "--node-rank", "-dpn": "--data-parallel-rank", "-dpr": "--data-parallel-start-rank",
         "-dpl": "--data-parallel-size-local", "-dpa": "--data-parallel-address", "-dpp": "--data-parallel-rpc-port",
         "-dpb": "--data-parallel-backend", "-dph": "--data-parallel-hybrid-lb", "-dpe": "--data-parallel-external-lb",
         "-dpm": "--data-parallel-multi-port-external-lb", "-sc": "--speculative-config", "-ac": "--attention-config", "-dc": "--diffusion-config"}  # fmt: skip


def normalize(argv: list[str]) -> list[str]:
    """A pasted `vllm serve` line as vLLM's FlexibleArgumentParser reads it (vllm/utils/argparse_utils.py,
    v0.33.0): a flag's underscores as dashes (--gpu_memory_utilization), the short spellings (SHORT),
    a dotted key as one key of the flag's JSON (--limit-mm-per-prompt.video 0, -cc.cudagraph_mode=NONE,
    -cc.pass_config.x true nested; a key ending in '+' a list appended, -cc.cudagraph_capture_sizes+ 1,2,4).
    The command itself (`vllm serve MODEL`, `python -m vllm.entrypoints.openai.api_server`) and the
    model's name (MODEL, or --model's value, where it is no config file or folder) are set aside under
    --served-model-tag, which the answer names; a config file or a folder holding one there is the
    config, a folder without one refused. vLLM's YAML (--config FILE) is refused: its keys are the
    flags. A flag some releases lack is noted under --vllm-typed, for out_of_release."""
    from calc.units import InputError

    out: list[str] = []
    nested: dict[str, dict[str, object]] = {}
    gated: list[str] = []
    text_only = False
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            out += argv[i:]
            break
        if word in ("vllm", "python", "python3") and i + 1 < len(argv) and argv[i + 1] in ("serve", "-m"):  # the command typed with its flags
            i += 2
            if argv[i - 1] == "-m":
                i += 1  # the module: vllm.entrypoints.openai.api_server
            if i < len(argv) and not argv[i].startswith("-") and argv[i - 1] == "serve":
                out += _model(argv[i], "vllm serve")
                i += 1
            continue
        name, eq, value = word.partition("=")
        base = name.partition(".")[0]
        typed = base[:2] + base[2:].replace("_", "-")  # as typed, short or long: the release gate reads it (out_of_release)
        if (typed in FIRST_RELEASE or typed in GONE_FROM) and f"--vllm-typed={typed}" not in gated:
            gated.append(f"--vllm-typed={typed}")
        if name.startswith("--") or base in SHORT or name.startswith("-cc."):  # a bare -cc is declared as it is
            head, dot, key = name.partition(".")
            head = "--compilation-config" if head == "-cc" else SHORT.get(head, head)
            head = head[:2] + head[2:].replace("_", "-")
            if head == "--config":
                raise InputError(f"--config: found {(value or (argv[i + 1] if i + 1 < len(argv) else '')).strip()!r}, expected the flags themselves: "
                                 "calc reads no vLLM YAML config; paste its keys as flags")  # fmt: skip
            if dot:  # --flag.key value or --flag.key=value: one key of the flag's JSON
                if not eq:
                    i += 1
                    value = argv[i] if i < len(argv) else ""
                _put(nested.setdefault(head, {}), key, value)
                i += 1
                continue
            if head == "--language-model-only":  # every modality's limit at 0, over any limit given (applied below)
                text_only = True
                i += 1
                continue
            if head == "--model":  # vllm serve's --model: the config, or the model's name set aside
                if not eq:
                    i += 1
                    value = argv[i] if i < len(argv) else ""
                out += _model(value, "--model")
                i += 1
                continue
            word = head + eq + value
        out.append(word)
        i += 1
    for head, keys in nested.items():
        out += [head, json.dumps(keys)]
    if text_only:  # vllm/config/multimodal.py get_limit_per_prompt: 0 for every modality whatever the limits (0.18.0, 0.33.0)
        out = _without(out, "--limit-mm-per-prompt") + ["--limit-mm-per-prompt", json.dumps(dict.fromkeys(MODALITIES, 0))]
    return _config_first(gated + out)


def _without(argv: list[str], flag: str) -> list[str]:
    """The line without a flag and its value (either spelling, --flag VALUE or --flag=VALUE)."""
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word == flag:
            skip = True
            continue
        if word.startswith(flag + "="):
            continue
        out.append(word)
    return out


def _model(name: str, where: str) -> list[str]:
    """The model vllm serve names (`where`: vllm serve or --model): a config file or a folder holding
    one is the config (holds_config); a folder without one is refused; anything else (a Hugging Face
    name) is set aside, named in the answer."""
    import os

    from calc.units import InputError

    if holds_config(name):
        return [name]
    if os.path.isdir(name):
        raise InputError(without_config(where, name))
    return ["--served-model-tag", name]


def holds_config(word: str) -> bool:
    """Whether a word of the serve line is the config: a .json file's path, or a checkpoint folder
    holding a config.json (what vLLM's --model takes)."""
    import os

    return word.lower().endswith(".json") or os.path.isfile(os.path.join(word, "config.json"))


def without_config(where: str, folder: str) -> str:
    """The refusal of a folder given as the model that holds no config.json."""
    return f"{where} {folder}: found a folder without a config.json, expected the model's config.json or the checkpoint folder holding it"


def _put(keys: dict[str, object], dotted: str, value: str) -> None:
    """One dotted key into the flag's JSON as vLLM nests it (create_nested_dict): a.b.c as
    {"a": {"b": {"c": value}}}; a key ending in '+' a list, extended by a comma-separated value."""
    *parents, last = dotted.split(".")
    for part in parents:
        below = keys.get(part)
        if not isinstance(below, dict):
            below = {}
            keys[part] = below
        keys = below
    if last.endswith("+"):
        items = [_json_value(v.strip()) for v in value.split(",") if v.strip()]
        current = keys.get(last[:-1])
        keys[last[:-1]] = [*(current if isinstance(current, list) else []), *items]
    else:
        keys[last] = _json_value(value)


def _config_first(argv: list[str]) -> list[str]:
    """A config path typed after a flag that takes several values (--served-model-name a b
    config.json) would be taken as one of them: a value that is the config (holds_config, as _model
    reads the model) is moved to the front, where calc's first argument reads it."""
    many = {f for f, takes in ASIDE.items() if takes == "+"} | {"--cudagraph-capture-sizes", "--cuda-graph-sizes"}
    out: list[str] = []
    moved: list[str] = []
    taking = False
    for word in argv:
        if word.startswith("-"):
            taking = word in many
        elif taking and out and out[-1] not in many and holds_config(word):
            moved.append(word)
            continue
        out.append(word)
    return moved + out


def _json_value(text: str) -> object:
    """A dotted key's value as vLLM takes it: JSON where it parses, else the text."""
    try:
        return json.loads(text)
    except ValueError:
        return text
