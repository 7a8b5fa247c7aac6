"""The pool calc/engine/predict/ predicts beside the pool vLLM printed, on the public starts of
models/pool_starts.yaml: each start's error, and the median and 90th-percentile error of the
fitted and the held-out starts apart (every third start is held out; nothing is fitted to it).

    python scripts/pool_accuracy.py          # the table and the summary
    python scripts/pool_accuracy.py --fit    # the constants the fitted starts give
    python scripts/pool_accuracy.py --json   # the same as one JSON object
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calc.catalog.entries import Box  # noqa: E402
from calc.catalog.loader import load_dir  # noqa: E402
from calc.checks import poolaccuracy, records  # noqa: E402


def load(root: Path = ROOT) -> tuple[list[poolaccuracy.Row], poolaccuracy.Constants]:
    import yaml

    data = yaml.safe_load((root / records.POOL_STARTS).read_text(encoding="utf-8"))
    entries, graph_logs = records.pool_starts(data), records.graph_logs(data)
    configs = {e.config: json.loads((root / "models" / "configs" / e.config / "config.json").read_text()) for e in entries}
    names = {e.log for e in entries} | {g.log for g in graph_logs}
    logs = {n: (root / "logs" / "public" / n).read_text(encoding="utf-8") for n in names}
    sources = yaml.safe_load((root / "logs" / "public" / "SOURCES.yaml").read_text(encoding="utf-8"))
    listed = sources if isinstance(sources, list) else sources.get("logs", [])
    urls = {s["file"]: s["url"] for s in listed if isinstance(s, dict) and "file" in s}
    catalog = load_dir(root / "catalog")
    rows = poolaccuracy.rows(entries, configs, logs, catalog.boxes, urls)
    layers, buffers, activations, moe = graph_models(graph_logs, entries, logs, catalog.boxes, rows, root)
    return rows, poolaccuracy.fit(rows, graph_logs, logs, layers, buffers, activations, moe)


def graph_models(
    graph_logs: list[records.GraphLog], entries: list[records.PoolStart], logs: dict[str, str], boxes: Mapping[str, Box], rows: list[poolaccuracy.Row],
    root: Path = ROOT,
) -> tuple[dict[str, int], dict[str, int], dict[str, int], dict[str, int]]:  # fmt: skip
    """Each CUDA graph log's decoder layers (and those of them with routed experts), the attention backend's buffers in its first full
    capture (predict.full_graph_buffers for the largest full graph it profiled) and its largest
    piecewise graph's activations (predict.piecewise_activations): from its own config and card, or
    else its start's, at the tensor-parallel size and batch its row predicted (a log that is no
    start's: its own TP, and 8,192 batched tokens, which enter only FlashInfer's workspace from
    0.26.0)."""
    from calc.engine import hfconfig, predict

    starts = {e.log: e for e in entries}
    predicted = {r.log: r.prediction for r in rows}
    layers, buffers, activations, moe = {}, {}, {}, {}
    for g in graph_logs:
        e, p = starts.get(g.log), predicted.get(g.log)
        name, box = g.config or (e.config if e else None), g.box or (e.box if e else None)
        if name is None:
            continue
        path = root / "models" / "configs" / name / "config.json"
        config = json.loads(path.read_text(encoding="utf-8"))
        shape = hfconfig.shape(config, str(path))
        layers[g.log] = len(shape.layers)
        moe[g.log] = sum(1 for m in shape.mlps if m.experts)
        largest = poolaccuracy.largest_graph(logs[g.log], "FULL")
        rel = predict.release(e.engine_version if e else None)
        tp, batch = (p.tp, p.max_num_batched_tokens) if p else (g.tp or 1, 8192)
        widest = poolaccuracy.largest_graph(logs[g.log], "PIECEWISE")
        if widest:
            activations[g.log] = predict.piecewise_activations(shape, tp, widest, predict.experts_per_token(config), rel)
        if box and largest:
            card = predict.card_of_box(predict.find_box(boxes, box))
            capture = predict.capture_of(shape, card, e.kv_cache_dtype if e else "auto", 0)
            buffers[g.log] = predict.full_graph_buffers(shape, capture, tp, largest, batch, rel)[0]
    return layers, buffers, activations, moe


def _pct(x: object) -> str:
    return "-" if x is None else f"{float(x) * 100:+.1f} %"  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fit", action="store_true", help="print the constants the fitted starts give")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows, fitted = load()
    if args.fit:
        print(json.dumps(fitted.to_json(), indent=2))
        return 0
    sets = {"fitted": [r for r in rows if not r.held_out], "held out": [r for r in rows if r.held_out]}
    summaries = {name: poolaccuracy.summary(rs) for name, rs in sets.items()}
    if args.json:
        out = {
            "starts": [
                {
                    "label": r.label,
                    "log": r.log,
                    "held_out": r.held_out,
                    "printed_pool_bytes": r.printed_pool,
                    "predicted_pool_bytes": r.prediction.available_kv_bytes,
                    "error": None if r.error is None else float(r.error),
                    "verdict": r.prediction.verdict,
                    "verdict_matches": r.verdict_matches,
                }
                for r in rows
            ],  # fmt: skip
            "summary": {
                name: {
                    "starts": s.starts,
                    "median_abs_error": None if s.median is None else float(s.median),
                    "p90_abs_error": None if s.p90 is None else float(s.p90),
                    "verdicts_right": s.verdicts_right,
                    "verdicts": s.verdicts,
                }
                for name, s in summaries.items()
            },  # fmt: skip
        }
        print(json.dumps(out, indent=2))
        return 0
    gib = 2**30
    print(f"{'start':58} {'set':8} {'printed':>10} {'predicted':>10} {'error':>9}  verdict")
    for r in rows:
        p = r.prediction
        print(f"{r.label[:58]:58} {'held' if r.held_out else 'fitted':8} {r.printed_pool / gib:9.2f}G {p.available_kv_bytes / gib:9.2f}G "
              f"{_pct(r.error):>9}  {p.verdict}{'' if r.verdict_matches else f' (vLLM: {r.log_verdict})'}")  # fmt: skip
    for name, rs in sets.items():
        n = poolaccuracy.summary(rs, naive=True)
        print(f"{name}, the naive rule (total x utilization - weights): median |error| {_pct(n.median)}, 90th percentile {_pct(n.p90)}")
    for kind, group, g in poolaccuracy.by_group(rows):
        print(f"{kind} {group}: {g.starts} with a printed pool; median |error| {_pct(g.median)}, 90th percentile {_pct(g.p90)}; "
              f"verdict right on {g.verdicts_right} of {g.verdicts}")  # fmt: skip
    for t in poolaccuracy.term_errors(rows):
        print(f"term {poolaccuracy.TERM_NAMES[t.term]}, {t.era or 'every era'}: {t.starts} starts print it; median |error| "
              f"{t.median / gib:.2f} GiB ({_pct(t.median_relative)}), 90th percentile {t.p90 / gib:.2f} GiB")  # fmt: skip
    for name, s in summaries.items():
        print(f"{name}: {s.starts} starts with a printed pool; median |error| {_pct(s.median)}, 90th percentile {_pct(s.p90)}; "
              f"verdict right on {s.verdicts_right} of {s.verdicts}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
