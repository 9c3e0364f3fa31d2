"""Jobs: a queue in the database, worker threads in the service process, each running one job at a time in a
child process (so that a job can be cancelled or stopped at its time limit by ending that process).

Life of a job: ``queued`` -> ``running`` (claimed by a compare-and-set update, so that several workers and
several replicas sharing one database never run it twice) -> ``succeeded`` / ``failed`` / ``cancelled``. A
running job's worker writes a heartbeat every second; a job whose heartbeat is older than
``job_stale_after_s`` (its process was killed, the machine rebooted) is re-queued, or marked failed after
``job_max_attempts`` starts. A graceful stop re-queues the jobs it was running. No job is lost.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import IO, Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as OrmSession
from sqlalchemy.orm import sessionmaker

from gpufleet.errors import GpufleetError
from gpufleet.service.db import Job, now_unix_s
from gpufleet.service.errors import Conflict, NotFound
from gpufleet.service.job_kinds_sched import TEAM_STORE_KINDS
from gpufleet.service.logs import log_job
from gpufleet.service.settings import ServiceSettings

log = logging.getLogger("gpufleet.service.jobs")

TERMINAL = frozenset({"succeeded", "failed", "cancelled"})


def params_sha256(kind: str, params: Mapping[str, Any]) -> str:
    text = json.dumps({"kind": kind, "params": params}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Submitted:
    job: Job
    reused: bool  # True: an earlier job with the same idempotency key and parameters


def submit(
    sm: sessionmaker[OrmSession],
    *,
    team_id: int,
    kind: str,
    params: Mapping[str, Any],
    time_limit_s: float,
    idempotency_key: str | None = None,
) -> Submitted:
    """Queue a job (its parameters already checked). With an ``idempotency_key`` already used by this team:
    the earlier job when the parameters are the same (its result is reused), :class:`Conflict` otherwise."""
    digest = params_sha256(kind, params)
    with sm() as db:
        if idempotency_key is not None:
            old = db.scalar(select(Job).where(Job.team_id == team_id, Job.idempotency_key == idempotency_key))
            if old is not None:
                return Submitted(job=_same(old, digest, idempotency_key), reused=True)
        job = Job(
            team_id=team_id,
            kind=kind,
            params_json=json.dumps(params),
            params_sha256=digest,
            idempotency_key=idempotency_key,
            time_limit_s=time_limit_s,
            status="queued",
            progress_fraction=0.0,
            progress_text="queued",
            cancel_requested=False,
            attempts=0,
            created_unix_s=now_unix_s(),
        )
        db.add(job)
        try:
            db.commit()
        except IntegrityError:  # the same key submitted at the same moment by another request
            db.rollback()
            old = db.scalar(select(Job).where(Job.team_id == team_id, Job.idempotency_key == idempotency_key))
            if old is None:
                raise
            return Submitted(job=_same(old, digest, idempotency_key), reused=True)
        log_job("queued", job.id, team_id=team_id, kind=kind)
        return Submitted(job=job, reused=False)


def _same(old: Job, digest: str, key: str | None) -> Job:
    if old.params_sha256 != digest:
        raise Conflict(
            f"Idempotency-Key {key!r} was used for job {old.id} with other parameters. Use a new key for a "
            "different request, or resend the same parameters to get that job back."
        )
    return old


def get_job(sm: sessionmaker[OrmSession], team_id: int, job_id: int) -> Job:
    """A job of ``team_id``; another team's job is :class:`NotFound`, like a missing one."""
    with sm() as db:
        job = db.get(Job, job_id)
        if job is None or job.team_id != team_id:
            raise NotFound(f"No job with id {job_id} in your team. GET /api/v1/jobs lists your jobs.")
        return job


def list_jobs(
    sm: sessionmaker[OrmSession], team_id: int, *, status: str | None = None, limit: int = 50, offset: int = 0
) -> tuple[list[Job], int]:
    """(a page of the team's jobs, newest first; how many there are in all)."""
    with sm() as db:
        q = select(Job).where(Job.team_id == team_id)
        n = select(func.count()).select_from(Job).where(Job.team_id == team_id)
        if status is not None:
            q, n = q.where(Job.status == status), n.where(Job.status == status)
        rows = db.scalars(q.order_by(Job.id.desc()).limit(limit).offset(offset)).all()
        return list(rows), int(db.scalar(n) or 0)


def cancel(sm: sessionmaker[OrmSession], team_id: int, job_id: int) -> Job:
    """Cancel a job: a queued one at once, a running one when its worker next looks (within a second)."""
    job = get_job(sm, team_id, job_id)
    with sm() as db:
        done = db.execute(
            update(Job)
            .where(Job.id == job_id, Job.status == "queued")
            .values(status="cancelled", finished_unix_s=now_unix_s(), progress_text="cancelled")
        )
        cancelled_now = bool(getattr(done, "rowcount", 0))
        if not cancelled_now:
            db.execute(
                update(Job).where(Job.id == job_id, Job.status == "running").values(cancel_requested=True)
            )
        db.commit()
    if cancelled_now:  # a running job is notified by its worker when it stops
        from gpufleet.service.webhooks import notify

        notify(sm, job_id)
    return get_job(sm, team_id, job.id)


def queue_depth(sm: sessionmaker[OrmSession]) -> dict[str, int]:
    """Jobs per status (every team)."""
    with sm() as db:
        rows = db.execute(select(Job.status, func.count()).group_by(Job.status)).all()
    return {str(s): int(c) for s, c in rows}


def recover_stale(sm: sessionmaker[OrmSession], settings: ServiceSettings) -> int:
    """Re-queue running jobs whose worker stopped writing heartbeats; fail those started too often. Returns
    how many were touched."""
    cutoff = now_unix_s() - settings.job_stale_after_s
    stale = (Job.status == "running") & ((Job.heartbeat_unix_s < cutoff) | (Job.heartbeat_unix_s.is_(None)))
    with sm() as db:
        failed = db.execute(
            update(Job)
            .where(stale, Job.attempts >= settings.job_max_attempts)
            .values(
                status="failed",
                finished_unix_s=now_unix_s(),
                worker=None,
                error=f"The job's worker stopped {settings.job_max_attempts} times while running it "
                "(the service was killed or restarted). Submit it again; if it keeps failing, lower its "
                "size or its time limit.",
            )
        )
        requeued = db.execute(
            update(Job).where(stale).values(status="queued", worker=None, progress_text="re-queued")
        )
        db.commit()
    n_failed, n_requeued = (
        int(getattr(failed, "rowcount", 0) or 0),
        int(getattr(requeued, "rowcount", 0) or 0),
    )
    if n_failed or n_requeued:
        log.warning(
            "stale jobs: %d re-queued, %d failed",
            n_requeued,
            n_failed,
            extra={"fields": {"event": "recovered", "requeued": n_requeued, "failed": n_failed}},
        )
    return n_failed + n_requeued


class JobRunner:
    """``settings.job_workers`` threads, each claiming and running one job at a time."""

    def __init__(self, sm: sessionmaker[OrmSession], settings: ServiceSettings) -> None:
        self.sm = sm
        self.settings = settings
        self.name = f"{os.uname().nodename}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # the job processes do no BLAS work (cli/entry.py)
        recover_stale(self.sm, self.settings)
        for i in range(self.settings.job_workers):
            t = threading.Thread(target=self._loop, name=f"gpufleet-job-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop claiming; the jobs running now are stopped and re-queued for the next start (or replica)."""
        self._stop.set()
        for t in self._threads:
            t.join(timeout_s)
        self._threads.clear()

    def _loop(self) -> None:
        last_recover = 0.0
        while not self._stop.is_set():
            try:
                if time.monotonic() - last_recover > self.settings.job_stale_after_s / 2:
                    recover_stale(self.sm, self.settings)
                    last_recover = time.monotonic()
                job_id = self._claim()
                if job_id is None:
                    self._stop.wait(self.settings.job_poll_s)
                    continue
                self._run(job_id)
            except Exception:  # a database hiccup must not end the worker
                log.exception("job worker error")
                self._stop.wait(self.settings.job_poll_s)

    def _claim(self) -> int | None:
        with self.sm() as db:
            ids = db.scalars(
                select(Job.id).where(Job.status == "queued").order_by(Job.created_unix_s, Job.id).limit(5)
            ).all()
            for job_id in ids:
                now = now_unix_s()
                res = db.execute(
                    update(Job)
                    .where(Job.id == job_id, Job.status == "queued")
                    .values(
                        status="running",
                        worker=self.name,
                        started_unix_s=now,
                        heartbeat_unix_s=now,
                        attempts=Job.attempts + 1,
                        progress_text="starting",
                    )
                )
                db.commit()
                if getattr(res, "rowcount", 0) == 1:
                    log_job("started", int(job_id), worker=self.name)
                    return int(job_id)
        return None

    def _set(self, job_id: int, **values: Any) -> None:
        with self.sm() as db:
            db.execute(update(Job).where(Job.id == job_id, Job.worker == self.name).values(**values))
            db.commit()

    def _finish(self, job_id: int, status: str, **values: Any) -> None:
        self._set(job_id, status=status, finished_unix_s=now_unix_s(), worker=None, **values)
        with self.sm() as db:
            job = db.get(Job, job_id)
        if job is not None:
            ran_s = (job.finished_unix_s or 0.0) - (job.started_unix_s or job.created_unix_s)
            log_job(
                status,
                job_id,
                team_id=job.team_id,
                kind=job.kind,
                duration_ms=round(1000.0 * ran_s, 1),
                attempts=job.attempts,
                error=(job.error or "")[:300] or None,
            )
        from gpufleet.service.notifications import after_job
        from gpufleet.service.webhooks import notify

        try:
            notify(self.sm, job_id)
        except Exception:  # a notification must never fail the job
            log.exception("webhooks of job %s", job_id)
        try:
            after_job(self.sm, job_id)  # price changes, new savings, alerts fired
        except Exception:
            log.exception("price changes and notifications of job %s", job_id)

    def _run(self, job_id: int) -> None:
        with self.sm() as db:
            job = db.get(Job, job_id)
            assert job is not None
            params = json.loads(job.params_json)
            if job.kind in TEAM_STORE_KINDS:  # the team's telemetry folder: never a request's parameter
                params["_telemetry_dir"] = str(self.settings.team_telemetry_dir(job.team_id))
            team_id, limit_s = job.team_id, job.time_limit_s
        try:
            params |= _child_inputs(self.sm, job.kind, team_id, params)
        except GpufleetError as exc:  # an upload deleted since the job was queued
            self._finish(job_id, "failed", error=str(exc), progress_text="failed")
            return
        request = json.dumps({"kind": job.kind, "params": params})
        env = os.environ | {"OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "gpufleet.service.job_child"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            # its own session: a Ctrl+C or a `timeout`/container signal to the service's process group must
            # not kill the job behind the service's back (the service ends it, and re-queues it on shutdown)
            start_new_session=True,
        )
        assert proc.stdin is not None and proc.stdout is not None
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True)
        reader.start()
        try:
            proc.stdin.write(request)
            proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self._watch(job_id, proc, lines, limit_s)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)
            reader.join(5)

    def _watch(
        self, job_id: int, proc: subprocess.Popen[str], lines: queue.Queue[str | None], limit_s: float
    ) -> None:
        started, last_beat = time.monotonic(), 0.0
        while True:
            try:
                line = lines.get(timeout=0.2)
            except queue.Empty:
                line = ""
            if line is None:  # the process closed its output without a final message
                self._finish(
                    job_id,
                    "failed",
                    progress_text="failed",
                    error=f"The job process ended without a result (exit code {proc.wait(10)}); it "
                    "may have run out of memory. Submit it again or make it smaller.",
                )
                return
            if line and self._outcome(job_id, json.loads(line)):
                return
            if self._stop.is_set():  # graceful stop: hand the job back to the queue
                self._set(
                    job_id,
                    status="queued",
                    worker=None,
                    attempts=Job.attempts - 1,
                    progress_fraction=0.0,
                    progress_text="re-queued (service stopped)",
                )
                log_job("requeued", job_id, reason="service stopped")
                return
            if time.monotonic() - started > limit_s:
                self._finish(
                    job_id,
                    "failed",
                    progress_text="time limit",
                    error=f"The job ran past its time limit of {limit_s:g} s and was stopped. "
                    "Submit it with a larger time_limit_s, or make it smaller.",
                )
                return
            if time.monotonic() - last_beat >= 1.0:
                last_beat = time.monotonic()
                with self.sm() as db:
                    db.execute(
                        update(Job)
                        .where(Job.id == job_id, Job.worker == self.name)
                        .values(heartbeat_unix_s=now_unix_s())
                    )
                    db.commit()
                    cancel = db.scalar(select(Job.cancel_requested).where(Job.id == job_id))
                if cancel:
                    self._finish(job_id, "cancelled", progress_text="cancelled")
                    return

    def _outcome(self, job_id: int, msg: dict[str, Any]) -> bool:
        """Record one message of the job process; True when it ends the job."""
        if "progress" in msg:
            self._set(
                job_id,
                progress_fraction=float(msg["progress"]),
                progress_text=str(msg["text"]),
                heartbeat_unix_s=now_unix_s(),
            )
            return False
        if "done" in msg:
            if isinstance(msg["done"], dict) and "_offers_csv" in msg["done"]:
                from gpufleet.service.catalog_version import record_refresh

                record_refresh(self.sm, job_id, msg["done"])  # before the job shows succeeded
            self._finish(
                job_id,
                "succeeded",
                result_json=json.dumps(msg["done"]),
                result_html=msg.get("html"),
                progress_fraction=1.0,
                progress_text="done",
            )
        elif "error" in msg:
            self._finish(job_id, "failed", error=str(msg["error"]), progress_text="failed")
        else:
            log.error("job %s crashed: %s (traceback above)", job_id, msg.get("crash"))
            self._finish(
                job_id,
                "failed",
                progress_text="failed",
                error="The job failed on an internal error (logged by the service). "
                "Report it with the job id.",
            )
        return True


def _child_inputs(
    sm: sessionmaker[OrmSession], kind: str, team_id: int, params: Mapping[str, Any]
) -> dict[str, Any]:
    """What the job process gets from the database beside the job's parameters (it has no database): the
    text of the uploads a simulation names (``_uploads``), the latest refreshed prices for a plan
    (``_refreshes``)."""
    out: dict[str, Any] = {}
    if kind in ("simulate", "sweep") and isinstance(params.get("upload_sha256"), dict):
        from gpufleet.service.uploads import job_files

        out["_uploads"] = job_files(sm, team_id, params["upload_sha256"])
    if kind == "plan":
        from gpufleet.service.catalog_version import refreshes_for_job

        out["_refreshes"] = refreshes_for_job(sm)
    return out


def _read_lines(stream: IO[str], out: queue.Queue[str | None]) -> None:
    """Every line of ``stream`` into ``out``, then None at its end."""
    for line in stream:
        out.put(line)
    out.put(None)
