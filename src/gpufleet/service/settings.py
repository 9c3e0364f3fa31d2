"""What the service process is told: where its database is, where it listens, its limits."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass, field
from pathlib import Path

from gpufleet.errors import InputError

#: hosts that only this machine can reach
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})


def data_dir() -> Path:
    """The user's data folder for gpufleet (``$GPUFLEET_DATA_DIR``, else ``$XDG_DATA_HOME/gpufleet``, else
    ``~/.local/share/gpufleet``). Not created here."""
    env = os.environ.get("GPUFLEET_DATA_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_DATA_HOME")
    return (Path(xdg) if xdg else Path.home() / ".local" / "share") / "gpufleet"


def default_db_url() -> str:
    """SQLite in the user's data folder (``service.sqlite3``)."""
    return f"sqlite:///{data_dir() / 'service.sqlite3'}"


def db_url_from(db: str | None) -> str:
    """A SQLAlchemy URL from ``--db``: a URL (``postgresql://...``, ``sqlite:///...``) as given, a plain path
    as a SQLite file, nothing as the default. ``postgresql://`` uses psycopg 3."""
    if db is None:
        return default_db_url()
    if not db.strip():  # `--db ""` was the default database, `--db " "` a file " " in the working folder
        raise InputError(
            f"--db {db!r} is blank. Give a SQLite file path, sqlite:///PATH or "
            "postgresql://USER:PASSWORD@HOST:PORT/DB, or leave --db out for the default database."
        )
    if db.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + db.split("://", 1)[1]
    if "://" in db:
        if not db.startswith(("sqlite:", "postgresql+psycopg:")):
            raise InputError(
                f"--db {db.split('://', 1)[0]}://... is not supported. Allowed: a SQLite file path, "
                "sqlite:///PATH, or postgresql://USER:PASSWORD@HOST:PORT/DB (psycopg 3)."
            )
        if db.startswith("sqlite:///") and db[len("sqlite:///") :] not in ("", ":memory:"):
            _check_db_file(db[len("sqlite:///") :])
        return db
    return f"sqlite:///{_check_db_file(str(Path(db).expanduser())).resolve()}"


def _check_db_file(path: str) -> Path:
    """``path`` as a SQLite file the service can create or open: in an existing folder, not a folder or a
    special file, a name the file system takes (a missing folder or a 300-character name was a traceback from
    SQLite, "unable to open database file", after the server had started)."""
    from gpufleet.fileio import check_output_path

    return check_output_path(path, what="database file (--db)", replaces_input=True)


def is_loopback(host: str) -> bool:
    """True when ``host`` is reachable from this machine only."""
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(host: str, *, public: bool) -> None:
    """A bind address other than loopback needs ``--public``: every route but the health checks and the
    metrics needs a token, but a public bind also publishes those and the sign-in page, so it is a choice made
    out loud (put TLS in front: tokens travel in headers and cookies)."""
    if not is_loopback(host) and not public:
        raise InputError(
            f"--host {host} is reachable from other machines. The service binds 127.0.0.1 by default; to "
            "serve on a public address pass --public as well (every API route and dashboard page still needs "
            "a token; put a TLS proxy in front)."
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ServiceSettings:
    """Limits and places of one service process."""

    db_url: str
    #: worker processes running jobs at once in this process (0: accept jobs but run none here)
    job_workers: int = 2
    #: a job running longer is stopped and marked failed [s]
    job_time_limit_s: float = 600.0
    #: seconds between two queue polls of an idle worker [s]
    job_poll_s: float = 0.5
    #: a running job whose worker has not written a heartbeat for this long is re-queued [s]
    job_stale_after_s: float = 30.0
    #: how many times a job is started before a lost one is marked failed
    job_max_attempts: int = 3
    #: largest request body [bytes]
    max_body_bytes: int = 16 * 1024 * 1024
    #: sustained requests per second per token (0: no limit), and the burst allowed above it [requests]
    rate_limit_per_s: float = 20.0
    rate_burst: int = 60
    #: dashboard session lifetime [s]
    session_ttl_s: float = 12 * 3600.0
    #: run the scheduler loop in this process (``gpufleet serve --no-scheduler``: off); several replicas may
    #: run it, each due run is claimed once in the database
    scheduler: bool = True
    #: seconds between two scheduler passes [s]
    scheduler_poll_s: float = 15.0
    #: how long a bearer token's principal is kept in memory before the database is asked again [s]; a revoke
    #: in this process applies at once, one made by another process (a replica, the CLI) within this time
    auth_cache_ttl_s: float = 5.0
    #: a recommend, migrate, regions or estimate request not answered within this time gets a 504 (0: no
    #: limit) [s]
    request_time_limit_s: float = 30.0
    #: worker processes running those routes (0: threads of this process instead) [processes]
    route_processes: int = field(default_factory=lambda: min(2, os.cpu_count() or 1))
    #: threads running those routes when ``route_processes`` is 0, apart from the pool of every other route
    #: [threads]
    heavy_route_workers: int = 8
    #: estimator memo caches of the recommend routes (``candidates.limit_estimate_caches``): calls and configs
    #: lists kept, ~8-10 KiB each; emptied when full (~2.3 MiB per distinct workload) [entries]
    estimate_cache_calls: int = 10_000
    estimate_cache_configs: int = 8_000
    #: distinct catalog queries whose JSON answer is kept (per process; 0: none) [entries]
    catalog_cache_entries: int = 512
    #: how often a process asks the database whether a catalog refresh brought new prices [s]
    catalog_check_s: float = 10.0
    #: largest simulation input file a team may upload (trace, job file, batch fleet file) [bytes]
    upload_max_bytes: int = 8 * 1024 * 1024
    #: where each team's telemetry store lives (``team-<id>/``; default: ``telemetry`` in the data folder)
    telemetry_dir: Path | None = None
    #: webhooks may post to loopback and private addresses (an on-premises chat server); off: public hosts
    #: only (link-local and metadata addresses are refused either way: .webhooks)
    webhook_internal_hosts: bool = False

    def team_telemetry_dir(self, team_id: int) -> Path:
        return (self.telemetry_dir or data_dir() / "telemetry") / f"team-{team_id}"
