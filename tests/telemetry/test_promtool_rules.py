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


def _quiet(
    name: str, pod: str, bounds: tuple[str, ...], slow_from: str, every_min: int = 5
) -> list[dict[str, str]]:
    """A quiet pod: one request every ``every_min`` minutes, each in the bucket ``slow_from`` and above (so
    its p95 is far over the threshold), 0.0033 req/s: under the 0.1 req/s traffic floor."""
    counts = " ".join(str(i // every_min) for i in range(21))
    out = []
    slow = False
    for le in bounds:
        slow = slow or le == slow_from
        out.append({"series": f'{name}{{{NS},pod="{pod}",le="{le}"}}', "values": counts if slow else "0x20"})
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
        )
        # review: one slow request every 5 minutes paged (p95 of one request = that request); now under the
        # 0.1 req/s floor it does not
        + _quiet("vllm:time_to_first_token_seconds_bucket", "quiet", ("0.5", "1.0", "2.5", "+Inf"), "2.5"),
        "15m",
        [{"namespace": "serving", "pod": "slow"}],
    ),
    "serving_tpot": (
        _hist("tgi_request_mean_time_per_token_duration_bucket", "tgi-slow", {"0.1": 0, "0.5": 10, "+Inf": 0})
        + _hist("vllm:inter_token_latency_seconds_bucket", "fast", {"0.1": 10, "0.5": 0, "+Inf": 0})
        # a quiet vLLM pod: 200 slow tokens a minute (a TPOT histogram counts tokens) but one request every 5
        # minutes (its TTFT count): the floor counts requests, so it does not fire
        + _hist("vllm:inter_token_latency_seconds_bucket", "quiet", {"0.1": 0, "0.5": 200, "+Inf": 0})
        + _quiet("vllm:time_to_first_token_seconds_bucket", "quiet", ("0.5", "+Inf"), "0.5"),
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
        floor = f" at >= {r.min_requests_per_s:g} requests/s per pod" if r.min_requests_per_s else ""
        ann = {"summary": f"{r.metric} {r.op} {r.threshold:g} for {r.for_text}{floor}", "action": r.action}
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


def test_store_evaluation_keeps_the_traffic_floor(tmp_path: Path) -> None:
    """Review: over the store, a quiet pod (one request every 5 minutes, each 2 s to its first token) paged
    ``inference_latency`` for its whole life: the p95 of one request is that request. Under the 0.1 req/s
    floor (30 requests per 5-minute window) it does not; a pod at 10 req/min with the same latency does."""
    import dataclasses

    b = SampleBatch()
    t0 = 1_780_000_200_000_000
    minute = 60_000_000
    for pod, per_min in (("quiet", 0.2), ("busy", 10.0)):
        lab = {"host": f"svc:serving/{pod}", "namespace": "serving", "pod": pod, "source": "t"}
        for i in range(60):
            ts = t0 + i * minute
            n = float(int(i * per_min))  # cumulative requests, all in the (1, 2.5] s bucket
            for le, v in (("0.5", 0.0), ("1.0", 0.0), ("2.5", n), ("+Inf", n)):
                b.add(labels={**lab, "le": le}, gpu_index=-1, ts_us=ts, metric="ttft_s_bucket", value=v)
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=t0 + 86_400_000_000)
    w = resolve_window(s, 14, None, 0.95)
    rule = {r.name: r for r in load_rules()}["inference_latency"]
    assert rule.min_requests_per_s == pytest.approx(0.1)
    assert {e.subject for e in evaluate(s, w, [rule])} == {"svc:serving/busy"}
    # without the floor (the rule before this review) the quiet pod pages too
    bare = dataclasses.replace(rule, min_requests_per_s=None)
    assert {e.subject for e in evaluate(s, w, [bare])} == {"svc:serving/busy", "svc:serving/quiet"}


def test_a_traffic_floor_only_on_latency_percentiles(tmp_path: Path) -> None:
    from gpufleet.errors import ConfigFileError

    f = tmp_path / "rules.yaml"
    f.write_text(
        "rules:\n  - {name: q, metric: queue_requests, op: '>', threshold: 0, for: 5m,"
        " min_requests_per_s: 1}\n"
    )
    with pytest.raises(ConfigFileError, match="min_requests_per_s applies to request-latency percentiles"):
        load_rules(f)
    f.write_text("rules:\n  - {name: t, metric: ttft_p95_s, op: '>', threshold: 1, min_requests_per_s: 0}\n")
    with pytest.raises(ConfigFileError, match="min_requests_per_s"):
        load_rules(f)
    # with the user's own expression the floor would not be exported: refused, not silently dropped
    f.write_text(
        "rules:\n  - {name: t, metric: ttft_p95_s, op: '>', threshold: 1, min_requests_per_s: 0.1,"
        " promql: 'my_ttft_p95'}\n"
    )
    with pytest.raises(ConfigFileError, match="put the traffic guard in it"):
        load_rules(f)


def test_store_tpot_floor_counts_requests_not_tokens(tmp_path: Path) -> None:
    """Over the store the TPOT rule counts requests from the pod's TTFT histogram (a vLLM TPOT histogram
    observes every token: 200 slow tokens a minute are one request every 5 minutes here), and a pod with no
    TTFT histogram (TGI) from its own per-request TPOT histogram (10 requests a minute: judged)."""
    b = SampleBatch()
    t0 = 1_780_000_200_000_000
    minute = 60_000_000
    for i in range(60):
        ts = t0 + i * minute
        quiet = {"host": "svc:serving/quiet", "namespace": "serving", "pod": "quiet", "source": "t"}
        for le, v in (("0.1", 0.0), ("0.5", 200.0 * i), ("+Inf", 200.0 * i)):  # tokens, all slow
            b.add(labels={**quiet, "le": le}, gpu_index=-1, ts_us=ts, metric="tpot_s_bucket", value=v)
        n = float(i // 5)  # one request every 5 minutes
        for le, v in (("0.5", n), ("+Inf", n)):
            b.add(labels={**quiet, "le": le}, gpu_index=-1, ts_us=ts, metric="ttft_s_bucket", value=v)
        tgi = {"host": "svc:serving/tgi", "namespace": "serving", "pod": "tgi", "source": "t"}
        for le, v in (("0.1", 0.0), ("0.5", 10.0 * i), ("+Inf", 10.0 * i)):  # requests, all slow
            b.add(labels={**tgi, "le": le}, gpu_index=-1, ts_us=ts, metric="tpot_s_bucket", value=v)
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=t0 + 86_400_000_000)
    w = resolve_window(s, 14, None, 0.95)
    rule = {r.name: r for r in load_rules()}["serving_tpot"]
    assert {e.subject for e in evaluate(s, w, [rule])} == {"svc:serving/tgi"}


def test_an_event_peak_carries_its_unit(tmp_path: Path) -> None:
    """The alerts table printed "peak 2.42" for a TTFT event: 2.42 of what? Each event carries the unit of
    its rule's metric and the row shows it ("2.42 s")."""
    from gpufleet.report.telemetry import alert_rows
    from gpufleet.telemetry.alerts import metric_unit

    b = SampleBatch()
    t0 = 1_780_000_200_000_000
    lab = {"host": "svc:serving/busy", "namespace": "serving", "pod": "busy", "source": "t"}
    for i in range(60):
        n = float(10 * i)
        for le, v in (("1.0", 0.0), ("2.5", n), ("+Inf", n)):
            b.add(labels={**lab, "le": le}, gpu_index=-1, ts_us=t0 + i * 60_000_000, metric="ttft_s_bucket",
                  value=v)  # fmt: skip
    s = TelemetryStore(tmp_path)
    s.append(b, ProblemCounter(), sources=["t"], rows_read=len(b), now_us=t0 + 86_400_000_000)
    w = resolve_window(s, 14, None, 0.95)
    (e,) = evaluate(s, w, [{r.name: r for r in load_rules()}["inference_latency"]])
    assert e.unit == "s"
    assert alert_rows([e])[0][5] == f"{e.peak:.3g} s"
    units = {r.name: metric_unit(r.metric) for r in load_rules()}
    assert units == {
        "high_gpu_utilization": "%", "high_memory_usage": "%", "inference_latency": "s",
        "serving_tpot": "s/token", "serving_queue": "requests", "serving_kv_cache": "fraction",
        "serving_preemptions": "preemptions/5 min", "cost_overrun": "USD/day",
    }  # fmt: skip
