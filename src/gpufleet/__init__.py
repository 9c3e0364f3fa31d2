"""gpufleet: what GPU capacity an ML workload should run on, where, and at what cost.

The library returns typed data and never prints; the ``gpufleet`` CLI renders it. The curated surface:

- catalog: :func:`load_offers` (every offer, dated and sourced), :func:`get_spec` (an accelerator by id or
  alias), :func:`prices_usd_per_hour` (on-demand, spot and commitment price kinds);
- models and estimates: :func:`resolve_model`, :func:`count_params`, :func:`estimate_memory`,
  :func:`estimate_inference`, :func:`estimate_training`, :func:`validate_cases`;
- decisions: :func:`recommend`, :func:`migrate`, :func:`run_scenario`, :func:`run_scenario_set`;
- simulations: :func:`simulate_autoscale`, :func:`simulate_spot`, :func:`simulate_batch`, :func:`run_sweep`
  (SimPy, imported when they run; docs/simulate.md);
- fleets: :func:`read_fleet_file`, :func:`plan_fleet` (MILP under quotas, budgets, commitments, regions),
  :func:`analyze_regions` (the multi-region analyzer);
- errors: every error raised on purpose derives from :class:`GpufleetError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from gpufleet._lazy import lazy_getattr
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

if TYPE_CHECKING:
    from gpufleet.catalog.offers import Offer, OfferTable, load_offers
    from gpufleet.catalog.pricing import prices_usd_per_hour
    from gpufleet.catalog.specs import AcceleratorSpec, get_spec
    from gpufleet.estimate.memory import MemoryEstimate, estimate_memory
    from gpufleet.estimate.performance import (
        InferenceEstimate,
        TrainingEstimate,
        estimate_inference,
        estimate_training,
    )
    from gpufleet.estimate.types import Interval
    from gpufleet.estimate.validate import ValidationReport, validate_cases
    from gpufleet.fleet.plan import plan_fleet
    from gpufleet.fleet.regions import RegionAnalysis, analyze_regions
    from gpufleet.fleet.spec import read_fleet_file
    from gpufleet.fleet.types import Fleet, FleetPlan, SharedPool
    from gpufleet.models import ModelArch, ParamCount, count_params, resolve_model
    from gpufleet.recommend.api import migrate, recommend, run_scenario, run_scenario_set
    from gpufleet.recommend.deploy import HostRules
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
    from gpufleet.telemetry import (
        FleetFindings,
        IngestReport,
        TelemetryStore,
        analyze_fleet,
        evaluate_alerts,
        ingest_telemetry,
    )

__version__ = "0.1.0"

#: Where each public name lives. Names load on first use (PEP 562 ``__getattr__``), so that
#: ``import gpufleet`` and CLI start-up pay only for what a command uses (SimPy, MILP ...).
_LAZY: dict[str, str] = {
    "Offer": "gpufleet.catalog.offers",
    "OfferTable": "gpufleet.catalog.offers",
    "load_offers": "gpufleet.catalog.offers",
    "prices_usd_per_hour": "gpufleet.catalog.pricing",
    "AcceleratorSpec": "gpufleet.catalog.specs",
    "get_spec": "gpufleet.catalog.specs",
    "MemoryEstimate": "gpufleet.estimate.memory",
    "estimate_memory": "gpufleet.estimate.memory",
    "InferenceEstimate": "gpufleet.estimate.performance",
    "TrainingEstimate": "gpufleet.estimate.performance",
    "estimate_inference": "gpufleet.estimate.performance",
    "estimate_training": "gpufleet.estimate.performance",
    "Interval": "gpufleet.estimate.types",
    "ValidationReport": "gpufleet.estimate.validate",
    "validate_cases": "gpufleet.estimate.validate",
    "plan_fleet": "gpufleet.fleet.plan",
    "RegionAnalysis": "gpufleet.fleet.regions",
    "analyze_regions": "gpufleet.fleet.regions",
    "read_fleet_file": "gpufleet.fleet.spec",
    "Fleet": "gpufleet.fleet.types",
    "FleetPlan": "gpufleet.fleet.types",
    "SharedPool": "gpufleet.fleet.types",
    "ModelArch": "gpufleet.models",
    "ParamCount": "gpufleet.models",
    "count_params": "gpufleet.models",
    "resolve_model": "gpufleet.models",
    "migrate": "gpufleet.recommend.api",
    "recommend": "gpufleet.recommend.api",
    "run_scenario": "gpufleet.recommend.api",
    "run_scenario_set": "gpufleet.recommend.api",
    "HostRules": "gpufleet.recommend.deploy",
    "Candidate": "gpufleet.recommend.types",
    "Migration": "gpufleet.recommend.types",
    "Recommendation": "gpufleet.recommend.types",
    "ScenarioResult": "gpufleet.recommend.types",
    "ScenarioSetResult": "gpufleet.recommend.types",
    "Workload": "gpufleet.recommend.types",
    "AutoscaleResult": "gpufleet.simulate.api",
    "BatchResult": "gpufleet.simulate.api",
    "SpotResult": "gpufleet.simulate.api",
    "SweepResult": "gpufleet.simulate.api",
    "run_sweep": "gpufleet.simulate.api",
    "simulate_autoscale": "gpufleet.simulate.api",
    "simulate_batch": "gpufleet.simulate.api",
    "simulate_spot": "gpufleet.simulate.api",
    "FleetFindings": "gpufleet.telemetry",
    "IngestReport": "gpufleet.telemetry",
    "TelemetryStore": "gpufleet.telemetry",
    "analyze_fleet": "gpufleet.telemetry",
    "evaluate_alerts": "gpufleet.telemetry",
    "ingest_telemetry": "gpufleet.telemetry",
}


# ``gpufleet.recommend`` is both a subpackage and a public function. Importing a subpackage binds it as an
# attribute of its parent, which would hide the lazy function once anything imports ``gpufleet.recommend.*``;
# so the (empty) subpackage is imported now and its binding removed: ``gpufleet.recommend`` is the function.
importlib.import_module("gpufleet.recommend")
del globals()["recommend"]


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "AcceleratorSpec",
    "AutoscaleResult",
    "BatchResult",
    "Candidate",
    "ConfigFileError",
    "DataError",
    "FetchError",
    "Fleet",
    "FleetFindings",
    "FleetPlan",
    "GpufleetError",
    "HostRules",
    "InfeasibleError",
    "InferenceEstimate",
    "IngestReport",
    "InputError",
    "Interval",
    "MemoryEstimate",
    "Migration",
    "ModelArch",
    "Offer",
    "OfferTable",
    "ParamCount",
    "Recommendation",
    "RegionAnalysis",
    "ScenarioResult",
    "ScenarioSetResult",
    "SharedPool",
    "SpotResult",
    "SweepResult",
    "TelemetryStore",
    "TrainingEstimate",
    "UnknownNameError",
    "UnsupportedError",
    "ValidationReport",
    "Workload",
    "__version__",
    "analyze_fleet",
    "analyze_regions",
    "count_params",
    "estimate_inference",
    "estimate_memory",
    "estimate_training",
    "evaluate_alerts",
    "get_spec",
    "ingest_telemetry",
    "load_offers",
    "migrate",
    "plan_fleet",
    "prices_usd_per_hour",
    "read_fleet_file",
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
