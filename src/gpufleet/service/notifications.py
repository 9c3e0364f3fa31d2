"""What a job's result means for the teams, once it succeeded: a catalog refresh stores its price changes
(``price_changes``, listed by ``GET /api/v1/catalog/changes``) and notifies every team's ``price_change``
webhooks; a findings run is compared with the team's previous one and notifies ``saving_found`` (a GPU whose
best saving reaches the webhook's threshold, and did not in the previous run) and ``alert_fired`` (an alert
event not in the previous run). A failed job is notified by :func:`.webhooks.notify` (``job_failed``)."""

from __future__ import annotations

import json
import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from gpufleet.service.db import Job, PriceChange, Webhook, now_unix_s
from gpufleet.service.webhooks import dispatch

log = logging.getLogger("gpufleet.service.notifications")

#: at most this many items listed in one notification (the rest counted)
MAX_LISTED = 10


def after_job(sm: sessionmaker[OrmSession], job_id: int) -> list[Any]:
    """Record and notify what a succeeded job found; the delivery threads started (for tests to join)."""
    with sm() as db:
        job = db.get(Job, job_id)
        if job is None or job.status != "succeeded" or not job.result_json:
            return []
        kind, team_id, doc = job.kind, job.team_id, json.loads(job.result_json)
        previous = None
        if kind == "findings":
            prev = db.scalar(
                select(Job.result_json)
                .where(
                    Job.team_id == team_id,
                    Job.kind == "findings",
                    Job.status == "succeeded",
                    Job.id < job_id,
                )
                .order_by(Job.id.desc())
                .limit(1)
            )
            previous = json.loads(prev) if prev else None
    threads = []
    if kind == "catalog_refresh":
        threads.append(record_changes(sm, job_id, doc.get("changes") or []))
    elif kind == "findings":
        threads.append(notify_savings(sm, team_id, job_id, doc, previous))
        threads.append(notify_alerts(sm, team_id, job_id, doc, previous))
    return [t for t in threads if t is not None]


def _body(fmt: str, event: str, text: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"text": text} if fmt == "slack" else {"event": event, "text": text, **data}


def _listed(lines: list[str]) -> str:
    more = len(lines) - MAX_LISTED
    return "\n".join(lines[:MAX_LISTED]) + (f"\n... and {more} more" if more > 0 else "")


def record_changes(sm: sessionmaker[OrmSession], job_id: int, changes: list[dict[str, Any]]) -> Any:
    """Store a refresh's price changes and notify each ``price_change`` webhook of the ones at or above its
    ``min_price_change_fraction`` (any change when it has none)."""
    with sm() as db:
        for c in changes:
            db.add(PriceChange(job_id=job_id, created_unix_s=now_unix_s(), **c))
        db.commit()
    if not changes:
        return None

    def body(hook: Webhook) -> dict[str, Any] | None:
        th = hook.min_price_change_fraction or 0.0
        shown = [c for c in changes if abs(c["change_fraction"]) >= th]
        if not shown:
            return None
        lines = [
            f"{c['provider']} {c['region']} {c['instance_type']} {c['price_kind'].replace('_', '-')}: "
            f"${c['old_price_usd_per_hour']:,.4g}/h -> ${c['new_price_usd_per_hour']:,.4g}/h "
            f"({100 * c['change_fraction']:+.1f} %)"
            for c in shown
        ]
        text = (
            f"gpufleet: {len(shown)} price change(s) of at least {100 * th:g} % in refresh job #{job_id}:\n"
        )
        return _body(hook.format, "price_change", text + _listed(lines), {"job_id": job_id, "changes": shown})

    return dispatch(sm, "price_change", None, body)


def new_savings(
    doc: dict[str, Any], previous: dict[str, Any] | None, threshold_usd_per_month: float
) -> list[dict[str, Any]]:
    """GPUs whose best saving is at least the threshold now and was not in ``previous`` (every one when there
    is no previous run), largest first."""
    before = {
        g["gpu_key"]: float(g["best_savings_usd_per_month"])
        for g in (previous or {}).get("savings_by_gpu", [])
    }

    def counts(saving: float | None) -> bool:  # a saving the threshold lets through (0 never does)
        return saving is not None and saving > 0 and saving >= threshold_usd_per_month

    out = [
        g
        for g in doc.get("savings_by_gpu", [])
        if counts(g["best_savings_usd_per_month"]) and not counts(before.get(g["gpu_key"]))
    ]
    return sorted(out, key=lambda g: (-g["best_savings_usd_per_month"], g["gpu_key"]))


def notify_savings(
    sm: sessionmaker[OrmSession],
    team_id: int,
    job_id: int,
    doc: dict[str, Any],
    previous: dict[str, Any] | None,
) -> Any:
    def body(hook: Webhook) -> dict[str, Any] | None:
        th = hook.min_saving_usd_per_month or 0.0
        found = new_savings(doc, previous, th)
        if not found:
            return None
        total = sum(g["best_savings_usd_per_month"] for g in found)
        lines = [
            f"{g['gpu_key']} ({g['finding']}): ${g['best_savings_usd_per_month']:,.0f}/month" for g in found
        ]
        text = (
            f"gpufleet: {len(found)} new saving(s) of at least ${th:,.0f}/month, ${total:,.0f}/month in all "
            f"(findings job #{job_id}, on-demand prices):\n"
        )
        return _body(
            hook.format,
            "saving_found",
            text + _listed(lines),
            {"job_id": job_id, "savings_usd_per_month": total, "gpus": found},
        )

    return dispatch(sm, "saving_found", team_id, body)


def new_alerts(doc: dict[str, Any], previous: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Alert events of ``doc`` not in ``previous`` (same rule, subject and start)."""
    seen = {(e["rule"], e["subject"], e["start"]) for e in (previous or {}).get("alert_events", [])}
    return [e for e in doc.get("alert_events", []) if (e["rule"], e["subject"], e["start"]) not in seen]


def notify_alerts(
    sm: sessionmaker[OrmSession],
    team_id: int,
    job_id: int,
    doc: dict[str, Any],
    previous: dict[str, Any] | None,
) -> Any:
    fired = new_alerts(doc, previous)
    if not fired:
        return None
    lines = [f"{e['rule']} ({e['severity']}) on {e['subject']} from {e['start']}" for e in fired]
    text = f"gpufleet: {len(fired)} alert(s) fired in findings job #{job_id}:\n" + _listed(lines)

    def body(hook: Webhook) -> dict[str, Any]:
        return _body(hook.format, "alert_fired", text, {"job_id": job_id, "alerts": fired})

    return dispatch(sm, "alert_fired", team_id, body)
