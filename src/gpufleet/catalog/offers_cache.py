"""A binary cache of the parsed shipped offer table, so a fresh process does not re-parse ~14k CSV rows.

Parsing ``data/offers.csv`` (1.7 MB) costs a few hundred milliseconds, most of a `gpufleet recommend` or
`gpufleet catalog offers` start-up. The first load writes the parsed columns as an ``.npz`` (numpy's own
format, read with ``allow_pickle=False``: no code can run from it) into the user cache directory
(:func:`gpufleet.cache.cache_dir`: ``$GPUFLEET_CACHE_DIR``, else ``$XDG_CACHE_HOME/gpufleet``, else
``~/.cache/gpufleet``). The file name and its content carry a key: the SHA-256 of the CSV text, the GPU
spec ids it was validated against, and this format's version, so an edited or reinstalled catalog never
reads a stale cache. A cache that is missing, foreign, truncated or fails the table's validation is ignored
(and rewritten); one that cannot be written (read-only home) is skipped. Writes are atomic
(:func:`gpufleet.fileio.atomic_write_bytes`).
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.cache import cache_dir
from gpufleet.catalog.offer_table import _FLOAT_COLUMNS, _STR_COLUMNS, OFFER_COLUMNS, OfferTable

#: Bump when the stored layout changes (old files then simply stop matching).
CACHE_FORMAT = 1


def cache_key(text: str, spec_ids: Iterable[str]) -> str:
    """Hex SHA-256 over the format version, the CSV text and the spec ids the rows are validated against."""
    h = hashlib.sha256(f"gpufleet offers cache v{CACHE_FORMAT}\n".encode())
    h.update("\n".join(sorted(spec_ids)).encode())
    h.update(b"\0")
    h.update(text.encode("utf-8"))
    return h.hexdigest()


def cache_path(key: str) -> Path:
    return cache_dir() / f"offers-{key[:24]}.npz"


def _to_npz(table: OfferTable, key: str) -> bytes:
    arrays: dict[str, npt.NDArray[Any]] = {"key": np.array(key)}
    for c in _STR_COLUMNS:  # distinct strings + int32 codes: small, and rebuilt as shared str objects
        uniq, codes = np.unique(table.column(c).astype(str), return_inverse=True)
        arrays[f"{c}.values"] = uniq
        arrays[f"{c}.codes"] = codes.astype(np.int32)
    for c in _FLOAT_COLUMNS:
        arrays[c] = np.ascontiguousarray(table.column(c), dtype=np.float64)
    buf = io.BytesIO()
    np.savez(buf, allow_pickle=False, **arrays)
    return buf.getvalue()


Codes = dict[str, tuple[list[str], npt.NDArray[np.intp]]]


def _from_npz(path: Path, key: str, codes_out: Codes | None = None) -> dict[str, npt.NDArray[Any]] | None:
    """The columns stored at ``path`` when it holds ``key``'s table in this format, else None. ``codes_out``
    receives each text column's (sorted distinct values, codes) where the file's values are sorted and
    distinct (as written), for :meth:`OfferTable.codes`."""
    try:
        with np.load(path, allow_pickle=False) as npz:
            if str(npz["key"]) != key:
                return None
            cols: dict[str, npt.NDArray[Any]] = {}
            for c in _STR_COLUMNS:
                values, codes = npz[f"{c}.values"], npz[f"{c}.codes"]
                if values.dtype.kind != "U" or codes.dtype != np.int32:
                    return None
                if len(codes) and not (codes.min() >= 0 and codes.max() < len(values)):
                    return None
                cols[c] = values.astype(object)[codes]
                if codes_out is not None and (len(values) < 2 or bool(np.all(values[1:] > values[:-1]))):
                    codes_out[c] = (values.tolist(), codes.astype(np.intp))
            for c in _FLOAT_COLUMNS:
                arr = npz[c]
                if arr.dtype != np.float64 or arr.ndim != 1:
                    return None
                cols[c] = arr
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # missing, truncated, foreign
        return None
    if len({len(cols[c]) for c in OFFER_COLUMNS}) != 1:
        return None
    return cols


def load_cached(
    text: str,
    spec_ids: Iterable[str],
    parse: Callable[[str], OfferTable],
    validate: Callable[[dict[str, npt.NDArray[Any]]], None],
) -> OfferTable:
    """The table ``parse(text)`` would give, read from the cache when a valid one exists (else parsed and
    cached). ``validate`` re-checks cached columns (raising on bad data), so a cache never bypasses it."""
    key = cache_key(text, spec_ids)
    try:
        path = cache_path(key)
    except RuntimeError:  # no home directory to put a cache in: parse every time
        return parse(text)
    codes: Codes = {}
    cols = _from_npz(path, key, codes)
    if cols is not None:
        try:
            validate(cols)
        except Exception:  # an edited cache file: parse the CSV instead, and overwrite it
            cols = None
        else:
            table = OfferTable(cols)
            for c, (uniq, idx) in codes.items():  # the distinct values the file stores: not re-sorted
                table._seed_codes(c, uniq, idx)
            return table
    table = parse(text)
    try:
        from gpufleet.fileio import atomic_write_bytes

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, _to_npz(table, key))
    except OSError:  # read-only or full disk: the cache is only a speed-up
        pass
    return table


__all__ = ["CACHE_FORMAT", "cache_dir", "cache_key", "cache_path", "load_cached"]
