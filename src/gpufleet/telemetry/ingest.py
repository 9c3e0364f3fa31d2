"""Ingest: read telemetry files (or a live Prometheus) and append them to the store."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Literal

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.fileio import parse_yaml_or_json, read_user_text
from gpufleet.telemetry.readers import (
    read_cloudwatch_csv,
    read_exposition,
    read_nvidia_smi_csv,
    read_query_range_json,
)
from gpufleet.telemetry.readers.common import DCGM_METRICS
from gpufleet.telemetry.schema import IngestReport, ProblemCounter, SampleBatch
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.units import US_PER_S
from gpufleet.validation import checked_arguments

InputFormat = Literal["auto", "nvidia-smi", "exposition", "prom-json", "cloudwatch"]
INPUT_FORMATS: Final[tuple[str, ...]] = ("auto", "nvidia-smi", "exposition", "prom-json", "cloudwatch")
#: Largest telemetry file read at once [bytes] (the input layer's limit, raised for telemetry logs).
MAX_TELEMETRY_FILE_BYTES: Final = 1024 * 1024 * 1024


def detect_format(path: Path, text: str) -> str:
    """Guess the format from the content (the first non-empty line) and the suffix."""
    head = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    if path.suffix.lower() == ".json" or head.startswith("{"):
        return "prom-json"
    low = head.lower()
    if "metricname" in low.replace(" ", "") and "," in head:
        return "cloudwatch"
    if low.startswith("timestamp,") or low.startswith("timestamp ,"):
        return "nvidia-smi"
    if head.startswith("#") or "{" in head or head.split(" ")[0].upper().startswith("DCGM_"):
        return "exposition"
    raise ConfigFileError(
        f"Cannot tell the format of {path} from its first line {head[:80]!r}. Give --input-format "
        "nvidia-smi, exposition, prom-json or cloudwatch."
    )


def read_file(
    path: Path | str,
    *,
    batch: SampleBatch,
    problems: ProblemCounter,
    input_format: str = "auto",
    host: str | None = None,
    timezone: str | None = None,
    scrape_ts_us: int | None = None,
    formats: set[str] | None = None,
) -> int:
    """Read one telemetry file into ``batch``; returns the number of records read. ``formats``, when given,
    collects the format the file was read as."""
    p = Path(path)
    if input_format not in INPUT_FORMATS:
        raise InputError(f"Unknown input format {input_format!r}; use one of {', '.join(INPUT_FORMATS)}.")
    text = read_user_text(p, what="telemetry file", max_bytes=MAX_TELEMETRY_FILE_BYTES)
    fmt = detect_format(p, text) if input_format == "auto" else input_format
    if formats is not None:
        formats.add(fmt)
    n = _read_text(
        p, text, fmt, batch=batch, problems=problems, host=host, timezone=timezone, scrape_ts_us=scrape_ts_us
    )
    if n == 0:
        raise ConfigFileError(
            f"The telemetry file {p} ({fmt}) holds no samples: it is empty or has only comments, headers or "
            f"HELP/TYPE lines. Expected samples of the metrics {', '.join(EXPECTED_METRICS)} (dcgm-exporter "
            "names; nvidia-smi CSV rows, Prometheus query_range JSON and CloudWatch CSV carry the same "
            "metrics). Point gpufleet at a scrape or export that holds data, or leave this file out."
        )
    return n


#: The metric names the readers map (dcgm-exporter's; listed in the "no samples" message).
EXPECTED_METRICS: Final[tuple[str, ...]] = tuple(DCGM_METRICS)


def _read_text(
    p: Path,
    text: str,
    fmt: str,
    *,
    batch: SampleBatch,
    problems: ProblemCounter,
    host: str | None,
    timezone: str | None,
    scrape_ts_us: int | None,
) -> int:
    """Records read from ``text`` in the format ``fmt`` (see :func:`read_file`)."""
    src = str(p)
    if fmt == "nvidia-smi":
        if not timezone:
            raise InputError(
                f"{p} is an nvidia-smi CSV, whose timestamps are the host's local time without a zone. Give "
                "the host's time zone with --timezone (e.g. UTC or Europe/Berlin)."
            )
        return read_nvidia_smi_csv(
            text, source=src, host=host or p.stem, timezone=timezone, batch=batch, problems=problems
        )
    if fmt == "exposition":
        at = scrape_ts_us if scrape_ts_us is not None else int(p.stat().st_mtime * US_PER_S)
        return read_exposition(text, source=src, scrape_ts_us=at, batch=batch, problems=problems)
    if fmt == "prom-json":
        doc = parse_yaml_or_json(
            p.with_suffix(".json"),
            text,
            lambda kind, err: f"The telemetry file {p} is not valid {kind}: {err}.",
        )
        return read_query_range_json(doc, source=src, batch=batch, problems=problems)
    return read_cloudwatch_csv(text, source=src, batch=batch, problems=problems)


@checked_arguments("telemetry ingest")
def ingest_files(
    paths: Sequence[Path | str],
    *,
    store: TelemetryStore | None = None,
    input_format: str = "auto",
    host: str | None = None,
    timezone: str | None = None,
    scrape_ts_us: int | None = None,
    now_us: int | None = None,
) -> IngestReport:
    """Read ``paths`` and append their samples to ``store`` in one atomic batch."""
    if isinstance(paths, str | bytes | os.PathLike) or not isinstance(paths, Sequence):
        raise InputError(f"paths must be a list of telemetry file paths, got {paths!r}. Pass [path, ...].")
    if not paths:
        raise InputError("No telemetry files given. Pass one or more files, or --prometheus URL.")
    bad = [p for p in paths if not isinstance(p, str | os.PathLike) or not str(p)]
    if bad:
        raise InputError(f"telemetry file paths must be non-empty strings or paths, got {bad[:3]!r}.")
    for name, value in (("input_format", input_format), ("host", host), ("timezone", timezone)):
        if value is not None and not isinstance(value, str):
            raise InputError(f"{name} must be a string, got {value!r}.")
    if host is not None and not host.strip():
        raise InputError(
            f"--host {host!r} is blank; it names the machine of an nvidia-smi CSV. Give the host name, or "
            "leave --host out to use the file name."
        )
    store = store or TelemetryStore()
    batch, problems = SampleBatch(), ProblemCounter()
    n = 0
    formats: set[str] = set()
    for p in paths:
        n += read_file(
            p,
            batch=batch,
            problems=problems,
            input_format=input_format,
            host=host,
            timezone=timezone,
            scrape_ts_us=scrape_ts_us,
            formats=formats,
        )
    unused = [f"--{name}" for name, value in (("host", host), ("timezone", timezone)) if value is not None]
    if unused and "nvidia-smi" not in formats:
        raise InputError(
            f"{' and '.join(unused)} {'apply' if len(unused) > 1 else 'applies'} to nvidia-smi CSVs "
            "only (their rows carry no host and no time "
            f"zone), but the files were read as {', '.join(sorted(formats))}, whose samples carry their own "
            f"host labels and UTC timestamps, so {' and '.join(unused)} would be silently ignored. Leave "
            f"{'them' if len(unused) > 1 else 'it'} out, or pass --input-format nvidia-smi if the files are "
            "nvidia-smi CSVs."
        )
    return store.append(batch, problems, sources=[str(p) for p in paths], rows_read=n, now_us=now_us)


@checked_arguments("Prometheus ingest")
def ingest_prometheus(
    url: str,
    *,
    start_s: float,
    end_s: float,
    step_s: float = 60.0,
    store: TelemetryStore | None = None,
    timeout_s: float = 30.0,
    now_us: int | None = None,
) -> IngestReport:
    """Query a live Prometheus for ``[start_s, end_s]`` and append the samples to ``store``."""
    from gpufleet.telemetry.readers.prometheus import read_prometheus

    store = store or TelemetryStore()
    batch, problems = SampleBatch(), ProblemCounter()
    n = read_prometheus(
        url, start_s=start_s, end_s=end_s, step_s=step_s, batch=batch, problems=problems, timeout_s=timeout_s
    )
    return store.append(
        batch,
        problems,
        sources=[url],
        rows_read=n,
        now_us=now_us if now_us is not None else int(time.time() * US_PER_S),
    )


__all__ = ["INPUT_FORMATS", "detect_format", "ingest_files", "ingest_prometheus", "read_file"]
