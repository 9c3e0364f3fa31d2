"""User catalogs: your own machines and negotiated prices on top of the shipped catalog.

Two formats are read (YAML or JSON; the format is told by the top-level keys, see ``docs/catalog.md``):

* the gpufleet format: ``offers:`` (on-prem machines, a new cloud) and ``price_overrides:`` (replace a
  price or apply a negotiated discount, matched by provider + instance type + optional region glob);
* the GPU Fleet Optimizer's ``config/gpu_instances.json``, unchanged: top-level ``gpu_instances`` mapping an
  id to an AWS instance (provider ``aws``, region ``unspecified``).

pydantic validates at this boundary only; every problem becomes a :class:`ConfigFileError` that names the
file,
the entry, the field, the bad value and what is allowed.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gpufleet.catalog.offers import OFFER_COLUMNS, Offer, OfferTable
from gpufleet.catalog.offers import USER_CAPTURED_AT as _USER_CAPTURED_AT
from gpufleet.catalog.specs import get_spec, strip_vendor_prefix
from gpufleet.errors import ConfigFileError, UnknownNameError
from gpufleet.fileio import document_kind, parse_yaml_or_json, read_user_text
from gpufleet.strict_model import NoBoolNumbers
from gpufleet.validation import MAX_GPU_MEMORY_GIB, MAX_PRICE_USD_PER_HOUR

USER_CAPTURED_AT = _USER_CAPTURED_AT
#: Most GPUs in one machine of a user catalog (a GB200 NVL72 rack is 72; a DGX SuperPOD row far less than
#: this); a bound against typos such as 1e12 (memory per GPU and prices: gpufleet.validation maxima).
MAX_GPUS_PER_MACHINE = 1024
#: the smallest GPU share sold as a machine: AWS g6f.large, 1/8 of an L4 (EC2 GpuPartitionSize 0.125-0.5,
#: catalog/data/gpu_aliases.csv; the shipped slices are 1/8 to 1/2); a machine has whole GPUs or one slice
MIN_GPU_SLICE = 0.125
GFO_REGION = "unspecified"

#: GPU Fleet Optimizer ``gpu_type`` -> spec id. Its instances are AWS G4dn (T4), G5 (A10G), G6 (L4), G6e
#: (L40S),
#: P4d (A100 SXM4 40GB), P4de (A100 SXM4 80GB), P5 (H100 SXM5), P5e (H200 SXM), P6 (B200) per AWS's instance
#: type pages (https://aws.amazon.com/ec2/instance-types/), hence the SXM parts.
GFO_GPU_TYPES: Mapping[str, str] = {
    "T4": "T4",
    "A10G": "A10G",
    "L4": "L4",
    "L40S": "L40S",
    "A100 40GB": "A100-SXM-40GB",
    "A100 80GB": "A100-SXM-80GB",
    "H100": "H100-SXM",
    "H200": "H200-SXM",
    "B200": "B200",
}


#: GPU Fleet Optimizer instance family key (its gpu_instances.json ids and the guide's
#: ``current_instance``) -> the AWS instance type with all the family's GPUs. Families and GPUs per AWS's
#: instance type pages (https://aws.amazon.com/ec2/instance-types/); P5e is sold as p5en in the catalog.
GFO_FAMILY_INSTANCES: Mapping[str, str] = {
    "G4DN": "g4dn.metal",
    "G5": "g5.48xlarge",
    "G6": "g6.48xlarge",
    "G6E": "g6e.48xlarge",
    "P4D": "p4d.24xlarge",
    "P4DE": "p4de.24xlarge",
    "P5": "p5.48xlarge",
    "P5E": "p5en.48xlarge",
    "P6": "p6-b200.48xlarge",
}


def instance_family(instance_type: str) -> str:
    """The AWS family of an instance type: the part before the dot (``p5.4xlarge`` -> ``p5``)."""
    return instance_type.split(".", 1)[0].lower()


@dataclass(frozen=True, slots=True, kw_only=True)
class FamilyPrice:
    """A GPU Fleet Optimizer gpu_instances.json price for an AWS family it names (``P5``): the price of every
    catalog instance of that family and GPU, pro-rated per GPU (the file prices the family's
    ``gpus_per_instance`` GPUs; AWS prices a family's sizes in proportion to their GPUs: p5.4xlarge is 1/8
    of p5.48xlarge)."""

    key: str  # the file's id (P5)
    family: str  # AWS family prefix (p5)
    gpu: str  # spec id the family's instances carry
    on_demand_usd_per_gpu_hour: float
    spot_usd_per_gpu_hour: float | None
    entry: str
    offer: Offer  # the file's instance as an offer, used when the catalog lists no instance of the family


def _positive_price(v: float | None, *, optional: bool) -> float | None:
    if v is None:
        if optional:
            return None
        raise ValueError("a price is required")
    if math.isnan(v) or math.isinf(v) or v <= 0 or v > MAX_PRICE_USD_PER_HOUR:
        raise ValueError(
            f"must be a finite price > 0 and at most {MAX_PRICE_USD_PER_HOUR:,.0f} [USD/h]"
            + (" (leave it out or null when unknown)" if optional else "")
        )
    return v


class _Strict(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class OfferIn(_Strict):
    """One user offer (gpufleet format)."""

    OWN_BOUNDS = frozenset({"price_on_demand_usd_per_hour", "price_spot_usd_per_hour"})

    provider: str = Field(min_length=1)
    region: str = Field(min_length=1)
    zone: str | None = None
    instance_type: str = Field(min_length=1)
    gpu: str | None = None  # spec id or alias; null for a CPU-only machine
    gpu_count: float = Field(default=0.0, ge=0, le=MAX_GPUS_PER_MACHINE)
    gpu_memory_gib: float | None = Field(
        default=None, gt=0, le=MAX_GPU_MEMORY_GIB
    )  # per GPU; default: the spec's device-reported GiB
    vcpus: float | None = Field(default=None, gt=0, le=100_000)
    ram_gib: float | None = Field(default=None, gt=0, le=1_000_000)
    arch: str | None = None
    price_on_demand_usd_per_hour: float
    price_spot_usd_per_hour: float | None = None
    captured_at: str = USER_CAPTURED_AT

    @field_validator("captured_at", mode="before")
    @classmethod
    def _captured(cls, v: object) -> object:
        """A capture date as the shipped catalog writes it (``2026-08``, ``2026-08-14``, a ``/`` range or an
        ISO date-time; an unquoted YAML date too), not in the future; free text ('yesterday') made the age
        column read "unknown date" and a future date "0 months old"."""
        import datetime as dt

        if isinstance(v, dt.date):  # YAML reads an unquoted 2026-01-01 as a date
            v = v.isoformat()
        if not isinstance(v, str) or v == USER_CAPTURED_AT:
            return v
        from gpufleet.catalog.offers import _date_bounds

        bounds = _date_bounds(v)
        if bounds is None:
            raise ValueError(
                f"{v!r} is not a capture date; write YYYY-MM-DD or YYYY-MM (a range as 2026-08/2026-11), "
                "or leave captured_at out"
            )
        if bounds[0] > dt.date.today() + dt.timedelta(days=1):
            raise ValueError(f"{v!r} is in the future; give the date the prices were captured")
        return v.strip()

    @field_validator("price_on_demand_usd_per_hour")
    @classmethod
    def _od(cls, v: float) -> float:
        out = _positive_price(v, optional=False)
        assert out is not None
        return out

    @field_validator("price_spot_usd_per_hour")
    @classmethod
    def _spot(cls, v: float | None) -> float | None:
        return _positive_price(v, optional=True)

    @model_validator(mode="after")
    def _count(self) -> OfferIn:
        spot, od = self.price_spot_usd_per_hour, self.price_on_demand_usd_per_hour
        if spot is not None and spot > od:
            raise ValueError(
                f"price_spot_usd_per_hour {spot:g} is above price_on_demand_usd_per_hour {od:g}; spot "
                "capacity is never dearer than on-demand (the two are likely swapped). Fix the prices, or "
                "leave the spot price out when unknown"
            )
        if self.gpu and self.gpu_count <= 0:
            raise ValueError("gpu_count must be > 0 when gpu is set (fractions allowed for GPU slices)")
        if self.gpu and not self.gpu_count.is_integer() and not MIN_GPU_SLICE <= self.gpu_count < 1:
            raise ValueError(
                f"gpu_count {self.gpu_count:g} is neither a whole number of GPUs nor one GPU slice (a "
                f"fraction from {MIN_GPU_SLICE:g} to below 1, e.g. 0.5 for half a GPU); give the machine's "
                "whole GPU count, or its share of one GPU"
            )
        if not self.gpu and self.gpu_count != 0:
            raise ValueError("gpu_count must be 0 (or left out) for a CPU-only machine without gpu")
        return self


class OverrideIn(_Strict):
    """One price override: matched by provider + instance type (+ region glob)."""

    OWN_BOUNDS = frozenset({"price_on_demand_usd_per_hour", "price_spot_usd_per_hour"})

    provider: str = Field(min_length=1)
    instance_type: str = Field(min_length=1)
    region: str = "*"  # fnmatch glob
    price_on_demand_usd_per_hour: float | None = None  # replaces the on-demand price
    discount_fraction: float | None = Field(default=None, gt=0, lt=1)  # 0.3 = 30 % off on-demand
    price_spot_usd_per_hour: float | None = None  # replaces the spot price

    @field_validator("price_on_demand_usd_per_hour", "price_spot_usd_per_hour")
    @classmethod
    def _prices(cls, v: float | None) -> float | None:
        return _positive_price(v, optional=True)

    @model_validator(mode="after")
    def _one_change(self) -> OverrideIn:
        spot, od = self.price_spot_usd_per_hour, self.price_on_demand_usd_per_hour
        if spot is not None and od is not None and spot > od:
            raise ValueError(
                f"price_spot_usd_per_hour {spot:g} is above price_on_demand_usd_per_hour {od:g}; spot "
                "capacity is never dearer than on-demand (the two are likely swapped). Fix the prices"
            )
        if self.price_on_demand_usd_per_hour is not None and self.discount_fraction is not None:
            raise ValueError("give either price_on_demand_usd_per_hour or discount_fraction, not both")
        if (
            self.price_on_demand_usd_per_hour is None
            and self.discount_fraction is None
            and self.price_spot_usd_per_hour is None
        ):
            raise ValueError(
                "set price_on_demand_usd_per_hour, discount_fraction (0 < f < 1) or price_spot_usd_per_hour"
            )
        return self


class CatalogIn(_Strict):
    """A gpufleet user catalog file."""

    version: int = Field(1, ge=1, le=1)  # the only format version; a newer file needs a newer gpufleet
    offers: list[OfferIn] = Field(default_factory=list)
    price_overrides: list[OverrideIn] = Field(default_factory=list)

    @model_validator(mode="after")
    def _not_empty(self) -> CatalogIn:
        if not self.offers and not self.price_overrides:
            raise ValueError(
                "the catalog has no offers and no price_overrides, so it would change nothing. Add at least "
                "one entry under 'offers:' or 'price_overrides:' (docs/catalog.md), or leave --catalog out"
            )
        return self


#: upper bound of a GFO instance price: far above any real instance (a typo guard, not a market fact)
MAX_GFO_PRICE_USD_PER_HOUR = MAX_PRICE_USD_PER_HOUR


class GfoInstanceIn(BaseModel):
    """One entry of the GPU Fleet Optimizer's gpu_instances.json (fields it has that we do not use are "
    "kept)."""

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1)
    family: str = Field(min_length=1)
    gpu_type: str = Field(min_length=1)
    vcpus: float = Field(gt=0, le=100_000)
    gpu_memory_gb: float = Field(gt=0, le=100_000)
    gpus_per_instance: int = Field(gt=0, le=1024)
    on_demand_cost_per_hour: float = Field(le=MAX_GFO_PRICE_USD_PER_HOUR)
    spot_cost_per_hour: float | None = Field(None, le=MAX_GFO_PRICE_USD_PER_HOUR)
    description: str = ""
    # the guide's performance fields: gpufleet does not use them, but a bad value is still a mistake
    compute_tflops: float | None = Field(None, gt=0, le=1e9)
    interconnect_bandwidth_gbps: float | None = Field(None, gt=0, le=1e9)
    memory_bandwidth_factor: float | None = Field(None, gt=0, le=100)
    interconnect_multiplier: float | None = Field(None, gt=0, le=100)

    @model_validator(mode="before")
    @classmethod
    def _no_bools(cls, data: Any) -> Any:
        """``true`` is not a number (pydantic would read it as 1)."""
        if isinstance(data, dict):
            for key, value in data.items():
                if isinstance(value, bool):
                    raise ValueError(
                        f"{key}: got the boolean {str(value).lower()}, expected a number or text"
                    )
        return data

    @field_validator("on_demand_cost_per_hour")
    @classmethod
    def _od(cls, v: float) -> float:
        out = _positive_price(v, optional=False)
        assert out is not None
        return out

    @field_validator("spot_cost_per_hour")
    @classmethod
    def _spot(cls, v: float | None) -> float | None:
        return _positive_price(v, optional=True)

    @model_validator(mode="after")
    def _spot_not_above_on_demand(self) -> GfoInstanceIn:
        spot, od = self.spot_cost_per_hour, self.on_demand_cost_per_hour
        if spot is not None and spot > od:
            raise ValueError(
                f"spot_cost_per_hour {spot:g} is above on_demand_cost_per_hour {od:g}; spot capacity is "
                "never dearer than on-demand (the two are likely swapped). Fix the prices"
            )
        return self


class GfoCatalogIn(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    gpu_instances: dict[str, GfoInstanceIn] = Field(min_length=1)


# --- domain values ------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class PriceOverride:
    """Replace or discount prices of matching offers (``discount_fraction`` 0.3 = 30 % off on-demand)."""

    provider: str
    instance_type: str
    region_glob: str
    price_on_demand_usd_per_hour: float | None
    discount_fraction: float | None
    price_spot_usd_per_hour: float | None
    entry: str  # where it came from, for error messages


@dataclass(frozen=True, slots=True, kw_only=True)
class UserCatalog:
    """What one user file adds (offers) and changes (price overrides)."""

    path: Path
    offers: tuple[Offer, ...]
    price_overrides: tuple[PriceOverride, ...]
    family_prices: tuple[FamilyPrice, ...] = ()  # GPU Fleet Optimizer family entries (P5, G6e, ...)


# --- reading ------------------------------------------------------------------------------------------------
def _fail(path: Path, what: str) -> ConfigFileError:
    return ConfigFileError(f"User catalog {path}: {what}")


def _load_document(path: Path) -> Any:
    text = read_user_text(path, what="user catalog")
    return parse_yaml_or_json(
        path, text, lambda kind, error: str(_fail(path, f"malformed {kind}: {error}. Fix the syntax."))
    )


def _raise(exc: Exception) -> Any:
    raise exc


def _describe(path: Path, exc: ValidationError, data: Any) -> ConfigFileError:
    parts = []
    for err in exc.errors()[:3]:
        loc = [str(x) for x in err["loc"]]
        entry = " / ".join(loc[:-1]) if len(loc) > 1 else "(top level)"
        fld = loc[-1] if loc else "(file)"
        value = err.get("input")
        shown = "missing" if err["type"] == "missing" else f"{value!r}"
        msg = err["msg"].removeprefix("Value error, ")
        if isinstance(value, Mapping) and err["type"] == "value_error":  # a check across fields of one entry
            where = " / ".join(loc) if loc else "(top level)"
            parts.append(f"entry {where}: {msg}")
            continue
        parts.append(f"entry {entry}, field {fld!r} = {shown}: {msg}")
    more = f" (and {len(exc.errors()) - 3} more problems)" if len(exc.errors()) > 3 else ""
    return _fail(
        path,
        "; ".join(parts)
        + more
        + ". See docs/catalog.md for the allowed fields (prices in USD per hour, > 0; "
        "GPUs as spec ids or aliases from `gpufleet catalog gpus`).",
    )


def _resolve_gpu(path: Path, entry: str, field: str, name: str) -> str:
    try:
        return get_spec(name).id
    except UnknownNameError as exc:
        raise _fail(path, f"entry {entry}, field {field!r} = {name!r}: {exc}") from exc


def read_user_catalog(path: Path) -> UserCatalog:
    """Read and validate one user catalog (gpufleet format or GPU Fleet Optimizer gpu_instances.json)."""
    path = Path(path)
    data = _load_document(path)
    if not isinstance(data, dict):
        raise _fail(
            path,
            f"the top level is {document_kind(data)}, expected a mapping with 'offers' and/or "
            f"'price_overrides' "
            "(gpufleet format) or 'gpu_instances' (GPU Fleet Optimizer format).",
        )
    if "gpu_instances" in data:
        return _read_gfo(path, data)
    try:
        doc = CatalogIn.model_validate(data)
    except ValidationError as exc:
        raise _describe(path, exc, data) from exc
    offers = []
    seen: dict[tuple[str, str, str | None, str], int] = {}
    for i, o in enumerate(doc.offers):
        entry = f"offers[{i}] ({o.instance_type})"
        key = (o.provider.strip().lower(), o.region, o.zone, o.instance_type)
        if key in seen:
            raise _fail(
                path,
                f"entry {entry} duplicates offers[{seen[key]}] (same provider, region, zone and "
                "instance_type "
                f"{key}): the second would silently shadow the first. Keep one entry per machine.",
            )
        seen[key] = i
        gpu = _resolve_gpu(path, entry, "gpu", o.gpu) if o.gpu else None
        mem = o.gpu_memory_gib if o.gpu_memory_gib is not None else (get_spec(gpu).memory_gib if gpu else 0.0)
        if gpu and o.gpu_memory_gib is not None and mem > 1.25 * get_spec(gpu).memory_gib:
            # Less than the datasheet is a slice (MIG, vGPU); more than a quarter above it is another GPU
            # or a per-instance total, and the planner would fit models the GPU cannot hold.
            raise _fail(
                path,
                f"entry {entry}: gpu_memory_gib {mem:g} is more than 25 % above the "
                f"{get_spec(gpu).memory_gib:g} GiB per GPU of {gpu} (field gpu {o.gpu!r}); models would be "
                "sized on memory the GPU does not have. Allowed: up to the datasheet memory, +25 % (less "
                "for a slice). Give the memory per GPU, not per instance, name the GPU variant "
                "(`gpufleet catalog gpus` lists them), or leave gpu_memory_gib out to use the datasheet "
                "value.",
            )
        offers.append(
            Offer(
                provider=o.provider.strip().lower(),
                region=o.region,
                zone=o.zone,
                instance_type=o.instance_type,
                gpu=gpu,
                gpu_count=o.gpu_count if gpu else 0.0,
                gpu_memory_gib=mem if gpu else 0.0,
                vcpus=o.vcpus,
                ram_gib=o.ram_gib,
                arch=o.arch,
                price_on_demand_usd_per_hour=o.price_on_demand_usd_per_hour,
                price_spot_usd_per_hour=o.price_spot_usd_per_hour,
                captured_at=o.captured_at,
                source=f"user catalog {path.name}",
            )
        )
    overrides = tuple(
        PriceOverride(
            provider=r.provider.strip().lower(),
            instance_type=r.instance_type,
            region_glob=r.region,
            price_on_demand_usd_per_hour=r.price_on_demand_usd_per_hour,
            discount_fraction=r.discount_fraction,
            price_spot_usd_per_hour=r.price_spot_usd_per_hour,
            entry=f"price_overrides[{i}] ({r.provider} {r.instance_type} {r.region})",
        )
        for i, r in enumerate(doc.price_overrides)
    )
    return UserCatalog(path=path, offers=tuple(offers), price_overrides=overrides)


def _read_gfo(path: Path, data: dict[str, Any]) -> UserCatalog:
    try:
        doc = GfoCatalogIn.model_validate(data)
    except ValidationError as exc:
        raise _describe(path, exc, data) from exc
    offers = []
    families: list[FamilyPrice] = []
    seen: dict[str, str] = {}  # instance name (case-folded) -> the key that gave it
    for key, inst in sorted(doc.gpu_instances.items()):
        entry = f"gpu_instances / {key}"
        for ident in {key.casefold(), inst.name.casefold()}:
            if ident in seen:  # two offers of one name at one price list: which one is meant is unknowable
                raise ConfigFileError(
                    f"User catalog {path}: entry {entry} repeats gpu_instances / {seen[ident]} (instance "
                    "keys and names are matched case-insensitively, e.g. P5 and p5). Keep one entry per "
                    "instance."
                )
            seen[ident] = key
        bare = strip_vendor_prefix(inst.gpu_type)  # the guide writes "NVIDIA L40S"
        spec_id = GFO_GPU_TYPES.get(bare) or _resolve_gpu(path, entry, "gpu_type", inst.gpu_type)
        spec_gb = get_spec(spec_id).memory_gib * 1024**3 / 1e9  # the file states GB; specs hold GiB
        if abs(inst.gpu_memory_gb - spec_gb) > 0.25 * spec_gb:  # the spec's memory is used, not the file's
            raise ConfigFileError(
                f"User catalog {path}: entry {entry}: gpu_memory_gb {inst.gpu_memory_gb:g} contradicts "
                f"gpu_type {inst.gpu_type!r} ({spec_id}, {spec_gb:.0f} GB per GPU); gpufleet sizes with the "
                "GPU's datasheet memory, so the file's value would be silently ignored. Fix gpu_memory_gb "
                "(GB per GPU, not per instance), or name the GPU variant (e.g. 'NVIDIA A100 40GB')."
            )
        offer = Offer(
            provider="aws",
            region=GFO_REGION,
            zone=None,
            instance_type=inst.name,
            gpu=spec_id,
            gpu_count=inst.gpus_per_instance,
            gpu_memory_gib=get_spec(spec_id).memory_gib,
            vcpus=inst.vcpus,
            ram_gib=None,
            arch=None,
            price_on_demand_usd_per_hour=inst.on_demand_cost_per_hour,
            price_spot_usd_per_hour=inst.spot_cost_per_hour,
            captured_at=USER_CAPTURED_AT,
            source=f"user catalog {path.name} (GPU Fleet Optimizer format)",
        )
        family = GFO_FAMILY_INSTANCES.get(key.upper())
        if family is not None:  # the guide's "Update Pricing": the family's current price, not another offer
            gpus = inst.gpus_per_instance
            spot = inst.spot_cost_per_hour
            families.append(
                FamilyPrice(
                    key=key,
                    family=instance_family(family),
                    gpu=spec_id,
                    on_demand_usd_per_gpu_hour=inst.on_demand_cost_per_hour / gpus,
                    spot_usd_per_gpu_hour=None if spot is None else spot / gpus,
                    entry=entry,
                    offer=offer,
                )
            )
        else:
            offers.append(offer)
    return UserCatalog(path=path, offers=tuple(offers), price_overrides=(), family_prices=tuple(families))


# --- applying -----------------------------------------------------------------------------------------------
def _apply_family_prices(table: OfferTable, catalog: UserCatalog) -> OfferTable:
    """Every AWS instance of a family the GFO file prices, at the file's price per GPU x its GPUs, in every
    region (the file names no region); a family the catalog does not list is added as the file's offer."""
    import datetime as dt

    cols = {c: table.column(c).copy() for c in OFFER_COLUMNS}
    prov, inst, gpu = cols["provider"], cols["instance_type"], cols["gpu"]
    try:  # the guide: "Update Pricing: modify config/gpu_instances.json for current market rates"
        dated = dt.date.fromtimestamp(catalog.path.stat().st_mtime).isoformat()
    except OSError:
        dated = USER_CAPTURED_AT
    family = np.array([instance_family(str(i)) for i in inst], dtype=object)
    extra: list[Offer] = []
    for fp in catalog.family_prices:
        m = (prov == "aws") & (family == fp.family) & (gpu == fp.gpu)
        if not m.any():
            extra.append(fp.offer)
            continue
        count = cols["gpu_count"][m].astype(float)
        cols["price_on_demand_usd_per_hour"][m] = fp.on_demand_usd_per_gpu_hour * count
        if fp.spot_usd_per_gpu_hour is not None:
            cols["price_spot_usd_per_hour"][m] = fp.spot_usd_per_gpu_hour * count
        cols["captured_at"][m] = dated  # the file the user keeps current, as of its last edit
        label = f"{catalog.path.name} {fp.entry} (GPU Fleet Optimizer price per GPU, file dated {dated})"
        cols["source"][m] = np.array([label] * int(m.sum()), dtype=object)
    out = OfferTable(cols)
    return OfferTable.concat([out, OfferTable.from_offers(extra)]) if extra else out


def apply_user_catalog(table: OfferTable, catalog: UserCatalog) -> OfferTable:
    """``table`` plus the catalog's offers, with its price overrides applied (vectorised per override).

    An override that matches no offer is an error (most likely a typo in the provider or instance type).
    """
    if catalog.family_prices:
        table = _apply_family_prices(table, catalog)
    if catalog.offers:
        table = OfferTable.concat([table, OfferTable.from_offers(catalog.offers)])
    if not catalog.price_overrides:
        return table
    cols = {c: table.column(c).copy() for c in OFFER_COLUMNS}
    od, spot = cols["price_on_demand_usd_per_hour"], cols["price_spot_usd_per_hour"]
    regions = cols["region"]
    by: np.ndarray = np.full(len(od), -1, dtype=np.int64)  # the override entry that set each offer's price
    for k, ov in enumerate(catalog.price_overrides):
        m = (cols["provider"] == ov.provider) & (cols["instance_type"] == ov.instance_type)
        if ov.region_glob != "*":
            hits = [
                r for r in set(regions[m].tolist()) if fnmatch.fnmatchcase(r.lower(), ov.region_glob.lower())
            ]
            m &= np.isin(regions, np.array(hits, dtype=object))
        if not m.any():
            raise _fail(
                catalog.path,
                f"entry {ov.entry} matches no offer. Check the provider, the exact instance type and the "
                f"region "
                "glob against `gpufleet catalog offers --provider ... --format csv`.",
            )
        twice = m & (by >= 0)
        if twice.any():  # a repeated entry, or overlapping region globs: discounts compounded silently
            o = int(np.flatnonzero(twice)[0])
            raise _fail(
                catalog.path,
                f"entries {catalog.price_overrides[int(by[o])].entry} and {ov.entry} both apply to "
                f"{cols['provider'][o]} {cols['instance_type'][o]} in {regions[o]}, so the second would "
                "replace or compound the first (two discounts of 0.3 are 51 % off). Keep one entry per "
                "offer: narrow the region globs or merge the entries.",
            )
        by[m] = k
        if ov.price_on_demand_usd_per_hour is not None:
            od[m] = ov.price_on_demand_usd_per_hour
        if ov.discount_fraction is not None:
            od[m] = od[m] * (1.0 - ov.discount_fraction)
        if ov.price_spot_usd_per_hour is not None:
            spot[m] = ov.price_spot_usd_per_hour
        cols["source"][m] = np.array(
            [f"{s} + override {catalog.path.name}" for s in cols["source"][m]], dtype=object
        )
    return OfferTable(cols)


__all__ = [
    "GFO_FAMILY_INSTANCES",
    "GFO_GPU_TYPES",
    "FamilyPrice",
    "PriceOverride",
    "UserCatalog",
    "apply_user_catalog",
    "read_user_catalog",
]
