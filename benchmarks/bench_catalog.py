"""Catalog speed: the `gpufleet catalog offers` command end to end, and the in-process filter.

    .venv/bin/python benchmarks/bench_catalog.py [--runs 7] [--filter-runs 500]

Prints a markdown table. End to end = a fresh interpreter per run (import, load + validate the shipped table,
filter, sort, JSON out); the filter = `OfferTable.filter(gpu="H100-SXM")` then `.sort("price_per_gpu")` on the
already-loaded table.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

CMD = ["catalog", "offers", "--gpu", "H100-SXM", "--format", "json"]


def end_to_end_s(runs: int) -> list[float]:
    exe = Path(sys.executable).with_name("gpufleet")
    cmd = [str(exe), *CMD] if exe.exists() else [sys.executable, "-m", "gpufleet.cli.app", *CMD]
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        out.append(time.perf_counter() - t0)
    return out


def in_process_ms(runs: int) -> tuple[list[float], list[float], float, int]:
    from gpufleet.catalog.offers import load_shipped_offers

    t0 = time.perf_counter()
    table = load_shipped_offers()
    load_ms = (time.perf_counter() - t0) * 1e3
    filt, full = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        table.filter(gpu="H100-SXM")
        t1 = time.perf_counter()
        table.filter(gpu="H100", min_gpu_memory_gib=40, region_glob="us-*", max_price_usd_per_hour=100).sort(
            "price_per_gpu"
        )
        t2 = time.perf_counter()
        filt.append((t1 - t0) * 1e3)
        full.append((t2 - t1) * 1e3)
    return filt, full, load_ms, len(table)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--filter-runs", type=int, default=500)
    args = ap.parse_args()
    e2e = end_to_end_s(args.runs)
    filt, full, load_ms, n = in_process_ms(args.filter_runs)
    print(f"| measurement ({n} offers) | median | runs |")
    print("|---|---|---|")
    print(f"| `gpufleet {' '.join(CMD)}` end to end | {statistics.median(e2e) * 1e3:.0f} ms | {args.runs} |")
    print(f"| load + validate shipped table (first call, in process) | {load_ms:.0f} ms | 1 |")
    print(f"| `filter(gpu='H100-SXM')` | {statistics.median(filt):.2f} ms | {args.filter_runs} |")
    print(
        f"| 4-condition filter (gpu, memory, region glob, max price) + sort | "
        f"{statistics.median(full):.2f} ms |"
        f" {args.filter_runs} |"
    )


if __name__ == "__main__":
    main()
