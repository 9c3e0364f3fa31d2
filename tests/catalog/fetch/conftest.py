"""Fixtures for the price-refresh tests: a small shipped table, recorded API samples, a fake transport."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gpufleet.catalog.fetch import http as fetch_http
from gpufleet.catalog.offers import Offer, OfferTable

SAMPLES = Path(__file__).resolve().parents[2] / "data" / "price_api"


def sample(rel: str) -> Any:
    return json.loads((SAMPLES / rel).read_text(encoding="utf-8"))


def _offer(
    provider: str,
    region: str,
    zone: str | None,
    it: str,
    gpu: str,
    n: float,
    mem: float,
    vcpus: float,
    ram: float,
    od: float,
    spot: float | None,
) -> Offer:
    return Offer(
        provider=provider,
        region=region,
        zone=zone,
        instance_type=it,
        gpu=gpu,
        gpu_count=n,
        gpu_memory_gib=mem,
        vcpus=vcpus,
        ram_gib=ram,
        arch="x86_64",
        price_on_demand_usd_per_hour=od,
        price_spot_usd_per_hour=spot,
        captured_at="2026-08/2026-11",
        source="fixture",
    )


SHIPPED_OFFERS = [
    _offer(
        "azure", "eastus", None, "Standard_NC24ads_A100_v4", "A100-PCIe-80GB", 1, 79.2, 24, 220, 3.67, 1.2
    ),
    _offer("azure", "eastus", None, "Standard_NC4as_T4_v3", "T4", 1, 14.6, 4, 28, 0.526, 0.1),
    _offer("azure", "westeurope", None, "Standard_NC4as_T4_v3", "T4", 1, 14.6, 4, 28, 0.6, None),
    _offer("aws", "us-east-1", "us-east-1a", "p4d.24xlarge", "A100-SXM-40GB", 8, 39.5, 96, 1152, 32.77, 9.5),
    _offer("aws", "us-east-1", "us-east-1b", "p4d.24xlarge", "A100-SXM-40GB", 8, 39.5, 96, 1152, 32.77, 11.0),
    _offer("aws", "us-east-1", "us-east-1a", "p5.48xlarge", "H100-SXM", 8, 79.6, 192, 2048, 98.32, 30.0),
    _offer("aws", "us-west-2", "us-west-2a", "p5.48xlarge", "H100-SXM", 8, 79.6, 192, 2048, 98.32, None),
    _offer(
        "gcp", "us-central1", "us-central1-a", "a2-highgpu-1g", "A100-SXM-40GB", 1, 39.5, 12, 85, 3.67, 1.1
    ),
    _offer("gcp", "us-central1", "us-central1-a", "n1-standard-8", "T4", 1, 14.6, 8, 30, 0.73, 0.2),
]


@pytest.fixture
def shipped() -> OfferTable:
    return OfferTable.from_offers(SHIPPED_OFFERS)


Handler = Callable[[httpx.Request], httpx.Response]


def sample_handler(calls: list[httpx.Request] | None = None) -> Handler:
    """Serve the recorded samples by URL, like the real APIs would."""

    def handle(request: httpx.Request) -> httpx.Response:
        if calls is not None:
            calls.append(request)
        url = request.url
        if url.host == "prices.azure.com":
            page = "eastus-page2.json" if "$skip=100" in str(url).replace("%24", "$") else "eastus-page1.json"
            if "eastus" not in str(url):
                return httpx.Response(200, json={"Items": [], "NextPageLink": None, "Count": 0})
            return httpx.Response(200, json=sample(f"azure/{page}"))
        if url.host == "pricing.us-east-1.amazonaws.com":
            region = url.path.split("/")[-2]
            if region != "us-east-1":
                return httpx.Response(404, text="<Error><Code>NoSuchKey</Code></Error>")
            return httpx.Response(200, json=sample("aws/us-east-1.json"))
        if url.host == "cloudbilling.googleapis.com":
            token = url.params.get("pageToken")
            return httpx.Response(200, json=sample("gcp/skus-page2.json" if token else "gcp/skus-page1.json"))
        return httpx.Response(404)

    return handle


@pytest.fixture
def fake_api(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[httpx.Request]]:
    """Route every fetch through a MockTransport serving the recorded samples; yields the requests made."""
    calls: list[httpx.Request] = []
    monkeypatch.setattr(fetch_http, "TRANSPORT", httpx.MockTransport(sample_handler(calls)))
    monkeypatch.setattr(fetch_http, "BACKOFF_S", 0.0)
    yield calls


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test writes into its own data directory."""
    d = tmp_path / "gpufleet-data"
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(d))
    return d
