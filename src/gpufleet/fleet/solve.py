"""Solve a :class:`~gpufleet.fleet.problem.Problem` with HiGHS through ``scipy.optimize.milp``.

Why scipy and not highspy: scipy is already a dependency (calibration), ``milp`` is HiGHS's branch-and-cut
behind a stable, typed API and returns the MIP gap, the dual bound and the node count; highspy would add a
dependency for callbacks we do not need. scipy is imported here only, when a plan is solved.

Infeasibility is explained by an elastic re-solve: every elastic row gets non-negative slacks, the total
slack (each scaled by the row's size) is minimised, and the rows left with slack are the binding ones.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpufleet.fleet.problem import Problem

#: relative cost of relaxing a placement row in the elastic re-solve (resource rows cost 1 per unit of size)
CHOICE_WEIGHT = 1000.0


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


def _matrix(p: Problem, extra_cols: int = 0) -> Any:
    from scipy.sparse import csr_matrix

    rows, cols, vals = [], [], []
    for i, r in enumerate(p.rows):
        rows.extend([i] * len(r.cols))
        cols.extend(r.cols)
        vals.extend(r.vals)
    return csr_matrix((vals, (rows, cols)), shape=(len(p.rows), p.n_vars + extra_cols))


def solve(p: Problem, *, time_limit_s: float = 60.0, mip_rel_gap: float = 1e-6) -> Solution:
    """Minimise; status ``optimal`` when the gap is within ``mip_rel_gap``, ``feasible`` on a time limit."""
    from scipy.optimize import Bounds, LinearConstraint, milp

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
    cons = []
    if p.rows:
        cons.append(
            LinearConstraint(_matrix(p), np.array([r.lo for r in p.rows]), np.array([r.hi for r in p.rows]))
        )
    res = milp(
        c=np.array(p.cost),
        integrality=np.array([1 if i else 0 for i in p.integer]),
        bounds=Bounds(np.array(p.lb), np.array(p.ub)),
        constraints=cons,
        options={"time_limit": time_limit_s, "mip_rel_gap": mip_rel_gap, "disp": False},
    )
    dt = time.perf_counter() - t0
    gap = getattr(res, "mip_gap", None)
    bound = getattr(res, "mip_dual_bound", None)
    nodes = getattr(res, "mip_node_count", None)
    if res.x is not None and res.status in (0, 1):
        x = tuple(float(v) for v in np.round(res.x, 6))
        obj = p.objective(list(x))
        status = "optimal" if res.status == 0 else "feasible"
        return Solution(
            status=status,
            x=x,
            objective=obj,
            mip_gap=float(gap) if gap is not None and math.isfinite(gap) else None,
            dual_bound=float(bound) + p.constant if bound is not None and math.isfinite(bound) else None,
            mip_nodes=int(nodes) if nodes is not None else None,
            solve_time_s=dt,
            message=str(res.message),
        )
    status = "infeasible" if res.status == 2 else "error"
    return Solution(
        status=status,
        x=(),
        objective=None,
        mip_gap=None,
        dual_bound=None,
        mip_nodes=None,
        solve_time_s=dt,
        message=str(res.message),
    )


def binding_rows(p: Problem, *, time_limit_s: float = 60.0) -> list[tuple[str, float]]:
    """(row name, violation) for the rows an elastic re-solve must relax to become feasible."""
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
