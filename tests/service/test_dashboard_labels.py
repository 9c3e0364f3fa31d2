"""The dashboard read as the platform engineer who must act on it: every figure says its unit and what it
is per, empty states say what to do next (for the role that can do it), errors name the field and how to fix
it."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from .fixtures import Env
from .test_dashboard import sign_in


def _main(html: str) -> str:
    return html.split('<main id="main">', 1)[1]


def test_empty_states_say_what_to_do_next_for_each_role(env: Env) -> None:
    editor = env.client
    sign_in(editor, env.tokens["a_editor"])
    overview = _main(editor.get("/").text)
    assert (
        "No succeeded plan yet for team a: cost per month shows after one; upload a fleet file on the "
        '<a href="/plan">Plan</a> page.'
    ) in overview
    assert 'on the <a href="/telemetry">Telemetry</a> page' in overview and "/api/v1" not in overview
    viewer = TestClient(env.app)
    sign_in(viewer, env.tokens["a_viewer"])
    overview = _main(viewer.get("/").text)
    assert "ask an editor of your team to plan a fleet file" in overview and 'href="/plan"' not in overview
    assert "Ask an editor of your team to upload a telemetry file" in overview
    assert "No webhooks yet: an admin of team a adds them." in viewer.get("/notifications").text
    assert "No schedules yet: an editor of team a adds them." in viewer.get("/schedules").text
    assert "No schedules yet: add one below" in editor.get("/schedules").text
    admin = TestClient(env.app)
    sign_in(admin, env.tokens["a_admin"])
    assert "No webhooks yet: add one below" in admin.get("/notifications").text
    none = _main(editor.get("/catalog", params={"gpu": "H100", "max_price_usd_per_hour": "0.01"}).text)
    assert "No offer matches these filters. Widen them" in none and "<table>" not in none


def test_catalog_rows_say_zone_gpus_and_price_per_gpu(env: Env) -> None:
    from gpufleet.catalog.listing import query_offers
    from gpufleet.catalog.offers import load_offers

    c = env.client
    sign_in(c, env.tokens["a_viewer"])
    page = _main(c.get("/catalog", params={"gpu": "H100", "provider": "aws", "region": "us-east-1"}).text)
    want = query_offers(load_offers(), gpus=("H100",), providers=("aws",), regions=("us-east-1",))
    assert f"{len(want):,} offers match (each zone's price is its own row)" in page
    assert "on-demand price [USD/h, machine]" in page and "on-demand price [USD/h, per GPU]" in page
    rows = re.findall(r"<tr><td>aws</td>(.*?)</tr>", page)
    assert len(rows) == len(want)
    for o, row in zip(want.records(), rows, strict=True):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", "<td>" + row.split("<td>", 1)[1])
        region, zone, _, gpu, gpus, machine, per_gpu = cells[:7]
        assert (region, zone, gpu) == (o.region, o.zone or "-", o.gpu)
        assert gpus == f"{o.gpu_count:g}" and "." not in gpus  # 8, not 8.0
        assert machine == f"{o.price_on_demand_usd_per_hour:,.2f}"
        assert per_gpu == f"{o.price_on_demand_usd_per_hour / o.gpu_count:,.2f}"
    spot = _main(c.get("/catalog", params={"gpu": "H100", "provider": "aws", "spot": "1"}).text)
    assert "spot price [USD/h, per GPU]" in spot


def test_a_bad_recommend_number_names_its_field(env: Env) -> None:
    c = env.client
    csrf = sign_in(c, env.tokens["a_viewer"])
    r = c.post("/recommend", data={"csrf": csrf, "model": "llama-3.1-8b", "input_len_tokens": "5k"})
    assert r.status_code == 400
    assert (
        "Input length [tokens]: &#x27;5k&#x27; is not a whole number. Give a plain number, e.g. 512" in r.text
    )
    assert 'value="5k"' in r.text  # the form comes back as sent


def test_a_job_page_says_when_and_its_result_downloads_with_the_session(env: Env) -> None:
    """The job page gives queued / started / ended times and the run time; the result link works with the
    dashboard session (it linked to the API, which answered 401 to a browser)."""
    import json

    from gpufleet.service.db import Job, make_engine, make_sessionmaker

    engine = make_engine(env.url)
    with make_sessionmaker(engine)() as db:
        doc = {"kind": "telemetry_ingest", "report": {"rows_stored": 3}}
        for status, result in (("succeeded", json.dumps(doc)), ("running", None)):
            db.add(
                Job(
                    team_id=1, kind="telemetry_pull", status=status, params_json="{}", params_sha256=status,
                    time_limit_s=60, created_unix_s=1_790_000_000.0, started_unix_s=1_790_000_001.0,
                    finished_unix_s=1_790_000_013.5 if result else None, result_json=result,
                )
            )  # fmt: skip
        db.commit()
    engine.dispose()
    c = env.client
    sign_in(c, env.tokens["a_viewer"])
    page = _main(c.get("/jobs/1").text)
    assert (
        "Queued 2026-09-21 14:13:20 UTC; started 2026-09-21 14:13:21 UTC; ended 2026-09-21 14:13:33 UTC"
        in page
    )
    assert (
        "(ran 12.5 s)." in page
        and 'href="/jobs/1/result.json"' in page
        and '/api/v1/jobs/1/result"' not in page
    )
    got = c.get("/jobs/1/result.json")
    assert got.status_code == 200 and got.json() == doc
    assert got.headers["content-disposition"] == 'attachment; filename="job-1-telemetry_pull.json"'
    running = c.get("/jobs/2")
    assert "reloads every 2 s until the job ends" in running.text and "result.json" not in running.text
    early = c.get("/jobs/2/result.json")
    assert early.status_code == 409 and "Job #2 is running: a result exists once it succeeded" in early.text
    other = TestClient(env.app)
    sign_in(other, env.tokens["b_admin"])
    assert other.get("/jobs/1/result.json").status_code == 404  # another team's job: as missing


def test_an_oversized_dashboard_upload_is_a_page_saying_so(sqlite_url: str) -> None:
    """A too-large upload from a form is a page saying the limit and what to do, with a way back (a browser
    showed the API's JSON); the API still answers JSON."""
    from .fixtures import make_env

    for env in make_env(sqlite_url, max_body_bytes=50_000):
        csrf = sign_in(env.client, env.tokens["a_editor"])
        big = b"# padding\n" * 10_000
        r = env.client.post("/telemetry", data={"csrf": csrf}, files={"file": ("d.prom", big, "text/plain")})
        assert r.status_code == 413 and r.headers["content-type"].startswith("text/html")
        assert '<p role="alert">The request body is larger than the limit of 50,000 bytes.' in r.text
        assert "split the fleet or telemetry file, e.g. by day" in r.text and 'href="/telemetry"' in r.text
        api = env.client.post(
            "/api/v1/telemetry/ingest", files={"file": ("d.prom", big)}, headers=env.h("a_editor")
        )
        assert api.status_code == 413 and "50,000 bytes" in api.json()["error"]["message"]
