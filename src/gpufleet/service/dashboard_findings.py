"""The dashboard's findings page: the team's telemetry findings of the last 14 days (by type, by the
telemetry's own team labels, per GPU) and their export as CSV (`gpufleet telemetry findings --format csv`:
the AWS Compute Optimizer columns) or JSON (`--format json`, the API's document), downloaded with the session;
and, for editors, a form that runs a ``findings`` job now (the job a daily schedule runs: its result is kept,
and its new savings and fired alerts go to the team's webhooks).
"""

from __future__ import annotations

import re
from html import escape

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from gpufleet.errors import GpufleetError, InputError
from gpufleet.service import jobs
from gpufleet.service.dashboard import PostedForm, SignedIn, _money, _page, refused
from gpufleet.service.dashboard_overview import FINDINGS_DAYS, no_telemetry, window_text
from gpufleet.service.deps import state
from gpufleet.service.errors import NotFound

router = APIRouter(include_in_schema=False)

#: GPU rows shown on the page (the export has every one)
GPU_ROWS = 200


def _table(caption: str, headers: list[str], rows: list[list[str]], num: set[int]) -> str:
    head = "".join(f"<th{' class=num' if i in num else ''}>{escape(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=num' if i in num else ''}>{escape(c)}</td>" for i, c in enumerate(r))
        + "</tr>"
        for r in rows
    )
    return (
        f"<table><caption>{escape(caption)}</caption><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


#: the run form's defaults: `gpufleet telemetry findings`' own (14 days, 20 % headroom)
RUN_DEFAULTS = {"lookback_days": "14", "headroom_percent": "20"}


def _run_form(s: SignedIn, values: dict[str, str] | None = None) -> str:
    """The editor's "run findings now" form ('' for a viewer: the route refuses one anyway)."""
    if s.who.role == "viewer":
        return ""
    v = RUN_DEFAULTS | (values or {})
    return (
        '<h2>Run findings now</h2><form method="post" action="/findings/run"><div class="fields">'
        '<label for="lookback_days">Lookback [days of telemetry, up to its latest sample]</label>'
        f'<input id="lookback_days" name="lookback_days" inputmode="decimal" required '
        f'value="{escape(v["lookback_days"])}">'
        '<label for="headroom_percent">Headroom [% added to the observed p95 needs]</label>'
        f'<input id="headroom_percent" name="headroom_percent" inputmode="decimal" required '
        f'value="{escape(v["headroom_percent"])}">'
        f'</div><input type="hidden" name="csrf" value="{escape(s.csrf)}">'
        '<p><button type="submit">Run findings</button></p></form>'
        "<p class='muted'>Runs as a job (its page follows its progress) and keeps the result; GPUs whose "
        'saving is new since the previous run go to the <a href="/notifications">webhooks</a> listening for '
        "saving_found, fired alerts to those listening for alert_fired. A schedule runs it daily: "
        '<a href="/schedules">Schedules</a>.</p>'
    )


@router.get("/findings", response_class=HTMLResponse, response_model=None)
def findings(request: Request, s: SignedIn) -> Response:
    from gpufleet.report.telemetry import FINDING_COLUMNS, finding_rows
    from gpufleet.service.telemetry_api import team_findings

    title = f"Findings of team {s.who.team_name}"
    try:
        ff, summ = team_findings(state(request), s.who, FINDINGS_DAYS)
    except NotFound:
        return _page(request, title, no_telemetry(s.who), s.who, s.csrf)
    except GpufleetError as exc:
        return refused(request, title, s, exc)
    export = (
        f"<p>Telemetry of {escape(window_text(ff))}; cost and savings per month: each GPU's price per "
        "GPU-hour x 730 h, savings on an on-demand basis. Export every GPU: "
        '<a href="/findings/export.csv" download>CSV (Compute Optimizer columns)</a> · '
        '<a href="/findings/export.json" download>JSON (the API document)</a></p>'
    )
    by_type = _table(
        "Findings by type",
        ["finding", "GPUs", "savings [USD/month]"],
        [[f, str(n), _money(usd)] for f, (n, usd) in summ.by_finding.items()],
        {1, 2},
    )
    by_team = _table(
        "By the telemetry's team label",
        ["team label", "GPUs", "cost [USD/month]", "savings [USD/month]"],
        [[t, str(n), _money(c), _money(sv)] for t, (n, c, sv) in summ.by_team.items()],
        {1, 2, 3},
    )
    gpus = _table(
        f"GPUs, largest saving first (the first {GPU_ROWS}; compute and gpu_util at the window's "
        "percentile, mem_p99_gib the 99th percentile of memory used [GiB]; usd_month and savings_month in "
        "USD/month)",
        list(FINDING_COLUMNS),
        finding_rows(ff, GPU_ROWS),
        {6, 7, 8, 9, 11, 12},
    )
    return _page(request, title, export + by_type + by_team + gpus + _run_form(s), s.who, s.csrf)


@router.post("/findings/run", response_class=HTMLResponse, response_model=None)
def run_findings(request: Request, s: SignedIn, form: PostedForm) -> Response:
    """Queue a ``findings`` job of the team (editor) and go to its page."""
    from gpufleet.service.job_kinds import check_params
    from gpufleet.service.telemetry_api import _store
    from gpufleet.units import PERCENT

    values = {k: str(form.get(k) or "").strip() for k in RUN_DEFAULTS}
    title = f"Findings of team {s.who.team_name}"
    st = state(request)
    try:
        s.who.require("editor")
        try:
            lookback, headroom_pct = float(values["lookback_days"]), float(values["headroom_percent"])
        except ValueError:
            raise InputError(
                f"Lookback {values['lookback_days']!r} days and headroom {values['headroom_percent']!r} % "
                "must be plain numbers, e.g. 14 and 20."
            ) from None
        params = check_params("findings", {"lookback_days": lookback, "headroom": headroom_pct / PERCENT})
        _store(st, s.who, filled=True)  # no telemetry: say so now, not as a failed job later
        sub = jobs.submit(
            st.sm,
            team_id=s.who.team_id,
            kind="findings",
            params=params,
            time_limit_s=st.settings.job_time_limit_s,
        )
    except NotFound:
        return _page(request, title, no_telemetry(s.who), s.who, s.csrf, status=409)
    except GpufleetError as exc:
        return refused(request, title, s, exc, _run_form(s, values))
    return RedirectResponse(f"/jobs/{sub.job.id}", status_code=303)


def _download(s: SignedIn, text: str, suffix: str, media: str) -> Response:
    team = re.sub(r"[^A-Za-z0-9._-]", "_", s.who.team_name)
    return Response(
        text,
        media_type=media,
        headers={"content-disposition": f'attachment; filename="findings-{team}.{suffix}"'},
    )


@router.get("/findings/export.{fmt}", response_model=None)
def export(request: Request, s: SignedIn, fmt: str) -> Response:
    from gpufleet.report.telemetry import render_findings_csv, to_json
    from gpufleet.service.telemetry_api import team_findings

    if fmt not in ("csv", "json"):
        return refused(request, "Findings", s, NotFound(f"No export format {fmt!r}. Allowed: csv, json."))
    try:
        ff, summ = team_findings(state(request), s.who, FINDINGS_DAYS)
    except GpufleetError as exc:
        return refused(request, "Findings", s, exc)
    if fmt == "csv":
        return _download(s, render_findings_csv(ff), "csv", "text/csv; charset=utf-8")
    doc = to_json("telemetry_findings", {"summary": summ, "findings": ff})
    return _download(s, doc, "json", "application/json")
