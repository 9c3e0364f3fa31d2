"""`gpufleet telemetry ...` end to end: ingest raw files, findings in every format, alerts, exit code 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.telemetry.synth import gpu_util_from_sm

runner = CliRunner()


def _exposition(path: Path) -> None:
    """Two days of 5-minute scrapes of two GPUs: one idle, one busy, with node instance-type labels."""
    lines = []
    t0 = 1_780_000_200
    for k in range(576):
        ts_ms = (t0 + 300 * k) * 1000
        for gpu, sm in ((0, 0.01), (1, 0.7)):
            lab = (
                f'gpu="{gpu}",UUID="GPU-{gpu}",Hostname="node-a",modelName="NVIDIA H100 80GB HBM3",'
                f'namespace="team-a",pod="job-{gpu}",node_kubernetes_io_instance_type="p5.48xlarge",'
                'provider="aws",region="us-east-1"'
            )
            lines.append(f"DCGM_FI_PROF_SM_ACTIVE{{{lab}}} {sm} {ts_ms}")
            lines.append(
                f"DCGM_FI_DEV_GPU_UTIL{{{lab}}} {float(gpu_util_from_sm(np.array([sm]))[0]):.0f} {ts_ms}"
            )
            lines.append(f"DCGM_FI_DEV_FB_USED{{{lab}}} {1000 if gpu == 0 else 60000} {ts_ms}")
            lines.append(f"DCGM_FI_DEV_FB_FREE{{{lab}}} {80559 if gpu == 0 else 21559} {ts_ms}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_ingest_findings_alerts(tmp_path: Path) -> None:
    store = tmp_path / "store"
    f = tmp_path / "scrape.prom"
    _exposition(f)
    r = runner.invoke(app, ["telemetry", "ingest", str(f), "--store", str(store), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["kind"] == "telemetry_ingest" and doc["report"]["rows_stored"] == 576 * 8
    r = runner.invoke(app, ["telemetry", "findings", "--store", str(store), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["kind"] == "telemetry_findings" and "gpufleet_version" in doc
    found = {g["gpu_key"]: g["finding"] for g in doc["findings"]["gpus"]}
    assert found == {"GPU-0": "Idle", "GPU-1": "Optimized"}
    r = runner.invoke(app, ["telemetry", "report", "--store", str(store), "--format", "csv"])
    assert r.exit_code == 0 and r.output.startswith("instanceArn,instanceName,currentInstanceType,finding")
    out = tmp_path / "r.html"
    r = runner.invoke(app, ["telemetry", "report", "--store", str(store), "--format", "html", "-o", str(out)])
    html = out.read_text(encoding="utf-8")
    assert r.exit_code == 0 and html.count("<svg") == 4 and "heatmap" in html and "waterfall" in html
    r = runner.invoke(app, ["telemetry", "report", "--store", str(store), "--format", "markdown"])
    assert r.exit_code == 0 and "## GPU findings" in r.output
    r = runner.invoke(app, ["telemetry", "report", "--store", str(store)])
    assert r.exit_code == 0 and "Idle" in r.output
    r = runner.invoke(app, ["telemetry", "alerts", "--store", str(store), "--format", "json"])
    assert r.exit_code == 0, r.output
    events = json.loads(r.output)["events"]
    # GPU-1 shows GPU_UTIL 100 % (SM_ACTIVE 0.7) all along; 2 p5 GPUs cost ~$330/day, under the $1,000 rule
    assert {(e["rule"], e["subject"]) for e in events} == {("high_gpu_utilization", "GPU-1")}
    r = runner.invoke(app, ["telemetry", "alerts", "--store", str(store), "--export", "prometheus"])
    assert r.exit_code == 0 and "alert: high_gpu_utilization" in r.output and "6.8800" in r.output


def test_user_errors_exit_2(tmp_path: Path) -> None:
    smi = tmp_path / "n.csv"
    smi.write_text(
        "timestamp, index, utilization.gpu [%]\n2026/07/14 08:12:38.696, 0, 5 %\n", encoding="utf-8"
    )
    cases = [
        ["telemetry", "ingest", str(smi), "--store", str(tmp_path / "s")],  # no --timezone
        ["telemetry", "ingest", "--store", str(tmp_path / "s")],  # nothing to ingest
        ["telemetry", "findings", "--store", str(tmp_path / "empty")],  # empty store
        ["telemetry", "findings", "--store", str(tmp_path / "empty"), "--percentile", "1.5"],
        ["telemetry", "ingest", "--prometheus", "ftp://x", "--start", "2026-01-01T00:00:00Z"],
        ["telemetry", "alerts", "--rules", str(tmp_path / "missing.yaml"), "--store", str(tmp_path / "s")],
    ]
    for args in cases:
        r = runner.invoke(app, args)
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output


def test_bad_only_input_is_not_a_silent_success(tmp_path: Path) -> None:
    f = tmp_path / "bad.prom"
    f.write_text(
        'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5 1780000000000\nnot a metric line at all {\n', encoding="utf-8"
    )
    r = runner.invoke(app, ["telemetry", "ingest", str(f), "--store", str(tmp_path / "s")])
    assert r.exit_code == 2 and "missing_labels" in r.output and "malformed_line" in r.output
