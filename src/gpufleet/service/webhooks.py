"""Notifications: when a job ends, each webhook of its team that lists the event receives a POST, in a
Slack-compatible shape (``{"text": "..."}``, what Slack, Mattermost and Teams incoming webhooks take) or a
generic one (``{"event": ..., "job": {...}}``). Other events (a new saving, an alert that fired, a price
change: :mod:`.notifications`) go through :func:`dispatch` too. Each delivery is a ``deliveries`` row, posted
in a background thread (never in a request): up to three tries (5 s timeout each, :data:`RETRY_DELAYS_S`
between them), its outcome (status, HTTP status, error, tries) kept for the team's admin to see."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select, update
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from gpufleet.errors import InputError
from gpufleet.service.db import WEBHOOK_EVENTS, Delivery, Job, Webhook, now_unix_s

log = logging.getLogger("gpufleet.service.webhooks")

FORMATS: tuple[str, ...] = ("slack", "generic")
TIMEOUT_S = 5.0
#: waits before the second and the third try of a delivery that got no answer, a 5xx or a 429 [s]
RETRY_DELAYS_S: tuple[float, ...] = (2.0, 10.0)


def check_webhook(url: str, fmt: str, events: list[str]) -> tuple[str, str, str]:
    """(url, format, events as stored) or a one-paragraph :class:`InputError`."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or len(url) > 2000:
        raise InputError(
            f"Webhook URL {url[:100]!r} is not allowed: give an http:// or https:// URL of at most 2,000 "
            "characters (e.g. a Slack incoming webhook, https://hooks.slack.com/services/...)."
        )
    if fmt not in FORMATS:
        raise InputError(f"Unknown webhook format {fmt!r}. Allowed: {', '.join(FORMATS)}.")
    unknown = sorted(set(events) - set(WEBHOOK_EVENTS))
    if unknown or not events:
        raise InputError(
            f"Webhook events {', '.join(unknown) or '(none)'} not allowed. Allowed: "
            f"{', '.join(WEBHOOK_EVENTS)} "
            "(one or more)."
        )
    return url, fmt, ",".join(sorted(set(events)))


def job_event(job: Job) -> str:
    return {"succeeded": "job_succeeded", "failed": "job_failed", "cancelled": "job_cancelled"}[job.status]


def payload(fmt: str, job: Job, event: str) -> dict[str, Any]:
    """The JSON body for ``job``'s ``event`` in ``fmt``."""
    verb = {"job_succeeded": "succeeded", "job_failed": "failed", "job_cancelled": "was cancelled"}[event]
    text = f"gpufleet job #{job.id} ({job.kind}, {job.params_source()}) {verb}"
    if job.error:
        text += f": {job.error}"
    if fmt == "slack":
        return {"text": text}
    return {
        "event": event,
        "text": text,
        "job": {
            "id": job.id,
            "kind": job.kind,
            "status": job.status,
            "error": job.error,
            "source": job.params_source(),
            "finished_unix_s": job.finished_unix_s,
        },
    }


def notify(sm: sessionmaker[OrmSession], job_id: int) -> threading.Thread | None:
    """Send the ended job's event to its team's webhooks (in a thread, returned; None when there are none)."""
    with sm() as db:
        job = db.get(Job, job_id)
        if job is None or job.status not in ("succeeded", "failed", "cancelled"):
            return None
        event = job_event(job)
        db.expunge(job)
    return dispatch(sm, event, job.team_id, lambda hook: payload(hook.format, job, event))


def dispatch(
    sm: sessionmaker[OrmSession],
    event: str,
    team_id: int | None,
    body: Callable[[Webhook], dict[str, Any] | None],
) -> threading.Thread | None:
    """Record a delivery of ``event`` for each webhook of ``team_id`` (every team's when None) listing it and
    for which ``body(hook)`` is not None (a threshold not met gives None), then post them in a thread
    (returned; None when there is nothing to send). Never blocks on the network."""
    with sm() as db:
        q = select(Webhook)
        if team_id is not None:
            q = q.where(Webhook.team_id == team_id)
        sends: list[tuple[int, int, str, dict[str, Any]]] = []
        for hook in db.scalars(q.order_by(Webhook.id)).all():
            if event not in hook.events.split(","):
                continue
            doc = body(hook)
            if doc is None:
                continue
            d = Delivery(
                team_id=hook.team_id,
                webhook_id=hook.id,
                event=event,
                body_json=json.dumps(doc),
                status="pending",
                attempts=0,
                created_unix_s=now_unix_s(),
            )
            db.add(d)
            db.flush()
            sends.append((d.id, hook.id, hook.url, doc))
        db.commit()
    if not sends:
        return None
    t = threading.Thread(target=_deliver, args=(sm, sends), name=f"gpufleet-webhooks-{event}", daemon=True)
    t.start()
    return t


def _post(url: str, body: dict[str, Any]) -> tuple[int | None, str | None]:
    """(HTTP status or None, error or None) of one try."""
    import httpx

    try:
        status = httpx.post(url, json=body, timeout=TIMEOUT_S, follow_redirects=False).status_code
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:500]
    return status, (f"HTTP {status}" if status >= 400 else None)


def _deliver(sm: sessionmaker[OrmSession], sends: list[tuple[int, int, str, dict[str, Any]]]) -> None:
    for delivery_id, hook_id, url, body in sends:
        status, error, attempts = None, None, 0
        for attempts in range(1, len(RETRY_DELAYS_S) + 2):
            status, error = _post(url, body)
            if error is None or (status is not None and 400 <= status < 500 and status != 429):
                break  # delivered, or refused for good (a 4xx other than 429 will not change on a retry)
            if attempts <= len(RETRY_DELAYS_S):
                time.sleep(RETRY_DELAYS_S[attempts - 1])
        if error:
            log.warning("webhook %s: %s after %d tries", hook_id, error, attempts)
        now = now_unix_s()
        with sm() as db:
            db.execute(
                update(Delivery)
                .where(Delivery.id == delivery_id)
                .values(
                    status="failed" if error else "delivered",
                    attempts=attempts,
                    http_status=status,
                    error=error,
                    finished_unix_s=now,
                )
            )
            db.execute(
                update(Webhook)
                .where(Webhook.id == hook_id)
                .values(last_delivery_unix_s=now, last_status=status, last_error=error)
            )
            db.commit()
