"""A running serving workload stays in its current geo unless the fleet file says otherwise (place.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpufleet.catalog.regions import region_location
from gpufleet.fleet.place import stay_in_current_geo
from gpufleet.fleet.spec import read_fleet_file

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fleets" / "assessment-platform.yaml"


def test_serving_keeps_its_geo_and_jobs_may_move() -> None:
    f = read_fleet_file(EXAMPLE)
    kept, notes = stay_in_current_geo(f)
    by = {w.name: w for w in kept.workloads}
    assert by["production"].geos == ("us",) and by["dev"].geos == ("us",)
    assert by["training"].geos == ()  # a job: its data transfer is priced per placement
    assert notes and "production" in notes[0] and "in us" in notes[0]


def test_a_stated_selector_wins() -> None:
    f = read_fleet_file(EXAMPLE)
    f = dataclasses.replace(
        f,
        workloads=tuple(
            dataclasses.replace(w, geos=("eu",)) if w.name == "production" else w for w in f.workloads
        ),
    )
    kept, _ = stay_in_current_geo(f)
    assert {w.name: w for w in kept.workloads}["production"].geos == ("eu",)


def test_the_demo_plan_keeps_production_in_the_us() -> None:
    """Before: `make demo` moved the us-east-1 production service to jarvislabs IN2 (India)."""
    from gpufleet.fleet.plan import plan_fleet

    plan = plan_fleet(EXAMPLE, savings=False)
    assert plan.status == "optimal"
    for ln in plan.lines:
        if ln.workload in ("production", "dev") and ln.region:
            assert region_location(ln.provider, ln.region).geo == "us", (ln.provider, ln.region)
    assert any("stay in the geo" in n for n in plan.notes)


def _without_region(provider: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    f = read_fleet_file(EXAMPLE)
    f = dataclasses.replace(
        f,
        workloads=tuple(
            dataclasses.replace(w, current=dataclasses.replace(w.current, region=None, provider=provider))
            if w.name == "production" and w.current is not None
            else w
            for w in f.workloads
        ),
    )
    kept, notes = stay_in_current_geo(f)
    return {w.name: w for w in kept.workloads}["production"].geos, notes


def test_current_without_region_takes_the_providers_default() -> None:
    """A serving workload whose current deployment names no region was skipped (free to move anywhere);
    it is taken to run in the provider's default region, as migrate assumes (AWS: us-east-1), and said so."""
    geos, notes = _without_region("aws")
    assert geos == ("us",)
    assert any(
        "taken to be the provider's default region" in n and "production in aws us-east-1" in n for n in notes
    )
    # a provider with no default region: not kept, and the plan says so rather than moving it silently
    geos, notes = _without_region("lambda")
    assert geos == ()
    assert any("production (lambda) may be placed in any geo" in n for n in notes)
