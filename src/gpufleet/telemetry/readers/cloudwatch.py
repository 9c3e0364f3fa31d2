"""CloudWatch agent ``nvidia_smi_*`` metrics exported as CSV.

Layout accepted (one datapoint per row, any column order, extra columns ignored):
``Timestamp`` (ISO 8601 with ``Z`` or an offset), ``MetricName`` (``nvidia_smi_utilization_gpu``, ...),
``Value``, optional ``Unit`` (CloudWatch unit: ``Percent``, ``Bytes``, ``Megabytes``, ``None``...), and the
dimensions the agent attaches: ``host``, ``index``, ``name`` (GPU model), ``uuid`` (when configured),
``InstanceId``, ``InstanceType``, optionally ``Region``. This is what
``aws cloudwatch get-metric-data`` output looks like after flattening each result's dimensions into columns
(the CLI's JSON has no dimensions per point). Metric names: CloudWatch doc "Collect NVIDIA GPU metrics"
(``CloudWatch-Agent-NVIDIA-GPU.html``); the agent passes nvidia-smi's values, so without a ``Unit`` column
memory is MiB and power W.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from gpufleet.errors import ConfigFileError
from gpufleet.fileio import iter_csv_text
from gpufleet.telemetry.readers.common import add_checked, parse_index
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.units import MB, MIB, US_PER_S

CW_METRICS: Final[dict[str, str]] = {
    "nvidia_smi_utilization_gpu": "gpu_util_pct",
    "nvidia_smi_utilization_memory": "mem_copy_util_pct",
    "nvidia_smi_memory_used": "fb_used_mib",
    "nvidia_smi_memory_free": "fb_free_mib",
    "nvidia_smi_memory_total": "fb_total_mib",
    "nvidia_smi_power_draw": "power_w",
    "nvidia_smi_temperature_gpu": "gpu_temp_c",
    "nvidia_smi_clocks_current_sm": "sm_clock_mhz",
}
#: CloudWatch unit -> factor to MiB for memory metrics.
_MEMORY_UNIT_TO_MIB: Final[dict[str, float]] = {
    "": 1.0,
    "none": 1.0,
    "mebibytes": 1.0,
    "bytes": 1.0 / MIB,
    "kilobytes": 1e3 / MIB,
    "megabytes": MB / MIB,
    "gigabytes": 1e9 / MIB,
}
#: CloudWatch units each non-memory metric may carry ("" or "None": nvidia-smi's own unit). A utilisation
#: in Bytes or a power in Percent was stored as if in the metric's unit.
_OTHER_UNITS: Final[dict[str, frozenset[str]]] = {
    "gpu_util_pct": frozenset({"", "none", "percent"}),
    "mem_copy_util_pct": frozenset({"", "none", "percent"}),
    "power_w": frozenset({"", "none", "watts"}),
    "gpu_temp_c": frozenset({"", "none"}),
    "sm_clock_mhz": frozenset({"", "none"}),
}
REQUIRED: Final = ("Timestamp", "MetricName", "Value")


def read_cloudwatch_csv(text: str, *, source: str, batch: SampleBatch, problems: ProblemCounter) -> int:
    rows = iter_csv_text(text, source=source)
    try:
        _, header = next(rows)
    except StopIteration:
        raise ConfigFileError(
            f"{source} is empty; a CSV with Timestamp, MetricName, Value is expected."
        ) from None
    header = [h.strip() for h in header]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise ConfigFileError(
            f"{source} lacks the columns {missing}; a CloudWatch export needs Timestamp, MetricName, Value "
            "and "
            "the dimensions host, index (see docs/telemetry.md)."
        )
    n = 0
    for lineno, cells in rows:
        n += 1
        example = f"line {lineno}: {','.join(cells)[:120]}"
        if len(cells) != len(header):
            problems.add(source, "malformed_line", example)
            continue
        row = dict(zip(header, (c.strip() for c in cells), strict=True))
        metric = CW_METRICS.get(row["MetricName"])
        if metric is None:
            problems.add(source, "unknown_metric", f"{row['MetricName']} ({example})")
            continue
        try:
            dt = datetime.fromisoformat(row["Timestamp"].replace("Z", "+00:00"))
            value = float(row["Value"])
        except ValueError:
            problems.add(source, "malformed_line", example)
            continue
        if dt.tzinfo is None:
            problems.add(source, "malformed_line", f"{example} (timestamp without a zone; add Z or +00:00)")
            continue
        if metric.endswith("_mib"):
            factor = _MEMORY_UNIT_TO_MIB.get(row.get("Unit", "").lower())
            if factor is None:
                problems.add(
                    source, "malformed_line", f"{example} (unit {row.get('Unit')!r} is not a memory unit)"
                )
                continue
            value *= factor
        elif row.get("Unit", "").lower() not in _OTHER_UNITS.get(metric, frozenset({""})):
            allowed = ", ".join(sorted(u or "(blank)" for u in _OTHER_UNITS.get(metric, frozenset({""}))))
            problems.add(
                source,
                "malformed_line",
                f"{example} (unit {row.get('Unit')!r} does not measure {metric}; allowed: {allowed})",
            )
            continue
        labels = {"source": "cloudwatch", "host": row.get("host", ""), "provider": "aws"}
        for col, key in (
            ("model", "name"),
            ("gpu_uuid", "uuid"),
            ("instance_type", "InstanceType"),
            ("region", "Region"),
        ):
            if row.get(key):
                labels[col] = row[key]
        if not labels["host"] and row.get("InstanceId"):
            labels["host"] = row["InstanceId"]
        index = parse_index(row.get("index", ""))
        if index is None or not labels["host"]:
            problems.add(source, "missing_labels", f"{example} (needs host or InstanceId, and index)")
            continue
        add_checked(
            batch,
            problems,
            where=source,
            labels=labels,
            gpu_index=index,
            ts_us=int(dt.timestamp() * US_PER_S),
            metric=metric,
            value=value,
            example=example,
        )
    return n


__all__ = ["CW_METRICS", "read_cloudwatch_csv"]
