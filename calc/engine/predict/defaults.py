"""The release a start runs and the settings it leaves to vLLM: the default utilization, max_num_seqs
and max_num_batched_tokens by release, card and use."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from calc.engine.predict.cards import _key
from calc.engine.release import parse_release
from calc.units import GiB

LATEST = (0, 33)  # the newest release whose terms are checked on public starts: the rules a start without a version follows
NEWEST_READ = (0, 34)  # the newest release whose source was read: 0.34.0's pool measured after warmup (extensible.py), the rest as 0.33.0's
MAX_MODEL_LEN = 2**27  # 134M tokens: above every published context; a longer one is a typing slip


# --- releases and defaults -------------------------------------------------------------------


def release(text: str | None) -> tuple[int, int]:
    """(major, minor) of a vLLM version; the newest read when none is given."""
    return patch_release(text)[:2] if text else LATEST


def patch_release(text: str | None) -> tuple[int, int, int]:
    """(major, minor, patch) of a vLLM version, for the few rules a patch release changes; a version
    without its patch level (or with a suffix such as post1 in its place) is taken at .0."""
    return parse_release(text) if text else (*LATEST, 0)


CHUNKED_OFF_FROM = (0, 12)  # V1 keeps --no-enable-chunked-prefill from v0.12.0 (vllm/engine/arg_utils.py)


EXTENSIBLE_FROM = (0, 34)  # vllm/config/vllm.py (0.34.0): enable_extensible_kv_cache on by default on CUDA and ROCm


def extensible_kv_cache(rel: tuple[int, int], asked: bool | None = None) -> bool:
    """Whether the start sizes its pool from the memory measured after warmup and graph capture
    (--enable-extensible-kv-cache): from v0.34.0 on by default on CUDA and ROCm, where no pool is
    pinned (vllm/config/vllm.py, 0.34.0; a driver without virtual memory management turns it off
    again, which the inputs here do not know); `asked`, the flag given."""
    return asked if asked is not None else rel >= EXTENSIBLE_FROM


def default_utilization(rel: tuple[int, int], extensible: bool = False) -> Fraction:
    """vllm/config/cache.py, gpu_memory_utilization: 0.9 up to v0.19.x, 0.92 from v0.20.0; from v0.34.0
    unset, resolved_gpu_memory_utilization gives 1.0 with the extensible KV cache, 0.92 without."""
    if extensible:
        return Fraction(1)
    return Fraction(92, 100) if rel >= (0, 20) else Fraction(9, 10)


@dataclass(frozen=True)
class Batch:
    max_num_batched_tokens: int
    max_num_seqs: int
    source: str


def default_batch(rel: tuple[int, int], card_total: int, card_name: str, max_model_len: int, offline: bool = False,
                  chunked: bool | None = None) -> Batch:  # fmt: skip
    """The scheduler's defaults when the reader sets neither; `chunked`, --enable-chunked-prefill or
    --no-enable-chunked-prefill given (None: neither).

    V1 (v0.8.0 on): vllm/engine/arg_utils.py, EngineArgs.get_batch_defaults (_set_default_args_v1
    in v0.8.x): a card of 70 GiB or more that is no A100 takes 8192 tokens (16384 offline) and 1024
    sequences, any other 2048 (8192 offline) and 256; from v0.28.0 a card of 160 GiB or more
    takes 16384 tokens served too; v0.33.0 keeps GB10 on the small tier.
    V0 (before v0.8): vllm/config.py, SchedulerConfig: 256 sequences and max(max_model_len, 2048)
    tokens, or 2048 when chunked prefill is on (served with max_model_len above 32K, or asked for).
    V1 with chunked prefill turned off: before v0.12.0 V1 turns it back on for every generating model
    (vllm/engine/arg_utils.py _set_default_args, read in v0.11.0), so the default stands; from v0.12.0
    the larger of max_model_len and the default (_set_default_max_num_seqs_and_batched_tokens_args,
    read in v0.12.0 to v0.33.0)."""
    if rel < (0, 8):
        on = chunked if chunked is not None else max_model_len > 32768 and not offline
        tokens = 2048 if on else max(max_model_len, 2048)
        return Batch(tokens, 256, "vllm/config.py, SchedulerConfig, V0 (v0.6-v0.7): " + ("chunked prefill, 2048" if on else "max(max_model_len, 2048)"))
    batch = _v1_batch(rel, card_total, card_name, offline)
    if chunked is not False:
        return batch
    if rel < CHUNKED_OFF_FROM:  # V1 turns it back on for every generating model
        return Batch(batch.max_num_batched_tokens, batch.max_num_seqs, f"{batch.source}; --no-enable-chunked-prefill changes nothing before v0.12.0: "
                     "V1 turns chunked prefill on for every model that generates (vllm/engine/arg_utils.py _set_default_args, v0.11.0)")  # fmt: skip
    off = "vllm/engine/arg_utils.py, _set_default_max_num_seqs_and_batched_tokens_args: chunked prefill off, "
    return Batch(max(max_model_len, batch.max_num_batched_tokens), batch.max_num_seqs, off + f"the larger of max_model_len and the default ({batch.source})")


def _v1_batch(rel: tuple[int, int], card_total: int, card_name: str, offline: bool) -> Batch:
    where = "vllm/engine/arg_utils.py, get_batch_defaults"
    gb10 = "gb10" in _key(card_name) and rel >= (0, 33)
    if rel >= (0, 28) and card_total >= 160 * GiB:
        return Batch(16384, 1024, f"{where} (v0.28.0 on): 160 GiB or more")
    if card_total >= 70 * GiB and "a100" not in _key(card_name) and not gb10:
        return Batch(16384 if offline else 8192, 1024, f"{where}: 70 GiB or more, no A100")
    return Batch(8192 if offline else 2048, 256, f"{where}: below 70 GiB, an A100" + (" or GB10" if gb10 else ""))
