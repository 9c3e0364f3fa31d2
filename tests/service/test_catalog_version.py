"""Refreshed prices feed the offer routes: a catalog_refresh job (recorded Azure price-API pages at +10 %,
nothing leaves the machine) is kept in the database by the worker, and the catalog offers and recommend
routes of this process and of a second app on the same database answer from it without a restart, each
answer naming the catalog version and capture time it used."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient
from sqlalchemy import select

from gpufleet.catalog.fetch import http as fetch_http
from gpufleet.service.app import create_app
from gpufleet.service.catalog_version import CatalogVersions, version_for_job
from gpufleet.service.db import CatalogRefresh, Job, Team, now_unix_s
from gpufleet.service.job_kinds import check_params, execute
from gpufleet.service.jobs import JobRunner, _child_inputs
from gpufleet.service.settings import ServiceSettings

from .fixtures import Env, make_env

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "price_api" / "azure"
#: the machines the recorded eastus pages price (and the shipped catalog has)
REFRESHED = ("Standard_NC24ads_A100_v4", "Standard_NC4as_T4_v3")
WORKLOAD = {
    "model": "llama-3.1-8b",
    "providers": ["azure"],
    "regions": ["eastus"],
    "gpus": ["A100-PCIe-80GB"],
}


def _azure_api(scale: float) -> httpx.MockTransport:
    def page(name: str) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads((SAMPLES / name).read_text())
        for item in doc["Items"]:
            item["retailPrice"] *= scale
            item["unitPrice"] *= scale
        return doc

    def handle(request: httpx.Request) -> httpx.Response:
        url = str(request.url).replace("%24", "$")
        if request.url.host != "prices.azure.com" or "eastus" not in url:
            return httpx.Response(404)
        return httpx.Response(
            200, json=page("eastus-page2.json" if "$skip=100" in url else "eastus-page1.json")
        )

    return httpx.MockTransport(handle)


@pytest.fixture
def two_apps(
    any_db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Env, TestClient]]:
    """This process's app and a second app (another replica) on the same database (SQLite, PostgreSQL);
    catalog_check_s 0: each request asks the database for the version."""
    sqlite_url = any_db_url
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(fetch_http, "BACKOFF_S", 0.0)
    for env in make_env(sqlite_url, catalog_check_s=0.0):
        other = create_app(
            ServiceSettings(db_url=sqlite_url, rate_limit_per_s=0.0, catalog_check_s=0.0), run_jobs=False
        )
        with TestClient(other, raise_server_exceptions=False) as client:
            yield env, client


def _offer_prices(client: TestClient, env: Env) -> tuple[dict[str, float], dict[str, Any]]:
    r = client.get(
        "/api/v1/catalog/offers?provider=azure&region=eastus&limit=1000", headers=env.h("a_viewer")
    )
    assert r.status_code == 200, r.text
    doc = r.json()
    assert r.headers["X-Gpufleet-Catalog"] == doc["catalog"]["version"]
    prices = {o["instance_type"]: o["price_on_demand_usd_per_hour"] for o in doc["offers"]}
    return {k: prices[k] for k in REFRESHED}, doc


def _recommended(client: TestClient, env: Env) -> tuple[float, dict[str, Any]]:
    r = client.post("/api/v1/recommend", json=WORKLOAD, headers=env.h("a_viewer"))
    assert r.status_code == 200, r.text
    doc = r.json()
    best = doc["result"]["ranked"][0]
    assert best["instance_type"] == "Standard_NC24ads_A100_v4"
    return float(best["price_usd_per_node_hour"]), doc


def _refresh_through_the_worker(env: Env, monkeypatch: pytest.MonkeyPatch, scale: float) -> dict[str, Any]:
    """A refresh job run as a worker records it: the job process's document handed to the runner."""
    monkeypatch.setattr(fetch_http, "TRANSPORT", _azure_api(scale))
    params = check_params("catalog_refresh", {"provider": "azure", "regions": ["eastus"]})
    doc, _ = execute("catalog_refresh", params, lambda f, t: None)
    st = env.app.state.gpufleet
    runner = JobRunner(st.sm, st.settings)
    with st.sm() as db:
        team_id = db.scalar(select(Team.id).where(Team.name == "a"))
        job = Job(
            team_id=team_id,
            kind="catalog_refresh",
            status="running",
            worker=runner.name,
            params_json=json.dumps(params),
            params_sha256="x",
            time_limit_s=60.0,
            attempts=1,
            created_unix_s=now_unix_s(),
        )
        db.add(job)
        db.commit()
        job_id = job.id
    captured = str(doc["captured_at"])
    assert runner._outcome(job_id, {"done": doc, "html": None})
    with st.sm() as db:
        done = db.get(Job, job_id)
        assert done is not None and done.status == "succeeded" and done.result_json is not None
        assert "_offers_csv" not in json.loads(done.result_json)  # kept in catalog_refreshes, not the result
        row = db.scalar(select(CatalogRefresh).where(CatalogRefresh.job_id == job_id))
        assert row is not None and row.provider == "azure" and row.captured_at == captured
    return {"captured_at": captured, "refresh_id": row.id}


def test_a_refresh_feeds_offers_and_recommend_of_every_replica_without_restart(
    two_apps: tuple[Env, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    env, other = two_apps
    clients = (("this", env.client), ("other", other))
    for _name, client in clients:
        shipped, doc = _offer_prices(client, env)
        assert doc["catalog"]["version"] == "shipped" and doc["catalog"]["refreshed"] == []
        assert _recommended(client, env)[1]["catalog"]["version"] == "shipped"
    # the recorded prices as they are: the T4 machine's differs from the shipped snapshot's
    _refresh_through_the_worker(env, monkeypatch, 1.0)
    before = {}
    for name, client in clients:
        prices, doc = _offer_prices(client, env)
        assert prices["Standard_NC4as_T4_v3"] == pytest.approx(0.55)  # eastus-page1.json, retailPrice
        assert prices["Standard_NC4as_T4_v3"] != pytest.approx(shipped["Standard_NC4as_T4_v3"])
        before[name] = (prices, _recommended(client, env)[0])
    # the same pages at +10 %
    refresh = _refresh_through_the_worker(env, monkeypatch, 1.1)
    version = f"refresh-{refresh['refresh_id']}"
    for name, client in clients:
        prices, doc = _offer_prices(client, env)
        assert doc["catalog"]["version"] == version, name
        assert doc["catalog"]["refreshed"] == [
            {"provider": "azure", "captured_at": refresh["captured_at"], "refresh_id": refresh["refresh_id"]}
        ]
        for it in REFRESHED:  # +10 % on every refreshed machine, in both replicas
            assert prices[it] == pytest.approx(1.1 * before[name][0][it], rel=1e-4), (name, it)
        dated = [o for o in doc["offers"] if o["instance_type"] in REFRESHED]
        assert {o["captured_at"] for o in dated} == {refresh["captured_at"]}
        price, rec = _recommended(client, env)
        assert rec["catalog"]["version"] == version
        assert price == pytest.approx(1.1 * before[name][1], rel=1e-4), name
        best = rec["result"]["ranked"][0]
        assert best["cost_usd_per_hour"] == pytest.approx(best["total_nodes"] * price, rel=1e-6)
    # other providers keep their shipped rows
    aws = env.client.get("/api/v1/catalog/offers?provider=aws&limit=1", headers=env.h("a_viewer")).json()
    assert aws["page"]["total"] > 0


def test_a_plan_job_gets_the_latest_refresh_from_the_worker(
    two_apps: tuple[Env, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    env, _ = two_apps
    sm = env.app.state.gpufleet.sm
    assert _child_inputs(sm, "plan", 1, {}) == {"_refreshes": []}
    refresh = _refresh_through_the_worker(env, monkeypatch, 1.1)
    given = _child_inputs(sm, "plan", 1, {})["_refreshes"]
    assert [(r["id"], r["provider"]) for r in given] == [(refresh["refresh_id"], "azure")]
    cat = version_for_job(given)
    assert cat.version == f"refresh-{refresh['refresh_id']}"
    shipped = version_for_job(None)
    assert shipped.version == "shipped"

    def price(table: Any) -> float:
        rows = table.filter(provider="azure").records()
        return next(
            o.price_on_demand_usd_per_hour
            for o in rows
            if o.instance_type == "Standard_NC24ads_A100_v4" and o.region == "eastus"
        )

    assert price(cat.table) == pytest.approx(1.1 * price(shipped.table), rel=1e-4)


def test_the_version_is_asked_at_most_every_n_seconds_and_built_once_per_version(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(fetch_http, "BACKOFF_S", 0.0)
    now = [1000.0]

    def clock() -> float:
        return now[0]

    for env in make_env(sqlite_url):
        sm = env.app.state.gpufleet.sm
        versions = CatalogVersions(sm, check_every_s=10.0, clock=clock)
        first = versions.current()
        assert first.version == "shipped" and versions.builds == 1
        refresh = _refresh_through_the_worker(env, monkeypatch, 1.1)
        now[0] += 9.0
        assert versions.current() is first  # within 10 s: the database is not asked
        now[0] += 1.0
        second = versions.current()
        assert second.version == f"refresh-{refresh['refresh_id']}" and versions.builds == 2
        now[0] += 30.0
        assert versions.current() is second and versions.builds == 2  # same version: not rebuilt


def test_a_plan_job_process_plans_on_the_refreshed_prices(
    two_apps: tuple[Env, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    env, _ = two_apps
    _refresh_through_the_worker(env, monkeypatch, 1.1)
    sm = env.app.state.gpufleet.sm
    fleet = yaml.safe_load(Path("examples/fleets/mig-inference.yaml").read_text())
    params = check_params("plan", {"fleet": fleet, "source": "mig.yaml"})
    seen: list[Any] = []

    def fake_plan(fleet: Any, *, offers: Any = None, **_: Any) -> Any:
        seen.append(offers)
        raise RuntimeError("stop here")

    monkeypatch.setattr("gpufleet.fleet.plan.plan_fleet", fake_plan)
    with pytest.raises(RuntimeError):
        execute("plan", params | _child_inputs(sm, "plan", 1, params), lambda f, t: None)
    rows = [
        o
        for o in seen[0].filter(provider="azure").records()
        if o.instance_type == "Standard_NC4as_T4_v3" and o.region == "eastus"
    ]
    assert [o.price_on_demand_usd_per_hour for o in rows] == [pytest.approx(1.1 * 0.55)]


def test_a_team_catalog_applies_on_top_of_the_refreshed_prices(
    two_apps: tuple[Env, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    env, _ = two_apps
    onprem = Path("tests/data/user_catalogs/onprem.yaml").read_text()
    r = env.client.post(
        "/api/v1/catalogs", json={"name": "onprem.yaml", "text": onprem}, headers=env.h("a_editor")
    )
    assert r.status_code == 201, r.text
    _refresh_through_the_worker(env, monkeypatch, 1.1)
    prices, doc = _offer_prices(env.client, env)  # team a: its catalog and the refreshed azure prices
    assert doc["catalog"]["version"].startswith("refresh-")
    assert prices["Standard_NC4as_T4_v3"] == pytest.approx(1.1 * 0.55)
    mine = env.client.get("/api/v1/catalog/offers?provider=onprem", headers=env.h("a_viewer")).json()
    assert mine["page"]["total"] > 0
    other = env.client.get("/api/v1/catalog/offers?provider=onprem", headers=env.h("b_admin"))
    assert other.status_code == 404  # another team's machines are unknown to it
    assert "Unknown provider 'onprem'" in other.json()["error"]["message"]
