"""Price history: the dated prices of every ``gpufleet catalog update``, plus the shipped snapshot's price.

Each successful refresh appends one immutable CSV (this module's :data:`HISTORY_COLUMNS`) to the store's
history (:mod:`gpufleet.catalog.fetch.store`: written atomically, committed by the provider's manifest, never
replaced or deleted). :func:`price_history` reads it back for one provider / instance type / region: the
shipped snapshot's price first (dated by the snapshot's own ``captured_at``, e.g. ``2026-08/2026-11``), then
each refresh's price in capture order, one point per zone and price kind (on-demand, spot).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from gpufleet.errors import DataError, InputError, UnknownNameError

if TYPE_CHECKING:
    from gpufleet.catalog.offers import Offer, OfferTable

PriceKind = Literal["on_demand", "spot"]
PRICE_KINDS: tuple[str, ...] = ("on_demand", "spot")
HISTORY_COLUMNS: tuple[str, ...] = (
    "captured_at",
    "provider",
    "region",
    "zone",
    "instance_type",
    "price_on_demand_usd_per_hour",
    "price_spot_usd_per_hour",
)
#: In an offer's source: its spot price was carried over from the shipped catalog, not fetched by the refresh
#: (so the refresh's history point has no spot price: it would re-date an older observation).
CARRIED_SPOT_NOTE = "spot price from the shipped catalog"
#: Longest window [days] a history query accepts (ten years).
MAX_DAYS = 3650
_ISO = "%Y-%m-%dT%H:%M:%SZ"


@dataclass(frozen=True, slots=True, kw_only=True)
class PricePoint:
    """One dated price of one machine: USD per machine-hour, as the provider listed it at ``captured_at``."""

    captured_at: str  # a refresh: ISO 8601 UTC; the shipped snapshot: its own capture period
    provider: str
    region: str
    zone: str | None
    instance_type: str
    price_kind: PriceKind
    price_usd_per_hour: float
    source: Literal["shipped", "refresh"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PriceHistory:
    """A price-history answer (JSON kind ``price_history``): the query and its points, oldest first."""

    provider: str
    instance_type: str
    region: str
    price_kind: PriceKind | None  # None = both kinds
    window_days: int  # refreshes captured in the last window_days days; the shipped point always shown
    points: tuple[PricePoint, ...]


def history_csv(offers: Iterable[Offer], captured_at: str) -> str:
    """The history file of one refresh: every priced row of ``offers``, dated ``captured_at`` (a spot price
    the refresh carried over from the shipped catalog is left out: the refresh did not observe it)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(HISTORY_COLUMNS)
    for o in offers:
        spot = None if CARRIED_SPOT_NOTE in o.source else o.price_spot_usd_per_hour
        w.writerow(
            [
                captured_at,
                o.provider,
                o.region,
                o.zone or "",
                o.instance_type,
                repr(float(o.price_on_demand_usd_per_hour)),
                "" if spot is None else repr(float(spot)),
            ]
        )
    return buf.getvalue()


def _points(captured_at: str, row: dict[str, str], source: Literal["shipped", "refresh"]) -> list[PricePoint]:
    out = []
    for kind, col in (("on_demand", "price_on_demand_usd_per_hour"), ("spot", "price_spot_usd_per_hour")):
        text = row.get(col) or ""
        if not text:
            continue
        price = float(text)
        if not price > 0:
            raise ValueError(f"{col} must be a positive price, got {text!r}")
        out.append(
            PricePoint(
                captured_at=captured_at,
                provider=row["provider"],
                region=row["region"],
                zone=row.get("zone") or None,
                instance_type=row["instance_type"],
                price_kind=kind,  # type: ignore[arg-type]
                price_usd_per_hour=price,
                source=source,
            )
        )
    return out


def _refresh_points(provider: str) -> list[PricePoint]:
    from gpufleet.catalog.fetch import store

    out: list[PricePoint] = []
    for path, text in store.read_history(provider):
        rows = list(csv.DictReader(io.StringIO(text)))
        try:
            for row in rows:
                datetime.strptime(row["captured_at"], _ISO)
                out.extend(_points(row["captured_at"], row, "refresh"))
        except (KeyError, ValueError, TypeError) as exc:
            raise DataError(
                f"Price-history file {path} does not parse ({exc}). It is checked against its SHA-256, so it "
                "was written by another gpufleet version; move it away to drop it from the history."
            ) from None
    return out


def price_history(
    *,
    provider: str,
    instance_type: str,
    region: str,
    price_kind: PriceKind | None = None,
    days: int = 90,
    now: datetime | None = None,
    shipped: OfferTable | None = None,
) -> tuple[PricePoint, ...]:
    """Dated prices of ``instance_type`` in ``provider``'s ``region``: the shipped snapshot's price first,
    then every refresh captured in the last ``days`` days before ``now`` (default: the current time), in
    capture order; only ``price_kind`` when given. () when the machine is not offered there.

    Raises :class:`UnknownNameError` for a provider, instance type or region gpufleet does not know (with
    close matches), :class:`InputError` for a bad ``days`` or ``price_kind``.
    """
    if not isinstance(days, int) or isinstance(days, bool) or not 1 <= days <= MAX_DAYS:
        raise InputError(f"days must be a whole number of days from 1 to {MAX_DAYS}; got {days!r}. E.g. 90.")
    if price_kind is not None and price_kind not in PRICE_KINDS:
        raise UnknownNameError("price kind", str(price_kind), PRICE_KINDS)
    if shipped is None:
        from gpufleet.catalog.offers import load_shipped_offers

        shipped = load_shipped_offers()
    prov = shipped.column("provider")
    mine = prov == provider  # columns, not records: 10x faster on the 14k-row shipped table
    its, regs = shipped.column("instance_type")[mine], shipped.column("region")[mine]
    refreshed = _refresh_points(provider)
    if not mine.any() and not refreshed:
        raise UnknownNameError("provider", provider, set(prov.tolist()))
    types = set(its.tolist()) | {p.instance_type for p in refreshed}
    if instance_type not in types:
        raise UnknownNameError(f"{provider} instance type", instance_type, types)
    regions = set(regs.tolist()) | {p.region for p in refreshed}
    if region not in regions:
        raise UnknownNameError(f"{provider} region", region, regions)
    first: list[PricePoint] = []
    for o in shipped.take(mine).take((its == instance_type) & (regs == region)).records():
        row = {
            "provider": o.provider,
            "region": o.region,
            "zone": o.zone or "",
            "instance_type": o.instance_type,
            "price_on_demand_usd_per_hour": repr(float(o.price_on_demand_usd_per_hour)),
            "price_spot_usd_per_hour": (
                "" if o.price_spot_usd_per_hour is None else repr(float(o.price_spot_usd_per_hour))
            ),
        }
        first.extend(_points(o.captured_at, row, "shipped"))
    since = (now or datetime.now(UTC)) - timedelta(days=days)
    later = [
        p
        for p in refreshed
        if p.instance_type == instance_type
        and p.region == region
        and datetime.strptime(p.captured_at, _ISO).replace(tzinfo=UTC) >= since
    ]
    later.sort(key=lambda p: p.captured_at)  # stable: zones and kinds keep their file order
    points = first + later
    return tuple(p for p in points if price_kind is None or p.price_kind == price_kind)


def price_history_answer(
    *,
    provider: str,
    instance_type: str,
    region: str,
    price_kind: PriceKind | None = None,
    days: int = 90,
    now: datetime | None = None,
) -> PriceHistory:
    """:func:`price_history` with its query, as the CLI and the service print it."""
    points = price_history(
        provider=provider,
        instance_type=instance_type,
        region=region,
        price_kind=price_kind,
        days=days,
        now=now,
    )
    return PriceHistory(
        provider=provider,
        instance_type=instance_type,
        region=region,
        price_kind=price_kind,
        window_days=days,
        points=points,
    )


__all__ = [
    "CARRIED_SPOT_NOTE",
    "HISTORY_COLUMNS",
    "MAX_DAYS",
    "PRICE_KINDS",
    "PriceHistory",
    "PriceKind",
    "PricePoint",
    "history_csv",
    "price_history",
    "price_history_answer",
]
