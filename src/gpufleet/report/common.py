"""Formatting shared by every renderer: numbers, candidate rows, cost breakdowns, assumption lines.

Pure functions over the result types of :mod:`gpufleet.recommend.types`; they return strings and plain data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, get_args

from gpufleet.catalog.regions import region_text
from gpufleet.estimate.types import Interval
from gpufleet.recommend.types import (
    DEFAULT_TRAINING_HORIZON_H,
    Candidate,
    FitSuggestion,
    Migration,
    Recommendation,
    ScenarioResult,
    ScenarioSetResult,
    Workload,
)
from gpufleet.units import HOURS_PER_MONTH, SECONDS_PER_HOUR

Result = Recommendation | Migration | ScenarioResult | ScenarioSetResult
ReportFormat = Literal["table", "json", "markdown", "html"]
FORMATS: tuple[str, ...] = get_args(ReportFormat)

STATUS_TITLES: dict[str, str] = {
    "ok": "OK",
    "infeasible_slo": "INFEASIBLE: no option meets the SLOs / deadline",
    "over_budget": "OVER BUDGET: no option meets the SLOs within the budget",
    "over_risk": "OVER RISK: every option that meets the workload is above the risk limit",
    "cannot_fit": "CANNOT FIT: no offer holds this model",
    "no_offers": "NO OFFERS: the filters left nothing to choose from",
}

#: column keys and headers of the candidate table, in display order
CANDIDATE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("rank", "#"),
    ("provider", "Provider"),
    ("region", "Region"),
    ("instance", "Instance"),
    ("gpus", "GPUs"),
    ("replicas", "Replicas"),
    ("parallelism", "Parallelism"),
    ("fit", "Memory (GiB used / per GPU)"),
    ("speed", "Capacity at the SLO batch (p10-p90); training: time to train"),
    ("usd_per_hour", "$/h"),
    ("usd_per_month", "Cost (training: $/run first)"),
    ("unit_cost", "Unit cost ($/month ÷ output tokens/month; training: $/run)"),
    ("host", "Host vCPU / RAM"),
    ("deploy", "Provider class, fabric"),
    ("price_date", "Price date"),
    ("risk", "Risk"),
)


def usd(value: float | None) -> str:
    """``$1,234`` / ``$12.34`` / ``$0.0123``; ``-`` for None or NaN."""
    if value is None or not math.isfinite(value):
        return "-"
    a = abs(value)
    sign = "-" if value < 0 else ""
    if a >= 1000:
        return f"{sign}${a:,.0f}"
    if a >= 1:
        return f"{sign}${a:,.2f}"
    return f"{sign}${a:.3g}"


def num(value: float) -> str:
    """Readable number: thousands separators above 100, three significant digits below."""
    if not math.isfinite(value):
        return "-"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def pct(value: float | None) -> str:
    return "-" if value is None or not math.isfinite(value) else f"{value:.1f}%"


def interval(iv: Interval | None, factor: float = 1.0, unit: str = "") -> str:
    """``central (p10-p90) unit`` after multiplying by ``factor``."""
    if iv is None:
        return "-"
    s = iv.scaled(factor)
    suffix = f" {unit}" if unit else ""
    return f"{num(s.central)} ({num(s.p10)}-{num(s.p90)}){suffix}"


def duration_h(seconds: float) -> str:
    """Seconds as hours or days, whichever reads better."""
    hours = seconds / SECONDS_PER_HOUR
    return f"{hours / 24:.3g} d" if hours >= 48 else f"{hours:.3g} h"


def speed_text(c: Candidate) -> str:
    """Inference: output tokens/s the replicas the load needs deliver at their operating (SLO-meeting) batch,
    with p10-p90 (a capacity, not the load); training: time to train with p10-p90."""
    if c.output_tokens_per_s is not None:
        return interval(c.output_tokens_per_s, unit="tok/s capacity")
    if c.time_to_train_s is not None:
        t = c.time_to_train_s
        return f"{duration_h(t.central)} ({duration_h(t.p10)}-{duration_h(t.p90)})"
    if c.tokens_per_s is not None:
        return interval(c.tokens_per_s, unit="tok/s")
    return "-"


def unit_cost_text(c: Candidate) -> str:
    """Inference: USD per 1M output tokens = the month's cost / the output tokens of the month's service hours
    at the user's load (``cost_usd_per_million_output_tokens_at_load``, the load shown), then at full capacity
    (every replica paid for at its saturated batch, ``..._saturated``); training: $/run."""
    at_load = c.cost_usd_per_million_output_tokens_at_load
    sat = c.cost_usd_per_million_output_tokens_saturated
    load = c.load_output_tokens_per_s
    sat_tps = c.saturated_output_tokens_per_s
    parts = []
    if at_load is not None and load:
        parts.append(f"{usd(at_load)}/1M tok at your load ({num(load)} tok/s)")
    elif load and sat_tps is not None and sat_tps < load:
        parts.append(f"cannot serve your load ({num(load)} tok/s > {num(sat_tps)} tok/s at full capacity)")
    elif sat is not None:
        parts.append("no load given")
    if sat is not None:
        at = f" ({num(sat_tps)} tok/s, saturated batch)" if sat_tps else ""
        parts.append(f"{usd(sat)}/1M tok at full capacity{at}")
    if parts:
        return "; ".join(parts)
    if c.cost_usd_per_run is not None:
        return f"{usd(c.cost_usd_per_run)}/run"
    return "-"


def cost_text(c: Candidate) -> str:
    """Training: ``$/run x runs/month = $/month`` ($/run first); inference: ``$/month``."""
    if c.cost_usd_per_run is not None and c.runs_per_month is not None:
        return (
            f"{usd(c.cost_usd_per_run)}/run x {c.runs_per_month:.3g} runs/month = "
            f"{usd(c.cost_usd_per_month)}/month"
        )
    return f"{usd(c.cost_usd_per_month)}/month"


def host_text(c: Candidate) -> str:
    """``16 vCPU / 64 GiB`` per node; ``not listed`` where the catalog gives neither."""
    if c.vcpus is None and c.host_memory_gib is None:
        return "not listed"
    cpu = f"{c.vcpus:g}" if c.vcpus is not None else "?"
    ram = f"{c.host_memory_gib:g}" if c.host_memory_gib is not None else "?"
    return f"{cpu} vCPU / {ram} GiB"


def deploy_text(c: Candidate) -> str:
    return f"{c.provider_class}, {c.fabric}" if c.fabric else c.provider_class


def price_date_text(c: Candidate) -> str:
    if not c.price_date:
        return "unknown date"
    return f"{c.price_date} ({c.price_age_days} d old)" if c.price_age_days is not None else c.price_date


def parallelism_text(c: Candidate) -> str:
    parts = [f"TP{c.tp}", f"PP{c.pp}"]
    if c.ep > 1:  # MoE expert parallel: routed experts over ep GPUs, attention TP x DP inside them
        parts = [f"EP{c.ep} (attention TP{c.tp}xDP{c.ep // c.tp})", f"PP{c.pp}"]
    if c.dp > 1:
        parts.append(f"DP{c.dp}")
    text = "x".join(parts)
    if c.nodes_per_replica > 1:
        text += f" over {c.nodes_per_replica} nodes"
    return text


def risk_flags(c: Candidate) -> list[str]:
    """The engine's risk reasons of one candidate (gpufleet.recommend.risk), most serious first."""
    return list(c.risk_reasons)


def risk_level(c: Candidate) -> str:
    """The engine's risk level (low, medium, high)."""
    return c.risk


def risk_text(c: Candidate) -> str:
    """The risk level with its reasons, e.g. ``medium: spot capacity (interruptions)``."""
    flags = risk_flags(c)
    return f"{risk_level(c)}: {'; '.join(flags)}" if flags else f"{c.risk} (no risk factor found)"


def candidate_row(rank: int, c: Candidate) -> dict[str, str]:
    """The cells of one candidate, keyed like :data:`CANDIDATE_COLUMNS`."""
    return {
        "rank": str(rank),
        "provider": c.provider,
        "region": region_text(c.region),
        "instance": f"{c.total_nodes} x {c.instance_type}" if c.total_nodes > 1 else c.instance_type,
        "gpus": f"{c.total_gpus} x {c.gpu}",
        "replicas": str(c.replicas),
        "parallelism": parallelism_text(c),
        "fit": f"{c.mem_per_gpu_gib:.1f} / {c.mem_capacity_gib:.1f}{sized_by_text(c)}",
        "speed": speed_text(c),
        "usd_per_hour": usd(c.cost_usd_per_hour),
        "usd_per_month": cost_text(c) + (f" ({c.rank_note})" if c.rank_note else ""),
        "unit_cost": unit_cost_text(c),
        "host": host_text(c),
        "deploy": deploy_text(c),
        "price_date": price_date_text(c),
        "risk": risk_text(c),
    }


def sized_by_text(c: Candidate) -> str:
    """`` (recipe hf_trainer, adamw)``: the fine-tuning recipe and optimizer that sized a training
    candidate's memory, where they are not the estimator's generic defaults (no recipe, AdamW); else ''."""
    if c.recipe is None and c.optimizer in (None, "adamw"):
        return ""
    return f" ({f'recipe {c.recipe}, ' if c.recipe else ''}{c.optimizer})"


def fit_gib_text(c: Candidate) -> str:
    """``48.4 / 95.6 GiB (recipe hf_trainer, adamw)``: memory used / per GPU and what sized it."""
    return f"{c.mem_per_gpu_gib:.1f} / {c.mem_capacity_gib:.1f} GiB{sized_by_text(c)}"


def candidate_label(c: Candidate) -> str:
    nodes = f"{c.total_nodes}x " if c.total_nodes > 1 else ""
    return f"{c.provider} {nodes}{c.instance_type} ({region_text(c.region)})"


def miss_reason(c: Candidate, rec: Recommendation) -> str:
    """Why one of ``rec.closest`` misses the workload: its SLO/deadline misses, the budget it exceeds, the
    risk limit it is above. Before, every closest option without an SLO miss read "over budget", also under
    OVER RISK with no budget given (an engineer would have raised a budget that was never the problem)."""
    w = rec.workload
    parts = list(c.slo_misses)
    if not c.within_budget:
        parts.append(
            "over budget"
            + (f" (${w.budget_usd_per_month:,.0f}/month)" if w.budget_usd_per_month is not None else "")
        )
    if rec.status == "over_risk":
        parts.append(f"risk {c.risk} above the limit" + (f" ({w.max_risk})" if w.max_risk else ""))
    return "; ".join(parts) or rec.status.replace("_", " ")


def cost_breakdown(c: Candidate, hours_per_month: float) -> dict[str, float]:
    """Monthly cost split into GPU compute, spot risk overhead and idle committed hours [USD/month].

    Spot overhead is the extra cost of over-provisioned replicas (inference) or of re-done work (training:
    the wall-time factor). Commitments bill all 730 h of the month; hours the schedule does not use are
    ``idle commitment``. The parts sum to ``c.cost_usd_per_month``.
    """
    total = c.cost_usd_per_month
    compute = total
    spot_overhead = 0.0
    idle = 0.0
    if c.spot is not None:
        factor = c.spot.wall_time_factor
        if c.spot.replicas_needed and c.spot.replicas_provisioned > c.spot.replicas_needed:
            factor *= c.spot.replicas_provisioned / c.spot.replicas_needed
        compute = total / factor if factor > 0 else total
        spot_overhead = total - compute
    elif (
        c.price_kind.startswith(("commit", "reserved", "savings_plan", "cud"))
        and hours_per_month < HOURS_PER_MONTH
    ):
        compute = total * hours_per_month / HOURS_PER_MONTH
        idle = total - compute
    return {"GPU compute": compute, "spot risk overhead": spot_overhead, "idle commitment": idle}


def migration_breakdown(m: Migration, *, after: bool) -> dict[str, float]:
    """:func:`cost_breakdown` of the current (or recommended) deployment, scaled to the migration's monthly
    cost (for training the migration compares the same number of runs, not the same schedule)."""
    c = m.recommended if after else m.current
    total = m.new_cost_usd_per_month if after else m.current_cost_usd_per_month
    if c is None or total is None:
        return {}
    parts = cost_breakdown(c, m.workload.hours_per_month)
    scale = total / c.cost_usd_per_month if c.cost_usd_per_month > 0 else 0.0
    return {k: v * scale for k, v in parts.items()}


def workload_lines(w: Workload) -> list[str]:
    """One line per workload setting that matters, with units."""
    lines = [f"model {w.model}, task {w.task}, precision {w.precision}"]
    if w.is_training:
        if w.train_tokens is not None:
            lines.append(f"train tokens {w.train_tokens:,.0f}, sequence {w.seq_len_tokens} tokens")
        if w.deadline_h == DEFAULT_TRAINING_HORIZON_H:
            lines.append(f"deadline {w.deadline_h:g} h (365 days: the horizon when none is given)")
        elif w.deadline_h is not None:
            lines.append(f"deadline {w.deadline_h:g} h")
        tuning = [f"{n} {getattr(w, n)}" for n in ("recipe", "optimizer") if getattr(w, n) is not None]
        if tuning:
            lines.append(f"fine-tuning {', '.join(tuning)} (sizes the memory)")
    else:
        lines.append(f"input {w.input_len_tokens} tokens, output {w.output_len_tokens} tokens")
        targets = []
        if w.concurrency is not None:
            targets.append(f"concurrency {w.concurrency}")
        if w.target_requests_per_s is not None:
            targets.append(f"{w.target_requests_per_s:g} req/s")
        if w.target_output_tokens_per_s is not None:
            targets.append(f"{w.target_output_tokens_per_s:g} output tok/s")
        if w.ttft_p95_s is not None:
            targets.append(f"TTFT p95 <= {w.ttft_p95_s * 1000:g} ms")
        if w.tpot_p95_s is not None:
            targets.append(f"TPOT p95 <= {w.tpot_p95_s * 1000:g} ms")
        if targets:
            lines.append(", ".join(targets))
    lines.append(f"pricing {w.pricing}, {w.hours_per_month:g} h/month, objective {w.objective}")
    if w.budget_usd_per_month is not None:
        lines.append(f"budget {usd(w.budget_usd_per_month)}/month")
    filters = [
        f"providers {', '.join(w.providers)}" if w.providers else "",
        f"regions {', '.join(w.regions)}" if w.regions else "",
        f"vendors {', '.join(w.gpu_vendors)}" if w.gpu_vendors else "",
    ]
    if any(filters):
        lines.append("; ".join(f for f in filters if f))
    return lines


def assumption_lines(rec: Recommendation, extra: Sequence[str] = ()) -> list[str]:
    """The assumptions in force: the engine's notes, then caller-supplied lines (pricing tables, ...)."""
    out: list[str] = []
    for line in (*rec.notes, *extra):
        if line not in out:
            out.append(line)
    return out


def ratio_text(ratio: float | None, *, higher_is_better: bool) -> str:
    """``1.8x faster`` style text for a recommended/current ratio."""
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return "-"
    change = (ratio - 1) * 100
    if abs(change) < 0.5:
        return f"{ratio:.2f}x (unchanged)"
    better = ratio > 1 if higher_is_better else ratio < 1
    word = "better" if better else "worse"
    return f"{ratio:.2f}x ({change:+.0f}%, {word})"


def suggestion_text(s: FitSuggestion) -> str:
    """A fit suggestion with its per-GPU memory and example offer, without repeating what it already says."""
    text = s.description.rstrip(". ")
    mem = f"{s.mem_per_gpu_gib:.1f} GiB"
    if mem not in text:
        text += f": {mem} per GPU"
    if s.example_offer and s.example_offer not in text:
        text += f" (e.g. {s.example_offer})"
    return text
