"""`gpufleet serve`: run the HTTP service and dashboard; `gpufleet serve token create|list|revoke`.

Nothing of the service (FastAPI, SQLAlchemy, uvicorn) is imported until one of these runs; without the
``service`` extra they exit 2 naming ``pip install 'gpufleet[service]'``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated

import typer

from gpufleet.errors import FetchError, InputError, UnsupportedError

if TYPE_CHECKING:
    from sqlalchemy.orm import Session as DbSession

app = typer.Typer(
    help="Run the HTTP service and dashboard (API, teams and tokens, jobs); manage its tokens.",
    invoke_without_command=True,
)
token_app = typer.Typer(
    help="Create, list and revoke API tokens (shown once, stored hashed).", no_args_is_help=True
)
app.add_typer(token_app, name="token")

#: the modules of the ``service`` extra
SERVICE_MODULES: tuple[str, ...] = ("fastapi", "uvicorn", "sqlalchemy", "alembic", "multipart")

DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database: a SQLite file path, sqlite:///PATH or postgresql://USER:PASSWORD@HOST:PORT/DB "
        "(default: service.sqlite3 in the user's data folder, or $GPUFLEET_DB).",
        envvar="GPUFLEET_DB",
    ),
]


def require_service_extra() -> None:
    """Raise a one-paragraph error naming the pip command when a module of the extra is missing."""
    import importlib.util

    missing = [m for m in SERVICE_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise UnsupportedError(
            f"`gpufleet serve` needs the service extra ({', '.join(missing)} not installed): "
            "pip install 'gpufleet[service]'."
        )


def _db(db: str | None) -> DbSession:
    require_service_extra()
    from sqlalchemy.exc import OperationalError

    from gpufleet.service.db import make_engine, make_sessionmaker, upgrade
    from gpufleet.service.settings import db_url_from

    url = db_url_from(db)
    engine = make_engine(url)
    try:
        upgrade(engine)
    except OperationalError as exc:  # a server that is down or refuses the user: was a traceback
        first = str(exc.orig or exc).strip().splitlines()[0] if str(exc.orig or exc).strip() else "failed"
        raise FetchError(
            f"Cannot open the database {_safe(url)}: {first[:300]}. Check that the server runs and that --db "
            "(or GPUFLEET_DB) gives the right host, port, user, password and database."
        ) from None
    return make_sessionmaker(engine)()


def _check_limits(request_time_limit_s: float, rate_limit_per_s: float) -> None:
    """0 turns each limit off; a tiny positive value (1e-320) started a service that timed out or
    rate-limited every request."""
    if 0 < request_time_limit_s < MIN_REQUEST_TIME_LIMIT_S:
        raise InputError(
            f"--request-time-limit {request_time_limit_s:g} s is below {MIN_REQUEST_TIME_LIMIT_S:g} s, less "
            "than any recommend or estimate takes, so every such request would get a 504. Give seconds "
            "(default 30), or 0 for no limit."
        )
    if 0 < rate_limit_per_s < MIN_RATE_LIMIT_PER_S:
        raise InputError(
            f"--rate-limit {rate_limit_per_s:g} requests/s is below {MIN_RATE_LIMIT_PER_S:g} (one request "
            "in 1,000 s), which refuses almost every request. Give requests per second (default 20), or 0 "
            "for no limit."
        )


#: the smallest non-zero --request-time-limit [s] and --rate-limit [requests/s] the service starts with
MIN_REQUEST_TIME_LIMIT_S = 0.1
MIN_RATE_LIMIT_PER_S = 0.001


@app.callback()
def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option("--host", help="Address to bind (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port.", min=1, max=65535)] = 8642,
    db: DbOpt = None,
    public: Annotated[
        bool, typer.Option("--public", help="Allow a non-loopback --host (put TLS in front).")
    ] = False,
    workers: Annotated[
        int, typer.Option("--job-workers", help="Jobs run at once by this process.", min=0, max=64)
    ] = 2,
    job_time_limit: Annotated[
        float, typer.Option("--job-time-limit", help="Default job time limit (s).", min=1, max=86400)
    ] = 600.0,
    request_time_limit: Annotated[
        float,
        typer.Option(
            "--request-time-limit",
            help="Limit of a recommend, migrate, regions or estimate request (s; 0: none): 504 past it.",
            min=0,
            max=3600,
        ),
    ] = 30.0,
    route_processes: Annotated[
        int | None,
        typer.Option(
            "--route-processes",
            help="Worker processes for recommend, migrate, regions and estimates (0: threads of the service; "
            "default: min(2, CPUs)).",
            min=0,
            max=64,
        ),
    ] = None,
    rate_limit: Annotated[
        float, typer.Option("--rate-limit", help="Requests per second per token (0: none).", min=0, max=1e6)
    ] = 20.0,
    max_body_mib: Annotated[
        float, typer.Option("--max-body-mib", help="Largest request body (MiB).", min=0.01, max=1024)
    ] = 16.0,
    max_upload_mib: Annotated[
        float,
        typer.Option(
            "--max-upload-mib",
            help="Largest simulation input upload (MiB; trace, job file).",
            min=0.01,
            max=1024,
        ),
    ] = 8.0,
    scheduler: Annotated[
        bool,
        typer.Option(
            "--scheduler/--no-scheduler",
            help="Run the schedules in this process (several replicas may; each run is queued once).",
        ),
    ] = True,
    webhook_internal_hosts: Annotated[
        bool,
        typer.Option(
            "--webhook-internal-hosts",
            help="Let webhooks post to loopback and private addresses (an on-premises chat server).",
        ),
    ] = False,
    log_format: Annotated[
        str, typer.Option("--log-format", help="Log lines: json (one object per line) or text.")
    ] = "text",
    log_level: Annotated[str, typer.Option("--log-level", help="debug, info, warning or error.")] = "info",
) -> None:
    """Run the HTTP service and dashboard (API, teams and tokens, jobs); manage its tokens."""
    if ctx.invoked_subcommand is not None:
        return
    require_service_extra()
    import uvicorn

    from gpufleet.service.app import create_app
    from gpufleet.service.auth import bootstrap_admin
    from gpufleet.service.logs import configure
    from gpufleet.service.settings import ServiceSettings, check_bind, db_url_from

    check_bind(host, public=public)
    _check_limits(request_time_limit, rate_limit)
    configure(log_level, log_format)  # a bad value is refused before anything starts
    settings = ServiceSettings(
        db_url=db_url_from(db),
        job_workers=workers,
        job_time_limit_s=job_time_limit,
        request_time_limit_s=request_time_limit,
        rate_limit_per_s=rate_limit,
        max_body_bytes=int(max_body_mib * 1024 * 1024),
        upload_max_bytes=int(max_upload_mib * 1024 * 1024),
        scheduler=scheduler,
        webhook_internal_hosts=webhook_internal_hosts,
    )
    if route_processes is not None:  # else the settings' default, min(2, CPUs)
        settings = dataclasses.replace(settings, route_processes=route_processes)
    with _db(db) as session:
        admin = bootstrap_admin(session)
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}/"
    typer.echo(
        f"gpufleet service at {url} (API {url}api/v1, OpenAPI {url}docs); database {_safe(settings.db_url)}"
    )
    if admin is not None:
        typer.echo(f"First start: admin token of team 'default' (shown once, stored hashed): {admin}")
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        log_config=None,  # keep the handler configure() installed (JSON or text)
        log_level=log_level.lower(),
        access_log=False,  # the service logs each request itself, with its route template and team
        timeout_graceful_shutdown=10,
        proxy_headers=False,
        server_header=False,
    )


def _safe(url: str) -> str:
    """A database URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url


@token_app.command("create")
def token_create(
    team: Annotated[str, typer.Option("--team", help="Team (created if new).")] = "default",
    role: Annotated[str, typer.Option("--role", help="viewer, editor or admin.")] = "viewer",
    name: Annotated[str, typer.Option("--name", help="What the token is for.")] = "cli",
    db: DbOpt = None,
) -> None:
    """Create a token and print it (once: only its hash is kept)."""
    from gpufleet.service.auth import create_token

    with _db(db) as session:
        secret, info = create_token(session, team=team, name=name, role=role)
    typer.echo(f"token {info.id} ({info.role} of team {info.team}, {info.name!r}): {secret}")


@token_app.command("list")
def token_list(db: DbOpt = None) -> None:
    """List every token (id, team, role, name, prefix, revoked); never the secrets."""
    from gpufleet.service.auth import list_tokens

    with _db(db) as session:
        rows = list_tokens(session)
    typer.echo("id\tteam\trole\tname\tprefix\tstatus")
    for t in rows:
        status = "revoked" if t.revoked_unix_s is not None else "live"
        typer.echo(f"{t.id}\t{t.team}\t{t.role}\t{t.name}\t{t.prefix}...\t{status}")


@token_app.command("revoke")
def token_revoke(
    token_id: Annotated[int, typer.Argument(help="The token's id (see `token list`).")],
    db: DbOpt = None,
) -> None:
    """Revoke a token; its dashboard sessions end at once."""
    from gpufleet.service.auth import revoke_token

    with _db(db) as session:
        info = revoke_token(session, token_id)
    typer.echo(f"token {info.id} ({info.role} of team {info.team}, {info.name!r}) revoked")
