"""Right-size a running GPU fleet from its telemetry, and alert on thresholds (issue 9).

Flow: readers (nvidia-smi CSV, dcgm-exporter text, Prometheus JSON or a live server, CloudWatch exports)
-> canonical samples -> :class:`TelemetryStore` (Parquet + DuckDB) -> inventory (offer and price per GPU)
-> findings (idle / over- / under-provisioned / optimized, options priced from the catalog) -> alerts and
reports. See ``docs/telemetry.md``.
"""

from __future__ import annotations

from gpufleet.telemetry.alerts import AlertEvent, AlertRule, load_rules, prometheus_rules
from gpufleet.telemetry.api import analyze_fleet, evaluate_alerts, ingest_telemetry
from gpufleet.telemetry.findings import FleetFindings, GpuFinding, GroupFinding, Option, Thresholds
from gpufleet.telemetry.ingest import ingest_files, ingest_prometheus
from gpufleet.telemetry.schema import METRICS, IngestProblem, IngestReport
from gpufleet.telemetry.store import TelemetryStore, default_store_dir
from gpufleet.telemetry.summary import FleetSummary, summarize

__all__ = [
    "METRICS",
    "AlertEvent",
    "AlertRule",
    "FleetFindings",
    "FleetSummary",
    "GpuFinding",
    "GroupFinding",
    "IngestProblem",
    "IngestReport",
    "Option",
    "TelemetryStore",
    "Thresholds",
    "analyze_fleet",
    "default_store_dir",
    "evaluate_alerts",
    "ingest_files",
    "ingest_prometheus",
    "ingest_telemetry",
    "load_rules",
    "prometheus_rules",
    "summarize",
]
