"""The pool measured after warmup: vLLM's extensible KV cache, on by default from v0.34.0 on CUDA and
ROCm (vllm/v1/worker/extensible_kv_cache.py, 0.34.0).

The worker still profiles and prints 'Available KV cache memory' from the requested share (total x
gpu_memory_utilization, 1.0 when unset) less the profile's terms, but that figure only reserves the
cache's address range. After warmup and graph capture it measures free memory and sizes the pool
(measure_kv_cache_bytes):

    non_kv    = free at start - free now - committed KV   (weights, non-torch memory, the graphs)
    available = min(requested - non_kv, free at start - non_kv - margin) - kept
    margin    = max(1 GiB (3 GiB on ROCm), 0.75 x kept)
    kept      = the transient peak kept free: the profile's activation peak plus the graph
                estimate (gpu_worker.py peak_activation_memory), or a larger peak warmup reaches

So the terms come off min(requested, free at start - margin), and the graph estimate comes off
twice: once as the graphs captured, once inside the peak kept free. What warmup's own steps reach
beyond the profile's peak, and the growth of torch's reservation over them, are not among the
inputs here: the pool predicted is the largest vLLM measures.
"""

from __future__ import annotations

from dataclasses import dataclass

NOTE = (
    "vLLM 0.34.0 sizes the pool from the memory it measures after warmup and graph capture (the extensible KV cache, on by default where "
    "no pool is pinned): the pool here follows its source (vllm/v1/worker/extensible_kv_cache.py) with the terms of 0.33.0 and 0.34.0's "
    "block of 64 tokens (a hybrid's aligned as 0.33.0 aligns it); no public start of 0.34.0 has been checked yet, so no accuracy is claimed for it. "
    "--no-enable-extensible-kv-cache sizes it as 0.33.0 does, from the profile's estimate"
)
MARGIN_FLOOR = {"nvidia": 1 << 30, "amd": 3 << 30}  # KV_CACHE_MARGIN_FLOOR_BYTES (extensible_kv_cache.py, 0.34.0)
SOURCE = "vllm/v1/worker/extensible_kv_cache.py measure_kv_cache_bytes, 0.34.0"


@dataclass(frozen=True)
class Budget:
    """What the terms come off where the pool is measured after warmup, with its parts."""

    bytes: int  # min(requested, free at start - margin)
    requested: int
    free_at_start: int
    margin: int
    kept: int  # the transient peak kept free: activation peak and graph estimate
    floor: int = MARGIN_FLOOR["nvidia"]  # the margin's floor on this vendor's cards

    @property
    def by_free(self) -> bool:
        """Whether free memory at start less the margin binds, not the requested share."""
        return self.bytes < self.requested

    @property
    def source(self) -> str:
        bound = "free memory at start less the margin" if self.by_free else "the requested share"
        return (f"the smaller of the requested share and free memory at start less a margin of max({self.floor // 2**30} GiB, 0.75 x the "
                f"peak kept free), here {bound} ({SOURCE})")  # fmt: skip


def budget(requested: int, free_at_start: int, kept: int, vendor: str = "nvidia") -> Budget:
    """The budget of a pool measured after warmup: `kept`, the activation peak and the graph estimate."""
    floor = MARGIN_FLOOR.get(vendor, MARGIN_FLOOR["nvidia"])
    margin = max(floor, kept * 3 // 4)  # int(transient_peak_bytes * 0.75)
    return Budget(min(requested, free_at_start - margin), requested, free_at_start, margin, kept, floor)


def after_warmup(requested: int, free_at_start: int, held: int, activation: int, graphs: int, vendor: str = "nvidia") -> tuple[Budget, int]:
    """The budget and the pool measured after warmup: `held` (weights, adapters, non-torch memory) and the
    graphs off the budget, then the peak kept free, the activation peak and the graph estimate again."""
    b = budget(requested, free_at_start, activation + graphs, vendor)
    return b, b.bytes - held - graphs - (activation + graphs)
