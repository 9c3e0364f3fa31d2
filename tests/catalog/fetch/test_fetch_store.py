"""Atomic writes into the data directory, refusal to overwrite foreign or edited files, and reading back."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.catalog.fetch import store
from gpufleet.catalog.fetch.rates import CommitmentRate, read_rates_csv, write_rates_csv
from gpufleet.errors import DataError


def test_data_dir_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "x"))
    assert store.data_dir() == tmp_path / "a"
    monkeypatch.delenv("GPUFLEET_DATA_DIR")
    assert store.data_dir() == tmp_path / "x" / "gpufleet"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert store.data_dir() == tmp_path / "home" / ".local" / "share" / "gpufleet"


def _write(provider: str, offers: str, commitments: str = "c\n") -> dict[str, Path]:
    return store.write_provider(
        provider, {"offers": offers, "commitments": commitments}, {"provider": provider}
    )


def test_write_is_atomic_and_switched_by_manifest(data_dir: Path) -> None:
    paths = _write("azure", "a,b\n1,2\n")
    assert paths["offers"].read_text() == "a,b\n1,2\n"
    assert store.offers_path("azure") == paths["offers"]
    assert store.refreshed_offer_files() == [paths["offers"]]
    paths2 = _write("azure", "a,b\n3,4\n")  # ours: switched, the old file removed
    assert store.refreshed_offer_files() == [paths2["offers"]]
    assert not paths["offers"].exists()
    names = sorted(p.name for p in paths2["offers"].parent.iterdir())
    assert names == sorted([paths2["offers"].name, paths2["commitments"].name, "azure.manifest.json"])


def test_refuses_foreign_manifest(data_dir: Path) -> None:
    path = store.manifest_path("aws")
    path.parent.mkdir(parents=True)
    path.write_text('{"notes": "my own"}\n')
    with pytest.raises(DataError, match="was not written by gpufleet"):
        _write("aws", "x\n")
    assert path.read_text() == '{"notes": "my own"}\n'
    with pytest.warns(store.StoredDataWarning, match="not written by gpufleet"):
        assert store.refreshed_offer_files() == []  # not ours: never loaded


@pytest.mark.parametrize("damage", ["truncate", "edit", "delete"])
def test_damaged_file_rejected_with_warning(data_dir: Path, damage: str) -> None:
    paths = _write("gcp", "x,y\n" + "1,2\n" * 100)
    f = paths["offers"]
    if damage == "truncate":
        f.write_bytes(f.read_bytes()[:50])
    elif damage == "edit":
        f.write_text(f.read_text().replace("1,2", "9,9", 1))
    else:
        f.unlink()
    with pytest.warns(store.StoredDataWarning, match="Using the shipped gcp prices"):
        assert store.refreshed_offer_files() == []
    _write("gcp", "x,y\n5,6\n")  # the next update works
    assert [p.read_text() for p in store.refreshed_offer_files()] == ["x,y\n5,6\n"]


def test_damaged_manifest_rejected_then_replaced(data_dir: Path) -> None:
    _write("azure", "x\n")
    m = store.manifest_path("azure")
    m.write_bytes(m.read_bytes()[:20])
    with pytest.warns(store.StoredDataWarning, match="not valid JSON"):
        assert store.refreshed_offer_files() == []
    _write("azure", "y\n")
    assert [p.read_text() for p in store.refreshed_offer_files()] == ["y\n"]


def test_failed_write_leaves_old_state(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write("azure", "old\n")

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        _write("azure", "new\n")
    assert [p.read_text() for p in store.refreshed_offer_files()] == ["old\n"]
    assert [p for p in store.refreshed_dir().iterdir() if p.name.endswith(".tmp")] == []


def test_reading_creates_nothing(data_dir: Path) -> None:
    assert store.refreshed_offer_files() == []
    assert store.read_refreshed_commitments() == []
    assert not data_dir.exists()


def _rate(**kw: object) -> CommitmentRate:
    base: dict[str, object] = dict(
        provider="aws",
        region="us-east-1",
        instance_type="p4d.24xlarge",
        gpu="A100-SXM-40GB",
        gpu_count=8.0,
        program="reserved",
        term_years=1,
        price_usd_per_hour=13.6,
        on_demand_usd_per_hour=21.96,
        option="standard All Upfront",
        captured_at="2026-11-22T00:00:00Z",
        source="test",
    )
    base.update(kw)
    return CommitmentRate(**base)  # type: ignore[arg-type]


def test_rates_csv_round_trip() -> None:
    rates = [_rate(), _rate(term_years=3, price_usd_per_hour=10.579193)]
    back = read_rates_csv(write_rates_csv(rates), source_name="t")
    assert back == rates
    assert back[0].discount_fraction == pytest.approx(1 - 13.6 / 21.96)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        ({"term_years": 2}, "term 2"),
        ({"program": "lease"}, "'lease'"),
        ({"price_usd_per_hour": 30.0}, "30.0"),
    ],
)
def test_rates_csv_rejects_bad_rows(edit: dict[str, object], match: str) -> None:
    with pytest.raises(DataError, match=match):
        read_rates_csv(write_rates_csv([_rate(**edit)]), source_name="t")


def test_rates_csv_missing_column() -> None:
    with pytest.raises(DataError, match="lacks columns"):
        read_rates_csv("provider,region\naws,us-east-1\n", source_name="t")
