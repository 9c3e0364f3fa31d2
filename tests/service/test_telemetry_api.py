"""Telemetry over HTTP: each team ingests into its own store (another team sees nothing of it), and findings
and alerts are the library's, as `gpufleet telemetry ... --format json` prints them."""

from __future__ import annotations

import json
import math
import re
import runpy
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gpufleet.service.telemetry_api import safe_file_name

from .fixtures import Env, make_env

ROOT = Path(__file__).resolve().parents[2]


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


@pytest.fixture
def tenv(sqlite_url: str, tmp_path: Path) -> Iterator[Env]:
    yield from make_env(sqlite_url, telemetry_dir=tmp_path / "telemetry", max_body_bytes=64 * 1024 * 1024)


def test_ingest_findings_alerts_per_team(tenv: Env, dcgm: bytes, tmp_path: Path) -> None:
    from gpufleet.report.telemetry import to_json
    from gpufleet.telemetry.analyze import gpu_stats, resolve_window
    from gpufleet.telemetry.findings import Thresholds, find
    from gpufleet.telemetry.ingest import ingest_files
    from gpufleet.telemetry.store import TelemetryStore
    from gpufleet.telemetry.summary import summarize

    c = tenv.client
    files = {"file": ("../../../dcgm.prom", dcgm, "text/plain")}
    assert c.post("/api/v1/telemetry/ingest", files=files, headers=tenv.h("a_viewer")).status_code == 403
    r = c.post("/api/v1/telemetry/ingest", files=files, headers=tenv.h("a_editor"))
    assert r.status_code == 200, r.text
    assert r.json()["kind"] == "telemetry_ingest" and r.json()["report"]["rows_stored"] > 0
    assert (tmp_path / "telemetry" / "team-1").is_dir() and not (tmp_path / "dcgm.prom").exists()
    got = c.get("/api/v1/telemetry/findings", headers=tenv.h("a_viewer"))
    assert got.status_code == 200, got.text
    # the same file ingested by the library into a store of our own gives the same document
    (tmp_path / "dcgm.prom").write_bytes(dcgm)
    store = TelemetryStore(tmp_path / "own")
    ingest_files([tmp_path / "dcgm.prom"], store=store)
    window = resolve_window(store, 14, None, 0.95)
    ff = find(gpu_stats(store, window), window, Thresholds(headroom=0.2), ())
    want = json.loads(to_json("telemetry_findings", {"summary": summarize(ff), "findings": ff}))
    assert _differences(got.json(), want) == []
    alerts = c.get("/api/v1/telemetry/alerts", headers=tenv.h("a_viewer"))
    assert alerts.status_code == 200 and alerts.json()["kind"] == "telemetry_alerts"
    export = c.get("/api/v1/telemetry/alerts/export", headers=tenv.h("a_viewer"))
    assert export.status_code == 200 and "groups:" in export.text
    # team b has no telemetry: its findings are an error saying so, not team a's
    for path in ("/api/v1/telemetry/findings", "/api/v1/telemetry/alerts"):
        other = c.get(path, headers=tenv.h("b_admin"))
        assert other.status_code == 404, other.text
        msg = other.json()["error"]["message"]
        assert "Team 'b' has no telemetry yet" in msg and str(tmp_path) not in msg


def _differences(a: object, b: object, path: str = "") -> list[str]:
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{path}[{i}]")
        ]
    if isinstance(a, float) and isinstance(b, float):  # DuckDB sums in parallel: the last bits may differ
        return [] if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12) else [f"{path}: {a!r} != {b!r}"]
    return [] if a == b else [f"{path}: {a!r:.80} != {b!r:.80}"]


def test_bad_telemetry_upload_is_4xx(tenv: Env) -> None:
    r = tenv.client.post(
        "/api/v1/telemetry/ingest",
        files={"file": ("x.csv", b"\x00\x01garbage", "text/csv")},
        headers=tenv.h("a_editor"),
    )
    assert 400 <= r.status_code < 500, r.text
    r = tenv.client.post(
        "/api/v1/telemetry/ingest",
        files={"file": ("x.prom", b"up 1\n", "text/plain")},
        data={"input_format": "carrier-pigeon"},
        headers=tenv.h("a_editor"),
    )
    assert 400 <= r.status_code < 500 and "carrier-pigeon" in r.text


def test_safe_file_name() -> None:
    assert safe_file_name("../../etc/passwd") == "passwd"
    assert safe_file_name("..\\..\\win.ini") == "win.ini"
    assert safe_file_name("a b;rm -rf.csv") == "a_b_rm_-rf.csv"
    assert safe_file_name("...") == "telemetry" and safe_file_name(None) == "telemetry"


def test_dashboard_telemetry_page(tenv: Env, dcgm: bytes) -> None:
    from .test_dashboard import sign_in

    c = tenv.client
    csrf = sign_in(c, tenv.tokens["a_editor"])
    empty = c.get("/telemetry")
    assert empty.status_code == 200 and "has no telemetry yet" in empty.text and 'name="file"' in empty.text
    assert "Upload a telemetry file (nvidia-smi CSV" in empty.text  # what to do next, not an API route
    assert "/api/v1" not in empty.text.split("<main", 1)[1]
    r = c.post(
        "/telemetry",
        data={"csrf": csrf, "input_format": "auto", "host": "", "timezone": ""},
        files={"file": ("../dcgm.prom", dcgm, "text/plain")},
        follow_redirects=False,
    )
    # the page says what was stored (the library's own counts), then the findings report
    n = dcgm.count(b"\n")
    assert r.status_code == 200 and f"Ingested dcgm.prom: {n:,} of {n:,} samples stored, 10 GPUs." in r.text
    assert "<svg" in r.text
    bad = c.post(
        "/telemetry",
        data={"csrf": csrf, "input_format": "nvidia-smi"},
        files={"file": ("d.prom", dcgm, "text/plain")},
    )
    assert bad.status_code == 400 and 'role="alert"' in bad.text and 'value="nvidia-smi" selected' in bad.text
    page = c.get("/telemetry")
    assert page.status_code == 200 and "<svg" in page.text and "By team" in page.text
    viewer = TestClient(tenv.app)
    vcsrf = sign_in(viewer, tenv.tokens["a_viewer"])
    assert 'name="file"' not in viewer.get("/telemetry").text
    r = viewer.post("/telemetry", data={"csrf": vcsrf}, files={"file": ("d.prom", dcgm, "text/plain")})
    assert r.status_code == 403


def _rounded(doc: object) -> object:
    if isinstance(doc, float):
        return float(f"{doc:.9g}")
    if isinstance(doc, dict):
        return {k: _rounded(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_rounded(v) for v in doc]
    return doc


def test_dashboard_findings_page_and_export_are_the_teams(tenv: Env, dcgm: bytes) -> None:
    """/findings: by type and per GPU; its CSV and JSON exports are the CLI's / API's documents; another
    team's page says it has no telemetry; the overview counts the findings by type."""
    from gpufleet.report.telemetry import CO_COLUMNS

    from .test_dashboard import sign_in

    c = tenv.client
    files = {"file": ("dcgm.prom", dcgm, "text/plain")}
    assert c.post("/api/v1/telemetry/ingest", files=files, headers=tenv.h("a_editor")).status_code == 200
    sign_in(c, tenv.tokens["a_viewer"])
    page = c.get("/findings")
    assert page.status_code == 200 and "Findings by type" in page.text and "savings [USD/month]" in page.text
    api = c.get("/api/v1/telemetry/findings", headers=tenv.h("a_viewer")).json()
    got = c.get("/findings/export.json")
    assert got.headers["content-disposition"] == 'attachment; filename="findings-a.json"'
    assert _rounded(got.json()) == _rounded(api)  # DuckDB's parallel sums differ in the last digits
    csv_text = c.get("/findings/export.csv")
    assert csv_text.headers["content-type"].startswith("text/csv")
    lines = csv_text.text.splitlines()
    assert lines[0].split(",") == list(CO_COLUMNS) and len(lines) == 1 + len(api["findings"]["gpus"])
    assert c.get("/findings/export.xml").status_code == 404
    overview = c.get("/").text
    assert "Findings by type" in overview and "GPUs by finding" in overview
    # the window is said as it is: 14 days up to the latest sample (not "the last 14 days" from now)
    window = re.search(
        r"the 14 days up to the latest sample \((\d{4}-\d\d-\d\d \d\d:\d\d) UTC to "
        r"(\d{4}-\d\d-\d\d \d\d:\d\d) UTC; 2\.0 days observed\), p95, 20 % headroom",
        overview,
    )
    assert window and f"Telemetry of {window.group(0)}" in page.text
    end = api["findings"]["window"]["end"]
    assert window.group(2) == end[:16].replace("T", " "), (window.group(2), end)
    for name, (n, _) in api["summary"]["by_finding"].items():
        assert f"<tr><td>{name}</td><td class='num'>{n}</td>" in overview

    other = TestClient(tenv.app)
    sign_in(other, tenv.tokens["b_admin"])
    assert "has no telemetry yet" in other.get("/findings").text
    assert other.get("/findings/export.csv").status_code == 404


def test_dashboard_runs_findings_as_a_job(tenv: Env, dcgm: bytes) -> None:
    """/findings offers an editor "Run findings" (a findings job, its page next); a viewer sees no form and is
    refused; without telemetry, or with a bad number, the page says what is wrong and how to fix it."""
    from .test_dashboard import sign_in

    c = tenv.client
    csrf = sign_in(c, tenv.tokens["a_editor"])
    form = {"csrf": csrf, "lookback_days": "14", "headroom_percent": "20"}
    empty = c.post("/findings/run", data=form)
    assert (
        empty.status_code == 409
        and "has no telemetry yet" in empty.text
        and 'href="/telemetry"' in empty.text
    )
    files = {"file": ("dcgm.prom", dcgm, "text/plain")}
    assert c.post("/api/v1/telemetry/ingest", files=files, headers=tenv.h("a_editor")).status_code == 200
    page = c.get("/findings")
    assert 'action="/findings/run"' in page.text and '<label for="lookback_days">' in page.text
    bad = c.post("/findings/run", data=form | {"headroom_percent": "twenty"})
    assert bad.status_code == 400 and "must be plain numbers, e.g. 14 and 20" in bad.text
    assert 'value="twenty"' in bad.text  # the form comes back as it was sent
    r = c.post(
        "/findings/run", data=form | {"lookback_days": "7", "headroom_percent": "30"}, follow_redirects=False
    )
    assert r.status_code == 303 and r.headers["location"].startswith("/jobs/")
    job = c.get("/api/v1" + r.headers["location"], headers=tenv.h("a_viewer")).json()
    assert job["kind"] == "findings" and job["status"] == "queued"
    assert c.post("/findings/run", data={"csrf": "wrong"}).status_code == 403  # CSRF checked

    viewer = TestClient(tenv.app)
    vcsrf = sign_in(viewer, tenv.tokens["a_viewer"])
    assert 'action="/findings/run"' not in viewer.get("/findings").text
    assert viewer.post("/findings/run", data=form | {"csrf": vcsrf}).status_code == 403
