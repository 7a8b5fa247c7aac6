"""Macros for the pages: the catalog and calc/, and the few renderers pages share.

A page writes {{ fig(x, "GiB") }} for a figure, {{ checked("110.0 GiB", x) }} for a literal the
build recomputes, and calls the table renderers below; it never formats a number itself.
"""

from __future__ import annotations

import functools
import inspect
import sys
import types
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from calc import units  # noqa: E402
from calc.answers import guard, prefetch, report  # noqa: E402
from calc.checks import accuracy, poolaccuracy  # noqa: E402
from calc.engine import budget, derive, fraction, gate, hfconfig, kv, kvlayout  # noqa: E402
from calc.present import chart, charts  # noqa: E402
from calc.units import GiB, parse_size  # noqa: E402
from hooks import calculator_page  # noqa: E402
from hooks.figures import FigureError, Value, finalize, line_of, render, report_problem, same, site_catalog, text, value_of  # noqa: E402
from hooks.figures import source_text as _source_text  # noqa: E402
from hooks.templates import CompiledTemplates  # noqa: E402


class Missing:
    """What a macro that failed gives the page, its failure recorded: shown as "?", and any
    attribute, item, call or arithmetic on it gives it again. The page renders to its end, so
    the build fails with every problem of the page named, never with a template traceback from
    the first use of the failed value (`{% set r = reading(...) %}{{ r.source }}`)."""

    def __str__(self) -> str:
        return "?"

    def __getattr__(self, name: str) -> Missing:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key: object) -> Missing:
        return self

    def __call__(self, *args: object, **kwargs: object) -> Missing:
        return self

    def __iter__(self):
        return iter(())

    def _same(self, *other: object) -> Missing:
        return self

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _same
    __floordiv__ = __rfloordiv__ = __mod__ = __neg__ = __abs__ = _same

    def _unordered(self, other: object) -> bool:
        return False

    __lt__ = __le__ = __gt__ = __ge__ = _unordered


_templates: list[CompiledTemplates] = []  # the page templates of this build, kept once it is done


def define_env(env) -> None:
    catalog = site_catalog(ROOT)

    def page_where(literal: str) -> str:
        page = env.page
        source = page.file.content_string if page else ""
        path = f"docs/{page.file.src_uri}" if page else "(page)"
        return f"{path}:{line_of(source, literal)}"

    def problem(message: str) -> None:
        report_problem(env.page.file.src_uri if env.page else "(page)", message)

    def guarded(func):
        """What the catalog as it stands cannot give (a figure calc answers as unknown, such as a
        start outside the gate's calibration; a reading no longer there) fails the build with the
        page named, in the same list as a checked literal, never as a traceback."""

        @functools.wraps(func)
        def safe(*args, **kwargs):
            if any(isinstance(a, Missing) for a in (*args, *kwargs.values())):
                return Missing()  # what it was given failed, and that is reported already
            try:
                return func(*args, **kwargs)
            except (FigureError, ValueError, KeyError, IndexError, TypeError, ArithmeticError) as error:
                path = f"docs/{env.page.file.src_uri}" if env.page else "(page)"
                problem(f"{path}: {func.__name__}: {error}")
                return Missing()

        return safe

    def macro(func):
        """A page macro, guarded."""
        return env.macro(guarded(func))

    def module(mod: types.ModuleType) -> types.SimpleNamespace:
        """A calc module as the pages call it: each of its functions guarded like a macro."""
        return types.SimpleNamespace(**{name: guarded(v) if inspect.isfunction(v) else v for name, v in vars(mod).items() if not name.startswith("_")})

    env.variables.update(
        {
            "catalog": catalog,
            "policy": catalog.policy,
            **{
                mod.__name__.rpartition(".")[2]: module(mod) for mod in (derive, gate, hfconfig, kv, kvlayout, fraction, budget, prefetch, guard, report, units)
            },
            "GiB": GiB,
        }
    )

    @macro
    def fig(item, unit: str = "GiB", digits: int = 2, down: bool = False, source: str | None = None, up: bool = False) -> str:
        """A figure rendered from the catalog or calc."""
        return render(item, unit, digits, down, source, up)

    def glossary_url() -> str:
        """The glossary's address relative to the page being rendered."""
        depth = env.page.url.count("/") if env.page else 0
        return "../" * depth + "glossary/"

    @macro
    def checked(literal: str, item, down: bool = False) -> str:
        """A figure the author wrote; the build recomputes it and fails when it disagrees."""
        ok, shown = same(literal, item, down)
        if not ok:
            value = value_of(item)
            problem(
                f"{page_where(literal)}: the page says {literal!r}, the catalog gives {shown!r} "
                f"(entry: {value.entry or 'derived by calc'}; source: {value.source})"
            )
        return render(item, *_unit(literal), down=down)

    @macro
    def doc_said(literal: str, item, down: bool = False) -> str:
        """The catalog's figure beside a source document's hand arithmetic that disagrees with it."""
        ok, shown = same(literal, item, down)
        if ok:
            problem(f"{page_where(literal)}: the source document's {literal!r} now agrees with the catalog; drop the note")
        return f'{render(item, *_unit(literal), down=down)} <span class="doc-said">(the <a href="{glossary_url()}#source-document">source document</a> says <s>{literal}</s>)</span>'

    @macro
    def less(a, b, unit: str = "GiB", digits: int = 2) -> str:
        """A difference of two figures printed on the page, worked from them as printed."""
        return fig(units.shown(value_of(a).exact, unit, digits) - units.shown(value_of(b).exact, unit, digits), unit, digits)

    @macro
    def source_text(text: str | None) -> str:
        """A catalog source string, quoted verbatim (its figures are the source's own words)."""
        return _source_text(text)

    @env.filter
    def code(value: object) -> str:
        """Catalog text set as code: {{ d.settings.kv_dtype | code }}, escaped like any catalog text."""
        return f"<code>{text(value)}</code>"

    @macro
    def pin(text: str) -> int:
        """A pin typed as people type it: pin("10e9")."""
        return parse_size(text, "pin")

    @macro
    def deployment(deployment_id: str = "dsv4-flash-pair") -> dict:
        return catalog.deployments[deployment_id]

    @macro
    def gen(generation: int, deployment_id: str = "dsv4-flash-pair") -> dict:
        return derive.start_by_generation(catalog.deployments[deployment_id], generation)

    @macro
    def row(deployment_id: str = "dsv4-flash-pair") -> gate.GateRow:
        return derive.gate_row(catalog, deployment_id)

    @macro
    def refused_request(deployment_id: str = "dsv4-flash-pair") -> dict:
        return catalog.deployments[deployment_id]["requests"][0]

    @macro
    def needs(pin_text: str, drafter: bool = False, deployment_id: str = "dsv4-flash-pair", as_printed: bool = True) -> Value:
        """The start gate's needs for a pin, with the catalog entries its terms come from: by
        default the sum of its terms as a table prints them; as_printed=False gives the exact bytes
        the gate decides on (for a margin too thin to print)."""
        current = row(deployment_id)
        request = gate.Request(parse_size(pin_text), drafter, *_calibrated(deployment_id))
        used = [current.weights, current.overhead, current.headroom] + ([current.drafter] if drafter else [])
        entries = "; ".join(dict.fromkeys(a.entry for a in used if a.entry))
        result = gate.gate(current, request, (1,))
        names = " + ".join(t.name for t in result.terms if t.bytes)
        if as_printed:
            return Value(report.needs_as_printed(result.terms), "start gate, the sum of its terms as printed: " + names, entries)
        return Value(result.needs, "start gate, exact: " + names, entries)

    @macro
    def largest_pin(drafter: bool = False, deployment_id: str = "dsv4-flash-pair") -> int:
        available = (refused_request(deployment_id)["available"].value,)
        return gate.largest_pin(row(deployment_id), gate.Request(0, drafter, *_calibrated(deployment_id)), available)

    def _calibrated(deployment_id: str) -> tuple[int, int]:
        s = derive.start_settings(catalog, catalog.deployments[deployment_id])
        return s["prefill_budget"], s["seats"]

    @macro
    def readings(model_id: str | None = None) -> list[derive.KvReading]:
        return [r for r in derive.kv_readings(catalog) if model_id is None or r.model == model_id]

    @macro
    def catalog_index() -> str:
        from hooks.reference import index_links

        return index_links(catalog)

    calculator_page.register(env, catalog)

    @macro
    def draw(name: str, *args, **kwargs) -> str:
        """A chart from calc.present.charts, drawn at build time: {{ draw("rank_holds") }}."""
        if name not in CHARTS:
            raise ValueError(f"draw({name!r}): no such chart, expected one of {', '.join(CHARTS)}")
        return chart.figure_html(getattr(charts, name)(catalog, *args, **kwargs))

    # --- tables ---------------------------------------------------------------------------

    @macro
    def rank_holds_table(generation: int = 235, deployment_id: str = "dsv4-flash-pair") -> str:
        """What one rank holds, each figure with its source."""
        start = gen(generation, deployment_id)
        model = catalog.models[catalog.deployments[deployment_id]["model"]]
        current = row(deployment_id)
        held = derive.held(start)
        rows = [
            ("Weights", fig(start["weights_loaded"]), f"{text(start['weights_loaded'].provenance)}; shard headers said {fig(model['weights'])}"),
            ("Drafter", fig(current.drafter), source_text(current.drafter.source) + "; not measured, the drafter has not loaded yet"),
            (
                f"KV pool, pin {fig(start['kv_pin'], 'e9')}",
                fig(start["kv_pin"]),
                f"the pin; backs {fig(start['kv_tokens'].value, 'tokens', source=start['kv_tokens'].provenance)}",
            ),
            ("Overhead", fig(current.overhead, digits=1), "remainder: held - weights - KV pool"),
            ("Held, no drafter", fig(held, digits=1), f"MemAvailable {fig(start['available_before'], digits=1)} before, {fig(start['available_after'], digits=1)} after"),
        ]  # fmt: skip
        return _table(("Term", "GiB a rank", "Source"), rows)

    @macro
    def pin_matrix(pins: tuple[str, ...] = ("8e9", "10e9", "16e9", "20e9"), deployment_id: str = "dsv4-flash-pair") -> str:
        """Pins x drafter off/on against the free memory of the refused request."""
        request = refused_request(deployment_id)
        available = (request["available"].value,)
        current = row(deployment_id)
        rows = []
        for typed in pins:
            p = parse_size(typed)
            off = gate.gate(current, gate.Request(p, False, *_calibrated(deployment_id)), available)
            on = gate.gate(current, gate.Request(p, True, *_calibrated(deployment_id)), available)
            verdict = {(True, True): "both start", (True, False): "drafter refused", (False, False): "both refused"}[(off.passes, on.passes)]
            rows.append((fig(p, "e9"), fig(p), fig(report.needs_as_printed(off.terms), digits=1), fig(report.needs_as_printed(on.terms), digits=1), verdict))
        head = ("KV pin", "KV GiB", "needs, no drafter", "needs, drafter", f"vs {fig(request['available'], digits=1)} available")
        return _table(head, rows)

    @macro
    def largest_pin_table(deployment_id: str = "dsv4-flash-pair") -> str:
        """MemAvailable less every fixed term, worked from the printed figures: MemAvailable
        rounded down and each cost rounded up, so the printed limit is never above the exact one."""
        current = row(deployment_id)
        available = refused_request(deployment_id)["available"]
        costs = [("start headroom", current.headroom), ("weights", current.weights), ("overhead", current.overhead), ("drafter", current.drafter)]
        rows = [("MemAvailable, rounded down", *(fig(available, "GiB", 2, down=True),) * 2)]
        for name, a in costs:
            up = fig(a.bytes, "GiB", 2, up=True, source=a.source)
            rows.append((f"− {name}, rounded up", up if name != "drafter" else "—", up))
        limits = []
        for drafter in (False, True):
            terms = [a.bytes for name, a in costs if drafter or name != "drafter"]
            worked = units.shown(available.value, "GiB", 2, down=True) - sum(units.shown(t, "GiB", 2, up=True) for t in terms)
            limits.append(worked)
        rows.append(("**largest pin**", *(f"**{fig(x)}**" for x in limits)))
        # the bytes are the line above's, so a reader who multiplies the printed GiB gets them; the
        # exact limit (MemAvailable and costs unrounded) is printed beside, and is never below it
        rows.append(
            (
                "in bytes, rounded down (from exact bytes)",
                *(
                    f"**{fig(x, 'e9', 2, down=True)}** ({fig(largest_pin(d, deployment_id), 'e9', 2, down=True)})"
                    for x, d in zip(limits, (False, True), strict=True)
                ),
            )
        )
        return _table(("Figure", "Without the drafter", "With the drafter"), rows)

    @macro
    def needs_breakdown(pin_text: str, drafter: bool, deployment_id: str = "dsv4-flash-pair") -> str:
        request = gate.Request(parse_size(pin_text), drafter, *_calibrated(deployment_id))
        result = gate.gate(row(deployment_id), request, (refused_request(deployment_id)["available"].value,))
        rows = [(t.name, fig(t.bytes), source_text(t.source)) for t in result.terms]
        rows.append(("**needs**", f"**{fig(report.needs_as_printed(result.terms))}**", "the sum"))
        return _table(("Term", "GiB a rank", "Source"), rows)

    @macro
    def bytes_per_token_table(pool_text: str = "10e9") -> str:
        pool = parse_size(pool_text)
        rows = []
        for r in derive.kv_readings(catalog):
            what = reading_name(r)
            tokens, logged = r.tokens_at(pool)
            rows.append(
                (
                    what,
                    fig(r.bytes_per_token, "count", source=r.provenance),
                    fig(tokens, "count") + (" (logged)" if logged else ""),
                    text(r.provenance),
                )
            )
        return _table(("Model, engine, KV type", "B / token / rank", f"Tokens in {fig(pool, 'e9')}", "Source"), rows)

    def reading_name(r: derive.KvReading) -> str:
        """Model, engine, KV type and label of a reading, its speculative-token count as a figure."""
        label = f"{fig(r.speculative_tokens, 'count', source='setting')} speculative tokens" if r.speculative_tokens else text(r.label)
        return ", ".join(p for p in (text(catalog.models[r.model]["name"]), text(r.engine), text(r.kv_dtype), label) if p)

    @macro
    def generations_table(deployment_id: str = "dsv4-flash-pair") -> str:
        d = catalog.deployments[deployment_id]
        max_len = d["settings"]["max_model_len"]
        rows = []
        for s in d["starts"]:
            tokens = s["kv_tokens"].value
            rows.append(
                (
                    f"gen {s['generation']}" if s.get("generation") else "",
                    f"{fig(s['kv_pin'], 'e9')} ({fig(s['kv_pin'])})",
                    fig(s["kv_tokens"], "count"),
                    fig(kv.full_contexts(tokens, max_len), "plain", down=True),
                    s["outcome"] + (f": {source_text(s['outcome_note'])}" if s.get("outcome_note") else ""),
                )
            )
        return _table(("Gen", "Pin", "Pool, tokens", f"Full {fig(max_len, 'count')}-token contexts", "Outcome"), rows)

    @macro
    def drafter_share_table(deployment_id: str = "flash-next-pair") -> str:
        d = catalog.deployments[deployment_id]
        starts = sorted(d["starts"], key=lambda s: derive.settings(d, s)["speculative_tokens"])
        base = starts[0]
        rows = []
        for s in starts:
            k = derive.settings(d, s)["speculative_tokens"]
            tokens = s["kv_tokens"].value
            lost = base["kv_tokens"].value - tokens
            rows.append(
                (
                    fig(k, "count", source="setting"),
                    fig(s["kv_tokens"], "count"),
                    fig(kv.bytes_per_token(s["kv_pin"], tokens), "count"),
                    fig(lost, "count") if lost else "—",
                    fig(Fraction(lost, base["kv_tokens"].value), "%", 1) if lost else "—",
                )
            )
        return _table(
            (
                "Speculative tokens",
                "Pool, tokens",
                "B / token",
                f"Tokens fewer than at {fig(derive.settings(d, base)['speculative_tokens'], 'count')}",
                "Share",
            ),
            rows,
        )

    @macro
    def length_fits(model_id: str = "deepseek-v4-flash") -> list[derive.LengthFit]:
        return [f for f in derive.length_fits(catalog) if f.model == model_id]

    @macro
    def length_fit_table(model_id: str = "deepseek-v4-flash") -> str:
        """The per-request fit at each end of the pool's range: per-token and fixed terms, what
        pool / tokens comes to at each length, and the token count at our deployments' lengths."""
        fits = length_fits(model_id)
        other_lengths = sorted({derive.start_settings(catalog, d)["max_model_len"] for d in catalog.deployments.values()})
        lengths = [length for length, _ in fits[0].readings]
        head = ("Pool a rank", "Per token", "Fixed a request")
        head += tuple(f"pool / tokens at {fig(length, 'count')}" for length in lengths)
        head += tuple(f"tokens at {fig(length, 'count')}" for length in other_lengths)
        rows = []
        for f in fits:
            row = (fig(f.pool, "GiB", 1, source=f.provenance), fig(f.per_token, "B"), fig(f.fixed, "GB", 2))
            row += tuple(fig(f.effective_bytes_per_token(length), "B") for length in lengths)
            row += tuple(fig(kv.tokens_at_length(f.pool, f.per_token, f.fixed, length), "count") for length in other_lengths)
            rows.append(row)
        return _table(head, rows)

    @macro
    def trace_table(trace_id: str = "kernel-init-report") -> str:
        trace = catalog.traces[trace_id]
        rows = []
        previous = None
        for s in trace["samples"]:
            drop = fig(units.shown(previous, "GiB") - units.shown(s["available"], "GiB"), "GiB") if previous is not None else "—"
            rows.append((fig(s["t"], "s", 0), fig(s["available"], "MiB", 0), fig(s["available"], "GiB"), drop, text(s.get("event", ""))))
            previous = s["available"]
        return _table(("Time", "MemAvailable", "GiB", "Drop since the poll before", "In the log"), rows)

    # --- more tables and figures for the hand-written pages ---------------------------------

    @macro
    def reading(model_id: str, label: str = "", kind: str | None = None) -> derive.KvReading:
        """One bytes-per-token reading of a model, picked by its label (and kind)."""
        found = [r for r in readings(model_id) if r.label == label and (kind is None or r.kind == kind)]
        if len(found) != 1:
            raise ValueError(f"reading({model_id!r}, {label!r}, {kind!r}): found {len(found)} readings, expected one")
        return found[0]

    @macro
    def doc_said_range(literal: str, item, down: bool = False) -> str:
        """doc_said for a range the source document gave, such as "65-70 GB"; the catalog's figure
        is shown in the range's unit, and it must lie outside the range. down: a budget left over,
        rounded down as every limit is."""
        low, _, high = literal.partition("-")
        unit, digits = _unit(high)
        value = value_of(item).exact
        if parse_size(low + " " + unit) <= value <= parse_size(high):
            problem(f"{page_where(literal)}: the source document's {literal!r} now holds the catalog's figure; drop the note")
        return f'{render(item, unit, digits, down=down)} <span class="doc-said">(the <a href="{glossary_url()}#source-document">source document</a> says <s>{literal}</s>)</span>'

    @macro
    def gate_then_and_now_table(generation: int = 234, deployment_id: str = "dsv4-flash-pair") -> str:
        """A start's gate with the row it held when it ran, beside the same request under the measured row."""
        start = gen(generation, deployment_id)
        request = derive.request_of(catalog, catalog.deployments[deployment_id], start)
        available = (start["available_before"].value,)
        then = gate.gate(derive.gate_row_of_start(catalog, deployment_id, start), request, available)
        now = gate.gate(row(deployment_id), request, available)
        rows = [
            (a.name, fig(a.bytes), source_text(a.source), fig(b.bytes), source_text(b.source))
            for a, b in zip(then.terms, now.terms, strict=True)
            if a.bytes or b.bytes
        ]
        rows.append(("**needs**", f"**{fig(report.needs_as_printed(then.terms))}**", "the sum", f"**{fig(report.needs_as_printed(now.terms))}**", "the sum"))
        before = fig(start["available_before"], digits=0)
        rows.append(("MemAvailable at the gate", before, source_text(start["available_before"].source), before, "the same reading"))
        verdicts = ["passes" if r.passes else "refused" for r in (then, now)]
        rows.append(("**gate**", f"**{verdicts[0]}**", "", f"**{verdicts[1]}**", ""))
        head = ("Term", f"Row at gen {generation}", "Source", "Row measured since", "Source")
        return _table(head, rows)

    @macro
    def movable_table(pin_text: str = "20e9", drafter: bool = True, deployment_id: str = "dsv4-flash-pair") -> str:
        """The terms an operator can change, largest first, with the flag that moves each."""
        flags = {
            "KV pin": "`--kv-cache-memory-bytes`",
            "drafter": "`--speculative-config` (drop it)",
            "prefill-budget term": "`--max-num-batched-tokens`",
            "seat term": "`--max-num-seqs`",
        }
        request = gate.Request(parse_size(pin_text), drafter, *_calibrated(deployment_id))
        result = gate.gate(row(deployment_id), request, (refused_request(deployment_id)["available"].value,))
        moving = gate.movable_terms(result)
        idle = [t for t in result.terms if t.movable and not t.bytes]
        rows = [(t.name, fig(t.bytes), flags.get(t.name, ""), source_text(t.source)) for t in moving + idle]
        return _table(("Term", "GiB a rank", "Flag", "Source"), rows)

    @macro
    def startup_line(generation: int = 235, deployment_id: str = "dsv4-flash-pair") -> str:
        """The two figures vLLM logs about the pool, as the log prints them."""
        d = catalog.deployments[deployment_id]
        start = gen(generation, deployment_id)
        max_len = derive.settings(d, start)["max_model_len"]
        tokens = start["kv_tokens"].value
        ratio = start["concurrency"].value if "concurrency" in start else kv.full_contexts(tokens, max_len)
        return "\n".join(
            (
                "```text",
                f"GPU KV cache size: {units.fmt(tokens, 'count')} tokens",
                f"Maximum concurrency for {units.fmt(max_len, 'count')} tokens per request: {units.fmt(ratio, 'x')}",
                "```",
            )
        )

    @macro
    def concurrency_table() -> str:
        """Logged pools with their block size: tokens / max_model_len beside whole blocks per request."""
        rows = []
        for model in catalog.models.values():
            for rep in model.get("kv_reports", []):
                if not {"tokens", "max_model_len", "block_size"} <= rep.keys():
                    continue
                tokens, max_len, block = rep["tokens"].value, rep["max_model_len"], rep["block_size"]
                what = text(", ".join(p for p in (model["name"], rep.get("engine", ""), rep["kv_dtype"]) if p))
                rows.append(
                    (
                        what,
                        fig(rep["tokens"], "count"),
                        fig(max_len, "count"),
                        fig(block, "count"),
                        fig(kv.full_contexts(tokens, max_len), "x"),
                        fig(kv.block_concurrency(tokens, max_len, block), "x"),
                        text(rep["tokens"].provenance) + ": " + source_text(rep["tokens"].source),
                    )
                )
        head = ("Model, engine, KV type", "Tokens", "max_model_len", "Block", "tokens ÷ max_model_len", "whole blocks", "Source")
        return _table(head, rows)

    @macro
    def bytes_per_token_compared(deployment_id: str = "dsv4-flash-pair", pool_text: str = "10e9") -> str:
        """One model's measured bytes per token beside its published and modeled figures."""
        d = catalog.deployments[deployment_id]
        model = catalog.models[d["model"]]
        settings = derive.settings(d)
        max_len, pool = settings["max_model_len"], parse_size(pool_text)
        mine = [r for r in readings(model["id"]) if r.kv_dtype == settings["kv_dtype"]]
        measured = next(r for r in mine if r.kind == "measured")
        arch = model["architecture"]
        latent = derive.modeled_from_architecture(model, settings["kv_dtype"], d["tp"])
        entries = [(text(r.label or f"{r.kind}, {r.engine}"), r.bytes_per_token, *r.tokens_at(pool), text(r.provenance)) for r in mine]
        entries.insert(
            2,
            (
                "the latent alone, every layer at full length",
                latent,
                kv.tokens_for_pool(pool, latent),
                False,
                "modeled by calc from the architecture: " + source_text(arch.get("source", "")),
            ),
        )
        rows = []
        for name, per_token, tokens, logged, source in entries:
            rows.append(
                (
                    name,
                    fig(per_token, "count"),
                    fig(Fraction(per_token) / measured.bytes_per_token, "x"),
                    fig(tokens, "count") + (" (logged)" if logged else ""),
                    fig(kv.full_contexts(int(tokens), max_len), "plain", down=True),
                    source,
                )
            )
        head = ("Figure", "B / token / rank", "of measured", f"Tokens in {fig(pool, 'e9')}", f"Full {fig(max_len, 'count')}-token contexts", "Source")
        return _table(head, rows)

    @macro
    def never_start(box_id: str, *typed: str) -> str:
        """A checked claim: these fractions fail vLLM's start check on this box; the build fails if one passes."""
        box = catalog.boxes[box_id]
        total, free = box["total_memory"].value, box["free_at_start"].value
        passing = [t for t in typed if fraction.passes(total, free, units.parse_fraction(t))]
        if passing:
            problem(f"{page_where(typed[0])}: the page says {' or '.join(typed)} can never start on {box['name']}, but calc passes {', '.join(passing)}")
        return " or ".join(fig(units.parse_fraction(t), "fraction", len(t.split(".")[-1]) if "." in t else 0) for t in typed) + " can never start"

    @macro
    def fraction_check_table(box_id: str = "rtx-5090-node") -> str:
        """vLLM's start check, ceil(total x fraction) <= free, at the fractions that matter on one box."""
        box = catalog.boxes[box_id]
        total, free = box["total_memory"].value, box["free_at_start"].value
        named = {
            catalog.policy["vllm"]["default_gpu_memory_utilization"].value: "vLLM's default",
            box["serving"]["gpu_memory_utilization"].value: "the serving start",
            fraction.ceiling(total, free): "the ceiling",
            Fraction(99, 100): "",
            Fraction(1): "",
        }
        rows = []
        for f in sorted(named):
            ok = fraction.passes(total, free, f)
            rows.append((fig(f, "fraction", 4), named[f], fig(fraction.requested(total, f)), fig(free), "starts" if ok else "refused"))
        return _table(("Fraction", "Note", f"Asks (of {fig(box['total_memory'])})", "Free at start", "vLLM"), rows)

    @macro
    def prefetch_table(trace_id: str = "kernel-init-report") -> str:
        """vLLM's auto-prefetch rule applied to a trace's checkpoint at each poll."""
        trace = catalog.traces[trace_id]
        share = catalog.policy["vllm"]["prefetch_fraction"]
        checkpoint = trace["checkpoint"]
        rows = []
        for s in trace["samples"]:
            largest = prefetch.largest_prefetched(s["available"], share.value)
            enabled = prefetch.prefetch_enabled(checkpoint.value, s["available"], share.value)
            rows.append(
                (
                    fig(s["t"], "s", 0),
                    fig(s["available"]),
                    fig(largest, "GB", 1, down=True),
                    "prefetched" if enabled else "**not prefetched**",
                    text(s.get("event", "")),
                )
            )
        head = ("Time", "MemAvailable", f"{fig(share, '%', 0)} of it, rounded down", f"{fig(checkpoint, 'GB', 0)} checkpoint, size rule", "In the log")
        return _table(head, rows)

    @macro
    def guard_replay_table(trace_id: str = "kernel-init-report") -> str:
        """The memory guard's view of a trace, poll by poll."""
        trace = catalog.traces[trace_id]
        policy = catalog.policy["guard"]
        floor = policy["floor"].value
        samples = trace["samples"]
        runs = guard.runs_under([(s["t"], s["available"]) for s in samples], floor)
        rows = [(fig(s["t"], "s", 0), fig(s["available"]), fig(s["available"] - floor), fig(n, "count")) for s, n in zip(samples, runs, strict=True)]
        head = ("Time", "MemAvailable", f"Above the {fig(policy['floor'], 'GiB', 0)} floor", "Polls in a row under it")
        return _table(head, rows)

    @macro
    def guard_result(trace_id: str = "kernel-init-report") -> guard.GuardResult:
        trace = catalog.traces[trace_id]
        policy = catalog.policy["guard"]
        samples = [(s["t"], s["available"]) for s in trace["samples"]]
        return guard.run(samples, policy["floor"].value, policy["polls_in_a_row"].value)

    def _residents(plan: dict) -> list[budget.Resident]:
        return [budget.Resident(catalog.models[r["model"]]["name"], catalog.models[r["model"]]["weights"].value) for r in plan["residents"]]

    @macro
    def plan_budget(plan_id: str = "coder-and-70b") -> budget.Budget:
        plan = catalog.plans[plan_id]
        return budget.budget(catalog.boxes[plan["box"]]["total_memory"].value, _residents(plan))

    @macro
    def plan_budget_table(plan_id: str = "coder-and-70b") -> str:
        """Weights of each resident model against the box total, and what is left for KV and headroom."""
        plan = catalog.plans[plan_id]
        box = catalog.boxes[plan["box"]]
        rows = []
        for r in plan["residents"]:
            model = catalog.models[r["model"]]
            w = model["weights"]
            rows.append((text(model["name"]), fig(w, "GB", 0), fig(w), text(r.get("role", "")), f"{w.kind}: {source_text(w.source)}"))
        weights = [catalog.models[r["model"]]["weights"].value for r in plan["residents"]]
        together = {unit: units.printed_sum(weights, unit, digits) for unit, digits in (("GB", 0), ("GiB", 2))}
        rows.append(("**weights together**", f"**{fig(together['GB'], 'GB', 0)}**", f"**{fig(together['GiB'])}**", "", "the sum"))
        total = box["total_memory"]
        rows.append((f"{text(box['name'])}, total", fig(total, "GB"), fig(total), "", f"{total.kind}: {source_text(total.source)}"))
        left = {unit: units.shown(total.value, unit, 2) - together[unit] for unit in ("GB", "GiB")}
        rows.append(("**left for KV and headroom**", f"**{fig(left['GB'], 'GB')}**", f"**{fig(left['GiB'])}**", "", "total - weights"))
        return _table(("Resident", "GB", "GiB", "Role", "Source"), rows)

    @macro
    def weights_rule_table() -> str:
        """Parameters x bytes per parameter beside the weights the guide estimates."""
        rows = []
        for model in catalog.models.values():
            if not model.get("parameters") or "weights" not in model:
                continue
            rule = budget.weights_from_parameters(model["parameters"], model["bits_per_parameter"])
            rows.append(
                (
                    text(model["name"]),
                    fig(rule, "GB", 1),
                    fig(model["weights"], "GB", 0),
                    fig(model["weights"]),
                    f"{model['weights'].kind}: {source_text(model['weights'].source)}",
                )
            )
        return _table(("Model", "Parameters x bytes each", "Estimate", "GiB", "Source"), rows)

    @macro
    def fraction_plans_table() -> str:
        """Engines started one after another, each asking its fraction of the box total."""
        rows = []
        for plan in catalog.fraction_plans.values():
            box = catalog.boxes[plan["box"]]
            together = " + ".join(fig(f, "fraction", 2) for f in plan["fractions"])
            engines = fraction.plan(box["total_memory"].value, box["idle_available"].value, plan["fractions"])
            for n, (e, free) in enumerate(zip(engines, report.free_as_printed(engines), strict=True), 1):
                rows.append((together, f"engine {n}", fig(e.fraction, "fraction", 2), fig(e.requested), fig(free), "starts" if e.passes else "**refused**"))
        return _table(("Plan", "Engine", "Fraction", "Asks", "Free before it", "vLLM"), rows)

    @macro
    @functools.cache  # once a build: three tables on the KV page read the same rows
    def model_accuracy_rows() -> list[accuracy.Row]:
        """Every observation with a known architecture, predicted by the config model."""
        return model_accuracy(ROOT, catalog)

    @macro
    def model_accuracy_table() -> str:
        """Predicted beside printed, row by row: the published accuracy of calc/engine/kvlayout.py."""
        rows = []
        for r in model_accuracy_rows():
            o = r.observation
            pool = fig(o.pool_low, "B") if o.pool_low == o.pool_high else fig(o.pool, "GiB")
            needed = o.quantity == "needed"
            unit = "GiB" if needed else "count"
            rows.append((
                f"[{source_text(o.label)}]({o.source})" if o.source.startswith("http") else f"{source_text(o.label)} ({o.source})",
                r.family, source_text(o.rules), pool,
                f"{fig(o.printed, unit)} needed by one request" if needed else f"{fig(o.printed, unit)} {o.quantity}",
                fig(r.predicted, unit, source="modeled by calc/engine/kvlayout.py"),
                fig(r.error, "%", 2),
                "yes" if r.within_precision else "no",
                fig(r.predicted_per_token, "count", source="modeled"), fig(r.printed_pool_per_token, "count"),
                source_text(o.suspicion),
            ))  # fmt: skip
        head = ("Start", "Family", "Rules", "Pool a rank", "Printed", "Modeled", "Error", "Within printed precision",
                "Modeled B a token", "Pool ÷ printed tokens", "What we suspect")  # fmt: skip
        return _table(head, rows)

    @macro
    def model_weights_table() -> str:
        """Weights a rank by the config's count beside what the log's loading line says."""
        rows = []
        for r in model_accuracy_rows():
            found = accuracy.weights_error(r.observation)
            if found is None:
                continue
            modeled, error = found
            o = r.observation
            rows.append((f"[{source_text(o.label)}]({o.source})", fig(o.settings.tp, "count"), fig(o.weights_loaded, "GiB", 4),
                         fig(modeled, "GiB", 4, source="modeled by calc/engine/weights.py"), fig(error, "%", 2)))  # fmt: skip
        return _table(("Start", "TP", '"Model loading took"', "Modeled weights a rank", "Error"), rows)

    @macro
    def pool_prediction_summary() -> str:
        """The predicted pool's error on the fitted and the held-out starts of models/pool_starts.yaml."""
        rows = pool_rows(ROOT, catalog)
        out = []
        for name, chosen in (("fitted", [r for r in rows if not r.held_out]), ("held out", [r for r in rows if r.held_out])):
            s = poolaccuracy.summary(chosen)
            shown = [fig(x, "%", 1) if x is not None else "no start yet" for x in (s.median, s.p90)]
            out.append((name, fig(s.starts, "count"), *shown, f"{fig(s.verdicts_right, 'count')} of {fig(s.verdicts, 'count')}"))
        return _table(("Starts", "With a printed pool", "Median error", "90th-percentile error", "Verdict right"), out)

    @macro
    def pool_prediction_by_group() -> str:
        """The predicted pool's error by family and by era, fitted and held-out starts together."""
        out = []
        for kind, name, s in poolaccuracy.by_group(pool_rows(ROOT, catalog)):
            shown = [fig(x, "%", 1) if x is not None else "no printed pool" for x in (s.median, s.p90)]
            out.append((kind, source_text(name), fig(s.starts, "count"), *shown, f"{fig(s.verdicts_right, 'count')} of {fig(s.verdicts, 'count')}"))
        return _table(("By", "Group", "With a printed pool", "Median error", "90th-percentile error", "Verdict right"), out)

    @macro
    def pool_prediction_table() -> str:
        """Each start: the pool vLLM printed beside the pool calc/engine/predict.py predicts from the config."""
        out = []
        for r in pool_rows(ROOT, catalog):
            p = r.prediction
            out.append((
                f"[{source_text(r.label)}]({r.url})" if r.url else source_text(r.label), "held out" if r.held_out else "fitted",
                fig(r.printed_pool, "GiB"), fig(p.available_kv_bytes, "GiB", source="predicted by calc/engine/predict.py"),
                fig(r.error, "%", 1) if r.error is not None else "vLLM refused: no KV memory",
                fig(p.activation.bytes, "GiB", source="modeled"), fig(p.cuda_graph.bytes, "GiB", source="modeled"), source_text(p.verdict),
            ))  # fmt: skip
        return _table(("Start", "Set", "Printed pool", "Predicted pool", "Error", "Activation peak", "CUDA graphs", "Verdict"), out)

    @macro
    def model_accuracy_by_family() -> str:
        rows = model_accuracy_rows()
        errors, covered = accuracy.family_errors(rows), accuracy.family_errors(rows, covered_only=True)
        out = []
        for family, mae in errors.items():
            n = sum(1 for r in rows if r.family == family)
            exact = sum(1 for r in rows if r.family == family and r.within_precision)
            shown = [fig(e, "%", 2) if e is not None else "no observation yet" for e in (mae, covered[family])]
            out.append((family, fig(n, "count"), fig(exact, "count"), *shown))
        head = ("Family", "Rows", "Within printed precision", "Mean absolute error", "Mean absolute error, rows the rules cover")
        return _table(head, out)


CHARTS = ("rank_holds", "pin_matrix", "startup_timeline", "guard_trace", "length_fit", "bytes_per_token", "plan_budget")


def on_pre_page_macros(env) -> None:
    """Before each page renders: catalog text in {{ ... }} is escaped; macro output is not."""
    env.env.finalize = finalize
    if not _templates or _templates[0].environment is not env.env:  # the plugin's environment of this build
        _templates[:] = [CompiledTemplates(env.env, ROOT)]
        env.env.compile = _templates[0].compile


def on_post_build(env) -> None:
    for templates in _templates:
        templates.save()


def _unit(literal: str) -> tuple[str, int]:
    from hooks.figures import literal_unit

    return literal_unit(literal)


def public_observations(root: Path) -> tuple[list[dict], dict[str, dict], dict[str, str]]:
    """models/observations.yaml, the config.json files and the public logs it names, as read."""
    import json

    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml, as the catalog is read
    entries = yaml.load((root / "models" / "observations.yaml").read_text(encoding="utf-8"), Loader=loader)["observations"]
    configs = {e["config"]: json.loads((root / "models" / "configs" / e["config"] / "config.json").read_text()) for e in entries if "config" in e}
    logs = {e["log"]: (root / "logs" / "public" / e["log"]).read_text(encoding="utf-8") for e in entries if "log" in e}
    return entries, configs, logs


def model_accuracy(root: Path, catalog) -> list[accuracy.Row]:
    """The accuracy table's rows: the public observations, then the catalog's own starts."""
    entries, configs, logs = public_observations(root)
    return [accuracy.row(o) for o in accuracy.public_observations(entries, configs, catalog, logs) + accuracy.catalog_observations(catalog)]


def pool_rows(root: Path, catalog) -> list[poolaccuracy.Row]:
    """models/pool_starts.yaml's starts, each predicted and set beside its printed pool."""
    import json

    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    data = yaml.load((root / "models" / "pool_starts.yaml").read_text(encoding="utf-8"), Loader=loader)
    entries = data["starts"]
    configs = {e["config"]: json.loads((root / "models" / "configs" / e["config"] / "config.json").read_text()) for e in entries}
    logs = {e["log"]: (root / "logs" / "public" / e["log"]).read_text(encoding="utf-8") for e in entries}
    sources = yaml.load((root / "logs" / "public" / "SOURCES.yaml").read_text(encoding="utf-8"), Loader=loader)
    urls = {x["file"]: x["url"] for x in sources if isinstance(x, dict) and "file" in x}
    return poolaccuracy.rows(entries, configs, logs, catalog.boxes, urls)


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") if "<span" not in cell else cell for cell in r) + " |" for r in rows]
    return "\n".join(lines)
