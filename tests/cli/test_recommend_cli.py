"""`gpufleet recommend` / `gpufleet migrate`: formats, output files, and every bad-input path (exit 2).

Wiring tests replace the engine with fixed, hand-built results (the engine has its own tests); the input paths
run the real workload validation. ``test_end_to_end_*`` run the real engine on the shipped catalog.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.recommend import api
from report import samples

from .clirun import run_cli

runner = CliRunner()


_run = run_cli


@pytest.fixture()
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []

    def recommend(w: Any, **kw: Any) -> Any:
        calls.append((w, kw))
        return samples.recommendation(w)

    def migrate(w: Any, **kw: Any) -> Any:
        calls.append((w, kw))
        return samples.migration()

    monkeypatch.setattr(api, "recommend", recommend)
    monkeypatch.setattr(api, "migrate", migrate)
    return calls


def test_flags_become_the_workload(fake_engine: list[Any]) -> None:
    r = _run(
        "recommend",
        "--model",
        "llama-3.1-8b",
        "--target-tps",
        "5000",
        "--ttft-ms",
        "500",
        "--tpot-ms",
        "50",
        "--pricing",
        "spot",
        "--provider",
        "AWS",
        "--provider",
        "lambda",
        "--region",
        "us-*",
        "--budget",
        "9000",
        "--objective",
        "fastest",
        "--top",
        "3",
    )
    assert r.exit_code == 0, r.output
    w, kw = fake_engine[0]
    assert (w.model, w.target_output_tokens_per_s, w.ttft_p95_s, w.tpot_p95_s) == (
        "llama-3.1-8b",
        5000.0,
        0.5,
        0.05,
    )
    assert w.providers == ("aws", "lambda") and w.regions == ("us-*",) and w.pricing == "spot"
    assert w.budget_usd_per_month == 9000.0 and w.objective == "fastest" and kw["limit"] == 3
    assert "Top candidates" in r.stdout
    assert "spot other providers: one interruption per" in " ".join(r.stdout.split())  # assumptions in force


def test_training_flags(fake_engine: list[Any]) -> None:
    r = _run(
        "recommend",
        "--model",
        "llama-3.1-8b",
        "--task",
        "lora",
        "--tokens",
        "1e9",
        "--deadline-hours",
        "24",
        "--hours-per-month",
        "200",
    )
    assert r.exit_code == 0, r.output
    w, _ = fake_engine[0]
    assert (w.task, w.train_tokens, w.deadline_h, w.hours_per_month) == ("lora", 1e9, 24.0, 200.0)


def test_workload_file(fake_engine: list[Any], tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("name: chat\nmodel: llama-3.1-8b\nconcurrency: 32\n", encoding="utf-8")
    r = _run("recommend", str(f), "--format", "json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "recommendation" and doc["result"]["workload"]["name"] == "chat"
    assert fake_engine[0][0].concurrency == 32


def test_workload_file_with_several_entries(fake_engine: list[Any], tmp_path: Path) -> None:
    f = tmp_path / "ws.yaml"
    f.write_text("workloads:\n  a: {model: llama-3.1-8b}\n  b: {model: mistral-7b}\n", encoding="utf-8")
    r = _run("recommend", str(f))
    assert r.exit_code == 2 and "holds 2 workloads (a, b)" in r.stderr and "--name" in r.stderr
    assert _run("recommend", str(f), "--name", "b").exit_code == 0
    assert fake_engine[-1][0].model == "mistral-7b"
    r = _run("recommend", str(f), "--name", "c")
    assert r.exit_code == 2 and "Unknown workload 'c'" in r.stderr


@pytest.mark.parametrize("fmt", ["markdown", "json", "table"])
def test_formats_to_file(fake_engine: list[Any], tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"r.{fmt}"
    r = _run("recommend", "--model", "llama-3.1-8b", "--format", fmt, "-o", str(out))
    assert r.exit_code == 0 and r.stdout == ""
    text = out.read_text(encoding="utf-8")
    assert {"markdown": "# Recommendation", "json": '"kind": "recommendation"', "table": "Top candidates"}[
        fmt
    ] in text
    assert "\x1b[" not in text  # no colour codes in files


def test_html_defaults_to_a_file(
    fake_engine: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    r = _run("recommend", "--model", "llama-3.1-8b", "--format", "html")
    assert r.exit_code == 0 and "gpufleet-report.html" in r.stderr
    assert (tmp_path / "gpufleet-report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_migrate_flags(fake_engine: list[Any]) -> None:
    r = _run(
        "migrate",
        "--model",
        "llama-3.1-8b",
        "--target-tps",
        "5000",
        "--current-provider",
        "aws",
        "--current-instance",
        "p4d.24xlarge",
        "--current-count",
        "2",
        "--format",
        "markdown",
    )
    assert r.exit_code == 0, r.output
    w, _ = fake_engine[0]
    assert w.current is not None and (w.current.provider, w.current.instance_type, w.current.count) == (
        "aws",
        "p4d.24xlarge",
        2,
    )
    assert "## Migration" in r.stdout and "**Savings:**" in r.stdout


def test_migrate_table(fake_engine: list[Any]) -> None:
    r = _run("migrate", "--model", "llama-3.1-8b", "--current-instance", "p4d.24xlarge")
    assert r.exit_code == 0 and "now vs after" in r.stdout and "Savings" in r.stdout


# --- bad input: exit 2, one paragraph, no traceback ------------------------------------------------------
def _bad(*args: str, needles: tuple[str, ...]) -> None:
    r = _run(*args)
    assert r.exit_code == 2, r.output
    flat = " ".join(r.stderr.split())
    for n in needles:
        assert n in flat, (n, flat)


def test_zero_budget(fake_engine: list[Any]) -> None:
    _bad("recommend", "--model", "llama-3.1-8b", "--budget", "0", needles=("--budget = 0.0", "positive"))
    assert not fake_engine


def test_no_workload() -> None:
    _bad("recommend", needles=("No workload given", "--model"))


def test_file_and_flags_together(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("model: llama-3.1-8b\n", encoding="utf-8")
    _bad("recommend", str(f), "--pricing", "spot", needles=("not both", "--pricing"))


def test_bad_workload_file_field(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("name: chat\nmodel: llama-3.1-8b\npricing: cheap\n", encoding="utf-8")
    _bad("recommend", str(f), needles=("w.yaml", "'chat'", "pricing", "cheap", "on_demand"))


def test_unknown_workload_file_field(tmp_path: Path) -> None:
    f = tmp_path / "w.yaml"
    f.write_text("model: llama-3.1-8b\ngpu_speed: 3\n", encoding="utf-8")
    _bad("recommend", str(f), needles=("w.yaml", "gpu_speed", "not a workload field"))


def test_missing_workload_file(tmp_path: Path) -> None:
    _bad("recommend", str(tmp_path / "nope.yaml"), needles=("nope.yaml",))


def test_bad_flag_values() -> None:
    _bad("recommend", "--model", "llama-3.1-8b", "--pricing", "cheap", needles=("pricing", "cheap"))
    _bad("recommend", "--model", "llama-3.1-8b", "--task", "dance", needles=("task", "dance"))
    _bad("recommend", "--model", "llama-3.1-8b", "--precision", "fp5", needles=("precision", "fp5"))
    _bad("recommend", "--model", "llama-3.1-8b", "--target-tps", "-5", needles=("--target-tps = -5.0",))
    _bad(
        "recommend",
        "--model",
        "llama-3.1-8b",
        "--concurrency",
        "4",
        "--target-rps",
        "2",
        needles=("at most one",),
    )


def test_bad_top_and_format() -> None:
    assert _run("recommend", "--model", "llama-3.1-8b", "--top", "0").exit_code == 2
    assert _run("recommend", "--model", "llama-3.1-8b", "--format", "pdf").exit_code == 2


def test_bad_catalog_file(tmp_path: Path) -> None:
    f = tmp_path / "cat.yaml"
    f.write_text("offers: [{provider: x}]\n", encoding="utf-8")
    _bad("recommend", "--model", "llama-3.1-8b", "--catalog", str(f), needles=("cat.yaml", "offers / 0"))


def test_unwritable_output(fake_engine: list[Any], tmp_path: Path) -> None:
    _bad(
        "recommend",
        "--model",
        "llama-3.1-8b",
        "--format",
        "json",
        "-o",
        str(tmp_path / "no" / "dir" / "r.json"),
        needles=("Cannot write the report", "-o/--output"),
    )


def test_migrate_without_current() -> None:
    _bad("migrate", "--model", "llama-3.1-8b", needles=("--current-instance", "current:"))


def test_migrate_bad_current_count() -> None:
    _bad(
        "migrate",
        "--model",
        "llama-3.1-8b",
        "--current-instance",
        "p4d.24xlarge",
        "--current-count",
        "0",
        needles=("--current-count = 0",),
    )


# --- end to end: the real engine on the shipped catalog ---------------------------------------------------
def test_end_to_end_recommend_json() -> None:
    r = _run(
        "recommend", "--model", "llama-3.1-8b", "--target-tps", "2000", "--provider", "lambda", "-f", "json"
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    res = doc["result"]
    assert res["status"] == "ok" and res["ranked"]
    assert all(c["provider"] == "lambda" for c in res["ranked"])
    assert res["best"]["cost_usd_per_month"] > 0


def test_end_to_end_infeasible_slo_is_a_status() -> None:
    r = _run("recommend", "--model", "llama-3.1-8b", "--target-tps", "2000", "--ttft-ms", "0.001",
             "--provider", "lambda")  # fmt: skip
    assert r.exit_code == 3, r.output  # no candidate (gpufleet.cli.exit_codes), after the whole table
    assert "INFEASIBLE" in r.stdout and "Closest options" in r.stdout


def test_end_to_end_cannot_fit(tmp_path: Path) -> None:
    cat = tmp_path / "t4.yaml"
    cat.write_text(
        "offers:\n  - {provider: acme, region: dc1, instance_type: t4box, gpu: T4, gpu_count: 1,\n"
        "     price_on_demand_usd_per_hour: 0.5}\n",
        encoding="utf-8",
    )
    r = _run(
        "recommend", "--model", "llama-3.1-70b", "--provider", "acme", "--catalog", str(cat), "-f", "markdown"
    )
    assert r.exit_code == 3, r.output
    assert "CANNOT FIT" in r.stdout and "## Why it cannot fit" in r.stdout


def test_commitment_assumptions_shown_for_1y(fake_engine: list[Any]) -> None:
    r = _run("recommend", "--model", "llama-3.1-8b", "--pricing", "1y", "-f", "markdown")
    assert r.exit_code == 0, r.output
    assert "commitment discount" in r.stdout and " 1y: " in r.stdout and " 3y: " not in r.stdout
