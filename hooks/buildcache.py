"""The build cache: what a build derives from inputs that seldom change (the npm runtime, calc's
sources, the pages' text), kept in node_modules/.cache by a digest of those inputs so the next
build reads it instead of deriving it again. Without a writable cache, a build derives it all."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def cache_dir(root: Path) -> Path:
    return root / "node_modules" / ".cache" / "vllm-site"


def files_digest(root: Path, paths: list[Path]) -> str:
    """A digest of files' names (relative to root) and contents."""
    digest = hashlib.sha256()
    for path in paths:
        data = path.read_bytes()
        digest.update(str(path.relative_to(root)).encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:24]


def keep_cached(cache: Path, data: bytes, pattern: str, entries: int = 4) -> None:
    """Write a cache entry beside the few most recent of its kind (a build and a test's changed
    copy of calc need not evict each other); without a writable cache, compute again."""
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        older = sorted(cache.parent.glob(pattern), key=lambda p: p.stat().st_mtime_ns)
        for old in older[: max(0, len(older) - entries + 1)]:
            old.unlink()
        partial = cache.with_suffix(f".{os.getpid()}.partial")  # this process's own: builds may run side by side
        partial.write_bytes(data)
        partial.replace(cache)
    except OSError:
        pass
