"""The real thing: `gpufleet serve` started as a process (uvicorn on 127.0.0.1, a SQLite file, job workers),
printing its URL and first admin token, driven by the system Chromium through Playwright: every page renders
without console errors, the forms submit (sign-in, catalog filter, recommend, plan upload -> job -> report,
user catalog upload, price history), a viewer cannot reach the plan or catalog upload actions, every form
field has a label, the keyboard reaches the content and the menu's pages."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from .browser_kit import CHROMIUM, chromium_page, make_viewer, unlabelled, wait_for_job

FLEET = Path("examples/fleets/assessment-platform.yaml").resolve()
ONPREM = Path("tests/data/user_catalogs/onprem.yaml").resolve()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serve_process(db: Path, extra_env: dict[str, str] | None = None) -> Iterator[tuple[str, str]]:
    """(base URL, first admin token) of a `gpufleet serve` process on ``db``, stopped gracefully after."""
    port = _free_port()
    data = str(db.parent / "data")  # its own data folder: never the user's telemetry (~/.local/share)
    env = (
        os.environ
        | {"PYTHONUNBUFFERED": "1", "GPUFLEET_DB": "", "GPUFLEET_DATA_DIR": data}
        | (extra_env or {})
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from gpufleet.cli.entry import main; main()",
            "serve",
            "--port",
            str(port),
            "--db",
            str(db),
            "--job-workers",
            "1",
            "--webhook-internal-hosts",  # the tests' webhook receivers listen on 127.0.0.1
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any("admin token" in ln for ln in lines):
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
        text = "".join(lines)
        url = re.search(r"gpufleet service at (http://127\.0\.0\.1:\d+/)", text)
        token = re.search(r"admin token of team 'default' \(shown once, stored hashed\): (gpf_\S+)", text)
        assert url and token, text
        # keep reading its log, so that a full pipe never blocks the service (one line per request)
        threading.Thread(target=lines.extend, args=(proc.stdout,), daemon=True).start()
        while time.monotonic() < deadline:
            try:
                if httpx.get(url.group(1) + "healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url.group(1), token.group(1)
    finally:
        proc.send_signal(signal.SIGINT)  # graceful: uvicorn stops, the job runner re-queues running jobs
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(base URL, admin token) of a `gpufleet serve` process (its own data folder: telemetry, prices)."""
    tmp = tmp_path_factory.mktemp("serve")
    with serve_process(tmp / "service.sqlite3", {"GPUFLEET_DATA_DIR": str(tmp / "data")}) as got:
        yield got


def test_serve_prints_url_and_token_and_answers(server: tuple[str, str]) -> None:
    base, token = server
    r = httpx.get(base + "api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert r.json() == {"team": "default", "token_name": "bootstrap-admin", "role": "admin"}
    assert httpx.get(base + "readyz").json()["status"] == "ready"


def test_a_slow_client_does_not_hold_the_service(server: tuple[str, str]) -> None:
    """A client that sends half a request and stalls must not delay others (the server is asynchronous)."""
    base, token = server
    host, port = base.removeprefix("http://").rstrip("/").split(":")
    slow = [socket.create_connection((host, int(port))) for _ in range(50)]
    try:
        for s in slow:
            s.sendall(b"POST /api/v1/recommend HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{")
        t = time.monotonic()
        r = httpx.get(base + "api/v1/me", headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert r.status_code == 200 and time.monotonic() - t < 5
    finally:
        for s in slow:
            s.close()


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (tools/system-deps.sh installs it)")
def test_dashboard_in_chromium(server: tuple[str, str]) -> None:
    base, admin = server
    viewer = make_viewer(base, admin, "browser-viewer")
    with chromium_page() as (page, errors):
        page.goto(base)
        assert page.url.endswith("/login")
        assert unlabelled(page) == []
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        page.get_by_label("API token").fill(admin)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(base)
        assert "Overview" in page.inner_text("h1")

        page.goto(base + "catalog")
        page.get_by_label("GPU (id, alias or family)").fill("H100")
        page.get_by_role("button", name="Filter").click()
        assert "offers match" in page.inner_text("main")
        assert unlabelled(page) == []

        page.goto(base + "recommend")
        assert unlabelled(page) == []
        page.get_by_label("Model (id, alias or Hugging Face config)").fill("llama-3.1-8b")
        page.get_by_label("Target requests per second [1/s]").fill("2")
        page.get_by_role("button", name="Recommend").click()
        page.wait_for_selector("section.report svg", timeout=60_000)

        page.goto(base + "plan")
        assert unlabelled(page) == []
        page.get_by_label("Fleet file (YAML or JSON)").set_input_files(str(FLEET))
        page.get_by_role("button", name="Plan").click()
        page.wait_for_url(re.compile(r".*/jobs/\d+$"))
        job_url = page.url
        wait_for_job(page, timeout_s=120)

        page.goto(base)
        main = page.inner_text("main")
        assert "Latest plan" in main and "OPTIMAL" in main and "Cost per month by team" in main
        assert "Savings by lever" in main and page.locator("main svg").count() >= 1
        page.goto(base + "jobs")
        assert "#1" in page.inner_text("main")
        page.goto(base + "telemetry")
        assert "no telemetry yet" in page.inner_text("main") and unlabelled(page) == []

        # keyboard only: skip link, then the main menu, to the findings page
        page.goto(base)
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Skip to content"
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.textContent") == "Overview"
        for _ in range(12):
            if page.evaluate("document.activeElement.textContent") == "Findings":
                break
            page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        page.wait_for_url(base + "findings")
        assert "no telemetry yet" in page.inner_text("main")

        # user catalogs: uploaded through the form, listed, readable
        page.goto(base + "catalogs")
        assert unlabelled(page) == []
        page.get_by_label("User catalog (YAML or JSON, the format of --catalog)").set_input_files(str(ONPREM))
        page.get_by_role("button", name="Upload catalog").click()
        page.wait_for_url(base + "catalogs")
        assert "onprem.yaml" in page.inner_text("main")
        page.get_by_role("link", name="onprem.yaml").click()
        assert "dgx-h100" in page.inner_text("main")

        # price history: from a catalog row's instance link
        page.goto(base + "catalog/history")
        assert unlabelled(page) == []
        page.get_by_label("Provider").fill("aws")
        page.get_by_label("Instance type").fill("p5.48xlarge")
        page.get_by_label("Region").fill("us-east-1")
        page.get_by_role("button", name="Show history").click()
        main = page.inner_text("main")
        assert "p5.48xlarge" in page.inner_text("h1") and "shipped" in main
        assert "No history to draw yet" in main or page.locator("main svg polyline").count() >= 1

        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(re.compile(r".*/login$"))
        page.get_by_label("API token").fill(viewer)
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(base)
        assert page.get_by_role("link", name="Plan").count() == 0
        resp = page.goto(base + "plan")
        assert resp is not None and resp.status == 403
        errors[:] = [e for e in errors if "403" not in e]  # the refused page's own status, as asked
        page.goto(job_url)
        assert page.get_by_role("button", name="Cancel job").count() == 0
        page.goto(base + "catalogs")
        assert "onprem.yaml" in page.inner_text("main")
        assert page.get_by_role("button", name="Upload catalog").count() == 0
        assert page.get_by_role("button", name="Delete onprem.yaml").count() == 0
        for path in ("", "findings", "catalog/history", "catalogs/1"):
            resp = page.goto(base + path)
            assert resp is not None and resp.status == 200, path
    assert errors == []
