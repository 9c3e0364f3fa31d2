"""PromQL pushdown speed: ``telemetry findings --prometheus`` over generated fleets in a real Prometheus.

    .venv/bin/python benchmarks/bench_promql_pushdown.py [--gpus 48 500 2000] [--days 14] [--step-s 60]
        [--gpus-per-workload 4] [--chunk-hosts 50] [--workers 4] [--keep DIR]

Per fleet size:

1. Generate: GPUS dcgm-exporter GPUs (8 per host, SM_ACTIVE and FB_USED, one sample per STEP_S for DAYS,
   ending now; every GPUS_PER_WORKLOAD GPUs one Deployment's pods) as OpenMetrics text, one file per
   2-hour block (``promtool tsdb create-blocks-from openmetrics`` re-reads its whole input for every 2-hour
   block it writes, so one 14-day file costs 168 passes; per-block files cost one), not timed for the
   analysis.
2. Backfill each file with promtool (two at once) and start ``prometheus`` on that storage (timed
   separately).
3. Pushdown: :func:`gpufleet.telemetry.promql.prometheus_fleet_stats` over the lookback, then the findings
   (timed: wall time, queries, summary values and bytes returned).

Prints a markdown table, a least-squares scaling law (Prometheus CPU seconds = a + b x samples) fitted on
the measured rows, and an extrapolation to 10^6 GPUs that is **computed from that law, not measured**, divided
by the queriers assumed to share the label chunks (Thanos or Mimir run chunks in parallel; one Prometheus on a
loaded 2-core machine here).
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import httpx

from gpufleet.telemetry.findings import find
from gpufleet.telemetry.promql import DEFAULT_WORKERS, prometheus_fleet_stats, prometheus_window

#: Kubernetes' generated-name alphabet (pod suffixes), so the pods group into their Deployments.
_SAFE = "bcdfghjklmnpqrstvwxz2456789"
_BLOCK_S = 7200  # Prometheus's 2-hour head block


def _labels(g: int, per_workload: int) -> str:
    wl = g // per_workload
    return (
        f'gpu="{g % 8}",UUID="GPU-{g:07d}",Hostname="h{g // 8}",modelName="NVIDIA H100 80GB HBM3",'
        f'namespace="ns{wl % 10}",pod="svc{wl}-5f6d7c8b9-{_SAFE[g % per_workload % 27]}k2mx"'
    )


def write_fleet(d: Path, *, gpus: int, days: float, step_s: int, per_workload: int, end_s: int) -> list[Path]:
    """OpenMetrics files of the fleet, one per 2-hour block (each ends with ``# EOF``)."""
    n = int(days * 86400 / step_s)
    start = end_s - (n - 1) * step_s
    labs = [_labels(g, per_workload) for g in range(gpus)]
    noise = [0.05 * ((k * 7919) % 13) / 13 for k in range(13)]
    files: list[Path] = []
    k0 = 0
    while k0 < n:
        t0 = start + k0 * step_s
        k1 = min(n, k0 + max(1, ((t0 // _BLOCK_S + 1) * _BLOCK_S - t0 + step_s - 1) // step_s))
        path = d / f"fleet-{len(files):05d}.om"
        with path.open("w", encoding="utf-8") as fh:
            for g in range(gpus):
                level = (g % 10) / 10.0
                ts = [start + k * step_s for k in range(k0, k1)]
                sm = "".join(
                    f"DCGM_FI_PROF_SM_ACTIVE{{{labs[g]}}} {level + noise[(k0 + i) % 13]:.3f} {t}\n"
                    for i, t in enumerate(ts)
                )
                mem = 20000 + 600 * (g % 100)
                fb = "".join(f"DCGM_FI_DEV_FB_USED{{{labs[g]}}} {mem} {t}\n" for t in ts)
                fh.write(sm + fb)
            fh.write("# EOF\n")
        files.append(path)
        k0 = k1
    return files


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of process ``pid`` so far (Linux ``/proc/<pid>/stat``, fields 14-15): on a
    shared machine Prometheus's CPU time depends much less on the load than the wall time."""
    fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8").rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_one(args: argparse.Namespace, gpus: int, work: Path) -> dict[str, float]:
    prom, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prom is None or promtool is None:
        raise SystemExit("prometheus and promtool are needed (tools/system-deps.sh installs them)")
    d = work / f"fleet-{gpus}"
    d.mkdir(parents=True, exist_ok=True)
    end_s = int(time.time()) // 60 * 60 - 600
    n = int(args.days * 86400 / args.step_s)
    samples = gpus * n * 2
    t = time.perf_counter()
    files = write_fleet(
        d, gpus=gpus, days=args.days, step_s=args.step_s, per_workload=args.gpus_per_workload, end_s=end_s
    )
    gen_s = time.perf_counter() - t
    t = time.perf_counter()

    def backfill(f: Path) -> None:
        cmd = [promtool, "tsdb", "create-blocks-from", "openmetrics", "-q", str(f), str(d / "tsdb")]
        subprocess.run(cmd, check=True, capture_output=True)
        f.unlink()

    with ThreadPoolExecutor(2) as ex:
        list(ex.map(backfill, files))
    backfill_s = time.perf_counter() - t
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
        load = os.getloadavg()[0]
        cpu0 = _cpu_s(proc.pid)
        t = time.perf_counter()
        stats, info = prometheus_fleet_stats(
            url, window=window, chunk_hosts=args.chunk_hosts, timeout_s=600, workers=args.workers
        )
        ff = find(stats.gpus, window, workloads=stats.workloads, serving=stats.serving)
        push_s = time.perf_counter() - t
        prom_cpu_s = _cpu_s(proc.pid) - cpu0
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        if args.keep is None:
            shutil.rmtree(d, ignore_errors=True)
    assert len(ff.gpus) == gpus and len(ff.workloads) == -(-gpus // args.gpus_per_workload)
    return {
        "gpus": gpus,
        "samples": samples,
        "workloads": len(ff.workloads),
        "gen_s": gen_s,
        "backfill_s": backfill_s,
        "start_s": start_s,
        "push_s": push_s,
        "prom_cpu_s": prom_cpu_s,
        "load": load,
        **info,
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, nargs="+", default=[48, 500, 2000])
    ap.add_argument("--days", type=float, default=14.0)
    ap.add_argument("--step-s", type=int, default=60)
    ap.add_argument("--gpus-per-workload", type=int, default=4)
    ap.add_argument("--chunk-hosts", type=int, default=50)
    ap.add_argument("--workers", type=int, default=DEFAULT_WORKERS)
    ap.add_argument("--keep", type=Path, default=None, help="work directory to keep (default: a temp dir)")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-promql-"))
    rows = []
    try:
        for g in args.gpus:
            rows.append(run_one(args, g, work))
            r = rows[-1]
            print(f"measured {g} GPUs: {r['push_s']:.1f} s", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\nMachine: {os.cpu_count()} CPUs (shared); one Prometheus; {args.workers} queries in flight.\n")
    print(
        "| fleet (x 2 metrics, 1 sample/"
        f"{args.step_s} s, {args.days:g} d) | samples stored | backfill (promtool) | pushdown + findings | "
        "Prometheus CPU | queries | summary values returned | bytes returned | load avg at start |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['gpus']:,} GPUs, {r['workloads']} workloads | {r['samples']:,} | "
            f"{r['backfill_s']:.0f} s | "
            f"{r['push_s']:.1f} s | {r['prom_cpu_s']:.1f} s | {r['queries']} | {r['series_returned']:,} | "
            f"{r['bytes_returned']:,} | "
            f"{r['load']:.1f} |"
        )
    if len(rows) >= 2:
        xs = [float(r["samples"]) for r in rows]
        ys = [float(r["prom_cpu_s"]) for r in rows]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
        a = my - b * mx
        print(
            f"\nScaling law fitted on the rows above: Prometheus CPU time = {a:.1f} s "
            f"+ {b * 1e6:.2f} s per 10^6 samples"
        )
        print("\nExtrapolated (from that law; computed, not measured):\n")
        print("| fleet | samples | one core like these | 64 queriers in parallel (label chunks) |")
        print("|---|---|---|---|")
        for n_gpus, step in ((10_000, 15), (1_000_000, 60), (1_000_000, 15)):
            s = n_gpus * args.days * 86400 / step * 2
            secs = a + b * s
            print(
                f"| {n_gpus:,} GPUs x {args.days:g} d at {step} s, 2 metrics | {s:.2e} | "
                f"{secs / 3600:,.1f} h | "
                f"{secs / 64 / 3600:,.2f} h |"
            )


if __name__ == "__main__":
    main()
