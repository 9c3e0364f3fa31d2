"""Accelerator specs and the multi-cloud offer catalog (typed loaders over shipped, dated data)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet._lazy import lazy_getattr

if TYPE_CHECKING:
    from gpufleet.catalog.offer_gpu import resolve_offer_gpu
    from gpufleet.catalog.offers import (
        OFFER_COLUMNS,
        Offer,
        OfferTable,
        catalog_age,
        load_offers,
        read_offers_csv,
        write_offers_csv,
    )
    from gpufleet.catalog.specs import AcceleratorSpec, get_spec, load_specs

#: Names load on first use (PEP 562), so that importing ``catalog.specs`` does not load the offer table.
_LAZY: dict[str, str] = {
    "resolve_offer_gpu": "gpufleet.catalog.offer_gpu",
    "OFFER_COLUMNS": "gpufleet.catalog.offers",
    "Offer": "gpufleet.catalog.offers",
    "OfferTable": "gpufleet.catalog.offers",
    "catalog_age": "gpufleet.catalog.offers",
    "load_offers": "gpufleet.catalog.offers",
    "read_offers_csv": "gpufleet.catalog.offers",
    "write_offers_csv": "gpufleet.catalog.offers",
    "AcceleratorSpec": "gpufleet.catalog.specs",
    "get_spec": "gpufleet.catalog.specs",
    "load_specs": "gpufleet.catalog.specs",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "OFFER_COLUMNS",
    "AcceleratorSpec",
    "Offer",
    "OfferTable",
    "catalog_age",
    "get_spec",
    "load_offers",
    "load_specs",
    "read_offers_csv",
    "resolve_offer_gpu",
    "write_offers_csv",
]
