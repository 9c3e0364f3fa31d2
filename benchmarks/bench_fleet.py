"""Fleet planning at scale, end to end: parse the fleet file, size every workload, build, solve, check.

    .venv/bin/python benchmarks/bench_fleet.py [--sizes 1000 10000] [--modes grouped distinct]
        [--gap 0.005] [--time-limit 120] [--seed 7]

Two kinds of seeded fleets on the shipped catalog, written to a JSON fleet file and read back with
``read_fleet_file`` (the parse is timed):

* ``grouped``: workloads drawn from 24 resource classes (GPU family x replicas x demand shape x providers x
  preemptible share) over 8 teams, so identical workloads group exactly in the MILP (counts, not copies);
* ``distinct``: every workload its own (GPU family, GPUs per replica, replicas, vCPUs, demand shape and hours,
  allowed providers, data residency, data location and size, preemptible share, lifetime), as real fleets are.

``--binding`` re-plans each fleet with the AWS GPU quotas capped below what its unconstrained plan uses, so
quota rows bind (the unconstrained plan is not timed).

Both run under per-provider GPU quotas (a separate AWS spot quota, a GCP A100 quota, Azure vCPUs), a fleet
budget, a budget per team (different per team), existing reservations and at most 4 providers. Stages:
parse (file -> typed fleet), sizing (every fitting catalog offer, exact pruning), build (MILP), HiGHS (with
the LP-rounding start), decode and the independent check. The gap is what the solver proves against its
bound. "CPU s" is the process's CPU time over all stages
(on a shared machine wall time overstates it). Prints a markdown table and the load average.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from gpufleet.catalog.offers import load_offers
from gpufleet.cost.spot import load_spot_assumptions
from gpufleet.fleet.options import build_options
from gpufleet.fleet.plan import solve_fleet
from gpufleet.fleet.spec import read_fleet_file
from gpufleet.recommend.perf import DefaultEstimator

GPU_CLASSES = (["T4"], ["L4", "A10G"], ["A100*"], ["H100*"], ["L40S"], ["V100*", "T4"])
DEMANDS: tuple[dict[str, Any], ...] = (
    {"schedule": "24/7"},
    {"hours_per_day": 8, "days_per_month": 22},
    {"hours_per_week": 24},
    {"hourly": [0.25] * 6 + [0.5, 0.75] + [1.0] * 10 + [0.75, 0.5] + [0.25] * 4},
)
PROVIDER_SETS = (["aws", "gcp", "azure"], ["aws"], ["gcp", "azure", "lambda"], ["aws", "azure", "oci"])
ALL_PROVIDERS = ("aws", "gcp", "azure", "lambda", "oci")
DATA_HOMES = (("aws", "us-east-1"), ("aws", "eu-west-1"), ("gcp", "us-central1"), ("azure", "eastus"))
TEAMS = 8


def _grouped(size: int, rng: np.random.Generator) -> dict[str, dict[str, Any]]:
    base = []
    for i in range(24):
        base.append(
            {
                "resources": {
                    "gpus": GPU_CLASSES[i % len(GPU_CLASSES)],
                    "gpus_per_replica": int(rng.choice([1, 1, 2, 8])),
                    "replicas": int(rng.integers(1, 6)),
                },
                "demand": DEMANDS[int(rng.integers(len(DEMANDS)))],
                "providers": PROVIDER_SETS[int(rng.integers(len(PROVIDER_SETS)))],
                "preemptible_fraction": float(rng.choice([0.0, 0.5, 1.0])),
                "lifetime_months": float(rng.choice([12.0, 36.0])),
            }
        )
    picks = rng.integers(len(base), size=size)
    return {f"w{i}": {**base[int(c)], "team": f"team{i % TEAMS}"} for i, c in enumerate(picks)}


def _demand(rng: np.random.Generator) -> dict[str, Any]:
    kind = int(rng.integers(4))
    if kind == 0:
        return {"schedule": "24/7"}
    if kind == 1:
        return {"hours_per_day": int(rng.integers(4, 17)), "days_per_month": int(rng.integers(15, 31))}
    if kind == 2:
        return {"hours_per_week": int(rng.integers(8, 100))}
    peak = int(rng.integers(24))
    width = float(rng.uniform(2.0, 8.0))
    floor = float(rng.uniform(0.05, 0.5))
    hours = np.arange(24)
    d = np.minimum(np.abs(hours - peak), 24 - np.abs(hours - peak))
    shape = floor + (1 - floor) * np.exp(-((d / width) ** 2))
    return {"hourly": [round(float(v), 2) for v in shape]}


def _catalog_places() -> dict[tuple[str, str, str], list[tuple[int, float]]]:
    """(provider, GPU spec id, geo) -> [(GPUs, vCPUs) per node] in the shipped catalog (users ask for GPUs
    their clouds have, in node sizes they sell)."""
    from gpufleet.fleet.refdata import region_info

    t = load_offers()
    out: dict[tuple[str, str, str], set[tuple[int, float]]] = {}
    cols = ("provider", "gpu", "region", "gpu_count", "vcpus")
    for p, g, r, n, v in set(zip(*(t.column(c) for c in cols), strict=True)):
        info = region_info(str(p), str(r))
        key = (str(p), str(g), info.geo.lower() if info else "")
        out.setdefault(key, set()).add((int(n), float(v)))
    return {k: sorted(v) for k, v in out.items()}


def _available(places: dict[tuple[str, str, str], list[tuple[int, float]]], w: dict[str, Any]) -> bool:
    """Some allowed offer holds one replica on one node (a replica spans nodes only over an RDMA fabric,
    which the planner allows on few offers: ``fleet.sizing.candidates``)."""
    geos = set(w.get("geos", ()))
    r = w["resources"]
    return any(
        p in w["providers"]
        and any(fnmatch.fnmatchcase(g, pat) for pat in r["gpus"])
        and (not geos or geo in geos)
        and any(n >= r["gpus_per_replica"] and (not r["vcpus"] or v >= r["vcpus"]) for n, v in nodes)
        for (p, g, geo), nodes in places.items()
    )


def _distinct(size: int, rng: np.random.Generator) -> dict[str, dict[str, Any]]:
    out = {}
    places = _catalog_places()
    for i in range(size):
        # at least one hyperscaler (their regions carry residency data), then 0-2 more providers
        first = str(rng.choice(ALL_PROVIDERS[:3]))
        rest = [p for p in ALL_PROVIDERS if p != first]
        providers = sorted(
            [first, *(str(p) for p in rng.choice(rest, size=int(rng.integers(0, 3)), replace=False))]
        )
        w: dict[str, Any] = {
            "team": f"team{i % TEAMS}",
            "resources": {
                "gpus": GPU_CLASSES[int(rng.integers(len(GPU_CLASSES)))],
                "gpus_per_replica": int(rng.choice([1, 1, 1, 2, 4, 8])),
                "replicas": int(rng.integers(1, 9)),
                "vcpus": float(rng.choice([0, 4, 8])),
            },
            "demand": _demand(rng),
            "providers": providers,
            "preemptible_fraction": float(rng.choice([0.0, 0.0, 0.25, 0.5, 1.0])),
            "lifetime_months": float(rng.choice([6.0, 12.0, 36.0])),
        }
        if rng.random() < 0.25:
            w["geos"] = [str(rng.choice(["us", "eu"]))]
        for _ in range(50):  # a GPU family the allowed providers (and residency) actually offer
            if _available(places, w):
                break
            w["resources"]["gpus"] = GPU_CLASSES[int(rng.integers(len(GPU_CLASSES)))]
        else:
            w.pop("geos", None)
            w["providers"] = ["aws"]
        if rng.random() < 0.6:
            prov, reg = DATA_HOMES[int(rng.integers(len(DATA_HOMES)))]
            w["data"] = {
                "provider": prov,
                "region": reg,
                "size_gib": round(float(rng.uniform(10, 5000)), 1),
                "transfers_per_month": float(rng.choice([0.0, 1.0, 4.0])),
                "serving_egress_gib_per_month": round(float(rng.choice([0.0, rng.uniform(10, 2000)])), 1),
            }
        out[f"w{i}"] = w
    return out


def fleet_dict(size: int, mode: str, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    workloads = _grouped(size, rng) if mode == "grouped" else _distinct(size, rng)
    team_usd = [60_000.0 * size / TEAMS * f for f in (0.8, 1.0, 1.2, 1.5, 0.9, 1.1, 1.3, 2.0)]
    return {
        "name": f"bench-{mode}-{size}",
        "workloads": workloads,
        "constraints": {
            "quotas": [
                {"name": "aws GPUs", "provider": "aws", "limit": 40.0 * size},
                {"name": "aws spot GPUs", "provider": "aws", "limit": 10.0 * size, "spot": True},
                {"name": "gcp A100 GPUs", "provider": "gcp", "gpu": "A100*", "limit": 2.0 * size},
                {"name": "azure GPUs", "provider": "azure", "limit": 20.0 * size},
                {"name": "azure vCPUs", "provider": "azure", "unit": "vcpus", "limit": 400.0 * size},
            ],
            "budgets": [
                {"name": "fleet", "usd_per_month": 1e9},
                *(
                    {"name": f"team{t} budget", "usd_per_month": team_usd[t], "teams": [f"team{t}"]}
                    for t in range(TEAMS)
                ),
            ],
            "existing_commitments": [
                {
                    "name": "ri-g4dn",
                    "provider": "aws",
                    "region": "us-east-1",
                    "instance_type": "g4dn.xlarge",
                    "count": max(1, size // 50),
                },
                {
                    "name": "ri-p4d",
                    "provider": "aws",
                    "region": "us-east-1",
                    "instance_type": "p4d.24xlarge",
                    "count": max(1, size // 500),
                },
            ],
            "max_providers": 4,
        },
    }


def tighten(data: dict[str, Any], gap: float, time_limit_s: float) -> dict[str, Any]:
    """The same fleet with binding quotas: plan it once (not timed), then cap the AWS on-demand and spot GPU
    quotas at 90 % of what that plan uses (team budgets stay: the unconstrained plan already spends each
    team's least, so a lower budget would only make the fleet infeasible)."""
    from gpufleet.fleet.spec import fleet_from_dict

    fleet = fleet_from_dict(data)
    wopts = build_options(fleet, load_offers(), DefaultEstimator(), load_spot_assumptions())
    solved = solve_fleet(
        fleet, {w.workload: list(w.options) for w in wopts}, mip_rel_gap=gap, time_limit_s=time_limit_s
    )
    aws = {False: 0.0, True: 0.0}
    for ln in solved.lines:
        if ln.provider == "aws" and ln.nodes > 0:  # quotas count a placement's peak nodes: block nodes sum
            aws[ln.pay_kind == "spot"] += ln.nodes * ln.gpus_per_node
    out = json.loads(json.dumps(data))
    for q in out["constraints"]["quotas"]:
        if q["provider"] == "aws" and "gpu" not in q:
            q["limit"] = max(1.0, round(0.9 * aws[bool(q.get("spot"))]))
    return out


def run(size: int, mode: str, gap: float, time_limit_s: float, seed: int, binding: bool) -> dict[str, Any]:
    data = fleet_dict(size, mode, seed)
    if binding:
        data = tighten(data, gap, time_limit_s)
    table, spot, est = load_offers(), load_spot_assumptions(), DefaultEstimator()
    import scipy.optimize  # noqa: F401  (one-off import, not planning time)

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fleet.json"
        path.write_text(json.dumps(data))
        t0 = time.perf_counter()
        c0 = time.process_time()
        fleet = read_fleet_file(path)
        parse_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    wopts = build_options(fleet, table, est, spot)
    sizing_s = time.perf_counter() - t1
    options = {w.workload: list(w.options) for w in wopts}
    t2 = time.perf_counter()
    solved = solve_fleet(fleet, options, mip_rel_gap=gap, time_limit_s=time_limit_s, prune=False)
    solve_s = time.perf_counter() - t2
    s = solved.stats
    return {
        "workloads": size,
        "mode": mode,
        "status": solved.status,
        "options": f"{sum(w.generated for w in wopts):,} -> {s.options_after_pruning:,}",
        "variables": s.variables,
        "constraints": s.constraints,
        "gap": "-" if s.mip_gap is None else f"{s.mip_gap:.3%}",
        "parse_s": parse_s,
        "sizing_s": sizing_s,
        "build_s": s.build_time_s,
        "highs_s": s.solve_time_s,
        "check_s": solve_s - s.build_time_s - s.solve_time_s,
        "total_s": parse_s + sizing_s + solve_s,
        "cpu_s": time.process_time() - c0,
        "violations": len(solved.violations),
        "cost": solved.cost_usd_per_month,
        "aws_quotas": [q for q in data["constraints"]["quotas"] if q["provider"] == "aws"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--modes", nargs="+", default=["grouped", "distinct"], choices=["grouped", "distinct"])
    ap.add_argument("--gap", type=float, default=0.005)
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument(
        "--binding",
        action="store_true",
        help="cap the AWS GPU quotas below what the unconstrained plan uses (quota rows that bind)",
    )
    a = ap.parse_args()
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    head = "workloads | mode | status | options (generated -> kept) | vars / rows | gap | parse s | sizing s"
    print(f"| {head} | build s | HiGHS s | decode+check s | total s | CPU s | violations | USD/month |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    caps: list[str] = []
    for n in a.sizes:
        for mode in a.modes:
            r = run(n, mode, a.gap, a.time_limit, a.seed, a.binding)
            cells = [
                f"{r['workloads']:,}",
                mode + (" binding" if a.binding else ""),
                r["status"],
                r["options"],
                f"{r['variables']:,} / {r['constraints']:,}",
                r["gap"],
                f"{r['parse_s']:.1f}",
                f"{r['sizing_s']:.1f}",
                f"{r['build_s']:.1f}",
                f"{r['highs_s']:.1f}",
                f"{r['check_s']:.1f}",
                f"{r['total_s']:.1f}",
                f"{r['cpu_s']:.1f}",
                str(r["violations"]),
                "-" if r["cost"] is None else f"{r['cost']:,.2f}",
            ]
            print("| " + " | ".join(cells) + " |", flush=True)
            if a.binding:
                quotas = ", ".join(f"{q['name']} {q['limit']:g}" for q in r["aws_quotas"])
                caps.append(f"{n:,} {mode}: {quotas}")
    if caps:
        print("binding AWS quotas (GPUs): " + "; ".join(caps))
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
