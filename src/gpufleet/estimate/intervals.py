"""Held-out intervals: p10/p90 of the leave-group-out residuals per metric family and mechanism class.

An estimate's p10-p90 interval says where a measurement the calibration never saw should fall. The profile's
leave-group-out residuals (``profile.logo_residuals``: every case predicted by a fit that saw no case of its
vendor, GPU generation, software stack or metric family) are that error, so the interval is fitted on them:

- **classes.** Per speed family (training = the training task; throughput and latency = inference) the cases
  split into mechanism classes (:data:`gpufleet.estimate.rates.MECHANISMS`): ``moe`` (a mixture-of-experts
  model), ``quantised`` (weights below 16 bits: fp8, int8, fp4, int4, nf4), ``multinode`` (more GPUs than one
  scale-up domain) and ``dense`` (none of those). A class's quantiles are the empirical p10/p90 of its cases'
  held-out residuals pooled over the groupings run (each case counts once per grouping, so equally).
  ``new_generation`` (a GPU generation or precision class without cases) takes the leave-generation-out
  residuals of every case of the family: that grouping is exactly a generation the fit has not seen.
- **scale** (:func:`fit_interval_scales`): the class rule alone over-covers held out (an estimate in
  several classes takes their envelope, each reason no class covers widens it, the floor lifts narrow
  classes), so each family's class deciles are scaled about their midpoint (the spread times ``s``, the
  shift kept) by the smallest ``s`` at which :data:`TARGET_COVERAGE` (80 %) of the family's own
  cross-fitted scores lie inside: the scale is fitted on the same scoring as the reported coverage, not
  set. A family with fewer than :data:`MIN_CLASS_CASES` cases takes the scale fitted over every speed
  family.
- **pooling.** A class needs :data:`MIN_CLASS_CASES` cases; with fewer it takes the family's deciles,
  never narrowed (scale ``max(s, 1)``: a few cases cannot show that a mechanism is better known than
  the data say), widened by :data:`~gpufleet.estimate.profile.HELDOUT_EXTRA_FACTOR` (a mechanism the
  data barely covers is not given the dense cases' confidence); a family with fewer cases takes the
  deciles of every speed family's cases (at the pooled scale), and fewer than that in all gets +-ln 2. A
  mechanism class whose unscaled deciles lie inside the floor on both sides (the data cannot show its
  extra error) takes the dense interval widened by ``HELDOUT_EXTRA_FACTOR``, as a class with too few
  cases does.
- **an estimate** in several classes takes the envelope of their intervals; each further reason it lies
  outside the data that no class covers (an uncertain spec, an unfitted stack) widens it by
  ``HELDOUT_EXTRA_FACTOR``; then every half-width is at least the family's floor
  (:func:`~gpufleet.estimate.profile.interval_floor`: run-to-run spread, a minimum of the final
  interval, not of a class). Memory keeps its leave-one-out interval: no fitted parameter moves a memory
  case, so its held-out residual is its in-sample one.
- **scoring** (:func:`crossfit_scores`): the stated coverage is itself out of sample. For every grouping and
  group, the class quantiles are refitted without that group's cases, and each of its cases is scored
  against the interval the estimator would give it then (its generation new under the generation and vendor
  groupings, its stack unfitted under the software grouping). The held-out residuals of the other cases come
  from refits that saw the scored group; the quantiles never saw the scored cases. Nested: the scales
  are fitted on the other groups' cases alone (their own cross-fitted scores among themselves), so the
  reported coverage is out of sample for the scale too.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from gpufleet.estimate.profile import (
    LOG_INTERVAL_DEFAULT,
    METRIC_FAMILY,
    class_interval,
    class_key,
    heldout_widened,
    interval_floor,
)

if TYPE_CHECKING:
    from gpufleet.estimate.cases import CalibrationCase

#: speed families whose intervals come from the held-out residuals (memory keeps its leave-one-out interval)
SPEED_FAMILIES: tuple[str, ...] = ("training", "throughput", "latency")
#: fewest cases of a class from which its own held-out residuals set its interval (below: the family's,
#: widened). 8 cases x 4 groupings = 32 residuals: p10 and p90 then rest on 3 residuals either side.
MIN_CLASS_CASES = 8
#: classes fitted on the pooled held-out residuals of their cases (``new_generation`` is separate)
CASE_CLASSES: tuple[str, ...] = ("dense", "moe", "quantised", "multinode")


def case_mechanisms(case: CalibrationCase) -> frozenset[str]:
    """The mechanism classes of a calibration case as the estimator assigns them when it predicts it with the
    shipped profile (:func:`gpufleet.estimate.rates._widen`, ``Widening.spanning``): MoE model, quantised
    weights, more GPUs than one scale-up domain (``new_generation`` never: every case's class is fitted)."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.rates import scaleup_domain_gpus
    from gpufleet.models.registry import resolve_model
    from gpufleet.precision import UNQUANTISED_BYTES_PER_ELEMENT, bytes_per_element

    out = set()
    if resolve_model(case.model).is_moe:
        out.add("moe")
    if case.precision and bytes_per_element(case.precision) < UNQUANTISED_BYTES_PER_ELEMENT:
        out.add("quantised")
    spec = get_spec(case.gpu)
    if case.gpu_count > scaleup_domain_gpus(spec, case.gpu_count):
        out.add("multinode")
    return frozenset(out)


#: share of held-out measurements a p10-p90 interval should hold: the scale of each family's intervals is
#: fitted so that this share of its cross-fitted scores falls inside (:func:`fit_interval_scales`)
TARGET_COVERAGE = 0.80
#: range searched for a family's interval scale [-]: a quarter to four times its classes' held-out deciles
SCALE_RANGE: tuple[float, float] = (0.25, 4.0)
#: bisection steps of the scale search (log-spaced range / 2^24: far finer than the scores can resolve)
SCALE_SEARCH_STEPS = 24
#: ``scales`` key of the scale fitted over every speed family's scores, for a family too thin for its own
POOLED = "all"

# one family's held-out deciles before scaling: (lo, hi) of its whole, per class (None: fewer than
# MIN_CLASS_CASES cases) and of new_generation, and where the whole came from ("family", "pooled", "default")
_RawFamily = tuple[tuple[float, float], str, dict[str, tuple[float, float] | None]]


def _deciles(values: Sequence[float]) -> tuple[float, float]:
    lo, hi = np.quantile(np.asarray(values, dtype=float), [0.1, 0.9])
    return float(lo), float(hi)


def _times(q: tuple[float, float], scale: float) -> tuple[float, float]:
    """``q`` scaled about its midpoint: the spread ``scale`` times, the shift kept (a class whose residuals
    all lie on one side keeps that side)."""
    mid = 0.5 * (q[0] + q[1])
    return mid + scale * (q[0] - mid), mid + scale * (q[1] - mid)


def _raw_deciles(
    held: Mapping[str, Mapping[str, float]],
    families: Mapping[str, str],
    mechanisms: Mapping[str, Collection[str]],
) -> dict[str, _RawFamily]:
    """The unscaled, unfloored p10/p90 of each speed family's held-out residuals per class (module doc)."""
    gen = held.get("generation", {})
    usable = [k for k, f in families.items() if f in SPEED_FAMILIES and all(k in h for h in held.values())]

    def pooled(members: Sequence[str]) -> list[float]:
        return [h[k] for h in held.values() for k in members]

    out: dict[str, _RawFamily] = {}
    for fam in SPEED_FAMILIES:
        ids = [k for k in usable if families[k] == fam]
        if held and len(ids) >= MIN_CLASS_CASES:
            whole, source = _deciles(pooled(ids)), "family"
        elif held and len(usable) >= MIN_CLASS_CASES:  # too few of the family: every speed family's
            whole, source = _deciles(pooled(usable)), "pooled"
        else:
            whole, source = (-LOG_INTERVAL_DEFAULT, LOG_INTERVAL_DEFAULT), "default"
        classes: dict[str, tuple[float, float] | None] = {}
        for mech in CASE_CLASSES:
            members = [k for k in ids if (mech in mechanisms[k]) or (mech == "dense" and not mechanisms[k])]
            classes[mech] = _deciles(pooled(members)) if len(members) >= MIN_CLASS_CASES else None
        gen_ids = [k for k in ids if k in gen]
        classes["new_generation"] = (
            _deciles([gen[k] for k in gen_ids]) if len(gen_ids) >= MIN_CLASS_CASES else None
        )
        out[fam] = (whole, source, classes)
    return out


def _scaled(raw: Mapping[str, _RawFamily], scales: Mapping[str, float]) -> dict[str, tuple[float, float]]:
    """``family/class`` -> (q10, q90) from unscaled deciles (module doc, "scale" and "pooling")."""
    out: dict[str, tuple[float, float]] = {}
    for fam, (whole_raw, source, classes) in raw.items():
        s = scales.get(POOLED, 1.0) if source == "pooled" else scales.get(fam, scales.get(POOLED, 1.0))
        if source == "default":
            whole = thin = whole_raw
        else:
            whole = _times(whole_raw, s)
            thin = _times(whole_raw, max(s, 1.0))  # too little data to narrow a class on
        out[class_key(fam, "all")] = whole
        dense_raw = classes["dense"]
        dense = whole if dense_raw is None else _times(dense_raw, s)
        out[class_key(fam, "dense")] = dense
        floor = interval_floor(fam)

        def floored(q: tuple[float, float]) -> tuple[float, float]:
            return min(q[0], -floor), max(q[1], floor)  # noqa: B023 (used within this iteration)

        for mech in (*CASE_CLASSES[1:], "new_generation"):
            q = classes[mech]
            # a class the data do not resolve takes the interval a dense estimate gets, floor included,
            # widened: never as narrow as the dense one
            if q is None:
                out[class_key(fam, mech)] = heldout_widened(floored(thin))
            elif -floor <= q[0] and q[1] <= floor:  # residuals inside the floor show no extra error
                out[class_key(fam, mech)] = heldout_widened(floored(dense))
            else:
                out[class_key(fam, mech)] = _times(q, s)
    return out


def fit_class_quantiles(
    held: Mapping[str, Mapping[str, float]],
    families: Mapping[str, str],
    mechanisms: Mapping[str, Collection[str]],
    scales: Mapping[str, float] | None = None,
) -> dict[str, tuple[float, float]]:
    """``family/class`` -> (q10, q90) of ln(measured / predicted) (module doc). ``held``: grouping -> case
    id -> held-out residual; ``families`` and ``mechanisms`` of every case to use (others are ignored);
    ``scales``: family (or :data:`POOLED`) -> interval scale (:func:`fit_interval_scales`; default 1)."""
    return _scaled(_raw_deciles(held, families, mechanisms), scales or {})


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringCase:
    """What scoring a case's held-out residual needs (:func:`scoring_cases`)."""

    family: str
    mechanisms: frozenset[str]  # its classes (case_mechanisms)
    groups: Mapping[str, str]  # grouping -> its group
    extra: Mapping[str, int]  # grouping -> reasons no class covers when scored under that grouping


def scoring_cases(
    cases: Sequence[CalibrationCase], held: Mapping[str, Mapping[str, float]], fitted: Collection[str]
) -> dict[str, ScoringCase]:
    """Case id -> :class:`ScoringCase` for every speed case with a residual under every grouping of
    ``held``; ``fitted``: the full fit's parameter names (to tell a stack the fit moved). Under the software
    grouping a case's stack is unfitted; an uncertain spec or one without a 16-bit peak counts always."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.calibration import case_group
    from gpufleet.estimate.predict import case_software
    from gpufleet.estimate.priors import stack_param
    from gpufleet.estimate.rates import software_key

    out: dict[str, ScoringCase] = {}
    for c in cases:
        fam = METRIC_FAMILY[c.metric]
        if fam not in SPEED_FAMILIES or not all(c.case_id in h for h in held.values()):
            continue
        spec = get_spec(c.gpu)
        kind = "train" if fam == "training" else "infer"
        sw = case_software(c) if kind == "train" else c.software
        stack = stack_param(kind, software_key(sw), spec.vendor)
        base = 1 if spec.uncertain or not (spec.bf16_tflops or spec.fp16_tflops) else 0
        unfitted = {g: stack is not None and (g == "software" or stack not in fitted) for g in held}
        extra = {g: base + (1 if unfitted[g] else 0) for g in held}
        out[c.case_id] = ScoringCase(
            family=fam, mechanisms=case_mechanisms(c), groups={g: case_group(c, g) for g in held}, extra=extra
        )
    return out


def _scored_interval(
    q: Mapping[str, tuple[float, float]], info: ScoringCase, grouping: str
) -> tuple[frozenset[str], tuple[float, float] | None]:
    """The classes and (lo, hi) a case gets when scored under ``grouping`` (its generation new under the
    generation and vendor groupings)."""
    m = info.mechanisms | {"new_generation"} if grouping in ("generation", "vendor") else info.mechanisms
    return m, class_interval(q, info.family, m, info.extra[grouping])


def _inner_folds(
    held: Mapping[str, Mapping[str, float]], info: Mapping[str, ScoringCase], ids: Collection[str]
) -> list[tuple[str, list[str], dict[str, _RawFamily]]]:
    """(grouping, scored ids, unscaled deciles fitted without them) for every group of ``ids``."""
    folds: list[tuple[str, list[str], dict[str, _RawFamily]]] = []
    for grouping in held:
        groups: dict[str, list[str]] = {}
        for k in ids:
            groups.setdefault(info[k].groups[grouping], []).append(k)
        for members in groups.values():
            out = set(members)
            train = {k: info[k].family for k in ids if k not in out}
            mechs = {k: info[k].mechanisms for k in train}
            folds.append((grouping, members, _raw_deciles(held, train, mechs)))
    return folds


def fit_interval_scales(
    held: Mapping[str, Mapping[str, float]], info: Mapping[str, ScoringCase], ids: Collection[str]
) -> dict[str, float]:
    """Family (and :data:`POOLED`) -> the smallest scale of its held-out deciles at which
    :data:`TARGET_COVERAGE` of its cases' cross-fitted scores over ``ids`` lie inside p10-p90.

    The scores are those of :func:`crossfit_scores` restricted to ``ids`` (every group of ``ids`` under
    every grouping scored against the intervals fitted on the rest of ``ids``), so the scale absorbs what
    the class rule itself does not fit: the envelope of several classes, the widening per reason no class
    covers, the floors. A family with fewer than :data:`MIN_CLASS_CASES` cases in ``ids`` takes the pooled
    scale. Coverage never falls as the scale grows, so a bisection finds it; a family short of the target
    even at :data:`SCALE_RANGE`'s top takes that, and one that meets it even at the bottom (its intervals
    are at the floor whatever the scale: nothing identifies a narrower one) keeps 1."""
    ids = [k for k in ids if k in info]
    folds = _inner_folds(held, info, ids)
    targets = [POOLED] + [
        f for f in SPEED_FAMILIES if sum(info[k].family == f for k in ids) >= MIN_CLASS_CASES
    ]

    def coverage(target: str, scale: float) -> float:
        hits: list[bool] = []
        for grouping, members, raw in folds:
            scored = [k for k in members if target == POOLED or info[k].family == target]
            if not scored:
                continue
            q = _scaled(raw, {POOLED: scale})
            for k in scored:
                got = _scored_interval(q, info[k], grouping)[1]
                if got is not None:
                    hits.append(got[0] <= held[grouping][k] <= got[1])
        return float(np.mean(hits)) if hits else 1.0

    out: dict[str, float] = {}
    for target in targets:
        lo, hi = math.log(SCALE_RANGE[0]), math.log(SCALE_RANGE[1])
        if coverage(target, math.exp(hi)) < TARGET_COVERAGE:
            out[target] = math.exp(hi)
            continue
        if coverage(target, math.exp(lo)) >= TARGET_COVERAGE:  # the floors alone hold the target: the
            out[target] = 1.0  # deciles are not identified below them, so they stay as measured
            continue
        for _ in range(SCALE_SEARCH_STEPS):
            mid = 0.5 * (lo + hi)
            if coverage(target, math.exp(mid)) >= TARGET_COVERAGE:
                hi = mid
            else:
                lo = mid
        out[target] = math.exp(hi)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldOutScore:
    """One case scored against the interval fitted without its group (:func:`crossfit_scores`)."""

    case_id: str
    grouping: str
    family: str
    mechanisms: frozenset[str]  # the classes its interval used (with new_generation where applicable)
    inside: bool  # the held-out residual lies in [lo, hi]
    width: float  # p90 / p10 of that interval [-]


def fit_heldout_quantiles(
    held: Mapping[str, Mapping[str, float]], info: Mapping[str, ScoringCase], ids: Collection[str]
) -> dict[str, tuple[float, float]]:
    """The class quantiles fitted on the cases ``ids`` (of ``info``): scales from their cross-fitted scores
    (:func:`fit_interval_scales`), then the scaled class deciles (:func:`fit_class_quantiles`)."""
    ids = [k for k in ids if k in info]
    families = {k: info[k].family for k in ids}
    mechs = {k: info[k].mechanisms for k in ids}
    return fit_class_quantiles(held, families, mechs, fit_interval_scales(held, info, ids))


def crossfit_scores(
    cases: Sequence[CalibrationCase],
    held: Mapping[str, Mapping[str, float]],
    fitted: Collection[str],
    memory_quantiles: tuple[float, float] | None = None,
) -> list[HeldOutScore]:
    """Every (case, grouping) scored out of sample (module doc, "scoring"). ``held``: grouping -> case id ->
    held-out residual (the profile's ``logo_residuals``); ``fitted``: the full fit's parameter names (to
    tell a stack the fit moved). Memory cases are scored against ``memory_quantiles`` where given. Nested:
    the scales, too, are fitted without the scored group (:func:`fit_heldout_quantiles` on the rest)."""
    from gpufleet.estimate.calibration import case_group

    info = scoring_cases(cases, held, fitted)
    out: list[HeldOutScore] = []
    for grouping, resid in held.items():
        groups: dict[str, list[CalibrationCase]] = {}
        for c in cases:
            if all(c.case_id in h for h in held.values()):
                groups.setdefault(case_group(c, grouping), []).append(c)
        for members in groups.values():
            ids = {c.case_id for c in members}
            q = fit_heldout_quantiles(held, info, [k for k in info if k not in ids])
            for c in members:
                r = resid[c.case_id]
                if c.case_id in info:
                    m, got = _scored_interval(q, info[c.case_id], grouping)
                    fam = info[c.case_id].family
                elif METRIC_FAMILY[c.metric] == "memory" and memory_quantiles is not None:
                    m, got, fam = frozenset[str](), memory_quantiles, "memory"
                else:
                    continue
                if got is None:
                    continue
                lo, hi = got
                out.append(
                    HeldOutScore(
                        case_id=c.case_id, grouping=grouping, family=fam, mechanisms=m,
                        inside=lo <= r <= hi, width=math.exp(hi - lo),
                    )
                )  # fmt: skip
    return out


__all__ = [
    "CASE_CLASSES",
    "MIN_CLASS_CASES",
    "POOLED",
    "SCALE_RANGE",
    "SPEED_FAMILIES",
    "TARGET_COVERAGE",
    "HeldOutScore",
    "ScoringCase",
    "case_mechanisms",
    "class_interval",
    "class_key",
    "crossfit_scores",
    "fit_class_quantiles",
    "fit_heldout_quantiles",
    "fit_interval_scales",
    "scoring_cases",
]
