"""Notifications: when a job ends, each webhook of its team that lists the event receives a POST, in a
Slack-compatible shape (``{"text": "..."}``, what Slack, Mattermost and Teams incoming webhooks take) or a
generic one (``{"event": ..., "job": {...}}``). Delivery is best effort (one try, 5 s timeout) in a background
thread; the outcome (HTTP status or error) is kept on the webhook for the team's admin to see."""

from __future__ import annotations

import logging
import threading
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select, update
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from gpufleet.errors import InputError
from gpufleet.service.db import WEBHOOK_EVENTS, Job, Webhook, now_unix_s

log = logging.getLogger("gpufleet.service.webhooks")

FORMATS: tuple[str, ...] = ("slack", "generic")
TIMEOUT_S = 5.0


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
        hooks = [
            h
            for h in db.scalars(select(Webhook).where(Webhook.team_id == job.team_id)).all()
            if event in h.events.split(",")
        ]
        if not hooks:
            return None
        bodies = [(h.id, h.url, payload(h.format, job, event)) for h in hooks]
    t = threading.Thread(target=_deliver, args=(sm, bodies), name=f"gpufleet-webhooks-{job_id}", daemon=True)
    t.start()
    return t


def _deliver(sm: sessionmaker[OrmSession], bodies: list[tuple[int, str, dict[str, Any]]]) -> None:
    import httpx

    for hook_id, url, body in bodies:
        status: int | None = None
        error: str | None = None
        try:
            status = httpx.post(url, json=body, timeout=TIMEOUT_S, follow_redirects=False).status_code
            if status >= 400:
                error = f"HTTP {status}"
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}"[:500]
        if error:
            log.warning("webhook %s: %s", hook_id, error)
        with sm() as db:
            db.execute(
                update(Webhook)
                .where(Webhook.id == hook_id)
                .values(last_delivery_unix_s=now_unix_s(), last_status=status, last_error=error)
            )
            db.commit()
