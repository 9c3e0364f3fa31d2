"""`gpufleet scenarios list | run | run-set`: listing, progress, formats, unknown names (exit 2)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.recommend import api
from gpufleet.recommend.scenarios import load_scenarios
from gpufleet.recommend.types import ScenarioResult, ScenarioSetResult
from report import samples

from .clirun import run_cli

runner = CliRunner()


_run = run_cli


@pytest.fixture()
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []

    def run_scenario(name: str, **kw: Any) -> ScenarioResult:
        calls.append(("run", name, kw))
        return replace(samples.scenario_set().results[0], name=name)

    def run_scenario_set(name: str, *, progress: Any = None, **kw: Any) -> ScenarioSetResult:
        members = load_scenarios().sets[name]
        for i, m in enumerate(members, 1):
            if progress is not None:
                progress(i, len(members), m)
        calls.append(("set", name, kw, progress))
        return replace(samples.scenario_set(), name=name)

    monkeypatch.setattr(api, "run_scenario", run_scenario)
    monkeypatch.setattr(api, "run_scenario_set", run_scenario_set)
    return calls


def test_list_shows_ids_descriptions_and_sets() -> None:
    lib = load_scenarios()
    r = _run("scenarios", "list")
    assert r.exit_code == 0
    for sid in lib.scenarios:
        assert sid in r.stdout
    for name in lib.sets:
        assert name in r.stdout
    assert "basic_demos" in r.stdout


def test_run_one(fake_engine: list[Any]) -> None:
    sid = next(iter(load_scenarios().scenarios))
    r = _run("scenarios", "run", sid, "--top", "2")
    assert r.exit_code == 0, r.output
    assert fake_engine[0][:2] == ("run", sid) and fake_engine[0][2]["limit"] == 2
    assert f"Scenario {sid}" in r.stdout


def test_run_set_with_progress_and_all_formats(fake_engine: list[Any], tmp_path: Path) -> None:
    r = _run("scenarios", "run-set", "basic_demos", "--format", "json")
    # the sample set holds an infeasible scenario: exit 3 (no candidate) after the whole report
    assert r.exit_code == 3, r.output
    assert "1 of 2 scenarios have no answer" in r.stderr or "scenarios have no answer" in r.stderr
    assert json.loads(r.stdout)["kind"] == "scenario_set"
    assert fake_engine[0][3] is not None  # a progress callback was passed
    out = tmp_path / "report.html"
    r = _run("scenarios", "run-set", "basic_demos", "--format", "html", "-o", str(out))
    assert r.exit_code == 3 and out.read_text(encoding="utf-8").count("<svg") >= 3
    r = _run("scenarios", "run-set", "basic_demos", "--no-progress")
    assert r.exit_code == 3 and "Scenario set basic_demos" in r.stdout
    r = _run("scenarios", "run-set", "basic_demos", "--format", "markdown")
    assert r.stdout.startswith("# Scenario set: basic_demos")


def test_unknown_scenario() -> None:
    r = _run("scenarios", "run", "inference_smal_p5")
    assert r.exit_code == 2
    flat = " ".join(r.stderr.split())
    assert "Unknown scenario 'inference_smal_p5'" in flat and "inference_small_p5" in flat
    assert "gpufleet scenarios list" in flat


def test_unknown_set() -> None:
    r = _run("scenarios", "run-set", "basic_demo")
    assert r.exit_code == 2
    flat = " ".join(r.stderr.split())
    assert "Unknown scenario set 'basic_demo'" in flat and "basic_demos" in flat


def test_missing_argument() -> None:
    assert _run("scenarios", "run").exit_code == 2
    assert _run("scenarios", "run-set").exit_code == 2


# --- end to end: the real engine (what `make demo` runs) ---------------------------------------------------
def test_end_to_end_run_set_html_and_table(tmp_path: Path) -> None:
    out = tmp_path / "gpufleet-report.html"
    r = _run("scenarios", "run-set", "basic_demos", "--format", "html", "-o", str(out))
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    assert "Savings by scenario" in html and 'class="mark pareto"' in html and "<script" not in html
    r = _run("scenarios", "run-set", "basic_demos")
    assert r.exit_code == 0, r.output
    for sid in load_scenarios().sets["basic_demos"]:
        assert sid in r.stdout


def test_end_to_end_run_one_json() -> None:
    r = _run("scenarios", "run", "inference_small_p5", "-f", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "scenario" and doc["result"]["migration"]["current"]["instance_type"].startswith(
        "p5."
    )
