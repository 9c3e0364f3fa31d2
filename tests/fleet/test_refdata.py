"""Reference data: great-circle distance, RTT, egress tiers, carbon lookups."""

from __future__ import annotations

import math

from gpufleet.fleet.refdata import (
    carbon,
    cpu_offers,
    egress_tiers,
    great_circle_km,
    mig_profiles,
    priced_gib,
    region_info,
    rtt_estimate_ms,
    transfer_usd,
)
from gpufleet.units import GB, GIB


def test_great_circle_london_paris() -> None:
    # London (51.5074, -0.1278) - Paris (48.8566, 2.3522): ~344 km (haversine)
    assert math.isclose(great_circle_km(51.5074, -0.1278, 48.8566, 2.3522), 343.5, rel_tol=0.01)
    assert math.isclose(rtt_estimate_ms(1000.0), 2 * 1000 * 1.5 / 204)


def test_aws_internet_egress_tiers() -> None:
    tiers = egress_tiers("aws", "internet_out", "us-east-1")
    assert [t.usd_per_gb for t in tiers] == [0.09, 0.085, 0.07, 0.05]
    assert math.isclose(priced_gib(tiers, 100.0), 100 * GIB / GB * 0.09)
    assert egress_tiers("aws", "internet_out", "sa-east-1")[0].usd_per_gb == 0.15


def test_inter_region_same_vs_cross_continent() -> None:
    same = transfer_usd("aws", "us-east-1", "aws", "us-west-2", 100.0)
    assert same is not None and math.isclose(same, 100 * GIB / GB * 0.02)
    assert transfer_usd("aws", "us-east-1", "aws", "us-east-1", 100.0) == 0.0
    assert transfer_usd("vast", "x", "aws", "us-east-1", 10.0) is None  # no sourced price: never guessed


def test_lookups() -> None:
    info = region_info("aws", "us-east-1")
    assert info is not None and info.geo == "us"
    g = carbon()[("gcp", "europe-west1")]
    assert g[2] == "google-region-carbon-info" and g[0] > 0
    assert {o.arch for o in cpu_offers()} == {"arm64", "x86_64"}
    assert any(p.gpu.startswith("A100") and p.profile == "1g.10gb" for p in mig_profiles())
