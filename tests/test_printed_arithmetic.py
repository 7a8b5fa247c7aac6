"""Printed arithmetic, checked as a reader checks it: with a calculator beside the built page.

The site's rule: a figure worked from figures printed beside it is worked from them as printed.
A reader who adds a table's printed terms, subtracts two printed readings or divides a printed
pool by a printed cost gets the figure the page prints. This test parses every built page (tables,
and the command line's output quoted on the pages) and recomputes each total, difference and
ratio from the printed operands alone.
"""

from __future__ import annotations

import html
import math
import re
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from html.parser import HTMLParser

import pytest

GiB, GB, MiB = Decimal(2**30), Decimal(10**9), Decimal(2**20)
UNITS = {"GiB": GiB, "GB": GB, "MiB": MiB, "MB": Decimal(10**6), "B": Decimal(1)}
_NUM = r"~?(?P<num>-?[0-9][0-9,]*(?:\.[0-9]+)?)"


class Tables(HTMLParser):
    """Tables (rows of cell texts) and preformatted blocks of one page's article."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.pres: list[str] = []
        self._cell: list[str] | None = None
        self._pre: list[str] | None = None
        self._in_article = False

    def handle_starttag(self, tag, attrs):
        if tag == "article":
            self._in_article = True
        if not self._in_article:
            return
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "pre":
            self._pre = []

    def handle_endtag(self, tag):
        if tag == "article":
            self._in_article = False
        if tag in ("td", "th") and self._cell is not None and self.tables and self.tables[-1]:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "pre" and self._pre is not None:
            self.pres.append("".join(self._pre))
            self._pre = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._pre is not None:
            self._pre.append(data)


def parse(page: str) -> Tables:
    p = Tables()
    p.feed(page)
    return p


def number(text: str, unit: str | None = None) -> tuple[Decimal, int] | None:
    """The first figure in a cell (in bytes when it has a size unit) and its printed decimals."""
    m = re.search(_NUM + r"(?:\s?(?P<unit>GiB|GB|MiB|MB|e9 B|B|x|%))?", text.replace("\u2212", "-"))
    if not m:
        return None
    raw = m["num"].replace(",", "")
    digits = len(raw.split(".")[1]) if "." in raw else 0
    value = Decimal(raw)
    found = m["unit"]
    if unit and found != unit:
        return None
    if found == "e9 B":
        value *= GB
    elif found in UNITS:
        value *= UNITS[found]
    return value, digits


def rounds_to(exact: Decimal, printed: Decimal, digits: int, scale: Decimal = Decimal(1), how=ROUND_HALF_UP) -> bool:
    q = Decimal(1).scaleb(-digits)
    return (exact / scale).quantize(q, rounding=how) == (printed / scale).quantize(q)


def off(worked: Decimal, cell: str, scale: Decimal = Decimal(1), how=ROUND_HALF_UP) -> bool:
    """Whether a printed cell is not the worked figure rounded to the cell's own decimals."""
    shown = number(cell)
    return shown is None or not rounds_to(worked, shown[0], shown[1], scale, how)


def column(head: list[str], *words: str) -> int | None:
    for j, h in enumerate(head):
        if all(w.lower() in h.lower() for w in words):
            return j
    return None


def unit_of(cell: str) -> tuple[str, Decimal]:
    for u in ("GiB", "GB", "MiB"):
        if re.search(r"[0-9] ?" + u + r"\b", cell):
            return u, UNITS[u]
    return "", Decimal(1)


# --- the checks, each returns a list of what does not hold --------------------------------


def table_totals(table: list[list[str]]) -> list[str]:
    """A row marked as a sum equals the sum of the printed terms above it, column by column."""
    out = []
    head, rows = table[0], table[1:]
    start = 0
    for i, r in enumerate(rows):
        label = r[0].lower().strip("* ")
        if not (label in ("needs", "weights together", "together") or any(c.strip() == "the sum" for c in r[1:])):
            continue
        for j, cell in enumerate(r):
            if j == 0 or not cell.strip("* "):
                continue
            unit, scale = unit_of(cell)
            total = number(cell)
            if not unit or total is None:
                continue
            terms = [number(rows[k][j]) for k in range(start, i) if j < len(rows[k]) and unit_of(rows[k][j])[0] == unit]
            terms = [t for t in terms if t]
            if not terms:
                continue
            worked = sum(t[0] for t in terms)
            if not rounds_to(worked, total[0], total[1], scale):
                out.append(f"{head} row {r[0]!r}, column {head[j]!r}: printed {cell!r}, the printed terms add to {worked / scale:.4f} {unit}")
        start = i + 1
    for i, r in enumerate(rows):
        if r[0].lower().strip("* ").startswith("left for"):
            together = next(x for x in rows if x[0].lower().strip("* ") == "weights together")
            for j in range(1, len(r)):
                unit, scale = unit_of(r[j])
                if not unit:
                    continue
                worked = number(rows[i - 1][j])[0] - number(together[j])[0]
                shown = number(r[j])
                if not rounds_to(worked, shown[0], shown[1], scale):
                    out.append(f"{head}: {r[0]!r} {r[j]!r} is not total - weights = {worked / scale:.4f} {unit}")
    return out


def table_limits(table: list[list[str]]) -> list[str]:
    """MemAvailable less each printed cost equals the printed limit (the largest-pin table)."""
    head, rows = table[0], table[1:]
    if not rows or not rows[0][0].startswith("MemAvailable") or not any(r[0].strip("* ") == "largest pin" for r in rows):
        return []
    out = []
    for j in range(1, len(head)):
        worked = number(rows[0][j])[0]
        limit = None
        for r in rows[1:]:
            label = r[0].strip("* ")
            if label.startswith("\u2212") or label.startswith("-"):
                if number(r[j]):
                    worked -= number(r[j])[0]
            elif label == "largest pin":
                if off(worked, r[j], GiB):
                    out.append(f"{head[j]}: largest pin {r[j]!r}, the printed terms give {worked / GiB:.4f} GiB")
                limit = number(r[j])
            elif label.startswith("in bytes"):
                # the bytes of the printed limit, rounded down: a reader multiplying the GiB gets them
                if limit is None or off(limit[0], r[j], Decimal(GB), ROUND_FLOOR):
                    out.append(f"{head[j]}: {r[j]!r} is not the printed largest pin in e9 B, rounded down")
    return out


def table_differences(table: list[list[str]]) -> list[str]:
    """Drops between polls, free memory left for the next engine, margins above a floor."""
    head, rows = table[0], table[1:]
    out = []
    drop, gib = column(head, "drop since"), column(head, "GiB")
    if drop is not None and gib is not None:
        for before, after in zip(rows, rows[1:], strict=False):
            worked = number(before[gib])[0] - number(after[gib])[0]
            if off(worked, after[drop], GiB):
                out.append(f"drop {after[drop]!r}: {before[gib]} - {after[gib]} = {worked / GiB:.4f} GiB")
    free, asks = column(head, "free before"), column(head, "asks")
    verdict = len(head) - 1
    if free is not None and asks is not None:
        for before, after in zip(rows, rows[1:], strict=False):
            if after[0] != before[0] or before[verdict].strip("* ") != "starts":
                continue
            worked = number(before[free])[0] - number(before[asks])[0]
            if off(worked, after[free], GiB):
                out.append(f"free before {after[free]!r}: {before[free]} - {before[asks]} = {worked / GiB:.4f} GiB")
    above = next((j for j, h in enumerate(head) if re.match(r"Above the .* floor", h)), None)
    if above is not None:
        floor = number(head[above])[0]
        avail = column(head, "MemAvailable")
        for r in rows:
            worked = number(r[avail])[0] - floor
            if off(worked, r[above], GiB):
                out.append(f"above the floor {r[above]!r}: {r[avail]} - floor = {worked / GiB:.4f} GiB")
    return out


def table_ratios(table: list[list[str]]) -> list[str]:
    """Tokens = pool / bytes per token; concurrency = tokens / max_model_len; full contexts."""
    head, rows = table[0], table[1:]
    out = []
    tok = next((j for j, h in enumerate(head) if h.startswith("Tokens in ")), None)
    bpt = column(head, "B / token")
    if tok is not None and bpt is not None:
        pool = number(head[tok])[0]
        for r in rows:
            if "(logged)" in r[tok]:
                continue
            worked = pool / number(r[bpt])[0]  # whole tokens: a pool holds no part of one
            if not rounds_to(worked, number(r[tok])[0], 0, how=ROUND_FLOOR):
                out.append(f"tokens {r[tok]!r} in {head[tok]!r}: {pool} / {r[bpt]} = {worked:.1f}")
    ratio = column(head, "tokens ÷ max_model_len")
    if ratio is not None:
        t, n = column(head, "Tokens"), column(head, "max_model_len")
        for r in rows:
            worked = number(r[t])[0] / number(r[n])[0]
            if off(worked, r[ratio]):
                out.append(f"{r[ratio]!r}: {r[t]} / {r[n]} = {worked:.4f}")
    full = next((j for j, h in enumerate(head) if re.match(r"Full [0-9,]+-token contexts", h)), None)
    if full is not None:
        n = number(head[full])[0]
        t = next(j for j, h in enumerate(head) if h.startswith("Tokens in ") or h in ("Pool, tokens", "Tokens"))
        for r in rows:
            worked = number(r[t])[0] / n
            if off(worked, r[full], how=ROUND_FLOOR):
                out.append(f"full contexts {r[full]!r}: {r[t]} / {n} = {worked:.4f}")
    return out


def console(block: str) -> list[str]:
    """The command line's printed arithmetic: gate sums and margins, tokens, plans, fractions."""
    out = []
    lines = block.splitlines()
    terms: list[Decimal] = []
    needs = None
    pin = None
    pin_cost = None
    for line in lines:
        if m := re.match(r"\s+pin ([0-9.]+)e9 B", line):
            pin = Decimal(m[1]) * GB
        if m := re.match(r"\s{2}(weights|drafter|KV pin|overhead|prefill-budget term|seat term|start headroom)\s+([0-9.]+)\s", line):
            terms.append(Decimal(m[2]))
        if m := re.match(r"\s{2}needs\s+([0-9.]+)", line):
            needs = Decimal(m[1])
            if sum(terms) != needs:
                out.append(f"gate: needs {needs}, the printed terms add to {sum(terms)}")
        if m := re.match(r"\s{2}a rank needs ([0-9.]+) GiB = (.+)$", line):  # `model` on a unified box: the gate on one line
            needs = Decimal(m[1])
            if sum(Decimal(t) for t in re.findall(r"([0-9.]+) GiB", m[2])) != needs:
                out.append(f"model gate: {line.strip()!r}: the printed terms do not add to {needs}")
        if (m := re.search(r"against MemAvailable ([0-9.]+) GiB .*: (passes|refused), ([0-9.]+) GiB", line)) and needs is not None:
            if abs(Decimal(m[1]) - needs) != Decimal(m[3]):
                out.append(f"model gate: {line.strip()!r}: |{m[1]} - {needs}| = {abs(Decimal(m[1]) - needs)}")
        if (m := re.search(r"available ([0-9.]+) GiB, (passes|refused) by ([0-9.]+) GiB", line)) and needs is not None:
            if abs(Decimal(m[1]) - needs) != Decimal(m[3]):
                out.append(f"gate: {line.strip()!r}: |{m[1]} - {needs}| = {abs(Decimal(m[1]) - needs)}")
        if (m := re.search(r"KV pool: ([0-9,]+) tokens at ([0-9,]+) B/token", line)) and pin is not None:
            worked = pin / Decimal(m[2].replace(",", ""))
            if not rounds_to(worked, Decimal(m[1].replace(",", "")), 0, how=ROUND_FLOOR):
                out.append(f"{line.strip()!r}: {pin} / {m[2]} = {worked:.1f}")
        if m := re.search(r"^Bytes per token: ([0-9,]+)", line):
            pin_cost = Decimal(m[1].replace(",", ""))
        if (m := re.search(r"^Pin ([0-9.]+)e9 B \(.*\) holds ([0-9,]+) tokens", line)) and "(logged)" not in line and pin_cost:
            worked = Decimal(m[1]) * GB / pin_cost
            if not rounds_to(worked, Decimal(m[2].replace(",", "")), 0, how=ROUND_FLOOR):
                out.append(f"{line.strip()!r}: {m[1]}e9 / {pin_cost} = {worked:.1f}")
        if (m := re.search(r"^Seats x typical context: ([0-9,]+) tokens, a pin of ([0-9.]+)e9 B", line)) and pin_cost:
            worked = Decimal(m[1].replace(",", "")) * pin_cost
            if not rounds_to(worked, Decimal(m[2]) * GB, 2, GB, ROUND_CEILING):
                out.append(f"{line.strip()!r}: {m[1]} x {pin_cost} = {worked} B")
        if m := re.search(r"^([0-9.]+) x ([0-9.]+) GiB = ([0-9.]+) GiB", line):
            worked = Decimal(m[1]) * Decimal(m[2])
            if not rounds_to(worked, Decimal(m[3]), 2):
                out.append(f"{line.strip()!r}: {m[1]} x {m[2]} = {worked}")
    # plan: the resident budget and the engines one after another
    total = next((Decimal(m[1]) for line in lines if (m := re.search(r": ([0-9.]+) GiB in all", line))), None)
    residents = [
        sum(Decimal(x) for x in m.groups()) for line in lines if (m := re.search(r"weights ([0-9.]+) GiB, KV ([0-9.]+) GiB, headroom ([0-9.]+) GiB", line))
    ]
    for line in lines:
        if (m := re.search(r"^\s+left: ([0-9.]+) GiB", line)) and total is not None:
            if total - sum(residents) != Decimal(m[1]):
                out.append(f"plan: left {m[1]}, the printed figures give {total - sum(residents)}")
    engines = [m for line in lines if (m := re.search(r"engine \d+ at [0-9.]+: asks ([0-9.]+) GiB of ([0-9.]+) GiB free: (\w+)", line))]
    for before, after in zip(engines, engines[1:], strict=False):
        if before[3] == "starts" and Decimal(before[2]) - Decimal(before[1]) != Decimal(after[2]):
            out.append(f"plan: engine free {after[2]}, the printed figures give {Decimal(before[2]) - Decimal(before[1])}")
    avail = next((Decimal(m[1]) * GiB for line in lines if (m := re.search(r"of ([0-9.]+) GiB available", line))), None)
    share = next((Decimal(m[1]) / 100 for line in lines if (m := re.search(r"against ([0-9]+) % of", line))), None)
    for line in lines:
        if (m := re.search(r"^Largest checkpoint within the size rule: ([0-9.]+) GB", line)) and avail and share:
            if not rounds_to(avail * share, Decimal(m[1]) * GB, 1, GB, ROUND_FLOOR):
                out.append(f"prefetch: {m[1]} GB is not {share} x {avail / GiB} GiB rounded down")
    return out


def test_parser_reads_a_table_and_a_console_block() -> None:
    """The parser itself, on a small page with a wrong total and a right one."""
    page = (
        "<article><table><tr><th>Term</th><th>GiB a rank</th><th>Source</th></tr>"
        "<tr><td>weights</td><td>79.29 GiB</td><td>m</td></tr><tr><td>overhead</td><td>13.40 GiB</td><td>r</td></tr>"
        "<tr><td><strong>needs</strong></td><td><strong>92.70 GiB</strong></td><td>the sum</td></tr></table>"
        "<pre>  weights   79.29  m\n  overhead   13.40  r\n  needs   92.69\n  box: available 100.00 GiB, passes by 7.31 GiB</pre></article>"
    )
    p = parse(page)
    assert table_totals(p.tables[0]) == [
        "['Term', 'GiB a rank', 'Source'] row 'needs', column 'GiB a rank': printed '92.70 GiB', the printed terms add to 92.6900 GiB"
    ]
    assert console(p.pres[0]) == []
    assert console(p.pres[0].replace("92.69", "92.70")) == [
        "gate: needs 92.70, the printed terms add to 92.69",
        "gate: 'box: available 100.00 GiB, passes by 7.31 GiB': |100.00 - 92.70| = 7.30",
    ]


def _pages(shipped) -> dict[str, str]:
    return {path: page for path, page in shipped.all_html().items() if not path.startswith(("runtime", "py", "404", "search"))}


def test_every_printed_sum_difference_and_ratio_holds(shipped) -> None:
    problems = []
    checked = 0
    for path, page in sorted(_pages(shipped).items()):
        p = parse(page)
        for table in p.tables:
            if len(table) < 2:
                continue
            for check in (table_totals, table_limits, table_differences, table_ratios):
                problems += [f"{path}: {x}" for x in check(table)]
            checked += 1
        for block in p.pres:
            problems += [f"{path}: {x}" for x in console(html.unescape(block))]
    assert checked > 20, f"only {checked} tables were found; is the parser reading the pages?"
    assert not problems, "printed arithmetic that a reader cannot reproduce:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    ("path", "needle"),
    [
        ("start-up-memory", r"fell by (?P<c>[0-9.]+) GiB"),
        ("start-up-memory", r"(?P<c>[0-9.]+) GiB below the idle reading"),
    ],
)
def test_prose_differences_match_the_trace_table(shipped, path, needle) -> None:
    """The start-up page's prose drops are the trace table's printed readings subtracted."""
    text = shipped.text(path)
    p = parse(shipped.page(path))
    trace = next(t for t in p.tables if t[0][:3] == ["Time", "MemAvailable", "GiB"])
    readings = {r[0]: Decimal(number(r[2])[0] / GiB) for r in trace[1:]}
    shown = Decimal(re.search(needle, text)["c"])
    differences = {a - b for a in readings.values() for b in readings.values()}
    assert shown in differences, f"{path}: {shown} GiB is no difference of the printed readings {sorted(readings.values())}"
    assert math.isfinite(float(shown))


PROSE = [
    # "10e9 B over 181,777 tokens is 55,012 B": a division, rounded
    (r"(?P<a>[0-9.]+)e9 B over (?P<b>[0-9,]+) tokens is\s+(?P<c>[0-9,]+) B", lambda a, b: a * GB / b, 0),
    # "181,777 tokens over 131,072 is 1.39x": vLLM's concurrency, two decimals
    (r"(?P<a>[0-9,]+) tokens over (?P<b>[0-9,]+) is\s+(?P<c>[0-9.]+)x", lambda a, b: a / b, 2),
    # "131,072 × 55,011 B = 7,210,401,792 B": a product, exact
    (r"(?P<a>[0-9,]+) × (?P<b>[0-9,]+) B =\s+(?P<c>[0-9,]+) B", lambda a, b: a * b, 0),
]


def test_prose_arithmetic_holds(shipped) -> None:
    """Sentences that state a division or a product: the printed result is the printed operands'."""
    found = 0
    for path, page in sorted(_pages(shipped).items()):
        text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())
        for pattern, work, digits in PROSE:
            for m in re.finditer(pattern, text):
                a, b = (Decimal(m[k].replace(",", "")) for k in ("a", "b"))
                printed = Decimal(m["c"].replace(",", ""))
                assert rounds_to(work(a, b), printed, digits), f"{path}: {m[0]!r}: the operands give {work(a, b)}"
                found += 1
    assert found >= 3, f"only {found} prose statements found"
