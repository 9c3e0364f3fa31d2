"""Review scenario: a service that runs 300 h/month asks for 1-year commitment prices. A commitment bills
all 730 h of the month; it pays only above its break-even utilisation, rate / on-demand rate. Before, the
answer ranked a GCP A100 pair at $2,552/month with only "commitment lock-in" as a risk, while the same nodes
on demand for the 300 h cost $1,457/month: an analyst would have bought a term that loses money."""

from __future__ import annotations

import math

import numpy as np

from gpufleet.catalog.offers import load_offers
from gpufleet.recommend.api import recommend
from gpufleet.recommend.types import Candidate, Recommendation
from gpufleet.units import HOURS_PER_MONTH


def _ask(hours: float) -> Recommendation:
    return recommend(
        model="llama-3.1-8b",
        target_requests_per_s=3,
        ttft_p95_ms=800,
        tpot_p95_ms=60,
        hours_per_month=hours,
        pricing="1y",
        providers=["gcp"],
        allow_unverified_commitments=True,
    )


def _on_demand_rate(c: Candidate) -> float:
    t = load_offers()
    m = (
        (t.column("provider") == c.provider)
        & (t.column("region") == c.region)
        & (t.column("instance_type") == c.instance_type)
    )
    rates = {float(x) for x in np.asarray(t.column("price_on_demand_usd_per_hour"))[m]}
    assert len(rates) == 1, rates
    return rates.pop()


def test_commitment_above_on_demand_at_the_schedule_is_said() -> None:
    r = _ask(300)
    assert r.status == "ok" and r.best is not None and r.best.price_kind == "commit_1y"
    b = r.best
    od = _on_demand_rate(b)
    break_even = b.price_usd_per_node_hour / od  # share of 730 h the workload must run
    assert break_even > 300 / HOURS_PER_MONTH
    od_month = od * b.total_nodes * 300  # the same nodes on demand for the hours they run
    assert b.cost_usd_per_month > od_month
    assert math.isclose(b.cost_usd_per_month, b.price_usd_per_node_hour * b.total_nodes * HOURS_PER_MONTH)
    note = r.notes[0]
    assert note.startswith("The 1-year commitment costs more than on demand at 300 h/month")
    assert f"${b.cost_usd_per_month:,.0f}/month billed for 730 h vs ${od_month:,.0f}/month on demand" in note
    assert f"break-even {break_even * HOURS_PER_MONTH:,.0f} h/month = {break_even:.0%} of 730 h" in note
    assert "costs more than on demand" in r.message  # in the headline, not only among the assumptions


def test_commitment_that_pays_states_its_saving_and_break_even() -> None:
    r = _ask(HOURS_PER_MONTH)
    assert r.best is not None
    b = r.best
    od = _on_demand_rate(b)
    saving = od * b.total_nodes * HOURS_PER_MONTH - b.cost_usd_per_month
    assert saving > 0
    note = next(n for n in r.notes if n.startswith("The 1-year commitment at 730 h/month"))
    assert f"saves ${saving:,.0f}/month" in note and "break-even" in note
    assert "costs more than on demand" not in r.message
