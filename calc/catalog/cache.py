"""The catalog's parse cache: what the YAML parser made of the files, kept in the directory's
__pycache__ (as Python keeps compiled modules) with the files' bytes, the reader's source (the
loader's and this module's) and the installed PyYAML's time. Any change to a file or to the
reader parses again. The cache is marshal data (plain values only, as the parser gives), never a
pickle: loading a cache found in a directory runs no code from it, and what it holds is
validated as the YAML would be.
"""

from __future__ import annotations

import marshal
import os
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from os import PathLike

# Paths are os.path's strings, not pathlib's: the command line starts without pathlib's import.


def _path(directory: str | PathLike[str]) -> str:
    return os.path.join(directory, "__pycache__", "catalog.marshal")


def _bytes(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def _reader(loader: str) -> tuple[bytes, int | None]:
    """What the parse depends on beyond the files: the reader's source and PyYAML's install time."""
    spec = find_spec("yaml")
    return _bytes(loader) + _bytes(__file__), os.stat(spec.origin).st_mtime_ns if spec and spec.origin else None


def kept(directory: str | PathLike[str], texts: dict[str, bytes], loader: str) -> dict[str, object] | None:
    """The raw contents kept for these exact file bytes and this reader, or None (none yet, stale,
    unreadable or not one this reader wrote)."""
    cache = _path(directory)
    try:
        if os.stat(cache).st_size > 8 * sum(len(t) for t in texts.values()) + 2**20:  # not one this reader wrote
            return None
        found = marshal.loads(_bytes(cache))
        if found["reader"] != _reader(loader) or found["texts"] != texts or not _plain(found["raw"]):
            return None
        raw: dict[str, object] = found["raw"]
        return raw
    except Exception:  # none yet or unreadable: parse
        return None


def keep(directory: str | PathLike[str], texts: dict[str, bytes], loader: str, raw: dict[str, object]) -> None:
    """Keep the parse for the next read; a read-only catalog is parsed every time."""
    cache = _path(directory)
    try:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        partial = cache.removesuffix(".marshal") + f".{os.getpid()}.partial"  # this process's own: builds may run side by side
        with open(partial, "wb") as file:
            file.write(marshal.dumps({"reader": _reader(loader), "texts": texts, "raw": raw}))
        os.replace(partial, cache)
    except OSError:
        pass


def _plain(value: Any) -> bool:
    """Whether a value is plain data as the YAML parser gives it: text, numbers, true/false,
    null, lists and mappings with text keys."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float))
