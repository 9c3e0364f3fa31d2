"""Issue 23, item 1 (training): a training GPU or workload is Underprovisioned on step-time evidence only
(slower than the estimator expects for its GPU, slowing down over the run, stalling), never on being busy.
Generated step-time series that must and must not flag, through the store path; the estimator comparison,
the tier and the configurable metric name."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.errors import ConfigFileError, InputError
from gpufleet.telemetry.analyze import GpuStats, MetricStats, Window
from gpufleet.telemetry.analyze_workloads import ServingStats
from gpufleet.telemetry.api import analyze_fleet, ingest_telemetry
from gpufleet.telemetry.findings import Thresholds, classify, expected_step_time
from gpufleet.telemetry.readers.common import exporter_names, known_metric, metric_aliases
from gpufleet.telemetry.workloads import TrainingJob, WorkloadId, load_workload_rules

H100_MIB = 81559.0
T0_S = 1_780_000_000
STEP_S = 120
N = 48 * 3600 // STEP_S  # 48 h at 2 min


def _fleet_text(step_s: np.ndarray, *, name: str = "train_step_duration_seconds") -> str:
    """One busy training GPU (92 % SM, 70 % memory) of pod train-x7k2p for 48 h, and its step-time gauge."""
    rng = np.random.default_rng(11)
    lab = (
        'gpu="0",UUID="GPU-t0",modelName="NVIDIA H100 80GB HBM3",Hostname="n1",namespace="ml",'
        'pod="train-x7k2p"'
    )
    ts = T0_S + STEP_S * np.arange(N)
    sm = np.clip(0.92 + rng.normal(0, 0.01, N), 0, 1)
    used = 0.7 * H100_MIB
    lines = [f"DCGM_FI_PROF_SM_ACTIVE{{{lab}}} {v:.4f} {t}" for v, t in zip(sm, ts, strict=True)]
    lines += [f"DCGM_FI_DEV_FB_USED{{{lab}}} {used:.0f} {t}" for t in ts]
    lines += [f"DCGM_FI_DEV_FB_FREE{{{lab}}} {H100_MIB - used:.0f} {t}" for t in ts]
    svc = 'namespace="ml",pod="train-x7k2p",rank="0"'
    lines += [f"{name}{{{svc}}} {v:.4f} {t}" for v, t in zip(step_s, ts, strict=True)]
    return "\n".join([*lines, "# EOF", ""])


def _steady() -> np.ndarray:
    return 1.0 + np.random.default_rng(2).normal(0, 0.02, N)


def _judge(
    tmp_path: Path, step_s: np.ndarray
) -> tuple[str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """(finding, reason codes, evidence, caveats) of the workload ml/train."""
    (tmp_path / "f.om").write_text(_fleet_text(step_s), encoding="utf-8")
    ingest_telemetry([tmp_path / "f.om"], store=tmp_path / "s")
    ff = analyze_fleet(tmp_path / "s", end=datetime.fromtimestamp(T0_S + N * STEP_S, tz=UTC))
    (w,) = ff.workloads
    (g,) = ff.gpus
    assert w.key == "ml/train" and g.finding == w.finding and g.reason_codes == w.reason_codes
    return w.finding, w.reason_codes, w.evidence, w.replica.caveats


def test_steady_busy_training_job_is_optimized(tmp_path: Path) -> None:
    finding, reasons, ev, _ = _judge(tmp_path, _steady())
    assert finding == "Optimized" and reasons == ()
    assert any(e.startswith("step time (slowest rank per minute) p50 0.999 s, p95 1.03 s") for e in ev), ev
    assert any(e.startswith("step time median 0.999 s in the first quarter of its 48.0 h") for e in ev), ev
    assert not any("no serving-engine metrics" in e for e in ev)  # a training job is not judged as serving


@pytest.mark.parametrize(("growth", "flags"), [(0.5, True), (0.1, False)])
def test_step_time_slowing_over_the_run(tmp_path: Path, growth: float, flags: bool) -> None:
    """+50 % over the run (last quarter's median ~+38 % over the first's) flags; +10 % does not."""
    step = np.linspace(1.0, 1.0 + growth, N) + np.random.default_rng(4).normal(0, 0.01, N)
    finding, reasons, ev, _ = _judge(tmp_path, step)
    trend = next(e for e in ev if e.startswith("step time median"))
    if flags:
        assert finding == "Underprovisioned" and reasons == ("TrainingStepTimeDegrading",), trend
        assert "(+3" in trend  # first quarter ~1.06 s, last ~1.44 s
    else:
        assert finding == "Optimized" and reasons == (), trend


@pytest.mark.parametrize(("every", "flags"), [(8, True), (50, False)])
def test_step_time_stalls(tmp_path: Path, every: int, flags: bool) -> None:
    """A 3 s step every 8th minute-step (12.5 % of them, above the 5 % a p95 ignores) is a stall; one in 50
    (2 %) is not seen at p95."""
    step = _steady()
    step[::every] = 3.0
    finding, reasons, ev, caveats = _judge(tmp_path, step)
    if flags:
        assert finding == "Underprovisioned" and reasons == ("TrainingStepTimeStalls",), ev
        assert any("stalls, stragglers or data-loader waits" in e for e in ev)
        assert any("check the data loader" in c for c in caveats)
    else:
        assert finding == "Optimized" and reasons == (), ev


def _busy_gpu(hours: float = 48.0) -> GpuStats:
    def ms(v: float) -> MetricStats:
        return MetricStats(samples=100, mean=v, p50=v, p_hi=v, p99=v, max=v)

    t = datetime.fromtimestamp(T0_S, tz=UTC)
    return GpuStats(
        gpu_key="w",
        host="n1",
        gpu_index=0,
        gpu_uuid=None,
        model="NVIDIA H100 80GB HBM3",
        mig_profile=None,
        provider=None,
        instance_type=None,
        region=None,
        pod="train-x7k2p",
        namespace="ml",
        job=None,
        first_ts=t,
        last_ts=t,
        hours=hours,
        metrics={
            "sm_active_ratio": ms(0.93),
            "fb_used_mib": ms(0.7 * H100_MIB),
            "fb_free_mib": ms(0.3 * H100_MIB),
        },
    )


JOB = TrainingJob(model="llama-3.1-8b", gpus=8, global_batch=64, seq_len=4096)
WINDOW = Window(
    start=datetime(2026, 1, 1, tzinfo=UTC), end=datetime(2026, 1, 15, tzinfo=UTC), percentile=0.95
)


def _wid(job: TrainingJob | None) -> WorkloadId:
    return WorkloadId(
        key="ml/train", namespace="ml", name="train", team=None, tier=None, source="inventory", training=job
    )


def _steps(
    p50: float, *, first: float | None = None, last: float | None = None, span_h: float = 48.0
) -> ServingStats:
    return ServingStats(
        step_time_p50_s=p50,
        step_time_p_s=p50 * 1.05,
        step_time_first_s=p50 if first is None else first,
        step_time_last_s=p50 if last is None else last,
        step_time_span_h=span_h,
    )


def test_step_time_against_the_estimators_expected_step() -> None:
    """llama-3.1-8b, 8 x H100-SXM, 64 x 4096 tokens: the estimator's p10-p90 interval; a p50 above its p90
    flags, one inside does not."""
    est = expected_step_time(JOB, "H100-SXM")
    assert not isinstance(est, str) and est.p10 < est.central < est.p90
    slow = classify(_busy_gpu(), Thresholds(), WINDOW, serving=_steps(1.5 * est.p90), workload=_wid(JOB))
    assert slow.finding == "Underprovisioned" and slow.reason_codes == ("TrainingStepTimeAboveEstimate",)
    line = next(e for e in slow.evidence if e.startswith("expected step time on 8 x H100-SXM"))
    assert f"{est.central:.3g} s" in line and "llama-3.1-8b" in line
    ok = classify(_busy_gpu(), Thresholds(), WINDOW, serving=_steps(est.central), workload=_wid(JOB))
    assert ok.finding == "Optimized" and ok.reason_codes == ()
    # without the job's description: judged on its own baseline only, and the evidence says how to add it
    alone = classify(_busy_gpu(), Thresholds(), WINDOW, serving=_steps(1.5 * est.p90), workload=_wid(None))
    assert alone.finding == "Optimized"
    assert any("name the workload's training" in e for e in alone.evidence)
    # a model the estimator does not know: a caveat, not a crash and not a finding
    bad = classify(
        _busy_gpu(),
        Thresholds(),
        WINDOW,
        serving=_steps(9.0),
        workload=_wid(TrainingJob(model="no-such-model", gpus=8, global_batch=64, seq_len=4096)),
    )
    assert bad.finding == "Optimized" and any(
        c.startswith("no expected step time for no-such-model") for c in bad.caveats
    )


def test_short_trend_is_not_judged_and_training_is_batch_tier() -> None:
    g = classify(_busy_gpu(), Thresholds(), WINDOW, serving=_steps(1.0, first=1.0, last=2.0, span_h=1.0))
    assert g.finding == "Optimized"
    assert any(e.startswith("step-time trend not judged: 1.0 h of step time, 2 h needed") for e in g.evidence)
    assert g.tier == "batch"  # auto tier: a training job is batch, not production (serving)
    served = classify(_busy_gpu(), Thresholds(), WINDOW, serving=ServingStats(queue_p=0.0, queue_max=0.0))
    assert served.tier == "production"


def test_inventory_training_entry(tmp_path: Path) -> None:
    p = tmp_path / "inv.yaml"
    p.write_text(
        "workloads:\n  - pod: 'train-*'\n    workload: train\n    training: {model: llama-3.1-8b, gpus: 8, "
        "global_batch: 64, seq_len: 4096}\n",
        encoding="utf-8",
    )
    (rule,) = load_workload_rules(p)
    assert rule.training == JOB
    p.write_text(
        "workloads:\n  - pod: 'train-*'\n    workload: train\n    training: {model: x, gpus: 0, "
        "global_batch: 1, seq_len: 1}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigFileError, match=r"training\.gpus"):
        load_workload_rules(p)


def test_step_time_metric_name_is_configurable(tmp_path: Path) -> None:
    text = _fleet_text(_steady(), name="myjob_iter_seconds")
    (tmp_path / "f.om").write_text(text, encoding="utf-8")
    r = CliRunner().invoke(
        app,
        ["telemetry", "ingest", str(tmp_path / "f.om"), "--store", str(tmp_path / "a"), "--format", "json"],
    )
    assert r.exit_code == 0, r.output
    assert any(
        p["kind"] == "unknown_metric" and "myjob_iter_seconds" in p["example"]
        for p in json.loads(r.output)["report"]["problems"]
    )
    r = CliRunner().invoke(
        app,
        [
            "telemetry",
            "ingest",
            str(tmp_path / "f.om"),
            "--store",
            str(tmp_path / "b"),
            "--step-time-metric",
            "myjob_iter_seconds",
        ],
    )
    assert r.exit_code == 0, r.output
    ff = analyze_fleet(tmp_path / "b", end=datetime.fromtimestamp(T0_S + N * STEP_S, tz=UTC))
    assert any(e.startswith("step time (slowest rank") for e in ff.workloads[0].evidence)
    # the Prometheus path queries the name too; a bad name or one already read as another metric is refused
    with metric_aliases(step_time=["myjob_iter_seconds"]):
        assert "myjob_iter_seconds" in exporter_names("step_time_s")
        assert known_metric("MYJOB_ITER_SECONDS") == ("step_time_s", 1.0)
    assert known_metric("myjob_iter_seconds") is None
    for bad in ("1bad name", "DCGM_FI_DEV_GPU_UTIL"):
        with pytest.raises(InputError, match="--step-time-metric"), metric_aliases(step_time=[bad]):
            pass
    r = CliRunner().invoke(
        app, ["telemetry", "findings", "--store", str(tmp_path / "b"), "--step-time-metric", "x_seconds"]
    )
    assert r.exit_code == 2 and "--step-time-metric" in r.output
