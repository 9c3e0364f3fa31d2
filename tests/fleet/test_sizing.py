"""Vectorised sizing + pruning (fleet/sizing.py) keeps the optimum: on seeded random capacity fleets over the
shipped catalog, the MILP over the pruned options equals the MILP over every fitting offer, for each lever set
the plan and its savings waterfall solve with."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gpufleet.catalog.offers import load_offers
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.fleet.model import LEVER_SETS
from gpufleet.fleet.options import _Prices, _Sizer, build_options
from gpufleet.fleet.plan import solve_fleet
from gpufleet.fleet.spec import DemandSpec
from gpufleet.fleet.types import (
    Budget,
    Constraints,
    CurrentUse,
    DataLocation,
    ExistingCommitment,
    Fleet,
    FleetWorkload,
    Quota,
    Resources,
)
from gpufleet.recommend.perf import DefaultEstimator

GPUS = (("T4",), ("L4", "A10G"), ("A100*",), ("H100*",), ("L40S",), ("V100*", "T4"))
PROVIDERS = ((), ("aws",), ("gcp", "azure"), ("aws", "azure", "oci"))


def _fleet(seed: int) -> Fleet:
    rng = np.random.default_rng(seed)
    ws = []
    for i in range(int(rng.integers(2, 4))):
        ha = 2 if rng.random() < 0.2 else 1
        ws.append(
            FleetWorkload(
                name=f"w{i}",
                team=f"t{i % 2}",
                resources=Resources(
                    gpus=GPUS[int(rng.integers(len(GPUS)))],
                    gpus_per_replica=int(rng.choice([1, 2, 8])),
                    replicas=int(rng.integers(1, 5)),
                    vcpus=float(rng.choice([0.0, 8.0])),
                    ram_gib=float(rng.choice([0.0, 64.0])),
                    job=bool(rng.random() < 0.3),
                ),
                demand=(
                    DemandSpec(hours_per_day=float(rng.integers(4, 25)), days_per_month=22)
                    if rng.random() < 0.5
                    else DemandSpec(hourly=[float(v) for v in rng.uniform(0.1, 1.0, 24)])
                ).to_profile(),
                providers=PROVIDERS[int(rng.integers(len(PROVIDERS)))],
                regions=("us-*",) if rng.random() < 0.3 else (),
                ha_regions=ha,
                preemptible_fraction=float(rng.choice([0.0, 0.5, 1.0])),
                lifetime_months=float(rng.choice([6.0, 12.0, 36.0])),
                data=DataLocation(provider="aws", region="us-east-1", size_gib=float(rng.integers(0, 2000)))
                if rng.random() < 0.5
                else None,
                current=CurrentUse(provider="aws", instance_type="g4dn.xlarge", count=2, region="us-east-1")
                if rng.random() < 0.3
                else None,
            )
        )
    cons = Constraints(
        quotas=(
            Quota(name="aws GPUs", provider="aws", limit=float(rng.integers(4, 40))),
            Quota(name="aws spot GPUs", provider="aws", limit=float(rng.integers(0, 16)), spot=True),
            Quota(name="gcp A100", provider="gcp", gpu="A100*", limit=float(rng.integers(0, 16))),
            Quota(name="azure vCPUs", provider="azure", unit="vcpus", limit=float(rng.integers(50, 800))),
            Quota(name="p4d nodes", provider="aws", instance_family="p4d*", unit="instances", limit=1.0),
        ),
        budgets=(Budget(name="t0", usd_per_month=float(rng.uniform(5e3, 2e5)), teams=("t0",)),),
        existing=(
            ExistingCommitment(
                name="ri", provider="aws", region="us-east-1", instance_type="g4dn.xlarge", count=2
            ),
        ),
        max_providers=int(rng.integers(1, 4)) if rng.random() < 0.6 else None,
    )
    return Fleet(name=f"f{seed}", workloads=tuple(ws), constraints=cons)


@pytest.fixture(scope="module")
def shared() -> tuple[object, object, object]:
    return load_offers(), load_spot_assumptions(), DefaultEstimator()


@pytest.mark.parametrize("seed", range(1, 8))  # seed 0 is valid but its unpruned MILP takes ~20 s
def test_pruned_sizing_keeps_the_optimum(seed: int, shared: tuple[object, object, object]) -> None:
    table, spot, est = shared
    fleet = _fleet(seed)
    pruned = {w.workload: list(w.options) for w in build_options(fleet, table, est, spot)}  # type: ignore[arg-type]
    sizer = _Sizer(fleet, _Prices(table), spot, {})  # type: ignore[arg-type]
    full = {fw.name: sizer.options(fw, set(), prune=False)[0] for fw in fleet.workloads}
    assert sum(map(len, pruned.values())) < sum(map(len, full.values()))
    for lv in LEVER_SETS:
        a = solve_fleet(fleet, full, levers=lv, prune=False, mip_rel_gap=1e-9, explain=False)
        b = solve_fleet(fleet, pruned, levers=lv, prune=False, mip_rel_gap=1e-9, explain=False)
        assert a.status == b.status, (a.message, b.message)
        if a.cost_usd_per_month is not None:
            assert b.cost_usd_per_month is not None
            assert math.isclose(a.cost_usd_per_month, b.cost_usd_per_month, rel_tol=1e-7, abs_tol=1e-6)
            assert b.violations == ()
