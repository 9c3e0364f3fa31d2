"""The JSON API returns what the library computes, as the CLI prints it (the shipped JSON Schemas), and turns
the CLI's error contract into HTTP: 4xx with the one-paragraph message, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from gpufleet.catalog.listing import offer_rows, query_offers
from gpufleet.catalog.offers import load_offers
from gpufleet.report.json_schemas import load_schema

from .fixtures import Env


def _valid(kind: str, doc: dict[str, object]) -> None:
    jsonschema.validate(doc, load_schema(kind))


def test_core_routes_on_both_databases(any_env: Env) -> None:
    c, h = any_env.client, any_env.h("a_viewer")
    assert c.get("/api/v1/me", headers=h).json() == {"team": "a", "token_name": "a_viewer", "role": "viewer"}
    r = c.get("/api/v1/catalog/offers", params={"gpu": "H100", "limit": 3}, headers=h)
    assert r.status_code == 200
    _valid("offers", r.json())
    assert c.get("/readyz").json()["status"] == "ready"


def test_offers_are_the_library_query_paged_and_sorted(env: Env) -> None:
    c, h = env.client, env.h("a_viewer")
    expected = offer_rows(query_offers(load_offers(), gpus=("A100",), providers=("aws", "gcp"), sort="price"))
    got = []
    for offset in range(0, len(expected) + 7, 7):
        r = c.get(
            "/api/v1/catalog/offers",
            headers=h,
            params={"gpu": "A100", "provider": ["aws", "gcp"], "sort": "price", "limit": 7, "offset": offset},
        )
        assert r.status_code == 200, r.text
        doc = r.json()
        _valid("offers", doc)
        assert doc["page"]["total"] == len(expected)
        got += doc["offers"]
    assert json.loads(json.dumps(expected)) == got
    desc = c.get(
        "/api/v1/catalog/offers",
        headers=h,
        params={"gpu": "A100", "provider": "aws,gcp", "sort": "price", "order": "desc", "limit": 5},
    ).json()
    assert desc["offers"] == list(reversed(got))[:5]


def test_offer_filters_reach_the_library_checks(env: Env) -> None:
    c, h = env.client, env.h("a_viewer")
    r = c.get("/api/v1/catalog/offers", params={"provider": "awz"}, headers=h)
    assert r.status_code == 404
    err = r.json()["error"]
    assert err["type"] == "UnknownNameError" and "aws" in err["message"]
    for bad in ({"sort": "cheapest"}, {"order": "sideways"}):
        r = c.get("/api/v1/catalog/offers", params=bad, headers=h)
        assert (r.status_code == 400 and "Allowed" in r.text) or "allowed" in r.text
    r = c.get("/api/v1/catalog/offers", params={"limit": 0}, headers=h)
    assert r.status_code == 422 and "limit" in r.json()["error"]["message"]


def test_gpus_models_scenarios(env: Env) -> None:
    c, h = env.client, env.h("a_viewer")
    _valid("gpus", c.get("/api/v1/catalog/gpus", headers=h).json())
    models = c.get("/api/v1/catalog/models", headers=h).json()["models"]
    assert any(m["id"] == "llama-3.1-8b" for m in models)
    _valid("scenario_list", c.get("/api/v1/scenarios", headers=h).json())
    scen = c.post("/api/v1/scenarios/inference_small_p5/run", headers=h)
    assert scen.status_code == 200
    _valid("scenario", scen.json())
    assert c.post("/api/v1/scenarios/no_such/run", headers=h).status_code == 404


def test_recommend_is_the_library_result(env: Env) -> None:
    from gpufleet.recommend.api import recommend
    from gpufleet.report import render_text

    body = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "ttft_p95_ms": 500, "tpot_p95_ms": 50}
    r = env.client.post("/api/v1/recommend", json=body, headers=env.h("a_viewer"))
    assert r.status_code == 200, r.text
    _valid("recommendation", r.json())
    doc = r.json()
    # the catalog it was computed from (here the shipped one: no refresh in the database), then the library's
    assert doc.pop("catalog") == {
        "version": "shipped",
        "refreshed": [],
        "other_providers": "shipped snapshot (its captured_at per offer)",
    }
    assert r.headers["X-Gpufleet-Catalog"] == "shipped"
    assert doc == json.loads(render_text(recommend(body), "json"))


def test_migrate_regions_estimates(env: Env) -> None:
    c, h = env.client, env.h("a_viewer")
    body = {
        "model": "llama-3.1-8b",
        "target_requests_per_s": 2,
        "current": {"provider": "aws", "instance_type": "p5.48xlarge", "count": 1},
    }
    r = c.post("/api/v1/migrate", json=body, headers=h)
    assert r.status_code == 200, r.text
    _valid("migration", r.json())
    r = c.post("/api/v1/regions", json={"model": "llama-3.1-8b", "target_requests_per_s": 2}, headers=h)
    assert r.status_code == 200 and r.json()["kind"] == "region_analysis"
    for path, kind in (("memory", "estimate_memory"), ("infer", "estimate_inference")):
        r = c.post(f"/api/v1/estimate/{path}", json={"model": "llama-3.1-8b", "gpu": "H100-SXM"}, headers=h)
        assert r.status_code == 200, r.text
        _valid(kind, r.json())
    r = c.post(
        "/api/v1/estimate/train",
        headers=h,
        json={"model": "llama-3.1-8b", "gpu": "H100-SXM", "gpu_count": 8, "dp": 8, "batch": 256},
    )
    assert r.status_code == 200, r.text
    _valid("estimate_training", r.json())


def test_estimate_fields_a_route_would_ignore_are_refused(env: Env) -> None:
    c, h = env.client, env.h("a_viewer")
    base = {"model": "llama-3.1-8b", "gpu": "H100-SXM"}
    for path, extra in (
        ("infer", {"seq_len_tokens": 8192}),
        ("memory", {"output_len_tokens": 99}),
        ("train", {"task": "inference"}),
    ):
        r = c.post(f"/api/v1/estimate/{path}", json=base | extra, headers=h)
        assert r.status_code == 422, (path, r.text)
        assert next(iter(extra)) in r.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"model": "llama-3.1-8bx"}, 404, "Did you mean"),
        ({"model": "llama-3.1-8b", "input_len_tokens": -1}, 422, "input_len_tokens"),
        ({"model": "llama-3.1-8b", "bogus_field": 1}, 422, "bogus_field"),
        ({"model": "llama-3.1-8b", "precision": "fp7"}, 422, "fp7"),
        ([1, 2], 422, "body"),
    ],
)
def test_user_errors_are_one_paragraph_4xx(env: Env, body: object, status: int, words: str) -> None:
    r = env.client.post("/api/v1/recommend", json=body, headers=env.h("a_viewer"))
    assert r.status_code == status, r.text
    msg = r.json()["error"]["message"]
    assert words in msg and "\n" not in msg and "Traceback" not in msg


def test_malformed_json_is_422(env: Env) -> None:
    r = env.client.post(
        "/api/v1/recommend",
        content=b"{not json",
        headers=env.h("a_viewer") | {"content-type": "application/json"},
    )
    assert r.status_code == 422 and "Traceback" not in r.text


def test_an_internal_error_is_500_without_internals(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    import gpufleet.catalog.listing as listing

    def broken() -> None:
        raise RuntimeError("secret internal detail /etc/passwd")

    monkeypatch.setattr(listing, "spec_rows", broken)
    r = env.client.get("/api/v1/catalog/gpus", headers=env.h("a_viewer"))
    assert r.status_code == 500
    assert r.json()["error"]["type"] == "InternalError"
    assert "secret" not in r.text and "Traceback" not in r.text


def test_unknown_route_and_method(env: Env) -> None:
    r = env.client.get("/api/v1/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["message"].startswith("No such route")
    assert env.client.delete("/api/v1/catalog/gpus", headers=env.h("a_viewer")).status_code == 405


def test_openapi_publishes_the_shipped_schemas(env: Env) -> None:
    doc = env.client.get("/openapi.json").json()
    comps = doc["components"]["schemas"]
    assert "gpufleet_recommendation" in comps and "WorkloadSpec" in comps
    ref = doc["paths"]["/api/v1/recommend"]["post"]["responses"]["200"]["content"]["application/json"][
        "schema"
    ]
    assert ref == {"$ref": "#/components/schemas/gpufleet_recommendation"}
    text = json.dumps(doc)
    assert '"#/$defs/' not in text  # every $ref of the embedded schemas was moved
    for target in {m for m in text.split('"$ref": "')[1:]}:
        name = target.split('"', 1)[0].removeprefix("#/components/schemas/")
        assert name in comps, name


def test_catalog_history_is_the_cli_json(env: Env, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GET /catalog/history returns what `gpufleet catalog history --format json` prints (issue 24 item 5)."""
    from typer.testing import CliRunner

    from gpufleet.cli.app import app

    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "data"))
    q = {"provider": "aws", "instance": "p5.48xlarge", "region": "us-east-1", "days": 30, "kind": "spot"}
    r = env.client.get("/api/v1/catalog/history", params=q, headers=env.h("a_viewer"))
    assert r.status_code == 200, r.text
    args = ["catalog", "history", *(x for k, v in q.items() for x in (f"--{k}", str(v))), "--format", "json"]
    cli = CliRunner().invoke(app, args)
    assert cli.exit_code == 0 and r.json() == json.loads(cli.stdout)
    assert {p["price_kind"] for p in r.json()["points"]} == {"spot"}
    bad = env.client.get(
        "/api/v1/catalog/history", params={**q, "instance": "p5.48xlarg"}, headers=env.h("a_viewer")
    )
    assert bad.status_code == 404 and "p5.48xlarge" in bad.json()["error"]["message"]
    none = env.client.get(
        "/api/v1/catalog/history", params={**q, "region": "eu-west-3"}, headers=env.h("a_viewer")
    )
    assert none.status_code == 200 and none.json()["points"] == []
    assert env.client.get("/api/v1/catalog/history", params=q).status_code == 401
