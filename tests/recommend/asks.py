"""Workload asks as the practitioners' rules audits write them (``gpufleet.recommend`` keyword arguments)."""

from __future__ import annotations

from typing import Any


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
