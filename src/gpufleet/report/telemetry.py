"""Rendering of telemetry results: fleet findings (terminal, Markdown, HTML with inline SVG, JSON, CSV in
Compute Optimizer's export column names), alert events and ingest reports."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, is_dataclass
from datetime import datetime
from html import escape
from typing import Any, Final

from gpufleet import __version__
from gpufleet.report.charts import SERIES_COLOURS, bar_chart, fmt_number, waterfall_chart
from gpufleet.report.termtable import whole_table
from gpufleet.telemetry.alerts import AlertEvent
from gpufleet.telemetry.findings import FleetFindings, GpuFinding
from gpufleet.telemetry.schema import IngestReport
from gpufleet.telemetry.summary import FleetSummary, histogram


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, datetime):
        return obj.isoformat()
    if is_dataclass(obj) and not isinstance(obj, type):
        return {k: _jsonable(v) for k, v in asdict(obj).items()}
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):  # strict JSON: no NaN or Infinity literals
        return None
    return obj


def to_json(kind: str, payload: dict[str, Any]) -> str:
    doc = {"kind": kind, "gpufleet_version": __version__, **_jsonable(payload)}
    return json.dumps(doc, indent=2, allow_nan=False)


def _usd(v: float | None) -> str:
    return "-" if v is None else f"${v:,.0f}"


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{100 * v:.0f}%"


def _best(g: GpuFinding) -> str:
    o = next((o for o in g.options if o.rank == 1), None)
    return "-" if o is None else f"{o.kind}: {o.target}"


FINDING_COLUMNS = (
    "gpu",
    "host",
    "model",
    "team",
    "finding",
    "reasons",
    "compute",
    "gpu_util",
    "mem_p99_gib",
    "usd_month",
    "best_option",
    "savings_month",
    "risk",
)
_TERMINAL_COLUMNS = (0, 2, 4, 6, 7, 8, 10, 11, 12)


WORKLOAD_COLUMNS = (
    "workload",
    "team",
    "tier",
    "pods",
    "replicas",
    "hours",
    "finding",
    "recommendation",
    "savings_month",
    "cost_month",
    "reasons",
    "evidence",
)


def workload_rows(ff: FleetFindings) -> list[list[str]]:
    rows = []
    for w in sorted(ff.workloads, key=lambda w: (-w.savings_usd_per_month, w.key)):
        rows.append(
            [
                w.key,
                w.team or "-",
                w.tier,
                str(w.pods),
                f"{w.replicas:.1f}",
                f"{w.hours:.0f}",
                w.finding,
                w.recommendation,
                _usd(w.savings_usd_per_month),
                _usd(w.cost_usd_per_month),
                " ".join(w.reason_codes) or "-",
                "; ".join(w.evidence),
            ]
        )
    return rows


def finding_rows(ff: FleetFindings, limit: int | None = None) -> list[list[str]]:
    gs = sorted(ff.gpus, key=lambda g: -g.best_savings_usd_per_month)
    rows = []
    for g in gs[:limit]:
        o = next((o for o in g.options if o.rank == 1), None)
        rows.append(
            [
                g.gpu_key,
                g.host,
                g.gpu or (g.model or "-"),
                g.team or "-",
                g.finding,
                " ".join(g.reason_codes) or "-",
                _pct(g.compute_p)
                + ("" if g.compute_signal == "sm_active_ratio" else f" ({g.compute_signal}, upper bound)"),
                _pct(g.gpu_util_p),
                "-" if g.memory_p99_gib is None else f"{g.memory_p99_gib:.1f}",
                _usd(g.cost_usd_per_month),
                _best(g),
                _usd(g.best_savings_usd_per_month),
                "-" if o is None else f"{o.performance_risk:g}",
            ]
        )
    return rows


def summary_lines(s: FleetSummary, ff: FleetFindings) -> list[str]:
    w = ff.window
    a, b = ff.observed_start, ff.observed_end
    observed = (
        f"observed {a:%Y-%m-%d %H:%M} to {b:%Y-%m-%d %H:%M} UTC ({(b - a).total_seconds() / 86400:.1f} days)"
        if a is not None and b is not None
        else "observed: no sample"
    )
    out = [
        f"Lookback: {w.days:.1f} days ({w.start:%Y-%m-%d %H:%M} to {w.end:%Y-%m-%d %H:%M} UTC); {observed}; "
        f"p{100 * w.percentile:g}, headroom {100 * ff.thresholds.headroom:.0f}%",
        f"GPUs: {s.gpus} ({s.priced_gpus} priced); GPU-hours {s.gpu_hours:,.0f}; idle {s.idle_share:.0%} of "
        "GPU-hours",
        f"Cost: {_usd(s.cost_usd)} over the window; {_usd(s.cost_usd_per_month)}/month at this rate",
        f"Savings (best option per GPU, on-demand basis): {_usd(s.savings_usd_per_month)}/month "
        f"({s.savings_share:.0%} of cost)",
        "Compute ranked on: " + ", ".join(f"{k} ({v} GPUs)" for k, v in sorted(s.compute_signals.items())),
    ]
    if ff.source != "store":
        out.append(f"Statistics computed by {ff.source} (PromQL pushdown; only summaries fetched)")
    out += [f"Caveat: {c}" for c in ff.caveats]
    if any(k != "sm_active_ratio" for k in s.compute_signals):
        out.append(
            "Caveat: GPUs without SM_ACTIVE are ranked on GR_ENGINE_ACTIVE or GPU_UTIL, an upper bound."
        )
    for gpu, (n, packed) in sorted(ff.consolidation.items()):
        out.append(f"Consolidation: {n} MIG-able {gpu} GPUs fit on {packed} shared GPUs as MIG slices")
    return out


def render_findings_terminal(ff: FleetFindings, s: FleetSummary, limit: int = 30) -> list[Any]:
    parts: list[Any] = ["\n".join(summary_lines(s, ff))]
    parts.append(
        whole_table(
            ("finding", "GPUs", "savings/month"),
            [(f, str(n), _usd(sv)) for f, (n, sv) in s.by_finding.items()],
            title="Savings by finding",
            status=("finding",),
        )
    )
    parts.append(
        whole_table(
            ("team", "GPUs", "cost/month", "savings/month"),
            [(team, str(n), _usd(cost), _usd(sv)) for team, (n, cost, sv) in s.by_team.items()],
            title="By team",
        )
    )
    if ff.nodes:
        rows = []
        for node in ff.nodes:
            o = node.options[0] if node.options else None
            rows.append(
                (
                    node.name,
                    str(node.gpus),
                    str(node.idle_gpus),
                    node.finding,
                    _usd(node.cost_usd_per_month),
                    o.target if o else "-",
                    _usd(o.cost_usd_per_month) if o else "-",
                    _usd(o.savings_usd_per_month) if o else "-",
                )
            )
        parts.append(
            whole_table(
                (
                    "node",
                    "GPUs",
                    "idle",
                    "finding",
                    "cost/month",
                    "node option",
                    "option cost/month",
                    "saves/month",
                ),
                rows,
                title="Nodes",
                status=("finding",),
            )
        )
    if ff.workloads:
        parts.append(
            whole_table(
                WORKLOAD_COLUMNS[:9],
                [row[:9] for row in workload_rows(ff)],
                title="Workloads (across their pods)",
                status=("finding",),
            )
        )
    parts.append(
        whole_table(
            [FINDING_COLUMNS[i] for i in _TERMINAL_COLUMNS],
            [[row[i] for i in _TERMINAL_COLUMNS] for row in finding_rows(ff, limit)],
            title=f"GPU findings (top {limit} by savings)",
            status=("finding", "risk"),
        )
    )
    dist = histogram(s.compute_p_values)
    peak = max((c for _, c in dist), default=1) or 1
    parts.append(
        "Compute (percentile) distribution across GPUs:\n"
        + "\n".join(f"  {label:>8} {'#' * round(30 * c / peak):<30} {c}" for label, c in dist)
    )
    return parts


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows]
    return "\n".join(out)


def render_findings_markdown(ff: FleetFindings, s: FleetSummary) -> str:
    parts = [
        "# GPU fleet right-sizing",
        "",
        *[f"- {line}" for line in summary_lines(s, ff)],
        "",
        "## Savings by finding",
        _md_table(
            ("finding", "GPUs", "savings/month"), [(f, n, _usd(v)) for f, (n, v) in s.by_finding.items()]
        ),
        "",
        "## By team",
        _md_table(
            ("team", "GPUs", "cost/month", "savings/month"),
            [(t, n, _usd(c), _usd(v)) for t, (n, c, v) in s.by_team.items()],
        ),
        "",
        "## Nodes",
        _md_table(
            (
                "node",
                "GPUs",
                "idle",
                "finding",
                "cost/month",
                "GPU savings/month",
                "node option",
                "option cost/month",
                "option saves/month",
            ),
            [
                (
                    n.name,
                    n.gpus,
                    n.idle_gpus,
                    n.finding,
                    _usd(n.cost_usd_per_month),
                    _usd(n.savings_usd_per_month),
                    n.options[0].target if n.options else "-",
                    _usd(n.options[0].cost_usd_per_month) if n.options else "-",
                    _usd(n.options[0].savings_usd_per_month) if n.options else "-",
                )
                for n in ff.nodes
            ],
        ),
        "",
        "## Workloads (across their pods; the 30 h minimum applies to the workload)",
        _md_table(WORKLOAD_COLUMNS, workload_rows(ff)),
        "",
        "## Chargeback by team (workloads)",
        _md_table(
            ("team", "workloads", "GPU-hours", "cost in window", "cost/month", "savings/month"),
            [(t, n, f"{h:,.0f}", _usd(c), _usd(m), _usd(v)) for t, (n, h, c, m, v) in s.chargeback.items()],
        ),
        "",
        "## GPU findings",
        _md_table(FINDING_COLUMNS, finding_rows(ff)),
        "",
    ]
    return "\n".join(parts)


#: the heat map's colour at 0 and at 1 (white to the Okabe-Ito blue #0072B2)
_HEAT_LOW, _HEAT_HIGH = (255, 255, 255), (0, 114, 178)


def _heat(v: float) -> str:
    f = max(0.0, min(1.0, v))
    r, g, b = (round(lo + (hi - lo) * f) for lo, hi in zip(_HEAT_LOW, _HEAT_HIGH, strict=True))
    return f"rgb({r},{g},{b})"


def heatmap_svg(
    cells: Sequence[tuple[datetime, float]],
    *,
    title: str,
    width: float = 680,
    metric: str = "fleet mean compute (SM_ACTIVE, else GPU_UTIL)",
    unit: str = "% of the GPU",
) -> str:
    """Days (rows) x hours (columns), colour = the fleet mean of ``metric`` (0-1), with a colour scale
    that names the metric and its unit."""
    days = sorted({c[0].date() for c in cells})
    cw, ch, left, top = (width - 110) / 24, 14.0, 90.0, 40.0
    grid_bottom = top + ch * max(len(days), 1)
    h = grid_bottom + 84
    out = [
        f'<svg class="chart heatmap" viewBox="0 0 {width:.0f} {h:.0f}" role="img" '
        'xmlns="http://www.w3.org/2000/svg">',
        f'<text x="{width / 2:.0f}" y="20" text-anchor="middle" font-size="14" '
        f'font-weight="600">{escape(title)}</text>',
    ]
    row = {d: i for i, d in enumerate(days)}
    for t, v in cells:
        x, y = left + cw * t.hour, top + ch * row[t.date()]
        out.append(
            f'<rect class="mark cell" x="{x:.1f}" y="{y:.1f}" width="{cw:.1f}" height="{ch:.1f}" '
            f'fill="{_heat(v)}">'
            f"<title>{t:%Y-%m-%d %H}:00 UTC: {escape(metric)} {100 * v:.0f} %</title></rect>"
        )
    for d, i in row.items():
        out.append(
            f'<text x="{left - 6:.0f}" y="{top + ch * i + 11:.1f}" font-size="10" '
            f'text-anchor="end">{d}</text>'
        )
    for hh in range(0, 24, 3):
        out.append(f'<text x="{left + cw * hh:.1f}" y="{top - 4:.0f}" font-size="10">{hh:02d}h</text>')
    # the colour scale: a gradient bar from 0 % to 100 %, ticks every 25 %, metric and unit
    sx, sw, sy = left, min(240.0, width - left - 20), grid_bottom + 22
    stops = "".join(f'<stop offset="{k * 25}%" stop-color="{_heat(k / 4)}"/>' for k in range(5))
    out.append(
        f'<defs><linearGradient id="heat-scale" x1="0" x2="1" y1="0" y2="0">{stops}</linearGradient></defs>'
        f'<g class="colour-scale"><rect x="{sx:.0f}" y="{sy:.0f}" width="{sw:.0f}" height="10" '
        'fill="url(#heat-scale)" stroke="#9aa5b1"/>'
    )
    for k in range(5):
        out.append(
            f'<text x="{sx + sw * k / 4:.1f}" y="{sy + 22:.0f}" font-size="10" text-anchor="middle">'
            f"{k * 25}</text>"
        )
    out.append(
        f'<text class="scale-label" x="{sx:.0f}" y="{sy + 38:.0f}" font-size="11">'
        f"{escape(metric)} [{escape(unit)}]</text></g>"
    )
    out.append("</svg>")
    return "\n".join(out)


def waterfall_svg(s: FleetSummary, *, width: float = 680, height: float = 380) -> str:
    """Monthly cost now -> minus savings per finding (one colour per finding) -> cost after the best
    options: a waterfall (:func:`gpufleet.report.charts.waterfall_chart`)."""
    steps: list[tuple[str, float | None]] = [(f, -v) for f, (_, v) in s.by_finding.items() if v > 0]
    return waterfall_chart(
        ("current", s.cost_usd_per_month),
        steps,
        "after",
        title="Monthly cost and savings by finding (USD)",
        y_label="USD / month",
        colours=SERIES_COLOURS,
        width=width,
        height=height,
    )


def findings_heat(
    store: Any, window: Any, s: FleetSummary, *, prometheus: str | None = None, timeout: float = 30.0
) -> list[tuple[datetime, float]]:
    """The hourly heat map of the findings report: the compute signal most GPUs report (SM_ACTIVE where
    present), as a fraction of the hour (GPU_UTIL's percent divided by 100), from the store or, without one,
    computed inside Prometheus. Shared by `gpufleet telemetry report --format html` and the service's
    dashboard."""
    signal = next(iter(sorted(s.compute_signals, key=lambda k: -s.compute_signals[k])), "sm_active_ratio")
    if store is None and prometheus:
        from gpufleet.telemetry.promql import prometheus_heatmap

        heat = prometheus_heatmap(prometheus, window, signal, timeout)
    else:
        from gpufleet.telemetry.analyze import hourly_heatmap

        heat = hourly_heatmap(store, window, signal)
    if signal == "gpu_util_pct":
        heat = [(t, v / 100) for t, v in heat]
    return heat


#: HTML table columns kept on one line (status words and figures); the others wrap anywhere to fit the card
_HTML_WHOLE: Final = frozenset(
    {
        "finding",
        "compute",
        "gpu_util",
        "mem_p99_gib",
        "usd_month",
        "savings_month",
        "risk",
        "GPUs",
        "cost/month",
    }
)


def render_findings_html(ff: FleetFindings, s: FleetSummary, heat: Sequence[tuple[datetime, float]]) -> str:
    def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
        # status and figures stay whole ("Overprov isioned", "100 %" read badly); names and reasons wrap
        cls = ["" if h not in _HTML_WHOLE else ' class="k"' for h in headers]
        h = "".join(f"<th{k}>{escape(str(c))}</th>" for k, c in zip(cls, headers, strict=True))
        b = "".join(
            "<tr>" + "".join(f"<td{k}>{escape(str(c))}</td>" for k, c in zip(cls, r, strict=True)) + "</tr>"
            for r in rows
        )
        return f'<div class="scroll"><table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table></div>'

    dist = bar_chart(
        [(k, float(v)) for k, v in histogram(s.compute_p_values)],
        title="GPUs by compute at the percentile (SM_ACTIVE where present)",
        y_label="GPUs",
        integer=True,
    )
    util = bar_chart(
        [(k, float(v)) for k, v in histogram(s.gpu_util_p_values)],
        title="GPUs by GPU_UTIL at the percentile (upper bound)",
        y_label="GPUs",
        integer=True,
    )
    body = "".join(
        [
            "<section><ul>"
            + "".join(f"<li>{escape(x)}</li>" for x in summary_lines(s, ff))
            + "</ul></section>",
            f'<section><div class="charts"><div>{dist}</div><div>{util}</div></div></section>',
            f'<section><div class="charts"><div>{waterfall_svg(s)}</div><div>'
            f"{heatmap_svg(heat, title='Fleet compute by hour (UTC)')}</div></div></section>",
            "<section><h2>By team</h2>"
            + table(
                ("team", "GPUs", "cost/month", "savings/month"),
                [(t, n, _usd(c), _usd(v)) for t, (n, c, v) in s.by_team.items()],
            )
            + "</section>",
            "<section><h2>GPU findings</h2>" + table(FINDING_COLUMNS, finding_rows(ff)) + "</section>",
        ]
    )
    css = (
        "body{font:14px/1.45 system-ui,sans-serif;margin:24px 32px;color:#1f2933}"
        "table{border-collapse:collapse;"
        "font-size:13px}th,td{border-bottom:1px solid #e4e7eb;padding:4px "
        "8px;text-align:left;overflow-wrap:anywhere}.k{white-space:nowrap;overflow-wrap:normal}"
        ".charts{display:flex;flex-wrap:wrap;gap:16px}.charts>div{flex:1 1 460px}.scroll{overflow-x:auto}"
        ".charts svg{max-width:100%;height:auto}"
        "@media print{body{margin:0}table{font-size:9px}.scroll{overflow:visible}}"
    )
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>GPU fleet right-sizing</title>'
        f"<style>{css}</style></head><body><h1>GPU fleet right-sizing</h1>"
        f'<p class="meta">Generated by gpufleet {escape(__version__)}; self-contained, no '
        f"scripts.</p>{body}</body></html>\n"
    )


#: Columns named as in AWS Compute Optimizer's EC2 recommendations export (ExportEC2InstanceRecommendations),
#: plus gpufleet's own GPU columns at the end.
CO_COLUMNS = (
    "instanceArn",
    "instanceName",
    "currentInstanceType",
    "finding",
    "findingReasonCodes",
    "idle",
    "lookbackPeriodInDays",
    "utilizationMetrics_GPU_PERCENTAGE_MAXIMUM",
    "utilizationMetrics_GPU_MEMORY_PERCENTAGE_MAXIMUM",
    "currentOnDemandPrice",
    "currentPerformanceRisk",
    "recommendationOptions_1_instanceType",
    "recommendationOptions_1_performanceRisk",
    "recommendationOptions_1_estimatedMonthlySavings_currency",
    "recommendationOptions_1_estimatedMonthlySavings_value",
    "recommendationOptions_1_savingsOpportunityPercentage",
    "recommendationOptions_1_estimatedMonthlySavingsAfterDiscounts_value",
    "tags",
    "gpufleet_gpuKey",
    "gpufleet_gpu",
    "gpufleet_computeSignal",
    "gpufleet_computePercentile",
    "gpufleet_priceBasis",
)


def render_findings_csv(ff: FleetFindings) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CO_COLUMNS)
    for g in ff.gpus:
        o = next((o for o in g.options if o.rank == 1), None)
        util = g.gpu_util_p if g.gpu_util_p is not None else g.compute_p
        mem = (
            (g.memory_p99_gib / g.memory_capacity_gib)
            if g.memory_p99_gib is not None and g.memory_capacity_gib
            else None
        )
        w.writerow(
            [
                "",
                g.host,
                g.cost.instance_type or "",
                {"Idle": "OVER_PROVISIONED", "InsufficientData": "INSUFFICIENT_DATA"}.get(
                    g.finding, g.finding.upper().replace("PROVISIONED", "_PROVISIONED")
                ),
                ";".join(g.reason_codes),
                str(g.idle).lower(),
                f"{ff.window.days:.0f}",
                "" if util is None else f"{100 * util:.1f}",
                "" if mem is None else f"{100 * mem:.1f}",
                ""
                if g.cost.on_demand_usd_per_gpu_hour is None
                else f"{g.cost.on_demand_usd_per_gpu_hour:.4f}",
                g.current_performance_risk,
                "" if o is None else o.target,
                "" if o is None else f"{o.performance_risk:g}",
                "USD",
                "" if o is None or o.savings_usd_per_month is None else f"{o.savings_usd_per_month:.2f}",
                "" if o is None or o.savings_pct is None else f"{o.savings_pct:.1f}",
                ""
                if o is None or o.savings_after_discounts_usd_per_month is None
                else f"{o.savings_after_discounts_usd_per_month:.2f}",
                f"team={g.team or ''};namespace={g.namespace or ''};workload={g.workload or ''}",
                g.gpu_key,
                g.gpu or "",
                g.compute_signal,
                "" if g.compute_p is None else f"{g.compute_p:.3f}",
                g.cost.price_basis,
            ]
        )
    return buf.getvalue()


def alert_rows(events: Sequence[AlertEvent]) -> list[list[str]]:
    return [
        [
            e.rule,
            e.severity,
            e.subject,
            f"{e.start:%Y-%m-%d %H:%M}",
            f"{e.duration_s / 60:.0f} min",
            f"{fmt_number(e.peak)} {e.unit}".rstrip(),
            e.action,
            e.note,
        ]
        for e in events
    ]


ALERT_COLUMNS = ("rule", "severity", "subject", "start (UTC)", "duration", "peak", "action", "note")


def ingest_lines(r: IngestReport) -> list[str]:
    out = [
        f"Read {r.rows_read:,} records from {len(r.sources)} source(s); stored {r.rows_stored:,} samples of "
        f"{r.gpus} GPU(s)" + (f" (batch {r.batch_id})" if r.batch_id else "; nothing new was stored")
    ]
    for p in r.problems:
        out.append(
            f"  {'dropped' if p.dropped else 'warning'}: {p.count:,} x {p.kind} in {p.source} (e.g. "
            f"{p.example})"
        )
    return out


__all__ = [
    "ALERT_COLUMNS",
    "CO_COLUMNS",
    "alert_rows",
    "finding_rows",
    "heatmap_svg",
    "ingest_lines",
    "render_findings_csv",
    "render_findings_html",
    "render_findings_markdown",
    "render_findings_terminal",
    "summary_lines",
    "to_json",
    "waterfall_svg",
]
