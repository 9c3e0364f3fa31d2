"""The typed Python API of the simulators (re-exported by :mod:`gpufleet.simulate`)."""

from __future__ import annotations

from typing import Any

from gpufleet.simulate.autoscale import (
    AutoscaleResult,
    Deployment,
    deployment_for,
    simulate_autoscale,
    static_peak,
)
from gpufleet.simulate.batch import BatchResult, Fleet, default_fleet, read_fleet, simulate_batch
from gpufleet.simulate.jobs import Job, read_jobs
from gpufleet.simulate.policies import make_policy
from gpufleet.simulate.spot import SpotResult, simulate_spot
from gpufleet.simulate.sweep import SweepResult, SweepSpec, read_sweep_spec, run_sweep
from gpufleet.simulate.traces import RequestTrace, read_trace, scale_rate
from gpufleet.validation import checked_arguments

_KINDS: tuple[tuple[type, str], ...] = (
    (AutoscaleResult, "simulation_autoscale"),
    (SpotResult, "simulation_spot"),
    (BatchResult, "simulation_batch"),
    (SweepResult, "simulation_sweep"),
)


@checked_arguments("simulation result kind")
def result_kind(result: Any) -> str:
    """The JSON ``kind`` of a simulation result."""
    for cls, name in _KINDS:
        if isinstance(result, cls):
            return name
    raise TypeError(f"not a simulation result: {type(result).__name__}")


__all__ = [
    "AutoscaleResult",
    "BatchResult",
    "Deployment",
    "Fleet",
    "Job",
    "RequestTrace",
    "SpotResult",
    "SweepResult",
    "SweepSpec",
    "default_fleet",
    "deployment_for",
    "make_policy",
    "read_fleet",
    "read_jobs",
    "read_sweep_spec",
    "read_trace",
    "result_kind",
    "run_sweep",
    "scale_rate",
    "simulate_autoscale",
    "simulate_batch",
    "simulate_spot",
    "static_peak",
]
