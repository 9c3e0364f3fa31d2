"""Fleet summary: GPU-hours, idle share, cost and savings by finding and by team (numbers only; rendering
lives in :mod:`gpufleet.report.telemetry`)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from gpufleet.telemetry.findings import FINDINGS, FleetFindings
from gpufleet.validation import checked_arguments


@dataclass(frozen=True, slots=True, kw_only=True)
class FleetSummary:
    gpus: int
    gpu_hours: float
    idle_gpu_hours: float
    idle_share: float  # idle GPU-hours / GPU-hours
    cost_usd: float  # over the observed hours, at each GPU's price kind
    cost_usd_per_month: float
    savings_usd_per_month: float  # best option per GPU, on-demand basis, never negative
    savings_share: float  # savings / monthly cost
    by_finding: dict[str, tuple[int, float]]  # finding -> (GPUs, savings USD/month)
    by_team: dict[str, tuple[int, float, float]]  # team -> (GPUs, cost USD/month, savings USD/month)
    compute_signals: dict[str, int]  # metric -> GPUs ranked on it
    compute_p_values: tuple[float, ...]  # per GPU (for the distribution chart)
    gpu_util_p_values: tuple[float, ...]
    priced_gpus: int
    #: team -> (workloads, GPU-hours, cost in the window USD, cost USD/month, savings USD/month), from the
    #: workload findings (team: inventory workload team, inventory host team, else the namespace)
    chargeback: dict[str, tuple[int, float, float, float, float]] = field(default_factory=dict)


@checked_arguments("fleet summary")
def summarize(ff: FleetFindings) -> FleetSummary:
    gpus = [g for g in ff.gpus if g.gpu_index >= 0 or g.gpu_key]
    hours = sum(g.hours for g in gpus)
    idle_h = sum(g.hours for g in gpus if g.idle)
    cost = sum(g.cost_usd or 0.0 for g in gpus)
    month = sum(g.cost_usd_per_month or 0.0 for g in gpus)
    savings = sum(g.best_savings_usd_per_month for g in gpus)
    by_f: dict[str, list[float]] = {f: [0, 0.0] for f in FINDINGS}
    by_t: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    signals: dict[str, int] = defaultdict(int)
    for g in gpus:
        by_f[g.finding][0] += 1
        by_f[g.finding][1] += g.best_savings_usd_per_month
        t = by_t[g.team or "(no team label)"]
        t[0] += 1
        t[1] += g.cost_usd_per_month or 0.0
        t[2] += g.best_savings_usd_per_month
        signals[g.compute_signal] += 1
    charge: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for w in ff.workloads:
        c = charge[w.team or "(no team label)"]
        c[0] += 1
        c[1] += w.gpu_hours
        c[2] += w.cost_usd or 0.0
        c[3] += w.cost_usd_per_month or 0.0
        c[4] += w.savings_usd_per_month
    return FleetSummary(
        gpus=len(gpus),
        gpu_hours=hours,
        idle_gpu_hours=idle_h,
        idle_share=idle_h / hours if hours else 0.0,
        cost_usd=cost,
        cost_usd_per_month=month,
        savings_usd_per_month=savings,
        savings_share=savings / month if month else 0.0,
        # InsufficientData only when some GPU has it (the four Compute Optimizer findings always show)
        by_finding={k: (int(v[0]), float(v[1])) for k, v in by_f.items() if v[0] or k != "InsufficientData"},
        by_team={k: (int(v[0]), float(v[1]), float(v[2])) for k, v in sorted(by_t.items())},
        compute_signals=dict(signals),
        compute_p_values=tuple(float(g.compute_p) for g in gpus if g.compute_p is not None),
        gpu_util_p_values=tuple(float(g.gpu_util_p) for g in gpus if g.gpu_util_p is not None),
        priced_gpus=sum(1 for g in gpus if g.cost.price_usd_per_gpu_hour is not None),
        chargeback={
            k: (int(v[0]), float(v[1]), float(v[2]), float(v[3]), float(v[4]))
            for k, v in sorted(charge.items())
        },
    )


def histogram(values: tuple[float, ...], bins: int = 10) -> list[tuple[str, int]]:
    """Counts of 0-1 values in ``bins`` equal bins, labelled by percent range."""
    counts, _ = np.histogram(np.clip(np.asarray(values, dtype=float), 0, 1), bins=bins, range=(0.0, 1.0))
    return [(f"{100 * i // bins}-{100 * (i + 1) // bins}%", int(c)) for i, c in enumerate(counts)]


__all__ = ["FleetSummary", "histogram", "summarize"]
