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


def test_write_is_atomic_and_marked(data_dir: Path) -> None:
    path = store.offers_path("azure")
    store.write_refreshed(path, "a,b\n1,2\n", {"provider": "azure"})
    assert path.read_text() == "a,b\n1,2\n"
    assert store.is_ours(path)
    assert store.refreshed_offer_files() == [path]
    store.write_refreshed(path, "a,b\n3,4\n", {"provider": "azure"})  # ours: overwritten
    assert path.read_text() == "a,b\n3,4\n"
    leftovers = [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_refuses_foreign_file(data_dir: Path) -> None:
    path = store.offers_path("aws")
    path.parent.mkdir(parents=True)
    path.write_text("my own notes\n")
    with pytest.raises(DataError, match="was not written by gpufleet"):
        store.write_refreshed(path, "x\n", {})
    assert path.read_text() == "my own notes\n"
    assert store.refreshed_offer_files() == []  # not ours: never loaded


def test_refuses_file_edited_after_we_wrote_it(data_dir: Path) -> None:
    path = store.commitments_path("gcp")
    store.write_refreshed(path, "x\n", {})
    path.write_text("x\nedited by hand\n")
    with pytest.raises(DataError, match="edited after gpufleet wrote it"):
        store.write_refreshed(path, "y\n", {})
    assert path.read_text() == "x\nedited by hand\n"


def test_failed_write_leaves_old_file(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = store.offers_path("azure")
    store.write_refreshed(path, "old\n", {})

    def boom(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(store.os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        store.write_refreshed(path, "new\n", {})
    assert path.read_text() == "old\n"
    assert [p for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


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
