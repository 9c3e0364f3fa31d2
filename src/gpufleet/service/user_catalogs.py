"""Each team's user catalogs (the CLI's ``--catalog`` files: its own machines, negotiated prices): kept in the
database as uploaded, checked with the library's reader, applied by the team's recommend and plan.

Negotiated prices are confidential: every read filters on the team, so another team's catalog id is not
found (404), never forbidden (which would confirm it exists).
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.service.auth import Principal
from gpufleet.service.catalog_cache import forget_team_catalogs
from gpufleet.service.db import UserCatalog
from gpufleet.service.errors import Conflict, NotFound

if TYPE_CHECKING:
    from gpufleet.catalog.offers import OfferTable

#: user catalogs a team may keep
MAX_CATALOGS_PER_TEAM = 20


@dataclass(frozen=True, slots=True, kw_only=True)
class CatalogFile:
    """A catalog's name (a safe file name) and its text."""

    name: str
    text: str


def safe_catalog_name(name: str) -> str:
    """An uploaded name reduced to a safe file name ending in .yaml, .yml or .json (``.yaml`` added)."""
    from gpufleet.service.telemetry_api import safe_file_name

    clean = safe_file_name(name)
    if clean == "telemetry" and not name.strip():
        clean = "catalog"
    return clean if clean.lower().endswith((".yaml", ".yml", ".json")) else clean + ".yaml"


@contextmanager
def _files(catalogs: Sequence[CatalogFile]) -> Iterator[list[Path]]:
    """The catalogs written to a private temporary folder (the library reads files)."""
    with tempfile.TemporaryDirectory(prefix="gpufleet-catalogs-") as tmp:
        paths = []
        for i, c in enumerate(catalogs):
            folder = Path(tmp) / str(i)  # two teams' names never meet, but one team's may repeat here
            folder.mkdir()
            path = folder / c.name
            path.write_text(c.text, encoding="utf-8")
            paths.append(path)
        try:
            yield paths
        except (ConfigFileError, InputError) as exc:  # name the file, not the server's temporary folder
            text = str(exc)
            for i in range(len(catalogs)):
                text = text.replace(f"{tmp}/{i}/", "")
            text = text.replace(tmp, "<upload>")
            raise ConfigFileError(text) from None


def check_catalog(name: str, text: str) -> tuple[str, int, int]:
    """(safe name, offers it adds, price overrides) of a catalog, read by the library and applied to the
    shipped table as the CLI's ``--catalog`` is (a :class:`ConfigFileError` naming entry and field otherwise:
    an override matching no offer was kept, then broke every recommend and plan of the team)."""
    from gpufleet.catalog.offers import load_offers
    from gpufleet.catalog.user import read_user_catalog

    safe = safe_catalog_name(name)
    with _files([CatalogFile(name=safe, text=text)]) as (path,):
        cat = read_user_catalog(path)
        load_offers(user_catalogs=[path])
    return safe, len(cat.offers), len(cat.price_overrides)


def offers_with(catalogs: Sequence[CatalogFile], base: OfferTable | None = None) -> OfferTable | None:
    """``base`` (default: the shipped catalog) with ``catalogs`` applied in order (``base`` itself, None
    when it is not given: none given, the library's default)."""
    if not catalogs:
        return base
    from gpufleet.catalog.offers import load_offers

    with _files(catalogs) as paths:
        return load_offers(user_catalogs=paths, base=base)


def save(sm: sessionmaker[OrmSession], who: Principal, name: str, text: str) -> UserCatalog:
    """Keep a checked catalog for the principal's team (editor); 409 when the name is taken."""
    who.require("editor")
    safe, offers, overrides = check_catalog(name, text)
    with sm() as db:
        if len(team_catalogs(db, who.team_id)) >= MAX_CATALOGS_PER_TEAM:
            raise Conflict(
                f"Team {who.team_name!r} already keeps {MAX_CATALOGS_PER_TEAM} user catalogs, the most "
                "allowed. "
                "Delete one (DELETE /api/v1/catalogs/ID) or merge them into one file."
            )
        row = UserCatalog(team_id=who.team_id, name=safe, text=text, offers=offers, price_overrides=overrides)
        db.add(row)
        try:
            db.commit()
            forget_team_catalogs(db, who.team_id)
        except IntegrityError:
            raise Conflict(
                f"Your team already has a user catalog named {safe!r}. Delete it first, or upload under "
                "another name."
            ) from None
        return row


def team_catalogs(db: OrmSession, team_id: int) -> list[UserCatalog]:
    """The team's catalogs, oldest first (the order they are applied in)."""
    q = select(UserCatalog).where(UserCatalog.team_id == team_id).order_by(UserCatalog.id)
    return list(db.scalars(q).all())


def get(sm: sessionmaker[OrmSession], who: Principal, catalog_id: int) -> UserCatalog:
    with sm() as db:
        row = db.get(UserCatalog, catalog_id)
    if row is None or row.team_id != who.team_id:
        raise NotFound(
            f"No user catalog with id {catalog_id} in your team. GET /api/v1/catalogs lists your team's."
        )
    return row


def delete(sm: sessionmaker[OrmSession], who: Principal, catalog_id: int) -> UserCatalog:
    """Delete one of the team's catalogs (editor)."""
    who.require("editor")
    row = get(sm, who, catalog_id)
    with sm() as db:
        db.query(UserCatalog).filter(UserCatalog.id == row.id, UserCatalog.team_id == who.team_id).delete()
        db.commit()
        forget_team_catalogs(db, who.team_id)
    return row


def files_of(sm: sessionmaker[OrmSession], team_id: int) -> tuple[CatalogFile, ...]:
    with sm() as db:
        return tuple(CatalogFile(name=r.name, text=r.text) for r in team_catalogs(db, team_id))


def catalogs_version(catalogs: Sequence[CatalogFile]) -> str:
    """A digest of the catalogs' names and texts in order ("" for none): two teams share it only when their
    catalogs are the same files, so an answer cached under it is never another team's confidential prices
    (ids are not used: a deleted row's id may be reused by SQLite)."""
    if not catalogs:
        return ""
    import hashlib

    h = hashlib.sha256()
    for c in catalogs:
        for part in (c.name, c.text):
            data = part.encode("utf-8")
            h.update(len(data).to_bytes(8, "big"))
            h.update(data)
    return h.hexdigest()


def team_offers(
    sm: sessionmaker[OrmSession], team_id: int, base: OfferTable | None = None
) -> OfferTable | None:
    """The offers the team's recommend and plan use: ``base`` (the service's current catalog; default the
    shipped one) with its catalogs applied."""
    return offers_with(files_of(sm, team_id), base)


def with_team_catalogs(sm: sessionmaker[OrmSession], team_id: int, params: dict[str, Any]) -> dict[str, Any]:
    """A plan job's parameters with the team's user catalogs as ``catalogs`` (whatever ``params`` held)."""
    cats = [{"name": c.name, "text": c.text} for c in files_of(sm, team_id)]
    return {k: v for k, v in params.items() if k != "catalogs"} | ({"catalogs": cats} if cats else {})
