"""The fleet file of ``gpufleet simulate batch --fleet`` as pydantic models (the I/O boundary of
:func:`gpufleet.simulate.batch.read_fleet`): known keys only, finite numbers in stated ranges, no booleans
as numbers, no blank names. Its own module so that pydantic is imported only when a fleet file is read.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, ValidationError, model_validator

from gpufleet.strict_model import NoBoolNumbers
from gpufleet.validation import MAX_GPUS, MAX_PRICE_USD_PER_HOUR


class _Strict(NoBoolNumbers):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, strict=False)


class PoolIn(_Strict):
    """One pool: ``nodes`` machines of ``gpus_per_node`` GPUs, billed by ``kind``."""

    name: str | None = Field(None, max_length=200)
    gpu: str = Field(min_length=1, max_length=200)
    gpus_per_node: int = Field(8, ge=1, le=1024)  # the largest machine of a user catalog (GB200 NVL72: 72)
    nodes: int = Field(ge=1, le=MAX_GPUS)
    kind: Literal["on_demand", "spot", "reserved"]
    price_usd_per_node_hour: float | None = Field(None, gt=0, le=MAX_PRICE_USD_PER_HOUR)
    provider: str = Field("*", min_length=1, max_length=200)
    #: the recommender's deployment tier the catalog price is taken under (production: no marketplace or
    #: community hosts, no stale or undated prices; batch and dev: any host)
    tier: Literal["dev", "batch", "production"] = "production"


class TeamIn(_Strict):
    """A Kueue ClusterQueue of the cohort: nominal quota and borrowing limit [GPUs]; null or absent = none.
    Whole GPUs: ``nvidia.com/gpu`` is an integer resource in Kueue and every job asks for whole GPUs (a
    quota of 1.5 GPUs was taken as given)."""

    nominal_gpus: int | None = Field(None, ge=0, le=MAX_GPUS)
    borrowing_limit_gpus: int | None = Field(None, ge=0, le=MAX_GPUS)


class OffPeakIn(_Strict):
    """The off-peak window [hour of day, 0-24; it may wrap midnight] and its price factor (0 < f <= 1:
    off-peak hours are the cheaper ones)."""

    start_hour: float = Field(ge=0, lt=24)
    end_hour: float = Field(ge=0, le=24)
    price_factor: float = Field(gt=0, le=1)

    @model_validator(mode="after")
    def _window(self) -> OffPeakIn:
        if self.start_hour % 24 == self.end_hour % 24:
            raise ValueError(
                f"off_peak start_hour {self.start_hour:g} and end_hour {self.end_hour:g} give an empty "
                "window; give two different hours (e.g. 22 and 6)"
            )
        return self


class FleetFileIn(_Strict):
    pools: list[PoolIn] = Field(min_length=1, max_length=10_000)
    teams: dict[str, TeamIn] | None = None
    off_peak: OffPeakIn | None = None


def describe(exc: ValidationError, limit: int = 3) -> str:
    """The first ``limit`` problems of ``exc`` on one line: where (``pools[0].nodes``), the value, what is
    wrong."""
    parts = []
    for err in exc.errors(include_url=False)[:limit]:
        where = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"]).lstrip(".")
        msg = str(err["msg"]).removeprefix("Value error, ")
        value = err.get("input")
        shown = "missing" if err["type"] == "missing" else repr(value)[:80]
        parts.append(
            f"{where or '(top level)'} = {shown}: {msg}"
            if not isinstance(value, dict)
            else f"{where or '(top level)'}: {msg}"
        )
    more = len(exc.errors()) - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")


__all__ = ["FleetFileIn", "OffPeakIn", "PoolIn", "TeamIn", "describe"]
