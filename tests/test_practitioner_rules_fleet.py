"""Practitioners' rules for the fleet-level answers: ``telemetry`` right-sizing and alerts, ``simulate``,
``plan``, ``regions`` and ``migrate`` (docs/fleet.md, "Practitioners' rules we check": each rule there names
its source; the T/S/P/R/M numbers below are that table's).

Like tests/recommend/test_practitioner_rules.py for ``recommend``: realistic inputs (a 20-GPU telemetry
store, the shipped Azure LLM trace, the shipped example fleets plus a 26-workload platform, the shipped
scenarios), the product's real outputs, and each rule computed from the inputs or the catalog, not from the
product's own intermediate numbers. Every rule collects its violations and the test names them.
"""

from __future__ import annotations

import fnmatch
import math
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpufleet.catalog.capabilities import fabric_for
from gpufleet.catalog.offers import load_offers
from gpufleet.catalog.specs import get_spec
from gpufleet.errors import InputError
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.refdata import transfer_usd
from gpufleet.fleet.regions import analyze_regions
from gpufleet.fleet.spec import fleet_from_dict, read_fleet_file
from gpufleet.fleet.types import Fleet, FleetPlan
from gpufleet.recommend.api import migrate
from gpufleet.recommend.deploy import trains_across_nodes
from gpufleet.recommend.scenarios import get_scenario
from gpufleet.recommend.workload import workload_from_dict
from gpufleet.simulate.autoscale import deployment_for, simulate_autoscale
from gpufleet.simulate.policies import make_policy
from gpufleet.simulate.spot import simulate_spot
from gpufleet.simulate.traces import read_trace, scale_rate
from gpufleet.telemetry.alerts import evaluate, load_rules
from gpufleet.telemetry.analyze import gpu_stats, resolve_window
from gpufleet.telemetry.findings import FleetFindings, Thresholds, find
from gpufleet.telemetry.mig import mig_profiles
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.telemetry.synth import synthetic_fleet
from gpufleet.units import GIB, MIB

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "fleets"
AZURE = ROOT / "tests" / "data" / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"

# ------------------------------------------------------------------------------------------- telemetry

P5 = {"provider": "aws", "instance_type": "p5.48xlarge", "region": "us-east-1"}
H100_MIB = 81559.0  # nvidia-smi memory.total of an H100 80GB HBM3 (fleet-anchors C.5 capture)
#: dcgm-exporter scraped every 5 minutes, as in the shipped example (tools/make_telemetry_example.py)
STEP_S = 300.0
T0_S = 1_780_000_000.0
DAYS = 3.0
#: Compute Optimizer: >= 30 h of metrics within the lookback (ug/requirements; fleet-anchors A.1)
MIN_HOURS = 30.0
#: idle: SM activity below 5 % at p95 and no process holding memory (FB used = memory of active contexts)
IDLE_SM = 0.05
IDLE_MEMORY_SHARE = 0.10
HEADROOM = Thresholds().headroom


def _gpu(
    b: SampleBatch,
    key: str,
    idx: int,
    host: str,
    sm: np.ndarray,
    mem_share: np.ndarray,
    start_s: float = T0_S,
) -> None:
    """One dcgm-exporter GPU: SM_ACTIVE, GPU_UTIL (kernel-time flag), FB used/free, power, every 5 minutes."""
    lab = {
        "source": "rules",
        "host": host,
        "gpu_uuid": key,
        "model": "NVIDIA H100 80GB HBM3",
        "namespace": "serving",
        "pod": f"{key}-pod",
        **P5,
    }
    lid = b.label_id(lab, idx)
    ts = ((start_s + np.arange(len(sm)) * STEP_S) * 1e6).astype(np.int64)
    util = np.where(sm > 0.002, np.minimum(100.0, 100.0 * np.sqrt(sm / 0.35)), 0.0)
    for metric, vals in (
        ("sm_active_ratio", sm),
        ("gpu_util_pct", util),
        ("fb_used_mib", mem_share * H100_MIB),
        ("fb_free_mib", (1 - mem_share) * H100_MIB),
        ("power_w", 70.0 + 600.0 * sm),
        ("power_limit_w", np.full(len(sm), 700.0)),
    ):
        for t, v in zip(ts.tolist(), vals.tolist(), strict=True):
            b.add_sample(lid, int(t), metric, float(v))


def _edge_gpus(b: SampleBatch) -> None:
    """GPUs that break naive rules: a loaded model waiting for traffic, memory that peaks above its p99, a
    GPU seen for 10 h only, a nightly batch job, a GPU with a one-sample GPU_UTIL spike."""
    rng = np.random.default_rng(7)
    n = int(DAYS * 86400 / STEP_S)
    # 1. an 8B-70B model loaded (70 % of memory) and almost no traffic: not idle (releasing kills it)
    _gpu(b, "loaded-70b", 0, "edge-0", np.clip(rng.normal(0.01, 0.004, n), 0, 1), np.full(n, 0.70))
    # 2. a small model (12 % of memory) at low traffic
    _gpu(b, "loaded-8b", 1, "edge-0", np.clip(rng.normal(0.02, 0.005, n), 0, 1), np.full(n, 0.12))
    # 3. evaluation passes load a second copy 6 times in 3 days: p99 15 %, peak 55 % of memory
    mem = np.full(n, 0.15)
    mem[rng.choice(n, 6, replace=False)] = 0.55
    _gpu(b, "eval-peaks", 2, "edge-0", np.clip(rng.normal(0.2, 0.02, n), 0, 1), mem)
    # 4. a new GPU seen for 10 hours, idle so far
    k = int(10 * 3600 / STEP_S)
    _gpu(
        b,
        "new-10h",
        3,
        "edge-0",
        np.clip(rng.normal(0.003, 0.002, k), 0, 1),
        np.full(k, 0.01),
        start_s=T0_S + DAYS * 86400 - k * STEP_S,
    )
    # 5. 29 hours of a busy GPU: still below the minimum
    k = int(29 * 3600 / STEP_S)
    _gpu(
        b,
        "busy-29h",
        4,
        "edge-0",
        np.clip(rng.normal(0.7, 0.03, k), 0, 1),
        np.full(k, 0.6),
        start_s=T0_S + DAYS * 86400 - k * STEP_S,
    )
    # 6. a nightly batch job: 6 busy hours a day, memory released in between
    hour = (np.arange(n) * STEP_S / 3600) % 24
    night = hour < 6
    _gpu(b, "nightly-batch", 5, "edge-0", np.where(night, 0.8, 0.0), np.where(night, 0.6, 0.005))
    # 7. 15 % SM activity (~65 % GPU_UTIL), one 5-minute sample at 100 %: a single sample must not fire
    sm = np.clip(rng.normal(0.15, 0.02, n), 0, 1)
    sm[n // 2] = 1.0
    _gpu(b, "one-spike", 6, "edge-0", sm, np.full(n, 0.4))
    # 8. 20 minutes at 100 % GPU_UTIL: a sustained breach fires
    sm = np.clip(rng.normal(0.15, 0.02, n), 0, 1)
    sm[n // 3 : n // 3 + 4] = 1.0
    _gpu(b, "sustained-hot", 7, "edge-0", sm, np.full(n, 0.4))


@pytest.fixture(scope="module")
def telemetry(tmp_path_factory: pytest.TempPathFactory) -> tuple[TelemetryStore, FleetFindings]:
    b, _ = synthetic_fleet(
        seed=11,
        counts={"idle": 2, "over": 2, "migable": 3, "busy": 1, "memstarved": 1, "healthy": 3},
        days=DAYS,
        labels=P5,
    )
    _edge_gpus(b)
    store = TelemetryStore(tmp_path_factory.mktemp("rules-telemetry"))
    store.append(b, ProblemCounter(), sources=["rules"], rows_read=len(b), now_us=1_800_000_000 * 1_000_000)
    window = resolve_window(store, 14, None, 0.95)
    return store, find(gpu_stats(store, window), window)


def _raw(store: TelemetryStore) -> dict[str, dict[str, np.ndarray]]:
    """Per GPU and metric, the stored samples (straight from the store, not through the analysis)."""
    con = store.connect()
    rows = con.execute("SELECT gpu_key, metric, value FROM samples_l ORDER BY ts").fetchall()
    con.close()
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for key, metric, value in rows:
        out[key][metric].append(value)
    return {k: {m: np.asarray(v) for m, v in ms.items()} for k, ms in out.items()}


def _target_memory_gib(kind: str, target: str) -> float | None:
    if kind == "mig_slice":  # "MIG 3g.40gb on H100-SXM"
        _, profile, _, gpu = target.split(" ", 3)
        return next(p.memory_gib for p in mig_profiles()[gpu] if p.profile == profile)
    if kind in ("smaller_gpu", "larger_gpu"):  # "aws g6e.xlarge (L40S)" or "(L40S, 0.5 GPU)"
        gpu = target.rsplit("(", 1)[1].rstrip(")").split(",")[0]
        return get_spec(gpu).memory_gib
    return None


def test_telemetry_rules(telemetry: tuple[TelemetryStore, FleetFindings]) -> None:
    store, ff = telemetry
    raw = _raw(store)
    assert len(ff.gpus) == 20
    bad: list[str] = []
    for g in ff.gpus:
        r = raw[g.gpu_key]
        hours = len(r["sm_active_ratio"]) * STEP_S / 3600
        sm_p95 = float(np.percentile(r["sm_active_ratio"], 95))
        used_gib = r["fb_used_mib"] * MIB / GIB
        cap_gib = H100_MIB * MIB / GIB
        mem_share_p99 = float(np.percentile(used_gib, 99)) / cap_gib
        peak_gib = float(used_gib.max())
        # T3: no finding and no savings without 30 h of data (Compute Optimizer's minimum)
        if hours < MIN_HOURS and (g.finding != "InsufficientData" or g.options):
            bad.append(f"T3 {g.gpu_key}: {hours:.0f} h of data, {g.finding}, {len(g.options)} options")
        if hours >= MIN_HOURS and g.finding == "InsufficientData":
            bad.append(f"T3 {g.gpu_key}: {hours:.0f} h of data called InsufficientData")
        if hours < MIN_HOURS:
            continue
        # T2: idle = near-zero SM activity AND no memory held; a loaded model at low traffic is not idle
        idle_expected = sm_p95 < IDLE_SM and mem_share_p99 < IDLE_MEMORY_SHARE
        if g.idle != idle_expected:
            bad.append(f"T2 {g.gpu_key}: idle={g.idle}, SM p95 {sm_p95:.3f}, memory p99 {mem_share_p99:.0%}")
        if any(o.kind == "release" for o in g.options) and not idle_expected:
            bad.append(f"T2 {g.gpu_key}: 'release' proposed while {mem_share_p99:.0%} of memory is held")
        # T1: a target holds the observed peak memory plus the headroom
        for o in g.options:
            cap = _target_memory_gib(o.kind, o.target)
            if cap is not None and cap < peak_gib * (1 + HEADROOM) - 1e-6:
                bad.append(f"T1 {g.gpu_key}: {o.target} has {cap:.1f} GiB < peak {peak_gib:.1f} GiB x 1.2")
        # T5: savings never exceed what the GPU costs; a smaller GPU is never proposed for a busy one
        cost = g.cost_usd_per_month or 0.0
        for o in g.options:
            if (o.savings_usd_per_month or 0.0) > cost + 1e-6:
                bad.append(f"T5 {g.gpu_key}: {o.kind} saves ${o.savings_usd_per_month:,.0f} > ${cost:,.0f}")
        if sm_p95 >= Thresholds().under_compute and any(o.kind == "smaller_gpu" for o in g.options):
            bad.append(f"T5 {g.gpu_key}: a smaller GPU for SM p95 {sm_p95:.2f}")
        # T6: a commitment only for a GPU busy >= 70 % of the lookback
        busy_share = hours / (ff.window.days * 24)
        commits = any(o.kind == "price_model" for o in g.options)
        if commits and busy_share < Thresholds().commit_min_busy_share:
            bad.append(f"T6 {g.gpu_key}: commitment proposed at {busy_share:.0%} of the window")
    assert not bad, "\n".join(bad)
    # the edge cases are present and classified as the rules say
    by = {g.gpu_key: g for g in ff.gpus}
    assert by["loaded-70b"].finding == "Overprovisioned" and not by["loaded-70b"].idle
    assert by["new-10h"].finding == by["busy-29h"].finding == "InsufficientData"
    assert sum(g.finding == "Idle" for g in ff.gpus) == 2  # the two synthetic idle GPUs only


def test_alerts_fire_on_sustained_breaches_only(telemetry: tuple[TelemetryStore, FleetFindings]) -> None:
    """T7: an alert needs its condition for the rule's ``for`` window (Prometheus ``for:``; dcgm-exporter
    samples are noisy), never a single sample; every shipped default has a window."""
    store, ff = telemetry
    rules = load_rules(None)
    assert all(r.for_s >= 60 for r in rules), [(r.name, r.for_s) for r in rules]
    events = evaluate(store, ff.window, [r for r in rules if r.name == "high_gpu_utilization"])
    fired = {e.subject for e in events}
    bad = [e for e in events if e.duration_s < 600 - 1e-6]
    assert not bad, [(e.subject, e.duration_s) for e in bad]
    assert "one-spike" not in fired
    assert "sustained-hot" in fired


# ------------------------------------------------------------------------------------------- simulate


@pytest.fixture(scope="module")
def azure() -> Any:
    trace = read_trace(AZURE)
    return trace, deployment_for(trace, model="llama-3.1-8b", gpu="l4")


def _quiet(trace: Any, n: int = 60, factor: float = 0.003) -> Any:
    """The trace's first ``n`` requests at ``factor`` of their rate: ~1 request a minute for ~50 minutes, with
    gaps longer than the autoscalers' scale-down windows (a quiet service at night)."""
    head = replace(
        trace,
        arrival_s=trace.arrival_s[:n].copy(),
        input_tokens=trace.input_tokens[:n].copy(),
        output_tokens=trace.output_tokens[:n].copy(),
    )
    return scale_rate(head, factor)


@pytest.mark.parametrize("policy", ["kpa", "hpa", "ray", "queue"])
def test_autoscaler_slo_counts_every_request(azure: Any, policy: str) -> None:
    """S1: the SLO verdict counts a request never served as a miss (MLPerf server scenario: the latency
    bound holds over all queries). S2: scale to zero on a latency SLO with a cold start longer than the SLO
    does not meet it once requests wait for a cold start. The busy Azure hour and a quiet service (its first
    60 requests over ~50 minutes), min replicas 0 and 1."""
    trace, dep = azure
    bad: list[str] = []
    for label, tr in (("busy", trace), ("quiet", _quiet(trace))):
        for min_r in (0, 1):
            r = simulate_autoscale(
                tr, dep, make_policy(policy), min_replicas=min_r, slo_ttft_s=2.0, compare_static_peak=False
            )
            where = f"{policy} {label} min={min_r}"
            if r.meets_slo and r.unfinished > 0.05 * r.requests:
                bad.append(f"S1 {where}: meets the SLO with {r.unfinished} of {r.requests} never served")
            if r.meets_slo and not r.ttft.p95_s <= r.slo_ttft_s:
                bad.append(f"S1 {where}: meets the SLO at p95 TTFT {r.ttft.p95_s:.2f} s")
            if r.unfinished and not any("never got a first token" in n for n in r.notes):
                bad.append(f"S1 {where}: {r.unfinished} unserved requests not stated in the notes")
            cold = r.cold_start.total_s > r.slo_ttft_s
            if min_r == 0 and cold and not any("Scale to zero" in n for n in r.notes):
                bad.append(
                    f"S2 {where}: scale to zero with a {r.cold_start.total_s:.0f} s cold start unflagged"
                )
            if min_r == 0 and cold and r.meets_slo and r.cold_start_hits > 0.05 * r.requests:
                bad.append(f"S2 {where}: {r.cold_start_hits} requests waited for a cold start, SLO 'met'")
    assert not bad, "\n".join(bad)


def test_spot_training_rules() -> None:
    """S3: spot training checkpoints at Young's interval sqrt(2 C M); its expected hours include lost work
    and restarts (>= on-demand hours) and it never saves more than the spot discount. S4: a run that cannot
    checkpoint often enough is refused with how to fix it, not priced."""
    r = simulate_spot(model="llama-3.1-8b", tokens=2e10, gpus=8, runs=100, deadline_h=120.0)
    mtbi_h = next(float(n.split("MTBI ")[1].split(" h")[0]) for n in r.notes if "MTBI" in n)
    young = math.sqrt(2 * r.checkpoint_cost_h * mtbi_h)
    assert r.interval_h == pytest.approx(young, rel=0.02)
    od = next(o for o in r.outcomes if o.strategy == "on_demand")
    for o in r.outcomes:
        if o.strategy != "on_demand":
            assert o.expected_hours >= od.expected_hours * (1 - 1e-9), o
            assert o.expected_interruptions > 0, o
    best = next(o for o in r.outcomes if o.strategy == r.best)
    assert best.p_deadline_miss is not None and best.p_deadline_miss <= 0.05
    with pytest.raises(InputError, match="checkpoint"):
        simulate_spot(model="llama-3.1-8b", tokens=2e10, gpus=8, runs=20, interval_h=1000.0)


# ------------------------------------------------------------------------------------------- plan


def platform_fleet() -> dict[str, Any]:
    """A 26-workload ML platform: 14 services (T4-L40S, 2-GPU A100/H100 replicas, 24/7 and diurnal, some
    spot, lifetimes 6-36 months, egress), 6 training jobs (8- and 16-GPU replicas, spot or not), 6 dev
    boxes; per-provider GPU quotas (spot separate), a fleet and a team budget, a Savings Plan already paid."""
    ws: dict[str, Any] = {}
    gpus = [["T4", "L4", "A10G"], ["L4", "A10G"], ["L40S", "A10G", "L4"], ["A100*", "H100*"]]
    diurnal = [0.25] * 7 + [0.75] + [1.0] * 10 + [0.5] * 6
    for i in range(14):
        ws[f"serve-{i:02d}"] = {
            "team": f"product-{i % 3}",
            "resources": {
                "gpus": gpus[i % 4],
                "gpus_per_replica": 1 if i % 4 != 3 else 2,
                "replicas": 1 + i % 4,
                "vcpus": 4,
                "ram_gib": 16,
            },
            "demand": {"schedule": "24/7"} if i % 2 == 0 else {"hourly": diurnal},
            "providers": [["aws"], ["aws", "gcp"], ["aws", "gcp", "azure"]][i % 3],
            "preemptible_fraction": [0.0, 0.0, 0.3][i % 3],
            "lifetime_months": [36, 12, 6][i % 3],
            **(
                {
                    "data": {
                        "provider": "aws",
                        "region": "us-east-1",
                        "size_gib": 50,
                        "serving_egress_gib_per_month": 400,
                    }
                }
                if i % 5 == 0
                else {}
            ),
        }
    for i in range(6):
        ws[f"train-{i:02d}"] = {
            "team": "research",
            "resources": {
                "gpus": ["A100*", "H100*"],
                "min_gpu_memory_gib": 40 + 20 * (i % 2),
                "gpus_per_replica": [8, 16][i % 2],
                "replicas": 1,
                "job": True,
            },
            "demand": {"hours_per_week": [24, 40, 60][i % 3]},
            "preemptible_fraction": [1.0, 0.5, 0.0][i % 3],
            "lifetime_months": [6, 12, 36][i % 3],
            "data": {"provider": "aws", "region": "us-east-1", "size_gib": 500, "transfers_per_month": 4},
        }
    for i in range(6):
        ws[f"dev-{i:02d}"] = {
            "team": "research",
            "resources": {"gpus": ["T4", "L4", "A10G"], "gpus_per_replica": 1, "replicas": 2},
            "demand": {"hours_per_day": 8, "days_per_month": 22},
            "preemptible_fraction": 0.5,
            "lifetime_months": 12,
        }
    return {
        "name": "platform",
        "workloads": ws,
        "constraints": {
            "quotas": [
                {"name": "aws on-demand GPUs", "provider": "aws", "limit": 96},
                {"name": "aws spot GPUs", "provider": "aws", "limit": 32, "spot": True},
                {"name": "gcp A100 GPUs", "provider": "gcp", "gpu": "A100*", "limit": 16},
                {"name": "azure GPUs", "provider": "azure", "limit": 24},
            ],
            "budgets": [
                {"name": "fleet", "usd_per_month": 400_000},
                {"name": "research", "usd_per_month": 250_000, "teams": ["research"]},
            ],
            "existing_commitments": [
                {
                    "name": "g5 SP",
                    "provider": "aws",
                    "region": "us-east-1",
                    "instance_type": "g5.xlarge",
                    "count": 3,
                    "kind": "savings_plan",
                    "term_left_months": 10,
                },
            ],
        },
    }


def _tight(d: dict[str, Any]) -> dict[str, Any]:
    """The platform under tighter rules: half the AWS quota, no spot quota beyond 16, a research budget."""
    c = d["constraints"]
    c["quotas"][0]["limit"] = 48
    c["quotas"][1]["limit"] = 16
    c["budgets"][1]["usd_per_month"] = 60_000
    c["max_providers"] = 3
    return d


FLEETS: dict[str, Any] = {
    "assessment-platform": EXAMPLES / "assessment-platform.yaml",
    "mig-inference": EXAMPLES / "mig-inference.yaml",
    "multicloud": EXAMPLES / "multicloud.yaml",
    "platform-26": platform_fleet,
    "platform-26-tight": lambda: _tight(platform_fleet()),
}


@pytest.fixture(scope="module")
def offer_attrs() -> dict[tuple[str, str, str], tuple[float, float]]:
    """(provider, region, instance type) -> (vCPUs, least spot price per node-hour) from the catalog."""
    t = load_offers()
    out: dict[tuple[str, str, str], tuple[float, float]] = {}
    cols = [t.column(c) for c in ("provider", "region", "instance_type", "vcpus", "price_spot_usd_per_hour")]
    for p, r, i, v, s in zip(*cols, strict=True):
        k = (str(p), str(r), str(i))
        s = float(s) if s is not None and math.isfinite(float(s)) else math.inf
        old = out.get(k, (float(v), math.inf))
        out[k] = (float(v), min(old[1], s))
    return out


def _plan_violations(
    fleet: Fleet, plan: FleetPlan, attrs: dict[tuple[str, str, str], tuple[float, float]]
) -> list[str]:
    bad: list[str] = []
    wl = {w.name: w for w in fleet.workloads}
    lines = [ln for ln in plan.lines if ln.pay_kind != "data_transfer"]
    # P1: every quota (non-spot: the nodes not on spot; spot quotas: spot nodes), in its unit
    for q in fleet.constraints.quotas:
        used = 0.0
        for ln in lines:
            if ln.provider != q.provider or (ln.pay_kind == "spot") != q.spot:
                continue
            family = fnmatch.fnmatchcase(ln.instance_type.lower(), q.instance_family.lower())
            gpu = fnmatch.fnmatchcase(ln.gpu.lower(), q.gpu.lower())
            if not (fnmatch.fnmatchcase(ln.region, q.region) and gpu and family):
                continue
            unit = {"gpus": ln.gpus_per_node, "instances": 1.0}.get(q.unit)
            if unit is None:
                unit = attrs[(ln.provider, ln.region, ln.instance_type)][0]
            used += ln.nodes * unit
        if used > q.limit + 1e-6:
            bad.append(f"P1 quota {q.name}: {used:g} > {q.limit:g} {q.unit}")
    # P2: every budget
    for b in fleet.constraints.budgets:
        scope = [
            ln
            for ln in plan.lines
            if (not b.teams or ln.team in b.teams) and (not b.workloads or ln.workload in b.workloads)
        ]
        total = sum(ln.cost_usd_per_month for ln in scope)
        if total > b.usd_per_month * (1 + 1e-6):
            bad.append(f"P2 budget {b.name}: ${total:,.0f} > ${b.usd_per_month:,.0f}")
    # P3: commitments already paid for are used before anything is bought for the same instances
    for e in fleet.constraints.existing:
        place = (e.provider, e.region, e.instance_type)
        same = [ln for ln in lines if (ln.provider, ln.region, ln.instance_type) == place]
        used = sum(ln.nodes for ln in same if ln.pay_kind == "existing")
        paid = [ln for ln in same if ln.pay_kind in ("on_demand", "commit_1y", "commit_3y")]
        if used > e.count:
            bad.append(f"P3 {e.name}: {used} nodes on a {e.count}-node commitment")
        if paid and used < e.count:
            bad.append(f"P3 {e.name}: {e.count - used} committed nodes idle while {paid[0].pay_kind} is paid")
    by_option: dict[str, list[Any]] = defaultdict(list)
    for ln in lines:
        by_option[ln.option].append(ln)
    for group in by_option.values():
        w = wl.get(group[0].workload)
        if w is None:  # the idle-slice line of a MIG pool
            continue
        nodes = sum(ln.nodes for ln in group)
        spot = sum(ln.nodes for ln in group if ln.pay_kind == "spot")
        # P4: spot only within the workload's preemptible share
        if spot > math.floor(w.preemptible_fraction * nodes + 1e-9):
            bad.append(f"P4 {w.name}: {spot} of {nodes} nodes on spot > {w.preemptible_fraction:.0%}")
        for ln in group:
            # P5: a new commitment only for a workload that lives the whole term, and only allowed terms
            term = {"commit_1y": ("1y", 12), "commit_3y": ("3y", 36)}.get(ln.pay_kind)
            if term and (w.lifetime_months < term[1] or term[0] not in fleet.constraints.commitment_terms):
                bad.append(f"P5 {w.name}: {ln.pay_kind} for a {w.lifetime_months:g}-month workload")
            # P4: spot capacity priced for its interruptions (serving over-provisions, jobs checkpoint)
            if ln.pay_kind == "spot":
                raw = attrs.get((ln.provider, ln.region, ln.instance_type), (0.0, math.inf))[1]
                if math.isfinite(raw) and ln.unit_price_usd_per_hour <= raw * (1 + 1e-9):
                    bad.append(f"P4 {w.name}: spot at ${ln.unit_price_usd_per_hour:.2f}/h = the bare price")
            r = w.resources
            if r is None or ln.pool or ln.provider == "onprem" or r.gpus_per_replica == 0:
                continue
            # P7: a replica larger than a node spans nodes only over RDMA >= 100 Gb/s (or TPU Multislice)
            if r.gpus_per_replica > ln.gpus_per_node and not trains_across_nodes(
                fabric_for(ln.provider, ln.instance_type, ln.gpu)
            ):
                bad.append(
                    f"P7 {w.name}: {r.gpus_per_replica}-GPU replica over {ln.provider} "
                    f"{ln.instance_type} ({ln.gpus_per_node:g} GPU/node) without RDMA"
                )
            # P8: an allowed GPU with the memory asked for
            spec = get_spec(ln.gpu)
            if r.gpus and not any(fnmatch.fnmatchcase(ln.gpu.lower(), g.lower()) for g in r.gpus):
                bad.append(f"P8 {w.name}: {ln.gpu} not in {r.gpus}")
            if spec.memory_gib < r.min_gpu_memory_gib - 1e-9:
                bad.append(f"P8 {w.name}: {ln.gpu} {spec.memory_gib:g} GiB < {r.min_gpu_memory_gib:g}")
    return bad


@pytest.mark.parametrize("name", list(FLEETS))
def test_plan_rules(name: str, offer_attrs: dict[tuple[str, str, str], tuple[float, float]]) -> None:
    src = FLEETS[name]
    fleet = read_fleet_file(src) if isinstance(src, Path) else fleet_from_dict(src(), source=name)
    plan = plan_fleet(fleet, savings=False)
    assert plan.status == "optimal", (plan.status, plan.message, plan.binding)
    bad = _plan_violations(fleet, plan, offer_attrs)
    assert not bad, "\n".join(bad)


# ------------------------------------------------------------------------------------------- regions


def test_regions_rank_on_cost_plus_egress() -> None:
    """R1: regions are ranked on monthly cost plus egress; the data's own region moves no data; where the
    data leaves a priced provider, that cost is in the total even if the destination's egress is unpriced."""
    ws = [
        workload_from_dict({"model": "llama-3.1-8b", "target_requests_per_s": 2, "name": "chat"}),
        workload_from_dict({"model": "qwen2.5-32b", "target_requests_per_s": 1, "name": "rag"}),
    ]
    ra = analyze_regions(
        ws,
        data_provider="aws",
        data_region="us-east-1",
        data_size_gib=500,
        serving_egress_gib_per_month=300,
        limit=40,
    )
    bad: list[str] = []
    rows = defaultdict(list)
    for r in ra.rows:
        rows[r.workload].append(r)
        move = transfer_usd("aws", "us-east-1", r.provider, r.region, 500.0)
        if (r.provider, r.region) == ("aws", "us-east-1") and move != 0.0:
            bad.append(f"R1 {r.workload}: the data's own region charges ${move} to move it")
        floor = r.on_demand_usd_per_month + (move or 0.0)
        if r.total_usd_per_month < floor - 1e-6:
            bad.append(
                f"R1 {r.workload} {r.provider}/{r.region}: total ${r.total_usd_per_month:,.0f} "
                f"< on-demand + data move ${floor:,.0f}"
            )
        if r.egress_usd_per_month is not None and not math.isclose(
            r.total_usd_per_month, r.on_demand_usd_per_month + r.egress_usd_per_month, rel_tol=1e-9
        ):
            bad.append(f"R1 {r.workload} {r.provider}/{r.region}: total is not on-demand + egress")
    for w, rs in rows.items():
        totals = [r.total_usd_per_month for r in rs]
        if totals != sorted(totals):
            bad.append(f"R1 {w}: rows not sorted by total")
    assert len(rows) == 2 and all(len(v) >= 10 for v in rows.values())
    assert not bad, "\n".join(bad)


# ------------------------------------------------------------------------------------------- migrate

SCENARIOS = (
    "inference_small_p5",
    "batch_inference_g5",
    "production_serving_g4dn",
    "training_large_p4d",
    "inference_massive_p5e",
    "fine_tuning_medium_p5",
    "research_training_g6e",
)


def test_migrate_rules() -> None:
    """M1: savings are claimed only for a move that meets the workload (SLOs, memory) and equal current -
    new. M2: a move to another provider or region states its one-off transfer cost. M3: spot serving pays
    for spare replicas to cover interruptions."""
    bad: list[str] = []
    for sid in SCENARIOS:
        m = migrate(get_scenario(sid))
        new = m.recommended
        if new is None:
            if m.savings_usd_per_month is not None:
                bad.append(f"M1 {sid}: savings without a recommendation")
            continue
        if not new.meets_slo:
            bad.append(f"M1 {sid}: recommended {new.instance_type} misses {new.slo_misses}")
        spec = get_spec(new.gpu)
        if new.mem_per_gpu_gib > spec.memory_gib + 1e-9:
            bad.append(f"M1 {sid}: {new.mem_per_gpu_gib:.1f} GiB per GPU > {spec.memory_gib:g} GiB {new.gpu}")
        assert m.new_cost_usd_per_month is not None
        diff = m.current_cost_usd_per_month - m.new_cost_usd_per_month
        if m.cost_change_to_meet_usd_per_month is not None:  # today misses the workload: no saving stated
            if m.savings_usd_per_month is not None or not math.isclose(
                m.cost_change_to_meet_usd_per_month, -diff
            ):
                bad.append(f"M1 {sid}: a saving against a deployment that misses the workload")
        elif m.savings_usd_per_month is None or not math.isclose(m.savings_usd_per_month, diff):
            bad.append(f"M1 {sid}: savings != current - new")
        moved = (new.provider, new.region) != (m.current.provider, m.current.region)
        if moved and not any("one-off" in r for r in m.risk_reasons):
            bad.append(
                f"M2 {sid}: {m.current.provider}/{m.current.region} -> {new.provider}/{new.region} "
                "without a one-off transfer cost"
            )
        s = new.spot
        spot_serving = s is not None and not m.workload.is_training and s.interruptions_per_h > 0
        if s is not None and spot_serving and s.replicas_provisioned <= s.replicas_needed:
            bad.append(f"M3 {sid}: {s.replicas_provisioned} spot replicas for {s.replicas_needed} needed")
    assert not bad, "\n".join(bad)
