"""Risk of one candidate: a level (low, medium, high) with its reasons, usable as a filter (``max_risk``).

What raises risk (docs/recommend.md "Risk"):

- high: a marketplace/community host for production serving; a precision fallback; a multi-node training job
  over a plain TCP network; an undated price in production; a non-NVIDIA accelerator (another software
  stack).
- medium: a marketplace/community or aggregator host; an unknown provider class; several nodes per replica or
  job (more failure points, cluster set-up); a fabric bandwidth that is assumed, not documented; spot
  capacity; a commitment lock-in; serving split over several GPUs that only PCIe connects (or more than an
  NVLink bridge joins: a pair of PCIe cards); a wide estimate
  (p90/p10 above :data:`WIDE_INTERVAL_RATIO`) or an accelerator whose specs are flagged uncertain; a stale or
  undated price; host RAM/vCPUs not listed; an AWS Local Zone; expert-parallel MoE serving (the estimator
  runs 1.4-2.8x faster than the measured DeepSeek-R1 EP deployments, docs/performance.md Known limits);
  serving whose weights fill more than :data:`TIGHT_WEIGHTS_SHARE` of each GPU (little KV-cache room);
  training whose estimated peak fills more than :data:`TIGHT_TRAINING_MEMORY_SHARE` of each GPU.

Three or more medium reasons make the level high. Cross-provider egress is added by migration analysis.
"""

from __future__ import annotations

from gpufleet.catalog.capabilities import Fabric
from gpufleet.catalog.specs import get_spec
from gpufleet.estimate.comms import scaleup_group_gpus
from gpufleet.estimate.types import Interval
from gpufleet.recommend.deploy import STALE_PRICE_DAYS
from gpufleet.recommend.deployability import production_exclusion
from gpufleet.recommend.types import RISK_LEVELS, Workload

#: p90 / p10 of the main performance figure above which the estimate is called wide: GPUs the profile is
#: calibrated on give ~2.9 (e.g. llama-3.1-8b TPOT on H100/A100/A40), uncalibrated ones ~6.5 (L4, A10G,
#: RTX 4090), so 4 separates "measured hardware" from "extrapolated" (docs/performance.md, intervals)
WIDE_INTERVAL_RATIO = 4.0
#: medium reasons that together make the risk high
MEDIUM_TO_HIGH = 3
#: serving: weights above this share of a GPU's memory leave the KV cache little room: vLLM budgets
#: ``gpu_memory_utilization`` 0.9 of the device, and practice keeps the weights within ~90 % of that budget
#: (0.9 x 0.9 = 0.81 of the device) so that the KV cache absorbs bursts and long prompts without preempting
#: requests (vLLM "Optimization and Tuning": preemption when KV space runs out; raise TP or use a larger GPU)
TIGHT_WEIGHTS_SHARE = 0.81
#: training: an estimated peak above this share of the device's memory is within the memory model's own
#: error (peak_memory_gib: p90 |error| 6 % over the published torchtune/litgpt cases, leave-one-out and
#: held out alike, README accuracy table; 1 / 1.06 = 0.943) and the PyTorch caching allocator's
#: fragmentation, which the model does not add (docs/memory.md, "Not modelled"; PyTorch "CUDA memory
#: management": reserved-but-unallocated memory, ``expandable_segments``): such a job may OOM on its first
#: steps
MEMORY_ESTIMATE_P90_ERROR = 0.06
TIGHT_TRAINING_MEMORY_SHARE = 1.0 / (1.0 + MEMORY_ESTIMATE_P90_ERROR)


def risk_level(high: list[str], medium: list[str]) -> str:
    if high or len(medium) >= MEDIUM_TO_HIGH:
        return "high"
    return "medium" if medium else "low"


def assess(
    w: Workload,
    *,
    provider_class: str,
    fabric: Fabric,
    nodes: int,
    gpu: str,
    precision_fallback: bool,
    price_kind: str,
    price_age_days: float | None,
    host_known: bool,
    interval: Interval | None,
    local_zone: bool = False,
    gpus_per_replica: int = 1,
    ep: int = 1,
    weights_share: float = 0.0,
    memory_share: float = 0.0,
) -> tuple[str, tuple[str, ...]]:
    """(level, reasons) of one candidate (module doc)."""
    high: list[str] = []
    med: list[str] = []
    prod = w.tier == "production"
    if provider_class == "marketplace":
        text = "marketplace/community host (hardware, location and uptime vary per host)"
        (high if prod else med).append(text)
    elif provider_class in ("aggregator", "unknown"):
        med.append(f"{provider_class} provider (capabilities of the underlying cloud not known)")
    if precision_fallback:
        high.append(f"precision fallback: the GPU cannot compute {w.precision} natively")
    if nodes > 1:
        if w.is_training and not fabric.rdma:
            high.append(f"multi-node training over a plain TCP network ({fabric.label})")
        else:
            med.append(f"{nodes} nodes per {'job' if w.is_training else 'replica'} over {fabric.label}")
        if fabric.assumed:
            med.append("fabric bandwidth assumed, not documented")
    if price_kind == "spot":
        med.append("spot capacity (interruptions)")
    if price_age_days is None:
        (high if prod else med).append("price date unknown")
    elif price_age_days > STALE_PRICE_DAYS:
        med.append(f"price {price_age_days:.0f} days old")
    if local_zone:
        med.append("AWS Local Zone (a metro extension: fewer instance types and services, small capacity)")
    if not host_known:
        med.append("host RAM/vCPUs not listed")
    if interval is not None and interval.p10 > 0 and interval.p90 / interval.p10 > WIDE_INTERVAL_RATIO:
        med.append(f"wide estimate, hardware not calibrated (p90/p10 = {interval.p90 / interval.p10:.1f})")
    if not w.is_training and weights_share > TIGHT_WEIGHTS_SHARE:
        med.append(
            f"weights fill {weights_share:.0%} of each GPU's memory (> {TIGHT_WEIGHTS_SHARE:.0%}): little "
            "KV-cache room, requests preempted under bursts (more TP or a larger GPU)"
        )
    if w.is_training and memory_share > TIGHT_TRAINING_MEMORY_SHARE:
        med.append(
            f"training memory fills {memory_share:.1%} of each GPU (> {TIGHT_TRAINING_MEMORY_SHARE:.1%}): "
            f"within the memory estimate's error (p90 {MEMORY_ESTIMATE_P90_ERROR:.0%}) and, on CUDA, "
            "allocator fragmentation: may run out of memory (more GPUs, ZeRO-3 or full recompute)"
        )
    if not w.is_training and ep > 1:
        med.append(
            f"expert-parallel MoE serving (EP{ep}): estimated 1.4-2.8x faster than measured EP deployments "
            "(docs/performance.md, Known limits)"
        )
    if price_kind.startswith(("commit", "reserved", "savings_plan", "cud")):
        med.append(f"commitment lock-in ({price_kind})")
    latency = w.ttft_p95_s is not None or w.tpot_p95_s is not None
    excluded = production_exclusion(gpu, serving=not w.is_training, latency=latency)
    if excluded:  # the production tier leaves these out (deployability); other tiers see why
        med.append(excluded + " (not for production)")
    try:
        vendor = get_spec(gpu).vendor
        if vendor.lower() != "nvidia":
            high.append(f"{vendor} software stack (kernels, engines and tooling differ from CUDA)")
        if get_spec(gpu).uncertain:
            med.append(f"{gpu} specs uncertain (estimate not calibrated on it)")
        spec = get_spec(gpu)
        # an NVLink bridge joins only a pair (H200 NVL: up to 4) of PCIe cards; a wider TP group all-reduces
        # over PCIe like cards without one (NVIDIA H100 PCIe / A100 PCIe product briefs: "NVLink bridge
        # connects two GPUs"; the estimator's comms model prices it so, estimate.comms.scaleup_group_gpus)
        bridge = scaleup_group_gpus(spec)
        if not w.is_training and gpus_per_replica > 1 and not spec.has_scaleup_fabric:
            med.append(
                f"{gpus_per_replica} GPUs per replica over PCIe (no NVLink or Infinity Fabric): the "
                "PCIe collectives are priced in, yet such serving is still estimated up to ~2x too fast "
                "(docs/performance.md, Known limits)"
            )
        elif not w.is_training and bridge is not None and gpus_per_replica > bridge:
            med.append(
                f"{gpus_per_replica} GPUs per replica over PCIe (an NVLink bridge joins only {bridge}): the "
                "PCIe collectives are priced in, yet such serving is still estimated up to ~2x too fast "
                "(docs/performance.md, Known limits)"
            )
    except Exception:
        med.append(f"{gpu} not in the accelerator table")
    return risk_level(high, med), tuple(high + med)


def check_max_risk(level: str | None) -> str | None:
    """Validate a ``max_risk`` value (None = no filter)."""
    from gpufleet.errors import InputError

    if level is not None and level not in RISK_LEVELS:
        raise InputError(f"Unknown risk level {level!r}. Allowed: {', '.join(RISK_LEVELS)}.")
    return level


def within(level: str, max_risk: str | None) -> bool:
    """True when ``level`` is at most ``max_risk`` (always when None)."""
    return max_risk is None or RISK_LEVELS.index(level) <= RISK_LEVELS.index(max_risk)
