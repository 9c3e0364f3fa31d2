"""Billing schedules: how many hours a month a workload runs, and how many it is billed for.

Pay-as-you-go kinds (on-demand, spot) bill the hours run. Commitments (reserved, savings plans, CUDs) bill
every hour of the term whether used or not: 730 h/month (``gpufleet.units.HOURS_PER_MONTH``, the cloud billing
convention), which is why an 8 h x 22 d workload rarely benefits from a 1-year commitment.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpufleet.errors import InputError
from gpufleet.units import HOURS_PER_DAY, HOURS_PER_MONTH

#: price kinds billed for every hour of the month whatever the schedule
COMMITTED_KINDS: frozenset[str] = frozenset(
    {
        "reserved_1y",
        "reserved_3y",
        "savings_plan_1y",
        "savings_plan_3y",
        "cud_1y",
        "cud_3y",
        "commit_1y",
        "commit_3y",
    }
)
#: the most days in a billing month used for hours/day x days/month schedules [days]
MAX_DAYS_PER_MONTH = HOURS_PER_MONTH / HOURS_PER_DAY  # 30.42 d


@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """Hours per month a workload runs [h]."""

    hours_per_month: float

    def __post_init__(self) -> None:
        if not 0 < self.hours_per_month <= HOURS_PER_MONTH:
            raise InputError(
                f"hours_per_month = {self.hours_per_month} is outside (0, {HOURS_PER_MONTH:g}]. A month has "
                f"{HOURS_PER_MONTH:g} billable hours (24/7); give the hours the workload runs, e.g. 176 for "
                "8 h x 22 days."
            )

    @classmethod
    def always_on(cls) -> Schedule:
        """24/7: 730 h/month."""
        return cls(hours_per_month=HOURS_PER_MONTH)

    @classmethod
    def daily(cls, *, hours_per_day: float, days_per_month: float) -> Schedule:
        """``hours_per_day`` x ``days_per_month`` (e.g. 8 h x 22 d = 176 h)."""
        if not 0 < hours_per_day <= HOURS_PER_DAY:
            raise InputError(
                f"hours_per_day = {hours_per_day} is outside (0, 24]. "
                "Give the hours the workload runs each day."
            )
        if not 0 < days_per_month <= MAX_DAYS_PER_MONTH:
            raise InputError(
                f"days_per_month = {days_per_month} is outside (0, {MAX_DAYS_PER_MONTH:.2f}]. "
                "Give the days the "
                "workload runs each month (e.g. 22 working days)."
            )
        return cls(hours_per_month=min(hours_per_day * days_per_month, HOURS_PER_MONTH))

    def billed_hours_per_month(self, price_kind: str) -> float:
        """Hours billed per month for ``price_kind``: 730 for commitments, the schedule otherwise [h]."""
        return HOURS_PER_MONTH if price_kind in COMMITTED_KINDS else self.hours_per_month
