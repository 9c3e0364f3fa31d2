"""Small value types shared by every estimator module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Task = Literal["inference", "pretrain", "full_finetune", "lora", "qlora", "load"]
TASKS: tuple[str, ...] = get_args(Task)
TRAINING_TASKS: tuple[str, ...] = ("pretrain", "full_finetune", "lora", "qlora")
#: software stacks the calibration-case schema names (blank = unknown); also what --engine/--software accept
SOFTWARES: tuple[str, ...] = (
    "nemo",
    "megatron",
    "deepspeed",
    "megatron_deepspeed",
    "pytorch",
    "trtllm",
    "vllm",
    "tgi",
    "llamacpp",
    "transformers",
    "paddle",
    "sglang",
    "jax",
    "torchtune",
    "unsloth",
    "axolotl",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Interval:
    """A central estimate with its p10-p90 interval, in the unit named by the field that holds it."""

    central: float
    p10: float
    p90: float

    def scaled(self, factor: float) -> Interval:
        """The same interval multiplied by a positive ``factor`` (unit conversion, per-GPU to total, ...)."""
        lo, hi = sorted((self.p10 * factor, self.p90 * factor))
        return Interval(central=self.central * factor, p10=lo, p90=hi)

    def inverted(self, numerator: float = 1.0) -> Interval:
        """``numerator / x`` for a positive quantity (time <-> rate); p10 and p90 swap."""
        return Interval(central=numerator / self.central, p10=numerator / self.p90, p90=numerator / self.p10)
