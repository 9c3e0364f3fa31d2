"""The simulations page in the system Chromium (Playwright) against a real `gpufleet serve` process: it
renders without console errors, every field has a label, a trace is uploaded through the form, the
autoscale form queues a job that the worker runs to the simulation report, a bad file is announced, and a
viewer sees the uploads without any form or action."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .browser_kit import CHROMIUM, chromium_page, make_viewer, sign_in, unlabelled, wait_for_job
from .test_browser import server  # noqa: F401  (the `gpufleet serve` process fixture)

AZURE = Path("tests/data/traces/azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv").resolve()


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary (tools/system-deps.sh installs it)")
def test_simulations_page_in_chromium(server: tuple[str, str], tmp_path: Path) -> None:  # noqa: F811
    base, admin = server
    viewer = make_viewer(base, admin, "sim-viewer")
    trace = tmp_path / "conv.csv"
    trace.write_text("\n".join(AZURE.read_text().splitlines()[:200]) + "\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n")
    with chromium_page() as (page, errors):
        sign_in(page, base, admin)
        page.get_by_role("link", name="Simulations").click()
        page.wait_for_url(base + "simulations")
        assert "no uploaded simulation input" in page.inner_text("main") and unlabelled(page) == []
        page.get_by_label("Kind").select_option("trace")
        page.get_by_label(re.compile(r"^File \(trace")).set_input_files(str(bad))
        page.get_by_role("button", name="Upload").click()
        assert "match no known layout" in page.get_by_role("alert").inner_text()
        errors[:] = [e for e in errors if "422" not in e]  # the refused form's own status, as asked
        page.goto(base + "simulations")
        page.get_by_label(re.compile(r"^File \(trace")).set_input_files(str(trace))
        page.get_by_role("button", name="Upload").click()
        page.wait_for_url(base + "simulations")
        main = page.inner_text("main")
        assert "conv.csv" in main and "199 requests" in main and unlabelled(page) == []
        page.get_by_label("GPU of a replica (empty: recommend's pick)").fill("l4")
        page.get_by_label("Most replicas").fill("8")
        page.get_by_role("button", name="Simulate autoscaling").click()
        page.wait_for_url(re.compile(r".*/jobs/\d+$"))
        wait_for_job(page, timeout_s=180)

        page.get_by_role("button", name="Sign out").click()
        page.wait_for_url(re.compile(r".*/login$"))
        sign_in(page, base, viewer)
        page.goto(base + "simulations")
        assert "conv.csv" in page.inner_text("main")
        assert page.get_by_role("button", name="Upload").count() == 0
        assert page.get_by_role("button", name="Delete conv.csv").count() == 0
        assert page.get_by_role("button", name="Simulate autoscaling").count() == 0
    assert errors == []
