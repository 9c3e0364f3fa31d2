"""Teams, roles and tokens: a token is shown once and stored hashed; a team sees only its own objects
(another team's ids answer 404, like missing ones); roles gate actions; revocation is immediate."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import sqlalchemy as sa
import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app as cli_app
from gpufleet.service.auth import bootstrap_admin
from gpufleet.service.db import make_engine, make_sessionmaker

from .fixtures import Env

FLEET = "examples/fleets/assessment-platform.yaml"


def _fleet() -> dict[str, object]:
    with open(FLEET) as f:
        doc: dict[str, object] = yaml.safe_load(f)
    return doc


def test_no_token_bad_token_and_scheme(env: Env) -> None:
    c = env.client
    for headers in (
        {},
        {"Authorization": "Bearer nope"},
        {"Authorization": f"Basic {env.tokens['a_admin']}"},
    ):
        r = c.get("/api/v1/me", headers=headers)
        assert r.status_code == 401, headers
        assert "token" in r.json()["error"]["message"]


def test_tokens_are_stored_hashed_only(env: Env) -> None:
    engine = make_engine(env.url)
    with engine.connect() as conn:
        stored = set(conn.execute(sa.text("SELECT secret_sha256 FROM tokens")).scalars())
        dump = " ".join(str(row) for row in conn.execute(sa.text("SELECT * FROM tokens")).all())
    engine.dispose()
    for secret in env.tokens.values():
        assert hashlib.sha256(secret.encode()).hexdigest() in stored
        assert secret not in dump


def test_revoked_token_is_refused_at_once(env: Env) -> None:
    c = env.client
    r = c.post("/api/v1/tokens", json={"name": "temp", "role": "viewer"}, headers=env.h("a_admin"))
    assert r.status_code == 201
    new = r.json()
    h = {"Authorization": f"Bearer {new['token']}"}
    assert c.get("/api/v1/me", headers=h).status_code == 200
    listed = c.get("/api/v1/tokens", headers=env.h("a_admin")).json()
    assert all("token" not in t for t in listed) and new["id"] in {t["id"] for t in listed}
    assert c.delete(f"/api/v1/tokens/{new['id']}", headers=env.h("a_admin")).status_code == 200
    assert c.get("/api/v1/me", headers=h).status_code == 401


def test_roles(env: Env) -> None:
    c = env.client
    body = {"fleet": _fleet()}
    r = c.post("/api/v1/plan", json=body, headers=env.h("a_viewer"))
    assert r.status_code == 403 and "editor" in r.json()["error"]["message"]
    assert c.post("/api/v1/plan", json=body, headers=env.h("a_editor")).status_code == 202
    assert c.get("/api/v1/tokens", headers=env.h("a_editor")).status_code == 403
    r = c.post("/api/v1/tokens", json={"name": "x", "role": "admin"}, headers=env.h("a_editor"))
    assert r.status_code == 403


def test_a_team_never_sees_another_teams_objects(env: Env) -> None:
    c = env.client
    job = c.post("/api/v1/plan", json={"fleet": _fleet()}, headers=env.h("a_editor")).json()
    fleet = c.post(
        "/api/v1/fleets", json={"name": "f.yaml", "text": Path(FLEET).read_text()}, headers=env.h("a_editor")
    )
    assert fleet.status_code == 201, fleet.text
    fid = fleet.json()["id"]
    b = env.h("b_admin")
    for method, path in (
        ("get", f"/api/v1/jobs/{job['id']}"),
        ("get", f"/api/v1/jobs/{job['id']}/result"),
        ("get", f"/api/v1/jobs/{job['id']}/report"),
        ("post", f"/api/v1/jobs/{job['id']}/cancel"),
        ("post", f"/api/v1/fleets/{fid}/plan"),
        ("delete", "/api/v1/tokens/1"),  # a_admin's token
    ):
        r = c.request(method, path, headers=b)
        assert r.status_code == 404, (path, r.text)
    assert c.get("/api/v1/jobs", headers=b).json()["total"] == 0
    assert c.get("/api/v1/fleets", headers=b).json() == []
    assert {t["team"] for t in c.get("/api/v1/tokens", headers=b).json()} == {"b"}
    # the owner does see them
    assert c.get(f"/api/v1/jobs/{job['id']}", headers=env.h("a_viewer")).status_code == 200
    assert c.get("/api/v1/jobs", headers=env.h("a_viewer")).json()["total"] == 1


def test_cli_token_create_list_revoke(tmp_path: Path) -> None:
    runner = CliRunner()
    db = f"{tmp_path}/cli.sqlite3"
    r = runner.invoke(cli_app, ["serve", "token", "create", "--team", "ml", "--role", "editor", "--db", db])
    assert r.exit_code == 0, r.output
    secret = r.output.strip().rsplit(" ", 1)[-1]
    assert secret.startswith("gpf_") and len(secret) >= 40
    listed = runner.invoke(cli_app, ["serve", "token", "list", "--db", db])
    assert "ml\teditor" in listed.output and secret not in listed.output and "live" in listed.output
    assert runner.invoke(cli_app, ["serve", "token", "revoke", "1", "--db", db]).exit_code == 0
    assert "revoked" in runner.invoke(cli_app, ["serve", "token", "list", "--db", db]).output
    bad = runner.invoke(cli_app, ["serve", "token", "create", "--role", "owner", "--db", db])
    assert bad.exit_code == 2 and "Allowed: viewer, editor, admin" in bad.output
    missing = runner.invoke(cli_app, ["serve", "token", "revoke", "99", "--db", db])
    assert missing.exit_code == 2


def test_bootstrap_admin_only_on_an_empty_database(sqlite_url: str) -> None:
    from gpufleet.service.db import upgrade

    engine = make_engine(sqlite_url)
    upgrade(engine)
    with make_sessionmaker(engine)() as db:
        first = bootstrap_admin(db)
        assert first is not None and first.startswith("gpf_")
        assert bootstrap_admin(db) is None
    engine.dispose()


def test_serve_without_the_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "fastapi" else real(name, *a)
    )
    r = CliRunner().invoke(cli_app, ["serve", "token", "list"])
    assert r.exit_code == 2
    assert "pip install 'gpufleet[service]'" in r.output
