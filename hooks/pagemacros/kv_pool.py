"""Macros of the KV pool page: bytes-per-token readings, the starts' pools, the drafter's share,
the per-request fit, vLLM's logged pool lines and its start check at each fraction."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from calc import units
from calc.engine import derive, fraction, hfconfig, kv, predict, weights
from calc.units import parse_size
from hooks.figures import text
from hooks.pagemacros.build import SERVING, Build, table
from hooks.pagemacros.deployment import gen
from hooks.pagemacros.every_page import fig, source_text


def readings(build: Build, model_id: str | None = None) -> list[derive.KvReading]:
    return [r for r in derive.kv_readings(build.catalog) if model_id is None or r.model == model_id]


def reading(build: Build, model_id: str, label: str = "", kind: str | None = None) -> derive.KvReading:
    """One bytes-per-token reading of a model, picked by its label (and kind)."""
    found = [r for r in readings(build, model_id) if r.label == label and (kind is None or r.kind == kind)]
    if len(found) != 1:
        raise ValueError(f"reading({model_id!r}, {label!r}, {kind!r}): found {len(found)} readings, expected one")
    return found[0]


def reading_name(build: Build, r: derive.KvReading) -> str:
    """Model, engine, KV type and label of a reading, its speculative-token count as a figure."""
    label = f"{fig(r.speculative_tokens, 'count', source='setting')} speculative tokens" if r.speculative_tokens else text(r.label)
    return ", ".join(p for p in (text(build.catalog.models[r.model]["name"]), text(r.engine), text(r.kv_dtype), label) if p)


def bytes_per_token_table(build: Build, pool_text: str = "10e9") -> str:
    pool = parse_size(pool_text)
    rows = []
    for r in derive.kv_readings(build.catalog):
        what = reading_name(build, r)
        tokens, logged = r.tokens_at(pool)
        rows.append(
            (
                what,
                fig(r.bytes_per_token, "count", source=r.provenance),
                fig(tokens, "count") + (" (logged)" if logged else ""),
                text(r.provenance),
            )
        )
    return table(("Model, engine, KV type", "B / token / rank", f"Tokens in {fig(pool, 'e9')}", "Source"), rows)


def generations_table(build: Build, deployment_id: str = SERVING) -> str:
    d = build.catalog.deployments[deployment_id]
    max_len = d["settings"]["max_model_len"]
    rows = []
    for s in d["starts"]:
        tokens = s["kv_tokens"].count
        rows.append(
            (
                f"gen {s['generation']}" if s.get("generation") else "",
                f"{fig(s['kv_pin'], 'e9')} ({fig(s['kv_pin'])})",
                fig(s["kv_tokens"], "count"),
                fig(kv.full_contexts(tokens, max_len), "plain", down=True),
                s["outcome"] + (f": {source_text(s['outcome_note'])}" if s.get("outcome_note") else ""),
            )
        )
    return table(("Gen", "Pin", "Pool, tokens", f"Full {fig(max_len, 'count')}-token contexts", "Outcome"), rows)


def drafter_share_table(build: Build, deployment_id: str = "flash-next-pair") -> str:
    d = build.catalog.deployments[deployment_id]
    starts = sorted(d["starts"], key=lambda s: derive.settings(d, s)["speculative_tokens"])
    base = starts[0]
    rows = []
    for s in starts:
        k = derive.settings(d, s)["speculative_tokens"]
        tokens = s["kv_tokens"].count
        lost = base["kv_tokens"].count - tokens
        rows.append(
            (
                fig(k, "count", source="setting"),
                fig(s["kv_tokens"], "count"),
                fig(kv.bytes_per_token(s["kv_pin"], tokens), "count"),
                fig(lost, "count") if lost else "—",
                fig(Fraction(lost, base["kv_tokens"].value), "%", 1) if lost else "—",
            )
        )
    return table(
        (
            "Speculative tokens",
            "Pool, tokens",
            "B / token",
            f"Tokens fewer than at {fig(derive.settings(d, base)['speculative_tokens'], 'count')}",
            "Share",
        ),
        rows,
    )


def length_fits(build: Build, model_id: str = "deepseek-v4-flash") -> list[derive.LengthFit]:
    return [f for f in derive.length_fits(build.catalog) if f.model == model_id]


def length_fit_table(build: Build, model_id: str = "deepseek-v4-flash") -> str:
    """The per-request fit at each end of the pool's range: per-token and fixed terms, what
    pool / tokens comes to at each length, and the token count at our deployments' lengths."""
    fits = length_fits(build, model_id)
    other_lengths = sorted({derive.start_settings(build.catalog, d)["max_model_len"] for d in build.catalog.deployments.values()})
    lengths = [length for length, _ in fits[0].readings]
    head: tuple[str, ...] = ("Pool a rank", "Per token", "Fixed a request")
    head += tuple(f"pool / tokens at {fig(length, 'count')}" for length in lengths)
    head += tuple(f"tokens at {fig(length, 'count')}" for length in other_lengths)
    rows = []
    for f in fits:
        row: tuple[str, ...] = (fig(f.pool, "GiB", 1, source=f.provenance), fig(f.per_token, "B"), fig(f.fixed, "GB", 2))
        row += tuple(fig(f.effective_bytes_per_token(length), "B") for length in lengths)
        row += tuple(fig(kv.tokens_at_length(f.pool, f.per_token, f.fixed, length), "count") for length in other_lengths)
        rows.append(row)
    return table(head, rows)


def startup_line(build: Build, generation: int = 235, deployment_id: str = SERVING) -> str:
    """The two figures vLLM logs about the pool, as the log prints them."""
    d = build.catalog.deployments[deployment_id]
    start = gen(build, generation, deployment_id)
    max_len = derive.settings(d, start)["max_model_len"]
    tokens = start["kv_tokens"].count
    ratio = start["concurrency"].number if "concurrency" in start else kv.full_contexts(tokens, max_len)
    return "\n".join(
        (
            "```text",
            f"GPU KV cache size: {units.fmt(tokens, 'count')} tokens",
            f"Maximum concurrency for {units.fmt(max_len, 'count')} tokens per request: {units.fmt(ratio, 'x')}",
            "```",
        )
    )


def concurrency_table(build: Build) -> str:
    """Logged pools with their block size: tokens / max_model_len beside whole blocks per request."""
    rows = []
    for model in build.catalog.models.values():
        for rep in model.get("kv_reports", []):
            if not {"tokens", "max_model_len", "block_size"} <= rep.keys():
                continue
            tokens, max_len, block = rep["tokens"].count, rep["max_model_len"], rep["block_size"]
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
    return table(head, rows)


def bytes_per_token_compared(build: Build, deployment_id: str = SERVING, pool_text: str = "10e9") -> str:
    """One model's measured bytes per token beside its published and modeled figures."""
    d = build.catalog.deployments[deployment_id]
    model = build.catalog.models[d["model"]]
    settings = derive.settings(d)
    max_len, pool = settings["max_model_len"], parse_size(pool_text)
    mine = [r for r in readings(build, model["id"]) if r.kv_dtype == settings["kv_dtype"]]
    measured = next(r for r in mine if r.kind == "measured")
    arch = model["architecture"]
    latent = derive.modeled_from_architecture(model, settings["kv_dtype"], d["tp"])
    if latent is None:
        raise ValueError(f"{model['id']}: no architecture in models.yaml to model the latent from")
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
    return table(head, rows)


def never_start(build: Build, box_id: str, *typed: str) -> str:
    """A checked claim: these fractions fail vLLM's start check on this box; the build fails if one passes."""
    box = build.catalog.boxes[box_id]
    total, free = box["total_memory"].size, box["free_at_start"].size
    passing = [t for t in typed if fraction.passes(total, free, units.parse_fraction(t))]
    if passing:
        build.problem(
            f"{build.page_where(typed[0])}: the page says {' or '.join(typed)} can never start on {box['name']}, but calc passes {', '.join(passing)}"
        )
    return " or ".join(fig(units.parse_fraction(t), "fraction", len(t.split(".")[-1]) if "." in t else 0) for t in typed) + " can never start"


def fraction_check_table(build: Build, box_id: str = "rtx-5090-node") -> str:
    """vLLM's start check, ceil(total x fraction) <= free, at the fractions that matter on one box."""
    box = build.catalog.boxes[box_id]
    total, free = box["total_memory"].size, box["free_at_start"].size
    named = {
        build.catalog.policy["vllm"]["default_gpu_memory_utilization"].fraction: "vLLM's default",
        box["serving"]["gpu_memory_utilization"].fraction: "the serving start",
        fraction.ceiling(total, free): "the ceiling",
        Fraction(99, 100): "",
        Fraction(1): "",
    }
    rows = []
    for f in sorted(named):
        ok = fraction.passes(total, free, f)
        rows.append((fig(f, "fraction", 4), named[f], fig(fraction.requested(total, f)), fig(free), "starts" if ok else "refused"))
    return table(("Fraction", "Note", f"Asks (of {fig(box['total_memory'])})", "Free at start", "vLLM"), rows)


def _shipped(build: Build, config: str) -> hfconfig.Shape:
    """A shipped config's shape (models/configs/NAME/config.json)."""
    name = f"models/configs/{config}/config.json"
    return hfconfig.shape(hfconfig.load((build.root / name).read_text(encoding="utf-8"), name), name)


def plain_awq_extra(build: Build, config: str = "qwen2.5-7b", tokens: int = 2048) -> int:
    """What the plain AWQ kernel's whole weight adds to the forward peak of a shipped config on one rank
    (predict.forward_peak, dequantized against not), in bytes."""
    shape = _shipped(build, config)
    last = (predict.AUTO_AWQ_FROM[0], predict.AUTO_AWQ_FROM[1] - 1)
    return predict.forward_peak(shape, 1, tokens, 0, last, dequantized=True).bytes - predict.forward_peak(shape, 1, tokens, 0, last).bytes


def compile_embedding(build: Build, config: str, tp: int = 1) -> int:
    """The block a first start's compile holds for a shipped config on a rank (predict.compile_block), in bytes."""
    return predict.compile_block(_shipped(build, config), tp, (0, 28)).bytes


@dataclass(frozen=True)
class GraphExample:
    layers: int
    piecewise: int
    full: int
    v2_bytes: int  # Model Runner V2's own estimate (predict.v2_cuda_graph_estimate)
    v1_bytes: int  # the V1 runner's formula over the same graphs (predict.cuda_graph_estimate)


def graph_example(build: Build, config: str, max_num_seqs: int = 256, max_num_batched_tokens: int = 2048) -> GraphExample:
    """A shipped config's graphs at the given batch on Model Runner V2 (v0.30.0, no drafts, an
    attention backend with no buffers of its own, a dense model at TP 1), and both runners'
    estimates over them, the largest graph's activations in the first capture."""
    shape = _shipped(build, config)
    sizes, full_sizes = predict.graph_sizes(max_num_seqs, max_num_batched_tokens, shape.architecture, (0, 30), runner_v2=True)
    piecewise, full, layers = len(sizes), len(full_sizes), len(shape.layers)
    acts = predict.piecewise_activations(shape, 1, sizes[-1], 0, (0, 30)) if sizes else 0
    return GraphExample(layers, piecewise, full, predict.v2_cuda_graph_estimate(piecewise, full, layers, 0, acts),
                        predict.cuda_graph_estimate(piecewise, full, layers, 0, acts))  # fmt: skip


def load_rounding(build: Build, config: str, tp: int = 1) -> int:
    """What the load's allocator adds to a shipped config's weights on a rank from v0.21.0
    (weights.allocator_rounding), in bytes."""
    return weights.allocator_rounding(_shipped(build, config), tp)


MACROS = (
    compile_embedding,
    graph_example,
    load_rounding,
    readings,
    reading,
    bytes_per_token_table,
    generations_table,
    drafter_share_table,
    length_fits,
    length_fit_table,
    startup_line,
    concurrency_table,
    bytes_per_token_compared,
    never_start,
    fraction_check_table,
    plain_awq_extra,
)
