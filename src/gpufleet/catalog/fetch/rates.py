"""Commitment rates read from provider price APIs, and their CSV form (``refreshed/commitments-<p>.csv``).

One :class:`CommitmentRate` is the cheapest effective hourly price of one commitment program and term for
one machine (provider x region x instance type x GPU x count), with the on-demand price fetched in the same
run, so that ``discount_fraction = 1 - price / on_demand`` compares like with like (market_assumptions.md:
"compute discount as 1 - committed/on-demand from the API data where you have it").
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from typing import Literal

from gpufleet.errors import DataError

Program = Literal["reserved", "savings_plan", "cud", "flexible_cud"]
PROGRAMS: tuple[str, ...] = ("reserved", "savings_plan", "cud", "flexible_cud")
TERMS_YEARS: tuple[int, ...] = (1, 3)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommitmentRate:
    """A fetched commitment price [USD/h] (upfront fees amortised over the term), its discount [fraction]."""

    provider: str
    region: str
    instance_type: str
    gpu: str  # spec id
    gpu_count: float
    program: str  # one of PROGRAMS
    term_years: int  # 1 or 3
    price_usd_per_hour: float  # effective: hourly part + upfront fee / term hours
    on_demand_usd_per_hour: float  # from the same fetch
    option: str  # e.g. "standard All Upfront"; "" where the API has one option
    captured_at: str
    source: str

    @property
    def discount_fraction(self) -> float:
        """1 - commitment / on-demand [fraction]."""
        return 1.0 - self.price_usd_per_hour / self.on_demand_usd_per_hour


RATE_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(CommitmentRate))
_FLOATS = frozenset({"gpu_count", "price_usd_per_hour", "on_demand_usd_per_hour"})


def rate_key(provider: str, region: str, instance_type: str, gpu: str, gpu_count: float) -> str:
    """The machine key that fetched rates and offers are matched on."""
    return f"{provider}|{region}|{instance_type}|{gpu}|{gpu_count:.6g}"


def write_rates_csv(rates: Iterable[CommitmentRate]) -> str:
    """Rates as CSV text with :data:`RATE_COLUMNS`."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=RATE_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rates:
        row = asdict(r)
        for k in _FLOATS:
            row[k] = f"{round(row[k], 8):.8f}".rstrip("0").rstrip(".")
        w.writerow(row)
    return buf.getvalue()


def read_rates_csv(text: str, *, source_name: str) -> list[CommitmentRate]:
    """Parse a commitments CSV from :func:`write_rates_csv`; :class:`DataError` names the row and field."""
    reader = csv.DictReader(io.StringIO(text))
    missing = [c for c in RATE_COLUMNS if c not in (reader.fieldnames or [])]
    if missing:
        raise DataError(
            f"The refreshed commitment file {source_name} lacks columns {missing}. "
            "Run `gpufleet catalog update` again to rewrite it."
        )
    out: list[CommitmentRate] = []
    for line, row in enumerate(reader, start=2):
        try:
            rate = CommitmentRate(
                provider=row["provider"],
                region=row["region"],
                instance_type=row["instance_type"],
                gpu=row["gpu"],
                gpu_count=float(row["gpu_count"]),
                program=row["program"],
                term_years=int(row["term_years"]),
                price_usd_per_hour=float(row["price_usd_per_hour"]),
                on_demand_usd_per_hour=float(row["on_demand_usd_per_hour"]),
                option=row["option"],
                captured_at=row["captured_at"],
                source=row["source"],
            )
        except (TypeError, ValueError) as exc:
            raise DataError(
                f"The refreshed commitment file {source_name}, row {line}, is malformed ({exc}). "
                "Run `gpufleet catalog update` again to rewrite it."
            ) from exc
        ok = (
            rate.program in PROGRAMS
            and rate.term_years in TERMS_YEARS
            and math.isfinite(rate.price_usd_per_hour)
            and 0 < rate.price_usd_per_hour <= rate.on_demand_usd_per_hour
        )
        if not ok:
            raise DataError(
                f"The refreshed commitment file {source_name}, row {line}: program {rate.program!r}, "
                f"term {rate.term_years}, price {rate.price_usd_per_hour!r} is not allowed (programs "
                f"{PROGRAMS}, terms {TERMS_YEARS}, 0 < price <= on-demand). Run `gpufleet catalog update` "
                "again to rewrite it."
            )
        out.append(rate)
    return out


__all__ = [
    "PROGRAMS",
    "RATE_COLUMNS",
    "TERMS_YEARS",
    "CommitmentRate",
    "Program",
    "rate_key",
    "read_rates_csv",
    "write_rates_csv",
]
