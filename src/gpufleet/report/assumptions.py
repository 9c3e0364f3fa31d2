"""Pricing assumptions in force (commitment discounts, spot interruption model) as display lines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gpufleet.catalog.pricing import AssumptionRow
from gpufleet.cost.spot import SpotAssumption


def commitment_lines(
    rows: Iterable[AssumptionRow], term_years: int | None = None, allow_unverified: bool | None = None
) -> list[str]:
    """One line per commitment discount (optionally of one term), with its basis and verification; with
    ``allow_unverified`` given, whether an unverified row is used (only on the user's opt-in)."""
    out = []
    for r in rows:
        if term_years is not None and r.term_years != term_years:
            continue
        flag = "verified" if r.verified else "unverified"
        if not r.verified and allow_unverified is not None:
            flag += (
                ", used: --allow-unverified-commitments"
                if allow_unverified
                else ", not used without --allow-unverified-commitments"
            )
        out.append(
            f"commitment discount {r.provider} {r.program} {r.term_years}y: {r.discount_fraction:.0%} "
            f"({r.basis}, {flag})"
        )
    return out


def spot_lines(assumptions: Mapping[str, SpotAssumption]) -> list[str]:
    """One line per provider row of the spot model (``*`` = every other provider)."""
    out = []
    for key in sorted(assumptions, key=lambda k: (k == "*", k)):
        a = assumptions[key]
        who = "other providers" if key == "*" else key
        limit = f", forced stop every {a.max_runtime_h:g} h" if a.max_runtime_h else ""
        out.append(
            f"spot {who}: one interruption per {a.mean_time_between_interruptions_h:g} h on average "
            f"({a.interruptions_per_h:.2f}/h{limit}), {a.notice_s:g} s notice, "
            f"restart {a.restart_overhead_s:g} s, "
            f"checkpoint {a.checkpoint_cost_s:g} s (verified: {a.verified or 'no'})"
        )
    return out
