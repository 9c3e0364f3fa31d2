"""Where the users are: named places or coordinates, each with its share of the traffic (`gpufleet regions
--user-location NAME[:SHARE]`).

A serving workload's users are rarely in one city: an EU service answers Paris, Frankfurt and Madrid, a
global one New York and Tokyo. :func:`parse_user_locations` reads each location as a place name or
``LAT,LON``, with an optional traffic share (``Paris:0.6``, ``Tokyo:25%``, ``48.85,2.35:0.6``); the
shares are normalised to sum to 1 (equal shares when none is given). The regions analyzer then reports, per
region, the traffic-weighted RTT, the worst location's RTT and every location's RTT, and ``--max-rtt-ms``
must hold for every location (a region that serves one city within the bound and another beyond it misses
the SLO for that city's users).

Place names are the cities and areas of the shipped region table (fleet/data/regions.csv, column
``city_or_area``: Paris, Frankfurt, London, Tokyo, New York, Sao Paulo, Mumbai, Sydney, ...), at the
median of the coordinates the table gives the cloud regions there (area-level; see regions.csv's
``verified`` column); any other place is given as ``LAT,LON``.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

from gpufleet.errors import InputError, UnknownNameError
from gpufleet.fleet.refdata import _rows

_COORDS = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*,\s*(-?\d+(?:\.\d+)?)\s*$")


@dataclass(frozen=True, slots=True, kw_only=True)
class UserLocation:
    """A place the users are, with its share of the requests (the shares of a set sum to 1)."""

    name: str
    latitude_deg: float
    longitude_deg: float
    share: float  # of the requests [0..1]


def _keys(area: str) -> list[str]:
    """Lookup keys of a regions.csv area: the text before " (" and its part before the first comma
    ("Ashburn, Virginia" -> "ashburn, virginia", "ashburn")."""
    base = area.split(" (")[0].strip()
    keys = [base]
    if "," in base:
        keys.append(base.split(",")[0].strip())
    return [k.lower() for k in keys if k]


@cache
def known_places() -> dict[str, tuple[str, float, float]]:
    """Lower-case place name -> (name as written, median latitude, median longitude) of regions.csv."""
    pts: dict[str, list[tuple[float, float]]] = {}
    shown: dict[str, str] = {}
    for r in _rows("regions.csv"):
        try:
            lat, lon = float(r["latitude"]), float(r["longitude"])
        except ValueError:
            continue
        base = r["city_or_area"].split(" (")[0].strip()
        for i, k in enumerate(_keys(r["city_or_area"])):
            pts.setdefault(k, []).append((lat, lon))
            shown.setdefault(k, base if i == 0 else base.split(",")[0].strip())
    return {
        k: (shown[k], statistics.median(p[0] for p in v), statistics.median(p[1] for p in v))
        for k, v in pts.items()
    }


def _share(text: str, spec: str) -> float:
    t = text.strip()
    pct = t.endswith("%")
    try:
        v = float(t[:-1] if pct else t)
    except ValueError:
        v = math.nan
    if not math.isfinite(v) or v <= 0 or (pct and v > 100):
        raise InputError(
            f"--user-location {spec!r}: the share {text!r} is not a positive number. Give the share of "
            "the traffic as a fraction or a percentage (Paris:0.6 or Paris:60%), or leave it out for equal "
            "shares."
        )
    return v / 100.0 if pct else v


def _place(text: str, spec: str) -> tuple[str, float, float]:
    m = _COORDS.match(text)
    if m:
        lat, lon = float(m.group(1)), float(m.group(2))
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise InputError(
                f"--user-location {spec!r}: latitude must be in [-90, 90] and longitude in [-180, 180] "
                "(degrees, LAT,LON)."
            )
        return f"{lat:g},{lon:g}", lat, lon
    places = known_places()
    hit = places.get(text.strip().lower())
    if hit is None:
        raise UnknownNameError(
            "user location",
            text.strip(),
            [v[0] for v in places.values()],
            hint="Give a city or area of the region table (e.g. Paris, Frankfurt, Tokyo) or LAT,LON in "
            "degrees, with an optional share: --user-location 48.85,2.35:0.6.",
        )
    return hit


def parse_user_locations(specs: Sequence[str]) -> tuple[UserLocation, ...]:
    """``NAME[:SHARE]`` or ``LAT,LON[:SHARE]`` per location -> locations with shares summing to 1. Shares
    are given for every location or for none (equal shares); a place named twice is an error."""
    parsed: list[tuple[str, float, float, float | None]] = []
    for spec in specs:
        if not isinstance(spec, str) or not spec.strip():
            raise InputError("--user-location needs a place (a city of the region table or LAT,LON).")
        place, sep, share_text = spec.rpartition(":") if ":" in spec else (spec, "", "")
        name, lat, lon = _place(place, spec)
        parsed.append((name, lat, lon, _share(share_text, spec) if sep else None))
    names = [p[0].lower() for p in parsed]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(
            f"--user-location names {', '.join(dup)} more than once; give each place once with its share."
        )
    given = [p[3] for p in parsed if p[3] is not None]
    if given and len(given) != len(parsed):
        raise InputError(
            "Give a traffic share for every --user-location or for none (equal shares): "
            + ", ".join(p[0] for p in parsed if p[3] is None)
            + " has none."
        )
    total = sum(given) if given else float(len(parsed))
    return tuple(
        UserLocation(name=n, latitude_deg=lat, longitude_deg=lon, share=(s if s is not None else 1.0) / total)
        for n, lat, lon, s in parsed
    )
