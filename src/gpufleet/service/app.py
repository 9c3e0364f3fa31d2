"""The ASGI application: the API, the dashboard, health and metrics, error handling, the job runner.

Errors: a :class:`~gpufleet.errors.GpufleetError` becomes its HTTP status (:func:`.errors.http_status`) with
the one-paragraph message; a body that does not validate becomes 422 with one paragraph naming each field;
anything else is logged with its traceback and answered 500 with no internals.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from gpufleet import __version__
from gpufleet.errors import GpufleetError, capped_list
from gpufleet.service.auth import PrincipalCache, db_key_of_url
from gpufleet.service.catalog_cache import TeamCatalogCache
from gpufleet.service.catalog_version import CatalogVersions
from gpufleet.service.db import SCHEMA_REVISION, current_revision, make_engine, make_sessionmaker, upgrade
from gpufleet.service.deps import State
from gpufleet.service.errors import http_status
from gpufleet.service.limits import HeavyRoutes
from gpufleet.service.ops import Metrics, OpsMiddleware, RateLimiter, ResponseCache
from gpufleet.service.pool import WorkerSetup
from gpufleet.service.request_checks import check_request
from gpufleet.service.sandbox import NoServerFilesMiddleware
from gpufleet.service.settings import ServiceSettings
from gpufleet.service.strict_body import StrictJsonMiddleware

log = logging.getLogger("gpufleet.service")


def error_response(status: int, kind: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"status": status, "type": kind, "message": message}}, status_code=status)


def _validation_message(exc: RequestValidationError) -> str:
    """One paragraph: each field, its bad value and what is wrong (capped, like the CLI's)."""
    parts = []
    for err in exc.errors():
        loc = [str(x) for x in err.get("loc", ())]
        where = loc[0] if loc else "request"
        field = ".".join(loc[1:]) or "(the whole body)"
        raw = err.get("input")
        if isinstance(raw, bytes) and not loc[1:]:
            parts.append("the body is not read as JSON: send it with Content-Type: application/json")
            continue
        value = repr(raw)
        value = value if len(value) <= 80 else value[:77] + "..."
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ").rstrip(".")
        parts.append(f"{where} field {field!r} = {value}: {msg}")
    return (
        "The request does not validate: "
        + capped_list(parts, sep="; ", what="more problems")
        + ". Fix these "
        "fields; /openapi.json gives every field with its unit and bounds."
    )


def create_app(settings: ServiceSettings, *, run_jobs: bool = True) -> FastAPI:
    """The service for ``settings``; ``run_jobs``: start the job workers and the scheduler (unless
    ``settings.scheduler`` is off) with the app (tests may not)."""
    engine = make_engine(settings.db_url)
    sm = make_sessionmaker(engine)
    from gpufleet.service.webhooks import allow_internal_hosts

    allow_internal_hosts(settings.webhook_internal_hosts)
    st = State(
        settings=settings,
        sm=sm,
        metrics=Metrics(),
        limiter=RateLimiter(settings.rate_limit_per_s, settings.rate_burst),
        principals=PrincipalCache(db_key_of_url(engine.url), settings.auth_cache_ttl_s),
        responses=ResponseCache(settings.catalog_cache_entries),
        team_files=TeamCatalogCache(db_key_of_url(engine.url), settings.auth_cache_ttl_s),
        heavy=HeavyRoutes(
            workers=settings.heavy_route_workers,
            limit_s=settings.request_time_limit_s,
            processes=settings.route_processes,
            setup=WorkerSetup(
                settings.estimate_cache_calls,
                settings.estimate_cache_configs,
                engine.url.render_as_string(hide_password=False),
            ),
        ),
        catalogs=CatalogVersions(sm, settings.catalog_check_s),
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        upgrade(engine)
        st.heavy.start()  # the route workers warm up while the service starts
        from gpufleet.recommend.candidates import limit_estimate_caches

        limit_estimate_caches(
            calls_max=settings.estimate_cache_calls, configs_max=settings.estimate_cache_configs
        )
        from gpufleet.catalog.offers import load_offers

        await run_in_threadpool(load_offers)  # read once here: the catalog route reads it on the event loop
        await run_in_threadpool(st.catalogs.current)  # and the latest refreshed prices in the database
        if run_jobs and settings.job_workers > 0:
            from gpufleet.service.jobs import JobRunner

            st.runner = JobRunner(st.sm, settings)
            st.runner.start()
        if run_jobs and settings.scheduler:
            from gpufleet.service.scheduler import Scheduler

            st.scheduler = Scheduler(st.sm, poll_s=settings.scheduler_poll_s, clock=lambda: st.clock())
            st.scheduler.start()
        try:
            yield
        finally:
            if st.scheduler is not None:
                st.scheduler.stop()
                st.scheduler = None
            if st.runner is not None:
                st.runner.stop()  # running jobs go back to the queue
                st.runner = None
            st.heavy.close()
            engine.dispose()

    app = FastAPI(
        title="gpufleet",
        version=__version__,
        summary="GPU capacity, cost, recommendations and fleet plans as a service.",
        lifespan=lifespan,
        openapi_url="/openapi.json",
        dependencies=[Depends(check_request)],
    )
    app.state.gpufleet = st

    @app.exception_handler(GpufleetError)
    async def _gpufleet_error(_: Request, exc: GpufleetError) -> JSONResponse:
        status = http_status(exc)
        if status >= 500:
            log.error("server-side data error: %s", exc)
        return error_response(status, type(exc).__name__, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error_response(422, "ValidationError", _validation_message(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        text = exc.detail if isinstance(exc.detail, str) else "Request refused."
        if exc.status_code == 404:
            text = "No such route. /openapi.json lists every route; the dashboard is at /."
        elif exc.status_code == 405:
            text = "This route does not take that method. /openapi.json lists the methods of every route."
        return error_response(exc.status_code, "HTTPError", text)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> JSONResponse:
        log.exception("internal error on %s %s", request.method, request.url.path)
        return error_response(
            500,
            "InternalError",
            "The service failed on an internal error (logged on the server, with the time of this request). "
            "Retry; if it persists, report it with the request you sent.",
        )

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        """The process answers."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    def readyz() -> Response:
        """The database answers and holds the schema this code expects."""
        try:
            rev = current_revision(engine)
        except Exception as exc:
            log.warning("readyz: database unavailable: %s", exc)
            return error_response(503, "NotReady", "The database does not answer.")
        if rev != SCHEMA_REVISION:
            return error_response(
                503, "NotReady", f"Database schema at {rev}, this code needs {SCHEMA_REVISION}."
            )
        return JSONResponse({"status": "ready", "schema_revision": rev})

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    def metrics() -> PlainTextResponse:
        """Prometheus text exposition: request latency histograms, job queue depth."""
        from gpufleet.service.jobs import queue_depth

        return PlainTextResponse(
            st.metrics.render(queue_depth(st.sm)), media_type="text/plain; version=0.0.4"
        )

    from gpufleet.service.api import API_KINDS, router
    from gpufleet.service.dashboard import SignInRequired, to_login
    from gpufleet.service.dashboard import router as dashboard_router
    from gpufleet.service.dashboard_notify import router as dashboard_notify_router
    from gpufleet.service.schedules_api import router as schedules_router
    from gpufleet.service.telemetry_api import router as telemetry_router

    app.include_router(router)
    app.include_router(telemetry_router)
    app.include_router(schedules_router)
    app.include_router(importlib.import_module("gpufleet.service.catalogs_api").router)
    app.include_router(importlib.import_module("gpufleet.service.uploads_api").router)
    app.include_router(dashboard_router)
    app.include_router(dashboard_notify_router)
    pages = ("dashboard_overview", "dashboard_catalog", "dashboard_catalogs", "dashboard_findings")
    for page in (*pages, "dashboard_simulations"):
        app.include_router(importlib.import_module(f"gpufleet.service.{page}").router)
    app.add_exception_handler(SignInRequired, to_login)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            from fastapi.openapi.utils import get_openapi

            from gpufleet.service.schemas import add_shipped_schemas

            doc = get_openapi(title=app.title, version=app.version, summary=app.summary, routes=app.routes)
            add_shipped_schemas(doc, API_KINDS)
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(NoServerFilesMiddleware)
    app.add_middleware(StrictJsonMiddleware)
    app.add_middleware(OpsMiddleware, metrics=st.metrics, max_body_bytes=settings.max_body_bytes)
    return app
