"""Notifications: when a job ends, each webhook of its team that lists the event receives a POST, in a
Slack-compatible shape (``{"text": "..."}``, what Slack, Mattermost and Teams incoming webhooks take) or a
generic one (``{"event": ..., "job": {...}}``). Other events (a new saving, an alert that fired, a price
change: :mod:`.notifications`) go through :func:`dispatch` too. Each delivery is a ``deliveries`` row, posted
in a background thread (never in a request): up to three tries (5 s timeout each, :data:`RETRY_DELAYS_S`
between them), its outcome (status, HTTP status, error, tries) kept for the team's admin to see.

Where a webhook may point (the SSRF policy, docs/service.md): http or https, no credentials in the URL, an
ASCII host (IDNA as ``xn--``), a port 1-65535, no spaces or control characters. Never: link-local addresses
(169.254.0.0/16 with the cloud metadata service 169.254.169.254, fe80::/10), the metadata host names, the
unspecified, multicast and reserved addresses, or an IPv4 address written as one number or in hex/octal.
Loopback and private addresses (127/8, 10/8, 172.16/12, 192.168/16, fc00::/7, localhost) only when the
operator allows them (``gpufleet serve --webhook-internal-hosts``: an on-premises chat server): a team admin
is not the server's operator. A host name is resolved again before each try and refused by the same rules, so
a name pointing at the metadata service is not posted to. A try has :data:`TIMEOUT_S` per network step and
:data:`TRY_LIMIT_S` in all (a receiver that answers one byte at a time is abandoned), and only the status line
and headers are read."""

from __future__ import annotations

import ipaddress
import json
import logging
import re
import socket
import threading
import time
import unicodedata
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
#: one try in all: connect, send, status line and headers [s]
TRY_LIMIT_S = 15.0
#: host names of cloud metadata services (never a webhook)
METADATA_HOSTS = frozenset(
    {"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}
)
#: metadata addresses outside the link-local range (AWS IPv6, Alibaba Cloud)
METADATA_ADDRESSES = frozenset(
    {ipaddress.ip_address("fd00:ec2::254"), ipaddress.ip_address("100.100.100.200")}
)
#: the process's policy: loopback and private addresses allowed (``ServiceSettings.webhook_internal_hosts``,
#: set by ``create_app``)
_POLICY = {"internal_hosts": False}
_HELP = (
    "Give an http:// or https:// URL of at most 2,000 characters to a public host (e.g. a Slack incoming "
    "webhook, https://hooks.slack.com/services/...)"
)


def allow_internal_hosts(allowed: bool) -> None:
    """Set the process's policy for loopback and private webhook addresses (``create_app`` does)."""
    _POLICY["internal_hosts"] = allowed


def address_problem(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why a webhook may not post to ``ip`` (None: it may)."""
    mapped = getattr(ip, "ipv4_mapped", None)
    ip = mapped or ip
    if ip in METADATA_ADDRESSES or ip.is_link_local:
        return f"{ip} is a link-local or cloud metadata address"
    if ip.is_unspecified or ip.is_multicast or (ip.is_reserved and not ip.is_loopback):
        return f"{ip} is an unspecified, multicast or reserved address"
    if not ip.is_global and not _POLICY["internal_hosts"]:
        return (
            f"{ip} is a loopback or private address, which this service does not post to (its operator may "
            "allow them with `gpufleet serve --webhook-internal-hosts`)"
        )
    return None


def _literal_ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return None


def host_problem(host: str) -> str | None:
    """Why a webhook URL may not name ``host`` (the URL's host, lower case, no brackets); None: it may."""
    if not host:
        return "it has no host"
    if not host.isascii():
        return f"its host {host!r} is not ASCII: write it in its IDNA form (xn--...)"
    ip = _literal_ip(host)
    if ip is not None:
        return address_problem(ip)
    if all(re.fullmatch(r"0x[0-9a-f]*|[0-9]+", label) for label in host.rstrip(".").split(".")):
        # 2130706433, 0x7f000001, 0177.0.0.1: inet_aton reads each as 127.0.0.1 (no TLD is a number)
        return f"its host {host!r} is an IPv4 address in another notation: write it as a.b.c.d"
    name = host.rstrip(".")
    if name in METADATA_HOSTS:
        return f"{host} is a cloud metadata host"
    if (name == "localhost" or name.endswith(".localhost")) and not _POLICY["internal_hosts"]:
        return address_problem(ipaddress.ip_address("127.0.0.1"))
    return None


def _resolved_problem(url: str) -> str | None:
    """The host of ``url`` resolved now; why it may not be posted to (None: it may; an unresolvable name is
    left to the HTTP client, which reports it)."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    problem = host_problem(host)
    if problem is not None or _literal_ip(host) is not None:
        return problem
    try:
        infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80))
    except (OSError, UnicodeError):
        return None
    for info in infos:
        ip = _literal_ip(str(info[4][0]))
        bad = None if ip is None else address_problem(ip)
        if bad is not None:
            return f"{host} resolves to {bad}"
    return None


def check_webhook(url: str, fmt: str, events: list[str]) -> tuple[str, str, str]:
    """(url, format, events as stored) or a one-paragraph :class:`InputError`."""
    problem = url_problem(url)
    if problem is not None:
        raise InputError(f"Webhook URL {url[:100]!r} is not allowed: {problem}. {_HELP}.")
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


def url_problem(url: str) -> str | None:
    """Why ``url`` may not be a webhook (the policy in the module's text); None: it may."""
    if len(url) > 2000:
        return "it is longer than 2,000 characters"
    odd = [c for c in url if c.isspace() or unicodedata.category(c).startswith("C")]
    if odd:
        return f"it holds a space or control character ({odd[0]!r})"
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return "only http:// and https:// URLs with a host are allowed"
    if "@" in parts.netloc:
        return (
            "it holds credentials (user:password@): they would be stored and listed in clear; use a "
            "receiver that takes its secret in the path, as Slack's incoming webhooks do"
        )
    try:
        port = parts.port
    except ValueError:
        return "its port is not a number from 1 to 65535"
    if port == 0:
        return "its port is not a number from 1 to 65535"
    return host_problem((parts.hostname or "").lower())


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

    problem = _resolved_problem(url)
    if problem is not None:
        return None, f"Refused: {problem}."[:500]
    try:  # the status line and headers only: a body sent one byte at a time is never read
        with httpx.stream("POST", url, json=body, timeout=TIMEOUT_S, follow_redirects=False) as r:
            status = r.status_code
    except httpx.HTTPError as exc:
        return None, f"{type(exc).__name__}: {exc}"[:500]
    return status, (f"HTTP {status}" if status >= 400 else None)


def _post_bounded(url: str, body: dict[str, Any]) -> tuple[int | None, str | None]:
    """:func:`_post` within :data:`TRY_LIMIT_S` in all: a receiver that never finishes its headers holds a
    daemon thread of its own, not the deliveries after it."""
    box: list[tuple[int | None, str | None]] = []
    t = threading.Thread(
        target=lambda: box.append(_post(url, body)), name="gpufleet-webhook-try", daemon=True
    )
    t.start()
    t.join(TRY_LIMIT_S)
    if not box:
        return None, f"No complete answer within {TRY_LIMIT_S:g} s: the receiver was abandoned."
    return box[0]


def _deliver(sm: sessionmaker[OrmSession], sends: list[tuple[int, int, str, dict[str, Any]]]) -> None:
    for delivery_id, hook_id, url, body in sends:
        status, error, attempts = None, None, 0
        for attempts in range(1, len(RETRY_DELAYS_S) + 2):
            status, error = _post_bounded(url, body)
            if error is None or (status is not None and 400 <= status < 500 and status != 429):
                break  # delivered, or refused for good (a 4xx other than 429 will not change on a retry)
            if error.startswith("Refused:"):
                break  # the policy refuses the address: a retry would too
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
