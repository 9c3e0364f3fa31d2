"""Render a :class:`ValidationReport` as a rich table, JSON or the Markdown table quoted in the README."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

    from gpufleet.estimate.validate import ValidationReport, ValidationRow, ValidationSummary


def fmt_num(x: float | None, digits: int = 4) -> str:
    """A number with ``digits`` significant digits (no exponent below 1e7); an em dash for None."""
    if x is None:
        return "—"
    if x != 0 and (abs(x) >= 1e7 or abs(x) < 1e-3):
        return f"{x:.{digits - 1}e}"
    return f"{x:,.{digits}g}" if abs(x) < 10**digits else f"{x:,.0f}"


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:+.1f}%"


def _share(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.0f}%"


def row_cells(r: ValidationRow) -> list[str]:
    """case, metric, measured, predicted, p10–p90, error, ratio, in interval (or the reason)."""
    if r.predicted is None:
        return [r.case_id, r.metric, f"{fmt_num(r.measured)} {r.unit}", "not predicted", "", "", "",
                r.reason or ""]  # fmt: skip
    return [
        r.case_id,
        r.metric,
        f"{fmt_num(r.measured)} {r.unit}",
        fmt_num(r.predicted),
        f"{fmt_num(r.p10)}–{fmt_num(r.p90)}",
        _pct(r.error_pct),
        f"{r.ratio:.2f}×" if r.ratio is not None else "—",
        "yes" if r.in_interval else "no",
    ]


HEADERS = ["case", "metric", "measured", "predicted", "p10–p90", "error", "ratio", "in p10–p90"]


def summary_items(s: ValidationSummary) -> list[tuple[str, str]]:
    return [
        ("cases", str(s.cases)),
        ("predicted (coverage)", f"{s.predicted} ({_share(s.coverage)})"),
        ("median |error|", "—" if s.median_ape_pct is None else f"{s.median_ape_pct:.1f}%"),
        ("p90 |error|", "—" if s.p90_ape_pct is None else f"{s.p90_ape_pct:.1f}%"),
        ("within 2×", _share(s.share_within_2x)),
        ("measured inside p10–p90", _share(s.interval_coverage)),
    ]


def render_tables(report: ValidationReport) -> list[Table]:
    from rich.table import Table

    cases = Table(title="Estimator vs measured", title_justify="left")
    for h in HEADERS:
        cases.add_column(h, justify="left" if h in ("case", "metric", "in p10–p90") else "right")
    for r in report.rows:
        cases.add_row(*row_cells(r))
    summary = Table(title="Summary", title_justify="left")
    summary.add_column("metric")
    for label, _ in summary_items(report.summary):
        summary.add_column(label, justify="right")
    summary.add_row("all", *(v for _, v in summary_items(report.summary)))
    for metric, s in report.by_metric.items():
        summary.add_row(metric, *(v for _, v in summary_items(s)))
    return [cases, summary]


def _md_row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def render_markdown(report: ValidationReport) -> str:
    lines = [_md_row(HEADERS), _md_row(["---"] * len(HEADERS))]
    lines += [_md_row(row_cells(r)) for r in report.rows]
    items = summary_items(report.summary)
    lines += ["", _md_row(["metric"] + [k for k, _ in items]), _md_row(["---"] * (len(items) + 1))]
    lines.append(_md_row(["**all**"] + [v for _, v in items]))
    for metric, s in report.by_metric.items():
        lines.append(_md_row([metric] + [v for _, v in summary_items(s)]))
    return "\n".join(lines) + "\n"


def report_json(report: ValidationReport) -> dict[str, Any]:
    """``{"summary": {...}, "cases": [{...}, ...]}`` with the dataclass field names as keys."""
    from gpufleet.report.json_report import envelope

    return envelope("validation", summary=report.summary, cases=list(report.rows))


def render_json(report: ValidationReport) -> str:
    return json.dumps(report_json(report), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
