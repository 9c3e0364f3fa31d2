"""What the heavy synchronous routes compute (recommend, migrate, regions, estimate/*): plain functions of
plain values (the request's fields, the team's user catalogs as ``(name, text)`` pairs), returning the JSON
text the route answers. They run in a worker process of :mod:`.pool` (or on a heavy thread when the service
runs none: :mod:`.limits`), never with a database session: the route reads what they need first.

Imports stay inside the functions: a worker process imports what it uses once, and tests that replace a
library function see the replacement when these run on a thread.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gpufleet.catalog.offers import OfferTable

#: a team's user catalogs: (file name, text) in the order they are applied
Catalogs = tuple[tuple[str, str], ...]

#: the catalog an answer is computed from: (version, what the answer says of it), as
#: :class:`~gpufleet.service.catalog_version.CatalogVersion` gives them (``version`` "shipped" or "refresh-N")
CatalogRef = tuple[str, dict[str, Any]]

#: team tables (catalog version + user catalogs) kept per process, least recently used out [tables]
TEAM_TABLES_MAX = 4
_TEAM_TABLES: OrderedDict[tuple[str, str], OfferTable] = OrderedDict()
#: refreshed catalog tables by version kept per process [tables] (the current one and the one before)
BASE_TABLES_MAX = 2
_BASES: OrderedDict[str, OfferTable] = OrderedDict()
_LOCK = threading.Lock()
#: the database a worker process reads a refreshed catalog from (set at start: :func:`set_database`)
_DB_URL: list[str] = []


def set_database(url: str) -> None:
    """Where this process reads refreshed catalogs that it was not handed (a worker process: the service's
    database, read once per catalog version)."""
    _DB_URL[:] = [url] if url else []


def remember_base(version: str, table: OfferTable) -> None:
    """Keep ``table`` as catalog ``version`` in this process (the service's own, when it builds a version:
    the heavy routes on its threads then use the same object)."""
    with _LOCK:
        _BASES[version] = table
        _BASES.move_to_end(version)
        while len(_BASES) > BASE_TABLES_MAX:
            _BASES.popitem(last=False)


def base_table(version: str) -> OfferTable | None:
    """The offer table of catalog ``version`` (None: the shipped one, the library's default): kept in this
    process, else read from the service's database (a worker process: the refreshes up to that version)."""
    from gpufleet.service.catalog_version import SHIPPED

    if version == SHIPPED:
        return None
    with _LOCK:
        hit = _BASES.get(version)
    if hit is not None:
        return hit
    if not _DB_URL:
        raise RuntimeError(f"catalog {version} is not in this process and it has no database to read it from")
    from gpufleet.service.catalog_version import refreshes_for_job, table_with
    from gpufleet.service.db import make_engine, make_sessionmaker

    engine = make_engine(_DB_URL[0])
    try:
        rows = refreshes_for_job(make_sessionmaker(engine), upto_id=int(version.removeprefix("refresh-")))
    finally:
        engine.dispose()
    if not rows:  # an in-memory database is the service's alone
        raise RuntimeError(f"catalog {version} is not in the database this process reads ({_DB_URL[0]!r})")
    table = table_with(rows)
    remember_base(version, table)
    return table


def team_table(cats: Catalogs, version: str = "shipped") -> OfferTable | None:
    """Catalog ``version`` with ``cats`` applied (None: the shipped table and no catalogs, the library's
    default), built once per version of the catalogs' files and of the catalog (``TEAM_TABLES_MAX`` kept):
    a team's recommend no longer writes its files and re-reads the catalog on every request. The key is the
    digest of the files' names and texts, so a team only ever gets a table built from its own files."""
    base = base_table(version)
    if not cats:
        return base
    from gpufleet.service.user_catalogs import CatalogFile, catalogs_version, offers_with

    files = tuple(CatalogFile(name=name, text=text) for name, text in cats)
    key = (version, catalogs_version(files))
    with _LOCK:
        hit = _TEAM_TABLES.get(key)
        if hit is not None:
            _TEAM_TABLES.move_to_end(key)
            return hit
    table = offers_with(files, base)
    assert table is not None  # files given
    with _LOCK:
        _TEAM_TABLES[key] = table
        while len(_TEAM_TABLES) > TEAM_TABLES_MAX:
            _TEAM_TABLES.popitem(last=False)
    return table


def _json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, allow_nan=False)


def _with_catalog(text: str, catalog: CatalogRef) -> str:
    """The library's document with ``catalog`` (the version and capture times it was computed from)."""
    doc = json.loads(text)
    doc["catalog"] = catalog[1]
    return _json(doc)


def _ranked_json(
    kind: str,
    workload: dict[str, Any],
    objective: str | None,
    limit: int,
    cats: Catalogs,
    catalog: CatalogRef,
) -> str:
    """``gpufleet {kind} --format json`` (recommend or migrate) on the team's offers, with its ``catalog``."""
    from gpufleet.recommend import api
    from gpufleet.report import render_text

    run = api.recommend if kind == "recommend" else api.migrate
    offers = team_table(cats, catalog[0])
    doc = render_text(run(workload, objective=objective, limit=limit, offers=offers), "json")
    return _with_catalog(doc, catalog)


def recommend_json(
    workload: dict[str, Any], objective: str | None, limit: int, cats: Catalogs, catalog: CatalogRef
) -> str:
    """``gpufleet recommend --format json`` for ``workload`` on the team's offers, with its ``catalog``."""
    return _ranked_json("recommend", workload, objective, limit, cats, catalog)


def migrate_json(
    workload: dict[str, Any], objective: str | None, limit: int, cats: Catalogs, catalog: CatalogRef
) -> str:
    """``gpufleet migrate --format json``: the current deployment against the best alternative."""
    return _ranked_json("migrate", workload, objective, limit, cats, catalog)


def regions_json(workload: dict[str, Any], limit: int, cats: Catalogs, catalog: CatalogRef) -> str:
    """``gpufleet regions --format json`` for one workload."""
    from gpufleet.fleet.regions import analyze_regions
    from gpufleet.recommend.workload import workload_from_dict
    from gpufleet.report import fleet_report as fr

    w = workload_from_dict(workload, source="request body")
    offers = team_table(cats, catalog[0])
    return _with_catalog(fr.render_regions_json(analyze_regions([w], offers=offers, limit=limit)), catalog)


def _flat(kind: str, result: Any) -> str:
    from gpufleet.report.json_report import envelope, to_jsonable

    return _json(envelope(kind) | to_jsonable(result))


def estimate_memory_json(kwargs: dict[str, Any]) -> str:
    from gpufleet.estimate.memory import estimate_memory

    return _flat("estimate_memory", estimate_memory(**kwargs))


def estimate_inference_json(kwargs: dict[str, Any]) -> str:
    from gpufleet.estimate.performance import estimate_inference

    return _flat("estimate_inference", estimate_inference(**kwargs))


def estimate_training_json(kwargs: dict[str, Any]) -> str:
    from gpufleet.estimate.performance import estimate_training

    return _flat("estimate_training", estimate_training(**kwargs))
