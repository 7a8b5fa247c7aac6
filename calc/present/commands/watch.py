"""`watch`: MemAvailable, MemFree and the page cache polled for a bounded time."""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

from calc.answers import report
from calc.catalog.model import Catalog
from calc.present.commands.common import CATALOG_DIR, _guard_settings, _secs, read_text
from calc.units import InputError


def cmd_watch(catalog: Catalog, args: argparse.Namespace) -> object:
    from calc.answers import watch

    policy = catalog.policy["guard"]
    paths = args.proc or ["/proc/meminfo"]
    interval = _secs(args, "interval") if args.interval else float(policy["poll_seconds"].number)
    duration = _secs(args, "duration") if args.duration else interval * (len(paths) - 1) if args.proc else 60.0
    floor, polls = _guard_settings(policy, args)
    count = watch.poll_count(duration, interval)

    def read(n: int) -> str:
        path = paths[min(n, len(paths) - 1)]
        try:
            return read_text(path)
        except OSError as error:
            raise InputError(f"--proc {path}: cannot read it ({error.strerror}); expected a meminfo file such as /proc/meminfo") from None

    out = _out_file(args.out, args.force, args.catalog) if args.out else None
    seen = []
    try:
        if out:
            out.write(f"# python -m calc watch: MemAvailable every {interval:g} s from {', '.join(paths)}; replay with python -m calc guard {args.out}\n")
        for poll in watch.watch(read, getattr(args, "sleep", time.sleep), count, interval, floor, polls, paths[0]):
            seen.append(poll)
            if out:
                out.write(watch.trace_line(poll) + "\n")
                out.flush()
            if not args.json:
                print(watch.poll_text(poll), flush=True)
    except OSError as error:
        raise InputError(f"--out {args.out}: cannot write it ({error.strerror})") from None
    finally:
        if out:
            out.close()
    if args.json:
        return report.to_json_object({"floor_bytes": floor, "polls_in_a_row": polls, "interval_seconds": interval, "polls": seen})
    return watch.summary(seen, floor, polls) + (f"\nTrace written to {args.out}; replay it with: python -m calc guard {args.out}" if args.out else "")


def _out_file(name: str, force: bool, catalog_dir: str) -> io.TextIOWrapper:
    """A file to write a trace to: new, or an existing regular file with --force; never in the
    catalog (a trace written over catalog/traces.yaml breaks every command after it)."""
    path = Path(name)
    target = path.resolve()
    for folder in {Path(CATALOG_DIR).resolve(), Path(catalog_dir).resolve()}:
        if target == folder or folder in target.parents:
            raise InputError(f"--out {name}: found a path in the catalog ({folder}), expected a file outside it; the catalog is edited by hand")
    if not target.parent.is_dir():
        raise InputError(f"--out {name}: found no folder {str(path.parent)!r}, expected a file in an existing folder")
    if path.is_dir():
        raise InputError(f"--out {name}: found a folder, expected a file name")
    if path.exists() and not path.is_file():
        raise InputError(f"--out {name}: found something that is not a regular file, expected a file name")
    if path.exists() and not force:
        raise InputError(f"--out {name}: found an existing file, expected a new file name; give --force to replace it")
    try:
        return path.open("w" if force else "x", encoding="utf-8")
    except FileExistsError:
        raise InputError(f"--out {name}: found an existing file, expected a new file name; give --force to replace it") from None
    except OSError as error:
        raise InputError(f"--out {name}: cannot write it ({error.strerror})") from None
