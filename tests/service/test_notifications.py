"""Change events and notifications: a catalog refresh (recorded Azure price-API samples, nothing leaves the
machine) stores its price changes against the previous refresh and notifies the webhooks whose threshold they
reach; a findings run notifies a new saving (against the team's previous run) and alerts that fired; every
delivery is recorded with its tries. A local HTTP server on 127.0.0.1 receives the webhooks."""

from __future__ import annotations

import json
import math
import runpy
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from gpufleet.catalog.fetch import http as fetch_http
from gpufleet.service import webhooks
from gpufleet.service.db import Delivery, Job, Team, now_unix_s
from gpufleet.service.job_kinds import check_params
from gpufleet.service.job_kinds_sched import execute
from gpufleet.service.notifications import after_job, new_alerts, new_savings

from .fixtures import Env, make_env

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "data" / "price_api" / "azure"

Received = tuple[str, list[dict[str, Any]]]


@pytest.fixture
def receiver() -> Iterator[Received]:
    """A local HTTP server recording what is posted to it; /broken answers 500, /gone 404, others 200."""
    got: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append({"path": self.path, "body": json.loads(body)})
            self.send_response({"/broken": 500, "/gone": 404}.get(self.path, 200))
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", got
    server.shutdown()


def _azure_api(scale: float) -> httpx.MockTransport:
    """The recorded Azure Retail Prices pages for eastus, every price multiplied by ``scale``."""

    def page(name: str) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((SAMPLES / name).read_text())
        for item in doc["Items"]:
            item["retailPrice"] = item["retailPrice"] * scale
            item["unitPrice"] = item["unitPrice"] * scale
        return doc

    def handle(request: httpx.Request) -> httpx.Response:
        url = str(request.url).replace("%24", "$")
        if request.url.host != "prices.azure.com" or "eastus" not in url:
            return httpx.Response(404)
        return httpx.Response(
            200, json=page("eastus-page2.json" if "$skip=100" in url else "eastus-page1.json")
        )

    return httpx.MockTransport(handle)


def _refresh(monkeypatch: pytest.MonkeyPatch, scale: float) -> dict[str, Any]:
    monkeypatch.setattr(fetch_http, "TRANSPORT", _azure_api(scale))
    params = check_params("catalog_refresh", {"provider": "azure", "regions": ["eastus"]})
    doc, html = execute("catalog_refresh", params, lambda f, t: None)
    assert html is None
    return doc


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "gpufleet-data"
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(d))
    monkeypatch.setattr(fetch_http, "BACKOFF_S", 0.0)
    return d


def _finished_job(env: Env, kind: str, doc: dict[str, Any]) -> int:
    """A succeeded job of team a with ``doc`` as its result."""
    with env.app.state.gpufleet.sm() as db:
        team_id = db.scalar(select(Team.id).where(Team.name == "a"))
        job = Job(
            team_id=team_id,
            kind=kind,
            status="succeeded",
            params_json="{}",
            params_sha256="x",
            time_limit_s=60.0,
            result_json=json.dumps(doc),
            created_unix_s=now_unix_s(),
        )
        db.add(job)
        db.commit()
        return job.id


def _hook(env: Env, who: str, url: str, events: list[str], **thresholds: float) -> int:
    r = env.client.post(
        "/api/v1/webhooks",
        json={"url": url, "format": "generic", "events": events, **thresholds},
        headers=env.h(who),
    )
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def _join(threads: list[Any]) -> None:
    for t in threads:
        t.join(30)


def test_refresh_price_changes_are_stored_listed_and_notified(
    env: Env, data_dir: Path, monkeypatch: pytest.MonkeyPatch, receiver: Received
) -> None:
    first = _refresh(monkeypatch, 1.0)
    assert first["offers_priced"] > 0
    time.sleep(1.1)  # a refresh is dated to the second: the next one is a later capture
    second = _refresh(monkeypatch, 1.1)
    changes = second["changes"]
    # every price the second refresh saw moved by +10 % against the first refresh's (and is dated by it)
    assert changes and len(changes) == len(
        {(c["region"], c["zone"], c["instance_type"], c["price_kind"]) for c in changes}
    )
    for c in changes:
        assert math.isclose(c["new_price_usd_per_hour"], 1.1 * c["old_price_usd_per_hour"], rel_tol=1e-6)
        assert math.isclose(c["change_fraction"], 0.1, rel_tol=1e-6)
        assert c["previous_captured_at"] == first["captured_at"] and c["captured_at"] == second["captured_at"]
    assert {c["price_kind"] for c in changes} <= {"on_demand", "spot"}
    base, got = receiver
    _hook(env, "a_admin", base + "/a", ["price_change"], min_price_change_fraction=0.05)
    _hook(env, "b_admin", base + "/b", ["price_change"], min_price_change_fraction=0.5)  # 10 % is below it
    _join(after_job(env.app.state.gpufleet.sm, _finished_job(env, "catalog_refresh", second)))
    assert [g["path"] for g in got] == ["/a"]
    body = got[0]["body"]
    assert body["event"] == "price_change" and len(body["changes"]) == len(changes)
    assert "+10.0 %" in body["text"]
    # listed to every team (prices are shared), filtered
    r = env.client.get("/api/v1/catalog/changes", headers=env.h("b_admin"))
    assert r.status_code == 200 and r.json()["total"] == len(changes)
    row = r.json()["changes"][0]
    assert math.isclose(
        row["new_price_usd_per_hour"] / row["old_price_usd_per_hour"] - 1, row["change_fraction"]
    )
    big = env.client.get("/api/v1/catalog/changes?min_change_fraction=0.2", headers=env.h("a_viewer"))
    assert big.json() == {"total": 0, "changes": []}
    other = env.client.get("/api/v1/catalog/changes?provider=aws", headers=env.h("a_viewer"))
    assert other.json()["total"] == 0
    sent = env.client.get("/api/v1/deliveries", headers=env.h("a_admin")).json()
    assert [(d["event"], d["status"], d["attempts"], d["http_status"]) for d in sent] == [
        ("price_change", "delivered", 1, 200)
    ]
    assert env.client.get("/api/v1/deliveries", headers=env.h("a_editor")).status_code == 403


def test_a_refresh_with_no_previous_refresh_compares_with_the_shipped_catalog(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = _refresh(monkeypatch, 1.5)  # 1.5 times the recorded prices: every machine the shipped table has
    assert doc["changes"], "a price 50 % up must differ from the shipped snapshot"
    assert all(c["previous_captured_at"] != doc["captured_at"] for c in doc["changes"])
    assert all(c["change_fraction"] > 0 for c in doc["changes"])


def test_delivery_retries_then_records_the_failure(
    env: Env, receiver: Received, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(webhooks, "RETRY_DELAYS_S", (0.0, 0.0))
    base, got = receiver
    _hook(env, "a_admin", base + "/broken", ["saving_found"])
    _hook(env, "a_admin", base + "/gone", ["saving_found"])
    doc = {
        "savings_by_gpu": [
            {"gpu_key": "h1/0", "host": "h1", "finding": "Idle", "best_savings_usd_per_month": 900.0}
        ]
    }
    _join(after_job(env.app.state.gpufleet.sm, _finished_job(env, "findings", doc)))
    assert sorted(g["path"] for g in got) == ["/broken"] * 3 + ["/gone"]  # a 404 is not retried
    with env.app.state.gpufleet.sm() as db:
        rows = sorted((d.status, d.attempts, d.http_status, d.error) for d in db.query(Delivery).all())
    assert rows == [("failed", 1, 404, "HTTP 404"), ("failed", 3, 500, "HTTP 500")]


def _savings(*pairs: tuple[str, float]) -> dict[str, Any]:
    return {
        "savings_by_gpu": [
            {"gpu_key": k, "host": k.split("/")[0], "finding": "Idle", "best_savings_usd_per_month": v}
            for k, v in pairs
        ]
    }


def test_new_savings_compare_with_the_previous_run_at_the_threshold() -> None:
    now = _savings(("h1/0", 1200.0), ("h1/1", 300.0), ("h2/0", 800.0), ("h3/0", 0.0))
    assert [g["gpu_key"] for g in new_savings(now, None, 0.0)] == [
        "h1/0",
        "h2/0",
        "h1/1",
    ]  # first run: all > 0
    assert [g["gpu_key"] for g in new_savings(now, None, 500.0)] == ["h1/0", "h2/0"]
    before = _savings(("h1/0", 1100.0), ("h2/0", 400.0))
    # h1/0 was already above 500 (not new); h2/0 crossed 500 since (new)
    assert [g["gpu_key"] for g in new_savings(now, before, 500.0)] == ["h2/0"]
    assert new_savings(before, now, 0.0) == []


def test_new_alerts_are_those_not_in_the_previous_run() -> None:
    a = {"rule": "GpuIdle", "subject": "h1/0", "start": "2026-11-28T10:00:00Z", "severity": "warning"}
    b = a | {"subject": "h2/0"}
    assert new_alerts({"alert_events": [a, b]}, {"alert_events": [a]}) == [b]
    assert new_alerts({"alert_events": [a]}, None) == [a]


@pytest.fixture(scope="module")
def dcgm(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    out = tmp_path_factory.mktemp("telemetry")
    argv = sys.argv
    try:  # the seeded example of docs/telemetry.md, 2 days
        sys.argv = ["make_telemetry_example.py", str(out / "ex"), "--days", "2"]
        runpy.run_path(str(ROOT / "tools" / "make_telemetry_example.py"), run_name="__main__")
    finally:
        sys.argv = argv
    return (out / "ex" / "dcgm.prom").read_bytes()


def _wait(pred: Any, timeout_s: float = 120) -> None:
    end = time.monotonic() + timeout_s
    while not pred() and time.monotonic() < end:
        time.sleep(0.1)
    assert pred()


def _run_findings(env: Env) -> dict[str, Any]:
    c = env.client
    r = c.post("/api/v1/jobs", json={"kind": "findings", "params": {}}, headers=env.h("a_editor"))
    assert r.status_code == 202, r.text
    jid = r.json()["id"]

    def status() -> str:
        return str(c.get(f"/api/v1/jobs/{jid}", headers=env.h("a_viewer")).json()["status"])

    _wait(lambda: status() not in ("queued", "running"))
    assert status() == "succeeded", c.get(f"/api/v1/jobs/{jid}", headers=env.h("a_viewer")).json()
    doc: dict[str, Any] = c.get(f"/api/v1/jobs/{jid}/result", headers=env.h("a_viewer")).json()
    return doc


def test_a_user_receives_a_webhook_when_a_saving_appears(
    sqlite_url: str, tmp_path: Path, dcgm: bytes, receiver: Received
) -> None:
    """The issue's "done when": telemetry in, a findings job (as the daily schedule queues it) finds savings,
    the team's webhook receives them once; the next run with nothing new sends nothing."""
    base, got = receiver
    for env in make_env(
        sqlite_url,
        run_jobs=True,
        job_workers=1,
        telemetry_dir=tmp_path / "telemetry",
        max_body_bytes=64 * 1024 * 1024,
    ):
        c = env.client
        r = c.post("/api/v1/telemetry/ingest", files={"file": ("dcgm.prom", dcgm)}, headers=env.h("a_editor"))
        assert r.status_code == 200, r.text
        _hook(env, "a_admin", base + "/savings", ["saving_found"], min_saving_usd_per_month=100.0)
        _hook(env, "b_admin", base + "/other-team", ["saving_found"])

        doc = _run_findings(env)
        want = sorted(
            (g for g in doc["savings_by_gpu"] if g["best_savings_usd_per_month"] >= 100.0),
            key=lambda g: (-g["best_savings_usd_per_month"], g["gpu_key"]),
        )
        assert want, "the example fleet has idle GPUs: savings above $100/month"
        _wait(lambda: any(g["path"] == "/savings" for g in got))
        body = next(g["body"] for g in got if g["path"] == "/savings")
        assert body["event"] == "saving_found" and body["gpus"] == want
        assert math.isclose(body["savings_usd_per_month"], sum(g["best_savings_usd_per_month"] for g in want))
        assert doc["summary"]["savings_usd_per_month"] >= body["savings_usd_per_month"] - 1e-6
        _run_findings(env)  # the same telemetry: no new saving
        time.sleep(1.0)
        assert [g["path"] for g in got] == ["/savings"]
