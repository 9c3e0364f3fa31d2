"""Price kinds: vectorised prices equal a scalar reference; commitments never above on-demand; NaN if none."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.catalog.fetch.rates import CommitmentRate
from gpufleet.catalog.offers import Offer, OfferTable
from gpufleet.catalog.pricing import (
    PRICE_KINDS,
    CommitmentAssumption,
    CommitmentAssumptions,
    allow_unverified_commitments,
    commitment_rate_info,
    describe_assumptions,
    load_commitment_assumptions,
    prices_usd_per_hour,
)
from gpufleet.errors import UnknownNameError

PROVIDERS = ("aws", "azure", "gcp", "lambda")
PROGRAMS_OF = {"reserved": ("reserved",), "savings_plan": ("savings_plan",), "cud": ("cud",)}


@pytest.fixture(autouse=True)
def _empty_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "none"))


def _offer(provider: str, region: str, it: str, od: float, spot: float | None, n: float = 1.0) -> Offer:
    return Offer(
        provider=provider,
        region=region,
        zone=None,
        instance_type=it,
        gpu="T4",
        gpu_count=n,
        gpu_memory_gib=15.0,
        vcpus=4.0,
        ram_gib=16.0,
        arch=None,
        price_on_demand_usd_per_hour=od,
        price_spot_usd_per_hour=spot,
        captured_at="2026-11",
        source="test",
    )


def _reference(o: Offer, kind: str, a: CommitmentAssumptions) -> float:
    """Scalar reference written independently of the vectorised code."""
    if kind == "on_demand":
        return o.price_on_demand_usd_per_hour
    if kind == "spot":
        return math.nan if o.price_spot_usd_per_hour is None else o.price_spot_usd_per_hour
    name, term = kind.rsplit("_", 1)
    years = int(term[0])
    programs = ("reserved", "savings_plan", "cud", "flexible_cud") if name == "commit" else PROGRAMS_OF[name]
    fetched = [
        f.discount_fraction
        for f in a.fetched
        if (f.provider, f.region, f.instance_type, f.gpu, f.gpu_count)
        == (o.provider, o.region, o.instance_type, o.gpu, o.gpu_count)
        and f.program in programs
        and f.term_years == years
    ]
    table = [
        r.discount_fraction
        for r in a.rows
        if r.provider == o.provider
        and r.program in programs
        and r.term_years == years
        and (r.verified or a.allow_unverified)
    ]
    d = max(fetched) if fetched else (max(table) if table else math.nan)
    return o.price_on_demand_usd_per_hour * (1 - d)


def _rate(o: Offer, program: str, term: int, price: float) -> CommitmentRate:
    return CommitmentRate(
        provider=o.provider,
        region=o.region,
        instance_type=o.instance_type,
        gpu=o.gpu or "",
        gpu_count=o.gpu_count,
        program=program,
        term_years=term,
        price_usd_per_hour=price,
        on_demand_usd_per_hour=o.price_on_demand_usd_per_hour * 1.1,
        option="",
        captured_at="t",
        source="test",
    )


offers_st = st.lists(
    st.builds(
        _offer,
        provider=st.sampled_from(PROVIDERS),
        region=st.sampled_from(("r1", "r2")),
        it=st.sampled_from(("a", "b", "c")),
        od=st.floats(0.01, 200.0),
        spot=st.none() | st.floats(0.005, 100.0),
        n=st.sampled_from((0.5, 1.0, 8.0)),
    ),
    min_size=0,
    max_size=25,
)
rows_st = st.lists(
    st.builds(
        CommitmentAssumption,
        provider=st.sampled_from(PROVIDERS[:3]),
        program=st.sampled_from(("reserved", "savings_plan", "cud", "flexible_cud")),
        term_years=st.sampled_from((1, 3)),
        discount_fraction=st.floats(0.0, 0.95),
        source=st.just("test"),
        verified=st.booleans(),
        note=st.just(""),
        origin=st.just("test"),
    ),
    max_size=8,
)


@given(offers=offers_st, rows=rows_st, data=st.data())
def test_vectorised_equals_scalar_reference(
    offers: list[Offer], rows: list[CommitmentAssumption], data: st.DataObject
) -> None:
    # unique (provider, program, term) rows, as the loader guarantees
    uniq = list({(r.provider, r.program, r.term_years): r for r in rows}.values())
    fetched = []
    for o in offers:
        if o.provider != "lambda" and data.draw(st.booleans()):
            price = o.price_on_demand_usd_per_hour * data.draw(st.floats(0.2, 1.0))
            prog = data.draw(st.sampled_from(("reserved", "savings_plan", "cud")))
            fetched.append(_rate(o, prog, data.draw(st.sampled_from((1, 3))), price))
    a = CommitmentAssumptions(
        rows=tuple(uniq), fetched=tuple(fetched), allow_unverified=data.draw(st.booleans())
    )
    table = OfferTable.from_offers(offers)
    od = table.column("price_on_demand_usd_per_hour")
    for kind in PRICE_KINDS:
        got = prices_usd_per_hour(table, kind, a)
        want = np.array([_reference(o, kind, a) for o in offers], dtype=float)
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
        if kind not in ("on_demand", "spot"):
            known = ~np.isnan(got)
            assert np.all(got[known] <= od[known] * (1 + 1e-12))
            assert np.all(got[known] > 0)
            lam = table.column("provider") == "lambda"
            assert np.all(np.isnan(got[lam]))  # no sourced program: no price, never invented


def test_shipped_defaults_are_unverified_and_unused_without_opt_in() -> None:
    """No shipped row has a per-offer source, so none prices an offer unless the user opts in (issue 22)."""
    a = load_commitment_assumptions(include_fetched=False)
    assert a.rows and not any(r.verified for r in a.rows)
    t = OfferTable.from_offers([_offer(p, "r", "x", 10.0, 4.0) for p in PROVIDERS])
    for kind in PRICE_KINDS[2:]:
        assert np.isnan(prices_usd_per_hour(t, kind, a)).all(), kind
    with allow_unverified_commitments():
        assert prices_usd_per_hour(t, "commit_3y", a)[0] == pytest.approx(3.4)
    assert np.isnan(prices_usd_per_hour(t, "commit_3y", a)[0])  # the opt-in ends with its block


def test_shipped_defaults_exact() -> None:
    a = load_commitment_assumptions(allow_unverified=True)
    offers = [_offer(p, "r", "x", 10.0, 4.0) for p in PROVIDERS]
    t = OfferTable.from_offers(offers)
    got = {k: prices_usd_per_hour(t, k, a).tolist() for k in PRICE_KINDS}
    nan = math.nan
    assert got["on_demand"] == [10.0] * 4 and got["spot"] == [4.0] * 4
    np.testing.assert_allclose(got["reserved_3y"], [3.4, 2.8, nan, nan])  # aws 66 %, azure 72 %
    np.testing.assert_allclose(got["cud_3y"], [nan, nan, 4.5, nan])  # gcp 55 %
    np.testing.assert_allclose(got["commit_3y"], [3.4, 2.8, 4.5, nan])
    np.testing.assert_allclose(got["commit_1y"], [nan, nan, 7.2, nan])  # only gcp flexible CUD 28 % (1y)
    assert np.isnan(got["reserved_1y"]).all() and np.isnan(got["cud_1y"]).all()


def test_fetched_rate_wins_over_table_for_commit() -> None:
    o = _offer("aws", "us-east-1", "p4d.24xlarge", 20.0, None, 8.0)
    rate = CommitmentRate(
        provider="aws",
        region="us-east-1",
        instance_type="p4d.24xlarge",
        gpu="T4",
        gpu_count=8.0,
        program="reserved",
        term_years=3,
        price_usd_per_hour=12.0,
        on_demand_usd_per_hour=24.0,
        option="standard All Upfront",
        captured_at="t",
        source="AWS price list",
    )
    a = load_commitment_assumptions(include_fetched=False)
    a = CommitmentAssumptions(rows=a.rows, fetched=(rate,), allow_unverified=True)
    t = OfferTable.from_offers([o, _offer("aws", "us-west-2", "p4d.24xlarge", 20.0, None, 8.0)])
    # fetched discount 50 % (12/24) applied to this offer's on-demand; the other region keeps the 66 % default
    np.testing.assert_allclose(prices_usd_per_hour(t, "commit_3y", a), [10.0, 20.0 * 0.34])
    # without the opt-in only the fetched (verified) rate prices anything
    strict = CommitmentAssumptions(rows=a.rows, fetched=(rate,))
    np.testing.assert_allclose(prices_usd_per_hour(t, "commit_3y", strict), [10.0, math.nan])
    info = commitment_rate_info("aws", "us-east-1", "p4d.24xlarge", "T4", 8.0, "commit_3y", strict)
    assert info is not None and info.verified and info.basis == "fetched" and "captured t" in info.source
    assert commitment_rate_info("aws", "us-west-2", "p4d.24xlarge", "T4", 8.0, "commit_3y", strict) is None
    ceiling = commitment_rate_info("aws", "us-west-2", "p4d.24xlarge", "T4", 8.0, "commit_3y", a)
    assert ceiling is not None and not ceiling.verified and ceiling.discount_fraction == pytest.approx(0.66)
    np.testing.assert_allclose(prices_usd_per_hour(t, "reserved_3y", a), [10.0, 20.0 * 0.34])
    rows = describe_assumptions(a)
    fetched = [r for r in rows if r.basis == "fetched"]
    assert len(fetched) == 1 and fetched[0].discount_fraction == pytest.approx(0.5)


def test_describe_marks_unverified_and_sources() -> None:
    rows = describe_assumptions(load_commitment_assumptions())
    assert rows and all(r.source and r.note for r in rows)
    # no shipped row has a per-offer source: every one is unverified (issue 22)
    assert {(r.provider, r.verified) for r in rows} == {("aws", False), ("azure", False), ("gcp", False)}
    assert all(0 <= r.discount_fraction < 1 for r in rows)


def test_unknown_kind() -> None:
    with pytest.raises(UnknownNameError, match="reserved_1y"):
        prices_usd_per_hour(OfferTable.from_offers([]), "reserved_1yr")


def test_empty_table() -> None:
    for kind in PRICE_KINDS:
        assert prices_usd_per_hour(OfferTable.from_offers([]), kind).shape == (0,)
