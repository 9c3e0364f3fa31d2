"""Offer filters of a workload beyond provider/region/vendor: geo, provider class, excluded providers, GPU
(families), GPU memory, GPUs per node and price per GPU-hour; value parsing and checks for every filter.

Semantics (docs/recommend.md, "Filters"):

- multi-value filters take a list, and each item may itself be a comma list (``"aws,gcp"``);
- a region glob matches the provider's own region string (case-insensitive fnmatch); ``geos`` match the
  normalised geo bucket of :mod:`gpufleet.catalog.regions` (``us`` covers Azure ``eastus`` and RunPod ``US``);
- a GPU name is a spec id, an alias or a family: ``H100`` covers H100-SXM, H100-PCIe and H100-NVL (every spec
  id equal to the name or starting with ``name-``); a vendor prefix (``NVIDIA H100``) is ignored;
- an unknown provider, region (a glob matching no region), geo, GPU, vendor or provider class raises
  :class:`UnknownNameError` (exit 2 in the CLI) with close matches.
"""

from __future__ import annotations

import fnmatch

import numpy as np
import numpy.typing as npt

from gpufleet.catalog.offer_table import OfferTable
from gpufleet.catalog.provider_class import check_provider_classes, provider_class
from gpufleet.catalog.regions import expand_geos, location_columns
from gpufleet.errors import UnknownNameError
from gpufleet.recommend.filter_values import check_vendors, expand_gpus, gpu_family, split_values
from gpufleet.recommend.types import Workload

B = npt.NDArray[np.bool_]


def check_against_table(table: OfferTable, w: Workload) -> None:
    """Provider names and region globs of ``w`` must name something in ``table`` (raises otherwise).

    The other filters (geo, GPU, vendor, provider class) are checked when the workload is validated.
    """
    known = table.providers()
    for p in (*w.providers, *w.exclude_providers):
        if p.lower() not in known:
            raise UnknownNameError(
                "provider", p, known, hint="Provider names are lower case; see `gpufleet catalog offers`."
            )
    if w.regions:
        lower = sorted({str(r).lower() for r in table.codes("region")[0]} - {""})  # distinct: cached
        for glob in w.regions:
            g = glob.lower()
            if not any(fnmatch.fnmatchcase(r, g) for r in lower):
                wanted = {p.lower() for p in w.providers}
                pairs = zip(table.column("provider").tolist(), table.column("region").tolist(), strict=True)
                # the regions a message offers: those of the providers asked for (all when none is)
                regions = sorted({str(r) for p, r in pairs if not wanted or str(p).lower() in wanted} - {""})
                raise UnknownNameError(
                    "region",
                    glob,
                    regions,
                    hint="A region is a glob over the provider's region strings (e.g. 'us-*', 'eastus'); "
                    "use --geo (us, eu, apac, ...) to select a geography across every provider.",
                )


def region_glob_note(table: OfferTable, w: Workload) -> tuple[str, ...]:
    """When region globs select some geos, name the providers whose regions in those geos the globs miss,
    so a glob never drops them silently (e.g. ``us-*`` vs Azure ``eastus``)."""
    if not w.regions:
        return ()
    prov, region = table.column("provider"), table.column("region")
    geo = table_geos(table)
    globs = [g.lower() for g in w.regions]
    names, inverse = np.unique(region.astype(str), return_inverse=True)
    lut = np.array(
        [any(fnmatch.fnmatchcase(r.lower(), g) for g in globs) for r in names.tolist()], dtype=bool
    )
    hit = lut[inverse] if len(region) else np.zeros(0, dtype=bool)
    geos = sorted({str(g) for g in geo[hit]} - {"unknown"})
    if not geos:
        return ()
    in_geo = np.isin(geo, geos)
    provs_hit = {str(p) for p in prov[hit]}
    missed = sorted({str(p) for p in prov[in_geo & ~hit]} - provs_hit)
    if w.providers:
        missed = [p for p in missed if p in {x.lower() for x in w.providers}]
    if not missed:
        return ()
    return (
        f"Region filter {', '.join(w.regions)} matches region strings only: it leaves out "
        f"{', '.join(missed)}, whose regions in geo {', '.join(geos)} are spelled differently. "
        f"Use --geo {','.join(geos)} to include every provider there.",
    )


_GEOS: dict[int, tuple[OfferTable, tuple[npt.NDArray[np.str_], npt.NDArray[np.str_]]]] = {}


def _table_locations(table: OfferTable) -> tuple[npt.NDArray[np.str_], npt.NDArray[np.str_]]:
    """(geo, country) of every row, computed once per (immutable) table."""
    hit = _GEOS.get(id(table))
    if hit is None or hit[0] is not table:
        if len(_GEOS) > 8:
            _GEOS.clear()
        prov = table.codes("provider")[1]
        region_names, region = table.codes("region")
        # location_columns over the distinct (provider, region) pairs only, spread back over the rows
        pair = prov.astype(np.int64) * max(len(region_names), 1) + region
        first, inverse = np.unique(pair, return_index=True, return_inverse=True)[1:]
        geo, country, _, _ = location_columns(table.column("provider")[first], table.column("region")[first])
        inverse = inverse.reshape(-1)
        hit = (table, (geo[inverse].astype(str), country[inverse].astype(str)))
        _GEOS[id(table)] = hit
    return hit[1]


_EMBARGOED: dict[int, tuple[OfferTable, B]] = {}


def _embargoed(table: OfferTable) -> B:
    """Rows located in :data:`EMBARGOED_COUNTRIES`, once per (immutable) table (read-only)."""
    hit = _EMBARGOED.get(id(table))
    if hit is None or hit[0] is not table:
        if len(_EMBARGOED) > 8:
            _EMBARGOED.clear()
        mask = np.isin(_table_locations(table)[1], EMBARGOED_COUNTRIES)
        mask.flags.writeable = False
        hit = (table, mask)
        _EMBARGOED[id(table)] = hit
    return hit[1]


def table_geos(table: OfferTable) -> npt.NDArray[np.str_]:
    """The geo of every row, computed once per (immutable) table."""
    return _table_locations(table)[0]


#: ISO countries under a comprehensive US embargo or export ban that covers data-centre GPUs and cloud
#: services to them: Cuba, Iran, North Korea, Syria (15 CFR Part 746, sections 746.2, 746.7, 746.4, 746.9),
#: Russia and Belarus (15 CFR 746.8; EU Council Regulations 833/2014 and 765/2006). Offers located there are
#: not recommended unless the workload sets ``allow_embargoed_countries`` (a compliance decision, not ours).
EMBARGOED_COUNTRIES: tuple[str, ...] = ("BY", "CU", "IR", "KP", "RU", "SY")


def filter_mask(table: OfferTable, w: Workload) -> B:
    """Rows outside embargoed countries (:data:`EMBARGOED_COUNTRIES`) that pass the workload's geo,
    provider-class, excluded-provider, GPU, GPU-memory, GPUs-per-node and price-per-GPU-hour filters."""
    n = len(table)
    m: B = np.ones(n, dtype=bool)
    prov = table.column("provider")
    if w.exclude_providers:
        m &= ~np.isin(prov.astype(str), [p.lower() for p in w.exclude_providers])
    if w.provider_classes:
        classes = set(w.provider_classes)
        uniq = {str(p) for p in prov.tolist()}
        keep = [p for p in uniq if provider_class(p) in classes]
        m &= np.isin(prov.astype(str), keep)
    if w.geos:
        m &= np.isin(table_geos(table), list(w.geos))
    if not w.allow_embargoed_countries:
        m &= ~_embargoed(table)
    if w.gpus:
        m &= np.isin(table.column("gpu").astype(str), list(w.gpus))
    count = table.column("gpu_count")
    if w.min_gpu_memory_gib is not None:
        m &= table.column("gpu_memory_gib") >= w.min_gpu_memory_gib
    if w.gpus_per_node:
        m &= np.isin(count, list(w.gpus_per_node))
    if w.max_price_per_gpu_usd_per_hour is not None:
        from gpufleet.cost.prices import node_prices_usd_per_hour, price_kind_for

        price = node_prices_usd_per_hour(table, price_kind_for(w.pricing))
        with np.errstate(divide="ignore", invalid="ignore"):
            per_gpu = np.where(count > 0, price / count, np.inf)
            m &= per_gpu <= w.max_price_per_gpu_usd_per_hour
    return m


__all__ = [
    "check_against_table",
    "check_provider_classes",
    "check_vendors",
    "expand_geos",
    "expand_gpus",
    "filter_mask",
    "gpu_family",
    "region_glob_note",
    "split_values",
]
