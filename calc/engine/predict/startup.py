"""What other processes hold on the card when vLLM starts, and vLLM's check of its free memory.

vLLM's V1 worker takes a snapshot of the card as it starts and refuses a start whose request does
not fit the free memory: requested = total x gpu_memory_utilization, "Free memory on device (F/T GiB)
on startup is less than desired GPU memory utilization (u, R GiB)" (vllm/v1/worker/gpu_worker.py
init_device, read in 0.9.1, 0.9.2, 0.10.0 and 0.11.0; vllm/v1/worker/utils.py request_memory from
0.14.0). The free memory is the card's total less what others hold, less what vLLM's own worker
holds by then: its CUDA context and, from 0.11.0 (the snapshot after init_worker_distributed_environment;
before it in 0.10.0), NCCL's buffers under tensor parallel. Earlier builds take no such snapshot:
V1 up to 0.9.0 and V0 up to 0.6.4 count every byte the card holds beyond the process's torch
allocation as non-torch memory (vllm/v1/worker/gpu_worker.py determine_available_memory, 0.8.5 and
0.9.0; vllm/worker/worker.py determine_num_available_blocks, 0.6.4.post1), so what others hold comes
off the pool. V0 from 0.6.5 measures from a baseline snapshot (worker.py memory_profiling, read in
0.8.5's V0 worker) and checks nothing at start: there what others hold is not modeled.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from calc.units import InputError, fmt, printed_sum, shown

# For a card the catalog has no reading of (boxes.yaml in_use_at_start): vLLM's own worker at its start snapshot, 'worker init memory snapshot: ... cuda_memory=0.51GiB' (gpu_worker.py:284,
# DEBUG, v0.19.0, one H100 at TP 1, 21 starts of logs/starts/): the largest of the single-card readings the public logs
# print on server cards (A40 0.26, RTX 4090 0.39, 48 GB RTX 4090 0.38, A100 80GB 0.41, Tesla T4 0.10 GiB, total less free
# at 'Free memory on device'), so the check errs on the side of refusing; one RunPod RTX 4090 host prints 0.88 GiB
# (logs/starts/190-193), and a desktop card's display holds more: --in-use is for that
CUDA_CONTEXT = 547_608_330  # 0.51 GiB
# NCCL's buffers before the snapshot under tensor parallel on an NVSwitch board: the same H100 logs at TP 2 and 4 print
# cuda_memory 1.53 to 2.07 GiB against 0.51 at TP 1, the median 1.04 GiB more (11 starts); not measured on other cards
NCCL_AT_SNAPSHOT = 1_116_691_497  # 1.04 GiB
FREE_CHECK_FROM = (0, 9, 1)  # the V1 worker's start snapshot and its check
NCCL_BEFORE_SNAPSHOT_FROM = (0, 11, 0)
V0_BASELINE_FROM = (0, 6, 5)  # V0 measures from a baseline snapshot


def check_in_use(held: int, total: int, card: str, what: str = "--in-use", context: int | None = None) -> None:
    """Refuse, in one line, what other processes hold (`what`: the flag or field) where it is no
    reading of a card: so much that vLLM's own CUDA context would not fit beside it (free memory at
    start of zero or less). A few bytes, a number typed without its unit, are refused as it is read
    (calc.units.parse_memory)."""
    hint = "what other processes hold when vLLM starts, nvidia-smi's used"
    room = total - (CUDA_CONTEXT if context is None else context)
    if held >= room:
        raise InputError(f"{what}: found {fmt(held, 'GiB')}, expected less than {fmt(room, 'GiB', down=True)}, the {card}'s total of "
                         f"{fmt(total, 'GiB')} less vLLM's own CUDA context ({hint})")  # fmt: skip


def whole_device(rel: tuple[int, int, int], v0: bool) -> bool:
    """Whether the release's profile counts what other processes hold as its own non-torch memory."""
    return rel < V0_BASELINE_FROM if v0 else rel < FREE_CHECK_FROM


def checks_free(rel: tuple[int, int, int], v0: bool) -> bool:
    """Whether the release refuses a start whose request does not fit the free memory at start."""
    return not v0 and rel >= FREE_CHECK_FROM


@dataclass(frozen=True)
class FreeAtStart:
    """The free memory vLLM's start snapshot sees on a rank, with its parts: the card's total less
    vLLM's CUDA context (measured on the card at `where`, else CUDA_CONTEXT), what others hold and,
    from 0.11.0 under TP on an NVSwitch board, NCCL's buffers. `bytes` decides; `shown` is the
    difference of the parts as printed, what a reader gets from the figures beside it."""

    total: int
    context: int
    in_use: int
    nccl: int
    where: str = ""

    @property
    def bytes(self) -> int:
        return self.total - self.context - self.in_use - self.nccl

    @property
    def shown(self) -> Fraction:
        return shown(self.total, "GiB") - printed_sum([self.context, self.in_use, self.nccl], "GiB")

    @property
    def source(self) -> str:
        measured = f" (measured on this card, catalog/{self.where})" if self.where else " (the largest single-card reading)"
        parts = [f"the card's {fmt(self.total, 'GiB')}", f"less {fmt(self.context, 'GiB')} of vLLM's CUDA context{measured}"]
        if self.in_use:
            parts.append(f"{fmt(self.in_use, 'GiB')} other processes hold (--in-use)")
        if self.nccl:
            parts.append(f"{fmt(self.nccl, 'GiB')} of NCCL's buffers, set up before the snapshot from 0.11.0")
        return ", ".join(parts) + " (vllm/v1/worker/gpu_worker.py init_device; the context and NCCL's buffers as the public logs' snapshots print them)"


def free_at_start(total: int, in_use: int, tp: int, nvls: bool, rel: tuple[int, int, int], context: int | None = None, where: str = "") -> FreeAtStart:
    """The free memory vLLM's start snapshot sees on a rank (FreeAtStart)."""
    nccl = NCCL_AT_SNAPSHOT if tp > 1 and nvls and rel >= NCCL_BEFORE_SNAPSHOT_FROM else 0
    return FreeAtStart(total, CUDA_CONTEXT if context is None else context, in_use, nccl, where if context is not None else "")
