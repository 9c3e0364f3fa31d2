"""The one discrete-event core every simulator runs on: a SimPy environment and a seeded random generator.

* One :class:`simpy.Environment` owns the clock; nothing reads wall time.
* Ties break deterministically: SimPy orders events by (time, priority, insertion id), and every process
  here schedules in a fixed order (replicas and jobs by index), so the same inputs give the same run.
* All randomness comes from one :class:`numpy.random.Generator` made from an explicit seed
  (:func:`make_rng`); sub-streams for Monte-Carlo repetitions are ``make_rng(seed, k)``.
* The core prints nothing and returns typed results.

SimPy is imported here (lazily from :mod:`gpufleet.simulate`), never at ``import gpufleet``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from gpufleet.errors import InputError


def new_environment() -> Any:
    """A fresh SimPy environment at time 0 [s]."""
    import simpy

    return simpy.Environment()


def interrupt_type() -> type[BaseException]:
    """``simpy.Interrupt`` (imported lazily)."""
    import simpy

    return simpy.Interrupt


def make_rng(seed: int, *stream: int) -> np.random.Generator:
    """A PCG64 generator for ``seed`` and an optional sub-stream (e.g. the Monte-Carlo repetition)."""
    if seed < 0:
        raise InputError(f"seed {seed} must be >= 0.")
    return np.random.default_rng([seed, *stream])


def percentile(values: Sequence[float] | npt.NDArray[np.float64], q: float) -> float:
    """The ``q``-th percentile (0-100, linear interpolation as numpy's default); NaN when empty."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    return float(np.percentile(arr, q)) if len(arr) else float("nan")


def cdf_points(values: npt.NDArray[np.float64], points: int = 101) -> tuple[tuple[float, float], ...]:
    """``(value, fraction <= value)`` at ``points`` evenly spaced quantiles (for CDF charts)."""
    arr = np.asarray(values, dtype=np.float64)
    arr = arr[np.isfinite(arr)]
    if not len(arr):
        return ()
    qs = np.linspace(0.0, 1.0, points)
    return tuple((float(v), float(q)) for v, q in zip(np.quantile(arr, qs), qs, strict=True))
