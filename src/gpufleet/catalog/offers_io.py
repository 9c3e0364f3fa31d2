"""Offer tables as CSV text (read with validation, write), and loading the shipped, refreshed and user tables.

The shipped table ``data/offers.csv`` is built by ``tools/build_catalog.py`` (see ``data/PROVENANCE.md``).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.catalog.offer_table import (
    _FLOAT_COLUMNS,
    _OPTIONAL_FLOAT,
    _OPTIONAL_STR,
    _STR_COLUMNS,
    OFFER_COLUMNS,
    Offer,
    OfferTable,
)
from gpufleet.catalog.specs import load_specs
from gpufleet.errors import DataError, GpufleetError, InputError
from gpufleet.validation import checked_output

_SHIPPED_FILE = "offers.csv"
_REINSTALL = "Reinstall gpufleet (pip install --force-reinstall gpufleet) to restore the shipped catalog."


# --- CSV I/O ------------------------------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if math.isnan(v):
            return ""
        return f"{round(v, 6):.6f}".rstrip("0").rstrip(".")
    return str(v)


def write_offers_csv(offers: Iterable[Offer] | OfferTable) -> str:
    """Offers as CSV text with exactly :data:`OFFER_COLUMNS` (numbers rounded to 6 decimals)."""
    table = offers if isinstance(offers, OfferTable) else OfferTable.from_offers(offers)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(OFFER_COLUMNS)
    cols = [table.column(c).tolist() for c in OFFER_COLUMNS]
    for row in zip(*cols, strict=True):
        w.writerow([_fmt(v) for v in row])
    return buf.getvalue()


class _Bad(Exception):
    pass


def _float_column(name: str, raw: Sequence[str], optional: bool) -> npt.NDArray[np.float64]:
    """Parse a numeric column ("" -> NaN where optional); name the first bad cell otherwise."""
    cells = list(map(str.strip, raw))
    values: dict[str, float] = {}  # each distinct cell checked and converted once (columns repeat a lot)
    for s in set(cells):
        if (not s and not optional) or s.lower() == "nan":
            what = (
                "empty, but a number is required" if not s else "'nan' (leave the field empty when unknown)"
            )
            raise _Bad(f"row {cells.index(s) + 2}, field {name!r}: {what}")
        try:
            values[s] = float(s or "nan")
        except ValueError:
            raise _Bad(f"row {cells.index(s) + 2}, field {name!r}: {s!r} is not a number") from None
    return np.fromiter(map(values.__getitem__, cells), dtype=np.float64, count=len(cells))


def _first_bad(mask: npt.NDArray[np.bool_]) -> int:
    return int(np.flatnonzero(mask)[0]) + 2


def read_offers_csv(text: str, *, source_name: str = "offers CSV") -> OfferTable:
    """Parse and validate a normalised offer CSV in :data:`OFFER_COLUMNS` (any column order).

    Raises :class:`DataError` naming the row and field: missing columns, non-numeric values, a price that is
    0, negative or NaN, a spot price of 0, a GPU that is not a spec id, a GPU count that disagrees with the
    GPU.
    """
    try:
        return _read(text)
    except csv.Error as exc:  # e.g. a field over the csv module's limit, a NUL byte
        raise DataError(
            f"The offer table {source_name} is not a valid CSV ({exc}). Quote fields that contain commas; "
            "keep each field under 128 KiB."
        ) from None
    except _Bad as exc:
        raise DataError(
            f"The offer table {source_name} is invalid: {exc}. Each row needs a provider, instance type "
            f"and a "
            "positive on-demand price; spot is empty or positive; gpu is empty (CPU-only, gpu_count 0) or "
            "a spec "
            "id from `gpufleet catalog gpus`."
        ) from exc


def _read(text: str) -> OfferTable:
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise _Bad("the file is empty")
    missing = [c for c in OFFER_COLUMNS if c not in header]
    if missing:
        raise _Bad(f"columns {missing} are missing (found {header})")
    idx = [header.index(c) for c in OFFER_COLUMNS]
    rows = list(reader)
    width = len(header)
    if all(len(row) == width for row in rows):  # the usual case: transpose at C speed
        by_index = list(zip(*rows, strict=True)) if rows else [() for _ in header]
        raw: dict[str, Sequence[str]] = {c: by_index[j] for c, j in zip(OFFER_COLUMNS, idx, strict=True)}
    else:  # blank lines are skipped; a short or long row is an error naming its line
        lists: dict[str, list[str]] = {c: [] for c in OFFER_COLUMNS}
        for line, row in enumerate(rows, start=2):
            if not row:
                continue
            if len(row) != width:
                raise _Bad(f"row {line} has {len(row)} fields, expected {width}")
            for c, j in zip(OFFER_COLUMNS, idx, strict=True):
                lists[c].append(row[j])
        raw = dict(lists)
    cols: dict[str, npt.NDArray[Any]] = {}
    for c in _STR_COLUMNS:
        arr = np.array(list(map(str.strip, raw[c])), dtype=object)
        if c not in _OPTIONAL_STR and len(arr) and (arr == "").any():
            raise _Bad(f"row {_first_bad(arr == '')}, field {c!r}: empty")
        cols[c] = arr
    for c in _FLOAT_COLUMNS:
        cols[c] = _float_column(c, raw[c], c in _OPTIONAL_FLOAT)
    _validate(cols)
    return OfferTable(cols)


def _validate(cols: dict[str, npt.NDArray[Any]]) -> None:
    od, sp = cols["price_on_demand_usd_per_hour"], cols["price_spot_usd_per_hour"]
    bad = ~np.isfinite(od) | (od <= 0)
    if bad.any():
        i = _first_bad(bad)
        raise _Bad(f"row {i}, field 'price_on_demand_usd_per_hour': {od[i - 2]!r} (must be > 0)")
    bad = ~np.isnan(sp) & (~np.isfinite(sp) | (sp <= 0))
    if bad.any():
        i = _first_bad(bad)
        raise _Bad(f"row {i}, field 'price_spot_usd_per_hour': {sp[i - 2]!r} (empty when unknown, else > 0)")
    count, mem, gpu = cols["gpu_count"], cols["gpu_memory_gib"], cols["gpu"]
    has_gpu = gpu != ""
    bad = ~np.isfinite(count) | (count < 0) | (has_gpu & (count <= 0)) | (~has_gpu & (count != 0))
    if bad.any():
        i = _first_bad(bad)
        raise _Bad(f"row {i}, field 'gpu_count': {count[i - 2]!r} (> 0 with a gpu, 0 without)")
    bad = ~np.isfinite(mem) | (mem < 0) | (has_gpu & (mem <= 0))
    if bad.any():
        i = _first_bad(bad)
        raise _Bad(f"row {i}, field 'gpu_memory_gib': {mem[i - 2]!r} (> 0 with a gpu)")
    known = {*load_specs(), ""}
    bad = np.fromiter((g not in known for g in gpu), dtype=bool, count=len(gpu))
    if bad.any():
        i = _first_bad(bad)
        raise _Bad(f"row {i}, field 'gpu': {gpu[i - 2]!r} is not a spec id")


# --- loading ------------------------------------------------------------------------------------------------
@cache
def load_shipped_offers() -> OfferTable:
    """The shipped offer table (validated, cached in memory and as a binary file in the user cache directory,
    :mod:`gpufleet.catalog.offers_cache`; no network)."""
    try:
        text = resources.files("gpufleet.catalog").joinpath("data", _SHIPPED_FILE).read_text(encoding="utf-8")
    except (FileNotFoundError, OSError) as exc:
        raise DataError(f"The shipped offer table {_SHIPPED_FILE} is missing. {_REINSTALL}") from exc
    from gpufleet.catalog.offers_cache import load_cached  # parsed once per catalog version, then binary

    try:
        return load_cached(text, load_specs(), _read, _validate)
    except _Bad as exc:
        raise DataError(f"The shipped offer table {_SHIPPED_FILE} is corrupted: {exc}. {_REINSTALL}") from exc


def _refreshed_tables() -> list[OfferTable]:
    import warnings

    from gpufleet.catalog.fetch.store import StoredDataWarning, read_refreshed  # lazy: another package

    tables = []
    for provider, p, text in read_refreshed("offers"):  # verified against the manifest (size, SHA-256)
        try:
            tables.append(read_offers_csv(text, source_name=f"{p} (refreshed)"))
        except GpufleetError as exc:  # e.g. a NaN price: this provider's shipped rows stay in force
            warnings.warn(
                f"Refreshed {provider} prices rejected: {exc} Using the shipped {provider} prices "
                f"instead; run `gpufleet catalog update --provider {provider}` to fetch them again.",
                StoredDataWarning,
                stacklevel=2,
            )
    return tables


@checked_output("offer catalog")
def load_offers(
    user_catalogs: Sequence[Path | str] = (),
    include_refreshed: bool = False,
    base: OfferTable | None = None,
) -> OfferTable:
    """The shipped catalog, optionally with refreshed prices and user catalogs applied on top.

    ``include_refreshed``: rows from ``gpufleet catalog update`` replace the shipped rows of their providers.
    ``user_catalogs``: YAML/JSON files (see :mod:`gpufleet.catalog.user`); applied in order, each adding
    offers
    and overriding prices.
    ``base``: the table to start from instead of the shipped one (the service's latest refreshed catalog).
    """
    table = load_shipped_offers() if base is None else base
    if include_refreshed:
        refreshed = _refreshed_tables()
        if refreshed:
            new = OfferTable.concat(refreshed)
            replaced = np.isin(table.column("provider"), np.array(new.providers(), dtype=object))
            table = OfferTable.concat([table.take(~replaced), new])
    if user_catalogs:
        from gpufleet.catalog.user import apply_user_catalog, read_user_catalog

        seen: dict[Path, Path | str] = {}
        added: dict[tuple[str, str, str | None, str], Path | str] = {}
        for path in user_catalogs:
            catalog = read_user_catalog(Path(path))  # a missing or unreadable path (a symlink loop) is named
            key = Path(path).resolve()
            if key in seen:  # its offers would be added twice and its discounts applied twice
                raise InputError(
                    f"The user catalog {path} is given twice (also as {seen[key]}): its offers would be "
                    "listed twice and its price discounts applied twice. Give each catalog once."
                )
            seen[key] = path
            for o in catalog.offers:  # one machine in two catalogs: listed twice, ranked twice
                ident = (o.provider, o.region, o.zone, o.instance_type)
                if ident in added:
                    raise InputError(
                        f"The user catalogs {added[ident]} and {path} both list the offer {o.provider} "
                        f"{o.instance_type} in {o.region}: it would be listed and ranked twice. Keep it in "
                        "one catalog."
                    )
                added[ident] = path
            table = apply_user_catalog(table, catalog)
    return table


__all__ = [
    "load_offers",
    "load_shipped_offers",
    "read_offers_csv",
    "write_offers_csv",
]
