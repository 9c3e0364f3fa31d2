"""Right-size a running GPU fleet from its telemetry, and alert on thresholds (issue 9).

Flow: readers (nvidia-smi CSV, dcgm-exporter text, Prometheus JSON or a live server, CloudWatch exports)
-> canonical samples -> :class:`TelemetryStore` (Parquet + DuckDB) -> inventory (offer and price per GPU)
-> findings (idle / over- / under-provisioned / optimized, options priced from the catalog) -> alerts and
reports. See ``docs/telemetry.md``.
"""

from __future__ import annotations

from gpufleet.telemetry.ingest import ingest_files, ingest_prometheus
from gpufleet.telemetry.schema import METRICS, IngestProblem, IngestReport
from gpufleet.telemetry.store import TelemetryStore, default_store_dir

__all__ = [
    "METRICS",
    "IngestProblem",
    "IngestReport",
    "TelemetryStore",
    "default_store_dir",
    "ingest_files",
    "ingest_prometheus",
]
