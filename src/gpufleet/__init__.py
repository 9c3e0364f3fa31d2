"""gpufleet: what GPU capacity an ML workload should run on, where, and at what cost.

The library returns typed data and never prints; the ``gpufleet`` CLI renders it.
"""

from __future__ import annotations

from gpufleet.errors import GpufleetError

__version__ = "0.1.0"

__all__ = ["GpufleetError", "__version__"]
