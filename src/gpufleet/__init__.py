"""gpufleet: what GPU capacity an ML workload should run on, where, and at what cost.

The library returns typed data and never prints; the ``gpufleet`` CLI renders it. The curated surface:

- catalog: :func:`load_offers` (every offer, dated and sourced), :func:`get_spec` (an accelerator by id or
  alias), :func:`prices_usd_per_hour` (on-demand, spot and commitment price kinds);
- models and estimates: :func:`resolve_model`, :func:`count_params`, :func:`estimate_memory`,
  :func:`estimate_inference`, :func:`estimate_training`, :func:`validate_cases`;
- decisions: :func:`recommend`, :func:`migrate`, :func:`run_scenario`, :func:`run_scenario_set`;
- simulations: :func:`simulate_autoscale`, :func:`simulate_spot`, :func:`simulate_batch`, :func:`run_sweep`
  (SimPy, imported when they run; docs/simulate.md);
- errors: every error raised on purpose derives from :class:`GpufleetError`.
"""

from __future__ import annotations

from gpufleet.catalog.offers import Offer, OfferTable, load_offers
from gpufleet.catalog.pricing import prices_usd_per_hour
from gpufleet.catalog.specs import AcceleratorSpec, get_spec
from gpufleet.errors import (
    ConfigFileError,
    DataError,
    FetchError,
    GpufleetError,
    InfeasibleError,
    InputError,
    UnknownNameError,
    UnsupportedError,
)
from gpufleet.estimate.memory import MemoryEstimate, estimate_memory
from gpufleet.estimate.performance import (
    InferenceEstimate,
    TrainingEstimate,
    estimate_inference,
    estimate_training,
)
from gpufleet.estimate.types import Interval
from gpufleet.estimate.validate import ValidationReport, validate_cases
from gpufleet.models import ModelArch, ParamCount, count_params, resolve_model
from gpufleet.recommend.api import migrate, recommend, run_scenario, run_scenario_set
from gpufleet.recommend.types import (
    Candidate,
    Migration,
    Recommendation,
    ScenarioResult,
    ScenarioSetResult,
    Workload,
)
from gpufleet.simulate.api import (
    AutoscaleResult,
    BatchResult,
    SpotResult,
    SweepResult,
    run_sweep,
    simulate_autoscale,
    simulate_batch,
    simulate_spot,
)

__version__ = "0.1.0"

__all__ = [
    "AcceleratorSpec",
    "AutoscaleResult",
    "BatchResult",
    "Candidate",
    "ConfigFileError",
    "DataError",
    "FetchError",
    "GpufleetError",
    "InfeasibleError",
    "InferenceEstimate",
    "InputError",
    "Interval",
    "MemoryEstimate",
    "Migration",
    "ModelArch",
    "Offer",
    "OfferTable",
    "ParamCount",
    "Recommendation",
    "ScenarioResult",
    "ScenarioSetResult",
    "SpotResult",
    "SweepResult",
    "TrainingEstimate",
    "UnknownNameError",
    "UnsupportedError",
    "ValidationReport",
    "Workload",
    "__version__",
    "count_params",
    "estimate_inference",
    "estimate_memory",
    "estimate_training",
    "get_spec",
    "load_offers",
    "migrate",
    "prices_usd_per_hour",
    "recommend",
    "resolve_model",
    "run_scenario",
    "run_scenario_set",
    "run_sweep",
    "simulate_autoscale",
    "simulate_batch",
    "simulate_spot",
    "validate_cases",
]
