"""What the Chromium tests share: a page of the system Chromium that records console errors, the labelled
fields check, signing in with a token and a viewer token of the admin's team."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest

#: the system Chromium (tools/system-deps.sh installs it; Playwright drives it, no browser download)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

#: every visible form field without a label (by name or id): the accessibility check on each page
_UNLABELLED_JS = """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
    .filter(e => !(e.labels && e.labels.length)).map(e => e.name || e.id)"""


@contextmanager
def chromium_page() -> Iterator[tuple[Any, list[str]]]:
    """(a new page of a headless system Chromium, the console errors and page errors it logged)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the dev extra)")
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_context().new_page()
            page.on("console", lambda m: errors.append(f"{m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
            yield page, errors
        finally:
            browser.close()


def unlabelled(page: Any) -> list[str]:
    found: list[str] = page.evaluate(_UNLABELLED_JS)
    return found


def sign_in(page: Any, base: str, token: str) -> None:
    page.goto(base + "login")
    page.get_by_label("API token").fill(token)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(base)


def make_viewer(base: str, admin: str, name: str) -> str:
    """A viewer token of the admin's team, made through the API."""
    token: str = httpx.post(
        base + "api/v1/tokens",
        json={"name": name, "role": "viewer"},
        headers={"Authorization": f"Bearer {admin}"},
    ).json()["token"]
    return token


def wait_for_job(page: Any, timeout_s: float) -> None:
    """On a job's page: reload until it says succeeded (a failure fails at once), then wait for its report."""
    import time

    job_url = page.url
    deadline = time.monotonic() + timeout_s
    while "succeeded" not in page.inner_text("main") and time.monotonic() < deadline:
        assert "failed" not in page.inner_text("main")
        time.sleep(1)
        page.goto(job_url)
    assert "succeeded" in page.inner_text("main")
    page.wait_for_selector("section.report svg")
