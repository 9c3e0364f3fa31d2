"""Result types of the recommendation engine: plain frozen dataclasses, units in every field name.

The report/CLI layer renders these; the library never prints. Money is USD, time is seconds unless the name
says otherwise (``_h`` = hours), memory is GiB (2**30 bytes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from gpufleet.estimate.types import Interval
from gpufleet.units import GIB

Objective = Literal["cheapest", "fastest", "throughput_per_dollar"]
OBJECTIVES: tuple[str, ...] = get_args(Objective)

#: workload pricing choice; maps to catalog price kinds (1y -> commit_1y, 3y -> commit_3y)
Pricing = Literal["on_demand", "spot", "1y", "3y"]
PRICINGS: tuple[str, ...] = get_args(Pricing)

#: ``ok``: a best candidate meets every constraint.
#: ``infeasible_slo``: some offers fit in memory but none meets the latency SLOs / deadline (``closest``
#: holds the nearest). ``over_budget``: candidates meet the SLOs but none is within the budget cap
#: (``closest`` holds the cheapest). ``cannot_fit``: no offer holds the model (``cannot_fit`` says why and
#: what would make it fit). ``no_offers``: the filters left no offer at all.
#: ``over_risk``: candidates meet every constraint but all exceed ``max_risk`` (``closest`` holds the best).
Status = Literal["ok", "infeasible_slo", "over_budget", "over_risk", "cannot_fit", "no_offers"]
RiskLevel = Literal["low", "medium", "high"]
RISK_LEVELS: tuple[str, ...] = get_args(RiskLevel)
#: deployment tier: ``dev`` anything that runs; ``batch`` interruptible offline work; ``production`` serving
#: users: no marketplace/community hosts, no stale or undated prices, at least 2 replicas (docs/recommend.md)
Tier = Literal["dev", "batch", "production"]
TIERS: tuple[str, ...] = get_args(Tier)
#: percentile of the estimate's interval the SLOs/deadline/throughput target are checked against: ``p50`` the
#: central value, ``p90`` the pessimistic end (p90 of latencies and time to train, p10 of throughput)
Confidence = Literal["p50", "p90"]
CONFIDENCES: tuple[str, ...] = get_args(Confidence)
Complexity = Literal["low", "medium", "high"]

#: near-tie band of the ranking (docs/recommend.md "Near ties"): candidates within this fraction of the best
#: value of the objective (cost; time for ``fastest``; cost per token for ``throughput_per_dollar``) rank
#: the operationally simpler first (fewer nodes per replica/job, no cross-node TP, lower risk, no expert
#: parallelism, no marketplace host, fewer GPUs). 3 %: well inside the estimator's own error (median
#: |error| 10 % leave-one-out over the 72 calibration cases, README "Accuracy"), so a 3 % cheaper pick is
#: not reliably cheaper; and small against what a multi-node job or a community host costs to run (a node
#: failure restarts every node of the job; cluster set-up and debugging time); yet small enough that a real
#: saving (a cheaper GPU, a spot or regional discount, typically 10 % and more) still wins.
NEAR_TIE_FRACTION = 0.03
#: largest near-tie band accepted (a wider band would let the ranking ignore real savings)
MAX_NEAR_TIE_FRACTION = 0.5


#: a training job given no deadline must still finish within this horizon [h] (365 days). Beyond it the
#: plan is not one anyone runs: the catalog's prices are current for about a year (the production tier
#: calls a price older than 365 days stale: AWS cut P4/P5 prices by up to 45 % in June 2025), a new GPU
#: generation ships about yearly (NVIDIA's one-year cadence, Computex 2024: Hopper 2022, Blackwell 2024,
#: Blackwell Ultra 2025), and Epoch AI ("The Longest Training Run", Sevilla et al. 2022) finds runs longer
#: than ~15 months lose to starting later on better hardware; published pre-training runs take weeks to a
#: few months (Llama 2: 184k A100-hours for 7B over 2T tokens on a few thousand GPUs; Llama 3 405B: 54 days
#: of the run reported). Before, a 2T-token pre-train of Llama-2-7B was proposed on one 4 x L40S host for
#: 48,000 h (5.5 years).
DEFAULT_TRAINING_HORIZON_H = 365.0 * 24.0


@dataclass(frozen=True, slots=True, kw_only=True)
class CurrentDeployment:
    """What the workload runs on today (for migration analysis)."""

    provider: str
    instance_type: str
    count: int = 1  # number of instances (nodes) [count]
    region: str | None = None  # None = the cheapest region the catalog lists for that instance
    gpu_count: int | None = None  # total GPUs as the source states it (GPU Fleet Optimizer "1x P5"); when it
    # differs from count x GPUs of the instance, the same-family instance with that many GPUs is used
    pricing: str | None = None  # how it is billed today (on_demand, spot, 1y, 3y); None = the workload's


@dataclass(frozen=True, slots=True, kw_only=True)
class Workload:
    """A validated workload (from a file, kwargs or a scenario, via :mod:`gpufleet.recommend.workload`)."""

    name: str
    model: str  # model id, alias, config.json path or size class (SMALL/MEDIUM/LARGE/MASSIVE)
    task: str  # gpufleet.estimate.types.Task except "load"
    precision: str
    # inference
    input_len_tokens: int = 512
    output_len_tokens: int = 256
    concurrency: int | None = None  # concurrent requests to serve [count]
    target_output_tokens_per_s: float | None = None  # whole-system target [tokens/s]
    target_requests_per_s: float | None = None  # whole-system target [requests/s]
    ttft_p95_s: float | None = None  # SLO on time to first token [s]
    tpot_p95_s: float | None = None  # SLO on time per output token [s]
    # training
    train_tokens: float | None = None  # tokens processed in the run (dataset tokens x epochs) [tokens]
    train_tokens_from_current: bool = False  # migrate: train_tokens = what the current deployment trains in
    # hours_per_month (GPU Fleet Optimizer monthly_hours); resolved by migrate before anything is ranked
    deadline_h: float | None = None  # the run must finish within [h]
    runs_per_month: float | None = None  # training runs per month; None = one run a month, or the share of
    # a run the schedule's month holds when a run takes longer than hours_per_month [count]
    global_batch_sequences: int = 256  # sequences per optimizer step [count]
    seq_len_tokens: int = 4096
    #: fine-tuning trainer preset sizing the memory (gpufleet.estimate.recipes.RECIPES; fine-tuning tasks
    #: only); None = the estimator's generic defaults (AdamW, fp32 master weights)
    recipe: str | None = None
    #: fine-tuning optimizer (gpufleet.estimate.memory.OPTIMIZERS), overriding the recipe's; None = the
    #: recipe's, else AdamW
    optimizer: str | None = None
    # schedule and pricing
    hours_per_month: float = 730.0  # hours the workload runs per month [h]
    pricing: str = "on_demand"  # one of PRICINGS
    commitments_file: str | None = None  # YAML/JSON commitment discount override (docs/pricing.md)
    # filters
    providers: tuple[str, ...] = ()  # empty = all
    regions: tuple[str, ...] = ()  # glob patterns; empty = all
    gpu_vendors: tuple[str, ...] = ()  # e.g. ("NVIDIA", "AMD"); empty = all
    max_nodes: int = 8  # largest node count considered per offer [count]
    #: production serving: spread the replica units over at least this many zones of the region and size
    #: them to survive one zone's loss (gpufleet.recommend.failure); 1 = one node's loss only
    min_zones: int = 1
    # practice (docs/recommend.md "Defaults")
    tier: str = "dev"  # one of TIERS
    confidence: str = "p90"  # one of CONFIDENCES
    max_risk: str | None = None  # drop candidates above this risk level (one of RISK_LEVELS)
    allow_fallback: bool = False  # let a GPU run the precision through a fallback (e.g. bf16 as fp16 on V100)
    allow_marketplace: bool = False  # production tier: also marketplace/community hosts
    allow_consumer_gpus: bool = False  # production tier: also GeForce (consumer) cards
    allow_stale_prices: bool = False  # production tier: also prices older than the staleness limit / undated
    allow_embargoed_countries: bool = False  # offers in filters.EMBARGOED_COUNTRIES too
    geos: tuple[str, ...] = ()  # geo buckets (gpufleet.catalog.regions.GEOS); empty = all
    exclude_providers: tuple[str, ...] = ()
    provider_classes: tuple[str, ...] = ()  # hyperscaler, gpu_cloud, marketplace, aggregator; empty = all
    gpu_choices: tuple[tuple[str, ...], ...] = ()  # spec ids per named GPU (a family expands); empty = all
    gpu_order: str = "any_of"  # any_of: every choice ranks together; ordered: first choice that is feasible
    min_gpu_memory_gib: float | None = None  # per GPU, device-reported [GiB]
    gpus_per_node: tuple[int, ...] = ()  # GPUs per instance allowed [count]; empty = all
    max_price_per_gpu_usd_per_hour: float | None = None  # node price / GPUs, for the workload's pricing
    budget_usd_per_month: float | None = None
    objective: str = "cheapest"  # one of OBJECTIVES
    near_tie_fraction: float = NEAR_TIE_FRACTION  # near-tie band of the ranking (0 = strict order) [fraction]
    current: CurrentDeployment | None = None
    description: str = ""
    notes: tuple[str, ...] = ()  # how the workload's defaults were resolved (e.g. the released precision)

    @property
    def is_training(self) -> bool:
        return self.task != "inference"

    def checkpoint_gib(self) -> float:
        """Size of the model's weights at the workload's precision, incl. quantisation scales: what moving
        the checkpoint transfers [GiB]; 0 for a model without a parameter count (a size class)."""
        from gpufleet.errors import GpufleetError
        from gpufleet.estimate.memory import weights_bytes
        from gpufleet.models import count_params, resolve_model

        try:
            return weights_bytes(count_params(resolve_model(self.model)).total, self.precision) / GIB
        except GpufleetError:
            return 0.0

    @property
    def min_replicas(self) -> int:
        """Replica units a serving deployment keeps at least: 2 in production (one can fail or be updated),
        each on nodes of its own (a unit is the node(s) holding one or more replicas), so that a node
        failure or a rolling update never takes every replica down (Kubernetes pod anti-affinity /
        topology spread across nodes; docs/recommend.md "Practitioners' rules we check"). Production also
        keeps one unit spare above the load (N+1, :mod:`gpufleet.recommend.failure`)."""
        return 2 if self.tier == "production" and not self.is_training else 1

    @property
    def gpus(self) -> tuple[str, ...]:
        """Every spec id the GPU choices allow (empty = all)."""
        out: list[str] = []
        for choice in self.gpu_choices:
            out += [g for g in choice if g not in out]
        return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotCost:
    """How spot pricing was turned into an expected cost (see :mod:`gpufleet.cost.spot`)."""

    price_usd_per_hour: float  # spot price of one node [USD/h]
    interruptions_per_h: float  # assumed hazard rate lambda [1/h]
    checkpoint_interval_h: float | None  # Young's tau = sqrt(2 C M) (training) [h]
    wall_time_factor: float  # E[T] / W for training (>= 1); 1 for inference
    replica_availability: float  # fraction of time one replica serves (inference) [0..1]
    replicas_provisioned: int  # replicas paid for to keep the needed ones up (inference) [count]
    replicas_needed: int  # replicas the throughput target needs [count]
    assumption_source: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One way to run the workload: an offer x node count x parallelism x replica count, with its cost."""

    provider: str
    region: str
    instance_type: str
    gpu: str  # accelerator spec id
    gpu_vendor: str
    gpus_per_node: int
    nodes_per_replica: int  # nodes one model replica (or the training job) spans [count]
    tp: int  # tensor parallel (inference with ep > 1: attention TP inside the expert-parallel group)
    pp: int
    dp: int  # training data-parallel degree (1 for inference)
    replicas: int  # model copies paid for (inference; spot includes over-provisioning) [count]
    total_nodes: int  # instances billed [count]
    total_gpus: int
    price_kind: str  # catalog price kind used (on_demand, spot, commit_1y, ...)
    price_usd_per_node_hour: float
    cost_usd_per_hour: float  # all billed nodes while running (spot: expected) [USD/h]
    cost_usd_per_month: float  # inference: on the workload's schedule (commitments bill 730 h); training:
    # runs_per_month x cost_usd_per_run [USD/month]
    # inference: USD per month / output tokens per month at the user's load (load_output_tokens_per_s over
    # the workload's hours_per_month); None for training or where the workload states no load [USD/1M tok]
    cost_usd_per_million_output_tokens_at_load: float | None
    cost_usd_per_run: float | None  # training: the whole run
    mem_per_gpu_gib: float  # memory needed per GPU
    mem_capacity_gib: float  # per GPU, device-reported
    # performance (None where it does not apply)
    # inference: capacity of the replicas the load needs at the operating (SLO-meeting) batch [tokens/s]
    output_tokens_per_s: Interval | None = None
    requests_per_s: Interval | None = None
    ttft_s: Interval | None = None
    tpot_s: Interval | None = None
    batch_per_replica: int | None = None  # operating concurrency per replica
    tokens_per_s: Interval | None = None  # training throughput [tokens/s]
    time_to_train_s: Interval | None = None  # training, including spot interruptions where spot
    meets_slo: bool = True
    slo_misses: tuple[str, ...] = ()  # human-readable, with numbers
    within_budget: bool = True
    spot: SpotCost | None = None
    generation_year: int | None = None  # GPU release year
    ep: int = 1  # inference: GPUs a MoE model's routed experts are split over per replica (1 = split by TP);
    # attention runs TP ``tp`` x data parallel ``ep / tp`` inside them (vLLM/SGLang --enable-expert-parallel)
    precision_fallback: bool = False  # the GPU cannot compute at the workload's precision: fallback used
    # deployability (catalog/capabilities.py) and price provenance
    provider_class: str = "unknown"  # hyperscaler, gpu_cloud, marketplace, aggregator, unknown
    fabric: str = ""  # scale-out network of one node, e.g. "EFA 3200 Gb/s" or "TCP 25 Gb/s, single node"
    fabric_gbps_per_node: float | None = None  # [Gb/s]
    multi_node_capable: bool = False  # provider AND instance allow clusters
    vcpus: float | None = None  # per node [count]
    host_memory_gib: float | None = None  # host RAM per node [GiB]
    price_date: str = ""  # ISO date the price was captured (earliest of the capture window); "" = unknown
    price_age_days: int | None = None  # days from price_date to the catalog's newest capture; None = unknown
    # what the user pays for (training: one run; runs per month on the schedule)
    runs_per_month: float | None = None  # training: runs paid for per month (cost_usd_per_month / per run)
    # inference: USD per month / output tokens per month at full capacity (saturated_output_tokens_per_s over
    # the workload's hours_per_month) [USD/1M tok]
    cost_usd_per_million_output_tokens_saturated: float | None = None
    load_output_tokens_per_s: float | None = None  # the user's load, central [output tokens/s]
    output_tokens_per_month_at_load: float | None = None  # the load over hours_per_month [tokens/month]
    saturated_output_tokens_per_s: float | None = None  # every paid replica at its saturated batch [tokens/s]
    output_tokens_per_month_saturated: float | None = None  # that over hours_per_month [tokens/month]
    risk: str = "low"  # one of RISK_LEVELS
    risk_reasons: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    #: training: the fine-tuning recipe preset that sized the memory (None: the estimator's generic defaults)
    recipe: str | None = None
    #: training: the optimizer the memory and the optimizer step were sized for (None: inference)
    optimizer: str | None = None
    #: production serving: the failure it keeps its SLOs through, e.g. "one node lost: 3 replica units
    #: deployed, 2 carry the load at p90 (N+1)"; "" where nothing is claimed (gpufleet.recommend.failure)
    survives: str = ""
    #: why this candidate ranks above a better one on the objective (the near-tie rule), e.g. "near tie:
    #: within 3 % of #2 ($2.35/h), ranked first as simpler: fewer GPUs (1 vs 2)"; "" when it does not
    rank_note: str = ""

    @property
    def speed(self) -> float:
        """The speed the objectives and the Pareto front use; 0 where unknown.

        Inference: per-stream decode speed 1 / TPOT [tokens/s per request] (every candidate already meets the
        throughput target by its replica count). Training: 1 / time to train [1/s].
        """
        if self.tpot_s is not None and self.tpot_s.central > 0:
            return 1.0 / self.tpot_s.central
        if self.time_to_train_s is not None and self.time_to_train_s.central > 0:
            return 1.0 / self.time_to_train_s.central
        return 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class FitSuggestion:
    """One change that would make the model fit, with its numbers."""

    kind: Literal["lower_precision", "more_gpus", "more_memory_gpu", "lora", "qlora"]
    description: str
    mem_per_gpu_gib: float  # memory needed per GPU after the change
    example_offer: str | None = None  # "provider instance_type (region)" that would fit, if any


@dataclass(frozen=True, slots=True, kw_only=True)
class CannotFit:
    """Why nothing fits and what would."""

    mem_needed_single_gpu_gib: float  # the whole job on one GPU
    largest_gpu_memory_gib: float  # largest per-GPU memory among the offers considered
    largest_node_memory_gib: float  # largest GPUs x memory in one node among the offers considered
    reason: str
    suggestions: tuple[FitSuggestion, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Recommendation:
    """The answer for one workload."""

    workload: Workload
    status: Status
    objective: str
    best: Candidate | None  # None unless status == "ok"
    ranked: tuple[Candidate, ...]  # the feasible candidates in objective order (top ``limit``)
    pareto: tuple[Candidate, ...]  # cost vs throughput front among feasible candidates, cheapest first
    # (cost = $/run for training, $/month for inference; throughput = output or trained tokens/s)
    closest: tuple[Candidate, ...] = ()  # infeasible_slo / over_budget: nearest misses
    cannot_fit: CannotFit | None = None
    pareto_latency: tuple[Candidate, ...] = ()  # cost vs per-stream speed (1/TPOT; training 1/time) front
    offers_considered: int = 0
    candidates_evaluated: int = 0
    message: str = ""  # one paragraph explaining the status
    notes: tuple[str, ...] = ()  # assumptions and fallbacks, shown to users


@dataclass(frozen=True, slots=True, kw_only=True)
class PerformanceChange:
    """Recommended vs current; ratios > 1 mean the recommended value is larger."""

    throughput_ratio: float | None  # output tokens/s (inference) or tokens/s (training)
    ttft_ratio: float | None
    tpot_ratio: float | None
    time_to_train_ratio: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Migration:
    """Moving the current deployment to the recommended one."""

    workload: Workload
    current: Candidate
    recommended: Candidate | None  # None when nothing beats the current setup
    current_cost_usd_per_month: float
    new_cost_usd_per_month: float | None
    savings_usd_per_month: float | None
    savings_pct: float | None  # of the current monthly cost [%]
    performance: PerformanceChange | None
    risk: RiskLevel
    risk_reasons: tuple[str, ...]
    complexity: Complexity
    complexity_reasons: tuple[str, ...]
    verdict: str  # one paragraph: migrate / stay, and why
    recommendation: Recommendation
    #: new - current [USD/month] when the current deployment misses the workload (its SLOs or load): what
    #: meeting it costs more (negative: less). Not a saving, since the two do not meet the same SLOs, so
    #: ``savings_usd_per_month`` and ``savings_pct`` are None then. None when the current one meets it.
    cost_change_to_meet_usd_per_month: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioResult:
    """One named scenario: its recommendation and, where it has a current deployment, the migration."""

    name: str
    description: str
    recommendation: Recommendation | None  # None only when ``error`` is set
    migration: Migration | None = None
    error: str | None = None  # a GpufleetError message when the scenario could not be evaluated


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioSetResult:
    name: str
    results: tuple[ScenarioResult, ...] = field(default_factory=tuple)
