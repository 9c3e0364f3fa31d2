"""Review: ``GET /api/v1/catalog/changes`` answered 200 with an empty list for a provider or instance
type the catalog does not know (a typo), which reads as "no price changed". It is now a 404 naming the
known values: the providers whose price APIs the refreshes record (aws, azure, gcp; case-insensitive, as
the CLI's ``--provider``) and the instance types of the catalog."""

from __future__ import annotations

import pytest

from .fixtures import Env


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("provider=bogus", "Known price-API providers: aws, azure, gcp"),
        ("provider=lambda", "refreshes of aws, azure and gcp"),
        ("provider=aws&instance_type=zzz", "Unknown aws instance type 'zzz'"),
        ("instance_type=p5.48xlarg", "Did you mean: p5.48xlarge"),
        ("provider=gcp&instance_type=p5.48xlarge", "Unknown gcp instance type"),
    ],
)
def test_unknown_names_are_refused(env: Env, query: str, says: str) -> None:
    r = env.client.get(f"/api/v1/catalog/changes?{query}", headers=env.h("a_viewer"))
    assert r.status_code == 404, (r.status_code, r.text[:300])
    err = r.json()["error"]
    assert err["type"] == "UnknownNameError" and says in err["message"], err["message"]


@pytest.mark.parametrize(
    "query",
    ["", "provider=aws", "provider=AWS", "provider=aws&instance_type=p5.48xlarge", "instance_type=g5.xlarge"],
)
def test_known_names_answer(env: Env, query: str) -> None:
    r = env.client.get(f"/api/v1/catalog/changes?{query}", headers=env.h("a_viewer"))
    assert r.status_code == 200, r.text[:300]
    assert r.json() == {"total": 0, "changes": []}  # no refresh has run in this database


def test_provider_class_plural_reads_right(env: Env) -> None:
    r = env.client.get("/api/v1/catalog/offers?provider_class=bogus&limit=1", headers=env.h("a_viewer"))
    assert r.status_code == 404
    assert "Known provider classes: aggregator" in r.json()["error"]["message"]
