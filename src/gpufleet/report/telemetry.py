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
from typing import Any

from rich.table import Table

from gpufleet import __version__
from gpufleet.report.charts import PALETTE, bar_chart, fmt_number, nice_ticks
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
    out = [
        f"Window: {w.start:%Y-%m-%d %H:%M} to {w.end:%Y-%m-%d %H:%M} UTC ({w.days:.1f} days), "
        f"p{100 * w.percentile:g}, "
        f"headroom {100 * ff.thresholds.headroom:.0f}%",
        f"GPUs: {s.gpus} ({s.priced_gpus} priced); GPU-hours {s.gpu_hours:,.0f}; idle {s.idle_share:.0%} of "
        "GPU-hours",
        f"Cost: {_usd(s.cost_usd)} over the window; {_usd(s.cost_usd_per_month)}/month at this rate",
        f"Savings (best option per GPU, on-demand basis): {_usd(s.savings_usd_per_month)}/month "
        f"({s.savings_share:.0%} of cost)",
        "Compute ranked on: " + ", ".join(f"{k} ({v} GPUs)" for k, v in sorted(s.compute_signals.items())),
    ]
    if any(k != "sm_active_ratio" for k in s.compute_signals):
        out.append(
            "Caveat: GPUs without SM_ACTIVE are ranked on GR_ENGINE_ACTIVE or GPU_UTIL, an upper bound."
        )
    for gpu, (n, packed) in sorted(ff.consolidation.items()):
        out.append(f"Consolidation: {n} MIG-able {gpu} GPUs fit on {packed} shared GPUs as MIG slices")
    return out


def render_findings_terminal(ff: FleetFindings, s: FleetSummary, limit: int = 30) -> list[Any]:
    parts: list[Any] = ["\n".join(summary_lines(s, ff))]
    t = Table(title="Savings by finding")
    for c in ("finding", "GPUs", "savings/month"):
        t.add_column(c)
    for f, (n, sv) in s.by_finding.items():
        t.add_row(f, str(n), _usd(sv))
    parts.append(t)
    t = Table(title="By team")
    for c in ("team", "GPUs", "cost/month", "savings/month"):
        t.add_column(c)
    for team, (n, cost, sv) in s.by_team.items():
        t.add_row(team, str(n), _usd(cost), _usd(sv))
    parts.append(t)
    if ff.nodes:
        t = Table(title="Nodes")
        for c in ("node", "GPUs", "idle", "finding", "cost/month", "node option", "option/month"):
            t.add_column(c, overflow="fold")
        for node in ff.nodes:
            o = node.options[0] if node.options else None
            t.add_row(
                node.name,
                str(node.gpus),
                str(node.idle_gpus),
                node.finding,
                _usd(node.cost_usd_per_month),
                o.target if o else "-",
                _usd(o.savings_usd_per_month) if o else "-",
            )
        parts.append(t)
    t = Table(title=f"GPU findings (top {limit} by savings)")
    for i in _TERMINAL_COLUMNS:
        t.add_column(FINDING_COLUMNS[i], overflow="fold")
    for row in finding_rows(ff, limit):
        t.add_row(*(row[i] for i in _TERMINAL_COLUMNS))
    parts.append(t)
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
                "option/month",
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
                    _usd(n.options[0].savings_usd_per_month) if n.options else "-",
                )
                for n in ff.nodes
            ],
        ),
        "",
        "## GPU findings",
        _md_table(FINDING_COLUMNS, finding_rows(ff)),
        "",
    ]
    return "\n".join(parts)


def heatmap_svg(cells: Sequence[tuple[datetime, float]], *, title: str, width: float = 680) -> str:
    """Days (rows) x hours (columns), colour = fleet mean (0-1)."""
    days = sorted({c[0].date() for c in cells})
    cw, ch, left, top = (width - 110) / 24, 14.0, 90.0, 40.0
    h = top + ch * max(len(days), 1) + 30
    out = [
        f'<svg class="chart heatmap" viewBox="0 0 {width:.0f} {h:.0f}" role="img" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="{width / 2:.0f}" y="20" text-anchor="middle" font-size="14" '
        f'font-weight="600">{escape(title)}</text>',
    ]
    row = {d: i for i, d in enumerate(days)}
    for t, v in cells:
        x, y = left + cw * t.hour, top + ch * row[t.date()]
        shade = max(0.0, min(1.0, v))
        colour = f"rgb({int(255 - 255 * shade)},{int(255 - 141 * shade)},{int(255 - 77 * shade)})"
        out.append(
            f'<rect class="mark cell" x="{x:.1f}" y="{y:.1f}" width="{cw:.1f}" height="{ch:.1f}" '
            f'fill="{colour}">'
            f"<title>{t:%Y-%m-%d %H}:00 UTC: {100 * v:.0f}%</title></rect>"
        )
    for d, i in row.items():
        out.append(
            f'<text x="{left - 6:.0f}" y="{top + ch * i + 11:.1f}" font-size="10" '
            f'text-anchor="end">{d}</text>'
        )
    for hh in range(0, 24, 3):
        out.append(f'<text x="{left + cw * hh:.1f}" y="{top - 4:.0f}" font-size="10">{hh:02d}h</text>')
    out.append("</svg>")
    return "\n".join(out)


def waterfall_svg(s: FleetSummary, *, width: float = 680, height: float = 340) -> str:
    """Monthly cost now -> minus savings per finding -> cost after the best options."""
    steps = [("current", s.cost_usd_per_month)] + [(f, -v) for f, (_, v) in s.by_finding.items() if v > 0]
    after = s.cost_usd_per_month - s.savings_usd_per_month
    top_v = max(s.cost_usd_per_month, 1.0)
    ticks = nice_ticks(0.0, top_v)
    left, right, top, bottom = 80.0, 20.0, 40.0, 60.0
    ph = height - top - bottom
    n = len(steps) + 1
    slot = (width - left - right) / n

    def y(v: float) -> float:
        return top + ph * (1 - v / ticks[-1])

    out = [
        f'<svg class="chart waterfall" viewBox="0 0 {width:.0f} {height:.0f}" role="img" xmlns="http://www.w3.org/2000/svg">',
        f'<text x="{width / 2:.0f}" y="20" text-anchor="middle" font-size="14" font-weight="600">'
        "Monthly cost and savings by finding (USD)</text>",
    ]
    for t in ticks:
        out.append(
            f'<text x="{left - 6:.0f}" y="{y(t) + 4:.1f}" font-size="10" '
            f'text-anchor="end">{fmt_number(t)}</text>'
        )
    level = 0.0
    for i, (label, v) in enumerate([*steps, ("after", after)]):
        x = left + slot * i + slot * 0.2
        if label in ("current", "after"):
            lo, hi, colour = 0.0, v, PALETTE[0]
            level = v
        else:
            lo, hi, colour = level + v, level, PALETTE[2]
            level += v
        out.append(
            f'<rect class="bar" x="{x:.1f}" y="{y(hi):.1f}" width="{slot * 0.6:.1f}" '
            f'height="{max(y(lo) - y(hi), 1):.1f}" fill="{colour}"><title>{escape(label)}: '
            f"{fmt_number(abs(v))}</title></rect>"
        )
        out.append(
            f'<text x="{x + slot * 0.3:.1f}" y="{height - bottom + 14:.0f}" font-size="10" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


def render_findings_html(ff: FleetFindings, s: FleetSummary, heat: Sequence[tuple[datetime, float]]) -> str:
    def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
        h = "".join(f"<th>{escape(str(c))}</th>" for c in headers)
        b = "".join("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
        return f'<div class="scroll"><table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table></div>'

    dist = bar_chart(
        [(k, float(v)) for k, v in histogram(s.compute_p_values)],
        title="GPUs by compute at the percentile (SM_ACTIVE where present)",
        y_label="GPUs",
    )
    util = bar_chart(
        [(k, float(v)) for k, v in histogram(s.gpu_util_p_values)],
        title="GPUs by GPU_UTIL at the percentile (upper bound)",
        y_label="GPUs",
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
        "8px;text-align:left;white-space:nowrap}"
        ".charts{display:flex;flex-wrap:wrap;gap:16px}.charts>div{flex:1 1 460px}.scroll{overflow-x:auto}"
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
            fmt_number(e.peak),
            e.action,
        ]
        for e in events
    ]


ALERT_COLUMNS = ("rule", "severity", "subject", "start (UTC)", "duration", "peak", "action")


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
