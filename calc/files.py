"""The one reader of files named on the command line or holding the catalog: regular files only,
checked on the file as opened (a link to /dev/zero or a FIFO is refused, never read), and at most
a stated number of bytes (limit + 1 read, so a larger file is known without reading it whole).
Errors are OSErrors with a plain strerror, so each caller words them as it words a missing file.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from pathlib import Path

READ_LIMIT = 64 * 2**20  # a trace, a meminfo, a config.json or an index: far below this


def open_regular(path: str | Path) -> BinaryIO:
    """A regular file opened for reading; OSError for anything else (opened without blocking, so
    a FIFO with no writer does not hang the check)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise OSError(errno.EISDIR, "Is a directory")
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str | Path, limit: int = READ_LIMIT) -> bytes:
    """A regular file's bytes, refused (OSError) above `limit`."""
    with open_regular(path) as file:
        # read(n) sets n bytes aside before it reads: ask for the file's size, not the limit, and
        # for the rest only should the file have grown since
        size = os.fstat(file.fileno()).st_size
        data = file.read(min(size, limit) + 1)
        if len(data) <= limit and len(data) > size:
            data += file.read(limit + 1 - len(data))
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"more than {limit:,} bytes, expected at most {limit // 2**20} MiB")
    return data
