"""Operability: Prometheus metrics, security headers, the request-size limit and the request log line with its
request id (one ASGI middleware, :mod:`.logs`), the per-token rate limit, and the cache of answered catalog
queries.

Metrics are kept in process (each replica exports its own; Prometheus sums them):

- ``gpufleet_http_requests_total{method,route,status}`` and ``gpufleet_http_request_duration_seconds``
  (a histogram per method and route template, so that ``/api/v1/jobs/{job_id}`` is one series);
- ``gpufleet_jobs{status}``: jobs per status in the database (the queue depth is ``status="queued"``), read at
  scrape time.
"""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from gpufleet.service.errors import RateLimited
from gpufleet.service.logs import log_request, request_id

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: histogram bucket upper bounds [s]
BUCKETS_S: tuple[float, ...] = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

#: Content-Security-Policy of every response: nothing from elsewhere, no script at all (the dashboard has
#: none), inline styles only (the reports' <style> and SVG attributes), forms post to this origin only
CSP = (
    "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
#: the OpenAPI pages (/docs) load Swagger UI from a CDN: they get their own, looser policy
DOCS_CSP = "default-src 'self' https://cdn.jsdelivr.net 'unsafe-inline'; img-src 'self' data: https:"

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"permissions-policy", b"camera=(), microphone=(), geolocation=()"),
)


class Metrics:
    """Request counters and latency histograms (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[str, str, int], int] = defaultdict(int)
        self.buckets: dict[tuple[str, str], list[int]] = {}
        self.sums: dict[tuple[str, str], float] = defaultdict(float)

    def observe(self, method: str, route: str, status: int, seconds: float) -> None:
        with self._lock:
            self.requests[(method, route, status)] += 1
            counts = self.buckets.setdefault((method, route), [0] * (len(BUCKETS_S) + 1))
            counts[bisect.bisect_left(BUCKETS_S, seconds)] += 1
            self.sums[(method, route)] += seconds

    def render(self, job_counts: dict[str, int]) -> str:
        """The Prometheus text exposition (version 0.0.4)."""

        def esc(v: str) -> str:
            return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")

        out = [
            "# HELP gpufleet_http_requests_total Requests by method, route template and status.",
            "# TYPE gpufleet_http_requests_total counter",
        ]
        with self._lock:
            for (m, r, s), n in sorted(self.requests.items()):
                out.append(f'gpufleet_http_requests_total{{method="{m}",route="{esc(r)}",status="{s}"}} {n}')
            out += [
                "# HELP gpufleet_http_request_duration_seconds Time to answer a request [s].",
                "# TYPE gpufleet_http_request_duration_seconds histogram",
            ]
            for (m, r), counts in sorted(self.buckets.items()):
                labels = f'method="{m}",route="{esc(r)}"'
                running = 0
                for le, c in zip((*BUCKETS_S, float("inf")), counts, strict=True):
                    running += c
                    le_text = "+Inf" if le == float("inf") else repr(le)
                    out.append(
                        f'gpufleet_http_request_duration_seconds_bucket{{{labels},le="{le_text}"}} {running}'
                    )
                out.append(f"gpufleet_http_request_duration_seconds_sum{{{labels}}} {self.sums[(m, r)]!r}")
                out.append(f"gpufleet_http_request_duration_seconds_count{{{labels}}} {running}")
        out += ["# HELP gpufleet_jobs Jobs in the database by status.", "# TYPE gpufleet_jobs gauge"]
        for status in ("queued", "running", "succeeded", "failed", "cancelled"):
            out.append(f'gpufleet_jobs{{status="{status}"}} {job_counts.get(status, 0)}')
        return "\n".join(out) + "\n"


class RateLimiter:
    """A token bucket per API token: ``rate_per_s`` sustained, ``burst`` at once (per process)."""

    def __init__(self, rate_per_s: float, burst: int) -> None:
        self.rate, self.burst = rate_per_s, burst
        self._lock = threading.Lock()
        self._state: dict[int, tuple[float, float]] = {}

    def check(self, key: int) -> None:
        if self.rate <= 0:
            return
        now = time.monotonic()
        with self._lock:
            level, last = self._state.get(key, (float(self.burst), now))
            level = min(float(self.burst), level + (now - last) * self.rate)
            if level < 1.0:
                self._state[key] = (level, now)
                wait_s = (1.0 - level) / self.rate
                raise RateLimited(
                    f"Too many requests with this token: the limit is {self.rate:g} per second (bursts of "
                    f"{self.burst}). Retry in {wait_s:.1f} s, or spread the calls over several tokens."
                )
            self._state[key] = (level - 1.0, now)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key == name:
            return bytes(value).decode("latin-1")
    return None


class ResponseCache:
    """The JSON bodies of the last ``max_entries`` distinct queries (least recently used goes first), each
    kept with the data it was computed from (``source``: an immutable table, such as the shipped offer
    table): a body is only served while :meth:`get` is given the very same ``source``, so a new catalog
    version never gets an old answer. At most ``max_bytes`` of bodies are kept (a page of 1,000 offers is
    ~0.7 MB). Thread-safe; per process. ``max_entries`` 0: nothing is kept."""

    def __init__(self, max_entries: int, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[Any, ...], tuple[object, bytes]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, key: tuple[Any, ...], source: object) -> bytes | None:
        with self._lock:
            hit = self._entries.get(key)
            if hit is None or hit[0] is not source:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return hit[1]

    def put(self, key: tuple[Any, ...], source: object, body: bytes) -> None:
        if self.max_entries <= 0 or len(body) > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= len(old[1])
            self._entries[key] = (source, body)
            self._bytes += len(body)
            while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
                self._bytes -= len(self._entries.popitem(last=False)[1][1])

    def __len__(self) -> int:
        return len(self._entries)


def _error_body(status: int, kind: str, message: str) -> bytes:
    return json.dumps({"error": {"status": status, "type": kind, "message": message}}).encode()


class OpsMiddleware:
    """Adds the security headers, enforces the request-size limit and records the metrics of every request."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, max_body_bytes: int) -> None:
        self.app, self.metrics, self.max_body = app, metrics, max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status_box = [500]
        rid = request_id(_header(scope, b"x-request-id"))
        # request.state: the API and the pages put the team there for the log line
        req_state = scope.setdefault("state", {})
        req_state["request_id"] = rid
        path = str(scope.get("path", ""))
        csp = (DOCS_CSP if path in ("/docs", "/redoc") else CSP).encode()
        too_large = self._declared_too_large(scope)

        over = [False]  # the body streamed past the limit: whatever the app answers becomes a 413
        sent_413 = [False]

        async def send_wrapped(message: Message) -> None:
            if over[0]:
                if not sent_413[0]:
                    sent_413[0] = True
                    status_box[0] = 413
                    await self._too_large(send_secured, path)
                return
            await send_secured(message)

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                status_box[0] = int(message["status"])
                headers = list(message.get("headers", []))
                names = {h[0].lower() for h in headers}
                headers += [h for h in SECURITY_HEADERS if h[0] not in names]
                if b"content-security-policy" not in names:
                    headers.append((b"content-security-policy", csp))
                headers.append((b"x-request-id", rid.encode()))
                message["headers"] = headers
            await send(message)

        received = [0]

        async def receive_limited() -> Message:
            if over[0]:
                return {"type": "http.request", "body": b"", "more_body": False}
            message = await receive()
            if message["type"] == "http.request":
                received[0] += len(message.get("body", b""))
                if received[0] > self.max_body:
                    over[0] = True  # the app gets an end of body; its answer is replaced
                    return {"type": "http.request", "body": b"", "more_body": False}
            return message

        try:
            if too_large:
                status_box[0] = 413
                await self._too_large(send_secured, path)
            else:
                await self.app(scope, receive_limited, send_wrapped)
        finally:
            route = scope.get("route")
            template = getattr(route, "path", None) or "(unmatched)"
            took_s = time.perf_counter() - start
            method = str(scope.get("method", ""))
            self.metrics.observe(method, template, status_box[0], took_s)
            team = req_state.get("team")
            log_request(
                method=method,
                route=template,
                status=status_box[0],
                duration_s=took_s,
                team=None if team is None else str(team),
                rid=rid,
            )

    def _declared_too_large(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", []):
            if name == b"content-length":
                try:
                    return int(value) > self.max_body
                except ValueError:
                    return False
        return False

    async def _too_large(self, send: Send, path: str) -> None:
        """The 413 answer: the API's JSON error, or for a dashboard form a page saying the same, with a link
        back to the form (a browser showed the JSON)."""
        message = (
            f"The request body is larger than the limit of {self.max_body:,} bytes. Send a smaller body "
            "(split the fleet or telemetry file, e.g. by day), or start the service with a larger "
            "--max-body-mib."
        )
        if path.startswith("/api/"):
            body = _error_body(413, "PayloadTooLarge", message)
            kind = b"application/json"
        else:
            from html import escape

            body = (
                '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Upload too large · '
                "gpufleet</title></head><body><main><h1>Upload too large</h1>"
                f'<p role="alert">{escape(message)}</p><p><a href="{escape(path)}">Back to the form</a></p>'
                "</main></body></html>"
            ).encode()
            kind = b"text/html; charset=utf-8"
        headers = [(b"content-type", kind), (b"connection", b"close")]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
