"""The binary cache of the shipped offer table gives exactly the parsed table, and never a wrong one."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from gpufleet.catalog import offers_cache, offers_io
from gpufleet.catalog.offer_table import _FLOAT_COLUMNS, _STR_COLUMNS, OFFER_COLUMNS, OfferTable
from gpufleet.catalog.specs import load_specs
from gpufleet.errors import DataError

TEXT = resources.files("gpufleet.catalog").joinpath("data", "offers.csv").read_text(encoding="utf-8")
SMALL = "\n".join(TEXT.splitlines()[:400]) + "\n"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _same(a: OfferTable, b: OfferTable) -> None:
    assert len(a) == len(b)
    for c in OFFER_COLUMNS:
        x, y = a.column(c), b.column(c)
        assert x.dtype == y.dtype, c
        if c in _FLOAT_COLUMNS:
            np.testing.assert_array_equal(x, y)  # NaN == NaN here, bit-exact otherwise
        else:
            assert x.tolist() == y.tolist(), c
            assert all(type(v) is str for v in x), c


def _load(text: str = SMALL) -> OfferTable:
    return offers_cache.load_cached(text, load_specs(), offers_io._read, offers_io._validate)


def test_cached_table_is_the_parsed_table(own_cache: Path) -> None:
    parsed = offers_io._read(TEXT)
    first = offers_cache.load_cached(TEXT, load_specs(), offers_io._read, offers_io._validate)
    assert len(list(own_cache.glob("offers-*.npz"))) == 1
    second = offers_cache.load_cached(TEXT, load_specs(), offers_io._read, offers_io._validate)
    _same(parsed, first)
    _same(parsed, second)
    assert parsed.records() == second.records()


def test_second_load_does_not_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _load()

    def no_parse(_: str) -> OfferTable:
        raise AssertionError("parsed again although the cache is valid")

    monkeypatch.setattr(offers_io, "_read", no_parse)
    _same(_load(), expected)


def test_another_text_or_spec_set_has_another_key() -> None:
    specs = list(load_specs())
    assert offers_cache.cache_key(SMALL, specs) != offers_cache.cache_key(SMALL + "\n", specs)
    assert offers_cache.cache_key(SMALL, specs) != offers_cache.cache_key(SMALL, specs[:-1])


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty", "other_key"])
def test_a_damaged_cache_is_ignored_and_rewritten(damage: str, own_cache: Path) -> None:
    expected = _load()
    (path,) = own_cache.glob("offers-*.npz")
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(b"not an npz" * 100)
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a valid npz of another table under this name
        other = "\n".join(TEXT.splitlines()[:10]) + "\n"
        key = offers_cache.cache_key(other, load_specs())
        path.write_bytes(offers_cache._to_npz(offers_io._read(other), key))
    _same(_load(), expected)
    _same(_load(), expected)  # rewritten: loads again from the cache
    assert path.read_bytes() == data


def test_an_edited_cache_with_invalid_rows_is_not_trusted(own_cache: Path) -> None:
    table = _load()
    (path,) = own_cache.glob("offers-*.npz")
    key = offers_cache.cache_key(SMALL, load_specs())
    cols = {c: table.column(c).copy() for c in OFFER_COLUMNS}
    cols["price_on_demand_usd_per_hour"][3] = -1.0  # passes the format checks, fails validation
    path.write_bytes(offers_cache._to_npz(OfferTable(cols), key))
    _same(_load(), table)


def test_an_unwritable_cache_dir_still_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("GPUFLEET_CACHE_DIR", str(blocker / "cache"))  # a path under a file: mkdir fails
    _same(_load(), offers_io.read_offers_csv(SMALL))


def test_bad_csv_is_still_rejected_with_the_row() -> None:
    lines = SMALL.splitlines()
    cells = lines[5].split(",")
    cells[OFFER_COLUMNS.index("price_on_demand_usd_per_hour")] = "0"
    bad = "\n".join([*lines[:5], ",".join(cells), *lines[6:]])
    with pytest.raises(DataError, match="row 6, field 'price_on_demand_usd_per_hour'"):
        offers_io.read_offers_csv(bad)


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("GPUFLEET_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert offers_cache.cache_dir() == tmp_path / "xdg" / "gpufleet"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert offers_cache.cache_dir() == Path.home() / ".cache" / "gpufleet"


def test_no_home_directory_still_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPUFLEET_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", no_home)
    _same(_load(), offers_io.read_offers_csv(SMALL))


def _codes_from_scratch(table: OfferTable, column: str) -> tuple[list[str], list[int]]:
    uniq, inverse = np.unique(table.column(column).astype(str), return_inverse=True)
    return uniq.tolist(), inverse.reshape(-1).tolist()


def test_cached_table_codes_are_the_columns_codes() -> None:
    """A table read from the cache takes each text column's sorted distinct values and codes from the file
    (not re-sorted): they must be what the column itself gives, for every text column."""
    _load()
    cached = _load()  # from the .npz
    assert cached._cache, "the cache file's codes were not used"
    for c in _STR_COLUMNS:
        uniq, codes = cached.codes(c)
        assert (list(uniq), codes.tolist()) == _codes_from_scratch(cached, c), c
        assert not codes.flags.writeable


def test_unsorted_cache_values_are_not_trusted_as_codes(own_cache: Path) -> None:
    """A cache file whose distinct values are out of order (edited) still gives the right codes: they are
    recomputed from the column, not taken from the file."""
    _load()
    path = next(own_cache.glob("offers-*.npz"))
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    values = arrays["region.values"]
    assert len(values) > 2
    perm = np.arange(len(values))[::-1].copy()  # reversed order; codes remapped so the column is unchanged
    arrays["region.values"] = values[perm]
    arrays["region.codes"] = np.argsort(perm).astype(np.int32)[arrays["region.codes"]]
    np.savez(path, allow_pickle=False, **arrays)
    table = _load()
    uniq, codes = table.codes("region")
    assert (list(uniq), codes.tolist()) == _codes_from_scratch(table, "region")
