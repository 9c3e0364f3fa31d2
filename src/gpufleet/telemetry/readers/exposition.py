"""dcgm-exporter scrapes: Prometheus exposition text (and OpenMetrics, which adds ``# EOF``).

Accepted: ``# HELP``/``# TYPE`` comments, samples ``name{label="v",...} value [timestamp_ms]``, every label
variant of fleet-anchors C.2 (``Hostname``/``hostname``, ``UUID``/``uuid``, ``exported_*``, lower-cased metric
and label names), MIG ``GPU_I_PROFILE``/``GPU_I_ID``. DCGM blank sentinels become missing values. A sample
without a timestamp gets the scrape time given by the caller (counted as ``no_timestamp``). Timestamps are
milliseconds in the Prometheus text format and seconds in OpenMetrics (a text ending in ``# EOF``).
"""

from __future__ import annotations

import re
from typing import Final

from gpufleet.telemetry.readers.common import (
    EARLIEST_TS_US,
    LATEST_TS_US,
    add_checked,
    canonical_labels,
    known_metric,
    lo_hi_ok,
    parse_index,
    timestamp_us,
)
from gpufleet.telemetry.schema import SERVICE_METRICS, ProblemCounter, SampleBatch
from gpufleet.units import MS_PER_S, US_PER_S

_SAMPLE_RE: Final = re.compile(
    r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+(?P<ts>-?\d+(?:\.\d+)?))?\s*$"
)
_LABEL_RE: Final = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')


def parse_labels(text: str) -> dict[str, str] | None:
    """Labels of ``{...}``; ``None`` when the text is not a valid label set."""
    out: dict[str, str] = {}
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _LABEL_RE.match(text, pos)
        if m is None:
            return None
        if m.group(1) in out:  # Prometheus rejects a repeated label name; one of the two would win
            return None
        out[m.group(1)] = m.group(2).replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        pos = m.end()
    return out


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def service_labels(labels: dict[str, str]) -> tuple[dict[str, str], int] | None:
    """Identity of a serving-engine sample (no GPU of its own): ``gpu_index`` -1, host ``svc:<ns>/<pod>``
    (the pod joins it to the GPUs dcgm-exporter maps to that pod), else the job or the host."""
    who = labels.get("pod") or labels.get("job") or labels.get("host")
    if not who:
        return None
    out = dict(labels)
    out["host"] = (
        f"svc:{labels.get('namespace', '')}/{labels['pod']}"
        if labels.get("pod")
        else labels.get("host") or f"svc:{labels.get('namespace', '')}/{who}"
    )
    out.pop("gpu_uuid", None)
    return out, -1


def _identity(labels_text: str, metric: str, batch: SampleBatch) -> tuple[int | None, str]:
    """(label id, "") for a label block, or (None, problem kind + reason); memoised per distinct block."""
    raw_labels = parse_labels(labels_text)
    if raw_labels is None:
        return None, "malformed_line"
    labels = canonical_labels(raw_labels, "dcgm_exposition")
    index = parse_index(labels.get("gpu_index", ""))
    if metric in SERVICE_METRICS:
        svc = service_labels(labels)
        if svc is None:
            return None, "missing_labels: a serving metric without pod/job/host"
        labels, index = svc
    if index is None and labels.get("gpu_uuid"):
        index = -1  # UUID known, index not labelled
    if index is None or not labels.get("host"):
        return None, "missing_labels: needs a hostname and a gpu or UUID label"
    return batch.label_id(labels, index), ""


def read_exposition(
    text: str, *, source: str, scrape_ts_us: int, batch: SampleBatch, problems: ProblemCounter
) -> int:
    """Parse exposition ``text`` into ``batch``; returns the number of sample lines read."""
    n = 0
    identities: dict[tuple[str, bool], tuple[int | None, str]] = {}
    # Prometheus text timestamps are milliseconds; OpenMetrics (which ends with "# EOF") uses seconds.
    openmetrics = text.rstrip().endswith("# EOF")
    us_per_unit = float(US_PER_S) if openmetrics else US_PER_S / MS_PER_S
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        n += 1
        m = _SAMPLE_RE.match(line)
        value = None if m is None else _float(m.group("value"))
        if m is None or value is None:
            problems.add(source, "malformed_line", f"line {lineno}: {line[:160]}")
            continue
        known = known_metric(m.group("name"))
        if known is None:
            problems.add(source, "unknown_metric", f"{m.group('name')} (line {lineno}: {line[:160]})")
            continue
        metric, factor = known
        key = (m.group("labels") or "", metric in SERVICE_METRICS)
        ident = identities.get(key)
        if ident is None:
            ident = identities[key] = _identity(key[0], metric, batch)
        lid, problem = ident
        if lid is None:
            kind, _, why = problem.partition(": ")
            problems.add(source, kind, f"line {lineno}: {line[:160]}" + (f" ({why})" if why else ""))
            continue
        if m.group("ts") is None:
            ts_us = scrape_ts_us
            problems.add(source, "no_timestamp", f"line {lineno}: {line[:160]}")
        else:
            ts_us = timestamp_us(float(m.group("ts")) * us_per_unit)
        value *= factor
        if EARLIEST_TS_US <= ts_us <= LATEST_TS_US and lo_hi_ok(metric, value):
            batch.add_sample(lid, ts_us, metric, value)
        else:
            add_checked(
                batch,
                problems,
                where=source,
                labels={},
                gpu_index=0,
                ts_us=ts_us,
                metric=metric,
                value=value,
                example=f"line {lineno}: {line[:160]}",
                label_id=lid,
            )
    return n


__all__ = ["parse_labels", "read_exposition"]
