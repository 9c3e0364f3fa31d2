"""Results as rich renderables (tables and panels) for the terminal. Returns renderables; never prints."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from gpufleet.recommend.types import (
    Candidate,
    Migration,
    Recommendation,
    ScenarioResult,
)
from gpufleet.report.common import (
    CANDIDATE_COLUMNS,
    STATUS_TITLES,
    Result,
    assumption_lines,
    candidate_label,
    candidate_row,
    fit_gib_text,
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

_STATUS_STYLE = {
    "ok": "bold green",
    "infeasible_slo": "bold yellow",
    "over_budget": "bold yellow",
    "over_risk": "bold yellow",
}
_RISK_STYLE = {"low": "green", "medium": "yellow", "high": "red"}
_NUMERIC = frozenset({"rank", "replicas", "usd_per_hour", "usd_per_month", "unit_cost"})


#: below this console width [characters] the candidate table merges columns so that it stays readable
COMPACT_BELOW_COLUMNS = 170


def candidate_table(cands: Sequence[Candidate], title: str, *, compact: bool = False) -> Table:
    """The candidate table (provider, region, instance, GPUs, ..., $/month, unit cost, risk).

    ``compact`` merges provider/instance/region, GPUs/parallelism/replicas and $/month/$/h into three
    multi-line cells for narrow terminals.
    """
    table = Table(title=title, title_justify="left", header_style="bold", expand=False, pad_edge=False)
    rows = [candidate_row(i, c) for i, c in enumerate(cands, 1)]
    costs = [
        "\n".join(
            (
                row["usd_per_month"],
                f"{row['usd_per_hour']}/h",
                *row["unit_cost"].split("; "),
                f"price {row['price_date']}",
            )
        )
        for row in rows
    ]
    # a cost cell wraps between words, never inside a money figure: the column is at least its longest word
    cost_min_width = max((len(word) for cell in costs for word in cell.split()), default=4)
    if compact:
        table.box = box.SIMPLE_HEAD
        for header in (
            "#",
            "Option",
            "GPUs, layout, GiB used / per GPU",
            "Capacity (p10-p90)",
            "Cost",
            "Risk",
        ):
            table.add_column(
                header,
                justify="right" if header == "#" else "left",
                overflow="fold",
                no_wrap=header == "#",
                min_width=cost_min_width if header == "Cost" else None,
            )
    else:
        for key, header in CANDIDATE_COLUMNS:
            table.add_column(header, justify="right" if key in _NUMERIC else "left", overflow="fold")
    for i, (c, row, cost) in enumerate(zip(cands, rows, costs, strict=True), 1):
        style = "bold" if i == 1 else None
        if compact:
            table.add_row(
                row["rank"],
                f"{row['provider']}\n{row['instance']}\n{row['region']}\n{row['deploy']}\n{row['host']}",
                f"{row['gpus']}\n{row['parallelism']}, x{row['replicas']}\n{fit_gib_text(c)}",
                row["speed"].replace(" (", "\n(", 1),
                cost,
                row["risk"].replace(": ", "\n", 1).replace("; ", "\n"),
                style=style,
            )
        else:
            table.add_row(*row.values(), style=style)
    return table


class _Candidates:
    """A candidate table that picks the full or the compact layout from the width it is rendered at."""

    def __init__(self, cands: Sequence[Candidate], title: str) -> None:
        self.cands, self.title = cands, title

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield candidate_table(self.cands, self.title, compact=options.max_width < COMPACT_BELOW_COLUMNS)


def _bullets(title: str, lines: Sequence[str], style: str = "dim") -> Text:
    text = Text(f"{title}\n", style="bold")
    for line in lines:
        text.append(f"  - {line}\n", style=style)
    return text


def recommendation_view(rec: Recommendation, extra: Sequence[str] = ()) -> RenderableType:
    parts: list[RenderableType] = []
    title = STATUS_TITLES.get(rec.status, rec.status)
    body = Text(rec.message or title)
    parts.append(
        Panel(body, title=Text(title, style=_STATUS_STYLE.get(rec.status, "bold red")), title_align="left")
    )
    parts.append(_bullets("Workload", workload_lines(rec.workload), style=""))
    if rec.best is not None:
        b = rec.best
        parts.append(
            Text.assemble(
                ("Best: ", "bold"),
                (candidate_label(b), "bold cyan"),
                f"  {b.total_gpus} x {b.gpu}, {usd(b.cost_usd_per_month)}/month, {speed_text(b)}",
            )
        )
        if b.survives:
            parts.append(Text.assemble(("Survives: ", "bold"), b.survives))
    if rec.ranked:
        parts.append(_Candidates(rec.ranked, "Top candidates"))
    if rec.closest:
        parts.append(_Candidates(rec.closest, "Closest options (do not meet every requirement)"))
        misses = [f"{candidate_label(c)}: {miss_reason(c, rec)}" for c in rec.closest]
        parts.append(_bullets("Why they miss", misses, style="yellow"))
    if rec.cannot_fit is not None:
        cf = rec.cannot_fit
        if cf.reason not in rec.message:
            parts.append(Text(cf.reason, style="red"))
        parts.append(
            Text(
                f"Memory: {cf.mem_needed_single_gpu_gib:.1f} GiB needed on one GPU; largest GPU offered "
                f"{cf.largest_gpu_memory_gib:.1f} GiB, largest node {cf.largest_node_memory_gib:.1f} GiB.",
                style="dim",
            )
        )
        parts.append(_bullets("What would fit", [suggestion_text(s) for s in cf.suggestions], style=""))
    parts.append(
        Text(
            f"{rec.offers_considered} offers considered, {rec.candidates_evaluated} candidates evaluated.",
            "dim",
        )
    )
    assumptions = assumption_lines(rec, extra)
    if assumptions:
        parts.append(_bullets("Assumptions in force", assumptions))
    return Group(*parts)


def migration_view(m: Migration) -> RenderableType:
    table = Table(title="Migration: now vs after", title_justify="left", header_style="bold")
    table.add_column("")
    table.add_column("Now")
    table.add_column("After", style="cyan")
    for what, now, after in migration_rows(m):
        table.add_row(what, now, after)
    facts = Text()
    facts.append("Savings: ", "bold").append(
        savings_text(m) + "\n", "green" if m.savings_usd_per_month else ""
    )
    perf = performance_lines(m)
    if perf:
        facts.append("Performance: ", "bold").append("; ".join(perf) + "\n")
    facts.append("Risk: ", "bold").append(m.risk, _RISK_STYLE[m.risk])
    facts.append((": " + "; ".join(m.risk_reasons)) if m.risk_reasons else "").append("\n")
    facts.append("Complexity: ", "bold").append(m.complexity, _RISK_STYLE[m.complexity])
    facts.append((": " + "; ".join(m.complexity_reasons)) if m.complexity_reasons else "").append("\n")
    facts.append("Verdict: ", "bold").append(m.verdict)
    return Group(table, facts)


def scenario_view(s: ScenarioResult, extra: Sequence[str] = ()) -> RenderableType:
    header = Text.assemble(
        (f"Scenario {s.name}", "bold magenta"), f"  {s.description}" if s.description else ""
    )
    if s.error is not None or s.recommendation is None:
        return Group(header, Text(f"Error: {s.error}", style="red"))
    parts: list[RenderableType] = [header]
    if s.migration is not None:
        parts.append(migration_view(s.migration))
    parts.append(recommendation_view(s.recommendation, extra))
    return Group(*parts)


def render_terminal(result: Result, *, assumptions: Sequence[str] = ()) -> RenderableType:
    """A rich renderable for ``result`` (print it with a rich ``Console``)."""
    if isinstance(result, Recommendation):
        return recommendation_view(result, assumptions)
    if isinstance(result, Migration):
        return Group(migration_view(result), recommendation_view(result.recommendation, assumptions))
    if isinstance(result, ScenarioResult):
        return scenario_view(result, assumptions)
    summary = Table(title=f"Scenario set {result.name}", title_justify="left", header_style="bold")
    for col in SET_COLUMNS:
        summary.add_column(col, overflow="fold")
    for s in result.results:
        row = scenario_set_row(s)
        summary.add_row(*row, style=_STATUS_STYLE.get(row[1], "yellow" if row[1] != "error" else "red"))
    # Assumptions are shared by the whole set: shown once, after the last scenario.
    views = [scenario_view(s) for s in result.results[:-1]]
    views += [scenario_view(s, assumptions) for s in result.results[-1:]]
    return Group(summary, *views)
