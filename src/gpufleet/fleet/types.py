"""Typed fleet inputs and plan results: frozen dataclasses, units in every field name.

A fleet (:class:`Fleet`) is read from a YAML/JSON file by :mod:`gpufleet.fleet.spec`; a plan
(:class:`FleetPlan`) is what :func:`gpufleet.fleet.plan.plan_fleet` returns. Money is USD, time in hours per
month (``_h_per_month``; a month is ``units.HOURS_PER_MONTH`` = 730 h), memory in GiB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from gpufleet.recommend.types import Workload
from gpufleet.units import HOURS_PER_MONTH

#: how one node of a placement is paid for
PayKind = Literal["on_demand", "spot", "commit_1y", "commit_3y", "existing", "on_prem", "data_transfer"]
PAY_KINDS: tuple[str, ...] = (
    "on_demand",
    "spot",
    "commit_1y",
    "commit_3y",
    "existing",
    "on_prem",
    "data_transfer",
)
#: what a quota counts
QuotaUnit = Literal["gpus", "vcpus", "instances"]
#: how a workload may share GPUs: whole GPUs only, MIG slices only (when sharing is allowed), or the cheaper
SharingMode = Literal["none", "mig", "auto"]
SHARING_MODES: tuple[str, ...] = ("none", "mig", "auto")
#: plan status: optimal (gap within tolerance), feasible (time limit hit with an incumbent), infeasible
PlanStatus = Literal["optimal", "feasible", "infeasible", "error"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DemandProfile:
    """Demand over the month as a load-duration curve.

    ``levels`` holds ``(fraction_of_peak, hours_per_month)`` pairs: for that many hours a month the workload
    needs that fraction of its peak capacity. Hours sum to at most 730 (the rest is zero demand).
    """

    levels: tuple[tuple[float, float], ...]
    label: str

    @property
    def hours_per_month(self) -> float:
        """Hours with any demand [h/month]."""
        return sum(h for f, h in self.levels if f > 0)

    def hours_needing(self, level: int, peak_units: int) -> float:
        """Hours a month in which at least ``level`` of ``peak_units`` units are needed [h/month].

        Units needed at an hour = ceil(fraction x peak_units) (a partial replica is a whole replica).
        """
        total = 0.0
        for f, h in self.levels:
            need = _ceil(f * peak_units)
            if need >= level:
                total += h
        return total


def _ceil(x: float) -> int:
    n = int(x)
    return n + 1 if x - n > 1e-9 else n


@dataclass(frozen=True, slots=True, kw_only=True)
class Resources:
    """A capacity workload: GPUs (or CPUs) per replica instead of a model to size."""

    gpus: tuple[str, ...] = ()  # allowed accelerator spec ids (empty = any with enough memory)
    min_gpu_memory_gib: float = 0.0  # per GPU
    gpus_per_replica: int = 1  # [count]; 0 for CPU work
    replicas: int = 1  # at peak [count]
    vcpus: float = 0.0  # per replica, minimum [count]
    ram_gib: float = 0.0  # per replica, minimum
    arch: tuple[str, ...] = ()  # CPU work: allowed architectures (arm64 = Graviton, x86_64); empty = any
    job: bool = False  # a checkpointed batch/training job: spot uses the checkpoint/restart slowdown
    #: production serving: ``replicas`` carry the peak; the plan adds one node's worth (N+1)
    tier: str = "batch"

    @property
    def cpu_only(self) -> bool:
        return self.gpus_per_replica == 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DataLocation:
    """Where a workload's data lives and how much moves."""

    provider: str
    region: str
    size_gib: float = 0.0  # dataset + weights moved to the compute region
    transfers_per_month: float = 1.0  # how often that data is moved a month [count]
    serving_egress_gib_per_month: float = 0.0  # responses served to the internet


@dataclass(frozen=True, slots=True, kw_only=True)
class CurrentUse:
    """What the workload runs on today (the baseline of the savings waterfall)."""

    provider: str
    instance_type: str
    count: int  # nodes [count]
    region: str | None = None
    hours_per_month: float = HOURS_PER_MONTH  # hours the nodes are billed today [h/month]


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetWorkload:
    """One workload of the fleet: what to run, when, for whom, and where it may go."""

    name: str
    team: str = "default"
    priority: int = 0  # informative; higher = more important (shown, not optimised)
    workload: Workload | None = None  # a model workload (sized by the recommend engine) ...
    resources: Resources | None = None  # ... or a capacity workload
    demand: DemandProfile
    providers: tuple[str, ...] = ()  # empty = any
    regions: tuple[str, ...] = ()  # glob patterns; empty = any
    geos: tuple[str, ...] = ()  # data residency: allowed geos (us, eu, asia, ...) from regions.csv
    countries: tuple[str, ...] = ()  # data residency: allowed ISO country codes
    ha_regions: int = 1  # spread over at least this many regions, each sized to survive one region's loss
    preemptible_fraction: float = 0.0  # share of the nodes that may run on spot [0..1]
    # how long the workload will run [months]; None = not given: no new commitment (1y/3y need >= 12/36)
    lifetime_months: float | None = None
    data: DataLocation | None = None
    current: CurrentUse | None = None
    autoscaling_savings_pct: float | None = None  # from the simulators/telemetry, when given [%]
    sharing: str = "none"  # SharingMode: small inference may run on MIG slices of shared GPUs

    @property
    def production_serving(self) -> bool:
        """Serving users (the production tier, not a training job): the plan must survive a lost node."""
        if self.workload is not None:
            return self.workload.tier == "production" and not self.workload.is_training
        return self.resources is not None and self.resources.tier == "production" and not self.resources.job

    @property
    def node_spare(self) -> bool:
        """Production serving in one region keeps one node's worth of units spare (N+1). Over ``ha_regions``
        >= 2 regions the spare is the other regions' share instead: each region is sized for the peak /
        (N - 1), so the N - 1 regions left after losing one carry the peak, and a lost node (less than a
        region) is covered too. Adding N+1 in every region as well paid for two failures at once."""
        return self.production_serving and self.ha_regions < 2

    @property
    def region_loss_sized(self) -> bool:
        """Production serving over ``ha_regions`` >= 2 regions: each placement carries the peak / (N - 1)."""
        return self.production_serving and self.ha_regions >= 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Quota:
    """At most ``limit`` units running at once over the matching offers (spot quotas are separate)."""

    name: str
    provider: str
    limit: float
    unit: QuotaUnit = "gpus"
    region: str = "*"  # glob
    gpu: str = "*"  # accelerator spec id glob
    instance_family: str = "*"  # instance-type glob, e.g. "p4d*" or "Standard_ND*"
    spot: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Budget:
    """At most ``usd_per_month`` over the matching workloads (no teams and no workloads = the whole fleet)."""

    name: str
    usd_per_month: float
    teams: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ExistingCommitment:
    """Capacity already paid for (reservation, savings plan, capacity block): zero marginal cost."""

    name: str
    provider: str
    region: str
    instance_type: str
    count: int  # nodes [count]
    kind: str = "reserved"  # reserved | savings_plan | cud | capacity_reservation
    term_left_months: float = 12.0


@dataclass(frozen=True, slots=True, kw_only=True)
class OnPremSite:
    """Owned GPU servers priced by total cost of ownership.

    Per node and month: capex / depreciation months (0 when ``capex_sunk``) + operations; per node-hour
    used: power x PUE x electricity price.
    """

    name: str
    region: str  # site label, used as the region of its offers
    gpu: str  # accelerator spec id
    gpus_per_node: int
    nodes: int  # capacity [count]
    capex_usd_per_node: float
    depreciation_months: float = 36.0
    power_kw_per_node: float = 0.0  # IT power while running [kW]
    pue: float = 1.56  # Uptime Institute 2024 industry average (pue.csv)
    usd_per_kwh: float = 0.0
    ops_usd_per_node_per_month: float = 0.0  # staff, space, support, network
    capex_sunk: bool = False
    vcpus_per_node: float = 0.0
    ram_gib_per_node: float = 0.0
    geo: str = ""
    country: str = ""
    # the site's grid carbon intensity [gCO2e/kWh] (your utility's or grid operator's figure); None: its
    # emissions are reported as unknown
    grid_gco2e_per_kwh: float | None = None

    @property
    def fixed_usd_per_node_month(self) -> float:
        capex = 0.0 if self.capex_sunk else self.capex_usd_per_node / self.depreciation_months
        return capex + self.ops_usd_per_node_per_month

    @property
    def energy_usd_per_node_hour(self) -> float:
        return self.power_kw_per_node * self.pue * self.usd_per_kwh


@dataclass(frozen=True, slots=True, kw_only=True)
class Constraints:
    quotas: tuple[Quota, ...] = ()
    budgets: tuple[Budget, ...] = ()
    existing: tuple[ExistingCommitment, ...] = ()
    max_providers: int | None = None
    commitment_terms: tuple[str, ...] = ("1y", "3y")  # new commitments allowed
    # a new term is bought only where it costs <= (1 - margin) x on-demand at the expected use
    # (gpufleet.cost.commitment) [fraction]
    commitment_margin_fraction: float = 0.2
    # commitment rates without a per-offer source (table ceilings) are used only when this is set
    allow_unverified_commitments: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Fleet:
    name: str
    workloads: tuple[FleetWorkload, ...]
    constraints: Constraints
    on_prem: tuple[OnPremSite, ...] = ()
    source: str = "<fleet>"
    kueue: bool = False  # its clusters run Kueue: the k8s export queues Jobs (fleet.export_k8s)


# ------------------------------------------------------------------------------------------------ options


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """A slice of the load-duration curve of one option: ``nodes`` more nodes for ``hours_per_month``."""

    nodes: int
    hours_per_month: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    """One way to place a workload: an offer x node count in one region, with its prices per pay kind.

    ``blocks`` stack bottom-up: the first is needed most hours. Prices are per node-hour; NaN = no such price.
    """

    key: str
    workload: str
    provider: str
    region: str
    instance_type: str
    gpu: str  # spec id ("" for CPU work)
    gpus_per_node: float
    vcpus_per_node: float
    arch: str
    nodes_per_replica: int
    replicas_peak: int
    blocks: tuple[Block, ...]
    price_on_demand_usd_per_hour: float
    price_spot_usd_per_hour: float
    price_commit_1y_usd_per_hour: float
    price_commit_3y_usd_per_hour: float
    spot_cost_factor: float = 1.0  # expected spot node-hours per needed node-hour (interruptions)
    transfer_usd_per_month: float = 0.0  # egress for data and serving (fixed per chosen option)
    on_prem_site: str | None = None
    on_prem_fixed_usd_per_node_month: float = 0.0
    on_prem_energy_usd_per_node_hour: float = 0.0
    note: str = ""
    # MIG slice options (``mig_profile`` set): ``mig_slices`` slices of the profile on a shared pool of the
    # offer's nodes (``blocks`` empty; the pool's nodes are priced in the pool, see gpufleet.fleet.pools)
    mig_profile: str = ""
    mig_slices: int = 0  # [count]
    mig_compute_slices: int = 0  # compute slices of one slice of the profile [count]
    mig_compute_slices_total: int = 0  # compute slices of the whole GPU [count]
    #: production serving (N+1, gpufleet.recommend.failure): the replica units (MIG: slices) that carry the
    #: peak load in this region; the option deploys more so that one lost node (or MIG-hosting GPU) leaves
    #: them. 0 = no failure claim (batch, dev, training, capacity workloads)
    replicas_needed: int = 0
    #: production serving over ha_regions = N >= 2 regions: the replica units (MIG: slices) this region must
    #: run at peak so that the N - 1 regions left after one is lost carry the peak load (ceil(load / (N - 1)),
    #: no spare inside the region); 0 = no region-loss claim
    region_loss_units: int = 0
    units_per_node: int = 1  # replica units one node holds (capacity workloads may stack several) [count]

    @property
    def survives_node_loss(self) -> bool:
        return self.replicas_needed > 0

    def spot_share_nodes(self, preemptible_fraction: float) -> int:
        """Most nodes of this option that may run on spot: the preemptible share of its peak nodes, in whole
        replicas. A replica spread over several nodes (``nodes_per_replica`` > 1) is all spot or all
        regular: one reclaimed node stops the whole replica, so a half-spot replica pays on-demand for nodes
        that fail with the spot ones (and no export can launch it as one group)."""
        npr = max(1, self.nodes_per_replica)
        return math.floor(preemptible_fraction * self.nodes_peak + 1e-9) // npr * npr

    @property
    def nodes_peak(self) -> int:
        return sum(b.nodes for b in self.blocks)

    @property
    def is_mig(self) -> bool:
        return bool(self.mig_profile)

    @property
    def pool(self) -> str:
        """The shared pool a MIG option draws from: one offer (provider, region, instance type)."""
        return f"{self.provider}/{self.region}/{self.instance_type}" if self.mig_profile else ""

    @property
    def mig_slice_usd_per_hour(self) -> float:
        """Chargeback of one slice: the node price x its share of the node's compute slices [USD/h]."""
        if not self.mig_profile:
            return 0.0
        share = self.mig_compute_slices / (self.mig_compute_slices_total * self.gpus_per_node)
        return self.price_on_demand_usd_per_hour * share


# ---------------------------------------------------------------------------------------------- the plan


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanLine:
    """Nodes of one placement paid one way, for some hours a month."""

    workload: str
    team: str
    option: str  # Option.key
    block: int  # index into Option.blocks (-1 for data transfer)
    provider: str
    region: str
    instance_type: str
    gpu: str
    gpus_per_node: float
    pay_kind: str  # one of PAY_KINDS
    nodes: int
    hours_per_month: float  # hours these nodes run [h/month]
    billed_hours_per_month: float  # hours billed (commitments: 730) [h/month]
    unit_price_usd_per_hour: float  # what one billed node-hour costs on this pay kind (spot: expected)
    list_unit_price_usd_per_hour: float  # on-demand price of one node-hour
    cost_usd_per_month: float
    commitment: str | None = None  # existing commitment name
    # MIG: ``pool`` names the shared pool; slice lines carry ``mig_profile`` and count slices in ``nodes``
    # (``gpus_per_node`` = the GPU share of one slice); the pool's idle line has no profile and counts idle
    # compute slices
    pool: str = ""
    mig_profile: str = ""
    #: nodes one replica (unit) of the placement spans: > 1 for a model split over nodes (TP x PP across
    #: nodes) or a capacity replica wider than a node; the exports launch such a replica as one group
    nodes_per_replica: int = 1

    @classmethod
    def for_option(
        cls,
        o: Option,
        *,
        workload: str,
        team: str,
        block: int,
        pay_kind: str,
        nodes: int,
        unit_usd_per_hour: float,
        billed_hours: float,
        hours: float,
        commitment: str | None = None,
        cost_usd_per_month: float | None = None,
    ) -> PlanLine:
        """``nodes`` of option ``o``'s block ``block`` paid as ``pay_kind``; cost = nodes x unit x billed
        hours unless given (data transfer)."""
        return cls(
            workload=workload,
            team=team,
            option=o.key,
            block=block,
            provider=o.provider,
            region=o.region,
            instance_type=o.instance_type,
            gpu=o.gpu,
            gpus_per_node=o.gpus_per_node,
            pay_kind=pay_kind,
            nodes=nodes,
            hours_per_month=hours,
            billed_hours_per_month=billed_hours,
            unit_price_usd_per_hour=unit_usd_per_hour,
            list_unit_price_usd_per_hour=o.price_on_demand_usd_per_hour,
            cost_usd_per_month=(
                nodes * unit_usd_per_hour * billed_hours if cost_usd_per_month is None else cost_usd_per_month
            ),
            commitment=commitment,
            nodes_per_replica=max(1, o.nodes_per_replica),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SharedPool:
    """Nodes of one offer whose GPUs are cut into MIG slices shared by several workloads (all month, 730 h).

    ``layouts``: (MIG configuration of one GPU as (profile, count) pairs, GPUs so configured);
    ``slices``: (workload, profile, count) placed on the pool.
    """

    key: str
    provider: str
    region: str
    instance_type: str
    gpu: str
    gpus_per_node: int
    nodes: int
    pay_kind: str  # how most of its nodes are paid (on_demand, commit_1y, commit_3y)
    nodes_by_pay_kind: tuple[tuple[str, int], ...]
    price_on_demand_usd_per_hour: float  # per node
    cost_usd_per_month: float
    layouts: tuple[tuple[tuple[tuple[str, int], ...], int], ...]
    slices: tuple[tuple[str, str, int], ...]
    #: where every slice runs: one entry per configured GPU (gpufleet.fleet.pools.place_slices); a pool
    #: that carries production serving is two mirrored halves (``mirrored``) so one lost node leaves a half
    gpus: tuple[PoolGpu, ...] = ()
    mirrored: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolGpu:
    """One GPU of a shared pool: the node it sits in, its MIG layout and the slices placed on it."""

    node: int  # index of the pool's node [0, nodes)
    layout: tuple[tuple[str, int], ...]  # (profile, count) of its MIG configuration
    tenants: tuple[tuple[str, str, int], ...]  # (workload, profile, slices) on this GPU


@dataclass(frozen=True, slots=True, kw_only=True)
class NewCommitment:
    """A commitment the plan buys, summed over workloads, with why it pays (gpufleet.cost.commitment)."""

    provider: str
    region: str
    instance_type: str
    term: str  # 1y | 3y
    nodes: int
    usd_per_month: float  # what the term bills a month (nodes x rate x 730 h)
    gpu: str = ""
    rate_usd_per_hour: float = math.nan  # commitment price of one node-hour (upfront fees amortised)
    on_demand_usd_per_hour: float = math.nan  # on-demand price of one node-hour, same offer
    discount_fraction: float = math.nan  # 1 - rate / on-demand
    rate_program: str = ""  # reserved | savings_plan | cud | flexible_cud
    rate_basis: str = ""  # "fetched" (a provider price API, per offer) or "table" (a per-provider figure)
    rate_source: str = ""  # where the rate comes from (API and capture date, or the table's citation)
    rate_verified: bool = False  # False: no per-offer source; used only with allow_unverified_commitments
    term_months: float = math.nan
    used_node_hours_per_month: float = 0.0  # node-hours the committed nodes run a month [h/month]
    expected_utilisation: float = math.nan  # used node-hours / (nodes x 730 h) [fraction]
    break_even_utilisation: float = math.nan  # rate / on-demand [fraction of 730 h]
    break_even_months: float = math.nan  # months the workload must run for the term to beat on-demand
    on_demand_usd_per_month: float = math.nan  # the same nodes on demand for the hours used [USD/month]
    margin_fraction: float = math.nan  # the margin the purchase rule demanded [fraction]
    #: what the whole term bills, owed whatever the use: usd_per_month x term_months [USD]
    term_obligation_usd: float = math.nan
    #: how far the committed nodes' used hours may fall before the term costs more than on-demand for the
    #: hours still used: 1 - break_even_utilisation / expected_utilisation [fraction]
    use_drop_tolerated_fraction: float = math.nan


@dataclass(frozen=True, slots=True, kw_only=True)
class Lever:
    """One step of the savings waterfall."""

    name: str
    usd_per_month_before: float | None
    usd_per_month_after: float | None
    savings_usd_per_month: float | None  # None = not evaluated
    savings_pct: float | None  # of the baseline [%]
    goal: str  # the assessment seed's goal, where it states one
    note: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class SolveStats:
    variables: int
    integer_variables: int
    constraints: int
    options_before_pruning: int
    options_after_pruning: int
    solve_time_s: float
    build_time_s: float
    mip_gap: float | None  # relative gap between the incumbent and the dual bound
    mip_nodes: int | None
    solver: str


@dataclass(frozen=True, slots=True, kw_only=True)
class OnPremTco:
    """One workload's placement on an owned site, its cost parts and the cloud alternative."""

    workload: str
    site: str
    nodes: int
    node_hours_per_month: float
    capex_usd: float  # nodes x capex per node; 0 when the capex is sunk
    depreciation_months: float
    capex_amortisation_usd_per_month: float
    power_kw_per_node: float  # IT power [kW]
    pue: float
    usd_per_kwh: float
    power_usd_per_month: float  # IT power x PUE x price x node-hours
    operations_usd_per_month: float
    total_usd_per_month: float
    cloud_alternative: str  # provider/region instance x nodes (pay kind); "" when the workload has none
    cloud_alternative_usd_per_month: float | None
    break_even_months: (
        float | None
    )  # capex / monthly saving vs the alternative; None: never or no alternative
    note: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadEmissions:
    """A workload's operational emissions in a plan; ``unknown_node_hours_per_month`` ran where no grid
    figure exists (not counted in ``kg_co2e_per_month``)."""

    workload: str
    kg_co2e_per_month: float | None  # None when no placement of the workload has a figure
    energy_kwh_per_month: float
    unknown_node_hours_per_month: float
    places: tuple[str, ...]  # provider/region (grid gCO2e/kWh, source) of each placement
    basis: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetPlan:
    fleet: str
    status: str  # PlanStatus
    message: str
    cost_usd_per_month: float | None
    lines: tuple[PlanLine, ...]
    new_commitments: tuple[NewCommitment, ...]
    binding: tuple[str, ...]  # names of the constraints that make it infeasible (or are tight)
    levers: tuple[Lever, ...]
    stats: SolveStats | None
    check_violations: tuple[str, ...]  # what the independent checker found (empty = feasible)
    notes: tuple[str, ...] = ()
    cost_by_team_usd_per_month: tuple[tuple[str, float], ...] = ()
    pools: tuple[SharedPool, ...] = ()  # GPUs shared through MIG slices
    # operational emissions per workload and in all (gpufleet.fleet.carbon); None: no placement has a figure
    emissions: tuple[WorkloadEmissions, ...] = ()
    emissions_kg_co2e_per_month: float | None = None
    on_prem_tco: tuple[OnPremTco, ...] = ()  # owned sites vs the best cloud alternative (fleet.onprem)
