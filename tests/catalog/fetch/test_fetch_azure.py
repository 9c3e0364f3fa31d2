"""Azure Retail Prices parser and normaliser on the recorded samples (exact numbers)."""

from __future__ import annotations

from collections import Counter

import pytest

from conftest import sample
from gpufleet.catalog.fetch import azure
from gpufleet.catalog.fetch.normalise import shape_index
from gpufleet.catalog.offers import OfferTable
from gpufleet.errors import FetchError


def _parse_both() -> tuple[list[azure.AzurePrice], Counter[str]]:
    skipped: Counter[str] = Counter()
    rows1, link1 = azure.parse_page(sample("azure/eastus-page1.json"), skipped)
    rows2, link2 = azure.parse_page(sample("azure/eastus-page2.json"), skipped)
    assert link1 is not None and "$skip=100" in link1
    assert link2 is None
    return rows1 + rows2, skipped


def test_parse_excludes_windows_devtest_low_priority() -> None:
    rows, skipped = _parse_both()
    assert skipped == Counter({"Windows": 1, "DevTest": 1, "Low Priority (Batch)": 1})
    a100 = {(r.kind, r.term_years): r.price_usd_per_hour for r in rows if r.arm_sku_name.endswith("A100_v4")}
    assert a100[("on_demand", 0)] == 3.673
    assert a100[("spot", 0)] == 1.4692
    assert a100[("savings_plan", 1)] == 2.6424
    assert a100[("savings_plan", 3)] == 1.7854


def test_reservation_total_is_divided_by_term_hours() -> None:
    rows, _ = _parse_both()
    res = {r.term_years: r.price_usd_per_hour for r in rows if r.kind == "reserved"}
    assert res[1] == pytest.approx(20268.94 / 8760, rel=1e-12)
    assert res[3] == pytest.approx(39045.6 / 26280, rel=1e-12)
    assert res[1] == pytest.approx(2.313806, abs=1e-6)


def test_normalise_maps_counts_and_takes_latest(shipped: OfferTable) -> None:
    rows, skipped = _parse_both()
    unmapped: Counter[str] = Counter()
    machines = azure.normalise(rows, shape_index(shipped, "azure"), unmapped, skipped)
    by_sku = {m.shape.instance_type: m for m in machines}
    assert set(by_sku) == {"Standard_NC24ads_A100_v4", "Standard_NC4as_T4_v3"}
    t4 = by_sku["Standard_NC4as_T4_v3"]
    assert t4.on_demand_usd_per_hour == 0.55  # the 2025-09-01 row beats the 2021-06-01 row
    assert t4.spot_usd_per_hour is None
    # the savings-plan entries sit on the older on-demand row: their own date says so (issue 22)
    dated = "effectiveStartDate 2021-06-01T00:00:00Z"
    assert t4.commitments == {("savings_plan", 1): (0.3911, dated), ("savings_plan", 3): (0.2701, dated)}
    a100 = by_sku["Standard_NC24ads_A100_v4"]
    assert a100.shape.gpu == "A100-PCIe-80GB"
    assert a100.commitments[("reserved", 3)][0] == pytest.approx(1.485753, abs=1e-6)
    assert unmapped == Counter({"Standard_ND96isr_H200_v5": 1})
    assert skipped["not a GPU VM size"] == 1


def test_page_without_items_is_fetch_error() -> None:
    with pytest.raises(FetchError, match="Items"):
        azure.parse_page({"error": "throttled"}, Counter())


def test_region_filter_is_case_sensitive_odata() -> None:
    assert azure.region_filter("eastus") == "serviceName eq 'Virtual Machines' and armRegionName eq 'eastus'"
