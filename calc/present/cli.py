"""python -m calc: the calculators on the command line, over the same catalog and functions."""

from __future__ import annotations

import argparse
import functools
import os
import re
import sys
from typing import TYPE_CHECKING, Any, NoReturn

from calc.catalog.loader import load_dir
from calc.catalog.model import Catalog
from calc.catalog.spec import CatalogError
from calc.present import inputs
from calc.present.commands.common import CATALOG_DIR
from calc.units import InputError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


PROG = "vllm-settings" if os.path.basename(sys.argv[0]) == "vllm-settings" else "python -m calc"


class UsageError(Exception):
    pass


def given(text: str) -> str:
    """Every flag's value: an empty one is a slip, never a request for the default."""
    if not text.strip():
        raise argparse.ArgumentTypeError("found nothing, expected a value (an empty value is not the default: leave the flag out)")
    return text


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one clear line, exit status 2
        raise UsageError(f"{self.prog}: {message}")

    def add_argument(self, *names: Any, **kwargs: Any) -> argparse.Action:
        if kwargs.get("action") in (None, "store", "append") and "type" not in kwargs:
            kwargs["type"] = given
        return super().add_argument(*names, **kwargs)

    def _get_formatter(self) -> argparse.HelpFormatter:
        """argparse's, at the width it would take from shutil.get_terminal_size, read the same way
        without importing shutil (and the compression modules it imports) for every flag declared."""
        try:
            columns = int(os.environ["COLUMNS"])
        except (KeyError, ValueError):
            columns = 0
        if columns <= 0:
            try:
                columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
            except (AttributeError, ValueError, OSError):
                columns = 0
        factory: Callable[..., argparse.HelpFormatter] = self.formatter_class
        return factory(prog=self.prog, width=(columns or 80) - 2)


# Each command: its help, its module in calc/present/commands/ (whose cmd_<command> runs it, imported
# when it runs: a command starts without the others' modules), and whether it prints JSON on --json.
# Its flags are the inputs calc/present/inputs.py lists for it (COMMAND_FLAGS), declared from that table.
COMMANDS: dict[str, tuple[str, str, bool]] = {
    "gate": ("the start gate: needs vs MemAvailable, the largest pin, the flags", "gate", True),
    "kv": ("the KV pool both ways: pin to tokens, tokens to pin", "kv", True),
    "fit": ("per-request KV cost (per token x context + fixed) from one pool read at two or more max_model_len", "fit", True),
    "fraction": ("vLLM's own start check: ceil(total x fraction) <= free", "fraction", True),
    "guard": ("the memory guard replayed over a MemAvailable trace", "guard", True),
    "watch": (
        "poll MemAvailable, MemFree and the page cache for a bounded time: when the guard would kill, when memory is available but not free",
        "watch",
        True,
    ),
    "plan": ("several models on one box: resident budget and fractions planned together", "plan", True),
    "prefetch": ("vLLM's auto-prefetch: a network filesystem and a checkpoint within its share of available memory", "prefetch", True),
    "model": ("before the first start: weights and KV per rank from a config.json, by vLLM's layout (modeled)", "model", True),
    "ingest": ("read a vLLM or SGLang startup log: its figures, what they give, the catalog's figures for the model", "ingest", True),
    "schema": ("write (or --check) the catalog's JSON Schema files", "catalog", False),
    "check": ("validate the catalog", "catalog", True),
}


def runner_of(name: str) -> Callable[[Any, argparse.Namespace], object]:
    """The function that runs a command, from its module, imported now (by __import__, the path an
    import statement takes, so `-X importtime` lists it as it lists the rest)."""
    module = f"calc.present.commands.{COMMANDS[name][1]}"
    __import__(module)
    run: Callable[[Any, argparse.Namespace], object] = getattr(sys.modules[module], f"cmd_{name}")
    return run


class _Typed(argparse.Action):
    """Stores a flag's value under its input's key and records the spelling typed, so a message
    names the flag as the user wrote it; one setting given under two spellings is refused."""

    def __call__(self, parser: argparse.ArgumentParser, ns: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        typed: dict[str, str] = ns.__dict__.setdefault("typed", {})
        before = typed.get(self.dest)
        if option_string and before and before != option_string:
            raise InputError(f"{option_string}: found beside {before}, expected one of them (they are the same setting)")
        if option_string:
            typed[self.dest] = option_string
        if self.const is not None:  # a switch
            setattr(ns, self.dest, True)
        elif self.default == []:  # repeated: each value kept
            setattr(ns, self.dest, [*(getattr(ns, self.dest) or []), values])
        else:
            setattr(ns, self.dest, values)


def declare(p: Parser, command: str) -> None:
    """A command's flags, each from its input's entry in calc/present/inputs.py: the flag as vLLM spells
    it, listed with its help; each former spelling read too, unlisted."""
    groups: dict[str, argparse._MutuallyExclusiveGroup] = {}
    for u in inputs.COMMAND_FLAGS[command]:
        i = u.input
        flag, aliases = inputs.flag_names(u)
        if not flag.startswith("-"):
            p.add_argument(flag, help=inputs.cli_help(u))
            continue
        if u.group and u.group not in groups:
            groups[u.group] = p.add_mutually_exclusive_group()
        target: Any = groups[u.group] if u.group else p
        kwargs: dict[str, Any] = {"dest": i.key, "action": _Typed}
        if i.kind == "switch":
            kwargs.update(nargs=0, const=True, default=False)
        else:
            kwargs.update(type=given, default=[] if u.repeat else u.default, metavar=flag.lstrip("-").upper().replace("-", "_"))
            if u.required:
                kwargs["required"] = True
        target.add_argument(flag, help=inputs.cli_help(u), **kwargs)
        for alias in aliases:
            target.add_argument(alias, **{**kwargs, "required": False} if "required" in kwargs else kwargs, help=argparse.SUPPRESS)
    if command == "schema":
        p.set_defaults(json=False)


def _as_typed(message: str, args: argparse.Namespace | None) -> str:
    """A message that opens with another spelling of a flag the user typed names it as typed."""
    if args is None:
        return message
    for key, typed in dict(getattr(args, "typed", {})).items():
        i = inputs.INPUTS[key]
        spellings = {i.flag or "", *i.aliases, *(a for u in inputs.COMMAND_FLAGS[args.command] if u.key == key for a in (u.aliases or ()))}
        for spelling in sorted(spellings - {"", typed}, key=len, reverse=True):
            if message.startswith(spelling + ":") or message.startswith(spelling + " "):
                return str(typed) + message[len(spelling) :]
    return message


def command_of(argv: Sequence[str]) -> str | None:
    """The command a command line names: its first word that is one and is not the value of
    --catalog (or of --cat, --c...: argparse takes a flag's unique prefix)."""
    for i, word in enumerate(argv):
        before = argv[i - 1] if i else ""
        if word in COMMANDS and not (len(before) > 2 and "--catalog".startswith(before)):
            return word
    return None


def _value_flags(command: str | None) -> frozenset[str]:
    """The spellings of every flag that takes a value, of `command` (of every command when None)."""
    names: set[str] = set()
    for name, uses in inputs.COMMAND_FLAGS.items():
        if command in (None, name):
            for u in uses:
                if u.input.kind != "switch" and u.input.flag and u.input.flag.startswith("-"):
                    flag, aliases = inputs.flag_names(u)
                    names.update((flag, *aliases))
    return frozenset(names | {"--catalog"})


def dashed_values(argv: Sequence[str], command: str | None) -> list[str]:
    """A value that starts with one '-' (`--total-memory -80GiB`, `--cpu-offload-gb -3`) joined to
    its flag (`--total-memory=-80GiB`), so it reaches the flag's own reading and its message rather
    than argparse's "expected one argument"; '-' alone (standard input) and a following flag are
    left as they are."""
    takes = _value_flags(command)
    out: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return out + list(argv[i:])
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if word in takes and following.startswith("-") and not following.startswith("--") and following != "-":
            out.append(f"{word}={following}")
            i += 2
            continue
        out.append(word)
        i += 1
    return out


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """The command line read with its command's flags alone; should that guess miss, read again
    with every command's, so the answer is the full parser's."""
    guess = command_of(argv)
    if guess == "model":  # a pasted `vllm serve` line as vLLM reads it (imported here: the other commands start without it)
        from calc.present import vllmserve

        at = list(argv).index("model") + 1
        argv = [*argv[:at], *vllmserve.normalize(list(argv[at:]))]
    argv = dashed_values(argv, guess)
    if guess is not None:
        try:
            args = build_parser(guess).parse_args(argv)
        except UsageError:
            args = None
        if args is not None and args.command == guess:
            return args
    return build_parser().parse_args(argv)


@functools.cache  # built once a process a command: the site build runs the command line for every example
def build_parser(command: str | None = None) -> Parser:
    """The command line's parser, holding `command` alone with its flags (every command when None):
    a run needs its own, and declaring all of them is most of the parser's cost."""
    parser = Parser(prog=PROG, description="Memory calculators for vLLM starts, from the catalog.")
    parser.add_argument("--catalog", default=CATALOG_DIR, help=inputs.INPUTS["catalog"].help)
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, (helptext, _, machine) in COMMANDS.items():
        if command not in (None, name):
            continue  # a run's parser holds its own command alone; any other reading falls back to the whole parser
        p = sub.add_parser(name, help=helptext, description=helptext)
        if machine:
            p.add_argument("--json", action="store_true", help=inputs.INPUTS["json"].help)
        declare(p, name)
        if name == "model":  # the rest of a `vllm serve` line pasted whole (imported here: the other commands start without it)
            from calc.present import vllmserve

            vllmserve.declare(p)
    return parser


def one_line(message: str) -> str:
    """A message as one line: control characters and line breaks typed into a value are escaped."""
    return re.sub(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", lambda m: repr(m.group())[1:-1], message)


def versions_read(args: argparse.Namespace) -> argparse.Namespace:
    """A release flag read as soon as the line is (calc/engine/release.py): every rule after it depends
    on the release, so a malformed one, or one older than the oldest read, stops the run first."""
    for u in inputs.COMMAND_FLAGS.get(args.command, ()):
        typed = getattr(args, u.input.key, None)
        if u.input.kind == "version" and typed is not None:
            flag = getattr(args, "typed", {}).get(u.input.key) or u.input.flag
            setattr(args, u.input.key, u.input.parse(typed, str(flag)))
    return args


def main(argv: list[str] | None = None, catalog: Catalog | None = None, sleep: Callable[[float], None] | None = None) -> int:
    """Run one command; `catalog`, when given, stands for the default catalog directory's contents
    (the site build passes the catalog it has already read); `sleep`, when given, is what `watch`
    waits between polls with (the build replays saved readings without waiting)."""
    args = None
    try:
        args = versions_read(parse(sys.argv[1:] if argv is None else argv))
        if sleep is not None:
            args.sleep = sleep
        run = runner_of(args.command)
        if args.command == "schema" or (args.command == "model" and args.gpu is None and args.total_memory is None):  # `model` reads it for a card
            catalog = None
        elif catalog is None or args.catalog != CATALOG_DIR:
            catalog = load_dir(args.catalog)
        out = run(catalog, args)
    except (UsageError, InputError, CatalogError) as error:
        print(f"calc: error: {one_line(_as_typed(str(error), args))}", file=sys.stderr)
        return 2
    if isinstance(out, dict):
        import json  # --json's answer only: the text's run starts without it

        out = json.dumps(out, indent=2)
    print(out)
    return 0
