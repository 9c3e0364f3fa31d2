"""Request traces: arrival time, prompt tokens and output tokens of every request, from the public layouts.

Accepted layouts (``fmt="auto"`` picks one from the header or the file suffix):

* ``azure``: Azure LLM inference trace 2023/2024 (Splitwise, Patel et al. ISCA 2024), CSV
  ``TIMESTAMP,ContextTokens,GeneratedTokens``; the timestamp is a naive date-time (``2023-11-16
  18:15:46.6805900``, up to 7 fractional digits), or one with a UTC offset (``Z``, ``+05:00``) on every row.
* ``mooncake``: Mooncake FAST'25 traces (Qin et al. 2025), JSON Lines with ``timestamp`` [ms from the trace
  start], ``input_length``, ``output_length`` (``hash_ids`` is read and ignored).
* ``burstgpt``: BurstGPT (Wang et al. 2024), CSV ``Timestamp,Model,Request tokens,Response tokens,Total
  tokens,Log Type``; Timestamp in seconds from the trace start; rows with 0 response tokens are failed
  requests and are dropped (counted in ``dropped``).
* ``generic``: CSV ``timestamp_s,input_tokens,output_tokens`` (seconds from any origin; extra columns are an
  error, so that a misspelt column is never ignored).

Every file goes through :mod:`gpufleet.fileio`. Timestamps must be non-decreasing (a trace is replayed in
order; sort it first), token counts whole numbers from 0 to ``MAX_SEQUENCE_TOKENS`` (a fraction such as 12.5
is an error, never rounded), and output tokens >= 1 (the estimator's TTFT is
the first output token).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.fileio import csv_header_hint, iter_csv_text, loads_json_strict, read_user_text
from gpufleet.units import MS_PER_S, SECONDS_PER_HOUR
from gpufleet.validation import MAX_SEQUENCE_TOKENS, checked_arguments

#: largest trace file read [bytes]: 1 GiB (a week of the Azure 2024 trace is ~0.7 GB)
TRACE_MAX_BYTES = 1024 * 1024 * 1024
TRACE_FORMATS = ("auto", "azure", "mooncake", "burstgpt", "generic")

_AZURE = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
_BURST = ("Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type")
_GENERIC = ("timestamp_s", "input_tokens", "output_tokens")
_MOONCAKE_KEYS = ("timestamp", "input_length", "output_length")


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestTrace:
    """Requests in arrival order; arrays are read-only and of equal length."""

    name: str
    layout: str  # azure | mooncake | burstgpt | generic | synthetic
    arrival_s: npt.NDArray[np.float64]  # seconds from the first request [s]
    input_tokens: npt.NDArray[np.float64]  # prompt tokens [tokens]
    output_tokens: npt.NDArray[np.float64]  # generated tokens [tokens]
    start_time_of_day_s: float  # clock time of the first request [s after midnight]; 0 when unknown
    dropped: int = 0  # rows skipped on purpose (BurstGPT failed requests)

    def __len__(self) -> int:
        return len(self.arrival_s)

    @property
    def duration_s(self) -> float:
        return float(self.arrival_s[-1]) if len(self.arrival_s) else 0.0

    @property
    def mean_rate_per_s(self) -> float:
        """Requests per second over the trace span [1/s]."""
        return len(self) / self.duration_s if self.duration_s > 0 else float(len(self))


def make_trace(
    *,
    name: str,
    layout: str,
    arrival_s: npt.ArrayLike,
    input_tokens: npt.ArrayLike,
    output_tokens: npt.ArrayLike,
    start_time_of_day_s: float = 0.0,
    dropped: int = 0,
) -> RequestTrace:
    """A checked trace (sorted arrivals, non-negative tokens, >= 1 output token), shifted to start at 0 s."""
    t = np.asarray(arrival_s, dtype=np.float64)
    i = np.asarray(input_tokens, dtype=np.float64)
    o = np.asarray(output_tokens, dtype=np.float64)
    if not (t.shape == i.shape == o.shape) or t.ndim != 1:
        raise InputError("trace arrays must be one-dimensional and of equal length.")
    if len(t) == 0:
        raise ConfigFileError(f"The trace {name} has no requests; it needs at least one row.")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(i)) and np.all(np.isfinite(o))):
        raise ConfigFileError(f"The trace {name} has non-finite numbers; every value must be a number.")
    bad = np.flatnonzero(np.diff(t) < 0)
    if len(bad):
        k = int(bad[0]) + 1
        raise ConfigFileError(
            f"The trace {name} is not sorted by time: request {k + 1} arrives at {t[k]:.3f} s, before "
            f"request {k} at {t[k - 1]:.3f} s. Sort the file by its timestamp column and run again."
        )
    for what, arr, low in (("input", i, 0.0), ("output", o, 1.0)):
        neg = np.flatnonzero(arr < low)
        if len(neg):
            k = int(neg[0])
            raise ConfigFileError(
                f"The trace {name}, request {k + 1}: {what} tokens = {arr[k]:g}; {what} tokens must be "
                f">= {low:g}. Remove or fix the row."
            )
    t = t - t[0]
    for arr in (t, i, o):
        arr.setflags(write=False)
    return RequestTrace(
        name=name,
        layout=layout,
        arrival_s=t,
        input_tokens=i,
        output_tokens=o,
        start_time_of_day_s=start_time_of_day_s,
        dropped=dropped,
    )


@checked_arguments("trace rate scaling")
def scale_rate(trace: RequestTrace, factor: float) -> RequestTrace:
    """The same requests arriving ``factor`` times faster (inter-arrival times divided by ``factor``)."""
    if not factor > 0:
        raise InputError(f"rate factor {factor} must be > 0 (2 = twice the request rate).")
    t = trace.arrival_s / factor
    t.setflags(write=False)
    return replace(trace, arrival_s=t, name=f"{trace.name} x{factor:g}")


def repeat(trace: RequestTrace, times: int) -> RequestTrace:
    """The trace played ``times`` times back to back (for long replays and benchmarks)."""
    if times < 1:
        raise InputError(f"repeat count {times} must be >= 1.")
    gap = trace.duration_s + (trace.duration_s / max(len(trace) - 1, 1))
    t = np.concatenate([trace.arrival_s + k * gap for k in range(times)])
    return make_trace(
        name=f"{trace.name} x{times} repeats",
        layout=trace.layout,
        arrival_s=t,
        input_tokens=np.tile(trace.input_tokens, times),
        output_tokens=np.tile(trace.output_tokens, times),
        start_time_of_day_s=trace.start_time_of_day_s,
    )


@checked_arguments("request trace reader")
def read_trace(path: str | Path, fmt: str = "auto") -> RequestTrace:
    """Read a request trace in one of :data:`TRACE_FORMATS` (module doc)."""
    if fmt not in TRACE_FORMATS:
        raise InputError(f"trace format {fmt!r} is unknown. Allowed: {', '.join(TRACE_FORMATS)}.")
    p = Path(path)
    text = read_user_text(p, what="request trace", max_bytes=TRACE_MAX_BYTES)
    if fmt == "auto":
        fmt = _detect(p, text)
    if fmt == "mooncake":
        return _read_mooncake(p, text)
    return _read_csv(p, text, fmt)


def _detect(p: Path, text: str) -> str:
    head = text.lstrip()[:1]
    if p.suffix.lower() in (".jsonl", ".ndjson") or head == "{":
        return "mooncake"
    first = text.splitlines()[0] if text.strip() else ""
    cols = [c.strip() for c in first.split(",")]
    for fmt, layout in (("azure", _AZURE), ("burstgpt", _BURST), ("generic", _GENERIC)):
        if cols == list(layout):
            return fmt
    if not text.strip():
        raise ConfigFileError(f"The request trace {p} is empty; it needs a header line and rows.")
    raise ConfigFileError(
        f"The request trace {p} has the columns {cols}, which match no known layout. Accepted: Azure "
        f"{','.join(_AZURE)}; BurstGPT {','.join(_BURST)}; generic {','.join(_GENERIC)}; or Mooncake JSON "
        f"Lines (.jsonl). Rename the columns or pass --trace-format.{csv_header_hint(cols)}"
    )


#: An Azure trace TIMESTAMP: date, time, up to 7 fractional digits (the trace's own), optional UTC offset.
_AZURE_TIME = re.compile(
    r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(?::\d{2})?)(?:\.(\d{1,9}))?\s*(Z|[+-]\d{2}:?\d{2})?"
)


def _azure_time(p: Path, line: int, raw: str) -> datetime:
    """The date-time of an Azure TIMESTAMP: naive, or aware when it carries an offset (``Z``, ``+05:00``),
    which is kept rather than cut off; a date without a time of day is an error (requests would collapse
    onto midnight)."""
    m = _AZURE_TIME.fullmatch(raw.strip())
    dt: datetime | None = None
    if m is not None:
        frac = f".{(m.group(2) or '0')[:6]}"
        tz = m.group(3) or ""
        try:
            dt = datetime.fromisoformat(m.group(1).replace("T", " ") + frac + ("+00:00" if tz == "Z" else tz))
        except ValueError:
            dt = None
    if dt is None:
        raise ConfigFileError(
            f"The request trace {p}, line {line}: TIMESTAMP {raw!r} is not a date-time like "
            "2023-11-16 18:15:46.6805900 (a date and a time of day; a UTC offset such as +00:00 is optional)."
        )
    return dt


def _number(p: Path, line: int, column: str, raw: str) -> float:
    try:
        v = float(raw)
    except ValueError:
        raise ConfigFileError(
            f"The request trace {p}, line {line}: {column} = {raw!r} is not a number."
        ) from None
    return v


def _tokens(p: Path, line: int, column: str, raw: object) -> float:
    """A token count: a whole number in [0, :data:`MAX_SEQUENCE_TOKENS`] (``12.5`` tokens is a data error,
    not something to round silently)."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise ConfigFileError(
            f"The request trace {p}, line {line}: {column} = {raw!r} is not a number; token counts are "
            "whole numbers >= 0."
        )
    v = _number(p, line, column, raw) if isinstance(raw, str) else float(raw)
    if not math.isfinite(v) or v < 0:
        return v  # non-finite and negative counts: make_trace names the request
    if not v.is_integer() or v > MAX_SEQUENCE_TOKENS:
        raise ConfigFileError(
            f"The request trace {p}, line {line}: {column} = {raw!r}; token counts must be finite whole "
            f"numbers from 0 to {MAX_SEQUENCE_TOKENS:,} (the longest context any model has). Fix the row."
        )
    return v


def _read_csv(p: Path, text: str, fmt: str) -> RequestTrace:
    layout = {"azure": _AZURE, "burstgpt": _BURST, "generic": _GENERIC}[fmt]
    rows = iter_csv_text(text, source=f"The request trace {p}")
    try:
        _, header = next(rows)
    except StopIteration:
        raise ConfigFileError(f"The request trace {p} is empty; it needs a header line and rows.") from None
    header = [h.strip() for h in header]
    if header != list(layout):
        unknown = [h for h in header if h not in layout]
        missing = [c for c in layout if c not in header]
        raise ConfigFileError(
            f"The request trace {p} ({fmt} layout) has the columns {header}: unknown {unknown}, missing "
            f"{missing}. The {fmt} layout is exactly {','.join(layout)}."
        )
    t: list[float] = []
    i: list[float] = []
    o: list[float] = []
    dropped = 0
    first_dt: datetime | None = None
    for line, cells in rows:
        if len(cells) != len(layout):
            raise ConfigFileError(
                f"The request trace {p}, line {line}: {len(cells)} cells, expected {len(layout)} "
                f"({','.join(layout)})."
            )
        if fmt == "azure":
            dt = _azure_time(p, line, cells[0])
            if first_dt is None:
                first_dt = dt
            elif (dt.tzinfo is None) != (first_dt.tzinfo is None):
                raise ConfigFileError(
                    f"The request trace {p}, line {line}: TIMESTAMP {cells[0]!r} "
                    f"{'has no' if dt.tzinfo is None else 'has a'} UTC offset but the first row's "
                    f"{'has one' if first_dt.tzinfo is not None else 'does not'}; mixing them makes the "
                    "order of requests unknowable. Give every timestamp an offset (e.g. +00:00), or none."
                )
            t.append((dt - first_dt).total_seconds())
            i.append(_tokens(p, line, "ContextTokens", cells[1]))
            o.append(_tokens(p, line, "GeneratedTokens", cells[2]))
        elif fmt == "burstgpt":
            out = _tokens(p, line, "Response tokens", cells[3])
            if out == 0:
                dropped += 1
                continue
            t.append(_number(p, line, "Timestamp", cells[0]))
            i.append(_tokens(p, line, "Request tokens", cells[2]))
            o.append(out)
        else:
            t.append(_number(p, line, "timestamp_s", cells[0]))
            i.append(_tokens(p, line, "input_tokens", cells[1]))
            o.append(_tokens(p, line, "output_tokens", cells[2]))
    tod = 0.0
    if first_dt is not None:
        tod = first_dt.hour * SECONDS_PER_HOUR + first_dt.minute * 60.0 + first_dt.second
    return make_trace(
        name=p.name,
        layout=fmt,
        arrival_s=t,
        input_tokens=i,
        output_tokens=o,
        start_time_of_day_s=tod,
        dropped=dropped,
    )


def _read_mooncake(p: Path, text: str) -> RequestTrace:
    t: list[float] = []
    i: list[float] = []
    o: list[float] = []
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            rec = loads_json_strict(raw)
        except ValueError as exc:
            raise ConfigFileError(f"The request trace {p}, line {line}: not valid JSON ({exc}).") from None
        if not isinstance(rec, dict):
            raise ConfigFileError(f"The request trace {p}, line {line}: expected a JSON object per line.")
        missing = [k for k in _MOONCAKE_KEYS if k not in rec]
        unknown = [k for k in rec if k not in (*_MOONCAKE_KEYS, "hash_ids")]
        if missing or unknown:
            raise ConfigFileError(
                f"The request trace {p}, line {line}: missing keys {missing}, unknown keys {unknown}. "
                "Mooncake lines have timestamp [ms], input_length, output_length and optionally hash_ids."
            )
        vals = [rec[k] for k in _MOONCAKE_KEYS]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in vals):
            raise ConfigFileError(f"The request trace {p}, line {line}: {_MOONCAKE_KEYS} must be numbers.")
        t.append(float(vals[0]) / MS_PER_S)
        i.append(_tokens(p, line, "input_length", vals[1]))
        o.append(_tokens(p, line, "output_length", vals[2]))
    return make_trace(name=p.name, layout="mooncake", arrival_s=t, input_tokens=i, output_tokens=o)
