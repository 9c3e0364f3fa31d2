"""The terminal renderer returns rich renderables with every required column and section."""

from __future__ import annotations

import pytest
from rich.console import Console

from gpufleet.report import render_terminal
from gpufleet.report.common import cost_breakdown, risk_text

from . import samples


def _text(obj: object) -> str:
    c = Console(width=420, record=True, color_system=None)
    with c.capture() as cap:
        c.print(render_terminal(obj, assumptions=("spot aws: one interruption per 2.25 h",)))  # type: ignore[arg-type]
    return cap.get()


def test_recommendation_table_columns() -> None:
    out = _text(samples.recommendation())
    for header in (
        "Provider",
        "Region",
        "Instance",
        "GPUs",
        "Replicas",
        "Parallelism",
        "Memory (GiB used / per GPU)",
        "Capacity",
        "$/h",
        "/month",
        "Unit cost",
        "/1M tok at your load (5,000 tok/s)",
        "full capacity",
        "Host vCPU / RAM",
        "Provider class, fabric",
        "Price date",
        "Risk",
    ):
        assert header in out, header
    assert "5,000 (3,600-6,300)" in out and "spot capacity (interruptions)" in out
    assert "hyperscaler, TCP 2.5 Gb/s" in out and "2026-08-01 (121 d old)" in out and "4 vCPU / 32 GiB" in out
    assert "Assumptions in force" in out and "one interruption per 2.25 h" in out


def test_cannot_fit_explains_and_suggests() -> None:
    out = _text(samples.cannot_fit())
    assert "CANNOT FIT" in out and "812.0 GiB" in out and "Serve in fp8" in out


def test_migration_now_vs_after() -> None:
    out = _text(samples.migration())
    assert "Now" in out and "After" in out and "$14,220/month (88.7%)" in out
    assert "Risk: medium" in out and "Complexity: medium" in out and "throughput 0.33x" in out


def test_set_summary_and_scenarios() -> None:
    out = _text(samples.scenario_set())
    assert "Scenario set basic_demos" in out
    assert out.count("Scenario ") >= 4
    assert out.count("Assumptions in force") == 3  # each scenario's notes; extra lines only once
    assert out.count("one interruption per 2.25 h") == 1


def test_cost_breakdown_sums_and_splits_spot() -> None:
    parts = cost_breakdown(samples.SPOT, 730.0)
    assert sum(parts.values()) == samples.SPOT.cost_usd_per_month
    assert parts["spot risk overhead"] > 0  # 4 replicas provisioned for 3 needed


def test_cost_breakdown_idle_commitment() -> None:
    from dataclasses import replace

    c = replace(samples.A, price_kind="commit_1y")
    parts = cost_breakdown(c, 365.0)
    assert parts["idle commitment"] == c.cost_usd_per_month / 2
    # the report shows the engine's risk (gpufleet.recommend.risk), carried by the candidate
    c = replace(c, risk="medium", risk_reasons=("commitment lock-in (commit_1y)",))
    assert risk_text(c) == "medium: commitment lock-in (commit_1y)"


def test_migration_breakdown_uses_the_migration_totals() -> None:
    from dataclasses import replace

    from gpufleet.report.common import migration_breakdown

    m = replace(samples.migration(), new_cost_usd_per_month=905.2)  # e.g. training: same runs, not same hours
    after = migration_breakdown(m, after=True)
    assert sum(after.values()) == pytest.approx(905.2)
    assert after["spot risk overhead"] > 0
    assert sum(migration_breakdown(m, after=False).values()) == pytest.approx(m.current_cost_usd_per_month)
    assert migration_breakdown(replace(m, recommended=None, new_cost_usd_per_month=None), after=True) == {}


def test_risk_names_a_precision_fallback_from_the_typed_flag() -> None:
    from gpufleet.catalog.capabilities import fabric_for
    from gpufleet.recommend.risk import assess
    from gpufleet.recommend.workload import workload_from_dict

    w = workload_from_dict({"model": "llama-3.1-8b", "allow_fallback": True, "tier": "dev"})
    kw = dict(provider_class="hyperscaler", fabric=fabric_for("aws", "g4dn.xlarge", "T4"), nodes=1, gpu="T4",
              price_kind="on_demand", price_age_days=10.0, host_known=True, interval=None)  # fmt: skip
    level, reasons = assess(w, precision_fallback=True, **kw)  # type: ignore[arg-type]
    assert level == "high" and reasons[0].startswith("precision fallback")
    assert assess(w, precision_fallback=False, **kw)[0] == "low"  # type: ignore[arg-type]
