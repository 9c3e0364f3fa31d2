"""Offers as typed rows (:class:`Offer`) and as an immutable columnar table with vectorised filtering.

One row is one purchasable machine: a provider x region (x zone) x instance type, with its accelerator (a spec
id from ``gpu_specs.csv``; empty for CPU-only rows), the GPU count (fractional for GPU slices), the per-GPU
memory [GiB] and hourly USD prices. ``price_spot_usd_per_hour`` is ``None``/NaN where the provider lists no
spot price, never 0.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from gpufleet.catalog.specs import get_spec
from gpufleet.errors import InputError, UnknownNameError

OFFER_COLUMNS: tuple[str, ...] = (
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpu_count",
    "gpu_memory_gib",
    "vcpus",
    "ram_gib",
    "arch",
    "price_on_demand_usd_per_hour",
    "price_spot_usd_per_hour",
    "captured_at",
    "source",
)
_STR_COLUMNS = ("provider", "region", "zone", "instance_type", "gpu", "arch", "captured_at", "source")
_FLOAT_COLUMNS = (
    "gpu_count",
    "gpu_memory_gib",
    "vcpus",
    "ram_gib",
    "price_on_demand_usd_per_hour",
    "price_spot_usd_per_hour",
)
_OPTIONAL_STR = frozenset({"zone", "gpu", "arch"})  # "" in the arrays, None in Offer
_OPTIONAL_FLOAT = frozenset({"vcpus", "ram_gib", "price_spot_usd_per_hour"})  # NaN in the arrays
SortKey = Literal["price", "price_per_gpu", "price_per_gpu_memory"]
SORT_KEYS: tuple[str, ...] = ("price", "price_per_gpu", "price_per_gpu_memory")


@dataclass(frozen=True, slots=True, kw_only=True)
class Offer:
    """One purchasable machine. Prices are for the whole machine [USD/h]; memory is per GPU [GiB]."""

    provider: str
    region: str
    zone: str | None
    instance_type: str
    gpu: str | None  # spec id; None only for CPU-only rows
    gpu_count: float  # fractional for GPU slices (AWS g6f, Azure NVadsA10_v5); 0 for CPU-only rows
    gpu_memory_gib: float  # per GPU, device-reported [GiB]; 0 for CPU-only rows
    vcpus: float | None
    ram_gib: float | None
    arch: str | None
    price_on_demand_usd_per_hour: float
    price_spot_usd_per_hour: float | None  # None = unknown, never 0
    captured_at: str
    source: str

    @property
    def price_per_gpu_usd_per_hour(self) -> float | None:
        """On-demand price per GPU-hour [USD/(GPU h)]; ``None`` for CPU-only rows."""
        return self.price_on_demand_usd_per_hour / self.gpu_count if self.gpu_count > 0 else None


class OfferTable:
    """Offers as numpy columns (read-only arrays). Every operation returns a new table."""

    __slots__ = ("_cache", "_cols", "_n")

    _cols: dict[str, npt.NDArray[Any]]
    _n: int
    _cache: dict[str, tuple[list[str], npt.NDArray[np.intp]]]  # derived data only (the table never changes)

    def __init__(self, columns: Mapping[str, npt.NDArray[Any]]) -> None:
        missing = [c for c in OFFER_COLUMNS if c not in columns]
        if missing:
            raise ValueError(f"OfferTable needs columns {missing}")
        lengths = {len(columns[c]) for c in OFFER_COLUMNS}
        if len(lengths) > 1:
            raise ValueError(f"OfferTable columns differ in length: {sorted(lengths)}")
        cols: dict[str, npt.NDArray[Any]] = {}
        for c in OFFER_COLUMNS:
            arr = np.array(columns[c], dtype=float if c in _FLOAT_COLUMNS else object, copy=True)
            arr.flags.writeable = False
            cols[c] = arr
        object.__setattr__(self, "_cols", cols)
        object.__setattr__(self, "_cache", {})
        object.__setattr__(self, "_n", lengths.pop() if lengths else 0)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("OfferTable is immutable")

    def __len__(self) -> int:
        return self._n

    def __repr__(self) -> str:
        return f"OfferTable({self._n} offers, providers={self.providers()})"

    def column(self, name: str) -> npt.NDArray[Any]:
        """A read-only column: float64 for numbers (NaN = unknown), object (str, "" = none) for text."""
        if name not in self._cols:
            raise UnknownNameError("offer column", name, OFFER_COLUMNS)
        return self._cols[name]

    def _ranks(self, name: str) -> tuple[list[str], npt.NDArray[np.intp]]:
        """(sorted distinct values, rank of each row's value) of a text column; computed once per table."""
        if name not in self._cache:
            values = self._cols[name].tolist()
            uniq = sorted(set(values))
            rank = {v: i for i, v in enumerate(uniq)}
            codes = np.fromiter((rank[v] for v in values), dtype=np.intp, count=len(values))
            self._cache[name] = (uniq, codes)
        return self._cache[name]

    def _seed_codes(self, name: str, uniq: list[str], codes: npt.NDArray[np.intp]) -> None:
        """Record the (sorted distinct values, codes) of a text column known from elsewhere (the offers cache
        stores them): the caller guarantees ``uniq`` is sorted and distinct and ``column = uniq[codes]``."""
        self._cache[name] = (uniq, codes)

    def codes(self, name: str) -> tuple[list[str], npt.NDArray[np.intp]]:
        """(sorted distinct values, index of each row's value among them) of a text column, computed once
        per table (read-only codes); what ``np.unique(column.astype(str), return_inverse=True)`` gives,
        without sorting every row's string."""
        if name not in _STR_COLUMNS:
            raise UnknownNameError("offer text column", name, _STR_COLUMNS)
        uniq, codes = self._ranks(name)
        codes.flags.writeable = False
        return uniq, codes

    def _isin(self, name: str, wanted: Iterable[str]) -> npt.NDArray[np.bool_]:
        uniq, codes = self._ranks(name)
        wanted_set = set(wanted)
        hit = np.fromiter((u in wanted_set for u in uniq), dtype=bool, count=len(uniq))
        return hit[codes] if len(codes) else np.zeros(0, dtype=bool)

    def providers(self) -> list[str]:
        """Sorted distinct providers in this table."""
        return list(self._ranks("provider")[0])

    def take(self, index: npt.NDArray[Any] | slice) -> OfferTable:
        """Rows selected by a boolean mask, an integer index array or a slice."""
        return OfferTable({c: a[index] for c, a in self._cols.items()})

    # --- filtering ---------------------------------------------------------------------------------------
    def mask(
        self,
        *,
        gpu: str | None = None,
        min_gpu_memory_gib: float | None = None,
        gpus: float | None = None,
        provider: str | Sequence[str] | None = None,
        region_glob: str | None = None,
        spot: bool = False,
        max_price_usd_per_hour: float | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Boolean mask of the rows that satisfy every given condition (see :meth:`filter`)."""
        m = np.ones(self._n, dtype=bool)
        if gpu is not None:
            m &= self._cols["gpu"] == get_spec(gpu).id
        if min_gpu_memory_gib is not None:
            _check_number("min_gpu_memory_gib", min_gpu_memory_gib, allow_zero=True)
            m &= self._cols["gpu_memory_gib"] >= min_gpu_memory_gib
        if gpus is not None:
            _check_number("gpus", gpus)
            m &= self._cols["gpu_count"] == gpus
        if provider is not None:
            wanted = _provider_list(provider)
            known = self.providers()
            for p in wanted:
                if p not in known:
                    raise UnknownNameError("provider", p, known, hint="Provider names are lower case.")
            m &= self._isin("provider", wanted)
        if region_glob is not None:
            pattern = region_glob.lower()
            regions = self._ranks("region")[0]
            m &= self._isin("region", [r for r in regions if fnmatch.fnmatchcase(r.lower(), pattern)])
        spot_price = self._cols["price_spot_usd_per_hour"]
        if spot:
            m &= ~np.isnan(spot_price)
        if max_price_usd_per_hour is not None:
            _check_number("max_price_usd_per_hour", max_price_usd_per_hour)
            price = spot_price if spot else self._cols["price_on_demand_usd_per_hour"]
            with np.errstate(invalid="ignore"):
                m &= price <= max_price_usd_per_hour
        return m

    def filter(
        self,
        *,
        gpu: str | None = None,
        min_gpu_memory_gib: float | None = None,
        gpus: float | None = None,
        provider: str | Sequence[str] | None = None,
        region_glob: str | None = None,
        spot: bool = False,
        max_price_usd_per_hour: float | None = None,
    ) -> OfferTable:
        """Offers matching every condition given.

        ``gpu``: spec id or alias (resolved with :func:`get_spec`). ``min_gpu_memory_gib``: per GPU [GiB].
        ``gpus``: exact GPU count. ``provider``: one name or several (unknown names raise
        :class:`UnknownNameError`). ``region_glob``: fnmatch pattern, case-insensitive. ``spot``: only offers
        with a spot price. ``max_price_usd_per_hour``: on-demand price, or the spot price when ``spot``.
        """
        return self.take(
            self.mask(
                gpu=gpu,
                min_gpu_memory_gib=min_gpu_memory_gib,
                gpus=gpus,
                provider=provider,
                region_glob=region_glob,
                spot=spot,
                max_price_usd_per_hour=max_price_usd_per_hour,
            )
        )

    # --- sorting --------------------------------------------------------------------------------------------
    def sort_values(self, key: str, *, spot: bool = False) -> npt.NDArray[np.float64]:
        """The values :meth:`sort` orders by [USD/h, USD/(GPU h) or USD/(GiB h)]; inf where undefined."""
        price = self._cols["price_spot_usd_per_hour" if spot else "price_on_demand_usd_per_hour"]
        count = self._cols["gpu_count"]
        if key == "price":
            values = price.copy()
        elif key == "price_per_gpu":
            with np.errstate(divide="ignore", invalid="ignore"):
                values = np.where(count > 0, price / count, np.inf)
        elif key == "price_per_gpu_memory":
            mem = count * self._cols["gpu_memory_gib"]
            with np.errstate(divide="ignore", invalid="ignore"):
                values = np.where(mem > 0, price / mem, np.inf)
        else:
            raise UnknownNameError("sort key", key, SORT_KEYS)
        return np.where(np.isnan(values), np.inf, values).astype(np.float64)

    def sort(self, key: str, *, spot: bool = False) -> OfferTable:
        """Offers ordered by ``key`` (price | price_per_gpu | price_per_gpu_memory), cheapest first.

        Uses the spot price when ``spot`` (rows without one go last). Ties keep a deterministic order
        (provider, region, instance type).
        """
        values = self.sort_values(key, spot=spot)
        ties = tuple(self._ranks(c)[1] for c in ("zone", "instance_type", "region", "provider"))
        order = np.lexsort((*ties, values))
        return self.take(order)

    # --- conversion -----------------------------------------------------------------------------------------
    def records(self) -> list[Offer]:
        """The rows as :class:`Offer` values."""
        cols = {c: self._cols[c].tolist() for c in OFFER_COLUMNS}
        out = []
        for i in range(self._n):
            kw: dict[str, Any] = {}
            for c in OFFER_COLUMNS:
                v = cols[c][i]
                if c in _OPTIONAL_STR:
                    v = v or None
                elif c in _OPTIONAL_FLOAT:
                    v = None if math.isnan(v) else v
                kw[c] = v
            out.append(Offer(**kw))
        return out

    @staticmethod
    def from_offers(offers: Iterable[Offer]) -> OfferTable:
        """Build a table from :class:`Offer` values (None -> "" / NaN)."""
        rows = list(offers)
        cols: dict[str, list[Any]] = {c: [] for c in OFFER_COLUMNS}
        for o in rows:
            for c in OFFER_COLUMNS:
                v = getattr(o, c)
                if v is None:
                    v = "" if c in _STR_COLUMNS else math.nan
                cols[c].append(v)
        return OfferTable(
            {c: np.array(v, dtype=float if c in _FLOAT_COLUMNS else object) for c, v in cols.items()}
        )

    @staticmethod
    def concat(tables: Sequence[OfferTable]) -> OfferTable:
        """Rows of all ``tables``, in order."""
        if not tables:
            return OfferTable.from_offers([])
        return OfferTable({c: np.concatenate([t.column(c) for t in tables]) for c in OFFER_COLUMNS})


def _provider_list(provider: str | Sequence[str]) -> list[str]:
    items = [provider] if isinstance(provider, str) else list(provider)
    out: list[str] = []
    for item in items:
        for p in item.split(","):
            p = p.strip().lower()
            if p and p not in out:
                out.append(p)
    return out


def _check_number(name: str, value: float, *, allow_zero: bool = False) -> None:
    if (
        not isinstance(value, int | float)
        or math.isnan(value)
        or value < 0
        or (value == 0 and not allow_zero)
    ):
        allowed = "zero or a positive number" if allow_zero else "a positive number"
        raise InputError(f"{name} must be {allowed}; got {value!r}. Pass a value in that range or omit it.")


__all__ = [
    "OFFER_COLUMNS",
    "SORT_KEYS",
    "Offer",
    "OfferTable",
    "SortKey",
]
