"""Score the estimator against measured cases: per-case error and a summary of accuracy and interval coverage.

Definitions (all computed over the cases the estimator could predict, except ``coverage``):

- ``error_pct`` = 100 × (predicted − measured) / measured (signed: positive = over-estimate);
  ``ratio`` = predicted / measured.
- ``ape`` (absolute percentage error) = |error_pct|; the summary reports its median and 90th percentile
  (numpy linear interpolation).
- ``share_within_2x`` = share of predicted cases with 0.5 ≤ ratio ≤ 2.
- ``interval_coverage`` = share of predicted cases whose measured value lies in [p10, p90]; a calibrated 80 %
  interval covers about 0.8.
- ``coverage`` = predicted cases / all cases. A case the estimator cannot handle is kept with its reason.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gpufleet.errors import DataError, GpufleetError, InputError
from gpufleet.estimate.cases import CalibrationCase
from gpufleet.validation import checked_output

if TYPE_CHECKING:
    from gpufleet.estimate.calibration import CalibrationProfile, CasePrediction

#: predict one case, given an optional profile (the default is gpufleet.estimate.calibration.predict_case)
Predictor = Callable[[CalibrationCase, "CalibrationProfile | None"], "CasePrediction"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationRow:
    """One case scored. Values are in ``unit`` (the metric's unit); None where the case was not predicted."""

    case_id: str
    metric: str
    unit: str
    measured: float
    predicted: float | None
    p10: float | None
    p90: float | None
    error_pct: float | None  # signed 100 × (predicted − measured) / measured [%]
    ratio: float | None  # predicted / measured [-]
    in_interval: bool | None  # p10 ≤ measured ≤ p90
    reason: str | None  # why the case was not predicted (None when predicted)
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationSummary:
    """Accuracy over a set of cases (see the module docstring for the definitions)."""

    cases: int  # [count]
    predicted: int  # [count]
    coverage: float  # predicted / cases [fraction]
    median_ape_pct: float | None  # [%]
    p90_ape_pct: float | None  # [%]
    share_within_2x: float | None  # [fraction]
    interval_coverage: float | None  # [fraction]


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidationReport:
    rows: tuple[ValidationRow, ...]
    summary: ValidationSummary
    by_metric: Mapping[str, ValidationSummary]  # the same summary per metric, in first-seen order


def _default_predictor() -> Predictor:
    from gpufleet.estimate.calibration import predict_case

    return predict_case


def _unscored(base: dict[str, Any], reason: str, notes: tuple[str, ...]) -> ValidationRow:
    """A row for a case the estimator could not predict: no prediction, errors or interval; ``reason`` why."""
    return ValidationRow(
        **base,
        predicted=None,
        p10=None,
        p90=None,
        error_pct=None,
        ratio=None,
        in_interval=None,
        reason=reason,
        notes=notes,
    )


def _score(case: CalibrationCase, profile: CalibrationProfile | None, predictor: Predictor) -> ValidationRow:
    base: dict[str, Any] = {"case_id": case.case_id, "metric": case.metric, "unit": case.unit}
    base["measured"] = case.measured
    try:
        pred = predictor(case, profile)
    except DataError:
        raise  # a broken installation, not a property of this case
    except GpufleetError as exc:
        return _unscored(base, str(exc), ())
    values = (pred.predicted, pred.p10, pred.p90)
    if not all(math.isfinite(v) and v > 0 for v in values):
        return _unscored(
            base, f"the estimator returned a non-positive or non-finite value {values!r}", tuple(pred.notes)
        )
    lo, hi = min(pred.p10, pred.p90), max(pred.p10, pred.p90)
    ratio = pred.predicted / case.measured
    return ValidationRow(
        **base,
        predicted=pred.predicted,
        p10=lo,
        p90=hi,
        error_pct=100.0 * (ratio - 1.0),
        ratio=ratio,
        in_interval=lo <= case.measured <= hi,
        reason=None,
        notes=tuple(pred.notes),
    )


def summarise(rows: Sequence[ValidationRow]) -> ValidationSummary:
    """The summary of scored rows (vectorised over the predicted ones)."""
    done = [r for r in rows if r.ratio is not None]
    n, k = len(rows), len(done)
    if k == 0:
        return ValidationSummary(
            cases=n,
            predicted=0,
            coverage=0.0,
            median_ape_pct=None,
            p90_ape_pct=None,
            share_within_2x=None,
            interval_coverage=None,
        )
    ratio = np.array([r.ratio for r in done], dtype=float)
    ape = np.abs(ratio - 1.0) * 100.0
    inside = np.array([bool(r.in_interval) for r in done])
    return ValidationSummary(
        cases=n,
        predicted=k,
        coverage=k / n,
        median_ape_pct=float(np.median(ape)),
        p90_ape_pct=float(np.percentile(ape, 90)),
        share_within_2x=float(np.mean((ratio >= 0.5) & (ratio <= 2.0))),
        interval_coverage=float(np.mean(inside)),
    )


@checked_output("case validation")
def validate_cases(
    cases: Sequence[CalibrationCase],
    profile: CalibrationProfile | None = None,
    *,
    predictor: Predictor | None = None,
) -> ValidationReport:
    """Predict every case (with ``profile``, None = the shipped one) and score it against its measurement.

    ``predictor`` replaces :func:`gpufleet.estimate.calibration.predict_case` (tests, other estimators). Any
    :class:`GpufleetError` it raises for a case (``CaseNotSupportedError``, an unknown model, ...) becomes
    that case's ``reason``; the case is kept and counts against ``coverage``. A :class:`DataError` (a broken
    installation, e.g. the shipped profile missing) is raised, not hidden in every row.
    """
    if not cases:
        raise InputError("No cases to validate. Pass a cases file with at least one row.")
    fn = predictor if predictor is not None else _default_predictor()
    rows = tuple(_score(c, profile, fn) for c in cases)
    metrics = list(dict.fromkeys(r.metric for r in rows))
    by_metric = {m: summarise([r for r in rows if r.metric == m]) for m in metrics}
    return ValidationReport(rows=rows, summary=summarise(rows), by_metric=by_metric)
