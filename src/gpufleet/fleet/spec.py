"""The fleet file (YAML/JSON) at the I/O boundary: pydantic models -> the frozen :class:`Fleet`.

Shape (every field and unit in docs/fleet.md)::

    name: platform
    workloads:
      prod-inference:
        team: ml
        resources: {gpus: [T4], gpus_per_replica: 1, replicas: 3}   # or `workload:` (a recommend workload)
        demand: {schedule: "24/7"}                                  # or hourly / hours_per_day+days_per_month
        current: {provider: aws, instance_type: g4dn.2xlarge, count: 3, region: us-east-1}
    constraints:
      quotas: [{provider: aws, region: us-east-1, gpu: "A100*", limit: 16}]
      budgets: [{name: fleet, usd_per_month: 20000}]
      existing_commitments: [{provider: aws, region: us-east-1, instance_type: g4dn.2xlarge, count: 2}]
      max_providers: 2
    on_prem: [...]

Errors are :class:`ConfigFileError` naming the file, the entry and the field, and saying what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from gpufleet.errors import ConfigFileError, capped_list
from gpufleet.fileio import document_kind, load_structured_file
from gpufleet.fleet.types import (
    Budget,
    Constraints,
    CurrentUse,
    DataLocation,
    DemandProfile,
    ExistingCommitment,
    Fleet,
    FleetWorkload,
    OnPremSite,
    Quota,
    Resources,
)
from gpufleet.recommend.workload import workload_from_dict
from gpufleet.strict_model import NoBoolNumbers
from gpufleet.units import HOURS_PER_DAY, HOURS_PER_MONTH
from gpufleet.validation import MAX_GPU_MEMORY_GIB, checked_arguments

#: hours in a week; a weekly profile is scaled to the 730-hour month
HOURS_PER_WEEK = 7 * HOURS_PER_DAY
WEEKS_PER_MONTH = HOURS_PER_MONTH / HOURS_PER_WEEK


class _Strict(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid", protected_namespaces=(), allow_inf_nan=False)


class DemandSpec(_Strict):
    """One of: schedule 24/7; hours_per_day + days_per_month; hours_per_week; hourly (24 or 168 values)."""

    schedule: Literal["24/7"] | None = None
    hours_per_day: float | None = Field(None, gt=0, le=24)
    days_per_month: float | None = Field(None, gt=0, le=HOURS_PER_MONTH / 24)
    hours_per_week: float | None = Field(None, gt=0, le=HOURS_PER_WEEK)
    hourly: list[float] | None = None  # fraction of peak per hour: 24 (every day) or 168 (Mon 00h first)
    days_per_week: float = Field(7, gt=0, le=7)  # with a 24-value hourly shape

    @model_validator(mode="after")
    def _one(self) -> DemandSpec:
        given = [
            self.schedule is not None,
            self.hours_per_day is not None or self.days_per_month is not None,
            self.hours_per_week is not None,
            self.hourly is not None,
        ]
        if sum(given) != 1:
            raise ValueError(
                "give exactly one demand form: schedule: 24/7, hours_per_day with days_per_month, "
                "hours_per_week, or hourly (24 or 168 fractions of peak)"
            )
        if (self.hours_per_day is None) != (self.days_per_month is None):
            raise ValueError("hours_per_day and days_per_month go together (e.g. 8 and 22)")
        if self.hourly is not None:
            if len(self.hourly) not in (24, 168):
                raise ValueError(f"hourly has {len(self.hourly)} values; give 24 (a day) or 168 (a week)")
            if any(not 0 <= v <= 1 for v in self.hourly) or max(self.hourly) <= 0:
                raise ValueError("hourly values are fractions of peak in [0, 1] with at least one > 0")
        return self

    def to_profile(self) -> DemandProfile:
        if self.schedule is not None:
            return DemandProfile(levels=((1.0, HOURS_PER_MONTH),), label="24/7")
        if self.hours_per_day is not None and self.days_per_month is not None:
            h = self.hours_per_day * self.days_per_month
            return DemandProfile(
                levels=((1.0, h),), label=f"{self.hours_per_day:g} h/day x {self.days_per_month:g} days"
            )
        if self.hours_per_week is not None:
            h = self.hours_per_week * WEEKS_PER_MONTH
            return DemandProfile(levels=((1.0, h),), label=f"{self.hours_per_week:g} h/week")
        assert self.hourly is not None
        per_hour = WEEKS_PER_MONTH if len(self.hourly) == 168 else WEEKS_PER_MONTH * self.days_per_week
        acc: dict[float, float] = {}
        for v in self.hourly:
            if v > 0:
                acc[v] = acc.get(v, 0.0) + per_hour
        levels = tuple(sorted(acc.items(), reverse=True))
        return DemandProfile(levels=levels, label=f"hourly shape ({len(self.hourly)} values)")


class ResourcesSpec(_Strict):
    SELECTORS: ClassVar[frozenset[str]] = frozenset({"gpus", "arch"})
    gpus: list[str] = Field(default_factory=list)
    min_gpu_memory_gib: float = Field(0.0, ge=0, le=MAX_GPU_MEMORY_GIB)
    gpus_per_replica: int = Field(1, ge=0, le=64)
    replicas: int = Field(1, ge=1, le=10_000)
    vcpus: float = Field(0.0, ge=0, le=100_000)  # the largest machines have ~10^3 vCPUs
    ram_gib: float = Field(0.0, ge=0, le=1_000_000)  # and ~10^4 GiB of RAM: typo guards
    arch: list[Literal["arm64", "x86_64"]] = Field(default_factory=list)
    job: bool = False  # checkpointed batch/training job (spot: checkpoint/restart slowdown, not replicas)
    # production serving: `replicas` carry the peak and one node's worth more is planned (N+1)
    tier: Literal["dev", "batch", "production"] = "batch"

    @model_validator(mode="after")
    def _cpu(self) -> ResourcesSpec:
        if self.gpus_per_replica == 0 and self.vcpus <= 0:
            raise ValueError("CPU work (gpus_per_replica: 0) needs vcpus > 0")
        if self.tier == "production" and self.job:
            raise ValueError("tier: production is for serving; a job (job: true) is batch or dev")
        return self


class DataSpec(_Strict):
    provider: str
    region: str
    # data sizes and transfers: at most 10^9 GiB (an exabyte) and 10^6 transfers a month (typo guards)
    size_gib: float = Field(0.0, ge=0, le=1e9)
    transfers_per_month: float = Field(1.0, ge=0, le=1e6)
    serving_egress_gib_per_month: float = Field(0.0, ge=0, le=1e9)


class CurrentSpec(_Strict):
    provider: str
    instance_type: str
    count: int = Field(1, ge=1)
    region: str | None = None
    hours_per_month: float = Field(HOURS_PER_MONTH, gt=0, le=HOURS_PER_MONTH)


class WorkloadEntry(_Strict):
    SELECTORS: ClassVar[frozenset[str]] = frozenset({"providers", "regions", "geos", "countries"})
    team: str = "default"
    priority: int = 0
    workload: dict[str, Any] | None = None
    resources: ResourcesSpec | None = None
    demand: DemandSpec = Field(default_factory=lambda: DemandSpec(schedule="24/7"))
    providers: list[str] = Field(default_factory=list)
    regions: list[str] = Field(default_factory=list)
    geos: list[str] = Field(default_factory=list)
    countries: list[str] = Field(default_factory=list)
    ha_regions: int = Field(1, ge=1, le=8)
    preemptible_fraction: float = Field(0.0, ge=0, le=1)
    # not given: no new commitment (a term is paid in full even if the workload stops); at most 100 years
    lifetime_months: float | None = Field(None, gt=0, le=1200)
    data: DataSpec | None = None
    current: CurrentSpec | None = None
    autoscaling_savings_pct: float | None = Field(None, ge=0, lt=100)
    sharing: Literal["none", "mig", "auto"] = "none"

    @model_validator(mode="after")
    def _what(self) -> WorkloadEntry:
        if (self.workload is None) == (self.resources is None):
            raise ValueError("give exactly one of `workload` (a model workload) or `resources` (capacity)")
        if self.sharing != "none" and self.resources is not None:
            raise ValueError(
                f"sharing: {self.sharing} needs a model `workload` (inference): MIG slices are sized by the "
                "estimator (weights + KV cache, throughput of the slice), while `resources` asks for whole "
                "GPUs; use sharing: none or describe the model"
            )
        return self


class QuotaSpec(_Strict):
    name: str | None = None
    provider: str
    limit: float = Field(ge=0)
    unit: Literal["gpus", "vcpus", "instances"] = "gpus"
    region: str = "*"
    gpu: str = "*"
    instance_family: str = "*"
    spot: bool = False


class BudgetSpec(_Strict):
    name: str | None = None
    usd_per_month: float = Field(gt=0)
    teams: list[str] = Field(default_factory=list)
    workloads: list[str] = Field(default_factory=list)


class ExistingSpec(_Strict):
    name: str | None = None
    provider: str
    region: str
    instance_type: str
    count: int = Field(ge=1)
    kind: Literal["reserved", "savings_plan", "cud", "capacity_reservation"] = "reserved"
    # public commitment terms are 1 or 3 years (AWS RIs/Savings Plans, Azure reservations, GCP CUDs); 60
    # months leaves room for a private deal and catches typos (600 for 6)
    term_left_months: float = Field(12.0, gt=0, le=60)


def _both_terms() -> list[Literal["1y", "3y"]]:
    return ["1y", "3y"]


class ConstraintsSpec(_Strict):
    quotas: list[QuotaSpec] = Field(default_factory=list)
    budgets: list[BudgetSpec] = Field(default_factory=list)
    existing_commitments: list[ExistingSpec] = Field(default_factory=list)
    max_providers: int | None = Field(None, ge=1)
    commitment_terms: list[Literal["1y", "3y"]] = Field(default_factory=_both_terms)
    # a new term must cost <= (1 - margin) x on-demand at the expected use (docs/fleet.md, "Commitments")
    commitment_margin_fraction: float = Field(0.2, ge=0.0, lt=1.0)
    allow_unverified_commitments: bool = False


class OnPremSpec(_Strict):
    name: str
    region: str = "on-prem"
    gpu: str
    gpus_per_node: int = Field(ge=1, le=64)
    nodes: int = Field(ge=1)
    capex_usd_per_node: float = Field(ge=0)
    depreciation_months: float = Field(36.0, gt=0)
    # required and > 0: an on-prem site without its power or its electricity price costs $0 of power and
    # emits 0 kgCO2e, a silent under-estimate of its TCO against the cloud (the red-team pass of 2026-11-29)
    power_kw_per_node: float = Field(gt=0, le=200)
    pue: float = Field(1.56, ge=1.0, le=3.0)
    usd_per_kwh: float = Field(gt=0, le=10)
    ops_usd_per_node_per_month: float = Field(0.0, ge=0)
    capex_sunk: bool = False
    vcpus_per_node: float = Field(0.0, ge=0)
    ram_gib_per_node: float = Field(0.0, ge=0)
    geo: str = ""
    country: str = ""
    # gCO2e/kWh of the site's electricity (the highest national grids are ~1,000; 2,000 catches typos)
    grid_gco2e_per_kwh: float | None = Field(None, ge=0, le=2000)


class FleetSpec(_Strict):
    name: str = "fleet"
    workloads: dict[str, WorkloadEntry]
    constraints: ConstraintsSpec = Field(default_factory=ConstraintsSpec)
    on_prem: list[OnPremSpec] = Field(default_factory=list)
    # the team's clusters run Kueue: `plan -f k8s` labels Jobs with their team's LocalQueue and emits the
    # ResourceFlavors / ClusterQueues / LocalQueues (fleet.export_k8s); `--kueue/--no-kueue` overrides
    kueue: bool = False

    @field_validator("workloads")
    @classmethod
    def _some(cls, v: dict[str, WorkloadEntry]) -> dict[str, WorkloadEntry]:
        if not v:
            raise ValueError("a fleet needs at least one workload")
        return v


def _message(exc: ValidationError, source: str) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = err["msg"].removeprefix("Value error, ").rstrip(".")
        if err["type"] == "extra_forbidden":
            msg = "not a field here (see docs/fleet.md for the fields of each section)"
        value = err.get("input")
        shown = "" if isinstance(value, (dict, list)) or value is None else f" = {value!r}"
        parts.append(f"{loc}{shown}: {msg}")
    return (
        f"Fleet file {source}: "
        + capped_list(parts, sep="; ", what="more problems")
        + ". Fix these fields; docs/fleet.md lists each with its unit."
    )


def _cross_checks(spec: FleetSpec, source: str) -> None:
    names = set(spec.workloads)
    teams = {w.team for w in spec.workloads.values()}
    sites = [s.name for s in spec.on_prem]
    problems = []
    for b in spec.constraints.budgets:
        for w in b.workloads:
            if w not in names:
                problems.append(f"budget {b.name or b.usd_per_month!r} names unknown workload {w!r}")
        for t in b.teams:
            if t not in teams:
                problems.append(
                    f"budget {b.name or b.usd_per_month!r} names team {t!r}, which no workload has"
                )
    if len(set(sites)) != len(sites):
        problems.append("two on_prem sites share a name")
    for name, ent in spec.workloads.items():
        if ent.ha_regions > 1 and len(ent.regions) == 1 and not any(ch in ent.regions[0] for ch in "*?["):
            problems.append(
                f"workload {name!r} asks for ha_regions: {ent.ha_regions} but allows only "
                f"region {ent.regions[0]!r}"
            )
    if problems:
        raise ConfigFileError(
            f"Fleet file {source}: " + "; ".join(problems) + ". Fix the names (workload names are the keys "
            f"under `workloads`: {', '.join(sorted(names))}; teams: {', '.join(sorted(teams))})."
        )


def _geos(values: list[str], where: str) -> tuple[str, ...]:
    """Geo buckets (and groups such as ``europe``) as regions.csv names them; an unknown geo is an error,
    not a data-residency filter that no region passes."""
    from gpufleet.catalog.regions import expand_geos
    from gpufleet.errors import UnknownNameError

    try:
        return expand_geos(values)
    except UnknownNameError as exc:
        raise ConfigFileError(f"{where}: {exc}") from exc


def _check_site_location(site: OnPremSpec, source: str) -> None:
    """An on-prem site's ``geo`` is one regions.csv bucket and its ``country`` an ISO 3166-1 alpha-2 code, or
    blank: anything else would silently fail every data-residency filter."""
    from gpufleet.catalog.regions import GEOS

    if site.geo and site.geo.strip().lower() not in GEOS:
        raise ConfigFileError(
            f"Fleet file {source}: on_prem site {site.name!r} has geo {site.geo!r}, not a geo bucket. "
            f"Allowed: {', '.join(GEOS)} (or leave it out). Fix the site's geo."
        )
    if site.country and not (len(site.country) == 2 and site.country.isascii() and site.country.isalpha()):
        raise ConfigFileError(
            f"Fleet file {source}: on_prem site {site.name!r} has country {site.country!r}, not an ISO "
            "3166-1 alpha-2 code. Allowed: two letters such as DE, US, JP (or leave it out). Fix the site's "
            "country."
        )


@checked_arguments("fleet reader")
def fleet_from_dict(data: Any, *, source: str = "<fleet>") -> Fleet:
    """Validate a fleet mapping into a :class:`Fleet` (ConfigFileError naming entry and field)."""
    if not isinstance(data, Mapping):
        raise ConfigFileError(
            f"Fleet file {source} must hold a mapping with `workloads:` (and optional `constraints:`, "
            f"`on_prem:`); it holds {document_kind(data)}."
        )
    try:
        spec = FleetSpec.model_validate(dict(data))
    except ValidationError as exc:
        raise ConfigFileError(_message(exc, source)) from exc
    _cross_checks(spec, source)
    workloads = []
    for name, e in spec.workloads.items():
        wl = None
        if e.workload is not None:
            wl = workload_from_dict(e.workload, source=source, entry=f"{name}.workload")
            if e.sharing != "none" and wl.is_training:
                raise ConfigFileError(
                    f"Fleet file {source}: workloads.{name}.sharing is {e.sharing!r} but the workload is "
                    f"{wl.task}: MIG slices are for inference serving. Use sharing: none for training."
                )
            if e.sharing == "mig" and wl.gpu_choices:
                from gpufleet.fleet.mig import mig_shapes

                asked = sorted({g for choice in wl.gpu_choices for g in choice})
                if not set(asked) & set(mig_shapes()):  # was "no offer holds the model": the GPUs lack MIG
                    raise ConfigFileError(
                        f"Fleet file {source}: workloads.{name}.sharing is 'mig' but none of its gpus "
                        f"{asked} has MIG (MIG-capable: {', '.join(mig_shapes())}). Allow a MIG-capable GPU, "
                        "or use sharing: none (whole GPUs) or auto."
                    )
        r = e.resources
        workloads.append(
            FleetWorkload(
                name=name,
                team=e.team,
                priority=e.priority,
                workload=wl,
                resources=Resources(
                    gpus=tuple(r.gpus),
                    min_gpu_memory_gib=r.min_gpu_memory_gib,
                    gpus_per_replica=r.gpus_per_replica,
                    replicas=r.replicas,
                    vcpus=r.vcpus,
                    ram_gib=r.ram_gib,
                    arch=tuple(r.arch),
                    job=r.job,
                    tier=r.tier,
                )
                if r
                else None,
                demand=e.demand.to_profile(),
                providers=tuple(p.lower() for p in e.providers),
                regions=tuple(e.regions),
                geos=_geos(e.geos, f"{source}: workload {name!r} geos"),
                countries=tuple(c.upper() for c in e.countries),
                ha_regions=e.ha_regions,
                preemptible_fraction=e.preemptible_fraction,
                lifetime_months=e.lifetime_months,
                data=DataLocation(**e.data.model_dump()) if e.data else None,
                current=CurrentUse(**e.current.model_dump()) if e.current else None,
                autoscaling_savings_pct=e.autoscaling_savings_pct,
                sharing=e.sharing,
            )
        )
    c = spec.constraints
    constraints = Constraints(
        quotas=tuple(
            Quota(
                name=q.name
                or f"quota {q.provider}/{q.region}/{q.gpu}/{q.instance_family}{' spot' if q.spot else ''}",
                provider=q.provider.lower(),
                limit=q.limit,
                unit=q.unit,
                region=q.region,
                gpu=q.gpu,
                instance_family=q.instance_family,
                spot=q.spot,
            )
            for q in c.quotas
        ),
        budgets=tuple(
            Budget(
                name=b.name
                or (
                    "budget " + "/".join(b.teams + b.workloads) if b.teams or b.workloads else "fleet budget"
                ),
                usd_per_month=b.usd_per_month,
                teams=tuple(b.teams),
                workloads=tuple(b.workloads),
            )
            for b in c.budgets
        ),
        existing=tuple(
            ExistingCommitment(
                name=x.name or f"{x.kind} {x.provider}/{x.region}/{x.instance_type}",
                provider=x.provider.lower(),
                region=x.region,
                instance_type=x.instance_type,
                count=x.count,
                kind=x.kind,
                term_left_months=x.term_left_months,
            )
            for x in c.existing_commitments
        ),
        max_providers=c.max_providers,
        commitment_terms=tuple(c.commitment_terms),
        commitment_margin_fraction=c.commitment_margin_fraction,
        allow_unverified_commitments=c.allow_unverified_commitments,
    )
    for site in spec.on_prem:
        _check_site_location(site, source)
    on_prem = tuple(OnPremSite(**s.model_dump()) for s in spec.on_prem)
    return Fleet(
        name=spec.name,
        workloads=tuple(workloads),
        constraints=constraints,
        on_prem=on_prem,
        source=source,
        kueue=spec.kueue,
    )


@checked_arguments("fleet file reader")
def read_fleet_file(path: str | Path) -> Fleet:
    """Read and validate a fleet file through the input layer (size limits, safe YAML, no duplicate keys)."""
    data = load_structured_file(path, what="fleet file")
    return fleet_from_dict(data, source=str(path))
