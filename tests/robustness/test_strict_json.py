"""Every JSON document gpufleet prints is strict JSON: parsed with a parser that refuses NaN and Infinity
(``json.loads(..., parse_constant=raise)``), including runs over inputs holding NaN and 1e308 (issue 26).

Also: ``gpufleet config show`` names the refreshed data in force and any that was rejected, and why.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.report.json_schemas import KINDS
from gpufleet.report.telemetry import to_json

runner = CliRunner()
ROOT = Path(__file__).parents[2]
DATA = ROOT / "tests" / "data"
T0_MS = 1_780_000_200_000
EXPO = "".join(
    f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",UUID="GPU-{g}",Hostname="node-a"}} {v} {T0_MS + 60_000 * k}\n'
    for k in range(30)
    for g, v in ((0, 0), (1, "NaN" if k % 7 == 0 else 1e-300 if k % 5 == 0 else 100))
).encode()
JOBS = (
    b"job_id,submit_s,gpus,duration_s,priority,deadline_s,preemptible,team\n"
    b"j1,0,8,7200,1,,false,research\nj2,60,1,3600,0,,true,prod\n"
)
TRACE = b"timestamp_s,input_tokens,output_tokens\n" + b"".join(
    f"{k * 0.5:.1f},{200 + 13 * k},{40 + k}\n".encode() for k in range(40)
)
FLEET = (
    b"name: t\nworkloads:\n  chat:\n    workload: {model: llama-3.1-8b, target_requests_per_s: 2}\n"
    b"    demand: {schedule: '24/7'}\n    providers: [lambda]\n"
)


def _strict(text: str) -> Any:
    def refuse(name: str) -> Any:
        raise ValueError(f"non-standard JSON constant {name}")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("strict-json")
    out = {}
    for name, content in {"e.prom": EXPO, "jobs.csv": JOBS, "t.csv": TRACE, "fleet.yaml": FLEET}.items():
        (d / name).write_bytes(content)
        out[name.split(".")[0]] = str(d / name)
    (d / "sweep.yaml").write_text(
        f"kind: batch\nbase:\n  jobs: {d / 'jobs.csv'}\ngrid:\n  policy: [fifo, easy]\n"
    )
    out["sweep"] = str(d / "sweep.yaml")
    out["store"] = str(d / "store")
    res = runner.invoke(app, ["telemetry", "ingest", out["e"], "--store", out["store"]])
    assert res.exit_code == 0, res.output
    return out


#: every JSON kind: the estimate/recommend half (json_schemas.KINDS) and the fleet half
COMMANDS: dict[str, list[str]] = {
    "recommendation": ["recommend", "--model", "llama-3.2-1b", "--provider", "lambda", "--top", "2"],
    "migration": ["migrate", "--model", "llama-3.2-1b", "--current-instance", "g5.xlarge",
                  "--provider", "aws", "--top", "2"],
    "scenario": ["scenarios", "run", "production_serving_g4dn"],
    "scenario_set": ["scenarios", "run-set", "cost_optimization_focus"],
    "offers": ["catalog", "offers", "--gpu", "H100", "--geo", "eu"],
    "gpus": ["catalog", "gpus"],
    "estimate_memory": ["estimate", "memory", "-m", "llama-3.1-8b", "-g", "H100"],
    "estimate_inference": ["estimate", "infer", "-m", "llama-3.1-8b", "-g", "H100", "--input-len", "100000"],
    "estimate_training": ["estimate", "train", "-m", "llama-3.2-1b", "-g", "H100", "--task", "lora"],
    "estimate_matrix": ["estimate", "matrix", "--models", "llama-3.1-8b,llama-3.1-405b", "--gpus", "H100,T4"],
    "validation": ["validate", str(DATA / "cases" / "small.csv")],
    "scenario_list": ["scenarios", "list"],
    "config_check": ["config", "check", str(DATA / "workloads" / "inference.yaml")],
    "config_show": ["config", "show"],
    # the fleet half
    "telemetry_ingest": ["telemetry", "ingest", "{e}", "--store", "{store}-2"],
    "telemetry_findings": ["telemetry", "findings", "--store", "{store}"],
    "telemetry_alerts": ["telemetry", "alerts", "--store", "{store}"],
    "fleet_plan": ["plan", "{fleet}", "--time-limit", "5"],
    "region_analysis": ["regions", "--model", "llama-3-8b", "--limit", "3"],
    "simulation_autoscale": ["simulate", "autoscale", "{t}", "--gpu", "l4"],
    "simulation_batch": ["simulate", "batch", "{jobs}"],
    "simulation_spot": ["simulate", "spot", "--model", "llama-3-8b", "--tokens", "1e9", "--runs", "3"],
    "simulation_sweep": ["simulate", "sweep", "{sweep}", "--workers", "1"],
}  # fmt: skip
_FORMAT_FLAG = {
    "telemetry_ingest": "--format",
    "telemetry_findings": "--format",
    "telemetry_alerts": "--format",
}


def test_every_kind_is_covered() -> None:
    assert set(KINDS) <= set(COMMANDS)


@pytest.mark.parametrize("kind", list(COMMANDS))
def test_json_output_is_strict(
    kind: str, files: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path / "data"))
    argv = list(COMMANDS[kind])
    for key, value in sorted(files.items(), key=lambda kv: -len(kv[0])):
        argv = [a.replace("{" + key + "}", value) for a in argv]
    res = runner.invoke(app, [*argv, "--format", "json"])
    assert res.exit_code == 0, res.output[-1500:]
    doc = _strict(res.stdout)
    assert doc["kind"] == kind


def test_telemetry_json_writes_non_finite_as_null() -> None:
    """``to_json`` wrote ``Infinity`` for an infinite float (only NaN became null)."""
    doc = _strict(to_json("telemetry_findings", {"a": math.inf, "b": -math.inf, "c": math.nan, "d": 1.5}))
    assert (doc["a"], doc["b"], doc["c"], doc["d"]) == (None, None, None, 1.5)


# ---- config show: the refreshed data in force and the rejected ---------------------------------------------
def _refresh(provider: str) -> None:
    from gpufleet.catalog.fetch import store
    from gpufleet.catalog.fetch.rates import write_rates_csv
    from gpufleet.catalog.offers_io import load_shipped_offers, write_offers_csv

    offers = load_shipped_offers().filter(provider=provider)
    store.write_provider(
        provider,
        {"offers": write_offers_csv(offers), "commitments": write_rates_csv([])},
        {"provider": provider, "captured_at": "2026-11-28T00:00:00Z"},
    )


def test_config_show_names_refreshed_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from gpufleet.catalog.fetch import store

    monkeypatch.setenv("GPUFLEET_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    res = runner.invoke(app, ["config", "show"])
    assert res.exit_code == 0 and "Refreshed prices: none" in res.output, res.output
    _refresh("lambda")
    _refresh("vast")
    damaged = store.current_path("offers", "vast")
    assert damaged is not None
    damaged.write_bytes(damaged.read_bytes()[:-40])  # truncated: its SHA-256 and size no longer match
    res = runner.invoke(app, ["config", "show"])
    flat = " ".join(res.output.split())
    assert res.exit_code == 0, flat
    assert "lambda: in force, captured 2026-11-28T00:00:00Z" in flat and "340 offers" in flat, flat
    assert "vast: REJECTED, the shipped prices are used instead" in flat and "truncated or edited" in flat, (
        flat
    )
    doc = _strict(runner.invoke(app, ["config", "show", "--format", "json"]).stdout)
    refreshed = doc["in_force"]["refreshed"]
    assert [r["provider"] for r in refreshed["in_force"]] == ["lambda"]
    assert refreshed["in_force"][0]["offers"] == 340
    assert [r["provider"] for r in refreshed["rejected"]] == ["vast"]
    assert "truncated or edited" in refreshed["rejected"][0]["reason"]
