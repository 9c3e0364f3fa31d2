"""Simulation input files uploaded per team (traces, batch job and fleet files) and the autoscale and batch
simulators (and their sweeps) as jobs over them: a bad file, a path trick, an oversized body are 4xx with
the reader's one-paragraph message; another team's upload is 404; the job's result is the CLI's --format json
document, and a figure of it is recomputed from the inputs."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app as cli_app
from gpufleet.errors import InputError
from gpufleet.service.job_kinds import check_params, execute
from gpufleet.service.jobs import JobRunner, _child_inputs

from .fixtures import Env, make_env

DATA = Path(__file__).resolve().parents[1] / "data"
AZURE = DATA / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"
JOBS = DATA / "simulate" / "jobs.csv"
FLEET = DATA / "simulate" / "fleet.yaml"


@pytest.fixture(scope="module")
def trace_text() -> str:
    return "\n".join(AZURE.read_text().splitlines()[:300]) + "\n"


def _up(env: Env, who: str, kind: str, name: str, data: bytes | str, **form: str) -> Any:
    raw = data.encode() if isinstance(data, str) else data
    return env.client.post(
        "/api/v1/uploads", files={"file": (name, raw)}, data={"kind": kind, **form}, headers=env.h(who)
    )


def _run_job(env: Env, job_id: int) -> dict[str, Any]:
    """Run a queued job the way a worker does (its child process inputs from the database) in process."""
    from gpufleet.service import jobs as jobs_mod

    sm = env.app.state.gpufleet.sm
    job = jobs_mod.get_job(sm, _team(env, "a"), job_id)
    params = json.loads(job.params_json)
    params |= _child_inputs(sm, job.kind, job.team_id, params)
    doc, _ = execute(job.kind, params, lambda f, t: None)
    return doc


def _team(env: Env, name: str) -> int:
    from sqlalchemy import select

    from gpufleet.service.db import Team

    with env.app.state.gpufleet.sm() as db:
        return int(db.scalar(select(Team.id).where(Team.name == name)))


def test_upload_list_get_delete_and_cross_team_404(any_env: Env, trace_text: str) -> None:
    env = any_env  # SQLite and PostgreSQL
    r = _up(env, "a_editor", "trace", "conv.csv", trace_text)
    assert r.status_code == 201, r.text
    up = r.json()
    assert up["kind"] == "trace" and up["format"] == "azure" and up["name"] == "conv.csv"
    assert up["summary"].startswith("299 requests")  # 300 lines: a header and 299 requests
    assert up["size_bytes"] == len(trace_text.encode())
    listed = env.client.get("/api/v1/uploads", headers=env.h("a_viewer")).json()
    assert [u["id"] for u in listed] == [up["id"]]
    assert env.client.get("/api/v1/uploads?kind=jobs", headers=env.h("a_viewer")).json() == []
    got = env.client.get(f"/api/v1/uploads/{up['id']}", headers=env.h("a_viewer"))
    assert got.status_code == 200 and got.text == trace_text
    # another team: not found, never forbidden (which would confirm it exists); not in its list
    for method in ("get", "delete"):
        other = getattr(env.client, method)(f"/api/v1/uploads/{up['id']}", headers=env.h("b_admin"))
        assert other.status_code == 404 and "No upload with id" in other.json()["error"]["message"]
    assert env.client.get("/api/v1/uploads", headers=env.h("b_admin")).json() == []
    body = {"kind": "simulate", "params": {"simulator": "autoscale", "trace": up["id"], "gpu": "l4"}}
    r = env.client.post("/api/v1/jobs", json=body, headers=env.h("b_admin"))
    assert r.status_code == 404 and f"No upload with id {up['id']}" in r.json()["error"]["message"]
    # roles: a viewer reads, never uploads or deletes
    assert _up(env, "a_viewer", "trace", "t.csv", trace_text).status_code == 403
    assert env.client.delete(f"/api/v1/uploads/{up['id']}", headers=env.h("a_viewer")).status_code == 403
    gone = env.client.delete(f"/api/v1/uploads/{up['id']}", headers=env.h("a_editor"))
    assert gone.status_code == 200 and gone.json()["id"] == up["id"]
    assert env.client.get("/api/v1/uploads", headers=env.h("a_viewer")).json() == []


@pytest.mark.parametrize(
    "name",
    [
        "../../etc/passwd",
        "/etc/passwd",
        "..\\..\\win.ini",
        "a/../../b.csv",
        "....//x.csv",
        "%2e%2e%2fx.csv",
        ".hidden.csv",
        "nul\x00.csv",
    ],
)
def test_path_tricks_in_the_file_name_never_reach_a_path(env: Env, trace_text: str, name: str) -> None:
    r = _up(env, "a_editor", "trace", name, trace_text)
    assert r.status_code == 201, r.text
    stored = r.json()["name"]
    assert "/" not in stored and "\\" not in stored and not stored.startswith(".") and ".." not in stored
    assert stored.endswith(".csv")


def test_bad_content_and_oversized_bodies_are_4xx_with_one_paragraph(env: Env) -> None:
    bad = _up(env, "a_editor", "trace", "t.csv", "a,b,c\n1,2,3\n")
    assert bad.status_code == 422
    msg = bad.json()["error"]["message"]
    assert "match no known layout" in msg and "\n" not in msg and "/tmp" not in msg and "t.csv" in msg
    assert _up(env, "a_editor", "trace", "t.csv", b"\xff\xfe\x00garbage\x00").status_code in (400, 422)
    assert _up(env, "a_editor", "trace", "t.csv", "").status_code == 400
    jobs = _up(env, "a_editor", "jobs", "j.csv", "job_id,gpus\nx,1\n")
    assert jobs.status_code == 422 and "j.csv has the columns" in jobs.json()["error"]["message"]
    fleet = _up(env, "a_editor", "batch_fleet", "f.yaml", "pools: [{name: x}]\n")
    assert fleet.status_code == 422 and "f.yaml" in fleet.json()["error"]["message"]
    kind = _up(env, "a_editor", "binary", "t.csv", "x")
    assert kind.status_code == 400 and "Allowed: trace" in kind.json()["error"]["message"]
    fmt = _up(env, "a_editor", "trace", "t.csv", "x\n", input_format="parquet")
    assert fmt.status_code == 400 and "Allowed: auto, azure" in fmt.json()["error"]["message"]
    assert env.client.get("/api/v1/uploads", headers=env.h("a_viewer")).json() == []


def test_a_nul_character_anywhere_is_refused_on_both_databases(any_env: Env, trace_text: str) -> None:
    lines = trace_text.splitlines()
    lines[250] = lines[250] + "\x00"  # past the first 4 KiB
    r = _up(any_env, "a_editor", "trace", "t.csv", "\n".join(lines) + "\n")
    assert r.status_code == 400 and "NUL character on line 251" in r.json()["error"]["message"]
    assert any_env.client.get("/api/v1/uploads", headers=any_env.h("a_viewer")).json() == []


def test_an_upload_over_the_limit_is_413(sqlite_url: str, trace_text: str) -> None:
    for env in make_env(sqlite_url, upload_max_bytes=1000):
        r = _up(env, "a_editor", "trace", "t.csv", trace_text)
        assert r.status_code == 413
        msg = r.json()["error"]["message"]
        assert "limited to 1,000 bytes" in msg and "gpufleet simulate" in msg
    for env in make_env(sqlite_url, max_body_bytes=2000):  # the request body limit comes first
        assert _up(env, "a_editor", "trace", "t.csv", trace_text).status_code == 413


def test_autoscale_job_is_the_cli_document_and_recomputes_from_the_trace(
    env: Env, trace_text: str, tmp_path: Path
) -> None:
    up = _up(env, "a_editor", "trace", "conv.csv", trace_text).json()
    params = {"simulator": "autoscale", "trace": up["id"], "gpu": "l4", "policy": "hpa", "seed": 3}
    r = env.client.post(
        "/api/v1/jobs", json={"kind": "simulate", "params": params}, headers=env.h("a_editor")
    )
    assert r.status_code == 202, r.text
    doc = _run_job(env, r.json()["id"])
    path = tmp_path / "conv.csv"
    path.write_text(trace_text)
    cli = CliRunner().invoke(
        cli_app,
        ["simulate", "autoscale", str(path), "--gpu", "l4", "-p", "hpa", "--seed", "3", "-f", "json"],
    )
    want = json.loads(cli.stdout)
    assert cli.exit_code == (0 if want["result"]["meets_slo"] else 3), cli.output  # 3: the SLO is missed
    assert doc["kind"] == "simulation_autoscale"
    assert doc["result"] == want["result"]
    res = doc["result"]
    # a figure from the inputs: the requests replayed are the trace's rows, the cost is replica-hours
    # times the replica's price
    assert res["requests"] == trace_text.count("\n") - 1
    assert res["spot_replica_hours"] == 0
    price = res["price_usd_per_replica_hour"]
    assert res["cost_usd"] == pytest.approx(res["replica_hours"] * price, rel=1e-6)


def test_batch_job_and_sweep_over_uploads(env: Env, tmp_path: Path) -> None:
    jobs = _up(env, "a_editor", "jobs", "jobs.csv", JOBS.read_text()).json()
    fleet = _up(env, "a_editor", "batch_fleet", "fleet.yaml", FLEET.read_text()).json()
    assert jobs["summary"].endswith("team(s)") and "pool(s)" in fleet["summary"]
    params = {"simulator": "batch", "jobs": jobs["id"], "fleet": fleet["id"], "policy": "fifo", "seed": 1}
    r = env.client.post(
        "/api/v1/jobs", json={"kind": "simulate", "params": params}, headers=env.h("a_editor")
    )
    assert r.status_code == 202, r.text
    doc = _run_job(env, r.json()["id"])
    cli = CliRunner().invoke(
        cli_app,
        ["simulate", "batch", str(JOBS), "--fleet", str(FLEET), "-p", "fifo", "--seed", "1", "-f", "json"],
    )
    assert cli.exit_code == 0, cli.output
    assert doc["result"] == json.loads(cli.stdout)["result"]
    res = doc["result"]
    assert sum(t["cost_usd"] for t in res["teams"]) == pytest.approx(res["cost_usd"], rel=1e-6)
    assert res["jobs"] == JOBS.read_text().strip().count("\n")
    # a fleet upload where a job file is needed: refused, naming the kinds
    wrong = {"simulator": "batch", "jobs": fleet["id"]}
    r = env.client.post("/api/v1/jobs", json={"kind": "simulate", "params": wrong}, headers=env.h("a_editor"))
    assert r.status_code == 400 and "is a batch_fleet upload" in r.json()["error"]["message"]
    sweep = {
        "kind": "batch",
        "base": {"jobs": jobs["id"], "fleet": fleet["id"]},
        "grid": {"policy": ["fifo", "easy"]},
        "seeds": [0],
    }
    r = env.client.post("/api/v1/jobs", json={"kind": "sweep", "params": sweep}, headers=env.h("a_editor"))
    assert r.status_code == 202, r.text
    swept = _run_job(env, r.json()["id"])
    assert swept["kind"] == "simulation_sweep" and len(swept["result"]["rows"]) == 2
    assert not any(
        isinstance(v, str) and "gpufleet-uploads" in v for row in swept["result"]["rows"] for v in row
    )


def test_the_digest_follows_the_content_and_a_deleted_upload_fails_the_job(env: Env, trace_text: str) -> None:
    up = _up(env, "a_editor", "trace", "conv.csv", trace_text).json()
    body = {"kind": "simulate", "params": {"simulator": "autoscale", "trace": up["id"], "gpu": "l4"}}
    first = env.client.post("/api/v1/jobs", json=body, headers=env.h("a_editor") | {"Idempotency-Key": "k"})
    again = env.client.post("/api/v1/jobs", json=body, headers=env.h("a_editor") | {"Idempotency-Key": "k"})
    assert first.status_code == 202 and again.status_code == 200 and again.json()["reused"]
    # a digest sent in the body is replaced by the service's
    forged = {**body["params"], "upload_sha256": {str(up["id"]): "0" * 64}}
    r = env.client.post(
        "/api/v1/jobs", json={"kind": "simulate", "params": forged}, headers=env.h("a_editor")
    )
    assert r.status_code == 202
    env.client.delete(f"/api/v1/uploads/{up['id']}", headers=env.h("a_editor"))
    with pytest.raises(InputError, match="deleted or replaced"):
        _run_job(env, first.json()["id"])


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"simulator": "autoscale", "trace": "/etc/passwd"}, "never a path"),
        ({"simulator": "autoscale"}, "trace is required"),
        ({"simulator": "autoscale", "trace": 1, "policy": "magic"}, "Allowed: static"),
        ({"simulator": "autoscale", "trace": 1, "kv_mode": "x"}, "Allowed: paged, reserve"),
        ({"simulator": "autoscale", "trace": 1, "spot_share": 2}, "fraction in [0, 1]"),
        ({"simulator": "autoscale", "trace": 1, "model": "/etc/hosts"}, "looks like a file path"),
        ({"simulator": "autoscale", "trace": 1, "wat": 1}, "unknown option 'wat'"),
        ({"simulator": "autoscale", "trace": 1, "policy_params": {"target": "x"}}, "is a number"),
        ({"simulator": "batch", "jobs": 1, "policy": "lifo"}, "Allowed: fifo"),
        ({"simulator": "batch", "jobs": True}, "never a path"),
    ],
)
def test_bad_simulate_parameters_are_refused(params: dict[str, Any], says: str) -> None:
    ids = {str(v): "0" * 64 for k, v in params.items() if k in ("trace", "jobs") and type(v) is int}
    with pytest.raises(InputError) as err:
        check_params("simulate", params | {"upload_sha256": ids})
    assert says in str(err.value)


def test_bad_sweep_over_uploads_is_refused() -> None:
    spec = {"kind": "autoscale", "base": {"trace": 1}, "grid": {"nonsense": [1, 2]}}
    with pytest.raises(InputError, match="unknown names"):
        check_params("sweep", spec | {"upload_sha256": {"1": "0" * 64}})
    with pytest.raises(InputError, match="trace is required"):
        check_params("sweep", {"kind": "autoscale", "grid": {"policy": ["kpa"]}, "upload_sha256": {}})


@pytest.fixture
def worker_env(sqlite_url: str) -> Iterator[Env]:
    yield from make_env(sqlite_url, run_jobs=True, job_workers=1, scheduler=False)


def test_an_autoscale_job_runs_through_the_worker(worker_env: Env, trace_text: str) -> None:
    env = worker_env
    up = _up(env, "a_editor", "trace", "conv.csv", trace_text).json()
    params = {"simulator": "autoscale", "trace": up["id"], "gpu": "l4", "compare_static_peak": False}
    r = env.client.post(
        "/api/v1/jobs", json={"kind": "simulate", "params": params}, headers=env.h("a_editor")
    )
    job_id = r.json()["id"]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        job = env.client.get(f"/api/v1/jobs/{job_id}", headers=env.h("a_viewer")).json()
        if job["status"] in ("succeeded", "failed"):
            break
        time.sleep(0.3)
    assert job["status"] == "succeeded", job
    doc = env.client.get(f"/api/v1/jobs/{job_id}/result", headers=env.h("a_viewer")).json()
    assert doc["kind"] == "simulation_autoscale" and doc["result"]["requests"] == 299
    assert isinstance(env.app.state.gpufleet.runner, JobRunner)


def test_dashboard_simulations_page_uploads_and_submits_jobs(env: Env, trace_text: str) -> None:
    from .test_dashboard import sign_in

    c = env.client
    csrf = sign_in(c, env.tokens["a_editor"])
    page = c.get("/simulations")
    assert page.status_code == 200 and 'href="/simulations"' in page.text
    assert '<label for="upload_file">' in page.text and "Upload a request trace first" in page.text
    files = {"file": ("../../conv.csv", trace_text.encode())}
    # no CSRF token: refused
    r = c.post("/simulations/uploads", data={"kind": "trace"}, files=files, follow_redirects=False)
    assert r.status_code == 403
    r = c.post(
        "/simulations/uploads", data={"kind": "trace", "csrf": csrf}, files=files, follow_redirects=False
    )
    assert r.status_code == 303, r.text
    bad = c.post(
        "/simulations/uploads",
        data={"kind": "trace", "csrf": csrf},
        files={"file": ("x.csv", b"a,b\n1,2\n")},
    )
    assert bad.status_code == 422 and "match no known layout" in bad.text
    page = c.get("/simulations")
    assert "conv.csv" in page.text and "299 requests" in page.text and '<label for="as_trace">' in page.text
    up = c.get("/api/v1/uploads", headers=env.h("a_viewer")).json()[0]
    form = {
        "csrf": csrf,
        "trace": str(up["id"]),
        "model": "llama-3.1-8b",
        "gpu": "l4",
        "policy": "hpa",
        "min_replicas": "1",
        "max_replicas": "8",
        "slo_ttft_s": "2",
        "slo_tpot_s": "0.2",
        "seed": "0",
    }
    r = c.post("/simulations/autoscale", data=form, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/jobs/")
    job_id = int(r.headers["location"].rsplit("/", 1)[1])
    job = c.get(f"/api/v1/jobs/{job_id}", headers=env.h("a_viewer")).json()
    assert job["kind"] == "simulate" and job["status"] == "queued"
    doc = _run_job(env, job_id)
    assert doc["kind"] == "simulation_autoscale" and doc["result"]["requests"] == 299
    wrong = c.post("/simulations/autoscale", data=form | {"max_replicas": "many"})
    assert wrong.status_code == 400 and "whole number" in wrong.text
    # a viewer sees the list, no form, and the routes refuse
    c.cookies.clear()
    vcsrf = sign_in(c, env.tokens["a_viewer"])
    page = c.get("/simulations")
    assert "conv.csv" in page.text and "upload_file" not in page.text
    r = c.post("/simulations/autoscale", data=form | {"csrf": vcsrf})
    assert r.status_code == 403
    r = c.post(f"/simulations/uploads/{up['id']}/delete", data={"csrf": vcsrf})
    assert r.status_code == 403
    # another team never sees it
    c.cookies.clear()
    sign_in(c, env.tokens["b_admin"])
    assert "conv.csv" not in c.get("/simulations").text


def test_a_schedule_runs_a_simulation_over_the_team_upload(env: Env, trace_text: str) -> None:
    from gpufleet.service import scheduler

    up = _up(env, "a_editor", "trace", "conv.csv", trace_text).json()
    body = {
        "name": "nightly autoscale",
        "cron": "0 2 * * *",
        "kind": "simulate",
        "params": {"simulator": "autoscale", "trace": up["id"], "gpu": "l4"},
    }
    other = env.client.post("/api/v1/schedules", json=body, headers=env.h("b_admin"))
    assert other.status_code == 404  # another team's upload
    r = env.client.post("/api/v1/schedules", json=body, headers=env.h("a_editor"))
    assert r.status_code == 201, r.text
    assert r.json()["params"]["upload_sha256"] == {str(up["id"]): up["sha256"]}
    queued = scheduler.tick(env.app.state.gpufleet.sm, r.json()["next_due_unix_s"] + 1.0, "r1")
    assert len(queued) == 1
    doc = _run_job(env, queued[0])
    assert doc["kind"] == "simulation_autoscale" and doc["result"]["requests"] == 299


def test_serve_max_upload_mib_sets_the_upload_limit(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import uvicorn

    seen: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda application, **kw: seen.append(application))
    db = str(tmp_path / "s.sqlite3")
    for flag, want in (([], 8 * 1024 * 1024), (["--max-upload-mib", "0.5"], 512 * 1024)):
        res = CliRunner().invoke(cli_app, ["serve", "--db", db, "--no-scheduler", *flag])
        assert res.exit_code == 0, res.output
        assert seen[-1].state.gpufleet.settings.upload_max_bytes == want
    res = CliRunner().invoke(cli_app, ["serve", "--db", db, "--max-upload-mib", "0"])
    assert res.exit_code == 2


def test_malformed_upload_requests_are_4xx(env: Env) -> None:
    c, h = env.client, env.h("a_editor")
    assert c.post("/api/v1/uploads", data={"kind": "trace"}, headers=h).status_code == 422  # no file
    r = c.post("/api/v1/uploads", data={"kind": "trace", "file": "a,b"}, headers=h)
    assert r.status_code == 422 and "file" in r.json()["error"]["message"]
    r = c.post("/api/v1/uploads", files={"file": ("t.csv", b"x")}, headers=h)  # no kind
    assert r.status_code == 422
    r = c.post("/api/v1/uploads", json={"kind": "trace"}, headers=h)
    assert r.status_code == 422
    assert c.get("/api/v1/uploads?kind=../x", headers=h).status_code == 422
    assert c.get("/api/v1/uploads/abc", headers=h).status_code == 422
    assert c.get("/api/v1/uploads/999999", headers=h).status_code == 404
    assert (
        c.post("/api/v1/uploads", files={"file": ("t.csv", b"x")}, data={"kind": "trace"}).status_code == 401
    )


def test_an_autoscale_sweep_over_two_uploaded_traces_names_them_by_id(env: Env, trace_text: str) -> None:
    short = "\n".join(trace_text.splitlines()[:150]) + "\n"
    a = _up(env, "a_editor", "trace", "a.csv", trace_text).json()
    b = _up(env, "a_editor", "trace", "b.csv", short).json()
    sweep = {
        "kind": "autoscale",
        "base": {"gpu": "l4", "policy": "hpa"},
        "grid": {"trace": [a["id"], b["id"]]},
        "seeds": [0],
    }
    r = env.client.post("/api/v1/jobs", json={"kind": "sweep", "params": sweep}, headers=env.h("a_editor"))
    assert r.status_code == 202, r.text
    doc = _run_job(env, r.json()["id"])
    res = doc["result"]
    col = res["columns"].index("trace")
    assert [row[col] for row in res["rows"]] == [a["id"], b["id"]]
    b_other = _up(env, "b_admin", "trace", "c.csv", short).json()
    mixed = sweep | {"grid": {"trace": [a["id"], b_other["id"]]}}
    r = env.client.post("/api/v1/jobs", json={"kind": "sweep", "params": mixed}, headers=env.h("a_editor"))
    assert r.status_code == 404  # one of another team's uploads
