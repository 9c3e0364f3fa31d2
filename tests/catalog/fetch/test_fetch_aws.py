"""AWS offer-file parser and normaliser on the recorded sample (exact numbers)."""

from __future__ import annotations

from collections import Counter

import pytest

from conftest import sample
from gpufleet.catalog.fetch import aws
from gpufleet.catalog.fetch.normalise import shape_index
from gpufleet.catalog.offers import OfferTable
from gpufleet.errors import FetchError


def _parsed() -> tuple[aws.AwsOfferFile, Counter[str]]:
    skipped: Counter[str] = Counter()
    return aws.parse_offer_file(sample("aws/us-east-1.json"), skipped), skipped


def test_filters_linux_shared_na_used_boxusage() -> None:
    parsed, skipped = _parsed()
    assert {p.instance_type for p in parsed.products.values()} == {
        "p4d.24xlarge",
        "p5.48xlarge",
        "g6e.xlarge",
        "m5.large",
    }
    assert skipped == Counter(
        {
            "not Linux": 1,
            "not shared tenancy": 1,
            "capacity reservation (UnusedCapacityReservation/AllocatedCapacity...)": 1,
            "pre-installed software": 1,
        }
    )
    p4d = parsed.products["P4DLINUX"]
    assert (p4d.vcpus, p4d.ram_gib, p4d.gpu_count) == (96.0, 1152.0, 8.0)
    assert parsed.publication_date == "2026-07-01T00:00:00Z"


def test_on_demand_and_reserved_with_amortised_upfront() -> None:
    parsed, _ = _parsed()
    assert parsed.on_demand["P4DLINUX"] == (21.957642, "2026-06-01T00:00:00Z")
    assert parsed.on_demand["P5LINUX"] == (55.04, "2026-07-01T00:00:00Z")
    res = {
        (r.term_years, r.offering_class, r.purchase_option): r.price_usd_per_hour
        for r in parsed.reserved["P4DLINUX"]
    }
    assert res[(1, "standard", "No Upfront")] == 14.4934
    assert res[(1, "standard", "All Upfront")] == pytest.approx(119133 / 8760, rel=1e-12)
    assert res[(3, "standard", "Partial Upfront")] == pytest.approx(5.29 + 139000 / 26280, rel=1e-12)
    assert res[(3, "convertible", "All Upfront")] == pytest.approx(310000 / 26280, rel=1e-12)
    assert "P4DWIN" not in parsed.reserved


def test_normalise_keeps_cheapest_option_and_counts_unmapped(shipped: OfferTable) -> None:
    parsed, skipped = _parsed()
    unmapped: Counter[str] = Counter()
    machines = aws.normalise(parsed, "us-east-1", shape_index(shipped, "aws"), unmapped, skipped)
    by = {m.shape.instance_type: m for m in machines}
    assert set(by) == {"p4d.24xlarge", "p5.48xlarge"}
    p4d = by["p4d.24xlarge"]
    # each rate is dated with its term's own effectiveDate (issue 22: dated and sourced like on-demand)
    assert p4d.commitments[("reserved", 1)] == (
        pytest.approx(13.599658, abs=1e-6),
        "standard All Upfront, effectiveDate 2026-06-01T00:00:00Z",
    )
    assert p4d.commitments[("reserved", 3)] == (
        pytest.approx(10.579193, abs=1e-6),
        "standard Partial Upfront, effectiveDate 2026-06-01T00:00:00Z",
    )
    assert "effectiveDate 2026-06-01" in p4d.note and "publicationDate 2026-07-01" in p4d.note
    assert by["p5.48xlarge"].on_demand_usd_per_hour == 55.04
    assert unmapped == Counter({"g6e.xlarge": 1})
    assert skipped["not an accelerator instance"] == 1


def test_file_without_products_is_fetch_error() -> None:
    with pytest.raises(FetchError, match="products"):
        aws.parse_offer_file({"terms": {}}, Counter())
