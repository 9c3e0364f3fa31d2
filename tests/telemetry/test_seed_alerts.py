"""The assessment seed's alert thresholds file (``alerts:`` names -> threshold sentence and action) is read as
alert rules: the same rules as the shipped defaults, which are that seed's thresholds, with its own actions.
It was refused as an unknown top-level key."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.errors import ConfigFileError
from gpufleet.telemetry.alerts import load_rules, prometheus_rules

#: from the assessment seed (shared/seeds/001_*.txt, "2. Alert Thresholds"); its blank lines hold two spaces
SEED_ALERTS = """alerts:
  high_gpu_utilization:
    threshold: "> 90% for 10 minutes"
    action: "Scale up instances"
{blank}
  high_memory_usage:
    threshold: "> 85% for 5 minutes"
    action: "Reduce batch size or scale up"
{blank}
  inference_latency:
    threshold: "> 1000ms p95"
    action: "Check model optimization"
{blank}
  cost_overrun:
    threshold: "> $1000/day"
    action: "Review and optimize usage"
""".format(blank="  ")


def _write(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "alerts.yaml"
    f.write_text(text)
    return f


def test_the_seed_file_reads_as_the_default_rules_with_its_actions(tmp_path: Path) -> None:
    seed = {r.name: r for r in load_rules(_write(tmp_path, SEED_ALERTS))}
    defaults = {r.name: r for r in load_rules()}
    assert list(seed) == ["high_gpu_utilization", "high_memory_usage", "inference_latency", "cost_overrun"]
    for name, r in seed.items():
        d = defaults[name]
        assert (r.metric, r.op, r.threshold, r.for_s, r.min_requests_per_s) == (
            d.metric, d.op, d.threshold, d.for_s, d.min_requests_per_s,
        ), name  # fmt: skip
    assert seed["inference_latency"].threshold == 1.0  # 1000 ms in the metric's seconds
    assert seed["high_gpu_utilization"].for_s == 600.0  # "for 10 minutes"
    assert seed["high_gpu_utilization"].action == "Scale up instances"
    assert "for: 10m" in prometheus_rules(tuple(seed.values()))


def test_the_cli_evaluates_and_exports_the_seed_file(tmp_path: Path) -> None:
    r = CliRunner().invoke(app, ["telemetry", "alerts", "--rules", str(_write(tmp_path, SEED_ALERTS)),
                                 "--export", "prometheus"])  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "high_gpu_utilization" in r.output and "Scale up instances" in r.output


def test_a_threshold_in_the_sentence_overrides_and_converts(tmp_path: Path) -> None:
    text = 'alerts:\n  inference_latency: {threshold: ">= 1.5 s p95 for 2 minutes"}\n'
    (r,) = load_rules(_write(tmp_path, text))
    assert (r.op, r.threshold, r.for_s) == (">=", 1.5, 120.0)
    text = 'alerts:\n  cost_overrun: {threshold: "> $2,500/day"}\n'
    (r,) = load_rules(_write(tmp_path, text))
    assert (r.metric, r.threshold) == ("cost_usd_per_day", 2500.0)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ('  gpu_hot: {threshold: "> 90%"}', "knows the names"),
        ('  high_gpu_utilization: {threshold: "> 90ms"}', "percentage"),
        ('  inference_latency: {threshold: "> 90%"}', "milliseconds or seconds"),
        ('  cost_overrun: {threshold: "> 1000"}', "dollars per day"),
        ('  high_gpu_utilization: {threshold: "above ninety"}', "not of the seed's form"),
        ('  high_gpu_utilization: {threshold: "> 90% for ever"}', "not of the seed's form"),
        ("  high_gpu_utilization: {threshold: 90}", "not of the seed's form"),
        ('  high_gpu_utilization: {threshold: "> 90%", owner: me}', "must hold 'threshold:'"),
        ("  high_gpu_utilization: 90", "must hold 'threshold:'"),
        ('  high_gpu_utilization: {threshold: "> 90% for 99999999 days"}', "longer than the longest window"),
    ],
)
def test_bad_seed_alerts_are_refused(tmp_path: Path, body: str, match: str) -> None:
    with pytest.raises(ConfigFileError, match=match):
        load_rules(_write(tmp_path, f"alerts:\n{body}\n"))


def test_an_empty_alerts_mapping_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="must map alert names"):
        load_rules(_write(tmp_path, "alerts: {}\n"))
