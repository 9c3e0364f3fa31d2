"""Issue 23, item 4: every exported default alert rule reads metrics a standard stack emits (dcgm-exporter,
vLLM, TGI, SGLang) and is unit-tested with ``promtool test rules``: series that must fire and series that must
not. Before, the latency rule read ``gpufleet_request_latency_seconds``, which no exporter emits."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from gpufleet.telemetry.alerts import AlertRule, evaluate, load_rules, prometheus_rules
from gpufleet.telemetry.analyze import resolve_window
from gpufleet.telemetry.schema import ProblemCounter, SampleBatch
from gpufleet.telemetry.store import TelemetryStore

PRICE = 6.88  # USD per GPU-hour (aws p5.48xlarge / 8)
NS = 'namespace="serving"'


def _hist(name: str, pod: str, per_min: dict[str, int]) -> list[dict[str, str]]:
    """Cumulative histogram bucket counters growing by ``per_min`` (non-cumulative per bucket) a minute."""
    out, cum = [], 0
    for le, n in per_min.items():
        cum += n
        out.append({"series": f'{name}{{{NS},pod="{pod}",le="{le}"}}', "values": f"0+{cum}x20"})
    return out


#: rule -> (input series, eval time, the label sets that must fire; every other series must not)
CASES: dict[str, tuple[list[dict[str, str]], str, list[dict[str, str]]]] = {
    "high_gpu_utilization": (
        [
            {"series": 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="hot"}', "values": "95x20"},
            {"series": 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="cool"}', "values": "50x20"},
            {"series": 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="blip"}', "values": "50x8 95x6 50x6"},
        ],
        "15m",
        [{"gpu": "0", "Hostname": "hot"}],
    ),
    "high_memory_usage": (
        [
            {"series": 'DCGM_FI_DEV_FB_USED{gpu="0",Hostname="full"}', "values": "70000x20"},
            {"series": 'DCGM_FI_DEV_FB_FREE{gpu="0",Hostname="full"}', "values": "11000x20"},
            {"series": 'DCGM_FI_DEV_FB_RESERVED{gpu="0",Hostname="full"}', "values": "500x20"},
            # no FB_RESERVED exported: capacity = used + free
            {"series": 'DCGM_FI_DEV_FB_USED{gpu="1",Hostname="full"}', "values": "70000x20"},
            {"series": 'DCGM_FI_DEV_FB_FREE{gpu="1",Hostname="full"}', "values": "11500x20"},
            {"series": 'DCGM_FI_DEV_FB_USED{gpu="0",Hostname="ok"}', "values": "40000x20"},
            {"series": 'DCGM_FI_DEV_FB_FREE{gpu="0",Hostname="ok"}', "values": "41000x20"},
            {"series": 'DCGM_FI_DEV_FB_RESERVED{gpu="0",Hostname="ok"}', "values": "500x20"},
        ],
        "15m",
        [{"gpu": "0", "Hostname": "full"}, {"gpu": "1", "Hostname": "full"}],
    ),
    "inference_latency": (
        _hist("vllm:time_to_first_token_seconds_bucket", "slow", {"0.5": 0, "1.0": 0, "2.5": 10, "+Inf": 0})
        + _hist(
            "sglang:time_to_first_token_seconds_bucket", "fast", {"0.5": 10, "1.0": 0, "2.5": 0, "+Inf": 0}
        ),
        "15m",
        [{"namespace": "serving", "pod": "slow"}],
    ),
    "serving_tpot": (
        _hist("tgi_request_mean_time_per_token_duration_bucket", "tgi-slow", {"0.1": 0, "0.5": 10, "+Inf": 0})
        + _hist("vllm:inter_token_latency_seconds_bucket", "fast", {"0.1": 10, "0.5": 0, "+Inf": 0}),
        "15m",
        [{"namespace": "serving", "pod": "tgi-slow"}],
    ),
    "serving_queue": (
        [
            {"series": f'vllm:num_requests_waiting{{{NS},pod="busy"}}', "values": "3x20"},
            {"series": f'tgi_queue_size{{{NS},pod="tgi-busy"}}', "values": "2x20"},
            {"series": f'vllm:num_requests_waiting{{{NS},pod="ok"}}', "values": "0x20"},
            {"series": f'sglang:num_queue_reqs{{{NS},pod="burst"}}', "values": "0x8 4x3 0x9"},
        ],
        "15m",
        [{"namespace": "serving", "pod": "busy"}, {"namespace": "serving", "pod": "tgi-busy"}],
    ),
    "serving_kv_cache": (
        [
            {"series": f'vllm:gpu_cache_usage_perc{{{NS},pod="full"}}', "values": "0.97x20"},
            {"series": f'sglang:token_usage{{{NS},pod="ok"}}', "values": "0.5x20"},
        ],
        "15m",
        [{"namespace": "serving", "pod": "full"}],
    ),
    "serving_preemptions": (
        [
            {"series": f'vllm:num_preemptions_total{{{NS},pod="pre"}}', "values": "0+1x20"},
            {"series": f'vllm:num_preemptions_total{{{NS},pod="ok"}}', "values": "5x20"},
        ],
        "15m",
        [{"namespace": "serving", "pod": "pre"}],
    ),
    "cost_overrun": (  # 7 GPUs x $6.88 x 24 h = $1,156 a day > $1,000
        [
            {"series": f'DCGM_FI_DEV_GPU_UTIL{{gpu="{i}",Hostname="n"}}', "values": "50x1500"}
            for i in range(7)
        ],
        "1500m",
        [{}],
    ),
}


def _unit_tests(rules_file: str) -> dict[str, Any]:
    by_name = {r.name: r for r in load_rules()}
    tests = []
    for name, (series, at, fire) in CASES.items():
        r = by_name[name]
        ann = {"summary": f"{r.metric} {r.op} {r.threshold:g} for {r.for_text}", "action": r.action}
        tests.append(
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    {
                        "eval_time": at,
                        "alertname": name,
                        "exp_alerts": [
                            {"exp_labels": {**lab, "severity": r.severity}, "exp_annotations": ann}
                            for lab in fire
                        ],
                    }
                ],
            }
        )
    # the cost rule must not fire on 6 GPUs ($991 a day)
    tests.append(
        {
            "interval": "1m",
            "input_series": CASES["cost_overrun"][0][:6],
            "alert_rule_test": [{"eval_time": "1500m", "alertname": "cost_overrun", "exp_alerts": []}],
        }
    )
    return {"rule_files": [rules_file], "evaluation_interval": "1m", "tests": tests}


def test_every_default_rule_has_a_case() -> None:
    assert {r.name for r in load_rules()} == set(CASES)
    text = prometheus_rules(load_rules(), price_usd_per_gpu_hour=PRICE)
    assert "gpufleet_request_latency_seconds" not in text
    assert "vllm:time_to_first_token_seconds_bucket" in text and "tgi_queue_size" in text


def test_promtool_unit_tests_fire_and_do_not_fire(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (tools/system-deps.sh installs Debian's prometheus package)")
    (tmp_path / "rules.yml").write_text(
        prometheus_rules(load_rules(), price_usd_per_gpu_hour=PRICE), encoding="utf-8"
    )
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(_unit_tests("rules.yml"), sort_keys=False), "utf-8")
    out = subprocess.run(
        [promtool, "test", "rules", "tests.yml"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout + out.stderr


def test_store_evaluation_of_the_serving_rules(tmp_path: Path) -> None:
    """The same serving rules evaluated over the store (no Prometheus): TTFT p95 from the histogram per
    5-minute window, the queue per pod, preemptions per window."""
    b = SampleBatch()
    t0 = 1_780_000_200_000_000
    minute = 60_000_000
    for pod, slow in (("slow", True), ("fast", False)):
        lab = {"host": f"svc:serving/{pod}", "namespace": "serving", "pod": pod, "source": "t"}
        for i in range(30):
            ts = t0 + i * minute
            per = (
                {"0.5": 0, "1.0": 0, "2.5": 10, "+Inf": 0}
                if slow
                else {"0.5": 10, "1.0": 0, "2.5": 0, "+Inf": 0}
            )
            cum = 0
            for le, n in per.items():
                cum += n
                b.add(labels={**lab, "le": le}, gpu_index=-1, ts_us=ts, metric="ttft_s_bucket", value=cum * i)
            b.add(labels=lab, gpu_index=-1, ts_us=ts, metric="queue_requests", value=3.0 if slow else 0.0)
            b.add(
                labels=lab, gpu_index=-1, ts_us=ts, metric="preemptions_total", value=float(i if slow else 5)
            )
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=t0 + 86_400_000_000)
    w = resolve_window(s, 14, None, 0.95)
    rules = {r.name: r for r in load_rules()}
    for name in ("inference_latency", "serving_queue", "serving_preemptions"):
        events = evaluate(s, w, [rules[name]])
        assert {e.subject for e in events} == {"svc:serving/slow"}, (name, events)
    (ttft,) = evaluate(s, w, [rules["inference_latency"]])
    assert ttft.peak == pytest.approx(1.0 + 1.5 * 0.95, rel=1e-6)  # histogram_quantile in (1, 2.5]
    assert (
        isinstance(rules["inference_latency"], AlertRule)
        and rules["inference_latency"].metric == "ttft_p95_s"
    )
