"""Estimators: memory, FLOPs and bytes, inference and training performance, calibration.

The public estimate API (docs/contracts.md): :func:`estimate_inference`, :func:`estimate_training` and their
results, the calibration profile (:func:`load_profile`, :func:`save_profile`, :func:`fit_profile`) and
per-case predictions (:func:`predict_case`). Memory lives in :mod:`gpufleet.estimate.memory`, calibration
cases in :mod:`gpufleet.estimate.cases`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet._lazy import lazy_getattr

if TYPE_CHECKING:
    from gpufleet.estimate.calibration import (
        CalibrationProfile,
        CaseNotSupportedError,
        CasePrediction,
        fit_profile,
        load_profile,
        predict_case,
        save_profile,
    )
    from gpufleet.estimate.performance import (
        InferenceEstimate,
        TrainingEstimate,
        estimate_inference,
        estimate_training,
    )
    from gpufleet.estimate.types import Interval

#: Names load on first use (PEP 562), so that importing one estimate module (e.g. ``estimate.types``)
#: does not load the calibration profile and every estimator.
_LAZY: dict[str, str] = {
    "CalibrationProfile": "gpufleet.estimate.calibration",
    "CaseNotSupportedError": "gpufleet.estimate.calibration",
    "CasePrediction": "gpufleet.estimate.calibration",
    "fit_profile": "gpufleet.estimate.calibration",
    "load_profile": "gpufleet.estimate.calibration",
    "predict_case": "gpufleet.estimate.calibration",
    "save_profile": "gpufleet.estimate.calibration",
    "InferenceEstimate": "gpufleet.estimate.performance",
    "TrainingEstimate": "gpufleet.estimate.performance",
    "estimate_inference": "gpufleet.estimate.performance",
    "estimate_training": "gpufleet.estimate.performance",
    "Interval": "gpufleet.estimate.types",
}


__getattr__ = lazy_getattr(__name__, _LAZY)


__all__ = [
    "CalibrationProfile",
    "CaseNotSupportedError",
    "CasePrediction",
    "InferenceEstimate",
    "Interval",
    "TrainingEstimate",
    "estimate_inference",
    "estimate_training",
    "fit_profile",
    "load_profile",
    "predict_case",
    "save_profile",
]
