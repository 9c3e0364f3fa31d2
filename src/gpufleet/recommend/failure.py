"""What failure a serving deployment survives: N+1 replica units in production (docs/recommend.md, "Failure
tolerance").

A replica unit is the node(s) holding one or more model replicas (:class:`gpufleet.recommend.perf.Config`).
Production serving is sized so that the units left after losing one node still carry the load at the
workload's confidence (p90: the low end of the throughput interval): N units carry it, N + 1 are deployed.
"At least 2 replicas" alone is not spare capacity: Llama-3.1-70B at 20 req/s on 3 units of 2,194 tok/s
(6,582 tok/s for 5,120 needed) drops to 4,388 tok/s when one is lost. With ``min_zones`` >= 2 the units are
spread evenly over that many zones of the region and sized to survive the loss of one whole zone (the units
left, R - ceil(R / zones), carry the load). Sources: Google SRE book, "Managing Critical State" / "Software
Engineering in SRE" ("N+2" capacity planning: survive one planned and one unplanned outage); AWS
Well-Architected Reliability Pillar REL10-BP01 ("Deploy the workload to multiple locations": multiple
Availability Zones, static stability, sized so the loss of one AZ leaves enough capacity); Kubernetes
PodDisruptionBudget and topology spread constraints (replicas over nodes and zones).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from gpufleet.recommend.types import Workload

#: most zones a deployment may be asked to span (hyperscaler regions have 3 or more; few have more than 6)
MAX_ZONES = 6


def needs_spare(w: Workload) -> bool:
    """Production serving keeps one spare unit (N+1)."""
    return w.tier == "production" and not w.is_training


def units_with_spare(needed: int, w: Workload) -> int:
    """Units to deploy when ``needed`` carry the load: ``needed`` outside production serving; else the fewest
    R >= needed + 1 (and >= 2: two nodes) whose loss of one node, and with ``min_zones`` >= 2 of one zone
    (ceil(R / zones) units), leaves ``needed``."""
    needed = max(1, int(needed))
    if not needs_spare(w):
        return needed
    r = needed + 1
    z = max(1, w.min_zones)
    if z >= 2:
        while r - math.ceil(r / z) < needed:
            r += 1
    return r


def units_with_spare_array(needed: npt.NDArray[np.int64], w: Workload) -> npt.NDArray[np.int64]:
    """:func:`units_with_spare` per element."""
    if not needs_spare(w):
        return needed
    distinct, inverse = np.unique(needed, return_inverse=True)  # few distinct counts among many rows
    lut = np.array([units_with_spare(int(n), w) for n in distinct.tolist()], dtype=np.int64)
    out: npt.NDArray[np.int64] = lut[inverse.reshape(-1)]
    return out


def load_units(units: int, w: Workload) -> int:
    """The units that carry the load in a deployment of ``units`` sized by :func:`units_with_spare`."""
    if not needs_spare(w):
        return units
    needed = max(1, units - 1)
    while needed > 1 and units_with_spare(needed, w) > units:
        needed -= 1
    return needed


def survives_text(w: Workload, units: int, nodes_per_unit: int) -> str:
    """The failure the deployment keeps its SLOs through, in words ("" outside production serving)."""
    if not needs_spare(w):
        return ""
    needed = load_units(units, w)
    lost = "one node" if nodes_per_unit == 1 else f"one node (a unit of {nodes_per_unit} nodes)"
    zones = f" or one of {w.min_zones} zones" if w.min_zones >= 2 else ""
    return (
        f"{lost}{zones} lost: {units} replica units deployed, {needed} "
        f"carr{'ies' if needed == 1 else 'y'} the load at {w.confidence} (N+{units - needed})"
    )


__all__ = [
    "MAX_ZONES",
    "load_units",
    "needs_spare",
    "survives_text",
    "units_with_spare",
    "units_with_spare_array",
]
