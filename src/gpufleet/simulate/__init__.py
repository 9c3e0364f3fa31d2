"""Simulations on the discrete-event core: autoscaling replay, spot training runs, batch scheduling, sweeps.

Importing this package does not import SimPy; the simulators import it when they run.
"""

from __future__ import annotations
