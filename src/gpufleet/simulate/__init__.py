"""Simulations on one discrete-event core: autoscaling replay, spot training runs, batch scheduling, sweeps.

Importing this package does not import SimPy; the simulators import it when they run (docs/simulate.md).
"""

from __future__ import annotations

from gpufleet.simulate.api import *  # noqa: F403
from gpufleet.simulate.api import __all__ as __all__
