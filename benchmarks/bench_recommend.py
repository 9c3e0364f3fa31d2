"""Speed of the recommendation engine over the full shipped catalog.

Targets: one workload ranked over the full catalog <= 100 ms in-process (warm: estimator placements cached,
catalog loaded); the `gpufleet recommend` CLI <= 1.5 s end to end (fresh process, interpreter start
included); 1,000 workloads <= 30 s in-process. The 1,000 workloads vary targets, SLOs, schedule, pricing,
budget, filters and objective over a few models and lengths (how a fleet looks: many workloads share a model),
so the placement cache is exercised as in real use; the cold cost per new model/length is reported
separately. Prints a Markdown table.

    .venv/bin/python benchmarks/bench_recommend.py [--workloads 1000]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from gpufleet.catalog.offers import load_offers
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.recommend.engine import recommend_on
from gpufleet.recommend.perf import DefaultEstimator
from gpufleet.recommend.types import Workload
from gpufleet.units import MS_PER_S

BASE = Workload(
    name="bench", model="llama-2-13b", task="inference", precision="fp16", input_len_tokens=1024,
    output_len_tokens=256, target_requests_per_s=2.0, ttft_p95_s=1.0, tpot_p95_s=0.06,
)  # fmt: skip


def random_workloads(n: int, seed: int = 0) -> list[Workload]:
    rng = random.Random(seed)
    models = [
        ("llama-3.1-8b", "fp16"),
        ("llama-2-13b", "fp16"),
        ("llama-3.1-70b", "fp8"),
        ("mistral-7b", "bf16"),
    ]
    lengths = [(512, 128), (1024, 256), (2048, 512)]
    out = []
    for i in range(n):
        model, prec = rng.choice(models)
        inp, outp = rng.choice(lengths)
        out.append(dataclasses.replace(
            BASE, name=f"w{i}", model=model, precision=prec, input_len_tokens=inp, output_len_tokens=outp,
            target_requests_per_s=rng.choice([0.5, 1.0, 2.0, 5.0, 10.0, 50.0]),
            ttft_p95_s=rng.choice([None, 0.5, 1.0, 2.0]), tpot_p95_s=rng.choice([None, 0.03, 0.06]),
            hours_per_month=rng.choice([176.0, 400.0, 730.0]), pricing=rng.choice(["on_demand", "spot"]),
            budget_usd_per_month=rng.choice([None, 2000.0, 20000.0]),
            providers=rng.choice([(), ("aws",), ("aws", "gcp", "azure")]),
            regions=rng.choice([(), ("us-*",)]),
            objective=rng.choice(["cheapest", "fastest", "throughput_per_dollar"]),
        ))  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    table = load_offers()
    est = DefaultEstimator()
    spot = load_spot_assumptions()
    rows: list[tuple[str, str, str, str]] = []

    t0, c0 = time.perf_counter(), time.process_time()
    rec = recommend_on(table, BASE, est, spot)
    cold, cold_cpu = time.perf_counter() - t0, time.process_time() - c0
    times = []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        recommend_on(table, BASE, est, spot)
        times.append(time.perf_counter() - t0)
    warm = statistics.median(times)
    rows.append(("one workload, full catalog, cold (estimates computed; CPU time)",
                 f"{cold * MS_PER_S:.0f} ms ({cold_cpu * MS_PER_S:.0f} ms)", "-",
                 f"{len(table)} offers, {rec.candidates_evaluated} candidates"))  # fmt: skip
    rows.append(("one workload, full catalog, warm (median)", f"{warm * MS_PER_S:.1f} ms", "<= 100 ms",
                 "PASS" if warm <= 0.1 else "FAIL"))  # fmt: skip

    ws = random_workloads(args.workloads)
    t0, c0 = time.perf_counter(), time.process_time()
    statuses: dict[str, int] = {}
    for w in ws:
        r = recommend_on(table, w, est, spot, limit=5)
        statuses[r.status] = statuses.get(r.status, 0) + 1
    many, many_cpu = time.perf_counter() - t0, time.process_time() - c0
    counts = ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
    rows.append((f"{len(ws)} workloads, full catalog (CPU time)", f"{many:.1f} s ({many_cpu:.1f} s)",
                 "<= 30 s",
                 ("PASS" if many <= 30 else "FAIL") + f" ({counts})"))  # fmt: skip

    exe = Path(sys.executable).with_name("gpufleet")
    if exe.exists():
        cmd = [str(exe), "recommend", "--model", "llama-2-13b", "--precision", "fp16", "--target-rps", "2",
               "--ttft-ms", "1000", "--tpot-ms", "60"]  # fmt: skip
        subprocess.run(
            cmd, capture_output=True, env=os.environ | {"NO_COLOR": "1"}, check=False
        )  # warm disk cache
        times, ok = [], True
        for _ in range(5):
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, capture_output=True, env=os.environ | {"NO_COLOR": "1"}, check=False)
            times.append(time.perf_counter() - t0)
            ok = ok and proc.returncode == 0
        cli = statistics.median(times)
        verdict = ("PASS" if ok and cli <= 1.5 else "FAIL") + ("" if ok else f" (exit {proc.returncode})")
        label = "`gpufleet recommend` CLI with SLOs, end to end (median of 5)"
        rows.append((label, f"{cli:.2f} s", "<= 1.5 s", verdict))
    else:
        rows.append(("`gpufleet recommend` CLI", "not installed", "<= 1.5 s", "SKIPPED"))

    print(
        f"1-minute load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs (wall times grow with it)"
    )
    print("| measurement | time | target | result |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
