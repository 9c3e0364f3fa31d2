"""The dashboard's overview: the team's cost per month (its own only, whatever the role: issue 24, a team sees
only its own fleets, and plan totals follow from them), its findings by type,
the latest plan's savings by lever and the trend of its plan costs, with the report module's SVG charts.

Every figure says its unit and period: plan costs are the stored plan's [USD/month] at the plan's prices,
findings are the last 14 days of the team's telemetry (GPUs; savings [USD/month], on-demand basis).
"""

from __future__ import annotations

from datetime import UTC, datetime
from html import escape
from typing import TYPE_CHECKING

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from gpufleet.errors import GpufleetError
from gpufleet.service import jobs
from gpufleet.service.auth import Principal
from gpufleet.service.dashboard import SignedIn, _error, _jobs_table, _money, _page
from gpufleet.service.deps import state
from gpufleet.service.errors import NotFound
from gpufleet.service.overview import PlanPoint

if TYPE_CHECKING:
    from gpufleet.telemetry.finding_types import FleetFindings

router = APIRouter(include_in_schema=False)

#: telemetry window of the overview's findings [days] (the dashboard's findings page uses the same)
FINDINGS_DAYS = 14


_NO_PLAN = "<td colspan='2'>no succeeded plan</td>"


def _date(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _cost_section(request: Request, s: SignedIn) -> str:
    from gpufleet.report.charts import bar_chart
    from gpufleet.service.overview import cost_by_team, plan_trend

    st = state(request)
    rows = cost_by_team(st.sm, s.who.team_id)  # never another team's: an admin is an admin of its own team
    scope = f"team {escape(s.who.team_name)}"
    if any(p is not None for _, p in rows):
        body = "".join(
            f"<tr><td>{escape(name)}</td><td class='num'>{_money(p.cost_usd_per_month)}</td>"
            f"<td>{escape(p.source)}</td><td>{_date(p.finished_unix_s)}</td></tr>"
            if p is not None
            else f"<tr><td>{escape(name)}</td><td class='num'>-</td>{_NO_PLAN}</tr>"
            for name, p in rows
        )
        table = (
            f"<table><caption>Cost per month by team: each team's latest succeeded plan ({scope})</caption>"
            "<thead><tr><th>team</th><th class='num'>cost [USD/month]</th><th>fleet file</th>"
            f"<th>planned</th></tr></thead><tbody>{body}</tbody></table>"
        )
    else:
        todo = (
            'upload a fleet file on the <a href="/plan">Plan</a> page'
            if s.who.role != "viewer"
            else "ask an editor of your team to plan a fleet file"
        )
        table = (
            f"<p class='muted'>No succeeded plan yet for {scope}: cost per month shows after one; {todo}.</p>"
        )
    trend, latest = plan_trend(st.sm, s.who.team_id)
    parts = ["<h2>Cost</h2>", table]
    if latest is not None:
        p = latest.point
        parts.append(
            f'<p>Latest plan of your team (<a href="/jobs/{p.job_id}">job #{p.job_id}</a>, '
            f"{escape(p.source)}, {_date(p.finished_unix_s)}): {escape(latest.message)}</p>"
        )
        if latest.cost_by_fleet_team_usd_per_month:
            parts.append(
                bar_chart(
                    list(latest.cost_by_fleet_team_usd_per_month),
                    title="Latest plan: cost per month by the fleet file's teams",
                    y_label="USD/month",
                )
            )
        evaluated = [(lv.name, v) for lv in latest.levers if (v := lv.savings_usd_per_month) is not None]
        skipped = [lv for lv in latest.levers if lv.savings_usd_per_month is None]
        parts.append("<h2>Savings by lever</h2>")
        if any(v for _, v in evaluated):
            parts.append(
                bar_chart(
                    evaluated,
                    title="Latest plan: savings per month by lever (each against the step before it)",
                    y_label="USD/month saved",
                )
            )
        else:
            parts.append("<p class='muted'>The latest plan found no saving on any lever.</p>")
        parts += [
            f"<p class='muted'>{escape(lv.name)}: {escape(lv.note or 'not evaluated')}</p>" for lv in skipped
        ]
    parts.append("<h2>Trend</h2>")
    parts.append(_trend(trend))
    return "".join(parts)


def _time_unit(span_s: float) -> tuple[str, float]:
    """The x axis unit of a time span: days from 2 days up, hours from 2 hours up, else minutes."""
    from gpufleet.units import SECONDS_PER_DAY, SECONDS_PER_HOUR, SECONDS_PER_MINUTE

    if span_s >= 2 * SECONDS_PER_DAY:
        return "days", SECONDS_PER_DAY
    if span_s >= 2 * SECONDS_PER_HOUR:
        return "hours", SECONDS_PER_HOUR
    return "minutes", SECONDS_PER_MINUTE


def _trend(trend: tuple[PlanPoint, ...]) -> str:
    """A line per fleet file (a trend across different fleets would mix workloads): cost per month of each
    succeeded plan at its finish time."""
    from gpufleet.report.charts import line_chart

    by_source: dict[str, list[PlanPoint]] = {}
    for p in trend:
        by_source.setdefault(p.source, []).append(p)
    if not any(len(v) >= 2 for v in by_source.values()):
        return (
            "<p class='muted'>No trend yet: it needs two succeeded plans of one fleet file "
            f"({len(trend)} plans of {len(by_source)} fleet files so far).</p>"
        )
    t_last = trend[-1].finished_unix_s
    unit, unit_s = _time_unit(t_last - trend[0].finished_unix_s)
    series = {
        f"{source} [USD/month]": [((p.finished_unix_s - t_last) / unit_s, p.cost_usd_per_month) for p in pts]
        for source, pts in by_source.items()
        if len(pts) >= 2
    }
    return line_chart(
        series,
        title=f"Your team's plan cost per month by fleet file (its last {len(trend)} plans)",
        x_label=f"{unit} before the latest plan",
        y_label="USD/month",
    )


def window_text(ff: FleetFindings) -> str:
    """The findings' window said plainly: the lookback ends at the telemetry's latest sample, not now (a store
    no longer fed shows old findings, and says so)."""
    w = ff.window
    observed = ""
    if ff.observed_start is not None and ff.observed_end is not None:
        from gpufleet.units import SECONDS_PER_DAY

        span_d = (ff.observed_end - ff.observed_start).total_seconds() / SECONDS_PER_DAY
        observed = f"; {span_d:.1f} days observed"
    return (
        f"the {w.days:g} days up to the latest sample ({_date(w.start.timestamp())} to "
        f"{_date(w.end.timestamp())}{observed}), p{100 * w.percentile:g}, "
        f"{100 * ff.thresholds.headroom:g} % headroom"
    )


def no_telemetry(who: Principal, upload_below: bool = False) -> str:
    """The dashboard's empty state of a team without telemetry: what to do next, on the dashboard (the API's
    message names the API route), for an editor; whom to ask, for a viewer."""
    where = "below" if upload_below else 'on the <a href="/telemetry">Telemetry</a> page'
    todo = (
        "Upload a telemetry file (nvidia-smi CSV, dcgm-exporter text, Prometheus JSON, CloudWatch CSV) "
        f'{where}, or schedule a telemetry_pull job from your Prometheus on the <a href="/schedules">'
        "Schedules</a> page."
        if who.role != "viewer"
        else "Ask an editor of your team to upload a telemetry file on the Telemetry page or to schedule a "
        "telemetry_pull job from your Prometheus."
    )
    return f"<p>Team {escape(who.team_name)} has no telemetry yet: findings need some. {todo}</p>"


def _findings_section(request: Request, s: SignedIn) -> str:
    from gpufleet.report.charts import bar_chart
    from gpufleet.service.telemetry_api import team_findings

    head = f"<h2>Findings ({FINDINGS_DAYS} days of telemetry up to its latest sample)</h2>"
    try:
        ff, summ = team_findings(state(request), s.who, FINDINGS_DAYS)
    except NotFound:
        return head + no_telemetry(s.who)
    except GpufleetError as exc:
        return head + _error(str(exc))
    rows = "".join(
        f"<tr><td>{escape(name)}</td><td class='num'>{n}</td><td class='num'>{_money(usd)}</td></tr>"
        for name, (n, usd) in summ.by_finding.items()
    )
    return (
        head
        + f"<p>{summ.gpus} GPUs observed; cost {_money(summ.cost_usd_per_month)} USD/month at their prices; "
        f"savings {_money(summ.savings_usd_per_month)} USD/month (best option per GPU, on-demand basis). "
        '<a href="/findings">Findings and export</a></p>'
        f"<p class='muted'>Window: {escape(window_text(ff))}. Cost per month: each GPU's price per "
        "GPU-hour x 730 h.</p>"
        "<table><caption>Findings by type</caption><thead><tr><th>finding</th><th class='num'>GPUs</th>"
        f"<th class='num'>savings [USD/month]</th></tr></thead><tbody>{rows}</tbody></table>"
        + bar_chart(
            [(name, float(n)) for name, (n, _) in summ.by_finding.items()],
            title=f"GPUs by finding (last {FINDINGS_DAYS} days)",
            y_label="GPUs",
            integer=True,
        )
    )


@router.get("/", response_class=HTMLResponse, response_model=None)
def overview(request: Request, s: SignedIn) -> Response:
    who = s.who
    recent, total = jobs.list_jobs(state(request).sm, who.team_id, limit=5)
    body = (
        f"<p>Team <strong>{escape(who.team_name)}</strong>; your role: {escape(who.role)}.</p>"
        + _cost_section(request, s)
        + _findings_section(request, s)
        + "<h2>Recent jobs</h2>"
        + _jobs_table(recent)
        + (f'<p><a href="/jobs">All {total} jobs</a></p>' if total else "")
    )
    return _page(request, "Overview", body, who, s.csrf)
