"""How fast the log reader reads a long log, as a ratio to reading the same file's lines and
doing nothing with them: figures to read, not a pass/fail test.

It writes a log of about 50 MB to a temporary file (a real start's lines from logs/public, then
the request and stats lines a serving engine prints for hours), then prints, as medians over a
few runs: the time to iterate the file's lines, the time of `python -m calc ingest`'s reading
(calc.present.commands.ingest.read_log_file), and their ratio.
Run: .venv/bin/python scripts/bench_ingest.py [--megabytes 50] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calc.present.commands.ingest import read_log_file  # noqa: E402

START = ROOT / "logs" / "public"
SERVING = (
    "(APIServer pid=1) INFO 05-28 08:{m:02d}:{s:02d} [loggers.py:123] Engine 000: Avg prompt throughput: 1234.5 tokens/s, "
    "Avg generation throughput: 56.7 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.3%, Prefix cache hit rate: 45.6%\n",
    "(APIServer pid=1) INFO 05-28 08:{m:02d}:{s:02d} [logger.py:41] Received request chatcmpl-{n:032x}: prompt: 'Summarize the "
    "memory notes below', params: SamplingParams(n=1, temperature=0.7, max_tokens=512), lora_request: None.\n",
)


def write_log(path: Path, megabytes: int) -> int:
    start = next(p for p in sorted(START.glob("*.log")) if "cudagraph-estimate-enginecore" in p.name).read_text(encoding="utf-8")
    size, n = 0, 0
    with path.open("w", encoding="utf-8") as out:
        out.write(start)
        while size < megabytes * 2**20:
            line = SERVING[n % 2].format(m=n // 60 % 60, s=n % 60, n=n * 2654435761 % 2**128)
            out.write(line)
            size, n = size + len(line), n + 1
    return path.stat().st_size


def timed(run) -> float:
    began = time.perf_counter()
    run()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "serving.log"
        size = write_log(path, args.megabytes)

        def iterate() -> None:
            with path.open(encoding="utf-8") as f:
                for _ in f:
                    pass

        baseline = statistics.median(timed(iterate) for _ in range(args.runs))
        reading = statistics.median(timed(lambda: read_log_file(str(path))) for _ in range(args.runs))
    print(f"log: {size / 2**20:.1f} MiB")
    print(f"iterate its lines: {baseline:.2f} s")
    print(f"read it (calc ingest): {reading:.2f} s")
    print(f"ratio: {reading / baseline:.1f}x the bare iteration, {size / 2**20 / reading:.0f} MiB/s")


if __name__ == "__main__":
    main()
