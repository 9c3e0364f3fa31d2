"""Row data shared by the Markdown, HTML and terminal renderers for migrations and scenario sets."""

from __future__ import annotations

from gpufleet.recommend.types import Candidate, Migration, ScenarioResult
from gpufleet.report.common import (
    STATUS_TITLES,
    candidate_label,
    pct,
    ratio_text,
    speed_text,
    unit_cost_text,
    usd,
)


def migration_rows(m: Migration) -> list[tuple[str, str, str]]:
    """(what, now, after) rows of the now-vs-after table."""
    after: Candidate | None = m.recommended

    def cell(c: Candidate | None, text: str) -> str:
        return text if c is not None else "(stay)"

    rows = [
        ("Deployment", candidate_label(m.current), cell(after, candidate_label(after) if after else "")),
        (
            "GPUs",
            f"{m.current.total_gpus} x {m.current.gpu}",
            cell(after, f"{after.total_gpus} x {after.gpu}" if after else ""),
        ),
        ("Pricing", m.current.price_kind, cell(after, after.price_kind if after else "")),
        (
            "Cost [USD/month]" + (" (today's runs/month)" if m.workload.is_training else ""),
            usd(m.current_cost_usd_per_month),
            usd(m.new_cost_usd_per_month),
        ),
        (
            "Time to train" if m.workload.is_training else "Capacity at the SLO batch (p10-p90)",
            speed_text(m.current),
            cell(after, speed_text(after) if after else ""),
        ),
        (
            "Unit cost [USD/1M output tok: $/month ÷ tokens/month]"
            if not m.workload.is_training
            else "Unit cost",
            unit_cost_text(m.current),
            cell(after, unit_cost_text(after) if after else ""),
        ),
    ]
    return rows


def savings_text(m: Migration) -> str:
    extra = m.cost_change_to_meet_usd_per_month
    if extra is not None:
        return (
            f"none: the current deployment misses the workload, so the two do not meet the same SLOs; "
            f"meeting it costs {usd(abs(extra))}/month {'more' if extra >= 0 else 'less'}"
        )
    if m.savings_usd_per_month is None:
        return "none (nothing beats the current deployment)"
    return f"{usd(m.savings_usd_per_month)}/month ({pct(m.savings_pct)})"


def performance_lines(m: Migration) -> list[str]:
    p = m.performance
    if p is None:
        return []
    lines = []
    if p.throughput_ratio is not None:
        lines.append(f"throughput {ratio_text(p.throughput_ratio, higher_is_better=True)}")
    if p.ttft_ratio is not None:
        lines.append(f"TTFT {ratio_text(p.ttft_ratio, higher_is_better=False)}")
    if p.tpot_ratio is not None:
        lines.append(f"TPOT {ratio_text(p.tpot_ratio, higher_is_better=False)}")
    if p.time_to_train_ratio is not None:
        lines.append(f"time to train {ratio_text(p.time_to_train_ratio, higher_is_better=False)}")
    return lines


#: "Cost" is the migration's "after" cost where the scenario has a current deployment (for training: the
#: same runs per month as today), else the best candidate's monthly cost
SET_COLUMNS: tuple[str, ...] = (
    "Scenario",
    "Status",
    "Best option",
    "Cost [USD/month]",
    "Savings [USD/month]",
)


def scenario_set_row(s: ScenarioResult) -> tuple[str, str, str, str, str]:
    """One row of the scenario-set summary table."""
    if s.error is not None or s.recommendation is None:
        return (s.name, "error", s.error or "no result", "-", "-")
    rec = s.recommendation
    best = rec.best
    label = candidate_label(best) if best is not None else STATUS_TITLES.get(rec.status, rec.status)
    cost = usd(best.cost_usd_per_month) if best is not None else "-"
    savings = "-"
    if s.migration is not None and s.migration.new_cost_usd_per_month is not None:
        cost = usd(s.migration.new_cost_usd_per_month)  # same runs/schedule as today (see Migration)
    if s.migration is not None and s.migration.savings_usd_per_month is not None:
        savings = f"{usd(s.migration.savings_usd_per_month)} ({pct(s.migration.savings_pct)})"
    elif s.migration is not None and s.migration.cost_change_to_meet_usd_per_month is not None:
        savings = "none (today misses the workload)"
    return (s.name, rec.status, label, cost, savings)
