"""Prometheus HTTP API ``/api/v1/query_range`` (and instant ``query``) responses.

``{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {...labels...},
"values": [[<unix seconds>, "<value>"], "
"...]}]}}``; ``vector`` results (``"value": [ts, "v"]``) are accepted too.
The metric comes from ``__name__`` (upper- or lower-case DCGM names); a series without it is refused unless
the caller names the metric (the live reader does, since it wrote the query).
"""

from __future__ import annotations

from typing import Any

from gpufleet.errors import ConfigFileError
from gpufleet.telemetry.readers.common import add_checked, canonical_labels, known_metric, parse_index
from gpufleet.telemetry.readers.exposition import service_labels
from gpufleet.telemetry.schema import SERVICE_METRICS, ProblemCounter, SampleBatch
from gpufleet.units import US_PER_S

#: Timestamps beyond year 9999 (253,402,300,800 s after 1970) are not a time (``1e300``, a bool, NaN).
_MAX_UNIX_S = 253_402_300_800.0


def read_query_range_json(
    doc: Any,
    *,
    source: str,
    batch: SampleBatch,
    problems: ProblemCounter,
    source_kind: str = "prom_query_range",
    metric_name: str | None = None,
) -> int:
    """Add the samples of a parsed query_range response to ``batch``; returns the number of points read."""
    if not isinstance(doc, dict) or "status" not in doc:
        raise ConfigFileError(
            f"{source} is not a Prometheus API response (no 'status' key). Save the body of "
            "GET /api/v1/query_range?query=...&start=...&end=...&step=... as it is."
        )
    if doc["status"] != "success":
        raise ConfigFileError(
            f"{source}: Prometheus answered status {doc['status']!r} ({doc.get('errorType', '')}: "
            f"{doc.get('error', '')}). Fix the query and save a successful response."
        )
    data = doc.get("data")
    if not isinstance(data, dict) or data.get("resultType") not in ("matrix", "vector"):
        raise ConfigFileError(
            f"{source}: data.resultType must be 'matrix' (query_range) or 'vector' (query); got "
            f"{data.get('resultType') if isinstance(data, dict) else data!r}."
        )
    result = data.get("result")
    if not isinstance(result, list):
        raise ConfigFileError(f"{source}: data.result must be a list of series.")
    n = 0
    for i, series in enumerate(result):
        where = source
        if not isinstance(series, dict) or not isinstance(series.get("metric"), dict):
            problems.add(where, "malformed_line", f"series {i}: not an object with 'metric'")
            continue
        raw = {str(k): str(v) for k, v in series["metric"].items()}
        points = series.get("values") if "values" in series else [series.get("value")]
        if not isinstance(points, list):
            problems.add(where, "malformed_line", f"series {i}: 'values' is not a list")
            continue
        name = raw.get("__name__") or metric_name
        known = known_metric(name or "")
        if known is None:
            problems.add(where, "unknown_metric", f"series {i}: metric {name!r}", n=max(len(points), 1))
            continue
        metric, factor = known
        labels = canonical_labels(raw, source_kind)
        index = parse_index(labels.get("gpu_index", ""))
        if metric in SERVICE_METRICS:
            svc = service_labels(labels)
            if svc is not None:
                labels, index = svc
        elif index is None and labels.get("gpu_uuid"):
            index = -1
        if index is None or not labels.get("host"):
            problems.add(
                where,
                "missing_labels",
                f"series {i}: {raw} lacks a hostname/instance and gpu/UUID",
                n=max(len(points), 1),
            )
            continue
        lid = batch.label_id(labels, index)
        for p in points:
            n += 1
            try:
                ts_s, value_text = p
                if isinstance(ts_s, bool) or not -_MAX_UNIX_S < float(ts_s) < _MAX_UNIX_S:
                    raise ValueError("timestamp out of range")  # also NaN and inf
                ts_us = round(float(ts_s) * US_PER_S)
                value = float(value_text)
            except (TypeError, ValueError, OverflowError):
                problems.add(
                    where, "malformed_line", f'series {i}: point {p!r} is not [unix_seconds, "value"]'
                )
                continue
            add_checked(
                batch,
                problems,
                where=where,
                labels=labels,
                gpu_index=index,
                ts_us=ts_us,
                metric=metric,
                value=value * factor,
                label_id=lid,
                example=f"series {i} {name} at {ts_s}",
            )
    return n


__all__ = ["read_query_range_json"]
