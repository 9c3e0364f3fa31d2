"""Say in the answer why a candidate ranks above one that is better on the objective (docs/recommend.md,
"Near ties"): within the near-tie band the operationally simpler ranks first, and the table must show it,
else "$2.38 above $2.35 under cheapest" reads as a bug."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gpufleet.recommend.types import RISK_LEVELS, Candidate, Workload


def objective_value(c: Candidate, w: Workload, objective: str) -> float:
    """What the objective minimises for a materialised candidate (cost; -speed; -tokens/s per USD/h)."""
    if objective == "fastest":
        return -c.speed
    if objective == "throughput_per_dollar":
        tput = c.tokens_per_s if w.is_training else c.output_tokens_per_s
        rate = tput.central if tput is not None else 0.0
        return -rate / c.cost_usd_per_hour if c.cost_usd_per_hour > 0 else 0.0
    cost = c.cost_usd_per_run if w.is_training else c.cost_usd_per_month
    return float(cost if cost is not None else c.cost_usd_per_month)


def _value_text(c: Candidate, w: Workload, objective: str) -> str:
    if objective == "fastest":
        return "faster"
    if objective == "throughput_per_dollar":
        return "more tokens per dollar"
    if w.is_training and c.cost_usd_per_run is not None:
        return f"${c.cost_usd_per_run:,.2f}/run"
    return f"${c.cost_usd_per_month:,.2f}/month"


def simpler_because(c: Candidate, d: Candidate, w: Workload) -> str:
    """The first simplicity key (rank.simplicity_keys' order) on which ``c`` is simpler than ``d``."""
    if c.nodes_per_replica < d.nodes_per_replica:
        unit = "job" if w.is_training else "replica"
        return f"fewer nodes per {unit} ({c.nodes_per_replica} vs {d.nodes_per_replica})"
    if (c.tp > c.gpus_per_node) < (d.tp > d.gpus_per_node):
        return "no tensor parallelism across nodes"
    if RISK_LEVELS.index(c.risk) < RISK_LEVELS.index(d.risk):
        return f"lower risk ({c.risk} vs {d.risk})"
    if (c.ep > 1) < (d.ep > 1):
        return "no expert parallelism"
    if (c.provider_class == "marketplace") < (d.provider_class == "marketplace"):
        return "not a marketplace host"
    if not w.is_training and c.total_gpus < d.total_gpus:
        return f"fewer GPUs ({c.total_gpus} vs {d.total_gpus})"
    if w.is_training:
        return "finishes sooner"
    return "simpler"


def explain_near_ties(ranked: Sequence[Candidate], w: Workload, objective: str) -> tuple[Candidate, ...]:
    """``ranked`` with :attr:`Candidate.rank_note` set on every candidate placed above a better one."""
    out = list(ranked)
    for i, c in enumerate(out):
        v = objective_value(c, w, objective)
        eps = 1e-9 * max(1.0, abs(v))
        later = enumerate(out[i + 1 :], start=i + 1)
        better = [(j, d) for j, d in later if objective_value(d, w, objective) < v - eps]
        if not better:
            continue
        j, d = min(better, key=lambda jd: objective_value(jd[1], w, objective))
        dv = objective_value(d, w, objective)
        pct = abs(v - dv) / abs(dv) * 100 if dv else 0.0
        note = (
            f"near tie: {pct:.1f} % behind #{j + 1} ({_value_text(d, w, objective)}), within the "
            f"{w.near_tie_fraction:.0%} band, ranked first as simpler: {simpler_because(c, d, w)}"
        )
        out[i] = replace(c, rank_note=note)
    return tuple(out)


__all__ = ["explain_near_ties", "objective_value", "simpler_because"]
