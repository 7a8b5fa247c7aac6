"""A static check that a regular expression cannot backtrack without bound: no unbounded repeat
inside another whose body is that repeat alone (give or take optional parts), no two unbounded
repeats that can trade characters with only optional parts between them, and no unbounded
repeat of alternatives that can begin with the same character. Read from Python's own parse
tree (re._parser, 3.11 on); possessive repeats and atomic groups never give back, so they pass."""

from __future__ import annotations

import re
import re._constants as sre  # the parser's opcodes: the exact account of a pattern's shape
import re._parser as parser
from functools import cache

# the characters the check tells apart: ASCII and Latin-1, and a few others regexes single out
ALPHABET = tuple(chr(i) for i in range(256)) + ("\u2028", "\u3000", "\u00e9", "\u0660", "\u4e00")
_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D", sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S", sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W",
}  # fmt: skip
_REPEATS = (sre.MAX_REPEAT, sre.MIN_REPEAT)


@cache
def _category(code: object) -> frozenset[str]:
    return frozenset(c for c in ALPHABET if re.fullmatch(_CATEGORIES[code], c))


def _one(op: object, av: object, flags: int) -> frozenset[str] | None:
    """The characters a one-character node matches, or None for a node of another kind."""
    if op is sre.LITERAL:
        return frozenset({chr(av)}) | ({chr(av).swapcase()} if flags & re.IGNORECASE else set())
    if op is sre.NOT_LITERAL:
        return frozenset(c for c in ALPHABET if c != chr(av))
    if op is sre.ANY:
        return frozenset(ALPHABET) if flags & re.DOTALL else frozenset(c for c in ALPHABET if c != "\n")
    if op is sre.CATEGORY:
        return _category(av)
    if op is sre.IN:
        found: set[str] = set()
        negate = False
        for item_op, item_av in av:
            if item_op is sre.NEGATE:
                negate = True
            elif item_op is sre.RANGE:
                found |= {c for c in ALPHABET if item_av[0] <= ord(c) <= item_av[1]}
            else:
                found |= _one(item_op, item_av, flags) or set()
        if flags & re.IGNORECASE:
            found |= {c.swapcase() for c in found}
        return frozenset(c for c in ALPHABET if c not in found) if negate else frozenset(found)
    return None


def _nodes(items: object) -> list[tuple[object, object]]:
    return list(items.data if isinstance(items, parser.SubPattern) else items)


def nullable(items: object) -> bool:
    """Whether a sequence of nodes can match the empty text."""
    for op, av in _nodes(items):
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            continue
        if op in (*_REPEATS, sre.POSSESSIVE_REPEAT):
            if av[0] > 0 and not nullable(av[2]):
                return False
        elif op is sre.SUBPATTERN:
            if not nullable(av[3]):
                return False
        elif op is sre.ATOMIC_GROUP:
            if not nullable(av):
                return False
        elif op is sre.BRANCH:
            if not any(nullable(alt) for alt in av[1]):
                return False
        elif op is sre.GROUPREF or op is sre.GROUPREF_EXISTS:
            continue
        else:
            return False
    return True


def chars(items: object, flags: int, first_only: bool = False) -> frozenset[str]:
    """The characters a sequence can match (or begin with), over ALPHABET."""
    out: set[str] = set()
    for op, av in _nodes(items):
        one = _one(op, av, flags)
        if one is not None:
            out |= one
        elif op in (*_REPEATS, sre.POSSESSIVE_REPEAT):
            out |= chars(av[2], flags, first_only)
        elif op is sre.SUBPATTERN:
            out |= chars(av[3], flags | av[1], first_only)
        elif op is sre.ATOMIC_GROUP:
            out |= chars(av, flags, first_only)
        elif op is sre.BRANCH:
            for alt in av[1]:
                out |= chars(alt, flags, first_only)
        elif op is sre.GROUPREF:
            out |= set(ALPHABET)
        if first_only and not nullable([(op, av)]):
            break
    return frozenset(out)


def _unbounded(op: object, av: object) -> bool:
    return op in _REPEATS and av[1] == sre.MAXREPEAT


def always_matches(items: object) -> bool:
    """Whether a sequence matches wherever it is tried (every part optional, no anchor or lookaround):
    what comes before it then never has to give anything back for it."""
    for op, av in _nodes(items):
        if op in (*_REPEATS, sre.POSSESSIVE_REPEAT):
            if av[0] > 0:
                return False
        elif op is sre.SUBPATTERN:
            if not always_matches(av[3]):
                return False
        elif op is sre.BRANCH:
            if not any(always_matches(alt) for alt in av[1]):
                return False
        else:
            return False
    return True


def problems(pattern: str | re.Pattern[str], whole: bool = False) -> list[str]:
    """Each shape of the pattern that can backtrack without bound, said; empty when none can.
    `whole`: the pattern is run with fullmatch, so the end of the text can fail it."""
    text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    flags = pattern.flags if isinstance(pattern, re.Pattern) else 0
    out: list[str] = []
    _walk(parser.parse(text, flags), flags, whole, out)
    return out


def _walk(items: object, flags: int, then_can_fail: bool, out: list[str]) -> None:
    """One sequence; `then_can_fail` when what follows it in the pattern (or the text's end) can fail."""
    nodes = _nodes(items)
    repeats: list[tuple[int, frozenset[str]]] = []  # the unbounded repeats since the last part that must match
    for i, (op, av) in enumerate(nodes):
        rest_can_fail = then_can_fail or not always_matches(nodes[i + 1 :])
        if op is sre.SUBPATTERN:
            _walk(av[3], flags | av[1], rest_can_fail, out)
        elif op is sre.BRANCH:
            for alt in av[1]:
                _walk(alt, flags, rest_can_fail, out)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            _walk(av[1], flags, False, out)
        elif op in _REPEATS:
            _walk(av[2], flags, True, out)
        # atomic groups and possessive repeats give nothing back: what is inside them cannot trade
        if _unbounded(op, av):
            body = av[2]
            _nested(body, flags, out)
            _alternatives(body, flags, out)
            _optional_start(body, flags, out)
            first = chars(body, flags, first_only=True)
            for j, theirs in repeats:
                if first & theirs and rest_can_fail:
                    shown = "".join(sorted(first & theirs))[:12]
                    out.append(f"unbounded repeats at {j} and {i} can trade characters ({shown!r}) with only optional parts between them")
            mine = (i, chars(body, flags))
            repeats = [*repeats, mine] if nullable([(op, av)]) else [mine]
        elif not nullable([(op, av)]):
            repeats = []


def _nested(body: object, flags: int, out: list[str]) -> None:
    """An unbounded repeat inside an unbounded repeat whose body is, but for optional parts, that repeat."""
    nodes = _nodes(body)
    for k, (op, av) in enumerate(nodes):
        if op is sre.SUBPATTERN:
            _nested(av[3], flags, out)
        if _unbounded(op, av) and nullable(nodes[:k] + nodes[k + 1 :]):
            out.append("an unbounded repeat inside an unbounded repeat of nothing else that must match")


def _optional_start(body: object, flags: int, out: list[str]) -> None:
    """A repeat whose body has an optional part that can take what the body begins with
    (`(?:a|aa)*`, which the parser writes `(?:a(?:|a))*`): a run splits into its turns many ways."""
    nodes = _nodes(body)
    while len(nodes) == 1 and nodes[0][0] is sre.SUBPATTERN:  # a group around the whole body
        nodes = _nodes(nodes[0][1][3])
    first = chars(nodes, flags, first_only=True)
    for op, av in nodes[1:]:
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT) or not nullable([(op, av)]):
            continue
        if _one(op, av, flags) is None and chars([(op, av)], flags, first_only=True) & first:
            out.append("an unbounded repeat whose body has an optional part that can take what the body begins with")


def _excludes(a: object, b: object, flags: int) -> bool:
    """Whether alternative `a` needs a character `b` can never match (so no text matches both)."""
    other = chars(b, flags)
    return any((one := _one(op, av, flags)) is not None and not one & other for op, av in _nodes(a))


def _alternatives(body: object, flags: int, out: list[str]) -> None:
    """Alternatives under an unbounded repeat that can match the same text: they begin alike (or
    both match nothing) and neither needs a character the other never matches."""
    for op, av in _nodes(body):
        if op is sre.SUBPATTERN:
            _alternatives(av[3], flags, out)
        elif op is sre.BRANCH:
            alts = av[1]
            firsts = [chars(alt, flags, first_only=True) | (frozenset({""}) if nullable(alt) else frozenset()) for alt in alts]
            for a in range(len(alts)):
                for b in range(a + 1, len(alts)):
                    both = firsts[a] & firsts[b]
                    if both and not _excludes(alts[a], alts[b], flags) and not _excludes(alts[b], alts[a], flags):
                        out.append(f"a repeat of alternatives {a} and {b} that can match the same text ({''.join(sorted(both))[:12]!r} to begin)")
