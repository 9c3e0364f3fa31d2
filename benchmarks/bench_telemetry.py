"""Telemetry speed: ingest rows/s (nvidia-smi CSV, dcgm-exporter text) and the full analysis of 10^8 samples.

    .venv/bin/python benchmarks/bench_telemetry.py [--gpus 1000] [--days 35] [--metrics 2] [--skip-big]

1. Ingest: an nvidia-smi CSV (8 metric columns) and an exposition file are written to a temp dir, then
   `ingest_files` reads, checks (duplicates, order, clock skew) and stores them; rows/s = samples stored / s.
2. Analysis: the store is generated directly as Parquet in its own layout (DuckDB `range()`, not timed):
   GPUS x DAYS x 1440 one-minute samples x METRICS metrics (default 1,000 x 35 x 1,440 x 2 = 1.008e8 samples
   of SM_ACTIVE and FB_USED), then `gpu_stats` (percentile histograms in SQL over every sample) + `find`
   (findings and priced options for every GPU) are timed together, and `evaluate` of the default alert rules
   separately.
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from gpufleet.telemetry.alerts import evaluate, load_rules
from gpufleet.telemetry.analyze import gpu_stats, resolve_window
from gpufleet.telemetry.analyze_workloads import workload_and_serving_stats
from gpufleet.telemetry.findings import find
from gpufleet.telemetry.ingest import ingest_files
from gpufleet.telemetry.store import TelemetryStore

T0_S = 1_780_000_200


def _smi_csv(path: Path, lines: int) -> int:
    head = (
        "timestamp, index, uuid, name, memory.total [MiB], memory.used [MiB], memory.free [MiB], "
        "utilization.gpu [%], utilization.memory [%], power.draw [W], power.limit [W], temperature.gpu\n"
    )
    rows = [head]
    for k in range(lines):
        gpu = k % 8
        t = time.strftime("%Y/%m/%d %H:%M:%S", time.gmtime(T0_S + (k // 8) * 60)) + ".000"
        rows.append(
            f"{t}, {gpu}, GPU-{gpu:04d}, NVIDIA H100 80GB HBM3, 81559 MiB, {k % 80000} MiB, "
            f"{81559 - k % 80000} MiB, {k % 100} %, {k % 50} %, {100 + k % 500}.00 W, 700.00 W, "
            f"{40 + k % 30}\n"
        )
    path.write_text("".join(rows), encoding="utf-8")
    return lines * 8


def _exposition(path: Path, lines: int) -> int:
    out = []
    for k in range(lines):
        gpu = k % 8
        ts = (T0_S + (k // 32) * 60) * 1000
        metric = (
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_PROF_SM_ACTIVE",
            "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_POWER_USAGE",
        )[(k // 8) % 4]
        value = {"DCGM_FI_PROF_SM_ACTIVE": (k % 100) / 100}.get(metric, k % 100)
        out.append(
            f'{metric}{{gpu="{gpu}",UUID="GPU-{gpu:04d}",Hostname="node-a",modelName="NVIDIA H100 80GB HBM3",'
            f'namespace="ml",pod="job-{gpu}"}} {value} {ts}'
        )
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return lines


def bench_ingest(tmp: Path, smi_lines: int, expo_lines: int) -> list[tuple[str, str]]:
    res = []
    f = tmp / "node.csv"
    n = _smi_csv(f, smi_lines)
    t = time.perf_counter()
    r = ingest_files([f], store=TelemetryStore(tmp / "s1"), timezone="UTC", now_us=(T0_S + 10**8) * 10**6)
    dt = time.perf_counter() - t
    assert r.rows_stored == n, r
    res.append(
        (
            f"ingest nvidia-smi CSV ({smi_lines:,} lines, {n:,} samples)",
            f"{n / dt:,.0f} samples/s ({smi_lines / dt:,.0f} lines/s, {dt:.1f} s)",
        )
    )
    f = tmp / "scrape.prom"
    n = _exposition(f, expo_lines)
    t = time.perf_counter()
    r = ingest_files([f], store=TelemetryStore(tmp / "s2"), now_us=(T0_S + 10**8) * 10**6)
    dt = time.perf_counter() - t
    assert r.rows_stored == n, r
    res.append((f"ingest exposition text ({n:,} samples)", f"{n / dt:,.0f} samples/s ({dt:.1f} s)"))
    return res


def generate_store(root: Path, gpus: int, days: int, metrics: int) -> int:
    """Write the store's Parquet files directly (series table + one part per day) and adopt them."""
    import duckdb

    names = ["sm_active_ratio", "fb_used_mib", "dram_active_ratio", "gpu_util_pct"][:metrics]
    con = duckdb.connect()
    (root / "series").mkdir(parents=True, exist_ok=True)
    series = root / "series" / "series-bench.parquet"
    mvals = ", ".join(f"({i}, '{m}')" for i, m in enumerate(names))
    con.execute(f"""COPY (
        SELECT CAST(g * {metrics} + k + 1 AS INTEGER) AS series_id,
               printf('GPU-%06d', g) AS gpu_key, m AS metric, printf('node-%04d', g // 8) AS host,
               CAST(g % 8 AS INTEGER) AS gpu_index, printf('GPU-%06d', g) AS gpu_uuid,
               'NVIDIA H100 80GB HBM3' AS model, NULL::VARCHAR AS mig_profile, NULL::VARCHAR AS mig_instance,
               printf('job-%04d', g) AS pod, printf('team-%d', g % 5) AS namespace, NULL::VARCHAR AS job,
               NULL::VARCHAR AS container, 'aws' AS provider, 'p5.48xlarge' AS instance_type,
               'us-east-1' AS region, 'bench' AS source
        FROM range({gpus}) r(g), (VALUES {mvals}) v(k, m)) TO '{series}' (FORMAT parquet)""")
    parts = []
    for d in range(days):
        day = time.strftime("%Y-%m-%d", time.gmtime(T0_S + d * 86400))
        out = root / "samples" / f"day={day}" / "part-bench-0.parquet"
        out.parent.mkdir(parents=True, exist_ok=True)
        # Per GPU a level from its id (a spread of idle to busy GPUs) plus uniform noise.
        con.execute(f"""COPY (
            SELECT make_timestamp(CAST({T0_S} + {d} * 86400 + mi * 60 AS BIGINT) * 1000000) AS ts,
                   CAST(g * {metrics} + k + 1 AS INTEGER) AS series_id,
                   CASE k WHEN 1 THEN 81559 * least(0.95, (g % 10) / 10.0 + random() * 0.05)
                          WHEN 3 THEN least(100, 100 * (g % 10) / 5.0)
                          ELSE least(1.0, (g % 10) / 10.0 + random() * 0.1) END AS value
            FROM range({gpus}) r(g), range({metrics}) kk(k), range(1440) q(mi)
            ORDER BY series_id, ts) TO '{out}' (FORMAT parquet)""")
        parts.append(out)
    TelemetryStore(root).register_parts(parts, series)
    return gpus * days * 1440 * metrics


def _cpu_s() -> float:
    """CPU seconds of this process (user + system, every thread): on a shared machine the wall time
    depends on the load, the CPU time much less."""
    t = os.times()
    return t.user + t.system


def bench_analysis(
    root: Path, gpus: int, days: int, metrics: int, alerts: bool = True
) -> list[tuple[str, str]]:
    t = time.perf_counter()
    n = generate_store(root, gpus, days, metrics)
    gen = time.perf_counter() - t
    store = TelemetryStore(root)
    load = os.getloadavg()[0]
    t, c = time.perf_counter(), _cpu_s()
    window = resolve_window(store, days + 1, None, 0.95)
    stats = gpu_stats(store, window)
    t_stats = time.perf_counter() - t
    ff = find(stats, window)
    t_all, c_all = time.perf_counter() - t, _cpu_s() - c
    assert len(ff.gpus) == gpus
    t, c = time.perf_counter(), _cpu_s()
    workloads, serving = workload_and_serving_stats(store, window)
    wf = find(stats, window, workloads=workloads, serving=serving)
    t_work, c_work = time.perf_counter() - t, _cpu_s() - c
    assert len(wf.workloads) == gpus  # one pod per GPU in the generated store
    t = time.perf_counter()
    events = evaluate(store, window, load_rules()) if alerts else []
    t_alerts = time.perf_counter() - t
    counts = json.dumps(
        {
            f: sum(g.finding == f for g in ff.gpus)
            for f in ("Idle", "Overprovisioned", "Underprovisioned", "Optimized")
        }
    )
    return [
        (f"generate {n:,} samples as Parquet (not part of the analysis)", f"{gen:.1f} s"),
        (
            f"full analysis of {n:,} samples ({gpus:,} GPUs x {days} d x 1 min x {metrics} metrics)",
            f"{t_all:.1f} s (SQL statistics {t_stats:.1f} s, findings + options {t_all - t_stats:.1f} s; "
            f"{c_all:.1f} CPU s; load average {load:.1f} at start) {counts}",
        ),
        (
            f"workload statistics (per-minute busiest replica, coverage, serving) + workload findings, "
            f"{len(workloads):,} workloads, on top of the above",
            f"{t_work:.1f} s ({c_work:.1f} CPU s); with the above: {t_all + t_work:.1f} s",
        ),
    ] + (
        [
            (
                f"alert rules ({len(load_rules())} defaults) over the same store ({len(events)} events)",
                f"{t_alerts:.1f} s",
            )
        ]
        if alerts
        else []
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=1000)
    ap.add_argument("--days", type=int, default=35)
    ap.add_argument("--metrics", type=int, default=2, choices=(1, 2, 3, 4))
    ap.add_argument("--smi-lines", type=int, default=50_000)
    ap.add_argument("--expo-lines", type=int, default=200_000)
    ap.add_argument("--skip-big", action="store_true", help="only the ingest benchmarks")
    ap.add_argument("--skip-alerts", action="store_true", help="no alert-rule evaluation")
    args = ap.parse_args()
    rows = [("machine", f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at start")]
    with tempfile.TemporaryDirectory(prefix="gpufleet-bench-") as d:
        tmp = Path(d)
        rows += bench_ingest(tmp, args.smi_lines, args.expo_lines)
        if not args.skip_big:
            rows += bench_analysis(tmp / "big", args.gpus, args.days, args.metrics, not args.skip_alerts)
    print("| benchmark | result |\n|---|---|")
    for k, v in rows:
        print(f"| {k} | {v} |")


if __name__ == "__main__":
    main()
