"""vLLM's auto-prefetch of a checkpoint into the page cache, as the loader decides it when
--safetensors-load-strategy is left unset (safetensors_weights_iterator in
vllm/model_executor/model_loader/weight_utils.py, v0.20.0 to v0.33.0):

- only on a network filesystem it recognises, NFS, NFS4 or Lustre (v0.19.0 knew NFS and NFS4
  only; earlier builds never auto-prefetch); on a local disk it logs "Auto-prefetch is disabled
  because the filesystem (EXT4) is not a recognized network FS (NFS/Lustre)";
- and only when the checkpoint is at most 90 % of available RAM: psutil's available memory when
  loading starts (on GB10 after the kernel-init allocations), capped by the cgroup's limit less
  its usage (_get_available_ram_bytes: on every platform from v0.27.0, on ROCm only in v0.26.0).

--safetensors-load-strategy=prefetch prefetches whatever the filesystem and size.

What the loader logs, one line for each branch (weight_utils.py, v0.20.0 to v0.33.0): on a
network filesystem over the size rule "Network filesystem (%s) detected but checkpoint total size
... Skipping auto-prefetch."; elsewhere "Auto-prefetch is disabled because the filesystem (%s) is
not a recognized network FS (NFS/Lustre)", with " and the checkpoint size (...) exceeds %d%% of
available RAM (...)" when the size rule fails too. So a log that says auto-prefetch is disabled
names a filesystem that was never going to be prefetched, whatever the memory.
"""

from __future__ import annotations

from fractions import Fraction

from calc.units import InputError

NETWORK_FILESYSTEMS = ("nfs", "nfs4", "lustre")


def prefetch_enabled(checkpoint: int, available: int, fraction: Fraction) -> bool:
    """The size rule alone: the checkpoint is at most `fraction` of available memory."""
    return checkpoint <= available * Fraction(fraction)


def largest_prefetched(available: int, fraction: Fraction) -> int:
    """The largest checkpoint that still passes the size rule at this available memory."""
    return int(available * Fraction(fraction))


def available_to_loader(available: int, cgroup_available: int | None = None) -> int:
    """What the loader reads as available: MemAvailable, capped by the cgroup's room when the
    process runs under a memory limit (limit less usage)."""
    return available if cgroup_available is None else min(available, cgroup_available)


def log_line(filesystem: str, fits: bool) -> str | None:
    """The loader's line for this branch, figures left out (None: it prefetches, with no such line)."""
    fs = filesystem.upper() or "unknown"
    if filesystem.lower() in NETWORK_FILESYSTEMS:
        return (
            None
            if fits
            else f'"Network filesystem ({fs}) detected but checkpoint total size (...) exceeds ... of available RAM (...). Skipping auto-prefetch."'
        )
    size = " and the checkpoint size (...) exceeds ... of available RAM (...)" if not fits else ""
    return f'"Auto-prefetch is disabled because the filesystem ({fs}) is not a recognized network FS (NFS/Lustre){size}."'


def disabled_for_filesystem(line: str) -> bool:
    """Whether a quoted loader line is the one vLLM prints only off a network filesystem: every
    "Auto-prefetch is disabled" line is (weight_utils.py, v0.20.0 to v0.33.0)."""
    return "auto-prefetch is disabled" in line.lower()


def auto_prefetch(checkpoint: int, available: int, fraction: Fraction, filesystem: str, cgroup_available: int | None = None) -> tuple[bool, str]:
    """Whether the loader prefetches on its own, and why, with the line it logs."""
    room = available_to_loader(available, cgroup_available)
    fits = prefetch_enabled(checkpoint, room, fraction)
    fs = filesystem.lower()
    line = log_line(fs, fits)
    if fs not in NETWORK_FILESYSTEMS:
        return False, (
            f"not prefetched: {fs or 'this'} filesystem is not a network filesystem vLLM recognises (NFS, NFS4, Lustre), whatever the memory; it logs {line}"
        )
    if not fits:
        return False, f"not prefetched: the checkpoint is more than its share of available memory; it logs {line}"
    return True, "prefetched"


def least_available(checkpoint: int, fraction: Fraction) -> int:
    """The least MemAvailable (whole bytes) at which a checkpoint of this size is still prefetched."""
    if fraction <= 0:
        raise InputError(f"prefetch fraction: found {fraction}, expected a fraction above 0")
    return -(-checkpoint // Fraction(fraction))
