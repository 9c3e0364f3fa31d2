"""Seeded random small fleets with hand-made options (no catalog): the MILP vs brute-force test bed."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from gpufleet.fleet.mig import mig_shapes
from gpufleet.fleet.types import (
    Block,
    Budget,
    Constraints,
    DemandProfile,
    ExistingCommitment,
    Fleet,
    FleetWorkload,
    OnPremSite,
    Option,
    Quota,
)

PROVIDERS = ("aws", "gcp", "azure")
#: MIG pools: instance -> (GPU, GPUs per node)
MIG_INSTANCES = {"mig1": ("H100-SXM", 1), "mig2": ("A100-SXM-40GB", 2), "mig4": ("A30", 4)}
REGIONS = ("r1", "r2", "r3")
INSTANCES = ("small", "large")


def random_fleet(seed: int) -> tuple[Fleet, dict[str, list[Option]]]:
    rng = np.random.default_rng(seed)
    n_w = int(rng.integers(1, 4))
    workloads = []
    options: dict[str, list[Option]] = {}
    site = OnPremSite(
        name="dc1",
        region="dc",
        gpu="A100-SXM-80GB",
        gpus_per_node=8,
        nodes=int(rng.integers(1, 3)),
        capex_usd_per_node=float(rng.uniform(50_000, 200_000)),
        depreciation_months=36,
        power_kw_per_node=6.5,
        pue=1.3,
        usd_per_kwh=0.12,
        ops_usd_per_node_per_month=500,
    )
    use_site = rng.random() < 0.3
    pool_price = {
        (p, r, i): float(rng.uniform(1.0, 4.0)) * g
        for p in PROVIDERS[:2]
        for r in REGIONS[:2]
        for i, (_gpu, g) in MIG_INSTANCES.items()
    }
    pool_commit = {
        k: (
            v * float(rng.uniform(0.5, 0.9)) if rng.random() < 0.6 else math.nan,
            v * float(rng.uniform(0.3, 0.7)) if rng.random() < 0.5 else math.nan,
        )
        for k, v in pool_price.items()
    }
    # issue 22's rules (no lifetime given, the commitment margin) from a stream of their own, so the seeds'
    # other draws stay as they were
    extra = np.random.default_rng(seed + 1_000_003)
    for w in range(n_w):
        name = f"w{w}"
        ha = 2 if rng.random() < 0.2 else 1
        pre = float(rng.choice([0.0, 0.5, 1.0]))
        drawn = float(rng.choice([6.0, 12.0, 36.0]))
        life = None if extra.random() < 0.15 else drawn
        workloads.append(
            FleetWorkload(
                name=name,
                team=str(rng.choice(["a", "b"])),
                resources=None,
                demand=DemandProfile(levels=((1.0, 730.0),), label="24/7"),
                ha_regions=ha,
                preemptible_fraction=pre,
                lifetime_months=life,
            )
        )
        opts = []
        for j in range(int(rng.integers(1, 4))):
            prov = str(rng.choice(PROVIDERS))
            reg = str(rng.choice(REGIONS))
            inst = str(rng.choice(INSTANCES))
            nb = int(rng.integers(1, 3))
            blocks = tuple(
                Block(nodes=int(rng.integers(1, 3)), hours_per_month=float(h))
                for h in sorted(rng.choice([730.0, 400.0, 176.0], size=nb, replace=False), reverse=True)
            )
            od = float(rng.uniform(0.5, 10.0))
            opts.append(
                Option(
                    key=f"{name}#{j}",
                    workload=name,
                    provider=prov,
                    region=reg,
                    instance_type=inst,
                    gpu="A100-SXM-80GB" if inst == "large" else "T4",
                    gpus_per_node=8.0 if inst == "large" else 1.0,
                    vcpus_per_node=96.0 if inst == "large" else 8.0,
                    arch="x86_64",
                    nodes_per_replica=1,
                    replicas_peak=sum(b.nodes for b in blocks),
                    blocks=blocks,
                    price_on_demand_usd_per_hour=od,
                    price_spot_usd_per_hour=od * float(rng.uniform(0.2, 1.1))
                    if rng.random() < 0.7
                    else math.nan,
                    price_commit_1y_usd_per_hour=od * float(rng.uniform(0.5, 0.9))
                    if rng.random() < 0.6
                    else math.nan,
                    price_commit_3y_usd_per_hour=od * float(rng.uniform(0.3, 0.7))
                    if rng.random() < 0.5
                    else math.nan,
                    spot_cost_factor=float(rng.uniform(1.0, 1.3)),
                    transfer_usd_per_month=float(rng.choice([0.0, 0.0, rng.uniform(1, 50)])),
                )
            )
        if use_site and rng.random() < 0.5:
            blocks = (Block(nodes=1, hours_per_month=730.0),)
            opts.append(
                Option(
                    key=f"{name}#site",
                    workload=name,
                    provider="onprem",
                    region="dc",
                    instance_type="dc1",
                    gpu=site.gpu,
                    gpus_per_node=8.0,
                    vcpus_per_node=0.0,
                    arch="",
                    nodes_per_replica=1,
                    replicas_peak=1,
                    blocks=blocks,
                    price_on_demand_usd_per_hour=math.nan,
                    price_spot_usd_per_hour=math.nan,
                    price_commit_1y_usd_per_hour=math.nan,
                    price_commit_3y_usd_per_hour=math.nan,
                    on_prem_site="dc1",
                    on_prem_fixed_usd_per_node_month=site.fixed_usd_per_node_month,
                    on_prem_energy_usd_per_node_hour=site.energy_usd_per_node_hour,
                )
            )
        sharing = "none"
        if rng.random() < 0.5:
            sharing = str(rng.choice(["auto", "mig"]))
            for j in range(int(rng.integers(1, 3))):
                key = list(pool_price)[int(rng.integers(0, len(pool_price)))]
                prov, reg, inst = key
                gpu, gpn = MIG_INSTANCES[inst]
                shapes = [x for x in mig_shapes()[gpu] if x.compute_slices < x.compute_slices_total]
                shp = shapes[int(rng.integers(0, len(shapes)))]
                n = int(rng.integers(1, 4))
                opts.append(
                    Option(
                        key=f"{name}#mig{j}",
                        workload=name,
                        provider=prov,
                        region=reg,
                        instance_type=inst,
                        gpu=gpu,
                        gpus_per_node=float(gpn),
                        vcpus_per_node=16.0 * gpn,
                        arch="x86_64",
                        nodes_per_replica=0,
                        replicas_peak=n,
                        blocks=(),
                        price_on_demand_usd_per_hour=pool_price[key],
                        price_spot_usd_per_hour=math.nan,
                        price_commit_1y_usd_per_hour=pool_commit[key][0],
                        price_commit_3y_usd_per_hour=pool_commit[key][1],
                        transfer_usd_per_month=float(rng.choice([0.0, rng.uniform(1, 20)])),
                        mig_profile=shp.profile,
                        mig_slices=n,
                        mig_compute_slices=shp.compute_slices,
                        mig_compute_slices_total=shp.compute_slices_total,
                    )
                )
            workloads[-1] = replace(workloads[-1], sharing=sharing)
        options[name] = opts
    if (
        rng.random() < 0.35 and workloads and workloads[0].ha_regions == 1
    ):  # identical copies: grouped in the MILP
        src = workloads[0]
        for d in range(int(rng.integers(1, 3))):
            name = f"{src.name}copy{d}"
            workloads.append(replace(src, name=name))
            options[name] = [
                replace(o, key=f"{name}#{j}", workload=name) for j, o in enumerate(options[src.name])
            ]
    quotas = []
    for _ in range(int(rng.integers(0, 3))):
        quotas.append(
            Quota(
                name=f"q{len(quotas)}",
                provider=str(rng.choice(PROVIDERS)),
                limit=float(rng.integers(0, 20)),
                unit=str(rng.choice(["gpus", "instances", "vcpus"])),
                region=str(rng.choice(["*", "r1"])),
                spot=bool(rng.random() < 0.3),
            )
        )
    budgets = []
    if rng.random() < 0.4:
        budgets.append(Budget(name="fleet", usd_per_month=float(rng.uniform(500, 15_000))))
    if rng.random() < 0.2:
        budgets.append(Budget(name="team a", usd_per_month=float(rng.uniform(200, 8000)), teams=("a",)))
    existing = []
    if rng.random() < 0.4:
        existing.append(
            ExistingCommitment(
                name="ri",
                provider=str(rng.choice(PROVIDERS)),
                region=str(rng.choice(REGIONS)),
                instance_type=str(rng.choice(INSTANCES)),
                count=int(rng.integers(1, 3)),
            )
        )
    constraints = Constraints(
        quotas=tuple(quotas),
        budgets=tuple(budgets),
        existing=tuple(existing),
        max_providers=int(rng.integers(1, 3)) if rng.random() < 0.3 else None,
        commitment_terms=("1y", "3y") if rng.random() < 0.8 else ("1y",),
        commitment_margin_fraction=float(extra.choice([0.0, 0.1, 0.2, 0.3])),
    )
    fleet = Fleet(
        name=f"random-{seed}",
        workloads=tuple(workloads),
        constraints=constraints,
        on_prem=(site,) if use_site else (),
    )
    return fleet, options
