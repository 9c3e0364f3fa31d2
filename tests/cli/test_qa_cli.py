"""QA pass: filters that leave no priced offer, JSON for `scenarios list` / `config check`, one-line parser
errors, output paths, readable narrow tables. Each bad input is its own test; all run the real CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app

from .clirun import run_cli

runner = CliRunner()

OFFER_KEYS = [
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpu_count",
    "gpu_memory_gib",
    "vcpus",
    "ram_gib",
    "arch",
    "price_on_demand_usd_per_hour",
    "price_spot_usd_per_hour",
    "captured_at",
    "source",
    "country",
    "geo",
    "latitude_deg",
    "longitude_deg",
]


_run = run_cli


def _rec_json(*args: str) -> dict[str, Any]:
    r = _run("recommend", "--model", "llama-3-8b", *args, "--format", "json")
    doc: dict[str, Any] = json.loads(r.stdout)
    assert r.exit_code == (0 if doc["result"]["status"] == "ok" else 3), r.output  # 3: no candidate
    return doc


def _no_offers_message(doc: dict[str, Any]) -> str:
    rec = doc["result"]
    assert rec["status"] == "no_offers", rec["status"]
    assert rec["offers_considered"] == 0
    return str(rec["message"])


# --- recommend: filters that leave no priced offer are `no_offers`, never CANNOT FIT ----------------------
def test_lambda_spot_is_no_offers_not_cannot_fit() -> None:
    msg = _no_offers_message(_rec_json("--provider", "lambda", "--pricing", "spot"))
    assert "CANNOT FIT" not in msg
    assert "spot price" in msg and "--pricing on_demand" in msg


def test_aws_1y_commitment_without_prices_is_no_offers() -> None:
    msg = _no_offers_message(_rec_json("--provider", "aws", "--pricing", "1y"))
    assert "1-year commitment price" in msg and "--pricing on_demand" in msg


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--region", "mars-*"), "Unknown region 'mars-*'"),
        (("--provider", "nope"), "Unknown provider 'nope'"),
        (("--provider", "aws,nope"), "Unknown provider 'nope'"),
        (("--vendor", "Acme"), "Unknown GPU vendor 'Acme'"),
    ],
)
def test_unknown_filter_values_exit_2_naming_them(args: tuple[str, ...], expected: str) -> None:
    r = _run("recommend", "--model", "llama-3-8b", *args)
    assert r.exit_code == 2 and expected in r.output


def test_filters_empty_only_in_combination() -> None:
    msg = _no_offers_message(_rec_json("--provider", "lambda", "--region", "eu-west-*"))
    assert "not in combination" in msg and "Regions left by the other filters" in msg


def test_no_offers_table_has_no_empty_spot_note() -> None:
    r = _run("recommend", "--model", "llama-3-8b", "--provider", "lambda", "--pricing", "spot")
    assert r.exit_code == 3  # no candidate (gpufleet.cli.exit_codes), after the table
    assert "interruption rates  (" not in r.stdout and "NO OFFERS" in r.stdout


# --- report output paths -----------------------------------------------------------------------------------
def test_output_into_missing_folder(tmp_path: Path) -> None:
    out = tmp_path / "missing" / "r.html"
    r = _run("scenarios", "run", "inference_small_p5", "--format", "html", "-o", str(out))
    assert r.exit_code == 2
    assert "does not exist" in r.stderr and "mkdir -p" in r.stderr


def test_output_is_a_folder(tmp_path: Path) -> None:
    r = _run("scenarios", "run", "inference_small_p5", "--format", "markdown", "-o", str(tmp_path))
    assert r.exit_code == 2 and "it is a folder" in r.stderr


# --- scenarios list / config check --format json ---------------------------------------------------------
def test_scenarios_list_json_has_stable_keys() -> None:
    r = _run("scenarios", "list", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert set(doc) == {"kind", "gpufleet_version", "scenarios", "sets"}
    first = doc["scenarios"][0]
    assert list(first) == ["id", "model", "task", "pricing", "current", "description"]
    current = [s["current"] for s in doc["scenarios"] if s["current"]]
    assert current and set(current[0]) == {"provider", "instance_type", "count", "region"}
    demos = {"name": "basic_demos", "scenarios": ["fine_tuning_medium_p5", "inference_small_p5"]}
    assert demos in doc["sets"]


def test_scenarios_list_bad_format() -> None:
    r = _run("scenarios", "list", "--format", "xml")
    assert r.exit_code == 2 and "--format" in r.output


def test_scenarios_list_fits_80_columns() -> None:
    r = runner.invoke(app, ["scenarios", "list"], env={"COLUMNS": "80"})
    assert r.exit_code == 0
    assert "4x g4dn.12xlarge" in r.stdout and "Descriptions" in r.stdout


def test_config_check_json_builtins() -> None:
    r = _run("config", "check", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert list(doc) == ["kind", "gpufleet_version", "files", "invalid_files", "in_force"]
    assert list(doc["in_force"]) == [
        "catalog",
        "refreshed",
        "models",
        "scenarios",
        "commitment_discounts",
        "spot_model",
    ]
    prov = doc["in_force"]["catalog"]["providers"][0]
    assert list(prov) == ["provider", "offers", "captured_at", "newest_age_days", "oldest_age_days", "age"]
    assert doc["in_force"]["spot_model"][0]["mean_time_between_interruptions_h"] > 0


def test_config_check_json_invalid_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("x: [\n", encoding="utf-8")
    r = _run("config", "check", str(bad), "--format", "json")
    assert r.exit_code == 2
    doc = json.loads(r.stdout)
    assert doc["invalid_files"] == 1 and "in_force" not in doc
    entry = doc["files"][0]
    assert entry["valid"] is False and "line 2, column 1" in entry["error"] and "\n" not in entry["error"]


# --- malformed / wrong files: one-line messages ------------------------------------------------------------
def test_malformed_yaml_config_check_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("x: [\n", encoding="utf-8")
    r = _run("config", "check", str(bad))
    assert r.exit_code == 2
    line = next(x for x in r.stderr.splitlines() if x.startswith("Invalid"))
    assert "line 2, column 1" in line and "Fix the syntax" in line


def test_malformed_yaml_workload_is_one_paragraph(tmp_path: Path) -> None:
    bad = tmp_path / "w.yaml"
    bad.write_text("model: [\n", encoding="utf-8")
    r = _run("recommend", str(bad))
    assert r.exit_code == 2
    assert "line 2, column 1" in r.stderr and "<unicode string>" not in r.stderr and "^" not in r.stderr


def test_workload_file_is_a_folder(tmp_path: Path) -> None:
    r = _run("recommend", str(tmp_path))
    assert r.exit_code == 2 and "is a directory" in r.stderr


def test_user_catalog_is_a_folder(tmp_path: Path) -> None:
    r = _run("catalog", "offers", "--catalog", str(tmp_path))
    assert r.exit_code == 2 and "directory" in r.stderr and "permissions" not in r.stderr


def test_config_check_folder(tmp_path: Path) -> None:
    r = _run("config", "check", str(tmp_path))
    assert r.exit_code == 2 and "is a directory" in r.stderr


# --- catalog offers ----------------------------------------------------------------------------------------
def test_offers_json_columns_and_prices() -> None:
    r = _run("catalog", "offers", "--format", "json")
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    assert doc["kind"] == "offers" and doc["gpufleet_version"]
    rows = doc["offers"]
    assert isinstance(rows, list) and rows
    for row in rows:
        assert list(row) == OFFER_KEYS
        assert row["price_on_demand_usd_per_hour"] > 0
        spot = row["price_spot_usd_per_hour"]
        assert spot is None or spot > 0


def test_offers_spot_without_spot_prices_says_why() -> None:
    r = _run("catalog", "offers", "--spot", "--provider", "lambda")
    assert r.exit_code == 0
    assert "none has a spot price" in r.stderr and "Drop --spot" in r.stderr


def test_offers_zero_min_memory_allowed_negative_not() -> None:
    r = _run("catalog", "offers", "--min-gpu-memory", "-5")
    assert r.exit_code == 2 and "--min-gpu-memory = -5 is not allowed" in r.stderr


def test_offers_nan_max_price() -> None:
    r = _run("catalog", "offers", "--max-price", "nan")
    assert r.exit_code == 2 and "--max-price" in r.stderr


def test_offers_table_at_80_columns_keeps_prices_whole() -> None:
    r = runner.invoke(app, ["catalog", "offers", "--gpu", "H100-SXM", "--limit", "5"], env={"COLUMNS": "80"})
    assert r.exit_code == 0
    assert "$/GPU-h" in r.stdout and "prices in USD" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80


# --- flag errors name the flag, not the workload-file field ------------------------------------------------
def test_zero_budget_names_the_flag() -> None:
    r = _run("recommend", "--model", "llama-3-8b", "--budget", "0")
    assert r.exit_code == 2
    assert "--budget = 0.0" in r.stderr and "Workload file" not in r.stderr
    assert "budget_usd_per_month" not in r.stderr


def test_hours_per_month_above_730_names_the_flag() -> None:
    r = _run("recommend", "--model", "llama-3-8b", "--hours-per-month", "1000")
    assert r.exit_code == 2 and "--hours-per-month = 1000.0" in r.stderr and "730" in r.stderr


def test_unknown_pricing_lists_allowed_once() -> None:
    r = _run("recommend", "--model", "llama-3-8b", "--pricing", "5y")
    assert r.exit_code == 2 and "--pricing = '5y'" in r.stderr
    assert r.stderr.count("on_demand") == 1


def test_migrate_zero_current_count_names_the_flag() -> None:
    r = _run("migrate", "--model", "llama-3-8b", "--current-instance", "p5.48xlarge", "--current-count", "0")
    assert r.exit_code == 2 and "--current-count = 0" in r.stderr


def test_migrate_unknown_current_provider() -> None:
    r = _run(
        "migrate", "--model", "llama-3-8b", "--current-instance", "p5.48xlarge", "--current-provider", "nope"
    )
    assert r.exit_code == 2
    assert "Unknown provider 'nope'" in r.stderr and "instance type" not in r.stderr


# --- narrow terminals ---------------------------------------------------------------------------------------
def test_catalog_gpus_at_80_columns_drops_the_name_column() -> None:
    r = runner.invoke(app, ["catalog", "gpus"], env={"COLUMNS": "80"})
    assert r.exit_code == 0 and "AMD Instinct" not in r.stdout and "MI300X" in r.stdout


def test_catalog_commitments_at_80_columns_puts_sources_below() -> None:
    r = runner.invoke(app, ["catalog", "commitments"], env={"COLUMNS": "80"})
    assert r.exit_code == 0, r.output
    assert "[1] Source:" in r.stdout and "│ [1] │" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80


def test_catalog_commitments_wide_keeps_source_column() -> None:
    r = runner.invoke(app, ["catalog", "commitments"], env={"COLUMNS": "220"})
    assert r.exit_code == 0 and "source" in r.stdout and "[1] Source:" not in r.stdout


def test_config_check_at_80_columns_points_to_sources() -> None:
    r = runner.invoke(app, ["config", "check"], env={"COLUMNS": "80"})
    assert r.exit_code == 0 and "Sources and notes: `gpufleet catalog commitments`" in r.stdout
    assert "Interruptions/h" in r.stdout
