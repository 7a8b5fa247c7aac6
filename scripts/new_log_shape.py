"""Add a log line shape in one go: its entry in calc/logs/shapes.py, a fixture holding the real line
(tests/data/logshapes/<name>.log) and the figures it must give, worked out by hand
(tests/data/logshapes/<name>.json), which tests/test_logshape_cases.py checks, one case a fixture.

    .venv/bin/python scripts/new_log_shape.py blocks_override \\
        --trigger "num_gpu_blocks_override=" \\
        --regex 'Overriding num_gpu_blocks=INT with num_gpu_blocks_override=INT' \\
        --put blocks_override:1:count \\
        --line "(EngineCore pid=62) INFO 03-26 11:05:36 [kv_cache_utils.py:829] Overriding num_gpu_blocks=0 with num_gpu_blocks_override=512" \\
        --expect blocks_override=512 \\
        --source "v1/core/kv_cache_utils.py, 0.18 on" --url https://github.com/...

In --regex, NUM and INT stand for the reader's number and count groups (calc/logs/shapes.py). A
--put is FIELD:GROUP:UNIT (GROUP "-" for a flag or a constant; the units are shapes.UNITS). An
--expect is FIELD=VALUE as the reader keeps it (sizes in whole bytes), one a figure, repeated for
a figure the line gives twice. --fixture-only writes the fixture of a shape already there.
Then: .venv/bin/python -m pytest tests/test_logshape_cases.py -q
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent
ERAS = ("v0", "v1", "v?", "sglang")


def fail(message: str) -> NoReturn:
    print(f"new_log_shape: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("name", help="the shape's name (the reader's rule name), such as blocks_override")
    p.add_argument("--trigger", help="a substring every such line holds (the cheap first test)")
    p.add_argument("--regex", help="the pattern; NUM and INT stand for the reader's number and count groups")
    p.add_argument("--put", action="append", default=[], help="FIELD:GROUP:UNIT, once a figure")
    p.add_argument("--era", choices=ERAS, help="the era or engine the line proves")
    p.add_argument("--begins", help="how its message begins (a regular expression), if a fold never ends on it")
    p.add_argument("--source", default="", help="where the engine prints it, by release")
    p.add_argument("--line", required=True, help="a real log line of the shape, as printed")
    p.add_argument("--url", required=True, help="the public page the line was copied from")
    p.add_argument("--expect", action="append", default=[], help="FIELD=VALUE the line must give, worked out by hand")
    p.add_argument("--fixture-only", action="store_true", help="write the fixture only: the shape is already there")
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout to write into")
    return p.parse_args(argv)


def expected(pairs: list[str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for pair in pairs:
        field, sep, value = pair.partition("=")
        if not sep or not field or not value:
            fail(f"--expect {pair!r}: expected FIELD=VALUE")
        out.setdefault(field, []).append(value)
    if not out:
        fail("found no --expect, expected the figures the line gives (FIELD=VALUE), worked out by hand")
    return out


def entry(args: argparse.Namespace, units: tuple[str, ...], num: str, integer: str) -> str:
    """The Shape(...) source for the entry, checked against the line."""
    if not args.trigger or not args.regex or not args.put:
        fail("a new shape needs --trigger, --regex and at least one --put")
    if args.trigger not in args.line:
        fail(f"--trigger {args.trigger!r}: not in the line; expected a substring every such line holds")
    regex = args.regex.replace("NUM", num).replace("INT", integer)
    try:
        pattern = re.compile(regex)
    except re.error as error:
        fail(f"--regex {args.regex!r}: {error}; expected a regular expression")
    if not pattern.search(args.line):
        fail(f"--regex {args.regex!r}: does not match the line; expected a pattern the line matches")
    puts = []
    for put in args.put:
        parts = put.split(":")
        if len(parts) != 3 or not parts[0].isidentifier():
            fail(f"--put {put!r}: expected FIELD:GROUP:UNIT, such as tokens:0:count")
        field, group, unit = parts
        if unit.split("@")[0] + ("@" if "@" in unit else "") not in units:
            fail(f"--put {put!r}: found the unit {unit!r}, expected one of {', '.join(units)}")
        if group != "-" and not (group.isdigit() and int(group) < pattern.groups):
            fail(f"--put {put!r}: found the group {group!r}, expected '-' or a group of the pattern (0 to {pattern.groups - 1})")
        puts.append(f'Put("{field}", {"None" if group == "-" else int(group)}, "{unit}")')
    source = args.source or f"as printed in {args.url}"
    pieces = [repr(args.name), json.dumps(args.trigger, ensure_ascii=False), _regex_source(args.regex), f"({', '.join(puts)},)"]
    if args.era:
        pieces.append(f'era="{args.era}"')
    if args.begins:
        pieces.append(f"begins={_raw(args.begins)}")
    pieces.append(f"source={json.dumps(source, ensure_ascii=False)}")
    return "    Shape(" + ", ".join(pieces) + "),\n"


def _raw(text: str) -> str:
    if '"' in text or text.endswith("\\"):
        return repr(text)
    return f'r"{text}"'


def _regex_source(regex: str) -> str:
    """The pattern as shapes.py writes it: NUM and INT as the module's names."""
    parts = re.split(r"(NUM|INT)", regex)
    return " + ".join(p if p in ("NUM", "INT") else _raw(p) for p in parts if p)


def add_entry(shapes: Path, text: str, era: str | None) -> None:
    source = shapes.read_text(encoding="utf-8")
    marker = "    # SGLang\n" if era != "sglang" else ")  # fmt: skip\n"
    if source.count(marker) < 1:
        fail(f"{shapes}: found no {marker.strip()!r} line to add the entry before")
    at = source.index(marker) if era != "sglang" else source.index(marker, source.index("SHAPES: tuple[Shape, ...] = ("))
    shapes.write_text(source[:at] + text + source[at:], encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    root = args.root.resolve()
    shapes = root / "calc" / "logs" / "shapes.py"
    fixtures = root / "tests" / "data" / "logshapes"
    if not shapes.is_file():
        fail(f"--root {root}: found no calc/logs/shapes.py, expected a checkout of this project")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", args.name):
        fail(f"{args.name!r}: expected a name of small letters, digits and underscores")
    figures = expected(args.expect)
    if (fixtures / f"{args.name}.log").exists():
        fail(f"tests/data/logshapes/{args.name}.log: found one already, expected a new name")
    sys.path.insert(0, str(root))
    from calc.logs import shapes as module  # the checkout's, for its names and units

    known = {s.name for s in module.SHAPES}
    if args.fixture_only:
        if args.name not in known:
            fail(f"--fixture-only {args.name!r}: no such shape, expected one of {', '.join(sorted(known))}")
    before = shapes.read_text(encoding="utf-8")
    if not args.fixture_only:
        if args.name in known:
            fail(f"{args.name!r}: a shape of that name is there already; expected a new name (or --fixture-only)")
        add_entry(shapes, entry(args, module.UNITS, module.NUM, module.INT), args.era)
    fixtures.mkdir(parents=True, exist_ok=True)
    (fixtures / f"{args.name}.log").write_text(args.line.rstrip("\n") + "\n", encoding="utf-8")
    (fixtures / f"{args.name}.json").write_text(json.dumps({"shape": args.name, "url": args.url, "figures": figures}, indent=2) + "\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_logshape_cases.py", "-k", args.name],
        cwd=root,
        capture_output=True,
        text=True,
    )
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip())
    if done.returncode != 0:  # nothing is kept of a case that fails
        print(done.stdout, file=sys.stderr)
        shapes.write_text(before, encoding="utf-8")
        for suffix in (".log", ".json"):
            (fixtures / f"{args.name}{suffix}").unlink()
        fail(f"the new case fails (see above), so nothing was written: check the pattern, the puts and the --expect figures of {args.name!r}")
    print(f"added: {'' if args.fixture_only else 'calc/logs/shapes.py entry, '}tests/data/logshapes/{args.name}.log and .json")
    from calc.logs import conclude

    concluded = {**conclude.LENGTH, **conclude.SETTINGS, **conclude.MEMORY}.keys() | conclude.CONCLUDED_ELSEWHERE
    new = sorted({put.split(":")[0] for put in args.put} - concluded)
    if new and not args.fixture_only:
        print(
            f"next: conclude {', '.join(new)} in calc/logs/conclude/ (a Pick in LENGTH, SETTINGS or MEMORY, or a function of its own); "
            "tests/test_logshapes.py checks that every name a line puts is concluded"
        )


if __name__ == "__main__":
    main()
