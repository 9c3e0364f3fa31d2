"""Simulator speed and the headline numbers of docs/simulate.md.

    .venv/bin/python benchmarks/bench_simulate.py [--quick] [--workers N]

Prints a Markdown table:

* the one-hour Azure conversation trace (19,366 requests) under the KPA policy (target <= 2 s);
* 10^6 requests (the trace played 52 times back to back) under KPA (target <= 60 s);
* a 100-configuration local sweep (4 policies x 5 targets x 5 seeds on the Azure trace);
* the M/M/c check at 2 million customers: mean wait against Erlang C (target within 2 %);
* the saving of the cheapest autoscaling configuration against static peak at equal p95 TTFT (computed,
  not asserted; the seed's goal is 40 %): on the hour as recorded with the default cold start, with a 45 s
  cold start (fleet-anchors F: 15-45 s typical for a 7B model), and on the hour stretched to four hours
  (rate x0.25: the same load shape with swings four times slower, the "longer troughs" view).

Static peak is the fewest fixed replicas whose p95 TTFT meets the SLO (bisection, warm from t = 0); each
autoscaler starts warm at its own target (:func:`gpufleet.simulate.autoscale.warm_start_replicas`). The
machine's load average is printed with the timings (the development machine is shared: 2 cores).

``--quick`` skips the 10^6-request run, the sweep and the 2-million-customer check; ``--no-compare``
skips the equal-SLO comparisons.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
AZURE = ROOT / "tests" / "data" / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"
sys.path.insert(0, str(ROOT / "tests"))


def _time(fn):  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _load() -> str:
    return f"{os.getloadavg()[0]:.1f}"


def _compare(label, tr, dep, slo, grid, kv, simulate_autoscale, static_peak, make_policy):  # type: ignore[no-untyped-def]
    """Static peak against the cheapest autoscaler setting meeting the same SLOs (p95 TTFT and p95 TPOT at
    their defaults: ``meets_slo``, the equal-service check of the analyzer)."""
    peak = static_peak(tr, dep, slo_ttft_s=slo, kv_mode=kv)
    from gpufleet.simulate.autoscale import DEFAULT_SLO_TPOT_S as peak_tpot_slo

    best = None
    tried = met = 0
    for name, key, values in grid:
        for v in values:
            for min_r in (1, 4, 6):
                res = simulate_autoscale(
                    tr,
                    dep,
                    make_policy(name, **{key: v}),
                    min_replicas=min_r,
                    slo_ttft_s=slo,
                    compare_static_peak=False,
                    kv_mode=kv,
                )
                tried += 1
                if res.meets_slo:
                    met += 1
                    if best is None or res.cost_usd < best[0]:
                        best = (
                            res.cost_usd,
                            f"{name} {key}={v} min={min_r}",
                            res.ttft.p95_s,
                            res.replica_hours,
                        )
    rows = [
        (
            f"{label}: static peak (p95 TTFT <= {slo:g} s, p95 TPOT <= {peak_tpot_slo:g} s)",
            f"{peak.replicas} replicas, ${peak.cost_usd:.2f}",
            f"p95 TTFT {peak.ttft_p95_s:.2f} s",
        )
    ]
    if best:
        rows.append(
            (
                f"{label}: cheapest of {tried} autoscaler settings at equal SLO ({met} met it): {best[1]}",
                f"${best[0]:.2f} ({best[3]:.2f} replica-h)",
                f"saves {1 - best[0] / peak.cost_usd:.1%} vs static peak (seed goal 40 %); "
                f"p95 {best[2]:.2f} s",
            )
        )
    else:
        rows.append(
            (f"{label}: cheapest autoscaler at equal SLO", f"none of {tried} met the SLO", "seed goal 40 %")
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--no-compare", action="store_true")
    ap.add_argument("--kv-mode", default="paged", choices=("paged", "reserve"))
    args = ap.parse_args()
    kv = args.kv_mode

    from gpufleet.simulate.autoscale import deployment_for, simulate_autoscale, static_peak
    from gpufleet.simulate.cluster import replay
    from gpufleet.simulate.coldstart import ColdStart
    from gpufleet.simulate.policies import StaticPolicy, make_policy
    from gpufleet.simulate.serving import constant_service
    from gpufleet.simulate.sweep import SweepSpec, run_sweep
    from gpufleet.simulate.traces import make_trace, read_trace, repeat, scale_rate

    rows: list[tuple[str, str, str]] = []
    trace = read_trace(AZURE)
    dep = deployment_for(trace, model="llama-3.1-8b", gpu="l4")
    pol = make_policy("kpa")
    times = []
    for _ in range(3):
        s, res = _time(lambda: simulate_autoscale(trace, dep, pol, compare_static_peak=False, kv_mode=kv))
        times.append(s)
    rows.append(
        (
            f"Azure conv 1 h ({len(trace):,} requests), KPA, 8B on L4, {kv} KV",
            f"{min(times):.2f} s (median {sorted(times)[1]:.2f} s; load {_load()})",
            f"<= 2 s; {res.preemptions} preemptions",
        )
    )

    if not args.no_compare:
        slo = 2.0
        grid = (
            ("kpa", "target_concurrency", (4, 6, 8, 10, 12, 14)),
            ("hpa", "target", (4, 6, 8, 10, 12, 14)),
            ("ray", "target_ongoing_requests", (4, 6, 8, 10, 12, 14)),
            ("queue", "target_waiting", (0.25, 0.5, 1, 2)),
        )
        fast = dataclasses.replace(
            dep, cold_start=ColdStart(provisioning_s=0.0, image_pull_s=17.0, weight_load_s=8.0, warmup_s=20.0)
        )
        for label, tr, d in (
            ("hour as recorded, cold start 118 s", trace, dep),
            ("hour as recorded, cold start 45 s (node already up)", trace, fast),
            ("hour stretched to 4 h (rate x0.25), cold start 118 s", scale_rate(trace, 0.25), dep),
        ):
            rows.extend(_compare(label, tr, d, slo, grid, kv, simulate_autoscale, static_peak, make_policy))

    if not args.quick:
        big = repeat(trace, 52)
        s, _ = _time(lambda: simulate_autoscale(big, dep, pol, compare_static_peak=False, kv_mode=kv))
        rows.append(
            (f"{len(big):,} requests (trace x52), KPA, {kv} KV", f"{s:.1f} s (load {_load()})", "<= 60 s")
        )

        spec = SweepSpec(
            kind="autoscale",
            base={"trace": str(AZURE), "model": "llama-3.1-8b", "gpu": "l4"},
            grid={"policy": ["kpa", "hpa", "ray", "queue"], "target": [4, 6, 8, 10, 12]},
            seeds=(0, 1, 2, 3, 4),
        )
        s, sw = _time(lambda: run_sweep(spec, workers=args.workers))
        rows.append(
            (
                f"local sweep, {len(sw.rows)} configs, {args.workers or os.cpu_count()} processes",
                f"{s:.1f} s",
                f"{s / len(sw.rows):.2f} s per config",
            )
        )

        c, lam, n = 3, 1.8, 2_000_000
        rng = np.random.default_rng(0)
        t = np.cumsum(rng.exponential(1 / lam, n))
        mmc = make_trace(
            name="mmc",
            layout="synthetic",
            arrival_s=t,
            input_tokens=np.zeros(n),
            output_tokens=1 + rng.exponential(1.0, n),
        )
        s, raw = _time(
            lambda: replay(
                mmc, constant_service(step_s=1.0), StaticPolicy(replicas=c), min_replicas=c, max_replicas=c
            )
        )
        a = lam
        head = sum(a**k / math.factorial(k) for k in range(c))
        tail = a**c / math.factorial(c) / (1 - a / c)
        erlang = tail / (head + tail) / (c - lam)
        mean = float(np.mean(raw.admit_s - mmc.arrival_s))
        rows.append(
            (
                f"M/M/{c} rho={lam / c:.1f}, {n:,} customers: mean wait",
                f"{mean:.4f} vs Erlang C {erlang:.4f}",
                f"{mean / erlang - 1:+.2%} ({s:.0f} s)",
            )
        )

    print("| benchmark | result | note |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
