"""Issue 23 item 3 (fleet scale): the fast workload statistics of the local store and the trimmed PromQL
pushdown give the quantities of their definitions, recomputed here by brute force, and agree with each
other on the same generated fleet (exact, or within one percentile bin of the store path)."""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import numpy as np
import pytest

from gpufleet.telemetry.analyze import BIN_SCALE, gpu_stats, resolve_window
from gpufleet.telemetry.analyze_workloads import workload_and_serving_stats
from gpufleet.telemetry.api import ingest_telemetry
from gpufleet.telemetry.promql import _COVER_S, prometheus_fleet_stats, prometheus_window
from gpufleet.telemetry.readers.common import exporter_names
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.telemetry.synth_k8s import known_truth_fleet

from .promserver import prometheus_with

_SAFE = "bcdfghjklmnpqrstvwxz2456789"


def _replicas_text(start_s: int) -> tuple[str, list[tuple[str, str, str, int, float]]]:
    """A Deployment of 3 overlapping replicas (one scraped every 15 s) and a single-pod Job, over 2.3 days
    from an unaligned start, so steps hold several samples and time slabs cut the window."""
    rng = np.random.default_rng(3)
    rows: list[tuple[str, str, str, int, float]] = []  # (pod, gpu uuid, metric, ts, value)
    pods = [
        ("chat-5f6d7c8b9-bk2mx", "GPU-a", 15, 0, 2.3),
        ("chat-5f6d7c8b9-zz9kq", "GPU-b", 60, 0.4, 1.9),
        ("chat-5f6d7c8b9-q2w4r", "GPU-c", 60, 1.1, 2.3),
        ("train-x7k2p", "GPU-d", 60, 0.2, 1.0),
    ]
    lines = []
    for pod, uuid, step, d0, d1 in pods:
        ts = np.arange(start_s + int(d0 * 86400), start_s + int(d1 * 86400), step)
        sm = np.clip(rng.normal(0.5 if pod.startswith("chat") else 0.2, 0.2, len(ts)), 0, 1)
        fb = np.clip(rng.normal(40000, 9000, len(ts)), 0, 81559)
        lab = (
            f'gpu="0",UUID="{uuid}",Hostname="h-{uuid}",modelName="NVIDIA H100 80GB HBM3",'
            f'namespace="ml",pod="{pod}"'
        )
        for name, metric, vals, fmt in (
            ("DCGM_FI_PROF_SM_ACTIVE", "sm_active_ratio", sm, "{:.4f}"),
            ("DCGM_FI_DEV_FB_USED", "fb_used_mib", fb, "{:.0f}"),
        ):
            for t, v in zip(ts, vals, strict=True):
                s = fmt.format(v)
                lines.append(f"{name}{{{lab}}} {s} {int(t)}")
                rows.append((pod, uuid, metric, int(t), float(s)))
    return "\n".join([*lines, "# EOF", ""]), rows


def _binned(values: list[float], q: float, scale: float) -> float:
    bins = sorted(max(math.ceil(v * scale), 0) for v in values)
    cum = np.cumsum(np.bincount(bins))
    return min(float(np.searchsorted(cum, q * cum[-1])) / scale, max(values))


def test_store_workload_stats_match_their_definition(tmp_path: Path) -> None:
    """Per 60-s step the busiest replica (max over the samples of the step), binned percentiles; mean,
    count and peak over every sample; hours = 5-minute steps with a sample; GPU-hours per GPU summed."""
    start = 1_780_000_000 + 1234  # not on a day, hour or 5-minute boundary
    text, rows = _replicas_text(start)
    (tmp_path / "f.om").write_text(text, encoding="utf-8")
    ingest_telemetry([tmp_path / "f.om"], store=tmp_path / "store")
    store = TelemetryStore(tmp_path / "store")
    window = resolve_window(store, 14, None, 0.95)
    workloads, _ = workload_and_serving_stats(store, window)
    got = {w.id.key: w for w in workloads}
    assert set(got) == {"ml/chat", "ml/train"}
    for wkey, prefix in (("ml/chat", "chat-"), ("ml/train", "train-")):
        mine = [r for r in rows if r[0].startswith(prefix)]
        w = got[wkey]
        steps5 = {t // 300 for _, _, _, t, _ in mine}
        per_gpu: dict[str, set[int]] = defaultdict(set)
        for _, uuid, _, t, _ in mine:
            per_gpu[uuid].add(t // 300)
        assert w.replica.hours == pytest.approx(len(steps5) * 300 / 3600)
        assert w.gpu_hours == pytest.approx(sum(len(s) for s in per_gpu.values()) * 300 / 3600)
        assert w.gpus == len(per_gpu) and w.pods == len({r[0] for r in mine})
        assert w.replica.first_ts == datetime.fromtimestamp(min(steps5) * 300, tz=UTC)
        assert w.replica.last_ts == datetime.fromtimestamp(max(steps5) * 300, tz=UTC)
        for metric in ("sm_active_ratio", "fb_used_mib"):
            vals = [v for _, _, m, _, v in mine if m == metric]
            per_step: dict[int, float] = {}
            for _, _, m, t, v in mine:
                if m == metric:
                    per_step[t // 60] = max(per_step.get(t // 60, -math.inf), v)
            st = w.replica.metrics[metric]
            assert st.samples == len(vals)
            assert st.mean == pytest.approx(sum(vals) / len(vals), rel=1e-9)
            assert st.max == max(vals)
            steps = list(per_step.values())
            assert st.p_hi == pytest.approx(_binned(steps, 0.95, BIN_SCALE[metric]))
            assert st.p99 == pytest.approx(_binned(steps, 0.99, BIN_SCALE[metric]))
            assert st.p50 == pytest.approx(_binned(steps, 0.5, BIN_SCALE[metric]))
    # overlapping replicas: the busiest one per step is above any single replica's median
    assert got["ml/chat"].replica.metrics["sm_active_ratio"].p50 > 0.55


NOW_S = int(time.time()) // 60 * 60


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, datetime, Path]]:
    fleet = known_truth_fleet(start_s=NOW_S - 44 * 3600)
    end = datetime.fromtimestamp(fleet.end_s + 60, tz=UTC)
    d = tmp_path_factory.mktemp("scale-file")
    (d / "fleet.om").write_text(fleet.text, encoding="utf-8")
    ingest_telemetry([d / "fleet.om"], store=d / "store")
    with prometheus_with(fleet.text, tmp_path_factory.mktemp("scale-prom")) as url:
        yield url, end, d / "store"


def test_pushdown_sends_only_what_the_findings_read(served: tuple[str, datetime, Path]) -> None:
    """One quantile per metric the findings read (no p50; p99 of memory only), one ``label_replace`` for
    the pod owner inside each 1-minute subquery, and the same statistics with 1 or 4 queries in flight."""
    url, end, _ = served
    sent: list[str] = []

    def log(request: httpx.Request) -> None:
        q = request.url.params.get("query")
        if q:
            sent.append(q)

    w = prometheus_window(url, lookback_days=14, end=end, percentile=0.95)
    with httpx.Client(timeout=60, event_hooks={"request": [log]}) as http:
        one, info1 = prometheus_fleet_stats(url, window=w, workers=1, client=http)
    four, info4 = prometheus_fleet_stats(url, window=w, workers=4)
    assert one == four and info1["queries"] == info4["queries"] == len(sent)
    assert info1["bytes_returned"] > 0
    # the training step time's median is read by its findings (TrainingStepTime*): its own queries
    step_names = tuple(exporter_names("step_time_s"))
    sent_gpu = [q for q in sent if not any(n in q for n in step_names)]
    quantiles = [q for q in sent_gpu if q.startswith("quantile_over_time")]
    assert not any(q.startswith("quantile_over_time(0.5,") for q in quantiles)
    assert not any("DCGM_FI_DEV_FB_USED" in q and q.startswith("quantile_over_time(0.95") for q in quantiles)
    assert not any("SM_ACTIVE" in q and q.startswith("quantile_over_time(0.99") for q in quantiles)
    gpu_queries = [q for q in sent_gpu if "vllm" not in q]
    for q in gpu_queries:
        if ":1m]" in q:
            assert q.startswith("quantile_over_time(") and q.count("label_replace") == 1, q
    # old pushdown: 6 queries per metric and host chunk, 5 per metric and namespace chunk, 6 coverage ones
    n_metrics = len(
        {q.split("{")[0].split("(")[-1] for q in gpu_queries if q.startswith("count_over_time(D")}
    )
    assert len(gpu_queries) <= 4 * n_metrics + 2 * n_metrics + 4


def test_pushdown_agrees_with_the_store_path(served: tuple[str, datetime, Path]) -> None:
    """Per GPU and per workload: counts, means and peaks exact; percentiles within one bin of the store
    path's (the store reports the upper edge of a fixed bin, PromQL the interpolated sample quantile)."""
    url, end, store_dir = served
    store = TelemetryStore(store_dir)
    window = resolve_window(store, 14, end, 0.95)
    prom, _ = prometheus_fleet_stats(
        url, window=prometheus_window(url, lookback_days=14, end=end, percentile=0.95)
    )
    file_gpus = {g.gpu_key: g for g in gpu_stats(store, window)}
    file_wl = {w.id.key: w for w in workload_and_serving_stats(store, window)[0]}
    assert set(file_gpus) == {g.gpu_key for g in prom.gpus}
    assert set(file_wl) == {w.id.key for w in prom.workloads}
    pairs = [(g.metrics, file_gpus[g.gpu_key].metrics) for g in prom.gpus]
    pairs += [(w.replica.metrics, file_wl[w.id.key].replica.metrics) for w in prom.workloads]
    for w in prom.workloads:
        f = file_wl[w.id.key]
        assert (w.pods, w.gpus) == (f.pods, f.gpus)
        # coverage is counted on 5-minute subquery steps (promql._COVER_S), aligned to the query time, not
        # to the samples: each GPU's span may gain or lose one step at either end
        step_h = _COVER_S / 3600.0
        assert w.gpu_hours == pytest.approx(f.gpu_hours, abs=2 * w.gpus * step_h + 1e-9)
    checked = 0
    for pm, fm in pairs:
        for metric, ps in pm.items():
            fs = fm[metric]
            width = 1 / BIN_SCALE[metric]
            assert ps.samples == fs.samples and ps.max == pytest.approx(fs.max)
            assert ps.mean == pytest.approx(fs.mean, rel=1e-9)
            if metric in ("sm_active_ratio", "gpu_util_pct"):
                assert ps.p_hi - 1e-9 <= fs.p_hi <= ps.p_hi + width + 1e-9, (metric, ps, fs)
                checked += 1
            if metric == "fb_used_mib":
                assert ps.p99 - 1e-9 <= fs.p99 <= ps.p99 + width + 1e-9, (metric, ps, fs)
                checked += 1
    assert checked > 20
