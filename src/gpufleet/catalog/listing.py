"""Catalog listings shared by the CLI (`gpufleet catalog gpus|models|offers`) and the service
(``/api/v1/catalog``): the rows each prints, and the offer query (filters and sort) both run. Moved here from
``cli/catalog.py`` so that the service, a second skin, calls the same code rather than a copy."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from gpufleet.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from gpufleet.catalog.offers import OfferTable

#: the sort keys of :meth:`OfferTable.sort` (cheapest first)
SORT_KEYS: tuple[str, ...] = ("price", "price_per_gpu", "price_per_gpu_memory")


def spec_rows() -> list[dict[str, Any]]:
    """One row per accelerator spec (its dataclass fields), by vendor then id."""
    from gpufleet.catalog.specs import load_specs

    return [dataclasses.asdict(s) for s in sorted(load_specs().values(), key=lambda s: (s.vendor, s.id))]


def model_rows() -> list[dict[str, Any]]:
    """One row per shipped model: size, shape, attention and MoE layout, aliases and provenance."""
    from gpufleet.models import count_params
    from gpufleet.models.registry import load_model_aliases, load_model_entries

    aliases: dict[str, list[str]] = {}
    for alias, target in load_model_aliases().items():
        aliases.setdefault(target, []).append(alias)
    rows = []
    for mid, e in load_model_entries().items():
        m, n = e.arch, count_params(e.arch)
        if m.kv_lora_rank:
            attention = "MLA"
        elif m.num_kv_heads == m.num_attention_heads:
            attention = "MHA"
        else:
            attention = "MQA" if m.num_kv_heads == 1 else "GQA"
        rows.append({
            "id": mid, "name": m.name, "params_b": n.total / 1e9, "active_params_b": n.active / 1e9,
            "layers": m.num_layers, "hidden_size": m.hidden_size, "attention": attention,
            "attention_heads": m.num_attention_heads, "kv_heads": m.num_kv_heads,
            "experts": m.num_experts, "experts_per_token": m.experts_per_token,
            "context_tokens": m.max_position_embeddings, "decoder": m.is_decoder,
            "aliases": sorted(aliases.get(mid, [])), "hf_repo": e.hf_repo, "config_source": e.config_source,
        })  # fmt: skip
    return rows


def offer_rows(table: OfferTable) -> list[dict[str, Any]]:
    """The offers as rows of the ``offers`` JSON kind: every offer column plus its region's country, geography
    and coordinates."""
    from gpufleet.catalog.offers import OFFER_COLUMNS
    from gpufleet.catalog.regions import region_location

    rows = []
    for o in table.records():
        loc = region_location(o.provider, o.region)
        row: dict[str, Any] = {c: getattr(o, c) for c in OFFER_COLUMNS}
        row |= {
            "country": loc.country,
            "geo": loc.geo,
            "latitude_deg": loc.latitude_deg,
            "longitude_deg": loc.longitude_deg,
        }
        rows.append(row)
    return rows


#: the geography column of the last few tables queried, by identity (the service queries the same cached
#: table on every request: working the column out again took ~40 ms of a ~60 ms geo query)
_GEO_COLUMNS: dict[int, tuple[OfferTable, Any]] = {}


def _geo_column(table: OfferTable, location_columns: Any) -> Any:
    hit = _GEO_COLUMNS.get(id(table))
    if hit is not None and hit[0] is table:
        return hit[1]
    geo = location_columns(table.column("provider"), table.column("region"))[0].astype(str)
    if len(_GEO_COLUMNS) >= 4:
        _GEO_COLUMNS.pop(next(iter(_GEO_COLUMNS)))
    _GEO_COLUMNS[id(table)] = (table, geo)  # holds the table, so its id is not reused while cached
    return geo


def extra_filters(
    table: OfferTable,
    gpus: Sequence[str],
    regions: Sequence[str],
    geos: Sequence[str],
    provider_classes: Sequence[str],
) -> OfferTable:
    """Rows of ``table`` passing GPU (families), region globs, geos and provider classes (any of each)."""
    return table.take(extra_mask(table, gpus, regions, geos, provider_classes))


def extra_mask(
    table: OfferTable,
    gpus: Sequence[str],
    regions: Sequence[str],
    geos: Sequence[str],
    provider_classes: Sequence[str],
) -> npt.NDArray[np.bool_]:
    """The rows :func:`extra_filters` keeps, as a boolean mask over ``table``."""
    import fnmatch

    import numpy as np

    from gpufleet.catalog.provider_class import check_provider_classes, provider_class
    from gpufleet.catalog.regions import expand_geos, location_columns
    from gpufleet.recommend.filters import expand_gpus

    def keep(column: str, test: Callable[[str], bool]) -> npt.NDArray[np.bool_]:
        # each distinct value is tested once; the rows follow by their code (the table caches the codes)
        uniq, codes = table.codes(column)
        hit = np.fromiter((test(u) for u in uniq), dtype=bool, count=len(uniq))
        return hit[codes] if len(codes) else np.zeros(0, dtype=bool)

    m = np.ones(len(table), dtype=bool)
    if gpus:
        wanted_gpus = set(expand_gpus(list(gpus)))
        m &= keep("gpu", lambda g: g in wanted_gpus)
    if regions:
        globs = [g.lower() for g in regions]
        m &= keep("region", lambda r: any(fnmatch.fnmatchcase(r.lower(), g) for g in globs))
    if geos:
        wanted = expand_geos(list(geos))
        m &= np.isin(_geo_column(table, location_columns), list(wanted))
    if provider_classes:
        classes = set(check_provider_classes(list(provider_classes)))
        m &= keep("provider", lambda p: provider_class(p) in classes)
    return m


def check_filter_value(
    flag: str, value: float | None, allowed: str, *, maximum: float, zero_ok: bool = False
) -> None:
    """A numeric filter must be finite, > 0 (>= 0 with ``zero_ok``) and at most ``maximum`` (the documented
    bound of :mod:`gpufleet.validation`); else a one-paragraph :class:`InputError` naming ``flag``."""
    if value is None:
        return
    if math.isnan(value) or math.isinf(value) or value < 0 or (value == 0 and not zero_ok):
        raise InputError(f"{flag} = {value:g} is not allowed: pass {allowed}, or omit {flag}.")
    if value > maximum:
        raise InputError(
            f"{flag} = {value:g} is not allowed: the maximum is {maximum:,.0f}; pass {allowed}, or omit "
            f"{flag}."
        )


def query_offers(
    table: OfferTable,
    *,
    gpus: Sequence[str] = (),
    providers: Sequence[str] = (),
    regions: Sequence[str] = (),
    geos: Sequence[str] = (),
    provider_classes: Sequence[str] = (),
    min_gpu_memory_gib: float | None = None,
    gpu_count: float | None = None,
    spot: bool = False,
    max_price_usd_per_hour: float | None = None,
    sort: str = "price_per_gpu",
) -> OfferTable:
    """The offers of ``table`` passing every filter (each list: any of its values), sorted cheapest first by
    ``sort`` (the spot price with ``spot``). Unknown providers, regions, GPUs and geographies raise an
    :class:`~gpufleet.errors.UnknownNameError` with close matches; names given with ``--`` flag spelling in
    messages are the CLI's, which the service shares."""
    return table.take(
        query_offer_index(
            table,
            gpus=gpus,
            providers=providers,
            regions=regions,
            geos=geos,
            provider_classes=provider_classes,
            min_gpu_memory_gib=min_gpu_memory_gib,
            gpu_count=gpu_count,
            spot=spot,
            max_price_usd_per_hour=max_price_usd_per_hour,
            sort=sort,
        )
    )


def query_offer_index(
    table: OfferTable,
    *,
    gpus: Sequence[str] = (),
    providers: Sequence[str] = (),
    regions: Sequence[str] = (),
    geos: Sequence[str] = (),
    provider_classes: Sequence[str] = (),
    min_gpu_memory_gib: float | None = None,
    gpu_count: float | None = None,
    spot: bool = False,
    max_price_usd_per_hour: float | None = None,
    sort: str = "price_per_gpu",
) -> npt.NDArray[np.intp]:
    """The rows of ``table`` that :func:`query_offers` returns, in its order, as an index into ``table`` (a
    page is ``table.take(index[a:b])``: no copy of the other rows).

    Every filter is a mask over ``table`` itself and the sort reads the table's cached text codes, so the
    answer is the same as filtering step by step and sorting the rest (a test compares both), without
    copying the table at each step. A provider is checked against the whole table: ``--gpu T4 --provider
    lambda`` is no match (empty), not an unknown provider (the step-by-step filter checked it against the
    offers left after the GPU filter)."""
    import numpy as np

    from gpufleet.recommend.filters import check_against_table
    from gpufleet.recommend.types import Workload

    if sort not in SORT_KEYS:
        raise InputError(f"Unknown sort key {sort!r}. Allowed: {', '.join(SORT_KEYS)}.")
    check_against_table(table, Workload(name="offers", model="-", task="inference", precision="bf16",
                                        providers=tuple(providers), regions=tuple(regions)))  # fmt: skip
    m = extra_mask(table, gpus, regions, geos, provider_classes)
    m &= table.mask(
        min_gpu_memory_gib=min_gpu_memory_gib,
        gpus=gpu_count,
        provider=list(providers) or None,
        spot=spot,
        max_price_usd_per_hour=max_price_usd_per_hour,
    )
    rows = np.flatnonzero(m)
    values = table.sort_values(sort, spot=spot)[rows]
    ties = tuple(table.codes(c)[1][rows] for c in ("zone", "instance_type", "region", "provider"))
    order: npt.NDArray[np.intp] = rows[np.lexsort((*ties, values))]
    return order
