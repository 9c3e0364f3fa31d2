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
- **pooling.** A class needs :data:`MIN_CLASS_CASES` cases; with fewer it takes the family's quantiles over
  all its cases widened by :data:`~gpufleet.estimate.profile.HELDOUT_EXTRA_FACTOR` (a mechanism the data
  barely covers is not given the dense cases' confidence); a family with fewer cases takes the quantiles of
  every speed family's cases, and fewer than that in all gets +-ln 2. A mechanism class whose residuals
  lie inside the floor on both sides (the data cannot show its extra error) takes the dense interval
  widened by ``HELDOUT_EXTRA_FACTOR``, as a class with too few cases does. Every
  half-width is at least the family's floor (:func:`~gpufleet.estimate.profile.interval_floor`).
- **an estimate** in several classes takes the envelope of their intervals; each further reason it lies
  outside the data that no class covers (an uncertain spec, an unfitted stack) widens it by
  ``HELDOUT_EXTRA_FACTOR``. Memory keeps its leave-one-out interval: no fitted parameter moves a memory case,
  so its held-out residual is its in-sample one.
- **scoring** (:func:`crossfit_scores`): the stated coverage is itself out of sample. For every grouping and
  group, the class quantiles are refitted without that group's cases, and each of its cases is scored
  against the interval the estimator would give it then (its generation new under the generation and vendor
  groupings, its stack unfitted under the software grouping). The held-out residuals of the other cases come
  from refits that saw the scored group; the quantiles never saw the scored cases.
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


def _deciles(values: Sequence[float], family: str) -> tuple[float, float]:
    floor = interval_floor(family)
    lo, hi = np.quantile(np.asarray(values, dtype=float), [0.1, 0.9])
    return min(float(lo), -floor), max(float(hi), floor)


def fit_class_quantiles(
    held: Mapping[str, Mapping[str, float]],
    families: Mapping[str, str],
    mechanisms: Mapping[str, Collection[str]],
) -> dict[str, tuple[float, float]]:
    """``family/class`` -> (q10, q90) of ln(measured / predicted) (module doc). ``held``: grouping -> case
    id -> held-out residual; ``families`` and ``mechanisms`` of every case to use (others are ignored)."""
    out: dict[str, tuple[float, float]] = {}
    gen = held.get("generation", {})
    usable = [k for k, f in families.items() if f in SPEED_FAMILIES and all(k in h for h in held.values())]

    def pooled(members: Sequence[str]) -> list[float]:
        return [h[k] for h in held.values() for k in members]

    for fam in SPEED_FAMILIES:
        ids = [k for k in usable if families[k] == fam]
        if held and len(ids) >= MIN_CLASS_CASES:
            whole = _deciles(pooled(ids), fam)
        elif held and len(usable) >= MIN_CLASS_CASES:  # too few of the family: every speed family's
            whole = _deciles(pooled(usable), fam)
        else:
            whole = (-LOG_INTERVAL_DEFAULT, LOG_INTERVAL_DEFAULT)
        out[class_key(fam, "all")] = whole
        for mech in CASE_CLASSES:
            members = [k for k in ids if (mech in mechanisms[k]) or (mech == "dense" and not mechanisms[k])]
            if len(members) >= MIN_CLASS_CASES:
                out[class_key(fam, mech)] = _deciles(pooled(members), fam)
            else:
                out[class_key(fam, mech)] = whole if mech == "dense" else heldout_widened(whole)
        gen_ids = [k for k in ids if k in gen]
        if len(gen_ids) >= MIN_CLASS_CASES:
            out[class_key(fam, "new_generation")] = _deciles([gen[k] for k in gen_ids], fam)
        else:
            out[class_key(fam, "new_generation")] = heldout_widened(whole)
        floor = (-interval_floor(fam), interval_floor(fam))
        for mech in (*CASE_CLASSES[1:], "new_generation"):  # residuals inside the floor show no extra error
            if out[class_key(fam, mech)] == floor:
                out[class_key(fam, mech)] = heldout_widened(out[class_key(fam, "dense")])
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


def crossfit_scores(
    cases: Sequence[CalibrationCase],
    held: Mapping[str, Mapping[str, float]],
    fitted: Collection[str],
    memory_quantiles: tuple[float, float] | None = None,
) -> list[HeldOutScore]:
    """Every (case, grouping) scored out of sample (module doc, "scoring"). ``held``: grouping -> case id ->
    held-out residual (the profile's ``logo_residuals``); ``fitted``: the full fit's parameter names (to
    tell a stack the fit moved). Memory cases are scored against ``memory_quantiles`` where given."""
    from gpufleet.catalog.specs import get_spec
    from gpufleet.estimate.calibration import case_group
    from gpufleet.estimate.predict import case_software
    from gpufleet.estimate.priors import stack_param
    from gpufleet.estimate.rates import software_key

    use = [c for c in cases if all(c.case_id in h for h in held.values())]
    families = {c.case_id: METRIC_FAMILY[c.metric] for c in use}
    mechs = {c.case_id: case_mechanisms(c) for c in use}
    out: list[HeldOutScore] = []
    for grouping, resid in held.items():
        groups: dict[str, list[CalibrationCase]] = {}
        for c in use:
            groups.setdefault(case_group(c, grouping), []).append(c)
        for members in groups.values():
            ids = {c.case_id for c in members}
            speed = {k: f for k, f in families.items() if k not in ids and f != "memory"}
            q = fit_class_quantiles(held, speed, mechs)
            for c in members:
                fam = families[c.case_id]
                spec = get_spec(c.gpu)
                if fam == "memory":
                    if memory_quantiles is None:
                        continue
                    lo, hi = memory_quantiles
                    m = frozenset[str]()
                else:
                    m = mechs[c.case_id]
                    if grouping in ("generation", "vendor"):
                        m = m | {"new_generation"}
                    kind = "train" if fam == "training" else "infer"
                    sw = case_software(c) if kind == "train" else c.software
                    stack = stack_param(kind, software_key(sw), spec.vendor)
                    extra = 1 if spec.uncertain or not (spec.bf16_tflops or spec.fp16_tflops) else 0
                    if stack is not None and (grouping == "software" or stack not in fitted):
                        extra += 1
                    got = class_interval(q, fam, m, extra)
                    if got is None:
                        continue
                    lo, hi = got
                r = resid[c.case_id]
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
    "SPEED_FAMILIES",
    "HeldOutScore",
    "case_mechanisms",
    "class_interval",
    "class_key",
    "crossfit_scores",
    "fit_class_quantiles",
]
