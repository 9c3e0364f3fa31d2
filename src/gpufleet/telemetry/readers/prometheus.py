"""A live Prometheus: gpufleet writes the PromQL and reads ``/api/v1/query_range`` over HTTP (httpx).

One query per time chunk selects every DCGM metric gpufleet knows, in any letter case
(``{__name__=~"(?i)DCGM_FI_DEV_GPU_UTIL|..."}``). Chunks keep each series under Prometheus's 11,000 points
per query limit. A server that is down, slow (timeout) or answers an error raises :class:`FetchError`
saying which and what to do.
"""

from __future__ import annotations

import json
import math
import time
from typing import Final
from urllib.parse import urlsplit

import httpx

from gpufleet.errors import FetchError, InputError
from gpufleet.telemetry.readers.common import DCGM_METRICS, alias_names
from gpufleet.telemetry.readers.prom_json import read_query_range_json
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.validation import check_number

#: Prometheus refuses a range query with more than 11,000 points per series (web/api/v1 ``maxPoints``).
MAX_POINTS_PER_SERIES: Final = 11_000
#: Most points per series over a whole --start..--end range: 10^7 (19 years at 60 s; each 11,000 points is
#: one request, so this bounds a single ingest to ~900 requests).
MAX_POINTS_PER_QUERY_RANGE: Final = 10_000_000
#: Longest --timeout per request [s]: one hour.
MAX_TIMEOUT_S: Final = 3600.0
#: Largest response body read [bytes]: 1 GiB, the telemetry file limit (gpufleet.telemetry.ingest); a server
#: that streams without end is cut off here or at --timeout, whichever comes first.
MAX_RESPONSE_BYTES: Final = 1024 * 1024 * 1024


def _get(
    http: httpx.Client, url: str, params: dict[str, str], timeout_s: float, base: str
) -> tuple[int, bytes]:
    """(HTTP status, body) of GET ``url``: the whole answer within ``timeout_s`` and
    :data:`MAX_RESPONSE_BYTES` (httpx's timeout is per read, so a server trickling bytes forever hung)."""
    deadline = time.monotonic() + timeout_s
    chunks: list[bytes] = []
    size = 0
    with http.stream("GET", url, params=params) as resp:
        for chunk in resp.iter_bytes():
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise FetchError(
                    f"Prometheus at {base} sent more than {MAX_RESPONSE_BYTES // 1024**2:,} MiB for one "
                    "query; give a larger --step or a shorter --start..--end range."
                )
            if time.monotonic() > deadline:
                raise FetchError(
                    f"Prometheus at {base} did not finish answering within {timeout_s:g} s (it kept "
                    "sending). Retry with a larger --timeout, a larger --step or a shorter range."
                )
            chunks.append(chunk)
        return resp.status_code, b"".join(chunks)


def _hostname(url: str) -> str | None:
    """The host of ``url``; None when it has none or cannot be parsed (``http://[::1``), or when httpx
    would refuse it (a line break or a space in it raised httpx.InvalidURL, a traceback)."""
    if any(ch.isspace() or not ch.isprintable() for ch in url):
        return None
    try:
        httpx.URL(url)
    except httpx.InvalidURL:
        return None
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def metrics_promql(metrics: tuple[str, ...] | None = None) -> str:
    """The selector gpufleet sends: every known DCGM metric, case-insensitive (lower-cased pipelines)."""
    names = metrics or (*DCGM_METRICS, *alias_names())
    return '{__name__=~"(?i)' + "|".join(names) + '"}'


def read_prometheus(
    url: str,
    *,
    start_s: float,
    end_s: float,
    step_s: float,
    batch: SampleBatch,
    problems: ProblemCounter,
    timeout_s: float = 30.0,
    client: httpx.Client | None = None,
) -> int:
    """Query ``url`` for ``[start_s, end_s]`` at ``step_s`` and add the samples to ``batch``."""
    if not url.startswith(("http://", "https://")) or not _hostname(url):
        raise InputError(
            f"--prometheus {url!r} is not an http(s) URL with a host. Give e.g. http://prometheus:9090."
        )
    check_number("timeout_s", timeout_s, maximum=MAX_TIMEOUT_S, flag="--timeout")
    if not all(math.isfinite(x) for x in (start_s, end_s, step_s)):
        raise InputError(f"--start, --end and --step must be finite (got {start_s}, {end_s}, {step_s}).")
    if end_s > start_s and step_s > 0 and (end_s - start_s) / step_s > MAX_POINTS_PER_QUERY_RANGE:
        raise InputError(
            f"--start to --end at --step {step_s:g} s is {(end_s - start_s) / step_s:,.0f} points per "
            f"series, above the {MAX_POINTS_PER_QUERY_RANGE:,} gpufleet asks a Prometheus for (one year at "
            "60 s is 525,600). Give a later --start, an earlier --end or a larger --step."
        )
    if not (end_s > start_s and step_s > 0):
        raise InputError(
            f"The time range is empty or the step is not positive (start {start_s}, end {end_s}, step "
            f"{step_s}). "
            "Give --start before --end and a --step such as 60s."
        )
    base = url.rstrip("/")
    own = client is None
    http = client or httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0)))
    chunk_s = step_s * (MAX_POINTS_PER_SERIES - 1)
    n = 0
    try:
        t = start_s
        while t <= end_s:
            t_end = min(end_s, t + chunk_s)
            params = {
                "query": metrics_promql(),
                "start": f"{t:.3f}",
                "end": f"{t_end:.3f}",
                "step": f"{step_s:g}",
            }
            try:
                status, body = _get(http, f"{base}/api/v1/query_range", params, timeout_s, base)
            except httpx.TimeoutException:
                raise FetchError(
                    f"Prometheus at {base} did not answer within {timeout_s:g} s. It is overloaded or the "
                    "range "
                    "is too large: retry with a larger --timeout, a larger --step or a shorter range."
                ) from None
            except httpx.HTTPError as exc:
                raise FetchError(
                    f"Prometheus at {base} cannot be reached ({type(exc).__name__}: {exc}). Check the URL "
                    "and "
                    f"that the server is up (curl {base}/-/ready)."
                ) from None
            try:
                doc = json.loads(body)
            except ValueError:  # also bytes that are not UTF-8 text (UnicodeDecodeError)
                raise FetchError(
                    f"Prometheus at {base} answered HTTP {status} with a body that is not JSON "
                    f"({body[:120]!r}). Is the URL the Prometheus server (not a UI or proxy page)?"
                ) from None
            if not isinstance(doc, dict):  # a list or a number had no .get (AttributeError)
                raise FetchError(
                    f"Prometheus at {base} answered HTTP {status} with JSON that is not an API response "
                    f"({body[:120]!r}). Is the URL the Prometheus server (not a UI or proxy page)?"
                )
            if status != 200 or doc.get("status") != "success":
                raise FetchError(
                    f"Prometheus at {base} refused the query (HTTP {status}, "
                    f"{doc.get('errorType')}: "
                    f"{doc.get('error')}). Query sent: {params['query']}"
                )
            n += read_query_range_json(
                doc, source=base, batch=batch, problems=problems, source_kind="prometheus"
            )
            t = t_end + step_s
    finally:
        if own:
            http.close()
    return n


__all__ = ["MAX_POINTS_PER_SERIES", "metrics_promql", "read_prometheus"]
