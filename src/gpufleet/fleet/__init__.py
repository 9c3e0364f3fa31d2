"""Fleet planning: many workloads under quotas, budgets, commitments and regions, solved by a MILP (HiGHS).

Entry points: :func:`plan_fleet` (a fleet file or :class:`Fleet` -> :class:`FleetPlan`),
:func:`read_fleet_file`, :func:`check_plan` (independent feasibility check), and
:func:`gpufleet.fleet.regions.analyze_regions` (the multi-region analyzer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpufleet._lazy import lazy_getattr

if TYPE_CHECKING:
    from gpufleet.fleet.check import check_plan
    from gpufleet.fleet.plan import plan_fleet, solve_fleet
    from gpufleet.fleet.spec import fleet_from_dict, read_fleet_file
    from gpufleet.fleet.types import Fleet, FleetPlan, FleetWorkload, Lever, Option, PlanLine

#: Names load on first use (PEP 562), so that a command needing one reference table of the package (e.g.
#: `gpufleet migrate`: egress prices from ``fleet.refdata``) does not load the planner, its fleet-file model
#: (pydantic) and types: ~0.1 s of CPU.
_LAZY: dict[str, str] = {
    "check_plan": "gpufleet.fleet.check",
    "plan_fleet": "gpufleet.fleet.plan",
    "solve_fleet": "gpufleet.fleet.plan",
    "fleet_from_dict": "gpufleet.fleet.spec",
    "read_fleet_file": "gpufleet.fleet.spec",
    "Fleet": "gpufleet.fleet.types",
    "FleetPlan": "gpufleet.fleet.types",
    "FleetWorkload": "gpufleet.fleet.types",
    "Lever": "gpufleet.fleet.types",
    "Option": "gpufleet.fleet.types",
    "PlanLine": "gpufleet.fleet.types",
}

__getattr__ = lazy_getattr(__name__, _LAZY)

__all__ = [
    "Fleet",
    "FleetPlan",
    "FleetWorkload",
    "Lever",
    "Option",
    "PlanLine",
    "check_plan",
    "fleet_from_dict",
    "plan_fleet",
    "read_fleet_file",
    "solve_fleet",
]
