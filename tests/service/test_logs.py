"""Structured logs (issue 24 item 7): one JSON line per request (method, route template, status, duration_ms,
team, request id) and per job event, through the standard logging; `--log-format json|text`."""

from __future__ import annotations

import json
import logging

import pytest

from gpufleet.errors import InputError
from gpufleet.service.logs import JsonFormatter, TextFormatter, configure, request_id

from .fixtures import Env
from .test_dashboard import sign_in


def _records(caplog: pytest.LogCaptureFixture, name: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == name]


def test_one_structured_line_per_request_with_route_template_team_and_request_id(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="gpufleet.service.request")
    r = env.client.get("/api/v1/jobs/12345", headers=env.h("a_viewer") | {"X-Request-ID": "abc-123"})
    assert r.status_code == 404 and r.headers["x-request-id"] == "abc-123"
    (rec,) = _records(caplog, "gpufleet.service.request")
    doc = json.loads(JsonFormatter().format(rec))
    assert doc["level"] == "info" and doc["logger"] == "gpufleet.service.request"
    fields = {k: doc[k] for k in ("method", "route", "status", "team", "request_id")}
    assert fields == {
        "method": "GET",
        "route": "/api/v1/jobs/{job_id}",  # the template, not the id
        "status": 404,
        "team": "a",
        "request_id": "abc-123",
    }
    assert isinstance(doc["duration_ms"], float) and doc["duration_ms"] >= 0
    caplog.clear()
    # a dashboard page: the session's team; a bad request id is replaced by a fresh one
    sign_in(env.client, env.tokens["b_admin"])
    caplog.clear()
    page = env.client.get("/jobs", headers={"X-Request-ID": "bad id\nwith newline"})
    (rec,) = _records(caplog, "gpufleet.service.request")
    fields = rec.fields  # type: ignore[attr-defined]
    assert fields["team"] == "b" and fields["route"] == "/jobs" and fields["status"] == 200
    assert fields["request_id"] == page.headers["x-request-id"] and len(fields["request_id"]) == 32
    caplog.clear()
    env.client.get("/healthz")
    (rec,) = _records(caplog, "gpufleet.service.request")
    assert rec.fields["team"] is None  # type: ignore[attr-defined]


def test_job_events_are_logged(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="gpufleet.service.jobs")
    name = env.client.get("/api/v1/scenarios", headers=env.h("a_editor")).json()["sets"][0]["name"]
    body = {"kind": "scenario_set", "params": {"name": name}}
    r = env.client.post("/api/v1/jobs", json=body, headers=env.h("a_editor"))
    assert r.status_code == 202, r.text
    (rec,) = _records(caplog, "gpufleet.service.jobs")
    assert rec.fields == {  # type: ignore[attr-defined]
        "event": "queued",
        "job_id": r.json()["id"],
        "team_id": rec.fields["team_id"],  # type: ignore[attr-defined]
        "kind": "scenario_set",
    }
    line = json.loads(JsonFormatter().format(rec))
    assert line["event"] == "queued" and line["message"] == f"job {r.json()['id']} queued"


def test_formats_levels_and_request_ids() -> None:
    rec = logging.LogRecord(
        "gpufleet.service.jobs", logging.WARNING, __file__, 1, "job %d %s", (7, "failed"), None
    )
    rec.fields = {"event": "failed", "job_id": 7}
    assert TextFormatter().format(rec).endswith("gpufleet.service.jobs job 7 failed event=failed job_id=7")
    assert json.loads(JsonFormatter().format(rec))["job_id"] == 7
    with pytest.raises(InputError, match="Allowed: json, text"):
        configure("info", "xml")
    with pytest.raises(InputError, match="Allowed: debug, info, warning, error"):
        configure("loud", "json")
    assert request_id("req-1") == "req-1" and request_id("x" * 65) != "x" * 65 and request_id(None)
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        handler = configure("warning", "json")
        assert isinstance(handler.formatter, JsonFormatter) and root.level == logging.WARNING
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])


def test_serve_refuses_an_unknown_log_format_before_starting(tmp_path: object) -> None:
    from typer.testing import CliRunner

    from gpufleet.cli.app import app as cli_app

    r = CliRunner().invoke(cli_app, ["serve", "--log-format", "xml", "--db", f"{tmp_path}/s.sqlite3"])
    assert r.exit_code == 2 and "Allowed: json, text" in r.output and "gpufleet service at" not in r.output


def test_a_job_run_logs_queued_started_and_succeeded(
    sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    from .fixtures import make_env
    from .test_jobs import _finished, _fleet, _wait

    caplog.set_level(logging.INFO, logger="gpufleet.service.jobs")
    for env in make_env(sqlite_url, run_jobs=True, job_workers=1):
        body = {"fleet": _fleet(), "source": "a.yaml"}
        r = env.client.post("/api/v1/plan", json=body, headers=env.h("a_editor"))
        assert r.status_code == 202, r.text
        assert _wait(env, r.json()["id"], _finished)["status"] == "succeeded"
    events = [
        rec.fields  # type: ignore[attr-defined]
        for rec in _records(caplog, "gpufleet.service.jobs")
        if getattr(rec, "fields", None)
    ]
    assert [e["event"] for e in events] == ["queued", "started", "succeeded"]
    done = events[-1]
    assert done["job_id"] == r.json()["id"] and done["kind"] == "plan" and done["attempts"] == 1
    assert done["duration_ms"] > 0 and done["error"] is None
