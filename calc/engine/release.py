"""A vLLM version as a person or a log writes it, read once: 0.10.2, v0.11.0, 0.11, 0.10.1.1,
0.10.2rc1, 0.6.3.post1, 0.9.2.dev123+gabc, 0.10.2+cu128. Every rule that depends on the release
reads (major, minor, patch) from here; the inputs refuse a release older than the oldest whose
rules were read."""

from __future__ import annotations

import re

from calc.units import InputError

OLDEST = (0, 6, 0)  # the oldest release whose rules were read (the earliest public start of models/pool_starts.yaml runs v0.6.4)
EXPECTED = "expected a vLLM version such as 0.10.1 or 0.26.0"
# major.minor[.patch[.fourth]] then pre-release, post or dev marks, then a local build label; each number at most 4 digits
_VERSION = re.compile(r"v?(\d{1,4})\.(\d{1,4})(?:\.(\d{1,4})(?:\.\d{1,4})?)?(?:\.?(?:rc|a|b|post|dev)\d{0,9})*(?:\+[0-9A-Za-z.]{1,64})?", re.ASCII)


def parse_release(text: str, what: str = "--engine-version") -> tuple[int, int, int]:
    """(major, minor, patch) of a version; a version without its patch level is taken at .0."""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        raise InputError(f"{what}: found {text!r}, {EXPECTED}")
    return int(match[1]), int(match[2]), int(match[3] or 0)


def checked(text: str, what: str = "--engine-version") -> str:
    """A version typed as an input: well formed, and no older than the oldest release read."""
    if parse_release(text, what) < OLDEST:
        oldest = ".".join(map(str, OLDEST))
        raise InputError(f"{what}: found {text.strip()!r}, expected vLLM {oldest} or later, the oldest release whose rules are read here")
    return text.strip()
