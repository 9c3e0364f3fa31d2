"""Solve a :class:`~gpufleet.fleet.problem.Problem` with HiGHS (``highspy``), from a starting plan.

Why highspy and not ``scipy.optimize.milp``: scipy 1.17 bundles HiGHS 1.12, whose presolve took the whole
120 s time limit on 10,000 distinct workloads with binding quotas (54k variables / 41k rows) and returned no
plan; HiGHS 1.16 (highspy) presolves the same model in ~6 s. highspy also takes a starting solution
(``setSolution``): :func:`gpufleet.fleet.incumbent.lp_round` rounds the LP relaxation into a feasible plan
first, so a time limit leaves that plan with its gap instead of nothing, and where it is already within
``mip_rel_gap`` of the LP bound no branch-and-bound is needed. highspy is imported here only, when a plan is
solved. The elastic re-solve below still uses ``scipy.optimize.milp`` (it runs only on infeasible fleets).

Infeasibility is explained by an elastic re-solve: every elastic row gets non-negative slacks, the total
slack (each scaled by the row's size) is minimised, and the rows left with slack are the binding ones.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpufleet.fleet.problem import Problem

#: relative cost of relaxing a placement row in the elastic re-solve (resource rows cost 1 per unit of size)
CHOICE_WEIGHT = 1000.0
#: share of the time limit the starting plan may use (the LP relaxation and two small sub-MILPs)
INCUMBENT_SHARE = 0.25
_BANNER_MUTED: list[bool] = []  # non-empty once HiGHS's banner was sent to the null device


@dataclass(frozen=True, slots=True, kw_only=True)
class Solution:
    status: str  # optimal | feasible | infeasible | error
    x: tuple[float, ...]
    objective: float | None
    mip_gap: float | None
    dual_bound: float | None
    mip_nodes: int | None
    solve_time_s: float
    message: str
    #: where the plan came from: "HiGHS" (branch-and-cut) or "LP rounding" (the starting plan, within the gap)
    source: str = "HiGHS"
    #: the starting plan's cost (None: no rounding of the LP was feasible)
    incumbent_objective: float | None = None


def _matrix(p: Problem, extra_cols: int = 0) -> Any:
    from scipy.sparse import csr_matrix

    rows, cols, vals = [], [], []
    for i, r in enumerate(p.rows):
        rows.extend([i] * len(r.cols))
        cols.extend(r.cols)
        vals.extend(r.vals)
    return csr_matrix((vals, (rows, cols)), shape=(len(p.rows), p.n_vars + extra_cols))


def new_highs() -> Any:
    """A ``highspy.Highs`` with logging off. HiGHS writes a banner to the C-level stdout when the first one
    in a process is made, before any option can silence it; ``gpufleet plan -f json`` writes its plan to
    stdout, so that first construction runs with file descriptor 1 on the null device."""
    import highspy

    if not _BANNER_MUTED:
        sys.stdout.flush()
        saved = os.dup(1)
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            h = highspy.Highs()  # type: ignore[no-untyped-call]
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(null)
        _BANNER_MUTED.append(True)
    else:
        h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    return h


def highs_lp(p: Problem) -> Any:
    """``p`` as a ``highspy.HighsLp`` (column-wise, integrality as marked, without the objective constant)."""
    import highspy

    n = p.n_vars
    counts = np.zeros(n + 1, dtype=np.int64)
    for r in p.rows:
        np.add.at(counts, np.asarray(r.cols, dtype=np.int64) + 1, 1)
    start = np.cumsum(counts)
    index = np.empty(int(start[-1]), dtype=np.int32)
    value = np.empty(int(start[-1]), dtype=np.float64)
    fill = start[:-1].copy()
    for i, r in enumerate(p.rows):
        cols = np.asarray(r.cols, dtype=np.int64)
        pos = fill[cols]
        index[pos] = i
        value[pos] = r.vals
        fill[cols] += 1
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(p.rows)
    lp.col_cost_ = np.asarray(p.cost, dtype=np.float64)
    lp.col_lower_ = np.asarray(p.lb, dtype=np.float64)
    lp.col_upper_ = np.asarray(p.ub, dtype=np.float64)
    lp.row_lower_ = np.array([r.lo for r in p.rows], dtype=np.float64)
    lp.row_upper_ = np.array([r.hi for r in p.rows], dtype=np.float64)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = start.astype(np.int32)
    lp.a_matrix_.index_ = index
    lp.a_matrix_.value_ = value
    kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
    lp.integrality_ = [kinds[bool(i)] for i in p.integer]
    return lp


def highs_model(
    lp: Any, *, relaxation: bool = False, lb: np.ndarray | None = None, ub: np.ndarray | None = None
) -> Any:
    """A quiet ``highspy.Highs`` holding ``lp`` (from :func:`highs_lp`): its LP relaxation where
    ``relaxation``, with other column bounds where ``lb``/``ub`` are given (``lp`` is left as it was)."""
    h = new_highs()
    h.passModel(lp)
    if relaxation:
        h.setOptionValue("solve_relaxation", True)
    if lb is not None and ub is not None:
        idx = np.arange(len(lb), dtype=np.int32)
        h.changeColsBounds(len(lb), idx, np.asarray(lb, dtype=np.float64), np.asarray(ub, dtype=np.float64))
    return h


def solve(p: Problem, *, time_limit_s: float = 60.0, mip_rel_gap: float = 1e-6) -> Solution:
    """Minimise; status ``optimal`` when the gap is within ``mip_rel_gap``, ``feasible`` on a time limit.

    A starting plan from the LP relaxation (:func:`gpufleet.fleet.incumbent.lp_round`) comes first: if it is
    already within ``mip_rel_gap`` of the LP bound it is the answer (a proven gap, no branching); otherwise
    HiGHS starts from it, so a time limit still returns a plan and its gap."""
    import highspy

    from gpufleet.fleet.incumbent import lp_round, relative_gap

    t0 = time.perf_counter()
    if p.n_vars == 0:
        return Solution(
            status="optimal",
            x=(),
            objective=p.constant,
            mip_gap=0.0,
            dual_bound=p.constant,
            mip_nodes=0,
            solve_time_s=0.0,
            message="empty problem",
        )
    lp = highs_lp(p)
    inc = lp_round(p, lp, time_limit_s=INCUMBENT_SHARE * time_limit_s)
    if inc.lp_infeasible:
        return Solution(
            status="infeasible", x=(), objective=None, mip_gap=None, dual_bound=None, mip_nodes=None,
            solve_time_s=time.perf_counter() - t0, message="the LP relaxation is infeasible",
        )  # fmt: skip
    if inc.x is not None and inc.objective is not None and inc.lp_bound is not None:
        gap = relative_gap(inc.objective, inc.lp_bound)
        if gap <= mip_rel_gap:
            return Solution(
                status="optimal", x=inc.x, objective=inc.objective, mip_gap=gap, dual_bound=inc.lp_bound,
                mip_nodes=0, solve_time_s=time.perf_counter() - t0,
                message=f"LP rounding ({inc.stage}) within {gap:.4%} of the LP bound",
                source="LP rounding", incumbent_objective=inc.objective,
            )  # fmt: skip
    h = highs_model(lp)
    h.setOptionValue("time_limit", max(time_limit_s - (time.perf_counter() - t0), 0.1))
    h.setOptionValue("mip_rel_gap", mip_rel_gap)
    if inc.x is not None:
        start = highspy.HighsSolution()
        start.col_value = list(inc.x)
        h.setSolution(start)
    h.run()
    dt = time.perf_counter() - t0
    status = h.getModelStatus()
    info = h.getInfo()
    has_x = info.primal_solution_status == 2  # kSolutionStatusFeasible
    bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else None
    if inc.lp_bound is not None:  # the LP bound holds too (HiGHS may stop before its own root bound)
        bound = inc.lp_bound - p.constant if bound is None else max(bound, inc.lp_bound - p.constant)
    nodes = int(info.mip_node_count)
    if (has_x and status != highspy.HighsModelStatus.kInfeasible) or inc.x is not None:
        x: tuple[float, ...] = ()
        obj = math.inf
        if has_x and status != highspy.HighsModelStatus.kInfeasible:
            x = tuple(float(v) for v in np.round(np.asarray(h.getSolution().col_value), 6))
            obj = p.objective(list(x))
        if inc.x is not None and inc.objective is not None and inc.objective < obj:
            x, obj = inc.x, inc.objective  # never return a plan worse than the start (HiGHS keeps it too)
        mip_gap = relative_gap(obj, bound + p.constant) if bound is not None else None
        optimal = status == highspy.HighsModelStatus.kOptimal or (
            mip_gap is not None and mip_gap <= mip_rel_gap
        )
        return Solution(
            status="optimal" if optimal else "feasible",
            x=x,
            objective=obj,
            mip_gap=mip_gap,
            dual_bound=bound + p.constant if bound is not None else None,
            mip_nodes=nodes,
            solve_time_s=dt,
            message=h.modelStatusToString(status),
            incumbent_objective=inc.objective,
        )
    if status == highspy.HighsModelStatus.kInfeasible:
        return Solution(
            status="infeasible", x=(), objective=None, mip_gap=None, dual_bound=None, mip_nodes=nodes,
            solve_time_s=dt, message=h.modelStatusToString(status),
        )  # fmt: skip
    return Solution(
        status="error",
        x=(),
        objective=None,
        mip_gap=None,
        dual_bound=bound + p.constant if bound is not None else None,
        mip_nodes=nodes,
        solve_time_s=dt,
        message=h.modelStatusToString(status),
    )


def shortfall_text(p: Problem, name: str, v: float) -> str:
    """``name (short by <v> <unit>)``: a budget short by $660.70/month, a quota by 4 gpus (was a bare
    "short by 660.7")."""
    unit = next((r.unit for r in p.rows if r.name == name), "")
    if not math.isfinite(v):
        return f"{name} (short by an amount not determined)"
    if unit == "USD/month":
        return f"{name} (short by ${v:,.2f}/month)"
    return f"{name} (short by {v:,.4g}{' ' + unit if unit else ''})"


def binding_rows(p: Problem, *, time_limit_s: float = 60.0) -> list[tuple[str, float]]:
    """(row name, violation in the row's unit, :attr:`Row.unit`) for the rows an elastic re-solve must relax
    to become feasible (:func:`shortfall_text` says it with its unit)."""
    from scipy.optimize import Bounds, LinearConstraint, milp
    from scipy.sparse import csr_matrix, hstack

    elastic = [i for i, r in enumerate(p.rows) if r.elastic]
    if not elastic:
        return []
    n = p.n_vars
    k = len(elastic)
    a = _matrix(p)
    # slack columns: +s_lo (raises the row sum), -s_hi (lowers it)
    rows_idx = np.array(elastic + elastic)
    cols_idx = np.arange(2 * k)
    vals = np.concatenate([np.ones(k), -np.ones(k)])
    s = csr_matrix((vals, (rows_idx, cols_idx)), shape=(len(p.rows), 2 * k))
    full = hstack([a, s]).tocsr()
    scale = []
    for i in elastic:
        r = p.rows[i]
        mag = max(abs(r.lo) if math.isfinite(r.lo) else 0.0, abs(r.hi) if math.isfinite(r.hi) else 0.0, 1.0)
        # relax resource rows (quotas, budgets, capacity) before giving up placing a workload
        scale.append((CHOICE_WEIGHT if r.group in ("choice", "ha") else 1.0) / mag)
    c = np.concatenate([np.zeros(n), np.array(scale), np.array(scale)])
    res = milp(
        c=c,
        integrality=np.concatenate([np.array([1 if i else 0 for i in p.integer]), np.zeros(2 * k)]),
        bounds=Bounds(
            np.concatenate([np.array(p.lb), np.zeros(2 * k)]),
            np.concatenate([np.array(p.ub), np.full(2 * k, np.inf)]),
        ),
        constraints=[
            LinearConstraint(full, np.array([r.lo for r in p.rows]), np.array([r.hi for r in p.rows]))
        ],
        options={"time_limit": time_limit_s, "disp": False},
    )
    if res.x is None:
        return [(p.rows[i].name, math.nan) for i in elastic if not p.rows[i].elastic]
    slack = res.x[n:]
    out = []
    for j, i in enumerate(elastic):
        v = float(slack[j] + slack[k + j])
        if v > 1e-6:
            out.append((p.rows[i].name, v))
    return out
