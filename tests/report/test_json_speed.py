"""The faster JSON conversion and spare-unit sizing give the same values as the straightforward versions
(the service's recommend answers must stay byte-identical: docs/service.md "Load and performance")."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np
import pytest

from gpufleet.recommend.api import recommend
from gpufleet.recommend.failure import units_with_spare, units_with_spare_array
from gpufleet.recommend.workload import workload_from_dict
from gpufleet.report.json_report import to_jsonable

BENCH = {"model": "llama-3.1-8b", "target_requests_per_s": 2, "ttft_p95_ms": 500, "tpot_p95_ms": 50}


def reference(value: Any) -> Any:
    """``to_jsonable`` as it was before the per-type dispatch (one isinstance chain per value)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: reference(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): reference(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [reference(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str | int | bool):
        return value
    if hasattr(value, "item"):
        return reference(value.item())
    raise TypeError(f"cannot convert {type(value).__name__} to JSON")


class Pair(NamedTuple):
    a: float
    b: str


@dataclasses.dataclass(frozen=True)
class Row:
    x: float
    y: Any
    z: tuple[Any, ...] = ()


def test_recommendation_converts_as_before() -> None:
    for spec in (BENCH, BENCH | {"tier": "production", "min_zones": 2}):
        result = recommend(dict(spec))
        fast, ref = to_jsonable(result), reference(result)
        assert json.dumps(fast, indent=2) == json.dumps(ref, indent=2)


@pytest.mark.parametrize(
    "value",
    [
        Row(x=math.nan, y={1: np.float64(2.5), "k": (np.int64(3), math.inf)}, z=(Pair(-math.inf, "s"), None)),
        [True, 1, 1.5, "t", None, np.bool_(True), np.float32(0.25), {"n": [math.nan]}],
        Pair(a=3.0, b="x"),
    ],
)
def test_edge_values_convert_as_before(value: Any) -> None:
    assert json.dumps(to_jsonable(value)) == json.dumps(reference(value))


def test_unconvertible_values_still_refused() -> None:
    for bad in (Row, object(), {1, 2}):
        with pytest.raises(TypeError, match="cannot convert"):
            to_jsonable(bad)
        with pytest.raises(TypeError, match="cannot convert"):
            reference(bad)


def test_spare_units_per_element_match_the_scalar_rule() -> None:
    rng = np.random.default_rng(7)
    needed = rng.integers(1, 40, size=500).astype(np.int64)
    for spec in (BENCH, BENCH | {"tier": "production"}, BENCH | {"tier": "production", "min_zones": 3}):
        w = workload_from_dict(dict(spec), source="test")
        got = units_with_spare_array(needed, w)
        assert got.dtype == np.int64
        assert got.tolist() == [units_with_spare(int(n), w) for n in needed.tolist()]
        assert units_with_spare_array(np.zeros(0, dtype=np.int64), w).tolist() == []
