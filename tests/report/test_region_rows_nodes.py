"""Review 3: the regions table priced a placement of 13 instances ("seeweb it-fr2 ECS1GPU11 $2,752/month")
but showed only the instance type, so the engineer could not tell the monthly figure was for 13 A30s. The
cell now says how many instances and GPUs the figures are for."""

from __future__ import annotations

from gpufleet.fleet.regions import analyze_regions
from gpufleet.recommend.api import as_workload
from gpufleet.report.fleet_report import REGION_COLUMNS, region_rows


def test_region_row_names_the_instances_and_gpus_priced() -> None:
    w = as_workload(
        None,
        model="llama-3.1-8b",
        task="inference",
        target_rps=20,
        input_len=1000,
        output_len=300,
        geo="eu",
    )
    a = analyze_regions([w], limit=5)
    col = REGION_COLUMNS.index("Nodes x instance (GPUs)")
    for r, row in zip(a.rows, region_rows(a), strict=True):
        assert row[col] == f"{r.nodes} x {r.instance_type} ({r.gpus:g} {r.gpu})"
    assert any(r.nodes > 1 for r in a.rows)


def test_total_with_unpriced_egress_is_a_lower_bound() -> None:
    """Review 3: with 50 TB/month served, rows of providers with no sourced egress price showed a total
    with that egress at $0 ("$2,752") beside priced rows paying thousands for it; such a total is now
    written as a lower bound (">= $2,752"), a priced one as before."""
    w = as_workload(
        None, model="llama-3.1-8b", task="inference", target_rps=20, input_len=1000, output_len=300, geo="eu"
    )
    a = analyze_regions([w], limit=40, serving_egress_gib_per_month=50_000)
    col = REGION_COLUMNS.index("Total $/month")
    rows = region_rows(a)
    unpriced = [row for r, row in zip(a.rows, rows, strict=True) if r.egress_usd_per_month is None]
    priced = [(r, row) for r, row in zip(a.rows, rows, strict=True) if r.egress_usd_per_month is not None]
    assert unpriced and priced
    assert all(row[col].startswith(">= $") for row in unpriced)
    for r, row in priced:
        assert not row[col].startswith(">=")
        assert r.total_usd_per_month >= r.on_demand_usd_per_month + (r.egress_usd_per_month or 0.0) - 1e-6
