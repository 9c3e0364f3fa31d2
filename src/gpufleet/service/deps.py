"""FastAPI dependencies: the app's state (settings, database sessions, job runner) and who is asking."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import Request
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker
from starlette.concurrency import run_in_threadpool

from gpufleet.service.auth import Principal, PrincipalCache, authenticate_token_hash, sha256_hex
from gpufleet.service.db import now_unix_s
from gpufleet.service.errors import NotAuthenticated
from gpufleet.service.ops import Metrics, RateLimiter, ResponseCache
from gpufleet.service.settings import ServiceSettings

if TYPE_CHECKING:
    from gpufleet.service.catalog_version import CatalogVersions
    from gpufleet.service.jobs import JobRunner
    from gpufleet.service.limits import HeavyRoutes
    from gpufleet.service.scheduler import Scheduler


@dataclass(slots=True, kw_only=True)
class State:
    settings: ServiceSettings
    sm: sessionmaker[OrmSession]
    metrics: Metrics
    limiter: RateLimiter
    #: bearer token hash -> principal, for ``settings.auth_cache_ttl_s``
    principals: PrincipalCache
    #: answered catalog queries
    responses: ResponseCache
    #: the pool and time limit of the heavy synchronous routes (:mod:`.limits`)
    heavy: HeavyRoutes
    #: the catalog the offer routes answer from (the latest refresh in the database)
    catalogs: CatalogVersions
    runner: JobRunner | None = None
    scheduler: Scheduler | None = None
    #: the time [Unix s] of schedule changes and of the scheduler (tests set it)
    clock: Callable[[], float] = now_unix_s


def state(request: Request) -> State:
    st: State = request.app.state.gpufleet
    return st


async def bearer_principal(request: Request) -> Principal:
    """The principal of the request's ``Authorization: Bearer`` token (rate-limited per token).

    Answered from the principal cache when it holds the token (no thread, no database); else looked up in
    the database in the thread pool and kept for ``auth_cache_ttl_s``."""
    header = request.headers.get("authorization", "")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise NotAuthenticated(
            "This route needs a token: send 'Authorization: Bearer <token>'. `gpufleet serve token create "
            "--team TEAM --role viewer` makes one (or sign in to the dashboard at /login)."
        )
    st = state(request)
    digest = sha256_hex(secret.strip())
    who = st.principals.get(digest)
    if who is None:
        who = await run_in_threadpool(_lookup, st, digest)
    request.state.team = who.team_name  # for the request log line (service/logs.py)
    st.limiter.check(who.token_id)
    return who


def _lookup(st: State, digest: str) -> Principal:
    with st.sm() as db:
        who = authenticate_token_hash(db, digest)
    st.principals.put(digest, who)
    return who
