"""Dashboard pages of scheduled work and notifications: ``/schedules`` (the team's and the global schedules,
a form to add one, enable / disable / delete) and ``/notifications`` (webhooks with their events and
thresholds, recent deliveries with their outcome, recent price changes). Built on :mod:`.dashboard`'s page,
session and CSRF helpers. A viewer sees everything but the forms (a webhook's URL is shown by host only: it
often holds a secret); the routes refuse a viewer anyway (403). Schedules change with the editor role (a
global catalog refresh: admin), webhooks with the admin role, as in the API."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy import select

from gpufleet.errors import GpufleetError, InputError
from gpufleet.service import scheduler
from gpufleet.service.auth import Principal
from gpufleet.service.dashboard import _check_csrf, _page, _signed_in
from gpufleet.service.db import WEBHOOK_EVENTS, Delivery, PriceChange, Schedule, Webhook
from gpufleet.service.deps import state
from gpufleet.service.errors import NotAuthenticated, NotFound, http_status
from gpufleet.service.job_kinds import KINDS

router = APIRouter(include_in_schema=False)

#: rows shown in each "recent" table
RECENT = 20


def _when(t: float | None) -> str:
    return "-" if t is None else datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _session_or_login(request: Request) -> tuple[Principal, str] | None:
    try:
        return _signed_in(request)
    except NotAuthenticated:
        return None


def _button(action: str, label: str, csrf: str, extra: str = "") -> str:
    return (
        f'<form class="inline" method="post" action="{escape(action)}"><input type="hidden" name="csrf" '
        f'value="{escape(csrf)}">{extra}<button type="submit">{escape(label)}</button></form>'
    )


# --- schedules ---------------------------------------------------------------------------------------------
def _schedules_body(request: Request, who: Principal, csrf: str, error: str = "", form: Any = None) -> str:
    with state(request).sm() as db:
        rows = db.scalars(select(Schedule).where(scheduler.visible(who)).order_by(Schedule.id)).all()
    editor = who.role != "viewer"
    trs = []
    for s in rows:
        can = editor and (s.scope == "team" or who.role == "admin")
        actions = ""
        if can:
            toggle = "Disable" if s.enabled else "Enable"
            actions = _button(f"/schedules/{s.id}/toggle", f"{toggle} {s.name}", csrf) + _button(
                f"/schedules/{s.id}/delete", f"Delete {s.name}", csrf
            )
        last = f'<a href="/jobs/{s.last_job_id}">#{s.last_job_id}</a>' if s.last_job_id else "-"
        trs.append(
            f"<tr><td>{escape(s.name)}</td><td>{escape(s.scope)}</td><td><code>{escape(s.cron)}</code></td>"
            f"<td>{escape(s.kind)}</td><td><code>{escape(s.params_json[:200])}</code></td>"
            f"<td>{'yes' if s.enabled else 'no'}</td><td>{_when(s.next_due_unix_s)}</td><td>{last}</td>"
            f"<td>{actions}</td></tr>"
        )
    table = (
        "<table><caption class='muted'>Schedules of your team and global ones (times in UTC)</caption><thead>"
        "<tr><th>name</th><th>scope</th><th>cron (UTC)</th><th>kind</th><th>parameters</th><th>enabled</th>"
        "<th>next run</th><th>last job</th><th>actions</th></tr></thead><tbody>"
        + "".join(trs)
        + "</tbody></table>"
        if rows
        else "<p class='muted'>No schedules yet"
        + (
            ": add one below (e.g. a daily findings run, whose new savings go to the webhooks).</p>"
            if editor
            else f": an editor of team {escape(who.team_name)} adds them.</p>"
        )
    )
    out = (
        (f'<p class="error" role="alert">{escape(error)}</p>' if error else "")
        + '<p><a href="/notifications">Notification settings</a></p>'
        + table
    )
    if editor:
        f = form or {}
        kinds = "".join(
            f'<option value="{k}"{" selected" if f.get("kind") == k else ""}>{k}</option>' for k in KINDS
        )
        scopes = "".join(
            f'<option value="{k}"{" selected" if f.get("scope") == k else ""}>{k}</option>'
            for k in (("team", "global") if who.role == "admin" else ("team",))
        )
        out += (
            '<h2>New schedule</h2><form method="post" action="/schedules"><div class="fields">'
            f'<label for="name">Name</label><input id="name" name="name" required maxlength="100" '
            f'value="{escape(str(f.get("name", "")))}">'
            f'<label for="cron">Cron (5 fields, UTC)</label><input id="cron" name="cron" required '
            f'placeholder="0 6 * * *" value="{escape(str(f.get("cron", "")))}">'
            f'<label for="kind">Job kind</label><select id="kind" name="kind">{kinds}</select>'
            f'<label for="params">Parameters (JSON)</label><textarea id="params" name="params" rows="3" '
            f'cols="40">{escape(str(f.get("params", "{}")))}</textarea>'
            f'<label for="scope">Scope</label><select id="scope" name="scope">{scopes}</select>'
            f'</div><input type="hidden" name="csrf" value="{escape(csrf)}">'
            '<p><button type="submit">Add schedule</button></p></form>'
            "<p class='muted'>Examples: kind findings, parameters <code>{\"lookback_days\": 14}</code>, cron "
            "<code>0 6 * * *</code> (daily 06:00 UTC); kind catalog_refresh (admin, scope global), "
            '<code>{"provider": "azure"}</code>. docs/service.md lists each kind\'s parameters.</p>'
        )
    return out


@router.get("/schedules", response_class=HTMLResponse, response_model=None)
def schedules_page(request: Request) -> Response:
    got = _session_or_login(request)
    if got is None:
        return RedirectResponse("/login", status_code=303)
    who, csrf = got
    return _page(request, "Schedules", _schedules_body(request, who, csrf), who, csrf)


@router.post("/schedules", response_class=HTMLResponse, response_model=None)
async def add_schedule(request: Request) -> Response:
    who, csrf = _signed_in(request)
    form = await request.form()
    _check_csrf(csrf, form)
    values = {k: str(v) for k, v in form.items() if k != "csrf" and isinstance(v, str)}
    st = state(request)
    try:
        who.require("editor")
        try:
            params = json.loads(values.get("params") or "{}")
        except json.JSONDecodeError as exc:
            raise InputError(f"Parameters are not valid JSON ({exc.msg}); write a JSON object.") from None
        if not isinstance(params, dict):
            raise InputError('Parameters must be a JSON object, e.g. {"lookback_days": 14}.')
        kind = values.get("kind", "")
        if kind not in KINDS:
            raise InputError(f"Unknown job kind {kind!r}. Allowed: {', '.join(KINDS)}.")
        scheduler.create(
            st.sm,
            who,
            name=(values.get("name") or "").strip()[:100] or kind,
            cron_text=values.get("cron", ""),
            kind=kind,
            params=params,
            scope=values.get("scope", "team"),
            time_limit_s=st.settings.job_time_limit_s,
            enabled=True,
            now=st.clock(),
        )
    except GpufleetError as exc:
        body = _schedules_body(request, who, csrf, str(exc), values)
        return _page(request, "Schedules", body, who, csrf, status=http_status(exc))
    return RedirectResponse("/schedules", status_code=303)


async def _change_schedule(request: Request, schedule_id: int, delete: bool) -> Response:
    who, csrf = _signed_in(request)
    _check_csrf(csrf, await request.form())
    st = state(request)
    try:
        with st.sm() as db:
            s = scheduler.get_schedule(db, who, schedule_id)
            scheduler.may_change(who, s)
            if delete:
                db.delete(s)
            else:
                s.enabled = not s.enabled
                if s.enabled:  # re-enabled: the next time from now, not a catch-up of the pause
                    from gpufleet.service.cron import parse

                    s.next_due_unix_s = parse(s.cron).next_after(st.clock())
            db.commit()
    except GpufleetError as exc:
        body = _schedules_body(request, who, csrf, str(exc))
        return _page(request, "Schedules", body, who, csrf, status=http_status(exc))
    return RedirectResponse("/schedules", status_code=303)


@router.post("/schedules/{schedule_id}/toggle", response_class=HTMLResponse, response_model=None)
async def toggle_schedule(request: Request, schedule_id: int) -> Response:
    return await _change_schedule(request, schedule_id, delete=False)


@router.post("/schedules/{schedule_id}/delete", response_class=HTMLResponse, response_model=None)
async def delete_schedule(request: Request, schedule_id: int) -> Response:
    return await _change_schedule(request, schedule_id, delete=True)


# --- notifications -----------------------------------------------------------------------------------------
def _notifications_body(request: Request, who: Principal, csrf: str, error: str = "") -> str:
    admin = who.role == "admin"
    with state(request).sm() as db:
        hooks = db.scalars(select(Webhook).where(Webhook.team_id == who.team_id).order_by(Webhook.id)).all()
        sent = db.scalars(
            select(Delivery).where(Delivery.team_id == who.team_id).order_by(Delivery.id.desc()).limit(RECENT)
        ).all()
        changes = db.scalars(select(PriceChange).order_by(PriceChange.id.desc()).limit(RECENT)).all()
    out = f'<p class="error" role="alert">{escape(error)}</p>' if error else ""
    out += '<p><a href="/schedules">Schedules</a> (a daily findings run notifies new savings)</p>'
    trs = []
    for h in hooks:
        url = h.url if admin else f"{urlsplit(h.url).scheme}://{urlsplit(h.url).hostname}/…"
        saving = "-" if h.min_saving_usd_per_month is None else f"${h.min_saving_usd_per_month:,.0f}/month"
        change = "-" if h.min_price_change_fraction is None else f"{100 * h.min_price_change_fraction:g} %"
        action = _button(f"/notifications/{h.id}/delete", f"Delete webhook {h.id}", csrf) if admin else ""
        trs.append(
            f"<tr><td>{h.id}</td><td>{escape(url)}</td><td>{escape(h.format)}</td>"
            f"<td>{escape(h.events.replace(',', ', '))}</td><td class='num'>{saving}</td>"
            f"<td class='num'>{change}</td><td>{escape(str(h.last_status or h.last_error or '-'))}</td>"
            f"<td>{action}</td></tr>"
        )
    out += (
        "<h2>Webhooks</h2><table><thead><tr><th>id</th><th>URL</th><th>format</th><th>events</th>"
        "<th class='num'>min. saving</th><th class='num'>min. price change</th><th>last delivery</th>"
        "<th>actions</th></tr></thead><tbody>" + "".join(trs) + "</tbody></table>"
        if hooks
        else "<h2>Webhooks</h2><p class='muted'>No webhooks yet"
        + (
            ": add one below (a Slack incoming webhook, or any URL that takes a JSON POST).</p>"
            if admin
            else f": an admin of team {escape(who.team_name)} adds them.</p>"
        )
    )
    if admin:
        boxes = "".join(
            f'<label><input type="checkbox" name="events" value="{e}"> {e}</label> ' for e in WEBHOOK_EVENTS
        )
        out += (
            '<h2>New webhook</h2><form method="post" action="/notifications"><div class="fields">'
            '<label for="url">URL</label><input id="url" name="url" type="url" required '
            'placeholder="https://hooks.slack.com/services/...">'
            '<label for="format">Format</label><select id="format" name="format">'
            '<option value="slack">slack</option><option value="generic">generic JSON</option></select>'
            '<label for="min_saving">Min. new saving [USD/month]</label>'
            '<input id="min_saving" name="min_saving_usd_per_month" inputmode="decimal">'
            '<label for="min_change">Min. price change [%]</label>'
            '<input id="min_change" name="min_price_change_percent" inputmode="decimal">'
            f"</div><fieldset><legend>Events</legend>{boxes}</fieldset>"
            f'<input type="hidden" name="csrf" value="{escape(csrf)}">'
            '<p><button type="submit">Add webhook</button></p></form>'
        )
    drows = "".join(
        f"<tr><td>{_when(d.created_unix_s)}</td><td>{escape(d.event)}</td><td>{escape(d.status)}</td>"
        f"<td class='num'>{d.attempts}</td><td>{escape(str(d.http_status or d.error or '-'))}</td></tr>"
        for d in sent
    )
    out += (
        "<h2>Recent deliveries</h2><table><thead><tr><th>created</th><th>event</th><th>status</th>"
        f"<th class='num'>tries</th><th>answer</th></tr></thead><tbody>{drows}</tbody></table>"
        if sent
        else "<h2>Recent deliveries</h2><p class='muted'>None yet.</p>"
    )
    crows = "".join(
        f"<tr><td>{escape(c.captured_at)}</td><td>{escape(c.provider)}</td><td>{escape(c.region)}</td>"
        f"<td>{escape(c.instance_type)}</td><td>{escape(c.price_kind)}</td>"
        f"<td class='num'>{c.old_price_usd_per_hour:,.4f}</td>"
        f"<td class='num'>{c.new_price_usd_per_hour:,.4f}</td>"
        f"<td class='num'>{100 * c.change_fraction:+.1f} %</td></tr>"
        for c in changes
    )
    out += (
        "<h2>Recent price changes</h2><table><thead><tr><th>captured</th><th>provider</th><th>region</th>"
        "<th>instance</th><th>price kind</th><th class='num'>old [USD/h, machine]</th>"
        "<th class='num'>new [USD/h, machine]</th><th class='num'>change</th></tr></thead>"
        f"<tbody>{crows}</tbody></table>"
        if changes
        else "<h2>Recent price changes</h2><p class='muted'>None yet (a catalog refresh records them).</p>"
    )
    return out


@router.get("/notifications", response_class=HTMLResponse, response_model=None)
def notifications_page(request: Request) -> Response:
    got = _session_or_login(request)
    if got is None:
        return RedirectResponse("/login", status_code=303)
    who, csrf = got
    return _page(request, "Notifications", _notifications_body(request, who, csrf), who, csrf)


def _optional_number(text: str, what: str, scale: float = 1.0) -> float | None:
    if not text.strip():
        return None
    try:
        value = float(text) * scale
    except ValueError:
        raise InputError(f"{what} {text!r} is not a number; give a plain number or leave it empty.") from None
    if not 0 <= value <= 1e9:
        raise InputError(f"{what} {text!r} must be 0 or more.")
    return value


@router.post("/notifications", response_class=HTMLResponse, response_model=None)
async def add_webhook(request: Request) -> Response:
    who, csrf = _signed_in(request)
    form = await request.form()
    _check_csrf(csrf, form)
    from gpufleet.service.webhooks import check_webhook

    try:
        who.require("admin")
        events = [str(e) for e in form.getlist("events")]
        url, fmt, stored = check_webhook(str(form.get("url") or ""), str(form.get("format") or ""), events)
        hook = Webhook(
            team_id=who.team_id,
            url=url,
            format=fmt,
            events=stored,
            min_saving_usd_per_month=_optional_number(
                str(form.get("min_saving_usd_per_month") or ""), "Min. saving"
            ),
            # units: percent -> fraction (1 % = 0.01)
            min_price_change_fraction=_optional_number(
                str(form.get("min_price_change_percent") or ""), "Min. price change", 0.01
            ),
        )
        with state(request).sm() as db:
            db.add(hook)
            db.commit()
    except GpufleetError as exc:
        body = _notifications_body(request, who, csrf, str(exc))
        return _page(request, "Notifications", body, who, csrf, status=http_status(exc))
    return RedirectResponse("/notifications", status_code=303)


@router.post("/notifications/{webhook_id}/delete", response_class=HTMLResponse, response_model=None)
async def delete_webhook(request: Request, webhook_id: int) -> Response:
    who, csrf = _signed_in(request)
    _check_csrf(csrf, await request.form())
    try:
        who.require("admin")
        with state(request).sm() as db:
            hook = db.get(Webhook, webhook_id)
            if hook is None or hook.team_id != who.team_id:
                raise NotFound(f"No webhook with id {webhook_id} in your team.")
            db.delete(hook)
            db.commit()
    except GpufleetError as exc:
        body = _notifications_body(request, who, csrf, str(exc))
        return _page(request, "Notifications", body, who, csrf, status=http_status(exc))
    return RedirectResponse("/notifications", status_code=303)
