"""Where each offer is: country, geo bucket and coordinates, from the shipped ``data/regions.csv``.

``regions.csv`` is a verbatim copy of the sourced reference table (one row per (provider, region string) of
the catalog snapshot; provenance in ``data/PROVENANCE_reference.md``). Columns used here: ``country`` (ISO
3166-1 alpha-2), ``geo`` (bucket, see :data:`GEOS`), ``city_or_area`` and ``latitude``/``longitude``
[degrees, 1 decimal; empty where the source gives only a state or country].

Semantics (documented in docs/recommend.md): a region *glob* (``--region 'us-*'``) matches the provider's own
region string; ``--geo`` matches the normalised bucket, so ``--geo us`` covers AWS ``us-east-1``, Azure
``eastus``, RunPod ``US``, Vast ``..., US, NA`` and DigitalOcean ``nyc1`` alike. Offers from user catalogs
whose (provider, region) is not in the table take the location of the same region string at another provider
when that is unambiguous, else geo ``unknown``.
"""

from __future__ import annotations

import csv
import fnmatch
import math
import re
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from gpufleet.errors import DataError, UnknownNameError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_FILE = "regions.csv"

#: geo buckets of regions.csv (README_capabilities.md "Geo buckets")
GEOS: tuple[str, ...] = (
    "us", "ca", "latam", "eu", "uk", "me", "africa", "india", "apac", "cn", "oceania", "unknown",
)  # fmt: skip

#: convenience groups accepted wherever a geo is: each names several buckets
GEO_GROUPS: dict[str, tuple[str, ...]] = {
    "europe": ("eu", "uk"),
    "north_america": ("us", "ca"),
    "americas": ("us", "ca", "latam"),
    "asia": ("apac", "india", "cn"),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionLocation:
    """Where a provider's region is. Coordinates in degrees (None where the source gives no point)."""

    provider: str
    region: str
    country: str | None  # ISO 3166-1 alpha-2
    geo: str  # one of GEOS
    city_or_area: str
    latitude_deg: float | None
    longitude_deg: float | None
    verified: bool


UNKNOWN_LOCATION = RegionLocation(
    provider="",
    region="",
    country=None,
    geo="unknown",
    city_or_area="",
    latitude_deg=None,
    longitude_deg=None,
    verified=False,
)


def _coord(text: str) -> float | None:
    text = text.strip()
    return float(text) if text else None


@cache
def load_regions() -> dict[tuple[str, str], RegionLocation]:
    """Every (provider, region string) of the shipped table -> its location (cached)."""
    try:
        text = resources.files("gpufleet.catalog").joinpath("data", _FILE).read_text(encoding="utf-8")
    except OSError as exc:
        raise DataError(f"The shipped {_FILE} is missing or unreadable ({exc}). Reinstall gpufleet.") from exc
    out: dict[tuple[str, str], RegionLocation] = {}
    for line, row in enumerate(csv.DictReader(text.splitlines()), start=2):
        geo = (row.get("geo") or "").strip()
        if geo not in GEOS:
            raise DataError(f"{_FILE} line {line}: geo {geo!r} is not one of {', '.join(GEOS)}. Reinstall.")
        try:
            loc = RegionLocation(
                provider=row["provider"].strip(),
                region=row["region"],
                country=(row.get("country") or "").strip() or None,
                geo=geo,
                city_or_area=(row.get("city_or_area") or "").strip(),
                latitude_deg=_coord(row.get("latitude") or ""),
                longitude_deg=_coord(row.get("longitude") or ""),
                verified=(row.get("verified") or "").strip().lower() == "true",
            )
        except (KeyError, ValueError) as exc:
            raise DataError(f"{_FILE} line {line} is malformed ({exc}). Reinstall gpufleet.") from exc
        out[(loc.provider, loc.region)] = loc
    return out


@cache
def _by_region_string() -> dict[str, RegionLocation]:
    """Region string -> location where every provider listing that string agrees on the geo and country."""
    seen: dict[str, list[RegionLocation]] = {}
    for (_p, region), loc in load_regions().items():
        seen.setdefault(region.strip().lower(), []).append(loc)
    return {
        r: locs[0] for r, locs in seen.items() if len({(x.geo, x.country) for x in locs}) == 1 and r != ""
    }


def region_location(provider: str, region: str) -> RegionLocation:
    """The location of ``region`` of ``provider``; :data:`UNKNOWN_LOCATION` (geo ``unknown``) if not known."""
    hit = load_regions().get((provider, region))
    if hit is not None:
        return hit
    zone = _AWS_LOCAL_ZONE.match(region) if provider == "aws" else None
    if zone is not None and (provider, zone.group(1)) in load_regions():
        # an AWS Local Zone (us-east-1-atl2 = Atlanta, parent us-east-1) is in its parent region's country and
        # geo (AWS Local Zones docs); the city is not the parent's, so no coordinates are claimed
        parent = load_regions()[(provider, zone.group(1))]
        return replace(parent, region=region, city_or_area=f"Local Zone of {parent.region}",
                       latitude_deg=None, longitude_deg=None, verified=False)  # fmt: skip
    return _by_region_string().get(region.strip().lower(), UNKNOWN_LOCATION)


def region_text(region: str) -> str:
    """A region as shown to people: a marketplace region string whose first part (state/city) is empty, as
    Vast hosts report it (SkyPilot vast/vms.csv ", US, NA"), reads without the empty part ("US, NA"). The
    catalog keeps the provider's string (exports and launches need it); region filters accept both."""
    return region.lstrip(", ") or region


def region_matches(region: str, glob: str) -> bool:
    """Whether ``region`` (or its :func:`region_text`) matches the glob, case-insensitively."""
    r, g = region.lower(), glob.lower()
    return fnmatch.fnmatchcase(r, g) or fnmatch.fnmatchcase(region_text(r), g)


#: AWS Local Zone region names: the parent region, a dash, a metro code and a number (us-west-2-lax1)
_AWS_LOCAL_ZONE = re.compile(r"^([a-z]{2}-[a-z]+-\d)-[a-z]{3}\d+[a-z]?$")


def location_columns(
    provider: npt.NDArray[np.object_], region: npt.NDArray[np.object_]
) -> tuple[
    npt.NDArray[np.object_], npt.NDArray[np.object_], npt.NDArray[np.float64], npt.NDArray[np.float64]
]:
    """(geo, country, latitude [deg], longitude [deg]) per row; country "" and NaN coordinates when unknown.

    Evaluated once per distinct (provider, region) pair.
    """
    import numpy as np  # here, not at import: workload parsing and region look-ups need no numpy

    keys = np.array([f"{p}\x00{r}" for p, r in zip(provider.tolist(), region.tolist(), strict=True)])
    uniq, inverse = np.unique(keys, return_inverse=True) if keys.size else (keys, np.zeros(0, dtype=int))
    locs = [region_location(*str(k).split("\x00", 1)) for k in uniq]
    geo = np.array([x.geo for x in locs] or [""], dtype=object)[inverse] if keys.size else np.zeros(0, object)
    country = np.array([x.country or "" for x in locs] or [""], dtype=object)[inverse] if keys.size else geo
    nan = math.nan
    lat = np.array([x.latitude_deg if x.latitude_deg is not None else nan for x in locs] or [nan])
    lon = np.array([x.longitude_deg if x.longitude_deg is not None else nan for x in locs] or [nan])
    if not keys.size:
        return geo, country, np.zeros(0), np.zeros(0)
    return geo, country, lat[inverse], lon[inverse]


def expand_geos(values: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Geo buckets named by ``values`` (buckets or :data:`GEO_GROUPS` names, case-insensitive).

    Raises :class:`UnknownNameError` with close matches for anything else.
    """
    out: list[str] = []
    for v in values:
        key = v.strip().lower()
        if key in GEO_GROUPS:
            out += [g for g in GEO_GROUPS[key] if g not in out]
        elif key in GEOS:
            if key not in out:
                out.append(key)
        else:
            raise UnknownNameError(
                "geo",
                v,
                (*GEOS, *GEO_GROUPS),
                hint="Geos: us, ca, latam, eu, uk, me, africa, india, apac, cn, oceania; groups: europe "
                "(eu, uk), north_america (us, ca), americas (us, ca, latam), asia (apac, india, cn).",
            )
    return tuple(out)
