"""Alert rules: sustained-duration semantics in SQL, the seed's defaults, rule-file errors, Prometheus
export."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gpufleet.errors import ConfigFileError
from gpufleet.telemetry.alerts import AlertRule, evaluate, load_rules, prometheus_rules
from gpufleet.telemetry.analyze import resolve_window
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.telemetry.store import TelemetryStore

T0 = 1_780_000_200_000_000  # aligned to 5 minutes (latency p95 windows)
MIN = 60_000_000


def _store(tmp_path: Path) -> TelemetryStore:
    b = SampleBatch()
    gpu = {
        "host": "h",
        "gpu_uuid": "GPU-1",
        "source": "t",
        "provider": "aws",
        "instance_type": "p5.48xlarge",
        "region": "us-east-1",
    }
    util = [95.0] * 9 + [50.0] * 5 + [95.0] * 11 + [40.0] * 5  # 9 min (too short), then 11 min (fires)
    for i, v in enumerate(util):
        b.add(labels=gpu, gpu_index=0, ts_us=T0 + i * MIN, metric="gpu_util_pct", value=v)
        used = 70000.0 if 14 <= i < 21 else 20000.0  # 86 % of 81400 MiB for 7 minutes
        b.add(labels=gpu, gpu_index=0, ts_us=T0 + i * MIN, metric="fb_used_mib", value=used)
        b.add(labels=gpu, gpu_index=0, ts_us=T0 + i * MIN, metric="fb_free_mib", value=81400.0 - used)
    svc = {"host": "svc:ml/chat", "pod": "chat", "namespace": "ml", "source": "t"}
    for i in range(30):  # one request per 10 s; slow (1.5 s) for the first 15 minutes
        for k in range(6):
            b.add(
                labels=svc,
                gpu_index=-1,
                ts_us=T0 + i * MIN + k * 10_000_000,
                metric="request_latency_s",
                value=1.5 if i < 15 else 0.2,
            )
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=T0 + 3600 * 1_000_000 * 24)
    return s


def test_default_rules_are_the_seed_thresholds() -> None:
    rules = {r.name: r for r in load_rules()}
    assert (rules["high_gpu_utilization"].threshold, rules["high_gpu_utilization"].for_s) == (90, 600)
    assert (rules["high_memory_usage"].threshold, rules["high_memory_usage"].for_s) == (85, 300)
    assert (
        rules["inference_latency"].threshold == 1.0
        # the seed's p95 latency rule on a metric the serving engines emit (vLLM/SGLang TTFT histograms)
        and rules["inference_latency"].metric == "ttft_p95_s"
    )
    assert rules["cost_overrun"].threshold == 1000


def test_sustained_conditions(tmp_path: Path) -> None:
    s = _store(tmp_path)
    w = resolve_window(s, 14, None, 0.95)
    own_latency = AlertRule(  # a user's own latency gauge (request_latency_p95_s) still works
        name="inference_latency",
        metric="request_latency_p95_s",
        op=">",
        threshold=1.0,
        for_s=300,
        for_text="5m",
        severity="warning",
        action="",
        promql=None,
    )
    events = evaluate(s, w, [r for r in load_rules() if r.name != "inference_latency"] + [own_latency])
    by_rule: dict[str, list] = {}  # type: ignore[type-arg]
    for e in events:
        by_rule.setdefault(e.rule, []).append(e)
    (util,) = by_rule["high_gpu_utilization"]
    assert util.subject == "GPU-1" and util.duration_s == 11 * 60 and util.peak == 95
    (mem,) = by_rule["high_memory_usage"]
    assert mem.duration_s == 7 * 60 and mem.peak == pytest.approx(100 * 70000 / 81400)
    (lat,) = by_rule["inference_latency"]
    assert lat.subject == "svc:ml/chat" and lat.duration_s == 15 * 60
    assert "cost_overrun" not in by_rule  # 30 minutes of one p5 GPU cost a few dollars
    cheap = AlertRule(
        name="c",
        metric="cost_usd_per_day",
        op=">",
        threshold=1.0,
        for_s=0,
        for_text="0s",
        severity="info",
        action="",
        promql=None,
    )
    (cost,) = evaluate(s, w, [cheap])
    assert cost.peak == pytest.approx(55.04 / 8 * 0.5, rel=0.05)


def test_rule_file_errors(tmp_path: Path) -> None:
    p = tmp_path / "r.yaml"
    p.write_text("rules:\n  - name: x\n    metric: nope\n    threshold: 1\n", encoding="utf-8")
    with pytest.raises(ConfigFileError, match="unknown metric"):
        load_rules(p)
    p.write_text(
        "rules:\n  - name: x\n    metric: gpu_util_pct\n    threshold: 1\n    for: ten minutes\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigFileError, match="duration"):
        load_rules(p)
    p.write_text("rules: {}\n", encoding="utf-8")
    with pytest.raises(ConfigFileError, match="list under 'rules:'"):
        load_rules(p)


def test_prometheus_export_passes_promtool(tmp_path: Path) -> None:
    text = prometheus_rules(load_rules(), price_usd_per_gpu_hour=6.88)
    assert (
        "DCGM_FI_DEV_GPU_UTIL" in text
        and "for: 10m" in text
        and "count(DCGM_FI_DEV_GPU_UTIL) * 6.8800 * 24" in text
    )
    assert "Left out" in prometheus_rules(load_rules())  # no price: the cost rule is left out, and says so
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (tools/system-deps.sh installs Debian's prometheus package)")
    f = tmp_path / "rules.yml"
    f.write_text(text, encoding="utf-8")
    out = subprocess.run([promtool, "check", "rules", str(f)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "8 rules found" in out.stdout
