"""Every input the project takes, declared once: its command-line flag (spelled as vLLM spells it
where vLLM has the setting, the former spelling kept as a hidden alias), vLLM's key for it, how
its text is read, its bounds, its help, and its label and help line on a calculator's form.

The command line's flags (calc/present/cli.py), the calculators' form fields and the parsing of what is
typed into them (calc/present/calculators/form.py), and the keys a calculator keeps in its page's address
(calc/present/address.py, the form fields' names) are all derived from this table. A command lists the
inputs it takes in COMMAND_FLAGS, a calculator in FORMS; where one input reads differently in one
place (the help of `--available` for `plan`, the label of the KV pin in the KV pool calculator), the
use says so beside the name. The pattern is vLLM's EngineArgs, whose dataclass fields give its
argparse flags and its docs. Standard library only, and light: the calculator page imports it.
"""

from __future__ import annotations

from fractions import Fraction

from calc.record import record
from calc.units import GB, InputError, fmt, parse_count, parse_fraction, parse_memory, parse_number, parse_tokens

# What a value is read as. Every kind reads numbers through calc.units, so a size typed on the
# command line and in a form is read the same way, with the same one-line message.
KINDS = ("size", "count", "fraction", "gib", "text", "choice", "switch", "list", "seconds", "version")


def _size_examples() -> str:
    ten = 10 * GB
    return f"{fmt(ten, 'e9', 0)}, {fmt(ten, 'GiB')} or {fmt(ten, 'GB', 0)}"


SIZES = _size_examples()  # 10e9 B, 9.31 GiB or 10 GB: how a size is typed, in the forms' help


@record
class Input:
    """One input. `key` names it everywhere inside: the argparse dest, the form field's name and
    the address key (kept as published links have it); `flag` is the command line's spelling and
    `vllm` vLLM's own key (EngineArgs field, JSON and YAML config key), None where vLLM has no such
    setting (a reading, a catalog id, a calculator's own choice)."""

    key: str
    flag: str | None  # None: the form alone takes it; a flag without dashes is a positional argument
    vllm: str | None
    kind: str
    word: str  # the glossary's word for it, in prose
    help: str = ""  # the command line's help
    label: str = ""  # the form's label (the word, and vLLM's flag in brackets where the two differ)
    form_help: str = ""  # the form's help line
    aliases: tuple[str, ...] = ()  # former spellings of the flag: still read, not listed by --help
    minimum: int = 1  # the least whole number a count takes
    unit: str = ""  # what a number counts: B, tokens, GiB, seconds
    inputmode: str = ""  # the form's inputmode; empty: from the kind
    choices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"input {self.key}: found kind {self.kind!r}, expected one of {', '.join(KINDS)}")

    def parse(self, text: str, name: str, minimum: int | None = None) -> object:
        """The value typed, read as this input's kind; InputError names it `name` (the flag typed,
        or the form's label) with what was found and what was expected."""
        if self.kind == "size":
            return parse_memory(text, name)
        if self.kind == "count" and self.unit == "tokens":
            return parse_tokens(text, name, self.minimum if minimum is None else minimum)
        if self.kind == "count":
            return parse_count(text, name, self.minimum if minimum is None else minimum)
        if self.kind == "fraction":
            return parse_fraction(text, name)
        if self.kind == "gib":
            return gib_at_least_zero(text, name)
        if self.kind == "seconds":
            return seconds(text, name)
        if self.kind == "version":
            from calc.engine.release import checked

            return checked(text, name)
        if self.kind == "choice" and self.choices and text not in self.choices:
            raise InputError(f"{name}: found {text!r}, expected one of {', '.join(self.choices)}")
        return text

    @property
    def mode(self) -> str:
        """The form's inputmode: a count is typed on a numeric keyboard, a fraction a decimal one."""
        return self.inputmode or {"count": "numeric", "fraction": "decimal", "gib": "decimal"}.get(self.kind, "text")


def seconds(text: str, what: str) -> float:
    """Seconds as every number is read (calc.units.parse_number: ASCII digits, bounded)."""
    expected = "seconds, such as 357"
    try:
        return float(parse_number(text, what, expected, expected))
    except InputError as error:
        if str(error).endswith("expected a number"):  # not a number at all: say what is wanted
            from calc.units import quoted

            raise InputError(f"{what}: found {quoted(text.strip())}, expected {expected}") from None
        raise


GIB_EXPECTED = "a size in GiB, 0 or more, such as 4 or 0.5"


def gib_at_least_zero(text: str, name: str) -> Fraction:
    """A size in GiB as vLLM's offload flags take it (--cpu-offload-gb, --kv-offloading-size,
    --swap-space: floats of 0 or more in vllm/config/cache.py and vllm/config/offload.py): a value
    that is no number, or a negative one, is named with what was found and what is expected."""
    from calc.units import quoted

    raw = text.strip()
    if raw.startswith("-"):
        raise InputError(f"{name}: found {quoted(raw)}, expected {GIB_EXPECTED}")
    try:
        return parse_number(raw, name, small="a larger size in GiB")
    except InputError as error:
        if str(error).endswith("expected a number"):  # not a number at all: say what is wanted
            raise InputError(f"{name}: found {quoted(raw)}, expected {GIB_EXPECTED}") from None
        raise


_DTYPES = ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla", "nvfp4")

# --- the table ------------------------------------------------------------------------------
# vLLM's spelling and meaning of each flag: vllm/engine/arg_utils.py (EngineArgs.add_cli_args) and
# vllm/config/{cache,parallel,scheduler,lora}.py, read in the 0.32.0 and 0.33.0 wheels.

TABLE: tuple[Input, ...] = (
    # the machine and the catalog
    Input("catalog", "--catalog", None, "text", "catalog", "catalog directory (default: the project's)"),
    Input("json", "--json", None, "switch", "JSON", "print JSON for machines"),
    Input("deployment", "--deployment", None, "choice", "deployment", "deployment id from catalog/starts.yaml (default: the first)", "Deployment"),
    Input("box", "--box", None, "choice", "box", "", "Box"),
    Input("boxes", "--boxes", None, "count", "boxes", "--yaml: how many boxes the start spans"),
    Input(
        "available",
        "--available",
        None,
        "size",  # a size on a form; the command line also takes auto and one size a box (calc/present/commands/gate.py)
        "MemAvailable",
        "MemAvailable per box: one size, one per box separated by ', ' (the head box first), or auto",
        "MemAvailable at start",
        "Bytes: " + SIZES,
        unit="B",
    ),
    Input("total", "--total", None, "size", "total", "card or box total (default: the catalog's)", "Box or card total (optional)", unit="B"),
    Input("free", "--free", None, "size", "free memory", "free memory at start, or auto (default: the catalog's reading)", unit="B"),
    Input("gpu", "--gpu", None, "text", "card", "a card of the catalog (boxes.yaml: h100-sxm, l40s, rtx-3090...): predicts the KV pool vLLM sizes on it"),
    Input("total_memory", "--total-memory", None, "text", "total memory", "the card's total as torch and vLLM report it, such as 79.22 GiB: predicts the pool"),
    Input(
        "in_use",
        "--in-use",
        None,
        "size",
        "in use by other processes",
        "with a card: memory other processes already hold on each card when vLLM starts (nvidia-smi's used, a desktop's display): "
        "vLLM refuses a start whose request its free memory does not hold; up to 0.9.0 it comes off the pool",
        "In use by other processes (optional)",
        "Bytes: " + SIZES + "; empty: an idle card, vLLM's own CUDA context alone",
        unit="B",
    ),
    # the model and its checkpoint
    Input(
        "config",
        "config",
        None,
        "text",
        "config.json",
        "the model's config.json: a file, a checkpoint's folder, or - for standard input",
        "config.json (paste)",
        "The model's config.json as Hugging Face ships it, quantization_config and all (at most {paste} MiB)",
    ),
    Input(
        "read_as",
        "--read-as",
        None,
        "text",
        "model class read as",
        "a model class calc reads (LlamaForCausalLM...) to read a config of a class it does not know by, at your word: "
        "for a fine-tune or a remote-code class with that class's layers; the answer says so",
    ),
    Input(
        "index",
        "--index",
        None,
        "text",
        "checkpoint size",
        "model.safetensors.index.json (its total_size) or safetensors headers: the checkpoint's size beats the parameter count",
        "Checkpoint size (optional: model.safetensors.index.json or shard headers pasted, or a size)",
        "Its metadata.total_size beats the parameter count; a size such as 61.06e9 works too (at most {paste} MiB)",
    ),
    Input("model", "--model", None, "choice", "model", "the catalog model id to compare with and to write (default: matched on the log's model name)"),
    Input("served_model", None, "model", "text", "model", "", "Model for the serve command (optional)", "Empty: the log's"),
    Input(
        "engine_version",
        "--engine-version",
        None,
        "version",
        "vLLM version",
        "vLLM version whose rules to follow (default: 0.32.0 to 0.33.x, the newest checked on public starts; 0.34.0 read too)",
        "vLLM version (optional)",
        "Such as 0.10.2; empty: the rules of v0.32.0 to v0.33.x, the newest checked on public starts",
    ),
    # parallelism
    Input(
        "tp",
        "--tensor-parallel-size",
        "tensor_parallel_size",
        "count",
        "tensor parallel size",
        "tensor parallel size",
        "Tensor parallel size",
        "Ranks the model is split over",
        aliases=("--tp",),
    ),
    Input(
        "pp",
        "--pipeline-parallel-size",
        "pipeline_parallel_size",
        "count",
        "pipeline parallel size",
        "the layers split over stages as vLLM splits them, each stage's bytes",
        "Pipeline parallel size",
        "Stages the layers are split over, as vLLM splits them; the stage with the fewest blocks decides",
        aliases=("--pp",),
    ),
    Input(
        "pp_layer_partition",
        "--pp-layer-partition",
        None,
        "text",
        "layers of each stage",
        "VLLM_PP_LAYER_PARTITION: the layers of each stage, such as 15,16,15,15",
        "Layers of each stage (optional, VLLM_PP_LAYER_PARTITION)",
        "Such as 15,16,15,15; empty: vLLM's default split",
    ),
    Input(
        "dcp",
        "--decode-context-parallel-size",
        "decode_context_parallel_size",
        "count",
        "decode context parallel size",
        "decode context parallel size: the KV cache split over the TP ranks by tokens",
        aliases=("--dcp",),
    ),
    Input(
        "data_parallel_size",
        "--data-parallel-size",
        "data_parallel_size",
        "count",
        "data parallel size",
        "replicas, each with its own pool; an MoE's experts are split over TP x DP ranks",
    ),
    Input(
        "enable_expert_parallel",
        "--enable-expert-parallel",
        "enable_expert_parallel",
        "switch",
        "expert parallel",
        "an MoE's routed experts dealt whole over TP x DP ranks, as vLLM deals them",
    ),
    Input(
        "enable_eplb",
        "--enable-eplb",
        "enable_eplb",
        "switch",
        "EPLB",
        "expert parallel load balancing: with redundant experts each EP rank holds (experts + redundant) / EP experts",
    ),
    Input(
        "eplb_config",
        "--eplb-config",
        "eplb_config",
        "text",
        "EPLB config",
        "with --enable-eplb, vLLM 0.11.0 on: JSON such as '{\"num_redundant_experts\": 32}', the copies dealt with the experts",
    ),
    Input(
        "num_redundant_experts",
        "--num-redundant-experts",
        "num_redundant_experts",
        "count",
        "redundant experts",
        "with --enable-eplb, up to vLLM 0.11.0: the redundant experts (later releases take them in --eplb-config)",
        minimum=0,
    ),
    Input(
        "head_extra",
        "--head-extra",
        None,
        "size",
        "head box extra",
        "over several boxes: what the head box runs beside its rank (default with one --available a box: the catalog's Ray head)",
        unit="B",
    ),
    # the KV cache
    Input(
        "pin",
        "--kv-cache-memory-bytes",
        "kv_cache_memory_bytes",
        "size",
        "KV pin",
        "KV pin: 10e9, 9.31 GiB, 10 GB or 10000000000",
        "KV pin (--kv-cache-memory-bytes)",
        "Bytes: " + SIZES,
        aliases=("--pin",),
        unit="B",
    ),
    Input(
        "kv_cache_dtype",
        "--kv-cache-dtype",
        "kv_cache_dtype",
        "choice",
        "KV cache dtype",
        "auto, bfloat16, fp8, fp8_e4m3, fp8_e5m2, fp8_ds_mla or nvfp4",
        "KV cache dtype (--kv-cache-dtype)",
        choices=_DTYPES,
    ),
    Input(
        "quantization",
        "--quantization",
        "quantization",
        "text",
        "quantization",
        "the checkpoint's method, or fp8 to quantize an unquantized one as it loads (default: the config's quantization_config)",
        "Quantization (--quantization)",
        "Empty: the config's own quantization_config; fp8: an unquantized checkpoint quantized as it loads",
    ),
    Input(
        "block_size",
        "--block-size",
        "block_size",
        "count",
        "block size",
        "the pool's block in tokens, which vLLM 0.29.0 and later hold back (default: the deployment's, else 16)",
        unit="tokens",
    ),
    Input("bytes_per_token", "--bytes-per-token", None, "count", "bytes per token", "bytes per token per rank, instead of a deployment's", unit="B"),
    Input("tokens", "--tokens", None, "count", "tokens", "tokens wanted: prints the pin that holds them", "Tokens wanted", "Tokens to bytes", unit="tokens"),
    Input(
        "prefix_caching",
        "--enable-prefix-caching",
        "enable_prefix_caching",
        "switch",
        "prefix caching",
        "prefix caching on, which hybrids before vLLM 0.28.0 are started without by default",
        aliases=("--prefix-caching",),
    ),
    Input(
        "no_prefix_caching",
        "--no-enable-prefix-caching",
        "enable_prefix_caching",
        "switch",
        "prefix caching off",
        "prefix caching off: hybrids keep one mamba state a request",
        aliases=("--no-prefix-caching",),
    ),
    # the scheduler
    Input("max_model_len", "--max-model-len", "max_model_len", "count", "max_model_len", "", "max_model_len", "Tokens", unit="tokens"),
    Input(
        "prefill_budget",
        "--max-num-batched-tokens",
        "max_num_batched_tokens",
        "count",
        "prefill budget",
        "the prefill budget: tokens one step may schedule",
        "Prefill budget (--max-num-batched-tokens)",
        "Tokens",
        aliases=("--prefill-budget",),
        unit="tokens",
    ),
    Input(
        "seats",
        "--max-num-seqs",
        "max_num_seqs",
        "count",
        "seats",
        "seats: the sequences served at once",
        "Seats (--max-num-seqs)",
        "Concurrent sequences",
        aliases=("--seats",),
    ),
    Input(
        "typical_context",
        "--typical-context",
        None,
        "count",
        "typical context",
        "tokens a seat typically holds",
        "Typical context per seat, tokens (optional)",
        "Tokens a seat typically holds; empty: not sized",
        unit="tokens",
    ),
    Input(
        "gpu_memory_utilization",
        "--gpu-memory-utilization",
        "gpu_memory_utilization",
        "fraction",
        "gpu_memory_utilization",
        "the fraction to check (default: the largest that leaves the start headroom free)",
        "gpu_memory_utilization (optional)",
        "A fraction above 0 and at most 1; empty: the largest that leaves the start headroom free at vLLM's check",
        aliases=("--fraction", "--device-memory-utilization"),  # vLLM reads the latter too (vllm/engine/arg_utils.py, 0.33.0)
    ),
    Input("enforce_eager", "--enforce-eager", "enforce_eager", "switch", "eager mode", "with a card: no CUDA graphs, no graph estimate"),
    Input("offline", "--offline", None, "switch", "offline", "with a card: the LLM class's defaults, not vllm serve's"),
    Input(
        "flashinfer_installed",
        "--flashinfer-installed",
        None,
        "switch",
        "FlashInfer installed",
        "with a card, vLLM 0.8 to 0.11: FlashInfer imports (vllm[flashinfer]), so V1 samples with it unless VLLM_USE_FLASHINFER_SAMPLER=0",
    ),
    Input(
        "no_flashinfer_sampler",
        "--no-flashinfer-sampler",
        None,
        "switch",
        "FlashInfer sampler off",
        "with a card, vLLM 0.21 and later: VLLM_USE_FLASHINFER_SAMPLER=0, so the sampler warms up on the PyTorch-native path",
    ),
    Input(
        "allow_long_max_model_len",
        "--allow-long-max-model-len",
        None,
        "switch",
        "long max_model_len allowed",
        "with a card: VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, so a max_model_len above the model's max_position_embeddings starts",
    ),
    Input(
        "compile_cached",
        "--compile-cached",
        None,
        "switch",
        "compiled graph cached",
        "with a card: vLLM loads the compiled model from its cache (a start after the first of the same model and settings), "
        "so nothing is compiled inside the profile",
    ),
    # the scheduler's chunking and the compile's graphs, which move a predicted pool
    Input(
        "chunked_prefill",
        "--enable-chunked-prefill",
        "enable_chunked_prefill",
        "switch",
        "chunked prefill on",
        "with a card: V1 always chunks prefill; on V0 it sets the default budget to 2,048 tokens (vllm/config.py SchedulerConfig)",
    ),
    Input(
        "no_chunked_prefill",
        "--no-enable-chunked-prefill",
        "enable_chunked_prefill",
        "switch",
        "chunked prefill off",
        "with a card: the default budget holds max_model_len, and a budget below it is refused (vllm/engine/arg_utils.py)",
        "Chunked prefill off (--no-enable-chunked-prefill)",
        "The default budget holds max_model_len (vllm/engine/arg_utils.py); a budget typed below it is refused (a predicted pool only)",
    ),
    Input(
        "no_extensible_kv_cache",
        "--no-enable-extensible-kv-cache",
        "enable_extensible_kv_cache",
        "switch",
        "extensible KV cache off",
        "with a card, vLLM 0.34.0 and later: the pool sized from the profile's estimate (the path checked on public starts), not measured after warmup",
        "Extensible KV cache off (--no-enable-extensible-kv-cache)",
        "vLLM 0.34.0 and later measure the pool after warmup unless this is ticked; ticked, it is sized from the profile's estimate (a predicted pool only)",
    ),
    Input(
        "max_cudagraph_capture_size",
        "--max-cudagraph-capture-size",
        "max_cudagraph_capture_size",
        "count",
        "largest CUDA graph",
        "with a card: the largest CUDA graph vLLM captures (the grid up to it), which sizes the graph estimate from v0.20.0",
        "Largest CUDA graph (--max-cudagraph-capture-size, optional)",
        "Tokens; empty: vLLM's default, 2 x max_num_seqs up to 512 (vllm/config/vllm.py); fewer graphs, a smaller estimate (a predicted pool only)",
        unit="tokens",
    ),
    Input(
        "optimization_level",
        "-O",
        "optimization_level",
        "choice",
        "optimization level",
        "with a card, vLLM 0.12.0 and later: 0 compiles nothing and captures no CUDA graph, 1 the piecewise graphs alone, "
        "2 and 3 vLLM's default (vllm/config/vllm.py OPTIMIZATION_LEVEL_TO_CONFIG)",
        "Optimization level (-O, optional)",
        "Empty or 2: vLLM's default; 1: piecewise CUDA graphs alone; 0: no compile, no graphs (vLLM 0.12.0 and later; a predicted pool only)",
        aliases=("--optimization-level",),
        choices=("0", "1", "2", "3"),
    ),
    # speculative decoding
    Input("drafter", "--drafter", None, "switch", "drafter", "the speculative drafter loads with the model", "Drafter (speculative decoding) on"),
    Input(
        "speculative_tokens",
        "--speculative-tokens",
        "num_speculative_tokens",
        "count",
        "speculative tokens",
        "speculative tokens with the drafter",
        "Speculative tokens",
        minimum=0,
    ),
    # LoRA (vllm/config/lora.py)
    Input(
        "enable_lora",
        "--enable-lora",
        "enable_lora",
        "switch",
        "LoRA",
        "LoRA adapters: their slots are allocated on every rank at load",
        "LoRA adapters on (--enable-lora)",
        "Their slots are allocated on every rank at load and come off the KV pool",
    ),
    Input(
        "max_loras",
        "--max-loras",
        "max_loras",
        "count",
        "LoRA slots",
        "with --enable-lora: adapters in one batch, the slots on each rank (default 1)",
        "LoRA slots (--max-loras)",
        "Adapters in one batch: the slots on each rank",
    ),
    Input(
        "max_lora_rank",
        "--max-lora-rank",
        "max_lora_rank",
        "count",
        "LoRA rank",
        "with --enable-lora: the largest adapter rank, the slots' size (default 16)",
        "Largest LoRA rank (--max-lora-rank)",
        "The slots' size",
    ),
    Input(
        "max_cpu_loras",
        "--max-cpu-loras",
        "max_cpu_loras",
        "count",
        "LoRA adapters on the host",
        "with --enable-lora: adapters kept in host memory (default --max-loras)",
        "LoRA adapters on the host (optional, --max-cpu-loras)",
        "Empty: as many as the slots",
    ),
    # offload and host memory (vllm/config/cache.py, vllm/config/offload.py)
    Input(
        "cpu_offload_gb",
        "--cpu-offload-gb",
        "cpu_offload_gb",
        "gib",
        "weights moved to the host",
        "GiB of weights a rank moved to the host: on a unified box it frees nothing",
        "Weights moved to the host, GiB a rank (optional, --cpu-offload-gb)",
        "Whole parameters, the decoder layers in order; on a unified-memory box it frees nothing",
        unit="GiB",
    ),
    Input(
        "kv_offloading_size",
        "--kv-offloading-size",
        "kv_offloading_size",
        "gib",
        "KV offloading",
        "GiB of host memory for KV offloading over the TP ranks: on a unified box it comes out of MemAvailable",
        "KV offloading, GiB over the ranks (optional, --kv-offloading-size)",
        "Host memory for offloaded KV blocks; on a unified-memory box it comes out of MemAvailable",
        unit="GiB",
    ),
    Input(
        "kv_offloading_backend",
        "--kv-offloading-backend",
        "kv_offloading_backend",
        "choice",
        "KV offloading backend",
        "native (the default) or lmcache (sized by LMCache's own server)",
        choices=("native", "lmcache"),
    ),
    Input(
        "swap_space",
        "--swap-space",
        "swap_space",
        "gib",
        "swap space",
        "GiB of CPU swap a GPU: allocated by the V0 engine only",
        "Swap space, GiB a GPU (optional, --swap-space)",
        "CPU swap for preempted requests: allocated by the V0 engine only",
        unit="GiB",
    ),
    # sleep mode and /dev/shm (vllm/config/model.py enable_sleep_mode; vllm/distributed/device_communicators/shm_broadcast.py)
    Input(
        "enable_sleep_mode",
        "--enable-sleep-mode",
        "enable_sleep_mode",
        "switch",
        "sleep mode",
        "sleep mode: what a sleeping engine frees, and on a unified box what it does not",
    ),
    Input(
        "sleep_level",
        "--sleep-level",
        None,  # POST /sleep?level=N, no engine argument
        "count",
        "sleep level",
        "with --enable-sleep-mode: the level of POST /sleep, 1 (weights kept in host memory, the default) or 2",
    ),
    Input(
        "shm_size",
        "--shm-size",
        None,  # docker's --shm-size, read as docker reads it (calc/engine/hostmem.py)
        "text",
        "/dev/shm size",
        "the container's /dev/shm (docker --shm-size), such as 64m or 1 GiB: checked against vLLM's message queues",
    ),
    Input(
        "mq_max_chunk_mb",
        "--mq-max-chunk-mb",
        None,  # the environment variable VLLM_MQ_MAX_CHUNK_BYTES_MB
        "count",
        "message queue chunk",
        "VLLM_MQ_MAX_CHUNK_BYTES_MB (default 16): the chunk of the scheduler's /dev/shm queue",
    ),
    Input(
        "left_after_start",
        "--left-after-start",
        None,
        "size",
        "left after start",
        "MemAvailable (or free memory) once the pool and graphs are allocated: checked against the worst prefill",
        unit="B",
    ),
    # multimodal models (vllm/config/multimodal.py)
    Input(
        "mm_encoder_tp_mode",
        "--mm-encoder-tp-mode",
        "mm_encoder_tp_mode",
        "text",  # weights or data, checked by calc/engine/multimodal.py
        "encoder TP mode",
        "weights (the default: the vision tower divided over the TP ranks) or data (whole on every rank)",
    ),
    Input(
        "limit_mm_per_prompt",
        "--limit-mm-per-prompt",
        "limit_mm_per_prompt",
        "text",
        "items a prompt may hold",
        'items a prompt may hold, such as \'{"image": 0, "video": 0}\' (0 for all: no tower loaded, no encoder profile)',
    ),
    # the start gate's own figures
    Input(
        "overhead",
        "--overhead",
        None,
        "size",
        "overhead",
        "on a unified-memory box, the start gate's overhead a rank, such as 6 GiB (default: a measured start of the same model in the catalog)",
        "Overhead a rank (optional)",
        "Empty: from a measured start of the same model, if the catalog has one",
    ),
    Input("weights", None, None, "size", "weights", "", "Weights a rank (optional)", unit="B"),
    # readings: the pool a log printed, its tokens
    Input("pool", "--pool", None, "size", "KV pool", "the pool's size per rank, such as 24 GiB", "KV pool a rank", unit="B"),
    Input("reading", "--reading", None, "text", "reading", "MAX_MODEL_LEN:TOKENS from a startup line, repeatable"),
    Input("length", None, "max_model_len", "count", "max_model_len", "", "max_model_len, start {n}", unit="tokens"),
    Input("logged_tokens", None, None, "count", "tokens logged", "", "Tokens logged, start {n}", 'The "GPU KV cache size: N tokens" line', unit="tokens"),
    # several models on a box
    Input(
        "fractions", "--fractions", None, "list", "engine fractions", "engine fractions in start order, such as 0.5,0.35", "Engine fractions, in start order"
    ),
    Input("resident_kv", None, None, "size", "KV pool", "", "Model {n}: KV pool", "Bytes", unit="B"),
    Input("headroom", None, None, "size", "headroom", "", "Model {n}: headroom", "Bytes", unit="B"),
    # prefetch
    Input("checkpoint", "--checkpoint", None, "size", "checkpoint size", "", "Checkpoint size", "Bytes: " + SIZES, unit="B"),
    Input(
        "filesystem",
        "--filesystem",
        None,
        "choice",
        "filesystem",
        "where the checkpoint is: nfs, nfs4, lustre, ext4, xfs...; both kinds when omitted",
        "Filesystem of the checkpoint",
        "vLLM auto-prefetches only from a network filesystem",
    ),
    Input(
        "cgroup_available", "--cgroup-available", None, "size", "cgroup limit", "the container's memory limit less its usage, when it runs under one", unit="B"
    ),
    # the memory guard and the watch loop
    Input("trace", "trace", None, "text", "trace", "a trace file ('<seconds> <size>' a line), - for stdin, or a trace id from the catalog"),
    Input("floor", "--floor", None, "size", "floor", "the guard's floor (default: the catalog's policy)", unit="B"),
    Input("polls", "--polls", None, "count", "polls", "polls in a row under the floor that kill (default: the catalog's policy)"),
    Input("serving_at", "--serving-at", None, "seconds", "serving at", "seconds at which the head serves; the guard stops there", unit="seconds"),
    Input(
        "proc",
        "--proc",
        None,
        "text",
        "meminfo file",
        "meminfo file to read (default /proc/meminfo); repeat it to read one file a poll, the last one after that",
    ),
    Input("interval", "--interval", None, "seconds", "interval", "seconds between polls (default: the guard's, 2)", unit="seconds"),
    Input("duration", "--duration", None, "seconds", "duration", "seconds to watch (default 60; with --proc files, one poll a file)", unit="seconds"),
    Input("out", "--out", None, "text", "trace file", "write the polls to this new trace file (never in the catalog), which python -m calc guard replays"),
    Input("force", "--force", None, "switch", "force", "--out may replace an existing file"),
    # ingest
    Input("file", "file", None, "text", "log", "the log file, or - for standard input"),
    Input("yaml", "--yaml", None, "switch", "YAML", "print a catalog deployment with this start, for catalog/starts.yaml"),
    Input("id", "--id", None, "text", "deployment id", "--yaml: the deployment's id (default: the model's name and -log)"),
    Input("check", "--check", None, "switch", "check", ""),
    # "Your start": a pasted log and memory readings
    Input("preset", None, None, "choice", "preset", "", "Preset from the catalog", "Fills the fields below from a deployment the catalog measured"),
    Input(
        "log",
        None,
        None,
        "text",
        "startup log",
        "",
        "Startup log (paste)",
        "vLLM or SGLang startup output, as printed; one rank's or all of them (at most {lines} lines and {paste} MiB)",
    ),
    Input("before", None, None, "text", "before the start", "", "Before the start: free -b, free -m, /proc/meminfo or MemAvailable"),
    Input("serving", None, None, "text", "once it serves", "", "Once it serves: the same reading"),
    Input("free_unit", None, None, "choice", "unit", "", "Unit of pasted free output", "free prints no unit; paste the command line with it or choose"),
    Input("pins", None, None, "list", "other pins", "", "Other pins to size (optional)", "Sizes separated by commas, such as 20 GiB, 30e9"),
    Input(
        "lengths",
        None,
        None,
        "list",
        "other max_model_len",
        "",
        "Other max_model_len to size (optional)",
        "Token counts separated by commas, such as 32768, 131072",
        inputmode="numeric",
    ),
)

INPUTS: dict[str, Input] = {i.key: i for i in TABLE}
if len(INPUTS) != len(TABLE):  # pragma: no cover - a slip in the table above
    raise ValueError("calc/present/inputs.py: an input key is declared twice")


# --- where each input is taken --------------------------------------------------------------


@record
class Use:
    """One input as a command or a form takes it; what is given here overrides the table's entry
    for this use alone (a help that says what the input means to this command, a default)."""

    key: str
    help: str | None = None
    default: str | None = None
    required: bool = False
    repeat: bool = False  # a flag given more than once: each value kept, in order
    aliases: tuple[str, ...] | None = None
    group: str = ""  # flags of one group exclude each other
    name: str = ""  # a form field's name (and address key) where it differs from the key
    label: str | None = None
    form_help: str | None = None
    kind: str = ""  # a form field's control: text, textarea, select, checkbox; empty: from the input's kind
    inputmode: str = ""
    rows: int = 4
    minimum: int | None = None
    numbered: int = 0  # a form field repeated for 1..numbered, named key_1, key_2...

    @property
    def input(self) -> Input:
        return INPUTS[self.key]

    @property
    def field_name(self) -> str:
        return self.name or self.key


def use(key: str, help: str | None = None, **kwargs: object) -> Use:
    if key not in INPUTS:
        raise KeyError(f"calc/present/inputs.py: found no input {key!r} in TABLE")
    return Use(key, help, **kwargs)  # type: ignore[arg-type]


_MODEL_BATCH = "(default 8192; with a card, the release's default for it)"

COMMAND_FLAGS: dict[str, tuple[Use, ...]] = {
    "gate": (
        use("deployment"),
        use("pin"),
        use("drafter"),
        use("speculative_tokens", minimum=1),
        use("prefill_budget"),
        use("seats"),
        use("max_model_len", "--max-model-len"),
        use("typical_context"),
        use("gpu_memory_utilization", aliases=()),
        use("available"),
        use("data_parallel_size", "replicas of the deployment, each on boxes of its own with a whole budget", default="1"),
        use("head_extra"),
        use("kv_offloading_size"),
        use("cpu_offload_gb"),
        use("enable_sleep_mode"),
        use("sleep_level"),
        use("shm_size"),
        use("mq_max_chunk_mb"),
    ),
    "kv": (
        use("deployment", "take bytes per token measured on this deployment"),
        use("speculative_tokens", "the measured reading at this many speculative tokens"),
        use("bytes_per_token"),
        use("pin", "pool size (default 10e9)"),
        use("tokens"),
        use("max_model_len", default="131072"),
        use("block_size"),
        use("seats", ""),
        use("typical_context", ""),
    ),
    "fit": (
        use("pool", required=True),
        use("reading", repeat=True),
        use("max_model_len", "predict the token count at this max_model_len, repeatable", repeat=True),
    ),
    "fraction": (
        use("box", default="rtx-5090-node"),
        use("total"),
        use("free"),
        use("gpu_memory_utilization", "gpu_memory_utilization (default: vLLM's)"),
    ),
    "guard": (use("trace"), use("floor", ""), use("polls", ""), use("serving_at")),
    "watch": (use("proc", repeat=True), use("interval"), use("duration"), use("out"), use("force"), use("floor"), use("polls")),
    "plan": (
        use("box", default="dgx-spark"),
        use("model", "MODEL[:KV[:HEADROOM]], repeatable", repeat=True),
        use("fractions"),
        use("available", "MemAvailable before the first engine (default: the box's idle reading)"),
    ),
    "prefetch": (
        use("checkpoint", required=True),
        use("available", "MemAvailable when loading starts, or auto", required=True),
        use("filesystem"),
        use("cgroup_available"),
    ),
    "model": (
        use("config"),
        use("read_as"),
        use("tp", "tensor parallel size: the TP ranks of each replica", default="1"),
        use("kv_cache_dtype", default="auto"),
        use("quantization"),
        use(
            "max_model_len",
            "the context length: 32768, 32k or 32K as vLLM reads them; auto or -1: the largest that fits (vLLM 0.14.0 and later); "
            "none (this command's word, which vLLM refuses): the config's own, as leaving the flag out",
        ),
        use(
            "pin",
            "KV pool per rank, such as 10e9 or 9.31 GiB: prints the token count and concurrency; with --gpu of a unified-memory box, gates the start",
            aliases=("--pool",),
        ),
        use("available", "with --gpu of a unified-memory box: MemAvailable before the start (default: the box's reading in the catalog)"),
        use("overhead"),
        use("engine_version"),
        use("index"),
        use("block_size", "the pool's block in tokens (default 16, 64 for MLA, grown for mamba states)"),
        use("prefill_budget", "the prefill budget: tokens one step may schedule " + _MODEL_BATCH),
        use("gpu"),
        use("total_memory"),
        use("in_use"),
        use("gpu_memory_utilization", "with a card: the fraction vLLM may use (default the release's: 0.92 from 0.20.0, 0.9 before)", aliases=()),
        use("seats", "with a card: the sequences the sampler warms up for (default the release's for the card)"),
        use("pp", default="1"),
        use("enable_lora"),
        use("max_loras"),
        use("max_lora_rank"),
        use("max_cpu_loras"),
        use("cpu_offload_gb", "GiB of weights a rank moved to the host (whole parameters, the decoder layers in order)"),
        use("kv_offloading_size", "GiB of host memory for KV offloading, over the tensor-parallel ranks"),
        use("kv_offloading_backend"),
        use("swap_space"),
        use("pp_layer_partition"),
        use("enable_sleep_mode"),
        use("sleep_level"),
        use("shm_size"),
        use("mq_max_chunk_mb"),
        use("left_after_start"),
        use("mm_encoder_tp_mode"),
        use("limit_mm_per_prompt"),
        use("data_parallel_size", default="1"),
        use("enable_expert_parallel"),
        use("enable_eplb"),
        use("eplb_config"),
        use("num_redundant_experts"),
        use("enforce_eager"),
        use("offline"),
        use("flashinfer_installed"),
        use("no_flashinfer_sampler"),
        use("allow_long_max_model_len"),
        use("compile_cached"),
        use("no_chunked_prefill", group="chunked"),
        use("chunked_prefill", group="chunked"),
        use("no_extensible_kv_cache"),
        use("max_cudagraph_capture_size"),
        use("optimization_level"),
        use("speculative_tokens", "", default="0"),
        use("dcp", default="1"),
        use("no_prefix_caching", group="caching"),
        use("prefix_caching", group="caching"),
    ),
    "ingest": (
        use("file"),
        use("yaml"),
        use("model"),
        use("pin", "the KV pin the start was given, where the log does not print it: 10e9, 9.31 GiB"),
        use("box", "--yaml: the catalog box id the log was taken on"),
        use("boxes", default="1"),
        use("tp", "--yaml: the tensor-parallel size, where the log does not print it"),
        use("id"),
    ),
    "schema": (use("check"),),
    "check": (),
}

_PASTE = "{paste}"  # a paste's limit, filled in by the calculator that states it

FORMS: dict[str, tuple[Use, ...]] = {
    "start": (
        use("deployment", kind="select"),
        use("drafter"),
        use("speculative_tokens", minimum=1),
        use("pin"),
        use("available", label="MemAvailable at start, box {n}", numbered=-1),  # as many as the catalog's largest deployment has boxes
        use(
            "head_extra",
            label="Head box extra (optional, --head-extra)",
            form_help="What the head box runs beside its rank (Ray's head: GCS, dashboard); empty: none, every box gated alike. Bytes: " + SIZES,
        ),
        use("prefill_budget"),
        use("seats"),
        use("max_model_len"),
        use("gpu_memory_utilization"),
        use("typical_context"),
        use("kv_offloading_size"),
        use("cpu_offload_gb"),
    ),
    "before": (
        use("config", kind="textarea", rows=12),
        use(
            "read_as",
            label="Read it as the class (optional)",
            form_help="For a class calc does not read (a fine-tune's own name, a remote-code class): a class it reads "
            "(LlamaForCausalLM...) whose layers the model has, at your word; the answer says so",
        ),
        use("index", kind="textarea"),
        use("box", kind="select"),
        use("available"),
        use("tp"),
        use("kv_cache_dtype", kind="select"),
        use("quantization", kind="select"),
        use("max_model_len", form_help="Tokens, or auto: the largest the card's predicted pool holds (vLLM 0.14.0 and later)", inputmode="text"),
        use("prefill_budget", form_help="Tokens; empty: on a discrete card the release's default for the card, else the gate's calibration"),
        use("seats", form_help="Concurrent sequences; empty: on a discrete card the release's default for the card, else the gate's calibration"),
        use("speculative_tokens", form_help="--speculative-config's num_speculative_tokens; 0: no drafter"),
        use("enforce_eager", label="Eager (--enforce-eager)", form_help="No CUDA graphs, so no graph estimate (a predicted pool only)"),
        use("offline", label="Offline (the LLM class)", form_help="The LLM class's scheduler defaults, not vllm serve's (a predicted pool only)"),
        use(
            "flashinfer_installed",
            label="FlashInfer installed",
            form_help="vLLM 0.8 to 0.11: FlashInfer imports, so V1 samples with it (a predicted pool only)",
        ),
        use(
            "no_flashinfer_sampler",
            label="VLLM_USE_FLASHINFER_SAMPLER=0",
            form_help="vLLM 0.21 and later: the sampler warms up on the Triton or PyTorch path (a predicted pool only)",
        ),
        use(
            "allow_long_max_model_len",
            label="VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",
            form_help="A max_model_len above the model's max_position_embeddings starts rather than being refused (a predicted pool only)",
        ),
        use(
            "compile_cached",
            label="Compiled graph in vLLM's cache",
            form_help="A start after the first of the same model and settings: nothing is compiled inside the profile (a predicted pool only)",
        ),
        use("no_chunked_prefill"),
        use("no_extensible_kv_cache"),
        use("max_cudagraph_capture_size"),
        use("optimization_level", kind="select"),
        use("in_use"),
        use(
            "pin",
            form_help="Bytes: " + SIZES + "; empty: on a discrete card the pool vLLM leaves, predicted; on a unified box the largest the start gate passes",
        ),
        use(
            "gpu_memory_utilization",
            name="utilization",  # the address key the field was published under
            form_help="--gpu-memory-utilization, such as 0.9; empty: the release's default",
        ),
        use("overhead", kind="text"),
        use("engine_version"),
        use("pp", name="pipeline_parallel_size"),  # vLLM's key: a new field, no published link to keep
        use("pp_layer_partition"),
        use("enable_lora"),
        use("max_loras"),
        use("max_lora_rank"),
        use("max_cpu_loras"),
        use("cpu_offload_gb"),
        use("kv_offloading_size"),
        use("swap_space"),
    ),
    "kv": (
        use("deployment", name="reading", label="Bytes per token from", kind="select"),
        use("bytes_per_token", name="bpt", label="Bytes per token per rank (typed)", form_help="Used when \u201ctyped below\u201d is chosen"),
        use("pin", label="KV pool (bytes)", form_help="Bytes to tokens: " + SIZES),
        use("tokens"),
        use("max_model_len"),
        use("seats", label="Seats (optional)", form_help="With a typical context: the pin for them"),
        use("typical_context", form_help="Tokens"),
    ),
    "fit": (
        use("pool", form_help="The same pool at both starts. Bytes: " + SIZES),
        use("length", name="length_1", label="max_model_len, first start", form_help="--max-model-len"),
        use("logged_tokens", name="tokens_1", label="Tokens logged, first start"),
        use("length", name="length_2", label="max_model_len, second start", form_help="Another --max-model-len, same build and pool"),
        use("logged_tokens", name="tokens_2", label="Tokens logged, second start"),
        use("max_model_len", name="predict", label="Predict at max_model_len", form_help="The context length you plan to run"),
    ),
    "plan": (
        use("box", kind="select"),
        use("model", label="Model {n}", kind="select", numbered=3),
        use("resident_kv", name="kv", numbered=3),
        use("headroom", numbered=3),
        use("fractions", form_help="gpu_memory_utilization of each engine, separated by commas", inputmode="decimal"),
        use("available", label="MemAvailable before the first engine"),
    ),
    "prefetch": (
        use("checkpoint"),
        use(
            "available",
            label="MemAvailable when loading starts",
            form_help="After the kernel-init allocations, on GB10; in a container, at most its memory limit less its usage",
        ),
        use("filesystem", kind="select"),
    ),
    "yourstart": (
        use("preset", kind="select"),
        use("log", kind="textarea", rows=6),
        use("box", kind="select"),
        use("total", form_help="Empty: the box's total from the catalog. Bytes: " + SIZES),
        use("before", kind="textarea", rows=3, form_help="The tightest box's reading; on a discrete card, its free memory"),
        use("serving", kind="textarea", rows=3, form_help="With both readings the overhead is measured, not typed"),
        use("free_unit", kind="select"),
        use("weights", form_help="Empty: the log's \u201cModel loading took\u201d line. Bytes: " + SIZES),
        use("overhead", form_help="Empty: held - weights - KV pool, from the two readings. Bytes: " + SIZES),
        use("bytes_per_token", label="Bytes per token a rank (optional)", form_help="Empty: the log's pool over its token count", inputmode="decimal"),
        use("pin", label="KV pin to plan (--kv-cache-memory-bytes)", form_help="Empty: the log's KV pool. Bytes: " + SIZES),
        use("max_model_len", label="max_model_len (optional)", form_help="Empty: the log's"),
        use("tp", label="Tensor-parallel size (optional)", form_help="Empty: the log's"),
        use("gpu_memory_utilization", form_help="Empty: the log's, else the largest that passes"),
        use("served_model", name="model"),
        use("pins"),
        use("lengths"),
    ),
}


def flag_names(u: Use) -> tuple[str, tuple[str, ...]]:
    """A use's flag and its hidden former spellings."""
    i = u.input
    assert i.flag is not None, f"input {i.key} has no flag"
    return i.flag, i.aliases if u.aliases is None else u.aliases


def cli_help(u: Use) -> str:
    """A flag's help on the command line: the use's, else the table's; a renamed flag says its
    former spelling, which is still read."""
    text = u.input.help if u.help is None else u.help
    _, aliases = flag_names(u)
    if aliases:
        text = (text + " " if text else "") + f"(formerly {', '.join(aliases)}, still read)"
    return text
