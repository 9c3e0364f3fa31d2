"""Webhooks: a team's admin registers a URL; when a job of the team ends, the URL receives a Slack-compatible
``{"text"}`` or a generic JSON body for the events it asked for, and the delivery outcome is kept."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from .fixtures import Env, make_env

FLEET = Path("examples/fleets/assessment-platform.yaml")


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A local HTTP server recording the JSON bodies posted to it (nothing leaves the machine)."""
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append({"path": self.path, "body": json.loads(body)})
            self.send_response(200 if self.path != "/broken" else 500)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", got
    server.shutdown()


def _wait_for(pred: Any, timeout_s: float = 60) -> None:
    end = time.monotonic() + timeout_s
    while not pred() and time.monotonic() < end:
        time.sleep(0.1)
    assert pred()


def test_webhooks_on_job_end(sqlite_url: str, receiver: tuple[str, list[dict[str, Any]]]) -> None:
    base, got = receiver
    fleet = yaml.safe_load(FLEET.read_text())
    for env in make_env(sqlite_url, run_jobs=True, job_workers=1):
        c, admin = env.client, env.h("a_admin")
        assert (
            c.post("/api/v1/webhooks", json={"url": base + "/x"}, headers=env.h("a_editor")).status_code
            == 403
        )
        slack = c.post(
            "/api/v1/webhooks",
            headers=admin,
            json={"url": base + "/slack", "format": "slack", "events": ["job_failed", "job_succeeded"]},
        )
        assert slack.status_code == 201, slack.text
        generic = c.post(
            "/api/v1/webhooks",
            headers=admin,
            json={"url": base + "/broken", "format": "generic", "events": ["job_failed"]},
        )
        assert generic.status_code == 201
        for bad in (
            {"url": "file:///etc/passwd"},
            {"url": base, "events": ["job_exploded"]},
            {"url": "ftp://x"},
        ):
            assert c.post("/api/v1/webhooks", json=bad, headers=admin).status_code in (400, 422), bad
        ok = c.post("/api/v1/plan", json={"fleet": fleet, "source": "prod.yaml"}, headers=admin).json()
        slow = c.post(
            "/api/v1/plan", json={"fleet": fleet, "source": "slow.yaml", "time_limit_s": 0.3}, headers=admin
        ).json()
        _wait_for(lambda: len(got) >= 3)
        time.sleep(0.5)  # nothing else arrives
        texts = sorted(g["body"].get("text", "") for g in got if g["path"] == "/slack")
        assert texts == [
            f"gpufleet job #{ok['id']} (plan, prod.yaml) succeeded",
            f"gpufleet job #{slow['id']} (plan, slow.yaml) failed: The job ran past its time limit "
            "of 0.3 s and was stopped. Submit it with a larger time_limit_s, or make it smaller.",
        ]
        generic_bodies = [g["body"] for g in got if g["path"] == "/broken"]
        assert len(generic_bodies) == 1 and generic_bodies[0]["event"] == "job_failed"
        assert generic_bodies[0]["job"]["id"] == slow["id"] and generic_bodies[0]["job"]["status"] == "failed"
        _wait_for(
            lambda c=c, admin=admin: (
                [h["last_status"] for h in c.get("/api/v1/webhooks", headers=admin).json()] == [200, 500]
            )
        )
        hooks = {h["url"]: h for h in c.get("/api/v1/webhooks", headers=admin).json()}
        assert hooks[base + "/slack"]["last_status"] == 200 and hooks[base + "/slack"]["last_error"] is None
        # another team neither sees nor deletes them
        assert c.get("/api/v1/webhooks", headers=env.h("b_admin")).json() == []
        assert c.delete(f"/api/v1/webhooks/{slack.json()['id']}", headers=env.h("b_admin")).status_code == 404
        assert c.delete(f"/api/v1/webhooks/{slack.json()['id']}", headers=admin).status_code == 200


def test_cancelling_a_queued_job_notifies(env: Env, receiver: tuple[str, list[dict[str, Any]]]) -> None:
    base, got = receiver
    c, admin = env.client, env.h("a_admin")
    c.post(
        "/api/v1/webhooks",
        headers=admin,
        json={"url": base + "/c", "format": "generic", "events": ["job_cancelled"]},
    )
    job = c.post("/api/v1/plan", json={"fleet": yaml.safe_load(FLEET.read_text())}, headers=admin).json()
    c.post(f"/api/v1/jobs/{job['id']}/cancel", headers=admin)
    _wait_for(lambda: len(got) == 1)
    assert got[0]["body"]["event"] == "job_cancelled" and got[0]["body"]["job"]["id"] == job["id"]
