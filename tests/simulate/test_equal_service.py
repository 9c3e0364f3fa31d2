"""Savings against the static peak only at equal service: the baseline and the policy meet every SLO set
(p95 TTFT, p95 TPOT, SLO attainment), else "not comparable" with the gap (issue 23, item 5)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from gpufleet.simulate.autoscale import Deployment, deployment_for, simulate_autoscale
from gpufleet.simulate.policies import make_policy
from gpufleet.simulate.traces import RequestTrace


@pytest.fixture(scope="module")
def ten_min(azure_conv: RequestTrace) -> RequestTrace:
    n = int(np.searchsorted(azure_conv.arrival_s, 600.0))
    return replace(
        azure_conv,
        arrival_s=azure_conv.arrival_s[:n].copy(),
        input_tokens=azure_conv.input_tokens[:n].copy(),
        output_tokens=azure_conv.output_tokens[:n].copy(),
    )


@pytest.fixture(scope="module")
def dep(ten_min: RequestTrace) -> Deployment:
    return deployment_for(ten_min, model="llama-3.1-8b", gpu="l4")


def _static(trace: RequestTrace, dep: Deployment, n: int, **slo: float) -> object:
    return simulate_autoscale(
        trace, dep, make_policy("static", replicas=n), min_replicas=n, max_replicas=n,
        compare_static_peak=False, **slo,
    )  # fmt: skip


def test_static_peak_meets_the_tpot_slo_too(ten_min: RequestTrace, dep: Deployment) -> None:
    """The first 10 minutes of the Azure conversation trace on L4: 7 fixed replicas meet a 2 s p95 TTFT but
    their p95 TPOT is ~106 ms; with a 100 ms TPOT SLO the baseline must be the fewest replicas meeting both
    (recomputed here by replaying that count and one fewer)."""
    slo = {"slo_ttft_s": 2.0, "slo_tpot_s": 0.100}
    r = simulate_autoscale(ten_min, dep, make_policy("kpa", target_concurrency=8), **slo)
    sp = r.static_peak
    assert sp is not None and sp.meets_slo
    at = _static(ten_min, dep, sp.replicas, **slo)
    assert at.meets_slo and at.tpot.p95_s <= 0.100 and at.ttft.p95_s <= 2.0  # type: ignore[attr-defined]
    below = _static(ten_min, dep, sp.replicas - 1, **slo)
    assert not below.meets_slo  # type: ignore[attr-defined]
    assert sp.replicas > 7  # the TTFT-only baseline (7) misses the TPOT SLO


def test_no_savings_when_the_policy_misses_tpot(ten_min: RequestTrace, dep: Deployment) -> None:
    """KPA at 8 in flight per replica with a TPOT SLO just under the p95 TPOT it delivers (and a TTFT SLO it
    meets): no saving is stated; the reason names the TPOT gap (the TTFT-only check stated one). The SLOs are
    set from a first run, so the test does not hang on the estimator's exact L4 figures."""
    pol = make_policy("kpa", target_concurrency=8)
    loose = simulate_autoscale(ten_min, dep, pol, slo_ttft_s=60.0, slo_tpot_s=1.0)
    tpot_slo = 0.97 * loose.tpot.p95_s
    ttft_slo = 1.5 * loose.ttft.p95_s
    r = simulate_autoscale(ten_min, dep, pol, slo_ttft_s=ttft_slo, slo_tpot_s=tpot_slo)
    assert r.ttft.p95_s <= ttft_slo and r.tpot.p95_s > tpot_slo
    assert not r.meets_slo
    assert r.savings_vs_static_peak is None
    assert r.not_comparable is not None and "p95 TPOT" in r.not_comparable
    assert f"> {1000 * tpot_slo:.0f} ms" in r.not_comparable
    assert any("p95 TPOT" in g for g in r.slo_gaps)


def test_attainment_target_is_an_slo(ten_min: RequestTrace, dep: Deployment) -> None:
    """An attainment target above what the fewest fixed replicas meeting both p95 SLOs deliver moves the
    baseline up (more replicas, at or above the target); a target above the policy's own attainment makes it
    not comparable, with the points short. Targets are set from a first run (no estimator figure
    hard-coded)."""
    pol = make_policy("kpa", target_concurrency=8)
    slo = {"slo_ttft_s": 1.0, "slo_tpot_s": 0.2}
    free = simulate_autoscale(ten_min, dep, pol, **slo)
    assert free.static_peak is not None
    n, att = free.static_peak.replicas, free.static_peak.slo_attainment
    if att < 0.9995:
        target = min(0.9995, att + (1.0 - att) / 2.0)
        moved = simulate_autoscale(ten_min, dep, pol, slo_attainment=target, **slo)
        assert moved.static_peak is not None and moved.static_peak.replicas > n
        assert moved.static_peak.slo_attainment >= target
    assert free.slo_attainment < 1.0, "the policy meets every request: pick a tighter SLO"
    strict_target = free.slo_attainment + (1.0 - free.slo_attainment) / 2.0
    strict = simulate_autoscale(ten_min, dep, pol, slo_attainment=strict_target, **slo)
    assert strict.slo_attainment < strict_target and not strict.meets_slo
    assert strict.savings_vs_static_peak is None
    assert strict.not_comparable is not None and "attainment" in strict.not_comparable
    assert "points short" in strict.not_comparable


def test_report_says_not_comparable(ten_min: RequestTrace, dep: Deployment) -> None:
    from gpufleet.report.simulation import render_simulation_markdown

    r = simulate_autoscale(
        ten_min, dep, make_policy("kpa", target_concurrency=8), slo_ttft_s=2.0, slo_tpot_s=0.090
    )
    text = render_simulation_markdown(r)
    line = next(x for x in text.splitlines() if "vs static peak" in x)
    assert (
        "not comparable" in line
        and "p95 TPOT" in line
        and "savings" not in line.replace("no savings stated", "")
    )


def test_attainment_in_percent_is_refused(ten_min: RequestTrace, dep: Deployment) -> None:
    from gpufleet.errors import InputError

    with pytest.raises(InputError, match=r"fraction from 0 to 1 .* give 0.95"):
        simulate_autoscale(ten_min, dep, make_policy("kpa"), slo_attainment=95, compare_static_peak=False)
