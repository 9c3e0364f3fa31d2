from __future__ import annotations

import pytest

from gpufleet.cost.prices import price_kind_for
from gpufleet.cost.schedule import Schedule
from gpufleet.errors import InputError
from gpufleet.units import HOURS_PER_MONTH


def test_always_on_and_daily() -> None:
    assert Schedule.always_on().hours_per_month == HOURS_PER_MONTH
    assert Schedule.daily(hours_per_day=8, days_per_month=22).hours_per_month == 176


def test_commitments_bill_every_hour() -> None:
    s = Schedule.daily(hours_per_day=8, days_per_month=22)
    assert s.billed_hours_per_month("on_demand") == 176
    assert s.billed_hours_per_month("spot") == 176
    assert s.billed_hours_per_month("commit_1y") == HOURS_PER_MONTH


@pytest.mark.parametrize("hours", [0, -5, 731])
def test_bad_hours(hours: float) -> None:
    with pytest.raises(InputError, match="hours_per_month"):
        Schedule(hours_per_month=hours)


@pytest.mark.parametrize(("h", "d"), [(0, 22), (25, 22), (8, 0), (8, 31)])
def test_bad_daily(h: float, d: float) -> None:
    with pytest.raises(InputError):
        Schedule.daily(hours_per_day=h, days_per_month=d)


def test_price_kind() -> None:
    assert price_kind_for("1y") == "commit_1y"
    with pytest.raises(InputError, match="Allowed"):
        price_kind_for("reserved")
