"""Review (second pass, 2026-11-29): every $/1M-token figure states its load, and none is given for a load
the deployment does not serve.

Before, ``migrate`` of 40 req/s (10,240 output tok/s) from one g5.xlarge (A10G, 949 tok/s at full capacity)
showed today at "$0.0273/1M tok at your load (10,240 tok/s)", 11x below what it costs per token it can make
($0.294/1M at its 949 tok/s), so the move read as 6x dearer per token; and "Savings: -$3,616/month
(-492.4%)", a saving against a deployment that misses the workload. Now the unit cost at the load is null
there ("cannot serve your load"), the full-capacity figure names its tok/s, and the difference is
``cost_change_to_meet_usd_per_month`` (savings null: the two do not meet the same SLOs).
"""

from __future__ import annotations

import json

import pytest

from .clirun import run_cli

ASK = (
    "migrate", "--model", "llama-3.1-8b", "--precision", "bf16", "--target-rps", "40", "--ttft-ms", "1000",
    "--tpot-ms", "80", "--current-provider", "aws", "--current-instance", "g5.xlarge", "--current-count", "1",
)  # fmt: skip
MONTH_S = 730 * 3600.0  # written out: the test recomputes, it does not reuse the product's constants


@pytest.fixture(scope="module")
def doc() -> dict:  # type: ignore[type-arg]
    r = run_cli(*ASK, "--format", "json")
    assert r.exit_code == 0, r.output
    out: dict = json.loads(r.output)["result"]  # type: ignore[type-arg]
    return out


def test_no_unit_cost_at_a_load_the_deployment_cannot_make(doc: dict) -> None:  # type: ignore[type-arg]
    cur = doc["current"]
    load = 40 * 256  # req/s x output tokens
    assert cur["load_output_tokens_per_s"] == pytest.approx(load)
    assert cur["saturated_output_tokens_per_s"] < load  # one A10G: ~949 tok/s
    assert cur["cost_usd_per_million_output_tokens_at_load"] is None  # before: 0.0273
    by_hand = cur["cost_usd_per_month"] / (cur["saturated_output_tokens_per_s"] * MONTH_S) * 1e6
    assert cur["cost_usd_per_million_output_tokens_saturated"] == pytest.approx(by_hand, rel=1e-9)
    new = doc["recommended"]
    assert new["saturated_output_tokens_per_s"] >= load
    assert new["cost_usd_per_million_output_tokens_at_load"] == pytest.approx(
        new["cost_usd_per_month"] / (load * MONTH_S) * 1e6, rel=1e-9
    )


def test_no_saving_against_a_deployment_that_misses_the_workload(doc: dict) -> None:  # type: ignore[type-arg]
    assert doc["savings_usd_per_month"] is None and doc["savings_pct"] is None  # before: -3,616 / -492 %
    extra = doc["cost_change_to_meet_usd_per_month"]
    assert extra == pytest.approx(doc["new_cost_usd_per_month"] - doc["current_cost_usd_per_month"], abs=0.01)
    assert "falls short" in doc["verdict"] and "no saving" in doc["verdict"]
    assert "meeting the workload costs" in doc["verdict"]


def test_the_table_says_why_and_names_the_capacity(doc: dict) -> None:  # type: ignore[type-arg]
    r = run_cli(*ASK, "--format", "markdown")
    assert r.exit_code == 0, r.output
    sat = doc["current"]["saturated_output_tokens_per_s"]
    assert f"cannot serve your load (10,240 tok/s > {sat:,.0f} tok/s at full capacity)" in r.output
    assert f"/1M tok at full capacity ({sat:,.0f} tok/s, saturated batch)" in r.output
    assert "Savings:** none: the current deployment misses the workload" in r.output
    assert "-492" not in r.output


def test_a_deployment_that_meets_the_workload_keeps_its_saving() -> None:
    r = run_cli(
        "migrate", "--model", "llama-3.1-8b", "--precision", "bf16", "--target-rps", "2",
        "--current-provider", "aws", "--current-instance", "p5.48xlarge", "--format", "json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    m = json.loads(r.output)["result"]
    assert m["cost_change_to_meet_usd_per_month"] is None
    assert m["savings_usd_per_month"] == pytest.approx(
        m["current_cost_usd_per_month"] - m["new_cost_usd_per_month"], abs=0.01
    )
    assert m["current"]["cost_usd_per_million_output_tokens_at_load"] is not None  # 8 H100s serve 512 tok/s
