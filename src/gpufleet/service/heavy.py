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

#: team tables (shipped catalog + user catalogs) kept per process, least recently used out [tables]
TEAM_TABLES_MAX = 4
_TEAM_TABLES: OrderedDict[str, tuple[object, OfferTable]] = OrderedDict()
_TEAM_TABLES_LOCK = threading.Lock()


def team_table(cats: Catalogs) -> OfferTable | None:
    """The shipped catalog with ``cats`` applied (None: none, the library's default), built once per version
    of the catalogs' files and of the shipped table (``TEAM_TABLES_MAX`` kept): a team's recommend no
    longer writes its files and re-reads the catalog on every request. The key is the digest of the files'
    names and texts, so a team only ever gets a table built from its own files."""
    if not cats:
        return None
    from gpufleet.catalog.offers import load_offers
    from gpufleet.service.user_catalogs import CatalogFile, catalogs_version, offers_with

    files = tuple(CatalogFile(name=name, text=text) for name, text in cats)
    key, shipped = catalogs_version(files), load_offers()
    with _TEAM_TABLES_LOCK:
        hit = _TEAM_TABLES.get(key)
        if hit is not None and hit[0] is shipped:
            _TEAM_TABLES.move_to_end(key)
            return hit[1]
    table = offers_with(files)
    assert table is not None  # files given
    with _TEAM_TABLES_LOCK:
        _TEAM_TABLES[key] = (shipped, table)
        while len(_TEAM_TABLES) > TEAM_TABLES_MAX:
            _TEAM_TABLES.popitem(last=False)
    return table


def _json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, ensure_ascii=False, allow_nan=False)


def recommend_json(workload: dict[str, Any], objective: str | None, limit: int, cats: Catalogs) -> str:
    """``gpufleet recommend --format json`` for ``workload`` on the team's offers."""
    from gpufleet.recommend.api import recommend
    from gpufleet.report import render_text

    return render_text(recommend(workload, objective=objective, limit=limit, offers=team_table(cats)), "json")


def migrate_json(workload: dict[str, Any], objective: str | None, limit: int, cats: Catalogs) -> str:
    """``gpufleet migrate --format json``: the current deployment against the best alternative."""
    from gpufleet.recommend.api import migrate
    from gpufleet.report import render_text

    return render_text(migrate(workload, objective=objective, limit=limit, offers=team_table(cats)), "json")


def regions_json(workload: dict[str, Any], limit: int, cats: Catalogs) -> str:
    """``gpufleet regions --format json`` for one workload."""
    from gpufleet.fleet.regions import analyze_regions
    from gpufleet.recommend.workload import workload_from_dict
    from gpufleet.report import fleet_report as fr

    w = workload_from_dict(workload, source="request body")
    return fr.render_regions_json(analyze_regions([w], offers=team_table(cats), limit=limit))


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
