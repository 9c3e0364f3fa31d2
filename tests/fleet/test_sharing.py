"""MIG packing: slice geometry against NVIDIA's tables, valid configurations, slice sizing by the estimator,
the checker's pool rules, the fleet file's `sharing` field and the MIG example end to end."""

from __future__ import annotations

import csv
import io
import itertools
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpufleet.errors import ConfigFileError
from gpufleet.fleet.brute import brute_force
from gpufleet.fleet.check import check_plan
from gpufleet.fleet.export import k8s_manifests, skypilot_tasks
from gpufleet.fleet.mig import config_is_valid, k8s_resource, mig_configs, mig_shapes, min_gpus
from gpufleet.fleet.plan import plan_fleet, solve_fleet
from gpufleet.fleet.pools import IDLE_WORKLOAD
from gpufleet.fleet.sharing import slices_needed
from gpufleet.fleet.spec import fleet_from_dict
from gpufleet.fleet.types import FleetPlan

from .gen import random_fleet

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fleets" / "mig-inference.yaml"


def _profiles_csv() -> list[dict[str, str]]:
    text = resources.files("gpufleet.fleet").joinpath("data", "mig_profiles.csv").read_text(encoding="utf-8")
    return [r for r in csv.DictReader(io.StringIO(text)) if not r["variant"]]


def test_geometry_reproduces_nvidia_homogeneous_counts() -> None:
    """Every profile's most instances on one GPU (the guide's 'max instances') follows from the placements."""
    rows = {(r["gpu"], r["profile"]): int(r["max_instances"]) for r in _profiles_csv()}
    assert {"A100-SXM-40GB", "A100-SXM-80GB", "H100-SXM", "H200-SXM", "B200", "A30"} <= set(mig_shapes())
    for gpu, shapes in mig_shapes().items():
        for s in shapes:
            most = max(n for n in range(8) if config_is_valid(gpu, {s.profile: n}))
            assert most == rows[(gpu, s.profile)], (gpu, s.profile)


def test_unverified_gpus_are_left_out() -> None:
    unverified = {r["gpu"] for r in _profiles_csv() if r["verified"].strip().lower() != "true"}
    assert unverified and not unverified & set(mig_shapes())


@pytest.mark.parametrize(
    ("counts", "ok"),
    [
        ({"4g.40gb": 1, "3g.40gb": 1}, True),
        ({"3g.40gb": 2}, True),
        ({"3g.40gb": 2, "1g.10gb": 1}, False),  # 8 memory slices taken
        ({"1g.10gb": 7}, True),
        ({"1g.10gb": 8}, False),
        ({"2g.20gb": 3, "1g.10gb": 1}, True),
        ({"4g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}, True),
        ({"4g.40gb": 1, "4g.40gb+me": 1}, False),  # not a plain profile
        ({"7g.80gb": 1, "1g.10gb": 1}, False),
        ({"1g.20gb": 4}, True),
        ({"1g.20gb": 4, "1g.10gb": 1}, False),
    ],
)
def test_known_h100_combinations(counts: dict[str, int], ok: bool) -> None:
    assert config_is_valid("H100-SXM", counts) is ok


@pytest.mark.parametrize("gpu", ["A100-SXM-40GB", "H100-SXM", "A30", "B200"])
def test_configs_are_valid_and_maximal(gpu: str) -> None:
    profiles = [s.profile for s in mig_shapes()[gpu]]
    configs = mig_configs(gpu)
    assert configs
    for c in configs:
        counts = dict(c)
        assert config_is_valid(gpu, counts)
        for p in profiles:  # maximal: no instance can be added
            assert not config_is_valid(gpu, {**counts, p: counts.get(p, 0) + 1})
    # every valid configuration (up to 7 instances) is covered by a maximal one
    for n in range(1, 4):
        for combo in itertools.combinations_with_replacement(profiles, n):
            counts = {p: combo.count(p) for p in set(combo)}
            if config_is_valid(gpu, counts):
                assert any(all(dict(c).get(p, 0) >= k for p, k in counts.items()) for c in configs)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb"]), st.integers(0, 6)))
def test_min_gpus_is_a_tight_packing(demand: dict[str, int]) -> None:
    """The DP's layout covers the demand with valid configurations, and one GPU fewer cannot."""
    n, layout = min_gpus("H100-SXM", demand)
    assert sum(k for _c, k in layout) == n
    for c, _k in layout:
        assert config_is_valid("H100-SXM", dict(c))
    for p, k in demand.items():
        assert sum(dict(c).get(p, 0) * m for c, m in layout) >= k
    if n:
        memory = sum(
            {"1g.10gb": 1, "1g.20gb": 2, "2g.20gb": 2, "3g.40gb": 4}[p] * k for p, k in demand.items()
        )
        compute = sum(
            {"1g.10gb": 1, "1g.20gb": 1, "2g.20gb": 2, "3g.40gb": 3}[p] * k for p, k in demand.items()
        )
        assert n >= -(-memory // 8) and n >= -(-compute // 7)


def _workload(**kw: Any) -> Any:
    from gpufleet.recommend.workload import workload_from_dict

    return workload_from_dict({"model": "llama-3.1-8b", "precision": "bf16", **kw})


def test_slice_sizing_follows_memory_and_throughput() -> None:
    h100 = {s.profile: s for s in mig_shapes()["H100-SXM"]}
    w = _workload(target_requests_per_s=0.5)
    n_small, why = slices_needed(w, h100["1g.10gb"])
    assert n_small == 0 and "does not fit" in why  # 16 GB of bf16 weights in 9.75 GiB
    n1, _ = slices_needed(w, h100["1g.20gb"])
    n3, _ = slices_needed(w, h100["3g.40gb"])
    assert n1 >= n3 >= 1
    busy, _ = slices_needed(_workload(target_requests_per_s=20), h100["1g.20gb"])
    assert busy > n1  # a slice carries a fraction of the GPU's throughput


def test_slice_is_slower_than_the_gpu() -> None:
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.inference import estimate_inference
    from gpufleet.fleet.mig import slice_spec

    shape = next(s for s in mig_shapes()["H100-SXM"] if s.profile == "3g.40gb")
    kw: dict[str, Any] = {"model": "llama-3.1-8b", "precision": "bf16", "input_len": 512, "output_len": 256}
    whole = estimate_inference(gpu=get_spec("H100-SXM"), batch=8, **kw)
    part = estimate_inference(gpu=slice_spec(get_spec("H100-SXM"), shape), batch=8, **kw)
    assert part.tpot_s.central > whole.tpot_s.central  # 4/8 of the bandwidth, 3/7 of the compute
    assert part.memory.capacity_gib < whole.memory.capacity_gib


def _with_mig(seed: int) -> tuple[Any, Any, Any]:
    fleet, options = random_fleet(seed)
    solved = solve_fleet(fleet, options)
    return fleet, options, solved


def _mig_seed() -> int:
    for s in range(200):
        fleet, options = random_fleet(s)
        solved = solve_fleet(fleet, options)
        if solved.pools and solved.status == "optimal":
            return s
    raise AssertionError("no random fleet with a MIG pool")


def test_checker_rejects_broken_pools() -> None:
    fleet, options, solved = _with_mig(_mig_seed())
    opts = {o.key: o for v in options.values() for o in v}
    assert check_plan(fleet, opts, solved.lines, pools=solved.pools) == []
    pool = solved.pools[0]
    layouts = tuple((c, n + 1) for c, n in pool.layouts)  # more GPUs configured than the nodes have
    bad = check_plan(fleet, opts, solved.lines, pools=[replace(pool, layouts=layouts), *solved.pools[1:]])
    assert any("GPUs configured" in b for b in bad)
    wrong = ((("7g.80gb", 1), ("1g.10gb", 1)), 1)
    bad = check_plan(fleet, opts, solved.lines, pools=[replace(pool, layouts=(wrong,)), *solved.pools[1:]])
    assert any("not a valid MIG configuration" in b for b in bad)
    bad = check_plan(fleet, opts, solved.lines, pools=[replace(pool, layouts=()), *solved.pools[1:]])
    assert any("slices placed" in b for b in bad)
    assert any("does not hold" in b for b in check_plan(fleet, opts, solved.lines, pools=()))
    idle = [ln for ln in solved.lines if ln.workload != IDLE_WORKLOAD]
    if len(idle) < len(solved.lines):
        assert any("idle" in b for b in check_plan(fleet, opts, idle, pools=solved.pools))


def test_brute_force_and_milp_agree_on_a_packed_pool() -> None:
    fleet, options, solved = _with_mig(_mig_seed())
    brute = brute_force(fleet, options)
    assert brute.cost_usd_per_month is not None and solved.cost_usd_per_month is not None
    assert abs(brute.cost_usd_per_month - solved.cost_usd_per_month) < 1e-6 * max(
        1.0, brute.cost_usd_per_month
    )


# ------------------------------------------------------------------------------------------ fleet file


def _fleet(**entry: Any) -> dict[str, Any]:
    return {
        "name": "t",
        "workloads": {"serve": {"workload": {"model": "llama-3.1-8b", "precision": "bf16"}, **entry}},
    }


def test_sharing_defaults_to_none_and_accepts_the_modes() -> None:
    assert fleet_from_dict(_fleet()).workloads[0].sharing == "none"
    for mode in ("none", "mig", "auto"):
        assert fleet_from_dict(_fleet(sharing=mode)).workloads[0].sharing == mode


@pytest.mark.parametrize("bad", ["MIG", "yes", True, 1, "fractional"])
def test_bad_sharing_value(bad: object) -> None:
    with pytest.raises(ConfigFileError, match=r"workloads.serve.sharing.*'none', 'mig' or 'auto'"):
        fleet_from_dict(_fleet(sharing=bad))


def test_sharing_needs_a_model_workload() -> None:
    data = {"name": "t", "workloads": {"cap": {"resources": {"gpus": ["T4"]}, "sharing": "auto"}}}
    with pytest.raises(ConfigFileError, match=r"sharing: auto needs a model `workload`"):
        fleet_from_dict(data)


def test_sharing_is_for_inference() -> None:
    data = _fleet(sharing="mig")
    data["workloads"]["serve"]["workload"] = {
        "model": "llama-3.2-1b",
        "task": "lora",
        "train_tokens": 1e8,
    }
    with pytest.raises(ConfigFileError, match=r"sharing is 'mig'.*MIG slices are for inference"):
        fleet_from_dict(data)


# ------------------------------------------------------------------------------------------- the example


@pytest.fixture(scope="module")
def mig_plan() -> FleetPlan:
    return plan_fleet(EXAMPLE)


def test_example_packs_several_workloads_on_mig(mig_plan: FleetPlan) -> None:
    p = mig_plan
    assert p.status == "optimal" and p.check_violations == ()
    assert p.pools and max(len({w for w, _pr, _n in pl.slices}) for pl in p.pools) >= 2
    for pl in p.pools:
        for layout, _n in pl.layouts:
            assert config_is_valid(pl.gpu, dict(layout))
    lever = next(lv for lv in p.levers if lv.name == "GPU sharing")
    assert lever.savings_usd_per_month is not None and lever.savings_usd_per_month > 0
    assert p.cost_usd_per_month is not None
    assert abs(sum(ln.cost_usd_per_month for ln in p.lines) - p.cost_usd_per_month) < 1e-6
    # new commitments count a pool's nodes, not its slices
    for c in p.new_commitments:
        pool = next(
            (pl for pl in p.pools if pl.instance_type == c.instance_type and pl.region == c.region), None
        )
        if pool is not None:
            assert c.nodes <= pool.nodes


def test_example_exports_show_slices(mig_plan: FleetPlan) -> None:
    docs = k8s_manifests(mig_plan)
    limits = [d["spec"]["template"]["spec"]["containers"][0].get("resources", {}).get("limits", {})  # type: ignore[index]
              for d in docs]  # fmt: skip
    mig = [k for lim in limits for k in lim if k.startswith("nvidia.com/mig-")]
    assert mig and all(k == k8s_resource(k.removeprefix("nvidia.com/mig-")) for k in mig)
    sky = skypilot_tasks(mig_plan)
    pools = [v for k, v in sky.items() if k.startswith("mig-pool")]
    assert len(pools) == len(mig_plan.pools)
    assert all("MIG layout" in v and yaml.safe_load(v)["num_nodes"] >= 1 for v in pools)
