"""The dashboard pages a new user needs (issue 24 item 6): overview (cost/month by team, findings, savings by
lever, trend), price history, per-team user catalogs (API and pages; another team's is 404 and never applied),
and the session guard as a FastAPI dependency."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from gpufleet.service.db import Job, make_engine, make_sessionmaker

from .fixtures import Env
from .test_dashboard import sign_in

ONPREM = Path("tests/data/user_catalogs/onprem.yaml")
WORKLOAD = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "providers": ["onprem"]}


def _upload(env: Env, who: str, name: str = "acme.yaml", text: str | None = None) -> Any:
    body = {"name": name, "text": ONPREM.read_text() if text is None else text}
    return env.client.post("/api/v1/catalogs", json=body, headers=env.h(who))


def test_user_catalogs_are_per_team_and_applied_to_its_recommend(any_env: Env) -> None:
    env = any_env  # SQLite and PostgreSQL
    c = env.client
    assert _upload(env, "a_viewer").status_code == 403
    r = _upload(env, "a_editor")
    assert r.status_code == 201, r.text
    got = r.json()
    assert (got["name"], got["offers"], got["price_overrides"]) == ("acme.yaml", 2, 2)
    cid = got["id"]
    assert _upload(env, "a_editor").status_code == 409  # same name
    assert [x["id"] for x in c.get("/api/v1/catalogs", headers=env.h("a_viewer")).json()] == [cid]
    assert "dgx-h100" in c.get(f"/api/v1/catalogs/{cid}", headers=env.h("a_viewer")).text
    # another team: not listed, not readable, not deletable, and never applied (404, not 403)
    assert c.get("/api/v1/catalogs", headers=env.h("b_admin")).json() == []
    assert c.get(f"/api/v1/catalogs/{cid}", headers=env.h("b_admin")).status_code == 404
    assert c.delete(f"/api/v1/catalogs/{cid}", headers=env.h("b_admin")).status_code == 404
    mine = c.post("/api/v1/recommend", json=WORKLOAD, headers=env.h("a_viewer"))
    assert mine.status_code == 200, mine.text
    ranked = mine.json()["result"]["ranked"]
    assert ranked and {row["provider"] for row in ranked} == {"onprem"}
    theirs = c.post("/api/v1/recommend", json=WORKLOAD, headers=env.h("b_admin"))
    assert theirs.status_code == 404 and "Unknown provider 'onprem'" in theirs.text
    assert c.delete(f"/api/v1/catalogs/{cid}", headers=env.h("a_viewer")).status_code == 403
    assert c.delete(f"/api/v1/catalogs/{cid}", headers=env.h("a_editor")).status_code == 200
    assert c.get(f"/api/v1/catalogs/{cid}", headers=env.h("a_editor")).status_code == 404
    assert c.post("/api/v1/recommend", json=WORKLOAD, headers=env.h("a_viewer")).status_code == 404


def test_a_bad_user_catalog_is_refused_naming_the_entry_not_the_server_folder(env: Env) -> None:
    text = ONPREM.read_text().replace("gpu: L40S", "gpu: L40Z")
    r = _upload(env, "a_editor", "../../etc/bad.yaml", text)
    assert r.status_code == 422, r.text
    msg = r.json()["error"]["message"]
    assert "bad.yaml" in msg and "L40Z" in msg and "gpufleet-catalogs-" not in msg and "/tmp" not in msg
    assert env.client.get("/api/v1/catalogs", headers=env.h("a_editor")).json() == []


def test_a_plan_job_carries_its_team_catalogs_and_the_plan_uses_them(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpufleet.service import job_kinds

    assert _upload(env, "a_editor").status_code == 201
    fleet = Path("examples/fleets/mig-inference.yaml").read_text()
    body = {"fleet": yaml.safe_load(fleet), "source": "mig.yaml"}
    a = env.client.post("/api/v1/plan", json=body, headers=env.h("a_editor"))
    # a catalog slipped into a job's parameters is replaced by the team's own (here: none)
    forged = {"name": "x.yaml", "text": ONPREM.read_text()}
    jb = {"kind": "plan", "params": body | {"catalogs": [forged]}}
    b = env.client.post("/api/v1/jobs", json=jb, headers=env.h("b_admin"))
    assert a.status_code == b.status_code == 202, (a.text, b.text)
    engine = make_engine(env.url)
    with make_sessionmaker(engine)() as db:
        pa = json.loads(db.get(Job, a.json()["id"]).params_json)  # type: ignore[union-attr]
        pb = json.loads(db.get(Job, b.json()["id"]).params_json)  # type: ignore[union-attr]
    engine.dispose()
    assert [x["name"] for x in pa["catalogs"]] == ["acme.yaml"] and "catalogs" not in pb

    seen: dict[str, Any] = {}

    def fake_plan(fleet: Any, *, offers: Any = None, **_: Any) -> Any:
        seen["providers"] = None if offers is None else set(offers.column("provider").tolist())
        raise RuntimeError("stop here")

    monkeypatch.setattr("gpufleet.fleet.plan.plan_fleet", fake_plan)
    with pytest.raises(RuntimeError):
        job_kinds.execute("plan", pa, lambda f, t: None)
    assert seen["providers"] is not None and "onprem" in seen["providers"]
    with pytest.raises(RuntimeError):
        job_kinds.execute("plan", pb, lambda f, t: None)
    from gpufleet.catalog.offers import load_offers

    # the shipped catalog (no refresh in the database), without the forged catalog
    assert seen["providers"] == set(load_offers().column("provider").tolist())


def test_dashboard_user_catalogs_page(env: Env) -> None:
    c = env.client
    csrf = sign_in(c, env.tokens["a_editor"])
    files = {"file": ("../negotiated.yaml", ONPREM.read_bytes(), "application/x-yaml")}
    r = c.post("/catalogs", data={"csrf": csrf}, files=files, follow_redirects=False)
    assert r.status_code == 303, r.text
    page = c.get("/catalogs").text
    assert "negotiated.yaml" in page and 'action="/catalogs"' in page
    cid = int(re.search(r'href="/catalogs/(\d+)"', page).group(1))  # type: ignore[union-attr]
    assert "dgx-h100" in c.get(f"/catalogs/{cid}").text
    # the catalog explorer shows the team's own machines (no history link) and its negotiated prices
    explorer = c.get("/catalog", params={"provider": "onprem"}).text
    assert "<td>dgx-h100</td>" in explorer and "user catalog negotiated.yaml" in explorer
    p5 = c.get("/catalog", params={"provider": "aws", "region": "us-east-1", "gpu": "H100"}).text
    assert "override negotiated.yaml" in p5 and "/catalog/history?provider=aws" in p5
    assert c.post(f"/catalogs/{cid}/delete", data={"csrf": "forged"}).status_code == 403

    other = TestClient(env.app)
    sign_in(other, env.tokens["b_admin"])
    assert "negotiated.yaml" not in other.get("/catalogs").text
    assert "negotiated.yaml" not in other.get("/catalog", params={"provider": "aws"}).text
    unknown = other.get("/catalog", params={"provider": "onprem"})
    assert unknown.status_code == 400 and "Unknown provider &#x27;onprem&#x27;" in unknown.text
    assert other.get(f"/catalogs/{cid}").status_code == 404
    bcsrf = sign_in(other, env.tokens["b_admin"])
    assert other.post(f"/catalogs/{cid}/delete", data={"csrf": bcsrf}).status_code == 404

    viewer = TestClient(env.app)
    vcsrf = sign_in(viewer, env.tokens["a_viewer"])
    vpage = viewer.get("/catalogs").text
    assert "negotiated.yaml" in vpage and 'type="file"' not in vpage and ">Delete<" not in vpage
    assert viewer.post(f"/catalogs/{cid}/delete", data={"csrf": vcsrf}).status_code == 403
    assert viewer.post("/catalogs", data={"csrf": vcsrf}, files=files).status_code == 403

    assert c.post(f"/catalogs/{cid}/delete", data={"csrf": csrf}, follow_redirects=False).status_code == 303
    assert "negotiated.yaml" not in c.get("/catalogs").text


def test_price_history_page_draws_refreshes_and_says_when_there_is_none(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gpufleet.catalog import history

    c = env.client
    sign_in(c, env.tokens["a_viewer"])
    q = {"provider": "aws", "instance": "p5.48xlarge", "region": "us-east-1"}
    monkeypatch.setattr(history, "_refresh_points", lambda provider: [])
    one = c.get("/catalog/history", params=q)
    assert one.status_code == 200 and "No history to draw yet" in one.text and "<polyline" not in one.text
    assert "shipped" in one.text

    def refreshes(provider: str) -> list[history.PricePoint]:
        from datetime import UTC, datetime, timedelta

        out = []
        for days_ago, od, spot in ((20, 55.0, 20.0), (10, 50.0, 18.0), (1, 45.0, 22.0)):
            at = (datetime.now(UTC) - timedelta(days=days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
            for kind, price in (("on_demand", od), ("spot", spot)):
                point = history.PricePoint(
                    captured_at=at,
                    provider="aws",
                    region="us-east-1",
                    zone=None,
                    instance_type="p5.48xlarge",
                    price_kind=kind,  # type: ignore[arg-type]
                    price_usd_per_hour=price,
                    source="refresh",
                )
                out.append(point)
        return out

    monkeypatch.setattr(history, "_refresh_points", refreshes)
    page = c.get("/catalog/history", params=q).text
    assert page.count('<polyline class="line"') == 2
    assert "<title>on-demand</title>" in page and "<title>spot</title>" in page
    assert "USD/hour (machine)" in page and "over the last 90 days" in page
    assert page.count("<td>refresh</td>") == 6
    bad = c.get("/catalog/history", params={**q, "instance": "p5.48xlarg"})
    assert bad.status_code == 404 and "p5.48xlarge" in bad.text
    assert c.get("/catalog/history", params={**q, "days": "x"}).status_code == 400
    # the catalog's rows link to their history
    assert "/catalog/history?provider=" in c.get("/catalog", params={"gpu": "H100"}).text


def _plan_doc(cost: float, levers: list[tuple[str, float | None]]) -> str:
    return json.dumps(
        {
            "kind": "fleet_plan",
            "result": {
                "status": "optimal",
                "message": f"OPTIMAL: ${cost:,.2f}/month",
                "cost_usd_per_month": cost,
                "cost_by_team_usd_per_month": [["devex", cost * 0.75], ["product", cost * 0.25]],
                "levers": [
                    {
                        "name": n,
                        "savings_usd_per_month": v,
                        "note": "" if v is not None else "not evaluated: no data",
                    }
                    for n, v in levers
                ],
            },
        }
    )


def _add_plan(env: Env, team: str, cost: float, finished_unix_s: float, source: str = "f.yaml") -> None:
    from sqlalchemy import select

    from gpufleet.service.db import Team

    engine = make_engine(env.url)
    with make_sessionmaker(engine)() as db:
        tid = db.scalar(select(Team.id).where(Team.name == team))
        db.add(
            Job(
                team_id=tid, kind="plan", status="succeeded", params_json=json.dumps({"source": source}),
                params_sha256=str(finished_unix_s), time_limit_s=60, finished_unix_s=finished_unix_s,
                result_json=_plan_doc(cost, [("right-size", 300.0), ("spot", 0.0), ("autoscaling", None)]),
            )
        )  # fmt: skip
        db.commit()
    engine.dispose()


def _add_team(env: Env, name: str) -> None:
    from gpufleet.service.auth import get_or_create_team

    engine = make_engine(env.url)
    with make_sessionmaker(engine)() as db:
        get_or_create_team(db, name)
        db.commit()
    engine.dispose()


def test_overview_cost_by_team_savings_by_lever_and_trend(env: Env) -> None:
    c = env.client
    sign_in(c, env.tokens["a_viewer"])
    empty = c.get("/").text
    assert "No succeeded plan yet" in empty and "No trend yet" in empty
    _add_plan(env, "a", 5000.0, 1_600_000_000.0, source="other.yaml")  # another fleet: not on f.yaml's line
    _add_plan(env, "a", 1200.0, 1_700_000_000.0)
    _add_plan(env, "a", 1000.0, 1_700_000_000.0 + 7 * 86400)
    _add_plan(env, "b", 777.0, 1_700_000_000.0)
    page = c.get("/").text
    assert "Cost per month by team" in page and "cost [USD/month]" in page
    assert "1,000.00" in page and "777.00" not in page  # a viewer sees its own team only
    assert "Latest plan of your team" in page and "OPTIMAL: $1,000.00/month" in page
    assert "<title>right-size: 300</title>" in page and "<title>spot: 0</title>" in page
    assert "autoscaling: not evaluated: no data" in page
    assert "<title>devex: 750</title>" in page  # the fleet's own teams
    assert page.count('<polyline class="line"') == 1 and "days before the latest plan" in page
    assert "(its last 3 plans)" in page and "<title>f.yaml [USD/month]</title>" in page
    assert "other.yaml" not in page.split("<h2>Trend</h2>")[1].split("</svg>")[0]
    assert "no telemetry yet" in page  # findings: none ingested

    admin = TestClient(env.app)
    sign_in(admin, env.tokens["a_admin"])
    apage = admin.get("/").text
    assert "1,000.00" in apage and "777.00" not in apage  # an admin of team a: still only team a's figures
    _add_team(env, "c")
    assert "<td>c</td>" not in admin.get("/").text


def test_pages_redirect_to_sign_in_and_the_shared_helpers_keep_their_signatures(env: Env) -> None:
    from gpufleet.service import dashboard

    c = env.client
    for path in ("/", "/catalog/history", "/catalogs", "/findings", "/findings/export.csv", "/catalogs/1"):
        r = c.get(path, follow_redirects=False)
        assert (r.status_code, r.headers.get("location")) == (303, "/login"), path
    r = c.post("/catalogs", data={"csrf": "x"}, follow_redirects=False)
    assert (r.status_code, r.headers.get("location")) == (303, "/login")
    assert list(inspect.signature(dashboard._page).parameters) == [
        "request", "title", "body", "who", "csrf", "status", "head", "refresh_s",
    ]  # fmt: skip
    assert list(inspect.signature(dashboard._signed_in).parameters) == ["request"]
    assert list(inspect.signature(dashboard._check_csrf).parameters) == ["expected", "form"]


def test_trend_axis_unit_follows_the_span() -> None:
    from gpufleet.service.dashboard_overview import _time_unit

    assert _time_unit(3 * 86400.0) == ("days", 86400.0)
    assert _time_unit(3 * 3600.0) == ("hours", 3600.0)
    assert _time_unit(600.0) == ("minutes", 60.0)


def test_history_lines_merge_zones_with_the_same_prices() -> None:
    from gpufleet.catalog.history import PricePoint
    from gpufleet.service.dashboard_catalog import _series

    def pt(at: str, zone: str, kind: str, price: float) -> PricePoint:
        return PricePoint(
            captured_at=at,
            provider="aws",
            region="us-east-1",
            zone=zone,
            instance_type="p5.48xlarge",
            price_kind=kind,  # type: ignore[arg-type]
            price_usd_per_hour=price,
            source="refresh",
        )

    t1, t2 = "2026-11-01T00:00:00Z", "2026-11-11T00:00:00Z"
    now = 1_795_824_000.0  # 2026-11-28T00:00:00Z: x in days before it
    pts = [pt(t, z, "on_demand", 55.0) for t in (t1, t2) for z in ("az1", "az2", "az3", "az4")]
    pts += [pt(t1, "az1", "spot", 20.0), pt(t2, "az1", "spot", 21.0), pt(t1, "az2", "spot", 19.0)]
    pts += [pt("2026-08/2026-11", "az1", "on_demand", 50.0)]  # the shipped period: not on the time axis
    lines = _series(pts, now)
    assert set(lines) == {"on-demand (4 zones)", "spot (az1)", "spot (az2)"}
    assert [y for _, y in lines["spot (az1)"]] == [20.0, 21.0]
    (x1, _), (x2, _) = lines["on-demand (4 zones)"]
    assert x2 - x1 == pytest.approx(10.0) and x2 == pytest.approx(-17.0)  # days before now
