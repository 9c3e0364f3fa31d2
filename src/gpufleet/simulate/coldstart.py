"""Cold start of a serving replica: provisioning + image pull + weight load + warm-up [s].

Defaults (sources) in :mod:`gpufleet.cost.startup`, shared with the start-up of a training run; every
part can be overridden.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gpufleet.cost.startup import (
    DEFAULT_IMAGE_PULL_S,
    DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S,
    DEFAULT_PROVISIONING_S,
    DEFAULT_WARMUP_S,
)
from gpufleet.errors import InputError
from gpufleet.validation import MAX_COLD_START_S


@dataclass(frozen=True, slots=True, kw_only=True)
class ColdStart:
    provisioning_s: float = DEFAULT_PROVISIONING_S
    image_pull_s: float = DEFAULT_IMAGE_PULL_S
    weight_load_s: float = 0.0  # weight bytes / load bandwidth [s]
    warmup_s: float = DEFAULT_WARMUP_S

    def __post_init__(self) -> None:
        for name in ("provisioning_s", "image_pull_s", "weight_load_s", "warmup_s"):
            value = getattr(self, name)
            if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0):
                raise InputError(f"cold start {name} = {value}; it must be a finite number >= 0 s.")
            if value > MAX_COLD_START_S:
                raise InputError(
                    f"cold start {name} = {value:g} s (--cold-start sets provisioning_s); at most "
                    f"{MAX_COLD_START_S:,.0f} s (one day) is accepted: real cold starts take seconds to ~15 "
                    "minutes. Pass a realistic value in seconds."
                )

    @property
    def total_s(self) -> float:
        return self.provisioning_s + self.image_pull_s + self.weight_load_s + self.warmup_s


def cold_start_for(
    weights_bytes: float,
    *,
    provisioning_s: float = DEFAULT_PROVISIONING_S,
    image_pull_s: float = DEFAULT_IMAGE_PULL_S,
    load_bandwidth_bytes_per_s: float = DEFAULT_LOAD_BANDWIDTH_BYTES_PER_S,
    warmup_s: float = DEFAULT_WARMUP_S,
) -> ColdStart:
    """The cold start of a replica holding ``weights_bytes`` of weights (module doc for the defaults)."""
    if load_bandwidth_bytes_per_s <= 0:
        raise InputError(f"load bandwidth {load_bandwidth_bytes_per_s} B/s must be > 0.")
    return ColdStart(
        provisioning_s=provisioning_s,
        image_pull_s=image_pull_s,
        weight_load_s=weights_bytes / load_bandwidth_bytes_per_s,
        warmup_s=warmup_s,
    )
