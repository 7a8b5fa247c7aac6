"""The rest of a `vllm serve` command line, so that `calc model` takes a command pasted whole: the
flags of vllm/engine/arg_utils.py and vllm/entrypoints/common/cli_args.py (v0.33.0, with earlier
releases' spellings) that calc has no input for. Those that size no GPU memory are read and set
aside; those that do, in a way calc does not model, are read and named in a note beside the figures,
which then take vLLM's default for them. A flag of neither table is refused as before."""

from __future__ import annotations

import argparse
from collections.abc import Mapping

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
}  # fmt: skip

# Memory of theirs that calc does not model: each with the figure it moves. True / "+" / False as above.
NOT_MODELED: Mapping[str, tuple[bool | str, str]] = {
    "--compilation-config": (True, "the CUDA graphs captured and the compile's block (vllm/config/compilation.py)"),
    "-O": (True, "the CUDA graphs captured and the compile's block (the optimization level, vllm/config/compilation.py)"),
    "--optimization-level": (True, "the CUDA graphs captured and the compile's block (vllm/config/compilation.py)"),
    "--cuda-graph-sizes": ("+", "the CUDA graphs captured (their sizes)"),
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
    "--quantization-config": (True, "the weights' quantization"),
}  # fmt: skip

# 16-bit dtypes: the widths calc models; vLLM loads a float32 checkpoint in bfloat16 under auto (vllm/config/model.py _resolve_auto_dtype)
DTYPES_16 = frozenset({"auto", "half", "float16", "bfloat16", "fp16", "bf16"})


def dests() -> frozenset[str]:
    """Every namespace attribute declare() stores a flag under."""
    return frozenset({*(dest(f) for f in (*ASIDE, *NOT_MODELED)), "chunked_prefill", "vllm_dtype", "max_cudagraph_capture_size", "cudagraph_capture_sizes"})


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
    chunked = p.add_mutually_exclusive_group()
    chunked.add_argument("--enable-chunked-prefill", dest="chunked_prefill", action="store_const", const=True, default=None,
                         help="with a card: chunked prefill on (V1 always; on V0 it sets the default budget to 2,048 tokens)")  # fmt: skip
    chunked.add_argument("--no-enable-chunked-prefill", dest="chunked_prefill", action="store_const", const=False,
                         help="with a card: chunked prefill off, so the default budget holds max_model_len (vllm/engine/arg_utils.py)")  # fmt: skip
    p.add_argument("--max-cudagraph-capture-size", dest="max_cudagraph_capture_size", default=None, metavar="N",
                   help="with a card: the largest CUDA graph vLLM captures (the grid up to it), which sizes the graph estimate from v0.20.0")  # fmt: skip
    p.add_argument("--cudagraph-capture-sizes", dest="cudagraph_capture_sizes", nargs="+", default=None, metavar="N",
                   help="with a card: the token counts vLLM captures a CUDA graph for, in place of its grid")  # fmt: skip
    p.add_argument("--dtype", dest="vllm_dtype", default=None,
                   help="vLLM's --dtype: auto, half, float16 or bfloat16 (16-bit weights, as calc models them); other flags of "
                        "`vllm serve` that size no memory (--host, --port, --served-model-name, --trust-remote-code...) are read "
                        "and set aside, those calc does not model (--compilation-config, --max-cudagraph-capture-size...) named in a note")  # fmt: skip


def notes(args: argparse.Namespace, card_read: bool) -> tuple[str, ...]:
    """What the answer says of the vLLM flags read from these tables; a dtype calc does not model
    refused. Chunked prefill and the CUDA graphs' sizes are modeled where a card's pool is predicted
    (`card_read`: --gpu or --total-memory given), and set aside elsewhere: nothing else reads them."""
    from calc.units import InputError

    dtype = getattr(args, "vllm_dtype", None)
    if dtype is not None and dtype.strip().lower() not in DTYPES_16:
        raise InputError(f"--dtype: found {dtype.strip()!r}, expected auto, half, float16 or bfloat16: calc models weights and activations "
                         "in 16 bits (vLLM itself loads a float32 checkpoint in bfloat16 under auto)")  # fmt: skip
    given = [f for f in ASIDE if _given(args, f)]
    chunked = getattr(args, "chunked_prefill", None)
    if chunked is not None and not card_read:
        given.append("--enable-chunked-prefill" if chunked else "--no-enable-chunked-prefill")
    for key, flag in (("max_cudagraph_capture_size", "--max-cudagraph-capture-size"), ("cudagraph_capture_sizes", "--cudagraph-capture-sizes")):
        if getattr(args, key, None) is not None and not card_read:
            given.append(flag)
    unmodeled = [f for f in NOT_MODELED if _given(args, f)]
    out: list[str] = []
    if given or dtype is not None:
        said = ([f"--dtype {dtype.strip()}"] if dtype is not None else []) + given
        out.append(f"read and set aside, as they size no GPU memory or match calc's 16-bit model: {', '.join(said)}")
    for flag in unmodeled:
        typed = flag + str(getattr(args, dest(flag))).lstrip("=") if flag == "-O" else flag  # -O3 as typed
        out.append(f"{typed}: read but not modeled, the figures take vLLM's default for it; it moves {NOT_MODELED[flag][1]}")
    return tuple(out)


def _given(args: argparse.Namespace, flag: str) -> bool:
    value = getattr(args, dest(flag), None)
    return value is not None and value is not False


def capture(args: argparse.Namespace) -> tuple[int | None, tuple[int, ...] | None]:
    """--max-cudagraph-capture-size and --cudagraph-capture-sizes as token counts (vLLM's list also
    reads as one comma-separated word: '1,2,4,8')."""
    from calc.units import parse_count

    largest = getattr(args, "max_cudagraph_capture_size", None)
    sizes = getattr(args, "cudagraph_capture_sizes", None)
    words = [w for v in sizes for w in v.replace("[", " ").replace("]", " ").replace(",", " ").split()] if sizes is not None else None
    return (
        parse_count(largest, "--max-cudagraph-capture-size") if largest is not None else None,
        tuple(parse_count(w, "--cudagraph-capture-sizes") for w in words) if words is not None else None,
    )
