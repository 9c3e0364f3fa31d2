"""Results as ONE self-contained HTML file: inline CSS and inline SVG charts, no scripts, fonts or CDNs.

It opens offline in any browser. Sections use ``<details>`` so that long scenario sets stay readable without
JavaScript.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from gpufleet import __version__
from gpufleet.recommend.types import Candidate, Migration, Recommendation, ScenarioResult, ScenarioSetResult
from gpufleet.report.charts import ScatterPoint, StackedBar, bar_chart, scatter_chart, stacked_bar_chart
from gpufleet.report.common import (
    CANDIDATE_COLUMNS,
    STATUS_TITLES,
    Result,
    assumption_lines,
    candidate_label,
    candidate_row,
    cost_breakdown,
    migration_breakdown,
    miss_reason,
    speed_text,
    suggestion_text,
    usd,
    workload_lines,
)
from gpufleet.report.summary import (
    SET_COLUMNS,
    migration_rows,
    performance_lines,
    savings_text,
    scenario_set_row,
)

_CSS = """
:root{--fg:#1f2933;--muted:#52606d;--line:#e4e7eb;--ok:#1b7f3b;--warn:#a05a00;--bad:#b42318;--accent:#0072B2}
*{box-sizing:border-box}
body{margin:0;padding:24px 32px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:#fafbfc}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px}h3{font-size:15px;margin:20px 0 6px}
.meta{color:var(--muted);font-size:12px}
section,details{background:#fff;border:1px solid var(--line);border-radius:8px;padding:12px 18px;
margin:14px 0}
summary{cursor:pointer;font-weight:600;font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px;width:100%}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f7;font-weight:600}
th,td{overflow-wrap:anywhere}td.num{text-align:right;font-variant-numeric:tabular-nums;overflow-wrap:normal}
.scroll{overflow-x:auto}
@media (max-width:1100px){table{font-size:12px}th,td{padding:4px 5px}}
@media print{body{padding:0;background:#fff;font-size:11px}
section,details{border:none;padding:4px 0;margin:8px 0}
table{font-size:9px}th,td{padding:2px 3px}.scroll{overflow:visible}svg{max-width:100%;height:auto}}
tr.best td{font-weight:600}
.badge{display:inline-block;padding:2px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff}
.status-ok{background:var(--ok)}.status-infeasible_slo,.status-over_budget{background:var(--warn)}
.status-cannot_fit,.status-no_offers,.status-error{background:var(--bad)}
.risk-low{color:var(--ok)}.risk-medium{color:var(--warn)}.risk-high{color:var(--bad)}
.charts{display:flex;flex-wrap:wrap;gap:16px}.charts>div{flex:1 1 460px;min-width:320px}
ul{margin:4px 0 8px 18px;padding:0}.assumptions li{color:var(--muted)}
"""

_NUMERIC = frozenset({"rank", "replicas", "usd_per_hour", "usd_per_month", "unit_cost"})


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], numeric: Sequence[bool] = ()) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = []
    for row in rows:
        cells = "".join(
            f'<td class="num">{escape(c)}</td>'
            if i < len(numeric) and numeric[i]
            else f"<td>{escape(c)}</td>"
            for i, c in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
    return f"<div class='scroll'>{table}</div>"


def _list(lines: Sequence[str], css: str = "") -> str:
    cls = f' class="{css}"' if css else ""
    return f"<ul{cls}>" + "".join(f"<li>{escape(line)}</li>" for line in lines) + "</ul>"


def _candidates(cands: Sequence[Candidate]) -> str:
    rows = [list(candidate_row(i, c).values()) for i, c in enumerate(cands, 1)]
    return _table([h for _, h in CANDIDATE_COLUMNS], rows, [k in _NUMERIC for k, _ in CANDIDATE_COLUMNS])


def _speed_value(c: Candidate) -> tuple[float, float | None, float | None] | None:
    """(central, p10, p90) of the throughput plotted on the x axis [tokens/s]."""
    iv = c.output_tokens_per_s if c.output_tokens_per_s is not None else c.tokens_per_s
    return None if iv is None else (iv.central, iv.p10, iv.p90)


def cost_speed_chart(rec: Recommendation) -> str:
    """Cost ($/month; training $/run) against throughput for every candidate, the cost-vs-throughput Pareto
    front (the same axes, :func:`gpufleet.recommend.rank.pareto_rows`) highlighted."""
    seen: list[Candidate] = []
    for c in (*rec.ranked, *rec.pareto, *rec.closest):
        if c not in seen:
            seen.append(c)
    points = []
    training = rec.workload.is_training
    for c in seen:
        sv = _speed_value(c)
        if sv is None:
            continue
        y = c.cost_usd_per_run if training and c.cost_usd_per_run is not None else c.cost_usd_per_month
        label = f"{candidate_label(c)}: {usd(y)}/{'run' if training else 'month'}, {speed_text(c)}"
        points.append(
            ScatterPoint(
                x=sv[0],
                y=y,
                label=label,
                highlight=c in rec.pareto,
                x_low=sv[1],
                x_high=sv[2],
            )
        )
    kind = (
        "output tokens/s, capacity at the SLO batch" if not rec.workload.is_training else "training tokens/s"
    )
    return scatter_chart(
        points,
        title="Cost against throughput (p10-p90 bars)",
        x_label=f"throughput [{kind}]",
        y_label="cost [USD/run]" if training else "cost [USD/month]",
    )


def breakdown_chart(cands: Sequence[Candidate], hours_per_month: float, title: str) -> str:
    bars = [StackedBar(label=candidate_label(c), segments=cost_breakdown(c, hours_per_month)) for c in cands]
    return stacked_bar_chart(bars, title=title, y_label="cost [USD/month]")


def _recommendation(rec: Recommendation, extra: Sequence[str]) -> str:
    out = [
        f'<p><span class="badge status-{escape(rec.status)}">'
        f"{escape(STATUS_TITLES.get(rec.status, rec.status))}"
        f"</span> {escape(rec.message)}</p>",
        "<h3>Workload</h3>",
        _list(workload_lines(rec.workload)),
    ]
    if rec.best is not None:
        b = rec.best
        out.append(
            f"<p><strong>Best: {escape(candidate_label(b))}</strong>, {b.total_gpus} x {escape(b.gpu)}, "
            f"{escape(usd(b.cost_usd_per_month))}/month, {escape(speed_text(b))}</p>"
            + (f"<p><strong>Survives:</strong> {escape(b.survives)}</p>" if b.survives else "")
        )
    shown = rec.ranked or rec.closest
    if shown:
        hpm = rec.workload.hours_per_month
        out.append(
            '<div class="charts"><div>'
            + cost_speed_chart(rec)
            + "</div><div>"
            + breakdown_chart(shown[:8], hpm, "Monthly cost breakdown")
            + "</div></div>"
        )
    if rec.ranked:
        out += ["<h3>Top candidates</h3>", _candidates(rec.ranked)]
    if rec.closest:
        out += ["<h3>Closest options (do not meet every requirement)</h3>", _candidates(rec.closest)]
        out.append(_list([f"{candidate_label(c)}: {miss_reason(c, rec)}" for c in rec.closest]))
    if rec.cannot_fit is not None:
        cf = rec.cannot_fit
        lines = [
            f"memory needed on one GPU: {cf.mem_needed_single_gpu_gib:.1f} GiB; largest GPU offered "
            f"{cf.largest_gpu_memory_gib:.1f} GiB; largest node {cf.largest_node_memory_gib:.1f} GiB"
        ]
        lines += [f"{suggestion_text(s)}" for s in cf.suggestions]
        reason = f"<p>{escape(cf.reason)}</p>" if cf.reason not in rec.message else ""
        out += ["<h3>Why it cannot fit</h3>", reason, _list(lines)]
    out.append(
        f'<p class="meta">{rec.offers_considered} offers considered, '
        f"{rec.candidates_evaluated} candidates evaluated.</p>"
    )
    assumptions = assumption_lines(rec, extra)
    if assumptions:
        out += ["<h3>Assumptions</h3>", _list(assumptions, "assumptions")]
    return "\n".join(out)


def _migration(m: Migration) -> str:
    out = [
        "<h3>Migration: now vs after</h3>",
        _table(["", "Now", "After"], [list(r) for r in migration_rows(m)]),
    ]
    facts = [f"<li><strong>Savings:</strong> {escape(savings_text(m))}</li>"]
    perf = performance_lines(m)
    if perf:
        facts.append(f"<li><strong>Performance:</strong> {escape('; '.join(perf))}</li>")
    for title, level, reasons in (
        ("Risk", m.risk, m.risk_reasons),
        ("Complexity", m.complexity, m.complexity_reasons),
    ):
        why = f": {escape('; '.join(reasons))}" if reasons else ""
        facts.append(f'<li><strong>{title}:</strong> <span class="risk-{level}">{level}</span>{why}</li>')
    out.append("<ul>" + "".join(facts) + "</ul>")
    out.append(f"<p><strong>Verdict:</strong> {escape(m.verdict)}</p>")
    bars = [
        StackedBar(label="now: " + candidate_label(m.current), segments=migration_breakdown(m, after=False))
    ]
    if m.recommended is not None:
        bars.append(
            StackedBar(
                label="after: " + candidate_label(m.recommended), segments=migration_breakdown(m, after=True)
            )
        )
    out.append(
        "<div class='charts'><div>"
        + stacked_bar_chart(bars, title="Monthly cost: now vs after", y_label="cost [USD/month]")
        + "</div></div>"
    )
    return "\n".join(out)


def _scenario(s: ScenarioResult, extra: Sequence[str], open_: bool) -> str:
    status = "error" if s.recommendation is None or s.error is not None else s.recommendation.status
    head = (
        f"<summary>Scenario {escape(s.name)} "
        f'<span class="badge status-{escape(status)}">{escape(status)}</span>'
        "</summary>"
    )
    body = [f"<p>{escape(s.description)}</p>"] if s.description else []
    if s.error is not None or s.recommendation is None:
        body.append(f"<p><strong>Error:</strong> {escape(s.error or 'no result')}</p>")
    else:
        if s.migration is not None:
            body.append(_migration(s.migration))
        body.append(_recommendation(s.recommendation, extra))
    return f"<details{' open' if open_ else ''}>{head}{''.join(body)}</details>"


def savings_chart(result: ScenarioSetResult) -> str:
    """Monthly savings per scenario with a migration; otherwise the best option's monthly cost."""
    items = [
        (s.name, s.migration.savings_usd_per_month)
        for s in result.results
        if s.migration is not None and s.migration.savings_usd_per_month is not None
    ]
    if items:
        return bar_chart(items, title="Savings by scenario", y_label="savings [USD/month]")
    costs = [
        (s.name, s.recommendation.best.cost_usd_per_month)
        for s in result.results
        if s.recommendation is not None and s.recommendation.best is not None
    ]
    return bar_chart(costs, title="Best option cost by scenario", y_label="cost [USD/month]")


def set_breakdown_chart(result: ScenarioSetResult) -> str:
    """Per scenario, the recommended option's monthly cost by component (migration totals if migrating)."""
    bars = []
    for s in result.results:
        rec = s.recommendation
        if rec is None or rec.best is None:
            continue
        if s.migration is not None and s.migration.recommended is not None:
            parts = migration_breakdown(s.migration, after=True)
        else:
            parts = cost_breakdown(rec.best, rec.workload.hours_per_month)
        bars.append(StackedBar(label=s.name, segments=parts))
    return stacked_bar_chart(bars, title="Recommended monthly cost by scenario", y_label="cost [USD/month]")


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f"<h1>{escape(title)}</h1>\n"
        f'<p class="meta">Generated by gpufleet {escape(__version__)}. '
        "Self-contained: no scripts, works offline. "
        "Intervals are p10-p90.</p>\n"
        f"{body}\n</body>\n</html>\n"
    )


def render_html(result: Result, *, assumptions: Sequence[str] = ()) -> str:
    """The complete HTML document for ``result``."""
    if isinstance(result, Recommendation):
        return _page(
            f"Recommendation: {result.workload.name}",
            f"<section>{_recommendation(result, assumptions)}</section>",
        )
    if isinstance(result, Migration):
        body = f"<section>{_migration(result)}{_recommendation(result.recommendation, assumptions)}</section>"
        return _page(f"Migration: {result.workload.name}", body)
    if isinstance(result, ScenarioResult):
        return _page(f"Scenario: {result.name}", _scenario(result, assumptions, open_=True))
    rows = [list(scenario_set_row(s)) for s in result.results]
    summary = _table(SET_COLUMNS, rows, [False, False, False, True, True])
    parts = [
        f"<section><h2>Summary</h2>{summary}"
        f"<div class='charts'><div>{savings_chart(result)}</div>"
        f"<div>{set_breakdown_chart(result)}</div></div></section>"
    ]
    parts += [_scenario(s, assumptions, open_=True) for s in result.results]
    return _page(f"Scenario set: {result.name}", "\n".join(parts))
