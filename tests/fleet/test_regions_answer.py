"""`gpufleet regions` answers "where should this run for these users and this data" (issue 22 item 6):
recommend's filters, a latency bound, ranking by total monthly cost incl. egress and transfer, carbon per
month on every row with a grid figure, per-region egress, and the data's own region always shown."""

from __future__ import annotations

import json
from functools import cache

import pytest

from cli.clirun import run_cli
from gpufleet.catalog.provider_class import provider_class
from gpufleet.catalog.regions import region_location
from gpufleet.catalog.specs import get_spec
from gpufleet.fleet.refdata import carbon, egress_tiers, priced_gib, pue_by_provider
from gpufleet.fleet.regions import RegionAnalysis, analyze_regions, grid_intensity
from gpufleet.recommend.workload import workload_from_dict
from gpufleet.units import GB, GIB

PARIS = (48.85, 2.35)
HYPERSCALERS = ("aws", "gcp", "azure")


@cache
def _paris(max_rtt_ms: float | None, limit: int = 10) -> RegionAnalysis:
    w = workload_from_dict({"model": "llama-3.1-8b", "target_requests_per_s": 2, "ttft_p95_ms": 500,
                            "tpot_p95_ms": 50, "name": "chat"})  # fmt: skip
    return analyze_regions([w], user_lat_lon=PARIS, data_provider="aws", data_region="eu-west-3",
                           data_size_gib=500, max_rtt_ms=max_rtt_ms, limit=limit)  # fmt: skip


def test_latency_bound_keeps_regions_near_the_users() -> None:
    a = _paris(50.0)
    ranked = [r for r in a.rows if r.rank is not None]
    assert len(ranked) >= 5
    assert all(r.rtt_ms is not None and r.rtt_ms <= 50.0 for r in ranked)
    # the bound is a latency, not a geo: Casablanca (oci af-casablanca-1, ~28 ms) is inside it
    near = [r for r in ranked if region_location(r.provider, r.region).geo in ("eu", "uk")]
    assert len(near) >= len(ranked) - 2
    assert any("within 50 ms RTT" in n for n in a.notes)


@pytest.mark.parametrize("bound", [None, 50.0])
def test_the_datas_region_is_always_shown_and_marked(bound: float | None) -> None:
    a = _paris(bound)
    data = [r for r in a.rows if r.is_data_region]
    assert len(data) == 1 and (data[0].provider, data[0].region) == ("aws", "eu-west-3")
    assert data[0].data_transfer_usd == 0.0  # the data does not move
    assert data[0].rank is not None
    if data[0].rank > 10:
        assert any(f"ranks #{data[0].rank}" in n for n in a.notes)


def test_ranked_by_total_monthly_cost_with_egress_and_transfer() -> None:
    a = _paris(50.0)
    ranked = [r for r in a.rows if r.rank is not None]
    assert [r.rank for r in ranked] == sorted(r.rank for r in ranked if r.rank is not None)
    totals = [r.total_usd_per_month for r in ranked]
    assert totals == sorted(totals)
    for r in ranked:
        parts = (
            r.on_demand_usd_per_month + (r.data_transfer_usd or 0.0) + (r.serving_egress_usd_per_month or 0.0)
        )
        assert r.total_usd_per_month == pytest.approx(parts)
        if r.provider != "aws":  # the data leaves AWS to the internet: AWS's first internet tier [USD/GB]
            assert r.data_transfer_usd == pytest.approx(500 * GIB / GB * 0.09)


def test_carbon_per_month_on_every_row_with_a_grid_figure_by_hand() -> None:
    a = _paris(None, limit=60)
    assert any(r.provider in HYPERSCALERS for r in a.rows)
    with_carbon = 0
    for r in a.rows:
        if r.provider in HYPERSCALERS and (r.provider, r.region) in carbon():
            assert r.carbon_gco2e_per_kwh == carbon()[(r.provider, r.region)][0]
        grid = grid_intensity(r.provider, r.region)
        if grid is None:
            assert r.carbon_gco2e_per_kwh is None and r.carbon_gco2e_per_month is None
            continue
        tdp = get_spec(r.gpu).tdp_w
        if not tdp:
            assert r.carbon_gco2e_per_month is None
            continue
        pue = pue_by_provider().get(r.provider, pue_by_provider()["unknown (industry average)"])
        kwh = r.gpus * tdp * 730.0 / 1000.0 * pue  # GPUs x TDP [W] x 730 h / 1000 Wh per kWh x PUE
        assert r.energy_kwh_per_month == pytest.approx(kwh)
        assert r.carbon_gco2e_per_month == pytest.approx(kwh * grid[0])
        with_carbon += 1
    assert with_carbon >= 10


def test_country_factor_for_a_host_outside_the_clouds() -> None:
    hit = grid_intensity("hyperstack", "NORWAY-1")  # CCF's Norway factor, as for azure norwayeast
    assert hit is not None and hit[0] == pytest.approx(7.62) and "NO" in hit[1]
    assert grid_intensity("runpod", "US") is None  # US grids are NERC sub-regions: no country figure


def test_serving_egress_is_priced_per_region() -> None:
    w = workload_from_dict(
        {"model": "llama-3.1-8b", "target_requests_per_s": 2, "name": "c", "providers": ["aws"]}
    )
    a = analyze_regions([w], serving_egress_gib_per_month=1000.0, limit=200)
    aws = {r.region: r.serving_egress_usd_per_month for r in a.rows}
    assert aws["us-east-1"] == pytest.approx(1000.0 * GIB / GB * 0.09)
    pricier = [reg for reg in ("ap-south-1", "ap-northeast-1", "sa-east-1", "ap-southeast-2") if reg in aws]
    assert pricier
    for reg in pricier:
        hand = priced_gib(egress_tiers("aws", "internet_out", reg), 1000.0)
        assert aws[reg] == pytest.approx(hand) and hand > aws["us-east-1"]  # type: ignore[operator]


def test_serving_egress_estimated_from_the_target() -> None:
    w = workload_from_dict({"model": "llama-3.1-8b", "target_requests_per_s": 2, "name": "c",
                            "providers": ["aws"], "regions": ["us-east-1"]})  # fmt: skip
    a = analyze_regions([w], limit=5)
    gib = 2 * 256 * 730 * 3600 * 4 / GIB  # req/s x output tokens x h x s/h x 4 B/token
    (row,) = a.rows
    assert row.serving_egress_usd_per_month == pytest.approx(gib * GIB / GB * 0.09)
    assert any("estimated at 5.0 GiB/month" in n for n in a.notes)


def _cli_rows(*extra: str) -> list[dict[str, object]]:
    r = run_cli(
        "regions", "--model", "llama-3.1-8b", "--target-rps", "2", "--limit", "30", "-f", "json", *extra
    )
    assert r.exit_code == 0, r.output
    rows: list[dict[str, object]] = json.loads(r.output)["result"]["rows"]
    assert rows
    return rows


def test_recommends_filters_apply() -> None:
    assert {region_location(str(r["provider"]), str(r["region"])).geo for r in _cli_rows("--geo", "eu")} == {
        "eu"
    }
    assert {provider_class(str(r["provider"])) for r in _cli_rows("--provider-class", "hyperscaler")} == {
        "hyperscaler"
    }
    assert {str(r["gpu"]) for r in _cli_rows("--gpu", "L4")} == {"L4"}
    prod = _cli_rows("--tier", "production")
    assert all(provider_class(str(r["provider"])) != "marketplace" for r in prod)


def test_latency_bound_needs_a_user_location() -> None:
    r = run_cli("regions", "--model", "llama-3.1-8b", "--target-rps", "2", "--max-rtt-ms", "50")
    assert r.exit_code == 2 and "--user-lat" in r.output
