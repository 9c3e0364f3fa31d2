"""The offer catalog: typed, columnar, immutable, with vectorised filtering.

The shipped table ``data/offers.csv`` is built by ``tools/build_catalog.py`` from the SkyPilot-format
snapshots
(see ``data/PROVENANCE.md`` for inputs, dates and every correction). One row is one purchasable machine: a
provider x region (x zone) x instance type, with its accelerator (a spec id from ``gpu_specs.csv``; empty for
CPU-only rows), the GPU count (fractional for GPU slices), the per-GPU memory [GiB] and hourly USD prices.
``price_spot_usd_per_hour`` is ``None``/NaN where the provider lists no spot price, never 0.

The parts live in their own modules, re-exported here: :mod:`gpufleet.catalog.offer_table` (``Offer``,
``OfferTable``) and :mod:`gpufleet.catalog.offers_io` (CSV read/write, loading). This module holds the
catalog's age.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

# ``resources`` stays an attribute of this module: tests patch ``offers.resources.files``
from importlib import resources as resources

from gpufleet.catalog.offer_table import _FLOAT_COLUMNS as _FLOAT_COLUMNS
from gpufleet.catalog.offer_table import _OPTIONAL_FLOAT as _OPTIONAL_FLOAT
from gpufleet.catalog.offer_table import _OPTIONAL_STR as _OPTIONAL_STR
from gpufleet.catalog.offer_table import _STR_COLUMNS as _STR_COLUMNS
from gpufleet.catalog.offer_table import (
    OFFER_COLUMNS,
    SORT_KEYS,
    Offer,
    OfferTable,
    SortKey,
)
from gpufleet.catalog.offer_table import _check_number as _check_number
from gpufleet.catalog.offer_table import _provider_list as _provider_list
from gpufleet.catalog.offers_io import _REINSTALL as _REINSTALL
from gpufleet.catalog.offers_io import _SHIPPED_FILE as _SHIPPED_FILE
from gpufleet.catalog.offers_io import _Bad as _Bad
from gpufleet.catalog.offers_io import _first_bad as _first_bad
from gpufleet.catalog.offers_io import _float_column as _float_column
from gpufleet.catalog.offers_io import _fmt as _fmt
from gpufleet.catalog.offers_io import _read as _read
from gpufleet.catalog.offers_io import _refreshed_tables as _refreshed_tables
from gpufleet.catalog.offers_io import _validate as _validate
from gpufleet.catalog.offers_io import (
    load_offers,
    load_shipped_offers,
    read_offers_csv,
    write_offers_csv,
)


# --- age --------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderAge:
    """How old a provider's prices are. Ages in days; ``None`` where the capture date is unknown ("old")."""

    provider: str
    captured_at: tuple[str, ...]  # distinct captured_at values, e.g. ("2026-08/2026-11",)
    newest_age_days: float | None  # since the latest possible capture date [d]
    oldest_age_days: float | None  # since the earliest possible capture date [d]
    human: str  # e.g. "0-3 months old", "6 months old", "unknown date (old)"


def _date_bounds(captured_at: str) -> tuple[date, date] | None:
    parts = [p.strip() for p in captured_at.split("/") if p.strip()]
    starts, ends = [], []
    for p in parts:
        bits = p.split("T", 1)[0].split(" ", 1)[0].split("-")  # ISO 8601 date-times: the date part
        try:
            if len(bits) == 3:
                d = date(int(bits[0]), int(bits[1]), int(bits[2]))
                starts.append(d)
                ends.append(d)
            elif len(bits) == 2:
                y, m = int(bits[0]), int(bits[1])
                starts.append(date(y, m, 1))
                ends.append(date(y + (m == 12), m % 12 + 1, 1))
            else:
                return None
        except ValueError:
            return None
    if not starts:
        return None
    return min(starts), max(ends)


#: captured_at of a user catalog row given without a date (gpufleet.catalog.user.USER_CAPTURED_AT)
USER_CAPTURED_AT = "user"


def _months(days: float) -> int:
    return max(0, round(days / 30.44))


def catalog_age(table: OfferTable | None = None, today: date | None = None) -> list[ProviderAge]:
    """Per provider: the captured_at values of its rows and a human age relative to ``today``."""
    table = load_shipped_offers() if table is None else table
    today = today or date.today()
    prov, cap = table.column("provider"), table.column("captured_at")
    pairs = sorted({(str(p), str(c)) for p, c in zip(prov.tolist(), cap.tolist(), strict=True)})
    by_provider: dict[str, list[str]] = {}
    for p, c in pairs:
        by_provider.setdefault(p, []).append(c)
    out = []
    for p, caps in by_provider.items():
        bounds = [b for b in (_date_bounds(c) for c in caps) if b is not None]
        user = USER_CAPTURED_AT in caps  # rows of a user catalog given without a capture date
        if not bounds:
            out.append(
                ProviderAge(
                    provider=p,
                    captured_at=tuple(caps),
                    newest_age_days=None,
                    oldest_age_days=None,
                    human=(
                        "your prices, no capture date given (add captured_at to date them)"
                        if user and len(caps) == 1
                        else "unknown date (old)"
                    ),
                )
            )
            continue
        newest = max(0.0, float((today - max(b[1] for b in bounds)).days))
        oldest = max(0.0, float((today - min(b[0] for b in bounds)).days))
        lo, hi = _months(newest), _months(oldest)
        human = f"{lo} months old" if lo == hi else f"{lo}-{hi} months old"
        if len(bounds) < len(caps):
            human += " (some rows yours without a capture date)" if user else " (some rows of unknown date)"
        out.append(
            ProviderAge(
                provider=p,
                captured_at=tuple(caps),
                newest_age_days=newest,
                oldest_age_days=oldest,
                human=human,
            )
        )
    return out


__all__ = [
    "OFFER_COLUMNS",
    "SORT_KEYS",
    "Offer",
    "OfferTable",
    "ProviderAge",
    "SortKey",
    "catalog_age",
    "load_offers",
    "load_shipped_offers",
    "read_offers_csv",
    "write_offers_csv",
]
