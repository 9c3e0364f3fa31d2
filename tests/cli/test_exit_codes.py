"""Issue 22 item 8: documented, distinct exit codes a script can trust (gpufleet.cli.exit_codes). The output
is printed in full before a non-zero exit, so a script can read it and test the code."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from gpufleet.cli.exit_codes import ExitCode

from .clirun import run_cli

ROOT = Path(__file__).resolve().parents[2]


def test_codes_are_distinct_and_keep_2_for_user_errors() -> None:
    codes = [int(c) for c in ExitCode]
    assert len(set(codes)) == len(codes)
    assert ExitCode.OK == 0 and ExitCode.USER_ERROR == 2
    assert 1 not in codes  # Python's and click's own failure code never means one of these answers


@pytest.mark.parametrize("doc", ["README.md", "docs/contracts.md"])
def test_every_code_is_documented(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    for code in ExitCode:
        assert re.search(rf"^\| {int(code)} \| `{code.name.lower()}` \|", text, re.M), (doc, code)


def test_recommend_no_candidate_exits_3_after_its_json() -> None:
    r = run_cli("recommend", "--model", "llama-3.1-8b", "--target-tps", "2000", "--ttft-ms", "0.001",
                "--provider", "lambda", "-f", "json")  # fmt: skip
    assert r.exit_code == ExitCode.NO_CANDIDATE == 3, r.output
    assert json.loads(r.stdout)["result"]["status"] == "infeasible_slo"
    assert "Exit 3 (no_candidate)" in r.stderr


def test_recommend_with_a_candidate_exits_0() -> None:
    r = run_cli("recommend", "--model", "llama-3.1-8b", "--target-tps", "2000", "--provider", "lambda")
    assert r.exit_code == 0, r.output


def test_recommend_cannot_fit_exits_3(tmp_path: Path) -> None:
    cat = tmp_path / "t4.yaml"
    cat.write_text(
        "offers:\n  - {provider: acme, region: dc1, instance_type: t4box, gpu: T4, gpu_count: 1,\n"
        "     price_on_demand_usd_per_hour: 0.5}\n",
        encoding="utf-8",
    )
    r = run_cli("recommend", "--model", "llama-3.1-405b", "--catalog", str(cat), "--provider", "acme",
                "-f", "json")  # fmt: skip
    assert r.exit_code == 3, r.output
    assert json.loads(r.stdout)["result"]["status"] in ("cannot_fit", "no_offers")


@pytest.mark.parametrize(
    "args",
    [
        ("estimate", "memory", "--model", "llama-3.1-70b", "--gpu", "T4", "--precision", "fp16"),
        ("estimate", "infer", "--model", "llama-3.1-70b", "--gpu", "T4", "--precision", "fp16"),
        ("estimate", "train", "--model", "llama-3.1-70b", "--gpu", "T4", "--precision", "fp16",
         "--task", "full_finetune", "--gpus", "1"),
    ],
    ids=["memory", "infer", "train"],
)  # fmt: skip
def test_estimate_does_not_fit_exits_5_after_its_json(args: tuple[str, ...]) -> None:
    r = run_cli(*args, "--format", "json")
    assert r.exit_code == ExitCode.DOES_NOT_FIT == 5, r.output
    assert json.loads(r.stdout)["kind"].startswith("estimate_")
    assert "does not fit" in r.stderr
    table = run_cli(*args)  # the table too, then the same code
    assert table.exit_code == 5 and "does not fit" in table.stderr.lower()


def test_estimate_that_fits_exits_0() -> None:
    r = run_cli("estimate", "memory", "--model", "llama-3.1-8b", "--gpu", "H100", "--precision", "bf16")
    assert r.exit_code == 0, r.output


SMALL = {
    "name": "small",
    "workloads": {"serve": {"resources": {"gpus": ["T4"], "replicas": 2}, "providers": ["aws"],
                            "regions": ["us-east-1"]}},
}  # fmt: skip


def _fleet(tmp_path: Path, data: object) -> Path:
    p = tmp_path / "fleet.yaml"
    p.write_text(yaml.safe_dump(data), encoding="utf-8")
    return p


def test_infeasible_plan_exits_4_after_its_json(tmp_path: Path) -> None:
    data = dict(SMALL, constraints={"budgets": [{"name": "tiny", "usd_per_month": 5}]})
    r = run_cli("plan", str(_fleet(tmp_path, data)), "-f", "json", "--no-savings")
    assert r.exit_code == ExitCode.INFEASIBLE_PLAN == 4, r.output
    assert json.loads(r.stdout)["result"]["status"] == "infeasible"


def test_feasible_plan_exits_0(tmp_path: Path) -> None:
    r = run_cli("plan", str(_fleet(tmp_path, SMALL)), "-f", "json", "--no-savings")
    assert r.exit_code == 0, r.output


def test_skypilot_export_that_leaves_a_placement_out_lists_it_and_exits_6(tmp_path: Path) -> None:
    data = {
        "name": "mixed",
        "workloads": {
            "serve": {"resources": {"gpus": ["T4"], "replicas": 1}, "providers": ["aws"],
                      "regions": ["us-east-1"]},
            "other": {"resources": {"gpus": ["RTX-A6000"], "replicas": 1}, "providers": ["hyperstack"]},
        },
    }  # fmt: skip
    out = tmp_path / "sky"
    r = run_cli("plan", str(_fleet(tmp_path, data)), "-f", "skypilot", "-o", str(out), "--no-savings")
    assert r.exit_code == ExitCode.INCOMPLETE_EXPORT == 6, r.output
    assert "Left out: workload other" in r.stderr and "hyperstack" in r.stderr
    files = sorted(p.name for p in out.iterdir())
    assert len(files) == 1 and files[0].startswith("serve-")  # the supported placement is still written


def test_simulate_spot_with_no_strategy_meeting_the_deadline_exits_3() -> None:
    args = (
        "simulate",
        "spot",
        "--model",
        "llama-3.1-8b",
        "--tokens",
        "2e10",
        "--runs",
        "10",
        "--gpus",
        "8",
        "-f",
        "json",
    )
    r = run_cli(*args, "--deadline-hours", "1")
    assert r.exit_code == ExitCode.NO_CANDIDATE, r.output
    assert json.loads(r.stdout)["result"]["best"] is None
    assert run_cli(*args, "--deadline-hours", "10000").exit_code == 0


def test_migrate_exits_3_only_when_nothing_meets_the_workload() -> None:
    """Staying on a current deployment that meets the workload is an answer (0); no alternative while the
    current one misses it is not (3)."""
    from dataclasses import replace

    from gpufleet.cli.recommend import no_candidate_reason
    from report import samples

    mig = samples.migration()
    assert no_candidate_reason(mig) is None  # a move
    stay = replace(mig, recommended=None, new_cost_usd_per_month=None, savings_usd_per_month=None)
    assert no_candidate_reason(stay) is None  # the current deployment meets the workload: stay
    missing = replace(stay, current=replace(mig.current, meets_slo=False, slo_misses=("TTFT",)))
    assert no_candidate_reason(missing) is not None
    assert no_candidate_reason(samples.infeasible()) is not None
    assert no_candidate_reason(samples.recommendation()) is None


def test_regions_with_no_region_able_to_run_it_exits_3(tmp_path: Path) -> None:
    cat = tmp_path / "t4.yaml"
    cat.write_text(
        "offers:\n  - {provider: acme, region: dc1, instance_type: t4box, gpu: T4, gpu_count: 1,\n"
        "     price_on_demand_usd_per_hour: 0.5}\n",
        encoding="utf-8",
    )
    r = run_cli(
        "regions", "--model", "llama-3.1-405b", "--provider", "acme", "--catalog", str(cat), "-f", "json"
    )
    assert r.exit_code == ExitCode.NO_CANDIDATE, r.output
    assert json.loads(r.stdout)["result"]["rows"] == []
