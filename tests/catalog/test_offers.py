"""OfferTable, CSV I/O, validation of the shipped table, filters (hypothesis), sort, catalog age."""

from __future__ import annotations

import fnmatch
import math
from datetime import date

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpufleet.catalog import offers as offers_mod
from gpufleet.catalog.offers import (
    OFFER_COLUMNS,
    Offer,
    OfferTable,
    catalog_age,
    load_shipped_offers,
    read_offers_csv,
    write_offers_csv,
)
from gpufleet.errors import DataError, InputError, UnknownNameError


def _offer(**kw: object) -> Offer:
    base: dict[str, object] = dict(
        provider="aws",
        region="us-east-1",
        zone=None,
        instance_type="p5.48xlarge",
        gpu="H100-SXM",
        gpu_count=8.0,
        gpu_memory_gib=79.65,
        vcpus=192.0,
        ram_gib=2048.0,
        arch="x86_64",
        price_on_demand_usd_per_hour=55.04,
        price_spot_usd_per_hour=None,
        captured_at="2026-08/2026-11",
        source="test",
    )
    base.update(kw)
    return Offer(**base)  # type: ignore[arg-type]


SMALL = [
    _offer(),
    _offer(
        provider="gcp",
        region="europe-west4",
        zone="europe-west4-a",
        instance_type="a3-highgpu-1g",
        gpu_count=1.0,
        price_on_demand_usd_per_hour=11.0,
        price_spot_usd_per_hour=3.0,
    ),
    _offer(
        provider="runpod",
        region="US",
        instance_type="1x_L40S",
        gpu="L40S",
        gpu_count=1.0,
        gpu_memory_gib=44.99,
        price_on_demand_usd_per_hour=0.86,
        price_spot_usd_per_hour=0.71,
        captured_at="old",
    ),
    _offer(
        provider="gcp",
        region="us-central1",
        instance_type="n1-standard-8",
        gpu=None,
        gpu_count=0.0,
        gpu_memory_gib=0.0,
        price_on_demand_usd_per_hour=0.38,
    ),
    _offer(
        provider="aws",
        region="us-west-2",
        instance_type="g6f.large",
        gpu="L4",
        gpu_count=0.125,
        gpu_memory_gib=22.49,
        price_on_demand_usd_per_hour=0.2,
    ),
]


def test_roundtrip_csv_exact_columns() -> None:
    text = write_offers_csv(SMALL)
    assert text.splitlines()[0].split(",") == list(OFFER_COLUMNS)
    back = read_offers_csv(text).records()
    assert back == SMALL


def test_table_is_immutable() -> None:
    t = OfferTable.from_offers(SMALL)
    with pytest.raises(ValueError):
        t.column("price_on_demand_usd_per_hour")[0] = 1.0
    with pytest.raises(AttributeError):
        t._n = 3  # type: ignore[misc]


def test_unknown_column() -> None:
    with pytest.raises(UnknownNameError):
        OfferTable.from_offers(SMALL).column("price")


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        (",55.04,", ",0,", "price_on_demand_usd_per_hour"),
        (",55.04,", ",-1,", "price_on_demand_usd_per_hour"),
        (",55.04,", ",nan,", "price_on_demand_usd_per_hour"),
        (",55.04,", ",abc,", "is not a number"),
        (",11,3,", ",11,0,", "price_spot_usd_per_hour"),
        ("H100-SXM,8,", "H100-XYZ,8,", "not a spec id"),
        ("H100-SXM,8,", "H100-SXM,0,", "gpu_count"),
    ],
)
def test_read_rejects_bad_rows(old: str, new: str, needle: str) -> None:
    text = write_offers_csv(SMALL)
    assert old in text
    with pytest.raises(DataError) as err:
        read_offers_csv(text.replace(old, new, 1), source_name="x.csv")
    assert needle in str(err.value) and "x.csv" in str(err.value)


def test_read_rejects_missing_column() -> None:
    text = write_offers_csv(SMALL).replace("captured_at", "captured", 1)
    with pytest.raises(DataError, match="captured_at"):
        read_offers_csv(text)


def test_read_rejects_empty() -> None:
    with pytest.raises(DataError, match="empty"):
        read_offers_csv("")


def test_corrupted_shipped_table_says_reinstall(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeFile:
        def __init__(self, text: str | None) -> None:
            self.text = text

        def joinpath(self, *parts: str) -> FakeFile:
            return self

        def read_text(self, encoding: str = "utf-8") -> str:
            if self.text is None:
                raise FileNotFoundError("offers.csv")
            return self.text

    load_shipped_offers.cache_clear()
    try:
        monkeypatch.setattr(offers_mod.resources, "files", lambda _pkg: FakeFile("provider,region\naws,x\n"))
        with pytest.raises(DataError, match=r"corrupted.*Reinstall"):
            load_shipped_offers()
        monkeypatch.setattr(offers_mod.resources, "files", lambda _pkg: FakeFile(None))
        with pytest.raises(DataError, match=r"missing.*Reinstall"):
            load_shipped_offers()
    finally:
        monkeypatch.undo()
        load_shipped_offers.cache_clear()


def test_filter_examples() -> None:
    t = OfferTable.from_offers(SMALL)
    assert len(t.filter(gpu="H100")) == 2  # alias H100 -> H100-SXM
    assert len(t.filter(gpu="H100-SXM", gpus=1)) == 1
    assert len(t.filter(provider="gcp,runpod")) == 3
    assert len(t.filter(provider=["GCP"])) == 2
    assert len(t.filter(region_glob="US-*")) == 3
    assert [o.provider for o in t.filter(spot=True, max_price_usd_per_hour=1.0).records()] == ["runpod"]
    assert len(t.filter(min_gpu_memory_gib=40)) == 3


def test_filter_unknown_provider_lists_known() -> None:
    with pytest.raises(UnknownNameError) as err:
        OfferTable.from_offers(SMALL).filter(provider="azure")
    assert "aws" in str(err.value) and "gcp" in str(err.value)


def test_filter_unknown_gpu() -> None:
    with pytest.raises(UnknownNameError):
        OfferTable.from_offers(SMALL).filter(gpu="H1000")


@pytest.mark.parametrize(
    "kw", [{"gpus": 0}, {"gpus": -1}, {"max_price_usd_per_hour": math.nan}, {"min_gpu_memory_gib": -5}]
)
def test_filter_bad_numbers(kw: dict[str, float]) -> None:
    with pytest.raises(InputError):
        OfferTable.from_offers(SMALL).filter(**kw)  # type: ignore[arg-type]


def test_sort_keys() -> None:
    t = OfferTable.from_offers(SMALL)
    assert [o.instance_type for o in t.sort("price").records()][:2] == ["g6f.large", "n1-standard-8"]
    per_gpu = t.sort("price_per_gpu").records()
    assert per_gpu[0].instance_type == "1x_L40S"  # 0.86 / 1 GPU; g6f.large is 0.2 / 0.125 = 1.6
    assert per_gpu[-1].gpu is None  # CPU-only rows have no per-GPU price: last
    with pytest.raises(UnknownNameError):
        t.sort("cheapest")


def test_catalog_age() -> None:
    ages = {a.provider: a for a in catalog_age(OfferTable.from_offers(SMALL), today=date(2026, 11, 22))}
    assert ages["aws"].captured_at == ("2026-08/2026-11",)
    assert ages["aws"].newest_age_days == 0 and ages["aws"].oldest_age_days == 113
    assert ages["aws"].human == "0-4 months old"
    assert ages["runpod"].newest_age_days is None and "unknown" in ages["runpod"].human


# --- hypothesis: filters never return a violating offer; sort is ordered ------------------------------------
TABLE = load_shipped_offers()
PROVIDERS = TABLE.providers()
GPUS = sorted({g for g in TABLE.column("gpu").tolist() if g})


@given(
    gpu=st.none() | st.sampled_from(GPUS),
    mem=st.none() | st.floats(min_value=0, max_value=200),
    gpus=st.none() | st.sampled_from([0.125, 1.0, 2.0, 4.0, 8.0, 16.0]),
    provider=st.none() | st.lists(st.sampled_from(PROVIDERS), min_size=1, max_size=3),
    region=st.none() | st.sampled_from(["us-*", "*europe*", "*-1", "asia-east1", "*"]),
    spot=st.booleans(),
    max_price=st.none() | st.floats(min_value=0.01, max_value=200),
)
def test_filter_never_violates(
    gpu: str | None,
    mem: float | None,
    gpus: float | None,
    provider: list[str] | None,
    region: str | None,
    spot: bool,
    max_price: float | None,
) -> None:
    out = TABLE.filter(
        gpu=gpu,
        min_gpu_memory_gib=mem,
        gpus=gpus,
        provider=provider,
        region_glob=region,
        spot=spot,
        max_price_usd_per_hour=max_price,
    )
    ref = [
        o
        for o in TABLE.records()
        if (gpu is None or o.gpu == gpu)
        and (mem is None or o.gpu_memory_gib >= mem)
        and (gpus is None or o.gpu_count == gpus)
        and (provider is None or o.provider in provider)
        and (region is None or fnmatch.fnmatchcase(o.region.lower(), region.lower()))
        and (not spot or o.price_spot_usd_per_hour is not None)
        and (
            max_price is None
            or ((o.price_spot_usd_per_hour or math.inf) if spot else o.price_on_demand_usd_per_hour)
            <= max_price
        )
    ]
    assert len(out) == len(ref)
    for o in out.records():
        assert gpu is None or o.gpu == gpu
        assert mem is None or o.gpu_memory_gib >= mem
        assert provider is None or o.provider in provider
        assert not spot or (o.price_spot_usd_per_hour is not None and o.price_spot_usd_per_hour > 0)


@given(
    key=st.sampled_from(["price", "price_per_gpu", "price_per_gpu_memory"]),
    spot=st.booleans(),
    gpu=st.none() | st.sampled_from(GPUS),
)
def test_sort_is_ordered(key: str, spot: bool, gpu: str | None) -> None:
    t = TABLE.filter(gpu=gpu).sort(key, spot=spot)
    values = t.sort_values(key, spot=spot)
    assert np.all(values[1:] >= values[:-1])
    assert len(t) == len(TABLE.filter(gpu=gpu))
