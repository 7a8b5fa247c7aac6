"""The pool a peer estimator implies, beside calc/engine/predict's and the naive rule's, on the same
public starts (models/pool_starts.yaml).

The peer is `vramcalc` (PyPI, 0.1.2, MIT): of the memory estimators in the package lists it is the
one that runs offline from a config.json alone. `hf-mem` reads the checkpoint from the Hugging Face
Hub over the network (hf_mem/run.py fetches every file list and header) and `ml-memguard`'s vLLM
adapter reads a running engine, so neither can be run here. No installable estimator predicts
vLLM's KV pool itself: vramcalc predicts a serving footprint (weights, KV cache for a batch and a
length, activations, a fixed 0.75 GB overhead), so the pool it implies is taken as a new user
would take it: the card's total times the utilization, less everything it counts but the KV cache,
for one request of max_model_len tokens.

vramcalc is no dependency of this project (it is not in requirements.txt); install it beside the
project to run this script (`pip install vramcalc==0.1.2`). Without it the script says so and
exits 2.

    python scripts/peer_pool_accuracy.py          # each start, and the medians
    python scripts/peer_pool_accuracy.py --json
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from fractions import Fraction
from pathlib import Path
from statistics import median
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from calc.checks import poolaccuracy, records  # noqa: E402

PEER = "vramcalc"


def table(peer: ModuleType) -> list[dict[str, Any]]:
    import pool_accuracy
    import yaml

    rows, _ = pool_accuracy.load(ROOT)
    entries = records.pool_starts(yaml.safe_load((ROOT / records.POOL_STARTS).read_text(encoding="utf-8")))
    out = []
    for r in rows:
        config = json.loads((ROOT / "models" / "configs" / entries[r.index].config / "config.json").read_text())
        length = entries[r.index].max_model_len
        try:
            e = peer.estimate(config, mode="inference", batch=1, seq_len=length)
            implied: int | None = int(r.prediction.requested_bytes - (e.weights // max(1, r.prediction.tp) + e.activations + e.overhead))
        except (ValueError, KeyError, TypeError, NotImplementedError) as error:
            implied, why = None, str(error).splitlines()[0][:80]
        else:
            why = ""
        printed = r.printed_pool
        out.append({
            "label": r.label, "printed": printed, "ours": r.prediction.available_kv_bytes, "peer": implied, "peer_refused": why,
            "ours_error": None if r.error is None else float(r.error),
            "naive_error": None if r.naive_error is None else float(r.naive_error),
            "peer_error": None if implied is None or printed <= 0 else float(Fraction(implied - printed, printed)),
        })  # fmt: skip
    return out


def _summary(values: list[float | None]) -> tuple[int, float | None, float | None]:
    errors = [Fraction(abs(v)) for v in values if v is not None]
    if not errors:
        return 0, None, None
    return len(errors), float(median(errors)), float(poolaccuracy.percentile(errors, 90))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    try:
        peer = importlib.import_module(PEER)
    except ImportError:
        print(f"{PEER}: not installed, expected it beside the project to compare with (pip install vramcalc==0.1.2)", file=sys.stderr)
        return 2
    rows = table(peer)
    summary = {k: _summary([r[f"{k}_error"] for r in rows]) for k in ("ours", "naive", "peer")}
    if args.json:
        print(json.dumps({"starts": rows, "summary": {k: dict(zip(("starts", "median", "p90"), v, strict=True)) for k, v in summary.items()}}, indent=2))
        return 0
    gib = 2**30

    def pct(x: float | None) -> str:
        return "-" if x is None else f"{x * 100:+.1f} %"

    print(f"{'start':58} {'printed':>9} {'ours':>9} {'peer':>9}  ours / naive / peer error")
    for r in rows:
        peer_text = f"{r['peer'] / gib:8.2f}G" if r["peer"] is not None else "  refused"
        print(f"{r['label'][:58]:58} {r['printed'] / gib:8.2f}G {r['ours'] / gib:8.2f}G {peer_text}  "
              f"{pct(r['ours_error'])} / {pct(r['naive_error'])} / {pct(r['peer_error'])}{'  (' + r['peer_refused'] + ')' if r['peer_refused'] else ''}")  # fmt: skip
    for k, (n, med, p90) in summary.items():
        print(f"{k}: {n} starts with a printed pool; median |error| {pct(med)}, 90th percentile {pct(p90)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
