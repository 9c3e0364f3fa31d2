"""Held-out intervals per metric family and mechanism class (gpufleet.estimate.intervals), their scoring."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gpufleet.catalog.specs import get_spec
from gpufleet.estimate.calibration import (
    GROUPINGS,
    CalibrationProfile,
    load_profile,
    make_interval,
    predict_case,
    prior_profile,
    with_params,
)
from gpufleet.estimate.cases import CalibrationCase, read_cases
from gpufleet.estimate.intervals import (
    MIN_CLASS_CASES,
    POOLED,
    TARGET_COVERAGE,
    ScoringCase,
    case_mechanisms,
    crossfit_scores,
    fit_class_quantiles,
    fit_interval_scales,
)
from gpufleet.estimate.priors import PRIORS
from gpufleet.estimate.profile import HELDOUT_EXTRA_FACTOR, class_interval, interval_floor
from gpufleet.estimate.rates import Widening, _widen, resolve_rates
from gpufleet.models.registry import resolve_model

CASES_CSV = Path(__file__).resolve().parents[2] / "src" / "gpufleet" / "estimate" / "data" / "cases.csv"


def _case(**kw: Any) -> CalibrationCase:
    base: dict[str, Any] = dict(
        case_id="Z1", metric="tpot_ms", model="llama-3.1-8b", task="inference", gpu="H100-SXM", gpu_count=1,
        precision="bf16", batch=1, seq_len=None, input_len=512.0, output_len=128.0, train_tokens=None, tp=1,
        pp=1, dp=1, ep=None, cp=None, software="vllm", measured=7.0, unit="ms", note="", source="test",
    )  # fmt: skip
    return CalibrationCase(**(base | kw))


def _profile(quantiles: dict[str, tuple[float, float]]) -> CalibrationProfile:
    return CalibrationProfile(
        params=prior_profile().params, fitted_at="", case_count=0, residuals={}, version=1, source="t",
        log_residual_quantiles={"latency": (-0.1, 0.1)}, heldout_quantiles=quantiles,
    )  # fmt: skip


def test_an_estimate_takes_the_envelope_of_its_classes_and_widens_for_the_rest() -> None:
    q = {"latency/all": (-0.4, 0.3), "latency/dense": (-0.3, 0.3), "latency/moe": (-0.6, 0.35),
         "latency/multinode": (-0.35, 0.5), "latency/new_generation": (-0.5, 0.4)}  # fmt: skip
    p = _profile(q)
    dense = make_interval(10.0, "latency", p, Widening(0))
    assert (dense.p10, dense.p90) == pytest.approx((10 * math.exp(-0.3), 10 * math.exp(0.3)))
    both = make_interval(10.0, "latency", p, Widening(1, frozenset({"moe", "multinode"})))
    assert (both.p10, both.p90) == pytest.approx((10 * math.exp(-0.6), 10 * math.exp(0.5)))
    # MoE counts one reason and has its class; an unfitted stack (a second reason) has none: widened once
    moe_stack = make_interval(10.0, "latency", p, Widening(2, frozenset({"moe"})))
    f = HELDOUT_EXTRA_FACTOR
    assert (moe_stack.p10, moe_stack.p90) == pytest.approx((10 * math.exp(-0.6 * f), 10 * math.exp(0.35 * f)))
    # a class the profile lacks: the family's interval widened
    assert class_interval(q, "latency", {"quantised"}) == pytest.approx((-0.4 * f, 0.3 * f))
    # memory and profiles without class keys keep their own intervals
    assert class_interval(q, "memory", set()) is None
    legacy = make_interval(10.0, "latency", _profile({}), Widening(0, frozenset({"moe"})))
    assert legacy.p90 / legacy.p10 == pytest.approx(math.exp(2 * interval_floor("latency")))


def test_a_class_with_few_cases_pools_with_its_family() -> None:
    n = MIN_CLASS_CASES
    ids = [f"c{i}" for i in range(3 * n)]
    fam = dict.fromkeys(ids, "training")
    mech: dict[str, frozenset[str]] = {k: frozenset() for k in ids}
    for k in ids[:n]:  # a full MoE class, far off
        mech[k] = frozenset({"moe"})
    for k in ids[n : n + n - 1]:  # one case short of a multinode class
        mech[k] = frozenset({"multinode"})
    rng = np.random.default_rng(1)
    held = {g: {k: float(rng.normal(-1.0 if k in ids[:n] else 0.0, 0.2)) for k in ids} for g in GROUPINGS}
    q = fit_class_quantiles(held, fam, mech)
    moe = [held[g][k] for g in GROUPINGS for k in ids[:n]]
    assert q["training/moe"] == pytest.approx((float(np.quantile(moe, 0.1)), float(np.quantile(moe, 0.9))))
    whole = q["training/all"]  # the dense estimate's interval, floor included, widened
    floor = interval_floor("training")
    assert q["training/multinode"] == pytest.approx(
        (min(whole[0], -floor) * HELDOUT_EXTRA_FACTOR, max(whole[1], floor) * 1.25)
    )
    assert q["training/moe"][0] < q["training/dense"][0]  # the far-off class does not drag the dense one
    gen = [held["generation"][k] for k in ids]
    assert q["training/new_generation"][0] == pytest.approx(float(np.quantile(gen, 0.1)))
    # too few cases in the whole family: +-ln 2
    few = fit_class_quantiles(held, dict.fromkeys(ids[: n - 1], "latency"), mech)
    assert few["latency/all"] == pytest.approx((-math.log(2), math.log(2)))


def test_cross_fitted_coverage_never_sees_the_scored_group() -> None:
    """A vendor whose cases are all far off is scored against intervals fitted on the others only: outside
    every time, where an in-sample fit over all cases would have stretched to cover some of them."""
    cases = [_case(case_id=f"H{i}") for i in range(12)]
    cases += [_case(case_id=f"A{i}", gpu="MI300X") for i in range(4)]
    held = {g: {c.case_id: (1.5 if c.case_id.startswith("A") else 0.05 * (i % 5 - 2)) for i, c in
                enumerate(cases)} for g in GROUPINGS}  # fmt: skip
    scores = crossfit_scores(cases, held, fitted=())
    by_vendor = [s for s in scores if s.grouping == "vendor"]
    assert {s.case_id for s in by_vendor} == {c.case_id for c in cases}
    assert not any(s.inside for s in by_vendor if s.case_id.startswith("A"))
    # the generation held out: the scored cases take the new-generation interval
    assert all("new_generation" in s.mechanisms for s in scores if s.grouping == "generation")
    assert all(s.inside for s in by_vendor if s.case_id.startswith("H"))


def test_mechanisms_of_cases_and_estimates_agree() -> None:
    assert case_mechanisms(_case()) == frozenset()
    assert case_mechanisms(_case(model="mixtral-8x7b", precision="int4")) == {"moe", "quantised"}
    assert case_mechanisms(_case(metric="train_step_s", task="pretrain", gpu_count=16)) == {"multinode"}
    spec = get_spec("H100-SXM")
    arch = resolve_model("mixtral-8x7b")
    prof = load_profile()
    w = _widen(resolve_rates(spec, "int4", prof, allow_fallback=True), spec, None, prof, arch)
    assert w.mechanisms == {"moe", "quantised"} and int(w) == 1
    assert w.spanning(8, 8) is w and w.spanning(16, 8).mechanisms == {"moe", "quantised", "multinode"}
    assert int(w.spanning(16, 8)) == 1


def test_shipped_profile_has_held_out_class_quantiles() -> None:
    """Every class is stored; the floor applies to the interval an estimate gets, after the envelope."""
    p = load_profile()
    for fam in ("training", "throughput", "latency"):
        for cls in ("all", "dense", "moe", "quantised", "multinode", "new_generation"):
            lo, hi = p.heldout_quantiles[f"{fam}/{cls}"]
            assert lo <= hi
            got = class_interval(p.heldout_quantiles, fam, set() if cls in ("all", "dense") else {cls})
            assert got is not None and got[0] <= -interval_floor(fam) and got[1] >= interval_floor(fam)


def test_shipped_intervals_cover_held_out_measurements_as_stated() -> None:
    """Scored out of sample (cross-fitted, the scales nested), held-out training and throughput measurements
    fall inside p10-p90 75-85 % of the time (issue 25's band; their scales are fitted to 80 %), all speed
    metrics at a median width of at most 2.2x. Latency sits at its floor (run-to-run spread) whatever the
    scale and covers more, which lifts the speed total a little above 85 % (README "Accuracy")."""
    p = load_profile()
    scores = crossfit_scores(read_cases(CASES_CSV), p.logo_residuals, p.fitted)
    assert {s.family for s in scores} == {"training", "throughput", "latency"}
    assert 0.75 <= np.mean([s.inside for s in scores]) <= 0.90
    assert np.median([s.width for s in scores]) <= 2.2
    for fam in ("training", "throughput"):
        assert 0.75 <= np.mean([s.inside for s in scores if s.family == fam]) <= 0.85, fam
    latency = [s for s in scores if s.family == "latency"]
    assert np.mean([s.inside for s in latency]) >= 0.75
    assert np.median([s.width for s in latency]) <= math.exp(2 * interval_floor("latency")) * 1.25


def test_eager_transformers_priors_predict_the_h200_rows_without_fitting_the_stack() -> None:
    """Held-out by stack: with the transformers factors at their priors (no case of the stack seen), our
    H200 eager prefill and fine-tuning rows stay within 1.25x at the median (the earlier priors, 0.4 for
    prefill and 0.45 for training, were 2.2x and 1.3x off)."""
    p = load_profile()
    names = ("infer_stack_transformers", "train_stack_transformers", "overhead_mult_transformers")
    held = with_params(p, {n: PRIORS[n].value for n in names})
    for metric in ("ttft_ms", "train_step_s"):
        rows = [c for c in read_cases(CASES_CSV) if c.metric == metric and c.software == "transformers"]
        assert len(rows) >= 10
        ratio = np.median([predict_case(c, held).predicted / c.measured for c in rows])
        assert 1 / 1.25 <= ratio <= 1.25, (metric, ratio)


def test_a_class_inside_the_floor_is_wider_than_dense() -> None:
    """Residuals inside the floor cannot show a mechanism's extra error: the class takes the dense interval
    x 1.25, so an estimate outside the calibrated data is never given the dense one."""
    ids = [f"c{i}" for i in range(2 * MIN_CLASS_CASES)]
    mech = {k: frozenset({"quantised"}) if i % 2 else frozenset() for i, k in enumerate(ids)}
    held = {g: {k: (0.01 if mech[k] else (-0.6 if i % 4 == 0 else 0.4)) for i, k in enumerate(ids)}
            for g in GROUPINGS}  # fmt: skip
    q = fit_class_quantiles(held, dict.fromkeys(ids, "latency"), mech)
    dense = q["latency/dense"]
    assert dense[0] < -0.25 and dense[1] > 0.25
    assert q["latency/quantised"] == pytest.approx((dense[0] * HELDOUT_EXTRA_FACTOR, dense[1] * 1.25))


def _over_covering(n_ids: int = 24) -> tuple[dict[str, dict[str, float]], dict[str, ScoringCase], list[str]]:
    """Training cases whose scoring widens every interval twice (an unfitted stack and an uncertain spec):
    the class deciles alone then cover nearly all of them."""
    ids = [f"c{i}" for i in range(n_ids)]
    rng = np.random.default_rng(7)
    held = {g: {k: float(rng.normal(0.0, 0.4)) for k in ids} for g in GROUPINGS}
    info = {
        k: ScoringCase(family="training", mechanisms=frozenset(), extra=dict.fromkeys(GROUPINGS, 2),
                       groups={g: f"{g}{i % 4}" for g in GROUPINGS})
        for i, k in enumerate(ids)
    }  # fmt: skip
    return held, info, ids


def _inner_coverage(held: dict[str, dict[str, float]], info: dict[str, ScoringCase], scale: float) -> float:
    hits = []
    for g in GROUPINGS:
        for grp in {i.groups[g] for i in info.values()}:
            out = [k for k in info if info[k].groups[g] == grp]
            rest = [k for k in info if k not in out]
            q = fit_class_quantiles(held, {k: "training" for k in rest}, {k: frozenset() for k in rest},
                                    {POOLED: scale})  # fmt: skip
            for k in out:
                lo, hi = class_interval(q, "training", set(), 2) or (0.0, 0.0)
                hits.append(lo <= held[g][k] <= hi)
    return float(np.mean(hits))


def test_the_scale_is_fitted_to_the_target_coverage_of_the_cross_fitted_scores() -> None:
    """Two widenings of 1.25 each make the class deciles over-cover; the fitted scale narrows them until 80 %
    of the scores (and no fewer) lie inside, where the unscaled rule covers far more."""
    held, info, ids = _over_covering()
    scales = fit_interval_scales(held, info, ids)
    assert set(scales) == {POOLED, "training"}
    s = scales["training"]
    assert s < 1.0
    assert _inner_coverage(held, info, 1.0) > 0.9
    assert _inner_coverage(held, info, s) >= TARGET_COVERAGE
    assert _inner_coverage(held, info, s * 0.97) < TARGET_COVERAGE


def test_the_scale_keeps_a_one_sided_class_on_its_side() -> None:
    """Scaling is about the deciles' midpoint: residuals all on one side keep the interval there."""
    ids = [f"c{i}" for i in range(MIN_CLASS_CASES)]
    held = {g: {k: -0.5 - 0.05 * i for i, k in enumerate(ids)} for g in GROUPINGS}
    fam, mech = dict.fromkeys(ids, "training"), {k: frozenset[str]() for k in ids}
    lo1, hi1 = fit_class_quantiles(held, fam, mech)["training/dense"]
    lo, hi = fit_class_quantiles(held, fam, mech, {POOLED: 0.5})["training/dense"]
    assert hi < 0 and (lo + hi) == pytest.approx(lo1 + hi1) and hi - lo == pytest.approx(0.5 * (hi1 - lo1))


def test_a_thin_class_is_never_narrowed_by_the_scale() -> None:
    """A class with fewer than MIN_CLASS_CASES cases takes its family's unscaled deciles x 1.25 however
    much the scale narrows the classes with data."""
    n = MIN_CLASS_CASES
    ids = [f"c{i}" for i in range(2 * n)]
    mech = {k: frozenset({"moe"}) if i < 3 else frozenset() for i, k in enumerate(ids)}
    rng = np.random.default_rng(3)
    held = {g: {k: float(rng.normal(0.0, 0.5)) for k in ids} for g in GROUPINGS}
    fam = dict.fromkeys(ids, "training")
    unscaled = fit_class_quantiles(held, fam, mech)
    narrow = fit_class_quantiles(held, fam, mech, {POOLED: 0.5})
    width = {k: q["training/dense"][1] - q["training/dense"][0] for k, q in (("n", narrow), ("u", unscaled))}
    assert width["n"] < width["u"]
    assert narrow["training/moe"] == pytest.approx(unscaled["training/moe"])
    assert narrow["training/moe"] == pytest.approx(
        (unscaled["training/all"][0] * HELDOUT_EXTRA_FACTOR, unscaled["training/all"][1] * 1.25)
    )


def test_the_scale_of_a_scored_group_never_sees_its_residuals() -> None:
    """Nested cross-fitting: moving the residuals of one group leaves the intervals its cases are scored
    against unchanged (classes and scale both fitted on the other groups)."""
    cases = [_case(case_id=f"H{i}", gpu="H100-SXM" if i % 2 else "A100-SXM-80G") for i in range(20)]
    cases += [_case(case_id=f"A{i}", gpu="MI300X") for i in range(6)]
    rng = np.random.default_rng(5)
    base = {c.case_id: float(rng.normal(0.0, 0.3)) for c in cases}
    held = {g: dict(base) for g in GROUPINGS}
    moved = {g: {k: (v + 2.0 if k.startswith("A") else v) for k, v in base.items()} for g in GROUPINGS}
    w0 = {(s.case_id, s.grouping): s.width for s in crossfit_scores(cases, held, fitted=())}
    w1 = {(s.case_id, s.grouping): s.width for s in crossfit_scores(cases, moved, fitted=())}
    vendor_amd = [k for k in w0 if k[1] == "vendor" and k[0].startswith("A")]
    assert vendor_amd and all(w0[k] == pytest.approx(w1[k]) for k in vendor_amd)
    # a case of another group does see them (its scale and classes were fitted with the AMD cases)
    assert any(w0[k] != pytest.approx(w1[k]) for k in w0 if k[1] == "generation" and k[0].startswith("H"))


def test_a_family_inside_its_floor_keeps_its_deciles() -> None:
    """Residuals all inside the floor meet the target at any scale: nothing identifies a narrower interval,
    so the scale stays 1 (not the bottom of the search range); an uncovered class stays wider than dense."""
    held, info, ids = _over_covering()
    small = {g: {k: 0.1 * v for k, v in h.items()} for g, h in held.items()}
    assert fit_interval_scales(small, info, ids)["training"] == 1.0
    q = fit_class_quantiles(small, {k: "training" for k in ids}, {k: frozenset() for k in ids})
    dense = class_interval(q, "training", set())
    new = class_interval(q, "training", {"new_generation"})
    assert dense is not None and new is not None and new[1] - new[0] > dense[1] - dense[0]
