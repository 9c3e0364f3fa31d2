"""`gpufleet validate` and `gpufleet calibrate` through the CLI runner."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.errors import GpufleetError
from gpufleet.estimate import validate as validate_mod
from gpufleet.estimate.cases import CalibrationCase, shipped_cases_path

DATA = Path(__file__).parent.parent / "data" / "cases"
runner = CliRunner()


@dataclass(frozen=True)
class _Pred:
    predicted: float
    p10: float
    p90: float
    notes: tuple[str, ...] = ()


class _NotSupported(GpufleetError):
    pass


def _fake(case: CalibrationCase, profile: Any) -> _Pred:
    if case.task == "load":
        raise _NotSupported("weights-only load cases are not estimated")
    p = case.measured * 1.25
    return _Pred(p, p * 0.7, p * 1.3)


@pytest.fixture
def fake_predictor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validate_mod, "_default_predictor", lambda: _fake)


def _user_error(result: Any, *fragments: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    for frag in fragments:
        assert frag in result.output.replace("\n", " "), (frag, result.output)


def test_json_shape(fake_predictor: None) -> None:
    result = runner.invoke(app, ["validate", str(DATA / "small.csv"), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert set(doc) == {"kind", "gpufleet_version", "summary", "cases"}
    s = doc["summary"]
    assert s["cases"] == 3 and s["predicted"] == 2
    assert s["coverage"] == pytest.approx(2 / 3)
    assert s["median_ape_pct"] == pytest.approx(25.0)
    assert s["share_within_2x"] == 1.0 and s["interval_coverage"] == 1.0
    by_id = {c["case_id"]: c for c in doc["cases"]}
    assert list(by_id) == ["U1", "U2", "U3"]
    u1 = by_id["U1"]
    assert u1["predicted"] == pytest.approx(166.25) and u1["error_pct"] == pytest.approx(25.0)
    assert u1["p10"] < u1["measured"] < u1["p90"] and u1["reason"] is None
    assert by_id["U3"]["predicted"] is None and "not estimated" in by_id["U3"]["reason"]


def test_markdown_table(fake_predictor: None) -> None:
    result = runner.invoke(app, ["validate", str(DATA / "small.csv"), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("| case | metric | measured | predicted")
    assert any(line.startswith("| U1 | ttft_ms | 133 ms | 166.2 |") for line in lines), lines
    assert any("| U3 |" in line and "not predicted" in line for line in lines)
    assert any(line.startswith("| **all** | 3 | 2 (67%) | 25.0% |") for line in lines), lines


def test_table(fake_predictor: None) -> None:
    result = runner.invoke(app, ["validate", str(DATA / "small.csv")])
    assert result.exit_code == 0, result.output
    assert "Estimator vs measured" in result.stdout and "U2" in result.stdout and "Summary" in result.stdout


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("bad_metric.csv", "'throughput'"),
        ("bad_unit.csv", "'unit'"),
        ("bad_task.csv", "'serving'"),
        ("bad_precision.csv", "'fp12'"),
        ("bad_negative.csv", "'-133'"),
        ("bad_missing_column.csv", "gpu_count"),
        ("nope.csv", "does not exist"),
    ],
)
def test_malformed_cases_file(fake_predictor: None, name: str, fragment: str) -> None:
    result = runner.invoke(app, ["validate", str(DATA / name)])
    _user_error(result, name, fragment)


def test_missing_profile_file(fake_predictor: None, tmp_path: Path) -> None:
    result = runner.invoke(app, ["validate", str(DATA / "small.csv"), "--profile", str(tmp_path / "p.json")])
    _user_error(result, "p.json", "does not exist")


def test_bad_format_is_a_usage_error() -> None:
    result = runner.invoke(app, ["validate", str(DATA / "small.csv"), "--format", "html"])
    _user_error(result, "html")


@pytest.mark.parametrize("content", ["{not json", '{"params": "fast"}', "[]"])
def test_corrupt_profile_file(fake_predictor: None, tmp_path: Path, content: str) -> None:
    bad = tmp_path / "bad_profile.json"
    bad.write_text(content, encoding="utf-8")
    result = runner.invoke(app, ["validate", str(DATA / "small.csv"), "--profile", str(bad)])
    _user_error(result, "bad_profile.json")


def test_calibrate_writes_a_profile_that_validate_accepts(tmp_path: Path) -> None:
    out = tmp_path / "profile.json"
    result = runner.invoke(
        app, ["calibrate", str(DATA / "small.csv"), "-o", str(out)], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    assert "Fitted parameters (3 cases)" in result.stdout and "fitted" in result.stdout
    assert out.is_file() and json.loads(out.read_text(encoding="utf-8"))["case_count"] == 3
    result = runner.invoke(app, ["validate", str(DATA / "small.csv"), "--profile", str(out), "-f", "json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)["summary"]
    assert summary["cases"] == 3 and summary["predicted"] == 3


def test_calibrate_bad_inputs(tmp_path: Path) -> None:
    result = runner.invoke(app, ["calibrate", str(DATA / "small.csv"), "-o", str(tmp_path / "no" / "p.json")])
    _user_error(result, "does not exist")
    result = runner.invoke(app, ["calibrate", str(DATA / "bad_unit.csv"), "-o", str(tmp_path / "p.json")])
    _user_error(result, "bad_unit.csv", "'unit'")
    assert not (tmp_path / "p.json").exists()


def test_validate_shipped_cases_with_the_real_estimator() -> None:
    result = runner.invoke(app, ["validate", str(shipped_cases_path()), "-f", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [c["case_id"] for c in doc["cases"]][:3] == ["T01", "T07", "T11"]
    assert doc["summary"]["cases"] == 164 and doc["summary"]["coverage"] == 1.0
    for case in doc["cases"]:
        assert (case["predicted"] is None) == (case["reason"] is not None)


def test_cases_the_estimator_cannot_handle_are_listed_with_reasons() -> None:
    result = runner.invoke(app, ["validate", str(DATA / "unsupported.csv"), "-f", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["summary"]["cases"] == 3 and doc["summary"]["predicted"] == 1
    assert doc["summary"]["coverage"] == pytest.approx(1 / 3)
    k1, k2, k3 = doc["cases"]
    assert k1["predicted"] > 0 and k1["reason"] is None
    assert k2["predicted"] is None and "my-private-model" in k2["reason"]
    assert k3["predicted"] is None and "train_tokens" in k3["reason"]
    md = runner.invoke(app, ["validate", str(DATA / "unsupported.csv"), "-f", "markdown"]).stdout
    assert "| K2 | ttft_ms | 150 ms | not predicted |" in md


def test_a_file_where_no_case_can_be_estimated_exits_2_with_the_reasons(tmp_path: Path) -> None:
    f = tmp_path / "c.csv"
    f.write_text(
        "case_id,metric,model,task,gpu,gpu_count,precision,measured,unit\n"
        "c1,infer_output_tokens_per_s,llama-3.1-8b,inference,Z9,1,bf16,100,tok/s\n"
    )
    r = CliRunner().invoke(app, ["validate", str(f)])
    assert r.exit_code == 2 and "nothing to compare" in r.output and "Z9" in r.output
