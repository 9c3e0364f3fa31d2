"""Calibration: the profile of fitted parameters, its file format, the fit, and per-case predictions.

The performance model has a few shared parameters (kernel efficiency per GPU generation, the fp8 discount, a
width constant, bandwidth efficiency, a per-step overhead, software-stack multipliers). Each starts at a named
literature prior (:data:`PRIORS`, with its source); :func:`fit_profile` moves the ``fit=True`` ones with
``scipy.optimize.least_squares`` on ``ln(measured / predicted)`` plus a Gaussian prior penalty in log space
(``(ln p - ln prior) / log_sd``), so a parameter with little data stays near its prior. Stack multipliers are
fitted only where at least :data:`MIN_CASES_PER_STACK` cases support them. Intervals come from the
leave-one-out residual quantiles per metric family, with a floor, widened for uncertain specs and for GPU
generations, precisions and stacks without cases.

The parts live in their own modules, re-exported here: :mod:`gpufleet.estimate.priors` (the priors),
:mod:`gpufleet.estimate.profile` (the profile, its file and intervals) and :mod:`gpufleet.estimate.predict`
(per-case predictions). This module holds the fit.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Collection, Mapping, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from gpufleet.estimate.predict import DEFAULT_INPUT_TOKENS as DEFAULT_INPUT_TOKENS
from gpufleet.estimate.predict import DEFAULT_OUTPUT_TOKENS as DEFAULT_OUTPUT_TOKENS
from gpufleet.estimate.predict import DEFAULT_TOKENS_PER_STEP as DEFAULT_TOKENS_PER_STEP
from gpufleet.estimate.predict import DEFAULT_TRAIN_SEQ_TOKENS as DEFAULT_TRAIN_SEQ_TOKENS
from gpufleet.estimate.predict import PREALLOCATING_ENGINES as PREALLOCATING_ENGINES
from gpufleet.estimate.predict import TORCH_ALLOCATED_STACKS as TORCH_ALLOCATED_STACKS
from gpufleet.estimate.predict import (
    CaseNotSupportedError,
    CasePrediction,
    case_software,
    note_hints,
    predict_case,
)
from gpufleet.estimate.predict import _interval_of as _interval_of
from gpufleet.estimate.predict import _need as _need
from gpufleet.estimate.predict import _predict_inference as _predict_inference
from gpufleet.estimate.predict import _predict_memory as _predict_memory
from gpufleet.estimate.predict import _predict_training as _predict_training
from gpufleet.estimate.predict import _stated_layouts as _stated_layouts
from gpufleet.estimate.priors import _PRIOR_TABLE as _PRIOR_TABLE
from gpufleet.estimate.priors import INFER_REFERENCE_STACKS as INFER_REFERENCE_STACKS
from gpufleet.estimate.priors import PRIORS, Prior, prior_params, stack_param
from gpufleet.estimate.priors import TRAIN_REFERENCE_STACKS as TRAIN_REFERENCE_STACKS
from gpufleet.estimate.profile import (
    FAMILIES,
    LOG_INTERVAL_DEFAULT,
    METRIC_FAMILY,
    MIN_CASES_PER_STACK,
    PRIOR_WEIGHT,
    PROFILE_VERSION,
    Z_10_90,
    CalibrationProfile,
    interval_floor,
    load_profile,
    make_interval,
    prior_profile,
    profile_to_dict,
    save_profile,
    with_params,
)
from gpufleet.estimate.profile import LOG_INTERVAL_FLOOR as LOG_INTERVAL_FLOOR
from gpufleet.estimate.profile import WIDEN_ADD as WIDEN_ADD
from gpufleet.estimate.profile import WIDEN_FACTOR as WIDEN_FACTOR
from gpufleet.estimate.profile import _profile_from_text as _profile_from_text
from gpufleet.estimate.profile import _shipped_profile as _shipped_profile

if TYPE_CHECKING:
    from gpufleet.estimate.cases import CalibrationCase

# --- the fit ------------------------------------------------------------------------------------------------


def fitted_parameter_names(cases: Sequence[CalibrationCase]) -> list[str]:
    """Parameters the fit moves: every ``fit=True`` prior, stack multipliers and a stack's host-overhead
    multiplier only with enough cases of that stack."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.rates import software_key

    counts: dict[str, int] = {}
    for c in cases:
        family = METRIC_FAMILY.get(c.metric)
        if family in (None, "memory"):
            continue
        kind = "train" if family == "training" else "infer"
        sw = case_software(c) if kind == "train" else c.software
        name = stack_param(kind, software_key(sw), get_spec(c.gpu).vendor)
        if name:
            counts[name] = counts.get(name, 0) + 1
    out = []
    for name, p in PRIORS.items():
        if not p.fit:
            continue
        if "_stack_" in name and counts.get(name, 0) < MIN_CASES_PER_STACK:
            continue
        stack_of = name.replace("overhead_mult_", "infer_stack_", 1)  # a stack's host overhead: same rule
        if name.startswith("overhead_mult_") and counts.get(stack_of, 0) < MIN_CASES_PER_STACK:
            continue
        out.append(name)
    return out


def _log_ratios(cases: Sequence[CalibrationCase], profile: CalibrationProfile) -> np.ndarray:
    out = np.empty(len(cases))
    for i, c in enumerate(cases):
        out[i] = math.log(c.measured / predict_case(c, profile).predicted)
    return out


#: relative finite-difference step of the fit's Jacobian (scipy ``diff_step``)
DIFF_STEP = 1e-3
#: parameter probes (factors) that find which cases a parameter moves (:func:`jacobian_support`)
SUPPORT_PROBES = (0.7, 1.3)


def jacobian_support(
    cases: Sequence[CalibrationCase], names: Sequence[str], params: Mapping[str, float]
) -> dict[str, frozenset[str]]:
    """The cases each parameter moves near ``params``: those whose prediction changes when the parameter
    alone is scaled by each of :data:`SUPPORT_PROBES` (most parameters touch a few cases: a GPU family, a
    stack). Held-out refits differentiate only these rows (:func:`_solve`)."""
    base = with_params(prior_profile(), params)
    r0 = _log_ratios(cases, base)
    out: dict[str, frozenset[str]] = {}
    for name in names:
        moved = np.zeros(len(cases), dtype=bool)
        for f in SUPPORT_PROBES:
            moved |= _log_ratios(cases, with_params(base, {name: params[name] * f})) != r0
        out[name] = frozenset(c.case_id for c, m in zip(cases, moved, strict=True) if m)
    return out


def _solve(
    cases: Sequence[CalibrationCase],
    names: Sequence[str],
    base: CalibrationProfile,
    x0: np.ndarray | None = None,
    tol: float = 1e-8,
    support: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, float]:
    """Least squares in log parameters (module doc). ``support`` (:func:`jacobian_support`): the Jacobian
    is the same forward difference scipy takes, evaluated only on the cases each parameter moves (the other
    entries are zero); None = scipy's dense finite differences."""
    from scipy.optimize import least_squares

    prior_x = np.array([math.log(PRIORS[n].value) for n in names])
    sd = np.array([PRIORS[n].log_sd for n in names])
    last: dict[bytes, np.ndarray] = {}

    def prof_at(x: np.ndarray) -> CalibrationProfile:
        return with_params(base, dict(zip(names, np.exp(x).tolist(), strict=True)))

    def residuals(x: np.ndarray) -> np.ndarray:
        data = _log_ratios(cases, prof_at(x))
        last.clear()
        last[x.tobytes()] = data
        return np.concatenate([data, PRIOR_WEIGHT * (x - prior_x) / sd])

    # efficiencies stay physical: at most 1 (fractions of peak), overheads within 100x of their priors
    upper = np.array([0.0 if PRIORS[n].value <= 1.0 and n != "step_overhead_s" else x + 4.6
                      for n, x in zip(names, prior_x, strict=True)])  # fmt: skip
    lower = prior_x - 4.6
    sup = support or {}
    rows = [
        np.array([i for i, c in enumerate(cases) if c.case_id in sup.get(n, ())], dtype=int) for n in names
    ]

    def jacobian(x: np.ndarray) -> np.ndarray:
        # scipy's 2-point scheme: h = DIFF_STEP * sign(x) * max(1, |x|), reversed where it leaves the bounds
        f0 = last.get(x.tobytes())
        if f0 is None:
            f0 = _log_ratios(cases, prof_at(x))
        jac = np.zeros((len(cases) + len(names), len(names)))
        for j, idx in enumerate(rows):
            h = DIFF_STEP * (1.0 if x[j] >= 0 else -1.0) * max(1.0, abs(float(x[j])))
            xh = x.copy()
            xh[j] = x[j] + h
            if not lower[j] <= xh[j] <= upper[j]:
                xh[j] = x[j] - h
            dx = xh[j] - x[j]
            if idx.size:
                moved = _log_ratios([cases[i] for i in idx], prof_at(xh))
                jac[idx, j] = (moved - f0[idx]) / dx
            jac[len(cases) + j, j] = PRIOR_WEIGHT / sd[j]
        return jac

    start = np.clip(prior_x if x0 is None else x0, lower + 1e-9, upper - 1e-9)
    sol = least_squares(
        residuals, start, jac=jacobian if support is not None else "2-point", bounds=(lower, upper),
        x_scale=1.0, diff_step=DIFF_STEP, max_nfev=200, ftol=tol, xtol=tol, gtol=tol,
    )  # fmt: skip
    return dict(zip(names, np.exp(sol.x).tolist(), strict=True))


#: from this many residuals in a family on, its interval is the empirical p10/p90 (an outlier does not
#: inflate every interval of the family through the RMS); below, at least the normal deciles of the RMS
EMPIRICAL_DECILES_MIN_CASES = 10


def requantile(profile: CalibrationProfile, cases: Sequence[CalibrationCase]) -> CalibrationProfile:
    """``profile`` with its interval quantiles recomputed from its stored leave-one-out and
    leave-generation-out residuals (no refit): what :func:`fit_profile` writes with the current rule."""
    families = {c.case_id: METRIC_FAMILY[c.metric] for c in cases if c.case_id in profile.residuals}
    loo = {k: v for k, v in profile.loo_residuals.items() if k in families}
    inside = {c.case_id for c in cases if c.case_id in families and inside_case(c, profile.fitted)}
    usable = [c for c in cases if c.case_id in families]
    return dataclasses.replace(
        profile,
        log_residual_quantiles=MappingProxyType(
            _family_quantiles({k: v for k, v in loo.items() if k in inside}, families, fallback=loo)
        ),
        heldout_quantiles=MappingProxyType(
            heldout_class_quantiles(usable, profile.logo_residuals, profile.fitted)
        ),
    )


def heldout_class_quantiles(
    cases: Sequence[CalibrationCase], logo: Mapping[str, Mapping[str, float]], fitted: Collection[str] = ()
) -> dict[str, tuple[float, float]]:
    """The held-out interval quantiles per speed family and mechanism class from the leave-group-out
    residuals ``logo`` (grouping -> case id -> ln ratio), scaled to the target coverage of their cross-fitted
    scores (:func:`gpufleet.estimate.intervals.fit_heldout_quantiles`; ``fitted``: the fit's parameter
    names, which tell a fitted stack); empty when no grouping was run."""
    from gpufleet.estimate.intervals import fit_heldout_quantiles, scoring_cases

    if not logo:
        return {}
    info = scoring_cases(cases, logo, fitted)
    return fit_heldout_quantiles(logo, info, list(info))


def inside_case(case: CalibrationCase, fitted: Sequence[str]) -> bool:
    """Whether the estimator gives ``case`` the inside (calibrated) interval: a dense model on a GPU with a
    published 16-bit peak and a certain spec, on a reference or fitted stack (the reasons
    :func:`gpufleet.estimate.rates._widen` counts, less the calibrated class every fitted case has)."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.rates import software_key
    from gpufleet.models.registry import resolve_model

    family = METRIC_FAMILY[case.metric]
    if family == "memory":
        return True
    spec = get_spec(case.gpu)
    if resolve_model(case.model).is_moe or spec.uncertain or not (spec.bf16_tflops or spec.fp16_tflops):
        return False
    if family == "training":
        name = stack_param("train", software_key(case_software(case)), spec.vendor)
    else:
        name = stack_param("infer", software_key(case.software))
    return name is None or name in fitted


#: fewest inside cases of a family from which its inside interval uses them alone (else all of the family)
INSIDE_MIN_CASES = 5


def _family_quantiles(
    resid: Mapping[str, float],
    families: Mapping[str, str],
    fallback: Mapping[str, float] | None = None,
) -> dict[str, tuple[float, float]]:
    """p10/p90 of ``resid`` per family (rule in the module doc); a family with fewer than
    :data:`INSIDE_MIN_CASES` residuals in ``resid`` takes those of ``fallback`` where given."""
    out: dict[str, tuple[float, float]] = {}
    for fam in FAMILIES:
        floor = interval_floor(fam)
        r = np.array([v for k, v in resid.items() if families[k] == fam])
        if fallback is not None and r.size < INSIDE_MIN_CASES:
            r = np.array([v for k, v in fallback.items() if families[k] == fam])
        if r.size == 0:
            out[fam] = (-LOG_INTERVAL_DEFAULT, LOG_INTERVAL_DEFAULT)
        elif r.size < 5:  # too few for empirical deciles: the largest error either way
            m = float(np.max(np.abs(r)))
            out[fam] = (min(-m, -floor), max(m, floor))
        elif (
            r.size >= EMPIRICAL_DECILES_MIN_CASES
        ):  # enough cases: the empirical deciles (skew kept), floored
            out[fam] = (
                min(float(np.quantile(r, 0.1)), -floor),
                max(float(np.quantile(r, 0.9)), floor),
            )
        else:  # empirical deciles, at least the normal deciles of the RMS error (few cases: noisy deciles)
            spread = Z_10_90 * float(np.sqrt(np.mean(r**2)))
            out[fam] = (
                min(float(np.quantile(r, 0.1)), -spread, -floor),
                max(float(np.quantile(r, 0.9)), spread, floor),
            )
    return out


#: groupings held out whole by the leave-group-out validation: each maps a case to its group
GROUPINGS: tuple[str, ...] = ("vendor", "generation", "software", "family")


def case_group(case: CalibrationCase, grouping: str) -> str:
    """The group of ``case`` under ``grouping`` (:data:`GROUPINGS`): GPU vendor, GPU architecture
    (generation), software stack (as the estimator keys it; blank = unknown) or metric family."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.rates import software_key

    if grouping == "vendor":
        return get_spec(case.gpu).vendor
    if grouping == "generation":
        return get_spec(case.gpu).architecture
    if grouping == "software":
        family = METRIC_FAMILY[case.metric]
        return software_key(case_software(case) if family == "training" else case.software)
    if grouping == "family":
        return METRIC_FAMILY[case.metric]
    raise ValueError(f"unknown grouping {grouping!r}; allowed: {', '.join(GROUPINGS)}")


#: convergence tolerance (scipy ``ftol``/``xtol``/``gtol``) of the held-out refits, which start at the full
#: fit: a relative change of 1e-5 in the cost or log parameters moves a held-out residual by well under 0.1 %
REFIT_TOL = 1e-5


def _refit_residuals(
    train: Sequence[CalibrationCase],
    test: Sequence[CalibrationCase],
    base: CalibrationProfile,
    warm: dict[str, float],
    support: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, float]:
    """Fit on ``train`` (warm-started at the full fit) and return the residuals of ``test``."""
    names = fitted_parameter_names(train)
    x0 = np.array([math.log(warm.get(n, PRIORS[n].value)) for n in names])
    p = _solve(train, names, base, x0, tol=REFIT_TOL, support=support) if names else {}
    prof = with_params(base, p)
    return {c.case_id: float(r) for c, r in zip(test, _log_ratios(test, prof), strict=True)}


def _refit_job(
    train: Sequence[CalibrationCase],
    test: Sequence[CalibrationCase],
    warm: dict[str, float],
    support: Mapping[str, frozenset[str]] | None = None,
) -> dict[str, float]:
    """One held-out refit from the priors' profile (a picklable unit of work for worker processes)."""
    return _refit_residuals(train, test, prior_profile(), warm, support)


def held_out_residuals(
    cases: Sequence[CalibrationCase],
    held_out: Sequence[frozenset[str]],
    warm: dict[str, float],
    jobs: int = 1,
    support: Mapping[str, frozenset[str]] | None = None,
) -> dict[frozenset[str], dict[str, float]]:
    """Residuals of each held-out set of case ids under a fit on the other ``cases`` (warm-started at
    ``warm``). Each distinct set is fitted once (a group of one case is its leave-one-out refit), and the
    refits run in ``jobs`` worker processes (independent and deterministic, so the result does not depend
    on ``jobs``). ``support`` (:func:`jacobian_support` at ``warm``) limits each Jacobian to the cases a
    parameter moves."""
    todo = list(dict.fromkeys(held_out))
    work = [
        ([c for c in cases if c.case_id not in ids], [c for c in cases if c.case_id in ids]) for ids in todo
    ]
    if jobs <= 1 or len(work) <= 1:
        results = [_refit_job(train, test, warm, support) for train, test in work]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(_refit_job, train, test, warm, support) for train, test in work]
            results = [f.result() for f in futures]
    return dict(zip(todo, results, strict=True))


def _groups(cases: Sequence[CalibrationCase], grouping: str) -> list[frozenset[str]]:
    groups: dict[str, set[str]] = {}
    for c in cases:
        groups.setdefault(case_group(c, grouping), set()).add(c.case_id)
    return [frozenset(v) for v in groups.values()]


def leave_group_out(
    cases: Sequence[CalibrationCase],
    base: CalibrationProfile,
    warm: dict[str, float],
    grouping: str,
    jobs: int = 1,
) -> dict[str, float]:
    """Residual of every case when the fit saw no case of its group (memory cases: no fitted parameter
    moves them, so their residual is the fit's). ``base`` must be the priors' profile (kept for callers)."""
    del base  # every refit starts from prior_profile(), the base fit_profile uses
    out: dict[str, float] = {}
    for res in held_out_residuals(cases, _groups(cases, grouping), warm, jobs).values():
        out.update(res)
    return out


def fit_profile(
    cases: Sequence[CalibrationCase],
    *,
    leave_one_out: bool = True,
    source: str = "",
    leave_groups_out: Sequence[str] = (),
    jobs: int = 1,
) -> CalibrationProfile:
    """Fit the shared parameters to ``cases`` (module doc); residual quantiles from leave-one-out errors,
    held-out quantiles from the leave-``generation``-out errors when that grouping is run. The held-out
    refits run in ``jobs`` processes; each distinct held-out set is fitted once."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.rates import precision_class

    base = prior_profile()
    usable: list[CalibrationCase] = []
    for c in cases:
        try:
            predict_case(c, base)
        except CaseNotSupportedError:
            continue
        usable.append(c)
    if not usable:
        raise CaseNotSupportedError(
            "None of the calibration cases can be estimated, so nothing can be fitted. Check the case file "
            "(models, GPUs and the fields each metric needs)."
        )
    speed = [c for c in usable if METRIC_FAMILY[c.metric] != "memory"]
    names = fitted_parameter_names(speed)
    params = _solve(speed, names, base) if speed else {}
    fitted = with_params(base, params)
    resid = {c.case_id: float(r) for c, r in zip(usable, _log_ratios(usable, fitted), strict=True)}
    loo = dict(resid)
    singles = [frozenset({c.case_id}) for c in speed] if leave_one_out and len(speed) > 1 else []
    by_grouping = {g: _groups(speed, g) for g in leave_groups_out}
    sets = singles + [ids for groups in by_grouping.values() for ids in groups]
    support = jacobian_support(speed, names, params) if sets else None
    done = held_out_residuals(speed, sets, params, jobs, support) if sets else {}
    for ids in singles:
        loo.update(done[ids])
    logo: dict[str, dict[str, float]] = {}
    for grouping, groups in by_grouping.items():
        held = dict(resid)
        for ids in groups:
            held.update(done[ids])
        logo[grouping] = held
    families = {c.case_id: METRIC_FAMILY[c.metric] for c in usable}
    calibrated = sorted({f"{get_spec(c.gpu).architecture}/{precision_class(c.precision)}" for c in speed})
    heldout = heldout_class_quantiles(usable, logo, names)
    inside = {c.case_id for c in usable if inside_case(c, names)}
    loo_inside = {k: v for k, v in loo.items() if k in inside}
    return CalibrationProfile(
        params=MappingProxyType(dict(fitted.params)),
        fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
        case_count=len(usable),
        log_residual_quantiles=MappingProxyType(_family_quantiles(loo_inside, families, fallback=loo)),
        residuals=MappingProxyType(resid),
        version=PROFILE_VERSION,
        source=source or f"fit_profile over {len(usable)} cases",
        loo_residuals=MappingProxyType(loo),
        calibrated=tuple(calibrated),
        fitted=tuple(names),
        logo_residuals=MappingProxyType({k: MappingProxyType(v) for k, v in logo.items()}),
        heldout_quantiles=MappingProxyType(heldout),
    )


__all__ = [
    "FAMILIES",
    "GROUPINGS",
    "METRIC_FAMILY",
    "PRIORS",
    "PROFILE_VERSION",
    "CalibrationProfile",
    "CaseNotSupportedError",
    "CasePrediction",
    "Prior",
    "case_group",
    "fit_profile",
    "fitted_parameter_names",
    "held_out_residuals",
    "heldout_class_quantiles",
    "inside_case",
    "jacobian_support",
    "leave_group_out",
    "load_profile",
    "make_interval",
    "note_hints",
    "predict_case",
    "prior_params",
    "prior_profile",
    "profile_to_dict",
    "requantile",
    "save_profile",
    "stack_param",
    "with_params",
]
