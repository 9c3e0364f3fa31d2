"""Issue 23, item 3 (and the done-when): the generated fleet with known truth, backfilled into a real
Prometheus with promtool, judged by ``findings --prometheus`` (PromQL pushdown: only summaries come back)
exactly as the file path judges it: every GPU and every workload gets the right finding."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.telemetry.api import analyze_fleet, analyze_prometheus, ingest_telemetry
from gpufleet.telemetry.finding_types import UNDER_REASONS
from gpufleet.telemetry.findings import FleetFindings
from gpufleet.telemetry.promql import prometheus_fleet_stats, prometheus_window
from gpufleet.telemetry.synth_k8s import GeneratedFleet, known_truth_fleet

from .promserver import prometheus_with

NOW_S = int(time.time()) // 60 * 60
_TRAINING = ("training/pretrain", "training/sft-llama")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GeneratedFleet, str, datetime]]:
    fleet = known_truth_fleet(start_s=NOW_S - 44 * 3600)  # inside the default 15-day retention
    end = datetime.fromtimestamp(fleet.end_s + 60, tz=UTC)
    with prometheus_with(fleet.text, tmp_path_factory.mktemp("prom-k8s")) as url:
        yield fleet, url, end


@pytest.fixture(scope="module")
def both(
    served: tuple[GeneratedFleet, str, datetime], tmp_path_factory: pytest.TempPathFactory
) -> tuple[FleetFindings, FleetFindings]:
    fleet, url, end = served
    d = tmp_path_factory.mktemp("file-k8s")
    (d / "fleet.om").write_text(fleet.text, encoding="utf-8")
    ingest_telemetry([d / "fleet.om"], store=d / "store")
    return analyze_fleet(d / "store", end=end), analyze_prometheus(url, end=end)


def test_known_truth_fleet_through_both_paths(
    served: tuple[GeneratedFleet, str, datetime], both: tuple[FleetFindings, FleetFindings]
) -> None:
    fleet, _, _ = served
    # the full truth table: idle, over-provisioned, busy-and-healthy (training and serving), memory-starved,
    # SLO-violating serving, short-lived pods of a long-lived workload, a training job slowing down
    for ff in both:
        assert {g.gpu_key: g.finding for g in ff.gpus} == fleet.gpu_truth, ff.source
        assert {w.key: w.finding for w in ff.workloads} == fleet.workload_truth, ff.source
        under = {w.key: tuple(r for r in w.reason_codes if r in UNDER_REASONS) for w in ff.workloads}
        assert under == fleet.workload_reasons, ff.source
        assert sum(g.finding == "Underprovisioned" for g in ff.gpus) == 3, ff.source
    file_ff, prom_ff = both
    assert prom_ff.source.startswith("prometheus ") and file_ff.source == "store"
    # the same quantities: observed hours, memory peak, reasons, and the TTFT p95 from the histogram
    fw = {w.key: w for w in file_ff.workloads}
    for w in prom_ff.workloads:
        f = fw[w.key]
        assert w.reason_codes == f.reason_codes and w.pods == f.pods
        assert w.hours == pytest.approx(f.hours, abs=0.5)
        assert w.replica.memory_peak_gib == pytest.approx(f.replica.memory_peak_gib, rel=0.01)
        assert w.replica.compute_p == pytest.approx(f.replica.compute_p, abs=0.03)
        # step time judged for the training jobs only, on both paths
        assert any(e.startswith("step time (slowest rank") for e in w.evidence) == (w.key in _TRAINING)
    slow = {ff.source: next(w for w in ff.workloads if w.key == "training/sft-llama") for ff in both}
    for w in slow.values():
        trend = next(e for e in w.evidence if e.startswith("step time median"))
        assert "in the first quarter of its 42.0 h" in trend and "+4" in trend, trend  # +40-45 %
    steady = next(w for w in prom_ff.workloads if w.key == "training/pretrain")
    assert steady.finding == "Optimized" and any("(-0%" in e or "(+0%" in e for e in steady.evidence)
    api = next(w for w in prom_ff.workloads if w.key == "serving/llm-api")
    assert any(e.startswith("TTFT p95 4.75 s") for e in api.evidence), api.evidence
    fg = {g.gpu_key: g for g in file_ff.gpus}
    for g in prom_ff.gpus:
        assert g.hours == pytest.approx(fg[g.gpu_key].hours, abs=0.5)


def test_only_summaries_come_back_and_time_chunks_agree(served: tuple[GeneratedFleet, str, datetime]) -> None:
    fleet, url, end = served
    w = prometheus_window(url, lookback_days=14, end=end, percentile=0.95)
    stats, info = prometheus_fleet_stats(url, window=w)
    # the fleet holds ~60,000 samples; a few hundred summary values come back
    assert info["series_returned"] < 0.02 * fleet.samples, info
    assert len(stats.gpus) == len(fleet.gpu_truth) and len(stats.workloads) == len(fleet.workload_truth)
    chunked = analyze_prometheus(url, end=end, chunk_days=1.0, chunk_hosts=1)
    assert {g.gpu_key: g.finding for g in chunked.gpus} == fleet.gpu_truth
    assert {x.key: x.finding for x in chunked.workloads} == fleet.workload_truth
    assert any("upper bound" in c for c in chunked.caveats)


def test_cli_findings_prometheus(served: tuple[GeneratedFleet, str, datetime], tmp_path: Path) -> None:
    fleet, url, end = served
    r = CliRunner().invoke(
        app,
        ["telemetry", "findings", "--prometheus", url, "--end", end.isoformat(), "--format", "json"],
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    got = {w["key"]: w["finding"] for w in doc["findings"]["workloads"]}
    assert got == fleet.workload_truth
    bad = CliRunner().invoke(
        app, ["telemetry", "findings", "--prometheus", url, "--store", str(tmp_path), "--format", "json"]
    )
    assert bad.exit_code == 2 and "--store" in bad.output
    md = CliRunner().invoke(
        app, ["telemetry", "findings", "--prometheus", url, "--end", end.isoformat(), "--format", "markdown"]
    )
    assert md.exit_code == 0 and "Statistics computed by prometheus" in md.output
