"""Reports for the simulators (autoscale, spot, batch, sweep): terminal, Markdown, HTML (charts) and JSON.

Every result is first laid out as a :class:`Layout` (a title, key facts, tables and charts); the three text
renderers and the terminal renderer draw that layout, so the formats never disagree. JSON is the result
itself (:func:`gpufleet.report.json_report.to_jsonable`) with ``kind`` and ``gpufleet_version``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any, Final

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from gpufleet import __version__
from gpufleet.report.charts import bar_chart, line_chart
from gpufleet.report.json_report import to_jsonable
from gpufleet.report.markdown import table as md_table
from gpufleet.report.termtable import whole_table

SimResult = Any  # AutoscaleResult | SpotResult | BatchResult | SweepResult (imported lazily)


@dataclass(slots=True)
class Layout:
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    tables: list[tuple[str, list[str], list[list[str]]]] = field(default_factory=list)
    charts: list[str] = field(default_factory=list)  # inline SVG (HTML only)
    notes: list[str] = field(default_factory=list)


def _s(v: float) -> str:
    if v != v:  # NaN
        return "n/a"
    if v == float("inf"):
        return "never (not served)"
    if v < 1e-3:  # below a millisecond: three significant digits, never "0 ms" for a nonzero time
        return f"{v * 1000:.3g} ms"
    return f"{v * 1000:.0f} ms" if v < 1 else f"{v:.2f} s"


def _usd(v: float) -> str:
    return f"${v:,.2f}" if v < 1000 else f"${v:,.0f}"


def _pct(v: float | None) -> str:
    return "n/a" if v is None or v != v else f"{v * 100:.1f} %"


def kind_of(result: SimResult) -> str:
    from gpufleet.simulate.api import result_kind

    return result_kind(result)


def _autoscale(r: Any) -> Layout:
    lay = Layout(title=f"Autoscaling replay: {r.trace} under {r.policy}")
    lay.facts += [
        ("deployment", f"{r.deployment} at {_usd(r.price_usd_per_replica_hour)}/replica-h ({r.offer})"),
        ("requests", f"{r.requests:,} over {r.duration_s / 60:.1f} min (rate x{r.rate_factor:g})"),
        (
            "replicas",
            f"min {r.min_replicas}, max {r.max_replicas}, mean {r.mean_replicas:.2f}, peak {r.peak_replicas}",
        ),
        ("cold start", f"{r.cold_start.total_s:.0f} s"),
        ("replica-hours", f"{r.replica_hours:.2f} (spot {r.spot_replica_hours:.2f})"),
        ("cost", f"{_usd(r.cost_usd)} over the {r.duration_s / 60:.1f}-min trace (replica-hours x price)"),
        (
            "SLO attainment",
            f"{_pct(r.slo_attainment)} (TTFT <= {_s(r.slo_ttft_s)} and TPOT <= {_s(r.slo_tpot_s)}"
            + (f"; target {_pct(r.slo_attainment_target)})" if r.slo_attainment_target is not None else ")"),
        ),
        ("scale events", f"{len(r.scale_events)}; cold-start hits {r.cold_start_hits:,}"),
    ]
    if r.spot_share > 0:
        lay.facts.append(
            ("spot", f"share {r.spot_share:.0%}, {r.interruptions} interruptions, {r.requeued} requeued")
        )
    if r.unfinished:
        lay.facts.append(("unfinished", f"{r.unfinished:,} requests never served"))
    if r.slo_gaps:
        lay.facts.append(("SLO missed", "; ".join(r.slo_gaps)))
    if r.static_peak is not None:
        sp = r.static_peak
        base = (
            f"{sp.replicas} replicas, {_usd(sp.cost_usd)}, p95 TTFT {_s(sp.ttft_p95_s)}, "
            f"p95 TPOT {_s(sp.tpot_p95_s)}, attainment {_pct(sp.slo_attainment)}"
        )
        if r.not_comparable is None:
            vs = f"{base}: savings {_pct(r.savings_vs_static_peak)} at equal SLOs"
        elif sp.meets_slo:
            vs = f"{base}: not comparable, {r.not_comparable}; no savings stated"
        else:
            vs = f"not comparable: {r.not_comparable} ({_usd(sp.cost_usd)}); no savings stated"
        lay.facts.append(("vs static peak", vs))
    rows = [
        [name, _s(st.p50_s), _s(st.p95_s), _s(st.p99_s), _s(st.mean_s)]
        for name, st in (
            ("TTFT", r.ttft),
            ("TPOT", r.tpot),
            ("end-to-end", r.e2e),
            ("queue wait", r.queue_wait),
        )
    ]
    lay.tables.append(("Latency", ["metric", "p50", "p95", "p99", "mean"], rows))
    t_min = [t / 60 for t in r.series_t_s]
    lay.charts.append(
        line_chart(
            {
                "arrivals [req/s]": list(zip(t_min, r.series_arrivals_per_s, strict=True)),
                "replicas billed": list(zip(t_min, r.series_replicas, strict=True)),
                "replicas ready": list(zip(t_min, r.series_ready, strict=True)),
            },
            title="Load and replicas over time",
            x_label="time [min]",
            y_label="req/s, replicas",
        )
    )
    lay.charts.append(
        line_chart(
            {"TTFT": [(x, q) for x, q in r.ttft_cdf], "end-to-end": [(x, q) for x, q in r.e2e_cdf]},
            title="Latency CDF",
            x_label="latency [s]",
            y_label="fraction of requests",
        )
    )
    lay.notes += list(r.notes)
    return lay


def _spot(r: Any) -> Layout:
    lay = Layout(title=f"Spot training run: {r.model} on {r.nodes} x {r.offer}")
    lay.facts += [
        (
            "work",
            f"{r.work_h:.1f} h on healthy instances ("
            + ("p90 of the estimate: its slow end" if r.confidence == "p90" else "the estimate's central")
            + ")",
        ),
        ("deadline", f"{r.deadline_h:g} h" if r.deadline_h is not None else "none"),
        ("checkpoint", f"every {r.interval_h:.2f} h, {r.checkpoint_cost_h * 60:.1f} min each"),
        ("restart overhead", f"{r.restart_overhead_h * 60:.1f} min"),
        ("interruptions", r.interruption_source),
        ("best", r.best or "none meets the deadline with P(miss) <= 5 %"),
    ]
    if r.layouts:
        lay.facts.insert(
            0,
            (
                "layout",
                f"{r.gpus} GPUs on {r.nodes} node(s): the cheapest of {len(r.layouts)} GPU counts searched "
                + (
                    "that meets the deadline"
                    if r.best
                    else "(none meets the deadline: the least likely to miss)"
                ),
            ),
        )
    if r.closed_form_wall_time_factor is not None:
        lay.facts.append(("closed form E[T]/W", f"{r.closed_form_wall_time_factor:.3f} (cost/spot.py)"))
    headers = [
        "strategy",
        "E[cost]/run",
        "p95 cost/run",
        "E[hours]",
        "p50 h",
        "p95 h",
        "P(miss)",
        "interruptions",
        "on-demand h",
        "savings",
    ]
    rows = [
        [
            o.strategy,
            _usd(o.expected_cost_usd),
            _usd(o.cost_p95_usd),
            f"{o.expected_hours:.1f}",
            f"{o.hours_p50:.1f}",
            f"{o.hours_p95:.1f}",
            _pct(o.p_deadline_miss),
            f"{o.expected_interruptions:.1f}",
            f"{o.expected_on_demand_hours:.1f}",
            _pct(o.savings_vs_on_demand),
        ]
        for o in r.outcomes
    ]
    lay.tables.append((f"Strategies ({r.outcomes[-1].runs} Monte-Carlo runs, seed {r.seed})", headers, rows))
    if r.layouts:
        lay.tables.append(
            (
                "Layouts searched",
                ["GPUs", "nodes", "status", "best", "E[cost]", "P(miss)", "why"],
                [
                    [
                        str(t.gpus),
                        str(t.nodes) if t.nodes else "-",
                        t.status,
                        t.best or "-",
                        _usd(t.expected_cost_usd) if t.expected_cost_usd is not None else "-",
                        _pct(t.p_deadline_miss) if t.p_deadline_miss is not None else "-",
                        t.why,
                    ]
                    for t in r.layouts
                ],
            )
        )
    lay.charts.append(
        bar_chart(
            [(o.strategy, o.expected_cost_usd) for o in r.outcomes],
            title="Expected cost by strategy",
            y_label="USD",
        )
    )
    lay.notes += list(r.notes)
    return lay


def _batch(r: Any) -> Layout:
    lay = Layout(title=f"Batch schedule: {r.jobs} jobs under {r.policy}")
    lay.facts += [
        ("fleet", r.fleet),
        ("makespan", f"{r.makespan_h:.1f} h"),
        ("wait", f"p50 {r.wait_p50_h:.2f} h, p95 {r.wait_p95_h:.2f} h"),
        ("utilisation", _pct(r.utilisation)),
        (
            "cost",
            f"{_usd(r.cost_usd)} over the {r.makespan_h:.1f} h makespan (GPU-hours run + reserved pools)",
        ),
        ("deadline misses", str(r.deadline_misses)),
        ("preemptions", str(r.preemptions)),
    ]
    rows = [
        [
            t.team,
            str(t.jobs),
            f"{t.wait_p50_h:.2f}",
            f"{t.wait_p95_h:.2f}",
            f"{t.gpu_hours:.1f}",
            _usd(t.cost_usd),
            str(t.deadline_misses),
        ]
        for t in r.teams
    ]
    lay.tables.append(
        ("Per team", ["team", "jobs", "wait p50 h", "wait p95 h", "GPU-h", "cost", "misses"], rows)
    )
    lay.charts.append(bar_chart([(t.team, t.cost_usd) for t in r.teams], title="Cost by team", y_label="USD"))
    lay.notes += list(r.notes)
    return lay


def _sweep(r: Any) -> Layout:
    lay = Layout(title=f"Sweep: {r.kind} x {len(r.rows)} runs ({r.engine})")
    lay.facts.append(("wall time", f"{r.wall_s:.1f} s"))
    if r.parquet:
        lay.facts.append(("parquet", r.parquet))
    headers = list(r.columns)
    rows = [[_cell(v) for v in row] for row in r.rows]
    lay.tables.append(("Results", headers, rows))
    return lay


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def layout(result: SimResult) -> Layout:
    return {"autoscale": _autoscale, "spot": _spot, "batch": _batch, "sweep": _sweep}[
        kind_of(result).removeprefix("simulation_")
    ](result)


def render_simulation_json(result: SimResult) -> str:
    doc = {"kind": kind_of(result), "gpufleet_version": __version__, "result": to_jsonable(result)}
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_simulation_markdown(result: SimResult) -> str:
    lay = layout(result)
    out = [f"# {lay.title}", ""]
    out += [f"- **{k}**: {v}" for k, v in lay.facts]
    for title, headers, rows in lay.tables:
        out += ["", f"## {title}", "", md_table(headers, rows)]
    if lay.notes:
        out += ["", "## Notes", ""] + [f"- {n}" for n in lay.notes]
    return "\n".join(out) + "\n"


def _html_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def render_simulation_html(result: SimResult) -> str:
    lay = layout(result)
    facts = "".join(f"<li><b>{escape(k)}</b>: {escape(v)}</li>" for k, v in lay.facts)
    parts = [f"<ul>{facts}</ul>"]
    parts += [f'<figure class="chart">{svg}</figure>' for svg in lay.charts]
    for title, headers, rows in lay.tables:
        parts.append(f"<h2>{escape(title)}</h2>{_html_table(headers, rows)}")
    if lay.notes:
        parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{escape(n)}</li>" for n in lay.notes) + "</ul>")
    css = (
        "body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;color:#1f2933}"
        "table{border-collapse:collapse}td,th{border:1px solid #e4e7eb;padding:4px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}.meta{color:#52606d}"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(lay.title)}</title>\n<style>{css}</style>\n</head>\n<body>\n"
        f"<h1>{escape(lay.title)}</h1>\n"
        f'<p class="meta">Generated by gpufleet {escape(__version__)}; self-contained, no scripts.</p>\n'
        + "\n".join(parts)
        + "\n</body>\n</html>\n"
    )


#: status columns of the simulation tables, kept whole in a terminal (report/termtable.py)
_STATUS_HEADERS: Final = frozenset({"status", "best", "strategy", "policy"})


def render_simulation_terminal(result: SimResult) -> RenderableType:
    lay = layout(result)
    items: list[RenderableType] = [Text(lay.title, style="bold")]
    facts = Table.grid(padding=(0, 2))
    for k, v in lay.facts:
        facts.add_row(Text(k, style="dim"), Text(v))
    items.append(facts)
    for title, headers, rows in lay.tables:
        # the first column (a strategy, policy or count) and the status words ("skipped" cut to "ski ppe d"
        # reads as nothing) stay whole
        status = (headers[0], *(h for h in headers if h in _STATUS_HEADERS))
        items.append(whole_table(headers, rows, title=title, status=status))
    if lay.notes:
        items.append(Text("\n".join(f"- {n}" for n in lay.notes), style="dim"))
    return Group(*items)


def render_simulation(result: SimResult, fmt: str) -> str:
    """``result`` as a ``json``, ``markdown`` or ``html`` document."""
    if fmt == "json":
        return render_simulation_json(result)
    if fmt == "markdown":
        return render_simulation_markdown(result)
    if fmt == "html":
        return render_simulation_html(result)
    raise ValueError(f"unknown simulation report format {fmt!r}")
