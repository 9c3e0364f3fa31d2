"""``nvidia-smi --query-gpu=... --format=csv`` logs (with or without ``noheader``-free units).

Rules (fleet-anchors C.5, from a real H100 capture, driver 590.48.01): fields are separated by ``", "``; a
header name may carry `` [unit]``; values carry units unless ``nounits`` (``81559 MiB``, ``100 %``,
``69.85 W``); ``[N/A]``, ``[Not Supported]``, ``[Unknown Error]`` and similar mean missing; timestamps are
``YYYY/MM/DD HH:MM:SS.mmm`` in the host's local time without a zone, so the caller must give the zone. The
file has no host column: the caller names the host (the CLI defaults to the file name) unless the query
added a ``hostname`` column. Header lines repeated in the file (concatenated logs) are skipped.
"""

from __future__ import annotations

import csv
import re
from datetime import datetime
from typing import Final
from zoneinfo import ZoneInfo

from gpufleet.errors import ConfigFileError
from gpufleet.fileio import MAX_CSV_FIELD_CHARS, csv_header_hint
from gpufleet.telemetry.readers.common import add_checked, parse_index
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.units import GIB, MIB, US_PER_S

#: nvidia-smi field (with its renamed aliases) -> canonical metric. Units are nvidia-smi's (MiB, %, W, C,
# MHz).
FIELD_METRICS: Final[dict[str, str]] = {
    "utilization.gpu": "gpu_util_pct",
    "utilization.memory": "mem_copy_util_pct",
    "memory.used": "fb_used_mib",
    "memory.free": "fb_free_mib",
    "memory.total": "fb_total_mib",
    "memory.reserved": "fb_reserved_mib",
    "power.draw": "power_w",
    "power.draw.average": "power_w",
    "power.draw.instant": "power_w",
    "power.limit": "power_limit_w",
    "gpu.power.requested_limit": "power_limit_w",
    "enforced.power.limit": "power_limit_w",
    "temperature.gpu": "gpu_temp_c",
    "temperature.memory": "memory_temp_c",
    "clocks.current.sm": "sm_clock_mhz",
    "clocks.sm": "sm_clock_mhz",
}
#: Identity and descriptive fields (not metrics); aliases from nvidia-smi renames.
ID_FIELDS: Final[dict[str, str]] = {
    "timestamp": "timestamp",
    "index": "index",
    "uuid": "gpu_uuid",
    "gpu_uuid": "gpu_uuid",
    "name": "model",
    "gpu_name": "model",
    "hostname": "host",
    "host": "host",
}
#: Known descriptive fields that carry no metric and are ignored without a warning.
IGNORED_FIELDS: Final[frozenset[str]] = frozenset(
    {
        "pci.bus_id",
        "gpu_bus_id",
        "driver_version",
        "pstate",
        "mig.mode.current",
        "mig.mode.pending",
        "serial",
        "vbios_version",
        "persistence_mode",
        "compute_mode",
        "fan.speed",
        "count",
        "display_mode",
    }
)
_UNIT_RE: Final = re.compile(r"^\s*([-+0-9.eE]+)\s*(%|MiB|GiB|W|MHz|C)?\s*$")
_TS_FORMATS: Final = (
    "%Y/%m/%d %H:%M:%S.%f",
    "%Y/%m/%d %H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
)


def _header_key(text: str) -> str:
    return text.strip().split(" [", 1)[0].strip().lower()


def _timestamp_us(text: str, tz: ZoneInfo, fold: int = 0) -> int | None:
    """UTC microseconds of a host-local timestamp; ``fold`` 1 picks the second of a wall time that occurs
    twice (the hour repeated when the clocks go back at the end of daylight saving time)."""
    t = text.strip()
    if len(t) == 23 and t[4] in "/-" and t[10] == " " and t[19] == ".":  # fast path: YYYY/MM/DD HH:MM:SS.mmm
        try:
            dt = datetime(
                int(t[0:4]),
                int(t[5:7]),
                int(t[8:10]),
                int(t[11:13]),
                int(t[14:16]),
                int(t[17:19]),
                int(t[20:23]) * 1000,
                tzinfo=tz,
                fold=fold,
            )
        except ValueError:
            return None
        return int(dt.timestamp()) * US_PER_S + dt.microsecond
    for fmt in _TS_FORMATS:
        try:
            dt = datetime.strptime(text.strip(), fmt)
        except ValueError:
            continue
        return int(dt.replace(tzinfo=tz, fold=fold).timestamp() * US_PER_S)
    return None


def _cells(line: str) -> list[str] | None:
    """The CSV cells of one line, or None when it is not valid CSV (e.g. a field over the size limit)."""
    csv.field_size_limit(MAX_CSV_FIELD_CHARS)
    try:
        return next(csv.reader([line], skipinitialspace=True), [])
    except csv.Error:
        return None


def read_nvidia_smi_csv(
    text: str, *, source: str, host: str, timezone: str, batch: SampleBatch, problems: ProblemCounter
) -> int:
    """Parse ``text`` into ``batch``; returns the number of data lines read. Bad lines are counted."""
    try:
        tz = ZoneInfo(timezone)
    except (KeyError, ValueError, OSError):
        raise ConfigFileError(
            f"Unknown time zone {timezone!r} for {source}. nvidia-smi timestamps are host-local; give an "
            "IANA "
            "zone such as UTC, Europe/Berlin or America/New_York with --timezone."
        ) from None
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise ConfigFileError(
            f"{source} is empty; an nvidia-smi --query-gpu CSV with a header line is expected."
        )
    raw_header = _cells(lines[0])
    if raw_header is None:
        raise ConfigFileError(
            f"{source}: the header line is not valid CSV (a field over {MAX_CSV_FIELD_CHARS:,} characters or "
            "a stray quote). Give the CSV that nvidia-smi --query-gpu=... --format=csv writes."
        )
    keys = [_header_key(h) for h in raw_header]
    if "timestamp" not in keys or not ({"index", "uuid", "gpu_uuid"} & set(keys)):
        raise ConfigFileError(
            f"{source}: the header {raw_header[:6]} lacks 'timestamp' and 'index' or 'uuid'. Query them, "
            "e.g. "
            "nvidia-smi --query-gpu=timestamp,index,uuid,name,memory.used,memory.total,utilization.gpu,"
            f"power.draw --format=csv -l 60.{csv_header_hint(raw_header)}"
        )
    units = [h.split(" [", 1)[1].rstrip("] ").strip() if " [" in h else "" for h in raw_header]
    unknown = [k for k in keys if k not in FIELD_METRICS and k not in ID_FIELDS and k not in IGNORED_FIELDS]
    n_lines = 0
    last_ts: int | None = None  # the latest timestamp read so far: nvidia-smi -l writes in time order
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parsed = _cells(line)
        if parsed is None:
            n_lines += 1
            problems.add(source, "malformed_line", f"line {lineno}: {line[:120]} (not valid CSV)")
            continue
        cells = parsed
        if cells and cells[0].strip().lower() == "timestamp" and [_header_key(c) for c in cells] == keys:
            continue  # a repeated header (concatenated logs)
        n_lines += 1
        where = source
        example = f"line {lineno}: {line[:120]}"
        if len(cells) != len(keys):
            problems.add(where, "malformed_line", f"{example} ({len(cells)} fields, header has {len(keys)})")
            continue
        row = dict(zip(keys, (c.strip() for c in cells), strict=True))
        ts = _timestamp_us(row["timestamp"], tz)
        if ts is None:
            problems.add(where, "malformed_line", f"{example} (timestamp not YYYY/MM/DD HH:MM:SS.mmm)")
            continue
        if last_ts is not None and ts < last_ts:
            # the hour repeated when daylight saving time ends (Europe/Berlin 2026-10-25 02:00-02:59 twice):
            # read as the first pass it lands an hour early, among the first pass's samples; a log that goes
            # on in time order is in the second pass (fold 1; a time that occurs once reads the same)
            later = _timestamp_us(row["timestamp"], tz, fold=1)
            if later is not None and later >= last_ts:
                ts = later
        last_ts = ts if last_ts is None else max(last_ts, ts)
        labels = {"source": "nvidia_smi_csv", "host": host}
        for k, col in ID_FIELDS.items():
            if k in row and col not in ("timestamp", "index") and row[k] and not row[k].startswith("["):
                labels[col] = row[k]
        idx = parse_index(row.get("index", "0") or "")
        if idx is None:
            problems.add(where, "missing_labels", f"{example} (index is not a GPU number)")
            continue
        if not labels.get("host"):
            problems.add(where, "missing_labels", f"{example} (no host)")
            continue
        lid = batch.label_id(labels, idx)
        values: list[tuple[str, float]] = []
        for pos, k in enumerate(keys):
            metric = FIELD_METRICS.get(k)
            if metric is None:
                continue
            value_text = row[k]
            if value_text.startswith("["):
                problems.add(where, "missing_value", f"{example} ({k}={value_text})")
                continue
            m = _UNIT_RE.match(value_text)
            if m is None:
                problems.add(where, "malformed_line", f"{example} ({k}={value_text!r} is not a number)")
                continue
            value = float(m.group(1))
            unit = m.group(2) or units[pos]
            if unit == "GiB":
                value *= GIB / MIB
            values.append((metric, value))
        given = dict(values)
        used, total = given.get("fb_used_mib"), given.get("fb_total_mib")
        if used is not None and total is not None and used > total > 0:
            # memory.used can never exceed memory.total of the same GPU at the same time (nvidia-smi
            # --help-query-gpu): the row's memory columns are swapped, mis-united or corrupt.
            problems.add(
                where,
                "out_of_range",
                f"fb_used_mib={used:g} above fb_total_mib={total:g} of the same row: {example}",
            )
            values = [(m, v) for m, v in values if m != "fb_used_mib"]
        for metric, value in values:
            add_checked(
                batch,
                problems,
                where=where,
                labels=labels,
                gpu_index=idx,
                ts_us=ts,
                metric=metric,
                value=value,
                example=example,
                label_id=lid,
            )
    for k in unknown:
        problems.add(
            source, "unknown_metric", f"column {k!r} (not a known nvidia-smi field)", n=max(n_lines, 1)
        )
    return n_lines


__all__ = ["FIELD_METRICS", "read_nvidia_smi_csv"]
