"""The catalog the offer routes answer from: the shipped offer table with, per provider, the offers of its
latest succeeded ``catalog_refresh`` job (table ``catalog_refreshes``, written by the worker that ran it).

The version is the highest refresh id in the database, which every replica sharing it sees: a process asks
the database for it at most every ``catalog_check_s`` seconds and builds the table once per version (then
every catalog query, recommend, migrate, regions and plan of that process uses the same object, which also
keys the offers answer cache). Every answer names the catalog it used (:meth:`CatalogVersion.describe`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from gpufleet.service.db import CatalogRefresh

if TYPE_CHECKING:
    from gpufleet.catalog.offers import OfferTable

SHIPPED = "shipped"


@dataclass(frozen=True, slots=True, kw_only=True)
class Refreshed:
    """One provider's prices in force: the refresh they come from."""

    refresh_id: int
    provider: str
    captured_at: str


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogVersion:
    """A catalog version: ``shipped`` or ``refresh-<highest refresh id>``, its table, and what replaced
    the shipped rows."""

    version: str
    table: OfferTable
    refreshes: tuple[Refreshed, ...]

    def describe(self) -> dict[str, Any]:
        """What an answer says of the catalog it used: the version and, per refreshed provider, the capture
        time of its prices (every other provider: the shipped snapshot)."""
        return {
            "version": self.version,
            "refreshed": [
                {"provider": r.provider, "captured_at": r.captured_at, "refresh_id": r.refresh_id}
                for r in self.refreshes
            ],
            "other_providers": "shipped snapshot (its captured_at per offer)",
        }


def _latest_rows(db: OrmSession) -> list[CatalogRefresh]:
    """Each provider's latest refresh, by provider."""
    last = (
        select(CatalogRefresh.provider, func.max(CatalogRefresh.id).label("id"))
        .group_by(CatalogRefresh.provider)
        .subquery()
    )
    q = select(CatalogRefresh).join(last, CatalogRefresh.id == last.c.id).order_by(CatalogRefresh.provider)
    return list(db.scalars(q).all())


def table_with(refreshes: Sequence[Mapping[str, Any]], shipped: OfferTable | None = None) -> OfferTable:
    """The shipped table with each refresh's offers (``{"provider", "captured_at", "csv"}``) in place of
    the shipped rows of its provider (as ``load_offers(include_refreshed=True)`` does with the files of
    `gpufleet catalog update`)."""
    import numpy as np

    from gpufleet.catalog.offer_table import OfferTable
    from gpufleet.catalog.offers_io import load_shipped_offers, read_offers_csv

    table = load_shipped_offers() if shipped is None else shipped
    if not refreshes:
        return table
    new = OfferTable.concat(
        [
            read_offers_csv(r["csv"], source_name=f"{r['provider']} refreshed {r['captured_at']}")
            for r in refreshes
        ]
    )
    replaced = np.isin(table.column("provider"), np.array([r["provider"] for r in refreshes], dtype=object))
    return OfferTable.concat([table.take(~replaced), new])


def version_of(refreshes: Sequence[Mapping[str, Any]]) -> str:
    return f"refresh-{max(int(r['id']) for r in refreshes)}" if refreshes else SHIPPED


def refreshes_for_job(sm: sessionmaker[OrmSession]) -> list[dict[str, Any]]:
    """The latest refresh of each provider as a job process gets it (it has no database)."""
    with sm() as db:
        return [
            {"id": r.id, "provider": r.provider, "captured_at": r.captured_at, "csv": r.offers_csv}
            for r in _latest_rows(db)
        ]


def version_for_job(refreshes: Sequence[Mapping[str, Any]] | None) -> CatalogVersion:
    """A job process's catalog from :func:`refreshes_for_job`'s list (None: the shipped table)."""
    rs = list(refreshes or ())
    return CatalogVersion(
        version=version_of(rs),
        table=table_with(rs),
        refreshes=tuple(
            Refreshed(refresh_id=int(r["id"]), provider=str(r["provider"]), captured_at=str(r["captured_at"]))
            for r in rs
        ),
    )


def record_refresh(sm: sessionmaker[OrmSession], job_id: int, doc: dict[str, Any]) -> None:
    """Keep a succeeded refresh's offers (``doc["_offers_csv"]``, taken out of the result document)."""
    text = doc.pop("_offers_csv", None)
    if not isinstance(text, str):
        return
    with sm() as db:
        db.add(
            CatalogRefresh(
                job_id=job_id,
                provider=str(doc["provider"]),
                captured_at=str(doc["captured_at"]),
                offer_rows=int(doc.get("offer_rows_after_merge") or 0),
                offers_csv=text,
            )
        )
        db.commit()


class CatalogVersions:
    """The current catalog version of this process: the database asked at most every ``check_every_s``
    seconds, the table built once per version (thread-safe)."""

    def __init__(
        self,
        sm: sessionmaker[OrmSession],
        check_every_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.sm, self.check_every_s, self.clock = sm, check_every_s, clock
        self._lock = threading.Lock()
        self._current: CatalogVersion | None = None
        self._checked = -float("inf")
        self.builds = 0  # tables built (tests)

    def current(self) -> CatalogVersion:
        now = self.clock()
        cur = self._current
        if cur is not None and now - self._checked < self.check_every_s:
            return cur
        with self._lock:
            if self._current is not None and self.clock() - self._checked < self.check_every_s:
                return self._current
            with self.sm() as db:
                latest = db.scalar(select(func.max(CatalogRefresh.id)))
            want = SHIPPED if latest is None else f"refresh-{latest}"
            if self._current is None or self._current.version != want:
                self._current = version_for_job(refreshes_for_job(self.sm) if latest is not None else [])
                self.builds += 1
            self._checked = self.clock()
            return self._current
