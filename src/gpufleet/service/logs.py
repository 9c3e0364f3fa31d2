"""Structured logs of the service, through the standard :mod:`logging`: one line per request (logger
``gpufleet.service.request``: method, route template, status, duration_ms, team, request id) and one per job
event (``gpufleet.service.jobs``: queued, started, succeeded, failed, cancelled, requeued), as JSON lines or
as text (``gpufleet serve --log-format json|text --log-level info``).

A record's structured fields travel in ``extra={"fields": {...}}``; the JSON formatter writes them beside
``ts`` (ISO 8601 UTC), ``level``, ``logger`` and ``message``; the text formatter appends them as
``key=value``. Nothing secret is logged: no token, no body, no query string (a filter may hold a name).
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from gpufleet.errors import InputError

LogFormat = Literal["json", "text"]
LOG_FORMATS: tuple[str, ...] = ("json", "text")
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "warning", "error")

request_log = logging.getLogger("gpufleet.service.request")
job_log = logging.getLogger("gpufleet.service.jobs")

#: a request id a client may send (``X-Request-ID``) and get back; anything else is replaced by a new one
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


def request_id(given: str | None) -> str:
    """The client's ``X-Request-ID`` when it is a plain token (letters, digits, ``._:-``, at most 64), else a
    new random id (32 hex digits)."""
    return given if given is not None and _REQUEST_ID.match(given) else uuid.uuid4().hex


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    f = getattr(record, "fields", None)
    return dict(f) if isinstance(f, dict) else {}


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts, level, logger, message, the record's fields (and exc_info as text)."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        doc |= {k: v for k, v in _fields(record).items() if k not in doc}
        if record.exc_info:
            doc["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False, default=str)


class TextFormatter(logging.Formatter):
    """``time level logger message key=value ...``."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        extra = " ".join(f"{k}={v}" for k, v in _fields(record).items())
        if not extra:
            return text
        head, sep, tail = text.partition("\n")  # a traceback stays below the line
        return f"{head} {extra}{sep}{tail}"


def configure(level: str = "info", fmt: str = "text") -> logging.Handler:
    """Send the service's and uvicorn's logs to stderr at ``level`` in ``fmt``; the handler installed."""
    if fmt not in LOG_FORMATS:
        raise InputError(f"--log-format {fmt!r} is not known. Allowed: {', '.join(LOG_FORMATS)}.")
    if level.lower() not in LOG_LEVELS:
        raise InputError(f"--log-level {level!r} is not known. Allowed: {', '.join(LOG_LEVELS)}.")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    root.addHandler(handler)
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):  # through the root handler, one format
        lg = logging.getLogger(name)
        lg.handlers.clear()
        lg.propagate = True
    return handler


def log_request(
    *, method: str, route: str, status: int, duration_s: float, team: str | None, rid: str
) -> None:
    request_log.info(
        "%s %s %d",
        method,
        route,
        status,
        extra={
            "fields": {
                "method": method,
                "route": route,
                "status": status,
                "duration_ms": round(duration_s * 1000.0, 3),
                "team": team,
                "request_id": rid,
            }
        },
    )


def log_job(event: str, job_id: int, **fields: Any) -> None:
    """A job event (queued, started, succeeded, failed, cancelled, requeued) with its fields."""
    level = logging.WARNING if event == "failed" else logging.INFO
    job_log.log(
        level, "job %d %s", job_id, event, extra={"fields": {"event": event, "job_id": job_id} | fields}
    )
