"""Macros for the pages: the catalog and calc/, and the few renderers pages share.

A page writes {{ fig(x, "GiB") }} for a figure, {{ checked("110.0 GiB", x) }} for a literal the
build recomputes, and calls the table renderers below; it never formats a number itself.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from calc import budget, derive, fraction, gate, guard, kv, prefetch, report, units  # noqa: E402
from calc.units import GiB, parse_size  # noqa: E402
from hooks import calculator_page  # noqa: E402
from hooks.figures import Value, line_of, render, report_problem, same, site_catalog, value_of  # noqa: E402


def define_env(env) -> None:
    catalog = site_catalog(ROOT)

    def page_where(literal: str) -> str:
        page = env.page
        source = page.file.content_string if page else ""
        path = f"docs/{page.file.src_uri}" if page else "(page)"
        return f"{path}:{line_of(source, literal)}"

    def problem(message: str) -> None:
        report_problem(env.page.file.src_uri if env.page else "(page)", message)

    env.variables.update(
        {
            "catalog": catalog,
            "policy": catalog.policy,
            "derive": derive,
            "gate": gate,
            "kv": kv,
            "fraction": fraction,
            "budget": budget,
            "prefetch": prefetch,
            "guard": guard,
            "report": report,
            "units": units,
            "GiB": GiB,
        }
    )

    @env.macro
    def fig(item, unit: str = "GiB", digits: int = 2, down: bool = False, source: str | None = None) -> str:
        """A figure rendered from the catalog or calc."""
        return render(item, unit, digits, down, source)

    @env.macro
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

    @env.macro
    def doc_said(literal: str, item, down: bool = False) -> str:
        """The catalog's figure beside a source document's hand arithmetic that disagrees with it."""
        ok, shown = same(literal, item, down)
        if ok:
            problem(f"{page_where(literal)}: the source document's {literal!r} now agrees with the catalog; drop the note")
        return f'{render(item, *_unit(literal), down=down)} <span class="doc-said">(the source document says <s>{literal}</s>)</span>'

    @env.macro
    def pin(text: str) -> int:
        """A pin typed as people type it: pin("10e9")."""
        return parse_size(text, "pin")

    @env.macro
    def deployment(deployment_id: str = "dsv4-flash-pair") -> dict:
        return catalog.deployments[deployment_id]

    @env.macro
    def gen(generation: int, deployment_id: str = "dsv4-flash-pair") -> dict:
        return derive.start_by_generation(catalog.deployments[deployment_id], generation)

    @env.macro
    def row(deployment_id: str = "dsv4-flash-pair") -> gate.GateRow:
        return derive.gate_row(catalog, deployment_id)

    @env.macro
    def refused_request(deployment_id: str = "dsv4-flash-pair") -> dict:
        return catalog.deployments[deployment_id]["requests"][0]

    @env.macro
    def needs(pin_text: str, drafter: bool = False, deployment_id: str = "dsv4-flash-pair") -> Value:
        """The start gate's needs for a pin, with the catalog entries its terms come from."""
        current = row(deployment_id)
        request = gate.Request(parse_size(pin_text), drafter, *_calibrated(deployment_id))
        used = [current.weights, current.overhead, current.headroom] + ([current.drafter] if drafter else [])
        entries = "; ".join(dict.fromkeys(a.entry for a in used if a.entry))
        return Value(gate.gate(current, request, (1,)).needs, "start gate: " + " + ".join(t.name for t in gate.terms(current, request)[0] if t.bytes), entries)

    @env.macro
    def largest_pin(drafter: bool = False, deployment_id: str = "dsv4-flash-pair") -> int:
        available = (refused_request(deployment_id)["available"].value,)
        return gate.largest_pin(row(deployment_id), gate.Request(0, drafter, *_calibrated(deployment_id)), available)

    def _calibrated(deployment_id: str) -> tuple[int, int]:
        s = catalog.deployments[deployment_id]["settings"]
        return s.get("prefill_budget", 0), s.get("seats", 0)

    @env.macro
    def readings(model_id: str | None = None) -> list[derive.KvReading]:
        return [r for r in derive.kv_readings(catalog) if model_id is None or r.model == model_id]

    @env.macro
    def catalog_index() -> str:
        from hooks.reference import index_links

        return index_links(catalog)

    calculator_page.register(env, catalog)

    # --- tables ---------------------------------------------------------------------------

    @env.macro
    def rank_holds_table(generation: int = 235, deployment_id: str = "dsv4-flash-pair") -> str:
        """What one rank holds, each figure with its source."""
        start = gen(generation, deployment_id)
        model = catalog.models[catalog.deployments[deployment_id]["model"]]
        current = row(deployment_id)
        held = derive.held(start)
        rows = [
            ("Weights", fig(start["weights_loaded"]), f"{start['weights_loaded'].provenance}; shard headers said {fig(model['weights'])}"),
            ("Drafter", fig(current.drafter), current.drafter.source + "; not measured, the drafter has not loaded yet"),
            (
                f"KV pool, pin {fig(start['kv_pin'], 'e9')}",
                fig(start["kv_pin"]),
                f"the pin; backs {fig(start['kv_tokens'].value, 'tokens', source=start['kv_tokens'].provenance)}",
            ),
            ("Overhead", fig(current.overhead, digits=1), "remainder: held - weights - KV pool"),
            ("Held, no drafter", fig(held, digits=1), f"MemAvailable {fig(start['available_before'], digits=1)} before, {fig(start['available_after'], digits=1)} after"),
            ("Start headroom", fig(current.headroom, digits=1), "the start gate's " + current.headroom.source),
        ]  # fmt: skip
        return _table(("Term", "GiB a rank", "Source"), rows)

    @env.macro
    def pin_matrix(pins: tuple[str, ...] = ("8e9", "10e9", "16e9", "20e9"), deployment_id: str = "dsv4-flash-pair") -> str:
        """Pins x drafter off/on against the free memory of the refused request."""
        request = refused_request(deployment_id)
        available = (request["available"].value,)
        current = row(deployment_id)
        rows = []
        for text in pins:
            p = parse_size(text)
            off = gate.gate(current, gate.Request(p, False, *_calibrated(deployment_id)), available)
            on = gate.gate(current, gate.Request(p, True, *_calibrated(deployment_id)), available)
            verdict = {(True, True): "both start", (True, False): "drafter refused", (False, False): "both refused"}[(off.passes, on.passes)]
            rows.append((fig(p, "e9"), fig(p), fig(off.needs, digits=1), fig(on.needs, digits=1), verdict))
        head = ("KV pin", "KV GiB", "needs, no drafter", "needs, drafter", f"vs {fig(request['available'], digits=1)} available")
        return _table(head, rows)

    @env.macro
    def needs_breakdown(pin_text: str, drafter: bool, deployment_id: str = "dsv4-flash-pair") -> str:
        request = gate.Request(parse_size(pin_text), drafter, *_calibrated(deployment_id))
        result = gate.gate(row(deployment_id), request, (refused_request(deployment_id)["available"].value,))
        rows = [(t.name, fig(t.bytes), t.source) for t in result.terms]
        rows.append(("**needs**", f"**{fig(result.needs, digits=1)}**", "the sum"))
        return _table(("Term", "GiB a rank", "Source"), rows)

    @env.macro
    def bytes_per_token_table(pool_text: str = "10e9") -> str:
        pool = parse_size(pool_text)
        rows = []
        for r in derive.kv_readings(catalog):
            model = catalog.models[r.model]["name"]
            what = ", ".join(p for p in (model, r.engine, r.kv_dtype, r.label) if p)
            tokens, logged = r.tokens_at(pool)
            rows.append(
                (
                    what,
                    fig(r.bytes_per_token, "count", source=r.provenance),
                    fig(tokens, "count") + (" (logged)" if logged else ""),
                    r.provenance,
                )
            )
        return _table(("Model, engine, KV type", "B / token / rank", f"Tokens in {fig(pool, 'e9')}", "Source"), rows)

    @env.macro
    def generations_table(deployment_id: str = "dsv4-flash-pair") -> str:
        d = catalog.deployments[deployment_id]
        max_len = d["settings"]["max_model_len"]
        rows = []
        for s in d["starts"]:
            tokens = s["kv_tokens"].value
            rows.append(
                (
                    str(s.get("generation", "")),
                    f"{fig(s['kv_pin'], 'e9')} ({fig(s['kv_pin'])})",
                    fig(s["kv_tokens"], "count"),
                    fig(kv.full_contexts(tokens, max_len), "plain"),
                    s["outcome"] + (f": {s['outcome_note']}" if s.get("outcome_note") else ""),
                )
            )
        return _table(("Gen", "Pin", "Pool, tokens", f"Full {fig(max_len, 'count')}-token contexts", "Outcome"), rows)

    @env.macro
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
                    str(k),
                    fig(s["kv_tokens"], "count"),
                    fig(kv.bytes_per_token(s["kv_pin"], tokens), "count"),
                    fig(lost, "count") if lost else "—",
                    fig(Fraction(lost, base["kv_tokens"].value), "%", 1) if lost else "—",
                )
            )
        return _table(
            ("Speculative tokens", "Pool, tokens", "B / token", f"Tokens fewer than at {derive.settings(d, base)['speculative_tokens']}", "Share"), rows
        )

    @env.macro
    def trace_table(trace_id: str = "kernel-init-report") -> str:
        trace = catalog.traces[trace_id]
        rows = []
        previous = None
        for s in trace["samples"]:
            drop = fig(previous - s["available"], "GiB") if previous is not None else "—"
            rows.append((fig(s["t"], "s", 0), fig(s["available"], "MiB", 0), fig(s["available"], "GiB"), drop, s.get("event", "")))
            previous = s["available"]
        return _table(("Time", "MemAvailable", "GiB", "Drop since the poll before", "In the log"), rows)


def _unit(literal: str) -> tuple[str, int]:
    from hooks.figures import literal_unit

    return literal_unit(literal)


def _table(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") if "<span" not in cell else cell for cell in r) + " |" for r in rows]
    return "\n".join(lines)
