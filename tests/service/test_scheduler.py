"""The scheduler: schedules stored per team through /api/v1/schedules, queued by :func:`scheduler.tick` at
the times the test gives (an injected clock, no sleeping), once per due time even when several schedulers
(replicas sharing one database) tick at the same moment."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import func, select

from gpufleet.service import scheduler
from gpufleet.service.app import create_app
from gpufleet.service.db import Job, ScheduleRun, make_engine, make_sessionmaker
from gpufleet.service.settings import ServiceSettings

from .fixtures import Env, make_env


def _t(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock() -> Clock:
    return Clock(_t("2026-11-29 05:30"))


def _with_clock(env: Env, clock: Clock) -> Env:
    env.app.state.gpufleet.clock = clock
    return env


@pytest.fixture
def senv(any_env: Env, clock: Clock) -> Env:
    return _with_clock(any_env, clock)


FINDINGS = {"name": "daily findings", "cron": "0 6 * * *", "kind": "findings", "params": {"lookback_days": 7}}
REFRESH = {
    "name": "azure prices",
    "cron": "0 */6 * * *",
    "kind": "catalog_refresh",
    "params": {"provider": "azure"},
    "scope": "global",
}


def _jobs(env: Env, who: str) -> list[dict[str, Any]]:
    r = env.client.get("/api/v1/jobs", headers=env.h(who))
    assert r.status_code == 200, r.text
    jobs: list[dict[str, Any]] = r.json()["jobs"]
    return jobs


def test_schedule_crud_and_roles(senv: Env) -> None:
    c = senv.client
    assert c.post("/api/v1/schedules", json=FINDINGS, headers=senv.h("a_viewer")).status_code == 403
    r = c.post("/api/v1/schedules", json=FINDINGS, headers=senv.h("a_editor"))
    assert r.status_code == 201, r.text
    s = r.json()
    assert s["next_due_unix_s"] == _t("2026-11-29 06:00") and s["scope"] == "team"
    assert s["params"] == {"lookback_days": 7.0, "headroom": 0.2}  # checked and completed like a job's
    # a catalog refresh changes every team's prices: global scope, admin only
    assert c.post("/api/v1/schedules", json=REFRESH, headers=senv.h("a_editor")).status_code == 403
    bad = c.post("/api/v1/schedules", json=REFRESH | {"scope": "team"}, headers=senv.h("a_admin"))
    assert bad.status_code == 400 and "scope global" in bad.json()["error"]["message"]
    g = c.post("/api/v1/schedules", json=REFRESH, headers=senv.h("a_admin"))
    assert g.status_code == 201, g.text
    # a viewer sees the team's and the global ones; team b sees only the global one
    assert [x["name"] for x in c.get("/api/v1/schedules", headers=senv.h("a_viewer")).json()] == [
        "daily findings",
        "azure prices",
    ]
    assert [x["name"] for x in c.get("/api/v1/schedules", headers=senv.h("b_admin")).json()] == [
        "azure prices"
    ]
    assert c.get(f"/api/v1/schedules/{s['id']}", headers=senv.h("b_admin")).status_code == 404
    assert c.delete(f"/api/v1/schedules/{s['id']}", headers=senv.h("b_admin")).status_code == 404
    # bad cron, bad params: refused with the parser's / the job kind's message
    r = c.post("/api/v1/schedules", json=FINDINGS | {"cron": "0 25 * * *"}, headers=senv.h("a_editor"))
    assert r.status_code == 400 and "hour field '25' is out of range" in r.json()["error"]["message"]
    r = c.post("/api/v1/schedules", json=FINDINGS | {"params": {"days": 3}}, headers=senv.h("a_editor"))
    assert r.status_code == 400 and "Unknown findings job parameter(s): days" in r.json()["error"]["message"]
    # change: a new cron moves the next due time; viewer refused
    sid = s["id"]
    assert (
        c.patch(f"/api/v1/schedules/{sid}", json={"enabled": False}, headers=senv.h("a_viewer")).status_code
        == 403
    )
    p = c.patch(f"/api/v1/schedules/{sid}", json={"cron": "30 5 * * *"}, headers=senv.h("a_editor"))
    assert p.status_code == 200 and p.json()["next_due_unix_s"] == _t("2026-11-30 05:30")
    assert c.delete(f"/api/v1/schedules/{g.json()['id']}", headers=senv.h("a_editor")).status_code == 403
    assert c.delete(f"/api/v1/schedules/{sid}", headers=senv.h("a_editor")).status_code == 200
    assert c.get(f"/api/v1/schedules/{sid}", headers=senv.h("a_editor")).status_code == 404


def test_tick_queues_each_due_run_once_at_the_given_times(senv: Env, clock: Clock) -> None:
    c, st = senv.client, senv.app.state.gpufleet
    sid = c.post("/api/v1/schedules", json=FINDINGS, headers=senv.h("a_editor")).json()["id"]
    assert scheduler.tick(st.sm, _t("2026-11-29 05:59:59"), "r1") == []  # not due yet
    queued = scheduler.tick(st.sm, _t("2026-11-29 06:00:10"), "r1")
    assert len(queued) == 1
    assert scheduler.tick(st.sm, _t("2026-11-29 06:00:20"), "r1") == []  # done for today
    job = _jobs(senv, "a_viewer")[0]
    assert (
        job["kind"] == "findings" and job["idempotency_key"] == f"schedule:{sid}:{_t('2026-11-29 06:00'):.0f}"
    )
    s = c.get(f"/api/v1/schedules/{sid}", headers=senv.h("a_viewer")).json()
    assert s["next_due_unix_s"] == _t("2026-11-30 06:00") and s["last_job_id"] == queued[0]
    # the service was down for three days: one catch-up run, then the next time after now
    assert len(scheduler.tick(st.sm, _t("2026-12-03 12:00"), "r1")) == 1
    s = c.get(f"/api/v1/schedules/{sid}", headers=senv.h("a_viewer")).json()
    assert s["next_due_unix_s"] == _t("2026-12-04 06:00")
    runs = c.get(f"/api/v1/schedules/{sid}/runs", headers=senv.h("a_viewer")).json()
    assert [r["due_unix_s"] for r in runs] == [_t("2026-11-30 06:00"), _t("2026-11-29 06:00")]
    assert len(_jobs(senv, "a_viewer")) == 2 and _jobs(senv, "b_admin") == []
    # disabled: not queued; re-enabled: from now on, no catch-up of the pause
    c.patch(f"/api/v1/schedules/{sid}", json={"enabled": False}, headers=senv.h("a_editor"))
    assert scheduler.tick(st.sm, _t("2026-12-05 06:01"), "r1") == []
    clock.t = _t("2026-12-06 07:00")
    p = c.patch(f"/api/v1/schedules/{sid}", json={"enabled": True}, headers=senv.h("a_editor")).json()
    assert p["next_due_unix_s"] == _t("2026-12-07 06:00")


def test_replicas_ticking_at_once_queue_a_due_run_once(senv: Env) -> None:
    """Four schedulers, each with its own engine (as separate replicas have), tick at the same instant."""
    c = senv.client
    ids = [
        c.post("/api/v1/schedules", json=FINDINGS | {"name": f"s{i}"}, headers=senv.h("a_editor")).json()[
            "id"
        ]
        for i in range(3)
    ]
    engines = [make_engine(senv.url) for _ in range(4)]
    sms = [make_sessionmaker(e) for e in engines]
    barrier = threading.Barrier(len(sms))
    got: list[list[int]] = [[] for _ in sms]

    def replica(i: int) -> None:
        barrier.wait()
        got[i] = scheduler.tick(sms[i], _t("2026-11-29 06:00:01"), f"replica-{i}")

    threads = [threading.Thread(target=replica, args=(i,)) for i in range(len(sms))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    with sms[0]() as db:
        assert db.scalar(select(func.count()).select_from(Job)) == 3
        runs = db.execute(select(ScheduleRun.schedule_id, ScheduleRun.job_id)).all()
    assert sorted(r[0] for r in runs) == sorted(ids) and all(r[1] is not None for r in runs)
    assert sorted(j for g in got for j in g) == sorted(r[1] for r in runs)  # each job queued by one replica
    for e in engines:
        e.dispose()


def test_the_service_runs_the_scheduler_loop_unless_told_not_to(sqlite_url: str) -> None:
    clock = Clock(_t("2026-11-29 05:59"))
    for env in make_env(sqlite_url, run_jobs=True, job_workers=0, scheduler_poll_s=0.05):
        st = env.app.state.gpufleet
        assert st.scheduler is not None
        st.clock = clock
        assert (
            env.client.post("/api/v1/schedules", json=FINDINGS, headers=env.h("a_editor")).status_code == 201
        )
        clock.t = _t("2026-11-29 06:00:05")
        for _ in range(200):  # the loop polls every 0.05 s of real time; the due time is the clock's
            if _jobs(env, "a_viewer"):
                break
            threading.Event().wait(0.05)
        assert len(_jobs(env, "a_viewer")) == 1
    off = create_app(ServiceSettings(db_url=sqlite_url, scheduler=False), run_jobs=True)
    from fastapi.testclient import TestClient

    with TestClient(off):
        assert off.state.gpufleet.scheduler is None and off.state.gpufleet.runner is not None


def test_serve_no_scheduler_flag(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    import uvicorn
    from typer.testing import CliRunner

    from gpufleet.cli.app import app

    seen: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda application, **kw: seen.append(application))
    db = str(tmp_path / "s.sqlite3")
    for flag, want in (([], True), (["--no-scheduler"], False)):
        res = CliRunner().invoke(app, ["serve", "--db", db, *flag])
        assert res.exit_code == 0, res.output
        assert seen[-1].state.gpufleet.settings.scheduler is want


def test_a_claim_left_by_a_stopped_scheduler_is_finished_later(senv: Env) -> None:
    """A scheduler killed after claiming a due time but before queueing its job: the others leave the claim
    alone while it may still be working, then finish it, still with one job, and the schedule moves on."""
    c, st = senv.client, senv.app.state.gpufleet
    sid = c.post("/api/v1/schedules", json=FINDINGS, headers=senv.h("a_editor")).json()["id"]
    due = _t("2026-11-29 06:00")
    with st.sm() as db:
        db.add(ScheduleRun(schedule_id=sid, due_unix_s=due, claimed_by="killed", created_unix_s=due + 1))
        db.commit()
    assert scheduler.tick(st.sm, due + 30, "r2") == []  # maybe still working: left alone
    assert _jobs(senv, "a_viewer") == []
    [job_id] = scheduler.tick(st.sm, due + 1 + scheduler.STALE_CLAIM_S + 1, "r2")
    assert [j["id"] for j in _jobs(senv, "a_viewer")] == [job_id]
    s = c.get(f"/api/v1/schedules/{sid}", headers=senv.h("a_viewer")).json()
    assert s["next_due_unix_s"] == _t("2026-11-30 06:00") and s["last_job_id"] == job_id
    runs = c.get(f"/api/v1/schedules/{sid}/runs", headers=senv.h("a_viewer")).json()
    assert [(r["job_id"], r["claimed_by"]) for r in runs] == [(job_id, "killed")]
