"""The scheduler: work run on a cron schedule (:mod:`.cron`, UTC), stored per team in the database.

One loop per service process (``gpufleet serve --no-scheduler`` turns it off) calls :func:`tick` every
``scheduler_poll_s``. A schedule whose ``next_due_unix_s`` has passed is *claimed* by inserting the row
(schedule, due time) into ``schedule_runs``, whose unique key lets exactly one scheduler win, whichever
replica it runs in (the others get an integrity error and move on); the winner queues the job (idempotency key
``schedule:<id>:<due>``, so even a retried claim queues it once) and moves the schedule to its next due time.
A scheduler killed between its claim and moving the schedule on leaves a claim that another scheduler
finishes after :data:`STALE_CLAIM_S` (the idempotency key keeps it to one job). A service that was down when
runs were due queues one catch-up run, not one per missed time.

Time is injected (``clock``): the tests drive it explicitly, nothing sleeps.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from gpufleet.errors import GpufleetError, InputError
from gpufleet.service import cron, jobs
from gpufleet.service.auth import Principal
from gpufleet.service.db import Schedule, ScheduleRun, now_unix_s
from gpufleet.service.errors import NotFound

log = logging.getLogger("gpufleet.service.scheduler")

Clock = Callable[[], float]
SCOPES: tuple[str, ...] = ("team", "global")
#: kinds that act on data every team shares: only a global schedule (made by an admin) runs them
GLOBAL_KINDS = frozenset({"catalog_refresh"})
#: a claim whose schedule has not moved on after this long [s] was left by a scheduler that stopped (killed
#: between claiming and queueing); another scheduler then finishes it
STALE_CLAIM_S = 120.0


def check_schedule(
    who: Principal,
    *,
    scope: str,
    kind: str,
    params: Mapping[str, Any],
    cron_text: str,
    sm: sessionmaker[OrmSession] | None = None,
) -> dict[str, Any]:
    """Refuse what ``who`` may not schedule; the job's parameters checked as a submitted job's are (with
    ``sm``: the uploads a simulation names resolved to the team's, as
    :func:`.uploads.with_upload_digests`)."""
    from gpufleet.service.job_kinds import check_params

    if scope not in SCOPES:
        raise InputError(f"Unknown schedule scope {scope!r}. Allowed: team, global (catalog refreshes).")
    if (kind in GLOBAL_KINDS) != (scope == "global"):
        raise InputError(
            f"A {kind} schedule must have scope {'global' if kind in GLOBAL_KINDS else 'team'}: catalog "
            "refreshes update the prices every team sees (scope global, admin only); every other kind works "
            "on the team's own data (scope team)."
        )
    who.require("admin" if scope == "global" else "editor")
    cron.parse(cron_text)
    if sm is not None and kind in ("simulate", "sweep"):
        from gpufleet.service.uploads import with_upload_digests

        params = with_upload_digests(sm, who.team_id, kind, dict(params))
    return check_params(kind, params)


def visible(who: Principal) -> Any:
    """The schedules ``who`` sees: the team's own, and the global ones."""
    return (Schedule.team_id == who.team_id) | (Schedule.scope == "global")


def get_schedule(db: OrmSession, who: Principal, schedule_id: int) -> Schedule:
    s = db.get(Schedule, schedule_id)
    if s is None or not (s.team_id == who.team_id or s.scope == "global"):
        raise NotFound(f"No schedule with id {schedule_id} for your team. GET /api/v1/schedules lists them.")
    return s


def may_change(who: Principal, s: Schedule) -> None:
    """An editor changes the team's schedules; only an admin changes a global one (of any team)."""
    who.require("admin" if s.scope == "global" else "editor")


def create(
    sm: sessionmaker[OrmSession],
    who: Principal,
    *,
    name: str,
    cron_text: str,
    kind: str,
    params: Mapping[str, Any],
    scope: str,
    time_limit_s: float,
    enabled: bool,
    now: float,
) -> Schedule:
    checked = check_schedule(who, scope=scope, kind=kind, params=params, cron_text=cron_text, sm=sm)
    parsed = cron.parse(cron_text)
    with sm() as db:
        s = Schedule(
            team_id=who.team_id,
            scope=scope,
            name=name,
            cron=parsed.text,
            kind=kind,
            params_json=json.dumps(checked),
            time_limit_s=time_limit_s,
            enabled=enabled,
            next_due_unix_s=parsed.next_after(now),
            created_unix_s=now,
        )
        db.add(s)
        db.commit()
        return s


def tick(sm: sessionmaker[OrmSession], now: float, claimer: str) -> list[int]:
    """Queue every schedule due at ``now`` that this call claims; the ids of the jobs queued."""
    queued: list[int] = []
    with sm() as db:
        due = db.execute(
            select(Schedule.id, Schedule.next_due_unix_s)
            .where(Schedule.enabled.is_(True), Schedule.next_due_unix_s <= now)
            .order_by(Schedule.next_due_unix_s)
        ).all()
    for schedule_id, due_unix_s in due:
        try:
            job_id = _run_one(sm, int(schedule_id), float(due_unix_s), now, claimer)
        except Exception:  # one bad schedule must not stop the others
            log.exception("schedule %s", schedule_id)
            continue
        if job_id is not None:
            queued.append(job_id)
    return queued


def _run_one(
    sm: sessionmaker[OrmSession], schedule_id: int, due: float, now: float, claimer: str
) -> int | None:
    with sm() as db:
        db.add(ScheduleRun(schedule_id=schedule_id, due_unix_s=due, claimed_by=claimer, created_unix_s=now))
        try:
            db.commit()
        except IntegrityError:  # another scheduler (another replica) claimed this due time
            db.rollback()
            claimed = db.scalar(
                select(ScheduleRun.created_unix_s).where(
                    ScheduleRun.schedule_id == schedule_id, ScheduleRun.due_unix_s == due
                )
            )
            if claimed is None or now - claimed < STALE_CLAIM_S:
                return None  # it is queueing the job now
            # its scheduler stopped between the claim and moving the schedule on: finish its work (the
            # job's idempotency key makes a second submit give the same job)
            log.warning(
                "schedule %s due %.0f: finishing a claim left %.0f s ago", schedule_id, due, now - claimed
            )
        s = db.get(Schedule, schedule_id)
        if s is None:
            return None
        team_id, kind, params, limit_s = s.team_id, s.kind, json.loads(s.params_json), s.time_limit_s
        nxt = cron.parse(s.cron).next_after(now)
    if kind in ("simulate", "sweep"):  # the uploads' content now (one deleted: the job fails, saying so)
        from gpufleet.service.uploads import with_upload_digests

        with contextlib.suppress(GpufleetError):
            params = with_upload_digests(sm, team_id, kind, params)
    sub = jobs.submit(
        sm,
        team_id=team_id,
        kind=kind,
        params=params,
        time_limit_s=limit_s,
        idempotency_key=f"schedule:{schedule_id}:{due:.0f}",
    )
    with sm() as db:
        db.execute(
            update(ScheduleRun)
            .where(ScheduleRun.schedule_id == schedule_id, ScheduleRun.due_unix_s == due)
            .values(job_id=sub.job.id)
        )
        db.execute(
            update(Schedule)
            .where(Schedule.id == schedule_id, Schedule.next_due_unix_s == due)
            .values(next_due_unix_s=nxt, last_due_unix_s=due, last_job_id=sub.job.id)
        )
        db.commit()
    log.info("schedule %s due %.0f: job %s (%s)", schedule_id, due, sub.job.id, kind)
    return sub.job.id


class Scheduler:
    """The loop: :func:`tick` every ``poll_s`` seconds of ``clock`` time until :meth:`stop`."""

    def __init__(
        self, sm: sessionmaker[OrmSession], *, poll_s: float = 15.0, clock: Clock = now_unix_s
    ) -> None:
        self.sm = sm
        self.poll_s = poll_s
        self.clock = clock
        self.name = f"{os.uname().nodename}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="gpufleet-scheduler", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                tick(self.sm, self.clock(), self.name)
            except Exception:  # a database hiccup must not end the loop
                log.exception("scheduler tick")
            self._stop.wait(self.poll_s)
