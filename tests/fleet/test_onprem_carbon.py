"""Own hardware and carbon (issue 22, item 10): `onprem` is a provider name, an owned site's TCO shows its
parts and break-even against the named best cloud alternative at the same load, and every plan states its
operational emissions per workload, each figure recomputed here from the shipped data by hand."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.errors import ConfigFileError, InputError
from gpufleet.fleet.carbon import country_grid, emissions_kg_per_month
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.refdata import carbon, pue_by_provider
from gpufleet.fleet.spec import fleet_from_dict
from gpufleet.report.fleet_report import summary_lines

SITE = {
    "name": "dc1",
    "region": "fra-dc1",
    "gpu": "L40S",
    "gpus_per_node": 4,
    "nodes": 1,
    "capex_usd_per_node": 60000,
    "depreciation_months": 48,
    "power_kw_per_node": 2.0,
    "pue": 1.4,
    "usd_per_kwh": 0.25,
    "ops_usd_per_node_per_month": 400,
    "country": "DE",
}


def _fleet(providers: list[str], *, site: dict[str, Any] | None = None, sites: bool = True) -> Any:
    return fleet_from_dict(
        {
            "name": "hybrid",
            "workloads": {
                "serve": {
                    "resources": {"gpus": ["L40S"], "gpus_per_replica": 1, "replicas": 4},
                    "demand": {"schedule": "24/7"},
                    "providers": providers,
                }
            },
            "on_prem": [site or SITE] if sites else [],
        }
    )


def test_onprem_is_a_provider_name() -> None:
    """`providers: [aws, onprem]` was refused as an unknown provider although docs/fleet.md names it."""
    p = plan_fleet(_fleet(["aws", "onprem"]), savings=False)
    assert p.status == "optimal" and not p.check_violations
    assert {ln.provider for ln in p.lines} == {"onprem"}
    with pytest.raises(InputError, match="declares none"):
        plan_fleet(_fleet(["aws", "onprem"], sites=False), savings=False)


def test_tco_parts_and_break_even_against_the_named_cloud_alternative() -> None:
    p = plan_fleet(_fleet(["aws", "onprem"]), savings=False)
    (t,) = p.on_prem_tco
    assert (t.workload, t.site, t.nodes, t.node_hours_per_month) == ("serve", "dc1", 1, 730.0)
    assert t.capex_usd == 60000 and t.capex_amortisation_usd_per_month == pytest.approx(60000 / 48)
    assert t.power_usd_per_month == pytest.approx(2.0 * 1.4 * 0.25 * 730)
    assert t.operations_usd_per_month == 400
    on_prem_cost = sum(ln.cost_usd_per_month for ln in p.lines if ln.pay_kind == "on_prem")
    assert t.total_usd_per_month == pytest.approx(on_prem_cost)  # the plan's own price of the site
    # the alternative: what the same load costs on the cloud alone (the aws-only plan, same demand)
    cloud = plan_fleet(_fleet(["aws"]), savings=False)
    assert t.cloud_alternative_usd_per_month == pytest.approx(cloud.cost_usd_per_month)
    (ln,) = [x for x in cloud.lines if x.pay_kind != "data_transfer"]
    assert t.cloud_alternative.startswith(f"{ln.provider}/{ln.region} {ln.instance_type} x {ln.nodes}")
    saving = cloud.cost_usd_per_month - t.power_usd_per_month - t.operations_usd_per_month
    assert t.break_even_months == pytest.approx(60000 / saving)
    line = next(x for x in summary_lines(p) if x.startswith("On-prem dc1"))
    assert "best cloud alternative at the same load" in line and "break-even" in line and "PUE 1.4" in line


def test_sunk_capex_and_a_site_dearer_to_run_than_the_cloud() -> None:
    sunk = plan_fleet(_fleet(["aws", "onprem"], site=SITE | {"capex_sunk": True}), savings=False)
    (t,) = sunk.on_prem_tco
    assert t.capex_usd == 0 and t.break_even_months == 0
    # providers [onprem] only: no cloud option to compare with, said so rather than a made-up figure
    alone = plan_fleet(_fleet(["onprem"]), savings=False)
    (t,) = alone.on_prem_tco
    assert t.cloud_alternative == "" and t.break_even_months is None and "no cloud option" in t.note


def test_emissions_by_hand_for_a_cloud_region() -> None:
    g, _year, _dataset = carbon()[("aws", "us-east-1")]
    pue = pue_by_provider()["aws"]
    tdp_kw = (get_spec("H100-SXM").tdp_w or 0) / 1000
    e = emissions_kg_per_month("aws", "us-east-1", "H100-SXM", 8, 730.0)
    assert e is not None and e.pue == pue == pytest.approx(1.135)
    assert e.kg_co2e_per_month == pytest.approx(tdp_kw * 8 * pue * 730 * g / 1000)
    assert e.energy_kwh_per_month == pytest.approx(tdp_kw * 8 * pue * 730)


def test_unknown_grid_is_unknown_not_zero_and_a_proxy_is_labelled() -> None:
    assert emissions_kg_per_month("nowhere", "atlantis-1", "H100-SXM", 8, 730.0) is None
    proxy = country_grid("DE")
    assert proxy is not None and "proxy" in proxy[1]
    de = sorted(g for (pv, rg), (g, _y, _d) in carbon().items() if _country(pv, rg) == "DE")
    assert proxy[0] == pytest.approx(
        de[len(de) // 2] if len(de) % 2 else (de[len(de) // 2 - 1] + de[len(de) // 2]) / 2
    )


def _country(provider: str, region: str) -> str:
    from gpufleet.fleet.refdata import region_info

    info = region_info(provider, region)
    return info.country.upper() if info else ""


def test_plan_emissions_per_workload_and_total() -> None:
    site = SITE | {"grid_gco2e_per_kwh": 350.0}
    p = plan_fleet(_fleet(["aws", "onprem"], site=site), savings=False)
    (w,) = p.emissions
    assert w.workload == "serve" and w.unknown_node_hours_per_month == 0
    assert w.kg_co2e_per_month == pytest.approx(2.0 * 1.4 * 730 * 350.0 / 1000)  # site power x PUE x grid
    assert p.emissions_kg_co2e_per_month == pytest.approx(w.kg_co2e_per_month)
    cloud = plan_fleet(_fleet(["aws"]), savings=False)
    (ln,) = [x for x in cloud.lines if x.pay_kind != "data_transfer"]
    e = emissions_kg_per_month(
        ln.provider, ln.region, ln.gpu, ln.gpus_per_node, ln.nodes * ln.hours_per_month
    )
    assert e is not None and cloud.emissions_kg_co2e_per_month == pytest.approx(e.kg_co2e_per_month)
    assert any(x.startswith("Emissions: ") and "kgCO2e/month" in x for x in summary_lines(cloud))


@pytest.mark.parametrize(
    ("drop", "value", "says"),
    [
        ("power_kw_per_node", None, "power_kw_per_node: Field required"),
        ("usd_per_kwh", None, "usd_per_kwh: Field required"),
        ("power_kw_per_node", 0, "power_kw_per_node = 0: Input should be greater than 0"),
        ("usd_per_kwh", 0.0, "usd_per_kwh = 0.0: Input should be greater than 0"),
    ],
)
def test_a_site_without_its_power_or_electricity_price_is_refused(drop: str, value: Any, says: str) -> None:
    """Both defaulted to 0: a site without them cost $0 of power and emitted 0 kgCO2e, a silent
    under-estimate of its TCO against the cloud; they are required and above 0."""
    site = {k: v for k, v in SITE.items() if k != drop}
    if value is not None:
        site[drop] = value
    with pytest.raises(ConfigFileError, match=re.escape(says)):
        _fleet(["onprem"], site=site)
