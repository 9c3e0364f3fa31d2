"""Where a running service may move: within the geography it runs in, unless the fleet file says otherwise.

A platform engineer moves a serving or interactive workload within its geography: its users, latency and
data jurisdiction are there (the same rule ``gpufleet migrate`` applies, recommend.migrate._current_geo).
A fleet file that names no ``regions``, ``geos`` or ``countries`` for such a workload and states the region
it runs in today (``current.region``) keeps it in that region's geo (regions.csv); the plan says so in a
note. A ``current`` without a region is taken to run in its provider's default region, as ``gpufleet
migrate`` assumes (recommend.migrate.PROVIDER_DEFAULT_REGION: AWS us-east-1); a provider without a default
leaves the workload free to move, and a note says so (give ``current.region`` or ``geos``).
Training and batch jobs (``job: true`` capacity workloads, training model workloads) may move: their data
transfer is priced per placement. Give ``geos: [...]`` (or regions/countries) to decide otherwise.
"""

from __future__ import annotations

import dataclasses

from gpufleet.catalog.regions import region_location
from gpufleet.fleet.types import Fleet, FleetWorkload


def _moves_freely(fw: FleetWorkload) -> bool:
    if fw.workload is not None:
        return fw.workload.is_training
    return fw.resources is not None and fw.resources.job


def stay_in_current_geo(f: Fleet) -> tuple[Fleet, tuple[str, ...]]:
    """``f`` with each running serving workload kept in its current geo (module doc), and the notes."""
    from gpufleet.recommend.migrate import PROVIDER_DEFAULT_REGION

    kept: dict[str, list[str]] = {}
    assumed: list[str] = []
    free: list[str] = []
    out = []
    for fw in f.workloads:
        cur = fw.current
        if fw.regions or fw.geos or fw.countries or cur is None or _moves_freely(fw):
            out.append(fw)
            continue
        region = cur.region
        if region is None:
            region = PROVIDER_DEFAULT_REGION.get(cur.provider)
            if region is None:
                free.append(f"{fw.name} ({cur.provider})")
                out.append(fw)
                continue
            assumed.append(f"{fw.name} in {cur.provider} {region}")
        geo = region_location(cur.provider, region).geo
        if geo == "unknown":
            out.append(fw)
            continue
        kept.setdefault(geo, []).append(fw.name)
        out.append(dataclasses.replace(fw, geos=(geo,)))
    notes = [
        f"Serving workloads stay in the geo they run in today (users, latency, data jurisdiction): "
        f"{', '.join(names)} in {geo}; give the workload geos/regions/countries to place it elsewhere."
        for geo, names in sorted(kept.items())
    ]
    if assumed:
        notes.append(
            "Current region not given: taken to be the provider's default region (as migrate does): "
            f"{', '.join(assumed)}; give current.region if it runs elsewhere."
        )
    if free:
        notes.append(
            f"Current region not given and the provider has no default region: {', '.join(free)} may be "
            "placed in any geo; give current.region (or geos) to keep it near its users."
        )
    if not notes:
        return f, ()
    return dataclasses.replace(f, workloads=tuple(out)), tuple(notes)
