"""Fleet planning: many workloads under quotas, budgets, commitments and regions, solved by a MILP (HiGHS).

Entry points: :func:`plan_fleet` (a fleet file or :class:`Fleet` -> :class:`FleetPlan`),
:func:`read_fleet_file`, :func:`check_plan` (independent feasibility check), and
:func:`gpufleet.fleet.regions.analyze_regions` (the multi-region analyzer).
"""

from gpufleet.fleet.check import check_plan
from gpufleet.fleet.plan import plan_fleet, solve_fleet
from gpufleet.fleet.spec import fleet_from_dict, read_fleet_file
from gpufleet.fleet.types import Fleet, FleetPlan, FleetWorkload, Lever, Option, PlanLine

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
