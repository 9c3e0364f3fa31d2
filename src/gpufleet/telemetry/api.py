"""The typed Python API of telemetry right-sizing (what the CLI calls)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from gpufleet.telemetry.alerts import AlertEvent, evaluate, load_rules
from gpufleet.telemetry.analyze import gpu_stats, resolve_window
from gpufleet.telemetry.analyze_workloads import (
    DEFAULT_CHUNK_HOSTS,
    TIME_CHUNK_CAVEAT,
    workload_and_serving_stats,
)
from gpufleet.telemetry.findings import FleetFindings, Thresholds, find
from gpufleet.telemetry.ingest import ingest_files
from gpufleet.telemetry.inventory import inventory_for
from gpufleet.telemetry.schema import IngestReport
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.validation import checked_arguments


def _store(store: TelemetryStore | Path | str | None) -> TelemetryStore:
    return store if isinstance(store, TelemetryStore) else TelemetryStore(store)


@checked_arguments("telemetry ingest")
def ingest_telemetry(
    paths: Sequence[Path | str],
    *,
    store: TelemetryStore | Path | str | None = None,
    input_format: str = "auto",
    host: str | None = None,
    timezone: str | None = None,
) -> IngestReport:
    """Read telemetry files (format detected) into ``store`` (default: user data dir) in one atomic batch."""
    return ingest_files(paths, store=_store(store), input_format=input_format, host=host, timezone=timezone)


@checked_arguments("fleet analysis")
def analyze_fleet(
    store: TelemetryStore | Path | str | None = None,
    *,
    lookback_days: float = 14,
    percentile: float = 0.95,
    thresholds: Thresholds | None = None,
    inventory: Path | str | None = None,
    end: datetime | None = None,
    tier: str = "auto",
) -> FleetFindings:
    """Findings per GPU, node and workload over the lookback window ending at ``end`` (default: latest).
    ``inventory``: given, it is kept in the store for later calls; absent, the kept one is used."""
    st = _store(store)
    window = resolve_window(st, lookback_days, end, percentile)
    inv, rules, _ = inventory_for(st.root, inventory)
    workloads, serving = workload_and_serving_stats(st, window, rules)
    return find(
        gpu_stats(st, window),
        window,
        thresholds,
        inv,
        workloads=workloads,
        serving=serving,
        rules=rules,
        tier=tier,
    )


def analyze_prometheus(
    url: str,
    *,
    lookback_days: float = 14,
    percentile: float = 0.95,
    thresholds: Thresholds | None = None,
    inventory: Path | str | None = None,
    end: datetime | None = None,
    tier: str = "auto",
    timeout_s: float = 60.0,
    chunk_hosts: int = DEFAULT_CHUNK_HOSTS,
    chunk_days: float | None = None,
) -> FleetFindings:
    """The same findings as :func:`analyze_fleet`, computed by a Prometheus-compatible server (PromQL
    pushdown: only per-GPU and per-workload summaries come back; :mod:`gpufleet.telemetry.promql`)."""
    from gpufleet.telemetry.inventory import load_inventory
    from gpufleet.telemetry.promql import prometheus_fleet_stats, prometheus_window
    from gpufleet.telemetry.workloads import load_workload_rules

    window = prometheus_window(url, lookback_days=lookback_days, end=end, percentile=percentile)
    inv = load_inventory(inventory) if inventory else ()
    rules = load_workload_rules(inventory) if inventory else ()
    stats, _ = prometheus_fleet_stats(
        url, window=window, rules=rules, timeout_s=timeout_s, chunk_hosts=chunk_hosts, chunk_days=chunk_days
    )
    ff = find(
        stats.gpus,
        window,
        thresholds,
        inv,
        workloads=stats.workloads,
        serving=stats.serving,
        rules=rules,
        tier=tier,
    )
    from dataclasses import replace

    chunked = chunk_days is not None and chunk_days * 86400 < (window.end - window.start).total_seconds()
    return replace(
        ff, source=f"prometheus {url}", caveats=(*ff.caveats, *((TIME_CHUNK_CAVEAT,) if chunked else ()))
    )


@checked_arguments("alert evaluation")
def evaluate_alerts(
    store: TelemetryStore | Path | str | None = None,
    *,
    rules: Path | str | None = None,
    lookback_days: float = 14,
    end: datetime | None = None,
    step_s: float = 60.0,
    inventory: Path | str | None = None,
) -> tuple[AlertEvent, ...]:
    """Alert events of a rule file (default: the seed's thresholds) over the stored telemetry."""
    st = _store(store)
    window = resolve_window(st, lookback_days, end, 0.95)
    inv, _, _ = inventory_for(st.root, inventory)
    return evaluate(st, window, load_rules(rules), step_s=step_s, inventory=inv)


__all__ = ["analyze_fleet", "analyze_prometheus", "evaluate_alerts", "ingest_telemetry"]
