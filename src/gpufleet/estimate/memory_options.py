"""What makes a training job fit: the recompute / ZeRO options ``estimate train`` relaxes, tried in its order.

``estimate memory`` answers for the options given; when the answer is "does not fit", :func:`fitting_option`
tries the same passes as the training layout search (:func:`gpufleet.estimate.parallelism.training_layouts`:
selective recompute with ZeRO-1, then ZeRO-3/FSDP, then full recompute) at the given TP/PP/DP and batch, and
returns the first that fits, so the verdict can say which option ``estimate train`` would pick.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpufleet.estimate.memory import MemoryEstimate, estimate_memory

#: (recompute, ZeRO stage) in the order the training layout search relaxes them
RELAXATIONS: tuple[tuple[str, int], ...] = (("selective", 1), ("selective", 3), ("full", 1), ("full", 3))


@dataclass(frozen=True, slots=True, kw_only=True)
class FittingOption:
    """An option set under which the job fits, with its memory."""

    recompute: str
    zero_stage: int
    memory: MemoryEstimate

    @property
    def description(self) -> str:
        zero = f", ZeRO-{self.zero_stage}" if self.zero_stage else ""
        return (
            f"fits with {self.recompute} recompute{zero}: {self.memory.per_gpu_gib:.1f} GiB of "
            f"{self.memory.capacity_gib:.1f} GiB (what `gpufleet estimate train` picks)"
        )


def fitting_option(
    *, task: str, recompute: str, zero_stage: int, dp: int, **kwargs: Any
) -> FittingOption | None:
    """The first relaxation (module doc) that fits, other than the options given; None when none does or
    the task is not training. ``kwargs`` are the other :func:`estimate_memory` arguments."""
    if task in ("inference", "load"):
        return None
    for rc, zs in RELAXATIONS:
        z = max(zs, zero_stage) if dp > 1 else zero_stage  # ZeRO shards over data-parallel ranks only
        if (rc, z) == (recompute, zero_stage):
            continue
        mem = estimate_memory(task=task, recompute=rc, zero_stage=z, dp=dp, **kwargs)
        if mem.fits:
            return FittingOption(recompute=rc, zero_stage=z, memory=mem)
    return None


__all__ = ["RELAXATIONS", "FittingOption", "fitting_option"]
