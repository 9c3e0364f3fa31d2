"""When a new commitment pays: the one rule the fleet planner, its checker and its brute force share.

A commitment (1-year or 3-year reservation, savings plan or CUD) bills every hour of its term, 730 h a month,
whether the nodes run or not. Against on-demand for the hours the workload actually runs:

* break-even utilisation = commitment price / on-demand price [fraction of the 730-hour month]: the use at
  which the two cost the same;
* expected utilisation = hours the nodes run / 730 [fraction];
* break-even months = term months x commitment cost per month / on-demand cost per month at the expected use:
  how long the workload must run for the term (paid in full even if it stops) to cost no more than
  on-demand over the same months.

A term is bought only where it pays **with a margin**: commitment cost <= (1 - margin) x on-demand cost at the
expected use, i.e. the break-even utilisation is at most (1 - margin) x the expected utilisation. The
default margin, 20 %, is the demand shortfall the term must survive: the hours and lifetime of a fleet file
are forecasts, and a term is paid whether or not the forecast holds (docs/fleet.md, "Commitments").
And only where the workload's lifetime is given and covers the term: a workload without a lifetime never
gets a new commitment.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from gpufleet.units import HOURS_PER_MONTH

#: months of each new-commitment pay kind
TERM_MONTHS: dict[str, float] = {"commit_1y": 12.0, "commit_3y": 36.0}
#: default demand shortfall a new commitment must survive [fraction of the expected hours]
DEFAULT_MARGIN_FRACTION = 0.2
_EPS = 1e-9


def term_allowed(kind: str, terms: Iterable[str], lifetime_months: float | None) -> bool:
    """``kind`` (commit_1y/commit_3y) is an allowed term and the given lifetime covers it (None: never)."""
    return (
        kind in TERM_MONTHS
        and lifetime_months is not None
        and kind.removeprefix("commit_") in tuple(terms)
        and lifetime_months >= TERM_MONTHS[kind]
    )


def shortest_lifetime(lifetimes_months: Iterable[float | None]) -> float | None:
    """The shortest of several tenants' lifetimes; None when any is not given (then nothing commits)."""
    known: list[float] = []
    for life in lifetimes_months:
        if life is None:
            return None
        known.append(life)
    return min(known, default=math.inf)


def break_even_utilisation(commit_usd_per_hour: float, on_demand_usd_per_hour: float) -> float:
    """Use [fraction of 730 h] at which the commitment costs what on-demand does; NaN without prices."""
    if not (math.isfinite(commit_usd_per_hour) and math.isfinite(on_demand_usd_per_hour)):
        return math.nan
    if on_demand_usd_per_hour <= 0:
        return math.nan
    return commit_usd_per_hour / on_demand_usd_per_hour


def break_even_months(
    commit_usd_per_hour: float, on_demand_usd_per_hour: float, hours_per_month: float, term_months: float
) -> float:
    """Months the workload must run for the whole term's bill to cost no more than on-demand [months]."""
    od_month = on_demand_usd_per_hour * hours_per_month
    if not (od_month > 0 and math.isfinite(commit_usd_per_hour)):
        return math.inf
    return term_months * commit_usd_per_hour * HOURS_PER_MONTH / od_month


def commitment_pays(
    commit_usd_per_hour: float,
    on_demand_usd_per_hour: float,
    hours_per_month: float,
    margin_fraction: float = DEFAULT_MARGIN_FRACTION,
) -> bool:
    """One node on the term (730 h billed) costs <= (1 - margin) x on-demand for ``hours_per_month``."""
    if not (math.isfinite(commit_usd_per_hour) and math.isfinite(on_demand_usd_per_hour)):
        return False
    od_month = on_demand_usd_per_hour * hours_per_month
    return commit_usd_per_hour * HOURS_PER_MONTH <= (1.0 - margin_fraction) * od_month + _EPS


__all__ = [
    "DEFAULT_MARGIN_FRACTION",
    "TERM_MONTHS",
    "break_even_months",
    "break_even_utilisation",
    "commitment_pays",
    "shortest_lifetime",
    "term_allowed",
]
