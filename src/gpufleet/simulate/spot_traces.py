"""SkyPilot spot-traces availability files ("Can't Be Late", Wu et al. NSDI'24; skypilot-org/spot-traces).

Layout (JSON): ``{"metadata": {"gap_seconds": N, ...}, "data": [c0, c1, ...], "prices": ...}``: one value
per tick of N seconds, the number of instances of the probed shape that were up or obtainable (0 =
preempted or unavailable; 0/1 for 1-node traces, 0-16 for 16-node traces) in one zone. ``prices`` and other
metadata keys are accepted and ignored. A job of ``nodes`` instances is up while the value is >= nodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpufleet.errors import ConfigFileError
from gpufleet.fileio import load_structured_file

#: Longest tick of a trace [s]: one day; and most instances per tick: 10^6 (the traces probe 1-16 nodes).
MAX_GAP_S = 86_400.0
#: the shortest tick [s]: availability is sampled per second at the finest (1e-300 s ticks passed the old
#: "> 0" check and failed later with a message about --checkpoint-hours)
MIN_GAP_S = 1.0
MAX_INSTANCES = 1_000_000


@dataclass(frozen=True, slots=True, kw_only=True)
class SpotTrace:
    name: str
    gap_s: float  # tick length [s]
    capacity: tuple[int, ...]  # instances available per tick [count]


def read_spot_trace(path: str | Path) -> SpotTrace:
    p = Path(path)
    doc = load_structured_file(p, what="spot availability trace")
    where = f"The spot availability trace {p}"
    if not isinstance(doc, dict) or "metadata" not in doc or "data" not in doc:
        raise ConfigFileError(
            f"{where} is not in the SkyPilot spot-traces layout: expected a JSON object with 'metadata' "
            "({\"gap_seconds\": N}) and 'data' (instances available per tick)."
        )
    unknown = [k for k in doc if k not in ("metadata", "data", "prices")]
    if unknown:
        raise ConfigFileError(f"{where} has unknown keys {unknown}; allowed: metadata, data, prices.")
    meta = doc["metadata"]
    gap = meta.get("gap_seconds") if isinstance(meta, dict) else None
    if not isinstance(gap, int | float) or isinstance(gap, bool) or not MIN_GAP_S <= gap <= MAX_GAP_S:
        raise ConfigFileError(
            f"{where}: metadata.gap_seconds = {gap!r}; it must be a number of seconds per tick, from "
            f"{MIN_GAP_S:g} to {MAX_GAP_S:,.0f} (one day; the SkyPilot traces tick every 600 s)."
        )
    data = doc["data"]
    if not isinstance(data, list) or not data:
        raise ConfigFileError(f"{where}: 'data' must be a non-empty list of instance counts per tick.")
    out = []
    for k, v in enumerate(data):
        if (
            isinstance(v, bool)
            or not isinstance(v, int | float)
            or not 0 <= v <= MAX_INSTANCES
            or v != int(v)
        ):
            raise ConfigFileError(
                f"{where}: data[{k}] = {v!r}; each tick holds a whole count of instances from 0 to "
                f"{MAX_INSTANCES:,}."
            )
        out.append(int(v))
    return SpotTrace(name=p.name, gap_s=float(gap), capacity=tuple(out))
