"""A calculator's inputs in the page's address, and back: a link that reopens the same result.

The address holds each field that differs from the page's default, under the field's own name
(`?pin=20e9&drafter=on`). A pasted log or config is long and spans lines: it goes compressed
(zlib, then base64url), marked by a leading `~`. An address past ADDRESS_LIMIT characters is not
written: the field that made it too long is left out and named, so the page can say so and offer
the text to copy instead. Reading an address keeps the names the calculator knows and reports the
others, so a link from an older version of the site opens with what it can and says what it
dropped. The browser glue (docs/calculator/main.py) does the percent-encoding with the browser's
URLSearchParams; this module works on (name, value) pairs. Standard library only.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

# What one address may carry, in characters of its query: browsers take far more, but links are
# pasted into chats and issue trackers, and servers commonly refuse request lines past 8 KiB.
ADDRESS_LIMIT = 6000
PACKED = "~"  # a value that starts with this is compressed text
PACK_ABOVE = 120  # characters: shorter values, and values on one line, go as they are
UNPACKED_LIMIT = 4 * 2**20  # the most a packed value may expand to (a field's own limit is smaller)


@dataclass(frozen=True)
class Address:
    """The pairs to put in the address, and the fields left out because they made it too long."""

    pairs: tuple[tuple[str, str], ...]
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True)
class Restored:
    """What an address gives a calculator: values by field, and what it could not use, said."""

    values: dict[str, str]
    dropped: tuple[str, ...] = ()


def pack(text: str) -> str:
    """Long or multi-line text as the address carries it; short one-line text as it is."""
    if len(text) <= PACK_ABOVE and "\n" not in text and not text.startswith(PACKED):
        return text
    return PACKED + base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def unpack(value: str) -> str:
    """The text a packed value stands for; ValueError with a plain reason when it is not one."""
    if not value.startswith(PACKED):
        return value
    body = value[len(PACKED) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflater = zlib.decompressobj()
        data = inflater.decompress(raw, UNPACKED_LIMIT)
        if inflater.unconsumed_tail:
            raise ValueError(f"it expands past {UNPACKED_LIMIT:,} bytes")
        if not inflater.eof:
            raise ValueError("it is cut short")
        return data.decode("utf-8")
    except (binascii.Error, zlib.error, UnicodeDecodeError) as error:
        raise ValueError(f"it is not compressed text ({type(error).__name__})") from None


def encode(values: Mapping[str, str], defaults: Mapping[str, str], names: Sequence[str], limit: int = ADDRESS_LIMIT) -> Address:
    """The pairs for the fields in `names` whose value differs from its default, in form order;
    while the query would pass `limit` characters, the longest value is left out and named."""
    pairs = [(name, pack(values[name])) for name in names if name in values and values[name] != defaults.get(name, "")]
    left_out: list[str] = []
    while pairs and query_length(pairs) > limit:
        longest = max(pairs, key=lambda pair: len(pair[1]))
        pairs.remove(longest)
        left_out.append(longest[0])
    return Address(tuple(pairs), tuple(left_out))


def query_length(pairs: Sequence[tuple[str, str]]) -> int:
    """The query's length as URLSearchParams writes it: `?a=b&c=d`; a packed value and a field name
    take no escapes, other text is counted at three characters for any byte it may escape."""
    return sum(1 + len(name) + 1 + (len(value) if value.startswith(PACKED) else _escaped(value)) for name, value in pairs)


def _escaped(text: str) -> int:
    return sum(1 if ch.isascii() and (ch.isalnum() or ch in "*-._") else 3 * len(ch.encode("utf-8")) for ch in text)


def note_html(left_out: Sequence[tuple[str, str, str]], dropped: Sequence[str]) -> str:
    """What the page says under the form about its link: each field left out of the address, as
    (element id, label, value), with a button that copies its text; and what a link gave that this
    calculator could not use."""
    from calc.present.calculators.form import esc
    from calc.units import fmt

    parts = [
        f"The address leaves out {esc(label)}: compressed, it takes {fmt(len(pack(value)), 'count')} characters, and a link here keeps "
        f"at most {fmt(ADDRESS_LIMIT, 'count')}. Send the text with the link: "
        f'<button type="button" class="md-button calc-copy" data-clipboard-target="#{esc(dom)}">Copy {esc(label)}</button>'
        for dom, label, value in left_out
    ]
    if dropped:
        parts.append("This link's inputs that the calculator does not know were dropped: " + esc("; ".join(dropped)) + ".")
    return "".join(f"<span>{part}</span>" for part in parts)


def vllm_keys(names: Sequence[str]) -> dict[str, str]:
    """vLLM's key of each field in `names` whose own name differs (calc/present/inputs.py): the address
    is written with the field's name, which published links have; vLLM's is read as well."""
    from calc.present.inputs import TABLE

    known = set(names)
    return {i.vllm: i.key for i in TABLE if i.vllm and i.key in known and i.vllm not in known and i.vllm != i.key}


def decode(pairs: Sequence[tuple[str, str]], names: Sequence[str], choices: Mapping[str, Sequence[str]] | None = None) -> Restored:
    """The values an address gives the fields in `names`. An unknown name, a repeated one, a
    packed value that does not unpack or a value that is not one of its field's `choices` (a
    select's options) is dropped and said, never guessed. A field is also found under vLLM's key
    for its input (`kv_cache_memory_bytes` for `pin`), so a link written with vLLM's names opens."""
    choices = choices or {}
    known = set(names)
    spelled = vllm_keys(names)
    values: dict[str, str] = {}
    dropped: list[str] = []
    for given, value in pairs:
        name = spelled.get(given, given)
        if name not in known:
            dropped.append(f"{given!r} (not a field of this calculator)")
        elif name in values:
            dropped.append(f"{name!r} given twice (the first kept)")
        else:
            try:
                text = unpack(value)
            except ValueError as error:
                dropped.append(f"{name!r} ({error})")
                continue
            if name in choices and text not in choices[name]:
                dropped.append(f"{name!r} ({text[:40]!r} is not one of its choices)")
            else:
                values[name] = text
    return Restored(values, tuple(dropped))
