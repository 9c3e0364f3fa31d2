"""A team's user catalogs apply to ``GET /catalog/offers`` and ``POST /regions`` too, and the offers route's
answer cache never gives one team an answer computed with another team's catalogs (negotiated prices are
confidential)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .fixtures import Env

ONPREM = Path("tests/data/user_catalogs/onprem.yaml")
QUERY = "/api/v1/catalog/offers?gpu=H100-SXM&gpus=8&limit=1000"


def _upload(env: Env, who: str) -> None:
    r = env.client.post(
        "/api/v1/catalogs", json={"name": "acme.yaml", "text": ONPREM.read_text()}, headers=env.h(who)
    )
    assert r.status_code == 201, r.text


def _offers(env: Env, who: str, query: str = QUERY) -> list[dict[str, Any]]:
    r = env.client.get(query, headers=env.h(who))
    assert r.status_code == 200, r.text
    rows: list[dict[str, Any]] = r.json()["offers"]
    return rows


def _p5(rows: list[dict[str, Any]]) -> float:
    return next(
        float(o["price_on_demand_usd_per_hour"])
        for o in rows
        if (o["provider"], o["instance_type"], o["region"]) == ("aws", "p5.48xlarge", "us-east-1")
    )


def test_offers_apply_the_team_catalog_and_never_leak_through_the_cache(env: Env) -> None:
    b_before = _offers(env, "b_admin")  # cached before team a has any catalog
    assert not any(o["instance_type"] == "dgx-h100" for o in b_before)
    _upload(env, "a_editor")
    a_rows = _offers(env, "a_viewer")
    assert any(o["provider"] == "onprem" and o["instance_type"] == "dgx-h100" for o in a_rows)
    assert _p5(a_rows) < _p5(b_before)  # the negotiated 30 % discount
    assert abs(_p5(a_rows) - 0.7 * _p5(b_before)) < 0.01
    for _ in range(2):  # team a's answer is now cached: team b still gets the shipped catalog's
        b_rows = _offers(env, "b_admin")
        assert not any(o["provider"] == "onprem" for o in b_rows)
        assert b_rows == b_before
    assert _offers(env, "a_admin") == a_rows  # a cached answer, still team a's
    hits = env.app.state.gpufleet.responses.hits
    assert hits >= 2


def test_deleting_a_catalog_changes_the_team_answer(env: Env) -> None:
    shipped = _offers(env, "a_viewer")
    _upload(env, "a_editor")
    assert _offers(env, "a_viewer") != shipped
    cid = env.client.get("/api/v1/catalogs", headers=env.h("a_viewer")).json()[0]["id"]
    assert env.client.delete(f"/api/v1/catalogs/{cid}", headers=env.h("a_editor")).status_code == 200
    assert _offers(env, "a_viewer") == shipped


def test_regions_apply_the_team_catalog(env: Env) -> None:
    _upload(env, "a_editor")
    body = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "providers": ["onprem"]}
    r = env.client.post("/api/v1/regions", json=body, headers=env.h("a_viewer"))
    assert r.status_code == 200, r.text
    assert "dc-frankfurt" in r.text
    r = env.client.post("/api/v1/regions", json=body, headers=env.h("b_admin"))
    assert "dc-frankfurt" not in r.text
    assert r.status_code == 404, r.text  # onprem: an unknown provider in the shipped catalog
