"""GCP Cloud Billing Catalog parser and VM composition on the recorded samples (exact numbers)."""

from __future__ import annotations

from collections import Counter

import pytest

from conftest import sample
from gpufleet.catalog.fetch import gcp
from gpufleet.catalog.fetch.normalise import shape_index
from gpufleet.catalog.offers import OfferTable
from gpufleet.errors import InputError


def _skus() -> tuple[list[gcp.GcpSku], Counter[str]]:
    skipped: Counter[str] = Counter()
    s1, t1 = gcp.parse_page(sample("gcp/skus-page1.json"), skipped)
    s2, t2 = gcp.parse_page(sample("gcp/skus-page2.json"), skipped)
    assert (t1, t2) == ("page-2-token", None)
    return s1 + s2, skipped


@pytest.mark.parametrize(
    ("description", "part"),
    [
        ("A2 Instance Core running in Americas", ("core", "A2")),
        ("N1 Predefined Instance Ram running in Americas", ("ram", "N1")),
        ("Spot Preemptible A2 Instance Core running in Americas", ("core", "A2")),
        ("Commitment v1: A2 Cpu in Americas for 1 Year", ("core", "A2")),
        ("Nvidia Tesla A100 GPU running in Americas", ("gpu", "A100")),
        ("Commitment v1: Nvidia Tesla A100 80GB GPU in Americas for 3 Year", ("gpu", "A100 80GB")),
        ("Nvidia H100 80GB Mega GPU running in Americas", ("gpu", "H100 80GB Mega")),
        ("N1 Custom Instance Core running in Americas", None),
        ("Nvidia Tesla T4 Virtual Workstation GPU running in Americas", None),
        ("Network Internet Egress from Americas to APAC", None),
    ],
)
def test_classify(description: str, part: tuple[str, str] | None) -> None:
    assert gcp.classify(description) == part


def test_parse_prices_units_plus_nanos() -> None:
    skus, skipped = _skus()
    by_id = {s.sku_id: s for s in skus}
    assert by_id["A100-0001-0001"].price_usd == pytest.approx(2.933908, abs=1e-12)
    assert by_id["A100-0001-0003"].kind == "cud" and by_id["A100-0001-0003"].term_years == 1
    assert by_id["A2R1-0001-0001"].usage_unit == "GiBy.h"
    assert skipped["SKU not a VM core/RAM/GPU price"] == 3  # custom core, egress, virtual workstation


def test_vm_price_is_core_ram_gpu_sum(shipped: OfferTable) -> None:
    skus, skipped = _skus()
    unmapped: Counter[str] = Counter()
    machines = gcp.normalise(skus, ["us-central1"], shape_index(shipped, "gcp"), unmapped, skipped)
    by = {m.shape.instance_type: m for m in machines}
    a2 = by["a2-highgpu-1g"]
    assert a2.on_demand_usd_per_hour == pytest.approx(12 * 0.031611 + 85 * 0.004237 + 2.933908, abs=1e-9)
    assert a2.on_demand_usd_per_hour == pytest.approx(3.673385, abs=1e-6)
    assert a2.spot_usd_per_hour == pytest.approx(12 * 0.011316 + 85 * 0.001516 + 1.1, abs=1e-9)
    assert a2.commitments[("cud", 1)][0] == pytest.approx(2.314207, abs=1e-6)
    assert a2.commitments[("cud", 3)][0] == pytest.approx(12 * 0.014225 + 85 * 0.001907 + 1.320273, abs=1e-9)
    n1 = by["n1-standard-8"]
    assert n1.on_demand_usd_per_hour == pytest.approx(8 * 0.031611 + 30 * 0.004237 + 0.35, abs=1e-9)
    assert n1.spot_usd_per_hour is None and n1.commitments == {}
    assert unmapped == Counter({"GPU SKU 'B300'": 1})


def test_region_without_skus_gives_no_machine(shipped: OfferTable) -> None:
    skus, skipped = _skus()
    machines = gcp.normalise(skus, ["europe-west3"], shape_index(shipped, "gcp"), Counter(), skipped)
    assert machines == []
    assert skipped["no on-demand SKU for A2 / A100 in the region"] == 1


def test_missing_api_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUFLEET_GCP_API_KEY", raising=False)
    with pytest.raises(InputError, match="GPUFLEET_GCP_API_KEY"):
        gcp.api_key()
