"""Offload and host memory: what --cpu-offload-gb, --kv-offloading-size and --swap-space move to
the host, and why on a unified-memory box (GB10) none of it frees anything.

Read from vLLM's released sources:
- --cpu-offload-gb (vllm/config/offload.py, 0.33.0: "The space in GiB to offload to CPU, per
  GPU"): vllm/model_executor/offloader/uva.py `_maybe_offload_to_cpu` walks the decoder layers
  as make_layers builds them (vllm/model_executor/models/utils.py) and moves whole parameters,
  one after another, while fewer than int(cpu_offload_gb x 2^30) bytes have moved: the parameter
  that crosses the budget moves whole, so the bytes moved reach the budget or pass it by less
  than one parameter. The embedding and the head are never moved (they are not built by
  make_layers); each worker has the whole budget. Within a layer the parameters go in the order
  the model's code registers them: attention (q, k and v as one qkv_proj, o_proj, q/k norms),
  then the MLP (gate and up as one gate_up_proj, down_proj), then the layer's norms (llama.py,
  qwen2.py, qwen3.py DecoderLayer).
- KV offloading (vllm/config/cache.py and vllm/config/vllm.py `_post_init_kv_transfer_config`,
  0.33.0): --kv-offloading-size GiB with the native backend gives the OffloadingConnector
  cpu_bytes_to_use = size x 2^30 of host memory, the total over the tensor-parallel ranks;
  with --kv-offloading-backend lmcache the store is LMCache's own server process, whose size
  is set there, not by this flag.
- --swap-space (vllm/config/cache.py, 4 GiB by default up to 0.17.x, gone from 0.18.0): the V0
  engine (before 0.8) allocated it per GPU as pinned CPU blocks (vllm/worker/cache_engine.py);
  the V1 engine allocates nothing for it and only refuses a swap space above 70 % of the host's
  memory (CacheConfig.verify_with_parallel_config, tensor-parallel size x swap space).

On a unified-memory box CPU and GPU share one memory: vLLM reads its free memory as MemAvailable
(vllm/utils/mem_utils.py MemorySnapshot), and bytes moved "to the CPU" stay in that memory. The
weights take the same MemAvailable whether offloaded or not, and every host buffer above comes
out of it too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from calc.engine import weights
from calc.engine.hfconfig import Shape
from calc.units import GiB, InputError, fmt

_LAYER = re.compile(r"model\.layers\.(\d+)\.")
_MERGED = re.compile(r"\.(q_proj|k_proj|v_proj)$|\.(gate_proj|up_proj)$")


@dataclass(frozen=True)
class Offload:
    """The host-memory settings of a start, each as vLLM's flag takes it (GiB)."""

    cpu_offload_gib: Fraction = Fraction(0)
    kv_offloading_gib: Fraction | None = None
    kv_offloading_backend: str = "native"
    swap_space_gib: Fraction | None = None  # None: the release's default


def check(o: Offload) -> None:
    if o.cpu_offload_gib < 0:
        raise InputError(f"--cpu-offload-gb: found {float(o.cpu_offload_gib):g}, expected a size in GiB of 0 or more")
    if o.kv_offloading_gib is not None and o.kv_offloading_gib <= 0:
        raise InputError(f"--kv-offloading-size: found {float(o.kv_offloading_gib):g}, expected a size in GiB above 0")
    if o.kv_offloading_backend not in ("native", "lmcache"):
        raise InputError(f"--kv-offloading-backend: found {o.kv_offloading_backend!r}, expected native or lmcache")
    if o.swap_space_gib is not None and o.swap_space_gib < 0:
        raise InputError(f"--swap-space: found {float(o.swap_space_gib):g}, expected a size in GiB of 0 or more")


def parameters(shape: Shape, tp: int, layers: range | None = None, tensors: list[weights.Tensor] | None = None) -> list[tuple[str, int]]:
    """The decoder layers' parameters on one rank, in the order the offloader meets them
    (`tensors`: the rank's weights where they are not TP's alone: under expert parallel an MoE
    layer's experts parameter holds the rank's own experts, whole, and moves as one)."""
    quant = weights.quant_of(shape)
    by_layer: dict[int, tuple[dict[str, int], dict[str, int]]] = {}
    for t in tensors if tensors is not None else weights.tensors(shape, tp):
        m = _LAYER.match(t.path + ".")
        if t.drafter or t.buffer or m is None or (layers is not None and int(m.group(1)) not in layers):
            continue
        body, norms = by_layer.setdefault(int(m.group(1)), ({}, {}))
        name = _MERGED.sub(lambda g: ".qkv_proj" if g.group(1) else ".gate_up_proj", t.path)
        norm = t.path.removesuffix(".bias")  # a LayerNorm's bias is a parameter of its own, after its weight
        layer_norm = norm.endswith(("input_layernorm", "post_attention_layernorm")) or "feedforward_layernorm" in norm
        into = norms if layer_norm else body
        into[name] = into.get(name, 0) + weights.tensor_bytes(t, quant, shape.dtype_bytes)
    out: list[tuple[str, int]] = []
    for i in sorted(by_layer):
        body, norms = by_layer[i]
        out += list(body.items()) + list(norms.items())
    return out


def moved(shape: Shape, tp: int, cpu_offload_gib: Fraction, layers: range | None = None, tensors: list[weights.Tensor] | None = None) -> int:
    """The bytes --cpu-offload-gb moves off one rank: whole parameters until the budget is reached."""
    budget = int(cpu_offload_gib * GiB)
    done = 0
    for _, size in parameters(shape, tp, layers, tensors):
        if done >= budget:
            break
        done += size
    return done


@dataclass(frozen=True)
class HostUse:
    """What one start keeps in host memory, all workers together, and on one rank's device."""

    offloaded_per_rank: int  # weights moved off each rank (the heaviest stage's under PP)
    offloaded_bytes: int  # all workers together
    kv_offloading_bytes: int  # native backend: the whole buffer over the TP ranks; 0 with lmcache
    swap_bytes: int  # allocated only by the V0 engine
    host_bytes: int  # the sum: what the host holds for these flags
    notes: tuple[str, ...]


def kv_offloading_a_rank(gib: Fraction, tp: int) -> int:
    """--kv-offloading-size is the buffer over the tensor-parallel ranks (vllm/config/cache.py,
    0.33.0): a rank's share in bytes, rounded up."""
    return -(-int(gib * GiB) // tp)


def host_use(o: Offload, offloaded: tuple[int, ...], tp: int, engine: str, all_ranks: int | None = None) -> HostUse:
    """`offloaded`: the bytes moved off one rank of each pipeline stage; `all_ranks`, what every
    worker moves together where the ranks of a stage differ (expert or data parallel), else each
    stage's figure times TP."""
    check(o)
    kv = int(o.kv_offloading_gib * GiB) if o.kv_offloading_gib is not None and o.kv_offloading_backend == "native" else 0
    swap_gib = o.swap_space_gib if o.swap_space_gib is not None else Fraction(4)
    swap = int(swap_gib * GiB) * tp * len(offloaded) if engine == "v0" else 0
    total_offloaded = sum(offloaded) * tp if all_ranks is None else all_ranks
    notes = []
    if o.kv_offloading_gib is not None and o.kv_offloading_backend == "lmcache":
        notes.append("--kv-offloading-backend lmcache: the store is LMCache's own server process, sized there, not by --kv-offloading-size")
    if o.swap_space_gib is not None and engine != "v0":
        notes.append("--swap-space allocates nothing in the V1 engine (vLLM 0.8 and later); from 0.18.0 the flag is gone")
    return HostUse(max(offloaded), total_offloaded, kv, swap, total_offloaded + kv + swap, tuple(notes))


UNIFIED = "on a unified-memory box (GB10): "


def unified_note(h: HostUse, weights_bytes: int) -> str:
    """What a unified-memory box makes of it, in one sentence (UNIFIED and the rest)."""
    parts = []
    if h.offloaded_per_rank:
        parts.append(
            f"the {fmt(h.offloaded_per_rank, 'GiB')} a rank --cpu-offload-gb moves stay in the same memory: MemAvailable still falls by "
            f"the whole {fmt(weights_bytes, 'GiB')} of weights a rank, and nothing is freed"
        )
    extra = h.kv_offloading_bytes + h.swap_bytes
    if extra:
        parts.append(f"the host buffers ({fmt(extra, 'GiB', up=True)}) come out of MemAvailable too")
    return UNIFIED + "; ".join(parts) if parts else ""
