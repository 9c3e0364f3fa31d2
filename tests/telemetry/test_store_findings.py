"""Store (atomic appends, duplicates, order, clock skew, killed ingest) and findings against ground truth."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from gpufleet.errors import ConfigFileError, InputError
from gpufleet.telemetry.analyze import gpu_stats, resolve_window
from gpufleet.telemetry.findings import Thresholds, find, gpus_needed
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.telemetry.store import TelemetryStore
from gpufleet.telemetry.summary import summarize
from gpufleet.telemetry.synth import acme_levels, synthetic_fleet

DATA = Path(__file__).parent / "data"
NOW_US = 1_800_000_000 * 1_000_000
P5 = {"provider": "aws", "instance_type": "p5.48xlarge", "region": "us-east-1"}


def _batch(
    points: list[tuple[int, float]], key: str = "GPU-1", metric: str = "sm_active_ratio"
) -> SampleBatch:
    b = SampleBatch()
    for ts, v in points:
        b.add(
            labels={"host": "h", "gpu_uuid": key, "source": "test"},
            gpu_index=0,
            ts_us=ts,
            metric=metric,
            value=v,
        )
    return b


def _append(store: TelemetryStore, b: SampleBatch) -> dict[str, int]:
    r = store.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=NOW_US)
    return {p.kind: p.count for p in r.problems} | {"stored": r.rows_stored}


def test_duplicates_order_and_clock_skew(tmp_path: Path) -> None:
    s = TelemetryStore(tmp_path)
    t0 = 1_780_000_000_000_000
    got = _append(s, _batch([(t0 + 60_000_000, 0.2), (t0, 0.1), (t0, 0.1), (NOW_US + 3_600_000_000, 0.5)]))
    assert got == {"stored": 2, "out_of_order": 1, "duplicate_sample": 1, "clock_skew": 1}
    again = _append(s, _batch([(t0, 0.1), (t0 + 120_000_000, 0.3)]))
    assert again == {"stored": 1, "duplicate_sample": 1}  # the stored sample is not stored twice
    con = s.connect()
    assert con.execute("SELECT count(*) FROM samples").fetchone() == (3,)


def test_killed_ingest_leaves_previous_data_readable(tmp_path: Path) -> None:
    s = TelemetryStore(tmp_path)
    _append(s, _batch([(1_780_000_000_000_000, 0.1)]))
    # What a kill between writing parts and publishing the manifest leaves: unlisted files and a staging dir.
    (tmp_path / "samples" / "day=2026-05-28" / "part-zombie-0.parquet").write_bytes(b"not parquet")
    (tmp_path / ".staging-zombie").mkdir()
    assert s.connect().execute("SELECT count(*) FROM samples").fetchone() == (1,)
    _append(s, _batch([(1_780_000_060_000_000, 0.2)]))
    assert not (tmp_path / ".staging-zombie").exists()
    assert not (tmp_path / "samples" / "day=2026-05-28" / "part-zombie-0.parquet").exists()
    assert s.connect().execute("SELECT count(*) FROM samples").fetchone() == (2,)


def test_corrupt_manifest_and_empty_store_errors(tmp_path: Path) -> None:
    s = TelemetryStore(tmp_path)
    with pytest.raises(InputError, match="empty"):
        resolve_window(s, 14, None, 0.95)
    (tmp_path / "manifest.json").write_text("{broken", encoding="utf-8")
    with pytest.raises(ConfigFileError, match="manifest"):
        s.manifest()
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "other"}), encoding="utf-8")
    with pytest.raises(ConfigFileError, match="not a gpufleet telemetry store"):
        s.manifest()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[TelemetryStore, list, object]:  # type: ignore[type-arg]
    b, truth = synthetic_fleet(
        seed=7,
        counts={"idle": 4, "over": 4, "migable": 4, "busy": 2, "memstarved": 2, "healthy": 4},
        days=2.0,
        labels=P5,
    )
    s = TelemetryStore(tmp_path_factory.mktemp("fleet"))
    s.append(b, ProblemCounter(), sources=["synthetic"], rows_read=len(b), now_us=NOW_US)
    w = resolve_window(s, 14, None, 0.95)
    return s, truth, find(gpu_stats(s, w), w)


def test_synthetic_fleet_findings_are_all_right(fleet: tuple) -> None:  # type: ignore[type-arg]
    _, truth, ff = fleet
    got = {g.gpu_key: g for g in ff.gpus}
    assert len(got) == len(truth) == 20
    for t in truth:
        g = got[t.gpu_key]
        assert g.finding == t.expected, (t.cls, g.finding, g.compute_p, g.memory_p99_gib)
        assert any(o.kind == "mig_slice" for o in g.options) == (t.cls == "migable"), t.cls
        # no caveat but, on an Idle GPU observed for these 3 days, that a weekly job would not show
        assert g.compute_signal == "sm_active_ratio"
        assert [c for c in g.caveats if "weekly" not in c] == [], g.caveats
        assert any("weekly" in c for c in g.caveats) == (g.finding == "Idle")
        # The GPU_UTIL vs SM_ACTIVE gap: healthy GPUs look saturated to nvidia-smi.
        if t.cls == "healthy":
            assert (
                g.gpu_util_p is not None
                and g.gpu_util_p > 0.95
                and g.compute_p is not None
                and g.compute_p < 0.8
            )


def test_options_are_priced_and_risk_bounded(fleet: tuple) -> None:  # type: ignore[type-arg]
    _, _, ff = fleet
    for g in ff.gpus:
        assert g.cost.price_basis == "labels" and g.cost.price_usd_per_gpu_hour == pytest.approx(55.04 / 8)
        for o in g.options:
            assert 0 <= o.performance_risk <= 4
            if o.kind in ("release", "mig_slice", "smaller_gpu"):
                assert o.savings_usd_per_month is not None and o.savings_usd_per_month > 0
        if g.finding == "Idle":
            assert g.options[0].kind == "release"
    s = summarize(ff)
    assert s.gpus == 20 and 0.15 < s.idle_share < 0.25
    assert sum(n for n, _ in s.by_finding.values()) == 20
    assert s.savings_usd_per_month == pytest.approx(sum(v for _, v in s.by_finding.values()))
    assert ff.consolidation["H100-SXM"][0] == 4 and ff.consolidation["H100-SXM"][1] <= 2
    assert any(n.options for n in ff.nodes)
    for node in ff.nodes:  # 8-GPU p5 nodes: idle GPUs released and MIG-able work packed -> fewer GPUs
        members = [g for g in ff.gpus if g.host == node.name]
        needed = gpus_needed(members)
        assert needed <= len(members) - sum(g.idle for g in members)
        if node.options:
            (o,) = node.options
            assert o.kind == "fewer_gpus" and o.savings_usd_per_month is not None
            assert o.savings_usd_per_month == pytest.approx((len(members) - needed) * 55.04 / 8 * 730)


def test_gpu_util_fallback_is_flagged_upper_bound(tmp_path: Path) -> None:
    b, _ = synthetic_fleet(seed=3, counts={"healthy": 2}, days=2.0)
    keep = [i for i, m in enumerate(b.columns["metric"]) if m != "sm_active_ratio"]
    nb = b.select(keep)
    s = TelemetryStore(tmp_path)
    s.append(nb, ProblemCounter(), sources=["t"], rows_read=len(nb), now_us=NOW_US)
    w = resolve_window(s, 14, None, 0.95)
    ff = find(gpu_stats(s, w), w, Thresholds())
    for g in ff.gpus:
        assert g.compute_signal == "gpu_util_pct" and "upper bound" in g.caveats[0]
        # GPU_UTIL near 100 % alone is no shortage (issue 23: it was "Underprovisioned"); listed as evidence
        assert g.finding == "Optimized" and "busy" in g.evidence[0]
        assert any("catalog median" in c for c in g.caveats)


def _acme_cdf(cluster: str) -> tuple[list[float], list[float]]:
    with (DATA / "acme_dcgm_cdfs.csv").open(encoding="utf-8") as fh:
        rows = [
            r
            for r in csv.DictReader(fh)
            if r["cluster"] == cluster and r["metric"] == "DCGM_FI_PROF_SM_ACTIVE"
        ]
    return [float(r["x_value"]) for r in rows], [float(r["cdf_percent"]) for r in rows]


@pytest.mark.parametrize("cluster", ["Seren", "Kalos"])
def test_acme_fleet_reproduces_share_below_sm_active_threshold(tmp_path: Path, cluster: str) -> None:
    import numpy as np

    x, cdf = _acme_cdf(cluster)
    n = 300
    levels = acme_levels(x, cdf, n)
    rng = np.random.default_rng(11)
    b = SampleBatch()
    for i, level in enumerate(levels):
        values = np.clip(level + rng.normal(0, 0.03, 96), 0, 1)  # 1 day at 15 min, symmetric noise
        for k, v in enumerate(values):
            b.add(
                labels={"host": f"n{i // 8}", "gpu_uuid": f"GPU-{i}", "source": "acme"},
                gpu_index=i % 8,
                ts_us=1_780_000_000_000_000 + k * 900_000_000,
                metric="sm_active_ratio",
                value=float(v),
            )
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["acme"], rows_read=len(b), now_us=NOW_US)
    stats = gpu_stats(s, resolve_window(s, 14, None, 0.95))
    medians = np.array([g.metrics["sm_active_ratio"].p50 for g in stats])
    for threshold_pct in (20.0, 30.0, 50.0):
        expected = float(np.interp(threshold_pct, x, cdf))
        # p50 is a bin's upper edge (1-point bins): compare with the share at or below the threshold
        got = 100.0 * float(np.mean(medians <= threshold_pct / 100 + 1e-9))
        assert abs(got - expected) <= 2.0, (cluster, threshold_pct, got, expected)
