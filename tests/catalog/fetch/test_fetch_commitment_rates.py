"""Fetched commitment rates are per offer, dated and sourced: verified, so used without any opt-in (issue 22).

The shipped table has no AWS/Azure 1-year figure at all and only unverified 3-year ceilings, so on the
shipped catalog `--pricing 1y --provider aws` has no offer; a refresh from the recorded AWS price list gives
p4d.24xlarge its Reserved 1-year and 3-year rates, and those price the offer with their source and date.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

import httpx
import numpy as np
import pytest

from gpufleet.catalog.fetch import pipeline as R
from gpufleet.catalog.fetch import store
from gpufleet.catalog.offers import OfferTable, read_offers_csv
from gpufleet.catalog.pricing import commitment_rate_info, load_commitment_assumptions, prices_usd_per_hour

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_aws_reserved_rates_price_1y_and_3y_without_opt_in(
    fake_api: list[httpx.Request], shipped: OfferTable
) -> None:
    before = load_commitment_assumptions()
    aws = shipped.filter(provider="aws")
    assert np.isnan(prices_usd_per_hour(aws, "commit_1y", before)).all()  # no AWS 1-year figure anywhere
    assert np.isnan(prices_usd_per_hour(aws, "commit_3y", before)).all()  # only an unverified ceiling

    R.write_result(R.refresh("aws", ["us-east-1"], shipped=shipped, now=NOW), shipped)
    a = load_commitment_assumptions()
    assert not a.allow_unverified
    table = read_offers_csv(store.offers_path("aws").read_text())
    p4d = np.asarray(table.column("instance_type") == "p4d.24xlarge")
    od = np.asarray(table.column("price_on_demand_usd_per_hour"))[p4d]
    one = prices_usd_per_hour(table, "commit_1y", a)[p4d]
    three = prices_usd_per_hour(table, "commit_3y", a)[p4d]
    # the recorded Reserved terms (upfront fees amortised), applied as 1 - rate / on-demand of the same fetch
    assert one == pytest.approx(np.full(len(od), 13.599658), abs=1e-5)
    assert three == pytest.approx(np.full(len(od), 10.579193), abs=1e-5)
    info = commitment_rate_info("aws", "us-east-1", "p4d.24xlarge", "A100-SXM-40GB", 8.0, "commit_1y", a)
    assert info is not None and info.verified and info.basis == "fetched" and info.program == "reserved"
    assert "AWS price-list bulk API" in info.source and "captured 2026-11-22T12:00:00Z" in info.source
    assert "effectiveDate 2026-06-01" in info.source
    assert math.isclose(info.discount_fraction, 1 - 13.599658 / 21.957642, abs_tol=1e-6)
