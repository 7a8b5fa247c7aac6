"""Weights per rank from a config.json, laid out the way vLLM splits them over tensor parallel.

Every tensor of the checkpoint is listed with its shape on one rank:
- column-parallel (q/k/v, gate/up, in_proj, each expert's gate/up) divide their output rows,
  row-parallel (o_proj, down_proj, out_proj) their input columns
  (vllm/model_executor/layers/linear.py);
- embeddings and lm_head are vocab-parallel: the vocabulary is padded to a multiple of 64 and
  divided (vllm/model_executor/layers/vocab_parallel_embedding.py, DEFAULT_VOCAB_PADDING_SIZE);
  tied embeddings are one tensor;
- K and V heads are divided while there are at least as many as ranks, and replicated (one
  head a rank) below that;
- norms, MoE routers and MLA's down-projections (q_a, kv_a) are replicated on every rank;
- every expert of an MoE is resident, each expert's matrices divided like a dense MLP.

Bytes follow the checkpoint's quantization_config: FP8 (one byte plus a float32 scale per
128x128 block when weight_block_size is given, else per tensor), NVFP4 (half a byte plus an
fp8 scale per 16 values and two float32 per-tensor scales), MXFP4 (half a byte plus an e8m0
scale per 32), AWQ/GPTQ (bits per value plus an fp16 scale, and packed zeros unless symmetric,
per group); ModelOpt's MIXED_PRECISION each module as its quantized_layers entry says (MIXED_ALGOS).
Embeddings, lm_head, norms and routers stay in the model dtype unless the config says otherwise,
and so does every module the config's ignore list names.

The drafter layers a config declares (DeepSeek's, GLM's and MiMo's num_nextn_predict_layers, Qwen3-Next's
mtp_num_hidden_layers) are counted apart: they load only with speculative decoding. MiniMax-M2's
MTP modules are not counted: vLLM skips them and has no drafter for them.

A float32 checkpoint is counted at two bytes a value: vLLM's --dtype auto loads it in bfloat16.
Norms, q/k norms and biases are counted as each model's vLLM code builds them; MoE routers are
float32 where vLLM keeps them so (GLM-4.5, MiniMax-M2).

A checkpoint's own size (model.safetensors.index.json's metadata.total_size) beats this count:
`per_rank` then splits that total by the modeled layout, and says so.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache

from calc.engine.hfconfig import (
    CHUNKED,
    FULL,
    LIGHTNING,
    LINEAR,
    MAMBA,
    MAMBA1,
    MLA,
    MLP_ONLY,
    MOE_ONLY,
    NO_ATTENTION,
    OWN_CODE_RELEASES,
    PARALLEL,
    SHARED_FULL,
    SHARED_SLIDING,
    SHORT_CONV,
    SLIDING,
    ConfigError,
    DeepseekV4Dims,
    GatedDeltaNet,
    Mamba1Mixer,
    Mamba2Mixer,
    Mlp,
    PerLayerInputs,
    Shape,
    ShortConvMixer,
    Tower,
    as_flag,
)
from calc.jsontext import Json, JsonObject
from calc.units import InputError

VOCAB_PADDING = 64


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Tensor:
    """One weight on one rank: rows x cols (a vector has cols 1), `count` copies (experts)."""

    path: str
    rows: int
    cols: int = 1
    count: int = 1
    linear: bool = False  # a projection a quantization scheme may pack
    drafter: bool = False
    dtype_bytes: int | None = None  # kept in this width whatever the model's dtype (float32 routers)
    tower: bool = False  # the vision tower or its projector
    buffer: bool = False  # built at load, not read from the checkpoint (a rope's cos/sin cache): not scaled to it, not offloaded
    fp4: bool = False  # MXFP4 whatever the checkpoint's quantization_config (DeepSeek V4's experts of expert_dtype fp4)
    nvfp4: bool = False  # NVFP4 whatever the checkpoint's method (DeepSeek V4's fp4 experts under moe_quant_algo NVFP4)


# bitsandbytes (vllm/model_executor/layers/quantization/bitsandbytes.py, read in v0.13.0 and v0.23.0; no
# such file from v0.28.0): 4-bit weights packed two a byte (create_qweight_for_4bit), one absmax a block
# of 64 values (bitsandbytes' quantize_4bit blocksize); 8-bit weights one byte a value
# (create_qweight_for_8bit) and a float32 scale a row (the checkpoint's SCB). A double-quantized
# checkpoint (bnb_4bit_use_double_quant), and any checkpoint quantized as it loads (quantize_4bit with
# compress_statistics=True), keeps its absmax as one byte a block and a float32 a 256 blocks; from
# v0.9.2 the loader expands them to a float32 a block as it loads (bitsandbytes_loader.py dequantize_dq,
# not in v0.9.1). Nothing of a quant state's 16-value code table is counted.
BNB_BLOCK = 64
BNB_NESTED_BLOCK = 256
BNB_EXPANDED_FROM = (0, 9, 2)
BNB_UNTIL = (0, 28)


@dataclass(frozen=True)
class Quant:
    method: str  # none, fp8, fp8-block, fp8-channel, nvfp4, mxfp4, int, bnb4, bnb8
    block: tuple[int, int] = (128, 128)
    bits: int = 16
    group: int = 0
    zeros: bool = False
    g_idx: bool = False
    ignore: tuple[str, ...] = ()
    static_input: bool = False
    scale_bytes: int = 4  # a block's fp8 scale: float32, or one e8m0 byte (DeepSeek V4's fp4 checkpoints)
    nested: bool = False  # bitsandbytes' absmax kept double-quantized on the device (bnb_as_loaded)
    # ModelOpt MIXED_PRECISION: the checkpoint's quantized_layers, each module name with its algorithm and group size
    layers: tuple[tuple[str, str, int], ...] = ()
    file: str = ""  # the config that gave them, for what is said of them


def quant_of(shape: Shape) -> Quant:
    """The checkpoint's packing, read from quantization_config (each field checked as it is read)."""
    q = shape.quantization
    if not q:
        return Quant("none")
    nested = _object(q.get("quantization"))
    method = str(q.get("quant_method", "")).lower()
    ignore = _ignore(shape.file, q, nested, method)
    algo = str(q.get("quant_algo") or nested.get("quant_algo") or "").upper()
    if method == "fp8":
        block = q.get("weight_block_size")
        static = q.get("activation_scheme") == "static"
        if block:
            # DeepSeek V4's fp4-expert checkpoints keep their linear scales as e8m0, one byte a block (deepseek_v4/quant_config.py
            # is_scale_e8m0; fp8.py Fp8LinearMethod scale_dtype float8_e8m0fnu, 0.33.0)
            scale = 1 if shape.dsv4 and shape.dsv4.expert_fp4 else 4
            return Quant("fp8-block", block=_block(block, shape.file, "quantization_config.weight_block_size"), ignore=ignore, scale_bytes=scale)
        return Quant("fp8", ignore=ignore, static_input=static)
    if method == "mxfp4":
        return Quant("mxfp4", group=32, ignore=ignore)
    if method == "fbgemm_fp8":
        # FBGEMMFp8LinearMethod (quantization/fbgemm_fp8.py, 0.11.0 to 0.33.0): each linear layer not in
        # modules_to_not_convert an fp8 weight and a float32 scale a row; it gives fused experts no method,
        # so they load unquantized (UnquantizedFusedMoEMethod, fused_moe/routed_experts.py, 0.33.0)
        return Quant("fp8-channel", ignore=ignore)
    if method.startswith("modelopt"):  # modelopt, and the modelopt_fp4 and modelopt_mixed vLLM names them by (modelopt.py, 0.33.0)
        if algo == "MIXED_PRECISION":
            return _mixed(shape, q, nested, ignore)
        if algo == "NVFP4":
            size = _whole(q.get("group_size") or nested.get("group_size") or 16, shape.file, "quantization_config.group_size")
            return Quant("nvfp4", group=size, ignore=ignore)
        if algo == "FP8":
            return Quant("fp8", ignore=ignore, static_input=True)
        raise ConfigError(shape.file, "quantization_config.quant_algo", algo or None, "NVFP4, FP8 or MIXED_PRECISION")
    if method in ("awq", "gptq"):
        bits, group = q.get("bits", q.get("w_bit")), q.get("group_size", q.get("q_group_size"))
        if not isinstance(bits, int) or bits not in (2, 3, 4, 8):
            raise ConfigError(shape.file, "quantization_config.bits", bits, "2, 3, 4 or 8")
        if not isinstance(group, int) or group == 0 or group < -1:
            raise ConfigError(shape.file, "quantization_config.group_size", group, "a group size such as 128, or -1 for one group a row")
        zeros = (
            as_flag(q.get("zero_point", True), shape.file, "quantization_config.zero_point")
            if method == "awq"
            else not as_flag(q.get("sym", True), shape.file, "quantization_config.sym")
        )
        return Quant("int", bits=bits, group=group, zeros=zeros, g_idx=method == "gptq", ignore=ignore)
    if method == "compressed-tensors":
        return _compressed_tensors(shape, q, ignore)
    if method == "bitsandbytes":
        eight = as_flag(q.get("load_in_8bit", False), shape.file, "quantization_config.load_in_8bit")
        return Quant("bnb8", bits=8, ignore=ignore) if eight else Quant("bnb4", bits=4, group=BNB_BLOCK, ignore=ignore, nested=shape.bnb_nested_on_device)
    raise ConfigError(shape.file, "quantization_config.quant_method", q.get("quant_method"),
                      "fp8, mxfp4, modelopt (NVFP4, FP8 or MIXED_PRECISION), awq, gptq, compressed-tensors, bitsandbytes or fbgemm_fp8")  # fmt: skip


def _compressed_tensors(shape: Shape, q: JsonObject, ignore: tuple[str, ...]) -> Quant:
    fmt_name = str(q.get("format", ""))
    groups = q.get("config_groups") or {}
    if not isinstance(groups, dict):
        raise ConfigError(shape.file, "quantization_config.config_groups", groups, "an object of quantization groups")
    weights = next((g.get("weights") for g in groups.values() if isinstance(g, dict) and g.get("weights")), None) or {}
    if not isinstance(weights, dict):
        raise ConfigError(shape.file, "quantization_config.config_groups.*.weights", weights, "an object")
    if "nvfp4" in fmt_name:
        return Quant(
            "nvfp4", group=_whole(weights.get("group_size") or 16, shape.file, "quantization_config.config_groups.*.weights.group_size"), ignore=ignore
        )
    if fmt_name == "float-quantized" or weights.get("type") == "float":
        block = weights.get("block_structure")
        if weights.get("strategy") == "block" and block:
            return Quant("fp8-block", block=_block(block, shape.file, "quantization_config.config_groups.*.weights.block_structure"), ignore=ignore)
        return Quant("fp8", ignore=ignore, static_input=not weights.get("dynamic", False))
    if fmt_name in ("pack-quantized", "int-quantized") or weights.get("type") == "int":
        bits = weights.get("num_bits")
        group = _whole(weights.get("group_size") or -1, shape.file, "quantization_config.config_groups.*.weights.group_size")
        if not isinstance(bits, int):
            raise ConfigError(shape.file, "quantization_config.config_groups.*.weights.num_bits", bits, "a whole number of bits")
        return Quant("int", bits=bits, group=group, zeros=not weights.get("symmetric", True), ignore=ignore)
    raise ConfigError(shape.file, "quantization_config.format", fmt_name or None, "nvfp4-pack-quantized, float-quantized or pack-quantized")


# ModelOptMixedPrecisionConfig (vllm/model_executor/layers/quantization/modelopt.py, 0.33.0, quant_method modelopt_mixed):
# each linear layer and each layer's routed experts take the algorithm its checkpoint module name has in quantized_layers,
# a linear layer not listed none (UnquantizedLinearMethod), the exclude list first. Found as vLLM finds it
# (_resolve_quant_algo): the name itself, the shards of a fused layer (qkv_proj, gate_up_proj, Qwen3.5's in_proj_qkvz and
# in_proj_ba; shards of two algorithms are refused), the routed experts by any name under their module; the checkpoint's
# prefixes (model.language_model., language_model.model., Nemotron-H's backbone.) as its hf_to_vllm_mapper renames them.
# Each algorithm packs as its own config does: FP8 per tensor (ModelOptFp8Config: a float32 weight and input scale),
# FP8_PER_CHANNEL_PER_TOKEN a float32 scale a row, FP8_PB_WO (FP8_BLOCK_SCALES) blocks of group_size, NVFP4 and
# W4A16_NVFP4 two values a byte with an fp8 scale a group (16) and two float32 scalars, MXFP8 a byte a value and an
# e8m0 byte a 32 (MXFP8_BLOCK_SIZE). The b12x block codecs (iq2_xs, iq2_xxs, q8_0) are not modeled.
MIXED_ALGOS = {"FP8": "fp8", "FP8_PER_CHANNEL_PER_TOKEN": "fp8-channel", "FP8_PB_WO": "fp8-block", "FP8_BLOCK_SCALES": "fp8-block",
               "NVFP4": "nvfp4", "W4A16_NVFP4": "nvfp4", "MXFP8": "mxfp8"}  # fmt: skip
MIXED_FUSED = {"gate_up_proj": ("gate_proj", "up_proj"), "qkv_proj": ("q_proj", "k_proj", "v_proj"),
               "in_proj_qkvz": ("in_proj_qkv", "in_proj_z"), "in_proj_ba": ("in_proj_b", "in_proj_a")}  # fmt: skip
MIXED_PREFIXES = ("model.", "model.language_model.", "language_model.model.", "backbone.", "")


def _mixed(shape: Shape, q: JsonObject, nested: JsonObject, ignore: tuple[str, ...]) -> Quant:
    """ModelOpt's MIXED_PRECISION: the per-module algorithms of quantized_layers (in quantization_config, or under
    hf_quant_config.json's "quantization"), each checked as it is read."""
    where = "quantization_config.quantization.quantized_layers" if "quantized_layers" not in q and nested else "quantization_config.quantized_layers"
    listed = q.get("quantized_layers", nested.get("quantized_layers"))
    if not isinstance(listed, dict) or not listed:
        raise ConfigError(shape.file, where, listed, "an object of module names and their algorithms: vLLM refuses MIXED_PRECISION without one")
    layers = []
    for name, given in listed.items():
        recipe = _object(given)
        algo = str(recipe.get("quant_algo", "")).upper()
        if algo not in MIXED_ALGOS:
            raise ConfigError(shape.file, f"{where}.{name}.quant_algo", recipe.get("quant_algo") if recipe else given,
                              "one of " + ", ".join(MIXED_ALGOS) + " (the b12x block codecs are not modeled)")  # fmt: skip
        default = 128 if MIXED_ALGOS[algo] == "fp8-block" else 16
        layers.append((name, algo, _whole(recipe.get("group_size", default), shape.file, f"{where}.{name}.group_size")))
    return Quant("mixed", ignore=ignore, layers=tuple(layers), file=shape.file)


@lru_cache(maxsize=8)
def _mixed_index(layers: tuple[tuple[str, str, int], ...]) -> tuple[dict[str, tuple[str, int]], dict[str, set[tuple[str, int]]]]:
    """quantized_layers by name, and the algorithms found under each module name (for the routed experts)."""
    exact = {name: (algo, group) for name, algo, group in layers}
    under: dict[str, set[tuple[str, int]]] = {}
    for name, algo, group in layers:
        parts = name.split(".")
        for n in range(1, len(parts)):
            under.setdefault(".".join(parts[:n]), set()).add((algo, group))
    return exact, under


def _checkpoint_names(path: str) -> list[str]:
    """A tensor's module as the checkpoint may name it: the language model's prefixes, Nemotron-H's mixer for the
    attention, the shared experts' plural."""
    rest = path.removeprefix("model.")
    if rest == path:  # lm_head, the MTP module
        return [path]
    names = []
    for variant in {rest, rest.replace(".self_attn.", ".mixer."), rest.replace(".shared_expert.", ".shared_experts.")}:
        names += [pre + variant for pre in MIXED_PREFIXES]
    return names


def mixed_algo(path: str, quant: Quant) -> tuple[str, int] | None:
    """The algorithm and group size quantized_layers gives the tensor at `path` (None: left unquantized)."""
    exact, under = _mixed_index(quant.layers)
    if _ignored(path, quant.ignore) or any(_ignored(n, quant.ignore) for n in _checkpoint_names(path)):
        return None
    if ".experts." in path:  # a layer's routed experts, one module: any name under it
        module = path[: path.index(".experts.") + len(".experts")]
        found = set().union(*(under.get(n, set()) | ({exact[n]} if n in exact else set()) for n in _checkpoint_names(module)))
    else:
        head, _, leaf = path.rpartition(".")
        # a shard calc lists apart (q_proj, gate_proj) is one layer with its siblings in vLLM (qkv_proj, gate_up_proj)
        shards = MIXED_FUSED.get(leaf, next((group for group in MIXED_FUSED.values() if leaf in group), (leaf,)))
        found = {exact[n] for shard in shards for n in _checkpoint_names(f"{head}.{shard}") if n in exact}
        found |= {exact[n] for n in _checkpoint_names(path) if n in exact}
    if len({a for a, _ in found}) > 1:
        raise InputError(f"{quant.file}: quantization_config.quantized_layers: found {sorted({a for a, _ in found})} for the shards of {path}, which vLLM fuses into one layer "
                         "and refuses ('Mixed quant_algo within fused layer'): expected one algorithm")  # fmt: skip
    return next(iter(found), None)


def _quant_for(t: Tensor, quant: Quant) -> Quant:
    """The packing of one tensor: a MIXED_PRECISION checkpoint's per-module algorithm, else the checkpoint's one."""
    if quant.method != "mixed":
        return quant
    if not (t.linear or t.path == "lm_head"):  # lm_head takes the quantization where it is listed (qwen3_5.py, nemotron_h.py)
        return Quant("none")
    found = mixed_algo(t.path, quant)
    if found is None:
        return Quant("none")
    algo, group = found
    method = MIXED_ALGOS[algo]
    if method == "fp8":
        return Quant("fp8", static_input=True)
    if method == "fp8-block":
        return Quant("fp8-block", block=(group, group))
    return Quant(method, group=32 if method == "mxfp8" else group)


def mixed_unmatched(shape: Shape, quant: Quant) -> list[str]:
    """The quantized_layers names no tensor of the model takes: what calc's layout does not hold."""
    names: set[str] = set()
    for t in tensors(shape, 1):
        if not (t.linear or t.path == "lm_head") or t.tower:
            continue
        if ".experts." in t.path:
            module = t.path[: t.path.index(".experts.") + len(".experts")]
            names.update(_checkpoint_names(module))
            continue
        head, _, leaf = t.path.rpartition(".")
        for shard in (*MIXED_FUSED.get(leaf, (leaf,)), "up_proj"):
            names.update(_checkpoint_names(f"{head}.{shard}"))
        names.update(_checkpoint_names(t.path))
    out = []
    for name, _, _ in quant.layers:
        parts = name.split(".")
        if not any(".".join(parts[:n]) in names for n in range(len(parts), 0, -1)):
            out.append(name)
    return out


def _object(value: Json) -> JsonObject:
    """A nested object of quantization_config, or none."""
    return value if isinstance(value, dict) else {}


def _ignore(file: str, q: JsonObject, nested: JsonObject, method: str = "") -> tuple[str, ...]:
    """The modules left unquantized: the first of the names a checkpoint's format gives them. Fp8Config reads
    ignored_layers, else modules_to_not_convert, and no other key (fp8.py from_config, 0.33.0): an fp8 checkpoint's
    "ignore" (NVIDIA's DeepSeek V4 NVFP4 configs: the modules ModelOpt left as the original FP8 had them) is not read."""
    keys = ("ignored_layers", "modules_to_not_convert") if method == "fp8" else ("ignore", "modules_to_not_convert", "llm_int8_skip_modules", "exclude_modules")
    for key, value in [*((k, q.get(k)) for k in keys), ("quantization.exclude_modules", None if method == "fp8" else nested.get("exclude_modules"))]:
        if value:
            if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
                raise ConfigError(file, f"quantization_config.{key}", value, "a list of module names")
            return tuple(name for name in value if isinstance(name, str))
    return ()


def _block(value: Json, file: str, field: str) -> tuple[int, int]:
    """A block of weights that shares one scale: two whole numbers of rows and columns."""
    whole = [b for b in value if isinstance(b, int) and not isinstance(b, bool) and b > 0] if isinstance(value, list) else []
    if not isinstance(value, list) or len(value) != 2 or len(whole) != 2:
        raise ConfigError(file, field, value, "two whole numbers, such as [128, 128]")
    return whole[0], whole[1]


def _whole(value: Json, file: str, field: str) -> int:
    """A group size: a whole number (JSON's, or its digits)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(file, field, value, "a whole number")
    try:
        return int(value)
    except ValueError:
        raise ConfigError(file, field, value, "a whole number") from None


def _globs(pattern: str) -> list[str]:
    """A module name of an ignore list as shell patterns. A compressed-tensors "re:" name is read as the
    few regex forms checkpoints write: ".*" any run, "\\." a dot, and groups of alternatives,
    "(gate|up|down)", one pattern each (Kimi K2.5's "re:.*mlp\\.(gate|up|gate_up|down)_proj.*");
    nothing else of a regex is taken, so no pattern of a config runs as one."""
    if not pattern.startswith("re:"):
        return [pattern]
    out = [""]
    rest = pattern[3:].replace(".*", "*").replace("\\.", ".")
    while rest:
        start, end = rest.find("("), rest.find(")")
        choices = rest[start + 1 : end].split("|")
        if start < 0 or end < start or "(" in rest[start + 1 : end] or len(out) * len(choices) > 64:
            return [head + rest for head in out]
        out = [head + rest[:start] + choice for head in out for choice in choices]
        rest = rest[end + 1 :]
    return out


@lru_cache(maxsize=64)
def _ignore_matcher(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One expression for a whole ignore list: each pattern as fnmatch reads it, alone or with a
    suffix (".*"), and a pattern without a wildcard also as a run of whole dotted parts of the name.
    An ignore list of a large checkpoint has hundreds of names (GLM-5's FP8 712), read for every
    tensor of every start tried: matched one by one, a start took minutes."""
    parts = []
    for p in (g for pattern in patterns for g in _globs(pattern)):
        parts += [fnmatch.translate(p), fnmatch.translate(p + ".*")]
        if "*" not in p:
            parts.append(r"(?s:(?:.*\.)?" + re.escape(p) + r"(?:\..*)?)\Z")
    return re.compile("|".join(parts) or r"(?!)")


@lru_cache(maxsize=1 << 16)
def _ignored(path: str, patterns: tuple[str, ...]) -> bool:
    # DeepSeek's and Kimi's checkpoints name the shared expert shared_experts (deepseek_v2.py), listed here as shared_expert
    if not patterns:
        return False
    matcher = _ignore_matcher(patterns)
    return any(matcher.match(name) for name in {path, path.replace(".shared_expert.", ".shared_experts.")})


def _fbgemm_expert(t: Tensor, quant: Quant) -> bool:
    """A fused expert's tensor under fbgemm_fp8, which quantizes linear layers only."""
    return quant.method == "fp8-channel" and ".experts." in t.path


def tensor_bytes(t: Tensor, quant: Quant, dtype_bytes: int) -> int:
    """Bytes of one tensor on one rank, with the scales its packing adds."""
    n = t.rows * t.cols
    if t.fp4:  # mxfp4.py Mxfp4MoEMethod: two values a byte and a uint8 (e8m0) scale a 32
        return (n // 2 + cdiv(n, 32)) * t.count
    if t.nvfp4:  # modelopt.py ModelOptNvFp4FusedMoE: two values a byte, an fp8 scale a 16, two float32 scalars
        return (n // 2 + cdiv(n, 16) + 8) * t.count
    if quant.method == "mixed":
        quant = _quant_for(t, quant)
        t = replace(t, linear=True) if quant.method != "none" else t
    if not t.linear or quant.method == "none" or _ignored(t.path, quant.ignore) or _fbgemm_expert(t, quant):
        return n * (t.dtype_bytes or dtype_bytes) * t.count
    m = quant.method
    if m == "fp8-channel":
        return (n + t.rows * 4) * t.count
    if m == "fp8-block":
        each = n + cdiv(t.rows, quant.block[0]) * cdiv(t.cols, quant.block[1]) * quant.scale_bytes
    elif m == "fp8":
        each = n + 4 + (4 if quant.static_input else 0)
    elif m == "nvfp4":
        each = n // 2 + cdiv(n, quant.group) + 4 + 4
    elif m == "mxfp4":
        each = n // 2 + cdiv(n, quant.group)
    elif m == "mxfp8":
        each = n + cdiv(n, quant.group)
    elif m == "bnb4":
        blocks = cdiv(n, quant.group)
        each = cdiv(n, 2) + (blocks + cdiv(blocks, BNB_NESTED_BLOCK) * 4 if quant.nested else blocks * 4)
    elif m == "bnb8":
        each = n + t.rows * 4
    else:  # int: AWQ, GPTQ, compressed-tensors pack-quantized
        groups = 1 if quant.group == -1 else cdiv(t.cols, quant.group)
        each = cdiv(n * quant.bits, 8) + groups * t.rows * 2
        if quant.zeros:
            each += cdiv(groups * t.rows * quant.bits, 8)
        if quant.g_idx:
            each += t.cols * 4
    return each * t.count


def vocab_rows(vocab: int, tp: int) -> int:
    """A vocabulary-parallel embedding's rows on one rank: the vocabulary padded to 64, divided
    (vocab_parallel_embedding.py, DEFAULT_VOCAB_PADDING_SIZE)."""
    return cdiv(cdiv(vocab, VOCAB_PADDING) * VOCAB_PADDING, tp)


def tensors(shape: Shape, tp: int = 1) -> list[Tensor]:
    """Every weight of the checkpoint as one rank of `tp` holds it."""
    h = shape.hidden
    vocab_rank = vocab_rows(shape.vocab, tp)
    out = [Tensor("model.embed_tokens", vocab_rank, h)]
    if shape.position_table:  # GPTBigCode's wpe: nn.Embedding, whole on every rank (gpt_bigcode.py, 0.10.1.1 to 0.24.0)
        out.append(Tensor("model.wpe", shape.position_table, h))
    if not shape.tie_embeddings:
        out.append(Tensor("lm_head", vocab_rank, h, dtype_bytes=4 if shape.lm_head_fp32 else None))
        if shape.lm_head_bias:
            out.append(Tensor("lm_head.bias", vocab_rank))
    out += _norm(shape, "model.norm")
    if shape.dsv4:  # DeepseekV4Model's hyper-connection head, float32, whole on every rank
        hc = shape.dsv4.hc_mult
        out += [Tensor("model.hc_head_fn", hc, hc * h, dtype_bytes=4), Tensor("model.hc_head_base", hc, dtype_bytes=4),
                Tensor("model.hc_head_scale", 1, dtype_bytes=4)]  # fmt: skip
    out += _per_layer_inputs(shape, tp)
    for i, (kind, mlp) in enumerate(zip(shape.layers, shape.mlps, strict=True)):
        out += _layer(shape, f"model.layers.{i}", kind, mlp, tp)
    out += _nemotron_h_mtp(shape, tp)
    for j in range(0 if shape.drafter_kinds else shape.drafter_layers):
        i = len(shape.layers) + j
        prefix = f"model.layers.{i}"
        kind = MLA if MLA in shape.layers else FULL
        mlp = next((m for m in reversed(shape.mlps) if m.experts), shape.mlps[-1])
        layer = _layer(shape, prefix, kind, mlp, tp)
        extra = [Tensor(f"{prefix}.eh_proj", h, 2 * h), Tensor(f"{prefix}.enorm", h), Tensor(f"{prefix}.hnorm", h)]
        if shape.architecture == "MiMoForCausalLM":  # mimo_mtp.py MiMoMultiTokenPredictorLayer: the same, and a norm after its block
            extra = [Tensor(f"{prefix}.input_proj", h, 2 * h), Tensor(f"{prefix}.token_layernorm", h), Tensor(f"{prefix}.hidden_layernorm", h),
                     Tensor(f"{prefix}.final_layernorm", h)]  # fmt: skip
        if mtp_with_ends(shape):  # the MTP module loads its own embedding and head
            extra += [Tensor(f"{prefix}.{end}", vocab_rank, h) for end in MTP_ENDS if end not in shape.drafter_shared]
            extra.append(Tensor(f"{prefix}.shared_head.norm", h))
        out += [Tensor(t.path, t.rows, t.cols, t.count, t.linear, drafter=True) for t in layer + extra]
    if shape.drafter_layers and shape.architecture.startswith(("Qwen3Next", "Qwen3_5")):  # Qwen's MTP module norms its output once
        out.append(Tensor("mtp.norm", h, drafter=True))  # (vllm/model_executor/models/qwen3_5_mtp.py and qwen3_next_mtp.py, 0.33.0)
    if shape.tower is not None:
        out += tower_tensors(shape.tower, tp)
    for rope in shape.ropes:  # on every rank whole, placed at the first layer it serves (its pipeline stage)
        first = shape.layers.index(rope.kind)
        out.append(
            Tensor(f"model.layers.{first}.self_attn.rotary_emb.cos_sin_cache", rope.positions, rope.rotary_dim, dtype_bytes=rope.dtype_bytes, buffer=True)
        )
    return out


def _nemotron_h_mtp(shape: Shape, tp: int) -> list[Tensor]:
    """Nemotron-H's MTP step (nemotron_h_mtp.py, 0.33.0): its layers by drafter_kinds, each the model's attention or MoE
    decoder layer (a norm and the mixer, under the checkpoint's quantization: get_draft_quant_config); the first also
    enorm, hnorm and eh_proj (ColumnParallelLinear from 2 x hidden_size to hidden_size), the last final_layernorm.
    No embedding or head of its own: has_own_embed_tokens and has_own_lm_head are False, the target's are used (0.18.0
    to 0.32.x build their own and the proposer swaps them for the target's at one pipeline stage: not counted)."""
    h, kinds = shape.hidden, shape.drafter_kinds
    moe = next((m for m in reversed(shape.mlps) if m.experts), Mlp())
    out: list[Tensor] = []
    for i, kind in enumerate(kinds * shape.drafter_layers):
        p = f"mtp.layers.{i}"
        layer = _layer(shape, p, kind, moe if kind == MOE_ONLY else Mlp(), tp)
        if i % len(kinds) == 0:
            layer += [Tensor(f"{p}.enorm", h), Tensor(f"{p}.hnorm", h), Tensor(f"{p}.eh_proj", h // tp, 2 * h, linear=True)]
        if i % len(kinds) == len(kinds) - 1:
            layer.append(Tensor(f"{p}.final_layernorm", h))
        out += [replace(t, drafter=True) for t in layer]
    return out


def _per_layer_inputs(shape: Shape, tp: int) -> list[Tensor]:
    """Gemma 3n's model-level tensors beyond the embedding (gemma3n.py Gemma3nSelfDecoder and
    Gemma3nTextModel, 0.33.0): the per-layer embedding (VocabParallelEmbedding of
    vocab_size_per_layer_input rows, num_hidden_layers x hidden_size_per_layer_input wide),
    per_layer_model_projection (ColumnParallelLinear to that width), per_layer_projection_norm, and
    altup_num_inputs - 1 AltUp projections in and as many out (ColumnParallelLinear of hidden_size),
    all divided over the ranks but the norm."""
    x = shape.per_layer
    if not x:
        return []
    h, n = shape.hidden, 1 if x.altup is None else x.altup  # Gemma 4 (gemma4.py Gemma4Model, 0.19.0 to 0.33.0): no AltUp
    wide = len(shape.layers) * x.hidden
    vocab = vocab_rows(x.vocab, tp)
    out = [Tensor("model.embed_tokens_per_layer", vocab, wide), Tensor("model.per_layer_model_projection", cdiv(wide, tp), h, linear=True),
           Tensor("model.per_layer_projection_norm", x.hidden)]  # fmt: skip
    out += [Tensor(f"model.altup_projections.{i}", h // tp, h, linear=True) for i in range(n - 1)]
    out += [Tensor(f"model.altup_unembed_projections.{i}", h // tp, h, linear=True) for i in range(n - 1)]
    return out


def _gemma3n_layer(shape: Shape, p: str, tp: int) -> list[Tensor]:
    """A Gemma 3n layer's own additions (gemma3n.py, 0.33.0): Gemma3nAltUp (correction_coefs,
    prediction_coefs, modality_router, replicated; router_norm; correct_output_scale, float32),
    Gemma3nLaurelBlock (linear_left column-, linear_right row-parallel; post_laurel_norm) and the
    per-layer input gate and projection (ReplicatedLinear)."""
    x = shape.part(PerLayerInputs)
    h, n, rank, hpl = shape.hidden, x.altup, x.laurel, x.hidden
    if n is None or rank is None:
        raise ValueError(f"{shape.file}: a Gemma 3n layer needs altup_num_inputs and laurel_rank, and the config's were not read")
    return [Tensor(f"{p}.altup.correction_coefs", n, n), Tensor(f"{p}.altup.prediction_coefs", n * n, n),
            Tensor(f"{p}.altup.modality_router", n, h), Tensor(f"{p}.altup.router_norm", h),
            Tensor(f"{p}.altup.correct_output_scale", h, dtype_bytes=4),
            Tensor(f"{p}.laurel.linear_left", cdiv(rank, tp), h, linear=True), Tensor(f"{p}.laurel.linear_right", h, cdiv(rank, tp), linear=True),
            Tensor(f"{p}.laurel.post_laurel_norm", h),
            Tensor(f"{p}.per_layer_input_gate", hpl, h, linear=True), Tensor(f"{p}.per_layer_projection", h, hpl, linear=True)]  # fmt: skip


def tower_split(tower: Tower, tp: int) -> int:
    """The ranks the tower's projections are divided over: every tensor-parallel rank, as its
    ColumnParallelLinear / RowParallelLinear / QKVParallelLinear layers are built, unless
    --mm-encoder-tp-mode data builds them with disable_tp (one whole copy a rank), or the tower's
    heads do not divide over the ranks, where vLLM falls back to the same
    (vllm/model_executor/models/vision.py, is_vit_use_data_parallel, 0.33.0). Qwen2-VL's and GLM-4V's
    towers ask without their head count, so there is no fall-back: their attention divides the heads
    over the ranks and vLLM stops at load (qwen2_vl.py Qwen2VisionAttention and glm4_1v.py
    Glm4vVisionAttention: dist_utils.divide(num_heads, tp_size), 0.10.1.1 to 0.33.0), which is refused here;
    so do CLIP's under LLaVA (clip.py CLIPAttention: divide(num_heads, tp_size), 0.10.1.1 to 0.33.0)."""
    if tower.data_parallel:
        return 1
    if tower.heads % tp and tower.kind in ("qwen2-vl", "glm4v", "clip"):
        where = {"glm4v": "glm4_1v.py Glm4vVisionAttention", "clip": "clip.py CLIPAttention"}.get(tower.kind, "qwen2_vl.py Qwen2VisionAttention")
        raise InputError(
            f"--tensor-parallel-size: found {tp}, which does not divide the {tower.name}'s {tower.heads} heads: vLLM fails to load it "
            f"({where}: "
            "divide(num_heads, tp_size)); "
            + ("expected a size that divides them: LLaVA takes no --mm-encoder-tp-mode data (vLLM falls back to weights)"
               if tower.kind == "clip" else "expected a size that divides them, or --mm-encoder-tp-mode data (0.11.0 and later) to build the tower whole on each rank")
        )  # fmt: skip
    return 1 if tower.heads % tp else tp


def tower_tensors(tower: Tower, tp: int) -> list[Tensor]:
    """The vision tower and its projector on one rank. Norms, patch embeddings, position tables and
    a row-parallel layer's bias are whole on every rank; the tower stays in the model's dtype (the
    published quantized checkpoints leave it unquantized, and SigLIP's MLP of 4,304 takes no
    quantization: vllm/model_executor/models/siglip.py, SiglipMLP, widths must divide by 64)."""
    n = tower_split(tower, tp)
    d, i, out = tower.hidden, tower.intermediate, tower.out_hidden

    def t(path: str, rows: int, cols: int = 1) -> Tensor:
        return Tensor(path, rows, cols, tower=True)

    def block(p: str, layernorm: bool, bias: bool, gated: bool) -> list[Tensor]:
        norms = 2 if layernorm else 1  # LayerNorm: weight and bias; RMSNorm: weight
        ts = [t(f"{p}.norm1", d * norms), t(f"{p}.norm2", d * norms), t(f"{p}.attn.qkv", 3 * d // n, d), t(f"{p}.attn.proj", d, d // n),
              t(f"{p}.mlp.fc1", (2 if gated else 1) * i // n, d), t(f"{p}.mlp.fc2", d, i // n)]  # fmt: skip
        if bias:
            ts += [t(f"{p}.attn.qkv.bias", 3 * d // n), t(f"{p}.attn.proj.bias", d), t(f"{p}.mlp.fc1.bias", (2 if gated else 1) * i // n),
                   t(f"{p}.mlp.fc2.bias", d)]  # fmt: skip
        return ts

    def linears(source: int) -> list[Tensor]:
        """The projector's linear_1 (column-parallel, from `source`) and linear_2 (row-parallel), divided
        over every rank whatever --mm-encoder-tp-mode says (llava.py LlavaMultiModalProjector, mistral3.py)."""
        ts = [t("multi_modal_projector.linear_1", out // tp, source), t("multi_modal_projector.linear_2", out, out // tp)]
        if tower.projector_bias:
            ts += [t("multi_modal_projector.linear_1.bias", out // tp), t("multi_modal_projector.linear_2.bias", out)]
        return ts

    if tower.kind in ("qwen3-vl", "qwen2.5-vl"):
        qwen3 = tower.kind == "qwen3-vl"
        kernel = tower.channels * tower.temporal_patch * tower.patch * tower.patch
        ts = [t("visual.patch_embed.proj", d, kernel)] + ([t("visual.patch_embed.proj.bias", d), t("visual.pos_embed", tower.positions, d)] if qwen3 else [])
        for b in range(tower.depth):
            ts += block(f"visual.blocks.{b}", layernorm=qwen3, bias=True, gated=not qwen3)
        wide = d * tower.merge**2
        mergers = ["visual.merger"] + [f"visual.deepstack_merger_list.{k}" for k in range(tower.deepstack)]
        for k, p in enumerate(mergers):
            norm = (wide if k else d) * (2 if qwen3 else 1)  # a deepstack merger norms after the shuffle
            ts += [t(f"{p}.norm", norm), t(f"{p}.linear_fc1", wide // n, wide), t(f"{p}.linear_fc1.bias", wide // n),
                   t(f"{p}.linear_fc2", out, wide // n), t(f"{p}.linear_fc2.bias", out)]  # fmt: skip
        return ts
    if tower.kind == "qwen2-vl":
        # qwen2_vl.py, 0.33.0: Qwen2VisionPatchEmbed (no bias), Qwen2VisionBlock (LayerNorms; qkv, proj, fc1, fc2
        # with biases), Qwen2VisionPatchMerger (ln_q a LayerNorm; mlp.0 and mlp.2 with biases)
        wide = d * tower.merge**2
        ts = [t("visual.patch_embed.proj", d, tower.channels * tower.temporal_patch * tower.patch * tower.patch)]
        for b in range(tower.depth):
            ts += block(f"visual.blocks.{b}", layernorm=True, bias=True, gated=False)
        return ts + [t("visual.merger.ln_q", 2 * d), t("visual.merger.mlp.0", wide // n, wide), t("visual.merger.mlp.0.bias", wide // n),
                     t("visual.merger.mlp.2", out, wide // n), t("visual.merger.mlp.2.bias", out)]  # fmt: skip
    if tower.kind == "glm4v":
        # glm4_1v.py, 0.33.0: Glm4vVisionPatchEmbed (Conv3d with bias), Glm4vVisionEmbeddings (a position table),
        # Glm4vVisionBlock (RMSNorms; qkv, proj and a gated MLP of out_hidden_size, no biases), post_conv_layernorm,
        # downsample (Conv2d, merge x merge, with bias), post_layernorm and Glm4vPatchMerger (no biases)
        p = "visual"
        ts = [t(f"{p}.patch_embed.proj", d, tower.channels * tower.temporal_patch * tower.patch * tower.patch), t(f"{p}.patch_embed.proj.bias", d),
              t(f"{p}.embeddings.position_embedding", tower.positions, d), t(f"{p}.post_conv_layernorm", d),
              t(f"{p}.downsample", out, d * tower.merge**2), t(f"{p}.downsample.bias", out), t(f"{p}.post_layernorm", d),
              t(f"{p}.merger.proj", out // n, out), t(f"{p}.merger.post_projection_norm", 2 * out),
              t(f"{p}.merger.gate_up_proj", 2 * i // n, out), t(f"{p}.merger.down_proj", out, i // n)]  # fmt: skip
        for b in range(tower.depth):
            q = f"{p}.blocks.{b}"
            ts += [t(f"{q}.norm1", d), t(f"{q}.norm2", d), t(f"{q}.attn.qkv", 3 * d // n, d), t(f"{q}.attn.proj", d, d // n),
                   t(f"{q}.mlp.gate_up_proj", 2 * out // n, d), t(f"{q}.mlp.down_proj", d, out // n)]  # fmt: skip
        return ts
    if tower.kind == "llama4-default":
        raise InputError(
            "vision_config: found nothing in a Llama 4 config; transformers' Llama4Config then builds its default tower (Llama4VisionConfig, "
            "transformers 5.5.3: 34 layers 768 wide), not the one a Llama 4 checkpoint holds, so no tower size follows: expected the "
            "checkpoint's vision_config, or --limit-mm-per-prompt '{\"image\": 0}', under which vLLM builds no tower, to size the language model alone"
        )
    if tower.kind == "gemma3n":
        raise InputError(
            "the Gemma 3n vision tower (timm's MobileNetV5, named by vision_config.architecture) and audio tower (a Conformer), built by "
            'transformers\' AutoModel in gemma3n_mm.py, are not modeled: give --limit-mm-per-prompt \'{"image": 0, "audio": 0}\' '
            "(vLLM 0.15.0 and later leave both unbuilt) to size the language model alone"
        )
    if tower.kind == "gemma4":
        limits = ", ".join(f'"{m}": 0' for m in tower.modalities)
        raise InputError(
            "the Gemma 4 vision tower and, where the config has one, audio tower, built by transformers' AutoModel in gemma4_mm.py "
            f"(0.19.0 to 0.33.0), are not modeled: give --limit-mm-per-prompt '{{{limits}}}' (vLLM leaves them unbuilt) to size the "
            "language model alone"
        )
    if tower.kind == "gemma4-unified":
        # gemma4_unified.py Gemma4UnifiedVisionEmbedder (patch_dense column-parallel, gather_output) and the
        # Gemma4MultimodalEmbedder projections (ReplicatedLinear, whole on every rank; their norms have no weight)
        patch = tower.patch * tower.patch * tower.channels
        ts = [t("vision_embedder.patch_ln1", 2 * patch), t("vision_embedder.patch_dense", cdiv(d, tp), patch),
              t("vision_embedder.patch_dense.bias", cdiv(d, tp)), t("vision_embedder.patch_ln2", 2 * d),
              t("vision_embedder.pos_embedding", tower.positions * 2, d), t("vision_embedder.pos_norm", 2 * d),
              t("embed_vision.embedding_projection", out, i)]  # fmt: skip
        return ts + ([t("embed_audio.embedding_projection", out, tower.audio_width)] if tower.audio_width else [])
    if tower.kind == "internvit":
        return _internvit(tower, tp)
    if tower.kind == "moonvit":
        # kimi_k25_vit.py, 0.33.0 (the same tensors from 0.15.0): MoonVision3dPatchEmbed (a Conv2d with bias, the
        # position table; the time table and the 2D rope's freqs_cis are buffers), MoonViTEncoderLayer (LayerNorms;
        # wqkv, wo, fc0 and fc1 with biases), final_layernorm; KimiK25MultiModalProjector (ReplicatedLinear)
        p, wide = "vision_tower", d * tower.merge**2
        ts = [t(f"{p}.patch_embed.proj", d, tower.channels * tower.patch * tower.patch), t(f"{p}.patch_embed.proj.bias", d),
              t(f"{p}.patch_embed.pos_emb", tower.positions, d), t(f"{p}.encoder.final_layernorm", 2 * d),
              t("mm_projector.pre_norm", 2 * d), t("mm_projector.linear_1", wide, wide), t("mm_projector.linear_1.bias", wide),
              t("mm_projector.linear_2", out, wide), t("mm_projector.linear_2.bias", out)]  # fmt: skip
        for b in range(tower.depth):
            q = f"{p}.encoder.blocks.{b}"
            ts += [t(f"{q}.norm0", 2 * d), t(f"{q}.norm1", 2 * d), t(f"{q}.wqkv", 3 * d // n, d), t(f"{q}.wqkv.bias", 3 * d // n),
                   t(f"{q}.wo", d, d // n), t(f"{q}.wo.bias", d), t(f"{q}.mlp.fc0", i // n, d), t(f"{q}.mlp.fc0.bias", i // n),
                   t(f"{q}.mlp.fc1", d, i // n), t(f"{q}.mlp.fc1.bias", d)]  # fmt: skip
        return ts
    if tower.kind == "clip":
        # clip.py CLIPVisionTransformer (0.33.0; the same tensors from 0.10.1.1): embeddings, pre_layrnorm and the
        # layers up to the feature layer, no post_layernorm under LLaVA; llava.py LlavaMultiModalProjector
        # (linear_1 column-, linear_2 row-parallel)
        p = "vision_tower.vision_model"
        ts = [t(f"{p}.embeddings.class_embedding", d), t(f"{p}.embeddings.patch_embedding", d, tower.channels * tower.patch * tower.patch),
              t(f"{p}.embeddings.position_embedding", tower.positions, d), t(f"{p}.pre_layrnorm", 2 * d), *linears(d)]  # fmt: skip
        for b in range(tower.depth):
            ts += block(f"{p}.encoder.layers.{b}", layernorm=True, bias=True, gated=False)
        return ts
    if tower.kind == "siglip":
        p = "vision_tower.vision_model"
        ts = [t(f"{p}.embeddings.patch_embedding", d, tower.channels * tower.patch * tower.patch), t(f"{p}.embeddings.patch_embedding.bias", d),
              t(f"{p}.embeddings.position_embedding", tower.positions, d), t(f"{p}.post_layernorm", 2 * d),
              t("multi_modal_projector.mm_input_projection_weight", d, out), t("multi_modal_projector.mm_soft_emb_norm", d)]  # fmt: skip
        for b in range(tower.depth):
            ts += block(f"{p}.encoder.layers.{b}", layernorm=True, bias=True, gated=False)
        return ts
    if tower.kind == "llama4":
        # mllama4.py, 0.33.0: Llama4UnfoldConvolution (a linear, no bias), class_embedding, positional_embedding_vlm,
        # layernorm_pre and layernorm_post, the encoder layers, vision_adapter.mlp (fc1, fc2: no bias unless
        # multi_modal_projector_bias) and multi_modal_projector.linear_1 (ColumnParallelLinear without disable_tp)
        p = "vision_model"
        pin, pout, vout = tower.adapter
        ts = [t(f"{p}.patch_embedding.linear", d // n, tower.channels * tower.patch * tower.patch), t(f"{p}.class_embedding", d),
              t(f"{p}.positional_embedding_vlm", tower.positions, d), t(f"{p}.layernorm_pre", 2 * d), t(f"{p}.layernorm_post", 2 * d),
              t(f"{p}.vision_adapter.mlp.fc1", pin // n, i), t(f"{p}.vision_adapter.mlp.fc2", pout, pin // n),
              t("multi_modal_projector.linear_1", out // tp, vout)]  # fmt: skip
        for b in range(tower.depth):
            ts += block(f"{p}.model.layers.{b}", layernorm=True, bias=True, gated=False)
        return ts
    # pixtral: no biases, RMSNorms, a gated MLP; the projector's two linears always divided (mistral3.py)
    ts = [t("vision_tower.patch_conv", d, tower.channels * tower.patch * tower.patch), t("vision_tower.ln_pre", d),
          t("multi_modal_projector.norm", d), t("multi_modal_projector.patch_merger.merging_layer", d, d * tower.merge**2), *linears(d)]  # fmt: skip
    for b in range(tower.depth):
        ts += block(f"vision_tower.transformer.layers.{b}", layernorm=False, bias=False, gated=True)
    return ts


def _internvit(tower: Tower, tp: int) -> list[Tensor]:
    """InternViT and mlp1 on one rank (intern_vit.py and internvl.py, 0.10.1.1 to 0.33.0). The MLP
    (InternMLP: fc1 column-, fc2 row-parallel) is divided over the ranks unless --mm-encoder-tp-mode
    data; the attention only where its heads divide over them: otherwise vLLM builds it whole on each
    rank (0.33.0 InternParallelAttention with disable_tp; 0.10.1.1 to 0.13.0 InternSdpaAttention, two
    nn.Linear), so InternViT-6B's 25 heads run whole at TP 2, 4 and 8 while its MLP is split. q_norm
    and k_norm (RMSNorm over all heads) are whole on every rank; so are the embeddings and mlp1
    (nn.LayerNorm and two nn.Linear)."""
    d, i, out = tower.hidden, tower.intermediate, tower.out_hidden
    m = 1 if tower.data_parallel else tp
    a = 1 if tower.data_parallel or tower.heads % tp else tp
    norm = 1 if tower.rms_norm else 2
    wide = d * tower.merge**2

    def t(path: str, rows: int, cols: int = 1) -> Tensor:
        return Tensor(path, rows, cols, tower=True)

    p = "vision_model"
    ts = [t(f"{p}.embeddings.class_embedding", d), t(f"{p}.embeddings.patch_embedding", d, tower.channels * tower.patch * tower.patch),
          t(f"{p}.embeddings.patch_embedding.bias", d), t(f"{p}.embeddings.position_embedding", tower.positions, d),
          t("mlp1.0", 2 * wide), t("mlp1.1", out, wide), t("mlp1.1.bias", out), t("mlp1.3", out, out), t("mlp1.3.bias", out)]  # fmt: skip
    for b in range(tower.depth):
        q = f"{p}.encoder.layers.{b}"
        ts += [t(f"{q}.norm1", norm * d), t(f"{q}.norm2", norm * d), t(f"{q}.ls1", d), t(f"{q}.ls2", d),
               t(f"{q}.attn.qkv", 3 * d // a, d), t(f"{q}.attn.proj", d, d // a), t(f"{q}.attn.proj.bias", d),
               t(f"{q}.mlp.fc1", i // m, d), t(f"{q}.mlp.fc1.bias", i // m), t(f"{q}.mlp.fc2", d, i // m), t(f"{q}.mlp.fc2.bias", d)]  # fmt: skip
        if tower.qkv_bias:
            ts.append(t(f"{q}.attn.qkv.bias", 3 * d // a))
        if tower.qk_norm:
            ts += [t(f"{q}.attn.q_norm", d), t(f"{q}.attn.k_norm", d)]
    return ts


def _norm(shape: Shape, path: str) -> list[Tensor]:
    """A norm of the model's width: its weight, and a bias where the model's norms are LayerNorms with one."""
    return [Tensor(path, shape.hidden)] + ([Tensor(f"{path}.bias", shape.hidden)] if shape.norm_bias else [])


def _layer(shape: Shape, prefix: str, kind: str, mlp: Mlp, tp: int) -> list[Tensor]:
    if shape.dsv4:
        return _dsv4_layer(shape, prefix, mlp, tp)
    h = shape.hidden
    # DeciLM builds no norm for a no-op attention; EXAONE 4.0 norms only after attention and the MLP
    out = [] if kind == NO_ATTENTION or shape.no_input_norm else _norm(shape, f"{prefix}.input_layernorm")
    kv_heads, d = shape.kv_dims(kind)  # Gemma 4's full layers: their own KV heads and head_dim
    if kind in (FULL, SLIDING, CHUNKED, PARALLEL):
        out += _attention(shape if shape.full_kv is None else replace(shape, kv_heads=kv_heads, head_dim=d), prefix + ".self_attn", tp)
    elif kind in (SHARED_FULL, SHARED_SLIDING):
        # gemma3n.py Gemma3nAttention and gemma4.py Gemma4Attention, 0.30.0 to 0.33.0: a KV-shared layer builds q_proj
        # alone (and o_proj, q_norm); before (Gemma 3n from 0.10.1.1, Gemma 4 from 0.19.0) they build and load qkv_proj
        # whole on every layer, k_proj and v_proj and k_norm too (not modeled)
        heads_rank = shape.heads // tp
        out += [Tensor(f"{prefix}.self_attn.q_proj", heads_rank * d, h, linear=True), Tensor(f"{prefix}.self_attn.o_proj", h, heads_rank * d, linear=True),
                Tensor(f"{prefix}.self_attn.q_norm", d)]  # fmt: skip
    if shape.per_layer and shape.per_layer.altup is not None:
        out += _gemma3n_layer(shape, prefix, tp)
    elif shape.per_layer:  # gemma4.py Gemma4DecoderLayer: the per-layer input gate and projection, ReplicatedLinear
        hpl = shape.per_layer.hidden
        out += [Tensor(f"{prefix}.per_layer_input_gate", hpl, h, linear=True), Tensor(f"{prefix}.per_layer_projection", h, hpl, linear=True)]
    elif kind == MLA:
        out += _mla(shape, prefix + ".self_attn", tp)
    elif kind == MAMBA:
        out += _mamba(shape, prefix + ".mixer", tp)
    elif kind == PARALLEL:  # Falcon-H1: the Mamba-2 mixer beside the attention, and its muP vector (a buffer)
        out += _mamba(shape, prefix + ".mamba", tp)
        out.append(Tensor(f"{prefix}.mamba.mup_vector", _mamba_in_rows(shape, tp), buffer=True))
    elif kind == MAMBA1:
        out += _mamba1(shape, prefix + ".mamba", tp)
    elif kind == SHORT_CONV:
        out += _short_conv(shape, prefix + ".conv", tp)
    elif kind == LINEAR:
        out += _gated_delta(shape, prefix + ".linear_attn", tp)
    elif kind == LIGHTNING:
        out += _lightning(shape, prefix + ".self_attn", tp)
    if kind in (MLP_ONLY, MOE_ONLY):  # a Nemotron-H layer of one mixer has one norm, the input's
        out += _mlp(shape, prefix + ".mixer", mlp, tp)
    elif mlp.intermediate or mlp.experts:
        if not shape.parallel_block:  # Cohere's attention and MLP share the input norm
            out += _norm(shape, f"{prefix}.post_attention_layernorm")
        out += [t for name in shape.extra_norms for t in _norm(shape, f"{prefix}.{name}")]
        out += _mlp(shape, prefix + ".mlp", mlp, tp)
    return out


def _dsv4_layer(shape: Shape, p: str, mlp: Mlp, tp: int) -> list[Tensor]:
    """A DeepSeek V4 decoder layer on one rank (vllm/models/deepseek_v4/nvidia/model.py DeepseekV4DecoderLayer and
    DeepseekV4MoE, attention.py DeepseekV4Attention and DeepseekV4Indexer, compressor.py DeepseekCompressor; 0.33.0).

    - attn_norm and ffn_norm; the hyper-connections' hc_attn_* and hc_ffn_* (fn: (2 + hc_mult) x hc_mult rows of
      hc_mult x hidden_size, base: as many, scale: 3), float32, whole on every rank;
    - attention: attn_sink (float32, a head a rank; the backend pads it to the kernel's head count, at most 128
      values), fused_wqa_wkv (hidden to q_lora_rank + head_dim, replicated), q_norm and kv_norm, wq_b (column-parallel
      to heads x head_dim), wo_a (column-parallel, o_groups x o_lora_rank from heads x head_dim / o_groups) and
      wo_b (row-parallel to hidden), all quantized as the checkpoint is;
    - a layer of ratio 4 or 128: its compressor, ape (ratio x coff x head_dim, float32; coff 2 at ratio 4, else 1),
      fused_wkv_wgate (hidden to 2 x coff x head_dim, replicated, quant_config=None) and norm (head_dim);
    - a layer of ratio 4: its indexer, wq_b (q_lora_rank to index_n_heads x index_head_dim, replicated, quantized),
      weights_proj (hidden to index_n_heads, replicated, quant_config=None) and a compressor of index_head_dim;
    - the MoE: gate (GateLinear, the model's dtype), then for the first num_hash_layers layers tid2eid
      (vocab_size x num_experts_per_tok int32; int64 under a MegaMoE backend, not modeled) and for the others
      e_score_correction_bias (float32) where topk_method is noaux_tc; the experts (MXFP4 where expert_dtype is fp4,
      Mxfp4MoEMethod; else as the checkpoint); the shared experts (DeepseekV4MLP of moe_intermediate_size x
      n_shared_experts, its width rounded up so each rank holds whole 128-blocks under block fp8: cdiv(blocks, TP)).
    The sequence-parallel build under expert parallel (shared experts and wo_b whole on each rank) is not modeled.
    0.20.0 (vllm/model_executor/models/deepseek_v4.py) builds the same tensors but for the shared expert's rounding
    to whole blocks (none: the same wherever its blocks divide over the ranks, as DeepSeek-V4-Flash's 16 do) and
    e8m0 scales whatever expert_dtype."""
    h, d, q, x = shape.hidden, shape.head_dim, shape.q_lora_rank or 0, shape.part(DeepseekV4Dims)
    i = int(p.rsplit(".", 1)[1])
    ratio = shape.compress_ratios[i]
    heads_rank, hc = shape.heads // tp, x.hc_mult
    mix = (2 + hc) * hc
    a, f = f"{p}.attn", f"{p}.ffn"
    out = [Tensor(f"{p}.attn_norm", h), Tensor(f"{p}.ffn_norm", h)]
    for part in ("attn", "ffn"):
        out += [Tensor(f"{p}.hc_{part}_fn", mix, hc * h, dtype_bytes=4), Tensor(f"{p}.hc_{part}_base", mix, dtype_bytes=4),
                Tensor(f"{p}.hc_{part}_scale", 3, dtype_bytes=4)]  # fmt: skip
    groups, o_rank = x.o_groups, x.o_lora_rank
    out += [Tensor(f"{a}.attn_sink", heads_rank, dtype_bytes=4), Tensor(f"{a}.fused_wqa_wkv", q + d, h, linear=True),
            Tensor(f"{a}.q_norm", q), Tensor(f"{a}.kv_norm", d), Tensor(f"{a}.wq_b", heads_rank * d, q, linear=True),
            Tensor(f"{a}.wo_a", groups * o_rank // tp, shape.heads * d // groups, linear=True),
            Tensor(f"{a}.wo_b", h, groups * o_rank // tp, linear=True)]  # fmt: skip

    def compressor(c: str, r: int, dim: int) -> list[Tensor]:
        coff = 2 if r == 4 else 1
        return [Tensor(f"{c}.ape", r, coff * dim, dtype_bytes=4), Tensor(f"{c}.fused_wkv_wgate", 2 * coff * dim, h), Tensor(f"{c}.norm", dim)]

    if ratio > 1:
        out += compressor(f"{a}.compressor", ratio, d)
    if ratio == 4:
        ih, idim = x.index_heads, x.index_head_dim
        out += [Tensor(f"{a}.indexer.wq_b", ih * idim, q, linear=True), Tensor(f"{a}.indexer.weights_proj", ih, h)]
        out += compressor(f"{a}.indexer.compressor", 4, idim)
    e, fp4 = mlp.experts, x.expert_fp4
    # deepseek_v4/quant_config.py DeepseekV4FP8Config (0.33.0): fp4 experts are NVFP4 (ModelOptNvFp4FusedMoE, groups of 16)
    # where quantization_config.moe_quant_algo says NVFP4 (NVIDIA's DeepSeek-V4-*-NVFP4), else MXFP4
    nv = fp4 and str((shape.quantization or {}).get("moe_quant_algo") or "").upper() == "NVFP4"
    width = mlp.expert_intermediate // tp
    out += [Tensor(f"{f}.gate", e, h), Tensor(f"{f}.experts.gate_up_proj", 2 * width, h, count=e, linear=True, fp4=fp4 and not nv, nvfp4=nv),
            Tensor(f"{f}.experts.down_proj", h, width, count=e, linear=True, fp4=fp4 and not nv, nvfp4=nv)]  # fmt: skip
    if i < x.hash_layers:
        out.append(Tensor(f"{f}.gate.tid2eid", shape.vocab, x.top_k, dtype_bytes=4))
    elif shape.routing_bias:
        out.append(Tensor(f"{f}.gate.e_score_correction_bias", e, dtype_bytes=4))
    if mlp.shared_intermediate:
        block = quant_of(shape).block[0] if quant_of(shape).method == "fp8-block" else 0
        s = cdiv(mlp.shared_intermediate // block, tp) * block if block else mlp.shared_intermediate // tp
        out += [Tensor(f"{f}.shared_experts.gate_up_proj", 2 * s, h, linear=True), Tensor(f"{f}.shared_experts.down_proj", h, s, linear=True)]
    return out


def _attention(shape: Shape, p: str, tp: int) -> list[Tensor]:
    h, d = shape.hidden, shape.head_dim
    heads_rank = shape.heads // tp
    kv_rank = max(1, shape.kv_heads // tp)
    gate = 2 if shape.output_gate else 1
    out = [
        Tensor(f"{p}.q_proj", heads_rank * d * gate, h, linear=True),
        Tensor(f"{p}.k_proj", kv_rank * d, h, linear=True),
        Tensor(f"{p}.v_proj", kv_rank * (shape.head_dim_v or d), h, linear=True),
        Tensor(f"{p}.o_proj", h, heads_rank * d, linear=True),
    ]
    if shape.attention_bias:
        out += [Tensor(f"{p}.q_proj.bias", heads_rank * d), Tensor(f"{p}.k_proj.bias", kv_rank * d), Tensor(f"{p}.v_proj.bias", kv_rank * d)]
    if shape.output_bias:
        out.append(Tensor(f"{p}.o_proj.bias", h))
    if shape.sinks:
        out.append(Tensor(f"{p}.sinks", heads_rank))
    return out + _qk_norms(shape, p, tp)


def _qk_norms(shape: Shape, p: str, tp: int) -> list[Tensor]:
    """q and k normed a head (one head_dim weight each; "head layernorm": nn.LayerNorms, a weight and a
    bias each, Ling's without use_rmsnorm), over all heads on every rank (OLMo 2 gathers q and k first),
    or over all heads divided like the heads (MiniMax-M2)."""
    if not shape.qk_norm:
        return []
    d = shape.head_dim
    if shape.qk_norm == "head layernorm":
        return [Tensor(f"{p}.{name}{part}", d) for name in ("q_norm", "k_norm") for part in ("", ".bias")]
    widths = {
        "head": (d, d),
        "full": (shape.heads * d, shape.kv_heads * d),
        "split": (shape.heads * d // tp, shape.kv_heads * d // min(tp, shape.kv_heads)),
    }[shape.qk_norm]
    return [Tensor(f"{p}.{name}", width) for name, width in zip(("q_norm", "k_norm"), widths, strict=True)]


def _mla(shape: Shape, p: str, tp: int) -> list[Tensor]:
    h = shape.hidden
    heads_rank = shape.heads // tp
    rope, nope, v, kv_lora = shape.qk_rope_head_dim, shape.qk_nope_head_dim, shape.v_head_dim, shape.kv_lora_rank
    assert rope and nope and v and kv_lora
    out = []
    if shape.q_lora_rank:
        out += [
            Tensor(f"{p}.q_a_proj", shape.q_lora_rank, h, linear=True),
            Tensor(f"{p}.q_a_layernorm", shape.q_lora_rank),
            Tensor(f"{p}.q_b_proj", heads_rank * (nope + rope), shape.q_lora_rank, linear=True),
        ]
    else:
        out.append(Tensor(f"{p}.q_proj", heads_rank * (nope + rope), h, linear=True))
    out += [
        Tensor(f"{p}.kv_a_proj_with_mqa", kv_lora + rope, h, linear=True),
        Tensor(f"{p}.kv_a_layernorm", kv_lora),
        Tensor(f"{p}.kv_b_proj", heads_rank * (nope + v), kv_lora, linear=True),
        Tensor(f"{p}.o_proj", h, heads_rank * v, linear=True),
    ]
    if shape.indexer:  # DeepSeek V3.2's lightning indexer, whole on every rank (deepseek_v2.py Indexer, 0.33.0)
        x = shape.indexer
        out += [
            Tensor(f"{p}.indexer.wq_b", x.heads * x.head_dim, x.q_lora_rank, linear=True),
            Tensor(f"{p}.indexer.wk_weights_proj", x.head_dim + x.heads, h),  # quant_config=None: the model's dtype
            Tensor(f"{p}.indexer.k_norm", 2 * x.head_dim, dtype_bytes=4),  # a LayerNorm's weight and bias, float32
        ]
    return out


def _mamba_in_rows(shape: Shape, tp: int) -> int:
    """A Mamba-2 mixer's in_proj rows on one rank: z, x, B and C of the groups (extended to a multiple
    of the ranks where they do not divide, mamba_mixer2.py) and dt."""
    m = shape.part(Mamba2Mixer)
    groups = m.groups + (0 if m.groups % tp == 0 else tp - m.groups)
    rows: int = (2 * m.heads * m.head_dim + 2 * groups * m.state + m.heads) // tp
    return rows


def _mamba(shape: Shape, p: str, tp: int) -> list[Tensor]:
    """A Mamba-2 mixer (vllm/model_executor/layers/mamba/mamba_mixer2.py, MambaMixer2, 0.33.0): the conv
    bias, projection biases and gated norm as the config asks (Granite 4.0-H and Nemotron-H: a conv
    bias and the norm, no projection bias)."""
    m, h = shape.part(Mamba2Mixer), shape.hidden
    inner = m.heads * m.head_dim
    groups = m.groups + (0 if m.groups % tp == 0 else tp - m.groups)
    conv = (inner + 2 * groups * m.state) // tp
    heads_rank = m.heads // tp
    rows = _mamba_in_rows(shape, tp)
    out = [
        Tensor(f"{p}.in_proj", rows, h, linear=True),
        Tensor(f"{p}.conv1d", conv, m.conv_kernel),
        Tensor(f"{p}.dt_bias", heads_rank),
        Tensor(f"{p}.A_log", heads_rank),
        Tensor(f"{p}.D", heads_rank),
        Tensor(f"{p}.out_proj", h, inner // tp, linear=True),
    ]
    if m.conv_bias:
        out.append(Tensor(f"{p}.conv1d.bias", conv))
    if m.norm:
        out.append(Tensor(f"{p}.norm", inner // tp))
    if m.bias:
        out += [Tensor(f"{p}.in_proj.bias", rows), Tensor(f"{p}.out_proj.bias", h)]
    return out


def _mamba1(shape: Shape, p: str, tp: int) -> list[Tensor]:
    """A Mamba-1 mixer (vllm/model_executor/layers/mamba/mamba_mixer.py, MambaMixer, 0.33.0): in_proj of x
    and z and the depthwise conv column-parallel, x_proj (dt, B and C) row-parallel, dt_proj with its
    bias, A (float32) and D divided like the channels, out_proj; with use_rms_norm (Jamba) the dt, B
    and C RMSNorms, whole on every rank. None of them takes the quantization config."""
    m, h = shape.part(Mamba1Mixer), shape.hidden
    inner = m.inner // tp
    out = [  # built without the quantization config: in the model's dtype whatever the checkpoint's method
        Tensor(f"{p}.in_proj", 2 * inner, h),
        Tensor(f"{p}.conv1d", inner, m.conv_kernel),
        Tensor(f"{p}.x_proj", m.dt_rank + 2 * m.state, inner),
        Tensor(f"{p}.dt_proj", inner, m.dt_rank),
        Tensor(f"{p}.dt_proj.bias", inner),
        Tensor(f"{p}.A", inner, m.state, dtype_bytes=4),
        Tensor(f"{p}.D", inner),
        Tensor(f"{p}.out_proj", h, inner),
    ]
    if m.norms:  # Jamba's weighted dt, B and C norms; FalconMamba's have no weight, plain Mamba has none
        out += [Tensor(f"{p}.dt_layernorm", m.dt_rank), Tensor(f"{p}.b_layernorm", m.state), Tensor(f"{p}.c_layernorm", m.state)]
    if m.conv_bias:
        out.append(Tensor(f"{p}.conv1d.bias", inner))
    if m.bias:
        out += [Tensor(f"{p}.in_proj.bias", 2 * inner), Tensor(f"{p}.out_proj.bias", h)]
    return out


def _short_conv(shape: Shape, p: str, tp: int) -> list[Tensor]:
    """LFM2's short convolution (vllm/model_executor/layers/mamba/short_conv.py, ShortConv, 0.33.0):
    in_proj of B, C and x column-parallel, a depthwise conv of conv_L_cache taps, out_proj
    row-parallel, each with a bias where conv_bias. The projections take the checkpoint's quantization
    from 0.27.1; 0.10.2 to 0.26.0 build them without it (short_conv.py passes no quant_config), so a
    quantized LFM2 keeps them in the model's dtype there, which is not modeled."""
    m, h = shape.part(ShortConvMixer), shape.hidden
    d = m.inner // tp
    out = [Tensor(f"{p}.in_proj", 3 * d, h, linear=True), Tensor(f"{p}.conv1d", d, m.conv_kernel), Tensor(f"{p}.out_proj", h, d, linear=True)]
    if m.conv_bias:
        out += [Tensor(f"{p}.in_proj.bias", 3 * d), Tensor(f"{p}.conv1d.bias", d), Tensor(f"{p}.out_proj.bias", h)]
    return out


def _gated_delta(shape: Shape, p: str, tp: int) -> list[Tensor]:
    g, h = shape.part(GatedDeltaNet), shape.hidden
    key, value = g.k_heads * g.k_dim, g.v_heads * g.v_dim
    return [
        Tensor(f"{p}.in_proj_qkvz", (2 * key + 2 * value) // tp, h, linear=True),
        Tensor(f"{p}.in_proj_ba", 2 * g.v_heads // tp, h, linear=True),
        Tensor(f"{p}.conv1d", (2 * key + value) // tp, g.conv_kernel),
        Tensor(f"{p}.dt_bias", g.v_heads // tp),
        Tensor(f"{p}.A_log", g.v_heads // tp),
        Tensor(f"{p}.norm", g.v_dim),
        Tensor(f"{p}.out_proj", h, value // tp, linear=True),
    ]


def _lightning(shape: Shape, p: str, tp: int) -> list[Tensor]:
    """MiniMax-Text-01's lightning attention (layers/mamba/linear/minimax_linear_attn.py, 0.23.0; in
    minimax_text_01.py from 0.10.1.1): qkv_proj, output_gate and the norm divided over the ranks by heads,
    out_proj by its input; no bias."""
    h, inner = shape.hidden, shape.heads * shape.head_dim // tp
    return [
        Tensor(f"{p}.qkv_proj", 3 * inner, h, linear=True),
        Tensor(f"{p}.output_gate", inner, h, linear=True),
        Tensor(f"{p}.out_proj", h, inner, linear=True),
        Tensor(f"{p}.norm", inner),
    ]


def _mlp(shape: Shape, p: str, mlp: Mlp, tp: int) -> list[Tensor]:
    h = shape.hidden
    if not mlp.experts:
        i = mlp.intermediate // tp
        if not mlp.gated:
            out = [Tensor(f"{p}.up_proj", i, h, linear=True), Tensor(f"{p}.down_proj", h, i, linear=True)]
            return out + ([Tensor(f"{p}.up_proj.bias", i), Tensor(f"{p}.down_proj.bias", h)] if mlp.bias else [])
        out = [Tensor(f"{p}.gate_proj", i, h, linear=True), Tensor(f"{p}.up_proj", i, h, linear=True), Tensor(f"{p}.down_proj", h, i, linear=True)]
        return out + ([Tensor(f"{p}.gate_proj.bias", i), Tensor(f"{p}.up_proj.bias", i), Tensor(f"{p}.down_proj.bias", h)] if mlp.bias else [])
    e, i = mlp.experts, mlp.expert_intermediate // tp
    router = "router" if shape.sinks else "gate"
    width = 4 if shape.router_fp32 else None
    if shape.architecture.startswith("Gemma4"):
        return _gemma4_moe(shape, p, mlp, tp)
    x = mlp.latent or h  # the experts' own width: a latent MoE's, else the model's
    out = [
        Tensor(f"{p}.{router}", e, h, dtype_bytes=width),
        Tensor(f"{p}.experts.gate_up_proj", (2 if mlp.gated else 1) * i, x, count=e, linear=True),
        Tensor(f"{p}.experts.down_proj", x, i, count=e, linear=True),
    ]
    if mlp.latent:
        # fc1_latent_proj and fc2_latent_proj: ReplicatedLinear, whole on every rank, in the model's dtype (ModelOpt's
        # checkpoints leave them out of quantization, as nemotron_h.py NemotronHMoE says, 0.33.0)
        out += [Tensor(f"{p}.fc1_latent_proj", x, h), Tensor(f"{p}.fc2_latent_proj", h, x)]
        if mlp.bias:
            out += [Tensor(f"{p}.fc1_latent_proj.bias", x), Tensor(f"{p}.fc2_latent_proj.bias", h)]
    if shape.routing_bias:
        out.append(Tensor(f"{p}.{router}.e_score_correction_bias", e, dtype_bytes=4))
    if mlp.bias:
        out += [Tensor(f"{p}.{router}.bias", e), Tensor(f"{p}.experts.gate_up_proj_bias", 2 * i, count=e), Tensor(f"{p}.experts.down_proj_bias", x, count=e)]
    if mlp.shared_intermediate:
        s = mlp.shared_intermediate // tp
        out += [
            Tensor(f"{p}.shared_expert.gate_up_proj", (2 if mlp.gated else 1) * s, h, linear=True),
            Tensor(f"{p}.shared_expert.down_proj", h, s, linear=True),
        ]
        if mlp.gated_shared:
            out.append(Tensor(f"{p}.shared_expert_gate", 1, h))
    return out


def _gemma4_moe(shape: Shape, p: str, mlp: Mlp, tp: int) -> list[Tensor]:
    """A Gemma 4 layer's MLP and MoE block side by side (gemma4.py Gemma4DecoderLayer, 0.19.0 to 0.33.0): the
    dense MLP (mlp.gate_up_proj, mlp.down_proj, divided like any), the router (router.proj, GateLinear in the
    model's dtype, whole on every rank; router.scale of hidden_size; router.per_expert_scale) and the experts,
    each of expert_intermediate, divided like a dense MLP."""
    h, e, i, dense = shape.hidden, mlp.experts, mlp.expert_intermediate // tp, mlp.shared_intermediate // tp
    layer = p.removesuffix(".mlp")
    return [Tensor(f"{p}.gate_proj", dense, h, linear=True), Tensor(f"{p}.up_proj", dense, h, linear=True), Tensor(f"{p}.down_proj", h, dense, linear=True),
            Tensor(f"{layer}.router.proj", e, h), Tensor(f"{layer}.router.scale", h), Tensor(f"{layer}.router.per_expert_scale", e),
            Tensor(f"{layer}.experts.gate_up_proj", 2 * i, h, count=e, linear=True), Tensor(f"{layer}.experts.down_proj", h, i, count=e, linear=True)]  # fmt: skip


@dataclass(frozen=True)
class Weights:
    """Bytes on one rank: the model's, and apart from them the drafter layers'."""

    model: int
    drafter: int
    source: str  # "config" (parameter count) or "index total_size"
    checkpoint_total: int  # the whole checkpoint, all ranks together (counted, or the index's)


PLAUSIBLE = 8  # a checkpoint's own size against the config's count: quantized, float32 or with extras, within this factor


def per_rank(shape: Shape, tp: int = 1, total_size: int | None = None, source: str = "index total_size") -> Weights:
    """Weights on one rank. With the index's total_size the checkpoint's own bytes are split
    by the modeled layout (that figure beats the count); without it the count stands."""
    if tp < 1 or shape.heads % tp:
        raise ConfigError(shape.file, "num_attention_heads", shape.heads, f"a multiple of the tensor parallel size {tp}")
    model, drafter, buffers = _sum(shape, tp, quant_of(shape))
    scale, source, whole = checkpoint_scale(shape, total_size, source)
    return Weights(round(model * scale) + buffers, round(drafter * scale), source, whole)


ALLOCATOR_SPLIT_FROM = (0, 21)  # vllm/v1/worker/gpu_worker.py load_model: _scoped_allocator_max_split(max_split_size_mb=20), CUDA, v0.21.0
ALLOCATOR_SPLIT_LIMIT = 20 << 20  # that max_split_size_mb, 20 MiB: PyTorch's least
ALLOCATOR_LARGE_ROUND = 2 << 20  # c10/cuda/CUDACachingAllocator.cpp: a request of 10 MiB or more gets a segment of a multiple of 2 MiB
FUSED_PARAMETERS = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj", "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj"}


def _data_bytes(t: Tensor, quant: Quant, dtype_bytes: int) -> int:
    """The bytes of a tensor's own data, without the scales and zeros its packing keeps beside it."""
    n = t.rows * t.cols * t.count
    if t.fp4 or t.nvfp4:
        return n // 2
    if quant.method == "mixed":
        quant = _quant_for(t, quant)
        t = replace(t, linear=True) if quant.method != "none" else t
    if not t.linear or quant.method == "none" or _ignored(t.path, quant.ignore) or _fbgemm_expert(t, quant):
        return n * (t.dtype_bytes or dtype_bytes)
    if quant.method in ("fp8", "fp8-block", "fp8-channel", "mxfp8"):
        return n
    if quant.method in ("nvfp4", "mxfp4"):
        return n // 2
    return cdiv(n * quant.bits, 8)


def allocator_rounding(shape: Shape, tp: int = 1, drafter: bool = False) -> int:
    """What the load's allocator adds to 'Model loading took' beyond the weights' bytes on a CUDA
    card from v0.21.0: vLLM loads the model with max_split_size_mb at 20 MiB (gpu_worker.py
    _scoped_allocator_max_split), under which PyTorch's caching allocator neither splits a block for
    a request of 20 MiB or more nor hands it a cached block much larger, so each such parameter holds
    its own segment, a multiple of 2 MiB, and 'Model loading took' (torch's allocated bytes) counts
    the segment. The parameters are vLLM's, fused where vLLM fuses them (QKVParallelLinear's
    qkv_proj, MergedColumnParallelLinear's gate_up_proj; FusedMoE's experts are one tensor each),
    their data alone (the scales are small tensors of their own); the drafter's layers where they load."""
    quant = quant_of(shape)
    fused: dict[str, int] = {}
    for t in (t for t in tensors(shape, tp) if drafter or not t.drafter):
        head, _, leaf = t.path.rpartition(".")
        key = f"{head}.{FUSED_PARAMETERS.get(leaf, leaf)}"
        fused[key] = fused.get(key, 0) + _data_bytes(t, quant, shape.dtype_bytes)
    return sum(-b % ALLOCATOR_LARGE_ROUND for b in fused.values() if b >= ALLOCATOR_SPLIT_LIMIT)


MTP_ENDS = ("embed_tokens", "shared_head.head")  # deepseek_mtp.py and glm4_moe_mtp.py: each MTP layer's own embedding and head


def mtp_with_ends(shape: Shape) -> bool:
    """DeepSeek's and GLM's MTP layers (deepseek_mtp.py, glm4_moe_mtp.py) build an embedding and a head of their own."""
    return shape.architecture.startswith(("Deepseek", "Glm"))


SHARED_HEAD_FROM = (0, 16)  # v1/spec_decode/eagle.py load_model: 'sh.head = target_language_model.lm_head', first in v0.16.0


def bnb_saved(shape: Shape) -> bool:
    """A checkpoint saved with bitsandbytes (not one quantized as it loads): vLLM refuses it tensor
    parallel ('Prequant BitsAndBytes models with tensor parallelism is not supported. Please try with
    pipeline parallelism.', model_loader/bitsandbytes_loader.py, read in 0.13.0 and 0.23.0)."""
    q = shape.quantization or {}
    return str(q.get("quant_method", "")).lower() == "bitsandbytes" and q.get("pre_quant") is not False


BNB_MOE_FROM = (0, 10, 0)  # quantization/bitsandbytes.py BitsAndBytesMoEMethod: none in 0.9.2, from 0.10.0
BNB_MOE_SAVED_FROM = (0, 10, 1)  # a saved 4-bit checkpoint with fused experts: refused in 0.10.0, loaded in 0.10.1.1
# The bitsandbytes loader maps a checkpoint's expert weights by the model's get_expert_mapping, on the class or a
# direct child such as its language model (model_loader/bitsandbytes_loader.py _initialize_loader_state, "MoE Model
# ... does not support BitsAndBytes quantization yet. Ensure this model has 'get_expert_mapping' method."; utils.py
# get_moe_expert_mapping). The first release whose model code has one, by class (read in the 0.10.0, 0.10.1.1, 0.10.2, 0.11.0,
# 0.12.0, 0.13.0, 0.14.0, 0.15.0, 0.16.0, 0.19.0, 0.20.0, 0.23.0 and 0.24.0 wheels; a class whose first release has it is
# listed from 0.10.0); a class with fused experts not listed has none before 0.25.0, where every fused-experts
# layer gives one (fused_moe/routed_experts.py; get_moe_expert_mapping walks named_modules).
BNB_EXPERTS_MAPPED_FROM = (0, 25, 0)
BNB_EXPERT_MAPPING_FROM: dict[str, tuple[int, int, int]] = {
    **dict.fromkeys(("MixtralForCausalLM", "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "OlmoeForCausalLM", "PhiMoEForCausalLM",
                     "Ernie4_5_MoeForCausalLM", "HunYuanMoEV1ForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM",
                     "Qwen3VLMoeForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "DeepseekV4ForCausalLM",
                     "Qwen3NextForCausalLM"), (0, 10, 0)),
    # InternVL's language model (Qwen3-MoE, the one MoE it reads) is a direct child: found from 0.10.1, where
    # get_moe_expert_mapping looks at children; 0.10.0 asks the top model alone
    **dict.fromkeys(("Glm4MoeForCausalLM", "Glm4vMoeForConditionalGeneration", "JambaForCausalLM", "InternVLChatModel"), (0, 10, 1)),
    **dict.fromkeys(("DeepseekForCausalLM", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM",
                     "GptOssForCausalLM", "GraniteMoeHybridForCausalLM", "Llama4ForConditionalGeneration", "Lfm2MoeForCausalLM",
                     "MiniMaxM2ForCausalLM", "KimiK25ForConditionalGeneration"), (0, 12, 0)),
    "NemotronHForCausalLM": (0, 14, 0),
}  # fmt: skip


def bnb_moe_refused(shape: Shape, version: tuple[int, int, int]) -> str | None:
    """Why vLLM refuses bitsandbytes on a model with fused experts, None where it loads it: up to
    v0.9.x the config gives the experts no method (get_quant_method covers linear layers alone, and
    fused_moe/layer.py asserts one); v0.10.0 refuses a saved checkpoint, and from v0.10.1 a saved
    8-bit one (model_loader/bitsandbytes_loader.py, read in 0.10.0, 0.10.1.1 and 0.23.0)."""
    if not any(m.experts for m in shape.mlps):
        return None
    q = shape.quantization or {}
    saved, eight = q.get("pre_quant") is not False, q.get("load_in_8bit") is True
    if saved and eight:
        return (f"{shape.file}: quantization_config.load_in_8bit: found true, a saved 8-bit bitsandbytes checkpoint of a model with fused "
                "experts, which no release loads ('Prequant BitsAndBytes 8bit models with FusedMoE is not supported yet.', bitsandbytes_loader.py, "
                "0.10.1.1 to 0.27.x; every saved one in 0.10.0): expected a 4-bit checkpoint, or the unquantized one under --quantization bitsandbytes")  # fmt: skip
    if saved and version < BNB_MOE_SAVED_FROM:
        return ("a saved bitsandbytes checkpoint of a model with fused experts, which vLLM loads from 0.10.1 ('Prequant BitsAndBytes models with "
                "FusedMoE is not supported yet.' in 0.10.0; no method for the experts before): expected --engine-version 0.10.1 or later")  # fmt: skip
    if version < BNB_MOE_FROM:
        return (f"vLLM {version[0]}.{version[1]} quantizes no fused experts with bitsandbytes (quantization/bitsandbytes.py get_quant_method "
                "covers linear layers only up to 0.9.x): expected --engine-version 0.10.0 or later")  # fmt: skip
    mapped = BNB_EXPERT_MAPPING_FROM.get(shape.architecture, BNB_EXPERTS_MAPPED_FROM)
    if version < mapped:
        why = (f"vLLM {'.'.join(map(str, version))}'s {shape.architecture} maps no expert weights for bitsandbytes (\"MoE Model ... does not "
               "support BitsAndBytes quantization yet. Ensure this model has 'get_expert_mapping' method.\", model_loader/bitsandbytes_loader.py)")  # fmt: skip
        window = OWN_CODE_RELEASES.get(shape.architecture)
        last = window[1] if window else None
        if last is not None and last < mapped[:2]:  # the class leaves vLLM's own code before a release maps its experts
            asked = f"{shape.file}: quantization_config.quant_method: found 'bitsandbytes'" if saved else "--quantization: found 'bitsandbytes'"
            return (f"{asked}, which {why[0].lower()}{why[1:]}, nor does any later release that builds it (the last, {last[0]}.{last[1]}.x): "
                    "expected the unquantized checkpoint without it, or another method")  # fmt: skip
        return f"{why}: expected --engine-version {'.'.join(map(str, mapped))} or later"
    return None


def bnb_as_loaded(shape: Shape, version: tuple[int, int, int], typed: str | None = None) -> Shape:
    """A bitsandbytes checkpoint as the release loads it: its double-quantized statistics (or those
    quantize_4bit writes as it loads an unquantized checkpoint) stay nested on the device before
    v0.9.2 (BNB_EXPANDED_FROM); the release after v0.27.x has no bitsandbytes at all. `typed`, the
    version as given (none: the newest rules read)."""
    q = shape.quantization
    if not q or str(q.get("quant_method", "")).lower() != "bitsandbytes":
        return shape
    found = typed or "nothing (the newest rules read, " + ".".join(map(str, version[:2])) + ")"
    what = "--quantization bitsandbytes" if q.get("pre_quant") is False else f"{shape.file}'s quantization_config.quant_method 'bitsandbytes'"
    if version[:2] >= BNB_UNTIL:
        raise InputError(
            f"--engine-version: found {found}: vLLM 0.28.0 and later have no bitsandbytes (vllm/model_executor/layers/quantization/ has no "
            f"bitsandbytes.py; 0.27.x is the last release with it), and {what} asks for it: expected --engine-version 0.27.1 or earlier"
        )
    refused = bnb_moe_refused(shape, version)
    if refused:
        raise InputError(refused if refused.startswith((shape.file, "--quantization")) else f"--engine-version: found {found}, {refused}")
    nested = as_flag(q.get("bnb_4bit_use_double_quant", False), shape.file, "quantization_config.bnb_4bit_use_double_quant") or q.get("pre_quant") is False
    if not nested or version >= BNB_EXPANDED_FROM:
        return shape
    return replace(shape, bnb_nested_on_device=True)


def drafter_as_loaded(shape: Shape, rel: tuple[int, int], pp: int = 1) -> Shape:
    """The shape with the MTP ends vLLM frees once the drafter loads: the proposer's load_model swaps the
    drafter's embedding for the target's when there is one pipeline stage (v1/spec_decode/eagle.py,
    v0.10.1.1 to v0.19.0; llm_base_proposer.py _maybe_share_embeddings, v0.20.0 to v0.33.0: an MTP model
    always), and from v0.16.0 each MTP layer's shared_head.head for the target's lm_head, at any pipeline
    size (_maybe_share_lm_head from v0.20.0). 'Model loading took' is measured after the swap, so the
    freed copies are not in it; the checkpoint still holds them (checkpoint_scale counts them)."""
    if not shape.drafter_layers or not mtp_with_ends(shape):
        return shape
    shared = ({"embed_tokens"} if pp == 1 else set()) | ({"shared_head.head"} if rel >= SHARED_HEAD_FROM else set())
    return replace(shape, drafter_shared=frozenset(shared))


def checkpoint_scale(shape: Shape, total_size: int | None, source: str = "index total_size") -> tuple[Fraction, str, int]:
    """What the count is multiplied by to give the checkpoint's own bytes (1 without them), the
    source of the figure and the whole checkpoint's bytes, all ranks together."""
    whole = _sum(replace(shape, drafter_shared=frozenset()), 1, quant_of(shape))  # the checkpoint holds every MTP end
    counted = whole[0] + whole[1]  # the checkpoint's tensors, not the buffers
    if total_size is None:
        at_load = shape.quantization and shape.quantization.get("is_checkpoint_fp8_serialized") is False
        return Fraction(1), "config" + (", fp8 as it loads under --quantization fp8" if at_load else ""), counted
    if not counted // PLAUSIBLE <= total_size <= counted * PLAUSIBLE:  # total_size 1 once gave weights of 0.00 GiB
        raise InputError(
            f"{source}: found {total_size:,} B, expected a checkpoint size within {PLAUSIBLE}x of the {counted:,} B the config's "
            "layers count: no checkpoint of this model is that size"
        )
    if quant_of(shape).method in ("bnb4", "bnb8"):  # the statistics as saved are not as the release holds them (BNB_BLOCK)
        return Fraction(1), f"config (not {source}: a bitsandbytes checkpoint saves its statistics as the device need not hold them)", total_size
    if shape.float32_checkpoint:  # stored in 4 bytes a value, loaded in 2
        total_size, source = total_size // 2, f"{source}, halved: stored in float32, loaded in bfloat16"
    return Fraction(total_size, counted), source, total_size


def _sum(shape: Shape, tp: int, quant: Quant) -> tuple[int, int, int]:
    """The model's, the drafter's and the buffers' bytes on one rank."""
    if quant.method == "mixed":
        missing = mixed_unmatched(shape, quant)
        if missing:
            raise InputError(
                f"{shape.file}: quantization_config.quantized_layers: found {len(missing):,} modules ({', '.join(missing[:3])}"
                f"{', ...' if len(missing) > 3 else ''}) that calc's layout of {shape.architecture} holds no tensor for, expected only "
                "modules it lists: the MIXED_PRECISION checkpoint is refused rather than sized without them"
            )
    model = drafter = buffers = 0
    for t in tensors(shape, tp):
        b = tensor_bytes(t, quant, shape.dtype_bytes)
        if t.buffer:
            buffers += b
        elif t.drafter:
            drafter += b
        else:
            model += b
    return model, drafter, buffers


def checkpoint_size(data: object, file: str) -> tuple[int, str]:
    """The checkpoint's own size and what gave it: model.safetensors.index.json's
    metadata.total_size, or the tensors of one or more safetensors headers ({name: {"dtype",
    "shape", "data_offsets"}}, a list of them for several shards) added up."""
    if isinstance(data, dict) and ("weight_map" in data or "metadata" in data):
        return index_total_size(data, file), "index total_size"
    headers = data if isinstance(data, list) else [data]
    total = 0
    for n, header in enumerate(headers):
        if not isinstance(header, dict):
            raise ConfigError(file, f"[{n}]", type(header).__name__, "a safetensors header: an object of tensors")
        for name, tensor in header.items():
            if name == "__metadata__":
                continue
            offsets = tensor.get("data_offsets") if isinstance(tensor, dict) else None
            if not (
                isinstance(offsets, list)
                and len(offsets) == 2
                and all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
                and offsets[1] >= offsets[0]
            ):
                raise ConfigError(file, f"{name}.data_offsets", offsets, "[start, end] in bytes, as a safetensors header gives them")
            total += offsets[1] - offsets[0]
    if total <= 0:
        raise ConfigError(file, "metadata.total_size", None, "the checkpoint's size in bytes, a whole number above zero, or safetensors headers")
    return total, "shard headers"


def index_total_size(data: object, file: str) -> int:
    """metadata.total_size of a model.safetensors.index.json, in bytes."""
    meta = data.get("metadata") if isinstance(data, dict) else None
    total = meta.get("total_size") if isinstance(meta, dict) else None
    if isinstance(total, bool) or not isinstance(total, int) or total <= 0:
        raise ConfigError(file, "metadata.total_size", total, "the checkpoint's size in bytes, a whole number above zero")
    return total
