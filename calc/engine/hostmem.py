"""Host memory a start takes beside the weights and the KV pool: the /dev/shm message queues of a
multi-GPU start on one box, and sleep mode's backup of the weights. On a unified-memory box
(GB10) both come out of the same MemAvailable the weights and the pool do.

Read from vLLM's released sources:
- /dev/shm (vllm/distributed/device_communicators/shm_broadcast.py, ShmRingBuffer): a queue is
  (max_chunk_bytes + 1 + readers) x max_chunks bytes of POSIX shared memory. A start of more than
  one GPU on one box (the multiprocessing executor; one GPU runs in-process, with none) makes
  - the scheduler's broadcast to the workers: readers = the ranks on the box, chunks of
    VLLM_MQ_MAX_CHUNK_BYTES_MB (16 MiB from 0.11.0; 10 MiB before), 10 of them
    (vllm/v1/executor/multiproc_executor.py);
  - one reply queue a worker, `MessageQueue(1, 1)`: one reader, the class's default chunks, 10 MiB
    up to 0.11.x and 24 MiB from 0.13.0, 10 of them;
  - one broadcaster a tensor-parallel group of more than one rank: tp - 1 readers, 4 MiB chunks,
    6 of them (vllm/distributed/parallel_state.py, GroupCoordinator, `1 << 22, 6`).
  From 0.27.0 vLLM checks the free space of /dev/shm before each queue and refuses with
  "Insufficient space in /dev/shm ... Increase /dev/shm (e.g. --shm-size or --ipc=host)"
  (check_shm_free_space); before, a container's smaller /dev/shm fails when the pages are first
  written (a bus error). /dev/shm is tmpfs: its pages are shared memory, which MemAvailable does
  not count as available.
- Sleep mode (--enable-sleep-mode; POST /sleep?level=N; vllm/v1/worker/gpu_worker.py sleep and
  vllm/device_allocator/cumem.py CuMemAllocator.sleep, 0.8.5 to 0.33.0): level 1 copies every
  allocation tagged "weights" to pinned host memory (cpu_backup_tensor) and unmaps the device's,
  the KV cache is discarded; level 2 discards the weights too (model buffers, a few MB, are kept
  on the host) and reloads them on wake. From 0.28.0 the runtime and CUDA-graph pools are kept on
  the host at both levels (sleep_mode_backend.py). On a unified box the level-1 backup is the same
  memory: sleeping frees the KV pool only, never the weights.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from calc.units import LARGEST_SIZE, InputError, MiB, fmt, parse_size, quoted, shown

MAX_WORLD = 4096


@dataclass(frozen=True)
class Queue:
    name: str
    count: int  # how many such queues
    readers: int
    chunk_bytes: int
    chunks: int
    source: str

    @property
    def bytes_each(self) -> int:
        return (self.chunk_bytes + 1 + self.readers) * self.chunks

    @property
    def bytes(self) -> int:
        return self.count * self.bytes_each


def shm_queues(tp: int, pp: int, rel: tuple[int, int], mq_chunk_mib: int | None = None) -> tuple[Queue, ...]:
    """The /dev/shm queues of a start of tp x pp ranks on one box (V1, 0.8.0 on)."""
    if not (1 <= tp <= MAX_WORLD and 1 <= pp <= MAX_WORLD):
        raise InputError(f"--tensor-parallel-size / --pipeline-parallel-size: found {tp} / {pp}, expected sizes from 1 to {MAX_WORLD:,}")
    world = tp * pp
    if world == 1 or rel < (0, 8):
        return ()
    if mq_chunk_mib is not None and not 1 <= mq_chunk_mib <= 65536:
        raise InputError(f"VLLM_MQ_MAX_CHUNK_BYTES_MB: found {mq_chunk_mib}, expected MiB from 1 to 65,536")
    where = "vllm/distributed/device_communicators/shm_broadcast.py"
    default_chunk = (24 if rel >= (0, 13) else 10) * MiB
    rpc_chunk = (mq_chunk_mib if mq_chunk_mib is not None else 16) * MiB if rel >= (0, 11) else 10 * MiB
    out = [
        Queue("scheduler broadcast", 1, world, rpc_chunk, 10, f"vllm/v1/executor/multiproc_executor.py rpc_broadcast_mq; {where}"),
        Queue("worker replies", world, 1, default_chunk, 10, f"vllm/v1/executor/multiproc_executor.py worker_response_mq, MessageQueue(1, 1); {where}"),
    ]
    if tp > 1:
        out.append(Queue("tensor-parallel broadcaster", pp, tp - 1, 4 * MiB, 6, "vllm/distributed/parallel_state.py GroupCoordinator mq_broadcaster"))
    return tuple(out)


def shm_bytes(queues: tuple[Queue, ...]) -> int:
    return sum(q.bytes for q in queues)


def shm_refusal(need: int, shm_size: int | None, rel: tuple[int, int]) -> str | None:
    """What a container's /dev/shm of `shm_size` makes of the queues, if they do not fit."""
    if shm_size is None or need <= shm_size:
        return None
    how = (
        "vLLM refuses the start: 'Insufficient space in /dev/shm' (shm_broadcast.py check_shm_free_space, from 0.27.0)"
        if rel >= (0, 27)
        else "the start dies with a bus error when the queues' pages are first written (vLLM checks the space from 0.27.0 only)"
    )
    return f"--shm-size {fmt(shm_size, 'MiB', 0, down=True)} is below the {fmt(need, 'MiB', 0, up=True)} of message queues: {how}; give --shm-size of at least that, or --ipc=host"


# docker's --shm-size is read by github.com/docker/go-units size.go RAMInBytes: a number (a
# decimal point allowed), an optional space, an optional k, m, g, t or p, an optional i and an
# optional b, any case, every unit a power of 1024 ("2gb" and "2GB" are 2 GiB, not 2e9 B); the
# bytes are int64(number x unit), truncated. 0 is docker's "not set": the daemon's default, 64 MiB.
_DOCKER_SIZE = re.compile(r"(?P<num>[0-9]+(?:\.[0-9]+)?) ?(?P<unit>[kmgtp])?i?b?", re.IGNORECASE)
_DOCKER_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}
DOCKER_DEFAULT_SHM = 64 * MiB


def docker_size(text: str, flag: str = "--shm-size") -> int:
    """A size as docker's --shm-size takes it (64m, 1g, 2gb, 1 GiB: units of 1024), or as calc
    takes one (10e9)."""
    body = text.strip()
    m = _DOCKER_SIZE.fullmatch(body)
    if m is None:
        if body.startswith("-"):
            raise InputError(f"{flag}: found {quoted(body)}, expected a size above zero, such as 64m or 16g")
        try:
            return parse_size(body, flag)
        except InputError:
            raise InputError(f"{flag}: found {quoted(body)}, expected a size as docker takes it, such as 64m, 2g or 1 GiB (units of 1024)") from None
    digits = m["num"].replace(".", "")
    if len(digits.lstrip("0")) > 20:
        raise InputError(f"{flag}: found {quoted(body)}, {len(digits)} digits; expected a size such as 64m or 16g")
    size = int(Fraction(m["num"]) * _DOCKER_UNITS[(m["unit"] or "").lower()])
    if size > LARGEST_SIZE:
        raise InputError(f"{flag}: found {quoted(body)}, expected a size of at most {fmt(LARGEST_SIZE, 'TiB', 0)}")
    if size == 0:
        raise InputError(
            f"{flag}: found {quoted(body)}, which docker reads as not set (its default /dev/shm, {fmt(DOCKER_DEFAULT_SHM, 'MiB', 0)}); "
            "expected the size the container gets, such as 64m or 16g"
        )
    return size


@dataclass(frozen=True)
class Sleep:
    level: int
    host_backup_bytes: int  # a rank's copy kept in host memory while asleep
    device_freed_bytes: int  # what leaves the device's allocations
    unified_freed_bytes: int  # what MemAvailable gains on a unified box
    weights_bytes: int = 0  # the rank's weights and KV pool, as the figures beside the note print them
    kv_bytes: int = 0


def sleep(level: int, weights_bytes: int, kv_bytes: int) -> Sleep:
    """One rank asleep: level 1 keeps the weights in host memory, level 2 drops them."""
    if level not in (1, 2):
        raise InputError(f"--sleep-level: found {level}, expected 1 (weights kept in host memory) or 2 (weights discarded)")
    if level == 1:
        return Sleep(1, weights_bytes, weights_bytes + kv_bytes, kv_bytes, weights_bytes, kv_bytes)
    return Sleep(2, 0, weights_bytes + kv_bytes, weights_bytes + kv_bytes, weights_bytes, kv_bytes)


def sleep_note(s: Sleep, where: str = "a unified-memory box (GB10)") -> str:
    """What sleeping gives back, on a card and on a unified-memory box (`where`)."""
    # The weights and the pool are restated as the lines beside the note print them (to the
    # nearest); what both free together is the sum of the two as printed, so the reader's sum agrees.
    both = fmt(shown(s.weights_bytes, "GiB") + shown(s.kv_bytes, "GiB"), "GiB")
    if s.level == 1:
        return (
            f"sleep level 1 copies the {fmt(s.weights_bytes, 'GiB')} of weights a rank to pinned host memory "
            f"(vllm/device_allocator/cumem.py) and frees {both} of device memory; on {where} the copy "
            f"is the same memory: MemAvailable rises by the KV pool only, {fmt(s.kv_bytes, 'GiB')}, not by the weights"
        )
    return f"sleep level 2 discards the weights and the KV pool, {both} a rank, and reloads the weights on wake; on {where} that is what MemAvailable gains"
