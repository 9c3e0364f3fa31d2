"""The calibration profile's JSON file format as a pydantic model: what a profile file is validated against.

Its own module so that pydantic is imported only when a profile file is validated (a user's ``--profile``, or
the shipped profile the first time this version reads it; see :mod:`gpufleet.estimate.profile`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class ProfileFile(BaseModel):
    """The JSON file format of a profile (validated where a user passes a file)."""

    model_config = ConfigDict(extra="ignore")
    version: int
    fitted_at: str
    case_count: int
    source: str
    params: dict[str, float]
    log_residual_quantiles: dict[str, tuple[float, float]]
    residuals: dict[str, float]
    loo_residuals: dict[str, float] = {}
    calibrated: list[str] = []
    fitted: list[str] = []
    logo_residuals: dict[str, dict[str, float]] = {}
    heldout_quantiles: dict[str, tuple[float, float]] = {}


__all__ = ["ProfileFile"]
