"""Practitioners' rules, sixth audit (fleet side): ``telemetry`` alerts and right-sizing memory, and the
``simulate autoscale`` HPA and the ``simulate batch`` Kueue cohort (docs/fleet.md, "Practitioners' rules we
check": rows T8, S5, S6, S7 and P11) and the ``plan`` FOCUS export.

As in tests/test_practitioner_rules_fleet.py: realistic inputs (dcgm-exporter's default counters, the shipped
Azure LLM conversation trace), the product's real outputs, and every expectation computed from the inputs or
the controller's published defaults, never from the product's own intermediate numbers.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from gpufleet.catalog.offers import load_offers
from gpufleet.catalog.specs import get_spec
from gpufleet.fleet.export import focus_rows
from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.spec import read_fleet_file
from gpufleet.simulate.autoscale import deployment_for, simulate_autoscale
from gpufleet.simulate.batch import Fleet, Pool, Quota, simulate_batch
from gpufleet.simulate.jobs import Job
from gpufleet.simulate.policies import make_policy
from gpufleet.simulate.traces import read_trace, scale_rate
from gpufleet.telemetry.alerts import evaluate, load_rules, prometheus_rules
from gpufleet.telemetry.analyze import gpu_stats, resolve_window
from gpufleet.telemetry.findings import find
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.units import GIB, MIB

ROOT = Path(__file__).resolve().parents[1]
AZURE = ROOT / "tests" / "data" / "traces" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"

# ------------------------------------------------------------------------------------------- telemetry

#: nvidia-smi on an H100 80GB HBM3 (fleet-anchors C.5 capture): memory.total 81559 MiB, reserved 479 MiB
H100_TOTAL_MIB = 81559.0
H100_RESERVED_MIB = 479.0
STEP_S = 300.0  # dcgm-exporter scraped every 5 minutes
T0_S = 1_780_000_000.0
HOURS = 36.0  # above Compute Optimizer's 30 h minimum (T3), so the GPUs get findings


def _store(tmp_path: Path, shares: dict[str, float]) -> TelemetryStore:
    """One H100 per entry holding ``share`` of memory.total for ``HOURS``, exported with dcgm-exporter's
    default counters: FB_USED, FB_FREE and FB_RESERVED, no FB_TOTAL
    (fleet-anchors C.1, default-counters.csv)."""
    b = SampleBatch()
    n = int(HOURS * 3600 / STEP_S)
    for idx, (key, share) in enumerate(shares.items()):
        lab = {
            "source": "rules6",
            "host": "node-0",
            "gpu_uuid": key,
            "model": "NVIDIA H100 80GB HBM3",
            "provider": "aws",
            "instance_type": "p5.48xlarge",
            "region": "us-east-1",
        }
        lid = b.label_id(lab, idx)
        used = share * H100_TOTAL_MIB
        free = H100_TOTAL_MIB - H100_RESERVED_MIB - used
        for i in range(n):
            t = int((T0_S + i * STEP_S) * 1e6)
            for metric, v in (
                ("sm_active_ratio", 0.5),
                ("fb_used_mib", used),
                ("fb_free_mib", free),
                ("fb_reserved_mib", H100_RESERVED_MIB),
            ):
                b.add_sample(lid, t, metric, v)
    store = TelemetryStore(tmp_path)
    store.append(b, ProblemCounter(), sources=["rules6"], rows_read=len(b), now_us=1_800_000_000 * 1_000_000)
    return store


def test_memory_share_is_of_the_gpus_total_memory(tmp_path: Path) -> None:
    """T8: "memory used > 85 %" is FB used over the GPU's total memory, which is used + free + reserved
    (nvidia-smi memory.total; the H100 capture in fleet-anchors C.5: 81559 = 19818 used + 61263 free + 479
    reserved, +-1 MiB rounding). dcgm-exporter's default counters export FB_USED, FB_FREE and FB_RESERVED but
    not FB_TOTAL (fleet-anchors C.1), so used / (used + free) overstates the share. A GPU at 84.7 % of its
    memory for 36 h does not fire the shipped ``high_memory_usage`` (> 85 % for 5 m); one at 86 % does; the
    Prometheus export divides by the same capacity; right-sizing reads the same capacity."""
    shares = {"at-84.7": 0.847, "at-86": 0.86}
    store = _store(tmp_path, shares)
    window = resolve_window(store, 14, None, 0.95)
    rule = [r for r in load_rules(None) if r.name == "high_memory_usage"]
    assert rule and rule[0].threshold == 85.0
    fired = {e.subject for e in evaluate(store, window, rule)}
    bad = [
        f"{k}: {100 * s:.1f} % of memory.total, fired={k in fired}"
        for k, s in shares.items()
        if (100 * s > rule[0].threshold) != (k in fired)
    ]
    assert not bad, bad
    expr = prometheus_rules(rule)
    assert "DCGM_FI_DEV_FB_RESERVED" in expr, expr
    ff = find(gpu_stats(store, window), window)
    total_gib = H100_TOTAL_MIB * MIB / GIB
    caps = {g.gpu_key: g.memory_capacity_gib for g in ff.gpus}
    assert all(c == pytest.approx(total_gib, rel=1e-3) for c in caps.values()), (caps, total_gib)


# ------------------------------------------------------------------------------------------- simulate


def test_hpa_scale_up_follows_the_default_behavior() -> None:
    """S5: the Kubernetes HPA's default ``behavior.scaleUp`` allows, per 15 s period, the larger of +100 % and
    +4 pods (kubernetes.io "Horizontal Pod Autoscaling", Default Behavior: policies Percent 100 and Pods 4 per
    periodSeconds 15, selectPolicy Max). The busy Azure conversation hour at 3x its rate, Llama 3.1 8B on L4,
    from one replica: no scale-up jumps past max(2 n, n + 4) of the count n at the start of its period."""
    trace = read_trace(AZURE)
    dep = deployment_for(trace, model="llama-3.1-8b", gpu="l4")
    bad: list[str] = []
    for factor in (1.0, 3.0):
        r = simulate_autoscale(
            scale_rate(trace, factor),
            dep,
            make_policy("hpa"),
            min_replicas=1,
            slo_ttft_s=2.0,
            compare_static_peak=False,
        )
        events = np.asarray(r.scale_events, dtype=float).reshape(-1, 3)
        for t, _, to in events:
            # replicas at the start of the 15 s period that ends with this event
            before = events[(events[:, 0] <= t - 15.0)]
            start = int(before[-1, 2]) if len(before) else 1
            if to > max(2 * start, start + 4):
                bad.append(f"x{factor:g} t={t:.0f} s: {start} -> {int(to)} replicas within 15 s")
    assert not bad, bad


def test_kueue_cohort_never_runs_past_its_nominal_quota() -> None:
    """S6: a Kueue cohort admits at most the sum of its ClusterQueues' nominal quotas; a queue borrows only
    unused quota, and with the default ``preemption.reclaimWithinCohort: Never`` a queue back under its own
    nominal quota waits for the borrowed quota to return (kueue.sigs.k8s.io "Cluster Queue": Cohort,
    borrowingLimit, Preemption; fleet-anchors B.2). Two teams of 8 nominal GPUs (borrowing limit 8) on a
    32-GPU pool: team a starts two 8-GPU jobs of 10 h at 0 h (8 its own, 8 borrowed), team b submits 8 GPUs
    at 1 h. The cohort holds 16 GPUs, all in use until 10 h: b waits 9 h and the last job ends at 20 h."""
    nominal = {"a": 8, "b": 8}
    fleet = Fleet(
        pools=(
            Pool(
                name="od",
                gpu="h100",
                gpus_per_node=8,
                nodes=4,
                kind="on_demand",
                price_usd_per_node_hour=98.0,
            ),
        ),
        teams={t: Quota(nominal_gpus=n, borrowing_limit_gpus=8) for t, n in nominal.items()},
    )
    jobs = [
        Job(job_id="a1", submit_h=0.0, gpus=8, duration_h=10.0, team="a"),
        Job(job_id="a2", submit_h=0.0, gpus=8, duration_h=10.0, team="a"),
        Job(job_id="b1", submit_h=1.0, gpus=8, duration_h=10.0, team="b"),
    ]
    cohort = sum(nominal.values())
    # b1 starts when a1 and a2 end (the cohort is full: 16 of 16 until 10 h)
    b_wait_h = 10.0 - 1.0
    bad: list[str] = []
    for policy in ("fifo", "priority", "easy"):
        r = simulate_batch(jobs, fleet, policy=policy)
        b = next(t for t in r.teams if t.team == "b")
        if b.wait_p50_h != pytest.approx(b_wait_h) or r.makespan_h != pytest.approx(10.0 + 10.0):
            bad.append(
                f"{policy}: team b waited {b.wait_p50_h:g} h, makespan {r.makespan_h:g} h: the {cohort}-GPU "
                f"cohort ran {8 * len(jobs)} GPUs at once"
            )
    assert not bad, bad


def test_no_savings_against_a_static_peak_that_misses_the_slo() -> None:
    """S7: autoscaling savings are stated only against a static baseline that meets the same p95 TTFT SLO
    (FinOps Foundation: savings are measured against a baseline that delivers the same service; the static
    peak is "the fewest fixed replicas meeting the SLO"). A first token of Llama 3.1 8B in bf16 (16 GB of
    weights) on an L4 (300 GB/s, datasheet) needs at least one pass over the weights, 16 / 300 = 53 ms, so
    no replica count meets a 20 ms p95 TTFT: the report claims no saving and says why. The first 300 requests
    of the Azure conversation trace under KPA."""
    trace = read_trace(AZURE)
    head = replace(
        trace,
        arrival_s=trace.arrival_s[:300].copy(),
        input_tokens=trace.input_tokens[:300].copy(),
        output_tokens=trace.output_tokens[:300].copy(),
    )
    slo_s = 0.020
    floor_s = 8.03e9 * 2 / (get_spec("l4").mem_bw_gb_per_s * 1e9)
    assert floor_s > slo_s
    dep = deployment_for(head, model="llama-3.1-8b", gpu="l4")
    r = simulate_autoscale(head, dep, make_policy("kpa"), slo_ttft_s=slo_s, compare_static_peak=True)
    assert r.static_peak is not None and not r.static_peak.meets_slo
    assert r.savings_vs_static_peak is None, (
        f"savings {r.savings_vs_static_peak:.1%} vs a baseline missing the SLO"
    )


# ------------------------------------------------------------------------------------------- plan


def test_focus_contracted_cost_excludes_commitment_discounts() -> None:
    """P11: in the FOCUS export, ContractedUnitPrice is the unit price "inclusive of negotiated discounts, if
    present, while excluding negotiated commitment discounts or any other discounts" (FOCUS 1.2
    columns/contractedunitprice.md; fleet-anchors G), so a committed row's ContractedCost is the catalog's
    on-demand rate x its hours (no negotiated discount is an input) and ContractedCost - EffectiveCost is what
    the commitment saves, as FinOps tools read it. The shipped assessment platform, with a 36-month lifetime
    on production and the unverified table rates allowed (the example itself buys no commitment: issue 22),
    commits T4 nodes for 3 years; each committed row is checked against the catalog's on-demand price of its
    instance and region."""
    fleet = read_fleet_file(ROOT / "examples" / "fleets" / "assessment-platform.yaml")
    fleet = replace(
        fleet,
        workloads=tuple(
            replace(w, lifetime_months=36.0) if w.name == "production" else w for w in fleet.workloads
        ),
        constraints=replace(fleet.constraints, allow_unverified_commitments=True),
    )
    plan = plan_fleet(fleet)
    rows = focus_rows(plan, period_start=date(2026, 12, 1), version="test")
    committed = [r for r in rows if r["PricingCategory"] == "Committed"]
    assert committed, "the shipped plan commits no capacity: pick an input that does"
    offers = load_offers()
    it, region = offers.column("instance_type"), offers.column("region")
    price = offers.column("price_on_demand_usd_per_hour")
    bad: list[str] = []
    for r in committed:
        match = (it == r["SkuId"]) & (region == r["RegionId"])
        assert match.any(), r["ChargeDescription"]
        od_usd = float(price[match].min())
        expected = od_usd * float(r["PricingQuantity"])
        if abs(float(r["ContractedCost"]) - expected) > 0.01 * expected:
            bad.append(
                f"{r['ChargeDescription']}: ContractedCost ${float(r['ContractedCost']):,.2f}, on-demand "
                f"${expected:,.2f}; EffectiveCost ${float(r['EffectiveCost']):,.2f}"
            )
    assert not bad, bad
