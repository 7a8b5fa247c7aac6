"""Add a model class (a config.json's `architectures` name) in one go: its registration in the config
model (calc/engine/hfconfig/registry.py, read as a class already there), the real config.json it is tested
on (models/configs/<name>/, its source in models/configs/SOURCES.yaml) and its case in
tests/data/architectures.yaml (the KV bytes a token one rank holds, worked out by hand), which
tests/test_architecture_cases.py checks, one case a config.

    .venv/bin/python scripts/new_architecture.py GraniteForCausalLM --like LlamaForCausalLM \\
        --config ~/granite/config.json --name granite-3.3-8b-instruct \\
        --model ibm-granite/granite-3.3-8b-instruct --url https://github.com/.../config.json \\
        --bytes-per-token 163840   # 2 (K, V) x 8 KV heads x 128 head_dim x 2 B x 40 layers

A class whose layers none of the readers there describe needs its own reader first, in its family's
module of calc/engine/hfconfig/ (see the README); --like names the reader to use.
Then: .venv/bin/python -m pytest tests/test_architecture_cases.py -q
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

ROOT = Path(__file__).resolve().parent.parent


def fail(message: str) -> NoReturn:
    print(f"new_architecture: {message}", file=sys.stderr)
    raise SystemExit(2)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("architecture", help="the class as config.json names it, such as GraniteForCausalLM")
    p.add_argument("--like", required=True, help="a registered class whose reader reads this one")
    p.add_argument("--config", required=True, type=Path, help="a real config.json of the class")
    p.add_argument("--name", required=True, help="its folder under models/configs/, such as granite-3.3-8b-instruct")
    p.add_argument("--model", required=True, help="the Hugging Face model it is the config of")
    p.add_argument("--url", required=True, help="the public page the config was copied from, verbatim")
    p.add_argument("--bytes-per-token", required=True, type=int, help="the KV bytes a token one rank holds, worked out by hand")
    p.add_argument("--tp", type=int, default=1, help="tensor-parallel size of that figure (1)")
    p.add_argument("--kv-cache-dtype", default="auto", help="KV cache dtype of that figure (auto)")
    p.add_argument("--root", type=Path, default=ROOT, help="the checkout to write into")
    return p.parse_args(argv)


def register(hfconfig: Path, architecture: str, like: str) -> None:
    """A line in _ARCHITECTURES, reading the class as `like` does."""
    source = hfconfig.read_text(encoding="utf-8")
    start = source.find("_ARCHITECTURES = {\n")
    end = source.find("\n}\n", start)
    if start < 0 or end < 0:
        fail(f"{hfconfig}: found no '_ARCHITECTURES = {{' ... '}}' block, expected the config model's registry")
    block = source[start:end]
    if f'\n    "{architecture}":' in block:
        fail(f"{architecture}: registered already in calc/engine/hfconfig/registry.py; expected a new class")
    found = re.search(rf'\n    "{re.escape(like)}": (.+?),(?:  #.*)?(?=\n)', block)
    if not found:
        names = re.findall(r'\n    "(\w+)":', block)
        fail(f"--like {like!r}: not registered, expected one of {', '.join(sorted(names))}")
    line = f'\n    "{architecture}": {found[1]},  # read as {like}'
    hfconfig.write_text(source[:end] + line + source[end:], encoding="utf-8")


def add_source(sources: Path, name: str, model: str, url: str) -> None:
    text = sources.read_text(encoding="utf-8")
    if f"\n  {name}:" in text:
        fail(f"models/configs/SOURCES.yaml: {name} is there already; expected a new folder name")
    entry = f"  {name}:\n    model: {json.dumps(model)}\n    url: {json.dumps(url)}\n"
    sources.write_text(text.rstrip("\n") + "\n" + entry, encoding="utf-8")


def add_case(cases: Path, case: dict[str, object]) -> None:
    text = cases.read_text(encoding="utf-8") if cases.exists() else "# One case a config: tests/test_architecture_cases.py.\ncases:\n"
    lines = [f"- {key}: {json.dumps(value)}" if i == 0 else f"  {key}: {json.dumps(value)}" for i, (key, value) in enumerate(case.items())]
    cases.write_text(text.rstrip("\n") + "\n" + "\n".join(lines) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    root = args.root.resolve()
    hfconfig = root / "calc" / "engine" / "hfconfig" / "registry.py"
    configs = root / "models" / "configs"
    cases = root / "tests" / "data" / "architectures.yaml"
    if not hfconfig.is_file() or not (configs / "SOURCES.yaml").is_file():
        fail(f"--root {root}: found no calc/engine/hfconfig/registry.py or models/configs/SOURCES.yaml, expected a checkout of this project")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", args.architecture):
        fail(f"{args.architecture!r}: expected a Python class name, as config.json's architectures gives it")
    if not re.fullmatch(r"[a-z0-9][a-z0-9.\-]*", args.name) or (configs / args.name).exists():
        fail(f"--name {args.name!r}: expected a new folder name of small letters, digits, dots and hyphens")
    if args.bytes_per_token <= 0 or args.tp <= 0:
        fail("--bytes-per-token and --tp: expected whole numbers above zero")
    try:
        raw = args.config.read_bytes()
        config = json.loads(raw)
    except (OSError, ValueError) as error:
        fail(f"--config {args.config}: {error}; expected a config.json")
    archs = config.get("architectures") if isinstance(config, dict) else None
    if not isinstance(archs, list) or not archs or archs[0] != args.architecture:
        fail(f"--config {args.config}: its architectures is {archs!r}, expected [{args.architecture!r}, ...]")
    kept = {p: p.read_bytes() for p in (hfconfig, configs / "SOURCES.yaml", cases) if p.exists()}
    register(hfconfig, args.architecture, args.like)
    (configs / args.name).mkdir()
    (configs / args.name / "config.json").write_bytes(raw)  # verbatim, as copied
    add_source(configs / "SOURCES.yaml", args.name, args.model, args.url)
    add_case(cases, {"name": args.name, "architecture": args.architecture, "tp": args.tp, "kv_cache_dtype": args.kv_cache_dtype,
                     "bytes_per_token": args.bytes_per_token, "source": args.url})  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_architecture_cases.py", "tests/test_configmodel.py",
         "-k", f"{args.name} or every_shipped_config"],
        cwd=root, capture_output=True, text=True,
    )  # fmt: skip
    print(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr.strip())
    if done.returncode != 0:  # nothing is kept of a case that fails
        print(done.stdout, file=sys.stderr)
        for path, data in kept.items():
            path.write_bytes(data)
        if cases not in kept:
            cases.unlink()
        shutil.rmtree(configs / args.name)
        fail(f"the new case fails (see above), so nothing was written: check --like and the bytes a token of {args.architecture}")
    print(f"added: {args.architecture} in calc/engine/hfconfig/registry.py, models/configs/{args.name}/config.json, its source, its case")


if __name__ == "__main__":
    main()
