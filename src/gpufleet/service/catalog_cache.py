"""Each team's user catalog files, kept in memory for a few seconds (per process, one database).

Every catalog page and every recommend, migrate and regions request needs the team's catalog files (the
key of the answer cache, the input of the team's table). Reading them from the database costs a query and
a hand-off to the thread pool per request, ~0.5 ms of the service process's CPU and a third of its samples
under the load benchmark. A team's files are kept for ``ttl_s`` (``ServiceSettings.auth_cache_ttl_s``, 5 s,
as tokens are). An upload or a delete in this process forgets the team's files in every cache of that
database at once (the next request reads the new files); one made by another process (a replica) is seen
within ``ttl_s``. A read that started before an upload or delete is never kept (a generation per team).
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as OrmSession

    from gpufleet.service.user_catalogs import CatalogFile

#: teams kept per cache before it starts again [teams]
MAX_TEAMS = 10_000


class TeamCatalogCache:
    """team id -> its catalog files (name, text; in the order applied), for ``ttl_s`` seconds. Thread-safe."""

    def __init__(self, db_key: str, ttl_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.db_key, self.ttl_s, self._clock = db_key, ttl_s, clock
        self._lock = threading.Lock()
        self._files: dict[int, tuple[tuple[CatalogFile, ...], float]] = {}
        self._generation: dict[int, int] = {}
        _CACHES.add(self)

    def get(self, team_id: int) -> tuple[CatalogFile, ...] | None:
        hit = self._files.get(team_id)
        if hit is None or hit[1] <= self._clock():
            return None
        return hit[0]

    def generation(self, team_id: int) -> int:
        """Read before the database is: :meth:`put` keeps the files only if nothing changed meanwhile."""
        return self._generation.get(team_id, 0)

    def put(self, team_id: int, files: tuple[CatalogFile, ...], generation: int) -> None:
        if self.ttl_s <= 0:
            return
        with self._lock:
            if self._generation.get(team_id, 0) != generation:  # uploaded or deleted during the read
                return
            if len(self._files) >= MAX_TEAMS:
                self._files.clear()
            self._files[team_id] = (files, self._clock() + self.ttl_s)

    def forget(self, team_id: int) -> None:
        with self._lock:
            self._files.pop(team_id, None)
            self._generation[team_id] = self._generation.get(team_id, 0) + 1


#: every live cache of this process (an upload or delete forgets the team in those of the same database)
_CACHES: weakref.WeakSet[TeamCatalogCache] = weakref.WeakSet()


def forget_team_catalogs(db: OrmSession, team_id: int) -> None:
    """The team's catalogs changed in ``db``'s database: drop them from every cache of that database."""
    from gpufleet.service.auth import db_key

    key = db_key(db)
    for cache in list(_CACHES):
        if cache.db_key == key:
            cache.forget(team_id)
