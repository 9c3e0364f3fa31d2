"""The typed results of telemetry findings: thresholds, options, per-GPU and per-group findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

from gpufleet.telemetry.analyze import Window
from gpufleet.telemetry.inventory import GpuCost

#: ``InsufficientData``: observed for fewer than ``Thresholds.min_observed_hours`` in the window: no finding,
#: no options, no savings (AWS Compute Optimizer needs >= 30 h of metrics in the lookback before it
#: recommends anything: docs.aws.amazon.com compute-optimizer/latest/ug/requirements; fleet-anchors A.1).
FINDINGS: Final[tuple[str, ...]] = (
    "Idle",
    "Overprovisioned",
    "Underprovisioned",
    "Optimized",
    "InsufficientData",
)
#: Compute Optimizer's GPU reason codes, plus ours for bandwidth and power in the same style.
REASON_CODES: Final[tuple[str, ...]] = (
    "GPUOverprovisioned",
    "GPUUnderprovisioned",
    "GPUMemoryOverprovisioned",
    "GPUMemoryUnderprovisioned",
    "GPUMemoryBandwidthOverprovisioned",
    "GPUMemoryBandwidthUnderprovisioned",
    "GPUPowerOverprovisioned",
    # serving evidence (vLLM/TGI/SGLang metrics of the workload): a GPU is short only when users wait
    "ServingQueueing",
    "ServingKVCachePressure",
    "ServingPreemptions",
    "ServingTTFTAboveSLO",
    "ServingTPOTAboveSLO",
    # training evidence (the job's step-time gauge): a training GPU is short when its steps are slow
    "TrainingStepTimeAboveEstimate",
    "TrainingStepTimeDegrading",
    "TrainingStepTimeStalls",
)
#: Reason codes that make a GPU Underprovisioned. Compute or DRAM activity near 100 % is not one of them:
#: a busy GPU is the goal (GPU_UTIL/SM_ACTIVE say the GPU is used, not that work waits); what says capacity
#: is short is memory held near capacity, or users waiting (queue, TTFT, TPOT, KV-cache pressure,
#: preemptions), which the serving engines export, or, for training, steps slower than the estimator
#: expects, or slowing down or stalling over the run (the job's step-time gauge).
UNDER_REASONS: Final[tuple[str, ...]] = (
    "GPUMemoryUnderprovisioned",
    "ServingQueueing",
    "ServingKVCachePressure",
    "ServingPreemptions",
    "ServingTTFTAboveSLO",
    "ServingTPOTAboveSLO",
    "TrainingStepTimeAboveEstimate",
    "TrainingStepTimeDegrading",
    "TrainingStepTimeStalls",
)
UPPER_BOUND_CAVEAT: Final = (
    "compute from {signal}: an upper bound (a kernel running on one SM counts as busy); enable "
    "DCGM_FI_PROF_SM_ACTIVE in dcgm-exporter for a real measure"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Thresholds:
    idle_compute: float = 0.05
    #: a GPU whose memory p99 holds at least this share of its capacity is not Idle even at near-zero compute:
    #: FB used / nvidia-smi memory.used is "memory allocated by active contexts" (fleet-anchors C.1, C.5), so
    #: a process (a loaded model waiting for traffic) holds it, and releasing the GPU would kill it; it is
    #: Overprovisioned instead (a smaller GPU or a MIG slice that still holds the memory)
    idle_max_memory: float = 0.10
    over_compute: float = 0.40
    #: a GPU busy only in bursts: compute mean / compute at the percentile below this (the share of its
    #: observed time the GPU works, when it works at that level) while the percentile itself is at or above
    #: ``over_compute``: a nightly 3 h job (12 % of the day), one 20 h job in a 4-day window. The percentile
    #: alone called it Optimized (Compute Optimizer's percentile sizing has no duty cycle); it is held idle
    #: between jobs, Overprovisioned (share it or run the jobs on scheduled capacity). gpufleet's default
    #: (judgement, not a published rule); serving engines with their own metrics are judged by them instead.
    burst_duty_max: float = 0.30
    under_compute: float = 0.85
    over_memory: float = 0.40
    under_memory: float = 0.90
    over_bandwidth: float = 0.30
    under_bandwidth: float = 0.85
    over_power: float = 0.40
    headroom: float = 0.20  # added to observed needs when sizing a target
    commit_min_busy_share: float = 0.70  # observed hours / window for a commitment option
    #: fewer observed hours in the window: InsufficientData (AWS Compute Optimizer: >= 30 h of metrics within
    #: the lookback, docs.aws.amazon.com compute-optimizer/latest/ug/requirements; fleet-anchors A.1)
    min_observed_hours: float = 30.0
    #: serving evidence (vLLM/TGI/SGLang): requests waiting at the percentile (>= 1: at more than
    #: 1 - percentile of the steps some request waited for admission, i.e. the engine was saturated)
    serving_queue_requests: float = 1.0
    #: KV-cache blocks in use at the percentile (vLLM preempts requests when blocks run out)
    kv_cache_pressure: float = 0.90
    #: latency SLOs checked at the percentile when the engine exports TTFT/TPOT histograms. Defaults: MLPerf
    #: Inference's Llama-2-70B Server-scenario constraints (TTFT 2 s, TPOT 200 ms; mlcommons.org inference
    #: rules, v4.0); set your own with --ttft-slo / --tpot-slo
    ttft_slo_s: float = 2.0
    tpot_slo_s: float = 0.2
    #: training step time (gpufleet's defaults, judgement rather than a published rule; set your own):
    #: the last quarter's median this much above the first quarter's = a run slowing down (thermal or
    #: power throttling, a data loader falling behind, memory fragmentation)
    step_time_degradation: float = 0.20
    #: step time at the window's percentile / its median at or above this = stalls (stragglers or
    #: data-loader waits: a synchronous step waits for the slowest rank)
    step_time_spread: float = 1.5
    #: a trend needs at least this span of step-time samples [h]
    step_time_min_span_h: float = 2.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    #: release | mig_slice | smaller_gpu | larger_gpu | fewer_gpus | price_model | scale_out | schedule_bursts
    kind: str
    target: str  # e.g. "MIG 3g.40gb on H100-SXM", "aws g6e.xlarge (L40S)", "commit_1y"
    price_usd_per_gpu_hour: float | None  # on-demand basis, per current GPU replaced
    savings_usd_per_month: float | None  # on-demand basis (CO savingsOpportunity)
    savings_after_discounts_usd_per_month: float | None  # at the GPU's own price kind
    savings_pct: float | None
    performance_risk: float  # 0-4
    projected_utilization: float | None  # of the binding resource on the target, 0-1
    rank: int
    gpu_share: float | None = None  # MIG: compute slices / total slices of the current GPU
    notes: tuple[str, ...] = ()
    #: what the option itself costs per month (on demand; per GPU replaced, or the node's instances)
    cost_usd_per_month: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class GpuFinding:
    gpu_key: str
    host: str
    gpu_index: int
    model: str | None
    gpu: str | None  # spec id
    mig_profile: str | None
    namespace: str | None
    workload: str | None  # pod or job
    team: str | None
    finding: str
    reason_codes: tuple[str, ...]
    idle: bool
    compute_signal: str  # the metric compute was read from
    compute_p: float | None  # at the percentile, 0-1
    compute_mean: float | None
    gpu_util_p: float | None  # 0-1 (nvidia-smi view)
    memory_p99_gib: float | None
    memory_capacity_gib: float | None
    dram_active_p: float | None
    power_share_p: float | None
    hours: float
    cost: GpuCost
    cost_usd: float | None  # over the observed hours at the GPU's price kind
    cost_usd_per_month: float | None
    current_performance_risk: str  # VeryLow | Low | Medium | High
    options: tuple[Option, ...]
    caveats: tuple[str, ...]
    #: the largest FB used in the window [GiB]: what a target must hold (memory is not compressible: a job
    #: that peaks above a GPU's memory fails with out-of-memory; Compute Optimizer uses the maximum of each
    #: 5-minute interval, Azure Advisor the P100 of memory; fleet-anchors A.1, A.3)
    memory_peak_gib: float | None = None
    #: what the finding rests on, one line per signal (compute, memory, serving evidence or its absence)
    evidence: tuple[str, ...] = ()
    workload_key: str | None = None
    tier: str | None = None  # the recommender's tier the options were filtered at

    @property
    def best_savings_usd_per_month(self) -> float:
        s = [
            o.savings_usd_per_month
            for o in self.options
            if o.savings_usd_per_month is not None and o.rank == 1
        ]
        return max(s[0], 0.0) if s else 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupFinding:
    """A node (host) or a workload (namespace/pod or job): the GPUs it holds and what they could save."""

    level: str  # "node" | "workload"
    name: str
    team: str | None
    gpus: int
    finding: str
    reason_codes: tuple[str, ...]
    idle_gpus: int
    cost_usd_per_month: float | None
    savings_usd_per_month: float
    options: tuple[Option, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkloadFinding:
    """A workload (Deployment, StatefulSet, Job, batch job) across its pods: the data minimum, the finding
    and the options apply to the workload, per replica; money is per replica x mean replicas."""

    key: str
    namespace: str | None
    name: str
    source: str  # how the pods were grouped: inventory, job, pod name, pod
    team: str | None  # charged team: inventory workload team, inventory host team, else the namespace
    tier: str
    pods: int
    gpus: int
    replicas: float  # mean GPUs in use at once
    hours: float  # observed hours of the workload (any pod)
    gpu_hours: float
    finding: str
    reason_codes: tuple[str, ...]
    evidence: tuple[str, ...]
    recommendation: str  # GPU type, MIG profile or fraction per replica, or "keep"
    gpu_fraction: float | None  # share of one GPU a replica needs (compute or memory, with headroom)
    cost_usd: float | None  # GPU-hours in the window x price
    cost_usd_per_month: float | None  # replicas x price x 730 h
    savings_usd_per_month: float  # best option per replica x replicas, never negative
    replica: GpuFinding  # the per-replica finding (options, caveats, compute and memory figures)


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetFindings:
    window: Window
    thresholds: Thresholds
    gpus: tuple[GpuFinding, ...]
    nodes: tuple[GroupFinding, ...]
    workloads: tuple[WorkloadFinding, ...]
    consolidation: dict[str, tuple[int, int]] = field(
        default_factory=dict
    )  # spec -> (MIG-able GPUs, GPUs after packing)
    #: first and last sample in the window (the observed span; the window is the lookback)
    observed_start: datetime | None = None
    observed_end: datetime | None = None
    #: fleet-level caveats (e.g. how a Prometheus path merged time chunks)
    caveats: tuple[str, ...] = ()
    #: where the statistics were computed: "store" (DuckDB over Parquet) or "prometheus <url>"
    source: str = "store"


__all__ = [
    "FINDINGS",
    "REASON_CODES",
    "UNDER_REASONS",
    "UPPER_BOUND_CAVEAT",
    "FleetFindings",
    "GpuFinding",
    "GroupFinding",
    "Option",
    "Thresholds",
    "WorkloadFinding",
]
