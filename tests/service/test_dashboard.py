"""The dashboard in process: sign-in with a token -> session cookie (HttpOnly, SameSite=Strict), CSRF on every
form, a viewer refused editor actions, uploads checked (size, file-name tricks), filters safe."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from .fixtures import Env, make_env

FLEET = Path("examples/fleets/assessment-platform.yaml")


def _csrf(html: str) -> str:
    m = re.search(r'name="csrf" value="([^"]+)"', html)
    assert m, html[:500]
    return m.group(1)


def sign_in(c: TestClient, token: str) -> str:
    """Sign in; the CSRF token of the session's forms."""
    form = c.get("/login")
    r = c.post("/login", data={"token": token, "csrf": _csrf(form.text)}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return _csrf(c.get("/").text)


def test_sign_in_sets_a_strict_httponly_session(env: Env) -> None:
    c = env.client
    assert c.get("/", follow_redirects=False).headers["location"] == "/login"
    form = c.get("/login")
    r = c.post(
        "/login", data={"token": env.tokens["a_viewer"], "csrf": _csrf(form.text)}, follow_redirects=False
    )
    cookie = r.headers["set-cookie"]
    assert "gpufleet_session=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    page = c.get("/")
    assert page.status_code == 200 and "Team <strong>a</strong>" in page.text
    assert env.tokens["a_viewer"] not in page.text


def test_sign_in_refuses_a_bad_token_and_a_missing_csrf(env: Env) -> None:
    c = env.client
    form = c.get("/login")
    bad = c.post("/login", data={"token": "gpf_nope", "csrf": _csrf(form.text)}, follow_redirects=False)
    assert bad.status_code == 401 and "unknown or revoked" in bad.text
    fresh = TestClient(env.app)
    no_csrf = fresh.post("/login", data={"token": env.tokens["a_viewer"]}, follow_redirects=False)
    assert no_csrf.status_code == 401 and "CSRF" in no_csrf.text


def test_forms_need_the_session_csrf(env: Env) -> None:
    c = env.client
    sign_in(c, env.tokens["a_editor"])
    r = c.post("/recommend", data={"model": "llama-3.1-8b", "csrf": "forged"})
    assert r.status_code == 403 and "CSRF" in r.text
    files = {"fleet": ("fleet.yaml", FLEET.read_bytes(), "application/x-yaml")}
    assert c.post("/plan", data={"csrf": "forged"}, files=files).status_code == 403
    assert c.get("/api/v1/jobs", headers=env.h("a_viewer")).json()["total"] == 0


def test_a_viewer_cannot_reach_editor_actions(env: Env) -> None:
    c = env.client
    csrf = sign_in(c, env.tokens["a_viewer"])
    assert 'href="/plan"' not in c.get("/").text
    assert c.get("/plan").status_code == 403
    files = {"fleet": ("fleet.yaml", FLEET.read_bytes(), "application/x-yaml")}
    r = c.post("/plan", data={"csrf": csrf}, files=files)
    assert r.status_code == 403 and "editor" in r.text


def test_plan_upload_runs_a_job_and_file_name_tricks_are_ignored(env: Env) -> None:
    c = env.client
    csrf = sign_in(c, env.tokens["a_editor"])
    files = {"fleet": ("../../etc/passwd/fleet.yaml", FLEET.read_bytes(), "application/x-yaml")}
    r = c.post("/plan", data={"csrf": csrf, "solver_time_limit_s": "30"}, files=files, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/jobs/")
    job = c.get(r.headers["location"])
    assert job.status_code == 200 and "queued" in job.text and 'http-equiv="refresh"' in job.text
    api = c.get("/api/v1/jobs", headers=env.h("a_viewer")).json()["jobs"][0]
    assert api["kind"] == "plan"
    # nothing is written under the uploaded name: only its last part names the fleet in messages
    assert not Path("/etc/passwd/fleet.yaml").exists()


def test_bad_uploads_are_4xx_with_the_library_message(env: Env) -> None:
    c = env.client
    csrf = sign_in(c, env.tokens["a_editor"])
    for content, words in (
        (b"workloads: [1, 2", "not valid YAML"),
        (b"\xff\xfe\x00", "UTF-8"),
        (b"workloads: {}", "workload"),
    ):
        r = c.post("/plan", data={"csrf": csrf}, files={"fleet": ("f.yaml", content, "text/plain")})
        assert 400 <= r.status_code < 500 and words in r.text, r.text[-800:]


def test_oversized_upload_is_413(sqlite_url: str) -> None:
    for env in make_env(sqlite_url, max_body_bytes=50_000):
        csrf = sign_in(env.client, env.tokens["a_editor"])
        big = b"# padding\n" * 10_000
        r = env.client.post("/plan", data={"csrf": csrf}, files={"fleet": ("f.yaml", big, "text/plain")})
        assert r.status_code == 413


def test_recommend_form_shows_the_report(env: Env) -> None:
    c = env.client
    csrf = sign_in(c, env.tokens["a_viewer"])
    r = c.post(
        "/recommend",
        data={
            "csrf": csrf,
            "model": "llama-3.1-8b",
            "target_requests_per_s": "2",
            "ttft_p95_ms": "500",
            "tpot_p95_ms": "50",
            "pricing": "on_demand",
        },
    )
    assert r.status_code == 200 and "<svg" in r.text and "Recommendation" in r.text
    bad = c.post("/recommend", data={"csrf": csrf, "model": "llama-3.1-8bx"})
    assert bad.status_code == 404 and "Did you mean" in bad.text


def test_catalog_page_filters_and_pages(env: Env) -> None:
    c = env.client
    sign_in(c, env.tokens["a_viewer"])
    r = c.get("/catalog", params={"gpu": "H100", "provider": "", "region": "", "max_price_usd_per_hour": ""})
    assert r.status_code == 200 and "offers match" in r.text, r.text[-500:]
    assert 'href="/catalog?gpu=H100' in r.text and "page=1" in r.text  # a next page
    bad = c.get("/catalog", params={"max_price_usd_per_hour": "cheap"})
    assert bad.status_code == 400 and "not a number" in bad.text


def test_sql_metacharacters_in_catalog_filters(env: Env) -> None:
    c = env.client
    sign_in(c, env.tokens["a_viewer"])
    for value in ("' OR 1=1 --", '"; DROP TABLE tokens; --', "%' UNION SELECT secret_sha256 FROM tokens --"):
        for field in ("gpu", "provider", "region"):
            r = c.get("/catalog", params={field: value})
            assert r.status_code < 500, (field, value)
            api = c.get("/api/v1/catalog/offers", params={field: value}, headers=env.h("a_viewer"))
            assert api.status_code < 500 and "secret_sha256" not in api.text.replace(value, "")
    assert c.get("/api/v1/me", headers=env.h("a_viewer")).status_code == 200  # tokens table intact


def test_sign_out_and_revocation_end_the_session(env: Env) -> None:
    c = env.client
    csrf = sign_in(c, env.tokens["a_viewer"])
    assert c.get("/jobs").status_code == 200
    c.post("/logout", data={"csrf": csrf})
    assert c.get("/jobs", follow_redirects=False).status_code == 303
    sign_in(c, env.tokens["a_editor"])
    ids = {t["name"]: t["id"] for t in c.get("/api/v1/tokens", headers=env.h("a_admin")).json()}
    c.delete(f"/api/v1/tokens/{ids['a_editor']}", headers=env.h("a_admin"))
    assert c.get("/jobs", follow_redirects=False).headers["location"] == "/login"
