"""Jobs: queued in the database, run by worker processes with progress, cancellation and time limits, kept
with their results; none is lost across a restart; an Idempotency-Key gives the same job back."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import update

from gpufleet.service import jobs
from gpufleet.service.db import Job, make_engine, make_sessionmaker, now_unix_s
from gpufleet.service.settings import ServiceSettings

from .fixtures import Env, make_env

FLEET_FILE = Path("examples/fleets/assessment-platform.yaml")


def _fleet() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(FLEET_FILE.read_text())
    return doc


def _wait(
    env: Env, job_id: int, done: Callable[[dict[str, Any]], bool], timeout_s: float = 120
) -> dict[str, Any]:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        j: dict[str, Any] = env.client.get(f"/api/v1/jobs/{job_id}", headers=env.h("a_viewer")).json()
        if done(j):
            return j
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not get there in {timeout_s} s: {j}")


def _finished(j: dict[str, Any]) -> bool:
    return j["status"] in jobs.TERMINAL


@pytest.fixture
def job_env(any_db_url: str) -> Iterator[Env]:
    yield from make_env(any_db_url, run_jobs=True, job_workers=1)


def test_a_plan_job_runs_to_the_cli_result_on_both_databases(job_env: Env) -> None:
    from gpufleet.fleet.plan import plan_fleet
    from gpufleet.fleet.spec import read_fleet_file
    from gpufleet.report.fleet_report import render_plan_json

    env = job_env
    r = env.client.post(
        "/api/v1/plan", json={"fleet": _fleet(), "source": "a.yaml"}, headers=env.h("a_editor")
    )
    assert r.status_code == 202, r.text
    j = _wait(env, r.json()["id"], _finished)
    assert j["status"] == "succeeded", j
    assert j["progress_fraction"] == 1.0 and j["attempts"] == 1
    got = env.client.get(f"/api/v1/jobs/{j['id']}/result", headers=env.h("a_viewer")).json()
    want = json.loads(render_plan_json(plan_fleet(read_fleet_file(FLEET_FILE))))
    assert got.pop("catalog")["version"] == "shipped"  # the catalog it used: no refresh in the database
    # the solver's wall time differs between two runs; every figure does not
    for doc in (got, want):
        doc["result"]["stats"].pop("solve_time_s")
        doc["result"]["stats"].pop("build_time_s")
        doc["result"]["message"] = doc["result"]["message"].split(", HiGHS")[0]
    assert got == want
    report = env.client.get(f"/api/v1/jobs/{j['id']}/report", headers=env.h("a_viewer"))
    assert report.status_code == 200 and "<svg" in report.text
    metrics = env.client.get("/metrics").text
    assert 'gpufleet_jobs{status="succeeded"} 1' in metrics


def test_idempotency_key_reuses_the_job_and_refuses_other_parameters(env: Env) -> None:
    c, h = env.client, env.h("a_editor") | {"Idempotency-Key": "nightly-2026-11-28"}
    first = c.post("/api/v1/plan", json={"fleet": _fleet()}, headers=h)
    again = c.post("/api/v1/plan", json={"fleet": _fleet()}, headers=h)
    assert first.status_code == 202 and again.status_code == 200
    assert again.json()["id"] == first.json()["id"] and again.json()["reused"] is True
    other = c.post("/api/v1/plan", json={"fleet": _fleet(), "solver_time_limit_s": 5}, headers=h)
    assert other.status_code == 409 and "other parameters" in other.json()["error"]["message"]
    # the same key in another team is another job
    b = c.post(
        "/api/v1/plan",
        json={"fleet": _fleet()},
        headers=env.h("b_admin") | {"Idempotency-Key": h["Idempotency-Key"]},
    )
    assert b.status_code == 202 and b.json()["id"] != first.json()["id"]


def test_bad_job_bodies_are_refused_before_queueing(env: Env) -> None:
    c, h = env.client, env.h("a_editor")
    r = c.post("/api/v1/plan", json={"fleet": {"workloads": {"w": {"model": "llama-3.1-8bx"}}}}, headers=h)
    assert r.status_code in (404, 422) and "llama-3.1-8b" in r.text
    r = c.post("/api/v1/jobs", json={"kind": "scenario_set", "params": {"name": "nope"}}, headers=h)
    assert r.status_code == 404 and "Unknown" in r.text
    r = c.post("/api/v1/jobs", json={"kind": "rm -rf", "params": {}}, headers=h)
    assert r.status_code == 422
    assert c.get("/api/v1/jobs", headers=h).json()["total"] == 0


def test_cancel_a_queued_job(env: Env) -> None:  # no worker runs in `env`: the job stays queued
    c = env.client
    job = c.post("/api/v1/plan", json={"fleet": _fleet()}, headers=env.h("a_editor")).json()
    assert c.post(f"/api/v1/jobs/{job['id']}/cancel", headers=env.h("a_viewer")).status_code == 403
    r = c.post(f"/api/v1/jobs/{job['id']}/cancel", headers=env.h("a_editor"))
    assert r.json()["status"] == "cancelled"
    assert c.get(f"/api/v1/jobs/{job['id']}/result", headers=env.h("a_viewer")).status_code == 409


def test_cancel_a_running_job_and_the_time_limit(sqlite_url: str) -> None:
    for env in make_env(sqlite_url, run_jobs=True, job_workers=2):
        c, h = env.client, env.h("a_editor")
        # the job process takes over a second just to import the planner: caught while running
        job = c.post("/api/v1/plan", json={"fleet": _fleet()}, headers=h).json()
        _wait(env, job["id"], lambda j: j["status"] == "running")
        c.post(f"/api/v1/jobs/{job['id']}/cancel", headers=h)
        assert _wait(env, job["id"], _finished)["status"] == "cancelled"
        slow = c.post("/api/v1/plan", json={"fleet": _fleet(), "time_limit_s": 0.3}, headers=h).json()
        j = _wait(env, slow["id"], _finished)
        assert j["status"] == "failed" and "time limit of 0.3 s" in j["error"]


def test_a_job_survives_a_restart(sqlite_url: str) -> None:
    """A job left running by a killed service (stale heartbeat) is re-queued and run by the next start; one
    that lost its worker too often is marked failed, with the reason; none stays 'running' for ever."""
    for env in make_env(sqlite_url):  # no workers: jobs stay queued
        a = env.client.post("/api/v1/plan", json={"fleet": _fleet()}, headers=env.h("a_editor")).json()["id"]
        b = env.client.post(
            "/api/v1/plan", json={"fleet": _fleet(), "solver_time_limit_s": 30}, headers=env.h("a_editor")
        ).json()["id"]
    engine = make_engine(sqlite_url)
    sm = make_sessionmaker(engine)
    with sm() as db:  # what a killed service leaves behind
        db.execute(
            update(Job)
            .where(Job.id == a)
            .values(status="running", worker="dead:1", attempts=1, heartbeat_unix_s=now_unix_s() - 3600)
        )
        db.execute(
            update(Job)
            .where(Job.id == b)
            .values(status="running", worker="dead:1", attempts=3, heartbeat_unix_s=now_unix_s() - 3600)
        )
        db.commit()
    for env in make_env(sqlite_url, run_jobs=True, job_workers=1):
        ja = _wait(env, a, _finished)
        assert ja["status"] == "succeeded" and ja["attempts"] == 2
        jb = env.client.get(f"/api/v1/jobs/{b}", headers=env.h("a_viewer")).json()
        assert jb["status"] == "failed" and "stopped 3 times" in jb["error"]
    engine.dispose()


def test_a_graceful_stop_requeues_the_running_job(sqlite_url: str) -> None:
    for env in make_env(sqlite_url):
        job_id = env.client.post("/api/v1/plan", json={"fleet": _fleet()}, headers=env.h("a_editor")).json()[
            "id"
        ]
    engine = make_engine(sqlite_url)
    sm = make_sessionmaker(engine)
    runner = jobs.JobRunner(sm, ServiceSettings(db_url=sqlite_url, job_workers=1, job_poll_s=0.05))
    runner.start()
    end = time.monotonic() + 60
    while jobs.get_job(sm, 1, job_id).status != "running" and time.monotonic() < end:
        time.sleep(0.05)
    runner.stop()
    job = jobs.get_job(sm, 1, job_id)
    assert job.status == "queued" and job.attempts == 0 and job.worker is None
    engine.dispose()
