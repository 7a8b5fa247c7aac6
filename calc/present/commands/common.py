"""What several commands read alike: the catalog's folder, a flag's value as its input's kind,
MemAvailable, a text file, the deployment, the guard's settings and the host's memory."""

from __future__ import annotations

import argparse
import os
import re
import sys
from fractions import Fraction
from typing import TYPE_CHECKING

from calc.catalog.entries import GuardPolicy
from calc.catalog.model import Catalog
from calc.present import inputs
from calc.units import InputError, fmt, parse_count

if TYPE_CHECKING:  # the model report is imported by the flags that need it only: the gate starts faster without it
    from calc.checks import modeled as modeled_module


def _catalog_dir() -> str:
    """The checkout's catalog/, or the copy `pip install .` puts beside calc/ (calc/catalog_data/),
    as os.path's text (the command line starts without pathlib)."""
    calc = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    installed = os.path.join(calc, "catalog_data")
    return installed if os.path.isfile(os.path.join(installed, "boxes.yaml")) else os.path.join(os.path.dirname(calc), "catalog")


CATALOG_DIR = _catalog_dir()


MEMINFO = "/proc/meminfo"


_MEMAVAILABLE = re.compile(r"MemAvailable:\s*(?P<count>\S+)\s*+(?P<unit>\S*)\s*")  # possessive: the spaces never go back to the unit


def meminfo_available(path: str | None = None) -> int:
    """MemAvailable of the box this runs on, in bytes. The kernel prints it in kB (KiB, in fact)."""
    path = path or MEMINFO
    try:
        text = read_text(path)
    except OSError as error:
        raise InputError(f"--available auto: cannot read {path} ({error.strerror})") from None
    total: tuple[int, int] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("MemTotal:") and total is None:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB" and parts[1].isascii() and parts[1].isdigit() and len(parts[1]) <= 20:
                total = (int(parts[1]) * 1024, number)
        if line.startswith("MemAvailable:"):
            match = _MEMAVAILABLE.fullmatch(line)
            if not match or match["unit"] != "kB":
                raise InputError(f"--available auto: {path}, line {number}: found {line[:80]!r}, expected 'MemAvailable: <number> kB'")
            available = parse_count(match["count"], f"--available auto: {path}, line {number}: MemAvailable") * 1024
            if total is not None and available > total[0]:
                raise InputError(
                    f"--available auto: {path}, line {number}: found MemAvailable {available:,} B above MemTotal {total[0]:,} B (line {total[1]}), "
                    "expected at most the total: no kernel prints this"
                )
            return available
    raise InputError(f"--available auto: found no MemAvailable line in {path}")


def read_text(path: str) -> str:
    """A text file as UTF-8 (regular, and at most files.READ_LIMIT bytes; OSError otherwise);
    other bytes get a message naming the file and where they are."""
    from calc import files

    if path == "-":
        data = sys.stdin.buffer.read(files.READ_LIMIT + 1)
        if len(data) > files.READ_LIMIT:
            raise InputError(f"-: found more than {files.READ_LIMIT:,} bytes on standard input, expected at most {files.READ_LIMIT // 2**20} MiB")
    else:
        data = files.read_bounded(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: found byte {data[error.start]:#04x} at offset {error.start}, expected UTF-8 text") from None


def _deployment(catalog: Catalog, name: str | None) -> str:
    if name is None:
        return next(iter(catalog.deployments))
    if name not in catalog.deployments:
        raise InputError(f"--deployment: found {name!r}, expected one of {', '.join(catalog.deployments)}")
    return name


def _guard_settings(policy: GuardPolicy, args: argparse.Namespace) -> tuple[int, int]:
    """The guard's floor and polls in a row: the options where given, the catalog's policy otherwise."""
    floor = _int(args, "floor") if args.floor else policy["floor"].size
    polls = _int(args, "polls") if args.polls else policy["polls_in_a_row"].count
    return floor, polls


def _host_memory(
    args: argparse.Namespace,
    tp: int,
    pp: int,
    weights_bytes: int,
    kv_bytes: int | None,
    where: str = "a unified-memory box (GB10)",
    offload: modeled_module.OffloadReport | None = None,
) -> modeled_module.HostMemory | None:
    """--shm-size against the /dev/shm queues of the start, and what sleep mode frees (calc/engine/hostmem.py);
    `offload`, the bytes --cpu-offload-gb, --kv-offloading-size and --swap-space move to the host."""
    if args.sleep_level is not None and not args.enable_sleep_mode:
        raise InputError("--sleep-level: found without --enable-sleep-mode, expected --enable-sleep-mode beside it")
    moved = (
        {
            "offloaded_bytes_per_rank": offload.offloaded_bytes_per_rank,
            "weights_on_device_bytes_per_rank": offload.weights_on_device_bytes_per_rank,
            "kv_offloading_bytes": offload.kv_offloading_bytes,
            "swap_space_bytes": offload.swap_space_bytes,
            "offload_host_bytes": offload.host_bytes,
        }
        if offload is not None
        else {}
    )
    if not (args.enable_sleep_mode or args.shm_size is not None or args.mq_max_chunk_mb is not None):
        if offload is None:
            return None
        from calc.checks import modeled  # only now: the gate without these flags starts without the model's modules

        # the host-memory line of the text, and nothing asked of /dev/shm or sleep
        return modeled.HostMemory((), None, None, False, None, (), **moved)
    from calc.checks import modeled
    from calc.engine import hostmem, predict

    rel = predict.release(getattr(args, "engine_version", None))
    chunk = parse_count(args.mq_max_chunk_mb, "--mq-max-chunk-mb", 1) if args.mq_max_chunk_mb is not None else None
    queues = hostmem.shm_queues(tp, pp, rel, chunk)
    need = hostmem.shm_bytes(queues)
    shm_size = hostmem.docker_size(args.shm_size) if args.shm_size is not None else None
    notes = []
    refusal = hostmem.shm_refusal(need, shm_size, rel)
    if refusal:
        notes.append(refusal)
    if need:
        notes.append(
            f"/dev/shm: {fmt(need, 'MiB', 0, up=True)} of message queues for {tp * pp} ranks on one box (shm_broadcast.py); on {where} they come out of MemAvailable"
        )
    sleep: modeled.SleepReport | None = None
    if args.enable_sleep_mode:
        level = parse_count(args.sleep_level, "--sleep-level", 1) if args.sleep_level is not None else 1
        s = hostmem.sleep(level, weights_bytes, kv_bytes or 0)
        sleep = modeled.SleepReport(s.level, s.host_backup_bytes, s.device_freed_bytes, s.unified_freed_bytes, kv_bytes is not None)
        notes.append(
            hostmem.sleep_note(s, where) + ("" if kv_bytes is not None else " (the KV pool is not known here: give --kv-cache-memory-bytes or a card)")
        )
    return modeled.HostMemory(
        shm_queues=tuple(modeled.ShmQueue(q.name, q.count, q.bytes, q.source) for q in queues),
        shm_bytes=need,
        shm_size_bytes=shm_size,
        shm_refused=refusal is not None,
        sleep=sleep,
        notes=tuple(notes),
        **moved,
    )


def _flag(args: argparse.Namespace, key: str) -> str:
    """The flag of an input as the command line gave it (a former spelling, if that was typed)."""
    flag = inputs.INPUTS[key].flag
    return str(getattr(args, "typed", {}).get(key) or flag)


def _val(args: argparse.Namespace, key: str, minimum: int | None = None) -> object:
    """A flag's value read as its input's kind (calc/present/inputs.py), named in a message as typed."""
    return inputs.INPUTS[key].parse(getattr(args, key), _flag(args, key), minimum)


def _int(args: argparse.Namespace, key: str, minimum: int | None = None) -> int:
    """A count or a size in bytes."""
    value = _val(args, key, minimum)
    assert isinstance(value, int)
    return value


def _frac(args: argparse.Namespace, key: str) -> Fraction:
    value = _val(args, key)
    assert isinstance(value, Fraction)
    return value


def _secs(args: argparse.Namespace, key: str) -> float:
    value = _val(args, key)
    assert isinstance(value, float)
    return value
