"""`gpufleet catalog update` through the root app, with the recorded samples behind a MockTransport."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from gpufleet.catalog.fetch import http as fetch_http
from gpufleet.catalog.fetch import pipeline, store
from gpufleet.catalog.offers import OfferTable
from gpufleet.cli.app import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def _shipped(monkeypatch: pytest.MonkeyPatch, shipped: OfferTable) -> None:
    monkeypatch.setattr(pipeline, "load_shipped_offers", lambda: shipped)


def test_update_azure_writes_and_summarises(fake_api: list[httpx.Request], data_dir: Path) -> None:
    res = runner.invoke(app, ["catalog", "update", "--provider", "azure", "--region", "eastus"])
    assert res.exit_code == 0, res.output
    assert "captured_at" in res.output
    assert "Standard_ND96isr_H200_v5" in res.output  # unmapped, reported
    assert store.offers_path("azure").exists() and store.commitments_path("azure").exists()
    assert "offers-azure-" in res.output and "rows" in res.output


def test_update_dry_run_writes_nothing(fake_api: list[httpx.Request], data_dir: Path) -> None:
    res = runner.invoke(app, ["catalog", "update", "--provider", "aws", "--region", "us-east-1", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "nothing (--dry-run)" in res.output
    assert not data_dir.exists()


def test_update_http_error_exit_2_no_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fetch_http, "TRANSPORT", httpx.MockTransport(lambda r: httpx.Response(500)))
    monkeypatch.setattr(fetch_http, "BACKOFF_S", 0.0)
    res = runner.invoke(app, ["catalog", "update", "--provider", "azure", "--region", "eastus"])
    assert res.exit_code == 2
    assert "Traceback" not in res.output
    assert "Azure Retail Prices API" in res.output and "HTTP 500" in res.output


def test_update_gcp_without_key_exit_2(
    monkeypatch: pytest.MonkeyPatch, fake_api: list[httpx.Request]
) -> None:
    monkeypatch.delenv("GPUFLEET_GCP_API_KEY", raising=False)
    res = runner.invoke(app, ["catalog", "update", "--provider", "gcp"])
    assert res.exit_code == 2
    assert "GPUFLEET_GCP_API_KEY" in res.output and "Traceback" not in res.output
    assert fake_api == []


def test_update_unknown_provider_exit_2() -> None:
    res = runner.invoke(app, ["catalog", "update", "--provider", "azur"])
    assert res.exit_code == 2
    assert "azure" in res.output and "Traceback" not in res.output


def test_update_refuses_foreign_file_before_fetching(fake_api: list[httpx.Request], data_dir: Path) -> None:
    foreign = store.manifest_path("azure")
    foreign.parent.mkdir(parents=True)
    foreign.write_text('{"mine": 1}\n')
    res = runner.invoke(app, ["catalog", "update", "--provider", "azure", "--region", "eastus"])
    assert res.exit_code == 2
    assert "Refusing to overwrite" in res.output and "Traceback" not in res.output
    assert fake_api == []
    assert foreign.read_text() == '{"mine": 1}\n'


def test_commitments_lists_assumptions() -> None:
    res = runner.invoke(app, ["catalog", "commitments"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "flexible_cud" in res.output and "72%" in res.output and "55%" in res.output


def test_commitments_bad_override_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "c.yaml"
    bad.write_text(
        "commitments:\n"
        "  - {provider: aws, program: reserved, term_years: 5, discount_fraction: 0.3, source: s}\n"
    )
    res = runner.invoke(app, ["catalog", "commitments", "--override", str(bad)])
    assert res.exit_code == 2
    assert "term_years" in res.output and "1 or 3" in res.output and "Traceback" not in res.output
