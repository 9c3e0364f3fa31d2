"""A minimal 5-field cron parser (``minute hour day-of-month month day-of-week``, UTC) for the scheduler.

Written here rather than taken from croniter: the scheduler needs only "the next minute after t that matches",
and croniter would be a dependency of the service for ~80 lines. Supported, as in Vixie cron (``man 5
crontab``): ``*``, numbers (ASCII digits), ranges ``a-b``, steps ``*/n`` and ``a-b/n``
(n at most the field's span: ``*/61`` minutes is refused), lists ``a,b-c``; day of week 0-7 (0
and 7 are Sunday); when both day of month and day of week are restricted, a day matching either runs (the
crontab(5) rule). Not supported (refused with a message): names (``mon``, ``jan``), ``@daily`` style macros,
``L``/``W``/``#`` and seconds. Times are UTC, so daylight-saving changes never skip or repeat a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from gpufleet.errors import InputError

#: (name, lowest, highest) of the five fields
FIELDS: tuple[tuple[str, int, int], ...] = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
#: a schedule that matches no day in this many years (``0 0 31 2 *``) is refused
SEARCH_YEARS = 5

_HELP = (
    "Give five fields 'minute hour day-of-month month day-of-week' in UTC, each '*', a number, a range "
    "a-b, a step */n or a-b/n, or a comma list of those (e.g. '0 6 * * *' = every day at 06:00 UTC, "
    "'*/15 * * * *' = every 15 minutes, '0 7 * * 1-5' = weekdays at 07:00)."
)


@dataclass(frozen=True, slots=True)
class CronSchedule:
    """A parsed expression: the allowed values of each field."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday ... 6 = Saturday (7 folded into 0)
    days_restricted: bool
    weekdays_restricted: bool

    def matches_day(self, d: datetime) -> bool:
        if d.month not in self.months:
            return False
        dom = d.day in self.days
        dow = (d.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return dom or dow
        return dom and dow

    def next_after(self, t_unix_s: float) -> float:
        """The first matching minute strictly after ``t_unix_s`` (Unix seconds, UTC)."""
        t = datetime.fromtimestamp(t_unix_s, UTC).replace(second=0, microsecond=0) + timedelta(minutes=1)
        day = t.replace(hour=0, minute=0)
        for _ in range(366 * SEARCH_YEARS):
            if self.matches_day(day):
                for h in sorted(self.hours):
                    for m in sorted(self.minutes):
                        cand = day.replace(hour=h, minute=m)
                        if cand >= t:
                            return cand.timestamp()
            day += timedelta(days=1)
        raise InputError(f"Cron schedule {self.text!r} matches no time in {SEARCH_YEARS} years. {_HELP}")


def _number(text: str) -> int:
    """An ASCII decimal number (``int`` alone took ``1_0``, ``+5`` and other scripts' digits)."""
    if not (text.isascii() and text.isdigit()) or len(text) > 4:
        raise ValueError(text)
    return int(text)


def _field(text: str, name: str, lo: int, hi: int) -> frozenset[int]:
    out: set[int] = set()
    for part in text.split(","):
        rng, slash, step_text = part.partition("/")
        try:
            step = _number(step_text) if slash else 1
            if rng == "*":
                a, b = lo, hi
            elif "-" in rng:
                a_text, b_text = rng.split("-", 1)
                a, b = _number(a_text), _number(b_text)
            else:
                a = _number(rng)
                b = hi if step_text else a
        except ValueError:
            raise InputError(f"Cron {name} field {text!r} is not valid. {_HELP}") from None
        if step < 1 or step > hi - lo + 1 or not lo <= a <= b <= hi:
            raise InputError(
                f"Cron {name} field {text!r} is out of range: values {lo}-{hi}, a range low-high, a step "
                f"of at least 1 and at most {hi - lo + 1} (a larger one never repeats: */{hi - lo + 2} is "
                f"not every {hi - lo + 2}). {_HELP}"
            )
        out.update(range(a, b + 1, step))
    return frozenset(out)


def parse(text: str) -> CronSchedule:
    """``text`` parsed, or an :class:`InputError` saying what is wrong and what is allowed."""
    parts = text.split()
    if len(parts) != 5:
        raise InputError(f"Cron schedule {text[:100]!r} has {len(parts)} fields, not 5. {_HELP}")
    vals = [_field(p, name, lo, hi) for p, (name, lo, hi) in zip(parts, FIELDS, strict=True)]
    weekdays = frozenset(d % 7 for d in vals[4])
    sched = CronSchedule(
        text=" ".join(parts),
        minutes=vals[0],
        hours=vals[1],
        days=vals[2],
        months=vals[3],
        weekdays=weekdays,
        days_restricted=parts[2] != "*",
        weekdays_restricted=parts[4] != "*",
    )
    sched.next_after(0.0)  # refuse one that never runs (30 February)
    return sched
