"""Migration analysis: the current deployment costed and estimated like any candidate, against the best.

Risk is stated with reasons, never a score without them: spot interruptions, a cross-provider move (egress,
IAM, networking), multi-node serving/training, a different GPU vendor / software stack (CUDA, ROCm, Neuron,
XLA/TPU, SynapseAI), an older GPU generation, data egress across regions, and thin SLO headroom.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from gpufleet.catalog.offers import OfferTable
from gpufleet.catalog.regions import region_location
from gpufleet.cost.schedule import COMMITTED_KINDS
from gpufleet.cost.spot import SpotAssumption
from gpufleet.errors import GpufleetError, InputError, UnknownNameError
from gpufleet.recommend.candidates import build_candidates
from gpufleet.recommend.deploy import DEFAULT_HOST_RULES, HostRules
from gpufleet.recommend.engine import recommend_on
from gpufleet.recommend.perf import Estimator, target_output_tokens_per_s, user_tpot
from gpufleet.recommend.rank import materialise, with_unit_costs
from gpufleet.recommend.types import (
    RISK_LEVELS,
    Candidate,
    Complexity,
    CurrentDeployment,
    Migration,
    PerformanceChange,
    Recommendation,
    RiskLevel,
    Workload,
)
from gpufleet.units import HOURS_PER_MONTH, SECONDS_PER_HOUR

#: software stack per accelerator vendor (as written in gpu_specs.csv ``vendor``)
STACKS = {
    "nvidia": "CUDA",
    "amd": "ROCm",
    "aws": "Neuron",
    "google": "XLA/TPU",
    "intel": "SynapseAI (Gaudi)",
    "habana": "SynapseAI (Gaudi)",
    "xilinx": "Vitis (FPGA)",
}
#: an SLO met with less than this relative margin is "thin headroom" [fraction]
SLO_HEADROOM = 0.2
#: the highest risk a migration proposes by default (the workload's max_risk overrides it)
MIGRATE_DEFAULT_MAX_RISK = "medium"
#: ranked alternatives examined for a move within the migration's risk limit (the candidate's own risk is only
#: a part of the move's: a cross-provider move adds two medium factors, a stack change a high one)
MIGRATE_POOL = 60
#: the region a provider's current deployment is taken to run in when none is stated: AWS sends requests to
#: us-east-1 when no region is configured (AWS General Reference, "Service endpoints": us-east-1 is the
#: default of the global endpoints; the console's first region). Other providers: the cheapest region that
#: lists the instance (stated in the answer either way)
PROVIDER_DEFAULT_REGION: dict[str, str] = {"aws": "us-east-1"}
#: the current deployment is costed as it runs: no host RAM/vCPU minimums applied to it
AS_DEPLOYED = HostRules(
    ram_per_weight=0.0,
    ram_base_gib=0.0,
    vcpus_base_inference=0.0,
    vcpus_per_gpu_inference=0.0,
    vcpus_per_gpu_training=0.0,
)


def _stack(vendor: str) -> str:
    return STACKS.get(vendor.lower(), vendor)


def check_current_names(table: OfferTable, cur: CurrentDeployment) -> np.ndarray:
    """The rows of ``table`` listing the current deployment's provider and instance type; an unknown
    provider or instance type (or a region the provider has no offer in) is an :class:`UnknownNameError`
    with close matches. ``recommend`` calls it too, so a misspelt ``current:`` block is never ignored."""
    prov = table.column("provider")
    inst = table.column("instance_type")
    mask: np.ndarray = np.asarray((prov == cur.provider) & (inst == cur.instance_type), dtype=bool)
    if not mask.any():
        providers = sorted({str(p) for p in prov})
        if cur.provider not in providers:
            raise UnknownNameError(
                "provider",
                cur.provider,
                providers,
                hint="Pass the provider the current deployment runs on (--current-provider, lower case).",
            )
        known = sorted({str(i) for i in inst[prov == cur.provider]})
        raise UnknownNameError(
            "instance type",
            cur.instance_type,
            known,
            hint=f"(instance types of provider {cur.provider!r}; `gpufleet catalog offers --provider "
            f"{cur.provider}` lists them).",
        )
    if cur.region is not None:
        regions = table.column("region")[prov == cur.provider]
        if cur.region not in set(regions.tolist()):
            raise UnknownNameError(
                "region",
                cur.region,
                sorted({str(r) for r in regions}),
                hint=f"(regions of provider {cur.provider!r} in the catalog).",
            )
    return mask


def resolve_current(
    table: OfferTable, cur: CurrentDeployment, price_kind_prices: np.ndarray, pricing: str = "on_demand"
) -> tuple[int, int, list[str]]:
    """(row index, instance count, notes) of the current deployment in ``table``.

    Region None -> the cheapest region listing the instance. A stated ``gpu_count`` that differs from
    count x GPUs per instance picks the same-family instance with that many GPUs of the same model (GPU
    Fleet Optimizer "1x P5 H100" -> p5.4xlarge), else scales the instance count up to cover it.
    """
    prov = table.column("provider")
    inst = table.column("instance_type")
    region = table.column("region")
    notes: list[str] = []
    mask = check_current_names(table, cur)
    count = cur.count
    gpu = table.column("gpu")
    gcount = table.column("gpu_count")
    row0 = int(np.flatnonzero(mask)[0])
    per_node = int(gcount[row0])
    if cur.gpu_count is not None and cur.gpu_count != count * per_node:
        family = cur.instance_type.split(".")[0] + "."
        same = (
            np.array([str(i).startswith(family) for i in inst]) & (prov == cur.provider) & (gpu == gpu[row0])
        )
        exact = same & (gcount == cur.gpu_count)
        if exact.any():
            swapped = str(inst[np.flatnonzero(exact)[0]])
            notes.append(
                f"Current deployment states {cur.gpu_count} GPU(s); {cur.instance_type} has {per_node}, so "
                f"the {cur.gpu_count}-GPU {swapped} of the same family is used."
            )
            mask = exact & (prov == cur.provider)
            count = 1
        else:
            count = max(1, math.ceil(cur.gpu_count / per_node))
            notes.append(
                f"Current deployment states {cur.gpu_count} GPU(s); {cur.instance_type} has {per_node} "
                f"per instance, so {count} instance(s) are costed."
            )
    if cur.region is not None:
        rmask = mask & (region == cur.region)
        if not rmask.any():
            raise UnknownNameError(
                "region",
                cur.region,
                sorted({str(r) for r in region[mask]}),
                hint=f"{cur.instance_type} is listed in these regions.",
            )
        mask = rmask
    rows = np.flatnonzero(mask)
    prices = np.where(np.isfinite(price_kind_prices[rows]), price_kind_prices[rows], np.inf)
    if not np.isfinite(prices).any():
        if pricing in ("1y", "3y"):
            term = "1-year" if pricing == "1y" else "3-year"
            raise InputError(
                f"The current instance {cur.provider} {cur.instance_type} has no {term} commitment rate: the "
                f"shipped discount table has no published {term} figure for {cur.provider} and no rate was "
                "fetched. Give your rate with --commitments FILE (workload field commitments_file; format in "
                f"docs/pricing.md), fetch rates with `gpufleet catalog update --provider {cur.provider}`, or "
                "use --pricing on_demand."
            )
        raise InputError(
            f"The current instance {cur.instance_type} has no {pricing} price in the catalog; "
            "choose on_demand pricing or another instance."
        )
    return int(rows[int(np.argmin(prices))]), count, notes


def current_pricing(w: Workload) -> str:
    """How the current deployment is billed: its own ``pricing`` (a GPU Fleet Optimizer ``use_spot`` asks
    for spot alternatives to an on-demand deployment), else the workload's."""
    assert w.current is not None
    return w.current.pricing or w.pricing


def current_candidate(
    table: OfferTable, w: Workload, est: Estimator, spot: dict[str, SpotAssumption]
) -> tuple[Candidate, list[str]]:
    """The current deployment as a :class:`Candidate` (best use of its hardware), with notes."""
    from gpufleet.cost.prices import node_prices_usd_per_hour, price_kind_for

    assert w.current is not None
    pricing = current_pricing(w)
    kind_prices = node_prices_usd_per_hour(table, price_kind_for(pricing), w.commitments_file)
    row, count, notes = resolve_current(table, w.current, kind_prices, pricing)
    one = table.take(np.array([row]))
    wc = dataclasses.replace(
        w,
        pricing=pricing,
        budget_usd_per_month=None,
        # the deployment as it runs today passes none of the filters meant for the alternatives: before, a
        # workload with --geo us and a current deployment in eu-west-1 read "cannot hold the model"
        providers=(),
        regions=(),
        gpu_vendors=(),
        geos=(),
        exclude_providers=(),
        provider_classes=(),
        gpu_choices=(),
        min_gpu_memory_gib=None,
        gpus_per_node=(),
        max_price_per_gpu_usd_per_hour=None,
        allow_embargoed_countries=True,
        max_nodes=max(count, 1),
        tier="dev",  # the deployment as it runs today: no tier exclusions, fallbacks or risk filter
        allow_fallback=True,
        max_risk=None,
    )
    if not w.is_training:  # the current fleet as sized: count nodes, no target
        wc = dataclasses.replace(
            wc, concurrency=None, target_output_tokens_per_s=None, target_requests_per_s=None
        )
    cs = build_candidates(one, wc, est, spot, AS_DEPLOYED)
    if len(cs) == 0:
        raise InputError(
            f"The current deployment ({w.current.instance_type} x{count}) cannot hold {w.model} at "
            f"{w.precision} per the estimator, so there is nothing to migrate from. Check the "
            "model, the precision and the instance count."
        )
    nodes_per_unit = np.array([cs.configs[int(c)].nodes_per_unit for c in cs.cfg])
    usable = nodes_per_unit <= count
    if w.is_training:
        usable &= nodes_per_unit == count
        if not usable.any():
            usable = nodes_per_unit <= count
        row_i = int(np.flatnonzero(usable)[np.argmax(cs.speed[usable])])
        cand = materialise(cs, wc, row_i, spot)
    else:
        units = count // np.maximum(nodes_per_unit, 1)
        tput = cs.output_tokens_per_s * units
        row_i = int(np.flatnonzero(usable)[np.argmax(tput[usable])])
        cand = materialise(cs, wc, row_i, spot)
        n_units = count // cand.nodes_per_replica
        if n_units != 1:
            scale = float(n_units)
            cand = dataclasses.replace(
                cand,
                total_nodes=count,
                total_gpus=count * cand.gpus_per_node,
                replicas=cand.replicas * n_units,
                cost_usd_per_hour=cand.cost_usd_per_hour * scale,
                cost_usd_per_month=cand.cost_usd_per_month * scale,
                output_tokens_per_s=cand.output_tokens_per_s.scaled(scale)
                if cand.output_tokens_per_s
                else None,
                requests_per_s=cand.requests_per_s.scaled(scale) if cand.requests_per_s else None,
                saturated_output_tokens_per_s=cand.saturated_output_tokens_per_s * scale
                if cand.saturated_output_tokens_per_s is not None
                else None,
            )
    if not cand.meets_slo:
        notes.append(
            "The current deployment itself misses the SLOs/deadline per the estimator: "
            + "; ".join(cand.slo_misses)
            + "."
        )
    return cand, notes


def _current_unit_costs(w: Workload, cur: Candidate) -> Candidate:
    """The current deployment's unit costs at the load the alternatives are sized for (``w``: the user's
    target, else the current deployment's own capacity, like-for-like); a concurrency is the streams x what
    one stream receives on the current deployment."""
    if w.is_training:
        return cur
    load = target_output_tokens_per_s(w)
    tput = cur.output_tokens_per_s
    if load is None and w.concurrency is not None and tput is not None and cur.batch_per_replica:
        load = w.concurrency * tput.central / (cur.replicas * cur.batch_per_replica)
    return with_unit_costs(cur, load, w.hours_per_month)


def _ratio(new: float | None, old: float | None) -> float | None:
    return new / old if new is not None and old not in (None, 0.0) else None


def performance_change(
    cur: Candidate, new: Candidate, *, cur_at: Candidate | None = None, new_at: Candidate | None = None
) -> PerformanceChange:
    """Throughput: the capacities (each at its operating batch); TTFT and TPOT: at the same load when both
    deployments were re-estimated there (``cur_at``, ``new_at``: :func:`at_concurrency`), else at each one's
    operating batch."""

    def c(x: object) -> float | None:
        return getattr(x, "central", None)

    thr_new = c(new.tokens_per_s) or c(new.output_tokens_per_s)
    thr_old = c(cur.tokens_per_s) or c(cur.output_tokens_per_s)
    lat_cur, lat_new = (cur_at, new_at) if cur_at is not None and new_at is not None else (cur, new)
    return PerformanceChange(
        throughput_ratio=_ratio(thr_new, thr_old),
        ttft_ratio=_ratio(c(lat_new.ttft_s), c(lat_cur.ttft_s)),
        tpot_ratio=_ratio(c(lat_new.tpot_s), c(lat_cur.tpot_s)),
        time_to_train_ratio=_ratio(c(new.time_to_train_s), c(cur.time_to_train_s)),
    )


def load_concurrency(w: Workload, new: Candidate) -> int | None:
    """Requests in flight at the workload's load: the concurrency it states, else the streams the recommended
    deployment runs to carry the target throughput (its operating streams x target / its capacity, both
    central; at most its operating streams). None without a load (training, no target)."""
    streams = (new.batch_per_replica or 0) * new.replicas
    if w.is_training or streams < 1:
        return None
    if w.concurrency is not None:
        return int(w.concurrency)
    load = target_output_tokens_per_s(w)
    tput = new.output_tokens_per_s
    if load is None or tput is None or tput.central <= 0:
        return None
    return max(1, min(streams, math.ceil(streams * load / tput.central - 1e-9)))


def at_concurrency(est: Estimator, w: Workload, cand: Candidate, concurrency: int) -> Candidate | None:
    """``cand``'s latency and throughput with ``concurrency`` requests in flight spread over its replicas
    (None when it cannot hold them or the estimate fails). For the comparison only: the candidate's own
    fields stay at its operating batch (the largest meeting the SLOs), as their labels say."""
    if w.is_training or cand.replicas < 1 or cand.tpot_s is None:
        return None
    batch = max(1, math.ceil(concurrency / cand.replicas))
    if cand.batch_per_replica is not None and batch == cand.batch_per_replica:
        return cand
    try:
        e = est.inference(
            gpu=cand.gpu,
            precision=w.precision,
            gpu_count=cand.gpus_per_node * cand.nodes_per_replica,
            tp=cand.tp,
            pp=cand.pp,
            batch=batch,
            workload=dataclasses.replace(w, allow_fallback=True),
        )
    except GpufleetError:
        return None
    if e is None or e.tpot_s is None or e.output_tokens_per_s is None:
        return None
    per_unit = max(int(getattr(e, "replicas", 1) or 1), 1)
    scale = cand.replicas / per_unit
    return dataclasses.replace(
        cand,
        batch_per_replica=batch,
        ttft_s=e.ttft_s,
        tpot_s=user_tpot(e),
        output_tokens_per_s=e.output_tokens_per_s.scaled(scale),
        requests_per_s=e.requests_per_s.scaled(scale) if e.requests_per_s is not None else None,
    )


def compare_at_load(
    est: Estimator, w: Workload, cur: Candidate, new: Candidate
) -> tuple[Candidate | None, Candidate | None, str]:
    """Now and after re-estimated at the workload's load (:func:`load_concurrency`) for the TTFT/TPOT
    comparison, with a note saying at what load. Before, the current deployment was re-estimated at the
    recommended one's full capacity (its operating batch x replicas: 128 requests in flight for a 3 req/s
    load that keeps ~31 in flight) and its fields overwritten: it then showed a TPOT above the SLO next to
    ``meets_slo: true``, and the ratios compared a load the user does not have."""
    conc = load_concurrency(w, new)
    if conc is None:
        return None, None, ""
    cur_at = at_concurrency(est, w, cur, conc)
    new_at = at_concurrency(est, w, new, conc)
    if cur_at is None or new_at is None:
        which = "current" if cur_at is None else "recommended"
        return (
            None,
            None,
            (
                f"The {which} deployment cannot hold {conc} concurrent requests (the workload's load); "
                "TTFT and TPOT are compared at each deployment's operating batch."
            ),
        )
    return (
        cur_at,
        new_at,
        (
            f"TTFT and TPOT changes are at the workload's load: {conc} concurrent requests "
            f"({cur_at.batch_per_replica} per current replica, {new_at.batch_per_replica} per new one); each "
            "deployment's own figures are at its operating batch (the largest meeting the SLOs)."
        ),
    )


def one_off_move_usd(w: Workload, cur: Candidate, new: Candidate) -> tuple[float, float | None]:
    """(weights [GiB], one-off USD to move them from the current region to the new one; None = no sourced
    egress price for that path). A move's one-off cost is stated next to its monthly savings (AWS Compute
    Optimizer pairs savings with ``migrationEffort``; egress is billed per GB by the source:
    egress_prices.csv, fleet-anchors E). Weights only: datasets, checkpoints and traffic depend on sizes the
    workload does not give."""
    from gpufleet.fleet.refdata import transfer_usd

    gib = w.checkpoint_gib()
    if gib <= 0 or not cur.region or not new.region:
        return gib, None
    return gib, transfer_usd(cur.provider, cur.region, new.provider, new.region, gib)


def _one_off_text(w: Workload, cur: Candidate, new: Candidate) -> str:
    gib, usd = one_off_move_usd(w, cur, new)
    if gib <= 0:
        return "one-off transfer not priced (no parameter count for the model)"
    if usd is None:
        return f"one-off: the weights (~{gib:,.0f} GiB) leave {cur.provider} {cur.region}; no sourced price"
    amount = f"{usd:,.0f}" if usd >= 10 else f"{usd:,.2f}"
    return (
        f"one-off: ~${amount} to move the weights (~{gib:,.0f} GiB) out of {cur.provider} {cur.region} "
        "(egress_prices.csv; datasets, checkpoints and traffic extra, per GB)"
    )


def assess_risk(
    w: Workload, cur: Candidate, new: Candidate
) -> tuple[RiskLevel, tuple[str, ...], Complexity, tuple[str, ...]]:
    """Risk level and complexity, each with its reasons: the move's own (provider, stack, multi-node, SLO
    headroom, egress) and the recommended candidate's (:mod:`gpufleet.recommend.risk`)."""
    high: list[str] = []
    med: list[str] = []
    low: list[str] = []
    cx: list[str] = []
    if new.spot is not None:
        s = new.spot
        med.append(
            f"spot capacity: ~{s.interruptions_per_h:.2f} interruptions/h assumed; "
            + (
                f"{s.replicas_provisioned} replicas paid for to keep {s.replicas_needed} serving"
                if not w.is_training
                else f"expected run time x{s.wall_time_factor:.2f} from checkpoint/restart"
            )
        )
    if new.provider != cur.provider:
        med.append(
            f"cross-provider move ({cur.provider} -> {new.provider}): new accounts, IAM, networking, quotas"
        )
        med.append(
            f"cross-provider egress: weights, data and traffic leave {cur.provider} (billed per GB by "
            f"{cur.provider}; not in the monthly cost); {_one_off_text(w, cur, new)}"
        )
        cx.append("different provider")
    elif new.region != cur.region:
        low.append(
            f"region change ({cur.region} -> {new.region}): cross-region transfer is billed; "
            f"{_one_off_text(w, cur, new)}"
        )
    if new.nodes_per_replica > 1 and cur.nodes_per_replica <= 1:
        med.append(f"multi-node: {new.nodes_per_replica} nodes per replica depend on the inter-node network")
        cx.append("multi-node orchestration")
    if new.gpu_vendor.lower() != cur.gpu_vendor.lower():
        high.append(
            f"different software stack: {_stack(cur.gpu_vendor)} -> {_stack(new.gpu_vendor)} "
            f"({cur.gpu_vendor} -> {new.gpu_vendor}); kernels, engines and precisions must be re-validated"
        )
        cx.append("port to another accelerator stack")
    if new.generation_year and cur.generation_year and new.generation_year < cur.generation_year:
        low.append(
            f"older GPU generation: {new.gpu} ({new.generation_year}) "
            f"replaces {cur.gpu} ({cur.generation_year})"
        )
    if new.gpu != cur.gpu:
        cx.append(f"different GPU ({cur.gpu} -> {new.gpu}): re-benchmark and re-tune batch sizes")
    from gpufleet.recommend.host_arch import arch_change

    port = arch_change((cur.provider, cur.instance_type, cur.gpu), (new.provider, new.instance_type, new.gpu))
    if port:
        cx.append(port)
    if w.ttft_p95_s and new.ttft_s and new.ttft_s.central > (1 - SLO_HEADROOM) * w.ttft_p95_s:
        med.append(
            f"thin TTFT headroom: {new.ttft_s.central * 1e3:.0f} ms vs SLO {w.ttft_p95_s * 1e3:.0f} ms"
        )
    if w.tpot_p95_s and new.tpot_s and new.tpot_s.central > (1 - SLO_HEADROOM) * w.tpot_p95_s:
        med.append(
            f"thin TPOT headroom: {new.tpot_s.central * 1e3:.1f} ms vs SLO {w.tpot_p95_s * 1e3:.1f} ms"
        )
    for reason in new.risk_reasons:  # the candidate's own risk (class, fabric, price age, estimate, ...)
        said = "software stack" in reason or (new.spot is not None and reason.startswith("spot capacity"))
        if reason not in high + med and not said:  # the stack change and spot are said above, once
            med.append(reason)
    if not (high or med or low):
        low.append("same provider and accelerator vendor: only the instance type or count changes")
    risk: RiskLevel = "high" if high or len(med) >= 3 or new.risk == "high" else "medium" if med else "low"
    if high:
        basis = f"{len(high)} high factor(s)"
    elif len(med) >= 3:
        basis = f"{len(med)} medium factors (3 or more medium factors make a move high)"
    elif new.risk == "high":
        basis = f"the new deployment's own risk is high ({new.provider} {new.instance_type})"
    elif med:
        basis = f"{len(med)} medium factor(s) (fewer than 3, no high factor)"
    else:
        basis = "low factors only"
    factors = (
        [f"risk {risk} because of {basis}"]
        + [f"high: {r}" for r in high]
        + [f"medium: {r}" for r in med]
        + [f"low: {r}" for r in low]
    )
    complexity: Complexity = (
        "high"
        if any("stack" in c for c in cx)
        else "medium"
        if port or any(c in ("different provider", "multi-node orchestration") for c in cx)
        else "low"
    )
    if not cx:
        cx.append("same GPU and provider: change the instance type / count only")
    return risk, tuple(factors), complexity, tuple(cx)


def current_shortfall(w: Workload, cur: Candidate) -> str:
    """Why the current deployment does not meet the workload ('' when it does)."""
    parts = list(cur.slo_misses)
    if not w.is_training and cur.output_tokens_per_s is not None:
        target = target_output_tokens_per_s(w)
        if target is not None and cur.output_tokens_per_s.central < target * (1 - 1e-9):
            parts.append(f"{cur.output_tokens_per_s.central:,.0f} output tokens/s < target {target:,.0f}")
        cap = cur.replicas * (cur.batch_per_replica or 0)
        if w.concurrency is not None and cap < w.concurrency:
            parts.append(f"holds {cap} concurrent requests within the SLOs < {w.concurrency}")
    return "; ".join(parts)


def work_equivalent_month_usd(w: Workload, cur: Candidate, new: Candidate) -> float:
    """Monthly cost of ``new`` for the same work as ``cur`` does in a month [USD/month].

    Inference: both serve the same target, so the candidate's monthly cost. Training: ``new`` costs its
    per-run cost times the runs the current deployment makes a month (``runs_per_month``, the one training
    cost semantics; commitments still bill 730 h: then the larger of that and the committed monthly cost).
    """
    if not (w.is_training and cur.runs_per_month is not None and new.cost_usd_per_run is not None):
        return new.cost_usd_per_month
    by_work = new.cost_usd_per_run * cur.runs_per_month
    return max(by_work, new.cost_usd_per_month) if new.price_kind in COMMITTED_KINDS else by_work


def _beats(w: Workload, objective: str, cur: Candidate, new: Candidate) -> bool:
    if objective == "fastest":
        return new.speed > cur.speed * 1.0001
    if objective == "throughput_per_dollar":

        def tpd(c: Candidate) -> float:
            t = c.tokens_per_s or c.output_tokens_per_s
            return t.central / c.cost_usd_per_hour if t else 0.0

        return tpd(new) > tpd(cur) * 1.0001
    if w.is_training and new.cost_usd_per_run is not None and cur.cost_usd_per_run is not None:
        return new.cost_usd_per_run < cur.cost_usd_per_run * 0.9999
    return new.cost_usd_per_month < cur.cost_usd_per_month * 0.9999


def _current_geo(w: Workload) -> str | None:
    """The geo a migration stays in when the workload names no geos or regions: the stated current region's.

    A platform engineer moves a running service within its geography unless told otherwise: the users'
    round trip (a trans-Pacific hop adds ~100-150 ms RTT, far beyond a chat TTFT budget's network share;
    AWS "Regions and Zones": choose the Region near your users) and the data's jurisdiction (GDPR Art. 44:
    personal data leaves the EU/EEA only under Chapter V safeguards) go with the region; AWS Compute
    Optimizer, Azure Advisor and GCP Recommender right-size in place and never propose another region.
    None when the workload already filters geos or regions, or the current region is not in regions.csv
    (then nothing is assumed). The region is always known here (:func:`with_current_region`)."""
    cur = w.current
    if cur is None or cur.region is None or w.geos or w.regions:
        return None
    geo = region_location(cur.provider, cur.region).geo
    return None if geo == "unknown" else geo


def with_current_region(table: OfferTable, w: Workload) -> tuple[Workload, str]:
    """``w`` with its current deployment's region stated, and a note saying where it came from: the given
    one, else the provider's default region (:data:`PROVIDER_DEFAULT_REGION`) where the instance is listed
    there, else the cheapest region listing the instance (the same rule as :func:`resolve_current`)."""
    cur = w.current
    assert cur is not None
    if cur.region is not None:
        return w, ""
    from gpufleet.cost.prices import node_prices_usd_per_hour, price_kind_for

    mask = check_current_names(table, cur)
    listed = {str(r) for r in table.column("region")[mask]}
    default = PROVIDER_DEFAULT_REGION.get(cur.provider)
    if default is not None and default in listed:
        region, why = default, f"the default region of {cur.provider}"
    else:
        pricing = current_pricing(w)
        kind_prices = node_prices_usd_per_hour(table, price_kind_for(pricing), w.commitments_file)
        row, _count, _notes = resolve_current(table, cur, kind_prices, pricing)
        region, why = str(table.column("region")[row]), f"the cheapest region listing {cur.instance_type}"
    note = (
        f"Current region not given: {cur.provider} {cur.instance_type} is taken to run in {region} ({why}); "
        "pass --current-region (current: region) if it runs elsewhere."
    )
    return dataclasses.replace(w, current=dataclasses.replace(cur, region=region)), note


#: training steps the probe of the current deployment's throughput is sized for (tokens/s does not depend on
#: the run length; only the time to train does, and it is recomputed with the resolved tokens)
_PROBE_STEPS = 1000
#: most instances of the family's largest size tried when the stated current deployment cannot hold the model
_MAX_SCALED_NODES = 64


def _current_as_stated_or_scaled(
    table: OfferTable, w: Workload, est: Estimator, spot: dict[str, SpotAssumption]
) -> tuple[Workload, Candidate, list[str]]:
    """The current deployment as a candidate. A GPU Fleet Optimizer-style statement (``gpu_count`` given:
    "2x P5") that cannot hold the model is analysed from the smallest deployment of the same family and GPU
    that can (the guide's remedy for "CANNOT FIT MODEL": increase the GPU count), said first in the notes;
    any other current deployment that cannot hold it stays an error."""
    probe = w
    if w.train_tokens_from_current:  # a provisional run length: only tokens/s is read from this probe
        probe = dataclasses.replace(
            w, train_tokens=float(_PROBE_STEPS * w.global_batch_sequences * w.seq_len_tokens)
        )
    cur_dep = w.current
    assert cur_dep is not None
    try:
        cur, notes = current_candidate(table, probe, est, spot)
        return w, cur, notes
    except InputError as exc:
        if cur_dep.gpu_count is None or "cannot hold" not in str(exc):
            raise
        first = exc
    prov, inst, gpu = table.column("provider"), table.column("instance_type"), table.column("gpu")
    gcount = table.column("gpu_count")
    family = cur_dep.instance_type.split(".")[0] + "."
    rows0 = np.flatnonzero((prov == cur_dep.provider) & (inst == cur_dep.instance_type))
    same = np.array([str(i).startswith(family) for i in inst]) & (prov == cur_dep.provider)
    same &= gpu == gpu[rows0[0]]
    largest = str(inst[np.flatnonzero(same)[int(np.argmax(gcount[same]))]])
    per_node = int(gcount[np.flatnonzero(inst == largest)[0]])
    start = max(1, math.ceil((cur_dep.gpu_count or 1) / per_node))
    for n in range(start, _MAX_SCALED_NODES + 1):
        scaled = dataclasses.replace(cur_dep, instance_type=largest, count=n, gpu_count=None)
        try:
            cur, notes = current_candidate(table, dataclasses.replace(probe, current=scaled), est, spot)
        except InputError:
            continue
        note = (
            f"The current deployment as stated ({cur_dep.gpu_count} x {gpu[rows0[0]]}, "
            f"{cur_dep.instance_type} family) cannot hold {w.model} at {w.precision} for {w.task}; the "
            f"smallest {family[:-1]} deployment that can, {largest} x{n} ({n * per_node} GPUs), is analysed "
            "as today's (the optimizer's remedy for CANNOT FIT: more GPUs)."
        )
        return dataclasses.replace(w, current=scaled), cur, [note, *notes]
    raise first


def _tokens_from_current(
    table: OfferTable, w: Workload, est: Estimator, spot: dict[str, SpotAssumption], cur: Candidate
) -> tuple[Workload, Candidate, list[str]]:
    """``w`` with ``train_tokens`` = what the current deployment trains in ``hours_per_month`` (its estimated
    tokens/s x hours x 3600): the GPU Fleet Optimizer's ``monthly_hours`` for a training workload, so that
    now and after do the same work a month; the current deployment re-costed for that run."""
    tps = cur.tokens_per_s.central if cur.tokens_per_s is not None else None
    if not tps or tps <= 0:
        raise InputError(
            f"The current deployment's training throughput for {w.model} could not be estimated, so the "
            "tokens it trains a month are unknown. Give train_tokens (the run's tokens) instead."
        )
    tokens = tps * w.hours_per_month * SECONDS_PER_HOUR
    # a month's work must be done within the month to keep up: the deadline is at most a month
    deadline = min(w.deadline_h, HOURS_PER_MONTH) if w.deadline_h is not None else HOURS_PER_MONTH
    resolved = dataclasses.replace(
        w, train_tokens=tokens, train_tokens_from_current=False, deadline_h=deadline
    )
    cur, notes = current_candidate(table, resolved, est, spot)
    note = (
        f"Training work per month: what the current deployment trains in {w.hours_per_month:g} h "
        f"(monthly hours) at its estimated {tps:,.0f} tokens/s = {tokens:,.3g} tokens; the alternatives "
        f"are costed for the same tokens a month and must train them within {deadline:g} h."
    )
    return resolved, cur, [note, *notes]


def _risk_over(level: str, limit: str) -> bool:
    return RISK_LEVELS.index(level) > RISK_LEVELS.index(limit)


def _within_move_risk(
    w: Workload, cur: Candidate, rec: Recommendation, max_risk: str, limit: int
) -> Recommendation:
    """``rec`` with only the alternatives whose *move* (:func:`assess_risk`, not the candidate's own risk)
    is at most ``max_risk``, the top ``limit`` of them; the best one passed over is named in the message."""
    if rec.status != "ok":
        return rec
    kept: list[Candidate] = []
    over: list[tuple[Candidate, str, tuple[str, ...]]] = []
    for c in rec.ranked:
        level, reasons, _cx, _cxr = assess_risk(w, cur, c)
        if _risk_over(level, max_risk):
            over.append((c, level, reasons))
        else:
            kept.append(c)
    if not over:
        return dataclasses.replace(rec, ranked=rec.ranked[:limit])
    c0, level0, reasons0 = over[0]
    passed = (
        f"{len(over)} of the {len(rec.ranked)} best alternatives are passed over because the move to them is "
        f"above risk {max_risk}; the first, {c0.provider} {c0.instance_type} ({c0.region}), is a "
        f"{level0}-risk move ({'; '.join(reasons0)}). Raise max_risk (--max-risk high) to consider them."
    )
    if not kept:
        return dataclasses.replace(
            rec,
            status="over_risk",
            best=None,
            ranked=(),
            closest=(),  # the report would label them by SLO misses or budget; the message names the first
            message=f"OVER RISK: {passed}",
        )
    best = kept[0]
    msg = (
        f"{rec.message} Best move within risk {max_risk}: {best.provider} {best.instance_type} "
        f"({best.region}) x{best.total_nodes}. {passed}"
    )
    return dataclasses.replace(rec, best=best, ranked=tuple(kept[:limit]), message=msg)


def migrate_on(
    table: OfferTable,
    w: Workload,
    est: Estimator,
    spot: dict[str, SpotAssumption],
    *,
    objective: str | None = None,
    limit: int = 10,
    full_table: OfferTable | None = None,
    host_rules: HostRules | None = None,
) -> Migration:
    """Compare ``w.current`` with the best alternative over ``table``."""
    if w.current is None:
        raise InputError(
            f"Workload {w.name!r} has no current deployment, so there is nothing to migrate from. "
            "Add current: {provider, instance_type, count, region} to the workload, or use "
            "recommend() for a new workload."
        )
    w, region_note = with_current_region(table, w)
    w, cur, notes = _current_as_stated_or_scaled(table, w, est, spot)
    if w.train_tokens_from_current:
        w, cur, token_notes = _tokens_from_current(table, w, est, spot, cur)
        notes += token_notes
    if region_note:
        notes.insert(0, region_note)
    if w.current is not None and w.current.pricing is not None and w.current.pricing != w.pricing:
        notes.append(
            f"The current deployment is costed at {w.current.pricing} prices, as it is billed today; the "
            f"alternatives at {w.pricing}."
        )
    target_w = w
    max_risk = w.max_risk or MIGRATE_DEFAULT_MAX_RISK
    if w.max_risk is None:  # moving what runs today: never to a high-risk candidate unless asked
        target_w = dataclasses.replace(w, max_risk=MIGRATE_DEFAULT_MAX_RISK)
        notes.append(
            f"Moves are limited to risk <= {MIGRATE_DEFAULT_MAX_RISK} (the risk of the move, its factors "
            "listed under Risk; a running deployment); set max_risk: high (--max-risk high) to see every "
            "option."
        )
    stay = _current_geo(w)
    assert w.current is not None
    if stay is not None:
        target_w = dataclasses.replace(target_w, geos=(stay,))
        notes.append(
            f"Alternatives are limited to geo {stay}, where the current deployment runs "
            f"({w.current.provider} {w.current.region}): a move keeps its users' latency and its data's "
            "jurisdiction; pass geos (--geo) or regions (--region) to look elsewhere."
        )
    if (
        not w.is_training
        and w.concurrency is None
        and w.target_output_tokens_per_s is None
        and w.target_requests_per_s is None
        and cur.output_tokens_per_s is not None
    ):
        target_w = dataclasses.replace(target_w, target_output_tokens_per_s=cur.output_tokens_per_s.central)
        notes.append(
            f"No throughput target given: alternatives must match the current deployment's estimated "
            f"{cur.output_tokens_per_s.central:,.0f} output tokens/s (like-for-like)."
        )
    rec = recommend_on(table, target_w, est, spot, objective=objective, limit=max(limit, MIGRATE_POOL),
                       full_table=full_table, host_rules=host_rules or DEFAULT_HOST_RULES)  # fmt: skip
    rec = _within_move_risk(w, cur, rec, max_risk, limit)
    rec = dataclasses.replace(rec, notes=rec.notes + tuple(notes))
    obj = rec.objective
    new = rec.best
    shortfall = current_shortfall(w, cur)
    same = new is not None and (new.provider, new.instance_type, new.total_nodes, new.tp) == (
        cur.provider,
        cur.instance_type,
        cur.total_nodes,
        cur.tp,
    )
    if new is not None and (same or (not shortfall and not _beats(w, obj, cur, new))):
        new = None
    cur = _current_unit_costs(target_w, cur)
    cur_m = cur.cost_usd_per_month
    if new is None:
        why = rec.message if rec.status != "ok" else f"no candidate beats it on {obj}"
        if shortfall:
            why += f". Note: {shortfall}"
        verdict = (
            f"Stay on {cur.provider} {cur.instance_type} x{cur.total_nodes} (${cur_m:,.0f}/month): {why}."
        )
        return Migration(
            workload=w,
            current=cur,
            recommended=None,
            current_cost_usd_per_month=cur_m,
            new_cost_usd_per_month=None,
            savings_usd_per_month=None,
            savings_pct=None,
            performance=None,
            risk="low",
            risk_reasons=("no change recommended",),
            complexity="low",
            complexity_reasons=("none",),
            verdict=verdict,
            recommendation=rec,
        )
    cur_at, new_at, load_note = compare_at_load(est, target_w, cur, new)
    if load_note:
        rec = dataclasses.replace(rec, notes=(*rec.notes, load_note))
    risk, reasons, cx, cx_reasons = assess_risk(w, cur, new)
    new_m = work_equivalent_month_usd(w, cur, new)
    save: float | None = cur_m - new_m
    pct = 100.0 * (cur_m - new_m) / cur_m if cur_m > 0 else None
    perf = performance_change(cur, new, cur_at=cur_at, new_at=new_at)
    pct_text = f" ({pct:.0f} %)" if pct is not None else ""
    run_text = ""
    if w.is_training and cur.time_to_train_s and new.time_to_train_s and new.cost_usd_per_run is not None:
        run_text = (
            f" Per run: {cur.time_to_train_s.central / SECONDS_PER_HOUR:,.0f} h -> "
            f"{new.time_to_train_s.central / SECONDS_PER_HOUR:,.0f} h, ${cur.cost_usd_per_run or 0:,.0f} -> "
            f"${new.cost_usd_per_run:,.0f}; monthly figures are for the same number of runs as today."
        )
    extra: float | None = None
    if shortfall:
        # a saving is stated only against an alternative meeting the same SLOs: today's does not, so the
        # difference is what meeting the workload costs (before: "Savings: -$3,616/month (-492.4%)")
        extra, save, pct = new_m - cur_m, None, None
        change = f"meeting the workload costs ${abs(extra):,.0f}/month {'more' if extra >= 0 else 'less'}"
        run_text += (
            f" The current deployment falls short ({shortfall}), so this is no saving: the new one meets "
            "the workload."
        )
    else:
        assert save is not None
        change = f"{'saves' if save >= 0 else 'costs'} ${abs(save):,.0f}/month{pct_text}"
    verdict = (
        f"Move from {cur.provider} {cur.instance_type} x{cur.total_nodes} (${cur_m:,.0f}/month) to "
        f"{new.provider} {new.instance_type} x{new.total_nodes} in {new.region} "
        f"(${new_m:,.0f}/month): {change}; risk {risk}, complexity {cx}.{run_text}"
    )
    return Migration(
        workload=w,
        current=cur,
        recommended=new,
        current_cost_usd_per_month=cur_m,
        new_cost_usd_per_month=new_m,
        savings_usd_per_month=save,
        savings_pct=pct,
        performance=perf,
        risk=risk,
        risk_reasons=reasons,
        complexity=cx,
        complexity_reasons=cx_reasons,
        verdict=verdict,
        recommendation=rec,
        cost_change_to_meet_usd_per_month=extra,
    )
