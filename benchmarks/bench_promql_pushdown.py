"""PromQL pushdown speed: ``telemetry findings --prometheus`` over a generated fleet in a real Prometheus.

    .venv/bin/python benchmarks/bench_promql_pushdown.py [--gpus 100] [--days 14] [--step-s 60]
        [--gpus-per-workload 4] [--chunk-hosts 50] [--keep DIR]

1. Generate: GPUS dcgm-exporter GPUs (8 per host, SM_ACTIVE and FB_USED, one sample per STEP_S for DAYS,
   ending now; every GPUS_PER_WORKLOAD GPUs one Deployment's pods) as OpenMetrics text (not timed for the
   analysis; reported).
2. Backfill with ``promtool tsdb create-blocks-from openmetrics`` and start ``prometheus`` on that storage
   (retention 30 days) (timed separately).
3. Pushdown: :func:`gpufleet.telemetry.promql.prometheus_fleet_stats` over the 14-day lookback, then the
   findings (timed: wall time, queries, summary values returned).

Prints a markdown table, with an extrapolation to larger fleets that is **computed, not measured**: the
pushdown's cost grows with the samples Prometheus scans (every quantile reads every sample of its range), so
time per sample is carried over linearly, divided by the queriers that share the label chunks (Thanos or
Mimir run chunks in parallel; one 2-core Prometheus here).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx

from gpufleet.telemetry.findings import find
from gpufleet.telemetry.promql import prometheus_fleet_stats, prometheus_window

#: Kubernetes' generated-name alphabet (pod suffixes), so the pods group into their Deployments.
_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def _write_fleet(path: Path, *, gpus: int, days: float, step_s: int, per_workload: int, end_s: int) -> int:
    """OpenMetrics text of the fleet; returns the number of samples."""
    n = int(days * 86400 / step_s)
    start = end_s - (n - 1) * step_s
    samples = 0
    with path.open("w", encoding="utf-8") as fh:
        for g in range(gpus):
            wl = g // per_workload
            lab = (
                f'gpu="{g % 8}",UUID="GPU-{g:07d}",Hostname="h{g // 8}",modelName="NVIDIA H100 80GB HBM3",'
                f'namespace="ns{wl % 10}",pod="svc{wl}-5f6d7c8b9-{_SAFE[g % per_workload % 27]}k2mx"'
            )
            level = (g % 10) / 10.0
            sm = [f"{level + 0.05 * ((k * 7919) % 13) / 13:.3f}" for k in range(n)]
            mem = 20000 + 600 * (g % 100)
            fh.write(
                "".join(
                    f"DCGM_FI_PROF_SM_ACTIVE{{{lab}}} {v} {start + k * step_s}\n" for k, v in enumerate(sm)
                )
            )
            fh.write("".join(f"DCGM_FI_DEV_FB_USED{{{lab}}} {mem} {start + k * step_s}\n" for k in range(n)))
            samples += 2 * n
        fh.write("# EOF\n")
    return samples


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=100)
    ap.add_argument("--days", type=float, default=14.0)
    ap.add_argument("--step-s", type=int, default=60)
    ap.add_argument("--gpus-per-workload", type=int, default=4)
    ap.add_argument("--chunk-hosts", type=int, default=50)
    ap.add_argument("--keep", type=Path, default=None, help="work directory to keep (default: a temp dir)")
    args = ap.parse_args()
    prom, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prom is None or promtool is None:
        raise SystemExit("prometheus and promtool are needed (tools/system-deps.sh installs them)")
    d = args.keep or Path(tempfile.mkdtemp(prefix="bench-promql-"))
    d.mkdir(parents=True, exist_ok=True)
    end_s = int(time.time()) // 60 * 60 - 600
    t = time.perf_counter()
    samples = _write_fleet(
        d / "fleet.om",
        gpus=args.gpus,
        days=args.days,
        step_s=args.step_s,
        per_workload=args.gpus_per_workload,
        end_s=end_s,
    )
    gen_s = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run(
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(d / "fleet.om"), str(d / "tsdb")],
        check=True,
        capture_output=True,
    )
    backfill_s = time.perf_counter() - t
    (d / "fleet.om").unlink()
    (d / "prometheus.yml").write_text("global:\n  scrape_interval: 1m\n", encoding="utf-8")
    port = _free_port()
    t = time.perf_counter()
    proc = subprocess.Popen(
        [
            prom,
            f"--config.file={d / 'prometheus.yml'}",
            f"--storage.tsdb.path={d / 'tsdb'}",
            "--storage.tsdb.retention.time=30d",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(3000):
            try:
                if httpx.get(f"{url}/-/ready", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        start_s = time.perf_counter() - t
        window = prometheus_window(
            url, lookback_days=args.days, end=datetime.fromtimestamp(end_s + 60, tz=UTC), percentile=0.95
        )
        t = time.perf_counter()
        stats, info = prometheus_fleet_stats(url, window=window, chunk_hosts=args.chunk_hosts, timeout_s=600)
        ff = find(stats.gpus, window, workloads=stats.workloads, serving=stats.serving)
        push_s = time.perf_counter() - t
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if args.keep is None:
            shutil.rmtree(d, ignore_errors=True)
    us_per_sample = push_s / samples * 1e6
    print("| step | measured |")
    print("|---|---|")
    print(
        f"| fleet | {args.gpus:,} GPUs x {args.days:g} days x 1 sample/{args.step_s} s x 2 metrics = "
        f"{samples:,} samples; {len(ff.workloads)} workloads |"
    )
    print(f"| generate OpenMetrics text | {gen_s:.1f} s |")
    print(f"| promtool backfill | {backfill_s:.1f} s |")
    print(f"| prometheus start (loads the blocks) | {start_s:.1f} s |")
    print(
        f"| pushdown + findings | {push_s:.1f} s ({info['queries']} queries, {info['series_returned']:,} "
        f"summary values returned, {us_per_sample:.2f} us per stored sample) |"
    )
    print()
    print("Extrapolated (linear in samples scanned; computed from the row above, not measured):")
    print()
    print("| fleet | samples | one querier | 64 queriers in parallel (label chunks) |")
    print("|---|---|---|---|")
    for n_gpus, step in ((10_000, 15), (1_000_000, 15)):
        s = n_gpus * args.days * 86400 / step * 2
        secs = s * us_per_sample / 1e6
        print(
            f"| {n_gpus:,} GPUs x {args.days:g} d at {step} s, 2 metrics | {s:.2e} | {secs / 3600:,.1f} h | "
            f"{secs / 64 / 3600:,.2f} h |"
        )


if __name__ == "__main__":
    main()
