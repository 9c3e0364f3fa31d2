"""Workload asks as the practitioners' rules audits write them (``gpufleet.recommend`` keyword arguments)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from gpufleet.estimate.memory import weights_bytes
from gpufleet.models.params import count_params
from gpufleet.models.registry import resolve_model
from gpufleet.recommend.api import recommend
from gpufleet.recommend.types import Candidate, Recommendation
from gpufleet.units import GIB


def serve(model: str, rps: float, ttft_ms: float | None, tpot_ms: float | None, **kw: Any) -> dict[str, Any]:
    """A serving ask: ``rps`` requests per second, optional TTFT/TPOT SLOs, other fields as given."""
    out: dict[str, Any] = {"model": model, "target_rps": rps}
    if ttft_ms is not None:
        out["ttft_ms"] = ttft_ms
    if tpot_ms is not None:
        out["tpot_ms"] = tpot_ms
    return out | kw


def train(model: str, task: str, tokens: float, **kw: Any) -> dict[str, Any]:
    """A training ask: ``task`` over ``tokens`` tokens, other fields as given."""
    return {"model": model, "task": task, "tokens": tokens} | kw


def recommender(
    asks: Sequence[Any], top: int
) -> tuple[Callable[[str], Recommendation], Callable[[str], tuple[Candidate, ...]]]:
    """``(rec, picks)`` for an audit's asks (objects with ``label`` and ``fields``): ``rec(label)`` runs
    ``recommend`` once per label on the shipped catalog (cached), ``picks(label)`` is its top ``top``, which
    must exist."""
    from .test_practitioner_rules import _estimator, _table

    @cache
    def rec(label: str) -> Recommendation:
        ask = next(a for a in asks if a.label == label)
        return recommend(offers=_table(), estimator=_estimator(), limit=top, **ask.fields)

    def picks(label: str) -> tuple[Candidate, ...]:
        r = rec(label)
        assert r.status == "ok", f"{label}: {r.status}: {r.message}"
        return r.ranked[:top]

    return rec, picks


@cache
def weights_gib(model: str, precision: str) -> float:
    """The model's weights at ``precision`` [GiB]."""
    return weights_bytes(count_params(resolve_model(model)).total, precision) / GIB
