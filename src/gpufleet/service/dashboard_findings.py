"""The dashboard's findings page: the team's telemetry findings of the last 14 days (by type, by the
telemetry's own team labels, per GPU) and their export as CSV (`gpufleet telemetry findings --format csv`:
the AWS Compute Optimizer columns) or JSON (`--format json`, the API's document), downloaded with the session.
"""

from __future__ import annotations

import re
from html import escape

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from gpufleet.errors import GpufleetError
from gpufleet.service.dashboard import SignedIn, _money, _page, refused
from gpufleet.service.dashboard_overview import FINDINGS_DAYS
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


@router.get("/findings", response_class=HTMLResponse, response_model=None)
def findings(request: Request, s: SignedIn) -> Response:
    from gpufleet.report.telemetry import FINDING_COLUMNS, finding_rows
    from gpufleet.service.telemetry_api import team_findings

    title = f"Findings of team {s.who.team_name}"
    try:
        ff, summ = team_findings(state(request), s.who, FINDINGS_DAYS)
    except NotFound as exc:
        return _page(request, title, f"<p>{escape(str(exc))}</p>", s.who, s.csrf)
    except GpufleetError as exc:
        return refused(request, title, s, exc)
    export = (
        f"<p>Telemetry of the last {FINDINGS_DAYS} days (p95, 20 % headroom); savings per month on an "
        "on-demand basis. Export every GPU: "
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
        f"GPUs, largest saving first (the first {GPU_ROWS}; usd_month and savings_month in USD/month)",
        list(FINDING_COLUMNS),
        finding_rows(ff, GPU_ROWS),
        {6, 7, 8, 9, 11, 12},
    )
    return _page(request, title, export + by_type + by_team + gpus, s.who, s.csrf)


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
