"""End-to-end refresh through a fake transport (recorded samples), merge and write."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
import pytest

from gpufleet.catalog.fetch import http as fetch_http
from gpufleet.catalog.fetch import pipeline as R
from gpufleet.catalog.fetch import store
from gpufleet.catalog.fetch.rates import read_rates_csv
from gpufleet.catalog.offers import OfferTable, read_offers_csv
from gpufleet.errors import FetchError, InputError, UnknownNameError

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_azure_follows_next_page_link(fake_api: list[httpx.Request], shipped: OfferTable) -> None:
    result = R.refresh("azure", ["eastus"], shipped=shipped, now=NOW)
    assert len(fake_api) == 2
    assert "$skip=100" in str(fake_api[1].url).replace("%24", "$")
    assert result.captured_at == "2026-11-22T12:00:00Z"
    assert {o.instance_type for o in result.offers} == {"Standard_NC24ads_A100_v4", "Standard_NC4as_T4_v3"}
    assert result.unmapped == {"Standard_ND96isr_H200_v5": 1}
    kinds = {(r.instance_type, r.program, r.term_years) for r in result.rates}
    assert ("Standard_NC24ads_A100_v4", "reserved", 1) in kinds and len(kinds) == 6


def test_aws_keeps_zones_and_shipped_spot(fake_api: list[httpx.Request], shipped: OfferTable) -> None:
    result = R.refresh("aws", ["us-east-1"], shipped=shipped, now=NOW)
    p4d = sorted((o for o in result.offers if o.instance_type == "p4d.24xlarge"), key=lambda o: o.zone or "")
    assert [o.zone for o in p4d] == ["us-east-1a", "us-east-1b"]
    assert [o.price_on_demand_usd_per_hour for o in p4d] == [21.957642, 21.957642]
    assert [o.price_spot_usd_per_hour for o in p4d] == [9.5, 11.0]
    assert "spot price from the shipped catalog" in p4d[0].source
    assert result.unmapped == {"g6e.xlarge": 1}


def test_gcp_needs_key_before_any_request(
    fake_api: list[httpx.Request], shipped: OfferTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GPUFLEET_GCP_API_KEY", raising=False)
    with pytest.raises(InputError, match="GPUFLEET_GCP_API_KEY"):
        R.refresh("gcp", ["us-central1"], shipped=shipped)
    assert fake_api == []


def test_gcp_pages_and_key_not_leaked(
    fake_api: list[httpx.Request], shipped: OfferTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUFLEET_GCP_API_KEY", "secret-key")
    result = R.refresh("gcp", ["us-central1"], shipped=shipped, now=NOW)
    assert [r.url.params.get("pageToken") for r in fake_api] == [None, "page-2-token"]
    a2 = next(o for o in result.offers if o.instance_type == "a2-highgpu-1g")
    assert a2.price_on_demand_usd_per_hour == pytest.approx(3.673385, abs=1e-6)
    assert all("secret-key" not in o.source for o in result.offers)


def test_write_merges_other_regions_from_shipped(
    fake_api: list[httpx.Request], shipped: OfferTable, data_dir: Path
) -> None:
    result = R.refresh("azure", ["eastus"], shipped=shipped, now=NOW)
    written = R.write_result(result, shipped)
    table = read_offers_csv(written.offers_path.read_text())
    regions = sorted(set(table.column("region").tolist()))
    assert regions == ["eastus", "westeurope"]  # westeurope kept from the shipped table
    assert store.refreshed_offer_files() == [written.offers_path]
    rates = read_rates_csv(written.commitments_path.read_text(), source_name="t")
    assert len(rates) == written.rate_rows == 6
    again = R.write_result(result, shipped)  # second refresh overwrites our own files
    assert again.offer_rows == written.offer_rows


def test_write_keeps_machines_the_api_did_not_return(
    fake_api: list[httpx.Request], shipped: OfferTable
) -> None:
    extra = shipped.records()[0]
    extra = type(extra)(
        **{**{f: getattr(extra, f) for f in extra.__slots__}, "instance_type": "Standard_NC6s_v3"}
    )
    table = OfferTable.concat([shipped, OfferTable.from_offers([extra])])
    written = R.write_result(R.refresh("azure", ["eastus"], shipped=table, now=NOW), table)
    out = read_offers_csv(written.offers_path.read_text())
    kept = out.column("instance_type") == "Standard_NC6s_v3"
    assert kept.sum() == 1 and out.column("captured_at")[kept][0] == "2026-08/2026-11"


def test_write_refuses_foreign_file_before_writing(
    shipped: OfferTable, fake_api: list[httpx.Request]
) -> None:
    result = R.refresh("azure", ["eastus"], shipped=shipped, now=NOW)
    foreign = store.manifest_path("azure")
    foreign.parent.mkdir(parents=True)
    foreign.write_text('{"user": "file"}\n')
    with pytest.raises(Exception, match="Refusing to overwrite"):
        R.write_result(result, shipped)
    assert sorted(p.name for p in foreign.parent.iterdir()) == [foreign.name]  # nothing half-written


def test_http_error_is_fetch_error(monkeypatch: pytest.MonkeyPatch, shipped: OfferTable) -> None:
    monkeypatch.setattr(
        fetch_http, "TRANSPORT", httpx.MockTransport(lambda r: httpx.Response(403, text="denied"))
    )
    with pytest.raises(FetchError, match="HTTP 403"):
        R.refresh("azure", ["eastus"], shipped=shipped)


def test_network_error_retries_then_fetch_error(monkeypatch: pytest.MonkeyPatch, shipped: OfferTable) -> None:
    calls: list[int] = []

    def down(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        raise httpx.ConnectError("no route to host", request=request)

    monkeypatch.setattr(fetch_http, "TRANSPORT", httpx.MockTransport(down))
    monkeypatch.setattr(fetch_http, "BACKOFF_S", 0.0)
    with pytest.raises(FetchError, match="after 3 attempts"):
        R.refresh("aws", ["us-east-1"], shipped=shipped)
    assert len(calls) == fetch_http.MAX_ATTEMPTS


def test_retry_on_503_then_success(monkeypatch: pytest.MonkeyPatch, shipped: OfferTable) -> None:
    answers = iter([httpx.Response(503), httpx.Response(200, json={"Items": [], "NextPageLink": None})])
    monkeypatch.setattr(fetch_http, "TRANSPORT", httpx.MockTransport(lambda r: next(answers)))
    monkeypatch.setattr(fetch_http, "BACKOFF_S", 0.0)
    assert R.refresh("azure", ["eastus"], shipped=shipped).offers == ()


def test_non_json_is_fetch_error(monkeypatch: pytest.MonkeyPatch, shipped: OfferTable) -> None:
    monkeypatch.setattr(
        fetch_http, "TRANSPORT", httpx.MockTransport(lambda r: httpx.Response(200, text="<html>"))
    )
    with pytest.raises(FetchError, match="not JSON"):
        R.refresh("azure", ["eastus"], shipped=shipped)


def test_bad_region_and_provider(shipped: OfferTable) -> None:
    with pytest.raises(InputError, match="not a valid azure region"):
        R.refresh("azure", ["east us' or 1 eq 1"], shipped=shipped)
    with pytest.raises(UnknownNameError, match="oracle"):
        R.refresh("oracle", ["x"], shipped=shipped)


def test_default_regions_come_from_shipped(fake_api: list[httpx.Request], shipped: OfferTable) -> None:
    result = R.refresh("azure", None, shipped=shipped, now=NOW)
    assert result.regions == ("eastus", "westeurope")


def test_written_rates_drive_commitment_prices(fake_api: list[httpx.Request], shipped: OfferTable) -> None:
    from gpufleet.catalog.pricing import (
        describe_assumptions,
        load_commitment_assumptions,
        prices_usd_per_hour,
    )

    R.write_result(R.refresh("azure", ["eastus"], shipped=shipped, now=NOW), shipped)
    a = load_commitment_assumptions()
    assert len(a.fetched) == 6
    table = read_offers_csv(store.offers_path("azure").read_text())
    it = table.column("instance_type")
    region = table.column("region")
    a100 = (it == "Standard_NC24ads_A100_v4") & (region == "eastus")
    t4_west = (it == "Standard_NC4as_T4_v3") & (region == "westeurope")
    reserved_1y = prices_usd_per_hour(table, "reserved_1y", a)
    assert reserved_1y[a100][0] == pytest.approx(20268.94 / 8760, abs=1e-6)  # the fetched rate
    assert np.isnan(reserved_1y[t4_west][0])  # no fetched rate, no sourced 1-year default
    commit_3y = prices_usd_per_hour(table, "commit_3y", a)
    assert commit_3y[a100][0] == pytest.approx(39045.6 / 26280, abs=1e-6)  # reserved 3y beats SP 3y (1.7854)
    # the table's 72 % is an unverified ceiling: no price without the opt-in, the ceiling with it
    assert np.isnan(commit_3y[t4_west][0])
    opted = prices_usd_per_hour(table, "commit_3y", replace(a, allow_unverified=True))
    assert opted[t4_west][0] == pytest.approx(0.6 * (1 - 0.72))
    assert opted[a100][0] == pytest.approx(39045.6 / 26280, abs=1e-6)  # a fetched rate still wins
    assert any(r.basis == "fetched" and r.provider == "azure" for r in describe_assumptions(a))
