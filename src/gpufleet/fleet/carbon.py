"""Operational emissions [kgCO2e/month] of GPU capacity, from the shipped grid-carbon and PUE data.

kgCO2e/month = IT power [kW] x PUE x hours/month x grid intensity [gCO2e/kWh] / 1000, where

* IT power of a cloud node = the GPU's board power (``tdp_w`` of gpu_specs.csv, the vendor datasheet
  figure) x GPUs per node: the GPUs at full power, host CPU, memory and network not counted (the GPUs
  dominate a GPU node's draw; stated on every answer);
* an on-prem node's IT power is the site's own ``power_kw_per_node`` and its PUE the site's ``pue``;
* PUE of a cloud provider: ``fleet/data/pue.csv`` (Cloud Carbon Footprint fleet averages first, then Green
  Algorithms provider defaults; :func:`gpufleet.fleet.refdata.pue_by_provider`);
* grid intensity per cloud region: ``fleet/data/carbon_intensity.csv`` (Google's newest year for GCP, Green
  Algorithms for Azure, Cloud Carbon Footprint otherwise; :func:`gpufleet.fleet.refdata.carbon`); an on-prem
  site's from its ``grid_gco2e_per_kwh`` when given.

A region or site without a figure of its own takes the median of the shipped cloud regions in its country
(regions.csv; the same national grid), labelled "proxy"; one in a country without any (or with no known
country) has no emissions figure: it is reported as unknown, never as zero.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cache

from gpufleet.fleet.types import OnPremSite, PlanLine, WorkloadEmissions

#: the basis stated with every cloud figure
CLOUD_BASIS = (
    "GPU board power (TDP, gpu_specs.csv) x GPUs x PUE (pue.csv) x grid intensity (carbon_intensity.csv); "
    "host not counted"
)
ONPREM_BASIS = "site power_kw_per_node x site PUE x site grid intensity"


@dataclass(frozen=True, slots=True, kw_only=True)
class Emissions:
    """Operational emissions of some node-hours in one place."""

    kg_co2e_per_month: float
    energy_kwh_per_month: float  # facility energy (IT x PUE)
    it_power_kw_per_node: float
    pue: float
    grid_gco2e_per_kwh: float
    grid_source: str  # dataset and year of the grid figure
    basis: str


def emissions_kg_per_month(
    provider: str,
    region: str,
    gpu: str,
    gpus_per_node: float,
    node_hours_per_month: float,
    *,
    it_power_kw_per_node: float | None = None,
    pue: float | None = None,
    grid_gco2e_per_kwh: float | None = None,
) -> Emissions | None:
    """Emissions of ``node_hours_per_month`` node-hours of ``gpus_per_node`` x ``gpu`` in provider/region;
    None where the grid intensity (or the GPU's power) is unknown. Keyword overrides replace the shipped
    figures (an on-prem site's own power, PUE and grid)."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.errors import GpufleetError
    from gpufleet.fleet.refdata import carbon, pue_by_provider

    grid_source = "given"
    if grid_gco2e_per_kwh is None:
        found = carbon().get((provider, region))
        if found is not None:
            grid_gco2e_per_kwh, year, dataset = found
            grid_source = f"{dataset} {year}"
        else:  # a region without its own figure: the national grid of its country, labelled as a proxy
            from gpufleet.fleet.refdata import region_info

            info = region_info(provider, region)
            proxy = country_grid(info.country) if info is not None and info.country else None
            if proxy is None:
                return None
            grid_gco2e_per_kwh, grid_source = proxy
    basis = ONPREM_BASIS if it_power_kw_per_node is not None else CLOUD_BASIS
    if it_power_kw_per_node is None:
        try:
            tdp_w = get_spec(gpu).tdp_w if gpu else None
        except GpufleetError:
            tdp_w = None
        if not tdp_w:
            return None
        it_power_kw_per_node = tdp_w * gpus_per_node / 1000.0
    if pue is None:
        table = pue_by_provider()
        pue = table.get(provider, table.get("unknown (industry average)", 1.56))
    energy = it_power_kw_per_node * pue * node_hours_per_month
    return Emissions(
        kg_co2e_per_month=energy * grid_gco2e_per_kwh / 1000.0,
        energy_kwh_per_month=energy,
        it_power_kw_per_node=it_power_kw_per_node,
        pue=pue,
        grid_gco2e_per_kwh=grid_gco2e_per_kwh,
        grid_source=grid_source,
        basis=basis,
    )


@cache
def country_grid(country: str) -> tuple[float, str] | None:
    """(median gCO2e/kWh, source) of the shipped cloud regions in ``country`` (ISO code), a proxy for a site
    on the same national grid that gives no figure of its own; None where no shipped region is there."""
    from gpufleet.fleet.refdata import carbon, region_info

    found = []
    for (provider, region), (g, year, dataset) in carbon().items():
        info = region_info(provider, region)
        if info is not None and info.country.upper() == country.upper():
            found.append((g, f"{provider}/{region} {dataset} {year}"))
    if not found:
        return None
    values = sorted(g for g, _ in found)
    mid = len(values) // 2
    median = values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2
    return median, f"proxy: median of {len(found)} shipped cloud regions in {country.upper()}"


def line_emissions(ln: PlanLine, sites: Iterable[OnPremSite]) -> Emissions | None:
    """Emissions of one plan line (its nodes x the hours they run)."""
    node_hours = ln.nodes * ln.hours_per_month
    if ln.pay_kind == "on_prem":
        site = next((s for s in sites if s.name == ln.instance_type), None)
        if site is None:
            return None
        grid, source = site.grid_gco2e_per_kwh, "fleet file grid_gco2e_per_kwh"
        if grid is None and site.country:
            proxy = country_grid(site.country)
            if proxy is not None:
                grid, source = proxy
        if grid is None:
            return None
        e = emissions_kg_per_month(
            ln.provider,
            ln.region,
            ln.gpu,
            ln.gpus_per_node,
            node_hours,
            it_power_kw_per_node=site.power_kw_per_node,
            pue=site.pue,
            grid_gco2e_per_kwh=grid,
        )
        return None if e is None else replace(e, grid_source=source)
    return emissions_kg_per_month(ln.provider, ln.region, ln.gpu, ln.gpus_per_node, node_hours)


def plan_emissions(
    lines: Sequence[PlanLine], sites: Sequence[OnPremSite]
) -> tuple[tuple[WorkloadEmissions, ...], float | None]:
    """Per workload and for the whole plan [kgCO2e/month]; the total is None when no line has a figure."""
    kg: dict[str, float] = defaultdict(float)
    kwh: dict[str, float] = defaultdict(float)
    unknown: dict[str, float] = defaultdict(float)
    known: set[str] = set()
    places: dict[str, list[str]] = defaultdict(list)
    bases: dict[str, set[str]] = defaultdict(set)
    order: list[str] = []
    for ln in lines:
        if ln.pay_kind == "data_transfer" or ln.nodes <= 0 or not ln.gpu:
            continue
        if ln.workload not in order:
            order.append(ln.workload)
        e = line_emissions(ln, sites)
        where = f"{ln.provider}/{ln.region}"
        if e is None:
            unknown[ln.workload] += ln.nodes * ln.hours_per_month
            label = f"{where} (no grid figure)"
        else:
            known.add(ln.workload)
            kg[ln.workload] += e.kg_co2e_per_month
            kwh[ln.workload] += e.energy_kwh_per_month
            bases[ln.workload].add(e.basis)
            label = f"{where} ({e.grid_gco2e_per_kwh:g} gCO2e/kWh, {e.grid_source})"
        if label not in places[ln.workload]:
            places[ln.workload].append(label)
    out = tuple(
        WorkloadEmissions(
            workload=w,
            kg_co2e_per_month=kg[w] if w in known else None,
            energy_kwh_per_month=kwh[w],
            unknown_node_hours_per_month=unknown[w],
            places=tuple(places[w]),
            basis="; ".join(sorted(bases[w])),
        )
        for w in order
    )
    total = sum(kg.values()) if known else None
    return out, total


__all__ = [
    "CLOUD_BASIS",
    "ONPREM_BASIS",
    "Emissions",
    "country_grid",
    "emissions_kg_per_month",
    "line_emissions",
    "plan_emissions",
]
