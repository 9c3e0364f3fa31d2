"""Issue 23, items 1-2: findings from the right evidence (a busy GPU is not Underprovisioned; memory or
serving evidence is), options under the recommender's tiers, workload-level right-sizing across short-lived
pods, the observed span vs the lookback, the node option's own cost, one pricing path per store."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpufleet.catalog.provider_class import provider_class
from gpufleet.telemetry.analyze import gpu_stats, resolve_window
from gpufleet.telemetry.api import analyze_fleet, ingest_telemetry
from gpufleet.telemetry.findings import find
from gpufleet.telemetry.inventory import _offers
from gpufleet.telemetry.options import tier_mask
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.telemetry.synth_k8s import CASES, known_truth_fleet
from gpufleet.telemetry.workloads import pod_owner, workload_of

NOW_US = 1_800_000_000 * 1_000_000
T0_S = 1_780_000_000
H100_MIB = 81559.0


def _busy_store(tmp_path: Path, *, labels: dict[str, str], mem_share: float = 0.77) -> TelemetryStore:
    """One GPU for 48 h at 5 min: GPU_UTIL 82 % mean / ~94 % p95, SM active similar, memory ``mem_share``."""
    rng = np.random.default_rng(3)
    b = SampleBatch()
    lab = {"host": "n1", "gpu_uuid": "GPU-busy", "model": "NVIDIA H100 80GB HBM3", "source": "t", **labels}
    for i in range(576):
        ts = (T0_S + 300 * i) * 1_000_000
        util = float(np.clip(rng.normal(82, 7), 0, 100))
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="gpu_util_pct", value=util)
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="sm_active_ratio", value=util / 100)
        used = mem_share * H100_MIB
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="fb_used_mib", value=used)
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="fb_free_mib", value=H100_MIB - used)
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=NOW_US)
    return s


def test_busy_gpu_is_optimized_with_its_evidence(tmp_path: Path) -> None:
    """82 % mean / 94 % p95 utilisation at 77 % memory was Underprovisioned, risk High, "larger_gpu" on a
    marketplace host; now Optimized, no larger GPU, the evidence says why."""
    s = _busy_store(tmp_path, labels={})  # no instance labels: priced at the catalog median, any provider
    w = resolve_window(s, 14, None, 0.95)
    (g,) = find(gpu_stats(s, w), w).gpus
    assert 0.9 <= (g.compute_p or 0) <= 1.0
    assert g.finding == "Optimized" and g.reason_codes == ()
    assert g.current_performance_risk != "High"
    assert not any(o.kind == "larger_gpu" for o in g.options)
    assert any("busy, which is the goal" in e for e in g.evidence)
    assert any(e.startswith("memory p99") and "(77%)" in e for e in g.evidence)
    assert any("no serving-engine metrics" in e for e in g.evidence)


def test_memory_pressure_is_underprovisioned_and_production_never_goes_to_a_marketplace(
    tmp_path: Path,
) -> None:
    s = _busy_store(tmp_path, labels={}, mem_share=0.96)
    w = resolve_window(s, 14, None, 0.95)
    stats = gpu_stats(s, w)
    for tier in ("production", "batch"):
        (g,) = find(stats, w, tier=tier).gpus
        assert g.finding == "Underprovisioned" and g.reason_codes == ("GPUMemoryUnderprovisioned",)
        assert g.tier == tier
        (o,) = [o for o in g.options if o.kind == "larger_gpu"]
        prov = o.target.split(" ")[0]
        if tier == "production":
            assert provider_class(prov) != "marketplace", o.target
    # the recommender's own filter: production drops every marketplace offer, batch keeps them
    t = _offers()
    market = np.array([provider_class(str(p)) == "marketplace" for p in t.column("provider")])
    assert market.any()
    assert not (tier_mask(t, "production", serving=True) & market).any()
    assert (tier_mask(t, "batch", serving=False) & market).any()


@pytest.mark.parametrize(
    ("pod", "owner"),
    [
        ("chat-7d9f8b6c4-x2kq9", "chat"),  # Deployment
        ("train-llama-x7k2p", "train-llama"),  # Job
        ("backup-28512345-x7k2p", "backup"),  # CronJob
        ("db-12", "db"),  # StatefulSet
        ("chat-model", "chat-model"),  # no generated suffix (vowels)
        ("job-0001", "job-0001"),  # leading zero: not an ordinal
    ],
)
def test_pod_owner(pod: str, owner: str) -> None:
    assert pod_owner(pod) == owner


def test_workload_of_prefers_inventory_then_job(tmp_path: Path) -> None:
    from gpufleet.telemetry.workloads import load_workload_rules

    inv = tmp_path / "inv.yaml"
    inv.write_text(
        "workloads:\n  - pod: 'rag-*'\n    namespace: serving\n    workload: retrieval\n    team: search\n"
        "    tier: production\n",
        encoding="utf-8",
    )
    rules = load_workload_rules(inv)
    w = workload_of(namespace="serving", pod="rag-7b9c8d6f5-k2m4n", job=None, rules=rules)
    assert w is not None and (w.key, w.team, w.tier, w.source) == (
        "serving/retrieval",
        "search",
        "production",
        "inventory",
    )
    w = workload_of(namespace="hpc", pod="x-b2c4d", job="4242", rules=rules)
    assert w is not None and w.key == "job:4242"


@pytest.fixture(scope="module")
def k8s(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object]:
    d = tmp_path_factory.mktemp("k8s")
    fleet = known_truth_fleet(start_s=T0_S)
    (d / "fleet.om").write_text(fleet.text, encoding="utf-8")
    r = ingest_telemetry([d / "fleet.om"], store=d / "store")
    assert r.rows_stored == fleet.samples and not r.problems
    return fleet, analyze_fleet(d / "store")


def test_known_truth_fleet_file_path(k8s: tuple) -> None:  # type: ignore[type-arg]
    """Every GPU and every workload of the generated fleet gets the right finding (file path)."""
    fleet, ff = k8s
    got = {g.gpu_key: g.finding for g in ff.gpus}
    assert got == fleet.gpu_truth
    wl = {w.key: w for w in ff.workloads}
    assert {k: w.finding for k, w in wl.items()} == fleet.workload_truth
    # short-lived pods: every GPU InsufficientData, the workload (3 pods, 42 h) gets a finding and a price
    rag = wl["serving/rag"]
    assert rag.pods == 3 and rag.hours >= 30 and rag.replicas == pytest.approx(1.0, abs=0.05)
    assert rag.savings_usd_per_month > 0 and rag.recommendation.endswith("per replica")
    assert rag.team == "serving"
    # the SLO-violating service says why; the healthy busy one too
    api = wl["serving/llm-api"]
    assert set(api.reason_codes) >= {"ServingQueueing", "ServingKVCachePressure", "ServingTTFTAboveSLO"}
    assert any(e.startswith("TTFT p95 4.75 s") for e in api.evidence), api.evidence
    assert api.tier == "production"
    for w in ff.workloads:
        if w.tier == "production":
            for o in w.replica.options:
                assert provider_class(o.target.split(" ")[0]) != "marketplace", o.target
    chat = wl["serving/chat"]
    assert chat.reason_codes == () and any("TTFT p95 0.75 s" in e for e in chat.evidence), chat.evidence
    assert len(CASES) == len(fleet.workload_truth)


def test_observed_span_and_lookback_are_separate(k8s: tuple) -> None:  # type: ignore[type-arg]
    from gpufleet.report.telemetry import summary_lines
    from gpufleet.telemetry.summary import summarize

    fleet, ff = k8s
    line = summary_lines(summarize(ff), ff)[0]
    assert line.startswith("Lookback: 14.0 days")
    span_days = (fleet.end_s - fleet.start_s) / 86400
    assert f"({span_days:.1f} days)" in line and "(14.0 days)" not in line


def test_node_option_states_its_own_cost(tmp_path: Path) -> None:
    """The Nodes table printed the saving under "option/month"; now the option's cost and its saving."""
    from gpufleet.report.telemetry import render_findings_markdown
    from gpufleet.telemetry.summary import summarize
    from gpufleet.telemetry.synth import synthetic_fleet

    b, _ = synthetic_fleet(
        seed=1,
        counts={"idle": 2, "migable": 2, "healthy": 4},
        days=2.0,
        labels={"provider": "aws", "instance_type": "p5.48xlarge", "region": "us-east-1"},
    )
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=NOW_US)
    w = resolve_window(s, 14, None, 0.95)
    ff = find(gpu_stats(s, w), w)
    (node,) = ff.nodes
    (o,) = node.options
    assert node.cost_usd_per_month is not None and o.cost_usd_per_month is not None
    assert o.savings_usd_per_month == pytest.approx(node.cost_usd_per_month - o.cost_usd_per_month, rel=1e-3)
    md = render_findings_markdown(ff, summarize(ff))
    assert "| option cost/month | option saves/month |" in md
    row = next(r for r in md.splitlines() if r.startswith("| node-000 "))
    assert f"${o.cost_usd_per_month:,.0f} | ${o.savings_usd_per_month:,.0f} |" in row


def test_one_pricing_path_per_store(tmp_path: Path) -> None:
    """``findings --inventory`` and a later ``report`` without it priced a host differently (inventory vs the
    catalog median); the inventory given is kept in the store and used by every later command."""
    from gpufleet.telemetry.synth import synthetic_fleet

    b, _ = synthetic_fleet(seed=2, counts={"healthy": 1}, days=2.0)  # no instance labels
    s = TelemetryStore(tmp_path / "st")
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=NOW_US)
    before = analyze_fleet(s).gpus[0].cost
    assert before.price_basis == "catalog median"
    inv = tmp_path / "inv.yaml"
    inv.write_text(
        "hosts:\n  - host: 'node-*'\n    provider: aws\n    instance_type: p5.48xlarge\n"
        "    region: us-east-1\n",
        encoding="utf-8",
    )
    given = analyze_fleet(s, inventory=inv).gpus[0].cost
    later = analyze_fleet(s).gpus[0].cost
    assert given.price_basis == later.price_basis == "inventory"
    assert later.price_usd_per_gpu_hour == given.price_usd_per_gpu_hour != before.price_usd_per_gpu_hour


def test_serving_metric_names_are_read(tmp_path: Path) -> None:
    from gpufleet.telemetry.readers.exposition import read_exposition

    text = "\n".join(
        [
            'vllm:num_requests_waiting{namespace="s",pod="a-b2c4d"} 3 1780000000000',
            'vllm:kv_cache_usage_perc{namespace="s",pod="a-b2c4d"} 0.5 1780000000000',
            'tgi_queue_size{namespace="s",pod="t-b2c4d"} 2 1780000000000',
            'sglang:num_queue_reqs{namespace="s",pod="g-b2c4d"} 1 1780000000000',
            'sglang:token_usage{namespace="s",pod="g-b2c4d"} 0.7 1780000000000',
            'vllm:time_to_first_token_seconds_bucket{namespace="s",pod="a-b2c4d",le="0.5"} 7 1780000000000',
            'vllm:num_preemptions_total{namespace="s",pod="a-b2c4d"} 4 1780000000000',
        ]
    )
    b, p = SampleBatch(), ProblemCounter()
    assert read_exposition(text, source="t", scrape_ts_us=0, batch=b, problems=p) == 7
    assert not p.problems()
    cols = b.columns
    assert cols["metric"] == [
        "queue_requests",
        "kv_cache_usage_ratio",
        "queue_requests",
        "queue_requests",
        "kv_cache_usage_ratio",
        "ttft_s_bucket",
        "preemptions_total",
    ]
    assert cols["le"][5] == "0.5" and cols["host"][0] == "svc:s/a-b2c4d" and cols["gpu_index"][0] == -1


def test_store_written_before_the_le_label_still_reads(tmp_path: Path) -> None:
    """A series file without the ``le`` column (a store from before serving histograms) reads as NULL, and
    a new ingest into it works."""
    import duckdb

    s = _busy_store(tmp_path, labels={})
    series = tmp_path / s.manifest()["series_files"][-1]
    con = duckdb.connect()
    old = tmp_path / "old.parquet"
    con.execute(f"COPY (SELECT * EXCLUDE (le) FROM read_parquet('{series}')) TO '{old}' (FORMAT parquet)")
    old.replace(series)
    assert "le" not in {
        r[0] for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{series}')").fetchall()
    }
    w = resolve_window(s, 14, None, 0.95)
    (g,) = find(gpu_stats(s, w), w).gpus
    assert g.finding == "Optimized"
    b = SampleBatch()
    b.add(
        labels={"host": "svc:s/a-b2c4d", "namespace": "s", "pod": "a-b2c4d", "le": "0.5", "source": "t"},
        gpu_index=-1,
        ts_us=T0_S * 1_000_000,
        metric="ttft_s_bucket",
        value=3.0,
    )
    r = s.append(b, ProblemCounter(), sources=["t"], rows_read=1, now_us=NOW_US)
    assert r.rows_stored == 1


def _held_store(tmp_path: Path, *, util_pct: float, mem_share: float) -> TelemetryStore:
    """One GPU for 48 h at 5 min: SM active ``util_pct`` % flat, memory flat at ``mem_share`` of capacity
    (a serving engine's start-up reservation: vLLM holds gpu_memory_utilization 0.9 whatever its traffic)."""
    b = SampleBatch()
    lab = {"host": "n1", "gpu_uuid": "GPU-held", "model": "NVIDIA H100 80GB HBM3", "source": "t"}
    for i in range(576):
        ts = (T0_S + 300 * i) * 1_000_000
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="gpu_util_pct", value=util_pct)
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="sm_active_ratio", value=util_pct / 100)
        used = mem_share * H100_MIB
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="fb_used_mib", value=used)
        b.add(labels=lab, gpu_index=0, ts_us=ts, metric="fb_free_mib", value=H100_MIB - used)
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=NOW_US)
    return s


def test_memory_held_by_an_idle_gpu_is_not_memory_pressure(tmp_path: Path) -> None:
    """Review scenario (idle-heavy vLLM fleet): 4 L40S at 1 % SM active for 7 days, vLLM's 90 % reservation
    held, were Underprovisioned (GPUMemoryUnderprovisioned, risk High) with a *larger GPU* as the option.
    Nothing computes, so nothing is starved of memory: Overprovisioned, no larger GPU, the evidence says
    why."""
    s = _held_store(tmp_path, util_pct=1.0, mem_share=0.92)
    w = resolve_window(s, 14, None, 0.95)
    (g,) = find(gpu_stats(s, w), w).gpus
    assert (g.compute_p or 0) < 0.05 and (g.memory_p99_gib or 0) / 74.5 > 0.9
    assert g.finding == "Overprovisioned", (g.finding, g.reason_codes)
    assert "GPUMemoryUnderprovisioned" not in g.reason_codes
    assert not any(o.kind == "larger_gpu" for o in g.options)
    assert g.current_performance_risk != "High"
    assert any("not memory pressure" in e for e in g.evidence)


def test_serving_kv_cache_decides_memory_pressure_not_the_reservation(tmp_path: Path) -> None:
    """A vLLM GPU at 50 % SM active reads ~92 % FB used (its reservation); its KV cache at 40 % is the
    engine's own measure: not Underprovisioned. The same GPU with its KV cache at 97 % is."""
    from gpufleet.telemetry.analyze_workloads import ServingStats
    from gpufleet.telemetry.finding_types import Thresholds
    from gpufleet.telemetry.findings import classify

    s = _held_store(tmp_path, util_pct=50.0, mem_share=0.92)
    w = resolve_window(s, 14, None, 0.95)
    (st,) = gpu_stats(s, w)
    th = Thresholds()
    calm = classify(st, th, w, serving=ServingStats(kv_cache_p=0.40))
    assert calm.finding != "Underprovisioned", (calm.finding, calm.reason_codes)
    assert any("KV cache p95 40%" in e for e in calm.evidence)
    full = classify(st, th, w, serving=ServingStats(kv_cache_p=0.97))
    assert full.finding == "Underprovisioned"
    assert "GPUMemoryUnderprovisioned" not in full.reason_codes  # the KV cache says it, not FB used
    # without any serving gauge a computing GPU at 92 % is still read as memory pressure (unchanged)
    plain = classify(st, th, w)
    assert plain.reason_codes == ("GPUMemoryUnderprovisioned",)
