"""Accelerator specs and the multi-cloud offer catalog (typed loaders over shipped, dated data)."""

from __future__ import annotations

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
