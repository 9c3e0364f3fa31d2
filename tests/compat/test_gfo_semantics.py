"""The GPU Fleet Optimizer guide's semantics, not only its syntax (issue 22 item 5): the prices of its
gpu_instances.json are the prices used, the analyzer answers within AWS by default, monthly_hours and use_spot
mean what the guide says, and every example returns an analysis whose figures match a hand computation from
the guide's files."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from gpu_migration_analyzer import AWSGPUMigrationAnalyzer, ModelSize, WorkloadType
from gpufleet.catalog.regions import region_location

from .test_gfo_guide import CONFIG, GUIDE, _run

P5 = json.loads((GUIDE / "gpu_instances.json").read_text())["gpu_instances"]["P5"]


@pytest.fixture
def gfo_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "config").mkdir()
    for name in CONFIG:
        shutil.copy(GUIDE / name, tmp_path / "config" / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _cells(report: str, label: str) -> list[str]:
    """The Now and After cells of the migration table row ``label``."""
    for line in report.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split("|")]
        if parts and parts[0].startswith(label):
            return parts[1:]
    raise AssertionError(f"no row {label!r} in:\n{report}")


def _usd(cell: str) -> float:
    return float(re.sub(r"[^0-9.]", "", cell.split("/")[0]))


def _after(report: str) -> tuple[str, str] | None:
    """(provider, region) of the After deployment, None when the verdict is to stay."""
    cell = _cells(report, "Deployment")[1]
    if cell.startswith("(stay)"):
        return None
    m = re.match(r"(\S+) .*\(([^()]+)\)$", cell)
    assert m, cell
    return m.group(1), m.group(2)


def _p5_inference(analyzer: AWSGPUMigrationAnalyzer) -> str:
    return analyzer.generate_migration_report(
        current_instance="P5",
        current_gpu_count=1,
        workload_type=WorkloadType.INFERENCE,
        model_size=ModelSize.SMALL,
    )


def test_the_files_p5_price_is_the_price_used(gfo_dir: Path, fast_estimator: None) -> None:
    # "1x P5" = p5.4xlarge: 1 of the family's 8 GPUs, at the file's $50/h per 8 GPUs, 720 h a month
    report = _p5_inference(AWSGPUMigrationAnalyzer())
    assert "price date unknown" not in report  # the file's prices are dated by the file (kept current)
    now = _cells(report, "Cost")[0]
    assert _usd(now) == pytest.approx(P5["on_demand_cost_per_hour"] / P5["gpus_per_instance"] * 720, abs=1)
    # the guide's "Update Pricing": edit the P5 price, and the analysis uses it
    doc = json.loads((gfo_dir / "config" / "gpu_instances.json").read_text())
    doc["gpu_instances"]["P5"]["on_demand_cost_per_hour"] = 45.0
    doc["gpu_instances"]["P5"]["spot_cost_per_hour"] = 15.0
    (gfo_dir / "config" / "gpu_instances.json").write_text(json.dumps(doc))
    edited = _cells(_p5_inference(AWSGPUMigrationAnalyzer()), "Cost")[0]
    assert _usd(edited) == pytest.approx(45.0 / 8 * 720, abs=1)


def test_answers_within_aws_by_default(gfo_dir: Path, fast_estimator: None) -> None:
    analyzer = AWSGPUMigrationAnalyzer()
    for wid in (
        "inference_small_p5",
        "batch_inference_g5",
        "production_serving_g4dn",
        "fine_tuning_medium_p5",
    ):
        report = analyzer._report(analyzer.workloads[wid])
        after = _after(report)
        assert after is None or after[0] == "aws", (wid, after)
        assert "Alternatives within aws" in report
    every = AWSGPUMigrationAnalyzer(providers=None)._report(analyzer.workloads["inference_small_p5"])
    assert "Alternatives within aws" not in every


@pytest.mark.parametrize("wid", ["inference_small_p5", "fine_tuning_medium_p5", "inference_massive_p5e"])
def test_p5_workloads_stay_in_their_geo_on_every_cloud(wid: str, gfo_dir: Path, fast_estimator: None) -> None:
    analyzer = AWSGPUMigrationAnalyzer(providers=None)  # other clouds on request: still not Tokyo or Sweden
    after = _after(analyzer._report(analyzer.workloads[wid]))
    assert after is None or region_location(*after).geo == "us", after


def _training(analyzer: AWSGPUMigrationAnalyzer, **kw: Any) -> str:
    args: dict[str, Any] = {
        "current_instance": "P5",
        "current_gpu_count": 2,
        "workload_type": WorkloadType.TRAINING,
        "model_size": ModelSize.LARGE,
    }
    return analyzer.generate_migration_report(**(args | kw))


def test_method4_monthly_hours_and_use_spot_mean_what_the_guide_says(
    gfo_dir: Path, fast_estimator: None
) -> None:
    analyzer = AWSGPUMigrationAnalyzer()
    r500 = _training(analyzer, monthly_hours=500, use_spot=True)
    assert "No migration analysis" not in r500 and "1,000,000,000" not in r500
    # 2 x H100 cannot hold 70B training: the smallest P5 deployment that can is analysed, said first
    assert "cannot hold LARGE" in r500 and "p5.48xlarge x" in r500
    nodes = int(re.search(r"aws (\d+)x p5\.48xlarge", _cells(r500, "Deployment")[0]).group(1))  # type: ignore[union-attr]
    # today's deployment is billed on demand at the file's P5 price, for monthly_hours
    assert _cells(r500, "Pricing")[0] == "on_demand"
    now = _usd(_cells(r500, "Cost")[0])
    assert now == pytest.approx(nodes * P5["on_demand_cost_per_hour"] * 500, rel=1e-3)
    # the alternatives are spot (use_spot), and the work is what today's deployment trains in 500 h
    if _after(r500) is not None:
        assert _cells(r500, "Pricing")[1] == "spot"
    tokens_500 = float(re.search(r"train tokens ([\d,]+)", r500).group(1).replace(",", ""))  # type: ignore[union-attr]
    r250 = _training(analyzer, monthly_hours=250, use_spot=False)
    tokens_250 = float(re.search(r"train tokens ([\d,]+)", r250).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert tokens_250 == pytest.approx(tokens_500 / 2, rel=1e-6)
    assert _usd(_cells(r250, "Cost")[0]) == pytest.approx(
        nodes * P5["on_demand_cost_per_hour"] * 250, rel=1e-3
    )


def test_every_example_of_the_guide_returns_an_analysis(gfo_dir: Path, fast_estimator: None) -> None:
    ns: dict[str, Any] = {"__name__": "__guide__"}
    scripts = ("method2_specific_workload.py", "method3_workload_set.py", "method4_custom_analysis.py",
               "method5_interactive_session.py", "example2_batch_analysis.py", "running_workload_sets.py",
               "usage_custom_migration_analysis.py")  # fmt: skip
    out = _run(scripts, ns)
    ns["report_ondemand"] = ns["report_spot"] = None
    _run(("example3_spot_vs_on_demand.py",), ns)
    assert "No migration analysis" not in out and "Cannot analyse" not in out
    for report in (ns["report_ondemand"], ns["report_spot"]):
        assert report and report.startswith("# Migration") and "No migration analysis" not in report
    assert out.count("# Migration") >= 10
