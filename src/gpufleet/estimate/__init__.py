"""Estimators: memory, FLOPs and bytes, inference and training performance, calibration.

The public estimate API (docs/contracts.md): :func:`estimate_inference`, :func:`estimate_training` and their
results, the calibration profile (:func:`load_profile`, :func:`save_profile`, :func:`fit_profile`) and
per-case predictions (:func:`predict_case`). Memory lives in :mod:`gpufleet.estimate.memory`, calibration
cases in :mod:`gpufleet.estimate.cases`.
"""

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
