"""The schedules and notifications pages in the system Chromium (Playwright) against a real `gpufleet serve`
process: they render without console errors, every field has a label, the forms submit (a schedule, a webhook
with thresholds), an error is announced, and a viewer sees the settings without any form or action."""

from __future__ import annotations

import re

import pytest

from .browser_kit import CHROMIUM, chromium_page, make_viewer, sign_in, unlabelled
from .test_browser import server  # noqa: F401  (the `gpufleet serve` process fixture)


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (tools/system-deps.sh installs it)")
def test_schedules_and_notifications_in_chromium(server: tuple[str, str]) -> None:  # noqa: F811
    base, admin = server
    viewer = make_viewer(base, admin, "notify-viewer")
    with chromium_page() as (page, errors):
        sign_in(page, base, admin)
        page.goto(base + "schedules")
        assert "No schedules yet" in page.inner_text("main") and unlabelled(page) == []
        page.get_by_label("Name").fill("weekday findings")
        page.get_by_label("Cron (5 fields, UTC)").fill("0 7 * * 1-5")
        page.get_by_label("Job kind").select_option("findings")
        page.get_by_label("Parameters (JSON)").fill('{"lookback_days": 7}')
        page.get_by_role("button", name="Add schedule").click()
        page.wait_for_url(base + "schedules")
        assert "weekday findings" in page.inner_text("main") and "07:00 UTC" in page.inner_text("main")
        page.get_by_label("Name").fill("bad")
        page.get_by_label("Cron (5 fields, UTC)").fill("0 7 * *")
        page.get_by_role("button", name="Add schedule").click()
        assert "has 4 fields, not 5" in page.get_by_role("alert").inner_text()
        errors[:] = [e for e in errors if "400" not in e]  # the refused form's own status, as asked
        page.goto(base + "schedules")
        page.get_by_role("button", name="Disable weekday findings").click()
        page.wait_for_url(base + "schedules")
        assert page.get_by_role("button", name="Enable weekday findings").count() == 1

        page.goto(base + "notifications")
        assert unlabelled(page) == []
        page.get_by_label("URL").fill("https://hooks.example.com/services/T0/SECRET")
        page.get_by_label("saving_found").check()
        page.get_by_label("Min. new saving [USD/month]").fill("500")
        page.get_by_role("button", name="Add webhook").click()
        page.wait_for_url(base + "notifications")
        main = page.inner_text("main")
        assert "saving_found" in main and "$500/month" in main and "SECRET" in main

        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(re.compile(r".*/login$"))
        sign_in(page, base, viewer)
        page.goto(base + "schedules")
        assert "weekday findings" in page.inner_text("main")
        assert page.get_by_role("button").filter(has_text=re.compile("Enable|Delete|Add")).count() == 0
        page.goto(base + "notifications")
        main = page.inner_text("main")
        assert "hooks.example.com" in main and "SECRET" not in main
        assert page.locator("form[action='/notifications']").count() == 0
    assert errors == []
