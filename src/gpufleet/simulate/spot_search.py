"""The layout search of :func:`gpufleet.simulate.spot.simulate_spot` (``gpus`` None): GPU counts from 1 to
512 (one node of that size up to 8 GPUs, whole 8-GPU nodes beyond), each simulated unless it provably
cannot meet the deadline (its work alone exceeds it) or beat a layout already found (work x the cheapest
price any strategy pays is more); the answer is the cheapest that meets the deadline with P(miss) <= 5 %."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from gpufleet.errors import InfeasibleError, InputError
from gpufleet.simulate.spot import SpotLayout, SpotResult, StrategyOutcome, _Dry, _spot_layout

#: GPU counts the layout search tries (``gpus`` None): powers of two up to 64 nodes of 8
SEARCH_GPU_COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


#: GPUs per node in the layout search: up to 8 GPUs one node of that size; beyond, whole 8-GPU nodes (the
#: NVLink domain of HGX H100/B200 servers; several 1-GPU machines are not a training node)
SEARCH_NODE_GPUS = 8


def _layout(gpus: int, kw: dict[str, Any]) -> SpotResult:
    if "node_gpus" not in kw and "gpus" not in kw:
        kw = {**kw, "node_gpus": min(gpus, SEARCH_NODE_GPUS)}
    out = _spot_layout(gpus=gpus, **kw)
    assert isinstance(out, SpotResult)
    return out


def _dry(gpus: int, kw: dict[str, Any]) -> _Dry:
    out = _spot_layout(gpus=gpus, dry=True, node_gpus=min(gpus, SEARCH_NODE_GPUS), **kw)
    assert isinstance(out, _Dry)
    return out


def _skipped(gpus: int, why: str, *, nodes: int = 0, work_h: float | None = None) -> SpotLayout:
    return SpotLayout(
        gpus=gpus,
        nodes=nodes,
        offer="",
        work_h=work_h,
        best=None,
        expected_cost_usd=None,
        p_deadline_miss=None,
        status="skipped",
        why=why,
    )


def _pick(r: SpotResult) -> StrategyOutcome:
    """The best strategy's outcome, or (none meets the deadline) the one least likely to miss it."""
    if r.best is not None:
        return next(o for o in r.outcomes if o.strategy == r.best)
    return min(r.outcomes, key=lambda o: (o.p_deadline_miss or 0.0, o.expected_cost_usd))


def search_layouts(kw: dict[str, Any]) -> SpotResult:
    """Search the layouts for ``kw`` (the keywords of :func:`gpufleet.simulate.spot.simulate_spot` but
    ``gpus``): the chosen layout's result, with ``layouts`` listing every count tried and why."""
    deadline_h, gpu, model = kw["deadline_h"], kw["gpu"], kw["model"]
    tried: list[SpotLayout] = []
    results: dict[int, SpotResult] = {}
    best_cost = math.inf
    for n in SEARCH_GPU_COUNTS:
        try:
            pre = _dry(n, kw)
        except InputError as exc:
            tried.append(_skipped(n, str(exc).split(". ")[0] + "."))
            continue
        floor = pre.work_h * pre.spot_floor_usd_per_hour
        on_demand_h = pre.work_h + pre.restart_overhead_h
        if deadline_h is not None and pre.work_h > deadline_h:
            tried.append(
                _skipped(
                    n,
                    f"{pre.work_h:,.1f} h of work alone exceeds the {deadline_h:g} h deadline",
                    nodes=pre.nodes,
                    work_h=pre.work_h,
                )
            )
            continue
        if floor > best_cost:
            tried.append(
                _skipped(
                    n,
                    f"costs at least ${floor:,.0f} (work x the cheapest price), more than the "
                    f"${best_cost:,.0f} of a layout already found",
                    nodes=pre.nodes,
                    work_h=pre.work_h,
                )
            )
            continue
        try:
            r = _layout(n, kw)
        except InputError as exc:  # e.g. a capacity trace that never holds this many nodes
            tried.append(_skipped(n, str(exc).split(". ")[0].rstrip(".") + ".", nodes=pre.nodes))
            continue
        results[n] = r
        pick = _pick(r)
        meets = r.best is not None
        tried.append(
            SpotLayout(
                gpus=n,
                nodes=r.nodes,
                offer=r.offer,
                work_h=r.work_h,
                best=r.best,
                expected_cost_usd=pick.expected_cost_usd,
                p_deadline_miss=pick.p_deadline_miss,
                status="meets" if meets else "misses",
                why=(
                    f"{pick.strategy}: E[cost] ${pick.expected_cost_usd:,.0f}"
                    + (f", P(miss) {pick.p_deadline_miss:.0%}" if pick.p_deadline_miss is not None else "")
                    + ("" if meets else f"; on demand alone takes {on_demand_h:,.1f} h")
                ),
            )
        )
        if meets:
            best_cost = min(best_cost, pick.expected_cost_usd)
    meeting = [t for t in tried if t.status == "meets"]
    if meeting:
        chosen = min(meeting, key=lambda t: (t.expected_cost_usd or math.inf, t.gpus))
        head = (
            f"Layout search: {chosen.gpus} x {gpu} ({chosen.nodes} node(s)) is the cheapest of "
            f"{len(tried)} GPU counts tried that "
            + (f"meets the {deadline_h:g} h deadline" if deadline_h is not None else "finishes (no deadline)")
            + f" ({chosen.best}, E[cost] ${chosen.expected_cost_usd or 0:,.0f})."
        )
    else:
        simulated = [t for t in tried if t.status == "misses"]
        if not simulated:
            # a layout whose work was computed and that only the deadline ruled out makes it a valid question
            # answered "no" (the CLI exits 3, no candidate); when no count could even be sized (every one an
            # input error: no offer, a trace that is never up), the input is at fault (exit 2)
            sized = any(t.work_h is not None for t in tried)
            raise (InfeasibleError if sized else InputError)(
                f"No layout of {gpu} from {SEARCH_GPU_COUNTS[0]} to {SEARCH_GPU_COUNTS[-1]} GPUs could be "
                f"simulated for {model}: "
                + "; ".join(f"{t.gpus} GPUs: {t.why.rstrip('.')}" for t in tried[:4])
                + ". Give a longer --deadline-hours, fewer --tokens, another --gpu, or --gpus."
            )
        chosen = min(simulated, key=lambda t: (t.p_deadline_miss or 0.0, t.expected_cost_usd or math.inf))
        head = (
            f"Layout search: no GPU count from {SEARCH_GPU_COUNTS[0]} to {SEARCH_GPU_COUNTS[-1]} meets the "
            f"{deadline_h:g} h deadline with P(miss) <= 5 %; shown: {chosen.gpus} x {gpu}, the least likely "
            "to miss. Give a longer deadline or fewer tokens."
        )
    r = results[chosen.gpus]
    return replace(r, layouts=tuple(tried), notes=(head, *r.notes))


__all__ = ["SEARCH_GPU_COUNTS", "SEARCH_NODE_GPUS", "search_layouts"]
