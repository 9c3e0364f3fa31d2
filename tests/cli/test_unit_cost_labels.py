"""Issue 22 item 1: a unit cost "at your load" is the month's cost over the tokens the user's load makes in a
month; the unit cost at full capacity is a separate, separately labelled figure. Both recomputed by hand from
the candidate's own JSON fields (the README's recommend command)."""

from __future__ import annotations

import json

import pytest

from .clirun import run_cli

README_ASK = (
    "recommend", "--model", "llama-3.1-8b", "--precision", "bf16", "--target-rps", "5", "--ttft-ms", "500",
    "--tpot-ms", "50",
)  # fmt: skip
SECONDS_PER_HOUR = 3600.0  # written out: the test recomputes, it does not reuse the product's constants


@pytest.fixture(scope="module")
def doc() -> dict:  # type: ignore[type-arg]
    r = run_cli(*README_ASK, "--format", "json")
    assert r.exit_code == 0, r.output
    out: dict = json.loads(r.output)  # type: ignore[type-arg]
    return out


def test_unit_cost_at_load_is_monthly_cost_over_monthly_tokens_at_the_load(doc: dict) -> None:  # type: ignore[type-arg]
    w = doc["result"]["workload"]
    load = w["target_requests_per_s"] * w["output_len_tokens"]  # 5 req/s x 256 tokens = 1,280 tok/s
    month_s = w["hours_per_month"] * SECONDS_PER_HOUR
    assert doc["result"]["ranked"]
    for c in doc["result"]["ranked"]:
        assert c["load_output_tokens_per_s"] == pytest.approx(load)
        assert c["output_tokens_per_month_at_load"] == pytest.approx(load * month_s)
        by_hand = c["cost_usd_per_month"] / (load * month_s) * 1e6
        assert c["cost_usd_per_million_output_tokens_at_load"] == pytest.approx(by_hand, rel=1e-9)
        # at full capacity: every replica paid for at its saturated batch, over the same hours
        sat = c["saturated_output_tokens_per_s"]
        assert sat >= load  # the fleet serves the load
        assert c["output_tokens_per_month_saturated"] == pytest.approx(sat * month_s)
        by_hand_sat = c["cost_usd_per_month"] / (sat * month_s) * 1e6
        assert c["cost_usd_per_million_output_tokens_saturated"] == pytest.approx(by_hand_sat, rel=1e-9)
        assert (
            c["cost_usd_per_million_output_tokens_saturated"]
            <= c["cost_usd_per_million_output_tokens_at_load"]
        )
    # the README example: $423.40/month for 3,364 M tokens a month = $0.126/1M, not the $0.0484 at capacity
    best = doc["result"]["best"]
    assert best["output_tokens_per_month_at_load"] == pytest.approx(3_363.84e6)
    assert best["cost_usd_per_million_output_tokens_at_load"] == pytest.approx(
        best["cost_usd_per_month"] / 3_363.84, rel=1e-9
    )


def test_the_table_labels_each_unit_cost_with_its_load() -> None:
    r = run_cli(*README_ASK, "--format", "markdown")
    assert r.exit_code == 0, r.output
    doc = json.loads(run_cli(*README_ASK, "--format", "json").output)
    best = doc["result"]["best"]
    at_load = best["cost_usd_per_month"] / (1280 * 730 * SECONDS_PER_HOUR) * 1e6
    assert f"${at_load:.3g}/1M tok at your load (1,280 tok/s)" in r.output
    assert "at full capacity" in r.output
    assert "Unit cost ($/month ÷ output tokens/month" in r.output  # the period of the ratio
    assert "at saturation" not in r.output  # the old label, which put the capacity figure under "your load"


def test_no_load_given_has_no_unit_cost_at_a_load() -> None:
    r = run_cli("recommend", "--model", "llama-3.1-8b", "--precision", "bf16", "--format", "json")
    assert r.exit_code == 0, r.output
    best = json.loads(r.output)["result"]["best"]
    assert best["load_output_tokens_per_s"] is None
    assert best["cost_usd_per_million_output_tokens_at_load"] is None
    assert best["cost_usd_per_million_output_tokens_saturated"] is not None


def test_concurrency_load_is_the_streams_times_one_streams_rate() -> None:
    r = run_cli("recommend", "--model", "llama-3.1-8b", "--precision", "bf16", "--concurrency", "20",
                "--format", "json")  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)["result"]
    for c in doc["ranked"]:
        per_stream = c["output_tokens_per_s"]["central"] / (c["replicas"] * c["batch_per_replica"])
        assert c["load_output_tokens_per_s"] == pytest.approx(20 * per_stream, rel=1e-9)
        month = c["load_output_tokens_per_s"] * doc["workload"]["hours_per_month"] * SECONDS_PER_HOUR
        assert c["cost_usd_per_million_output_tokens_at_load"] == pytest.approx(
            c["cost_usd_per_month"] / month * 1e6, rel=1e-9
        )
