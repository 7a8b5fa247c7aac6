"""Loading the catalog: the hardened YAML reader (bounded, UTF-8, no aliases, no duplicate keys,
no hidden characters), the catalog directory read through the parse cache, and the JSON the
browser receives.

Loading needs PyYAML, imported inside the functions that parse only, so the browser (which
receives the catalog as JSON) and every other module of calc/ stay standard library.
"""

from __future__ import annotations

import errno
import os
from typing import TYPE_CHECKING, Any

from calc import files
from calc.catalog import cache
from calc.catalog.model import Catalog, build
from calc.catalog.spec import _MISSING, FILES, CatalogError, Found

if TYPE_CHECKING:
    from os import PathLike

# Bounds on a catalog file, checked before anything is built from it: its size, how deep its
# mappings and lists nest, and how many digits a whole number has. The shipped files are a few
# kB, nest eight deep and hold no number over 16 digits.
MAX_FILE_BYTES = 4 * 2**20
MAX_DEPTH = 32
MAX_INT_DIGITS = 20
_PLAIN_TAGS = {f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map")}


def _yaml_loader() -> Any:
    """PyYAML's safe loader (libyaml when present) with dates left as text, for the spec to check."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class CatalogLoader(base):  # type: ignore[misc, valid-type]
        yaml_implicit_resolvers = {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"] for first, resolvers in base.yaml_implicit_resolvers.items()
        }

    return CatalogLoader


def _events_check(text: str, file: str, loader: Any) -> None:
    """Refuse aliases and deep nesting from the event stream, before any node is built: an
    alias bomb never expands, and nesting never reaches the recursive composer."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.AliasEvent):
            raise CatalogError(
                file,
                _at(event.start_mark),
                f"*{event.anchor}",
                "the value written out (the catalog uses no YAML anchors or aliases)",
            )
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise CatalogError(file, _at(event.start_mark), Found(f"nesting {depth} deep"), f"at most {MAX_DEPTH} levels of nesting")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _at(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(parse)"


def _nodes_check(node: Any, file: str, path: str = "") -> None:
    """Walk the composed nodes with their key paths: duplicate keys, tags beyond plain data and
    over-long whole numbers are errors here, named by key path, before PyYAML constructs values."""
    import yaml

    where = path or "(top)"
    if node.tag not in _PLAIN_TAGS:
        raise CatalogError(file, where, node.tag, "plain YAML data: text, numbers, true/false, lists and mappings")
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise CatalogError(file, where, Found("a mapping or list as a key"), "text keys")
            here = f"{path}.{key.value}".lstrip(".")
            if key.tag == "tag:yaml.org,2002:merge" or key.value == "<<":
                raise CatalogError(file, here, Found("a YAML merge key '<<'"), "each key written out in its mapping")
            if key.value in seen:
                raise CatalogError(
                    file, here, Found(f"the key {key.value!r} twice (lines {seen[key.value]} and {key.start_mark.line + 1})"), "each key once in a mapping"
                )
            seen[key.value] = key.start_mark.line + 1
            _nodes_check(value, file, here)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _nodes_check(item, file, f"{path}[{i}]")
    elif node.tag == "tag:yaml.org,2002:int" and len(node.value) > MAX_INT_DIGITS:
        raise CatalogError(file, where, node.value, f"a whole number of at most {MAX_INT_DIGITS} digits")


def parse_yaml(data: bytes, file: str) -> Any:
    """One catalog file's contents, read safely: bounded, UTF-8, no aliases, no duplicate keys."""
    import yaml

    if len(data) > MAX_FILE_BYTES:
        raise CatalogError(file, "(file)", Found(f"more than {MAX_FILE_BYTES:,} bytes"), f"a catalog file of at most {MAX_FILE_BYTES // 2**20} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise CatalogError(file, f"line {line}", Found(f"byte {data[error.start]:#04x}"), "UTF-8 text") from None
    loader = _yaml_loader()
    try:
        _events_check(text, file, loader)
        node = yaml.compose(text, Loader=loader)
        if node is None:
            return None
        _nodes_check(node, file)
        try:
            return loader(text).construct_document(node)
        except (ValueError, IndexError, TypeError, OverflowError) as error:  # an explicit tag on a value it cannot hold (!!int '')
            raise CatalogError(file, "(parse)", Found(f"a value PyYAML cannot construct ({type(error).__name__})"), "plain YAML data") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(parse)"
        problem = getattr(error, "problem", None) or str(error)
        raise CatalogError(file, where, problem, "valid YAML") from None


# What a missing file's open raises (and Path.exists takes for "no such file"): a name not there,
# a folder that is a file, a loop of links.
_NOT_THERE = (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)


def _read_texts(directory: str | PathLike[str]) -> dict[str, bytes]:
    texts = {}
    for name in FILES:
        try:  # a regular file, read to one byte past the limit (a link to /dev/zero was read whole)
            with files.open_regular(os.path.join(directory, f"{name}.yaml")) as file:
                texts[name] = file.read(MAX_FILE_BYTES + 1)  # parse_yaml refuses it when larger
        except (OSError, ValueError) as error:  # ValueError: a path no file can have (a NUL in it)
            from pathlib import Path  # the path as the message has always shown it: only now

            path = Path(directory) / f"{name}.yaml"
            if isinstance(error, ValueError) or error.errno in _NOT_THERE:
                raise CatalogError(f"{name}.yaml", "(file)", _MISSING, f"a file at {path}") from None
            raise CatalogError(f"{name}.yaml", "(file)", Found(f"a file it cannot read ({error.strerror})"), f"a regular file at {path}") from None
    return texts


def _parse_yaml(texts: dict[str, bytes]) -> dict[str, object]:
    """Every file parsed by parse_yaml: bounded, UTF-8, no aliases, no duplicate keys, on
    libyaml's loader where PyYAML was built with it."""
    return {name: parse_yaml(data, f"{name}.yaml") for name, data in texts.items()}


def read_yaml_dir(directory: str | PathLike[str]) -> dict[str, object]:
    """Raw contents of catalog/*.yaml, each read safely (see parse_yaml), through the parse cache
    (calc/catalog/cache.py): a read of an unchanged catalog skips the parser."""
    texts = _read_texts(directory)
    kept = cache.kept(directory, texts, __file__)
    if kept is not None:
        return kept
    raw = _parse_yaml(texts)
    cache.keep(directory, texts, __file__, raw)
    return raw


def load_dir(directory: str | PathLike[str]) -> Catalog:
    """The catalog of a directory of YAML files, validated (every time; the parse is kept)."""
    return build(read_yaml_dir(directory))


def load_json(text: str) -> Catalog:
    """The catalog as the build emitted it for the browser (raw file contents, as JSON)."""
    from calc import jsontext

    try:
        raw = jsontext.loads(text, pairs=_unique_keys)
    except CatalogError:
        raise
    except jsontext.JsonError as error:
        raise CatalogError("catalog.json", "(parse)", Found(error.found[:80]), "the catalog as JSON") from None
    if not isinstance(raw, dict):
        raise CatalogError("catalog.json", "(top)", raw, "a mapping of file name to contents")
    return build(raw)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object whose keys are each given once, as in the YAML it came from."""
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise CatalogError("catalog.json", key, Found(f"the key {key!r} twice"), "each key once in an object")
        out[key] = value
    return out


def raw_as_json(raw: dict[str, object]) -> str:
    """Raw file contents as JSON, dates as ISO text, so the browser needs no YAML parser."""
    import datetime
    import json

    return json.dumps(raw, default=lambda o: o.isoformat() if isinstance(o, datetime.date) else str(o), sort_keys=True)
