"""A sweep dimension that the chosen policy ignores is an error (exit 2, naming the policy's parameters),
not rows that silently repeat one another (issue 23, item 5)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpufleet.cli.app import app
from gpufleet.errors import InputError
from gpufleet.simulate.policies import policy_parameters
from gpufleet.simulate.sweep import SweepSpec, check_batch_dimensions, check_sweep_spec

DATA = Path(__file__).resolve().parents[1] / "data" / "simulate"
AZURE = Path(__file__).resolve().parents[1] / "data" / "traces" / "azure-llm-inference-2023"
TRACE = str(AZURE / "AzureLLMInferenceTrace_conv.csv")


def _auto(grid: dict[str, list[object]], **base: object) -> SweepSpec:
    return SweepSpec(kind="autoscale", base={"trace": TRACE, "gpu": "l4", **base}, grid=grid)


@pytest.mark.parametrize(
    ("grid", "base", "policy"),
    [
        ({"policy": ["kpa", "scheduled"], "target": [4, 8]}, {}, "scheduled"),
        ({"policy_params": [{"tick_s": 10}, {"tick_s": 60}]}, {"policy": "static"}, "static"),
        ({"policy": ["hpa", "kpa"], "policy_params": [{"tolerance": 0.1}, {"tolerance": 0.3}]}, {}, "kpa"),
    ],
)
def test_ignored_policy_dimension_is_an_error(
    grid: dict[str, list[object]], base: dict[str, object], policy: str
) -> None:
    with pytest.raises(InputError) as exc:
        check_sweep_spec(_auto(grid, **base))
    msg = str(exc.value)
    assert f"policy {policy} ignores it" in msg
    assert f"Policy {policy} takes: {', '.join(policy_parameters(policy))}" in msg


def test_dimensions_the_policy_uses_pass() -> None:
    check_sweep_spec(_auto({"policy": ["kpa", "hpa", "ray", "queue", "static"], "target": [4, 8]}))
    check_sweep_spec(
        _auto({"policy_params": [{"tick_s": 10}, {"tick_s": 60}]}, policy="static", spot_share=0.5)
    )
    check_sweep_spec(_auto({"policy_params": [{"tolerance": 0.1}, {"tolerance": 0.3}]}, policy="hpa"))


def test_batch_policy_with_nothing_to_act_on(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("pools:\n  - {gpu: h100, gpus_per_node: 8, nodes: 4, kind: on_demand}\n")
    jobs = str(DATA / "jobs.csv")
    with pytest.raises(InputError, match="offpeak has nothing to act on"):
        check_batch_dimensions(
            SweepSpec(
                kind="batch", base={"jobs": jobs, "fleet": str(fleet)}, grid={"policy": ["fifo", "offpeak"]}
            )
        )
    with pytest.raises(InputError, match=r"checkpoint_h .* no spot pool"):
        check_batch_dimensions(
            SweepSpec(
                kind="batch", base={"jobs": jobs, "fleet": str(fleet)}, grid={"checkpoint_h": [0.5, 1.0]}
            )
        )
    check_batch_dimensions(  # the shipped fleet has spot pools and an off-peak window
        SweepSpec(
            kind="batch",
            base={"jobs": jobs, "fleet": str(DATA / "fleet.yaml")},
            grid={"policy": ["fifo", "offpeak", "spot"], "checkpoint_h": [0.5, 1.0]},
        )
    )


def test_cli_sweep_exits_2(tmp_path: Path) -> None:
    spec = tmp_path / "sweep.yaml"
    spec.write_text(
        f"kind: autoscale\nbase: {{trace: {TRACE}, gpu: l4}}\n"
        "grid: {policy: [kpa, scheduled], target: [4, 8]}\n"
    )
    r = CliRunner().invoke(app, ["simulate", "sweep", str(spec), "--workers", "1"])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    assert "scheduled" in r.output and "schedule" in r.output
