from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.fleet.plan import plan_fleet
from gpufleet.fleet.types import FleetPlan

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "fleets"


@pytest.fixture(scope="session")
def platform_plan() -> FleetPlan:
    """The assessment seed's platform, planned end to end with savings by lever (shared: ~10 s)."""
    return plan_fleet(EXAMPLES / "assessment-platform.yaml")
