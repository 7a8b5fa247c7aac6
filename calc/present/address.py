"""A calculator's inputs in the page's address, and back: a link that reopens the same result.

The address holds each field that differs from the page's default, under vLLM's key for its input
where vLLM has one (`?kv_cache_memory_bytes=20e9&drafter=on`), else under the field's own name;
a link written with the field's name (`?pin=20e9`, as the site wrote them before) opens the same. A pasted log or config is long and spans lines: it goes compressed
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
    """The pairs for the fields in `names` whose value differs from its default, in form order,
    each under its address key (address_keys); while the query would pass `limit` characters, the
    longest value is left out and its field named."""
    keys = address_keys(names)
    fields = [name for name in names if name in values and values[name] != defaults.get(name, "")]
    pairs = [(keys.get(name, name), pack(values[name])) for name in fields]
    left_out: list[str] = []
    while pairs and query_length(pairs) > limit:
        longest = max(range(len(pairs)), key=lambda n: len(pairs[n][1]))
        left_out.append(fields.pop(longest))
        pairs.pop(longest)
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


def address_keys(names: Sequence[str]) -> dict[str, str]:
    """The key each field in `names` is written under, where it is not the field's own name:
    vLLM's key for its input (calc/present/inputs.py), when that is no other field's name and
    no other field of the form has the same vLLM key (prefix caching on and off share one)."""
    from calc.present.inputs import INPUTS

    known = set(names)
    inputs = _field_inputs()
    wanted = []
    for name in names:
        vllm = INPUTS[inputs[name]].vllm if name in inputs else None
        if vllm and vllm not in known:
            wanted.append((name, vllm))
    claimed = [vllm for _, vllm in wanted]
    return {name: vllm for name, vllm in wanted if claimed.count(vllm) == 1}


_FIELD_INPUTS: dict[str, str] = {}


def _field_inputs() -> dict[str, str]:
    """The input each form field's name stands for: its own key, or the key of the use that gives
    it another name (`utilization` is gpu_memory_utilization), where every form agrees."""
    if not _FIELD_INPUTS:
        from calc.present.inputs import FORMS, INPUTS

        found: dict[str, set[str]] = {key: {key} for key in INPUTS}
        for uses in FORMS.values():
            for u in uses:
                if not u.numbered and u.name:
                    found.setdefault(u.name, set()).add(u.key)
        _FIELD_INPUTS.update({name: next(iter(keys)) for name, keys in found.items() if len(keys) == 1})
    return _FIELD_INPUTS


def vllm_keys(names: Sequence[str]) -> dict[str, str]:
    """The field each address key of `names` stands for (address_keys, turned round): the address is
    written with vLLM's key; the field's own name, which older links have, is read as well."""
    return {vllm: key for key, vllm in address_keys(names).items()}


def decode(pairs: Sequence[tuple[str, str]], names: Sequence[str], choices: Mapping[str, Sequence[str]] | None = None) -> Restored:
    """The values an address gives the fields in `names`. An unknown name, a repeated one, a
    packed value that does not unpack or a value that is not one of its field's `choices` (a
    select's options) is dropped and said, never guessed. A field is found under its address key,
    vLLM's key for its input (`kv_cache_memory_bytes` for `pin`), and under its own name, which
    links from older versions of the site have."""
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
