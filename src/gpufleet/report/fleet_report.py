"""Fleet plans and region analyses rendered: terminal (rich), Markdown, self-contained HTML with SVG charts,
JSON (``kind`` + ``gpufleet_version``)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from html import escape
from typing import TYPE_CHECKING, Any

from gpufleet import __version__
from gpufleet.catalog.regions import region_text
from gpufleet.report.charts import StackedBar, bar_chart, stacked_bar_chart
from gpufleet.report.charts import waterfall_chart as waterfall
from gpufleet.report.common import num, pct, usd
from gpufleet.report.json_report import to_jsonable

if TYPE_CHECKING:
    from rich.console import RenderableType

    from gpufleet.fleet.regions import RegionAnalysis
    from gpufleet.fleet.types import FleetPlan, NewCommitment, OnPremTco, SharedPool

LINE_COLUMNS = (
    "Workload",
    "Team",
    "Provider",
    "Region",
    "Instance",
    "GPU",
    "Pay",
    "Nodes",
    "h/month",
    "$/month",
)
POOL_COLUMNS = (
    "Pool (provider/region/instance)",
    "GPU",
    "Nodes",
    "MIG layout per GPU x GPUs",
    "Slices: workload count x resource",
    "$/month",
)
LEVER_COLUMNS = (
    "Lever",
    "Before $/month",
    "After $/month",
    "Saved $/month",
    "Saved % of today",
    "Seed goal",
    "Note",
)
REGION_COLUMNS = (
    "#",
    "Workload",
    "Provider",
    "Region",
    "Nodes x instance (GPUs)",
    "On-demand $/month",
    "Spot $/month",
    "1y $/month",
    "3y $/month",
    "Offers",
    "Spot s/od",
    "Egress $/month",
    "Transfer h",
    "RTT ms",
    "gCO2e/kWh",
    "gCO2e/month",
    "Total $/month",
)


def _nodes(ln: Any) -> str:
    """Nodes, or MIG slices (``3 x 1g.10gb``) and a pool's idle compute slices."""
    if ln.mig_profile:
        return f"{ln.nodes} x {ln.mig_profile}"
    if ln.pool:
        return f"{ln.nodes} idle compute slices"
    return str(ln.nodes)


def line_rows(plan: FleetPlan) -> list[list[str]]:
    return [
        [
            ln.workload,
            ln.team,
            ln.provider,
            region_text(ln.region),
            ln.instance_type,
            (ln.gpu or "cpu") + (" (MIG)" if ln.pool else ""),
            ln.pay_kind,
            _nodes(ln),
            num(ln.hours_per_month),
            usd(ln.cost_usd_per_month),
        ]
        for ln in plan.lines
    ]


def _on_nodes(pool: SharedPool, workload: str) -> str:
    """`` on nodes 0, 1``: the pool nodes a workload's slices sit on (from the per-GPU placement)."""
    nodes = sorted({g.node for g in pool.gpus for w, _p, _n in g.tenants if w == workload})
    return f" on node{'s' if len(nodes) > 1 else ''} {', '.join(map(str, nodes))}" if nodes else ""


def pool_rows(plan: FleetPlan) -> list[list[str]]:
    from gpufleet.fleet.mig import k8s_resource

    return [
        [
            p.key,
            p.gpu,
            f"{p.nodes} x {p.gpus_per_node} GPUs"
            + (" in 2 mirrored halves (survives a lost node)" if p.mirrored else ""),
            "; ".join(
                " + ".join(f"{k} x {prof}" for prof, k in layout) + f" (x{n})" for layout, n in p.layouts
            ),
            "; ".join(f"{w}: {n} x {k8s_resource(prof)}" + _on_nodes(p, w) for w, prof, n in p.slices),
            usd(p.cost_usd_per_month),
        ]
        for p in plan.pools
    ]


def lever_rows(plan: FleetPlan) -> list[list[str]]:
    return [
        [
            lv.name,
            usd(lv.usd_per_month_before),
            usd(lv.usd_per_month_after),
            usd(lv.savings_usd_per_month),
            pct(lv.savings_pct),
            lv.goal,
            lv.note,
        ]
        for lv in plan.levers
    ]


def summary_lines(plan: FleetPlan) -> list[str]:
    out = [plan.message]
    if plan.stats:
        s = plan.stats
        gap = "-" if s.mip_gap is None else f"{s.mip_gap:.3%}"
        out.append(
            f"MILP: {s.variables} variables ({s.integer_variables} integer), {s.constraints} constraints; "
            f"options {s.options_before_pruning} -> {s.options_after_pruning} after pruning dominated ones; "
            f"gap {gap}; build {s.build_time_s:.2f} s, solve {s.solve_time_s:.2f} s ({s.solver})."
        )
    out += [f"Binding: {b}" for b in plan.binding]
    out += [f"Check: {v}" for v in plan.check_violations]
    out += [commitment_line(c) for c in plan.new_commitments]
    out += [tco_line(t) for t in plan.on_prem_tco]
    out += emission_lines(plan)
    out += [f"Team {t}: {usd(v)}/month" for t, v in plan.cost_by_team_usd_per_month]
    return out


def tco_line(t: OnPremTco) -> str:
    """An owned site's monthly cost by part and its break-even against the best cloud alternative."""
    capex = (
        "capex sunk ($0/month)"
        if t.capex_usd == 0
        else f"capex {usd(t.capex_usd)} / {t.depreciation_months:g} months = "
        f"{usd(t.capex_amortisation_usd_per_month)}/month"
    )
    alt = (
        f"best cloud alternative at the same load: {t.cloud_alternative} "
        f"{usd(t.cloud_alternative_usd_per_month)}/month"
        if t.cloud_alternative_usd_per_month is not None
        else "no cloud alternative"
    )
    be = "-" if t.break_even_months is None else f"{t.break_even_months:.1f} months"
    return (
        f"On-prem {t.site} for {t.workload}: {t.nodes} node(s), {t.node_hours_per_month:g} node-h/month; "
        f"{capex} + power {t.power_kw_per_node:g} kW x PUE {t.pue:g} x ${t.usd_per_kwh:g}/kWh = "
        f"{usd(t.power_usd_per_month)}/month + operations {usd(t.operations_usd_per_month)}/month = "
        f"{usd(t.total_usd_per_month)}/month; {alt}; break-even {be} ({t.note})"
    )


def emission_lines(plan: FleetPlan) -> list[str]:
    """The plan's operational emissions [kgCO2e/month], per workload, and what has no grid figure."""
    if not plan.emissions:
        return []
    unknown = [e.workload for e in plan.emissions if e.unknown_node_hours_per_month > 0]
    total = plan.emissions_kg_co2e_per_month
    head = (
        "Emissions: no placement has a grid carbon figure"
        if total is None
        else f"Emissions: {total:,.0f} kgCO2e/month (operational, at the planned hours)"
    )
    if unknown:
        head += f"; not counted (no grid figure): {', '.join(unknown)}"
    out = [head]
    for e in plan.emissions:
        kg = "unknown" if e.kg_co2e_per_month is None else f"{e.kg_co2e_per_month:,.1f} kgCO2e/month"
        basis = f" [{e.basis}]" if e.basis else ""
        out.append(f"Emissions {e.workload}: {kg} at {'; '.join(e.places)}{basis}")
    return out


def commitment_line(c: NewCommitment) -> str:
    """One new commitment with its rate, the rate's source, break-even and the on-demand alternative."""
    flag = "verified" if c.rate_verified else "UNVERIFIED (used because allow_unverified_commitments is set)"
    return (
        f"New commitment: {c.nodes} x {c.instance_type} {c.term} in {c.provider}/{c.region} "
        f"({usd(c.usd_per_month)}/month billed, 730 h/node): rate ${c.rate_usd_per_hour:.4f}/node-h, "
        f"{c.discount_fraction:.0%} off on-demand ${c.on_demand_usd_per_hour:.4f}/node-h "
        f"[{c.rate_program or '?'} {c.rate_basis or '?'}, {flag}: {c.rate_source}]; expected use "
        f"{c.expected_utilisation:.0%} of 730 h vs break-even {c.break_even_utilisation:.0%} (margin "
        f"{c.margin_fraction:.0%}); pays back after {c.break_even_months:.1f} of {c.term_months:g} months; "
        f"on-demand alternative {usd(c.on_demand_usd_per_month)}/month for the same hours; lock-in: "
        f"{usd(c.term_obligation_usd)} owed over the {c.term_months:g} months whatever the use, dearer than "
        f"on-demand once these nodes' use falls more than {c.use_drop_tolerated_fraction:.0%} (below "
        f"{c.break_even_utilisation:.0%} of 730 h)"
    )


def render_plan_json(plan: FleetPlan) -> str:
    doc: dict[str, Any] = {"kind": "fleet_plan", "gpufleet_version": __version__, "result": to_jsonable(plan)}
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _md_table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def render_plan_markdown(plan: FleetPlan) -> str:
    parts = [f"# Fleet plan: {plan.fleet}", "", *[f"- {s}" for s in summary_lines(plan)], ""]
    if plan.lines:
        parts += ["## Placements", "", _md_table(LINE_COLUMNS, line_rows(plan)), ""]
    if plan.pools:
        parts += ["## GPUs shared through MIG", "", _md_table(POOL_COLUMNS, pool_rows(plan)), ""]
    if plan.levers:
        parts += ["## Savings by lever", "", _md_table(LEVER_COLUMNS, lever_rows(plan)), ""]
    if plan.notes:
        parts += ["## Notes", "", *[f"- {n}" for n in plan.notes], ""]
    return "\n".join(parts)


def _html_table(headers: tuple[str, ...], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def cost_chart(plan: FleetPlan) -> str:
    by_wl: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for ln in plan.lines:
        by_wl[ln.workload][ln.pay_kind] += ln.cost_usd_per_month
    bars = [StackedBar(label=w, segments=dict(seg)) for w, seg in by_wl.items()]
    return stacked_bar_chart(bars, title="Monthly cost by workload and pay kind", y_label="USD / month")


def waterfall_chart(plan: FleetPlan) -> str:
    """The savings waterfall: today's monthly cost, one floating bar per lever down (or up) from the level
    before it, and the planned cost; a lever not evaluated moves nothing and reads "n/e"."""
    first = next((lv for lv in plan.levers if lv.usd_per_month_before is not None), None)
    if first is None or first.usd_per_month_before is None:
        return waterfall(("today", math.nan), [], "planned", title=_WATERFALL, y_label="USD / month")
    steps = [
        (lv.name, None if lv.savings_usd_per_month is None else -lv.savings_usd_per_month)
        for lv in plan.levers
    ]
    return waterfall(
        ("today", first.usd_per_month_before), steps, "planned", title=_WATERFALL, y_label="USD / month"
    )


_WATERFALL = "Savings waterfall: today's cost to the planned cost (USD / month)"


_CSS = (
    "body{font-family:system-ui,sans-serif;margin:2rem;max-width:1200px}table{border-collapse:collapse;"
    "margin:1rem 0}td,th{border:1px solid #ccc;padding:4px 8px;font-size:13px}th{background:#f3f3f3}"
    ".charts{display:flex;flex-wrap:wrap;gap:1rem}.charts>div{flex:1 1 560px}"
    ".charts svg{width:100%;height:auto}td,th{overflow-wrap:anywhere}"
    "@media print{body{margin:0}td,th{font-size:9px;padding:2px 3px}}"
)


def _page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n<title>{escape(title)}</title>\n'
        f"<style>{_CSS}</style>\n</head>\n<body>\n<h1>{escape(title)}</h1>\n"
        f"<p>Generated by gpufleet {escape(__version__)}. Self-contained, works offline.</p>\n"
        f"{body}\n</body>\n</html>\n"
    )


def render_plan_html(plan: FleetPlan) -> str:
    summary = "<ul>" + "".join(f"<li>{escape(s)}</li>" for s in summary_lines(plan)) + "</ul>"
    body = [f"<section><h2>Summary</h2>{summary}</section>"]
    if plan.lines:
        body.append(
            f"<section><h2>Placements</h2><div class='charts'><div>{cost_chart(plan)}</div>"
            f"<div>{waterfall_chart(plan)}</div></div>{_html_table(LINE_COLUMNS, line_rows(plan))}</section>"
        )
    if plan.pools:
        body.append(
            f"<section><h2>GPUs shared through MIG</h2>{_html_table(POOL_COLUMNS, pool_rows(plan))}</section>"
        )
    if plan.levers:
        body.append(
            f"<section><h2>Savings by lever</h2>{_html_table(LEVER_COLUMNS, lever_rows(plan))}</section>"
        )
    if plan.notes:
        body.append(
            "<section><h2>Notes</h2><ul>"
            + "".join(f"<li>{escape(n)}</li>" for n in plan.notes)
            + "</ul></section>"
        )
    return _page(f"Fleet plan: {plan.fleet}", "\n".join(body))


def render_plan_terminal(plan: FleetPlan) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    from gpufleet.report.termtable import whole_table

    parts: list[Any] = [Text(s) for s in summary_lines(plan)]
    if plan.lines:
        parts.append(whole_table(LINE_COLUMNS, line_rows(plan), title="Placements", status=("Pay",)))
    if plan.pools:
        parts.append(whole_table(POOL_COLUMNS, pool_rows(plan), title="GPUs shared through MIG"))
    if plan.levers:
        parts.append(
            whole_table(
                LEVER_COLUMNS,
                lever_rows(plan),
                title="Savings by lever (waterfall from today's deployment)",
                status=("Lever",),
            )
        )
    parts += [Text(f"Note: {n}", style="dim") for n in plan.notes]
    return Group(*parts)


# ----------------------------------------------------------------------------------------- regions


def region_rows(a: RegionAnalysis) -> list[list[str]]:
    def opt(v: float | None, fmt: str = "usd") -> str:
        if v is None:
            return "-"
        return usd(v) if fmt == "usd" else num(v)

    return [
        [
            "-" if r.rank is None else str(r.rank),
            r.workload,
            r.provider,
            r.region + (" (data)" if r.is_data_region else ""),
            # the monthly figures are for this many instances: "13 x ECS1GPU11 (13 A30)", not one instance
            f"{r.nodes} x {r.instance_type} ({r.gpus:g} {r.gpu})",
            opt(r.on_demand_usd_per_month),
            opt(r.spot_usd_per_month),
            opt(r.commit_1y_usd_per_month),
            opt(r.commit_3y_usd_per_month),
            str(r.offer_depth),
            "-" if r.spot_discount is None else f"{r.spot_discount:.0%}",
            opt(r.egress_usd_per_month),
            opt(r.transfer_time_h, "n"),
            # several user locations: traffic-weighted mean / the worst location
            opt(r.rtt_ms, "n")
            + (f" / {num(r.rtt_worst_ms)}" if r.rtt_by_location_ms and r.rtt_worst_ms else ""),
            opt(r.carbon_gco2e_per_kwh, "n"),
            opt(r.carbon_gco2e_per_month, "n"),
            # egress unpriced (None) while some data leaves the region: the total holds it as $0, a lower
            # bound; shown as such so a "$2,752" row is not read as cheaper than a priced "$6,900" one
            opt(r.total_usd_per_month)
            if r.egress_usd_per_month is not None
            else f">= {usd(r.total_usd_per_month)}",
        ]
        for r in a.rows
    ]


def render_regions_json(a: RegionAnalysis) -> str:
    doc = {"kind": "region_analysis", "gpufleet_version": __version__, "result": to_jsonable(a)}
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def render_regions_markdown(a: RegionAnalysis) -> str:
    return "\n".join(
        [
            f"# Regions: {', '.join(a.workloads)}",
            "",
            *[f"- {n}" for n in a.notes],
            "",
            _md_table(REGION_COLUMNS, region_rows(a)),
            "",
        ]
    )


def regions_chart(a: RegionAnalysis) -> str:
    items = [(f"{r.provider}/{r.region}", r.total_usd_per_month) for r in a.rows[:20]]
    return bar_chart(items, title="Monthly cost incl. egress, cheapest regions", y_label="USD / month")


def render_regions_html(a: RegionAnalysis) -> str:
    notes = "<ul>" + "".join(f"<li>{escape(n)}</li>" for n in a.notes) + "</ul>"
    body = f"{notes}<div class='charts'>{regions_chart(a)}</div>{_html_table(REGION_COLUMNS, region_rows(a))}"
    return _page(f"Regions: {', '.join(a.workloads)}", body)


def render_regions_terminal(a: RegionAnalysis) -> RenderableType:
    from rich.console import Group
    from rich.text import Text

    from gpufleet.report.termtable import whole_table

    t = whole_table(REGION_COLUMNS, region_rows(a), title="Per workload and region")
    return Group(t, *[Text(f"Note: {n}", style="dim") for n in a.notes])
