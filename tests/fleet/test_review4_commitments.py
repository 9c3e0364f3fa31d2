"""Fourth review (2026-11-29): would I sign this commitment?

A diurnal L4 service (6 replicas at peak, half at night, production N+1) on GCP us-central1, with the shipped
table rates (opt-in). Recomputed by hand from the fleet file and the catalog:

* replicas per hour = ceil(fraction x 6) + 1 spare: 4 nodes run 24 h a day, the 5th 14 h, the 6th 12 h, the
  7th 8 h (730 h, 425.8 h, 365 h, 243.3 h a month);
* 3-year term (lifetime 36 months): the GCP resource CUD 55 % -> rate 0.45 x on-demand; a block commits when
  0.45 <= 0.8 x its use: the 4 base nodes (100 %) and the 5th (58.3 %: 0.45 <= 0.467), not the 6th (50 %)
  nor the 7th (33 %). The peak is never committed;
* the lock-in the engineer signs: 5 x rate x 730 h x 36 months, owed whatever the use, and the committed
  node-hours may fall 1 - 0.45 / ((4 x 730 + 425.8) / 3650) = 51 % before the term costs more than on-demand;
* a fleet that moves to a newer GPU generation within 12 months (lifetime 12): no 3-year term; the GCP
  flexible 1-year CUD (28 %: rate 0.72 x on-demand) commits only blocks used >= 0.72 / 0.8 = 90 %: the 4 base
  nodes.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gpufleet.catalog.offers import load_offers
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.types import FleetPlan
from gpufleet.units import HOURS_PER_MONTH

FLEET = """
name: commit-review
workloads:
  chat:
    team: ml
    resources: {gpus: [L4], gpus_per_replica: 1, replicas: 6, tier: production}
    demand: {hourly: [0.5,0.5,0.5,0.5,0.5,0.5,0.6,0.7,0.8,0.9,1,1,1,1,1,1,0.9,0.8,0.7,0.6,0.5,0.5,0.5,0.5]}
    providers: [gcp]
    regions: [us-central1]
    lifetime_months: LIFETIME
constraints:
  commitment_terms: [1y, 3y]
  allow_unverified_commitments: true
"""


def _plan(tmp_path: Path, lifetime: int) -> FleetPlan:
    p = tmp_path / f"commit{lifetime}.yaml"
    p.write_text(FLEET.replace("LIFETIME", str(lifetime)))
    plan = plan_fleet(p, savings=False)
    assert plan.status == "optimal", plan.message
    return plan


def _g2_on_demand() -> float:
    rows = [
        r
        for r in load_offers().records()
        if r.provider == "gcp" and r.region == "us-central1" and r.instance_type == "g2-standard-4"
    ]
    assert rows
    return min(r.price_on_demand_usd_per_hour for r in rows)


def test_three_year_term_commits_the_base_not_the_peak_and_states_the_lock_in(tmp_path: Path) -> None:
    plan = _plan(tmp_path, 36)
    (nc,) = plan.new_commitments
    od = _g2_on_demand()
    rate = 0.45 * od  # 55 % resource-based CUD (table ceiling)
    day = HOURS_PER_MONTH / 24
    assert (
        nc.term == "3y" and nc.nodes == 5
    )  # 4 base + the 14 h/day node; the 12 h and 8 h nodes stay on demand
    assert nc.rate_usd_per_hour == pytest.approx(rate, rel=1e-9)
    used = 4 * HOURS_PER_MONTH + 14 * day
    assert nc.expected_utilisation == pytest.approx(used / (5 * HOURS_PER_MONTH), rel=1e-9)
    assert nc.term_obligation_usd == pytest.approx(5 * rate * HOURS_PER_MONTH * 36, rel=1e-9)
    tolerated = 1 - 0.45 / (used / (5 * HOURS_PER_MONTH))
    assert nc.use_drop_tolerated_fraction == pytest.approx(tolerated, rel=1e-9)
    assert math.isclose(tolerated, 0.509, abs_tol=0.001)
    on_demand_kinds = sorted(ln.hours_per_month for ln in plan.lines if ln.pay_kind == "on_demand")
    assert on_demand_kinds == pytest.approx([8 * day, 12 * day])  # the peak's nodes pay by the hour


def test_the_terminal_line_names_the_obligation_and_the_tolerated_fall(tmp_path: Path) -> None:
    from gpufleet.report.fleet_report import summary_lines

    text = " ".join(summary_lines(_plan(tmp_path, 36)))
    assert "owed over the 36 months whatever the use" in text
    assert "falls more than 51%" in text


def test_a_fleet_moving_to_a_new_generation_in_a_year_buys_no_three_year_term(tmp_path: Path) -> None:
    plan = _plan(tmp_path, 12)
    (nc,) = plan.new_commitments
    assert nc.term == "1y" and nc.nodes == 4  # 0.72 <= 0.8 x use only for the 24 h/day base
    assert nc.rate_usd_per_hour == pytest.approx(0.72 * _g2_on_demand(), rel=1e-9)
    assert nc.term_obligation_usd == pytest.approx(4 * nc.rate_usd_per_hour * HOURS_PER_MONTH * 12, rel=1e-9)
    assert nc.use_drop_tolerated_fraction == pytest.approx(0.28, rel=1e-9)
