"""`prefetch`: vLLM's auto-prefetch of a checkpoint on a network filesystem."""

from __future__ import annotations

import argparse

from calc.answers import report
from calc.catalog.model import Catalog
from calc.present.commands.common import _int, meminfo_available
from calc.units import fmt


def cmd_prefetch(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc.answers import prefetch

    share = catalog.policy["vllm"]["prefetch_fraction"].fraction
    checkpoint = _int(args, "checkpoint")
    available = meminfo_available() if args.available == "auto" else _int(args, "available")
    cgroup = _int(args, "cgroup_available") if args.cgroup_available else None
    room = prefetch.available_to_loader(available, cgroup)
    fits = prefetch.prefetch_enabled(checkpoint, room, share)
    largest = prefetch.largest_prefetched(room, share)
    filesystems = [args.filesystem] if args.filesystem else ["nfs", "ext4"]
    verdicts = {fs: prefetch.auto_prefetch(checkpoint, available, share, fs, cgroup) for fs in filesystems}
    if args.json:
        return report.to_json({"checkpoint_bytes": checkpoint, "available_bytes": available, "loader_available_bytes": room,
                               "fits": fits, "largest_prefetched_bytes": largest,
                               "enabled": {fs: v[0] for fs, v in verdicts.items()}})  # fmt: skip
    capped = f" (cgroup cap: {fmt(room, 'GiB')})" if cgroup is not None and room < available else ""
    lines = [f"Checkpoint {fmt(checkpoint, 'GB', 1)} against {fmt(share, '%', 0)} of {fmt(available, 'GiB')} available{capped}: "
             + ("within" if fits else "above") + " the size rule"]  # fmt: skip
    lines += [f"  on {fs}: {why}" for fs, (_, why) in verdicts.items()]
    lines.append(f"Largest checkpoint within the size rule: {fmt(largest, 'GB', 1, down=True)} (rounded down)")
    lines.append("Auto-prefetch needs both a network filesystem and the size rule (vLLM v0.20.0 and later); "
                 "--safetensors-load-strategy=prefetch forces it")  # fmt: skip
    return "\n".join(lines)
