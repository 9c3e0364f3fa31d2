"""Commitments only where they are sourced and pay (issue 22, item 2).

* no lifetime given -> no new commitment; * a table rate without a per-offer source (every shipped one) is
used only on the fleet's opt-in, and the plan says so; * a term is bought only where it costs at most
(1 - margin) x on-demand at the expected use; * every new commitment shows its rate, source, break-even and
on-demand alternative, recomputed here by hand; * no example fleet buys an unverified or unprofitable one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpufleet.catalog.pricing import CommitmentAssumption, CommitmentAssumptions, commitments_in_force
from gpufleet.cost.commitment import break_even_months, commitment_pays
from gpufleet.fleet.commitments import commitment_violations
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.spec import fleet_from_dict, read_fleet_file
from gpufleet.fleet.types import Fleet, FleetPlan
from gpufleet.report.fleet_report import summary_lines
from gpufleet.units import HOURS_PER_MONTH

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleets"


def _fleet(demand: dict[str, object], *, lifetime: float | None = 36.0, **constraints: object) -> Fleet:
    entry: dict[str, object] = {
        "resources": {"gpus": ["T4"], "gpus_per_replica": 1, "replicas": 2},
        "demand": demand,
        "providers": ["azure"],
        "regions": ["eastus"],
    }
    if lifetime is not None:
        entry["lifetime_months"] = lifetime
    return fleet_from_dict({"name": "t", "workloads": {"svc": entry}, "constraints": dict(constraints)})


def _verified(discount: float) -> CommitmentAssumptions:
    """A user's own (verified) 3-year Azure rate, the only commitment rate in force."""
    row = CommitmentAssumption(
        provider="azure",
        program="reserved",
        term_years=3,
        discount_fraction=discount,
        source="our quote",
        verified=True,
        note="",
        origin="test",
    )
    return CommitmentAssumptions(rows=(row,))


def _plan(f: Fleet, a: CommitmentAssumptions | None = None) -> FleetPlan:
    if a is None:
        return plan_fleet(f, savings=False)
    with commitments_in_force(a):
        return plan_fleet(f, savings=False)


def test_no_lifetime_no_commitment() -> None:
    """lifetime_months used to default to 36, so every workload qualified for a 3-year term."""
    f = _fleet({"schedule": "24/7"}, lifetime=None)
    assert f.workloads[0].lifetime_months is None
    p = _plan(f, _verified(0.5))
    assert p.status == "optimal" and not p.new_commitments
    assert {ln.pay_kind for ln in p.lines} == {"on_demand"}
    assert any("No lifetime_months given" in n and "svc" in n for n in p.notes)
    assert _plan(_fleet({"schedule": "24/7"}), _verified(0.5)).new_commitments  # given: it commits


def test_unverified_rates_need_the_opt_in_and_are_labelled() -> None:
    """The shipped AWS/Azure/GCP rates are 'up to' ceilings: no commitment without the opt-in."""
    plain = _plan(_fleet({"schedule": "24/7"}))
    assert plain.status == "optimal" and not plain.new_commitments
    opted = _plan(_fleet({"schedule": "24/7"}, allow_unverified_commitments=True))
    assert opted.status == "optimal" and opted.new_commitments
    for nc in opted.new_commitments:
        assert not nc.rate_verified and nc.rate_basis == "table" and "up to" in nc.rate_source
    assert not opted.check_violations
    text = "\n".join(summary_lines(opted))
    assert "UNVERIFIED" in text and "allow_unverified_commitments" in text
    assert any("unverified table rates" in n and "ARE used" in n for n in opted.notes)


def test_margin_refuses_a_term_that_barely_pays() -> None:
    """At 50 % off, a term breaks even at 50 % use; with the 20 % margin it needs >= 62.5 % expected use:
    15 h/day x 30 days = 450 h (61.6 %) commits nothing, 16 h/day (65.8 %) commits."""
    a = _verified(0.5)
    low = _plan(_fleet({"hours_per_day": 15, "days_per_month": 30}), a)
    assert low.status == "optimal" and not low.new_commitments
    high = _plan(_fleet({"hours_per_day": 16, "days_per_month": 30}), a)
    assert high.status == "optimal" and len(high.new_commitments) == 1
    # without the margin the 450-hour workload commits (the old rule: any use above break-even)
    no_margin = _plan(_fleet({"hours_per_day": 15, "days_per_month": 30}, commitment_margin_fraction=0.0), a)
    assert no_margin.new_commitments
    assert not commitment_pays(0.5, 1.0, 450.0) and commitment_pays(0.5, 1.0, 480.0)


def test_each_commitment_states_why_it_pays() -> None:
    p = _plan(_fleet({"hours_per_day": 16, "days_per_month": 30}), _verified(0.5))
    (nc,) = p.new_commitments
    lines = [ln for ln in p.lines if ln.pay_kind == "commit_3y"]
    od = lines[0].list_unit_price_usd_per_hour
    used = sum(ln.nodes * ln.hours_per_month for ln in lines)
    assert nc.rate_verified and nc.rate_basis == "table"
    assert nc.rate_source == "our quote (override file test)"
    assert nc.rate_program == "reserved" and nc.term == "3y" and nc.term_months == 36
    assert nc.rate_usd_per_hour == pytest.approx(od * 0.5)
    assert nc.discount_fraction == pytest.approx(0.5)
    assert nc.used_node_hours_per_month == pytest.approx(used) == pytest.approx(2 * 16 * 30)
    assert nc.expected_utilisation == pytest.approx(used / (nc.nodes * HOURS_PER_MONTH))
    assert nc.break_even_utilisation == pytest.approx(0.5)
    # the whole 36-month term (730 h x rate) is paid back by on-demand savings after 36 x 0.5 / util months
    assert nc.break_even_months == pytest.approx(36 * 0.5 * HOURS_PER_MONTH / 480)
    assert nc.break_even_months == pytest.approx(break_even_months(od * 0.5, od, 480.0, 36.0))
    assert nc.on_demand_usd_per_month == pytest.approx(od * used)
    assert nc.usd_per_month == pytest.approx(nc.nodes * od * 0.5 * HOURS_PER_MONTH)
    assert nc.usd_per_month < 0.8 * nc.on_demand_usd_per_month
    assert nc.margin_fraction == pytest.approx(0.2)
    line = next(x for x in summary_lines(p) if x.startswith("New commitment"))
    assert "our quote" in line and "break-even 50%" in line and "pays back after 27.4 of 36 months" in line


def test_checker_flags_an_unverified_or_unprofitable_commitment() -> None:
    p = _plan(_fleet({"hours_per_day": 16, "days_per_month": 30}), _verified(0.5))
    f = _fleet({"hours_per_day": 16, "days_per_month": 30})
    (nc,) = p.new_commitments
    assert commitment_violations(f, p.new_commitments) == []
    bad = commitment_violations(f, (replace(nc, rate_verified=False),))
    assert bad and "unverified" in bad[0]
    bad = commitment_violations(f, (replace(nc, expected_utilisation=0.55),))
    assert bad and "break-even utilisation" in bad[0]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*.yaml")))
def test_examples_buy_no_unverified_or_unprofitable_commitment(name: str) -> None:
    """`make demo` moved production to T4s on a 3-year Azure term priced at the 72 % marketing ceiling."""
    f = read_fleet_file(EXAMPLES / name)
    p = plan_fleet(f, savings=False)
    assert p.status in ("optimal", "feasible"), p.message
    assert commitment_violations(f, p.new_commitments) == []
    for nc in p.new_commitments:
        assert nc.rate_verified or f.constraints.allow_unverified_commitments
        assert (
            nc.break_even_utilisation
            <= (1 - f.constraints.commitment_margin_fraction) * (nc.expected_utilisation) + 1e-9
        )
