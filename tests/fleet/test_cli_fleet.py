"""`gpufleet plan` and `gpufleet regions` through the CLI: formats, exports, user errors exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from gpufleet.cli.app import app

runner = CliRunner()
SMALL = {
    "name": "small",
    "workloads": {
        "serve": {
            "resources": {"gpus": ["T4"], "replicas": 2},
            "providers": ["aws"],
            "regions": ["us-east-1", "us-west-2"],
            "preemptible_fraction": 0.5,
            "current": {
                "provider": "aws",
                "instance_type": "g4dn.2xlarge",
                "count": 2,
                "region": "us-east-1",
            },
        }
    },
}


def _file(tmp_path: Path, data: object) -> Path:
    p = tmp_path / "fleet.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def test_plan_json_has_kind_version_and_levers(tmp_path: Path) -> None:
    res = runner.invoke(app, ["plan", str(_file(tmp_path, SMALL)), "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["kind"] == "fleet_plan" and doc["gpufleet_version"]
    plan = doc["result"]
    assert plan["status"] == "optimal" and plan["check_violations"] == []
    assert [lv["name"] for lv in plan["levers"]][:3] == ["schedule", "right-size", "region moves"]


def test_plan_exports(tmp_path: Path) -> None:
    f = _file(tmp_path, SMALL)
    for fmt, name in (
        ("focus", "plan.focus.csv"),
        ("k8s", "plan.k8s.yaml"),
        ("html", "plan.html"),
        ("csv", "p.csv"),
    ):
        res = runner.invoke(app, ["plan", str(f), "-f", fmt, "-o", str(tmp_path / name), "--no-savings"])
        assert res.exit_code == 0, res.output
        assert (tmp_path / name).stat().st_size > 0
    assert "<svg" in (tmp_path / "plan.html").read_text()
    sky = tmp_path / "sky"
    sky.mkdir()
    res = runner.invoke(app, ["plan", str(f), "-f", "skypilot", "-o", str(sky), "--no-savings"])
    assert res.exit_code == 0, res.output
    assert list(sky.glob("*.sky.yaml"))


def test_plan_skypilot_creates_the_task_folder(tmp_path: Path) -> None:
    """docs/fleet.md's `gpufleet plan FLEET.yaml -f skypilot -o sky/`: a new folder in an existing one is
    created (it used to exit 2 asking for an existing folder); a file or a missing parent still exits 2."""
    f = _file(tmp_path, SMALL)
    sky = tmp_path / "sky"
    res = runner.invoke(app, ["plan", str(f), "-f", "skypilot", "-o", f"{sky}/", "--no-savings"])
    assert res.exit_code == 0, res.output
    assert sky.is_dir() and list(sky.glob("*.sky.yaml"))
    afile = tmp_path / "plan.txt"
    afile.write_text("x")
    res = runner.invoke(app, ["plan", str(f), "-f", "skypilot", "-o", str(afile)])
    assert res.exit_code == 2 and "is a file" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["plan", str(f), "-f", "skypilot", "-o", str(tmp_path / "no" / "sky")])
    assert res.exit_code == 2 and "mkdir -p" in res.output
    assert not (tmp_path / "no").exists()


def test_plan_user_errors_exit_2(tmp_path: Path) -> None:
    bad = dict(SMALL, constraints={"quotas": [{"provider": "aws", "limit": -1}]})
    res = runner.invoke(app, ["plan", str(_file(tmp_path, bad))])
    assert res.exit_code == 2 and "limit" in res.output and "Traceback" not in res.output
    res = runner.invoke(app, ["plan", str(tmp_path / "missing.yaml")])
    assert res.exit_code == 2
    res = runner.invoke(app, ["plan", str(_file(tmp_path, SMALL)), "-f", "skypilot"])
    assert res.exit_code == 2 and "folder" in res.output
    res = runner.invoke(app, ["plan", str(_file(tmp_path, SMALL)), "--period", "December"])
    assert res.exit_code == 2 and "YYYY-MM" in res.output


def test_infeasible_plan_is_a_reported_status_then_exit_4(tmp_path: Path) -> None:
    data = dict(SMALL, constraints={"budgets": [{"name": "tiny", "usd_per_month": 5}]})
    res = runner.invoke(app, ["plan", str(_file(tmp_path, data)), "-f", "json", "--no-savings"])
    assert res.exit_code == 4, res.output  # gpufleet.cli.exit_codes.INFEASIBLE_PLAN, after the JSON
    plan = json.loads(res.stdout)["result"]
    assert plan["status"] == "infeasible" and any(b.startswith("tiny") for b in plan["binding"])


def test_regions_json() -> None:
    res = runner.invoke(
        app,
        [
            "regions",
            "--model",
            "llama-3.1-8b",
            "--precision",
            "bf16",
            "--target-rps",
            "1",
            "--provider",
            "aws",
            "--provider",
            "gcp",
            "--user-lat",
            "50.1",
            "--user-lon",
            "8.7",
            "--data-provider",
            "aws",
            "--data-region",
            "us-east-1",
            "--data-gib",
            "50",
            "--serving-gib",
            "100",
            "-f",
            "json",
            "--limit",
            "40",
        ],
    )
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["kind"] == "region_analysis"
    rows = doc["result"]["rows"]
    assert {r["provider"] for r in rows} <= {"aws", "gcp"} and rows
    fra = [r for r in rows if r["region"] == "eu-central-1"]
    use1 = [r for r in rows if r["region"] == "us-east-1"]
    if fra and use1:  # Frankfurt users: Frankfurt is nearer than Virginia, and moving data there costs egress
        assert fra[0]["rtt_ms"] < use1[0]["rtt_ms"]
        assert fra[0]["egress_usd_per_month"] > use1[0]["egress_usd_per_month"]
    assert all(r["on_demand_usd_per_month"] > 0 for r in rows)
    assert any(r["carbon_gco2e_per_kwh"] for r in rows)


def test_regions_user_errors_exit_2() -> None:
    res = runner.invoke(app, ["regions", "--model", "llama-3.1-8b", "--user-lat", "50"])
    assert res.exit_code == 2 and "--user-lon" in res.output
    res = runner.invoke(app, ["regions", "--model", "llama-3.1-8b", "--data-provider", "aws"])
    assert res.exit_code == 2 and "--data-region" in res.output
