"""The scheduler's 5-field cron parser (service/cron.py): each field form, the crontab(5) day rule, UTC,
and every refusal saying what is allowed."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from gpufleet.errors import InputError
from gpufleet.service.cron import parse


def _t(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def _next(expr: str, after: str) -> str:
    return datetime.fromtimestamp(parse(expr).next_after(_t(after)), UTC).strftime("%Y-%m-%d %H:%M %a")


@pytest.mark.parametrize(
    ("expr", "after", "want"),
    [
        ("0 6 * * *", "2026-11-29 05:59", "2026-11-29 06:00 Sun"),
        ("0 6 * * *", "2026-11-29 06:00", "2026-11-30 06:00 Mon"),  # strictly after
        ("0 6 * * *", "2026-11-29 06:00:30", "2026-11-30 06:00 Mon"),
        ("*/15 * * * *", "2026-11-29 10:07", "2026-11-29 10:15 Sun"),
        ("*/15 * * * *", "2026-11-29 23:50", "2026-11-30 00:00 Mon"),
        ("5/20 * * * *", "2026-11-29 10:26", "2026-11-29 10:45 Sun"),
        ("0 7 * * 1-5", "2026-11-28 08:00", "2026-11-30 07:00 Mon"),  # Saturday -> Monday
        ("0 0 * * 7", "2026-11-30 00:00", "2026-12-06 00:00 Sun"),  # 7 is Sunday too
        ("30 2 1 * *", "2026-12-15 00:00", "2027-01-01 02:30 Fri"),
        ("0 0 29 2 *", "2026-03-01 00:00", "2028-02-29 00:00 Tue"),  # leap day
        ("0 12 1,15 * *", "2026-11-02 00:00", "2026-11-15 12:00 Sun"),
        ("0 0 13 * 5", "2026-11-01 00:00", "2026-11-06 00:00 Fri"),  # day 13 OR Friday (crontab(5))
        ("0 9-17/4 * * *", "2026-11-29 09:00", "2026-11-29 13:00 Sun"),
        ("0 0 1 1 *", "2026-06-01 00:00", "2027-01-01 00:00 Fri"),
    ],
)
def test_next_run(expr: str, after: str, want: str) -> None:
    assert _next(expr, after) == want


def test_fields_are_normalised() -> None:
    s = parse("  0   6 * *   * ")
    assert s.text == "0 6 * * *"
    assert s.minutes == frozenset({0}) and s.hours == frozenset({6}) and len(s.days) == 31


@pytest.mark.parametrize(
    ("expr", "says"),
    [
        ("0 6 * *", "has 4 fields, not 5"),
        ("0 6 * * * *", "has 6 fields, not 5"),
        ("60 * * * *", "minute field '60' is out of range"),
        ("* 24 * * *", "hour field '24' is out of range"),
        ("* * 0 * *", "day of month field '0' is out of range"),
        ("* * * 13 *", "month field '13' is out of range"),
        ("* * * * 8", "day of week field '8' is out of range"),
        ("*/0 * * * *", "a step of at least 1"),
        ("5-1 * * * *", "out of range"),
        ("0 0 * * mon", "day of week field 'mon' is not valid"),
        ("@daily", "has 1 fields"),
        ("0 0 31 2 *", "matches no time"),
    ],
)
def test_bad_expressions_are_refused_with_what_is_allowed(expr: str, says: str) -> None:
    with pytest.raises(InputError) as err:
        parse(expr)
    assert says in str(err.value)
    assert "five fields" in str(err.value)
